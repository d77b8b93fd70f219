// Time, injected: a `Reachability` reads a monotonic clock (ContinuousClock in production, a manual clock in tests)
// and a wall clock for the `time` of its snapshots, so hold-down, report cadence and restart backoff are tested
// without sleeping.

import ReachCore
import ReachTime
import Synchronization

/// A monotonic clock as the monitoring uses it: time since an arbitrary origin, and sleeping until such a time.
public protocol MonitorClock: Sendable {
    func now() -> Duration
    /// Returns at `deadline` or throws CancellationError when the task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

/// Production: CLOCK_BOOTTIME, ContinuousClock's time on Linux (it keeps counting while the system is suspended, so
/// a 60 s report interval is 60 s of real time). Sleeps wait on `Timers`, so a cancelled sleep costs nothing after.
public struct ContinuousMonitorClock: MonitorClock {
    private let origin = Timers.now()

    public init() {}

    public func now() -> Duration { .nanoseconds(Timers.now() - origin) }

    public func sleep(until deadline: Duration) async throws {
        let (s, attos) = deadline.components
        try await Timers.shared.sleep(until: origin + s * 1_000_000_000 + attos / 1_000_000_000)
    }
}

/// A one-slot wake-up signal: `signal()` makes the current (or next) `wait()` return. Spurious wake-ups are allowed;
/// the waiter re-reads what it waits for.
public final class Wakeup: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    public init() {}

    public func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    public func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}

extension MonitorClock {
    /// Sleeps until `deadline` (nil: no deadline) or until `wakeup` is signalled, whichever comes first.
    public func sleep(until deadline: Duration?, orUntil wakeup: Wakeup) async {
        await withTaskGroup(of: Void.self) { group in
            if let deadline {
                group.addTask { try? await self.sleep(until: deadline) }
            }
            group.addTask { await wakeup.wait() }
            _ = await group.next()
            group.cancelAll()
        }
    }
}
