// A cap on the child programs the tests run at once. Swift Testing starts every test of every suite together; on a
// 2-core CI machine that once meant ~35 simulators and their clients at the same moment, and the timing-sensitive
// tests of other suites then failed or the run stalled. Every `Spawned` holds one slot from spawn until it is
// reaped.
//
// The rules, chosen so that waiting can neither deadlock nor starve Swift concurrency's cooperative pool:
// - A task that already holds a slot (its simulator, say) gets more at once: its next child (the client it runs
//   against that simulator) never waits for a slot another waiting test would need. So at most `limit` tests that
//   run child programs make progress together, and each of them can finish.
// - Synchronous code running on a task (a synchronous test, on a pool thread) never waits either: blocking there
//   would hold a pool thread while the slot holders may need it. Such callers run over the cap, which is bounded by
//   the pool's width (one per core).
// - Everyone else waits in order: async callers suspend, plain threads block.
// - A waiter that has waited `patience` seconds runs anyway and says so on stderr: no hang, whatever happens.
//
// REACH_TEST_CHILDREN sets the limit (default 4); REACH_TEST_SLOT_PATIENCE the patience in seconds (default 180).

import Foundation
import Synchronization

public final class ChildSlots: Sendable {
    /// The slots every child program of this test process takes from.
    public static let shared = ChildSlots(
        limit: environmentNumber("REACH_TEST_CHILDREN").map { max(1, Int($0)) } ?? 4,
        patience: environmentNumber("REACH_TEST_SLOT_PATIENCE") ?? 180)

    public let limit: Int
    /// Seconds a waiter waits before it runs over the cap.
    public let patience: Double

    /// One slot, given back by `release()` (once; later calls do nothing) or when the lease is released.
    public final class Lease: Sendable {
        private let slots: ChildSlots
        fileprivate let owner: Int?
        private let released = Atomic<Bool>(false)

        fileprivate init(_ slots: ChildSlots, owner: Int?) {
            self.slots = slots
            self.owner = owner
        }

        public func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            slots.giveBack(owner)
        }

        deinit { release() }
    }

    private struct Waiter {
        var id: Int
        var owner: Int?
        var since: ContinuousClock.Instant
        var grant: @Sendable (Lease) -> Void
    }

    private struct State {
        var running = 0
        /// Slots held per task (by the task's hash while it runs).
        var held: [Int: Int] = [:]
        var waiters: [Waiter] = []
        var nextID = 0
        var watchdogRunning = false

        mutating func take(_ owner: Int?) {
            running += 1
            if let owner { held[owner, default: 0] += 1 }
        }

        func holds(_ owner: Int?) -> Bool { owner.map { held[$0, default: 0] > 0 } ?? false }
    }

    private let state = Mutex(State())

    public init(limit: Int, patience: Double = 180) {
        self.limit = limit
        self.patience = patience
    }

    /// Slots in use now (may exceed `limit`, see the rules above).
    public var running: Int { state.withLock { $0.running } }

    /// A slot for an async caller: at once if one is free or this task holds one already, else after those before.
    public func acquire() async -> Lease {
        let owner = Self.currentTask
        return await withCheckedContinuation { (continuation: CheckedContinuation<Lease, Never>) in
            let now = state.withLock { s -> Bool in
                if s.running < limit || s.holds(owner) {
                    s.take(owner)
                    return true
                }
                s.nextID += 1
                s.waiters.append(Waiter(id: s.nextID, owner: owner, since: .now) { continuation.resume(returning: $0) })
                return false
            }
            if now { continuation.resume(returning: Lease(self, owner: owner)) } else { startWatchdog() }
        }
    }

    /// A slot for a synchronous caller. On a task (a pool thread) it never waits; on a plain thread it blocks.
    public func acquireBlocking() -> Lease {
        let owner = Self.currentTask
        let box = LeaseBox()
        let now = state.withLock { s -> Bool in
            if s.running < limit || s.holds(owner) || owner != nil {
                s.take(owner)
                return true
            }
            s.nextID += 1
            s.waiters.append(Waiter(id: s.nextID, owner: nil, since: .now) { box.put($0) })
            return false
        }
        if now { return Lease(self, owner: owner) }
        startWatchdog()
        return box.take()
    }

    private func giveBack(_ owner: Int?) {
        let granted = state.withLock { s -> [Waiter] in
            s.running -= 1
            if let owner, let n = s.held[owner] { s.held[owner] = n > 1 ? n - 1 : nil }
            var granted: [Waiter] = []
            while s.running < limit, !s.waiters.isEmpty {
                let w = s.waiters.removeFirst()
                s.take(w.owner)
                granted.append(w)
            }
            return granted
        }
        for w in granted { w.grant(Lease(self, owner: w.owner)) }
    }

    /// Once a second: lets waiters that have waited `patience` seconds run over the cap.
    private func startWatchdog() {
        let start = state.withLock { s -> Bool in
            guard !s.watchdogRunning else { return false }
            s.watchdogRunning = true
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let (late, done) = state.withLock { s -> ([Waiter], Bool) in
                    let limitTime = ContinuousClock.now - .seconds(patience)
                    let late = s.waiters.filter { $0.since < limitTime }
                    s.waiters.removeAll { $0.since < limitTime }
                    for w in late { s.take(w.owner) }
                    if s.waiters.isEmpty { s.watchdogRunning = false }
                    return (late, s.waiters.isEmpty)
                }
                for w in late {
                    let note = "ReachTestSupport: waited \(Int(patience)) s for one of \(limit) child slots; "
                        + "running over the cap\n"
                    FileHandle.standardError.write(Data(note.utf8))
                    w.grant(Lease(self, owner: w.owner))
                }
                if done { return }
            }
        }
        thread.name = "ChildSlots watchdog"
        thread.start()
    }

    /// The current task's identity (nil on a plain thread).
    static var currentTask: Int? { withUnsafeCurrentTask { $0?.hashValue } }

    static func environmentNumber(_ name: String) -> Double? {
        ProcessInfo.processInfo.environment[name].flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil }
    }
}

/// Hands a lease from the granting thread to a blocked one.
private final class LeaseBox: @unchecked Sendable {
    private let ready = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var lease: ChildSlots.Lease?

    func put(_ l: ChildSlots.Lease) {
        lock.withLock { lease = l }
        ready.signal()
    }

    func take() -> ChildSlots.Lease {
        ready.wait()
        return lock.withLock { lease! }
    }
}
