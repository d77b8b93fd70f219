// Where the package and the built products are.

import Foundation

public enum TestPaths {
    /// The package root: the directory above the running test binary's `.build` (so the data files always belong
    /// to the code under test), else three levels above this source file.
    public static let repo: String = {
        var url = URL(fileURLWithPath: executable)
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            if url.lastPathComponent.hasPrefix(".build") {
                let root = url.deletingLastPathComponent()
                if FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
                    return root.path
                }
            }
        }
        var source = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { source.deleteLastPathComponent() }
        return source.path
    }()

    /// The directory of the built products: the test binary sits next to `reach` and `reach-modem-sim` (on Linux
    /// it is `<products>/GatewayReachPackageTests.xctest`; bundle directories above it are skipped).
    public static let products: String = {
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        let start = url
        while url.pathComponents.count > 1 {
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("reach").path) { return url.path }
            url.deleteLastPathComponent()
        }
        return start.path
    }()

    /// A built product by name.
    public static func product(_ name: String) -> String { products + "/" + name }

    /// The `reach` binary (REACH_BIN overrides).
    public static var reach: String { environment("REACH_BIN") ?? product("reach") }
    /// The modem simulator (REACH_MODEM_SIM overrides).
    public static var simulator: String { environment("REACH_MODEM_SIM") ?? product("reach-modem-sim") }
    /// The simulator's shipped scenarios and captures (hw/scenarios, hw/captures; REACH_SCENARIOS_DIR and
    /// REACH_CAPTURES_DIR override).
    public static var scenarios: String { environment("REACH_SCENARIOS_DIR") ?? repo + "/hw/scenarios" }
    public static var captures: String { environment("REACH_CAPTURES_DIR") ?? repo + "/hw/captures" }

    /// Whether a built product is there and executable.
    public static func isBuilt(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    private static var executable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    private static func environment(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }
}
