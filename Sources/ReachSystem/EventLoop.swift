// One loop for every descriptor and deadline of the agent, on one thread of our own (`reach-loop`): the route and
// WiFi netlink sockets, the Varlink listener and its clients, the timers. The shape is libuv's and systemd's
// sd-event (one poll per turn, callbacks run on the loop's thread, a wake-up descriptor for other threads), kept to
// what the agent needs: poll(2) over a set rebuilt each turn, a heap of deadlines, a self-pipe for posts.
//
// Every deadline is CLOCK_BOOTTIME nanoseconds (`EventLoop.now()`, what the timers always used and what Swift's
// ContinuousClock reads on Linux): it keeps counting through a suspend, so a report due during one is due at resume.
//
// Rules for callers:
// - Callbacks run on the loop's thread, one at a time, and must not block (no fsync, no name resolution, no waitpid
//   without WNOHANG): a blocking call holds every other source.
// - `register`, `setInterest`, `setDeadline`, `cancel` and `post` may be called from any thread, callbacks included.
//   A registration cancelled inside a callback gets no further callback, not even one already due in the same turn.
//   From another thread, a callback that is running at that moment finishes; to close a descriptor safely from
//   another thread, `post` the cancel and the close (they then run between callbacks).
// - The thread starts with the first registration or post and ends when nothing is registered and nothing posted,
//   so a process that stopped using the loop keeps no thread for it.

import Glibc
import Synchronization

/// Why the loop could not take a registration or a post.
public enum EventLoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `stop()` was called: the loop runs nothing more.
    case stopped
    /// A descriptor below -1 (-1 registers a deadline alone).
    case badDescriptor(Int32)
    /// The loop's thread could not be started (pthread_create: EAGAIN).
    case noThread
    /// The wake-up pipe could not be made.
    case wakeUp(SystemError)

    public var description: String {
        switch self {
        case .stopped: "event loop: stopped"
        case let .badDescriptor(fd): "event loop: \(fd) is not a descriptor"
        case .noThread: "event loop: no thread could be started (pthread_create: EAGAIN)"
        case let .wakeUp(e): "event loop: no wake-up pipe (\(e))"
        }
    }
}

public final class EventLoop: Sendable {
    /// The process's loop, thread `reach-loop`.
    public static let shared = EventLoop(role: "loop")

