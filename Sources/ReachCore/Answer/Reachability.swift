// SCNetworkReachability-style flags derived from a plain route-lookup result, and the statuses built on them.
//
// The flag bits are Apple's (SCNetworkReachability.h) so that code ported from iOS can test the
// same bits. Linux has no on-demand or on-traffic connections, so those two bits are never set here.

/// SCNetworkReachabilityFlags, with Apple's bit values.
public struct ReachabilityFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    public static let connectionOnTraffic = ReachabilityFlags(rawValue: 1 << 3)
    public static let interventionRequired = ReachabilityFlags(rawValue: 1 << 4)
    public static let connectionOnDemand = ReachabilityFlags(rawValue: 1 << 5)
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)

    /// The JSON names, in bit order.
    public static let names: [(ReachabilityFlags, String)] = [
        (.transientConnection, "transient_connection"), (.reachable, "reachable"),
        (.connectionRequired, "connection_required"), (.connectionOnTraffic, "connection_on_traffic"),
        (.interventionRequired, "intervention_required"), (.connectionOnDemand, "connection_on_demand"),
        (.isLocalAddress, "is_local_address"), (.isDirect, "is_direct"), (.isWWAN, "is_wwan"),
    ]

    public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

    /// Whether a connection can be made now, as AFNetworking decides it (and Apple's Reachability sample):
    /// Reachable, and either no connection is required or one comes up by itself without a person.
    public var isReachable: Bool {
        guard contains(.reachable) else { return false }
        if !contains(.connectionRequired) { return true }
        return !isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic]) && !contains(.interventionRequired)
    }
}

// MARK: - The route lookup, as plain values

public enum AddressFamily: String, Sendable, Codable {
    case ipv4, ipv6
}

/// What kind of link an interface is, as far as reachability cares.
public enum InterfaceKind: String, Sendable, CaseIterable {
    case wwan  // cellular modem netdev (qmi_wwan, cdc_mbim, mhi_net, wwan class, raw-IP, wwan*/rmnet*)
    case wifi  // has a phy80211
    case ethernet  // ARPHRD_ETHER otherwise
    case ppp  // PPP or a point-to-point link named ppp*: a transient connection
    case loopback
    case other  // tunnels, VPNs, anything else
}

/// The egress link of a route.
public struct LinkState: Sendable, Equatable {
    public var name: String
    public var index: Int
    public var kind: InterfaceKind
    /// IFF_UP: an administrator set it up.
    public var adminUp: Bool
    /// IFF_LOWER_UP: the link has carrier.
    public var carrier: Bool
    public var operState: String?
    public var driver: String?

    public init(
        name: String, index: Int, kind: InterfaceKind, adminUp: Bool, carrier: Bool, operState: String? = nil,
        driver: String? = nil
    ) {
        self.name = name
        self.index = index
        self.kind = kind
        self.adminUp = adminUp
        self.carrier = carrier
        self.operState = operState
        self.driver = driver
    }
}

/// The kernel's route types (RTN_*) that matter here.
public enum RouteType: Sendable, Equatable {
    case unicast, local, broadcast, multicast, unreachable, blackhole, prohibit, `throw`, other(Int)

    /// From rtm_type: RTN_UNICAST 1, LOCAL 2, BROADCAST 3, ANYCAST 4, MULTICAST 5, BLACKHOLE 6, UNREACHABLE 7,
    /// PROHIBIT 8, THROW 9.
    public init(rtnType: Int) {
        switch rtnType {
        case 1: self = .unicast
        case 2: self = .local
        case 3: self = .broadcast
        case 5: self = .multicast
        case 6: self = .blackhole
        case 7: self = .unreachable
        case 8: self = .prohibit
        case 9: self = .throw
        default: self = .other(rtnType)
        }
    }
}

/// The answer to "which way does this target go?" (what `ip route get` prints), as plain values.
public struct RouteLookup: Sendable, Equatable {
    public var family: AddressFamily
    public var type: RouteType
    public var link: LinkState?
    public var gateway: String?
    public var source: String?
    public var metric: Int?
    public var table: Int?
    /// The links below `link` that the packets ride on (`Underlay.resolve`); nil when not followed.
    public var underlay: UnderlayChain?

    public init(
        family: AddressFamily, type: RouteType, link: LinkState?, gateway: String? = nil, source: String? = nil,
        metric: Int? = nil, table: Int? = nil, underlay: UnderlayChain? = nil
    ) {
        self.family = family
        self.type = type
        self.link = link
        self.gateway = gateway
        self.source = source
        self.metric = metric
        self.table = table
        self.underlay = underlay
    }
}

