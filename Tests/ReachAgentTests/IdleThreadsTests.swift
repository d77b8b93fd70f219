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
        let names = Self.threadNames(agent.child.pid)
        let ours = names.filter { $0.hasPrefix("reach-") }
        #expect(ours.count <= 2, "threads of ours: \(ours); all: \(names)")
        // The loop carries every socket and timer: it is there and named (a count of 0 must not pass for want of
        // names).
        #expect(ours.contains("reach-loop"), "threads: \(names)")
        #expect(agent.isRunning)
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
    }
}
