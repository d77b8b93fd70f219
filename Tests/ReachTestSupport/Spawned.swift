// A child program started with posix_spawn(3), and its output.
//
// Why not Foundation's Process: its children inherit the spawning thread's signal mask (Swift Testing's worker
// threads block SIGTERM, so such children cannot be stopped with SIGTERM), and waitUntilExit() spins a run loop
// until SIGCHLD reaches some thread that does not block it (two test threads once spun there for 26 minutes).
// Here the child gets an empty signal mask, default signal actions and a process group of its own, and is reaped
// with waitpid(WNOHANG) against a deadline, so no wait can last forever.

import Foundation
import ReachSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public final class Spawned: @unchecked Sendable {
    /// The child's standard input.
    public enum Input: Sendable {
        case null
        /// These bytes, then end of file (an unlinked temporary file, so any size works).
        case text(String)
    }

    /// Where the child's standard output or error goes.
    public enum Output: Sendable {
        case null
        /// A pipe, read as the child writes (`readLine`, `text`). Its buffer is 64 KiB: use it for programs that
        /// print little, or keep reading.
        case pipe
        /// An unlinked temporary file: the child never blocks on it, and `text`/`readLine` see what it wrote.
        case capture
        /// A file at this path (created or truncated).
        case file(String)
    }

    public let pid: pid_t
    public let argv: [String]
    /// The child's standard output and error when they are `.pipe` or `.capture`.
    public let stdout: ChildOutput?
    public let stderr: ChildOutput?
    /// When posix_spawn returned.
    public let started: ContinuousClock.Instant

    private struct State {
        var exit: Int32?
        var lease: ChildSlots.Lease?
    }

    private let state: Mutex<State>

    /// Fds are made and handed to a child under this lock, so no other spawn of ours inherits them (the pipe's write
    /// end in a long-lived simulator would keep its reader from ever seeing end of file).
    static let spawnLock = NSLock()

    /// Starts `argv` (a bare name is looked up in PATH) with a slot from `ChildSlots.shared`. From async code use
    /// `Spawned.start`, which waits for a slot without blocking a thread.
    @available(*, noasync, message: "use Spawned.start, which waits for a child slot without blocking a pool thread")
    public convenience init(
        _ argv: [String], stdin: Input = .null, stdout: Output = .null, stderr: Output = .null,
        environment: [String: String]? = nil
    ) throws {
        try self.init(argv, stdin: stdin, stdout: stdout, stderr: stderr, environment: environment,
                      lease: ChildSlots.shared.acquireBlocking())
    }

    /// Waits (suspending) for a child slot, then starts `argv`.
    public static func start(
        _ argv: [String], stdin: Input = .null, stdout: Output = .null, stderr: Output = .null,
        environment: [String: String]? = nil
    ) async throws -> Spawned {
        let lease = await ChildSlots.shared.acquire()
        return try Spawned(argv, stdin: stdin, stdout: stdout, stderr: stderr, environment: environment, lease: lease)
    }

    /// Starts `argv` holding `lease` (given back when the child is reaped, or now if the spawn fails).
    public init(
        _ argv: [String], stdin: Input = .null, stdout: Output = .null, stderr: Output = .null,
        environment: [String: String]? = nil, lease: ChildSlots.Lease
    ) throws {
        var spawned = false
        defer { if !spawned { lease.release() } }
        guard let program = argv.first else { throw TestFailure("Spawned: empty argv") }
        let path = program.contains("/") ? program : try TestSupport.which(program)
        self.argv = argv

        // Marked for the janitor, which ends the child should this process die without stopping it.
        var inherited = ProcessInfo.processInfo.environment
        if let janitor = Janitor.shared { inherited[Janitor.variable] = janitor.owner }
        let env = (environment.map { inherited.merging($0) { $1 } } ?? inherited).map { "\($0)=\($1)" }

        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        // Fds only the child needs, closed here after the spawn. Our ends belong to their ChildOutput from the
        // start (it closes them, also when this initialiser throws).
        var childEnds: [Int32] = []
        defer { childEnds.forEach { Sys.close($0) } }

        var outputs: [ChildOutput?] = []
        var actions: [Spawn.FileAction] = []
        switch stdin {
            case .null:
                actions.append(.null(0))
            case let .text(text):
                let fd = try Self.anonymousFile()
                childEnds.append(fd)
                if case let .failure(e) = Sys.writeAll(fd, Array(text.utf8), path: nil) {
                    throw TestFailure("writing standard input for \(program): \(e)")
                }
                lseek(fd, 0, SEEK_SET)
                actions.append(.dup2(from: fd, to: 0))
            }
            for (target, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
                switch output {
                case .null:
                    actions.append(.null(target))
                    outputs.append(nil)
                case let .file(file):
                    actions.append(.open(target, path: file, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644))
                    outputs.append(nil)
                case .pipe:
                    let fds: (read: Int32, write: Int32)
                    switch Sys.pipe() {
                    case let .success(p): fds = p
                    case let .failure(e): throw TestFailure("\(e) for \(program)")
                    }
                    childEnds.append(fds.write)
                    actions.append(.dup2(from: fds.write, to: target))
                    outputs.append(ChildOutput(fd: fds.read, isPipe: true))
                case .capture:
                    let fd = try Self.anonymousFile()
                    actions.append(.dup2(from: fd, to: target))
                    outputs.append(ChildOutput(fd: fd, isPipe: false))
                }
            }
        let pid = try Self.spawnClean(path, argv: argv, environment: env, actions: actions)
        spawned = true
        self.pid = pid
        self.started = .now
        self.stdout = outputs[0]
        self.stderr = outputs[1]
        state = Mutex(State(exit: nil, lease: lease))
        outputs.forEach { $0?.child = self }
    }

    deinit {
        if exitStatus == nil { _ = stop(grace: 0) }
    }

    /// ReachSystem's Spawn for a test child: a process group of its own, an empty signal mask and default
    /// dispositions (a test process's threads block signals, and a child that inherited that could not be stopped
    /// with SIGTERM), `actions` for its descriptors and none of ours beyond them. The caller holds `spawnLock`.
    /// Returns the child's pid.
    static func spawnClean(_ path: String, argv: [String], environment: [String], actions: [Spawn.FileAction]) throws -> pid_t {
        switch Spawn.posix_spawn(path, argv: argv, environment: environment, actions: actions, flags: [.cleanSignals, .newProcessGroup]) {
        case let .success(pid): return pid
        case let .failure(e): throw TestFailure("\(e)")
        }
    }

    /// Sends `sig` to the child's process group (the child and whatever it started), while it has not been reaped.
    public func signal(_ sig: Int32) {
        guard exitStatus == nil else { return }
        Sys.kill(-pid, sig)
    }

    public var isRunning: Bool { exitStatus == nil }

    /// The exit status (128 + N when signal N ended it; -1 if it could not be reaped), or nil while it runs. Reaps.
    public var exitStatus: Int32? {
        let (status, lease) = state.withLock { s -> (Int32?, ChildSlots.Lease?) in
            if let e = s.exit { return (e, nil) }
            switch Sys.waitpid(pid, block: false) {
            case .success(nil): return (nil, nil)
            case let .success(status?): s.exit = status.shellStatus
            // ECHILD: reaped elsewhere or SIGCHLD ignored; it is gone in any case.
            case .failure: s.exit = -1
            }
            defer { s.lease = nil }
            return (s.exit, s.lease)
        }
        lease?.release()
        return status
    }

    /// Waits at most `timeout` seconds for the child to exit; its status, or nil if it is still running.
    @available(*, noasync, message: "await the async wait(timeout:)")
    public func wait(timeout: Double) -> Int32? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            if let s = exitStatus { return s }
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return nil }
            Sys.waitForExit(pid, timeout: left)
        }
    }

    /// Waits at most `timeout` seconds for the child to exit, suspending (no thread is held).
    public func wait(timeout: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var pause = 1
        while true {
            if let s = exitStatus { return s }
            if ContinuousClock.now >= deadline { return nil }
            // A cancelled task cannot sleep; it waits the pause out on its thread rather than spin.
            do { try await Task.sleep(for: .milliseconds(pause)) } catch { Sys.nanosleep(.milliseconds(pause)) }
            pause = min(pause * 2, 10)
        }
    }

    /// SIGTERM to the process group, up to `grace` seconds to exit, then SIGKILL; reaps. Returns the exit status
    /// (0 when the child handled SIGTERM and exited cleanly, 143 when SIGTERM killed it). Idempotent. Blocks for at
    /// most `grace` + 10 seconds.
    @discardableResult
    public func stop(grace: Double = 5) -> Int32 {
        if let s = exitStatus { return s }
        signal(SIGTERM)
        if let s = wait(timeout: grace) { return sweep(s) }
        signal(SIGKILL)
        return sweep(wait(timeout: 10) ?? -1)
    }

    /// `stop(grace:)`, suspending instead of blocking.
    @discardableResult
    public func stop(grace: Double = 5) async -> Int32 {
        if let s = exitStatus { return s }
        signal(SIGTERM)
        if let s = await wait(timeout: grace) { return sweep(s) }
        signal(SIGKILL)
        return sweep(await wait(timeout: 10) ?? -1)
    }

    /// Kills what is left of the group once its leader is gone (a program it started in the background).
    private func sweep(_ status: Int32) -> Int32 {
        if case .success = Sys.kill(-pid, 0) { Sys.kill(-pid, SIGKILL) }
        return status
    }

    /// Runs to the end within `timeout` seconds (else SIGTERM, 2 s, SIGKILL) and collects the result.
    @available(*, noasync)
    func finish(timeout: Double) -> RunResult {
        var status = wait(timeout: timeout)
        let timedOut = status == nil
        if timedOut { status = stop(grace: 2) }
        return RunResult(
            status: status ?? -1, stdout: stdout?.text ?? "", stderr: stderr?.text ?? "", timedOut: timedOut,
            seconds: (ContinuousClock.now - started).seconds)
    }

    /// The next line of standard output (without its newline), waiting at most `timeout` seconds. Throws when the
    /// time is up or the output ends first, naming the program and what it wrote on standard error.
    @available(*, noasync, message: "await the async readLine(timeout:)")
    public func readLine(timeout: Double) throws -> String {
        guard let stdout else { throw TestFailure("\(argv[0]): standard output is not read") }
        return try stdout.readLine(timeout: timeout)
    }

    public func readLine(timeout: Double) async throws -> String {
        guard let stdout else { throw TestFailure("\(argv[0]): standard output is not read") }
        return try await stdout.readLine(timeout: timeout)
    }

    /// What the child wrote on standard error, when captured, for failure messages.
    public var errorText: String { stderr?.text ?? "" }

    /// An open, already unlinked temporary file (read and write, close-on-exec).
    static func anonymousFile() throws -> Int32 {
        for _ in 0..<10 {
            let path = NSTemporaryDirectory() + "gr-fd-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                unlink(path)
                return fd
            }
            if errno != EEXIST { throw TestFailure("open \(path): \(String(cString: strerror(errno)))") }
        }
        throw TestFailure("no temporary file name free in \(NSTemporaryDirectory())")
    }
}

