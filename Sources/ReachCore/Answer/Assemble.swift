// One way to put a snapshot together from its parts: the route part, the modems and the WiFi links, each as its
// source last gave it (or why it has nothing). The one-shot `GatewayReach.status` and the monitoring engine both
// call `Snapshot.assemble`, so an answer reads the same whichever way it was asked, including the words for a
// source that has nothing to say.

/// The route part of a snapshot: which way the target goes, per-family support for the default target, the uplinks'
/// routes, and why it could not be determined. The adapter that asks the kernel fills it (`RouteView.compute` in
/// GatewayReach).
public struct RouteView: Sendable, Equatable {
    public var route: RouteLookup?
    /// Every interface holding a default route (and the configured uplinks), not yet derived: `Snapshot.derive`
    /// answers each with the modems and WiFi.
    public var uplinks: [Uplink] = []
    /// Why the uplinks could not be read (the main answer may still stand).
    public var uplinksError: String?
    public var resolvedAddresses: [String] = []
    public var resolutionError: String?
    public var supportsIPv4: Bool?
    public var supportsIPv6: Bool?
    public var error: String?
    /// The routes `route` was chosen from (IPv4 and IPv6 defaults; one per address of a host), so that the merge with
    /// the modems can pick another when a modem blocks the chosen one (`Snapshot.derive`).
    public var candidates: [RouteLookup] = []
    /// What the kernel said about the links below the routes (their chains are on the routes themselves).
    public var underlayFacts: UnderlayFacts?

    public init() {}

    public func apply(to s: inout Snapshot) {
        s.route = route
        s.routeCandidates = candidates
        s.resolvedAddresses = resolvedAddresses
        s.resolutionError = resolutionError
        s.supportsIPv4 = supportsIPv4
        s.supportsIPv6 = supportsIPv6
        s.error = error
        s.uplinks = uplinks
        s.uplinksError = uplinksError
        s.underlayFacts = underlayFacts
    }
}

extension SourceHealth {
    /// The source is switched off (configuration, a `--no-…` flag, or `ReachabilityOptions`).
    public static let disabled = SourceHealth(available: false, reason: "disabled")
    /// The source is on but has not answered yet.
    public static let notReadYet = SourceHealth(available: false, reason: "not read yet")
}

/// What one source (modems or WiFi) contributes to a snapshot.
public enum SourcePart<Value: Sendable & Equatable>: Sendable, Equatable {
    /// Switched off: `sources.*` says `disabled`.
    case disabled
    /// On, but nothing has arrived yet: `sources.*` says `not read yet`.
    case pending
    /// The source's latest answer.
    case read(SourceHealth, [Value])

    var health: SourceHealth {
        switch self {
        case .disabled: return .disabled
        case .pending: return .notReadYet
        case let .read(h, _): return h
        }
    }

    var values: [Value] {
        if case let .read(_, v) = self { return v }
        return []
    }
}

extension Snapshot {
    /// The reason a snapshot gives when no route part has arrived yet.
    public static let routeNotDeterminedYet = "route not determined yet"

    /// A complete snapshot from its parts, derived (flags, status, medium, WWAN status).
    /// - Parameter route: nil before the route source answered: the status is then `unknown` with
    ///   `routeNotDeterminedYet` as the error.
    /// - Parameter allowWWAN: YYReachability's `allowWWAN` for this monitor; nil: the target's (false only for
    ///   link-local). With it false a reachable WWAN route gives status `wifi`, exactly as
    ///   `YYReachabilityStatusFromFlags` does; `medium` still says `wwan`.
    /// - Parameter signalPolicy: how the modems' bars are graded (the configuration's `signal`); the snapshot carries
    ///   it into its JSON (`bars`, `bars_profile`) and the change detector's bar hysteresis.
    /// - Parameter validation: the validation part when validation is on (empty while no round has ended); nil: off.
    public static func assemble(
        target: Target, time: Timestamp, route: RouteView?, modems: SourcePart<ModemState>, wifi: SourcePart<WiFiLink>,
        allowWWAN: Bool? = nil, signalPolicy: SignalPolicy = .android, validation: ValidationPart? = nil
    ) -> Snapshot {
        var s = Snapshot(time: time, target: target, signalPolicy: signalPolicy)
        if let route {
            route.apply(to: &s)
        } else {
            s.error = routeNotDeterminedYet
        }
        s.wwanSource = modems.health
        s.wwan = modems.values
        s.wifiSource = wifi.health
        s.wifi = wifi.values
        s.validation = validation
        s.derive()
        if allowWWAN == false, s.status == .wwan {
            s.status = ReachabilityStatus(flags: s.flags, allowWWAN: false)
        }
        return s
    }
}

extension SourcePart where Value == ModemState {
    /// Several modem sources (configured ports, discovery) as one part, in the given order: available when any of
    /// them is; otherwise the first failure's reason. Nothing heard yet from any of them: `pending`.
    public static func merging(_ parts: [(SourceHealth, [ModemState])]) -> SourcePart<ModemState> {
        guard !parts.isEmpty else { return .pending }
        var states: [ModemState] = []
        var failure: SourceHealth?
        var anyAvailable = false
        for (h, st) in parts {
            states.append(contentsOf: st)
            if h.available { anyAvailable = true } else if failure == nil { failure = h }
        }
        return .read(anyAvailable ? .ok : (failure ?? .ok), states)
    }
}
