// Validation in the answer: `validated`, `validation` and `usable` for every uplink and at the top level.
//
// Validation is a separate field, as Android keeps NET_CAPABILITY_VALIDATED apart from the network being connected:
// `reachable`, the flags and the YY status keep meaning the path truth (a route, a carrier, a modem with a session) and
// are never rewritten by a probe. `usable` combines the two for a script that wants one answer: reachable and, when
// validation is on, validated.

extension Uplink {
    /// true/false when validation is on and this uplink is reachable and has a verdict; nil when off, not reachable
    /// (nothing is probed on a path that does not exist) or not yet known.
    public var validated: Bool? {
        guard validationEnabled, reachable, let state = validation?.state else { return nil }
        return state == .validated
    }

    /// Reachable and, when validation is on, validated.
    public var usable: Bool { reachable && (!validationEnabled || validated == true) }

    /// The `validation` object (docs/how-it-works.md, "Validation (opt-in)"); null when validation is off.
    public var validationJSON: JSON {
        guard validationEnabled else { return .null }
        let r = validation ?? ValidationReading(state: nil, reason: "first round pending")
        // An uplink that is not reachable is not probed: no verdict now, whatever was concluded before.
        let state = reachable ? r.state : nil
        let reason = reachable ? r.reason : "not probed while not reachable"
        return .object([
            ("state", .optional(state?.rawValue)),
            ("last_ok", .optional(r.lastOK?.rfc3339)),
            ("failures", .int(r.failures)),
            ("reason", .optional(reason)),
            ("bytes_sent", .int(Int64(clamping: r.bytesSent))),
        ])
    }

    var validationMembers: [(String, JSON)] {
        [("usable", .bool(usable)), ("validated", .optional(validated)), ("validation", validationJSON)]
    }

    /// " · validated", " · validation failed: dns 9.9.9.9 timed out ×3", " · validation pending"; empty when off or
    /// not reachable.
    var validationText: String {
        guard validationEnabled, reachable else { return "" }
        guard let r = validation, let state = r.state else {
            return " · validation pending" + (validation?.reason.map { ": \($0)" } ?? "")
        }
        if state == .validated { return " · validated" }
        return " · " + state.phrase + (r.reason.map { ": \($0)" } ?? "")
    }
}

extension Snapshot {
    /// The uplink the answer's route leaves by, if it is one.
    public var routeUplink: Uplink? {
        guard let name = route?.link?.name else { return nil }
        return uplinks.first { $0.interface == name }
    }

    /// Whether validation is on for this answer.
    public var validationEnabled: Bool { validation != nil }

    /// The validation of the uplink the route leaves by: nil when off, when that uplink has no verdict, or when the
    /// route leaves by no uplink (a LAN address: validation judges uplinks only).
    public var validated: Bool? { validationEnabled ? routeUplink?.validated : nil }

    /// Reachable and, when validation is on and the route leaves by an uplink, that uplink validated.
    public var usable: Bool {
        guard reachable else { return false }
        guard validationEnabled, let u = routeUplink else { return true }
        return u.validated == true
    }

    /// Sets the validation part (nil: off) and fills the uplinks' readings from it, without deriving the rest again.
    public mutating func applyValidation(_ part: ValidationPart?) {
        validation = part
        deriveValidation()
    }

    /// Fills each uplink's reading from the validation part (`derive` calls it last).
    mutating func deriveValidation() {
        for i in uplinks.indices {
            uplinks[i].validationEnabled = validation != nil
            uplinks[i].validation = validation?.uplinks[uplinks[i].interface]
        }
    }

    var validationMembers: [(String, JSON)] {
        [("usable", .bool(usable)), ("validated", .optional(validated)), ("validation", routeUplink.map(\.validationJSON) ?? .null)]
    }
}

extension SnapshotText {
    /// The headline's validation suffix: that of the uplink the route leaves by.
    static func validationSuffix(_ s: Snapshot) -> String {
        guard s.reachable, let u = s.routeUplink else { return "" }
        return u.validationText
    }
}
