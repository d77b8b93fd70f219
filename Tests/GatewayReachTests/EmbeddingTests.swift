import Foundation
import ReachTestSupport
import Testing

/// Proof that GatewayReach embeds: Examples/Embedding is a package of its own that depends on this one by path and
/// can reach only its public API. It is built here (into .build-embed, which `scripts/test build` fills first, so
/// this build is an up-to-date check in CI) and run in a namespace made here: it sees the default route, the test
/// deletes the route, and both its `notify` block and its `updates` stream report `none`.
@Suite(.serialized) struct EmbeddingTests {
    static var package: String { TestPaths.repo + "/Examples/Embedding" }
    static var scratch: String { TestPaths.repo + "/.build-embed" }

    /// Builds the example (minutes the first time: GatewayReach's targets compiled for a second package graph).
    static func build() async throws -> String {
        let started = ContinuousClock.now
        // `env` finds the toolchain's `swift` in PATH, as a developer's shell would.
        let r = try await TestSupport.run(
            ["/usr/bin/env", "swift", "build", "--package-path", package, "--scratch-path", scratch], timeout: 1200)
        try #require(r.status == 0, "the example did not build:\n\(r.stdout)\n\(r.stderr)")
        print("embedding: `swift build` of Examples/Embedding took \(ContinuousClock.now - started)")
        return scratch + "/debug/reach-embed"
    }

    @Test(.needsRoot) func anotherPackageWatchesTheRouteThroughNotifyAndUpdates() async throws {
        let binary = try await Self.build()
        let ns = try Namespace("embed")
        try ns.ip("link", "add", "eth0", "type", "veth", "peer", "name", "up0")
        try ns.ip("addr", "add", "10.78.0.2/24", "dev", "eth0")
        try ns.ip("link", "set", "eth0", "up")
        try ns.ip("link", "set", "up0", "up")
        try ns.ip("route", "add", "default", "via", "10.78.0.1")

        // One determination.
        let status = try await ns.exec([binary, "status"], timeout: 60)
        #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
        #expect(status.stdout.contains("status wifi ethernet none reachable=true"))
        #expect(status.stdout.contains("Reachable via WiFi"))

        // Every change, both ways.
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", ns.name, binary, "watch", "--hold-down", "0.2"], stdout: .capture, stderr: .capture)
        func lines() -> [String] { (watch.stdout?.text ?? "").split(separator: "\n").map(String.init) }
        func saw(_ line: String) -> Bool { lines().contains(line) }
        #expect(await TestSupport.eventually(timeout: 30) {
            saw("updates wifi ethernet none reachable=true") && saw("notify wifi ethernet none reachable=true")
        }, "\(lines())")
        try ns.ip("route", "del", "default")
        #expect(await TestSupport.eventually(timeout: 10) {
            saw("updates none none none reachable=false") && saw("notify none none none reachable=false")
        }, "\(lines())")
        watch.signal(SIGINT)
        #expect(await watch.wait(timeout: 10) == 0, "\(watch.errorText)")
        #expect(lines().last == "stopped by signal \(SIGINT)")
        #expect(lines().filter { $0.hasPrefix("updates") }.count == 2, "one line per reported change: \(lines())")
    }
}
