// The underlay: the links a route's packets ride on below the interface the route names, followed down to the one
// that carries them off the box. A default route on a CLAT, a VPN or a VLAN says little by itself: the answer's
// medium, its WWAN flag and the modem whose truth applies are those of the bottom link.
//
// Pure. Facts come from a `UnderlayFactSource`: the kernel through ReachRoutes (rtnetlink, WireGuard's genetlink
// family), or a recorded `UnderlayFacts`, so the same walk runs when the route part is computed and again at merge
// time, and the tables in the tests are plain values.
//
// The rules, first match wins, for the link at hand:
// 1. Configuration (`interface_underlays`, e.g. {"tun0": "wwan0"}): for what the kernel cannot show (OpenVPN's tun,
//    PPP over a modem's AT port); it overrides every rule below.
// 2. WireGuard: the route to the endpoint of the peer whose allowed IPs hold the destination (longest prefix, as
//    the kernel's allowedips lookup picks it), asked with the device's fwmark and its UDP ports, as
//    drivers/net/wireguard/socket.c routes its packets. Every peer's own underlay is listed.
// 3. IP tunnels with a kernel-visible remote (gre, gretap, erspan, ip6gre, ip6gretap, ip6erspan, ipip, sit, ip6tnl,
//    vxlan, geneve): the route to the remote from IFLA_INFO_DATA, bound to the tunnel's `dev` when it has one and
//    marked with its fwmark, as ip_tunnel_xmit asks it.
// 4. Stacked links (vlan, macvlan, macvtap, ipvlan, ipvtap, macsec, rmnet): the lower device, IFLA_LINK.
// 5. A bridge: the port its forwarding database learned the next hop's MAC address on; without an entry, its only
//    port with carrier. Else the bridge is the bottom.
// 6. A CLAT (RFC 6877 464XLAT): a link holding an address in 192.0.0.0/29 (RFC 7335), or named by a CLAT daemon's
//    convention (clatd's `clat`, OpenWrt's `464-*`, Android's `v4-*`). Its packets leave as IPv6 to the PLAT
//    prefix (64:ff9b::/96, RFC 6052, unless configured), so the underlay is the route to the destination written
//    into that prefix, else the IPv6 default route. Android's `v4-X` is bound to X.
// Chains are followed to the bottom; a link met twice is a loop and more than `maxDepth` links below the route's
// own is refused, as the kernel refuses it (XMIT_RECURSION_LIMIT, include/linux/netdevice.h).

/// How a hop was reached from the hop above it (`via` in the JSON).
public enum UnderlayVia: String, Sendable, Equatable, CaseIterable {
    case clat, tunnel, wireguard, lower, config
}

/// What a route lookup asks, beyond the destination: what the kernel's own transmit path puts in its flow.
public struct RouteQuery: Sendable, Hashable {
    public var destination: IPAddress
    /// RTA_OIF: the tunnel's `dev` binding (or Android's CLAT base interface).
    public var boundIndex: Int?
    /// RTA_MARK: the sender's fwmark (WireGuard's, a tunnel's), so `ip rule fwmark` rules match as they do for it.
    public var mark: UInt32?
    /// RTA_SRC: the tunnel's fixed local address.
    public var source: IPAddress?
    /// RTA_IP_PROTO UDP with RTA_SPORT/RTA_DPORT (0: not given): WireGuard, VXLAN and Geneve send UDP.
    public var udpSourcePort: UInt16?
    public var udpDestinationPort: UInt16?

    public init(
        _ destination: IPAddress, boundIndex: Int? = nil, mark: UInt32? = nil, source: IPAddress? = nil,
        udpSourcePort: UInt16? = nil, udpDestinationPort: UInt16? = nil
    ) {
        self.destination = destination
        self.boundIndex = boundIndex
        self.mark = mark
        self.source = source
        self.udpSourcePort = udpSourcePort
        self.udpDestinationPort = udpDestinationPort
    }
}

