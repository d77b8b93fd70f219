// `refuse`: the requests a modem refuses for good, as firmware refuses the optional requests it lacks. The engine
// answers them with the refusal (or not at all) and everything else as before; qmicli and mbimcli, reading the
// simulator's pty, see the refusal exactly as they would from a real modem.

import Foundation
import ModemSim
import ReachCore
import ReachTestSupport
import Testing

@Suite struct RefusalTests {
    static let qmiBase = #"{"protocol":"qmi","state":{"registration":"home","access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01","name":"T"}},"#
    static let mbimBase = #"{"protocol":"mbim","state":{"registration":"idle"},"#

    @Test func refusalsParseInOrderWithTheirAnswers() throws {
        let q = try ScenarioParser.parse(Self.qmiBase + #""refuse":{"dms:uim_get_pin_status":"NotSupported","wds:set_ip_family":"InvalidQmiCommand","nas:0x0043":"no_answer"}}"#)
        #expect(q.refusals == [
            Refusal(.qmi(service: QMIService.dms, message: QMIMessageID.dmsUIMGetPINStatus), .error(code: 94)),
            Refusal(.qmi(service: QMIService.wds, message: DataSessionSimTests.wds.family), .error(code: 71)),
            Refusal(.qmi(service: QMIService.nas, message: 0x0043), .silence),
        ])
        let m = try ScenarioParser.parse(Self.mbimBase + #""refuse":{"basic_connect:subscriber_ready_status":"NoDeviceSupport","ms_basic_connect_extensions:11":"no_answer"}}"#)
        #expect(m.refusals == [
            Refusal(.mbim(service: MBIMServices.basicConnect, cid: 2), .error(code: MBIMStatus.noDeviceSupport)),
            Refusal(.mbim(service: MBIMServices.msBasicConnectExtensions, cid: 11), .silence),
        ])
        #expect(try ScenarioParser.controlLine(#"{"refuse":{}}"#, .qmi).refuse == [])
        #expect(try ScenarioParser.controlLine(#"{"indicate":true}"#, .qmi).refuse == nil)
    }

    @Test func theQMIEngineRefusesOnlyWhatItIsTold() throws {
        var h = QMIHarness(try ScenarioParser.parse(Self.qmiBase + #""refuse":{"dms:uim_get_pin_status":"NotSupported","wds:set_ip_family":"InvalidQmiCommand","nas:get_cell_location_info":"no_answer"}}"#))
        let dms = try h.allocate(QMIService.dms)
        let nas = try h.allocate(QMIService.nas)
        let wds = try h.allocate(QMIService.wds)
        #expect(try h.request(QMIService.dms, cid: dms, QMIMessageID.dmsUIMGetPINStatus).result?.error == QMIError.notSupported)
        #expect(try h.request(QMIService.wds, cid: wds, DataSessionSimTests.wds.family, [QMITLV(0x01, [6])]).result?.error
            == QMIError.invalidQMICommand)
        #expect(try h.send(QMIService.nas, cid: nas, QMIMessageID.nasGetCellLocationInfo).isEmpty, "no answer at all")
        // The rest is answered.
        #expect(try h.request(QMIService.dms, cid: dms, QMIMessageID.dmsGetModel).result?.status == 0)
        #expect(try h.request(QMIService.nas, cid: nas, QMIMessageID.nasGetServingSystem).result?.status == 0)
        #expect(try h.request(QMIService.wds, cid: wds, DataSessionSimTests.wds.status).result?.status == 0)
        let stats = try JSON.parse(try h.control(#"{"query":"stats"}"#).reply)["stats"]
        #expect(stats?["refused"] == .object([
            ("dms:uim_get_pin_status", .int(1)), ("nas:get_cell_location_info", .int(1)), ("wds:set_ip_family", .int(1)),
        ]), "\(stats?.serialized() ?? "")")
        #expect(stats?["requests"]?["dms:get_model"] == .int(1))
        // Clearing faults leaves the refusals; a refuse line replaces them.
        #expect(try h.control(#"{"fault":"clear"}"#).reply == #"{"ok":true}"#)
        #expect(try h.request(QMIService.dms, cid: dms, QMIMessageID.dmsUIMGetPINStatus).result?.error == QMIError.notSupported)
        #expect(try h.control(#"{"refuse":{"dms:get_model":"InvalidQmiCommand"}}"#).reply == #"{"ok":true}"#)
        #expect(try h.request(QMIService.dms, cid: dms, QMIMessageID.dmsUIMGetPINStatus).result?.status == 0)
        #expect(try h.request(QMIService.dms, cid: dms, QMIMessageID.dmsGetModel).result?.error == QMIError.invalidQMICommand)
        let bad = try h.control(#"{"refuse":{"dms:get_modle":"NotSupported"}}"#).reply
        #expect(bad.contains(#""ok":false"#) && bad.contains("control.refuse.dms:get_modle"), "\(bad)")
        #expect(h.engine.refusals.count == 1, "a bad line changes nothing")
    }

    @Test func aRefusalComesBeforeAFaultAndADelayStillApplies() throws {
        var h = QMIHarness(try ScenarioParser.parse(Self.qmiBase
            + #""faults":[{"delay":{"ms":500,"messages":["dms:get_model"]}}],"refuse":{"dms:get_model":"NotSupported"}}"#))
        let dms = try h.allocate(QMIService.dms)
        #expect(try h.send(QMIService.dms, cid: dms, QMIMessageID.dmsGetModel).isEmpty, "not yet")
        let late = try h.advance(to: 500).writes.map { try QMIMessage.decode($0) }
        #expect(late.first?.result?.error == QMIError.notSupported)
    }

    @Test func theMBIMEngineRefusesQueryAndSetAlike() throws {
        var h = MBIMHarness(try ScenarioParser.parse(Self.mbimBase
            + #""refuse":{"basic_connect:subscriber_ready_status":"NoDeviceSupport","basic_connect:signal_state":"no_answer"}}"#))
        try h.open()
        typealias BC = MBIMServices.BasicConnect
        let ready = try h.command(BC.subscriberReadyStatus)
        #expect(ready.type == .commandDone && ready.code == MBIMStatus.noDeviceSupport && ready.buffer.isEmpty)
        #expect(try h.send(.command(tid: 90, service: MBIMServices.basicConnect, cid: BC.signalState, set: false, buffer: [])).isEmpty)
        #expect(try h.send(.command(tid: 91, service: MBIMServices.basicConnect, cid: BC.signalState, set: true,
                                    buffer: [UInt8](repeating: 0, count: 12))).isEmpty)
        let reg = try h.command(BC.registerState)
        #expect(reg.type == .commandDone && reg.code == MBIMStatus.success)
        let stats = try JSON.parse(try h.control(#"{"query":"stats"}"#).reply)["stats"]
        #expect(stats?["refused"]?["basic_connect:signal_state"] == .int(2), "\(stats?.serialized() ?? "")")
        #expect(stats?["refused"]?["basic_connect:register_state"] == nil)
    }
}

/// The same refusals through Debian's qmicli and mbimcli on the simulator's pty.
@Suite(.enabled(if: Tools.clientTestsEnabled, "needs qmicli, mbimcli (scripts/setup) and a built reach-modem-sim"))
struct RefusalClientTests {
    @Test func qmicliIsRefusedWhatTheScenarioRefuses() async throws {
        let sim = try await ModemSimulator.start(json: RefusalTests.qmiBase
            + #""refuse":{"dms:uim_get_pin_status":"NotSupported","wds:set_ip_family":"InvalidQmiCommand","nas:get_signal_info":"NotSupported"}}"#)
        defer { sim.stop() }
        let pin = try await qmicli(sim, "--dms-uim-get-pin-status")
        #expect(pin.status != 0 && pin.stderr.contains("QMI protocol error (94): 'NotSupported'"), "\(pin.stdout)\(pin.stderr)")
        let family = try await qmicli(sim, "--wds-set-ip-family=6")
        #expect(family.status != 0 && family.stderr.contains("QMI protocol error (71): 'InvalidQmiCommand'"),
                "\(family.stdout)\(family.stderr)")
        let signal = try await qmicli(sim, "--nas-get-signal-info")
        #expect(signal.status != 0 && signal.stderr.contains("QMI protocol error (94): 'NotSupported'"), "\(signal.stderr)")
        // Everything else is answered, on the same services.
        let model = try await qmicli(sim, "--dms-get-model")
        #expect(model.status == 0 && model.value("Model") == "reach-modem-sim", "\(model.stdout)\(model.stderr)")
        let serving = try await qmicli(sim, "--nas-get-serving-system")
        #expect(serving.status == 0 && serving.value("Registration state") == "registered", "\(serving.stderr)")
        let session = try await qmicli(sim, "--wds-get-packet-service-status")
        // Registered but not attached: the default session is down, and that is what is answered.
        #expect(session.status == 0 && session.stdout.contains("Connection status: 'disconnected'"), "\(session.stdout)\(session.stderr)")
        let card = try await qmicli(sim, "--uim-get-card-status")
        #expect(card.status == 0 && card.stdout.contains("Card state: 'present'"), "\(card.stdout)\(card.stderr)")
        let stats = try JSON.parse(try await sim.control(#"{"query":"stats"}"#))["stats"]
        #expect(stats?["refused"]?["dms:uim_get_pin_status"] == .int(1) && stats?["refused"]?["wds:set_ip_family"] == .int(1),
                "\(stats?.serialized() ?? "")")
    }

    @Test func aRequestRefusedWithNoAnswerTimesOutWhileOthersAreAnswered() async throws {
        let sim = try await ModemSimulator.start(json: RefusalTests.qmiBase + #""refuse":{"nas:get_cell_location_info":"no_answer"}}"#)
        defer { sim.stop() }
        let port = try RawPort(sim.pty)
        let cid = try await port.allocate(QMIService.nas)
        let silent = try await port.qmi(QMIMessage(service: QMIService.nas, clientID: cid, kind: .request, transactionID: 2,
                                             messageID: QMIMessageID.nasGetCellLocationInfo, tlvs: []), timeout: 1.5)
        #expect(silent.isEmpty, "\(silent.map(\.summary))")
        let answered = try await port.qmi(QMIMessage(service: QMIService.nas, clientID: cid, kind: .request, transactionID: 3,
                                               messageID: QMIMessageID.nasGetServingSystem, tlvs: []))
        #expect(answered.first?.transactionID == 3 && answered.first?.result?.status == 0)
    }

    @Test func mbimcliIsRefusedWhatTheScenarioRefuses() async throws {
        let sim = try await ModemSimulator.start(json: #"{"protocol":"mbim","sim":"ready","identifiers":{"imsi":"262011234567890"},"state":{"registration":"home","access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01","name":"T"}},"refuse":{"basic_connect:subscriber_ready_status":"NoDeviceSupport"}}"#)
        defer { sim.stop() }
        let ready = try await mbimcli(sim, "--query-subscriber-ready-status")
        #expect(ready.status != 0 && ready.stderr.contains("NoDeviceSupport"), "\(ready.stdout)\(ready.stderr)")
        let reg = try await mbimcli(sim, "--query-registration-state")
        #expect(reg.status == 0 && reg.value("Register state") == "home", "\(reg.stdout)\(reg.stderr)")
        let pin = try await mbimcli(sim, "--query-pin-state")
        #expect(pin.status == 0, "\(pin.stdout)\(pin.stderr)")
        let stats = try JSON.parse(try await sim.control(#"{"query":"stats"}"#))["stats"]
        #expect(stats?["refused"]?["basic_connect:subscriber_ready_status"] == .int(1), "\(stats?.serialized() ?? "")")
    }
}