extension ReachabilityFlags {
    /// The flags for a route-lookup result (nil: the kernel has no route).
    ///
    /// - No route, or an unreachable/blackhole/prohibit/throw route: no flags.
    /// - A local route (the target is one of this host's addresses): reachable, is_local_address, is_direct.
    /// - A unicast route whose egress link has carrier: reachable; without carrier: connection_required and *not*
    ///   reachable (Apple sets both for a dial-on-demand link; Linux never brings a link up on traffic, so a route over
    ///   a link without carrier is not usable now, and YYReachability's rule would otherwise call it WiFi).
    /// - is_direct when no gateway is involved (on-link or point-to-point), as SCNetworkReachability sets it for
    ///   routes without RTF_GATEWAY; is_wwan for a WWAN link; transient_connection for PPP.
    /// - With an underlay (`route.underlay`: a CLAT, a tunnel, a VLAN…), the kind is the bottom link's, and every
    ///   link of the chain must be up with carrier, and the chain sound (no loop, a route to the tunnel's remote),
    ///   for the route to be reachable; otherwise it is connection_required, as for a link without carrier.
    /// - `interventionRequired` (a locked SIM on the modem behind the route, known to the caller) adds
    ///   intervention_required and connection_required: a person must act before packets can leave.
    public static func derive(from route: RouteLookup?, interventionRequired: Bool = false) -> ReachabilityFlags {
        var flags: ReachabilityFlags = []
        if interventionRequired { flags.formUnion([.interventionRequired, .connectionRequired]) }
        guard let route else { return flags }
        switch route.type {
        case .local:
            return flags.union([.reachable, .isLocalAddress, .isDirect])
        case .unicast, .broadcast, .multicast:
            break
        default:
            return flags
        }
        guard let link = route.link, link.adminUp else { return flags }
        let chain = route.underlay
        let underlayUsable = chain.map { $0.firstDownHop == nil && !$0.blocking } ?? true
        if link.carrier && underlayUsable && !interventionRequired {
            flags.insert(.reachable)
        } else {
            flags.insert(.connectionRequired)
        }
        if route.gateway == nil { flags.insert(.isDirect) }
        switch (route.physicalLink ?? link).kind {
        case .wwan: flags.insert(.isWWAN)
        case .ppp: flags.insert(.transientConnection)
        default: break
        }
        return flags
    }
}

// MARK: - Statuses

/// YYReachabilityStatus (None 0, WWAN 1, WiFi 2), plus `unknown` before the first determination: AFNetworking's
/// lesson (Unknown -1) is never to report "not reachable" before the answer is known.
public enum ReachabilityStatus: String, Sendable, Equatable {
    case unknown, none, wwan, wifi

    /// YYReachability's `YYReachabilityStatusFromFlags`, exactly: not reachable → none; connection required *and*
    /// transient → none; is_wwan (when WWAN is allowed) → wwan; anything else → wifi. "wifi" therefore means
    /// "reachable without the cellular modem", which on a gateway includes Ethernet: `Medium` says which.
    public init(flags: ReachabilityFlags, allowWWAN: Bool = true) {
        if !flags.contains(.reachable) {
            self = .none
        } else if flags.contains(.connectionRequired) && flags.contains(.transientConnection) {
            self = .none
        } else if flags.contains(.isWWAN) && allowWWAN {
            self = .wwan
        } else {
            self = .wifi
        }
    }
}

extension ReachabilityStatus: CustomStringConvertible {
    /// The words AFNetworking prints for its statuses (`AFStringFromNetworkReachabilityStatus`): "Unknown",
    /// "Not Reachable", "Reachable via WWAN", "Reachable via WiFi". (On a gateway "via WiFi" includes Ethernet, as the
    /// status does; `Medium` names the link.) The JSON form is `rawValue`.
    public var description: String {
        switch self {
        case .unknown: return "Unknown"
        case .none: return "Not Reachable"
        case .wwan: return "Reachable via WWAN"
        case .wifi: return "Reachable via WiFi"
        }
    }
}

/// Over what packets actually leave: the precise answer next to YY's three values.
public enum Medium: String, Sendable, Equatable, CaseIterable {
    case none, wwan, wifi, ethernet, other

    /// The kind of the link packets leave on (the bottom of the route's underlay, else its own link) when the
    /// target is reachable, `.none` otherwise. A local address is `.other` (it never leaves the host).
    public init(route: RouteLookup?, flags: ReachabilityFlags) {
        guard flags.isReachable, let route else { self = .none; return }
        if flags.contains(.isLocalAddress) { self = .other; return }
        switch route.physicalLink?.kind {
        case .wwan: self = .wwan
        case .wifi: self = .wifi
        case .ethernet: self = .ethernet
        case .none: self = .none
        default: self = .other
        }
    }
}
