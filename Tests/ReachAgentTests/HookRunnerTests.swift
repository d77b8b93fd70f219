import Foundation
import ReachCore
import ReachLog
import ReachSystem
import ReachTestSupport
import Testing

@testable import ReachAgent

/// The hook runner in this process, against real scripts in a directory of the test's own: run-parts order and
/// names, the environment and stdin, refusals, timeouts that kill the whole process group, a flood of output that
/// stays bounded, and the queue that collapses to the latest event.
@Suite(.serialized) struct HookRunnerTests {
    static func line(seq: Int, status: String = "wwan", from: String = "wifi") -> JSON {
        (try? JSON.parse("""
            {"schema":1,"status":"\(status)","medium":"wwan","wwan_status":"4g","reachable":true,
             "route":{"interface":"wwan0"},"event":{"type":"change","seq":\(seq),"changed":["status"],
             "reason":"route moved from wlan1 to wwan0","from":{"status":"\(from)"}}}
            """)) ?? .null
    }

    static func script(_ dir: String, _ name: String, _ body: String, mode: Int = 0o755) throws {
        let path = dir + "/" + name
        try TestSupport.writeExecutable(path, "#!/bin/sh\n" + body + "\n", mode: mode_t(mode))
    }

    static func waitIdle(_ r: HookRunner, timeout: Double = 20) async -> Bool {
        await TestSupport.eventually(timeout: timeout) { r.isIdle }
    }

    static func logger() -> Logger { Logger(label: "hook-test") }

