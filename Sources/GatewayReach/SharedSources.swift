// Sources shared by every `Reachability` in the process: one rtnetlink monitor socket, one session per modem port,
// one nl80211 event socket, however many instances (targets) watch them. A source is known by its `id`; the first
// subscriber to an id starts it (supervised: restarted with the backoff when its stream ends on its own), later
// subscribers get its latest value at once and every value after, and the last one to leave stops it, which closes
// its sockets and ports. Each subscriber has its own one-slot stream (the newest value kept): a source's values are
// states (or, for routes, "something changed"), so a subscriber that is behind needs only the latest, and it never
// holds up the source or the other subscribers.

import ReachCore
import ReachLog
import Synchronization

package final class SourceRegistry: Sendable {
    /// The process's registry: what "shared" means.
    package static let shared = SourceRegistry()

    private final class Entry<Element: Sendable>: Sendable {
        struct State {
            var subscribers: [Int: AsyncStream<Element>.Continuation] = [:]
            var nextID = 0
            var latest: Element?
            var task: Task<Void, Never>?
        }
        let state = Mutex(State())

        func publish(_ value: Element, keep: Bool) {
            state.withLock { s in
                if keep { s.latest = value }
                for c in s.subscribers.values { c.yield(value) }
            }
        }
    }

    private let entries = Mutex<[String: any Sendable]>([:])

    package init() {}

    /// The ids of the sources running now (for tests and diagnostics).
    package var running: [String] { entries.withLock { $0.keys.sorted() } }

    /// A subscription to the source `id`, started with `upstream` when nobody runs it yet.
    /// - Parameters:
    ///   - keepLatest: hand the latest value to a new subscriber at once (states); false for notices.
    ///   - upstream: runs the source until its task is cancelled (it supervises and publishes by itself).
    package func subscribe<Element: Sendable>(
        id: String, keepLatest: Bool, of: Element.Type = Element.self,
        upstream: @escaping @Sendable (_ publish: @escaping @Sendable (Element) -> Void) async -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        let (entry, subscriberID, created) = entries.withLock { entries -> (Entry<Element>, Int, Bool) in
            var created = false
            let entry: Entry<Element>
            if let existing = entries[id] as? Entry<Element> {
                entry = existing
            } else {
                precondition(entries[id] == nil, "source id '\(id)' is used by sources of different kinds")
                entry = Entry<Element>()
                entries[id] = entry
                created = true
            }
            let n = entry.state.withLock { s -> Int in
                s.nextID += 1
                s.subscribers[s.nextID] = continuation
                if let latest = s.latest { continuation.yield(latest) }
                return s.nextID
            }
            return (entry, n, created)
        }
        if created {
            let task = Task { await upstream { value in entry.publish(value, keep: keepLatest) } }
            entry.state.withLock { $0.task = task }
        }
        continuation.onTermination = { [weak self] _ in self?.leave(id: id, entry: entry, subscriber: subscriberID) }
        return stream
    }

    private func leave<Element: Sendable>(id: String, entry: Entry<Element>, subscriber: Int) {
        // Decided under the locks, done after them: cancelling the source runs its streams' termination handlers,
        // which may come back here (a discovery leaving the modems it watched).
        let task = entries.withLock { entries -> Task<Void, Never>?? in
            let (empty, task) = entry.state.withLock { s -> (Bool, Task<Void, Never>?) in
                s.subscribers[subscriber] = nil
                return (s.subscribers.isEmpty, s.task)
            }
            guard empty else { return .none }
            if (entries[id] as? Entry<Element>) === entry { entries[id] = nil }
            return .some(task)
        }
        if case let .some(t) = task { t?.cancel() }
    }
}

/// A source's stream until the task is cancelled. A stream that ends on its own (the source failed), or that cannot
/// be started, is started again after `backoff` (the attempt count starts over once the source delivers), with
/// `stopped` published meanwhile and `restarted` published once it is back.
package func superviseSource<Element: Sendable>(
    _ kind: String, name: String, clock: any MonitorClock, logger: Logger, backoff: Backoff = Backoff(),
    unit: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
    stopped: Element? = nil, restarted: Element? = nil,
    updates: () throws -> AsyncStream<Element>,
    publish: (Element) async -> Void
) async {
    var attempt = 0
    var first = true
    while !Task.isCancelled {
        var delivered = false
        var failure: String?
        do {
            let stream = try updates()
            if !first, let restarted { await publish(restarted) }
            for await value in stream {
                await publish(value)
                delivered = true
            }
        } catch {
            failure = "\(error)"
        }
        first = false
        if Task.isCancelled { return }
        if delivered { attempt = 0 }
        let wait = backoff.delay(attempt: attempt, unit: unit())
        attempt += 1
        logger.warning(
            failure == nil ? "\(kind) source stopped; starting it again" : "\(kind) source could not start; trying again",
            metadata: [
                "\(kind.lowercased()).source": "\(name)", "backoff": "\(wait)", "error": "\(failure ?? "stream ended")",
            ])
        if let stopped { await publish(stopped) }
        do { try await clock.sleep(until: clock.now() + wait) } catch { return }
    }
}
