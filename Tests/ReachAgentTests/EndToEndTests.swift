import Foundation
import Synchronization
import ReachAgent
import ReachCore
import Testing

/// `reach agent` as a process: in a network namespace made here (veth pair, routes added and removed), on a tiny
/// tmpfs that fills up, with bad configurations. Needs root; fails without it when REACH_REQUIRE_PRIVILEGED=1.
@Suite(.serialized) struct EndToEndTests {
    static var isRoot: Bool { getuid() == 0 }

    /// A network namespace with veth0 (192.0.2.2/24, 2001:db8::2/64) and its peer veth1, both inside, and a
    /// default route via 192.0.2.1. Nothing leaves it; it is deleted afterwards.
    struct Namespace {
        let name = "reach-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

        func ip(_ args: String) throws {
            let r = try run(["ip", "-n", name] + args.split(separator: " ").map(String.init))
            if r.status != 0 { throw NSError(domain: "ip \(args): \(r.err)", code: Int(r.status)) }
        }

        func create() throws {
            let r = try run(["ip", "netns", "add", name])
            guard r.status == 0 else { throw NSError(domain: "ip netns add: \(r.err)", code: Int(r.status)) }
            try ip("link set lo up")
            try ip("link add veth0 type veth peer name veth1")
            try ip("addr add 192.0.2.2/24 dev veth0")
            try ip("link set veth1 up")
            try ip("link set veth0 up")
            try ip("route add default via 192.0.2.1 dev veth0")
        }

        func delete() { _ = try? run(["ip", "netns", "del", name]) }
    }

    /// A running `reach agent` and its report file.
    final class AgentProcess {
        let process = Process()
        let stderr = Pipe()
        let reportPath: String
        private var errText = ""

        init(config: String, dir: String, report: String? = nil, netns: String? = nil) throws {
            let cfgPath = dir + "/reach.json"
            try config.write(toFile: cfgPath, atomically: true, encoding: .utf8)
            reportPath = report ?? dir + "/reach.jsonl"
            if let netns {
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
                process.arguments = ["netns", "exec", netns, reachBinary(), "agent", "--config", cfgPath]
            } else {
                process.executableURL = URL(fileURLWithPath: reachBinary())
                process.arguments = ["agent", "--config", cfgPath]
            }
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        }

        var lines: [JSON] {
            guard let text = try? readTextFile(reportPath, limit: 64 << 20).get() else { return [] }
            return text.split(separator: "\n").map { (try? JSON.parse(String($0))) ?? .null }
        }

        func events(_ type: String) -> [JSON] { lines.filter { $0["event"]?["type"] == .string(type) } }

        func signal(_ s: Int32) { kill(process.processIdentifier, s) }

        /// SIGTERM and wait; returns the exit status and everything the agent logged.
        func stop() -> (Int32, String) {
            signal(SIGTERM)
            process.waitUntilExit()
            errText += String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, errText)
        }

