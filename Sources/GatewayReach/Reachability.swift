// Continuous monitoring with YYReachability's surface: make one for a target, read its properties from any thread,
// and hear about every reported change through a block (`notify`) or a stream (`updates`).
//
//     let reach = Reachability()                        // the default route, IPv4 and IPv6
//     reach.notify = { r in print(r.status, r.medium, r.wwanStatus) }
//     reach.start()
//     for await s in reach.updates { … }                // the current snapshot first, then one per change
//     reach.stop()                                      // sockets, modem sessions and threads released
//
// The runner: each source feeds a `MonitorEngine` (ReachCore) under one lock; the events it returns are handed, in
// order and without waiting, to every subscriber's own bounded queue (a `notify` block, each `updates` stream, each
// attached mailbox), so no subscriber can slow a source or another subscriber. A timer task sleeps until the engine's
// next deadline (the start-up grace, a hold-down, the report interval). Sources are shared by every instance in the
// process (SharedSources.swift) and supervised: one that fails is restarted with the backoff.

import ReachCore
import ReachLog
import Synchronization

/// What a `Reachability` watches and how it decides what to report. The defaults are the agent's.
public struct ReachabilityOptions: Sendable, Equatable {
    public struct Modems: Sendable, Equatable {
        /// Ask the WWAN modems at all.
        public var enabled = true
        /// The control ports to watch; empty: every modem discovery finds (and those plugged in later).
        public var ports: [ModemPortSpec] = []
        public var requestTimeout: Duration = Defaults.duration(Defaults.modemRequestTimeoutSeconds)
        /// How often to read what a modem does not announce by itself, and to run discovery again.
        public var pollInterval: Duration = Defaults.duration(Defaults.modemPollIntervalSeconds)
        /// How ports are opened: through qmi-proxy / mbim-proxy beside other clients such as ModemManager (`auto`:
        /// directly only when no proxy can be started; `proxy`: always), or exclusively (`direct`).
        public var access: ModemAccess = .auto
        /// How often the data sessions are asked again although indications announce them (some firmware sends
        /// them late or never); nil: only at registration changes.
        public var sessionRequery: Duration? = Defaults.duration(Defaults.modemSessionRequerySeconds)
        /// Run each modem's I/O in a worker process started this way (`ModemReadOptions.worker`), so that a modem
        /// library that crashes or hangs costs that worker, never this process; nil: in this process.
        public var worker: ModemWorkerLaunch?
        public init() {}
    }

    public struct WiFi: Sendable, Equatable {
        public var enabled = true
        /// The interfaces to report; empty: all.
        public var interfaces: [String] = []
        /// The safety-net read when no nl80211 event came.
        public var pollInterval: Duration = Defaults.duration(Defaults.wifiPollIntervalSeconds)
        public init() {}
    }

