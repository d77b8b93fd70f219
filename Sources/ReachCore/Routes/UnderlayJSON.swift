// The underlay in the JSON (`route.chain`, `route.underlay`, `route.underlay_error`) and in the text (the
// headline's "via clat → wwan0", a line per WireGuard device's peers).

extension RouteLookup {
    /// `chain`: every hop from the route's own interface down; `underlay`: the bottom hop when there is one below
    /// the route's link; `underlay_error`: why the walk stopped early, when it did.
    var underlayJSON: [(String, JSON)] {
        var members: [(String, JSON)] = []
        if let chain = underlay {
            members.append(("chain", .array(chain.hops.map(\.json))))
        } else if let link {
            members.append(("chain", .array([UnderlayHop(link: link).json])))
        } else {
            members.append(("chain", .array([])))
        }
        if let bottom = underlay?.underlay {
            members.append(
                (
                    "underlay",
                    .object([
                        ("interface", .string(bottom.link.name)), ("kind", .string(bottom.link.kind.rawValue)),
                        ("via", .optional(bottom.via?.rawValue)),
                    ])
                ))
        } else {
            members.append(("underlay", .null))
        }
        if let problem = underlay?.problem { members.append(("underlay_error", .string(problem))) }
        return members
    }
}

extension UnderlayHop {
    public var json: JSON {
        var m: [(String, JSON)] = [
            ("interface", .string(link.name)), ("kind", .string(link.kind.rawValue)), ("link_kind", .optional(infoKind)),
            ("via", .optional(via?.rawValue)), ("admin_up", .bool(link.adminUp)), ("carrier", .bool(link.carrier)),
        ]
        if let remote { m.append(("remote", .string(remote))) }
        if let fwmark { m.append(("fwmark", .int(Int64(fwmark)))) }
        if !peers.isEmpty { m.append(("peers", .array(peers.map(\.json)))) }
        return .object(m)
    }
}

extension UnderlayPeer {
    public var json: JSON {
        var m: [(String, JSON)] = [
            ("endpoint", .optional(endpoint)), ("allowed_ips", .array(allowedIPs.map(JSON.string))),
            ("underlay", .optional(underlay?.name)), ("kind", .optional(underlay?.kind.rawValue)), ("carries", .bool(carries)),
        ]
        if let problem { m.append(("problem", .string(problem))) }
        return .object(m)
    }
}

extension UnderlayChain {
    /// A line per WireGuard hop: "wg0 peers: 198.18.0.1:51820 → wwan0 (carries the route), 203.0.113.9:51820 → eth1".
    public var peerLines: [String] {
        hops.filter { !$0.peers.isEmpty }.map { hop in
            "\(hop.link.name) peers: "
                + hop.peers.map { p in
                    var text = (p.endpoint ?? "no endpoint") + " → " + (p.underlay?.name ?? "?")
                    if p.carries { text += " (carries the route)" }
                    if let problem = p.problem { text += " [\(problem)]" }
                    return text
                }.joined(separator: ", ")
        }
    }
}

extension Snapshot {
    /// The route's chain when it has an underlay ("vx0 → wwan0"): what change detection tracks.
    public var underlayNames: String? {
        guard let chain = route?.underlay, chain.underlay != nil else { return nil }
        return chain.names
    }
}
