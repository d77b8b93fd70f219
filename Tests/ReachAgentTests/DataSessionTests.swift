import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// A network namespace with a tun carrying the default route, and reach-modem-sim mapped to it with
/// `modems.ports[].interface`: the modem's registration and data session decide whether the route carries packets,
/// through the real qmi-proxy / mbim-proxy (modems.access auto), never with a false "down".
final class WWANLab: @unchecked Sendable {
    let ns: Namespace
    let sim: ModemSimulator
    let dir: String
    let proto: String
    let interface: String

    /// - Parameters:
    ///   - sessions: `state.data_sessions` as JSON (nil: the simulator's default session, following registration).
    ///   - registration: "home", "searching", "denied"…; `scenario` replaces the whole scenario file.
    ///   - v4 / v6: default routes over the tun.
    ///   - ethernet: also an Ethernet default route (veth, metric 100) in front of the tun's (metric 200).
    static func start(
        _ proto: String, interface: String = "wwan0", scenario: String? = nil, sessions: String? = nil,
        registration: String = "home", faults: String? = nil, timeline: String? = nil, muxID: Int? = nil,
        v4: Bool = true, v6: Bool = false, ethernet: Bool = false, config: String = "", simArgs: [String] = []
    ) async throws -> WWANLab {
        let ns = try Namespace("wwan\(proto)")
        try ns.attachedTun(interface)
        if v4 {
            try ns.ip("addr", "add", "10.20.0.2", "peer", "10.20.0.1", "dev", interface)
        }
        if v6 { try ns.ip("-6", "addr", "add", "fd00:20::2/64", "dev", interface, "nodad") }
        try ns.ip("link", "set", interface, "up")
        if v4 { try ns.ip("route", "add", "default", "dev", interface, "metric", "200") }
        if v6 { try ns.ip("-6", "route", "add", "default", "dev", interface, "metric", "200") }
        if ethernet {
            try ns.ip("link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
            try ns.ip("addr", "add", "192.0.2.2/24", "dev", "eth0")
            try ns.ip("link", "set", "eth1", "up")
            try ns.ip("link", "set", "eth0", "up")
            try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "100")
        }
        let registered = registration == "home" || registration == "roaming"
        let text = scenario ?? """
            {"protocol":"\(proto)","description":"written by DataSessionTests","sim":"ready",
             "identifiers":{"imsi":"262011234567890","iccid":"89490200001234567890"},
             \(faults.map { "\"faults\":\($0)," } ?? "")\(timeline.map { "\"timeline\":\($0)," } ?? "")
             "state":{"registration":"\(registration)",
                      "access_technologies":\(registered ? #"["lte"]"# : "[]"),
                      "operator":{"mcc":"262","mnc":"01","name":"Telekom.de"},
                      \(registration == "denied" ? #""reject_cause":15,"# : "")
                      "signal":{"rssi_dbm":-65,"rsrp_dbm":-95,"rsrq_db":-10,"sinr_db":12.5},
                      \(sessions.map { "\"data_sessions\":\($0)," } ?? "")
                      "packet_service":"\(registered ? "attached" : "detached")"}}
            """
        let sim: ModemSimulator
        do {
            sim = try await ModemSimulator.start(json: text, extra: simArgs)
        } catch {
            ns.delete()
            throw error
        }
        let dir = try makeTempDir("reach-wwan")
        let lab = WWANLab(ns: ns, sim: sim, dir: dir, proto: proto, interface: interface)
        try lab.writeConfig(muxID: muxID, extra: config)
        return lab
    }

    private init(ns: Namespace, sim: ModemSimulator, dir: String, proto: String, interface: String) {
        self.ns = ns
        self.sim = sim
        self.dir = dir
        self.proto = proto
        self.interface = interface
    }

    var configPath: String { dir + "/reach.json" }