    public var modems = Modems()
    public var wifi = WiFi()
    /// Interface kinds by name, overriding what sysfs says (`["ppp0": .wwan]`).
    public var interfaceKinds: [String: InterfaceKind] = [:]
    /// How each route's underlay is followed: links the kernel cannot show (`["tun0": "wwan0"]`) and the CLAT's PLAT
    /// prefix.
    public var underlays: UnderlayConfig = .standard
    /// Uplinks named and ordered by the caller: listed even while they hold no default route. Empty: every
    /// interface holding a default route.
    public var uplinks: [UplinkSpec] = []
    /// Whether this instance reports the uplinks' changes (`ChangeEvent.uplinks`). The uplinks are the gateway's,
    /// the same for every target: several instances on one gateway let one of them report them.
    public var reportsUplinks = true
    /// How the modems' bars are graded (and where a QMI modem is asked to announce a change of its signal).
    public var signalPolicy: SignalPolicy = .android
    /// How long a loss must last before it is reported (0: at once).
    public var holdDown: Duration = Defaults.duration(Defaults.holdDownSeconds)
    /// How far (dB) a signal must cross a bar boundary before the bars change.
    public var barHysteresisDB: Double = Defaults.barHysteresisDB
    /// YYReachability's `allowWWAN`; nil: the target's (false only for `localWiFi()`).
    public var allowWWAN: Bool?
    /// A host target: how long one resolution may take, and how old an answer may get before a route notice
    /// resolves the name again.
    public var resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds)
    public var resolveInterval: Duration = Defaults.duration(Defaults.reportIntervalSeconds)
    /// How long the first determination waits for sources that have not answered; nil: one modem's whole first
    /// read (three request timeouts) plus a second.
    public var startupGrace: Duration?
    /// A `periodic` event every interval on `events` and attached mailboxes (the agent's report cadence); nil: none.
    public var reportInterval: Duration?
    /// Changes each `updates` stream and `notify` hold for a subscriber that is behind (the newest are kept).
    public var subscriberBuffer = 64
    /// Validation (opt-in, off by default: it sends packets to the servers its probes name): rounds of `probes`
    /// through each reachable uplink on their schedule, the readings in every snapshot (`validated`, `usable`) and their
    /// changes reported by the instance that reports the uplinks. Instances with equal settings share one source.
    public var validation = AgentConfig.Validation()

    public init() {}

    public var changePolicy: ChangePolicy { ChangePolicy(holdDown: holdDown, barHysteresisDB: barHysteresisDB) }

    var monitorSettings: MonitorSettings {
        MonitorSettings(
            policy: changePolicy, startupGrace: startupGrace ?? defaultGrace, reportInterval: reportInterval,
            modemsEnabled: modems.enabled, wifiEnabled: wifi.enabled, allowWWAN: allowWWAN, signalPolicy: signalPolicy,
            tracksUplinks: reportsUplinks, validationEnabled: validation.enabled)
    }

    /// One modem's whole first read (three request timeouts) plus a second; with validation on, never shorter than
    /// one round (each probe, and the name lookup of an http probe whose host is a name, one timeout each).
    var defaultGrace: Duration {
        var grace = modems.requestTimeout * 3 + .seconds(1)
        if validation.enabled {
            let steps = validation.probes.count + validation.probes.filter {
                if case let .http(url, _) = $0 { return url.address == nil } else { return false }
            }.count
            grace = max(grace, validation.policy.timeout * steps + .seconds(1))
        }
        return grace
    }

    /// The modems' monitor options (what a production modem source opens its sessions with); the logger is the
    /// instance's.
    public var modemMonitorOptions: ModemMonitorOptions {
        var read = ModemReadOptions(requestTimeout: modems.requestTimeout, access: modems.access, signalPolicy: signalPolicy)
        read.worker = modems.worker
        return ModemMonitorOptions(read: read, pollInterval: modems.pollInterval, sessionRequery: modems.sessionRequery)
    }
}

extension StatusRequest {
    /// The one-shot question (`reach status`, `reach diag`) these options put: what an agent with them would watch,
    /// asked once. So a configuration reaches a status read through the same mapping as the agent's monitoring.
    public init(_ options: ReachabilityOptions, target: Target, resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds)) {
        self.init(
            target: target, modems: options.modems.ports.isEmpty ? nil : options.modems.ports, readModems: options.modems.enabled,
            wifiInterface: options.wifi.interfaces.count == 1 ? options.wifi.interfaces[0] : nil, readWiFi: options.wifi.enabled,
            modemOptions: options.modemMonitorOptions.read, resolveTimeout: resolveTimeout,
            interfaceOverrides: options.interfaceKinds, signalPolicy: options.signalPolicy, uplinks: options.uplinks,
            underlays: options.underlays)
    }
}

extension ReachabilityOptions {
    /// A configuration as monitoring options: the same sources, change rules and cadence. The one mapping from
    /// `AgentConfig` to options: the agent and every command that reads a configuration file go through it.
    /// - Parameter worker: how modem workers are started while `modems.worker` is true.
    public init(config: AgentConfig, worker: ModemWorkerLaunch? = nil) {
        self.init()
        modems.enabled = config.modems.enabled
        modems.ports = config.modems.ports
        modems.requestTimeout = .seconds(config.modems.requestTimeoutSeconds)
        modems.pollInterval = .seconds(config.modems.pollIntervalSeconds)
        modems.access = config.modems.access
        modems.sessionRequery = .seconds(config.modems.sessionRequerySeconds)
        modems.worker = config.modems.worker ? worker : nil
        wifi.enabled = config.wifi.enabled
        wifi.interfaces = config.wifi.interfaces
        wifi.pollInterval = .seconds(config.wifi.pollIntervalSeconds)
        interfaceKinds = config.interfaceKinds
        underlays = config.underlayConfig
        uplinks = config.uplinks
        signalPolicy = config.signalPolicy
        validation = config.validation
        let policy = config.changePolicy
        holdDown = policy.holdDown
        barHysteresisDB = policy.barHysteresisDB
        let interval = Duration.seconds(config.report.intervalSeconds)
        reportInterval = interval
        // A host target is resolved again on a route notice once its answer is one report interval old.
        resolveInterval = interval
    }
}

/// Where a `Reachability`'s parts come from. `system` is the kernel (rtnetlink), the modems (QMI/MBIM) and nl80211;
/// tests and other backends supply their own.
public struct ReachabilitySources: Sendable {
    public typealias ValidationFactory =
        @Sendable (ReachabilityOptions, any MonitorClock, @escaping @Sendable () -> Timestamp, Logger) -> (any ValidationSource)?