/// Where a walk is headed: a family's default route (the default target) or one address.
public enum UnderlayDestination: Sendable, Hashable, CustomStringConvertible {
    case defaultRoute(AddressFamily)
    case address(IPAddress)

    public var family: AddressFamily {
        switch self {
        case let .defaultRoute(f): return f
        case let .address(a): return a.family
        }
    }

    /// "0.0.0.0/0", "::/0" or the address.
    public var description: String {
        switch self {
        case .defaultRoute(.ipv4): return "0.0.0.0/0"
        case .defaultRoute(.ipv6): return "::/0"
        case let .address(a): return a.description
        }
    }
}

/// An IP tunnel's endpoints as IFLA_INFO_DATA gives them.
public struct UnderlayTunnel: Sendable, Equatable {
    /// The fixed remote (unicast, or a VXLAN multicast group); nil for none (any, or flow-based).
    public var remote: IPAddress?
    public var local: IPAddress?
    /// The `dev` the tunnel is bound to (IFLA_GRE_LINK, IFLA_IPTUN_LINK, IFLA_VXLAN_LINK).
    public var boundIndex: Int?
    public var fwmark: UInt32
    /// VXLAN/Geneve destination port.
    public var udpPort: UInt16?

    public init(remote: IPAddress?, local: IPAddress? = nil, boundIndex: Int? = nil, fwmark: UInt32 = 0, udpPort: UInt16? = nil) {
        self.remote = remote
        self.local = local
        self.boundIndex = boundIndex
        self.fwmark = fwmark
        self.udpPort = udpPort
    }
}

/// One WireGuard peer as WG_CMD_GET_DEVICE reports it.
public struct WireGuardPeer: Sendable, Equatable {
    public var endpoint: IPAddress?
    public var endpointPort: UInt16?
    public var allowedIPs: [IPPrefix]

    public init(endpoint: IPAddress?, endpointPort: UInt16? = nil, allowedIPs: [IPPrefix]) {
        self.endpoint = endpoint
        self.endpointPort = endpointPort
        self.allowedIPs = allowedIPs
    }

    /// "198.18.0.1:51820", "[2001:db8::1]:51820", or nil without an endpoint.
    public var endpointText: String? {
        guard let endpoint else { return nil }
        let host = endpoint.family == .ipv6 ? "[\(endpoint)]" : endpoint.description
        return endpointPort.map { "\(host):\($0)" } ?? host
    }
}

/// A WireGuard device's routing facts: its fwmark, listen port and peers.
public struct WireGuardDevice: Sendable, Equatable {
    public var listenPort: UInt16?
    /// 0: none.
    public var fwmark: UInt32
    public var peers: [WireGuardPeer]

    public init(listenPort: UInt16? = nil, fwmark: UInt32 = 0, peers: [WireGuardPeer]) {
        self.listenPort = listenPort
        self.fwmark = fwmark
        self.peers = peers
    }

    /// The peer that carries `destination`: for an address the longest allowed-IPs match (the kernel's allowedips
    /// trie); for a default route the peer holding 0.0.0.0/0 (or ::/0). Nil when no peer does: the kernel drops
    /// such packets.
    public func peer(for destination: UnderlayDestination) -> Int? {
        var best: (index: Int, length: Int)?
        for (i, peer) in peers.enumerated() {
            for prefix in peer.allowedIPs where prefix.family == destination.family {
                let matches: Bool
                switch destination {
                case .defaultRoute: matches = prefix.length == 0
                case let .address(a): matches = prefix.contains(a)
                }
                if matches, prefix.length > (best?.length ?? -1) { best = (i, prefix.length) }
            }
        }
        return best?.index
    }
}

