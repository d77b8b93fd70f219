// Shared test helpers, the one place the tests start programs from: run a program to its end with a deadline
// (synchronously, or from async code on a thread of its own), wait for a condition, decide what to do when a
// privileged test cannot run. Child processes are `Spawned` (Spawned.swift), capped by `ChildSlots`; the modem
// simulator is `ModemSimulator`; network namespaces are `Namespace`; built products are in `TestPaths`.
// Test-only (Foundation allowed).

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

public struct RunResult: Sendable {
    /// The exit status, 128 + N when signal N ended the program, -1 when it could not be reaped.
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// The deadline passed and the program was stopped (SIGTERM, then SIGKILL).
    public var timedOut: Bool
    /// Wall time of the program itself, from spawn to exit (not the wait for a child slot).
    public var seconds: Double
}

public enum TestSupport {
    /// Runs `argv` to its end, at most `timeout` seconds (then SIGTERM to its process group, SIGKILL 2 s later, and
    /// `timedOut` is set). Standard input is `input` or /dev/null; output is collected in unlinked temporary files
    /// (no pipe to fill). Throws only when the program cannot be started.
    @available(*, noasync, message: "await the async run, which waits on a thread of its own")
    @discardableResult
    public static func run(
        _ argv: [String], timeout: Double = 30, input: String? = nil, environment: [String: String]? = nil
    ) throws -> RunResult {
        try Spawned(argv, stdin: input.map { .text($0) } ?? .null, stdout: .capture, stderr: .capture,
                    environment: environment).finish(timeout: timeout)
    }

    /// `run`, from async code: waits for a child slot without holding a thread, then starts and waits for the
    /// program on a thread of its own, never on Swift concurrency's cooperative pool.
    @discardableResult
    public static func run(
        _ argv: [String], timeout: Double = 30, input: String? = nil, environment: [String: String]? = nil
    ) async throws -> RunResult {
        let lease = await ChildSlots.shared.acquire()
        return try await offPool {
            try Spawned(argv, stdin: input.map { .text($0) } ?? .null, stdout: .capture, stderr: .capture,
                        environment: environment, lease: lease).finish(timeout: timeout)
        }
    }

    /// Runs and requires exit 0; returns standard output. The error names the command and its stderr.
    @available(*, noasync, message: "await the async sh")
    @discardableResult
    public static func sh(_ argv: [String], timeout: Double = 30) throws -> String {
        try checked(argv, run(argv, timeout: timeout))
    }

    @discardableResult
    public static func sh(_ argv: [String], timeout: Double = 30) async throws -> String {
        try checked(argv, await run(argv, timeout: timeout))
    }

    private static func checked(_ argv: [String], _ r: RunResult) throws -> String {
        guard r.status == 0, !r.timedOut else {
            let how = r.timedOut ? "timed out" : "exited \(r.status)"
            throw TestFailure("`\(argv.joined(separator: " "))` \(how): \(r.stderr)")
        }
        return r.stdout
    }

