import Foundation

/// Where the package and its built products are.
enum TestPaths {
    /// The package root: the directory above the running test binary's `.build` (so the data files always
    /// belong to the code under test), else three levels above this source file.
    static let repo: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var url = URL(fileURLWithPath: exe)
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