    /// What a registration waits for.
    public struct Interest: OptionSet, Sendable, Hashable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let read = Interest(rawValue: Int16(POLLIN))
        public static let write = Interest(rawValue: Int16(POLLOUT))
        /// POLLRDHUP (include/uapi/asm-generic/poll.h; Glibc shows it only with _GNU_SOURCE): the peer shut its
        /// sending side. (Hang-ups and errors are reported whatever the interest, as poll(2) does.)
        public static let readHangUp = Interest(rawValue: 0x2000)
    }

    /// What poll(2) reported for a descriptor.
    public struct Ready: OptionSet, Sendable, Hashable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let readable = Ready(rawValue: Int16(POLLIN))
        public static let writable = Ready(rawValue: Int16(POLLOUT))
        public static let hangUp = Ready(rawValue: Int16(POLLHUP))
        /// POLLERR (a netlink overrun, a socket error) or POLLNVAL (the descriptor was closed under the loop).
        public static let error = Ready(rawValue: Int16(POLLERR) | Int16(POLLNVAL))
        /// POLLRDHUP, when the interest holds `.readHangUp`.
        public static let readHangUp = Ready(rawValue: 0x2000)
    }

    /// Why a callback runs.
    public enum Fired: Sendable, Equatable {
        case ready(Ready)
        /// The registration's deadline passed (it is cleared; `setDeadline` arms it again).
        case deadline
    }

    /// A registration, for `setInterest`, `setDeadline` and `cancel`.
    public struct Registration: Hashable, Sendable {
        let id: UInt64
    }

    public typealias Callback = @Sendable (Fired) -> Void

    public struct Stats: Sendable, Equatable {
        /// Returns from poll(2): an idle process's wake-ups.
        public var turns: UInt64 = 0
        public var callbacks: UInt64 = 0
        /// The last poll(2) failure (the loop waits 10 ms and goes on).
        public var lastError: SystemError?
    }

    /// CLOCK_BOOTTIME in nanoseconds, the clock of every deadline.
    public static func now() -> Int64 { Sys.monotonicNanoseconds() }

    private struct Entry {
        /// -1: a deadline alone (a timer); it is removed once it fired.
        var fd: Int32
        var interest: Interest
        var deadline: Int64?
        var callback: Callback
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var heap = DeadlineHeap()
        var posts: [@Sendable () -> Void] = []
        var nextID: UInt64 = 0
        var running = false
        var stopped = false
        var wake: (read: Int32, write: Int32)?
        /// A byte is in the wake-up pipe and not yet drained: another poke would add nothing.
        var poked = false
        /// When the loop's current poll times out by itself (nil: never): a deadline later than that needs no poke.
        var pollDeadline: Int64?
        var thread: pthread_t?
        var stats = Stats()
    }

    private let role: String
    private let state = Mutex(State())

    /// A loop of its own on thread `reach-<role>` (tests; the agent uses `shared`).
    public init(role: String) { self.role = role }

    public var stats: Stats { state.withLock { $0.stats } }

    /// Whether the loop's thread runs now.
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Watches `fd` for `interest` (empty: the deadline alone) and, when given, `deadline` (`now()` nanoseconds);
    /// `fd` -1 is a timer, removed after it fired once.
    @discardableResult
    public func register(
        fd: Int32 = -1, interest: Interest = [], deadline: Int64? = nil, _ callback: @escaping Callback
    ) throws(EventLoopError) -> Registration {
        guard fd >= -1 else { throw .badDescriptor(fd) }
        let result = state.withLock { s -> Result<Registration, EventLoopError> in
            if let e = ensureRunning(&s) { return .failure(e) }
            s.nextID += 1
            let id = s.nextID
            s.entries[id] = Entry(fd: fd, interest: interest, deadline: deadline, callback: callback)
            if let deadline { s.heap.push(deadline, id) }
            if fd >= 0 && !interest.isEmpty { poke(&s) } else if let deadline { poke(&s, for: deadline) }
            return .success(Registration(id: id))
        }
        return try result.get()
    }

    /// A timer: `callback` runs once at `deadline` (unless cancelled first).
    @discardableResult
    public func schedule(at deadline: Int64, _ callback: @escaping @Sendable () -> Void) throws(EventLoopError) -> Registration {
        try register(deadline: deadline) { _ in callback() }
    }

    /// Changes what `r` waits for on its descriptor.
    public func setInterest(_ r: Registration, _ interest: Interest) {
        state.withLock { s in
            guard s.entries[r.id] != nil, s.entries[r.id]!.interest != interest else { return }
            s.entries[r.id]!.interest = interest
            poke(&s)
        }
    }

    /// Arms (or with nil clears) `r`'s deadline.
    public func setDeadline(_ r: Registration, _ deadline: Int64?) {
        state.withLock { s in
            guard s.entries[r.id] != nil, s.entries[r.id]!.deadline != deadline else { return }
            s.entries[r.id]!.deadline = deadline
            if let deadline {
                s.heap.push(deadline, r.id)
                let entries = s.entries
                s.heap.compactIfStale(live: entries.count) { id, at in entries[id]?.deadline == at }
                poke(&s, for: deadline)
            }
        }
    }

    /// Ends `r`. True when it was still registered: no callback of it runs from now on (a timer's never ran). False
    /// when it was gone already (a timer that fired, or cancelled before).
    @discardableResult
    public func cancel(_ r: Registration) -> Bool {
        state.withLock { s in
            guard let gone = s.entries.removeValue(forKey: r.id) else { return false }
            // A timer's end needs no wake-up (the loop finds nothing due at the old deadline), unless it was the
            // last registration: then the thread ends now, not at that deadline. A descriptor leaves the poll set
            // now, before its owner closes it.
            if (gone.fd >= 0 && !gone.interest.isEmpty) || s.entries.isEmpty { poke(&s) }
            return true
        }
    }

    /// Runs `body` on the loop's thread, between callbacks, in the order posted.
    public func post(_ body: @escaping @Sendable () -> Void) throws(EventLoopError) {
        let failure = state.withLock { s -> EventLoopError? in
            if let e = ensureRunning(&s) { return e }
            s.posts.append(body)
            poke(&s)
            return nil
        }
        if let failure { throw failure }
    }

    /// Drops every registration and post; the thread ends after the callback it may be running. Later registrations
    /// and posts fail with `.stopped`.
    public func stop() {
        state.withLock { s in
            s.stopped = true
            s.entries = [:]
            s.posts = []
            s.heap = DeadlineHeap()
            poke(&s)
        }
    }

    /// Whether the caller runs on the loop's thread.
    public var isLoopThread: Bool {
        state.withLock { s in s.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    // MARK: - The thread

    private func ensureRunning(_ s: inout State) -> EventLoopError? {
        if s.stopped { return .stopped }
        if s.running { return nil }
        let wake: (read: Int32, write: Int32)
        switch Sys.pipe(nonBlocking: true) {
        case let .success(p): wake = p
        case let .failure(e): return .wakeUp(e)
        }
        guard startThread(role, { [self] in run() }) else {
            Sys.close(wake.read)
            Sys.close(wake.write)
            return .noThread
        }
        s.wake = wake
        s.running = true
        s.poked = false
        return nil
    }

    /// Writes the wake-up byte, unless the loop's own thread is the caller (it rebuilds its set before it polls
    /// again) or a byte is there already.
    private func poke(_ s: inout State) {
        guard let wake = s.wake, !s.poked else { return }
        if let t = s.thread, pthread_equal(t, pthread_self()) != 0 { return }
        var one: UInt8 = 1
        _ = withUnsafeBytes(of: &one) { Sys.write(wake.write, $0, path: nil) }
        s.poked = true
    }

    /// Pokes when `deadline` comes before the loop's current poll times out.
    private func poke(_ s: inout State, for deadline: Int64) {
        if s.pollDeadline.map({ deadline < $0 }) ?? true { poke(&s) }
    }

    private enum Turn {
        case exit
        case posts([@Sendable () -> Void])
        case poll(wake: Int32, timeoutMs: Int32)
    }

    private func run() {
        state.withLock { $0.thread = pthread_self() }
        var fds: [pollfd] = []
        var ids: [UInt64] = []
        var drain = [UInt8](repeating: 0, count: 64)
        while true {
            fds.removeAll(keepingCapacity: true)
            ids.removeAll(keepingCapacity: true)
            let turn = state.withLock { s -> Turn in
                if !s.posts.isEmpty {
                    defer { s.posts = [] }
                    return .posts(s.posts)
                }
                guard !s.stopped, !s.entries.isEmpty, let wake = s.wake else {
                    // Nothing to wait for: the thread ends (the next registration starts another).
                    if let wake = s.wake {
                        Sys.close(wake.read)
                        Sys.close(wake.write)
                    }
                    s.wake = nil
                    s.running = false
                    s.thread = nil
                    return .exit
                }
                fds.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
                ids.append(0)
                for (id, e) in s.entries where e.fd >= 0 && !e.interest.isEmpty {
                    fds.append(pollfd(fd: e.fd, events: e.interest.rawValue, revents: 0))
                    ids.append(id)
                }
                let entries = s.entries
                let next = s.heap.earliest { id, at in entries[id]?.deadline == at }
                s.pollDeadline = next
                // Rounded up: a timeout that ends a hair early only costs another turn.
                let timeout = next.map { Int32(clamping: max(0, ($0 - Self.now() + 999_999) / 1_000_000)) } ?? -1
                return .poll(wake: wake.read, timeoutMs: timeout)
            }
            let wake: Int32
            let timeout: Int32
            switch turn {
            case .exit: return
            case let .posts(posts):
                for p in posts { p() }
                continue
            case let .poll(w, t):
                wake = w
                timeout = t
            }
            if case let .failure(e) = Sys.poll(&fds, timeoutMs: timeout) {
                state.withLock {
                    $0.stats.lastError = e
                    $0.stats.turns += 1
                }
                var none: [pollfd] = []
                _ = Sys.poll(&none, timeoutMs: 10)
                continue
            }
            if fds[0].revents != 0 {
                while case let .success(n) = drain.withUnsafeMutableBytes({ Sys.read(wake, into: $0, path: nil) }), n > 0 {}
            }
            var fired: [(UInt64, Int32, Fired)] = []
            for i in 1..<fds.count where fds[i].revents != 0 {
                fired.append((ids[i], fds[i].fd, .ready(Ready(rawValue: fds[i].revents))))
            }
            let now = Self.now()
            state.withLock { s in
                s.poked = false
                s.stats.turns += 1
                let entries = s.entries
                for id in s.heap.popDue(now, { id, at in entries[id]?.deadline == at }) { fired.append((id, -1, .deadline)) }
            }
            for (id, fd, why) in fired {
                let callback = state.withLock { s -> Callback? in
                    guard let e = s.entries[id] else { return nil }  // cancelled by an earlier callback
                    switch why {
                    case .ready:
                        guard e.fd == fd else { return nil }
                    case .deadline:
                        guard let at = e.deadline, at <= now else { return nil }  // moved or cleared meanwhile
                        if e.fd < 0 { s.entries[id] = nil } else { s.entries[id]!.deadline = nil }
                    }
                    s.stats.callbacks += 1
                    return e.callback
                }
                callback?(why)
            }
        }
    }
}

/// A binary min-heap of (deadline, registration id). Entries are not removed when a registration is cancelled or its
/// deadline moves: a stale entry is recognised (`valid`) and dropped when it reaches the top, and the heap is rebuilt
/// when stale entries outnumber live ones (a deadline pushed on every request of a busy client).
struct DeadlineHeap {
    private var items: [(at: Int64, id: UInt64)] = []

    var count: Int { items.count }

    mutating func push(_ at: Int64, _ id: UInt64) {
        items.append((at, id))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].at < items[parent].at else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popTop() {
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var least = i
            if l < items.count && items[l].at < items[least].at { least = l }
            if r < items.count && items[r].at < items[least].at { least = r }
            guard least != i else { return }
            items.swapAt(i, least)
            i = least
        }
    }

    /// The earliest valid deadline; stale entries at the top are dropped on the way.
    mutating func earliest(_ valid: (UInt64, Int64) -> Bool) -> Int64? {
        while let top = items.first {
            if valid(top.id, top.at) { return top.at }
            popTop()
        }
        return nil
    }

    /// Removes and returns the ids whose valid deadline is at or before `now`, earliest first.
    mutating func popDue(_ now: Int64, _ valid: (UInt64, Int64) -> Bool) -> [UInt64] {
        var due: [UInt64] = []
        while let top = items.first, top.at <= now {
            if valid(top.id, top.at) { due.append(top.id) }
            popTop()
        }
        return due
    }

    /// Rebuilds the heap from its valid entries when they are fewer than half of it (and it is not tiny).
    mutating func compactIfStale(live: Int, _ valid: (UInt64, Int64) -> Bool) {
        guard items.count > 64, items.count > 2 * live else { return }
        let kept = items.filter { valid($0.id, $0.at) }
        items = []
        for k in kept { push(k.at, k.id) }
    }
}
