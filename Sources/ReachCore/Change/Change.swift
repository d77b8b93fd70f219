// Change detection: which changes of a stream of snapshots are worth one notification, exactly once.
//
// The peers' complaints (their issue trackers) are duplicates (a callback per registration, AFNetworking #4302) and
// flapping (a notReachable→reachable pair on every reconnect, Alamofire #2707). The rules here:
// - A field is reported when its value differs from the last *reported* value, never because a source spoke again:
//   the same state delivered twice is no change.
// - A change to a better or a sideways state (none→wifi, wifi→wwan, 3→4 bars) is reported at once.
// - A change to a worse state (reachable→not, any status→none, 5g→4g, fewer bars, a link gone) is held down for
//   `holdDown`: it is reported only if it still holds when the hold-down ends, so a short loss that comes back is
//   never reported at all. The kernel tells us at once; we wait on purpose, and only for losses.
// - So is a modem's radio gain (generation, bars) while that modem still blocks the route (`ModemCheck.blocked`): a
//   recovery arrives in pieces, and the piece that completes it within the hold-down makes one line of them all.
// - Bars move only when the signal crosses a bar boundary by `barHysteresisDB` (see `BarThresholds.level(_:bias:)`),
//   so a signal sitting on a boundary does not toggle between two bar counts. Modem bars use the snapshot's
//   signal policy (`ModemState.bars(_:bias:)`).
//
// Pure: time comes in as a monotonic `Duration` since any fixed origin (the agent uses its ContinuousClock, tests a
// manual clock), so nothing here sleeps or reads a clock.

/// How changes are debounced.
public struct ChangePolicy: Sendable, Equatable {
    /// How long a transition to a worse state must last before it is reported.
    public var holdDown: Duration
    /// How far (dB) the signal must cross a bar boundary before the bars change.
    public var barHysteresisDB: Double

    public init(holdDown: Duration, barHysteresisDB: Double) {
        self.holdDown = holdDown
        self.barHysteresisDB = barHysteresisDB
    }

    /// The defaults of config/reach.json; docs/how-it-works.md ("Change detection") justifies them.
    public static let standard = ChangePolicy(holdDown: Defaults.duration(Defaults.holdDownSeconds), barHysteresisDB: Defaults.barHysteresisDB)
    /// How long the modems must have been quiet before what they said is judged (`MonitorEngine`): a modem tells
    /// one event in pieces (registration, attach, data session, signal: one indication each, milliseconds apart),
    /// and each piece judged alone would be a line of its own. Never longer than the hold-down; zero without one.
    public var modemSettle: Duration { min(holdDown, .milliseconds(500)) }

    /// Every change at once, no hysteresis: what a plain "diff the snapshots" would do.
    public static let immediate = ChangePolicy(holdDown: .zero, barHysteresisDB: 0)
}

/// A top-level field the detector tracks; the raw value is the report key.
public enum ChangeField: String, Sendable, CaseIterable, Comparable {
    case status, medium
    case wwanStatus = "wwan_status"
    /// The route's underlay chain ("vx0 → wwan0"): a tunnel that moves to another link is a change.
    case reachable, underlay, bars
    /// Some uplink's reachability or primary changed (`UplinkChange.swift`).
    case uplinks
    /// Some uplink's validation state changed (`ValidationChange.swift`).
    case validation

    public static func < (a: ChangeField, b: ChangeField) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// A link whose bars are tracked: a modem (by control port) or a WiFi interface.
public struct LinkKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Kind: String, Sendable, Comparable {
        case wwan, wifi
        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue > b.rawValue }  // wwan first
    }

    public var kind: Kind
    public var name: String

    public init(_ kind: Kind, _ name: String) {
        self.kind = kind
        self.name = name
    }

    public static func < (a: LinkKey, b: LinkKey) -> Bool { (a.kind, a.name) < (b.kind, b.name) }
    public var description: String { "\(kind.rawValue):\(name)" }
}

