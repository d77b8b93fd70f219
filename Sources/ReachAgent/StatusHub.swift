// The one place where the sources meet: each source sets its part, the hub builds each target's snapshot, runs its
// change detector and writes the lines. State is bounded: the latest part of each source, one detector per target,
// counters. No history accumulates, so a week-long run does not grow.

import GatewayReach
import Logging

/// Where lines go besides the report log: `reach watch` prints them, tests collect them.
public typealias LineHandler = @Sendable (_ type: ReportEventType, _ line: JSON, _ snapshot: Snapshot, _ change: ChangeEvent?) -> Void

/// What the hub publishes for the state outputs (state file, Varlink): every target's current snapshot with the
/// values last reported, when each source was last heard from, and the last seq. Published after every update of a
/// part, every line, and at least every `refresh` (`AgentOutputs` renders it on a thread of its own).
public struct HubState: Sendable {
    public struct TargetPart: Sendable {
        public var snapshot: Snapshot
        public var view: ReportedView?
    }

    public var time: Timestamp
    public var targets: [TargetPart]
    /// "route", "wwan", "wifi": the wall time of each source's last update.
    public var heard: [String: Timestamp]
    public var lastSeq: UInt64
    public var stopped: Bool
}

public typealias StateHandler = @Sendable (HubState) -> Void

