import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// `reach agent` reloading on SIGHUP: a target added to the file gets its start line, one removed its stop line, and
/// the log level changes, all in the running process.
@Suite(.serialized) struct ReloadEndToEndTests {
    static func config(report: String, targets: [String], level: String) -> String {
        """
        {"report":{"path":"\(report)","interval_seconds":3600},"changes":{"hold_down_seconds":0},
         "targets":[\(targets.map { #"{"kind":"address","value":"\#($0)"}"# }.joined(separator: ","))],
         "modems":{"enabled":false},"wifi":{"enabled":false},"log_level":"\(level)"}
        """
    }

    @Test func sighupAppliesTargetsAndTheLogLevel() async throws {
        let dir = try makeTempDir("reach-hup")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let report = dir + "/reach.jsonl"
        let agent = try await EndToEndTests.AgentProcess.start(
            config: Self.config(report: report, targets: ["127.0.0.1"], level: "info"), dir: dir)
        #expect(await EndToEndTests.waitFor("start") { agent.events("start").count == 1 })

        try Self.config(report: report, targets: ["127.0.0.2"], level: "debug")
            .write(toFile: dir + "/reach.json", atomically: true, encoding: .utf8)
        agent.signal(SIGHUP)
        #expect(await EndToEndTests.waitFor("new target") { agent.events("start").count == 2 })
        #expect(await EndToEndTests.waitFor("old target stopped") { agent.events("stop").count == 1 })
        let started = try #require(agent.events("start").last)
        #expect(started["target"]?["value"] == .string("127.0.0.2"))
        #expect(started["reachable"] == .bool(true))
        let stopped = try #require(agent.events("stop").first)
        #expect(stopped["target"]?["value"] == .string("127.0.0.1"))
        #expect(stopped["event"]?["reason"] == .string("target removed from the configuration"))

        // The same file again: the log line says nothing changed (it printed an empty `config.changed=`).
        #expect(await EndToEndTests.waitFor("first reload logged") { agent.log.contains("Configuration reloaded") })
        agent.signal(SIGHUP)
        #expect(await EndToEndTests.waitFor("unchanged reload logged") { agent.log.contains("Configuration reloaded, nothing changed") })

        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        #expect(log.contains("Configuration reloaded"))
        #expect(log.contains("config.changed=none"), "\(log)")
        #expect(!log.contains("config.changed= ") && !log.contains("config.changed=\n"), "\(log)")
        #expect(log.contains("log_level") && log.contains("targets"))
        #expect(!log.contains("restart"), "nothing is left for a restart")
        let lines = agent.lines
        #expect(lines.last?["event"]?["type"] == .string("stop"))
        #expect(lines.last?["target"]?["value"] == .string("127.0.0.2"))
        let seqs = lines.compactMap { $0["event"]?["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(seqs.count)))
    }

    /// `reach agent --help` names every exit status the agent's documentation gives (it left out 1).
    @Test func helpListsTheReadmesExitStatuses() async throws {
        let readme = try String(contentsOfFile: TestPaths.repo + "/docs/how-it-works.md", encoding: .utf8)
        let start = try #require(readme.range(of: "Exit status: 0 stopped by a signal"))
        let rest = readme[start.lowerBound...]
        let paragraph = rest[..<(rest.range(of: "\n\n")?.lowerBound ?? rest.endIndex)]
        let words = paragraph.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        let codes = words.indices.dropLast().filter { Int(words[$0]) != nil }.map { "\(words[$0]) \(words[$0 + 1])" }
        #expect(codes.count >= 4, "\(paragraph)")
        let help = try await TestSupport.run([TestPaths.reach, "agent", "--help"]).stdout
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for code in codes { #expect(help.contains(code), "agent --help lacks '\(code)': \(help)") }
    }
}