    public var route: @Sendable (ReachabilityOptions) -> any RouteSource
    public var modems: @Sendable (ReachabilityOptions, any MonitorClock, Logger) -> [any ModemSource]
    public var wifi: @Sendable (ReachabilityOptions) -> (any WiFiSource)?
    /// Asked only when `options.validation.enabled`.
    public var validation: ValidationFactory

    /// - Parameter validation: default: the configured probes (`ProbeValidationSource`).
    public init(
        route: @escaping @Sendable (ReachabilityOptions) -> any RouteSource,
        modems: @escaping @Sendable (ReachabilityOptions, any MonitorClock, Logger) -> [any ModemSource],
        wifi: @escaping @Sendable (ReachabilityOptions) -> (any WiFiSource)?,
        validation: @escaping ValidationFactory = ReachabilitySources.probes
    ) {
        self.route = route
        self.modems = modems
        self.wifi = wifi
        self.validation = validation
    }

    /// The configured probes through sockets bound to each uplink.
    public static let probes: ValidationFactory = { options, clock, wall, logger in
        ProbeValidationSource(settings: options.validation, clock: clock, wall: wall, logger: logger)
    }

    public static let system = ReachabilitySources(
        route: {
            KernelRouteSource(
                interfaceOverrides: $0.interfaceKinds, resolveTimeout: $0.resolveTimeout, uplinks: $0.uplinks,
                underlays: $0.underlays)
        },
        modems: { options, clock, logger in
            var monitor = options.modemMonitorOptions
            monitor.read.logger = logger
            // One monitor per modem: a slow or vanished modem does not hold up the others. Named ports are watched
            // as named; without them, discovery follows modems that come, go or re-enumerate.
            if options.modems.ports.isEmpty {
                return [DiscoveredModemSource(options: monitor, interval: options.modems.pollInterval, clock: clock)]
            }
            return options.modems.ports.map { IndicationModemSource(spec: $0, options: monitor) }
        },
        wifi: { NL80211WiFiSource(pollInterval: $0.wifi.pollInterval) })
}

/// The reachability of one target, followed continuously.
///
/// - Properties (`snapshot`, `status`, `flags`, …) are the latest determination: what the sources say now, read
///   from any thread without waiting (a copy under a lock that is only ever held for a copy). `notify` and
///   `updates` report a change once it has held (a loss after the hold-down), so a short loss shows in the
///   properties but is never notified.
/// - `notify` is called on a task of its own (Swift's global concurrent executor, never the caller's thread or
///   actor): once per reported change, in order, never two calls at once. Hop to your own actor inside the block
///   if you need one. A block slower than the changes misses the oldest ones, never the newest.
/// - `start()` and `stop()` may be called any number of times, from any thread; `start()` after `stop()` begins
///   again with a fresh first determination.
public final class Reachability: Sendable {
    public let target: Target

    private let clock: any MonitorClock
    private let wall: @Sendable () -> Timestamp
    private let sources: ReachabilitySources
    private let logger: Logger
    /// The properties' state: its own lock, so a reader never waits for the engine.
    private let latest: Mutex<State>
    private let core: Mutex<Core>

    private struct Run {
        let id: Int
        var engine: MonitorEngine
        let wakeup = Wakeup()
        let notifyBox: Mailbox<MonitorEvent>
        /// The snapshot of the last reported change: what a new `updates` subscriber gets first.
        var reported: Snapshot?
        var tasks: [String: Task<Void, Never>] = [:]
        /// What each running feed was started with, to restart only what a reconfiguration changes.
        var routeKey: RouteFeedKey?
        var modemIDs: [String: String] = [:]
        var wifiKey: String?
        /// The validation source's id and the board it probes the uplinks of, while one runs.
        var validationKey: String?
        var board: UplinkBoard?
        /// The current feed of each key ("route", "modem:NAME", "wifi"): a replaced feed's late values are ignored.
        var feeds: [String: Int] = [:]
        var nextFeed = 0

        /// A new feed for `key`: its token.
        mutating func newFeed(_ key: String) -> Int {
            nextFeed += 1
            feeds[key] = nextFeed
            return nextFeed
        }
    }

    /// The sources for a set of options, made by the factories outside every lock (a factory is the caller's code).
    private struct Built {
        let options: ReachabilityOptions
        let route: any RouteSource
        let modems: [any ModemSource]
        let wifi: (any WiFiSource)?
        let validation: (any ValidationSource)?
    }

