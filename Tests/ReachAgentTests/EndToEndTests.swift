import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// `reach agent` as a process: in a network namespace made here (veth pair, routes added and removed), on a tiny
/// tmpfs that fills up, with bad configurations. Needs root; fails without it when REACH_REQUIRE_PRIVILEGED=1.
@Suite(.serialized) struct EndToEndTests {
    /// A network namespace with veth0 (192.0.2.2/24, 2001:db8::2/64) and its peer veth1, both inside, and a
    /// default route via 192.0.2.1. Nothing leaves it; it is deleted with the handle (ReachTestSupport.Namespace).
    static func namespace() throws -> Namespace {
        let ns = try Namespace("e2e")
        try ns.ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        try ns.ip("addr", "add", "192.0.2.2/24", "dev", "veth0")
        try ns.ip("link", "set", "veth1", "up")
        try ns.ip("link", "set", "veth0", "up")
        try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0")
        return ns
    }

    /// A running `reach agent` and its report file. Its standard error goes to an unlinked file (never a pipe that
    /// could fill while nobody reads it).
    final class AgentProcess: Sendable {
        let child: Spawned
        let reportPath: String

        private init(_ child: Spawned, reportPath: String) {
            self.child = child
            self.reportPath = reportPath
        }

        /// - Parameter wrapper: a command the agent's command line is appended to (one that ends by exec'ing it).
        static func start(
            config: String, dir: String, report: String? = nil, netns: String? = nil, wrapper: [String] = []
        ) async throws -> AgentProcess {
            let cfgPath = dir + "/reach.json"
            try config.write(toFile: cfgPath, atomically: true, encoding: .utf8)
            let agent = [TestPaths.reach, "agent", "--config", cfgPath]
            let argv = wrapper + (netns.map { ["ip", "netns", "exec", $0] + agent } ?? agent)
            let child = try await Spawned.start(argv, stderr: .capture)
            return AgentProcess(child, reportPath: report ?? dir + "/reach.jsonl")
        }

        var lines: [JSON] {
            guard let text = try? readTextFile(reportPath, limit: 64 << 20).get() else { return [] }
            return text.split(separator: "\n").map { (try? JSON.parse(String($0))) ?? .null }
        }

        func events(_ type: String) -> [JSON] { lines.filter { $0["event"]?["type"] == .string(type) } }

        func signal(_ s: Int32) { child.signal(s) }

        /// What the agent has logged so far.
        var log: String { child.errorText }

        var isRunning: Bool { child.isRunning }

        /// SIGTERM, up to 10 s to exit (then SIGKILL: a hang shows as 137); the exit status and everything the agent
        /// logged.
        func stop() async -> (Int32, String) {
            let status = await child.stop(grace: 10)
            return (status, child.errorText)
        }
    }

    /// Whether `condition` holds within `timeout` seconds (`what` names it for the reader).
    static func waitFor(_ what: String, timeout: Double = 10, _ condition: () -> Bool) async -> Bool {
        await TestSupport.eventually(timeout: timeout) { condition() }
    }

    /// `umount -l`, for a defer (synchronous: it takes milliseconds).
    static func unmount(_ path: String) { _ = try? TestSupport.run(["umount", "-l", path]) }

    static func config(report: String, interval: Double = 3600, holdDown: Double = 0.3, rotateBytes: Int = 1 << 20) -> String {
        """
        {"report":{"path":"\(report)","interval_seconds":\(interval),"rotate_bytes":\(rotateBytes),"rotate_keep":2},
         "changes":{"hold_down_seconds":\(holdDown),"bar_hysteresis_db":3},
         "modems":{"enabled":false},"wifi":{"enabled":false},"log_level":"info",
         "api":{"state_directory":null,"hooks_directory":null}}
        """
    }

