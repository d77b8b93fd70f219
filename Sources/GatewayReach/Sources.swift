// What feeds a `Reachability`: one small protocol per source, so the monitoring can be driven by fakes in tests and
// the adapters plug in as they are. Each source gives its current value and then its changes. Sources are shared
// by `id` among every instance in the process (SharedSources.swift): two sources with the same id are one source.

import ReachCore
import ReachLog

/// The kernel's routing: "something changed" notices, and the route part for a target on demand.
public protocol RouteSource: Sendable {
    /// Instances whose route sources have the same id share one notice stream (one rtnetlink socket).
    var id: String { get }
    /// Notices of link/address/route/rule changes. `.resync` means notices were lost. Finishes when the source fails.
    func events() throws -> AsyncStream<RouteEvent>
    /// The route part of a target's snapshot, computed now (for a host target with the given resolution).
    func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView
    /// Resolves a host name within a bounded time.
    func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError>
}

/// One modem (or, with discovery, the modems found) as a stream of states.
public protocol ModemSource: Sendable {
    /// A name for logs and for the snapshot's bookkeeping: the control port, or "discovery".
    var name: String { get }
    /// Instances whose modem sources have the same id share one session with the modem.
    var id: String { get }
    /// The current state first, then each change. Finishes when the source stops.
    func updates() -> AsyncStream<(SourceHealth, [ModemState])>
}

/// The WiFi interfaces as a stream of states.
public protocol WiFiSource: Sendable {
    var name: String { get }
    /// Instances whose WiFi sources have the same id share one nl80211 event socket.
    var id: String { get }
    /// The current state of every interface the source watches first, then each change. Finishes when the source
    /// stops. (Each `Reachability` keeps the interfaces its options name.)
    func updates() -> AsyncStream<(SourceHealth, [WiFiLink])>
}

// A source object shares with itself only, unless it says otherwise: two fakes in one test process never meet.
extension RouteSource where Self: AnyObject {
    public var id: String { "\(Self.self)@\(UInt(bitPattern: ObjectIdentifier(self).hashValue))" }
}

extension ModemSource where Self: AnyObject {
    public var id: String { "\(Self.self)@\(UInt(bitPattern: ObjectIdentifier(self).hashValue))" }
}

extension WiFiSource where Self: AnyObject {
    public var id: String { "\(Self.self)@\(UInt(bitPattern: ObjectIdentifier(self).hashValue))" }
}

// MARK: - Shared and supervised

extension RouteSource {
    /// The notices, through the process's one subscription to this source (restarted with backoff when it fails;
    /// a restart is announced as `.resync`, since notices were missed meanwhile).
    func sharedEvents(clock: any MonitorClock, logger: Logger) -> AsyncStream<RouteEvent> {
        let (id, source) = (id, self)
        return SourceRegistry.shared.subscribe(id: "route:" + id, keepLatest: false) { publish in
            await superviseSource(
                "Route", name: id, clock: clock, logger: logger, stopped: .resync, restarted: .resync,
                updates: { try source.events() }, publish: { publish($0) })
        }
    }
}

/// The value a modem or WiFi source publishes while it is being restarted.
let restartingHealth = SourceHealth(available: false, reason: "source stopped; restarting")

extension ModemSource {
    /// The states, through the process's one session per id (restarted with backoff when the stream ends).
    func sharedUpdates(clock: any MonitorClock, logger: Logger) -> AsyncStream<(SourceHealth, [ModemState])> {
        let (id, name, source) = (id, name, self)
        return SourceRegistry.shared.subscribe(id: "modem:" + id, keepLatest: true) { publish in
            var l = logger
            l[metadataKey: "modem.source"] = "\(name)"
            await superviseSource(
                "Modem", name: name, clock: clock, logger: l, stopped: (restartingHealth, []),
                updates: { source.updates() }, publish: { publish($0) })
        }
    }
}

extension WiFiSource {
    /// The states, through the process's one nl80211 monitor per id (restarted with backoff when it ends).
    func sharedUpdates(clock: any MonitorClock, logger: Logger) -> AsyncStream<(SourceHealth, [WiFiLink])> {
        let (id, name, source) = (id, name, self)
        return SourceRegistry.shared.subscribe(id: "wifi:" + id, keepLatest: true) { publish in
            await superviseSource(
                "WiFi", name: name, clock: clock, logger: logger, stopped: (restartingHealth, []),
                updates: { source.updates() }, publish: { publish($0) })
        }
    }
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
        interfaceOverrides: [String: InterfaceKind], resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds), uplinks: [UplinkSpec] = [],
        underlays: UnderlayConfig = .standard
    ) {
        self.interfaceOverrides = interfaceOverrides
        self.resolveTimeout = resolveTimeout
        self.uplinks = uplinks
        self.underlays = underlays
    }

    /// One rtnetlink subscription per process: the notices do not depend on the overrides (only the answers do).
    public var id: String { "rtnetlink" }

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

    /// The port, with what shapes the session (`ModemMonitorOptions.sessionKey`: timeouts, access, worker, signal
    /// thresholds, cadences): instances that ask alike share it; a reconfiguration that changes any of it opens a
    /// new one.
    public var id: String {
        "\(spec.path)|\(spec.protocol?.rawValue ?? "auto")|\(spec.interface ?? "")|\(spec.muxID.map { "\($0)" } ?? "")|"
            + options.sessionKey
    }

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
/// the others) shared with any instance that names the same port, with discovery run again at an interval and soon
/// after a port is lost. The decisions are `ModemDiscoveryReducer`'s; this runs them.
public struct DiscoveredModemSource: ModemSource {
    public var options: ModemMonitorOptions
    /// How often discovery runs when nothing was lost.
    public var interval: Duration
    /// After a lost port, discovery runs again after each of these delays in turn (by default 1, 3, 7 and 15 s
    /// after the loss; a re-enumerated modem takes seconds).
    public var afterLoss: [Duration]
    public var clock: any MonitorClock
    /// The ports present now. Production: `ModemReader.discover` over sysfs.
    public var discover: @Sendable () -> (SourceHealth, [ModemPortSpec])
    /// Tells apart discoveries that a test injects (production discovery has none).
    private var discoveryID: String?