    private func build(_ options: ReachabilityOptions) -> Built {
        Built(
            options: options, route: sources.route(options),
            modems: options.modems.enabled ? sources.modems(options, clock, logger) : [],
            wifi: options.wifi.enabled ? sources.wifi(options) : nil,
            validation: options.validation.enabled ? sources.validation(options, clock, wall, logger) : nil)
    }

    private struct Core {
        var options: ReachabilityOptions
        var notify: (@Sendable (Reachability) -> Void)?
        var run: Run?
        var runs = 0
        var nextSubscriber = 0
        var snapshotStreams: [Int: AsyncStream<Snapshot>.Continuation] = [:]
        var eventStreams: [Int: AsyncStream<MonitorEvent>.Continuation] = [:]
        var mailboxes: [ObjectIdentifier: Mailbox<MonitorEvent>] = [:]
        var observers: [ObjectIdentifier: Wakeup] = [:]
    }

    // MARK: Making one

    /// Watches `target`. Nothing runs until `start()`.
    /// - Parameters:
    ///   - sources: where the parts come from (default: the kernel, the modems, nl80211; shared in the process).
    ///   - clock / wall: monotonic and wall time (tests pass a manual clock).
    ///   - logger: where sources log restarts and adapter records (default: nowhere).
    public init(
        target: Target, options: ReachabilityOptions = ReachabilityOptions(), sources: ReachabilitySources = .system,
        clock: any MonitorClock = ContinuousMonitorClock(), wall: @escaping @Sendable () -> Timestamp = { .now() },
        logger: Logger? = nil
    ) {
        self.target = target
        self.clock = clock
        self.wall = wall
        self.sources = sources
        self.logger = logger ?? Logger.discarding(label: "gatewayreach")
        self.latest = Mutex(State(snapshot: Snapshot(time: wall(), target: target)))
        self.core = Mutex(Core(options: options))
    }

    /// The default route, IPv4 and IPv6: YYReachability's `+reachability`, Apple's
    /// `reachabilityForInternetConnection`.
    public convenience init() {
        self.init(target: .defaultRoute)
    }

    /// A host name, resolved on a thread of its own within `resolveTimeout` and again as routes change
    /// (YYReachability's `+reachabilityWithHostname:`). An IP literal is watched as an address.
    public convenience init(hostname: String, options: ReachabilityOptions = ReachabilityOptions()) {
        self.init(target: IPAddress(hostname) != nil ? .address(hostname) : .host(hostname), options: options)
    }

    /// The route to one address (YYReachability's `+reachabilityWithAddress:`).
    public convenience init(address: IPAddress, options: ReachabilityOptions = ReachabilityOptions()) {
        self.init(target: .address(address.description), options: options)
    }

    /// IPv4 link-local, 169.254.0.0/16, reachable only on-link, WWAN not allowed (YYReachability's
    /// `+reachabilityForLocalWifi`).
    public static func localWiFi(options: ReachabilityOptions = ReachabilityOptions()) -> Reachability {
        var o = options
        o.allowWWAN = false
        return Reachability(target: .linkLocal, options: o)
    }

    /// One default-route instance for the process (AFNetworking's `+sharedManager`).
    public static let shared = Reachability()

    deinit {
        stop(reason: "released")
        let (snapshots, events) = core.withLock { c in
            defer { (c.snapshotStreams, c.eventStreams) = ([:], [:]) }
            return (Array(c.snapshotStreams.values), Array(c.eventStreams.values))
        }
        for s in snapshots { s.finish() }
        for e in events { e.finish() }
    }

    // MARK: The properties

    /// The latest determination; status `unknown` before the first.
    public var snapshot: Snapshot { latest.withLock { $0.snapshot } }
    public var status: ReachabilityStatus { latest.withLock { $0.snapshot.status } }
    public var flags: ReachabilityFlags { latest.withLock { $0.snapshot.flags } }
    public var wwanStatus: Generation { latest.withLock { $0.snapshot.wwanStatus } }
    public var medium: Medium { latest.withLock { $0.snapshot.medium } }
    public var isReachable: Bool { latest.withLock { $0.snapshot.reachable } }
    /// Reachable over the cellular modem (AFNetworking's `isReachableViaWWAN`).
    public var isReachableViaWWAN: Bool { latest.withLock { $0.snapshot.reachable && $0.snapshot.status == .wwan } }
    /// Reachable without the modem: WiFi or, on a gateway, Ethernet (AFNetworking's `isReachableViaWiFi`).
    public var isReachableViaWiFi: Bool { latest.withLock { $0.snapshot.reachable && $0.snapshot.status == .wifi } }
    /// A connection must be set up first, or a person must act (a locked SIM): Apple's `connectionRequired`.
    public var connectionRequired: Bool { latest.withLock { $0.snapshot.flags.contains(.connectionRequired) } }
    /// The latest determination with what an output showing the monitoring needs besides it (the agent's state
    /// file): the values reported last and when each source was last heard from.
    public var state: State { latest.withLock { $0 } }