    @Test(.needsRoot) func linkAndRouteChangesInANamespaceGiveOneLineEach() async throws {
        let ns = try Self.namespace()
        let dir = try makeTempDir("reach-e2e")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try await AgentProcess.start(
            config: Self.config(report: dir + "/reach.jsonl"), dir: dir, netns: ns.name)

        #expect(await Self.waitFor("start line") { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        #expect(start["reachable"] == .bool(true))
        #expect(start["medium"] == .string("ethernet"))
        #expect(start["route"]?["interface"] == .string("veth0"))

        // The route goes: one change line after the hold-down.
        try ns.ip("route", "del", "default")
        try #require(await Self.waitFor("loss") { agent.events("change").count == 1 }, "\(agent.lines)")
        var change = agent.events("change")[0]
        #expect(change["reachable"] == .bool(false))
        #expect(change["event"]?["changed"]?.arrayValue?.contains(.string("reachable")) == true)
        #expect(change["event"]?["reason"]?.stringValue?.contains("route via veth0 removed") == true)

        // It comes back: reported at once.
        try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0")
        try #require(await Self.waitFor("back") { agent.events("change").count == 2 }, "\(agent.lines)")
        #expect(agent.events("change")[1]["reachable"] == .bool(true))

        // A blip shorter than the hold-down: no line at all.
        try ns.ip("route", "del", "default")
        try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0")
        try await Task.sleep(for: .seconds(1))
        #expect(agent.events("change").count == 2)

        // Carrier: the peer goes down (the kernel's linkwatch tells us ~0.5 s later), then up.
        try ns.ip("link", "set", "veth1", "down")
        try #require(await Self.waitFor("carrier loss") { agent.events("change").count == 3 }, "\(agent.lines)")
        change = agent.events("change")[2]
        #expect(change["status"] == .string("none"))
        #expect(change["event"]?["reason"]?.stringValue?.contains("lost carrier") == true)
        try ns.ip("link", "set", "veth1", "up")
        try #require(await Self.waitFor("carrier back") { agent.events("change").count == 4 }, "\(agent.lines)")
        #expect(agent.events("change")[3]["event"]?["reason"]?.stringValue?.contains("regained carrier") == true)

        // SIGTERM: the last line is "stop", and no change was reported twice.
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let lines = agent.lines
        #expect(lines.last?["event"]?["type"] == .string("stop"))
        #expect(lines.map { $0["event"]?["type"]?.stringValue ?? "?" } == ["start", "change", "change", "change", "change", "stop"])
        let seqs = lines.compactMap { $0["event"]?["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(max(1, lines.count))))
    }

    /// A 64 KiB tmpfs fills with report lines; lines are counted as dropped, none is split, and the first line after
    /// space is freed says how many were lost. The seq numbers prove the count.
    @Test(.needsRoot) func fullDiskDropsCountsAndRecovers() async throws {
        let dir = try makeTempDir("reach-tmpfs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mnt = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        let m = try await TestSupport.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt])
        guard m.status == 0 else {
            Issue.record("mount tmpfs: \(m.stderr)")
            return
        }
        defer { Self.unmount(mnt) }
        // A filler that the test removes later to make room.
        let filler = mnt + "/filler"
        _ = try await TestSupport.run(["dd", "if=/dev/zero", "of=\(filler)", "bs=1k", "count=24"])

        let agent = try await AgentProcess.start(
            config: Self.config(report: mnt + "/reach.jsonl", interval: 0.02, rotateBytes: 1 << 20), dir: dir,
            report: mnt + "/reach.jsonl")
        // Wait until lines are being dropped: the log stops growing while seq keeps counting.
        var lastSize = -1
        var stable = 0
        #expect(await Self.waitFor("disk full", timeout: 20) {
            let size = (try? FileManager.default.attributesOfItem(atPath: mnt + "/reach.jsonl")[.size] as? Int) ?? 0
            stable = size == lastSize && size > 0 ? stable + 1 : 0
            lastSize = size
            return stable > 15
        })
        let before = agent.lines
        try FileManager.default.removeItem(atPath: filler)
        let recovered = await Self.waitFor("recovery") { agent.lines.contains { $0["dropped_lines"] != nil } }
        #expect(recovered)
        if !recovered {
            let df = try await TestSupport.run(["df", "-k", mnt])
            let ls = try await TestSupport.run(["ls", "-la", mnt])
            let tail = try await TestSupport.run(["tail", "-c", "600", mnt + "/reach.jsonl"])
            Issue.record("no recovery line: \(df.stdout) \(ls.stdout) lines=\(agent.lines.count) tail=\(tail.stdout)")
        }
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        #expect(log.contains("counting lost lines"))

        let lines = agent.lines
        #expect(!lines.contains(.null), "every line parses: none was split")
        let recovery = try #require(lines.first { $0["dropped_lines"] != nil })
        let dropped = try #require(recovery["dropped_lines"]?.intValue)
        #expect(dropped > 0)
        #expect(recovery["dropped_since"]?.stringValue != nil)
        // The line before the recovery line, plus the dropped ones, plus one, is the recovery line's seq.
        let i = try #require(lines.firstIndex { $0["dropped_lines"] != nil })
        let prevSeq = try #require(lines[i - 1]["event"]?["seq"]?.intValue)
        #expect(recovery["event"]?["seq"]?.intValue == prevSeq + dropped + 1)
        #expect(before.count <= i)
    }

    @Test func badConfigExits78NamingTheKey() async throws {
        let dir = try makeTempDir("reach-badcfg")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/reach.json"
        try #"{"report":{"interval_seconds":-5},"wifi":{"interfaces":"wlan0"}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try await TestSupport.run([TestPaths.reach, "agent", "--config", path])
        #expect(r.status == 78)
        #expect(r.stderr.contains("report.interval_seconds: expected a number of seconds"))
        #expect(r.stderr.contains("wifi.interfaces: expected an array"))
        let missing = try await TestSupport.run([TestPaths.reach, "agent", "--config", dir + "/nope.json"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("cannot read"))
        let syntax = dir + "/syntax.json"
        try "{\n \"report\": {,}\n}".write(toFile: syntax, atomically: true, encoding: .utf8)
        let s = try await TestSupport.run([TestPaths.reach, "agent", "--config", syntax])
        #expect(s.status == 78)
        #expect(s.stderr.contains("line 2"))
        let check = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", path])
        #expect(check.status == 78)
        // The Varlink limits: each on its own, and the share that leaves root and the group reach no slots.
        let limits = dir + "/limits.json"
        try #"{"api":{"max_clients":12,"max_clients_per_uid":5}}"#.write(toFile: limits, atomically: true, encoding: .utf8)
        let l = try await TestSupport.run([TestPaths.reach, "agent", "--config", limits])
        #expect(l.status == 78)
        #expect(l.stderr.contains("api.max_clients_per_uid: expected an integer from 1 to 4"), "\(l.stderr)")
    }

    @Test func badReloadKeepsTheRunningConfig() async throws {
        let dir = try makeTempDir("reach-reload")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try await AgentProcess.start(
            config: Self.config(report: dir + "/reach.jsonl", interval: 0.2), dir: dir)
        #expect(await Self.waitFor("start") { agent.events("start").count == 1 })
        try #"{"report":{"path":"\#(dir)/reach.jsonl","interval_seconds":"fast"}}"#.write(
            toFile: dir + "/reach.json", atomically: true, encoding: .utf8)
        agent.signal(SIGHUP)
        // Still running, still on the 0.2 s interval.
        let n = agent.events("periodic").count
        #expect(await Self.waitFor("periodic lines go on") { agent.events("periodic").count >= n + 3 })
        #expect(agent.isRunning)
        let (status, log) = await agent.stop()
        #expect(status == 0)
        #expect(log.contains("Configuration reload refused; keeping the running configuration"))
        #expect(log.contains("report.interval_seconds"))
        #expect(agent.lines.last?["event"]?["type"] == .string("stop"))
    }

    @Test(.needsRoot) func watchPrintsTheStatusThenOneLinePerChange() async throws {
        let ns = try Self.namespace()
        let dir = try makeTempDir("reach-watch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#.write(toFile: dir + "/c.json", atomically: true, encoding: .utf8)
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", ns.name, TestPaths.reach, "watch", "--json", "--hold-down", "0.2",
             "--config", dir + "/c.json"],
            stdout: .capture)
        func lines() -> [JSON] {
            (watch.stdout?.text ?? "").split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        }
        #expect(await Self.waitFor("start") { lines().count == 1 })
        try ns.ip("route", "del", "default")
        #expect(await Self.waitFor("change") { lines().count == 2 })
        try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0")
        try #require(await Self.waitFor("back") { lines().count == 3 }, "\(lines())")
        watch.signal(SIGINT)
        #expect(await watch.wait(timeout: 10) == 0)
        let l = lines()
        #expect(l.map { $0["event"]?["type"]?.stringValue ?? "?" } == ["start", "change", "change"])
        #expect(l[1]["reachable"] == .bool(false) && l[2]["reachable"] == .bool(true))
    }