        deinit {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    static func waitFor(_ what: String, timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    static func config(report: String, interval: Double = 3600, holdDown: Double = 0.3, rotateBytes: Int = 1 << 20) -> String {
        """
        {"report":{"path":"\(report)","interval_seconds":\(interval),"rotate_bytes":\(rotateBytes),"rotate_keep":2},
         "changes":{"hold_down_seconds":\(holdDown),"bar_hysteresis_db":3},
         "modems":{"enabled":false},"wifi":{"enabled":false},"log_level":"info"}
        """
    }

    @Test func linkAndRouteChangesInANamespaceGiveOneLineEach() throws {
        guard requirement(Self.isRoot, "root (network namespaces)") else { return }
        let ns = Namespace()
        try ns.create()
        defer { ns.delete() }
        let dir = try makeTempDir("reach-e2e")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try AgentProcess(config: Self.config(report: dir + "/reach.jsonl"), dir: dir, netns: ns.name)

        #expect(Self.waitFor("start line") { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        #expect(start["reachable"] == .bool(true))
        #expect(start["medium"] == .string("ethernet"))
        #expect(start["route"]?["interface"] == .string("veth0"))

        // The route goes: one change line after the hold-down.
        try ns.ip("route del default")
        #expect(Self.waitFor("loss") { agent.events("change").count == 1 })
        var change = agent.events("change")[0]
        #expect(change["reachable"] == .bool(false))
        #expect(change["event"]?["changed"]?.arrayValue?.contains(.string("reachable")) == true)
        #expect(change["event"]?["reason"]?.stringValue?.contains("route via veth0 removed") == true)

        // It comes back: reported at once.
        try ns.ip("route add default via 192.0.2.1 dev veth0")
        #expect(Self.waitFor("back") { agent.events("change").count == 2 })
        #expect(agent.events("change")[1]["reachable"] == .bool(true))

        // A blip shorter than the hold-down: no line at all.
        try ns.ip("route del default")
        try ns.ip("route add default via 192.0.2.1 dev veth0")
        Thread.sleep(forTimeInterval: 1.0)
        #expect(agent.events("change").count == 2)

        // Carrier: the peer goes down (the kernel's linkwatch tells us ~0.5 s later), then up.
        try ns.ip("link set veth1 down")
        #expect(Self.waitFor("carrier loss") { agent.events("change").count == 3 })
        change = agent.events("change")[2]
        #expect(change["status"] == .string("none"))
        #expect(change["event"]?["reason"]?.stringValue?.contains("lost carrier") == true)
        try ns.ip("link set veth1 up")
        #expect(Self.waitFor("carrier back") { agent.events("change").count == 4 })
        #expect(agent.events("change")[3]["event"]?["reason"]?.stringValue?.contains("regained carrier") == true)

        // SIGTERM: the last line is "stop", and no change was reported twice.
        let (status, log) = agent.stop()
        #expect(status == 0, "\(log)")
        let lines = agent.lines
        #expect(lines.last?["event"]?["type"] == .string("stop"))
        #expect(lines.map { $0["event"]?["type"]?.stringValue ?? "?" } == ["start", "change", "change", "change", "change", "stop"])
        let seqs = lines.compactMap { $0["event"]?["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(lines.count)))
    }

    /// A 64 KiB tmpfs fills with report lines; lines are counted as dropped, none is split, and the first line after
    /// space is freed says how many were lost. The seq numbers prove the count.
    @Test func fullDiskDropsCountsAndRecovers() throws {
        guard requirement(Self.isRoot, "root (mount tmpfs)") else { return }
        let dir = try makeTempDir("reach-tmpfs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mnt = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        let m = try run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt])
        guard m.status == 0 else {
            Issue.record("mount tmpfs: \(m.err)")
            return
        }
        defer { _ = try? run(["umount", "-l", mnt]) }
        // A filler that the test removes later to make room.
        let filler = mnt + "/filler"
        _ = try run(["dd", "if=/dev/zero", "of=\(filler)", "bs=1k", "count=24"])

        let agent = try AgentProcess(
            config: Self.config(report: mnt + "/reach.jsonl", interval: 0.02, rotateBytes: 1 << 20), dir: dir,
            report: mnt + "/reach.jsonl")
        // Wait until lines are being dropped: the log stops growing while seq keeps counting.
        var lastSize = -1
        var stable = 0
        #expect(Self.waitFor("disk full", timeout: 20) {
            let size = (try? FileManager.default.attributesOfItem(atPath: mnt + "/reach.jsonl")[.size] as? Int) ?? 0
            stable = size == lastSize && size > 0 ? stable + 1 : 0
            lastSize = size
            return stable > 15
        })
        let before = agent.lines
        try FileManager.default.removeItem(atPath: filler)
        let recovered = Self.waitFor("recovery") { agent.lines.contains { $0["dropped_lines"] != nil } }
        #expect(recovered)
        if !recovered {
            let df = try run(["df", "-k", mnt])
            let ls = try run(["ls", "-la", mnt])
            let tail = try run(["tail", "-c", "600", mnt + "/reach.jsonl"])
            Issue.record("no recovery line: \(df.out) \(ls.out) lines=\(agent.lines.count) tail=\(tail.out)")
        }
        let (status, log) = agent.stop()
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

    @Test func badConfigExits78NamingTheKey() throws {
        let dir = try makeTempDir("reach-badcfg")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/reach.json"
        try #"{"report":{"interval_seconds":-5},"wifi":{"interfaces":"wlan0"}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try run([reachBinary(), "agent", "--config", path])
        #expect(r.status == 78)
        #expect(r.err.contains("report.interval_seconds: expected a number of seconds"))
        #expect(r.err.contains("wifi.interfaces: expected an array"))
        let missing = try run([reachBinary(), "agent", "--config", dir + "/nope.json"])
        #expect(missing.status == 78)
        #expect(missing.err.contains("cannot read"))
        let syntax = dir + "/syntax.json"
        try "{\n \"report\": {,}\n}".write(toFile: syntax, atomically: true, encoding: .utf8)
        let s = try run([reachBinary(), "agent", "--config", syntax])
        #expect(s.status == 78)
        #expect(s.err.contains("line 2"))
        let check = try run([reachBinary(), "agent", "--check-config", "--config", path])
        #expect(check.status == 78)
    }

    @Test func badReloadKeepsTheRunningConfig() throws {
        let dir = try makeTempDir("reach-reload")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try AgentProcess(config: Self.config(report: dir + "/reach.jsonl", interval: 0.2), dir: dir)
        #expect(Self.waitFor("start") { agent.events("start").count == 1 })
        try #"{"report":{"path":"\#(dir)/reach.jsonl","interval_seconds":"fast"}}"#.write(
            toFile: dir + "/reach.json", atomically: true, encoding: .utf8)
        agent.signal(SIGHUP)
        // Still running, still on the 0.2 s interval.
        let n = agent.events("periodic").count
        #expect(Self.waitFor("periodic lines go on") { agent.events("periodic").count >= n + 3 })
        #expect(agent.process.isRunning)
        let (status, log) = agent.stop()
        #expect(status == 0)
        #expect(log.contains("Configuration reload refused; keeping the running configuration"))
        #expect(log.contains("report.interval_seconds"))
        #expect(agent.lines.last?["event"]?["type"] == .string("stop"))
    }

    @Test func watchPrintsTheStatusThenOneLinePerChange() throws {
        guard requirement(Self.isRoot, "root (network namespaces)") else { return }
        let ns = Namespace()
        try ns.create()
        defer { ns.delete() }
        let dir = try makeTempDir("reach-watch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#.write(toFile: dir + "/c.json", atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = ["netns", "exec", ns.name, reachBinary(), "watch", "--json", "--hold-down", "0.2", "--config", dir + "/c.json"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = Mutex<String>("")
        out.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            text.withLock { $0 += String(decoding: d, as: UTF8.self) }
        }
        func lines() -> [JSON] {
            text.withLock { $0.split(separator: "\n").compactMap { try? JSON.parse(String($0)) } }
        }
        #expect(Self.waitFor("start") { lines().count == 1 })
        try ns.ip("route del default")
        #expect(Self.waitFor("change") { lines().count == 2 })
        try ns.ip("route add default via 192.0.2.1 dev veth0")
        #expect(Self.waitFor("back") { lines().count == 3 })
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        #expect(p.terminationStatus == 0)
        let l = lines()
        #expect(l.map { $0["event"]?["type"]?.stringValue ?? "?" } == ["start", "change", "change"])
        #expect(l[1]["reachable"] == .bool(false) && l[2]["reachable"] == .bool(true))
    }
}