    public struct State: Sendable {
        /// `snapshot`.
        public var snapshot: Snapshot
        /// The debounced values reported last (the bars a report line shows); nil before the first determination.
        public var reported: ReportedView?
        /// When each kind of source was last heard from: "route", "wwan", "wifi" (wall time).
        public var heard: [String: Timestamp] = [:]
    }

    /// Whether `start()` was called and `stop()` not since.
    public var isRunning: Bool { core.withLock { $0.run != nil } }

    /// What this instance watches and how; setting it while running rebuilds only what changed (a source whose
    /// settings changed is restarted, the change rules apply to the next snapshot, the reported view is kept).
    public var options: ReachabilityOptions {
        get { core.withLock { $0.options } }
        set { reconfigure(newValue) }
    }

    /// Called once per reported change (the first determination included); see the type's notes for the executor.
    public var notify: (@Sendable (Reachability) -> Void)? {
        get { core.withLock { $0.notify } }
        set { core.withLock { $0.notify = newValue } }
    }

    /// The snapshot of the last reported change first (once there is a first determination), then one per reported
    /// change; ends at `stop()`. Each use of the property is a new subscription with its own buffer (`subscriberBuffer`, the newest
    /// kept). A subscription made while stopped begins with the next `start()`.
    public var updates: AsyncStream<Snapshot> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Snapshot.self, bufferingPolicy: .bufferingNewest(core.withLock { max(1, $0.options.subscriberBuffer) }))
        let id = core.withLock { c -> Int in
            c.nextSubscriber += 1
            c.snapshotStreams[c.nextSubscriber] = continuation
            if let reported = c.run?.reported { continuation.yield(reported) }
            return c.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in self?.core.withLock { _ = $0.snapshotStreams.removeValue(forKey: id) } }
        return stream
    }

    /// Every event (start, change, periodic, stop) with what a report needs (change, reported bars, held fields);
    /// ends at `stop()`. Periodic events come only with `reportInterval`.
    public func events(buffer: Int = 256) -> AsyncStream<MonitorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MonitorEvent.self, bufferingPolicy: .bufferingNewest(max(1, buffer)))
        let id = core.withLock { c -> Int in
            c.nextSubscriber += 1
            c.eventStreams[c.nextSubscriber] = continuation
            return c.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in self?.core.withLock { _ = $0.eventStreams.removeValue(forKey: id) } }
        return stream
    }

    /// Sends every event of this instance to `mailbox` as well, across restarts, until `detach`. Several instances
    /// may feed one mailbox (the agent's outputs); the mailbox is never finished here.
    public func attach(_ mailbox: Mailbox<MonitorEvent>) {
        core.withLock { $0.mailboxes[ObjectIdentifier(mailbox)] = mailbox }
    }

    public func detach(_ mailbox: Mailbox<MonitorEvent>) {
        core.withLock { _ = $0.mailboxes.removeValue(forKey: ObjectIdentifier(mailbox)) }
    }

    /// Signals `wakeup` after every determination, reported or not (a part a source delivered, a tick, a
    /// reconfiguration, a refresh, the stop), until `detach`: for an output that shows `state` as it is (the agent's
    /// state file) rather than the changes. Signals coalesce; read `state` after waking.
    public func attach(_ wakeup: Wakeup) {
        core.withLock { $0.observers[ObjectIdentifier(wakeup)] = wakeup }
    }

    public func detach(_ wakeup: Wakeup) {
        core.withLock { _ = $0.observers.removeValue(forKey: ObjectIdentifier(wakeup)) }
    }

    /// When the engine has work next (monotonic, on this instance's clock); nil when stopped.
    package var nextDeadline: Duration? { core.withLock { $0.run?.engine.nextDeadline } }

    // MARK: Start and stop

    /// Starts watching (Apple's `startNotifier`, AFNetworking's `startMonitoring`). Does nothing when running.
    public func start() {
        guard let options = core.withLock({ $0.run == nil ? $0.options : nil }) else { return }
        let built = build(options)
        let newer = core.withLock { c -> ReachabilityOptions? in
            guard c.run == nil else { return nil }
            c.runs += 1
            let settings = built.options.monitorSettings
            var expecting: Set<MonitorSource> = [.route]
            for m in built.modems { expecting.insert(.modem(m.name)) }
            if built.wifi != nil { expecting.insert(.wifi) }
            if built.validation != nil { expecting.insert(.validation) }
            var run = Run(
                id: c.runs, engine: MonitorEngine(target: target, settings: settings, expecting: expecting, at: clock.now()),
                notifyBox: Mailbox(capacity: built.options.subscriberBuffer))
            startRouteFeed(&run, built.route, built.options)
            for m in built.modems { startModemFeed(&run, m) }
            if let wifi = built.wifi { startWiFiFeed(&run, wifi, interfaces: built.options.wifi.interfaces) }
            if let validation = built.validation { startValidationFeed(&run, validation) }
            run.tasks["timer"] = timerTask(run.id, run.wakeup)
            run.tasks["notify"] = notifyTask(run.notifyBox)
            c.run = run
            latest.withLock { l in
                l.reported = nil
                l.heard = [:]
            }
            return c.options != built.options ? c.options : nil
        }
        // Options set while the sources were being made: applied now, as any change while running.
        if let newer { applyRunning(newer, build(newer)) }
    }

    /// Stops watching (Apple's `stopNotifier`, AFNetworking's `stopMonitoring`): the `stop` event goes out, every
    /// `updates` and `events` stream ends, and the sources this instance alone used close their sockets and modem
    /// sessions. Does nothing when stopped. Calls of `notify` for changes reported before may still follow.
    public func stop() { stop(reason: "stopped") }

    /// `stop()` with the reason the `stop` event carries (the agent's "graceful shutdown").
    public func stop(reason: String) {
        let ended = core.withLock { c -> (tasks: [Task<Void, Never>], streams: [@Sendable () -> Void], box: Mailbox<MonitorEvent>)? in
            guard c.run != nil else { return nil }
            let events = c.run!.engine.receive(.stop(reason: reason), at: now())
            publish(events, &c)
            for w in c.observers.values { w.signal() }
            let run = c.run!
            c.run = nil
            let streams = c.snapshotStreams.values.map { s in { @Sendable in s.finish() } }
                + c.eventStreams.values.map { e in { @Sendable in e.finish() } }
            c.snapshotStreams = [:]
            c.eventStreams = [:]
            return (run.tasks.filter { $0.key != "notify" }.map(\.value), streams, run.notifyBox)
        }
        guard let ended else { return }
        // After the lock: cancelling a feed ends its shared subscription, which may stop a source.
        for t in ended.tasks { t.cancel() }
        for f in ended.streams { f() }
        ended.box.finish()
    }

    /// One full determination now: the route asked again (a host resolved again), with the modems' and WiFi's
    /// latest states while running; while stopped, every source is read once (`GatewayReach.status`). Updates the
    /// properties; a change it reveals is reported as any other.
    @discardableResult
    public func refresh() async -> Snapshot {
        let (options, runID) = core.withLock { ($0.options, $0.run?.id) }
        if let runID {
            let source = sources.route(options)
            var resolved: Result<[IPAddress], ResolutionError>?
            if case let .host(name) = target { resolved = await source.resolve(name) }
            let view = await source.compute(target, resolved: resolved)
            deliver(.route(view), run: runID)
            return snapshot
        }
        let ports = options.modems.ports
        var request = StatusRequest(
            target: target, modems: ports.isEmpty ? nil : ports, readModems: options.modems.enabled,
            wifiInterface: options.wifi.interfaces.count == 1 ? options.wifi.interfaces[0] : nil,
            readWiFi: options.wifi.enabled, resolveTimeout: options.resolveTimeout, interfaceOverrides: options.interfaceKinds,
            signalPolicy: options.signalPolicy, uplinks: options.uplinks, underlays: options.underlays)
        request.modemOptions = options.modemMonitorOptions.read
        request.modemOptions.logger = logger
        var s = await GatewayReach.status(request)
        if options.wifi.enabled { s.wifi = WiFiLink.selecting(options.wifi.interfaces, from: s.wifi, health: s.wifiSource) }
        if options.allowWWAN == false, s.status == .wwan { s.status = ReachabilityStatus(flags: s.flags, allowWWAN: false) }
        let snapshot = s
        latest.withLock { $0.snapshot = snapshot }
        core.withLock { c in for w in c.observers.values { w.signal() } }
        return s
    }

    // MARK: The runner

    private func now() -> MonitorTime { MonitorTime(monotonic: clock.now(), wall: wall()) }

    /// One input into the engine of run `id` (ignored once that run is over, or from a feed since replaced), its
    /// events out to every subscriber.
    private func deliver(_ input: MonitorInput, run id: Int, feed: (key: String, token: Int)? = nil) {
        core.withLock { c in
            guard c.run?.id == id else { return }
            if let feed, c.run!.feeds[feed.key] != feed.token { return }
            let events = c.run!.engine.receive(input, at: now())
            keepLatest(c.run!.engine)
            offerUplinks(c.run!)
            publish(events, &c)
            for w in c.observers.values { w.signal() }
            c.run!.wakeup.signal()
        }
    }

    /// The uplinks as this instance derives them, for its validation source (once the route has been read).
    private func offerUplinks(_ run: Run) {
        guard let board = run.board, run.engine.heard["route"] != nil, let s = run.engine.latest else { return }
        board.offer(s.uplinks)
    }

    /// The engine's latest determination, reported view and heard times, for the properties.
    private func keepLatest(_ engine: MonitorEngine) {
        guard let s = engine.latest else { return }
        let (view, heard) = (engine.detector.view, engine.heard)
        latest.withLock { l in
            l.snapshot = s
            l.reported = view
            l.heard = heard
        }
    }

    /// Hands events to every subscriber without waiting (under the core lock, so every subscriber sees one order).
    private func publish(_ events: [MonitorEvent], _ c: inout Core) {
        for e in events {
            for m in c.mailboxes.values { m.post(e) }
            for s in c.eventStreams.values { s.yield(e) }
            guard e.isReportedChange else { continue }
            c.run?.reported = e.snapshot
            for s in c.snapshotStreams.values { s.yield(e.snapshot) }
            c.run?.notifyBox.post(e)
        }
    }

    private func timerTask(_ id: Int, _ wakeup: Wakeup) -> Task<Void, Never> {
        let clock = self.clock
        return Task { [weak self] in
            while !Task.isCancelled {
                // `self` is held only between sleeps: an instance dropped without stop() is released (and stopped).
                let deadline: Duration?
                do {
                    guard let me = self else { return }
                    let (current, next) = me.core.withLock { c in
                        c.run?.id == id ? (true, c.run!.engine.nextDeadline) : (false, nil)
                    }
                    guard current else { return }
                    deadline = next
                    if let deadline, clock.now() >= deadline {
                        me.deliver(.tick, run: id)
                        continue
                    }
                }
                await clock.sleep(until: deadline, orUntil: wakeup)
            }
        }
    }

    private func notifyTask(_ box: Mailbox<MonitorEvent>) -> Task<Void, Never> {
        Task { [weak self] in
            for await _ in box {
                guard let self else { return }
                self.core.withLock { $0.notify }?(self)
            }
        }
    }

    /// Routes: subscribe to the notices first, then ask (a change in between is not missed); ask again on every
    /// notice. A host is resolved at the start and again on a notice once its last answer is `resolveInterval` old.
    private func startRouteFeed(_ run: inout Run, _ source: any RouteSource, _ options: ReachabilityOptions) {
        let (id, target, clock, logger, every) = (run.id, target, clock, logger, options.resolveInterval)
        run.routeKey = Self.routeKey(source, options)
        // Subscribed here, before the feed it replaces (if any) is cancelled: a shared source both use stays open.
        let notices = source.sharedEvents(clock: clock, logger: logger)
        let feed = ("route", run.newFeed("route"))
        run.tasks["route"]?.cancel()
        run.tasks["route"] = Task { [weak self] in
            var resolved: (Result<[IPAddress], ResolutionError>, Duration)?
            func refresh() async {
                var resolution: Result<[IPAddress], ResolutionError>?
                if case let .host(name) = target {
                    if let (r, at) = resolved, clock.now() - at < every {
                        resolution = r
                    } else {
                        let r = await source.resolve(name)
                        resolved = (r, clock.now())
                        resolution = r
                    }
                }
                let view = await source.compute(target, resolved: resolution)
                guard !Task.isCancelled else { return }
                self?.deliver(.route(view), run: id, feed: feed)
            }
            await refresh()
            for await _ in notices { await refresh() }
        }
    }

    private func startModemFeed(_ run: inout Run, _ source: any ModemSource) {
        let (id, name, clock, logger) = (run.id, source.name, clock, logger)
        run.modemIDs[name] = source.id
        let updates = source.sharedUpdates(clock: clock, logger: logger)
        let feed = ("modem:" + name, run.newFeed("modem:" + name))
        run.tasks["modem:" + name]?.cancel()
        run.tasks["modem:" + name] = Task { [weak self] in
            for await (health, states) in updates {
                self?.deliver(.modems(source: name, health, states), run: id, feed: feed)
            }
        }
    }

    private func startWiFiFeed(_ run: inout Run, _ source: any WiFiSource, interfaces: [String]) {
        let (id, clock, logger) = (run.id, clock, logger)
        run.wifiKey = source.id + "|" + interfaces.joined(separator: ",")
        let updates = source.sharedUpdates(clock: clock, logger: logger)
        let feed = ("wifi", run.newFeed("wifi"))
        run.tasks["wifi"]?.cancel()
        run.tasks["wifi"] = Task { [weak self] in
            for await (health, links) in updates {
                let selected = WiFiLink.selecting(interfaces, from: links, health: health)
                self?.deliver(.wifi(health, selected), run: id, feed: feed)
            }
        }
    }

    /// Validation: this instance offers its uplinks to the source's board (shared by every instance of that source)
    /// and takes the parts it publishes.
    private func startValidationFeed(_ run: inout Run, _ source: any ValidationSource) {
        let id = run.id
        let board = source.board()
        run.validationKey = source.id
        run.board = board
        let updates = source.sharedUpdates(board: board)
        let feed = ("validation", run.newFeed("validation"))
        run.tasks["validation"]?.cancel()
        run.tasks["validation"] = Task { [weak self] in
            for await part in updates { self?.deliver(.validation(part), run: id, feed: feed) }
            // Ended (stopped, or replaced by a reconfiguration): this instance no longer uses the board.
            UplinkBoards.shared.release(source.id)
        }
        offerUplinks(run)
    }

    /// What a route feed was started with: a reconfiguration that changes any of it starts the feed again (the
    /// route asked anew with the new rules, a host resolved anew).
    private struct RouteFeedKey: Equatable {
        var source: String
        var interfaceKinds: [String: InterfaceKind]
        var underlays: UnderlayConfig
        var uplinks: [UplinkSpec]
        var resolveTimeout: Duration
        var resolveInterval: Duration
    }

    private static func routeKey(_ source: any RouteSource, _ o: ReachabilityOptions) -> RouteFeedKey {
        RouteFeedKey(
            source: source.id, interfaceKinds: o.interfaceKinds, underlays: o.underlays, uplinks: o.uplinks,
            resolveTimeout: o.resolveTimeout, resolveInterval: o.resolveInterval)
    }

    /// New options: kept, and applied at once while running.
    private func reconfigure(_ new: ReachabilityOptions) {
        let running = core.withLock { c -> Bool in
            let changed = c.options != new
            c.options = new
            return changed && c.run != nil
        }
        if running { applyRunning(new, build(new)) }
    }

    /// New options while running: the engine's rules at once, and a restart of each feed whose settings changed.
    private func applyRunning(_ new: ReachabilityOptions, _ built: Built) {
        let cancelled = core.withLock { c -> [Task<Void, Never>] in
            guard c.run != nil, c.options == new else { return [] }  // stopped, or newer options on their way
            var stale: [Task<Void, Never>] = []
            var run = c.run!
            c.run = nil  // moved out while rebuilt, so the engine is not copied
            let settings = new.monitorSettings
            var events = run.engine.receive(.configure(settings), at: now())

            if Self.routeKey(built.route, new) != run.routeKey {
                if let t = run.tasks.removeValue(forKey: "route") { stale.append(t) }
                startRouteFeed(&run, built.route, new)
            }

            let wanted = Dictionary(built.modems.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            for (name, _) in run.modemIDs where wanted[name] == nil {
                run.modemIDs[name] = nil
                run.feeds["modem:" + name] = nil
                if let t = run.tasks.removeValue(forKey: "modem:" + name) { stale.append(t) }
                events += run.engine.receive(.modemSourceRemoved(name), at: now())
            }
            for m in built.modems where run.modemIDs[m.name] != m.id {
                if let t = run.tasks.removeValue(forKey: "modem:" + m.name) { stale.append(t) }
                run.engine.expect(.modem(m.name))
                startModemFeed(&run, m)
            }

            let wifiKey = built.wifi.map { $0.id + "|" + new.wifi.interfaces.joined(separator: ",") }
            if wifiKey != run.wifiKey {
                if let t = run.tasks.removeValue(forKey: "wifi") { stale.append(t) }
                run.wifiKey = nil
                run.feeds["wifi"] = nil
                if let wifi = built.wifi {
                    run.engine.expect(.wifi)
                    startWiFiFeed(&run, wifi, interfaces: new.wifi.interfaces)
                }
            }

            if built.validation?.id != run.validationKey {
                if let t = run.tasks.removeValue(forKey: "validation") { stale.append(t) }
                run.validationKey = nil
                run.board = nil
                run.feeds["validation"] = nil
                if let validation = built.validation {
                    run.engine.expect(.validation)
                    startValidationFeed(&run, validation)
                }
            }
            keepLatest(run.engine)
            c.run = run
            publish(events, &c)
            for w in c.observers.values { w.signal() }
            run.wakeup.signal()
            return stale
        }
        // After the lock: cancelling a feed ends its shared subscription, which may stop a source.
        for t in cancelled { t.cancel() }
    }
}