/// The debounced values last reported.
public struct ReportedView: Sendable, Equatable {
    public var status: ReachabilityStatus
    public var medium: Medium
    public var wwanStatus: Generation
    public var reachable: Bool
    public var bars: [LinkKey: Int]
    /// The route's chain when it has an underlay ("vx0 → wwan0"), nil when it leaves through its own link.
    public var underlay: String?
    /// Each uplink's reported reachability and primary, by interface.
    public var uplinks: [String: UplinkView]
    /// Each uplink's reported validation state, by interface (only uplinks with a verdict).
    public var validation: [String: ValidationState] = [:]

    public init(
        status: ReachabilityStatus, medium: Medium, wwanStatus: Generation, reachable: Bool, bars: [LinkKey: Int],
        uplinks: [String: UplinkView] = [:], underlay: String? = nil
    ) {
        self.status = status
        self.medium = medium
        self.wwanStatus = wwanStatus
        self.reachable = reachable
        self.bars = bars
        self.uplinks = uplinks
        self.underlay = underlay
    }
}

/// A link's bars that changed; nil `from`: the link appeared; nil `to`: it is gone.
public struct BarChange: Sendable, Equatable {
    public var link: LinkKey
    public var from: Int?
    public var to: Int?
}

/// One reported change.
public struct ChangeEvent: Sendable, Equatable {
    /// The first determination (the view was empty); `changed` then lists every field.
    public var initial: Bool
    public var changed: [ChangeField]
    public var bars: [BarChange]
    public var previous: ReportedView?
    public var current: ReportedView
    /// Why, in a few words ("route via wlan1 lost carrier").
    public var reason: String
    /// The uplinks whose reported view changed (on the initial event: every uplink, appearing).
    public var uplinks: [UplinkChange] = []
    /// The uplinks whose validation state changed.
    public var validation: [ValidationChange] = []
}

/// The change detector of one target. A value type: copy it, table-test it.
public struct ChangeDetector: Sendable {
    private enum Key: Hashable {
        case field(ChangeField)
        case link(LinkKey)
    }

    public private(set) var policy: ChangePolicy
    /// What was last reported; nil before the first snapshot.
    public private(set) var view: ReportedView?
    /// The latest snapshot observed.
    public private(set) var latest: Snapshot?
    /// The snapshot at the last reported change (what the reason compares against).
    private var reportedSnapshot: Snapshot?
    /// Worse values being held down, with the time the hold began.
    private var pending: [Key: Duration] = [:]
    /// The same rules for each uplink.
    private var uplinkTracker = UplinkChangeTracker()
    /// Whether this detector reports uplink changes. The uplinks are the same in every target's snapshot, so a
    /// monitor of several targets lets one detector report them (`UplinkChangeTracker.reportingTarget`), once.
    public private(set) var tracksUplinks: Bool

    public init(policy: ChangePolicy = .standard, tracksUplinks: Bool = true) {
        self.policy = policy
        self.tracksUplinks = tracksUplinks
    }

    private func uplinkViews(_ s: Snapshot) -> [String: UplinkView] {
        tracksUplinks ? UplinkChangeTracker.candidates(s) : [:]
    }

    /// A new policy (config reload); the reported view and any hold in progress are kept.
    public mutating func update(policy: ChangePolicy) { self.policy = policy }

    /// Takes over or hands off the reporting of uplink changes (a reload changed the targets, and with them which
    /// one reports the uplinks). Taking over counts the uplinks as they are in the latest snapshot as reported, so
    /// only what changes afterwards is a line (what the previous reporter said is not said again); handing off forgets
    /// them, holds included.
    public mutating func update(tracksUplinks on: Bool) {
        guard on != tracksUplinks else { return }
        tracksUplinks = on
        uplinkTracker = UplinkChangeTracker()
        guard var v = view else { return }
        v.uplinks = on ? (latest ?? reportedSnapshot).map(UplinkChangeTracker.candidates) ?? [:] : [:]
        view = v
    }

    /// When a hold-down ends, if one is in progress: call `tick(at:)` then.
    public var nextDeadline: Duration? {
        (Array(pending.values) + [uplinkTracker.earliestHold].compactMap { $0 }).min().map { $0 + policy.holdDown }
    }

    /// Fields (and "bars" for links) whose worse value is being held down now.
    public var held: [ChangeField] {
        var fields = Set<ChangeField>()
        for key in pending.keys {
            switch key {
            case let .field(f): fields.insert(f)
            case .link: fields.insert(.bars)
            }
        }
        if uplinkTracker.holding { fields.insert(.uplinks) }
        return fields.sorted()
    }