/// What the kernel says about one link, as far as its underlay goes.
public struct UnderlayLink: Sendable, Equatable {
    public var state: LinkState
    /// IFLA_INFO_KIND ("vxlan", "wireguard", "tun", …); nil for a physical device.
    public var infoKind: String?
    /// IFLA_LINK when it names another link of this namespace.
    public var lower: Int?
    /// IFLA_LINK names a link of another namespace (IFLA_LINK_NETNSID is present).
    public var lowerInOtherNamespace: Bool
    /// Its IPv4 addresses (a CLAT holds one in 192.0.0.0/29).
    public var ipv4Addresses: [IPAddress]
    public var tunnel: UnderlayTunnel?
    /// A WireGuard device's peers, or why they could not be read.
    public var wireguard: Result<WireGuardDevice, UnderlayReadError>?

    public init(
        state: LinkState, infoKind: String? = nil, lower: Int? = nil, lowerInOtherNamespace: Bool = false,
        ipv4Addresses: [IPAddress] = [], tunnel: UnderlayTunnel? = nil,
        wireguard: Result<WireGuardDevice, UnderlayReadError>? = nil
    ) {
        self.state = state
        self.infoKind = infoKind
        self.lower = lower
        self.lowerInOtherNamespace = lowerInOtherNamespace
        self.ipv4Addresses = ipv4Addresses
        self.tunnel = tunnel
        self.wireguard = wireguard
    }
}

/// Why a fact could not be read (a netlink error, a permission), in a few words.
public struct UnderlayReadError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A link asked for by index or name.
public enum UnderlayLinkAnswer: Sendable, Equatable {
    case link(UnderlayLink)
    /// No such link.
    case absent
    case failed(UnderlayReadError)
}

/// A route asked for: the kernel's answer, no route at all (ENETUNREACH), or a failure to ask.
public enum UnderlayRouteAnswer: Sendable, Equatable {
    case route(RouteLookup)
    case none
    case failed(UnderlayReadError)
}

/// The bridge port a next hop's frames leave on.
public enum BridgePortAnswer: Sendable, Equatable {
    /// The forwarding database holds the next hop's MAC address on this port.
    case learned(port: Int)
    /// No entry; the bridge's only port with carrier.
    case onlyPort(Int)
    /// Neither: the bridge itself is the bottom.
    case none
    case failed(UnderlayReadError)
}

/// Where the facts come from: the kernel (ReachRoutes), or a recording of what it said (`UnderlayFacts`).
public protocol UnderlayFactSource {
    func link(index: Int) -> UnderlayLinkAnswer
    func link(named name: String) -> UnderlayLinkAnswer
    func route(_ query: RouteQuery) -> UnderlayRouteAnswer
    /// A family's default route as `RouteResolver.defaultRoute` chooses it.
    func defaultRoute(_ family: AddressFamily) -> UnderlayRouteAnswer
    /// The port of `bridge` that frames to `nextHop` leave on (nil: the next hop is not known).
    func bridgePort(bridge: Int, nextHop: IPAddress?) -> BridgePortAnswer
}

/// The configuration the walk uses.
public struct UnderlayConfig: Sendable, Equatable {
    /// `interface_underlays`: interface → the interface it rides on.
    public var interfaceUnderlays: [String: String]
    /// `clat.plat_prefix`.
    public var platPrefix: IPPrefix

    public init(interfaceUnderlays: [String: String] = [:], platPrefix: IPPrefix = .wellKnownNAT64) {
        self.interfaceUnderlays = interfaceUnderlays
        self.platPrefix = platPrefix
    }

    public static let standard = UnderlayConfig()

    /// The loops in an `interface_underlays` map, each once, from its first name in sorted order and back to it
    /// ("tun0 → ppp0 → tun0"; "tun0 → tun0" for an interface named as its own underlay).
    public static func loops(_ map: [String: String]) -> [[String]] {
        var found: [[String]] = []
        var done = Set<String>()
        for start in map.keys.sorted() where !done.contains(start) {
            var path: [String] = []
            var current: String? = start
            while let name = current, !done.contains(name) {
                if let i = path.firstIndex(of: name) {
                    let cycle = Array(path[i...])
                    let first = cycle.indices.min { cycle[$0] < cycle[$1] }!
                    let rotated = Array(cycle[first...] + cycle[..<first])
                    found.append(rotated + [rotated[0]])
                    break
                }
                path.append(name)
                current = map[name]
            }
            done.formUnion(path)
        }
        return found
    }
}