    @Test func eachChangeRunsEachHookOnceInNameOrderWithItsEnvironment() async throws {
        let dir = try makeTempDir("reach-hooks")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        let out = dir + "/out"
        // Each hook appends its name, REACH_SEQ and the whole environment; stdin is kept per hook and seq.
        let record = #"echo "$(basename "$0") $REACH_SEQ $REACH_STATUS $REACH_PREVIOUS_STATUS $REACH_INTERFACE" >> \#(out)/calls; env | sort > \#(out)/env.$(basename "$0").$REACH_SEQ; cat > \#(out)/stdin.$(basename "$0").$REACH_SEQ"#
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        try Self.script(hooks, "20-second", record)
        try Self.script(hooks, "10-first", record)
        try Self.script(hooks, "10-first.dpkg-old", "echo stale >> \(out)/calls")
        try Self.script(hooks, "README", "echo not executable >> \(out)/calls", mode: 0o644)
        try Self.script(hooks, "30-everyone-writes", "echo refused >> \(out)/calls", mode: 0o777)
        let runner = try #require(HookRunner.start(HookRunner.Settings(directory: hooks, timeoutSeconds: 10), logger: Self.logger()))
        defer { runner.stop() }
        for seq in [3, 4, 5] {
            runner.post(line: Self.line(seq: seq))
            #expect(await Self.waitIdle(runner))
        }
        let calls = try String(contentsOfFile: out + "/calls", encoding: .utf8).split(separator: "\n")
        #expect(calls == [
            "10-first 3 wwan wifi wwan0", "20-second 3 wwan wifi wwan0", "10-first 4 wwan wifi wwan0",
            "20-second 4 wwan wifi wwan0", "10-first 5 wwan wifi wwan0", "20-second 5 wwan wifi wwan0",
        ])
        // A clean environment: REACH_* and PATH, nothing of this process's.
        let env = try String(contentsOfFile: out + "/env.10-first.4", encoding: .utf8).split(separator: "\n")
        #expect(env.allSatisfy { $0.hasPrefix("REACH_") || $0.hasPrefix("PATH=") || $0.hasPrefix("PWD=") }, "\(env)")
        #expect(env.contains("REACH_REASON=route moved from wlan1 to wwan0"))
        #expect(env.contains("REACH_EVENT=change"))
        let stdin = try String(contentsOfFile: out + "/stdin.20-second.5", encoding: .utf8)
        #expect(try JSON.parse(stdin.trimmingCharacters(in: .newlines))["event"]?["seq"] == .int(5))
        let stats = runner.stats
        #expect(stats.runs == 6 && stats.failures == 0 && stats.skipped == 0)
        #expect(stats.refused == 3, "the world-writable hook, once per event")
    }

    @Test(.needsRoot) func aHookOwnedBySomeoneElseOrSetuidOrInAnOpenDirectoryIsRefused() async throws {
        let dir = try makeTempDir("reach-hooks-owner")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        try Self.script(hooks, "10-nobody", "touch \(dir)/ran-nobody")
        chown(hooks + "/10-nobody", nobody, nobody)
        try Self.script(hooks, "20-setuid", "touch \(dir)/ran-setuid", mode: 0o4755)
        try Self.script(hooks, "30-fine", "touch \(dir)/ran-fine")
        let runner = try #require(HookRunner.start(HookRunner.Settings(directory: hooks, timeoutSeconds: 10), logger: Self.logger()))
        defer { runner.stop() }
        runner.post(line: Self.line(seq: 1))
        #expect(await Self.waitIdle(runner))
        #expect(FileManager.default.fileExists(atPath: dir + "/ran-fine"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/ran-nobody"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/ran-setuid"))
        #expect(runner.stats.refused == 2)
        // A directory anyone may write to refuses every hook in it.
        chmod(hooks, 0o777)
        runner.post(line: Self.line(seq: 2))
        #expect(await Self.waitIdle(runner))
        #expect(runner.stats.refused == 3 && runner.stats.runs == 1)
    }

    /// timeout 1 s: SIGTERM, then SIGKILL 2 s later to the whole group; a background child it left goes too.
    @Test func aHangingHookIsKilledWithEverythingItStarted() async throws {
        let dir = try makeTempDir("reach-hooks-hang")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Ignores SIGTERM, so only the SIGKILL ends it; its child sleeps in the background.
        try Self.script(dir, "hang", "trap '' TERM; sleep 600 & echo $! > \(dir)/child; echo $$ > \(dir)/self; while :; do sleep 1; done")
        let settings = HookRunner.Settings(directory: nil, timeoutSeconds: 1)
        // Followed on a loop of the test's own: the SIGTERM and SIGKILL deadlines and the exit are its callbacks.
        let loop = EventLoop(role: "hook-test")
        defer { loop.stop() }
        let start = ContinuousClock.now
        let outcome = try await HookRunner.spawnAndWait(
            dir + "/hang", argv: [dir + "/hang"], environment: [], stdin: [], settings: settings, loop: loop).get()
        let took = ContinuousClock.now - start
        #expect(loop.stats.callbacks >= 3, "\(loop.stats)")
        #expect(await TestSupport.eventually(timeout: 5) { !loop.isRunning }, "the run left a registration behind")
        #expect(outcome.timedOut)
        #expect(outcome.status == 128 + SIGKILL)
        #expect(took >= .seconds(3) && took < .seconds(10), "\(took)")
        for name in ["self", "child"] {
            let pid = try #require(Int32(try String(contentsOfFile: dir + "/" + name, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await TestSupport.eventually(timeout: 5) { kill(pid, 0) != 0 && errno == ESRCH }, "\(name) \(pid) still runs")
        }
    }

    /// The agent stops while a hook runs (timeout 60 s): the hook and its child are ended, not left behind.
    @Test func stoppingTheRunnerEndsARunningHook() async throws {
        let dir = try makeTempDir("reach-hooks-stop")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        try Self.script(hooks, "10-long", "sleep 600 & echo $! > \(dir)/child; echo $$ > \(dir)/self; wait")
        let runner = try #require(HookRunner.start(HookRunner.Settings(directory: hooks, timeoutSeconds: 60), logger: Self.logger()))
        runner.post(line: Self.line(seq: 1))
        #expect(await TestSupport.eventually(timeout: 10) { FileManager.default.fileExists(atPath: dir + "/self") })
        runner.stop()
        for name in ["self", "child"] {
            let pid = try #require(Int32(try String(contentsOfFile: dir + "/" + name, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await TestSupport.eventually(timeout: 5) { kill(pid, 0) != 0 && errno == ESRCH }, "\(name) \(pid) still runs")
        }
    }

    /// yes(1) on stdout and stderr until the timeout: the runner keeps 4 KiB of it, however much comes.
    @Test func aFloodingHookCannotFillMemory() async throws {
        let dir = try makeTempDir("reach-hooks-flood")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.script(dir, "flood", "yes floodfloodflood & yes floodfloodflood >&2")
        let settings = HookRunner.Settings(directory: nil, timeoutSeconds: 2)
        let outcome = try await HookRunner.spawnAndWait(dir + "/flood", argv: [dir + "/flood"], environment: [], stdin: [], settings: settings).get()
        #expect(outcome.timedOut)
        #expect(outcome.output.count == settings.outputLimit)
        #expect(outcome.droppedBytes > 1 << 20, "\(outcome.droppedBytes) bytes read and dropped")
        #expect(String(decoding: outcome.output, as: UTF8.self).hasPrefix("floodfloodflood\n"))
    }

    /// Hooks that take 1 s while five events come: the waiting ones collapse to the newest, counted as skipped, and
    /// the last event the hooks see is the last one posted.
    @Test func eventsCollapseToTheLatestWhenHooksFallBehind() async throws {
        let dir = try makeTempDir("reach-hooks-slow")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        try Self.script(hooks, "10-slow", "echo $REACH_SEQ >> \(dir)/seqs; sleep 1")
        let runner = try #require(HookRunner.start(HookRunner.Settings(directory: hooks, timeoutSeconds: 10), logger: Self.logger()))
        defer { runner.stop() }
        for seq in 1...6 {
            runner.post(line: Self.line(seq: seq))
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await Self.waitIdle(runner))
        let seqs = try String(contentsOfFile: dir + "/seqs", encoding: .utf8).split(separator: "\n").map(String.init)
        // In event order, ending with the newest (even the first may be collapsed when the worker is slow to wake).
        #expect(seqs.last == "6" && seqs.compactMap { Int($0) } == seqs.compactMap { Int($0) }.sorted(), "\(seqs)")
        #expect(seqs.count < 6)
        #expect(runner.stats.skipped == UInt64(6 - seqs.count))
        #expect(runner.stats.events == 6)
    }

    /// OpenWrt: `ubus send reach.change LINE` and `hotplug-call reach` with the hooks' environment (fakes here).
    @Test func ubusAndHotplugGetEachChange() async throws {
        let dir = try makeTempDir("reach-hooks-ubus")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.script(dir, "ubus", #"printf '%s\n' "$@" > \#(dir)/ubus.args"#)
        try Self.script(dir, "hotplug-call", #"echo "$1 $ACTION $REACH_SEQ $REACH_STATUS" > \#(dir)/hotplug.out"#)
        let runner = try #require(HookRunner.start(
            HookRunner.Settings(directory: nil, timeoutSeconds: 5, ubus: dir + "/ubus", hotplugCall: dir + "/hotplug-call"),
            logger: Self.logger()))
        defer { runner.stop() }
        let line = Self.line(seq: 9)
        runner.post(line: line)
        #expect(await Self.waitIdle(runner))
        let args = try String(contentsOfFile: dir + "/ubus.args", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(args.count == 3 && args[0] == "send" && args[1] == "reach.change")
        #expect(try JSON.parse(args.last ?? "") == line)
        #expect(try String(contentsOfFile: dir + "/hotplug.out", encoding: .utf8) == "reach change 9 wwan\n")
    }
}
