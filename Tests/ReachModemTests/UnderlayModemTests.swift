// The modem truth through a CLAT: clatd's layout in a namespace of the test's own (a tun `clat` with 192.0.0.4/29
// holding the IPv4 default, wwan0 carrying IPv6), with the simulated modem named as wwan0's in the configuration
// (modems.ports[].interface). What the modem says about wwan0 decides for the route on `clat`.

import Foundation
import ReachCore
import ReachTestSupport
import Testing

@Suite(.serialized) struct UnderlayModemTests {
    /// The namespace, and the config naming the simulator's port as wwan0's modem.
    final class Box {
        let ns: Namespace
        let config: String

        init(_ tag: String, sim: ModemSimulator, proto: String) throws {
            ns = try Namespace(tag)
            try ns.attachedTun("wwan0")
            try ns.ip("-6", "addr", "add", "fd00:20::2/64", "dev", "wwan0", "nodad")
            try ns.ip("link", "set", "wwan0", "up")
            try ns.ip("-6", "route", "add", "default", "dev", "wwan0")
            try ns.attachedTun("clat")
            try ns.ip("addr", "add", "192.0.0.4/29", "dev", "clat")
            try ns.ip("link", "set", "clat", "up")
            try ns.ip("route", "add", "default", "dev", "clat")
            config = NSTemporaryDirectory() + "reach-underlay-modem-\(getpid())-\(tag).json"
            let text = """
                {"modems": {"ports": [{"path": "\(sim.link)", "protocol": "\(proto)", "interface": "wwan0"}],
                            "request_timeout_seconds": 3},
                 "wifi": {"enabled": false}}
                """
            try text.write(toFile: config, atomically: true, encoding: .utf8)
        }

        deinit {
            ns.delete()
            try? FileManager.default.removeItem(atPath: config)
        }

        /// `reach status` for the IPv4 target (only the CLAT carries it), JSON and text.
        func status() async throws -> (json: JSON, text: String, exit: Int32) {
            let args = [TestPaths.reach, "status", "--config", config, "--address", "192.0.2.33"]
            let j = try await ns.exec(args + ["--json"], timeout: 30)
            let t = try await ns.exec(args, timeout: 30)
            guard let line = j.stdout.split(separator: "\n").first else {
                throw TestFailure("reach status printed nothing; exit \(j.status), stderr: \(j.stderr)")
            }
            return (try JSON.parse(String(line)), t.stdout, j.status)
        }
    }

    static func flags(_ j: JSON) -> [String] { j["flags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// A registered LTE modem under the CLAT: the IPv4 answer is WWAN, 4G, from the modem under the chain.
    @Test(.needsRoot) func clatOverARegisteredModem() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        let box = try Box("ulte", sim: sim, proto: "qmi")
        let (j, text, exit) = try await box.status()
        #expect(exit == 0, "\(text)")
        #expect(j["status"] == .string("wwan"))
        #expect(j["medium"] == .string("wwan"))
        #expect(j["wwan_status"] == .string("4g"))
        #expect(j["route"]?["interface"] == .string("clat"))
        #expect(j["route"]?["underlay"]?["interface"] == .string("wwan0"))
        #expect(Self.flags(j) == ["reachable", "is_direct", "is_wwan"])
        #expect(text.hasPrefix("reachable over wwan via clat → wwan0 (on-link)"))
    }

    /// The modem truth main has today: a locked SIM on the modem under the CLAT needs a person, and the reason
    /// names the hop.
    @Test(.needsRoot) func clatOverALockedModem() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-sim-pin-required")
        let box = try Box("ulock", sim: sim, proto: "qmi")
        let (j, text, exit) = try await box.status()
        #expect(exit == 1)
        #expect(j["reachable"] == .bool(false))
        #expect(j["status"] == .string("none"))
        #expect(Self.flags(j).contains("intervention_required"))
        #expect(j["route"]?["underlay"]?["interface"] == .string("wwan0"))
        #expect(text.hasPrefix(
            "not reachable: clat: its underlay wwan0 has a SIM that needs its PIN/PUK (intervention required)"), "\(text)")
    }

    /// A registered modem with no data session carries nothing, and neither does the CLAT over it: the merge rule
    /// (`WWANPath`) applies to the lowest link of the chain a modem carries, and the reason names the route's own
    /// link first. Two ways to have no session: the modem not attached for packet data (MBIM Packet Service
    /// detached), and attached with its data session dropped (MBIM Connect: deactivated).
    @Test(.needsRoot, arguments: [
        ("detached", "\"packet_service\": \"detached\"", "clat: its underlay wwan0: the modem is not attached for packet data"),
        ("nosession", "\"data_sessions\": [{\"session_id\": 0, \"state\": \"disconnected\"}]",
         "clat: its underlay wwan0: the modem has no data session"),
    ])
    func clatOverAModemWithoutADataSession(tag: String, state: String, reason: String) async throws {
        var scenario = try String(contentsOfFile: TestPaths.scenarios + "/mbim-4g-lte.json", encoding: .utf8)
        if tag == "detached" {
            scenario = scenario.replacingOccurrences(of: "\"packet_service\": \"attached\"", with: state)
        } else {
            scenario = scenario.replacingOccurrences(
                of: "\"packet_service\": \"attached\"", with: "\"packet_service\": \"attached\", " + state)
        }
        #expect(scenario.contains(state))
        let sim = try await ModemSimulator.start(json: scenario)
        let box = try Box("u" + tag, sim: sim, proto: "mbim")
        let (j, text, exit) = try await box.status()
        let modem = j["wwan"]?.arrayValue?.first
        #expect(modem?["registration"] == .string("home"))
        #expect(modem?["interface"] == .string("wwan0"))
        #expect(j["route"]?["interface"] == .string("clat"))
        #expect(j["route"]?["underlay"]?["interface"] == .string("wwan0"))
        #expect(exit == 1, "\(text)")
        #expect(j["reachable"] == .bool(false))
        #expect(j["status"] == .string("none"))
        #expect(Self.flags(j).contains("connection_required") && Self.flags(j).contains("is_wwan"), "\(j.serialized())")
        #expect(j["modem_check"]?["result"] == .string("blocked"))
        #expect(j["modem_check"]?["reason"] == .string(reason), "\(j.serialized())")
        #expect(text.hasPrefix("not reachable: \(reason) (connection required)"), "\(text)")
    }
}
