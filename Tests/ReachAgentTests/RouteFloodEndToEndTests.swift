import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// `reach agent` under a flood of route notices (issue 30): rounds of 5,000 /32 routes added and deleted by
/// `ip -batch` until the kernel has dropped notices for the agent's socket (an overrun, counted in /proc/net/netlink),
/// then the one change that matters (the default route moves to a second link). Once it settles, the
/// agent's last line must say what a direct read says.
@Suite(.serialized) struct RouteFloodEndToEndTests {
    /// The receive drops the kernel counted on the NETLINK_ROUTE sockets of `pid` inside `ns` (/proc/net/netlink:
    /// Eth 0 is NETLINK_ROUTE; the port of a process's first socket is its pid, libnl's later ones pid + (n << 22)).
    static func drops(_ ns: Namespace, pid: pid_t) throws -> Int {
        let table = try ns.exec(["cat", "/proc/net/netlink"]).stdout
        return table.split(separator: "\n").dropFirst().reduce(0) { sum, line in
            let f = line.split(separator: " ")
            guard f.count >= 9, f[1] == "0", let port = UInt32(f[2]), port & 0x3F_FFFF == UInt32(pid) else { return sum }
            return sum + (Int(f[8]) ?? 0)
        }
    }

    @Test(.needsRoot) func overrunDuringAFloodEndsInTheRightLastLine() async throws {
        let ns = try EndToEndTests.namespace()
        try ns.ip("link", "add", "veth2", "type", "veth", "peer", "name", "veth3")
        try ns.ip("addr", "add", "198.18.0.2/24", "dev", "veth2")
        try ns.ip("link", "set", "veth3", "up")
        try ns.ip("link", "set", "veth2", "up")
        let dir = try makeTempDir("reach-flood")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try await EndToEndTests.AgentProcess.start(
            config: EndToEndTests.config(report: dir + "/reach.jsonl", holdDown: 0), dir: dir, netns: ns.name)
        #expect(await EndToEndTests.waitFor("start line") { agent.events("start").count == 1 })
        #expect(agent.events("start").first?["route"]?["interface"] == .string("veth0"))

        // The agent is stopped (SIGSTOP) while the kernel floods its socket, so the flood overruns the socket's
        // buffer for certain; the change that matters comes last, while the buffer is full, so that only the
        // re-read after the overrun can find it.
        agent.signal(SIGSTOP)
        let batch = dir + "/batch"
        var rounds = 0
        var dropped = 0
        while dropped == 0 && rounds < 5 {
            rounds += 1
            let lines = (0..<5000).map { "route add 100.\(64 + $0 / 65536).\($0 / 256 % 256).\($0 % 256)/32 dev veth0" }
                + (0..<5000).map { "route del 100.\(64 + $0 / 65536).\($0 / 256 % 256).\($0 % 256)/32 dev veth0" }
            try lines.joined(separator: "\n").write(toFile: batch, atomically: true, encoding: .utf8)
            _ = try await ns.exec(["ip", "-batch", batch], timeout: 60)
            dropped = try Self.drops(ns, pid: agent.child.pid)
        }
        try ns.ip("route", "replace", "default", "via", "198.18.0.1", "dev", "veth2")
        agent.signal(SIGCONT)
        try #require(dropped > 0, "no overrun after \(rounds) rounds of 10,000 route changes")

        // Settled: the last line names veth2 and nothing more comes for a second.
        #expect(await EndToEndTests.waitFor("the move to veth2", timeout: 20) {
            agent.lines.last?["route"]?["interface"] == .string("veth2")
        }, "\(agent.lines.suffix(3))")
        var count = agent.lines.count
        #expect(await EndToEndTests.waitFor("quiet", timeout: 20) {
            defer { count = agent.lines.count }
            Thread.sleep(forTimeInterval: 1)
            return agent.lines.count == count
        })
        let last = try #require(agent.lines.last)
        try EndToEndTests.config(report: dir + "/unused.jsonl").write(toFile: dir + "/status.json", atomically: true, encoding: .utf8)
        let direct = try JSON.parse(
            try await ns.exec([TestPaths.reach, "status", "--json", "--direct", "--config", dir + "/status.json"]).stdout)
        for key in ["status", "medium", "reachable", "flags", "route", "supports_ipv4", "supports_ipv6", "uplinks"] {
            #expect(last[key] == direct[key], "\(key): line \(last[key]?.serialized() ?? "-") direct \(direct[key]?.serialized() ?? "-")")
        }
        // The flood's /32 routes changed no answer: a line for the start, at most one per change of the answer.
        print("route flood: \(rounds) rounds, \(dropped) notices dropped by the kernel, \(agent.lines.count) lines")
        #expect(agent.lines.count <= 4, "\(agent.lines.map { $0["event"]?["reason"]?.stringValue ?? "-" })")
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
    }
}
