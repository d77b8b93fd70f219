// The route facts behind uplinks: every default route of the main table and of the tables `ip rule`s point to
// (mwan3 keeps one table per WAN, reached by firewall mark), read with two dumps per family: RTM_GETRULE and
// RTM_GETROUTE, as `ip rule show` and `ip route show table all` ask them. With one table to read (no rule points
// elsewhere), the route dump asks the kernel for that table alone (a strict-checking dump filter, Linux 4.20+).

import CNetlinkShims
import Glibc
import ReachCore

extension RouteResolver {
    /// The policy rules of a family (RTM_GETRULE dump). A kernel built without policy routing
    /// (CONFIG_IP_MULTIPLE_TABLES off) refuses the dump: that is no rules, and only the main table counts.
    public func policyRules(_ family: AddressFamily) throws(NetlinkError) -> [PolicyRule] {
        if let known = memo?.rules[family] { return known }
        let rules = try readPolicyRules(family)
        memo?.rules[family] = rules
        return rules
    }

    private func readPolicyRules(_ family: AddressFamily) throws(NetlinkError) -> [PolicyRule] {
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
            for route in try defaultRouteDump(family) {
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

    /// The unicast default routes of a family in the tables that make uplinks (`PolicyRule.countedTables`, the main
    /// table always among them), from one RTM_GETROUTE dump. Routes to anything but 0/0 are skipped on their header's
    /// bytes, without being decoded.
    /// `rules`: the family's policy rules when the caller has read them already.
    func defaultRouteDump(_ family: AddressFamily, rules: [PolicyRule]? = nil) throws(NetlinkError) -> [ParsedRoute] {
        if let known = memo?.defaults[family] { return known }
        let read: [PolicyRule]
        if let rules { read = rules } else { read = try policyRules(family) }
        let tables = PolicyRule.countedTables(read, family: family)
        let routes = try dumpDefaults(family, onlyTable: tables.count == 1 ? tables.first : nil).filter {
            tables.contains($0.table)
        }
        memo?.defaults[family] = routes
        return routes
    }

    /// The main table's unicast default routes, the default route's candidates: taken from the dump the uplinks share
    /// when the policy rules can be read, else asked of the main table alone. The route needs no rule; a rule dump
    /// that cannot even be sent (qemu-user answers EOPNOTSUPP for every rtnetlink type it does not translate,
    /// RTM_GETRULE among them, linux-user/fd-trans.c) costs the uplinks their answer, never the route its own.
    func mainTableDefaults(_ family: AddressFamily) throws(NetlinkError) -> [ParsedRoute] {
        let main = Int(RT_TABLE_MAIN.rawValue)
        let rules: [PolicyRule]?
        do throws(NetlinkError) {
            rules = try policyRules(family)
        } catch {
            rules = nil
        }
        let routes: [ParsedRoute]
        if let rules { routes = try defaultRouteDump(family, rules: rules) } else { routes = try dumpDefaults(family, onlyTable: main) }
        return routes.filter { $0.table == main }
    }

    /// One RTM_GETROUTE dump of a family's unicast default routes; with `onlyTable`, the kernel is asked for that
    /// table alone (NETLINK_GET_STRICT_CHK on for the request, RTA_TABLE as the filter: `ip route show table N` asks
    /// the same way). A kernel without strict checking refuses the option and dumps every table.
    func dumpDefaults(_ family: AddressFamily, onlyTable: Int?) throws(NetlinkError) -> [ParsedRoute] {
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETROUTE), NLM_F_DUMP) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var rtm = rtmsg()
        rtm.rtm_family = UInt8(family == .ipv4 ? AF_INET : AF_INET6)
        var appended = nlmsg_append(msg, &rtm, MemoryLayout<rtmsg>.size, 4 /* NLMSG_ALIGNTO */)
        let filtered = onlyTable != nil && appended == 0 && socket.strictChecking(true)
        if filtered, let table = onlyTable {
            appended = nla_put_u32(msg, Int32(RTA_TABLE.rawValue), UInt32(truncatingIfNeeded: table))
        }
        defer { if filtered { _ = socket.strictChecking(false) } }
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETROUTE dump build")
        }
        var routes: [ParsedRoute] = []
        try socket.exchange(msg, call: "RTM_GETROUTE dump \(family.rawValue)") { hdr in
            guard Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWROUTE), let payload = ParsedRoute.payload(hdr),
                ParsedRoute.isDefault(payload: payload), let r = ParsedRoute(payload: Array(payload)), !r.nextHops.isEmpty
            else { return }
            routes.append(r)
        }
        return routes
    }
}
