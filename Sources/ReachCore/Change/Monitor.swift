// Continuous monitoring of one target, as a value: the latest part of each source, the change detector, the
// start-up grace and the report cadence. Like `ChangeDetector` it never reads a clock and never sleeps: time comes
// in with each input, and `nextDeadline` says when the next `tick` has work. What it decides comes out as events;
// who hears them (a notify block, a report log, a metrics file) is not its business.
//
//     var engine = MonitorEngine(target: .defaultRoute, settings: settings, expecting: [.route, .wifi], at: t0)
//     engine.receive(.route(view), at: t1)          // [] — WiFi has not answered yet, the grace is still running
//     engine.receive(.wifi(.ok, links), at: t2)     // [start]
//     engine.receive(.route(lost), at: t3)          // [] — a loss, held down
//     engine.receive(.tick, at: t3 + holdDown)      // [change]

/// A moment, as the engine needs it: monotonic time for hold-down and cadence, wall time for the snapshot.
public struct MonitorTime: Sendable, Equatable {
    /// Since any fixed origin (the runner's clock).
    public var monotonic: Duration
    public var wall: Timestamp

    public init(monotonic: Duration, wall: Timestamp) {
        self.monotonic = monotonic
        self.wall = wall
    }
}

/// A source whose first answer the first event waits for.
public enum MonitorSource: Hashable, Sendable, CustomStringConvertible {
    case route
    /// One modem source, by its name (a control port, or "discovery").
    case modem(String)
    case wifi
    /// The validation rounds (only when validation is on).
    case validation

    public var description: String {
        switch self {
        case .route: return "route"
        case let .modem(name): return "modem:" + name
        case .wifi: return "wifi"
        case .validation: return "validation"
        }
    }
}

/// What the engine is told.
public enum MonitorInput: Sendable, Equatable {
    /// The route part, computed again after a kernel notice.
    case route(RouteView)
    /// One modem source's latest answer.
    case modems(source: String, SourceHealth, [ModemState])
    /// A modem source is no longer watched (a reconfiguration): its modems leave the snapshot.
    case modemSourceRemoved(String)
    /// The WiFi source's latest answer.
    case wifi(SourceHealth, [WiFiLink])
    /// The validation source's latest part (every uplink's reading).
    case validation(ValidationPart)
    /// Time has passed: the grace, a hold-down or the report interval may have ended.
    case tick
    /// New settings (a reconfiguration); the reported view and any hold in progress are kept.
    case configure(MonitorSettings)
    /// The last events: one `stop` (after a `start` if there was none yet); nothing follows.
    case stop(reason: String)
}

public struct MonitorSettings: Sendable, Equatable {
    public var policy: ChangePolicy
    /// How long the first event waits for sources that have not answered.
    public var startupGrace: Duration
    /// A `periodic` event this often after the start; nil: none.
    public var reportInterval: Duration?
    /// Whether the modem and WiFi sources are on: when off, `sources.*` says `disabled`.
    public var modemsEnabled: Bool
    public var wifiEnabled: Bool
    /// YYReachability's `allowWWAN`; nil: the target's (see `Snapshot.assemble`).
    public var allowWWAN: Bool?
    /// How the modems' bars are graded: every snapshot carries it (`bars`, `bars_profile`, the bar hysteresis).
    public var signalPolicy: SignalPolicy
    /// Whether this engine reports the uplinks' changes (`ChangeDetector.tracksUplinks`), their validation's
    /// included: when several engines watch one gateway, one of them does (`UplinkChangeTracker.reportingTarget`).
    public var tracksUplinks: Bool
    /// Whether validation is on: the snapshot then carries its part (pending, empty, until the first one).
    public var validationEnabled: Bool

    public init(
        policy: ChangePolicy = .standard, startupGrace: Duration = .seconds(16), reportInterval: Duration? = nil,
        modemsEnabled: Bool = true, wifiEnabled: Bool = true, allowWWAN: Bool? = nil, signalPolicy: SignalPolicy = .android,
        tracksUplinks: Bool = true, validationEnabled: Bool = false
    ) {
        self.policy = policy
        self.startupGrace = startupGrace
        self.reportInterval = reportInterval
        self.modemsEnabled = modemsEnabled
        self.wifiEnabled = wifiEnabled
        self.allowWWAN = allowWWAN
        self.signalPolicy = signalPolicy
        self.tracksUplinks = tracksUplinks
        self.validationEnabled = validationEnabled
    }
}

/// One thing worth telling: the report line types of the agent, with everything a listener needs to act on it
/// without asking the engine again.
public struct MonitorEvent: Sendable, Equatable {
    public var kind: ReportEventType
    /// The snapshot at this moment (for a change whose hold-down ended: the parts as they were, the time now).
    public var snapshot: Snapshot
    /// `start`: the first determination (`initial`); `change`: what changed and why.
    public var change: ChangeEvent?
    /// `start` and `stop`: why the event was sent.
    public var reason: String?
    /// The debounced values reported so far (the bars a report line shows).
    public var reported: ReportedView?
    /// Fields whose worse value is being held down now.
    public var held: [ChangeField]

