// POSIX signals as an async sequence, on libdispatch's signal sources (the concurrency runtime links libdispatch
// already, so this costs no dependency; swift-service-lifecycle's UnixSignals, which this replaces, did the same over
// swift-async-algorithms and swift-collections, about 1.4 MB of the static binary).

import Dispatch
import Glibc

/// The signals named at creation, in the order they arrive, until the watch is dropped or the consuming task is
/// cancelled. Creating one waits until every source is registered, so a signal sent after `init` returns is never
/// missed. While a watch exists, the signals it names no longer take their default action (termination for SIGTERM,
/// SIGINT, SIGHUP): libdispatch catches them. One consumer per watch.
///
/// `@unchecked Sendable`: the stored properties are set once in `init`; a dispatch source's `cancel()` may be called
/// from any thread.
public final class SignalWatch: AsyncSequence, @unchecked Sendable {
    public typealias Element = Int32

    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>
    private static let queue = DispatchQueue(label: "reach.signals")

    public init(_ signals: [Int32]) async {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        let sources = signals.map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: Self.queue)
            source.setEventHandler { continuation.yield(number) }
            return source
        }
        if sources.isEmpty { continuation.finish() }
        self.sources = sources
        self.stream = stream
        for source in sources {
            await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
                // A source's registration handler runs once, on its queue, when the source is armed.
                source.setRegistrationHandler { registered.resume() }
                source.resume()
            }
        }
    }

    deinit {
        // A source keeps its handlers (and the continuation in them) until it is cancelled.
        for source in sources { source.cancel() }
    }

    public func makeAsyncIterator() -> AsyncStream<Int32>.Iterator { stream.makeAsyncIterator() }
}