    public init(
        options: ModemMonitorOptions, interval: Duration, clock: any MonitorClock,
        afterLoss: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(8)],
        discover: (@Sendable () -> (SourceHealth, [ModemPortSpec]))? = nil, discoveryID: String? = nil
    ) {
        self.options = options
        self.interval = interval
        self.afterLoss = afterLoss
        self.clock = clock
        let read = options.read
        self.discover = discover ?? { ModemReader.discover(options: read) }
        self.discoveryID = discover == nil ? nil : (discoveryID ?? "injected:\(UInt64.random(in: 0...UInt64.max))")
    }

    public var name: String { "discovery" }

    public var id: String {
        "discovery|\(discoveryID ?? options.read.sysfsRoot)|\(interval)|\(afterLoss)|" + options.sessionKey
    }

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
            var reducer = ModemDiscoveryReducer()
            var watchers: [String: Task<Void, Never>] = [:]
            var rediscovery: Task<Void, Never>?
            for await event in events {
                let effects: [ModemDiscoveryReducer.Effect]
                switch event {
                case let .found(h, specs): effects = reducer.receive(.found(h, specs))
                case let .update(path, state): effects = reducer.receive(.update(path: path, state))
                }
                for effect in effects {
                    switch effect {
                    case let .watch(spec):
                        let path = spec.path
                        // Through the registry: a port some instance also names is one session, not two.
                        let updates = IndicationModemSource(spec: spec, options: options)
                            .sharedUpdates(clock: clock, logger: options.read.logger)
                        watchers[path] = Task {
                            for await (_, s) in updates {
                                if let state = s.first { feed.yield(.update(path: path, state)) }
                            }
                        }
                    case let .unwatch(path):
                        watchers.removeValue(forKey: path)?.cancel()
                    case let .publish(health, states):
                        sink.yield((health, states))
                    case .rediscoverSoon:
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

/// nl80211 events and CQM thresholds through `WiFiMonitor` (ReachWiFi); it polls only as its fallback. One monitor
/// watches every interface; each `Reachability` keeps those its options name.
public struct NL80211WiFiSource: WiFiSource {
    public var pollInterval: Duration

    public init(pollInterval: Duration) {
        self.pollInterval = pollInterval
    }

    public var name: String { "nl80211" }
    public var id: String { "nl80211|\(pollInterval)" }

    public func updates() -> AsyncStream<(SourceHealth, [WiFiLink])> {
        // The configured poll is also the retry while nl80211 cannot be reached at all (no cfg80211 on this kernel):
        // an idle box without WiFi should not open netlink sockets every few seconds.
        let monitor = WiFiMonitor(
            options: WiFiMonitor.Options(interface: nil, pollInterval: pollInterval, fallbackPollInterval: pollInterval))
        let (stream, continuation) = AsyncStream.makeStream(
            of: (SourceHealth, [WiFiLink]).self, bufferingPolicy: .bufferingNewest(1))
        // As with the route monitor: the forwarding task ends when the monitor's stream finishes; stopping the monitor
        // is what ends it, never a cancellation of the task that consumes the monitor's stream.
        Task {
            for await u in monitor.updates { continuation.yield((u.health, u.links)) }
            continuation.finish()
        }
        continuation.onTermination = { _ in monitor.stop() }
        return stream
    }
}

extension WiFiLink {
    /// The links `interfaces` names, in that order (all of them for an empty list). A named interface nl80211 does
    /// not show is listed with an error, as a one-shot read lists it, so a missing uplink is seen rather than silent.
    public static func selecting(_ interfaces: [String], from links: [WiFiLink], health: SourceHealth) -> [WiFiLink] {
        guard !interfaces.isEmpty else { return links }
        return interfaces.compactMap { name in
            if let link = links.first(where: { $0.interface == name }) { return link }
            guard health.available else { return nil }
            var missing = WiFiLink(interface: name, mode: .other)
            missing.error = "no nl80211 interface named \(name)"
            return missing
        }
    }
}
