// One timer of the event loop that moves instead of multiplying, for a state machine on the loop whose next moment
// changes with each thing it hears (a child's time limits, a worker's silence limit): `set(at:_:)` arms it at a new
// deadline and drops the one before, `set(at: nil)` disarms it. The callback runs on the loop's thread.

import Synchronization

public final class LoopTimer: Sendable {
    private struct Armed {
        var registration: EventLoop.Registration
        var at: Int64
        var generation: UInt64
    }

    private struct Slot {
        var armed: Armed?
        var generation: UInt64 = 0
    }

    private let loop: EventLoop
    private let slot = Mutex(Slot())

    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// The deadline it is armed for (`EventLoop.now()` nanoseconds), or nil.
    public var deadline: Int64? { slot.withLock { $0.armed?.at } }

    /// Arms the timer at `at` to run `callback` (nil: disarms it). Arming it again at the deadline it has changes
    /// nothing (the callback armed first stays). The loop's error when it cannot take the timer (then it is
    /// disarmed).
    @discardableResult
    public func set(at: Int64?, _ callback: @escaping @Sendable () -> Void = {}) -> EventLoopError? {
        let (old, generation) = slot.withLock { s -> (EventLoop.Registration?, UInt64?) in
            if s.armed?.at == at { return (nil, nil) }
            let old = s.armed?.registration
            s.armed = nil
            guard at != nil else { return (old, nil) }
            s.generation += 1
            return (old, s.generation)
        }
        if let old { loop.cancel(old) }
        guard let at, let generation else { return nil }
        // Held while registering, so that a callback on the loop's thread finds the slot armed with it.
        return slot.withLock { s -> EventLoopError? in
            do throws(EventLoopError) {
                let r = try loop.schedule(at: at) { [self] in if fired(generation) { callback() } }
                s.armed = Armed(registration: r, at: at, generation: generation)
                return nil
            } catch {
                return error
            }
        }
    }

    /// Whether the timer that fired is the one armed now (and so disarmed by firing).
    private func fired(_ generation: UInt64) -> Bool {
        slot.withLock { s -> Bool in
            guard s.armed?.generation == generation else { return false }
            s.armed = nil
            return true
        }
    }
}