/// Every fact one walk (or several) asked for, as the source answered it: the route part carries it so that a merge
/// can walk again, purely, from any link it holds.
public struct UnderlayFacts: Sendable, Equatable, UnderlayFactSource {
    public var config: UnderlayConfig
    public var links: [Int: UnderlayLinkAnswer]
    public var names: [String: UnderlayLinkAnswer]
    public var routes: [RouteQuery: UnderlayRouteAnswer]
    public var defaultRoutes: [AddressFamily: UnderlayRouteAnswer]
    public var bridgePorts: [BridgeKey: BridgePortAnswer]

    public struct BridgeKey: Sendable, Hashable {
        public var bridge: Int
        public var nextHop: IPAddress?
        public init(bridge: Int, nextHop: IPAddress?) {
            self.bridge = bridge
            self.nextHop = nextHop
        }
    }

    public init(config: UnderlayConfig = .standard) {
        self.config = config
        links = [:]
        names = [:]
        routes = [:]
        defaultRoutes = [:]
        bridgePorts = [:]
    }

    /// Adds a link under its index and its name.
    public mutating func add(_ link: UnderlayLink) {
        links[link.state.index] = .link(link)
        names[link.state.name] = .link(link)
    }

    static let notRecorded = UnderlayReadError("not read when the route was computed")

    public func link(index: Int) -> UnderlayLinkAnswer { links[index] ?? .failed(Self.notRecorded) }
    public func link(named name: String) -> UnderlayLinkAnswer { names[name] ?? .failed(Self.notRecorded) }
    public func route(_ query: RouteQuery) -> UnderlayRouteAnswer { routes[query] ?? .failed(Self.notRecorded) }
    public func defaultRoute(_ family: AddressFamily) -> UnderlayRouteAnswer {
        defaultRoutes[family] ?? .failed(Self.notRecorded)
    }
    public func bridgePort(bridge: Int, nextHop: IPAddress?) -> BridgePortAnswer {
        bridgePorts[BridgeKey(bridge: bridge, nextHop: nextHop)] ?? .failed(Self.notRecorded)
    }
}

// MARK: - The chain

/// One WireGuard peer and the link its packets leave on.
public struct UnderlayPeer: Sendable, Equatable {
    /// "198.18.0.1:51820"; nil: the peer has no endpoint yet.
    public var endpoint: String?
    public var allowedIPs: [String]
    /// The bottom of this peer's own chain (nil when it could not be followed).
    public var underlay: LinkState?
    /// This peer carries the route's destination (for the default target: it holds 0.0.0.0/0 or ::/0).
    public var carries: Bool
    /// Why its underlay is not known or cannot carry packets.
    public var problem: String?

    public init(endpoint: String?, allowedIPs: [String], underlay: LinkState?, carries: Bool, problem: String? = nil) {
        self.endpoint = endpoint
        self.allowedIPs = allowedIPs
        self.underlay = underlay
        self.carries = carries
        self.problem = problem
    }
}

/// One link of a chain.
public struct UnderlayHop: Sendable, Equatable {
    public var link: LinkState
    /// IFLA_INFO_KIND.
    public var infoKind: String?
    /// How it was reached from the hop above; nil for the route's own link.
    public var via: UnderlayVia?
    /// What the hop above sends to: a tunnel's remote, a WireGuard peer's endpoint, the PLAT prefix.
    public var remote: String?
    /// The fwmark the hop above's packets carry (WireGuard, a tunnel), when it has one.
    public var fwmark: UInt32?
    /// For a WireGuard hop: every peer and its underlay.
    public var peers: [UnderlayPeer]

    public init(
        link: LinkState, infoKind: String? = nil, via: UnderlayVia? = nil, remote: String? = nil, fwmark: UInt32? = nil,
        peers: [UnderlayPeer] = []
    ) {
        self.link = link
        self.infoKind = infoKind
        self.via = via
        self.remote = remote
        self.fwmark = fwmark
        self.peers = peers
    }