/// A child's standard output or error, read as it arrives: `text` is everything so far, `readLine` hands out lines
/// in order.
public final class ChildOutput: @unchecked Sendable {
    private let fd: Int32
    private let isPipe: Bool
    /// Set right after the spawn; tells a file reader whether more can come.
    fileprivate weak var child: Spawned?
    private let lock = NSLock()
    private var seen: [UInt8] = []
    private var lineStart = 0
    private var ended = false

    fileprivate init(fd: Int32, isPipe: Bool) {
        self.fd = fd
        self.isPipe = isPipe
    }

    deinit { close(fd) }

    /// Everything written so far.
    public var text: String {
        lock.withLock {
            pump()
            return String(decoding: seen, as: UTF8.self)
        }
    }

    /// Reads what is there without waiting. Call with the lock held.
    private func pump() {
        guard !ended else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if isPipe {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 0) > 0 else { return }
                let n = read(fd, &buffer, buffer.count)
                if n > 0 {
                    seen += buffer[0..<n]
                } else if n == 0 || errno != EINTR {
                    ended = true
                    return
                }
            } else {
                let running = child?.isRunning ?? false
                let n = pread(fd, &buffer, buffer.count, off_t(seen.count))
                if n > 0 {
                    seen += buffer[0..<n]
                } else {
                    // Nothing more now; nothing more ever once the writer has been reaped before this read.
                    if !running { ended = true }
                    return
                }
            }
        }
    }

    private enum Next {
        case line(String)
        case end
        case wait
    }

    private func next() -> Next {
        lock.withLock {
            pump()
            if let nl = seen[lineStart...].firstIndex(of: 10) {
                let line = String(decoding: seen[lineStart..<nl], as: UTF8.self)
                lineStart = nl + 1
                return .line(line)
            }
            return ended ? .end : .wait
        }
    }

    private func failure(_ why: String) -> TestFailure {
        let program = child?.argv.first ?? "the child"
        let err = child?.stderr.map { $0 === self ? "" : $0.text } ?? ""
        return TestFailure("\(program): \(why)\(err.isEmpty ? "" : "; stderr: \(err)")")
    }

    /// The next line, waiting at most `timeout` seconds (blocking this thread).
    @available(*, noasync, message: "await the async readLine(timeout:)")
    public func readLine(timeout: Double) throws -> String {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            switch next() {
            case let .line(l): return l
            case .end: throw failure("output ended before a whole line")
            case .wait:
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw failure("no line within \(timeout) s") }
                if isPipe {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, Int32(min(left, .milliseconds(100)) / .milliseconds(1)) + 1)
                } else {
                    usleep(5_000)
                }
            }
        }
    }

    /// The next line, waiting at most `timeout` seconds (suspending).
    public func readLine(timeout: Double) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            switch next() {
            case let .line(l): return l
            case .end: throw failure("output ended before a whole line")
            case .wait:
                guard ContinuousClock.now < deadline else { throw failure("no line within \(timeout) s") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// The next line that satisfies `condition` (skipping the others), within `timeout` seconds.
    public func line(timeout: Double, where condition: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            let l = try await readLine(timeout: max(0, (deadline - ContinuousClock.now).seconds))
            if condition(l) { return l }
        }
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
