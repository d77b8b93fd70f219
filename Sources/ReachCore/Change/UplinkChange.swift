// Change detection per uplink: the rules of `ChangeDetector` (Change.swift) applied to each uplink on its own, so a
// backup that dies while the primary carries on is reported, once, naming the uplink.
//
// - An uplink's state is `reachable`, `not reachable` or absent (no default route and not configured). A change to a
//   lower state (reachable → not, any → gone) is held down for the policy's hold-down, per uplink; a rise (an uplink
//   appearing, coming back) is reported at once.
// - `primary` moves at once (the kernel moved the default route; the main answer reports that at once too), except
//   on an uplink whose own loss is being held: then it waits with that loss, so each uplink's change is one line.

/// What was last reported of one uplink.
public struct UplinkView: Sendable, Equatable {
    public var reachable: Bool
    public var primary: Bool

    public init(reachable: Bool, primary: Bool) {
        self.reachable = reachable
        self.primary = primary
    }
}

/// One uplink's reported change; nil `from`: it appeared; nil `to`: it is gone.
public struct UplinkChange: Sendable, Equatable {
    public var interface: String
    public var from: UplinkView?
    public var to: UplinkView?

    public init(interface: String, from: UplinkView?, to: UplinkView?) {
        self.interface = interface
        self.from = from
        self.to = to
    }
}

/// The per-uplink half of a `ChangeDetector`: a value, with time as a parameter.
public struct UplinkChangeTracker: Sendable, Equatable {
    /// Losses being held down, by interface: the time each began.
    private var pending: [String: Duration] = [:]

    public init() {}

    /// The uplinks' views as a snapshot shows them now.
    public static func candidates(_ s: Snapshot) -> [String: UplinkView] {
        var out: [String: UplinkView] = [:]
        for u in s.uplinks { out[u.interface] = UplinkView(reachable: u.reachable, primary: u.primary) }
        return out
    }

    /// Of a monitor's targets, the one whose detector reports uplink changes: the default target if watched, else the
    /// first.
    public static func reportingTarget(_ targets: [Target]) -> Int? {
        targets.firstIndex(of: .defaultRoute) ?? (targets.isEmpty ? nil : 0)
    }

    /// Whether some uplink's loss is being held down.
    public var holding: Bool { !pending.isEmpty }

    /// When the earliest hold began.
    public var earliestHold: Duration? { pending.values.min() }

    /// Applies `current` to the reported views at `now`; returns the new views and the changes to report, in
    /// interface order.
    public mutating func evaluate(
        reported: [String: UplinkView], current: [String: UplinkView], holdDown: Duration, at now: Duration
    ) -> (views: [String: UplinkView], changes: [UplinkChange]) {
        var views = reported
        var changes: [UplinkChange] = []
        for name in Set(reported.keys).union(current.keys).sorted() {
            let r = reported[name]
            let c = current[name]
            let stateHeld: Bool
            let newState: Int
            switch settle(name, from: Self.level(r), to: Self.level(c), holdDown: holdDown, at: now) {
            case let .apply(level):
                newState = level
                stateHeld = false
            case .hold:
                newState = Self.level(r)
                stateHeld = true
            }
            // A primary change waits with a held loss of the same uplink: both come out in one line, or neither if
            // the loss comes back in time.
            let primary = stateHeld ? (r?.primary ?? false) : (c?.primary ?? false)
            let next: UplinkView? = newState == 0 ? nil : UplinkView(reachable: newState == 2, primary: primary)
            if next != r {
                views[name] = next
                changes.append(UplinkChange(interface: name, from: r, to: next))
            }
        }
        return (views, changes)
    }

    private enum Settled { case apply(Int), hold }

    /// 0 absent, 1 not reachable, 2 reachable: a lower level is a loss.
    private static func level(_ v: UplinkView?) -> Int {
        guard let v else { return 0 }
        return v.reachable ? 2 : 1
    }

    private mutating func settle(_ key: String, from old: Int, to new: Int, holdDown: Duration, at now: Duration) -> Settled {
        if new >= old {
            pending[key] = nil
            return .apply(new)
        }
        let since = pending[key] ?? now
        if now - since >= holdDown {
            pending[key] = nil
            return .apply(new)
        }
        pending[key] = since
        return .hold
    }
}

// MARK: - Reasons

extension ChangeReason {
    /// "uplink wwan0 not reachable: wwan0 has no carrier (connection required)", "primary uplink now wwan0", …
    static func uplinkReasons(_ changes: [UplinkChange], _ new: Snapshot) -> [String] {
        var out: [String] = []
        let now = Dictionary(new.uplinks.map { ($0.interface, $0) }, uniquingKeysWith: { a, _ in a })
        for c in changes {
            let u = now[c.interface]
            let name = u?.label ?? c.interface
            switch (c.from, c.to) {
            case (nil, nil):
                continue
            case let (nil, to?):
                out.append("uplink \(name) appeared" + (to.reachable ? "" : ", not reachable" + (u?.reason.map { ": \($0)" } ?? "")))
            case (_?, nil):
                out.append("uplink \(name) gone" + (u == nil ? " (no default route)" : ""))
            case let (from?, to?):
                if from.reachable && !to.reachable {
                    out.append("uplink \(name) not reachable" + (u?.reason.map { ": \($0)" } ?? ""))
                } else if !from.reachable && to.reachable {
                    out.append("uplink \(name) reachable again")
                }
            }
            if c.to?.primary == true && c.from?.primary != true { out.append("primary uplink now \(c.interface)") }
        }
        return out
    }
}

extension UplinkChange {
    /// An element of a change line's `event.uplinks`: `{"interface", "from", "to"}`, each side
    /// `{"reachable", "primary"}` or null (appeared / gone).
    public var json: JSON {
        func side(_ v: UplinkView?) -> JSON {
            v.map { .object([("reachable", .bool($0.reachable)), ("primary", .bool($0.primary))]) } ?? .null
        }
        return .object([("interface", .string(interface)), ("from", side(from)), ("to", side(to))])
    }
}