    /// Admin up with carrier: it can pass packets now.
    public var isUp: Bool { link.adminUp && link.carrier }
}

/// The links a route's packets ride on, from the route's own interface (first) to the bottom (last).
public struct UnderlayChain: Sendable, Equatable {
    public var hops: [UnderlayHop]
    /// Why the chain stops where it does, when that is not the bottom of a sound chain.
    public var problem: String?
    /// The problem stops packets (no route to a tunnel's remote, a loop, too deep, a configured underlay that does
    /// not exist): the route is not reachable. False: the walk could not see further (a permission, a tunnel
    /// without a fixed remote), and the answer stands on what it saw.
    public var blocking: Bool

    public init(hops: [UnderlayHop], problem: String? = nil, blocking: Bool = false) {
        self.hops = hops
        self.problem = problem
        self.blocking = blocking
    }

    /// The bottom link when there is an underlay (more than the route's own link).
    public var underlay: UnderlayHop? { hops.count > 1 ? hops.last : nil }

    /// The first hop below the route's own link that cannot pass packets (down or without carrier).
    public var firstDownHop: UnderlayHop? { hops.dropFirst().first { !$0.isUp } }

    /// "vx0 → wwan0".
    public var names: String { hops.map(\.link.name).joined(separator: " → ") }

    /// "vx0: its underlay wwan0 …", the way a reason names a lower hop.
    public func reason(_ hop: UnderlayHop, _ what: String) -> String {
        "\(hops.first?.link.name ?? hop.link.name): its underlay \(hop.link.name) \(what)"
    }
}

extension RouteLookup {
    /// The link packets leave the box on: the bottom of the underlay chain, else the route's own link.
    public var physicalLink: LinkState? { underlay?.underlay?.link ?? link }

    /// Every link of the chain from the bottom up (just the route's link when there is no underlay).
    public var linksFromBottom: [LinkState] {
        if let hops = underlay?.hops, !hops.isEmpty { return hops.reversed().map(\.link) }
        return link.map { [$0] } ?? []
    }
}

// MARK: - The walk

public enum Underlay {
    /// Links below the route's own followed at most: the kernel's own limit on nested transmits
    /// (XMIT_RECURSION_LIMIT, include/linux/netdevice.h).
    public static let maxDepth = 8

    /// IFLA_INFO_KIND of links stacked on a lower device named by IFLA_LINK.
    public static let lowerKinds: Set<String> = ["vlan", "macvlan", "macvtap", "ipvlan", "ipvtap", "macsec", "rmnet"]

    /// IFLA_INFO_KIND of IP tunnels whose IFLA_INFO_DATA holds a remote.
    public static let tunnelKinds: Set<String> = [
        "gre", "gretap", "erspan", "ip6gre", "ip6gretap", "ip6erspan", "ipip", "sit", "ip6tnl", "vxlan", "geneve",
    ]

    /// Whether a link is a CLAT: an address in 192.0.0.0/29 (RFC 7335), or a CLAT daemon's name (`clat`, `464-*`,
    /// `v4-*`).
    public static func isCLAT(_ link: UnderlayLink) -> Bool {
        let name = link.state.name
        if name == "clat" || name.hasPrefix("464-") || name.hasPrefix("v4-") { return true }
        return link.ipv4Addresses.contains { IPPrefix.clatRange.contains($0) }
    }

    /// The chain of `route` towards `destination`. Nil for a route without a link (unreachable, prohibit, …) or a
    /// local one.
    public static func resolve(
        route: RouteLookup, destination: UnderlayDestination, config: UnderlayConfig, source: some UnderlayFactSource
    ) -> UnderlayChain? {
        guard let link = route.link, route.type != .local else { return nil }
        let nextHop = route.gateway.flatMap(IPAddress.init) ?? destination.address
        var walk = Walk(config: config, source: source)
        return walk.chain(from: UnderlayHop(link: link), destination: destination, nextHop: nextHop, visited: [])
    }