    /// d680fe5 parsed `watch --resolve-timeout` and then resolved with the 3 s default. Here the namespace's only DNS
    /// server never answers (a neighbour entry that leads nowhere), so the first line carries the timeout that was
    /// given.
    @Test(.needsRoot) func watchHonoursResolveTimeout() async throws {
        let ns = try Self.namespace()
        try ns.ip("neigh", "add", "192.0.2.53", "lladdr", "02:00:00:00:00:35", "dev", "veth0", "nud", "permanent")
        try ns.etc("resolv.conf", "nameserver 192.0.2.53\noptions timeout:5 attempts:2\n")
        let dir = try makeTempDir("reach-resolve")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#.write(toFile: dir + "/c.json", atomically: true, encoding: .utf8)
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", ns.name, TestPaths.reach, "watch", "--json", "--host", "gateway.reach-test.invalid",
             "--resolve-timeout", "0.4", "--config", dir + "/c.json"],
            stdout: .capture, stderr: .capture)
        func lines() -> [JSON] {
            (watch.stdout?.text ?? "").split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        }
        try #require(await Self.waitFor("start") { lines().count >= 1 }, "\(watch.errorText)")
        watch.signal(SIGINT)
        #expect(await watch.wait(timeout: 10) == 0)
        let error = lines()[0]["target"]?["error"]?.stringValue ?? ""
        #expect(error.contains("resolving 'gateway.reach-test.invalid' timed out after 0.4 seconds"), "\(lines()[0])")
    }

    /// Under a supervisor that collects standard output (procd, s6, runit; journald's stream is a socket, which only
    /// the descriptor itself can reach), report.path /dev/stdout writes the lines there: never rotated, never replaced.
    @Test func reportLinesGoToStandardOutput() async throws {
        let dir = try makeTempDir("reach-stdout")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.config(report: "/dev/stdout", interval: 0.05, rotateBytes: 4096)
            .write(toFile: dir + "/c.json", atomically: true, encoding: .utf8)
        let agent = try await Spawned.start([TestPaths.reach, "agent", "--config", dir + "/c.json"], stdout: .capture, stderr: .capture)
        func lines() -> [JSON] { (agent.stdout?.text ?? "").split(separator: "\n").map { (try? JSON.parse(String($0))) ?? .null } }
        // Past rotate_bytes many times over: a stream is not rotated.
        #expect(await Self.waitFor("lines") { (agent.stdout?.text.utf8.count ?? 0) > 3 * 4096 }, "\(agent.errorText)")
        let status = await agent.stop(grace: 10)
        #expect(status == 0, "\(agent.errorText)")
        let l = lines()
        #expect(!l.contains(.null), "every line whole")
        #expect(l.first?["event"]?["type"] == .string("start") && l.last?["event"]?["type"] == .string("stop"))
        #expect(l.compactMap { $0["event"]?["seq"]?.intValue } == Array(1...Int64(l.count)))
        #expect(!FileManager.default.fileExists(atPath: "/dev/stdout.1"))
        #expect(!agent.errorText.contains("rotation"), "no rotation was even tried: \(agent.errorText)")
    }
}
