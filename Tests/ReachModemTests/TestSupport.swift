import Foundation

/// Where the package and its built products are.
enum TestPaths {
    /// The package root (this file is Tests/ReachModemTests/TestSupport.swift).
    static let repo: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The directory of the built products (the test bundle sits next to `reach` and `reach-modem-sim`).
    static let products: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var url = URL(fileURLWithPath: exe)
        while url.pathComponents.count > 1, !FileManager.default.fileExists(atPath: url.appendingPathComponent("reach").path) {
            url.deleteLastPathComponent()
        }
        return url.path
    }()

    static var reach: String { ProcessInfo.processInfo.environment["REACH_BIN"] ?? products + "/reach" }
    static var simulator: String { ProcessInfo.processInfo.environment["REACH_MODEM_SIM"] ?? products + "/reach-modem-sim" }
    static var scenarios: String { ProcessInfo.processInfo.environment["REACH_SCENARIOS_DIR"] ?? repo + "/hw/scenarios" }
    static var captures: String { ProcessInfo.processInfo.environment["REACH_CAPTURES_DIR"] ?? repo + "/hw/captures" }
}