    /// The chain below the link `index` (an uplink's interface), as `resolve` would build it for a route on it.
    public static func resolve(
        index: Int, destination: UnderlayDestination, config: UnderlayConfig, source: some UnderlayFactSource
    ) -> UnderlayChain? {
        guard case let .link(l) = source.link(index: index) else { return nil }
        var walk = Walk(config: config, source: source)
        return walk.chain(from: UnderlayHop(link: l.state, infoKind: l.infoKind), destination: destination, nextHop: nil, visited: [])
    }

    fileprivate enum Step {
        case bottom
        case next(UnderlayHop, UnderlayDestination, nextHop: IPAddress?)
        /// The walk cannot see further; the answer stands.
        case unknown(String)
        /// Packets cannot go on.
        case broken(String)
    }

    private struct Walk<Source: UnderlayFactSource> {
        let config: UnderlayConfig
        let source: Source
        /// Set by a WireGuard step: its peers, for the hop the step was taken from.
        var peers: [UnderlayPeer]?

        init(config: UnderlayConfig, source: Source) {
            self.config = config
            self.source = source
        }

        mutating func chain(
            from top: UnderlayHop, destination: UnderlayDestination, nextHop: IPAddress?, visited: Set<Int>
        ) -> UnderlayChain {
            var hops = [top]
            var seen = visited.union([top.link.index])
            var destination = destination
            var nextHop = nextHop
            while true {
                let current = hops[hops.count - 1]
                let facts: UnderlayLink
                switch source.link(index: current.link.index) {
                case let .link(l): facts = l
                case .absent: return UnderlayChain(hops: hops, problem: "\(current.link.name) is gone", blocking: true)
                case let .failed(e):
                    return UnderlayChain(hops: hops, problem: "\(current.link.name): not readable: \(e)")
                }
                if hops.count == 1 { hops[0].infoKind = facts.infoKind }
                peers = nil
                var step = self.step(facts, destination: destination, nextHop: nextHop, seen: seen)
                if let p = peers { hops[hops.count - 1].peers = p }
                if case let .next(hop, _, _) = step {
                    if seen.contains(hop.link.index) {
                        step = .broken("\(current.link.name): \(describe(hop)) goes back through \(hop.link.name) (a loop)")
                    } else if hops.count > Underlay.maxDepth {
                        step = .broken(
                            "more than \(Underlay.maxDepth) links below \(hops[0].link.name) (the kernel's nesting limit)")
                    }
                }
                switch step {
                case .bottom:
                    return UnderlayChain(hops: hops)
                case let .unknown(why):
                    return UnderlayChain(hops: hops, problem: why)
                case let .broken(why):
                    return UnderlayChain(hops: hops, problem: why, blocking: true)
                case let .next(hop, d, nh):
                    hops.append(hop)
                    seen.insert(hop.link.index)
                    destination = d
                    nextHop = nh
                }
            }
        }

        /// "the route to its remote 198.18.0.1": how a loop or a failure names the way down.
        func describe(_ hop: UnderlayHop) -> String {
            switch hop.via {
            case .tunnel?: return hop.remote.map { "the route to its remote \($0)" } ?? "its bound device"
            case .wireguard?: return "the route to its peer \(hop.remote ?? "?")"
            case .clat?: return "the route to the PLAT prefix \(config.platPrefix)"
            case .config?: return "its configured underlay"
            case .lower?, nil: return "its lower device"
            }
        }

        /// The hop below, reached `via`, from the link `index` (re-read so its kind and state are its own).
        func below(_ index: Int, via: UnderlayVia, remote: String? = nil, fwmark: UInt32? = nil, fallback: LinkState? = nil)
            -> UnderlayHop?
        {
            switch source.link(index: index) {
            case let .link(l): return UnderlayHop(link: l.state, infoKind: l.infoKind, via: via, remote: remote, fwmark: fwmark)
            default: return fallback.map { UnderlayHop(link: $0, via: via, remote: remote, fwmark: fwmark) }
            }
        }

