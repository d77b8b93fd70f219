import Foundation
import Glibc
@testable import ReachSystem
import Synchronization
import Testing

@Suite struct EventLoopTests {
    /// A loop of the test's own (not the shared one other suites use), stopped at the end.
    static func withLoop<T>(_ body: (EventLoop) async throws -> T) async rethrows -> T {
        let loop = EventLoop(role: "test-loop")
        defer { loop.stop() }
        return try await body(loop)
    }

    /// Waits (up to 5 s) until `condition` holds.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// A connected pair of Unix stream sockets, non-blocking.
    static func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        return (fds[0], fds[1])
    }

    enum Setup: String, CaseIterable, Sendable {
        case bytesWaiting, nothingWaiting, peerClosed, writeRoom, noInterest
    }

    /// What each descriptor state gives for each interest: the callback's readiness, or nil for no callback within
    /// 300 ms.
    struct Readiness: Sendable, CustomTestStringConvertible {
        var setup: Setup
        var interest: EventLoop.Interest
        var expected: EventLoop.Ready?
        var testDescription: String { "\(setup.rawValue), interest \(interest.rawValue)" }
    }

    @Test(arguments: [
        Readiness(setup: .bytesWaiting, interest: .read, expected: .readable),
        Readiness(setup: .nothingWaiting, interest: .read, expected: nil),
        Readiness(setup: .peerClosed, interest: [.read, .readHangUp], expected: [.readable, .hangUp, .readHangUp]),
        Readiness(setup: .peerClosed, interest: .read, expected: [.readable, .hangUp]),
        Readiness(setup: .writeRoom, interest: .write, expected: .writable),
        Readiness(setup: .noInterest, interest: [], expected: nil),
    ])
    func readinessIsReportedAsPollSawIt(_ c: Readiness) async throws {
        let (setup, interest, expected) = (c.setup, c.interest, c.expected)
        try await Self.withLoop { loop in
            let (a, b) = Self.socketPair()
            defer { close(a) }
            switch setup {
            case .bytesWaiting: _ = send(b, "x", 1, 0)
            case .peerClosed: close(b)
            case .nothingWaiting, .writeRoom, .noInterest: break
            }
            defer { if setup != .peerClosed { close(b) } }
            let seen = Mutex<EventLoop.Ready?>(nil)
            let r = try loop.register(fd: a, interest: interest) { fired in
                guard case let .ready(ready) = fired else { return }
                seen.withLock { $0 = ready }
            }
            if let expected {
                #expect(await Self.eventually { seen.withLock { $0 } != nil })
                #expect(seen.withLock { $0 } == expected)
            } else {
                try await Task.sleep(for: .milliseconds(300))
                #expect(seen.withLock { $0 } == nil)
            }
            loop.cancel(r)
        }
    }

    /// Timers fire in deadline order, not in the order they were registered; a cancelled one never fires.
    struct Timing: Sendable {
        var offsetsMs: [Int]
        var cancelled: [Int]
        var expected: [Int]
    }

    @Test(arguments: [
        Timing(offsetsMs: [30, 10, 20], cancelled: [], expected: [10, 20, 30]),
        Timing(offsetsMs: [50, 0, 25, 5], cancelled: [25], expected: [0, 5, 50]),
        Timing(offsetsMs: [10, 10, 10], cancelled: [10], expected: [10, 10]),  // equal deadlines: one cancelled of three
        Timing(offsetsMs: [-100, 40], cancelled: [], expected: [-100, 40]),  // a deadline already past fires at once
    ])
    func deadlinesFireInOrder(_ t: Timing) async throws {
        let (offsetsMs, cancelled, expected) = (t.offsetsMs, t.cancelled, t.expected)
        try await Self.withLoop { loop in
            let order = Mutex<[Int]>([])
            let base = EventLoop.now() + 50_000_000
            var registrations: [(Int, EventLoop.Registration)] = []
            for ms in offsetsMs {
                let r = try loop.schedule(at: base + Int64(ms) * 1_000_000) { order.withLock { $0.append(ms) } }
                registrations.append((ms, r))
            }
            for ms in cancelled {
                let i = try #require(registrations.firstIndex { $0.0 == ms })
                #expect(loop.cancel(registrations[i].1))
                registrations.remove(at: i)
            }
            #expect(await Self.eventually { order.withLock { $0.count } == expected.count })
            try await Task.sleep(for: .milliseconds(100))
            #expect(order.withLock { $0 } == expected)
            // A timer that fired is gone: cancelling it says so.
            for (_, r) in registrations { #expect(!loop.cancel(r)) }
        }
    }

    /// A deadline on a descriptor's registration fires without readiness, is cleared, and can be armed again; the
    /// registration stays.
    @Test func aDescriptorsDeadlineFiresAndIsArmedAgain() async throws {
        try await Self.withLoop { loop in
            let (a, b) = Self.socketPair()
            defer { close(a); close(b) }
            let fired = Mutex<[EventLoop.Fired]>([])
            let r = try loop.register(fd: a, interest: .read, deadline: EventLoop.now() + 20_000_000) { why in
                var byte: UInt8 = 0
                if case .ready = why { _ = recv(a, &byte, 1, 0) }  // read, or readiness would repeat every turn
                fired.withLock { $0.append(why) }
            }
            #expect(await Self.eventually { fired.withLock { $0 } == [.deadline] })
            loop.setDeadline(r, EventLoop.now() + 20_000_000)
            #expect(await Self.eventually { fired.withLock { $0 } == [.deadline, .deadline] })
            _ = send(b, "y", 1, 0)
            #expect(await Self.eventually { fired.withLock { $0.count } >= 3 })
            try await Task.sleep(for: .milliseconds(100))
            #expect(fired.withLock { $0 } == [.deadline, .deadline, .ready(.readable)])
            #expect(loop.cancel(r))
        }
    }

    /// Inside a callback, cancelling another registration that is ready in the same turn (or a timer due in it)
    /// keeps its callback from running; a callback may cancel itself and register anew.
    @Test(arguments: [true, false])
    func cancelInsideACallbackWins(otherIsTimer: Bool) async throws {
        try await Self.withLoop { loop in
            let (a1, b1) = Self.socketPair()
            let (a2, b2) = Self.socketPair()
            defer { [a1, b1, a2, b2].forEach { close($0) } }
            let calls = Mutex<[String]>([])
            let other = Mutex<EventLoop.Registration?>(nil)
            let me = Mutex<EventLoop.Registration?>(nil)
            let fresh = Mutex<EventLoop.Registration?>(nil)
            // Both are ready before the loop polls them (the timer is already due), so they come in one turn.
            _ = send(b1, "x", 1, 0)
            _ = send(b2, "x", 1, 0)
            let callback: EventLoop.Callback = { _ in
                calls.withLock { $0.append("first") }
                if let o = other.withLock({ $0 }) { _ = loop.cancel(o) }
                if let m = me.withLock({ $0 }) { _ = loop.cancel(m) }
                fresh.withLock { $0 = try? loop.schedule(at: 0) { calls.withLock { $0.append("fresh") } } }
            }
            try loop.post {
                // Registered from the loop's own thread, so both are in the next poll together.
                if otherIsTimer {
                    other.withLock { $0 = try? loop.schedule(at: 0) { calls.withLock { $0.append("other") } } }
                    me.withLock { $0 = try? loop.register(fd: a1, interest: .read, callback) }
                } else {
                    me.withLock { $0 = try? loop.register(fd: a1, interest: .read, callback) }
                    other.withLock {
                        $0 = try? loop.register(fd: a2, interest: .read) { _ in calls.withLock { $0.append("other") } }
                    }
                }
            }
            #expect(await Self.eventually { calls.withLock { $0.contains("fresh") } })
            try await Task.sleep(for: .milliseconds(100))
            let seen = calls.withLock { $0 }
            // Readiness is dispatched before deadlines, and the order of two ready descriptors is the poll set's: the
            // one that ran first cancelled the other.
            if seen.first == "first" {
                #expect(seen == ["first", "fresh"])
            } else {
                #expect(!otherIsTimer)
                #expect(seen.first == "other")
            }
            #expect(seen.filter { $0 == "first" }.count == 1, "a cancelled registration ran again: \(seen)")
        }
    }

    /// Posts from many threads all run, each thread's in its order, on the loop's thread.
    @Test func postsFromOtherThreadsRunInOrderOnTheLoopsThread() async throws {
        try await Self.withLoop { loop in
            let threads = 8, each = 500
            let seen = Mutex<[Int: [Int]]>([:])
            let offLoop = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                for i in 0..<each {
                    try? loop.post {
                        if !loop.isLoopThread { offLoop.withLock { $0 += 1 } }
                        seen.withLock { $0[t, default: []].append(i) }
                    }
                }
            }
            #expect(await Self.eventually { seen.withLock { $0.values.map(\.count).reduce(0, +) } == threads * each })
            for t in 0..<threads { #expect(seen.withLock { $0[t] } == Array(0..<each)) }
            #expect(offLoop.withLock { $0 } == 0)
        }
    }

    /// 500 descriptors: each one made readable gets exactly its own callback.
    @Test func manyDescriptorsEachGetTheirOwnCallback() async throws {
        try await Self.withLoop { loop in
            let count = 500
            var pairs: [(Int32, Int32)] = []
            defer { for (a, b) in pairs { close(a); close(b) } }
            let hits = Mutex<[Int: Int]>([:])
            for i in 0..<count {
                let p = Self.socketPair()
                try #require(p.0 >= 0, "socketpair failed at \(i): errno \(errno)")
                pairs.append(p)
                try loop.register(fd: p.0, interest: .read) { _ in
                    var b: UInt8 = 0
                    _ = recv(p.0, &b, 1, 0)
                    hits.withLock { $0[i, default: 0] += 1 }
                }
            }
            let chosen = stride(from: 3, to: count, by: 7).map { $0 }
            for i in chosen { _ = send(pairs[i].1, "z", 1, 0) }
            #expect(await Self.eventually { hits.withLock { $0.count } == chosen.count })
            try await Task.sleep(for: .milliseconds(100))
            #expect(hits.withLock { $0 } == Dictionary(uniqueKeysWithValues: chosen.map { ($0, 1) }))
        }
    }

    /// The thread starts with the first registration and ends when nothing is left; it carries the role's name.
    @Test func theThreadComesAndGoesWithItsRegistrations() async throws {
        let loop = EventLoop(role: "test-idle")
        defer { loop.stop() }
        #expect(!loop.isRunning)
        let name = Mutex<String?>(nil)
        try loop.schedule(at: EventLoop.now() + 10_000_000) {
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            name.withLock { $0 = comm.trimmingCharacters(in: .newlines) }
        }
        #expect(loop.isRunning)
        #expect(await Self.eventually { !loop.isRunning })
        #expect(name.withLock { $0 } == "reach-test-idle")
    }

    /// Cancelling the last registration from another thread ends the thread at once, not at the timer's deadline
    /// (a process that stopped using the loop holds no thread and no pipe for it).
    @Test func cancellingTheLastTimerEndsTheThreadAtOnce() async throws {
        let loop = EventLoop(role: "test-last")
        defer { loop.stop() }
        let r = try loop.schedule(at: EventLoop.now() + 60_000_000_000) {}
        try await Task.sleep(for: .milliseconds(50))  // the loop is asleep until the deadline, a minute away
        #expect(loop.isRunning)
        #expect(loop.cancel(r))
        #expect(await Self.eventually { !loop.isRunning })
    }

    /// Bad input is refused with a typed error naming it, never a crash; a stopped loop takes nothing more.
    @Test func refusalsAreTypedErrors() throws {
        let loop = EventLoop(role: "test-bad")
        #expect(throws: EventLoopError.badDescriptor(-7)) { try loop.register(fd: -7, interest: .read) { _ in } }
        loop.stop()
        #expect(throws: EventLoopError.stopped) { try loop.schedule(at: 0) {} }
        #expect(throws: EventLoopError.stopped) { try loop.post {} }
        #expect(EventLoopError.badDescriptor(-7).description == "event loop: -7 is not a descriptor")
    }

    /// A child handed to the loop is reaped when it exits (no zombie left: kill(pid, 0) fails with ESRCH only once it
    /// was reaped), and the loop lets go of it (its thread ends, nothing else being registered).
    @Test func anExitedChildIsReapedByTheLoop() async throws {
        try await Self.withLoop { loop in
            let pid = try Spawn.posix_spawn("/bin/sleep", argv: ["sleep", "0.2"], environment: []).get()
            loop.reapWhenExited(pid)
            #expect(kill(pid, 0) == 0, "still running (or a zombie) right after the start")
            #expect(await Self.eventually { kill(pid, 0) != 0 && errno == ESRCH }, "pid \(pid) was not reaped")
            #expect(await Self.eventually { !loop.isRunning }, "the loop still holds a registration")
            #expect(loop.stats.callbacks >= 1)
        }
    }

    /// The deadline heap against a sorted list: pushes, stale entries, compaction.
    @Test(arguments: [
        [5, 3, 9, 1, 1, 7],
        Array((0..<200).reversed()),
        [Int](),
    ])
    func theHeapGivesDeadlinesInOrder(deadlines: [Int]) {
        var heap = DeadlineHeap()
        for (i, d) in deadlines.enumerated() { heap.push(Int64(d), UInt64(i)) }
        // Every third id is stale (cancelled).
        let valid: (UInt64, Int64) -> Bool = { id, _ in id % 3 != 0 }
        heap.compactIfStale(live: deadlines.count / 3) { id, at in valid(id, at) }
        let expected = deadlines.enumerated().filter { $0.offset % 3 != 0 }.map { Int64($0.element) }.sorted()
        #expect(heap.earliest(valid) == expected.first)
        let due = heap.popDue(Int64.max, valid)
        #expect(due.map { Int64(deadlines[Int($0)]) } == expected)
        #expect(heap.count == 0)
    }
}