    /// The debounced bars of a link, or nil when the link is not tracked.
    public func bars(_ link: LinkKey) -> Int? { view?.bars[link] }

    /// Feeds a snapshot observed at `now`; returns the change to report, if any.
    public mutating func observe(_ snapshot: Snapshot, at now: Duration) -> ChangeEvent? {
        latest = snapshot
        guard view != nil else {
            var v = ReportedView(
                status: snapshot.status, medium: snapshot.medium, wwanStatus: snapshot.wwanStatus,
                reachable: snapshot.reachable, bars: Self.rawBars(snapshot),
                uplinks: uplinkViews(snapshot), underlay: snapshot.underlayNames)
            if tracksUplinks { v.validation = ValidationChangeTracker.evaluate(reported: [:], snapshot).views }
            view = v
            reportedSnapshot = snapshot
            return ChangeEvent(
                initial: true, changed: ChangeField.allCases,
                bars: v.bars.sorted { $0.key < $1.key }.map { BarChange(link: $0.key, from: nil, to: $0.value) },
                previous: nil, current: v, reason: "first determination",
                uplinks: snapshot.uplinks.compactMap { u in
                    v.uplinks[u.interface].map { UplinkChange(interface: u.interface, from: nil, to: $0) }
                })
        }
        return evaluate(at: now)
    }

    /// Re-evaluates the latest snapshot at `now`: reports a held-down change whose hold has ended.
    public mutating func tick(at now: Duration) -> ChangeEvent? {
        guard view != nil, latest != nil else { return nil }
        return evaluate(at: now)
    }

    private mutating func evaluate(at now: Duration) -> ChangeEvent? {
        guard var v = view, let s = latest else { return nil }
        let before = v
        var changed: [ChangeField] = []
        var barChanges: [BarChange] = []

        /// Applies the candidate of one key: at once when not worse, after the hold-down when worse.
        func settle(_ key: Key, same: Bool, worse: Bool) -> Bool {
            if same {
                pending[key] = nil
                return false
            }
            if !worse {
                pending[key] = nil
                return true
            }
            let since = pending[key] ?? now
            if now - since >= policy.holdDown {
                pending[key] = nil
                return true
            }
            pending[key] = since
            return false
        }

        if settle(.field(.status), same: s.status == v.status, worse: Self.isWorse(s.status, than: v.status)) {
            v.status = s.status
            changed.append(.status)
        }
        if settle(.field(.medium), same: s.medium == v.medium, worse: s.medium == .none) {
            v.medium = s.medium
            changed.append(.medium)
        }
        // A modem announces a recovery in pieces (registration, then attach, then its data session, each its own
        // indication a few milliseconds apart). While the modem behind the route still blocks it, what its radio
        // gained is held like a loss: the rest of the recovery, arriving within the hold-down, makes one line with
        // it, instead of a line per piece and one of them a transient "not reachable".
        let modemMidway = s.modemCheck?.result == .blocked
        if settle(
            .field(.wwanStatus), same: s.wwanStatus == v.wwanStatus, worse: s.wwanStatus < v.wwanStatus || modemMidway)
        {
            v.wwanStatus = s.wwanStatus
            changed.append(.wwanStatus)
        }
        if settle(.field(.reachable), same: s.reachable == v.reachable, worse: !s.reachable) {
            v.reachable = s.reachable
            changed.append(.reachable)
        }
        // An underlay that moves while packets still leave is reported at once; one that goes with the reachability
        // waits out the same hold-down as the loss.
        if settle(.field(.underlay), same: s.underlayNames == v.underlay, worse: !s.reachable) {
            v.underlay = s.underlayNames
            changed.append(.underlay)
        }

        let links = Self.links(s, reported: v.bars, h: policy.barHysteresisDB)
        for key in Set(links.keys).union(v.bars.keys).sorted() {
            let reported = v.bars[key]
            let candidate = links[key]
            let worse: Bool
            switch (reported, candidate) {
            case let (r?, c?): worse = c < r || (modemMidway && key.kind == .wwan)
            case (_?, nil): worse = true
            default: worse = false
            }
            if settle(.link(key), same: reported == candidate, worse: worse) {
                v.bars[key] = candidate
                barChanges.append(BarChange(link: key, from: reported, to: candidate))
            }
        }
        if !barChanges.isEmpty { changed.append(.bars) }

        let (newUplinks, uplinkChanges) = uplinkTracker.evaluate(
            reported: v.uplinks, current: uplinkViews(s), holdDown: policy.holdDown, at: now)
        if !uplinkChanges.isEmpty {
            v.uplinks = newUplinks
            changed.append(.uplinks)
        }

        let (newValidation, validationChanges) =
            tracksUplinks ? ValidationChangeTracker.evaluate(reported: v.validation, s) : (v.validation, [])
        v.validation = newValidation  // also when an uplink was only forgotten (gone: no line)
        if !validationChanges.isEmpty { changed.append(.validation) }

        guard !changed.isEmpty else {
            view?.validation = newValidation
            return nil
        }
        view = v
        let reason = ChangeReason.describe(
            from: reportedSnapshot, to: s, changed: changed, bars: barChanges, previous: before, current: v,
            uplinks: uplinkChanges, validation: validationChanges)
        reportedSnapshot = s
        return ChangeEvent(
            initial: false, changed: changed, bars: barChanges, previous: before, current: v, reason: reason,
            uplinks: uplinkChanges, validation: validationChanges)
    }