        mutating func step(
            _ l: UnderlayLink, destination: UnderlayDestination, nextHop: IPAddress?, seen: Set<Int>
        ) -> Step {
            let name = l.state.name
            // 1. Configuration.
            if let configured = config.interfaceUnderlays[name] {
                switch source.link(named: configured) {
                case let .link(below):
                    return .next(
                        UnderlayHop(link: below.state, infoKind: below.infoKind, via: .config), destination, nextHop: nil)
                case .absent: return .broken("\(name): its configured underlay \(configured) does not exist")
                case let .failed(e): return .unknown("\(name): its configured underlay \(configured) is not readable: \(e)")
                }
            }
            let kind = l.infoKind ?? ""
            // 2. WireGuard.
            if kind == "wireguard" { return wireguard(l, destination: destination, seen: seen) }
            // 3. IP tunnels.
            if Underlay.tunnelKinds.contains(kind) {
                guard let t = l.tunnel else { return .unknown("\(name): its tunnel parameters were not readable") }
                let mark = t.fwmark == 0 ? nil : t.fwmark
                if let remote = t.remote {
                    let query = RouteQuery(
                        remote, boundIndex: t.boundIndex, mark: mark, source: t.local, udpDestinationPort: t.udpPort)
                    return follow(
                        source.route(query), from: name, what: "its remote \(remote)", via: .tunnel,
                        remote: remote.description, fwmark: mark, destination: .address(remote))
                }
                if let bound = t.boundIndex {
                    guard let hop = below(bound, via: .tunnel) else {
                        return .broken("\(name): the device it is bound to (index \(bound)) is gone")
                    }
                    return .next(hop, destination, nextHop: nil)
                }
                return .unknown(
                    "\(name): no fixed remote in the kernel (an FDB- or flow-based tunnel); name its underlay in interface_underlays")
            }
            // 4. Stacked links.
            if Underlay.lowerKinds.contains(kind) {
                if l.lowerInOtherNamespace { return .unknown("\(name): its lower device is in another network namespace") }
                guard let lower = l.lower, lower != l.state.index else { return .bottom }
                switch source.link(index: lower) {
                case .link:
                    guard let hop = below(lower, via: .lower) else { return .bottom }
                    return .next(hop, destination, nextHop: nextHop)
                case .absent: return .broken("\(name): its lower device (index \(lower)) is gone")
                case let .failed(e): return .unknown("\(name): its lower device is not readable: \(e)")
                }
            }
            // 5. A bridge.
            if kind == "bridge" {
                switch source.bridgePort(bridge: l.state.index, nextHop: nextHop) {
                case let .learned(port), let .onlyPort(port):
                    guard let hop = below(port, via: .lower) else { return .bottom }
                    return .next(hop, destination, nextHop: nextHop)
                case .none: return .bottom
                case let .failed(e): return .unknown("\(name): its ports are not readable: \(e)")
                }
            }
            // 6. A CLAT.
            if Underlay.isCLAT(l) { return clat(l, destination: destination) }
            return .bottom
        }

        /// A route answer as the hop below (or why there is none).
        func follow(
            _ answer: UnderlayRouteAnswer, from name: String, what: String, via: UnderlayVia, remote: String,
            fwmark: UInt32?, destination: UnderlayDestination
        ) -> Step {
            switch answer {
            case let .route(r):
                switch r.type {
                case .unicast:
                    guard let link = r.link,
                        let hop = below(link.index, via: via, remote: remote, fwmark: fwmark, fallback: link)
                    else { return .broken("\(name): the route to \(what) has no interface") }
                    return .next(hop, destination, nextHop: r.gateway.flatMap(IPAddress.init) ?? destination.address)
                case .local: return .broken("\(name): \(what) is this host's own address")
                default: return .broken("\(name): the route to \(what) is \(r.typeName)")
                }
            case .none: return .broken("\(name): no route to \(what)")
            case let .failed(e): return .unknown("\(name): the route to \(what) could not be read: \(e)")
            }
        }

