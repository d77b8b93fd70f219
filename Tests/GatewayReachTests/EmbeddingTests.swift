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

    /// The README's modem embedding, as the example does it: a modem port named with its protocol and the netdev it
    /// carries (`ModemPortSpec`), read in a worker process of the program's own (the opt-in), through `refresh()`, the
    /// one-shot `GatewayReach.status` and a running instance that sees the data session drop.
    @Test(.needsRoot, .needsSimulator) func anotherPackageReadsAModemThroughItsWorker() async throws {
        let binary = try await Self.build()
        let ns = try Namespace("embed-wwan")
        defer { ns.delete() }
        try ns.attachedTun("wwan0")
        try ns.ip("addr", "add", "10.20.0.2", "peer", "10.20.0.1", "dev", "wwan0")
        try ns.ip("link", "set", "wwan0", "up")
        try ns.ip("route", "add", "default", "dev", "wwan0")
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        let modem = ["--modem", "\(sim.link):qmi:wwan0", "--no-wifi"]
        let modemLine = "  modem \(sim.link) wwan0 home bars="

        for command in [["status", "--worker"], ["once", "--worker"], ["once"]] {
            let r = try await ns.exec([binary] + command + modem, timeout: 60)
            #expect(r.status == 0, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("\(command[0]) wwan wwan 4g reachable=true"), "\(command): \(r.stdout)")
            #expect(r.stdout.contains(modemLine) && !r.stdout.contains("error:"), "\(command): \(r.stdout)")
        }
        // A netdev is part of the port's name here: without it the modem could not be tied to the route.
        let bad = try await ns.exec([binary, "once", "--modem", "\(sim.link):qmi"], timeout: 30)
        #expect(bad.status == 64 && bad.stderr.contains("usage:"), "\(bad.stderr)")

        let watch = try await Spawned.start(
            ["ip", "netns", "exec", ns.name, binary, "watch", "--worker", "--hold-down", "0.2"] + modem,
            stdout: .capture, stderr: .capture)
        func lines() -> [String] { (watch.stdout?.text ?? "").split(separator: "\n").map(String.init) }
        #expect(await TestSupport.eventually(timeout: 30) { lines().contains("updates wwan wwan 4g reachable=true") },
                "\(lines()) \(watch.errorText)")
        // The worker: this program started again as `modem-worker`, a child of the watching process.
        let programs = try await Self.commandLines(in: ns)
        let workers = programs.filter { $0.parent == watch.pid && $0.argv.contains("modem-worker") }
        #expect(workers.count == 1, "\(programs)")
        #expect(try await sim.control(#"{"set":{"data_sessions":[{"state":"disconnected"}]}}"#).contains("true"))
        #expect(await TestSupport.eventually(timeout: 15) {
            lines().contains("updates none none 4g reachable=false") && lines().contains("notify none none 4g reachable=false")
        }, "\(lines())")
        watch.signal(SIGINT)
        #expect(await watch.wait(timeout: 10) == 0, "\(watch.errorText)")
    }

    /// The programs running in `ns`: pid, parent pid and arguments.
    static func commandLines(in ns: Namespace) async throws -> [(pid: Int32, parent: Int32, argv: [String])] {
        let pids = try await TestSupport.sh(["ip", "netns", "pids", ns.name]).split(whereSeparator: \.isWhitespace)
        return pids.compactMap { text -> (Int32, Int32, [String])? in
            guard let pid = Int32(text),
                let cmdline = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // stat: "pid (comm) state ppid …"; the command may hold spaces and parentheses, so read after the last ")".
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, let parent = Int32(fields[1]) else { return nil }
            return (pid, parent, cmdline.split(separator: "\0").map(String.init))
        }
    }

}
