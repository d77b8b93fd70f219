// Change detection for validation, per uplink: the rules of `ChangeDetector` extended to each uplink's validation
// state, so an upstream that dies behind a live link is reported once, naming the uplink.
//
// - The state already carries its own hysteresis (`down_after` / `up_after` rounds, `Validation.swift`), so a change is
//   reported at once, with no hold-down on top.
// - Only reachable uplinks are judged: while an uplink is not reachable its validation is not reported either way (its
//   reachability line says what happened), and its last reported state stands, so a loss of the path that comes back
//   inside the hold-down gives no validation line either.
// - An uplink that goes away is forgotten without a line (the uplink's own "gone" line covers it).

/// One uplink's reported validation change; nil `from`: its first verdict.
public struct ValidationChange: Sendable, Equatable {
    public var interface: String
    public var from: ValidationState?
    public var to: ValidationState
    /// The reading's reason when the change was reported ("dns 9.9.9.9 timed out ×3").
    public var reason: String?

    public init(interface: String, from: ValidationState?, to: ValidationState, reason: String? = nil) {
        self.interface = interface
        self.from = from
        self.to = to
        self.reason = reason
    }
}

public enum ValidationChangeTracker {
    /// The views to report after `s`, and the changes among them, in the snapshot's uplink order.
    public static func evaluate(reported: [String: ValidationState], _ s: Snapshot) -> (views: [String: ValidationState], changes: [ValidationChange]) {
        guard s.validationEnabled else { return ([:], []) }
        var views: [String: ValidationState] = [:]
        var changes: [ValidationChange] = []
        for u in s.uplinks {
            let old = reported[u.interface]
            guard u.reachable, let state = u.validation?.state else {
                if let old { views[u.interface] = old }
                continue
            }
            views[u.interface] = state
            if old != state {
                changes.append(ValidationChange(interface: u.interface, from: old, to: state, reason: u.validation?.reason))
            }
        }
        return (views, changes)
    }
}

extension ChangeReason {
    /// "uplink eth0 validation failed: dns 9.9.9.9 timed out ×3", "uplink eth0 validated again", …
    static func validationReasons(_ changes: [ValidationChange], _ new: Snapshot) -> [String] {
        let labels = Dictionary(new.uplinks.map { ($0.interface, $0.label) }, uniquingKeysWith: { a, _ in a })
        return changes.map { c in
            let name = labels[c.interface] ?? c.interface
            if c.to == .validated { return "uplink \(name) validated" + (c.from == nil ? "" : " again") }
            return "uplink \(name) \(c.to.phrase)" + (c.reason.map { ": \($0)" } ?? "")
        }
    }
}

extension ValidationChange {
    /// An element of a change line's `event.validation`.
    public var json: JSON {
        .object([
            ("interface", .string(interface)), ("from", .optional(from?.rawValue)), ("to", .string(to.rawValue)),
            ("reason", .optional(reason)),
        ])
    }
}
