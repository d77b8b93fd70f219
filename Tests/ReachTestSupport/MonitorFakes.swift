// Doubles for the monitoring (GatewayReach's `Reachability` and the agent built on it): a clock that moves only when
// the test says so, route and WiFi sources the test drives, and a patient wait for what other tasks do.

import GatewayReach
import ReachLog
import Synchronization

/// A clock that moves only when the test says so.
public final class ManualClock: MonitorClock {
    private struct Sleeper {
        var id: Int
        var deadline: Duration
        var continuation: CheckedContinuation<Void, Error>
    }
    private let state = Mutex<(now: Duration, nextID: Int, sleepers: [Sleeper])>((.zero, 0, []))

    public init() {}

    public func now() -> Duration { state.withLock { $0.now } }

    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, Error>) in
                let due = state.withLock { s -> Bool in
                    if deadline <= s.now { return true }
                    if Task.isCancelled { return true }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    return false
                }
                if due { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, Error>? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// How many tasks are asleep on this clock.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by d: Duration) {
        let due = state.withLock { s -> [CheckedContinuation<Void, Error>] in
            s.now += d
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due.map(\.continuation)
        }
        for c in due { c.resume() }
    }
}

/// A wall clock the test can read back: 2026-11-22T00:00:00Z plus the manual clock.
public func wallClock(_ clock: ManualClock) -> @Sendable () -> Timestamp {
    { Timestamp(seconds: 1_795_305_600 + Int64(clock.now().components.seconds)) }
}

/// A route source whose answer the test sets, and whose notices the test sends. Like the kernel's, each
/// subscription to its notices is a stream of its own; the test can count them (one per process while any instance
/// runs, since sources are shared).
public final class FakeRouteSource: RouteSource {
    private struct State {
        var view = RouteView()
        var subscribers: [Int: AsyncStream<RouteEvent>.Continuation] = [:]
        var subscriptions = 0
        var computes = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func events() throws -> AsyncStream<RouteEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self)
        let id = state.withLock { s -> Int in
            s.subscriptions += 1
            s.subscribers[s.subscriptions] = continuation
            return s.subscriptions
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    public func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView {
        state.withLock { s in
            s.computes += 1
            return s.view
        }
    }

    public func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError> { .success([]) }

    /// How often the notices were subscribed to, and routes computed.
    public var eventSubscriptions: Int { state.withLock { $0.subscriptions } }
    public var computations: Int { state.withLock { $0.computes } }

    /// Changes the kernel's answer without a notice (what `refresh()` must find by itself).
    public func setQuietly(_ route: RouteLookup?) {
        state.withLock { $0.view.route = route }
    }

    /// Sets the kernel's answer and sends a notice, as a route change would.
    public func set(_ route: RouteLookup?) {
        state.withLock { s in
            s.view.route = route
            for c in s.subscribers.values { c.yield(.route(.new, .ipv4)) }
        }
    }

    /// Sets the whole route part (route and uplinks) and sends a notice.
    public func set(_ part: RouteView) {
        state.withLock { s in
            s.view = part
            for c in s.subscribers.values { c.yield(.route(.new, .ipv4)) }
        }
    }
}

/// A source of states the test sets: each subscription gets the current state first, then every new one.
public final class FakeStateSource<Element: Sendable>: Sendable {
    private struct State {
        var latest: (SourceHealth, [Element])?
        var subscribers: [Int: AsyncStream<(SourceHealth, [Element])>.Continuation] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func updates() -> AsyncStream<(SourceHealth, [Element])> {
        let (stream, continuation) = AsyncStream.makeStream(of: (SourceHealth, [Element]).self)
        let id = state.withLock { s -> Int in
            s.next += 1
            s.subscribers[s.next] = continuation
            if let latest = s.latest { continuation.yield(latest) }
            return s.next
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    public func set(_ values: [Element], health: SourceHealth = .ok) {
        state.withLock { s in
            s.latest = (health, values)
            for c in s.subscribers.values { c.yield((health, values)) }
        }
    }

    public var subscriptions: Int { state.withLock { $0.next } }
}

public final class FakeWiFiSource: WiFiSource {
    public let name = "fake"
    private let states = FakeStateSource<WiFiLink>()

    public init() {}

    public func updates() -> AsyncStream<(SourceHealth, [WiFiLink])> { states.updates() }
    public func set(_ links: [WiFiLink]) { states.set(links) }
    public var subscriptions: Int { states.subscriptions }
}

/// One modem the test drives (its states set by hand).
public final class FakeModemSource: ModemSource {
    public let name: String
    private let states = FakeStateSource<ModemState>()

    public init(name: String) { self.name = name }
    public convenience init(_ name: String) { self.init(name: name) }

    public func updates() -> AsyncStream<(SourceHealth, [ModemState])> { states.updates() }
    public func set(_ modems: [ModemState]) { states.set(modems) }
    public func set(_ modem: ModemState) { states.set([modem]) }
}

/// Waits (in real time, for other tasks to run; never for the agent's cadence) until `condition` holds.
/// The wait is scaled by `TestSupport.timingSlack`, as the suites' other time bounds are: under a sanitizer the agent
/// rigs' first lines took over 10 s in a full clean-clone run (the same suites alone: well inside).
public func eventually(
    _ what: String = "condition", timeout: Duration = .seconds(10 * TestSupport.timingSlack), _ condition: () async -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while clock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

public enum Routes {
    public static func via(_ name: String, kind: InterfaceKind, carrier: Bool = true) -> RouteLookup {
        RouteLookup(
            family: .ipv4, type: .unicast,
            link: LinkState(name: name, index: 2, kind: kind, adminUp: true, carrier: carrier), gateway: "192.0.2.1")
    }
}

public func testLogger() -> Logger {
    var l = Logger.discarding(label: "test")
    l.logLevel = .critical
    return l
}

