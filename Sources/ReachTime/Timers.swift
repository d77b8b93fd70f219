// Sleeping until a deadline in a way that lets a cancelled sleep go at once. Every sleep of the monitoring (the
// monitor's timer, restart backoff, modem request deadlines and polls, host-name resolution deadlines) waits here.
//
// `Task.sleep` hands its wake-up job to the global executor with the deadline; when the sleeping task is cancelled
// the task resumes, but the job (about 1 KiB with the task's context) stays queued until the deadline passes. A
// monitor re-arms its timer on every change and every stop, with deadlines up to a report interval away, so those
// jobs pile up with the rate of changes (measured: 5,000 cancelled 60 s sleeps held 5 MiB). Here one thread of our
// own waits for the earliest deadline; a cancelled sleep is removed from its table and freed on the spot, and the
// thread ends when nothing is waiting (a stopped monitor leaves no thread behind).
//
// Time is CLOCK_BOOTTIME, which is what Swift's ContinuousClock reads on Linux (it keeps counting while the
// system is suspended). The wait itself is poll(2) with a relative timeout, recomputed at every wake-up.

import Glibc
import ReachSystem
import Synchronization

public final class Timers: Sendable {
    /// The process's timer thread (started on demand, gone when idle).
    public static let shared = Timers()

    private struct Waiter {
        var deadline: Int64
        var continuation: CheckedContinuation<Void, Error>
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        /// The wake-up pipe of the running thread; nil when no thread runs.
        var wake: (read: Int32, write: Int32)?
    }

    private let state = Mutex(State())

    /// CLOCK_BOOTTIME in nanoseconds.
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Returns at `deadline` (CLOCK_BOOTTIME nanoseconds), or throws CancellationError as soon as the task is
    /// cancelled.
    public func sleep(until deadline: Int64) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, Error>) in
                enum Now { case due, cancelled, waiting }
                let now = state.withLock { s -> Now in
                    if Task.isCancelled { return .cancelled }
                    if deadline <= Self.now() { return .due }
                    let earliest = s.waiters.values.map(\.deadline).min()
                    s.waiters[id] = Waiter(deadline: deadline, continuation: c)
                    if let wake = s.wake {
                        if earliest.map({ deadline < $0 }) ?? true { Self.poke(wake.write) }
                    } else {
                        s.wake = Self.startThread(self)
                        if s.wake == nil {
                            // No thread (out of resources): the caller learns it as an early wake-up.
                            s.waiters[id] = nil
                            return .due
                        }
                    }
                    return .waiting
                }
                switch now {
                case .due: c.resume()
                case .cancelled: c.resume(throwing: CancellationError())
                case .waiting: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                let w = s.waiters.removeValue(forKey: id)
                if w != nil, let wake = s.wake { Self.poke(wake.write) }
                return w
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns after `duration`, or throws CancellationError as soon as the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        let (s, attos) = duration.components
        try await sleep(until: Self.now() + s * 1_000_000_000 + attos / 1_000_000_000)
    }

    private static func poke(_ fd: Int32) {
        var one: UInt8 = 1
        _ = write(fd, &one, 1)
    }

    /// The thread's pipe (its read end is the thread's), or nil when it cannot start.
    private static func startThread(_ timers: Timers) -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let wake = fds[0]
        guard ReachSystem.startThread("timers", { timers.run(wake: wake) }) else {
            close(fds[0])
            close(fds[1])
            return nil
        }
        return (fds[0], fds[1])
    }

    /// The thread: wake the due waiters, sleep until the next deadline or a poke; end (closing the pipe) when
    /// nobody waits.
    private func run(wake: Int32) {
        var drain = [UInt8](repeating: 0, count: 64)
        while true {
            let (due, next) = state.withLock { s -> ([CheckedContinuation<Void, Error>], Int64?) in
                let now = Self.now()
                var due: [CheckedContinuation<Void, Error>] = []
                for (id, w) in s.waiters where w.deadline <= now {
                    due.append(w.continuation)
                    s.waiters[id] = nil
                }
                guard let next = s.waiters.values.map(\.deadline).min() else {
                    if let pipe = s.wake {
                        close(pipe.read)
                        close(pipe.write)
                    }
                    s.wake = nil
                    return (due, nil)
                }
                return (due, next)
            }
            for c in due { c.resume() }
            guard let next else { return }
            // Round up: a timeout that ends a hair early only costs another turn of the loop.
            let ms = Int32(clamping: max(0, (next - Self.now() + 999_999) / 1_000_000))
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, ms)
            if fds[0].revents != 0 { _ = read(wake, &drain, drain.count) }
        }
    }
}