    func writeConfig(muxID: Int?, extra: String) throws {
        let mux = muxID.map { ",\"mux_id\":\($0)" } ?? ""
        let text = """
            {"modems":{"ports":[{"path":"\(sim.link)","protocol":"\(proto)","interface":"\(interface)"\(mux)}],
                       "request_timeout_seconds":2},
             "wifi":{"enabled":false},"api":{"state_directory":null,"hooks_directory":null}\(extra.isEmpty ? "" : "," + extra)}
            """
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// `reach status` inside the namespace: the JSON object, the exit status and the text form.
    func status(_ args: [String] = []) async throws -> (json: JSON, exit: Int32, text: String) {
        let j = try await ns.exec([TestPaths.reach, "status", "--json", "--config", configPath] + args, timeout: 60)
        let t = try await ns.exec([TestPaths.reach, "status", "--config", configPath] + args, timeout: 60)
        guard let json = try? JSON.parse(j.stdout) else {
            throw TestFailure("reach status printed no JSON (exit \(j.status)): \(j.stdout) \(j.stderr)")
        }
        #expect(j.status == t.status, "json and text disagree: \(j.status) vs \(t.status)")
        return (json, j.status, t.stdout)
    }

    /// Ends the proxies the namespace's clients started (by pid), the simulator, and the namespace.
    func stop() {
        ns.endProxies()
        sim.stop()
        ns.delete()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

extension JSON {
    var modem: JSON? { self["wwan"]?.arrayValue?.first }
}

@Suite(.serialized, .needsRoot, .needsSimulator) struct DataSessionTests {
    static let protocols = ["qmi", "mbim"]

    @Test(arguments: protocols)
    func connectedIsReachableOverWWAN(proto: String) async throws {
        let lab = try await WWANLab.start(proto)
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 0, "\(text)")
        #expect(j["reachable"] == .bool(true) && j["status"] == .string("wwan") && j["wwan_status"] == .string("4g"))
        #expect(j["modem_check"]?["result"] == .string("ok"))
        #expect(j.modem?["data_session"] == .string("connected"), "\(j.serialized())")
        #expect(j.modem?["access"] == .string("proxy"))
        #expect(j["sources"]?["wwan"]?["access"] == .string("proxy"))
        #expect(text.hasPrefix("reachable over wwan via wwan0"))
        #expect(!lab.ns.processes(named: [proto == "qmi" ? "qmi-proxy" : "mbim-proxy"]).isEmpty, "went through the proxy")
    }

    @Test(arguments: protocols)
    func disconnectedNeedsAConnection(proto: String) async throws {
        let lab = try await WWANLab.start(proto, sessions: #"[{"state":"disconnected"}]"#)
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 1, "\(text)")
        #expect(j["reachable"] == .bool(false) && j["status"] == .string("none"))
        #expect(j["flags"] == .array(["connection_required", "is_direct", "is_wwan"].map(JSON.string)), "\(j.serialized())")
        #expect(j.modem?["data_session"] == .string("disconnected"))
        #expect(j["modem_check"]?["reason"] == .string("wwan0: the modem has no data session"))
        #expect(text.hasPrefix("not reachable: wwan0: the modem has no data session (connection required)"), "\(text)")
    }

    @Test(arguments: [("qmi", "searching"), ("mbim", "searching"), ("qmi", "denied"), ("mbim", "denied")])
    func notRegisteredIsNotReachable(proto: String, registration: String) async throws {
        let lab = try await WWANLab.start(proto, scenario: try String(
            contentsOfFile: "\(TestPaths.scenarios)/\(proto)-\(registration == "denied" ? "denied-reject-cause" : "searching").json",
            encoding: .utf8))
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 1, "\(text)")
        #expect(j["reachable"] == .bool(false) && j["status"] == .string("none"))
        #expect(j["modem_check"]?["result"] == .string("blocked"))
        let reason = j["modem_check"]?["reason"]?.stringValue ?? ""
        if registration == "denied" {
            #expect(reason.hasPrefix("wwan0: registration denied (cause 11: PLMN not allowed)"), "\(reason)")
        } else {
            #expect(reason == "wwan0: the modem is searching for a network")
        }
        #expect(text.contains(reason), "\(text)")
    }

    /// A silent modem (every request unanswered) and a session query that errs: the route's answer stands and the
    /// JSON says what could not be read.
    @Test(arguments: protocols)
    func unreadableModemLeavesTheRouteStanding(proto: String) async throws {
        let silent = try await WWANLab.start(proto, faults: #"["silence"]"#)
        defer { silent.stop() }
        let (j, exit, text) = try await silent.status()
        #expect(exit == 0, "\(text)")
        #expect(j["reachable"] == .bool(true) && j["status"] == .string("wwan"))
        #expect(j["modem_check"]?["result"] == .string("unknown"))
        #expect(j.modem?["error"]?.stringValue?.isEmpty == false, "\(j.serialized())")
        #expect(j.modem?["fault"]?["kind"] == .string("not_answering"), "\(j.serialized())")
        #expect(text.contains("modem check failed, the route's answer stands: wwan0: modem not answering ("), "\(text)")
        // Said once, and never as radio state (issue 31: "no service ____ 0/4", "modem check failed" twice).
        #expect(text.components(separatedBy: "modem check failed").count == 2, "\(text)")
        #expect(!text.contains("no service") && !text.contains("0/4"), "\(text)")
        #expect(text.contains("modem not answering (") && text.contains("bars ?/4  registration unknown"), "\(text)")
        #expect(!text.contains("also open in"), "reach's own proxy is not another holder: \(text)")

        let erring = try await WWANLab.start(proto, faults: proto == "qmi"
            ? #"[{"error":{"status":"INCOMPATIBLE_STATE","messages":["wds:get_packet_service_status"]}}]"#
            : #"[{"error":{"status":"FAILURE","messages":["basic_connect:connect"]}}]"#)
        defer { erring.stop() }
        let (e, eExit, eText) = try await erring.status()
        #expect(eExit == 0, "\(eText)")
        #expect(e["reachable"] == .bool(true))
        #expect(e.modem?["data_session"] == .string("unknown"), "\(e.serialized())")
        #expect(e.modem?["error"] == .null)
        #expect(e["modem_check"]?["result"] == .string("unknown"))
        let reason = e["modem_check"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains(proto == "qmi" ? "IncompatibleState" : "Failure"), "\(reason)")
    }

    @Test(arguments: protocols)
    func ethernetIsUntouchedByADeadModem(proto: String) async throws {
        let lab = try await WWANLab.start(proto, registration: "searching", ethernet: true)
        defer { lab.stop() }
        let (j, exit, _) = try await lab.status()
        #expect(exit == 0)
        #expect(j["medium"] == .string("ethernet") && j["status"] == .string("wifi"))
        #expect(j["route"]?["interface"] == .string("eth0"))
        #expect(j["modem_check"] == .null)
        // The modem is still read and said.
        #expect(j.modem?["registration"] == .string("searching"))
    }

    // MARK: No false "down"

    /// An IPv6-only carrier (464XLAT): the IPv4 observer reads disconnected, the IPv6 one connected.
    @Test(arguments: protocols)
    func ipv6OnlySessionIsConnected(proto: String) async throws {
        let lab = try await WWANLab.start(proto, sessions: #"[{"ip_types":["ipv6"],"state":"connected"}]"#, v4: false, v6: true)
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 0, "\(text)")
        #expect(j["route"]?["family"] == .string("ipv6"))
        #expect(j.modem?["data_session"] == .string("connected"), "\(j.serialized())")
        if proto == "qmi" {
            let clients = j.modem?["data_channels"]?.arrayValue?.first?["clients"]?.arrayValue ?? []
            #expect(clients.map { $0["state"] } == [.string("disconnected"), .string("connected")])
        }
    }

    /// A session on mux id 1 (QMI) / session id 1 (MBIM), the link's channel given by modems.ports[].mux_id.
    @Test(arguments: protocols)
    func sessionOnAKnownMuxIsConnected(proto: String) async throws {
        let key = proto == "qmi" ? "mux_id" : "session_id"
        let lab = try await WWANLab.start(
            proto, interface: proto == "qmi" ? "qmimux0" : "wwan0", sessions: #"[{"\#(key)":1,"state":"connected"}]"#,
            muxID: 1)
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 0, "\(text)")
        #expect(j["reachable"] == .bool(true) && j["modem_check"]?["result"] == .string("ok"), "\(j.serialized())")
        #expect(j.modem?["data_session"] == .string("connected"))
        let channel = j.modem?["data_channels"]?.arrayValue?.first { $0[key] == .int(1) }
        #expect(channel?["state"] == .string("connected"), "\(j.serialized())")
        #expect(channel?["interface"] == .string(lab.interface))
        if proto == "qmi" {
            // The observers bound to mux 1 before anything else (the simulator's log shows the order).
            let log = lab.sim.log
            #expect(log.contains("wds:bind_mux_data_port response"), "\(log.suffix(2000))")
        }
    }

    /// qmi_wwan names its QMAP links qmimuxN; without sysfs qmap/mux_id (a tun here) and without configuration the
    /// mux id is unknown: the session is unknown and the route stands.
    @Test func multiplexedLinkWithoutMuxIDIsUnknownNeverDown() async throws {
        let lab = try await WWANLab.start("qmi", interface: "qmimux0", sessions: #"[{"mux_id":1,"state":"connected"}]"#)
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 0, "\(text)")
        #expect(j["reachable"] == .bool(true) && j["status"] == .string("wwan"))
        #expect(j.modem?["data_session"] == .string("unknown"), "\(j.serialized())")
        #expect(j["modem_check"]?["result"] == .string("unknown"))
        #expect(j["modem_check"]?["reason"]?.stringValue?.contains("mux id is unknown") == true, "\(j.serialized())")
    }
}
