// Scenario files: every shipped one parses and says what its name promises; bad ones name the key path.

import ModemSim
import ReachCore
import Testing

@Suite struct ScenarioTests {
    static let files = Repo.files(Repo.scenarios)

    @Test func shipsEveryGenerationForBothProtocols() {
        for proto in ["qmi", "mbim"] {
            for g in ["2g", "3g", "4g", "5g-sa", "5g-nsa", "roaming", "searching", "denied", "sim-pin-required", "sim-absent",
                      "fault-silent", "fault-slow", "fault-error", "fault-garbage", "fault-trunc", "timeline"] {
                #expect(Self.files.contains { $0.hasPrefix("\(proto)-\(g)") }, "no \(proto)-\(g)* scenario")
            }
        }
        #expect(Self.files.contains { $0.hasPrefix("qmi-fallback") })
    }

    @Test(arguments: files)
    func parsesAndDescribesItself(file: String) throws {
        let s = try Repo.scenario(file)
        #expect(file.hasPrefix(s.modemProtocol.rawValue + "-"))
        #expect(s.description.count > 40, "\(file): say what it proves")
        let expected: [(String, Generation)] = [("-2g-", .g2), ("-3g-", .g3), ("-4g-", .g4), ("-5g-", .g5)]
        for (tag, g) in expected where file.contains(tag) {
            #expect(s.state.accessTechnologies.generation == g, "\(file)")
            #expect(s.state.registration == .home, "\(file)")
        }
        if file.contains("-5g-nsa") { #expect(s.state.accessTechnologies.isNonStandalone5G) }
        if file.contains("-5g-sa") { #expect(s.state.accessTechnologies == [.nr]) }
        if file.contains("mbimex2") { #expect(s.mbimex == .v2) }
        if file.contains("mbimex3") { #expect(s.mbimex == .v3) }
        if file.contains("-fault-") { #expect(!s.faults.isEmpty || s.timeline.contains { !$0.operation.faults.isEmpty }) }
        if file.contains("sim-pin") { #expect(s.state.sim == .pinRequired && s.state.sim.needsIntervention) }
        if file.contains("sim-absent") { #expect(s.state.sim == .absent) }
        if file.contains("denied") { #expect(s.state.registration == .denied && s.state.rejectCause == 11) }
        if file.contains("-session-") { #expect(s.state.dataSessions != nil || s.timeline.contains { $0.operation.set?.dataSessions != nil }) }
        if file.contains("timeline-session") {
            #expect(s.timeline.contains { $0.operation.quiet } && s.timeline.contains { !$0.operation.quiet })
        }
    }

    static let base = #"{"protocol":"qmi","state":{"registration":"home","access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01","name":"T"}}"#

    /// (JSON, the start of the error): every kind of mistake names where it is.
    @Test(arguments: [
        (#"{"protocol":"qmi","state":{"registration":"home","access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01"},"signal":{"rsrp_dbm":"-95"}}}"#,
         "scenario.state.signal.rsrp_dbm: expected a number, found a string"),
        (#"{"protocol":"qmi","state":{"registration":"idle","signal":{"rsrp_dbm":-200}}}"#,
         "scenario.state.signal.rsrp_dbm: -200 is out of range (expected -156 to -31 dBm)"),
        (#"{"protocol":"qmi","state":{"registration":"idle","signal":{"nr":{"sinr_db":true}}}}"#,
         "scenario.state.signal.nr.sinr_db: expected a number, found a boolean"),
        (#"{"state":{"registration":"idle"}}"#, "scenario.protocol: missing (required)"),
        (#"{"protocol":"lte","state":{"registration":"idle"}}"#, "scenario.protocol: \"lte\" is not one of: qmi, mbim"),
        (#"{"protocol":"qmi","state":{}}"#, "scenario.state.registration: missing (required)"),
        (#"{"protocol":"qmi","colour":1,"state":{"registration":"idle"}}"#, "scenario.colour: unknown key"),
        (#"{"protocol":"qmi","state":{"registration":"idle","signl":{}}}"#, "scenario.state.signl: unknown key"),
        (#"{"protocol":"qmi","state":{"registration":"home","access_technologies":["ltx"]}}"#,
         "scenario.state.access_technologies[0]: \"ltx\" is not a technology"),
        (#"{"protocol":"qmi","state":{"registration":"home","access_technologies":["lte"]}}"#,
         "scenario.state.operator: a registered modem needs an operator"),
        (#"{"protocol":"qmi","state":{"registration":"home","operator":{"mcc":"262","mnc":"01"}}}"#,
         "scenario.state.access_technologies: a registered modem needs at least one technology"),
        (#"{"protocol":"qmi","sim":"pin_required","state":{"registration":"home","access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01"}}}"#,
         "scenario.state.registration: cannot be registered while the SIM is pin_required"),
        (#"{"protocol":"qmi","state":{"registration":"idle","operator":{"mcc":"26","mnc":"01"}}}"#,
         "scenario.state.operator.mcc: expected an MCC of 3 digits, found \"26\""),
        (#"{"protocol":"qmi","device":{"imei":"35-9225"},"state":{"registration":"idle"}}"#,
         "scenario.device.imei: expected an IMEI of 14 to 16 digits"),
        (#"{"protocol":"qmi","sim":"locked","state":{"registration":"idle"}}"#, "scenario.sim: \"locked\" is not one of"),
        (#"{"protocol":"qmi","mbimex":"2.0","state":{"registration":"idle"}}"#, "scenario.mbimex: applies only to \"protocol\": \"mbim\""),
        (#"{"protocol":"mbim","mbimex":"4.0","state":{"registration":"idle"}}"#, "scenario.mbimex: \"4.0\" is not one of: 1.0, 2.0, 3.0"),
        (#"{"protocol":"mbim","qmi":{},"state":{"registration":"idle"}}"#, "scenario.qmi: applies only to \"protocol\": \"qmi\""),
        (#"{"protocol":"qmi","qmi":{"unsupported_error":"OOPS"},"state":{"registration":"idle"}}"#,
         "scenario.qmi.unsupported_error: \"OOPS\" is not a QMI error name"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"timeline":[{"at_ms":5,"indicate":true},{"at_ms":2,"indicate":true}]}"#,
         "scenario.timeline[1].at_ms: steps must be in time order (2 < 5)"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"timeline":[{"at_ms":5}]}"#,
         "scenario.timeline[0]: a step needs \"set\", \"fault\", \"refuse\" or \"indicate\""),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"timeline":[{"at_ms":1.5,"indicate":true}]}"#,
         "scenario.timeline[0].at_ms: expected a whole number, found 1.5"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"timeline":[{"at_ms":1,"set":{"registration":"home"}}]}"#,
         "scenario.timeline[0].set.access_technologies: a registered modem needs at least one technology"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"explode":{}}]}"#, "scenario.faults[0].explode: unknown key"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"silence":{"messages":["nas:get_sigal_info"]}}]}"#,
         "scenario.faults[0].silence.messages[0]: \"get_sigal_info\" is not a nas message"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"silence":{"messages":["wifi"]}}]}"#,
         "scenario.faults[0].silence.messages[0]: \"wifi\" is not a QMI service"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"faults":[{"silence":{"messages":["basic_connect:nope"]}}]}"#,
         "scenario.faults[0].silence.messages[0]: \"nope\" is not a CID of basic_connect"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"error":{"status":"NONE"}}]}"#,
         "scenario.faults[0].error.status: an error fault needs a non-success status"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"faults":[{"error":{"status":"BROKEN"}}]}"#,
         "scenario.faults[0].error.status: \"BROKEN\" is not an MBIM status name"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"delay":{}}]}"#, "scenario.faults[0].delay.ms: missing (required)"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"silence":{},"delay":{"ms":1}}]}"#,
         "scenario.faults[0]: expected exactly one fault kind"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"close":{"messages":["nas"]}}]}"#,
         "scenario.faults[0].close.messages: unknown key"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"faults":[{"garbage":{"length":0}}]}"#,
         "scenario.faults[0].garbage.length: 0 is out of range (expected 1 to 4096)"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas:get_sigal_info":"NotSupported"}}"#,
         "scenario.refuse.nas:get_sigal_info: \"get_sigal_info\" is not a nas message"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas:get_signal_info":"NoDeviceSupport"}}"#,
         "scenario.refuse.nas:get_signal_info: \"NoDeviceSupport\" is not one of: NotSupported, InvalidQmiCommand, no_answer"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas:get_signal_info":"NOT_SUPPORTED"}}"#,
         "scenario.refuse.nas:get_signal_info: \"NOT_SUPPORTED\" is not one of"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas:get_signal_info":94}}"#,
         "scenario.refuse.nas:get_signal_info: expected a string, found a number"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas":"NotSupported"}}"#,
         "scenario.refuse.nas: names a whole service"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"wifi:scan":"NotSupported"}}"#,
         "scenario.refuse.wifi:scan: \"wifi\" is not a QMI service"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":{"nas:get_signal_info":"NotSupported","nas:0x004f":"no_answer"}}"#,
         "scenario.refuse.nas:0x004f: names nas:get_signal_info a second time"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"refuse":["nas:get_signal_info"]}"#,
         "scenario.refuse: expected an object, found an array"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"refuse":{"basic_connect:pin":"NotSupported"}}"#,
         "scenario.refuse.basic_connect:pin: \"NotSupported\" is not one of: NoDeviceSupport, no_answer"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"refuse":{"basic_connect:pn":"NoDeviceSupport"}}"#,
         "scenario.refuse.basic_connect:pn: \"pn\" is not a CID of basic_connect"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"refuse":{"open":"NoDeviceSupport"}}"#,
         "scenario.refuse.open: OPEN and CLOSE are the session itself"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"refuse":{"basic_connect":"NoDeviceSupport"}}"#,
         "scenario.refuse.basic_connect: names a whole service"),
        (#"{"protocol":"mbim","state":{"registration":"idle"},"timeline":[{"at_ms":1,"refuse":{"basic_connect:pin":"InvalidQmiCommand"}}]}"#,
         "scenario.timeline[0].refuse.basic_connect:pin: \"InvalidQmiCommand\" is not one of"),
        (#"{"protocol":"qmi","#, "scenario: not valid JSON: line 1, column 19: expected a string key"),
    ])
    func badScenariosNameTheKeyPath(text: String, message: String) {
        #expect {
            _ = try ScenarioParser.parse(text)
        } throws: { error in
            guard let e = error as? ScenarioError, e.description.hasPrefix(message) else {
                Issue.record("got \(error), wanted \(message)")
                return false
            }
            return true
        }
    }

    @Test func selectorsParseByNameAndNumber() throws {
        let q = try ScenarioParser.parse(Self.base + #","faults":[{"silence":{"messages":["nas:get_signal_info","nas:0x0020","dms","3:36"]}}]}"#)
        #expect(q.faults[0].messages == [
            .qmi(service: 3, message: 0x004F), .qmi(service: 3, message: 0x0020), .qmi(service: 2, message: nil),
            .qmi(service: 3, message: 36),
        ])
        let m = try ScenarioParser.parse(#"{"protocol":"mbim","state":{"registration":"idle"},"faults":[{"delay":{"ms":5,"messages":["open","basic_connect:11","ms_basic_connect_extensions:version","a289cc33-bcbb-8b4f-b6b0-133ec2aae6df:9"]}}]}"#)
        #expect(m.faults[0].messages == [
            .mbimOpen, .mbim(service: MBIMServices.basicConnect, cid: 11),
            .mbim(service: MBIMServices.msBasicConnectExtensions, cid: 15), .mbim(service: MBIMServices.basicConnect, cid: 9),
        ])
        #expect(m.faults[0].messages?.map(\.description) == ["open", "basic_connect:signal_state", "ms_basic_connect_extensions:version", "basic_connect:register_state"])
    }

    @Test func controlLinesUseTheSameKeys() throws {
        let op = try ScenarioParser.controlLine(#"{"set":{"sim":"absent","signal":{"rssi_dbm":-70}},"fault":[{"silence":{}},"close"],"indicate":true}"#, .qmi)
        #expect(op.set?.sim == .absent && op.set?.signal?.values == ["rssi_dbm": -70] && op.faults.count == 2 && op.indicate)
        #expect(try ScenarioParser.controlLine(#"{"fault":"clear"}"#, .mbim).clearFaults)
        #expect(try ScenarioParser.controlLine(#"{"query":"stats"}"#, .mbim).query == "stats")
        #expect(throws: ScenarioError.self) { try ScenarioParser.controlLine(#"{"set":{}}"#, .qmi) }
        #expect(throws: ScenarioError.self) { try ScenarioParser.controlLine(#"{}"#, .qmi) }
        #expect(throws: ScenarioError.self) { try ScenarioParser.controlLine(#"{"query":"everything"}"#, .qmi) }
    }

    @Test func patchesSayWhatChanged() {
        var s = SimulatedState(registration: .home, accessTechnologies: [.lte], networkOperator: NetworkOperator(mcc: "262", mnc: "01", name: "T"))
        var p = StatePatch()
        p.signal = MeasurementPatch(["rsrp_dbm": -90])
        #expect(s.apply(p) == [.signal])
        #expect(s.apply(p) == [])
        p = StatePatch()
        p.accessTechnologies = [.lte, .nr]
        #expect(s.apply(p) == [.registration, .packetService, .signal])
        p = StatePatch()
        p.sim = .absent
        #expect(s.apply(p) == [.sim])
    }
}