    public init(
        kind: ReportEventType, snapshot: Snapshot, change: ChangeEvent? = nil, reason: String? = nil,
        reported: ReportedView? = nil, held: [ChangeField] = []
    ) {
        self.kind = kind
        self.snapshot = snapshot
        self.change = change
        self.reason = reason
        self.reported = reported
        self.held = held
    }

    /// Whether the event reports a change (the first determination included): what `notify` and `updates` carry.
    public var isReportedChange: Bool { kind == .start || kind == .change }
}

/// The monitoring of one target.
public struct MonitorEngine: Sendable {
    public enum Phase: Sendable, Equatable {
        /// Before the first event: waiting for the sources, at most until the deadline.
        case waiting(until: Duration)
        case running
        case stopped
    }

    public let target: Target
    public private(set) var settings: MonitorSettings
    public private(set) var phase: Phase
    /// The latest snapshot assembled (after every input); nil before the first input.
    public private(set) var latest: Snapshot?
    public private(set) var detector: ChangeDetector
    /// Sources not heard from yet.
    public private(set) var expecting: Set<MonitorSource>
    /// When each kind of source was last heard from (wall time): "route", "wwan" (any modem source), "wifi".
    public private(set) var heard: [String: Timestamp] = [:]

    private var route: RouteView?
    private var modemOrder: [String] = []
    private var modemParts: [String: (SourceHealth, [ModemState])] = [:]
    private var wifiPart: (SourceHealth, [WiFiLink])?
    private var validationPart: ValidationPart?
    private var nextPeriodic: Duration?
    /// Modem pieces being gathered (`ChangePolicy.modemSettle`): when the first and the latest arrived. What changed
    /// is judged once the modems are quiet, or a hold-down after the first piece, whichever is sooner.
    private var gathering: (first: Duration, last: Duration)?

    /// - Parameters:
    ///   - expecting: the sources whose first answer the `start` event waits for (at most `startupGrace`).
    ///   - at: when monitoring began (monotonic).
    public init(target: Target, settings: MonitorSettings, expecting: Set<MonitorSource>, at start: Duration) {
        self.target = target
        self.settings = settings
        self.expecting = expecting
        self.detector = ChangeDetector(policy: settings.policy, tracksUplinks: settings.tracksUplinks)
        self.phase = .waiting(until: start + settings.startupGrace)
    }

    /// When `tick` has work next: the end of the grace, of a hold-down, or the next periodic event.
    public var nextDeadline: Duration? {
        switch phase {
        case let .waiting(until): return until
        case .stopped: return nil
        case .running:
            return [detector.nextDeadline, nextPeriodic, settled].compactMap { $0 }.min()
        }
    }

    /// When the modem pieces being gathered are judged.
    private var settled: Duration? {
        gathering.map { min($0.last + settings.policy.modemSettle, $0.first + settings.policy.holdDown) }
    }

    /// Applies one input at `time`; returns what is to be told, in order.
    public mutating func receive(_ input: MonitorInput, at time: MonitorTime) -> [MonitorEvent] {
        if phase == .stopped { return [] }
        switch input {
        case let .route(view):
            route = view
            expecting.remove(.route)
            heard["route"] = time.wall
        case let .modems(source, health, states):
            if modemParts[source] == nil { modemOrder.append(source) }
            modemParts[source] = (health, states)
            expecting.remove(.modem(source))
            heard["wwan"] = time.wall
            if phase == .running && settings.policy.modemSettle > .zero {
                gathering = (gathering?.first ?? time.monotonic, time.monotonic)
            }
        case let .modemSourceRemoved(source):
            modemParts[source] = nil
            modemOrder.removeAll { $0 == source }
            expecting.remove(.modem(source))
        case let .wifi(health, links):
            wifiPart = (health, links)
            expecting.remove(.wifi)
            heard["wifi"] = time.wall
        case let .validation(part):
            validationPart = part
            expecting.remove(.validation)
        case .tick:
            return tick(time)
        case let .configure(new):
            return configure(new, time)
        case let .stop(reason):
            var events: [MonitorEvent] = []
            if case .waiting = phase { events += start(time) }
            events.append(event(.stop, assemble(time), reason: reason))
            phase = .stopped
            return events
        }
        return partsChanged(time)
    }

