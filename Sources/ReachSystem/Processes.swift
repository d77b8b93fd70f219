// Processes and signals: kill, waitpid, a wait with a time limit, signal dispositions. A wait with a limit sleeps in
// poll(2) on a pidfd (Linux 5.3's pidfd_open: readable once the process has exited), so no loop of short sleeps
// around waitpid(WNOHANG) is needed; where pidfd_open is missing (an older kernel, seccomp) it falls back to a
// backing-off poll of waitpid.

import Glibc
import Synchronization

/// How a reaped process ended.
public enum WaitStatus: Sendable, Equatable {
    case exited(Int32)
    case signalled(Int32)

    /// From waitpid's status word (WIFEXITED / WTERMSIG, which are macros the importer does not bring over).
    public init(raw: Int32) {
        let signal = raw & 0x7f
        self = signal == 0 ? .exited((raw >> 8) & 0xff) : .signalled(signal)
    }

    /// The shell's number for it: the exit status, or 128 + the signal.
    public var shellStatus: Int32 {
        switch self {
        case let .exited(code): code
        case let .signalled(signal): 128 + signal
        }
    }
}

extension Sys {
    /// Sends `signal` to `pid` (a negative pid: its process group; signal 0: only whether it exists and may be
    /// signalled). The corresponding C function is `kill`.
    @discardableResult
    public static func kill(_ pid: pid_t, _ signal: Int32) -> Result<Void, SystemError> {
        retrying("kill", nil) { Glibc.kill(pid, signal) }.map { _ in () }
    }

    /// Reaps `pid` when it has exited: its status, or nil while it runs (`block` false) . `block` waits for it to
    /// exit. The corresponding C function is `waitpid`.
    public static func waitpid(_ pid: pid_t, block: Bool) -> Result<WaitStatus?, SystemError> {
        var raw: Int32 = 0
        return retrying("waitpid", nil) { Glibc.waitpid(pid, &raw, block ? 0 : WNOHANG) }
            .map { r in r == 0 ? nil : WaitStatus(raw: raw) }
    }

    /// Waits at most `timeout` for `pid` to exit and reaps it: its status, or nil if it still runs then.
    public static func waitpid(_ pid: pid_t, timeout: Duration) -> Result<WaitStatus?, SystemError> {
        let deadline = monotonicNow() + timeout
        while true {
            switch waitpid(pid, block: false) {
            case let .success(status?): return .success(status)
            case let .failure(e): return .failure(e)
            case .success(nil): break
            }
            let left = deadline - monotonicNow()
            if left <= .zero { return .success(nil) }
            waitForExit(pid, timeout: left)
        }
    }

    /// Sleeps until the child `pid` has exited or `timeout` passed, without reaping it (its status stays for
    /// `waitpid`). It sleeps in poll(2) on a pidfd; without one it returns after at most 10 ms, so the caller, which
    /// looks with `waitpid(block: false)` after every return, polls at that pace.
    public static func waitForExit(_ pid: pid_t, timeout: Duration) {
        guard timeout > .zero else { return }
        guard let pidfd = pidfdOpen(pid) else { return nanosleep(min(timeout, .milliseconds(10))) }
        defer { close(pidfd) }
        _ = poll(pidfd, Int16(POLLIN), timeoutMs: milliseconds(timeout))
    }

    /// A descriptor that becomes readable when `pid` exits (pidfd_open(2), close-on-exec by the kernel), or nil where
    /// the kernel or C library has none. Looked up at run time: Swift's Glibc module does not declare glibc 2.36's
    /// pidfd_open.
    public static func pidfdOpen(_ pid: pid_t) -> Int32? {
        guard let open = pidfdOpenFunction else { return nil }
        let fd = open(pid, 0)
        return fd >= 0 ? fd : nil
    }

    private static let pidfdOpenFunction: (@convention(c) (pid_t, UInt32) -> Int32)? = symbol("pidfd_open")

    /// A C library function that Swift's Glibc module does not declare, found by name (dlsym), or nil.
    static func symbol<F>(_ name: String) -> F? {
        guard let handle = dlopen(nil, RTLD_NOW), let address = dlsym(handle, name) else { return nil }
        return unsafeBitCast(address, to: F.self)
    }

    /// What a signal does in this process.
    public enum SignalAction: Sendable {
        case `default`
        case ignore
        case handler(@convention(c) (Int32) -> Void)
    }

    /// Sets what `signal` does in this process (for every thread). The corresponding C function is `signal` (glibc's
    /// has BSD semantics: the handler stays installed and interrupted calls restart).
    public static func signal(_ signal: Int32, _ action: SignalAction) {
        switch action {
        case .default: _ = Glibc.signal(signal, SIG_DFL)
        case .ignore: _ = Glibc.signal(signal, SIG_IGN)
        case let .handler(h): _ = Glibc.signal(signal, h)
        }
    }

    /// Whole milliseconds for poll(2)'s timeout: rounded up (a timeout of 0.4 ms must not become a busy 0), at most
    /// Int32.max.
    public static func milliseconds(_ d: Duration) -> Int32 {
        if d <= .zero { return 0 }
        let (seconds, attoseconds) = d.components
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: ms)
    }
}