public actor StatusHub {
    struct TargetState {
        var target: Target
        var route: RouteView?
        var detector: ChangeDetector
        var snapshot: Snapshot?
        var changes: UInt64 = 0
        var lastChange: Timestamp?
    }

    private var targets: [TargetState]
    private var modemParts: [String: (SourceHealth, [ModemState])] = [:]
    private var modemOrder: [String] = []
    private var modemsEnabled: Bool
    private var wifiPart: (SourceHealth, [WiFiLink])?
    private var wifiEnabled: Bool
    /// The validation source's part (`ValidationService`); nil until its first answer.
    private var validationPart: ValidationPart?
    private var validationEnabled: Bool
    /// Sources whose first value is awaited before the first line ("route", "modem:NAME", "wifi").
    private var expecting: Set<String>
    private var started = false
    private var stopped = false
    private var startDeadline: Duration
    private var interval: Duration
    private var nextPeriodic: Duration = .zero
    private var seq: UInt64 = 0
    private var config: AgentConfig
    /// `config.signalPolicy`, kept so each snapshot need not rebuild it.
    private var signalPolicy: SignalPolicy

    private let log: ReportLog?
    private let prometheus: PrometheusTextfile?
    private let onLine: LineHandler?
    private let onState: StateHandler?
    /// When each source was last heard from, and when the state is next published at the latest.
    private var heardAt: [String: Timestamp] = [:]
    private var nextState: Duration = .zero
    private let stateEvery: Duration
    private let clock: any AgentClock
    private let wall: @Sendable () -> Timestamp
    private let logger: Logger
    /// Signalled whenever the next deadline may have moved earlier.
    public nonisolated let wakeup = Wakeup()
    /// Signalled whenever the parts changed: the validation source looks at the uplinks again.
    public nonisolated let validationWakeup = Wakeup()

    /// - Parameters:
    ///   - expecting: the sources to hear from before the first ("start") lines; after `startupGrace` they are written
    ///     with whatever has arrived.
    public init(
        config: AgentConfig, expecting: Set<String>, startupGrace: Duration, log: ReportLog?, prometheus: PrometheusTextfile?,
        onLine: LineHandler?, onState: StateHandler? = nil, clock: any AgentClock,
        wall: @escaping @Sendable () -> Timestamp = { .now() }, logger: Logger
    ) {
        self.config = config
        self.signalPolicy = config.signalPolicy
        let uplinksBy = UplinkChangeTracker.reportingTarget(config.targets)
        self.targets = config.targets.enumerated().map { i, target in
            TargetState(target: target, detector: ChangeDetector(policy: config.changePolicy, tracksUplinks: i == uplinksBy))
        }
        self.modemsEnabled = config.modems.enabled
        self.wifiEnabled = config.wifi.enabled
        self.validationEnabled = config.validation.enabled
        self.expecting = expecting
        self.interval = .seconds(config.report.intervalSeconds)
        self.log = log
        self.prometheus = prometheus
        self.onLine = onLine
        self.onState = onState
        self.stateEvery = .seconds(config.stateRefreshSeconds)
        self.clock = clock
        self.wall = wall
        self.logger = logger
        self.startDeadline = clock.now() + startupGrace
    }

    public var configuration: AgentConfig { config }
    public var targetList: [Target] { targets.map(\.target) }
    public var logStats: ReportLog.Stats? { log?.stats }
    public var linesSequenced: UInt64 { seq }

    // MARK: Source parts

    public func setRoute(_ index: Int, _ view: RouteView) {
        guard targets.indices.contains(index) else { return }
        targets[index].route = view
        heardAt["route"] = wall()
        if index == targets.count - 1 { heard("route") }
        update()
    }

    public func setModems(source: String, _ health: SourceHealth, _ states: [ModemState]) {
        if modemParts[source] == nil { modemOrder.append(source) }
        modemParts[source] = (health, states)
        heardAt["wwan"] = wall()
        heard("modem:" + source)
        update()
    }

    public func setWiFi(_ health: SourceHealth, _ links: [WiFiLink]) {
        wifiPart = (health, links)
        heardAt["wifi"] = wall()
        heard("wifi")
        update()
    }

    public func setValidation(_ part: ValidationPart) {
        validationPart = part
        heard("validation")
        update()
    }

    /// The uplinks as the target that reports uplinks sees them now (derived: reachable or not), for the validation
    /// source; nil until the route has been read.
    public func validationUplinks() -> [Uplink]? {
        guard let i = UplinkChangeTracker.reportingTarget(targets.map(\.target)), targets[i].route != nil else { return nil }
        return snapshot(i).uplinks
    }

    private func heard(_ source: String) {
        expecting.remove(source)
    }

    // MARK: Time

    /// The next moment `tick()` has work: the end of the startup grace, a hold-down, or the next periodic line.
    public func nextDeadline() -> Duration? {
        if stopped { return nil }
        if !started { return startDeadline }
        var d = nextPeriodic
        for t in targets { if let h = t.detector.nextDeadline { d = min(d, h) } }
        if onState != nil { d = min(d, nextState) }
        return d
    }

    /// Writes what is due now: start lines after the grace, held-down changes whose hold ended, periodic lines.
    public func tick() {
        guard !stopped else { return }
        let now = clock.now()
        if !started {
            if now >= startDeadline { start() }
            return
        }
        var wrote = false
        for i in targets.indices {
            if let e = targets[i].detector.tick(at: now) {
                writeChange(i, e)
                wrote = true
            }
        }
        if now >= nextPeriodic {
            for i in targets.indices {
                let s = snapshot(i)
                targets[i].snapshot = s
                write(.periodic, i, s, change: nil)
            }
            wrote = true
            while nextPeriodic <= now { nextPeriodic += interval }
        }
        if wrote { writeMetrics() }
        if wrote || now >= nextState { publishState() }
    }

    /// The last lines (SIGTERM, SIGINT): one `stop` line per target, then nothing more.
    public func stop(reason: String) {
        guard !stopped else { return }
        if !started { start() }
        for i in targets.indices {
            let s = snapshot(i)
            write(.stop, i, s, change: nil, reason: reason)
        }
        writeMetrics()
        stopped = true
        publishState()
    }

    // MARK: Reload

    /// Applies a new configuration. Report, change and Prometheus settings take effect at once; the keys that shape
    /// the sources (targets, modems, wifi, interface_kinds, interface_underlays, clat, log_level) are returned: they need
    /// a restart.
    public func apply(_ new: AgentConfig) -> [String] {
        var needRestart: [String] = []
        if new.targets != config.targets { needRestart.append("targets") }
        if new.modems != config.modems { needRestart.append("modems") }
        if new.wifi != config.wifi { needRestart.append("wifi") }
        if new.interfaceKinds != config.interfaceKinds { needRestart.append("interface_kinds") }
        if new.interfaceUnderlays != config.interfaceUnderlays { needRestart.append("interface_underlays") }
        if new.platPrefix != config.platPrefix { needRestart.append("clat") }
        if new.uplinks != config.uplinks { needRestart.append("uplinks") }
        if new.validation != config.validation { needRestart.append("validation") }
        if new.logLevel != config.logLevel { needRestart.append("log_level") }
        if new.api != config.api { needRestart.append("api") }
        if (new.prometheusTextfile == nil) != (config.prometheusTextfile == nil) { needRestart.append("prometheus.textfile") }
        for i in targets.indices { targets[i].detector.update(policy: new.changePolicy) }
        log?.update(ReportLog.Settings(new.report))
        log?.reopen()
        if let path = new.prometheusTextfile { prometheus?.update(path: path) }
        let newInterval = Duration.seconds(new.report.intervalSeconds)
        if newInterval != interval {
            interval = newInterval
            nextPeriodic = clock.now() + interval
        }
        config = new
        signalPolicy = new.signalPolicy  // bars follow at once; QMI indication thresholds are set when a port opens
        wakeup.signal()
        return needRestart
    }

    // MARK: Building and writing

    private func update() {
        guard !stopped else { return }
        if validationEnabled { validationWakeup.signal() }
        if !started {
            if expecting.isEmpty { start() }
            wakeup.signal()
            return
        }
        let now = clock.now()
        var wrote = false
        for i in targets.indices {
            let s = snapshot(i)
            targets[i].snapshot = s
            if let e = targets[i].detector.observe(s, at: now) {
                writeChange(i, e)
                wrote = true
            }
        }
        if wrote { writeMetrics() }
        publishState()
        wakeup.signal()
    }

    private func start() {
        started = true
        let now = clock.now()
        for i in targets.indices {
            let s = snapshot(i)
            targets[i].snapshot = s
            let e = targets[i].detector.observe(s, at: now)
            targets[i].lastChange = s.time
            write(.start, i, s, change: e, reason: e?.reason)
        }
        nextPeriodic = now + interval
        writeMetrics()
        publishState()
    }

    private func writeChange(_ i: Int, _ e: ChangeEvent) {
        // The parts are those the detector saw last; only the time is new (a hold-down that ended is reported now).
        let s = snapshot(i)
        targets[i].snapshot = s
        targets[i].changes += 1
        targets[i].lastChange = s.time
        write(.change, i, s, change: e)
    }

    private func write(_ type: ReportEventType, _ i: Int, _ s: Snapshot, change: ChangeEvent?, reason: String? = nil) {
        seq += 1
        let d = targets[i].detector
        let event = ReportLine.event(type, seq: seq, change: change, held: d.held, reason: reason)
        let line = ReportLine.json(snapshot: s, view: d.view, event: event)
        log?.append(line, time: s.time)
        onLine?(type, line, s, change)
    }

    /// Hands the current state to the state outputs (nothing before the first lines: there is no answer yet).
    private func publishState() {
        guard let onState, started else { return }
        nextState = clock.now() + stateEvery
        let parts = targets.compactMap { t in t.snapshot.map { HubState.TargetPart(snapshot: $0, view: t.detector.view) } }
        onState(HubState(time: wall(), targets: parts, heard: heardAt, lastSeq: seq, stopped: stopped))
    }

    private func writeMetrics() {
        guard let prometheus else { return }
        let input = MetricsInput(
            targets: targets.compactMap { t in
                t.snapshot.map {
                    MetricsInput.TargetMetrics(snapshot: $0, view: t.detector.view, changes: t.changes, lastChange: t.lastChange)
                }
            },
            log: log?.stats ?? ReportLog.Stats())
        prometheus.write(PrometheusText.render(input))
    }

    /// A target's snapshot from the parts as they are now.
    private func snapshot(_ i: Int) -> Snapshot {
        var s = Snapshot(time: wall(), target: targets[i].target, signalPolicy: signalPolicy)
        if let route = targets[i].route {
            route.apply(to: &s)
        } else {
            s.error = "route not determined yet"
        }
        if modemsEnabled {
            var states: [ModemState] = []
            var health = SourceHealth.ok
            var anyAvailable = false
            for name in modemOrder {
                guard let (h, st) = modemParts[name] else { continue }
                states.append(contentsOf: st)
                if h.available { anyAvailable = true } else if health.available { health = h }
            }
            if modemOrder.isEmpty { health = SourceHealth(available: false, reason: "not read yet") }
            s.wwanSource = anyAvailable ? .ok : health
            s.wwan = states
        } else {
            s.wwanSource = SourceHealth(available: false, reason: "disabled in the configuration")
        }
        if wifiEnabled {
            s.wifiSource = wifiPart?.0 ?? SourceHealth(available: false, reason: "not read yet")
            s.wifi = wifiPart?.1 ?? []
        } else {
            s.wifiSource = SourceHealth(available: false, reason: "disabled in the configuration")
        }
        // Validation on: pending (an empty part) until the source's first answer.
        if validationEnabled { s.validation = validationPart ?? ValidationPart() }
        s.derive()
        return s
    }
}