        mutating func wireguard(_ l: UnderlayLink, destination: UnderlayDestination, seen: Set<Int>) -> Step {
            let name = l.state.name
            let device: WireGuardDevice
            switch l.wireguard {
            case let .success(d)?: device = d
            case let .failure(e)?: return .unknown("\(name): its peers are not readable: \(e)")
            case nil: return .unknown("\(name): its peers were not read")
            }
            let carrier = device.peer(for: destination)
            let mark = device.fwmark == 0 ? nil : device.fwmark
            var list: [UnderlayPeer] = []
            var selected: Step?
            for (i, peer) in device.peers.enumerated() {
                let allowed = peer.allowedIPs.map(\.description)
                guard let endpoint = peer.endpoint, let text = peer.endpointText else {
                    list.append(UnderlayPeer(endpoint: nil, allowedIPs: allowed, underlay: nil, carries: i == carrier, problem: "no endpoint"))
                    if i == carrier { selected = .broken("\(name): the peer carrying \(destination) has no endpoint") }
                    continue
                }
                let query = RouteQuery(endpoint, mark: mark, udpSourcePort: device.listenPort, udpDestinationPort: peer.endpointPort)
                let step = follow(
                    source.route(query), from: name, what: "its peer \(text)", via: .wireguard, remote: text,
                    fwmark: mark, destination: .address(endpoint))
                var entry = UnderlayPeer(endpoint: text, allowedIPs: allowed, underlay: nil, carries: i == carrier)
                switch step {
                case let .next(hop, d, nh):
                    if seen.contains(hop.link.index) {
                        entry.problem = "the route to \(text) goes back through \(hop.link.name) (a loop)"
                    } else {
                        // The peer's own chain below its endpoint's route names the link it finally leaves on.
                        var sub = Walk(config: config, source: source)
                        let chain = sub.chain(from: hop, destination: d, nextHop: nh, visited: seen)
                        entry.underlay = chain.hops.last?.link
                        entry.problem = chain.problem
                    }
                case let .broken(why), let .unknown(why):
                    entry.problem = why.hasPrefix("\(name): ") ? String(why.dropFirst(name.count + 2)) : why
                case .bottom:
                    break
                }
                list.append(entry)
                if i == carrier { selected = step }
            }
            peers = list
            guard let selected else { return .broken("\(name): no peer's allowed IPs hold \(destination)") }
            return selected
        }

        func clat(_ l: UnderlayLink, destination: UnderlayDestination) -> Step {
            let name = l.state.name
            let prefix = config.platPrefix
            var v4 = IPAddress.ipv4Any
            if case let .address(a) = destination, a.family == .ipv4 { v4 = a }
            guard let plat = prefix.embedding(v4) else {
                return .unknown("\(name): the PLAT prefix \(prefix) cannot hold an IPv4 address (RFC 6052)")
            }
            // Android's clatd binds its socket to the base network's interface (`v4-rmnet_data0` → rmnet_data0).
            var bound: Int?
            if name.hasPrefix("v4-"), case let .link(base) = source.link(named: String(name.dropFirst(3))) {
                bound = base.state.index
            }
            var answer = source.route(RouteQuery(plat, boundIndex: bound))
            switch answer {
            case let .route(r) where r.type == .unicast && r.link != nil: break
            default:
                if case .route = source.defaultRoute(.ipv6) { answer = source.defaultRoute(.ipv6) }
            }
            if case .none = answer { return .broken("\(name): no IPv6 route to the PLAT prefix \(prefix)") }
            return follow(
                answer, from: name, what: "the PLAT prefix \(prefix)", via: .clat, remote: prefix.description,
                fwmark: nil, destination: .address(plat))
        }
    }
}

extension UnderlayDestination {
    /// The address itself; nil for a default route.
    var address: IPAddress? {
        if case let .address(a) = self { return a }
        return nil
    }
}
