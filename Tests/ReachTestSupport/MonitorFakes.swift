// Doubles for the monitoring (GatewayReach's `Reachability` and the agent built on it): a clock that moves only when
// the test says so, route and WiFi sources the test drives, and a patient wait for what other tasks do.

import GatewayReach
import Logging
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

/// A route source whose answer the test sets, and whose notices the test sends.
public final class FakeRouteSource: RouteSource {
    private let view = Mutex<RouteView>(RouteView())
    private let stream: AsyncStream<RouteEvent>
    private let continuation: AsyncStream<RouteEvent>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self)
    }

    public func events() throws -> AsyncStream<RouteEvent> { stream }

    public func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView {
        view.withLock { $0 }
    }

    public func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError> { .success([]) }

    /// Sets the kernel's answer and sends a notice, as a route change would.
    public func set(_ route: RouteLookup?) {
        view.withLock { $0.route = route }
        continuation.yield(.route(.new, .ipv4))
    }
}

public final class FakeWiFiSource: WiFiSource {
    public let name = "fake"
    private let stream: AsyncStream<(SourceHealth, [WiFiLink])>
    private let continuation: AsyncStream<(SourceHealth, [WiFiLink])>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: (SourceHealth, [WiFiLink]).self)
    }

    public func updates() -> AsyncStream<(SourceHealth, [WiFiLink])> { stream }

    public func set(_ links: [WiFiLink]) { continuation.yield((.ok, links)) }
}

/// Waits (in real time, for other tasks to run; never for the agent's cadence) until `condition` holds.
public func eventually(_ what: String = "condition", timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
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
    var l = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    l.logLevel = .critical
    return l
}

