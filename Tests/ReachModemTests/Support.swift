import Foundation
import ReachTestSupport

// The simulator (`ModemSimulator`, `ScenarioFile`), the built products (`TestPaths`) and running programs
// (`TestSupport.run`) come from ReachTestSupport.

/// Runs the built `reach` binary (on a thread of its own, off the cooperative pool; see TestSupport.run).
func runReach(_ arguments: [String]) async throws -> RunResult {
    try await TestSupport.run([TestPaths.reach] + arguments)
}

/// `reach status --json` parsed.
func reachStatusJSON(_ arguments: [String]) async throws -> [String: Any] {
    // Directly: these tests run in the runner's own network namespace, where a proxy's socket name is global.
    let r = try await runReach(["status", "--json", "--no-wifi", "--modem-access", "direct"] + arguments)
    guard let object = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
        throw TestFailure("reach status printed no JSON (exit \(r.status)): \(r.stdout) \(r.stderr)")
    }
    return object
}
