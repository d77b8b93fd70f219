import Foundation
import ReachTestSupport
import Testing

/// An idle agent (the default configuration: modems and WiFi on, no modem present, the state file, the Varlink socket
/// and a hooks directory) runs at most two threads of ours, the event loop and the state writer: every socket and
/// timer of the agent is a registration on the one loop (docs/how-it-works.md, "Threads of an idle agent"). The
/// runtime's own threads (libdispatch's pool, the cooperative pool) are not named `reach-` and are not counted.
@Suite(.serialized) struct IdleThreadsTests {
    /// The names (`comm`) of the process's threads, from /proc/PID/task/*/comm.
    static func threadNames(_ pid: pid_t) -> [String] {
        let dir = "/proc/\(pid)/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return tasks.compactMap { tid in
            (try? String(contentsOfFile: "\(dir)/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        }.sorted()
    }

    /// At most two threads named `reach-`, the loop among them; then the agent still runs and stops cleanly.
    static func expectTwoThreadsOfOursThenStop(_ agent: EndToEndTests.AgentProcess) async {
        let names = threadNames(agent.child.pid)
        let ours = names.filter { $0.hasPrefix("reach-") }
        #expect(ours.count <= 2, "threads of ours: \(ours); all: \(names)")
        // The loop carries every socket and timer: it is there and named (a count of 0 must not pass for want of
        // names).
        #expect(ours.contains("reach-loop"), "threads: \(names)")
        #expect(agent.isRunning)
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
    }

    @Test(.needsRoot) func anIdleAgentRunsAtMostTwoThreadsOfOurs() async throws {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-idle-threads")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = """
            {"report":{"path":"\(dir)/reach.jsonl"},
             "api":{"state_directory":"\(dir)/run","hooks_directory":"\(dir)/events.d"}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir, netns: ns.name)
        try #require(await EndToEndTests.waitFor("start line") { agent.events("start").count == 1 }, "\(agent.log)")
        // Idle: the first reads are done and nothing changes; the state file is written (its thread exists).
        try #require(await EndToEndTests.waitFor("state file") { FileManager.default.fileExists(atPath: dir + "/run/state.json") })
        try await Task.sleep(for: .seconds(2))
        await Self.expectTwoThreadsOfOursThenStop(agent)
    }

    /// With a modem read through its worker process and a hook that runs on each change, still the same two threads
    /// of ours: the worker's socket, limits and exit and the hook's output, exit and time limits are registrations
    /// on the loop, not threads (`reach-worker`, `reach-hooks` before). The worker works: the start line reads the
    /// modem, and the hook ran (a change is made by the simulator).
    @Test(.needsRoot, .needs(TestPaths.isBuilt(TestPaths.simulator), "reach-modem-sim built"))
    func aModemWorkerAndHooksAddNoThreadOfOurs() async throws {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-busy-threads")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sim = try await ModemSimulator.start(scenario: PackagingTests.root + "/hw/scenarios/qmi-4g-lte.json")
        defer { sim.stop() }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        try TestSupport.writeExecutable(hooks + "/10-slow", "#!/bin/sh\necho \"$REACH_SEQ\" >> \(dir)/ran; sleep 3\n", mode: 0o755)
        let config = """
            {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},"changes":{"hold_down_seconds":0},
             "modems":{"ports":[{"path":"\(sim.link)","protocol":"qmi"}],"request_timeout_seconds":2,
                       "poll_interval_seconds":600,"access":"direct"},
             "wifi":{"enabled":false},"api":{"state_directory":"\(dir)/run","hooks_directory":"\(hooks)"}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir, netns: ns.name)
        try #require(await EndToEndTests.waitFor("start line", timeout: 15) { agent.events("start").count == 1 }, "\(agent.log)")
        let modem = try #require(agent.events("start").first?["wwan"]?.arrayValue?.first)
        #expect(modem["generation"] == .string("4g"), "\(modem.serialized())")
        // A change line starts the hook, which then sleeps: threads are counted while it runs.
        #expect(try await sim.control(#"{"set":{"access_technologies":["umts"]}}"#).contains("true"))
        try #require(await EndToEndTests.waitFor("hook") { FileManager.default.fileExists(atPath: dir + "/ran") }, "\(agent.log)")
        await Self.expectTwoThreadsOfOursThenStop(agent)
    }
}