    /// Loss of reachability in YY terms: any status to none, and anything to unknown (the route could no longer be
    /// determined). A first determination (from unknown) and wwan↔wifi are not worse.
    static func isWorse(_ new: ReachabilityStatus, than old: ReachabilityStatus) -> Bool {
        switch (old, new) {
        case (.unknown, _): return false
        case (_, .unknown): return true
        case (.none, _): return false
        case (_, .none): return true
        default: return false
        }
    }

    /// Each link of a snapshot with its candidate bars, given the reported bars and the hysteresis.
    private static func links(_ s: Snapshot, reported: [LinkKey: Int], h: Double) -> [LinkKey: Int] {
        var out: [LinkKey: Int] = [:]
        for m in s.wwan {
            let key = LinkKey(.wwan, m.device)
            out[key] = hysteresis(reported: reported[key], h: h) { m.bars(s.signalPolicy, bias: $0) }
        }
        for w in s.wifi {
            let key = LinkKey(.wifi, w.interface)
            out[key] = hysteresis(reported: reported[key], h: h) { w.bars(bias: $0) }
        }
        return out
    }

    static func rawBars(_ s: Snapshot) -> [LinkKey: Int] {
        var out: [LinkKey: Int] = [:]
        for m in s.wwan { out[LinkKey(.wwan, m.device)] = m.bars(s.signalPolicy) }
        for w in s.wifi { out[LinkKey(.wifi, w.interface)] = w.bars }
        return out
    }

    /// The bars to report for a link whose plain bars are `bars(0)`: up only if the value clears the higher boundary by
    /// `h` dB (`bars(+h)`), down only if it falls `h` dB below the lower one (`bars(-h)`); otherwise unchanged.
    static func hysteresis(reported: Int?, h: Double, _ bars: (Double) -> Int) -> Int {
        let raw = bars(0)
        guard let reported, h > 0 else { return raw }
        if raw > reported { return max(reported, bars(h)) }
        if raw < reported { return min(reported, bars(-h)) }
        return reported
    }
}

extension WiFiLink {
    /// Bars with every threshold raised by `bias` dB; `bars(bias: 0)` equals `bars`.
    public func bars(bias: Double) -> Int {
        guard associated, let s = barSignalDBm else { return 0 }
        return SignalBars.wifi(rssi: Double(s), bias: bias)
    }
}

// MARK: - Reasons

