// The route facts behind uplinks: every default route of the main table and of the tables `ip rule`s point to
// (mwan3 keeps one table per WAN, reached by firewall mark), read with two dumps per family: RTM_GETRULE and
// RTM_GETROUTE, as `ip rule show` and `ip route show table all` ask them.

import CNetlinkShims
import Glibc
import ReachCore

extension RouteResolver {
    /// The policy rules of a family (RTM_GETRULE dump). A kernel built without policy routing
    /// (CONFIG_IP_MULTIPLE_TABLES off) refuses the dump: that is no rules, and only the main table counts.
    public func policyRules(_ family: AddressFamily) throws(NetlinkError) -> [PolicyRule] {
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETRULE), NLM_F_DUMP) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        // struct fib_rule_hdr is 12 bytes; a dump reads only its family.
        var header = [UInt8](repeating: 0, count: 12)
        header[0] = UInt8(family == .ipv4 ? AF_INET : AF_INET6)
        let appended = header.withUnsafeMutableBytes { nlmsg_append(msg, $0.baseAddress, 12, 4 /* NLMSG_ALIGNTO */) }
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETRULE dump build")
        }
        var rules: [PolicyRule] = []
        do throws(NetlinkError) {
            try socket.exchange(msg, call: "RTM_GETRULE dump \(family.rawValue)") { hdr in
                let bytes = UnsafeRawBufferPointer(start: hdr, count: Int(hdr.pointee.nlmsg_len))
                if let rule = Self.parseRule(bytes) { rules.append(rule) }
            }
        } catch {
            if case let .kernel(e) = error.kind, e == EAFNOSUPPORT || e == EOPNOTSUPP { return [] }
            throw error
        }
        return rules
    }

    /// One RTM_NEWRULE message (header included): `struct fib_rule_hdr` (family, dst_len, src_len, tos, table, res1,
    /// res2, action, flags), then attributes, of which FRA_PRIORITY (6), FRA_TABLE (15) and FRA_L3MDEV (19) matter
    /// here (`linux/fib_rules.h`). Nil for anything else or anything malformed; attributes that run past the message
    /// end the walk.
    static func parseRule(_ message: UnsafeRawBufferPointer) -> PolicyRule? {
        let headerLength = 16  // NLMSG_HDRLEN
        let ruleHeader = 12
        guard message.count >= headerLength + ruleHeader else { return nil }
        let total = min(Int(message.loadUnaligned(as: UInt32.self)), message.count)
        let type = message.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        guard type == UInt16(RTM_NEWRULE), total >= headerLength + ruleHeader else { return nil }
        let familyCode = Int32(message[headerLength])
        guard familyCode == AF_INET || familyCode == AF_INET6 else { return nil }
        var rule = PolicyRule(
            family: familyCode == AF_INET ? .ipv4 : .ipv6, priority: 0,
            action: PolicyRule.Action(code: Int(message[headerLength + 7])), table: Int(message[headerLength + 4]))
        var offset = headerLength + ruleHeader
        while offset + 4 <= total {
            let length = Int(message.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let kind = message.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3FFF  // NLA_TYPE_MASK
            guard length >= 4, offset + length <= total else { break }
            let payload = length - 4
            switch kind {
            case 6 where payload >= 4:
                rule.priority = Int(message.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            case 15 where payload >= 4:
                rule.table = Int(message.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            case 19 where payload >= 1:
                rule.l3mdev = message[offset + 4] != 0
            default:
                break
            }
            offset += (length + 3) & ~3
        }
        return rule
    }

    /// Every unicast default route (0.0.0.0/0, ::/0) in the tables that make uplinks (`PolicyRule.countedTables`),
    /// one `RouteLookup` per next hop (a multipath default names each of its links), with the link's state.
    public func uplinkRoutes() throws(NetlinkError) -> [RouteLookup] {
        var links: [Int: LinkState?] = [:]
        var out: [RouteLookup] = []
        for family in [AddressFamily.ipv4, .ipv6] {
            let tables = PolicyRule.countedTables(try policyRules(family), family: family)
            for route in try defaultRouteDump(family) where tables.contains(route.table) {
                for hop in route.nextHops {
                    if links[hop.ifindex] == nil { links[hop.ifindex] = .some(try link(index: hop.ifindex)) }
                    out.append(
                        RouteLookup(
                            family: family, type: .unicast, link: links[hop.ifindex] ?? nil,
                            gateway: hop.gateway?.description, source: route.preferredSource?.description,
                            metric: route.metric, table: route.table))
                }
            }
        }
        return out
    }

    /// The uplinks' route facts: grouped (`Uplink.group`), with the configured uplinks that hold no default route now
    /// looked up by name. With `underlay`, each default route carries its chain first, so that a tunnel's or a CLAT's
    /// default route counts for the link it rides on.
    public func uplinks(
        specs: [UplinkSpec], primaryInterface: String?, underlay: KernelUnderlaySource? = nil
    ) throws(NetlinkError) -> [Uplink] {
        var routes = try uplinkRoutes()
        if let underlay {
            for i in routes.indices { underlay.attach(to: &routes[i], destination: .defaultRoute(routes[i].family)) }
        }
        let routed = Set(routes.compactMap { $0.physicalLink?.name })
        var links: [String: LinkState?] = [:]
        for spec in specs where !routed.contains(spec.interface) {
            links[spec.interface] = .some(try link(name: spec.interface))
        }
        return Uplink.group(routes: routes, specs: specs, links: links, primaryInterface: primaryInterface)
    }

    /// The unicast default routes of a family in every table, as the kernel dumps them (one RTM_GETROUTE dump).
    func defaultRouteDump(_ family: AddressFamily) throws(NetlinkError) -> [ParsedRoute] {
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETROUTE), NLM_F_DUMP) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var rtm = rtmsg()
        rtm.rtm_family = UInt8(family == .ipv4 ? AF_INET : AF_INET6)
        let appended = nlmsg_append(msg, &rtm, MemoryLayout<rtmsg>.size, 4 /* NLMSG_ALIGNTO */)
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETROUTE dump build")
        }
        var routes: [ParsedRoute] = []
        try socket.exchange(msg, call: "RTM_GETROUTE dump \(family.rawValue)") { hdr in
            guard case let .success(r) = ParsedRoute.parse(hdr) else { return }
            if r.dstLength == 0, r.type == Int(RTN_UNICAST), !r.nextHops.isEmpty { routes.append(r) }
        }
        return routes
    }
}
