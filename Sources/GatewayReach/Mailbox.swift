// A bounded queue between one consumer and any number of producers that must never wait for it: when the consumer
// falls behind, the oldest element is dropped and counted, so the newest are kept and a slow consumer (a full disk,
// a blocked notify block) costs only itself. Every subscriber of a `Reachability` has one of its own.

import Synchronization

public final class Mailbox<Element: Sendable>: AsyncSequence, Sendable {
    /// An element and how many elements were dropped just before it (the consumer fell behind).
    public struct Delivery: Sendable {
        public var element: Element
        public var droppedBefore: Int
    }

    private struct State {
        var buffer: [Element] = []
        var head = 0
        var dropped = 0
        var droppedTotal: UInt64 = 0
        var finished = false
        var waiter: CheckedContinuation<Delivery?, Never>?
    }

    public let capacity: Int
    private let state = Mutex(State())

    /// - Parameter capacity: the elements held for the consumer (at least 1).
    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Adds an element without waiting; when the mailbox is full the oldest one is dropped. Returns false once the
    /// mailbox is finished (the element is discarded).
    @discardableResult
    public func post(_ element: Element) -> Bool {
        let (waiter, accepted, droppedBefore) = state.withLock { s -> (CheckedContinuation<Delivery?, Never>?, Bool, Int) in
            if s.finished { return (nil, false, 0) }
            if let w = s.waiter {
                s.waiter = nil
                let d = s.dropped
                s.dropped = 0
                return (w, true, d)
            }
            if s.buffer.count - s.head >= capacity {
                s.head += 1
                s.dropped += 1
                s.droppedTotal += 1
            }
            s.buffer.append(element)
            if s.head > 64 && s.head * 2 > s.buffer.count {
                s.buffer.removeFirst(s.head)
                s.head = 0
            }
            return (nil, true, 0)
        }
        waiter?.resume(returning: Delivery(element: element, droppedBefore: droppedBefore))
        return accepted
    }

    /// No more elements: the consumer gets those still held, then the end.
    public func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<Delivery?, Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Elements dropped since the mailbox was made.
    public var droppedTotal: UInt64 { state.withLock { $0.droppedTotal } }

    /// Elements waiting for the consumer.
    public var count: Int { state.withLock { $0.buffer.count - $0.head } }

    /// The next element with the count dropped before it, or nil at the end. One consumer at a time. Cancelling the
    /// waiting task ends the wait with nil (the mailbox stays open).
    public func receive() async -> Delivery? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Delivery?, Never>) in
                let now = state.withLock { s -> Delivery?? in
                    if s.head < s.buffer.count {
                        let e = s.buffer[s.head]
                        s.head += 1
                        if s.head == s.buffer.count {
                            s.buffer.removeAll(keepingCapacity: s.buffer.count <= 64)
                            s.head = 0
                        }
                        let d = s.dropped
                        s.dropped = 0
                        return .some(Delivery(element: e, droppedBefore: d))
                    }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    precondition(s.waiter == nil, "Mailbox: one consumer at a time")
                    s.waiter = c
                    return .none
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Delivery?, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let mailbox: Mailbox
        public mutating func next() async -> Element? { await mailbox.receive()?.element }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(mailbox: self) }
}
