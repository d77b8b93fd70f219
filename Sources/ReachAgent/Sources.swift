// What feeds the agent: one small protocol per source, so the services can be tested with fakes and the adapters
// plug in as they are. Each source gives its current value and then its changes.

import GatewayReach
import Logging

/// The kernel's routing: "something changed" notices, and the route part for a target on demand.
public protocol RouteSource: Sendable {
    /// Notices of link/address/route/rule changes. `.resync` means notices were lost. Finishes when the source fails.
    func events() throws -> AsyncStream<RouteEvent>
    /// The route part of a target's snapshot, computed now (for a host target with the given resolution).
    func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView
    /// Resolves a host name within a bounded time.
    func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError>
}

/// One modem (or, with discovery, the modems found) as a stream of states.
public protocol ModemSource: Sendable {
    /// A name for logs: the control port, or "discovery".
    var name: String { get }
    /// The current state first, then each change. Finishes when the source stops.
    func updates() -> AsyncStream<(SourceHealth, [ModemState])>
}

/// The WiFi interfaces as a stream of states.
public protocol WiFiSource: Sendable {
    var name: String { get }
    /// The current state first, then each change. Finishes when the source stops.
    func updates() -> AsyncStream<(SourceHealth, [WiFiLink])>
}

// MARK: - Production sources

/// rtnetlink multicast (RouteMonitor) for the notices, RouteView (RTM_GETROUTE) for the answers.
public struct KernelRouteSource: RouteSource {
    public var interfaceOverrides: [String: InterfaceKind]
    public var resolveTimeout: Duration
    /// The configured uplinks (`uplinks`).
    public var uplinks: [UplinkSpec]
    /// How each route's underlay is followed (`interface_underlays`, `clat.plat_prefix`).
    public var underlays: UnderlayConfig

    public init(
        interfaceOverrides: [String: InterfaceKind], resolveTimeout: Duration = .seconds(3), uplinks: [UplinkSpec] = [],
        underlays: UnderlayConfig = .standard
    ) {
        self.interfaceOverrides = interfaceOverrides
        self.resolveTimeout = resolveTimeout
        self.uplinks = uplinks
        self.underlays = underlays
    }

