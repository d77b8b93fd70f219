// Which way does a target go? The kernel's own answer (RTM_GETROUTE, as `ip route get` asks it), plus the egress
// link's state and kind, copied into ReachCore values.

import CNetlinkShims
import Glibc
import ReachCore

/// Asks the kernel's routing. One instance owns one netlink socket; use it from one task at a time.
public final class RouteResolver {
    let socket: RouteSocket
    private let interfaceOverrides: [String: InterfaceKind]
    private let sysfs: SysfsLinkFacts

    /// What one answer has read already, when the instance serves one answer (`oneAnswer`).
    var memo: Memo?

    /// The dumps and links one answer reads: each is asked once, however many parts of the answer (the route, the
    /// uplinks, the underlay walk) need it.
    struct Memo {
        var rules: [AddressFamily: [PolicyRule]] = [:]
        var defaults: [AddressFamily: [ParsedRoute]] = [:]
        var links: [Int32: LinkState?] = [:]
    }

    /// - Parameters:
    ///   - interfaceOverrides: configured interface kinds by name (e.g. `["ppp0": .wwan]`).
    ///   - sysfsRoot: where `class/net` lives (tests point it at a fake tree).
    ///   - oneAnswer: the instance serves one answer (`RouteView.compute` makes one per answer): the rules, the default
    ///     routes and each link are read from the kernel once and kept for its life. Off, every call asks anew.
    public convenience init(
        interfaceOverrides: [String: InterfaceKind] = [:], sysfsRoot: String = "/sys", oneAnswer: Bool = false
    ) throws(NetlinkError) {
        self.init(socket: try RouteSocket(), interfaceOverrides: interfaceOverrides, sysfsRoot: sysfsRoot, oneAnswer: oneAnswer)
    }

    /// Over a given socket (tests hand in one whose kernel is scripted).
    init(socket: RouteSocket, interfaceOverrides: [String: InterfaceKind] = [:], sysfsRoot: String = "/sys", oneAnswer: Bool = false) {
        self.socket = socket
        self.interfaceOverrides = interfaceOverrides
        self.sysfs = SysfsLinkFacts(root: sysfsRoot)
        self.memo = oneAnswer ? Memo() : nil
    }

    // MARK: Address targets

    /// The route to one address, as the kernel would use it for a packet this host sends (policy rules included).
    /// Returns nil when the kernel has no route (ENETUNREACH). Unreachable, prohibit and blackhole routes come back as
    /// a lookup of that type, so the caller can tell "no route" from "a route that refuses".
    public func lookup(_ address: IPAddress) throws(NetlinkError) -> RouteLookup? {
        try lookup(RouteQuery(address))
    }

