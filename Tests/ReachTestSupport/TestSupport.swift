// Shared test helpers: run programs with a deadline, find the built executables, make network namespaces that
// are deleted afterwards, and decide what to do when a privileged test cannot run. Test-only (Foundation allowed).

import Foundation
import Testing

public struct RunResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var timedOut: Bool
    public var seconds: Double
}

public enum TestSupport {
    /// The directory holding the built executables (`reach`, `reach-modem-sim`): the test bundle's own directory.
    public static var productsDirectory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // swift-testing may run the tests from a .xctest bundle path inside the products directory.
        while dir.hasSuffix(".xctest") || dir.hasSuffix("Contents") || dir.hasSuffix("MacOS") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }

    public static func product(_ name: String) -> String { productsDirectory + "/" + name }

    /// Runs `argv` with a deadline. Output goes through temporary files (no pipe deadlocks); on timeout the process
    /// group gets SIGTERM, then SIGKILL after a grace period, and `timedOut` is set.
    @discardableResult
    public static func run(_ argv: [String], timeout: Double = 30, environment: [String: String]? = nil) throws -> RunResult {
        let tmp = FileManager.default.temporaryDirectory.path
        let outPath = "\(tmp)/gr-out-\(UUID().uuidString)"
        let errPath = "\(tmp)/gr-err-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
        let start = Date()
        let child = try Spawned(argv, stdout: outPath, stderr: errPath, environment: environment)
        var status = child.wait(timeout: timeout)
        var timedOut = false
        if status == nil {
            timedOut = true
            child.signal(SIGTERM)
            status = child.wait(timeout: 2)
            if status == nil {
                child.signal(SIGKILL)
                status = child.wait(timeout: 5)
            }
        }
        return RunResult(
            status: status ?? -1,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
            timedOut: timedOut, seconds: Date().timeIntervalSince(start))
    }

    /// Runs and requires exit 0; the error names the command and its stderr.
    @discardableResult
    public static func sh(_ argv: [String], timeout: Double = 30) throws -> String {
        let r = try run(argv, timeout: timeout)
        guard r.status == 0, !r.timedOut else {
            throw TestFailure("`\(argv.joined(separator: " "))` exited \(r.status)\(r.timedOut ? " (timed out)" : ""): \(r.stderr)")
        }
        return r.stdout
    }

    public static func which(_ name: String) throws -> String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin").split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw TestFailure("\(name) is not installed (scripts/setup installs it)")
    }

    public static var isRoot: Bool { getuid() == 0 }

    /// Whether a privileged test may run. Without root it fails the test when REACH_REQUIRE_PRIVILEGED=1 (CI), and
    /// otherwise returns false so the caller can return early (a skip, said in the output).
    public static func privileged(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if isRoot { return true }
        if ProcessInfo.processInfo.environment["REACH_REQUIRE_PRIVILEGED"] == "1" {
            Issue.record("\(what) needs root (network namespaces); REACH_REQUIRE_PRIVILEGED=1 forbids skipping",
                         sourceLocation: sourceLocation)
        } else {
            print("skipped: \(what) needs root (network namespaces)")
        }
        return false
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// A network namespace of the test's own, deleted (with everything in it) on `delete()` or deinit.
public final class Namespace: @unchecked Sendable {
    public let name: String
    private var helpers: [Spawned] = []
    private var deleted = false
    private static let counter = NSLock()
    nonisolated(unsafe) private static var next = 0

    public init(_ tag: String) throws {
        Namespace.counter.lock()
        Namespace.next += 1
        let n = Namespace.next
        Namespace.counter.unlock()
        name = "gr-\(tag)-\(getpid())-\(n)"
        try TestSupport.sh(["ip", "netns", "add", name])
        try ip("link", "set", "lo", "up")
    }

    deinit { delete() }

    public func delete() {
        guard !deleted else { return }
        deleted = true
        for h in helpers {
            h.signal(SIGKILL)
            _ = h.wait(timeout: 5)
        }
        _ = try? TestSupport.run(["ip", "netns", "delete", name], timeout: 10)
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
    }

    /// `ip -n NAME args…`
    @discardableResult
    public func ip(_ args: String...) throws -> String { try TestSupport.sh(["ip", "-n", name] + args) }

    /// Runs a program inside the namespace (`ip netns exec`, which also remounts /sys for it).
    public func exec(_ argv: [String], timeout: Double = 30) throws -> RunResult {
        try TestSupport.run(["ip", "netns", "exec", name] + argv, timeout: timeout)
    }

    /// Writes /etc/netns/NAME/FILE, which `ip netns exec` bind-mounts over /etc/FILE (hosts, resolv.conf).
    public func etc(_ file: String, _ contents: String) throws {
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(name)", withIntermediateDirectories: true)
        try contents.write(toFile: "/etc/netns/\(name)/\(file)", atomically: true, encoding: .utf8)
    }

    /// Creates a tun device and keeps it attached (so it has carrier) until the namespace is deleted.
    public func attachedTun(_ dev: String) throws {
        try ip("tuntap", "add", "dev", dev, "mode", "tun")
        let script = """
            import fcntl, struct, sys, time
            fd = open("/dev/net/tun", "r+b", buffering=0)
            fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x0001 | 0x1000))
            print("attached", flush=True)
            time.sleep(3600)
            """
        let out = FileManager.default.temporaryDirectory.path + "/gr-tun-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let p = try Spawned(["ip", "netns", "exec", name, "python3", "-c", script, dev], stdout: out, stderr: nil)
        helpers.append(p)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? String(contentsOfFile: out, encoding: .utf8))?.contains("attached") == true { return }
            if !p.isRunning { break }
            usleep(10_000)
        }
        throw TestFailure("could not attach to tun \(dev) in \(name)")
    }

    /// Moves one end of a new veth pair into `peer` (another namespace).
    public func veth(_ local: String, peer: Namespace, _ remote: String) throws {
        try TestSupport.sh(["ip", "link", "add", local, "netns", name, "type", "veth", "peer", "name", remote, "netns", peer.name])
    }
}

