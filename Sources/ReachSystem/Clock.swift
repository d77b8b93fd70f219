// The clocks. Every deadline reads CLOCK_BOOTTIME (`monotonicNow`): it never steps with the wall clock, and unlike
// CLOCK_MONOTONIC it goes on counting while the system is suspended, so a deadline that passed during a suspend has
// passed when the system wakes (a hold-down, a worker's silence limit or a hook's timeout measures time the world
// went on, and a router resumed from suspend must re-check its links, not wait out the time it slept). It is also
// what Swift's ContinuousClock reads on Linux, so deadlines made here and from ContinuousClock.now agree.
// CLOCK_REALTIME is read only for timestamps people read (`realtimeNow`).

import Glibc

extension Sys {
    /// CLOCK_BOOTTIME: time since boot, suspends included. The corresponding C function is `clock_gettime`.
    public static func monotonicNow() -> Duration { .nanoseconds(monotonicNanoseconds()) }

    /// The same clock in nanoseconds, the event loop's deadline unit (no Duration arithmetic per loop turn).
    public static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        Glibc.clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// `d` in nanoseconds, the unit of `monotonicNanoseconds` and the event loop's deadlines.
    public static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The same clock in whole milliseconds, for deadlines kept in milliseconds (poll(2)'s unit).
    public static func monotonicMilliseconds() -> Int64 { monotonicNanoseconds() / 1_000_000 }

    /// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), in nanoseconds: what a piece of work costs.
    public static func threadCPUNanoseconds() -> Int64 {
        var ts = timespec()
        Glibc.clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// CLOCK_REALTIME, the wall clock (seconds and nanoseconds since the epoch), for timestamps only.
    public static func realtimeNow() -> timespec {
        var ts = timespec()
        Glibc.clock_gettime(CLOCK_REALTIME, &ts)
        return ts
    }

    /// Sleeps the calling thread for `duration`, the rest of it again after a signal. For a thread that has nothing
    /// to wait on (a backoff between attempts); a thread with descriptors sleeps in `poll`. The corresponding C
    /// function is `nanosleep`.
    public static func nanosleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while Glibc.nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