    /// Whether `condition` holds within `timeout` seconds, asked every `every` seconds (suspending in between).
    public static func eventually(
        timeout: Double = 10, every: Double = 0.02, _ condition: () async throws -> Bool
    ) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            do { try await Task.sleep(for: .seconds(every)) } catch { break }  // cancelled: one last look
        }
        return try await condition()
    }

    /// The path of an executable in PATH.
    public static func which(_ name: String) throws -> String {
        if let path = find(name) { return path }
        throw TestFailure("\(name) is not installed (scripts/setup installs it)")
    }

    /// The path of an executable in PATH, or nil.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        for dir in path.split(separator: ":") + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        return nil
    }

    public static var isRoot: Bool { getuid() == 0 }

    /// A sanitizer stage (scripts/test asan and tsan set ASAN_OPTIONS / TSAN_OPTIONS): the instrumented code runs
    /// several times slower and AddressSanitizer's quarantine holds freed memory, so wall-time bounds get
    /// `timingSlack` and resident-set bounds are left to the unit and shipped stages, which check them as set.
    public static var sanitized: Bool {
        let env = ProcessInfo.processInfo.environment
        return env["ASAN_OPTIONS"] != nil || env["TSAN_OPTIONS"] != nil
    }

    /// The factor a wall-time bound is stretched by: 3 in a sanitizer stage, else 1.
    public static var timingSlack: Double { sanitized ? 3 : 1 }

    /// CI (REACH_REQUIRE_PRIVILEGED=1): tests that need root, namespaces or external tools must run, never skip.
    public static var requirePrivileged: Bool { ProcessInfo.processInfo.environment["REACH_REQUIRE_PRIVILEGED"] == "1" }

    /// Whether a test's requirement is met. When it is not: an issue when REACH_REQUIRE_PRIVILEGED=1 (CI), else a
    /// skip said in the output; either way false, so the caller returns.
    public static func requirement(
        _ met: Bool, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        if met { return true }
        if requirePrivileged {
            Issue.record("requirement missing: \(what); REACH_REQUIRE_PRIVILEGED=1 forbids skipping",
                         sourceLocation: sourceLocation)
        } else {
            print("skipped: \(what) (set REACH_REQUIRE_PRIVILEGED=1 to make this a failure)")
        }
        return false
    }

    /// The condition of `.needsRoot` and `.needs(_:_:)`: true when met; when not, a thrown error under
    /// REACH_REQUIRE_PRIVILEGED=1 (Swift Testing records it as the test's failure), else false (the test is reported as
    /// skipped, with the trait's comment as the reason).
    public static func mayRun(_ met: Bool, _ what: String) throws -> Bool {
        if met { return true }
        if requirePrivileged {
            throw TestFailure("requirement missing: \(what); REACH_REQUIRE_PRIVILEGED=1 forbids skipping")
        }
        return false
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Runs blocking work (waiting for a process, reading a pty) on a thread of its own, off Swift concurrency's
/// cooperative pool: a test that blocked a pool thread for seconds would starve every async test in the run (the
/// pool has one thread per core, two in CI).
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = "ReachTestSupport off-pool"
        thread.start()
    }
}

extension TestSupport {
    /// Writes a file that a test will execute (a hook, a script) through a close-on-exec descriptor. Foundation's
    /// `write(toFile:)` opens without O_CLOEXEC: a child another test spawns while the file is being written would keep a
    /// writable descriptor to it for its whole life (the long-running servers of the validation tests do), and every
    /// exec of the file would then fail with ETXTBSY.
    public static func writeExecutable(_ path: String, _ contents: String, mode: mode_t = 0o755) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TestFailure("open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestFailure("write \(path): \(String(cString: strerror(errno)))") }
            done += n
        }
        guard fchmod(fd, mode) == 0 else { throw TestFailure("fchmod \(path): \(String(cString: strerror(errno)))") }
    }
}

extension Trait where Self == ConditionTrait {
    /// A test that needs root (network namespaces, tun devices, device nodes, other users' files). Without root it is
    /// reported as skipped, not passed; under REACH_REQUIRE_PRIVILEGED=1 (scripts/test, CI) a missing root fails it.
    public static var needsRoot: Self { needs(TestSupport.isRoot, "root (network namespaces, devices)") }

    /// A test that needs something of the machine (a tool, a built program): skipped and said so without it, a
    /// failure under REACH_REQUIRE_PRIVILEGED=1.
    public static func needs(_ met: @autoclosure @escaping @Sendable () -> Bool, _ what: String) -> Self {
        .enabled(if: try TestSupport.mayRun(met(), what), Comment(rawValue: "needs \(what)"))
    }
}

/// The requirements of the modem rigs (WWANLab, ModemAgentRig): root for the namespace and the tun, and the
/// simulator built. A suite lists them as traits: `@Suite(.serialized, .needsRoot, .needsSimulator)`.
extension Trait where Self == ConditionTrait {
    public static var needsSimulator: Self { needs(TestPaths.isBuilt(TestPaths.simulator), "reach-modem-sim built") }
}