/// A few words saying why a change happened, from the snapshot at the last reported change and the new one.
public enum ChangeReason {
    /// `previous`/`current`: the reported views around the change. A field held down may have changed in a snapshot
    /// before the last reported one, so its transition is named from the views when the snapshots do not show it.
    public static func describe(
        from old: Snapshot?, to new: Snapshot, changed: [ChangeField], bars: [BarChange],
        previous: ReportedView? = nil, current: ReportedView? = nil, uplinks: [UplinkChange] = [],
        validation: [ValidationChange] = []
    ) -> String {
        var parts: [String] = []
        if let r = routeReason(old?.route, new.route, error: new.error, oldError: old?.error) { parts.append(r) }
        parts.append(contentsOf: uplinkReasons(uplinks, new))
        parts.append(contentsOf: validationReasons(validation, new))
        let oldModems = Dictionary((old?.wwan ?? []).map { ($0.device, $0) }, uniquingKeysWith: { a, _ in a })
        for m in new.wwan {
            parts.append(contentsOf: modemReasons(oldModems[m.device], m))
        }
        if let c = modemCheckReason(old?.modemCheck, new.modemCheck) { parts.append(c) }
        let oldWiFi = Dictionary((old?.wifi ?? []).map { ($0.interface, $0) }, uniquingKeysWith: { a, _ in a })
        for w in new.wifi {
            parts.append(contentsOf: wifiReasons(oldWiFi[w.interface], w))
        }
        let newLinks = Set(new.wwan.map { LinkKey(.wwan, $0.device) } + new.wifi.map { LinkKey(.wifi, $0.interface) })
        for b in bars {
            if b.to == nil || !newLinks.contains(b.link) {
                parts.append("\(b.link.name) gone")
            } else if let from = b.from, let to = b.to {
                var text = "\(b.link.name) \(from)→\(to) bars"
                if b.link.kind == .wifi, let dBm = new.wifi.first(where: { $0.interface == b.link.name })?.barSignalDBm {
                    text += " (\(dBm) dBm)"
                }
                parts.append(text)
            } else if let to = b.to {
                parts.append("\(b.link.name) appeared with \(to) bars")
            }
        }
        if let previous, let current {
            let transitions: [(ChangeField, String, String, String)] = [
                (.wwanStatus, "wwan", previous.wwanStatus.name, current.wwanStatus.name),
                // The medium before YYReachability's status: "medium wifi→ethernet" is what an installer reads;
                // the status (whose "wifi" covers Ethernet) only when the medium did not change, named as iOS's.
                (.medium, "medium", previous.medium.rawValue, current.medium.rawValue),
                (.status, "iOS status", previous.status.rawValue, current.status.rawValue),
            ]
            for (field, label, from, to) in transitions where changed.contains(field) {
                let arrow = "\(from)→\(to)"
                if field == .wwanStatus ? !parts.contains(where: { $0.contains(text: arrow) }) : parts.isEmpty {
                    parts.append("\(label) \(arrow)")
                }
            }
        }
        var seen = Set<String>()
        parts = parts.filter { seen.insert($0).inserted }
        if parts.isEmpty {
            return changed.map(\.rawValue).joined(separator: ", ") + " changed"
        }
        return parts.joined(separator: "; ")
    }

    static func routeReason(_ old: RouteLookup?, _ new: RouteLookup?, error: String?, oldError: String?) -> String? {
        if let error, error != oldError { return "route lookup failed: \(error)" }
        let oldIf = old?.link?.name
        let newIf = new?.link?.name
        switch (old, new) {
        case (nil, nil):
            return nil
        case let (o?, nil):
            return o.link.map { "route via \($0.name) removed" } ?? "route removed"
        case let (nil, n?):
            if n.type != .unicast && n.type != .local { return "route is \(n.typeName)" }
            return n.link.map { "route via \($0.name) appeared" } ?? "route appeared"
        case let (o?, n?):
            if n.type != o.type, n.type != .unicast { return "route is \(n.typeName)" }
            if oldIf != newIf {
                if let newIf { return oldIf.map { "route moved from \($0) to \(newIf)" } ?? "route now via \(newIf)" }
                return "route has no interface"
            }
            guard let ol = o.link, let nl = n.link else { return nil }
            if let reason = underlayReason(o.underlay, n.underlay) { return reason }
            if ol.adminUp && !nl.adminUp { return "route via \(nl.name): interface set down" }
            if !ol.adminUp && nl.adminUp { return "route via \(nl.name): interface set up" }
            if ol.carrier && !nl.carrier { return "route via \(nl.name) lost carrier" }
            if !ol.carrier && nl.carrier { return "route via \(nl.name) regained carrier" }
            if ol.kind != nl.kind { return "\(nl.name) is now \(nl.kind.rawValue)" }
            if o.gateway != n.gateway { return "gateway of \(nl.name) changed" }
            return nil
        }
    }