/// A child process started with posix_spawn in a process group of its own, with every signal unblocked and at its
/// default action. (Foundation's Process passes on the spawning thread's signal mask, and the test runner's
/// threads block SIGTERM, so its children could not be stopped with SIGTERM.)
public final class Spawned: @unchecked Sendable {
    public let pid: pid_t
    private var exitStatus: Int32?
    private let lock = NSLock()

    /// - Parameters: stdout/stderr: file paths to write to (created/truncated), or nil for /dev/null.
    public init(_ argv: [String], stdout: String?, stderr: String?, environment: [String: String]? = nil) throws {
        let path = argv[0].hasPrefix("/") ? argv[0] : try TestSupport.which(argv[0])
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&fa, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let env = (environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } }
            ?? ProcessInfo.processInfo.environment).map { "\($0)=\($1)" }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &fa, &attr, cArgs, cEnv)
        guard rc == 0 else { throw TestFailure("posix_spawn \(argv[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    deinit {
        if isRunning {
            signal(SIGKILL)
            _ = wait(timeout: 5)
        }
    }

    /// Sends `sig` to the child's whole process group.
    public func signal(_ sig: Int32) { kill(-pid, sig) }

    public var isRunning: Bool { reap(block: false) == nil }

    /// The exit status (128 + signal when killed), or nil if still running after `timeout` seconds.
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let s = reap(block: false) { return s }
            if Date() >= deadline { return nil }
            usleep(2_000)
        }
    }

    private func reap(block: Bool) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let r = waitpid(pid, &status, block ? 0 : WNOHANG)
        guard r == pid else { return nil }
        let sig = status & 0x7F
        exitStatus = sig == 0 ? (status >> 8) & 0xFF : 128 + sig
        return exitStatus
    }
}
