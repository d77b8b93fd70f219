// Test support: the repository's files, the external tools the client tests need, and reading their output.

import Foundation
import ModemSim
import ReachTestSupport
import Testing

enum Repo {
    static let scenarios = URL(fileURLWithPath: TestPaths.scenarios)
    static let captures = URL(fileURLWithPath: TestPaths.captures)

    static func text(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

    static func scenario(_ name: String) throws -> Scenario {
        try ScenarioParser.parse(text(scenarios.appendingPathComponent(name + ".json")))
    }

    static func capture(_ name: String) throws -> Capture {
        try Capture.parse(text(captures.appendingPathComponent(name + ".json")))
    }

    static func files(_ dir: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }
}

/// External programs the client tests need. Without them the tests are skipped, unless CI says they must run
/// (REACH_REQUIRE_PRIVILEGED=1), in which case they run and fail. The programs themselves are started through
/// ReachTestSupport (`TestSupport.run`, `ModemSimulator`).
enum Tools {
    static var required: Bool { TestSupport.requirePrivileged }

    static func path(_ name: String) -> String? { TestSupport.find(name) }

    /// The built simulator, next to the test binary in the build products directory.
    static var simulator: String? { TestPaths.isBuilt(TestPaths.simulator) ? TestPaths.simulator : nil }

    static var haveClients: Bool { path("qmicli") != nil && path("mbimcli") != nil }
    static var haveAll: Bool { haveClients && simulator != nil }
    /// Client tests run when everything is there, or when CI requires them (and then fail if something is missing).
    static var clientTestsEnabled: Bool { haveAll || required }
}

extension RunResult {
    /// The value qmicli/mbimcli print as `Label: 'value'` (the first occurrence at or after `after`).
    func value(_ label: String, after section: String? = nil) -> String? {
        var text = Substring(stdout)
        if let section, let r = text.range(of: section) { text = text[r.upperBound...] }
        for line in text.split(separator: "\n") {
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix(label + ":") else { continue }
            let rest = t.dropFirst(label.count + 1).trimmingCharacters(in: .whitespaces)
            if rest.hasPrefix("'") && rest.hasSuffix("'") && rest.count >= 2 { return String(rest.dropFirst().dropLast()) }
            return rest
        }
        return nil
    }
}

/// qmicli on a simulator's pty (`--device-open-qmi`, as a pty needs), with a time limit.
func qmicli(_ sim: ModemSimulator, _ args: String...) async throws -> RunResult {
    try await TestSupport.run(["qmicli", "-d", sim.pty, "--device-open-qmi"] + args, timeout: 10)
}

/// mbimcli on a simulator's pty, with a time limit.
func mbimcli(_ sim: ModemSimulator, _ args: String...) async throws -> RunResult {
    try await TestSupport.run(["mbimcli", "-d", sim.pty] + args, timeout: 10)
}
