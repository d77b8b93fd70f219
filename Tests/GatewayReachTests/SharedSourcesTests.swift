import Foundation
import GatewayReach
import ReachTestSupport
import Testing

/// Several `Reachability` instances in one process share one rtnetlink monitor socket, one session per modem and one
/// nl80211 monitor, and the last `stop()` closes them: counted in a process of its own (`reachability-probe`, so no
/// other test's sockets are counted), in a namespace made here, against the modem simulator on a pty.
@Suite(.serialized) struct SharedSourcesTests {
    struct Phase {
        var phase: String
        var instances: Int?
        var holdings: [String: Int]
    }

    static func phases(_ output: String) throws -> [Phase] {
        try output.split(separator: "\n").map { line in
            let json = try JSON.parse(String(line))
            var holdings: [String: Int] = [:]
            if case let .object(members)? = json["holdings"] {
                for (k, v) in members { holdings[k] = v.intValue.map(Int.init) }
            }
            return Phase(
                phase: json["phase"]?.stringValue ?? "?", instances: json["instances"]?.intValue.map(Int.init),
                holdings: holdings)
        }
    }

    @Test(.needsRoot) func instancesShareTheirSourcesAndTheLastStopClosesThem() async throws {
        let probe = TestPaths.product("reachability-probe")
        try #require(TestPaths.isBuilt(probe), "reachability-probe is built with the tests")
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        let ns = try Namespace("share")
        try ns.ip("link", "add", "eth0", "type", "veth", "peer", "name", "up0")
        try ns.ip("addr", "add", "10.77.0.2/24", "dev", "eth0")
        try ns.ip("link", "set", "eth0", "up")
        try ns.ip("link", "set", "up0", "up")
        try ns.ip("route", "add", "default", "via", "10.77.0.1")

        let r = try await ns.exec([probe, "sharing", "--instances", "3", "--modem", sim.link + ":qmi"], timeout: 60)
        try #require(r.status == 0, "exit \(r.status)\n\(r.stdout)\n\(r.stderr)")
        let phases = try Self.phases(r.stdout)
        let baseline = try #require(phases.first { $0.phase == "baseline" }?.holdings)
        let one = try #require(phases.first { $0.phase == "running" && $0.instances == 1 }?.holdings)
        let three = try #require(phases.first { $0.phase == "running" && $0.instances == 3 }?.holdings)
        // One of each, whether one instance runs or three.
        #expect(one["route_monitors"] == 1, "\(r.stdout)")
        #expect(one["ptys"] == 1, "one session on the modem's port")
        #expect((one["generic_monitors"] ?? 9) <= 1)
        for key in ["fds", "threads", "route_sockets", "route_monitors", "generic_sockets", "generic_monitors", "ptys"] {
            #expect(three[key] == one[key], "\(key): 3 instances hold what 1 holds\n\(r.stdout)")
        }
        // Everything goes with the last stop.
        for stopped in phases where stopped.phase == "stopped" {
            for key in ["fds", "threads", "route_sockets", "ptys"] {
                #expect(stopped.holdings[key] == baseline[key], "\(key) after \(stopped.instances ?? 0) stopped\n\(r.stdout)")
            }
        }
    }
}