    public func events() throws -> AsyncStream<RouteEvent> {
        let monitor = try RouteMonitor()
        // The stream keeps the monitor alive (its onTermination stops it).
        let (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self, bufferingPolicy: .bufferingNewest(256))
        // The forwarding task is never cancelled: it ends when the monitor's stream finishes. Stopping the monitor
        // (which joins its thread) from the cancellation of the task that consumes `monitor.events` can deadlock:
        // the monitor's thread may at that moment be resuming that very task.
        Task {
            for await e in monitor.events {
                if case .dropped = continuation.yield(e) { continuation.yield(.resync) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in monitor.stop() }
        return stream
    }

    public func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView {
        RouteView.compute(
            target: target, resolved: resolved, interfaceOverrides: interfaceOverrides, uplinks: uplinks, underlays: underlays)
    }

    public func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError> {
        await HostResolver.resolve(name, timeout: resolveTimeout)
    }
}

/// One modem through `ModemMonitor` (ReachModem): its indications drive the updates; the monitor polls only what
/// the modem cannot announce, and reopens a lost port with backoff. With `options.read.worker` set the monitor runs
/// in a supervised worker process (`IsolatedModemMonitor`), restarted with the same backoff when it fails.
public struct IndicationModemSource: ModemSource {
    public var spec: ModemPortSpec
    public var options: ModemMonitorOptions

    public init(spec: ModemPortSpec, options: ModemMonitorOptions) {
        self.spec = spec
        self.options = options
    }

    public var name: String { spec.path }

    public func updates() -> AsyncStream<(SourceHealth, [ModemState])> {
        let monitor = IsolatedModemMonitor(spec, options: options)
        let (stream, continuation) = AsyncStream.makeStream(
            of: (SourceHealth, [ModemState]).self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            for await update in monitor.updates() { continuation.yield((.ok, [update.state])) }
            continuation.finish()
        }
        // ModemMonitor closes its port when its consumer goes away (no thread join): cancelling is safe here.
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The modems discovery finds, each watched by its own `ModemMonitor` (a slow or vanished modem does not hold up
/// the others), with discovery run again at an interval and soon after a port is lost: a modem plugged in later is
/// picked up, and one that comes back under another name (a firmware crash or USB reset re-enumerates
/// /dev/cdc-wdm0 as /dev/cdc-wdm1) is followed to it, while the port that is gone for good is dropped.
public struct DiscoveredModemSource: ModemSource {
    public var options: ModemMonitorOptions
    /// How often discovery runs when nothing was lost.
    public var interval: Duration
    /// After a lost port, discovery runs again after each of these delays in turn (by default 1, 3, 7 and 15 s
    /// after the loss; a re-enumerated modem takes seconds).
    public var afterLoss: [Duration]
    public var clock: any AgentClock
    /// The ports present now. Production: `ModemReader.discover` over sysfs.
    public var discover: @Sendable () -> (SourceHealth, [ModemPortSpec])

    public init(
        options: ModemMonitorOptions, interval: Duration, clock: any AgentClock,
        afterLoss: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(8)],
        discover: (@Sendable () -> (SourceHealth, [ModemPortSpec]))? = nil
    ) {
        self.options = options
        self.interval = interval
        self.afterLoss = afterLoss
        self.clock = clock
        let read = options.read
        self.discover = discover ?? { ModemReader.discover(options: read) }
    }

    public var name: String { "discovery" }

    private enum Event: Sendable {
        case found(SourceHealth, [ModemPortSpec])
        case update(path: String, ModemState)
    }

    public func updates() -> AsyncStream<(SourceHealth, [ModemState])> {
        let (options, interval, afterLoss, clock, discover) = (options, interval, afterLoss, clock, discover)
        let (output, sink) = AsyncStream.makeStream(
            of: (SourceHealth, [ModemState]).self, bufferingPolicy: .bufferingNewest(1))
        let (events, feed) = AsyncStream.makeStream(of: Event.self)
        @Sendable func look() {
            let (health, specs) = discover()
            feed.yield(.found(health, specs))
        }
        let discovery = Task {
            while !Task.isCancelled {
                look()
                do { try await clock.sleep(until: clock.now() + interval) } catch { return }
            }
        }
        let main = Task {
            var watchers: [String: Task<Void, Never>] = [:]
            var states: [String: ModemState] = [:]
            var health = SourceHealth.ok
            var rediscovery: Task<Void, Never>?
            var last: (SourceHealth, [ModemState])?
            func publish() {
                // The first answer waits until every port found has reported once; then only changes go out.
                guard last != nil || watchers.keys.allSatisfy({ states[$0] != nil }) else { return }
                let now = (health, watchers.keys.sorted().compactMap { states[$0] })
                if let last, last.0 == now.0, last.1 == now.1 { return }
                last = now
                sink.yield(now)
            }
            for await event in events {
                switch event {
                case let .found(h, specs):
                    health = h
                    let paths = Set(specs.map(\.path))
                    for (path, task) in watchers where !paths.contains(path) {
                        task.cancel()
                        watchers[path] = nil
                        states[path] = nil
                    }
                    for spec in specs where watchers[spec.path] == nil {
                        let path = spec.path
                        let source = IndicationModemSource(spec: spec, options: options)
                        watchers[path] = Task {
                            for await (_, s) in source.updates() {
                                if let state = s.first { feed.yield(.update(path: path, state)) }
                            }
                        }
                    }
                    publish()
                case let .update(path, state):
                    guard watchers[path] != nil else { continue }  // dropped since; a late update
                    let lost = state.present == false && states[path]?.present != false
                    states[path] = state
                    publish()
                    if lost {
                        rediscovery?.cancel()
                        rediscovery = Task {
                            for delay in afterLoss {
                                do { try await clock.sleep(until: clock.now() + delay) } catch { return }
                                look()
                            }
                        }
                    }
                }
            }
            rediscovery?.cancel()
            for task in watchers.values { task.cancel() }
        }
        sink.onTermination = { _ in
            discovery.cancel()
            feed.finish()
            main.cancel()
        }
        return output
    }
}

/// nl80211 events and CQM thresholds through `WiFiMonitor` (ReachWiFi); it polls only as its fallback.
public struct NL80211WiFiSource: WiFiSource {
    public var interfaces: [String]
    public var pollInterval: Duration

    public init(interfaces: [String], pollInterval: Duration) {
        self.interfaces = interfaces
        self.pollInterval = pollInterval
    }

    public var name: String { interfaces.isEmpty ? "all" : interfaces.joined(separator: ",") }

    public func updates() -> AsyncStream<(SourceHealth, [WiFiLink])> {
        let wanted = Set(interfaces)
        // The configured poll is also the retry while nl80211 cannot be reached at all (no cfg80211 on this kernel):
        // an idle box without WiFi should not open netlink sockets every few seconds.
        let monitor = WiFiMonitor(
            options: WiFiMonitor.Options(
                interface: interfaces.count == 1 ? interfaces[0] : nil, pollInterval: pollInterval,
                fallbackPollInterval: pollInterval))
        let (stream, continuation) = AsyncStream.makeStream(
            of: (SourceHealth, [WiFiLink]).self, bufferingPolicy: .bufferingNewest(1))
        // As with the route monitor: the forwarding task ends when the monitor's stream finishes; stopping the monitor
        // is what ends it, never a cancellation of the task that consumes the monitor's stream.
        Task {
            for await u in monitor.updates {
                let links = wanted.count > 1 ? u.links.filter { wanted.contains($0.interface) } : u.links
                continuation.yield((u.health, links))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in monitor.stop() }
        return stream
    }
}
