// Test support: the repository's files, external tools, and a running reach-modem-sim.

import Foundation
import ModemSim
import Testing

#if canImport(Glibc)
import Glibc
#endif

enum Repo {
    /// The package root, from this file's path (Tests/ModemSimTests/Support.swift).
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let scenarios = root.appendingPathComponent("hw/scenarios")
    static let captures = root.appendingPathComponent("hw/captures")

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
/// (REACH_REQUIRE_PRIVILEGED=1), in which case they run and fail.
enum Tools {
    static let required = ProcessInfo.processInfo.environment["REACH_REQUIRE_PRIVILEGED"] == "1"

    static func path(_ name: String) -> String? {
        for dir in ["/usr/bin", "/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: dir + "/" + name) {
            return dir + "/" + name
        }
        return nil
    }

    /// The built simulator, next to the test bundle in the build products directory.
    static var simulator: String? {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On Linux the test binary is <products>/GatewayReachPackageTests.xctest; be lenient about bundles.
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("reach-modem-sim").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }

    static var haveClients: Bool { path("qmicli") != nil && path("mbimcli") != nil && path("timeout") != nil }
    static var haveAll: Bool { haveClients && simulator != nil }
    /// Client tests run when everything is there, or when CI requires them (and then fail if something is missing).
    static var clientTestsEnabled: Bool { haveAll || required }
}

struct ToolMissing: Error, CustomStringConvertible {
    var description: String
}

/// Starts a process with an empty signal mask. Swift Testing runs tests on libdispatch worker threads, which block
/// most signals, and posix_spawn hands the spawning thread's mask to the child: `timeout` would then never see its
/// SIGALRM and a client never its SIGTERM. The mask is cleared on this thread for the spawn only.
func launch(_ p: Process) throws {
    var empty = sigset_t()
    var saved = sigset_t()
    sigemptyset(&empty)
    pthread_sigmask(SIG_SETMASK, &empty, &saved)
    defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
    try p.run()
}

/// Runs blocking work (waiting for a process, reading a pty) on a thread of its own, off Swift concurrency's
/// cooperative pool: a test that blocked a pool thread for seconds would starve every async test in the suite.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The result of running a program to its end (or to its time limit).
struct RunResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Wall time of the program itself (not the wait for a slot).
    var seconds: Double = 0
    /// `timeout` killed it: the program did not finish within its limit.
    var timedOut: Bool { status == 124 || status == 137 }
}

/// Runs a program under coreutils' `timeout`, so a client that hangs fails the test instead of the run.
func run(_ program: String, _ args: [String], seconds: Double = 10) async throws -> RunResult {
    try await offPool { try runBlocking(program, args, seconds: seconds) }
}

/// At most this many client programs at once: with every test free to start them, a 2-core machine would run a
/// hundred at the same moment and slow the timing-sensitive tests of other suites.
let clientSlots = DispatchSemaphore(value: 4)

func runBlocking(_ program: String, _ args: [String], seconds: Double) throws -> RunResult {
    clientSlots.wait()
    defer { clientSlots.signal() }
    guard let timeoutPath = Tools.path("timeout") else { throw ToolMissing(description: "timeout (coreutils) is not installed") }
    guard let exe = Tools.path(program) ?? (program.hasPrefix("/") ? program : nil) else {
        throw ToolMissing(description: "\(program) is not installed (scripts/setup installs libqmi-utils, libmbim-utils)")
    }
    let started = Date()
    let p = Process()
    p.executableURL = URL(fileURLWithPath: timeoutPath)
    p.arguments = ["-k", "2", String(seconds), exe] + args
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try launch(p)
    // Read before waiting so a chatty program never blocks on a full pipe.
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    // `timeout -k` ends with SIGKILL to its whole process group, itself included: report that as the shell
    // would (128 + signal), which is what `timedOut` looks for.
    let status = p.terminationReason == .uncaughtSignal ? 128 + p.terminationStatus : p.terminationStatus
    return RunResult(
        status: status, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self),
        seconds: Date().timeIntervalSince(started))
}

/// A running reach-modem-sim; stopped with SIGTERM when the test ends. Used by one test at a time.
final class SimProcess: @unchecked Sendable {
    let process = Process()
    let stdout = Pipe()
    let stderr = Pipe()
    private(set) var pty = ""
    let dir: URL
    let control: String
    let link: String
    let log: String

    /// Starts the simulator and reads its "pty:" and "link:" lines, off the cooperative pool.
    static func start(scenario: String? = nil, replay: String? = nil, extra: [String] = []) async throws -> SimProcess {
        try await offPool { try SimProcess(scenario: scenario, replay: replay, extra: extra) }
    }

    private init(scenario: String?, replay: String?, extra: [String]) throws {
        guard let sim = Tools.simulator else {
            throw ToolMissing(description: "reach-modem-sim is not built next to the tests (swift build --build-tests)")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("reach-sim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        control = dir.appendingPathComponent("control.sock").path
        link = dir.appendingPathComponent("cdc-wdm0").path
        log = dir.appendingPathComponent("sim.log").path
        var args = ["--control", control, "--link", link, "--log", log]
        if let scenario { args += ["--scenario", Repo.scenarios.appendingPathComponent(scenario + ".json").path] }
        if let replay { args += ["--replay", Repo.captures.appendingPathComponent(replay + ".json").path] }
        process.executableURL = URL(fileURLWithPath: sim)
        process.arguments = args + extra
        process.standardOutput = stdout
        process.standardError = stderr
        try launch(process)
        let first = try readLineBlocking(timeout: 5)
        guard first.hasPrefix("pty: /dev/pts/") else {
            process.terminate()
            throw ToolMissing(description: "reach-modem-sim did not announce its pty: '\(first)' \(errorText())")
        }
        pty = String(first.dropFirst(5))
        _ = try readLineBlocking(timeout: 5)  // "link: PATH"
    }

    private var pendingOut: [UInt8] = []

    /// The next line on the simulator's standard output, waiting at most `timeout` seconds.
    func readLine(timeout: Double) async throws -> String {
        try await offPool { try self.readLineBlocking(timeout: timeout) }
    }

    func readLineBlocking(timeout: Double) throws -> String {
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let nl = pendingOut.firstIndex(of: 10) {
                let line = String(decoding: pendingOut[..<nl], as: UTF8.self)
                pendingOut.removeFirst(nl + 1)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw ToolMissing(description: "no line from reach-modem-sim within \(timeout) s") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var buf = [UInt8](repeating: 0, count: 256)
            let n = read(fd, &buf, buf.count)
            guard n > 0 else { throw ToolMissing(description: "reach-modem-sim closed its output \(errorText())") }
            pendingOut += buf[0..<n]
        }
    }

    func errorText() -> String {
        if process.isRunning { return "" }
        return String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// One control-socket exchange: a JSON line in, the JSON reply line out.
    func control(_ line: String) async throws -> String {
        try await offPool { try self.controlBlocking(line) }
    }

    func controlBlocking(_ line: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolMissing(description: "socket failed") }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in Array(control.utf8).enumerated() { raw[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else { throw ToolMissing(description: "connect to \(control) failed: errno \(errno)") }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var reply: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while !reply.contains(10) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 5000) > 0 else { throw ToolMissing(description: "no control reply within 5 s") }
            let n = read(fd, &buf, buf.count)
            guard n > 0 else { break }
            reply += buf[0..<n]
        }
        return String(decoding: reply.prefix(while: { $0 != 10 }), as: UTF8.self)
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// SIGTERM, then the exit status (0 expected).
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: dir)
        return process.terminationStatus
    }

    deinit { stop() }
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
