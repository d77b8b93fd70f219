import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// Modems whose firmware refuses optional requests (old Gobi: WDS Set IP Family; many current modules: the SIM status
/// requests; MBIM modems: Subscriber Ready Status), behind a `wwan0` carrying the default route: the evidence that was
/// read still decides, through the proxy, directly and in the agent.
@Suite(.serialized, .needsRoot, .needsSimulator) struct RefusingModemTests {
    /// Every SIM status request refused, and Set IP Family (QMI); Subscriber Ready Status (MBIM).
    static func refusals(_ proto: String) -> String {
        proto == "qmi"
            ? #"[{"error": {"status": "NOT_SUPPORTED", "messages": ["uim:get_card_status", "dms:uim_get_pin_status", "wds:set_ip_family"]}}]"#
            : #"[{"error": {"status": "NO_DEVICE_SUPPORT", "messages": ["basic_connect:subscriber_ready_status"]}}]"#
    }

    static func modem(_ j: JSON) -> JSON? { j["wwan"]?.arrayValue?.first }

    static func unread(_ j: JSON) -> [String] {
        (modem(j)?["unread"]?.arrayValue ?? []).compactMap { $0["reading"]?.stringValue }
    }

    @Test(arguments: ["qmi", "mbim"])
    func sessionUpStaysReachableAndSaysWhatWasNotRead(proto: String) async throws {
        let lab = try await WWANLab.start(proto, faults: Self.refusals(proto))
        defer { lab.stop() }
        let (j, exit, text) = try await lab.status()
        #expect(exit == 0 && j["reachable"] == .bool(true), "\(j.serialized())")
        #expect(j["modem_check"]?["result"] == .string("ok"), "\(j.serialized())")
        #expect(j["modem_check"]?["not_read"] == .array([.string("sim")]), "\(j.serialized())")
        #expect(Self.modem(j)?["error"] == .null && Self.modem(j)?["sim"] == .string("unknown"), "\(j.serialized())")
        #expect(Self.unread(j) == ["sim"], "\(j.serialized())")
        #expect(Self.modem(j)?["data_session"] == .string("connected"), "\(j.serialized())")
        #expect(text.contains("not read: SIM status"), "\(text)")
        if proto == "qmi" {
            // Set IP Family refused: the IPv4 client observes; the IPv6 one cannot and says so.
            let clients = Self.modem(j)?["data_channels"]?.arrayValue?.first?["clients"]?.arrayValue ?? []
            #expect(clients.first { $0["family"] == .string("ipv4") }?["state"] == .string("connected"), "\(clients)")
            let v6 = clients.first { $0["family"] == .string("ipv6") }
            #expect(v6?["observing"] == .bool(false), "\(clients)")
            #expect(v6?["error"]?.stringValue?.contains("refused its IP family") == true, "\(clients)")
        }
    }

