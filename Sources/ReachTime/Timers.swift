// Sleeping until a deadline in a way that lets a cancelled sleep go at once. Every sleep of the monitoring (the
// monitor's timer, restart backoff, modem request deadlines and polls, host-name resolution deadlines) waits here.
//
// `Task.sleep` hands its wake-up job to the global executor with the deadline; when the sleeping task is cancelled
// the task resumes, but the job (about 1 KiB with the task's context) stays queued until the deadline passes. A
// monitor re-arms its timer on every change and every stop, with deadlines up to a report interval away, so those
// jobs pile up with the rate of changes (measured: 5,000 cancelled 60 s sleeps held 5 MiB). Here each sleep is a
// timer of the process's event loop (ReachSystem's EventLoop, thread `reach-loop`, shared with the agent's sockets);
// a cancelled sleep cancels its timer, which is freed on the spot, and the loop's thread ends when nothing at all is
// registered (a stopped monitor leaves no thread behind).
//
// Time is CLOCK_BOOTTIME, the loop's one clock, which is what Swift's ContinuousClock reads on Linux (it keeps
// counting while the system is suspended).

import ReachSystem
import Synchronization

public final class Timers: Sendable {
    /// The process's timers, on the shared event loop.
    public static let shared = Timers(loop: .shared)

    private let loop: EventLoop

    public init(loop: EventLoop) { self.loop = loop }

    /// CLOCK_BOOTTIME in nanoseconds.
    public static func now() -> Int64 { EventLoop.now() }

    /// Returns at `deadline` (CLOCK_BOOTTIME nanoseconds), or throws CancellationError as soon as the task is
    /// cancelled.
    public func sleep(until deadline: Int64) async throws {
        // The timer and its continuation, once registered; `cancelled` when the task was cancelled before that.
        let slot = Mutex<(timer: EventLoop.Registration?, continuation: CheckedContinuation<Void, Error>?, cancelled: Bool)>(
            (nil, nil, false))
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, Error>) in
                enum Now { case due, cancelled, waiting }
                let now = slot.withLock { s -> Now in
                    if s.cancelled || Task.isCancelled { return .cancelled }
                    if deadline <= Self.now() { return .due }
                    // No loop to be had (out of threads): the caller learns it as an early wake-up.
                    guard let timer = try? loop.schedule(at: deadline, { c.resume() }) else { return .due }
                    s.timer = timer
                    s.continuation = c
                    return .waiting
                }
                switch now {
                case .due: c.resume()
                case .cancelled: c.resume(throwing: CancellationError())
                case .waiting: break
                }
            }
        } onCancel: {
            // Whoever removes the timer resumes: the loop when it fired (cancel then finds it gone), else this.
            let (timer, c) = slot.withLock { s in
                s.cancelled = true
                return (s.timer, s.continuation)
            }
            if let timer, let c, loop.cancel(timer) { c.resume(throwing: CancellationError()) }
        }
    }

    /// Returns after `duration`, or throws CancellationError as soon as the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: Self.now() + Sys.nanoseconds(duration))
    }
}