    /// After a part changed: the first event once every source answered, else what the detector makes of it.
    private mutating func partsChanged(_ time: MonitorTime) -> [MonitorEvent] {
        let s = assemble(time)
        latest = s
        switch phase {
        case .waiting:
            return expecting.isEmpty ? start(time) : []
        case .running:
            // While modem pieces are gathered, every part waits with them (a route change judged now would meet a
            // modem told only halfway).
            if gathering != nil { return [] }
            guard let e = detector.observe(s, at: time.monotonic) else { return [] }
            return [event(.change, s, change: e)]
        case .stopped:
            return []
        }
    }

    /// The snapshot of the parts as they are, at `time`.
    public func assemble(_ time: MonitorTime) -> Snapshot {
        Snapshot.assemble(
            target: target, time: time.wall, route: route,
            modems: settings.modemsEnabled ? .merging(modemOrder.compactMap { modemParts[$0] }) : .disabled,
            wifi: settings.wifiEnabled ? (wifiPart.map { .read($0.0, $0.1) } ?? .pending) : .disabled,
            allowWWAN: settings.allowWWAN, signalPolicy: settings.signalPolicy,
            validation: settings.validationEnabled ? (validationPart ?? ValidationPart()) : nil)
    }

    private mutating func start(_ time: MonitorTime) -> [MonitorEvent] {
        phase = .running
        let s = assemble(time)
        latest = s
        let e = detector.observe(s, at: time.monotonic)
        nextPeriodic = settings.reportInterval.map { time.monotonic + $0 }
        return [event(.start, s, change: e, reason: e?.reason)]
    }

    private mutating func tick(_ time: MonitorTime) -> [MonitorEvent] {
        switch phase {
        case .stopped:
            return []
        case let .waiting(until):
            return time.monotonic >= until ? start(time) : []
        case .running:
            break
        }
        var events: [MonitorEvent] = []
        if let due = settled, time.monotonic >= due {
            gathering = nil
            let s = assemble(time)
            latest = s
            if let e = detector.observe(s, at: time.monotonic) { events.append(event(.change, s, change: e)) }
        }
        if let e = detector.tick(at: time.monotonic) {
            // The parts are those the detector saw last; only the time is new.
            let s = assemble(time)
            latest = s
            events.append(event(.change, s, change: e))
        }
        if let interval = settings.reportInterval, var next = nextPeriodic, time.monotonic >= next {
            let s = assemble(time)
            latest = s
            events.append(event(.periodic, s))
            while next <= time.monotonic { next += interval }
            nextPeriodic = next
        }
        return events
    }

    private mutating func configure(_ new: MonitorSettings, _ time: MonitorTime) -> [MonitorEvent] {
        let old = settings
        settings = new
        detector.update(policy: new.policy)
        detector.update(tracksUplinks: new.tracksUplinks)
        if case let .waiting(until) = phase, new.startupGrace != old.startupGrace {
            phase = .waiting(until: until - old.startupGrace + new.startupGrace)
        }
        if new.reportInterval != old.reportInterval, case .running = phase {
            nextPeriodic = new.reportInterval.map { time.monotonic + $0 }
        }
        if !new.modemsEnabled {
            modemParts = [:]
            modemOrder = []
            expecting = expecting.filter { if case .modem = $0 { return false } else { return true } }
        }
        if !new.wifiEnabled {
            wifiPart = nil
            expecting.remove(.wifi)
        }
        if !new.modemsEnabled { heard["wwan"] = nil }
        if !new.wifiEnabled { heard["wifi"] = nil }
        if !new.validationEnabled {
            validationPart = nil
            expecting.remove(.validation)
        }
        guard new.modemsEnabled != old.modemsEnabled || new.wifiEnabled != old.wifiEnabled
            || new.allowWWAN != old.allowWWAN || new.signalPolicy != old.signalPolicy
            || new.validationEnabled != old.validationEnabled
        else { return [] }
        // A source switched on or off, or bars graded anew, change the snapshot itself: at once, not at the next part.
        return partsChanged(time)
    }

    /// Adds a source to wait for before the first event (a source added by a reconfiguration while waiting).
    public mutating func expect(_ source: MonitorSource) {
        if case .waiting = phase { expecting.insert(source) }
    }

    private func event(_ kind: ReportEventType, _ s: Snapshot, change: ChangeEvent? = nil, reason: String? = nil)
        -> MonitorEvent
    {
        MonitorEvent(kind: kind, snapshot: s, change: change, reason: reason, reported: detector.view, held: detector.held)
    }
}

extension ReportLine {
    /// The report line of an event: the snapshot's schema-1 JSON with the reported bars, then `event` numbered `seq`.
    public static func json(_ e: MonitorEvent, seq: UInt64, showIdentifiers: Bool = false) -> JSON {
        let event = ReportLine.event(e.kind, seq: seq, change: e.change, held: e.held, reason: e.reason)
        return json(snapshot: e.snapshot, view: e.reported, event: event, showIdentifiers: showIdentifiers)
    }
}