    /// What changed below the route's link: the chain moved, a lower link lost or regained carrier, the walk hit or
    /// cleared a problem.
    static func underlayReason(_ old: UnderlayChain?, _ new: UnderlayChain?) -> String? {
        let top = new?.hops.first?.link.name ?? old?.hops.first?.link.name ?? "?"
        let oldBottom = old?.underlay?.link.name
        let newBottom = new?.underlay?.link.name
        if old?.names != new?.names, oldBottom != nil || newBottom != nil {
            switch (oldBottom, newBottom) {
            case let (o?, n?): return "\(top): underlay moved from \(o) to \(n)"
            case let (nil, n?): return "\(top) now rides on \(n)"
            case let (o?, nil): return "\(top) no longer rides on \(o)" + (new?.problem.map { " (\($0))" } ?? "")
            default: return nil
            }
        }
        guard let old, let new else { return nil }
        for (o, n) in zip(old.hops.dropFirst(), new.hops.dropFirst()) where o.link.name == n.link.name {
            if o.link.adminUp && !n.link.adminUp { return "\(top): underlay \(n.link.name) set down" }
            if !o.link.adminUp && n.link.adminUp { return "\(top): underlay \(n.link.name) set up" }
            if o.link.carrier && !n.link.carrier { return "\(top): underlay \(n.link.name) lost carrier" }
            if !o.link.carrier && n.link.carrier { return "\(top): underlay \(n.link.name) regained carrier" }
        }
        if let problem = new.problem, problem != old.problem { return problem }
        if old.problem != nil && new.problem == nil { return "\(top): underlay \(new.names) restored" }
        return nil
    }

    static func modemReasons(_ old: ModemState?, _ new: ModemState) -> [String] {
        let name = new.device
        guard let old else { return ["modem \(name) appeared"] }
        var out: [String] = []
        if old.present && !new.present { out.append("modem \(name) vanished") }
        if !old.present && new.present { out.append("modem \(name) is back") }
        if old.sim != new.sim { out.append("\(name) SIM \(old.sim.rawValue)→\(new.sim.rawValue)") }
        if old.registration != new.registration {
            var text = "\(name) registration \(old.registration.rawValue)→\(new.registration.rawValue)"
            if let cause = new.rejectCause, new.registration == .denied { text += " (reject cause \(cause))" }
            out.append(text)
        }
        if old.generation != new.generation { out.append("\(name) \(old.generation.name)→\(new.generation.name)") }
        if old.packetService != new.packetService, let ps = new.packetService {
            out.append("\(name) packet service \(old.packetService?.rawValue ?? "unknown")→\(ps.rawValue)")
        }
        if old.dataSession != new.dataSession {
            let from = old.dataSession?.rawValue ?? "none", to = new.dataSession?.rawValue ?? "none"
            out.append("\(name) data session \(from)→\(to)")
        }
        return out
    }

    /// What the modem behind the route now says, when that changed: the blocking reason, or that it clears.
    static func modemCheckReason(_ old: ModemCheck?, _ new: ModemCheck?) -> String? {
        guard let new, old?.result != new.result || old?.reason != new.reason else { return nil }
        switch new.result {
        case .blocked: return new.reason
        case .ok: return old?.result == .blocked ? "\(new.interface): the modem carries packets again" : nil
        case .unknown: return old?.result == .blocked ? new.reason.map { "\($0); the route's answer stands" } : nil
        }
    }

    static func wifiReasons(_ old: WiFiLink?, _ new: WiFiLink) -> [String] {
        guard let old else { return ["\(new.interface) appeared"] }
        if old.associated && !new.associated { return ["\(new.interface) disassociated"] }
        if !old.associated && new.associated {
            return ["\(new.interface) associated" + (new.ssid.map { " to \"\($0)\"" } ?? "")]
        }
        if old.bssid != nil, new.bssid != nil, old.bssid != new.bssid { return ["\(new.interface) roamed"] }
        return []
    }
}