    /// The issue's three cases: the session down, registration searching; the answer is the definite one.
    @Test(arguments: ["qmi", "mbim"])
    func definiteDownDecidesDespiteTheRefusals(proto: String) async throws {
        let down = try await WWANLab.start(proto, sessions: #"[{"state":"disconnected"}]"#, faults: Self.refusals(proto))
        defer { down.stop() }
        let (d, dExit, dText) = try await down.status()
        #expect(dExit == 1 && d["reachable"] == .bool(false), "\(d.serialized())")
        #expect(d["modem_check"]?["reason"] == .string("wwan0: the modem has no data session (could not read: SIM status)"),
                "\(d.serialized())")
        #expect(dText.hasPrefix("not reachable: wwan0: the modem has no data session"), "\(dText)")
        // Directly as well as through the proxy (which is ended first: opening the port directly beside it would
        // lose replies on both sides, and reach says so rather than decide).
        down.ns.endProxies()
        let (direct, directExit, _) = try await down.status(["--modem-access", "direct"])
        #expect(directExit == 1 && direct["modem_check"]?["result"] == .string("blocked"), "\(direct.serialized())")

        let searching = try await WWANLab.start(proto, registration: "searching", faults: Self.refusals(proto))
        defer { searching.stop() }
        let (s, sExit, _) = try await searching.status()
        #expect(sExit == 1 && s["reachable"] == .bool(false), "\(s.serialized())")
        #expect(s["modem_check"]?["reason"] == .string("wwan0: the modem is searching for a network (could not read: SIM status)"),
                "\(s.serialized())")
    }

    /// UIM Get Card Status refused alone: the SIM comes from DMS UIM Get PIN Status, and nothing is unread.
    @Test func simFallsBackToDMSWhenUIMRefuses() async throws {
        let lab = try await WWANLab.start(
            "qmi", faults: #"[{"error": {"status": "NOT_SUPPORTED", "messages": ["uim:get_card_status"]}}]"#)
        defer { lab.stop() }
        let (j, _, _) = try await lab.status()
        #expect(Self.modem(j)?["sim"] == .string("ready"), "\(j.serialized())")
        #expect(Self.unread(j).isEmpty, "\(j.serialized())")
    }

    /// In the agent: the session drops (announced, and then silently) and one change line says so within the re-query
    /// bound; the refused SIM request is asked once, not every cycle.
    @Test(arguments: ["qmi", "mbim"])
    func agentSeesTheDropOnARefusingModem(proto: String) async throws {
        let lab = try await WWANLab.start(proto, faults: Self.refusals(proto), config: WWANLab.agentKeys)
        defer { lab.stop() }
        let (_, report) = try lab.agentConfig(requerySeconds: 2)
        let agent = try await Spawned.start(
            ["ip", "netns", "exec", lab.ns.name, TestPaths.reach, "agent", "--config", lab.configPath], stderr: .capture)
        defer { _ = agent.stop(grace: 0) }
        func lines() -> [JSON] {
            guard let text = try? String(contentsOfFile: report, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map { (try? JSON.parse(String($0))) ?? .null }
        }
        #expect(await EndToEndTests.waitFor("start line", timeout: 30) { !lines().isEmpty }, "\(agent.errorText)")
        #expect(lines().first?["reachable"] == .bool(true), "\(lines().map { $0.serialized() })")

        for (round, indicate) in [(1, true), (2, false)] {
            let before = lines().count
            let t0 = ContinuousClock.now
            try await lab.sim.control(
                #"{"set":{"data_sessions":[{"state":"disconnected"}]}\#(indicate ? "" : #","quiet":true"#)}"#)
            let dropped = await EndToEndTests.waitFor("drop \(round)", timeout: 20) {
                lines().dropFirst(before).contains { $0["reachable"] == .bool(false) }
            }
            let latency = ContinuousClock.now - t0
            print("\(proto) refusing modem, session drop \(indicate ? "announced" : "silent"): change line after \(latency)")
            #expect(dropped, "\(lines().dropFirst(before).map { $0.serialized() }) \(agent.errorText)")
            let new = Array(lines().dropFirst(before))
            #expect(new.count == 1 && new.first?["event"]?["type"] == .string("change"), "\(new.map { $0.serialized() })")
            #expect(new.first?["modem_check"]?["reason"]?.stringValue?.contains("no data session") == true)
            // Silent: the re-query (2 s) finds it; announced: the indication, well within that.
            #expect(latency < .seconds(indicate ? 3 : 6), "\(latency)")

            let back = lines().count
            try await lab.sim.control(#"{"set":{"data_sessions":[{"state":"connected"}]}}"#)
            #expect(await EndToEndTests.waitFor("back \(round)", timeout: 20) {
                lines().dropFirst(back).contains { $0["reachable"] == .bool(true) }
            })
        }
        let stats = try JSON.parse(try await lab.sim.control(#"{"query":"stats"}"#))
        let simRequests = proto == "qmi" ? ["uim:get_card_status", "dms:uim_get_pin_status"] : ["basic_connect:subscriber_ready_status"]
        print("\(proto) refusing modem: simulator stats \(stats.serialized())")
        for name in simRequests {
            let n = stats["stats"]?["requests"]?[name]?.intValue ?? 0
            #expect(n <= 2, "\(name) asked \(n) times: a refused request is remembered")
        }
    }
}

extension WWANLab {
    /// Configuration keys for a lab an agent runs in: a report log (its path filled in by `agentConfig`) and a
    /// short hold-down. Pass as `config:` to `start`.
    static let agentKeys = #""report":{"path":"REPORT","interval_seconds":3600},"changes":{"hold_down_seconds":0.3}"#

    /// Rewrites the lab's configuration for an agent: the report log in the lab's folder and the data sessions asked
    /// again every `requerySeconds`. Returns the configuration and the report's path.
    func agentConfig(requerySeconds: Int) throws -> (config: String, report: String) {
        let report = dir + "/reach.jsonl"
        let config = try String(contentsOfFile: configPath, encoding: .utf8)
            .replacingOccurrences(of: "REPORT", with: report)
            .replacingOccurrences(
                of: #""request_timeout_seconds":2"#,
                with: #""request_timeout_seconds":2,"session_requery_seconds":\#(requerySeconds)"#)
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        return (config, report)
    }
}
