// The system calls the event loop is made of, one wrapper each beside those of Syscalls.swift: poll(2), a pipe for
// wake-ups, and the clock every deadline of the agent is read from.

import Glibc

extension Sys {
    /// Waits for the descriptors' events or `timeoutMs` (-1: no limit; 0: only looks). The corresponding C function
    /// is `poll`. EINTR is retried with the same timeout (a signal is rare and the caller recomputes its deadline).
    public static func poll(_ fds: inout [pollfd], timeoutMs: Int32) -> Result<Int32, SystemError> {
        let count = nfds_t(fds.count)
        return fds.withUnsafeMutableBufferPointer { buffer in
            retrying("poll", nil) { Glibc.poll(buffer.baseAddress, count, timeoutMs) }
        }
    }

    /// A pipe whose both ends are close-on-exec and non-blocking: (read end, write end). The corresponding C function
    /// is `pipe` (then `fcntl`).
    public static func pipe() -> Result<(read: Int32, write: Int32), SystemError> {
        var fds: [Int32] = [-1, -1]
        let made = retrying("pipe", nil) { Glibc.pipe(&fds) }
        if case let .failure(e) = made { return .failure(e) }
        for fd in fds {
            let flagged = setCloseOnExec(fd, path: nil).flatMap { setNonBlocking(fd, true, path: nil) }
            if case let .failure(e) = flagged {
                close(fds[0])
                close(fds[1])
                return .failure(e)
            }
        }
        return .success((fds[0], fds[1]))
    }

    /// Marks a descriptor close-on-exec (a pipe's ends, an accepted connection: neither gets the flag by itself).
    /// The corresponding C function is `fcntl` (F_SETFD).
    public static func setCloseOnExec(_ fd: Int32, path: String?) -> Result<Void, SystemError> {
        retrying("fcntl", path) { Glibc.fcntl(fd, F_SETFD, FD_CLOEXEC) }.map { _ in () }
    }

    /// CLOCK_BOOTTIME in nanoseconds: the one clock of every deadline (what Swift's ContinuousClock reads on Linux; it
    /// keeps counting while the system is suspended, so a deadline that passed during a suspend is due at resume).
    public static func boottimeNanoseconds() -> Int64 {
        var ts = timespec()
        Glibc.clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