    /// The route a packet described by `query` takes: a destination plus what a sender's flow carries (an output
    /// interface binding, a fwmark, a source address, UDP ports), as a tunnel or WireGuard asks for its own
    /// packets. Policy rules that match on those see them.
    public func lookup(_ query: RouteQuery) throws(NetlinkError) -> RouteLookup? {
        let address = query.destination
        let family = address.family == .ipv4 ? AF_INET : AF_INET6
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETROUTE), 0) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var rtm = rtmsg()
        rtm.rtm_family = UInt8(family)
        rtm.rtm_dst_len = UInt8(address.bytes.count * 8)
        if let src = query.source, src.family == address.family { rtm.rtm_src_len = UInt8(src.bytes.count * 8) }
        var appended = nlmsg_append(msg, &rtm, MemoryLayout<rtmsg>.size, 4 /* NLMSG_ALIGNTO */)
        func put(_ type: rtattr_type_t, _ bytes: [UInt8]) {
            if appended == 0 { appended = bytes.withUnsafeBytes { nla_put(msg, Int32(type.rawValue), Int32($0.count), $0.baseAddress) } }
        }
        put(RTA_DST, address.bytes)
        if let src = query.source, src.family == address.family { put(RTA_SRC, src.bytes) }
        if let oif = query.boundIndex { put(RTA_OIF, NativeInteger.bytes(UInt32(truncatingIfNeeded: oif))) }
        if let mark = query.mark { put(RTA_MARK, NativeInteger.bytes(mark)) }
        if query.udpSourcePort != nil || query.udpDestinationPort != nil {
            // inet_rtm_getroute / inet6_rtm_getroute take ports only with a protocol (TCP, UDP or ICMP).
            put(RTA_IP_PROTO, [UInt8(IPPROTO_UDP)])
            if let p = query.udpSourcePort { put(RTA_SPORT, [UInt8(p >> 8), UInt8(p & 0xFF)]) }
            if let p = query.udpDestinationPort { put(RTA_DPORT, [UInt8(p >> 8), UInt8(p & 0xFF)]) }
        }
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETROUTE build")
        }

        var found: ParsedRoute?
        var parseError: Int32 = 0
        do throws(NetlinkError) {
            try socket.exchange(msg, call: "RTM_GETROUTE \(address)") { hdr in
                switch ParsedRoute.parse(hdr) {
                case let .success(r): found = r
                case let .failure(e): parseError = e.code
                }
            }
        } catch {
            guard case let .kernel(e) = error.kind else { throw error }
            switch e {
            case ENETUNREACH: return nil
            case EHOSTUNREACH: return RouteLookup(family: address.family, type: .unreachable, link: nil)
            case EACCES: return RouteLookup(family: address.family, type: .prohibit, link: nil)
            case EINVAL: return RouteLookup(family: address.family, type: .blackhole, link: nil)
            default: throw error
            }
        }
        if parseError != 0 { throw NetlinkError(.library(parseError), call: "rtnl_route_parse") }
        guard let found else { throw NetlinkError(.kernel(EIO), call: "RTM_GETROUTE \(address): empty answer") }
        return try lookupResult(found, family: address.family)
    }

    // MARK: The default route

    /// The default route of a family: the unicast 0/0 (::/0) route of the main table the kernel would use — lowest
    /// metric first, skipping dead next hops, and next hops without carrier when the interface's
    /// `ignore_routes_with_linkdown` is set (otherwise the kernel keeps using them, and so do we: that is a
    /// connection_required answer, not a failover). Nil when there is none.
    public func defaultRoute(_ family: AddressFamily) throws(NetlinkError) -> RouteLookup? {
        let candidates = try mainTableDefaults(family)
        // Stable sort by metric keeps the kernel's dump order among equals.
        let ordered = candidates.enumerated().sorted { ($0.element.metric, $0.offset) < ($1.element.metric, $1.offset) }
        for (_, route) in ordered {
            for hop in route.nextHops where hop.flags & UInt32(RTNH_F_DEAD) == 0 {
                if hop.flags & UInt32(RTNH_F_LINKDOWN) != 0 && sysfs.ignoresRoutesWithLinkdown(ifindex: hop.ifindex, family) {
                    continue
                }
                var single = route
                single.nextHops = [hop]
                var result = try lookupResult(single, family: family)
                // A default route rarely names a preferred source; the kernel picks the one it would use towards the
                // gateway, which is what `ip route get` shows. Ask it the same way.
                if result.source == nil, let gw = hop.gateway, gw.family == family {
                    result.source = try? lookup(gw)?.source
                }
                return result
            }
        }
        return nil
    }

    // MARK: Links

    /// The state and kind of the link with this index, or nil if it is gone.
    public func link(index: Int) throws(NetlinkError) -> LinkState? {
        try link(index: Int32(index), name: nil)
    }

    /// The state and kind of the link with this name, or nil if there is none.
    public func link(name: String) throws(NetlinkError) -> LinkState? {
        try link(index: 0, name: name)
    }

    private func link(index: Int32, name wanted: String?) throws(NetlinkError) -> LinkState? {
        if wanted == nil, let known = memo?.links[index] { return known }
        let state = try readLink(index: index, name: wanted)
        if memo != nil, let state { memo!.links[Int32(state.index)] = .some(state) }
        if memo != nil, wanted == nil, state == nil { memo!.links[index] = .some(nil) }
        return state
    }

    private func readLink(index: Int32, name wanted: String?) throws(NetlinkError) -> LinkState? {
        var link: OpaquePointer?
        let r = rtnl_link_get_kernel(socket.sk, index, wanted, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError(.library(-r), call: "rtnl_link_get_kernel(\(wanted ?? String(index)))") }
        guard let link else { return nil }
        defer { rtnl_link_put(link) }

        let index = Int(rtnl_link_get_ifindex(link))
        let name = rtnl_link_get_name(link).map { String(cString: $0) } ?? "if\(index)"
        let flags = rtnl_link_get_flags(link)
        let operState = Int32(rtnl_link_get_operstate(link))
        var facts = sysfs.facts(name: name)
        facts.arpType = Int(rtnl_link_get_arptype(link))
        facts.pointToPoint = flags & UInt32(IFF_POINTOPOINT.rawValue) != 0
        facts.loopback = flags & UInt32(IFF_LOOPBACK.rawValue) != 0
        facts.linkKind = rtnl_link_get_type(link).map { String(cString: $0) }

        // Carrier as the kernel means it for forwarding: lower layer up, and not held dormant (802.1X or a WiFi
        // station that is not yet authorised) or down by the operational state.
        let lowerUp = flags & UInt32(IFF_LOWER_UP.rawValue) != 0
        let blockedOper: Set<Int32> = [
            Int32(IF_OPER_NOTPRESENT), Int32(IF_OPER_DOWN), Int32(IF_OPER_LOWERLAYERDOWN),
            Int32(IF_OPER_TESTING), Int32(IF_OPER_DORMANT),
        ]
        return LinkState(
            name: name, index: index,
            kind: InterfaceClassifier.classify(facts, overrides: interfaceOverrides),
            adminUp: flags & UInt32(IFF_UP.rawValue) != 0,
            carrier: lowerUp && !blockedOper.contains(operState),
            operState: Self.operStateName(operState),
            driver: facts.driver)
    }

    static func operStateName(_ s: Int32) -> String {
        ["unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"][Int(min(max(s, 0), 6))]
    }

    private func lookupResult(_ r: ParsedRoute, family: AddressFamily) throws(NetlinkError) -> RouteLookup {
        let hop = r.nextHops.first
        let link = try hop.flatMap { h throws(NetlinkError) in try self.link(index: h.ifindex) }
        return RouteLookup(
            family: family, type: RouteType(rtnType: r.type), link: link, gateway: hop?.gateway?.description,
            source: r.preferredSource?.description, metric: r.metric, table: r.table)
    }
}

struct ParseFailure: Error {
    var code: Int32
}

/// A route message's fields (ReachCore's pure decoder over the message's bytes).
typealias ParsedRoute = RouteMessage

extension RouteMessage {
    /// Decodes one RTM_NEWROUTE message; the error is a positive NLE_* code.
    static func parse(_ hdr: UnsafeMutablePointer<nlmsghdr>) -> Result<RouteMessage, ParseFailure> {
        guard Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWROUTE), let payload = Self.payload(hdr),
            let route = RouteMessage(payload: Array(payload))
        else { return .failure(ParseFailure(code: Int32(NLE_PARSE_ERR))) }
        return .success(route)
    }

    /// The bytes after the nlmsghdr, in place (nil when the length says there are none).
    static func payload(_ hdr: UnsafeMutablePointer<nlmsghdr>) -> UnsafeRawBufferPointer? {
        let total = Int(hdr.pointee.nlmsg_len)
        let headerLength = 16  // NLMSG_HDRLEN
        guard total > headerLength else { return nil }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(hdr).advanced(by: headerLength), count: total - headerLength)
    }
}