extension EventLoop {
    /// Reaps the child `pid` once it exits, so that a long-running process keeps no zombie of a program it started
    /// and let go (a proxy): a `ChildExit` on this loop, no thread while the child runs. Where pidfd_open is missing,
    /// or the loop cannot take the registration, a thread `reach-reap` waits in waitpid instead (a child that may run
    /// as long as we do is not looked at every few milliseconds).
    public func reapWhenExited(_ pid: pid_t) {
        if (try? ChildExit.watch(pid, on: self, look: nil) { _ in }) != nil { return }
        _ = startThread("reap") { _ = Sys.waitpid(pid, block: true) }
    }
}

/// A child's exit followed on an event loop, and the child reaped: a read registration of its pidfd (readable once it
/// has exited), or where the kernel has no pidfd_open, a look with waitpid(WNOHANG) every `look` on a `LoopTimer`.
/// The one way the agent follows the programs it starts: hooks, modem workers and the proxies it launched.
/// `exited` runs once, on the loop's thread, with the status, or nil when waitpid failed (the child is not ours to
/// wait for any more). `cancel()` stops following without reaping. Either way the pidfd is closed.
public final class ChildExit: Sendable {
    private struct State {
        /// -1: none (looking instead, or over).
        var pidFD: Int32 = -1
        var registration: EventLoop.Registration?
        var over = false
    }

    public let pid: pid_t
    private let loop: EventLoop
    private let look: Int64?
    private let timer: LoopTimer
    private let exited: @Sendable (WaitStatus?) -> Void
    private let state = Mutex(State())

    private init(pid: pid_t, loop: EventLoop, look: Int64?, exited: @escaping @Sendable (WaitStatus?) -> Void) {
        self.pid = pid
        self.loop = loop
        self.look = look
        timer = LoopTimer(loop: loop)
        self.exited = exited
    }

    /// Starts following `pid`'s exit on `loop`. Nil when there is no pidfd here and `look` is nil (no looking
    /// wanted); the loop's error when it can take neither the pidfd's registration nor the look's timer.
    public static func watch(
        _ pid: pid_t, on loop: EventLoop, look: Duration? = .milliseconds(10),
        _ exited: @escaping @Sendable (WaitStatus?) -> Void
    ) throws(EventLoopError) -> ChildExit? {
        try watch(pid, on: loop, look: look, pidfd: true, exited)
    }

    /// `pidfd: false` follows the exit as a kernel without pidfd_open makes it (the tests' way to the looks).
    static func watch(
        _ pid: pid_t, on loop: EventLoop, look: Duration?, pidfd: Bool, _ exited: @escaping @Sendable (WaitStatus?) -> Void
    ) throws(EventLoopError) -> ChildExit? {
        let watch = ChildExit(pid: pid, loop: loop, look: look.map(Sys.nanoseconds), exited: exited)
        return try watch.arm(pidfd: pidfd) ? watch : nil
    }

    /// Stops following, without reaping. From any thread; nothing after it calls `exited`.
    public func cancel() {
        _ = end()
    }

    private func arm(pidfd: Bool) throws(EventLoopError) -> Bool {
        var failure: EventLoopError?
        if pidfd, let fd = Sys.pidfdOpen(pid) {
            // Held while registering, so that a callback on the loop's thread finds the registration.
            failure = state.withLock { s -> EventLoopError? in
                do throws(EventLoopError) {
                    s.registration = try loop.register(fd: fd, interest: .read) { [self] _ in check() }
                    s.pidFD = fd
                    return nil
                } catch {
                    return error
                }
            }
            if failure == nil { return true }
            Sys.close(fd)
        }
        guard let look else {
            if let failure { throw failure }
            return false
        }
        if let e = timer.set(at: EventLoop.now() + look, { [self] in check() }) { throw e }
        return true
    }

    /// Reaps the child if it has exited (the pidfd turned readable, or a look), else looks again later.
    private func check() {
        guard !state.withLock({ $0.over }) else { return }
        let status: WaitStatus?
        switch Sys.waitpid(pid, block: false) {
        case .success(nil):
            if let look, state.withLock({ $0.pidFD < 0 }) {
                timer.set(at: EventLoop.now() + look) { [self] in check() }
            }
            return
        case let .success(ended?): status = ended
        case .failure: status = nil
        }
        if end() { exited(status) }
    }

    /// Ends the following: the registration cancelled, the pidfd closed, the timer disarmed. False when it had ended.
    private func end() -> Bool {
        let (wasOver, registration, fd) = state.withLock { s -> (Bool, EventLoop.Registration?, Int32) in
            defer {
                s.over = true
                s.registration = nil
                s.pidFD = -1
            }
            return (s.over, s.registration, s.pidFD)
        }
        if wasOver { return false }
        timer.set(at: nil)
        if let registration { loop.cancel(registration) }
        if fd >= 0 { Sys.close(fd) }
        return true
    }
}
