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
    /// and let go (a proxy): a pidfd registration on this loop, no thread while the child runs. Where pidfd_open is
    /// missing, or the loop cannot take the registration, a thread `reach-reap` waits in waitpid instead.
    public func reapWhenExited(_ pid: pid_t) {
        if let pidfd = Sys.pidfdOpen(pid) {
            // Held while registering, so the callback (on the loop's thread) finds its own registration.
            let registration = HeldRegistration()
            let registered = registration.value.withLock { r -> Bool in
                r = try? register(fd: pidfd, interest: .read) { [self] _ in
                    // Readable: it has exited. A failure (not our child any more) ends the watch as well.
                    if case .success(nil) = Sys.waitpid(pid, block: false) { return }
                    if let r = registration.value.withLock({ $0 }) { cancel(r) }
                    Sys.close(pidfd)
                }
                return r != nil
            }
            if registered { return }
            Sys.close(pidfd)
        }
        _ = startThread("reap") { _ = Sys.waitpid(pid, block: true) }
    }
}

/// A registration behind a lock that escaping closures can share (a Mutex itself cannot be captured by them). Not
/// generic: swiftlang 6.0.3's IRGen fails an assertion on a generic class holding a `Mutex<Value>`.
final class HeldRegistration: Sendable {
    let value = Mutex<EventLoop.Registration?>(nil)
}
