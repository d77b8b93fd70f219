// Uplinks: every interface that holds a default route, each answered as if it were the only way out.
//
// A multi-WAN gateway has one default route per WAN: OpenWrt's netifd installs each with the interface's metric in
// the main table, and mwan3 adds one routing table per WAN (a default route in each) reached through `ip rule`s by
// firewall mark. The kernel uses one of them for unmarked traffic; the others are the backups nobody uses until the
// outage. An uplink here is an interface holding an IPv4 or IPv6 default route in the main table or in any table
// an `ip rule` points to. Each gets the main answer's merge (`Snapshot.derive`) with its own route, so every rule of
// that merge (carrier, a locked SIM, the modem's data session) applies to every uplink alike.
//
// Pure: the route collection (RouteResolver.uplinkRoutes, rtnetlink) hands in plain values.

/// What the configuration says an uplink is for. Informational: it names the uplink in text and diagnostics
/// ("backup wwan0: …"); which uplink carries the traffic is the kernel's choice (`Uplink.primary`).
public enum UplinkRole: String, Sendable, Equatable, CaseIterable {
    case primary, backup
}

/// An uplink named in the configuration (`uplinks: [{"interface": "wwan0", "role": "backup"}]`): listed even while
/// it holds no default route (a modem still connecting, a route mwan3 took away), in the configured order.
public struct UplinkSpec: Sendable, Equatable {
    public var interface: String
    public var role: UplinkRole?

    public init(interface: String, role: UplinkRole? = nil) {
        self.interface = interface
        self.role = role
    }
}

/// The kernel's routing table numbers that have names everywhere (`linux/rtnetlink.h`, `/etc/iproute2/rt_tables`).
public enum RoutingTable {
    public static let main = 254
    public static let `default` = 253
    public static let local = 255

    /// "main", "default", "local", or the number.
    public static func name(_ table: Int) -> String {
        switch table {
        case main: return "main"
        case `default`: return "default"
        case local: return "local"
        default: return String(table)
        }
    }
}

/// One uplink: the facts the route collection found, and the answer derived from them with the modems and WiFi.
public struct Uplink: Sendable, Equatable {
    // MARK: Facts (route collection)

    public var interface: String
    /// The link's state and kind; nil when no interface of that name exists (a configured uplink not created yet).
    public var link: LinkState?
    /// Every default route (IPv4 and IPv6) this interface holds, in the main table and in the tables `ip rule`s
    /// point to; one per next hop of a multipath route.
    public var routes: [RouteLookup]
    /// The configured role, if the uplink is configured.
    public var role: UplinkRole?
    /// Its position in the configuration's `uplinks`, if configured.
    public var configIndex: Int?
    /// The default target's route leaves through this uplink. Set by the route collection from the kernel's choice
    /// of default route; for the default target `Snapshot.derive` sets it from the answer's own route.
    public var primary: Bool

    // MARK: Derived (`Snapshot.derive`)

    /// The route the answer was derived from (the IPv4 default when it is usable, else the IPv6 one).
    public var route: RouteLookup?
    public var flags: ReachabilityFlags
    public var status: ReachabilityStatus
    public var medium: Medium
    public var reachable: Bool
    /// Why it is not reachable, in a few words; nil when it is.
    public var reason: String?
    /// The modem whose network interface this is.
    public var modem: ModemState?
    /// The WiFi station this is.
    public var wifi: WiFiLink?
    /// How the modem's bars are computed: the snapshot's policy.
    public var signalPolicy: SignalPolicy = .android
    /// Validation (`Validation.swift`): on for this snapshot, and this uplink's reading (nil: no round yet).
    public var validationEnabled = false
    public var validation: ValidationReading?

    public init(
        interface: String, link: LinkState?, routes: [RouteLookup], role: UplinkRole? = nil, configIndex: Int? = nil,
        primary: Bool = false
    ) {
        self.interface = interface
        self.link = link
        self.routes = routes
        self.role = role
        self.configIndex = configIndex
        self.primary = primary
        self.flags = []
        self.status = .unknown
        self.medium = .none
        self.reachable = false
    }

    public var kind: InterfaceKind? { link?.kind }

    /// The tables holding its default routes: main first, then by number.
    public var tables: [Int] {
        Set(routes.compactMap(\.table)).sorted { (Self.notMain($0), $0) < (Self.notMain($1), $1) }
    }

    /// 0 for the main table (what the kernel uses for unmarked traffic), 1 for any other.
    static func notMain(_ table: Int?) -> Int { table == RoutingTable.main ? 0 : 1 }

    /// "table 1", "tables main, 2"; nil when the uplink's routes are all in the main table (or it has none).
    public var tablesText: String? {
        let t = tables
        guard !t.isEmpty, t != [RoutingTable.main] else { return nil }
        return (t.count == 1 ? "table " : "tables ") + t.map(RoutingTable.name).joined(separator: ", ")
    }

    /// The route of a family that stands for the uplink: main table first (what the kernel uses without marks), then
    /// the lowest metric, then the lowest table number.
    public func bestRoute(_ family: AddressFamily) -> RouteLookup? {
        routes.filter { $0.family == family }.min { a, b in
            (Self.notMain(a.table), a.metric ?? 0, a.table ?? 0) < (Self.notMain(b.table), b.metric ?? 0, b.table ?? 0)
        }
    }
}

// MARK: - Grouping (the route collection's pure half)

extension Uplink {
    /// Groups default routes into uplinks by the link they leave on and adds the configured uplinks that hold none
    /// now. A route with an underlay (a CLAT's, a tunnel's, a VPN's) counts for the link it rides on, the bottom of
    /// its chain: a tunnel is not an uplink of its own.
    ///
    /// - Parameters:
    ///   - routes: default routes of the counted tables (see `countedTables`), one per next hop; routes without an
    ///     egress link are skipped.
    ///   - specs: the configured uplinks, in order.
    ///   - links: the state of the configured interfaces (nil: no such interface), for those without a route.
    ///   - primaryInterface: the interface the kernel's default route (the default target's answer) leaves by.
    /// - Returns: the uplinks, not yet derived or ordered.
    public static func group(
        routes: [RouteLookup], specs: [UplinkSpec] = [], links: [String: LinkState?] = [:], primaryInterface: String?
    ) -> [Uplink] {
        var order: [String] = []
        var byName: [String: Uplink] = [:]
        for r in routes {
            guard let link = r.physicalLink else { continue }
            if byName[link.name] == nil {
                order.append(link.name)
                byName[link.name] = Uplink(interface: link.name, link: link, routes: [])
            }
            byName[link.name]!.routes.append(r)
        }
        for (i, spec) in specs.enumerated() {
            if byName[spec.interface] == nil {
                order.append(spec.interface)
                byName[spec.interface] = Uplink(interface: spec.interface, link: links[spec.interface] ?? nil, routes: [])
            }
            byName[spec.interface]!.role = spec.role
            byName[spec.interface]!.configIndex = i
        }
        return order.map { name in
            var u = byName[name]!
            u.primary = name == primaryInterface
            return u
        }
    }

    /// The tables whose default routes make uplinks: main, plus the given tables that `ip rule`s send lookups to,
    /// except local (which holds this host's own addresses, never an uplink).
    public static func countedTables(ruleTables: [Int]) -> Set<Int> {
        Set(ruleTables).union([RoutingTable.main]).subtracting([RoutingTable.local])
    }

    /// The order of `uplinks`: the primary first, then the configured ones in configuration order, then the rest by
    /// their best metric and name.
    public static func ordered(_ uplinks: [Uplink]) -> [Uplink] {
        uplinks.sorted { a, b in
            if a.primary != b.primary { return a.primary }
            switch (a.configIndex, b.configIndex) {
            case let (x?, y?): return x < y
            case (_?, nil): return true
            case (nil, _?): return false
            case (nil, nil):
                let ma = a.route?.metric ?? Int.max
                let mb = b.route?.metric ?? Int.max
                return (ma, a.interface) < (mb, b.interface)
            }
        }
    }
}

// MARK: - The per-uplink merge

extension Uplink {
    /// Derives the answer of this uplink from `base`'s modems and WiFi, as `base` would be derived if this uplink's
    /// route were the only way out: the same `Snapshot.derive`, called with this uplink's IPv4 default route and, when
    /// that is not usable, its IPv6 one.
    public mutating func derive(with base: Snapshot) {
        modem = WWANPath.modem(carrying: interface, in: base.wwan)
        wifi = base.wifi.first { $0.interface == interface }
        signalPolicy = base.signalPolicy
        var alone = Snapshot(time: base.time, target: .defaultRoute, signalPolicy: base.signalPolicy)
        alone.wwan = base.wwan
        alone.wifi = base.wifi
        alone.wwanSource = base.wwanSource
        alone.wifiSource = base.wifiSource
        var first: Snapshot?
        var chosen: Snapshot?
        for r in [bestRoute(.ipv4), bestRoute(.ipv6)].compactMap({ $0 }) {
            var s = alone
            s.route = r
            s.derive()
            if first == nil { first = s }
            if s.reachable {
                chosen = s
                break
            }
        }
        guard let s = chosen ?? first else {
            // No default route now (a configured uplink): not reachable, and say what the link itself shows.
            route = nil
            flags = (modem?.sim.needsIntervention ?? false) ? [.interventionRequired, .connectionRequired] : []
            status = .none
            medium = .none
            reachable = false
            reason = routelessReason
            return
        }
        route = s.route
        flags = s.flags
        status = s.status
        medium = s.medium
        reachable = s.reachable
        reason = reachable ? nil : SnapshotText.notReachableReason(s)
    }

    var routelessReason: String {
        guard let link else { return "\(interface) does not exist" }
        if !link.adminUp { return "\(interface) is down" }
        if modem?.sim.needsIntervention == true { return "a SIM needs its PIN/PUK (intervention required)" }
        if !link.carrier { return "\(interface) has no carrier and no default route" }
        return "no default route via \(interface)"
    }

    /// How the uplink is named in text: "backup wwan0", "primary eth0", or just the name.
    public var label: String {
        if let role { return "\(role.rawValue) \(interface)" }
        return interface
    }
}

extension Snapshot {
    /// Derives every uplink (`Uplink.derive`), marks the primary and puts the uplinks in order. For the default
    /// target the primary is the uplink the answer's route leaves by; for other targets it is what the route
    /// collection found the kernel's default to be.
    public mutating func deriveUplinks() {
        guard !uplinks.isEmpty else { return }
        let base = self
        let primaryName: String? =
            target == .defaultRoute ? route?.physicalLink?.name : uplinks.first(where: \.primary)?.interface
        for i in uplinks.indices {
            uplinks[i].primary = primaryName != nil && uplinks[i].interface == primaryName
            uplinks[i].derive(with: base)
        }
        uplinks = Uplink.ordered(uplinks)
    }
}

// MARK: - JSON and text

extension Uplink {
    /// One element of the snapshot's `uplinks` array (docs/how-it-works.md, "Uplinks").
    public var json: JSON {
        var members: [(String, JSON)] = [
            ("interface", .string(interface)),
            ("kind", .optional(kind?.rawValue)),
            ("role", .optional(role?.rawValue)),
            ("primary", .bool(primary)),
            ("reachable", .bool(reachable)),
            ("reason", .optional(reason)),
            ("status", .string(status.rawValue)),
            ("medium", .string(medium.rawValue)),
            ("flags", .array(flags.names.map(JSON.string))),
            ("flags_raw", .int(Int64(flags.rawValue))),
            ("family", .optional(route?.family.rawValue)),
            ("tables", .array(tables.map { .int($0) })),
            ("metric", .optional(route?.metric)),
            ("gateway", .optional(route?.gateway)),
            ("carrier", .optional(link?.carrier)),
            // The links riding on it whose default routes count for it (a CLAT, a tunnel, a VPN, a VLAN): its upper
            // links, as the kernel calls a stacked device's (`upper_*` in sysfs).
            ("upper", .array(Set(routes.compactMap { $0.link?.name }).subtracting([interface]).sorted().map(JSON.string))),
        ]
        if let m = modem {
            members.append((
                "wwan",
                .object([
                    ("device", .string(m.device)), ("generation", .string(m.generation.name)), ("bars", .int(m.bars(signalPolicy))),
                    ("registration", .string(m.registration.rawValue)),
                    ("packet_service", .optional(m.packetService?.rawValue)),
                    ("data_session", .optional(m.dataSession?.rawValue)),
                ])
            ))
        } else {
            members.append(("wwan", .null))
        }
        if let w = wifi {
            members.append((
                "wifi",
                .object([
                    ("associated", .bool(w.associated)), ("ssid", .optional(w.ssid)), ("bars", .int(w.bars)),
                    ("signal_dbm", .optional(w.barSignalDBm)),
                ])
            ))
        } else {
            members.append(("wifi", .null))
        }
        members.append(contentsOf: validationMembers)
        return .object(members)
    }
}

extension SnapshotText {
    /// "uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10" — one line per uplink under
    /// the answer.
    public static func uplinkLine(_ u: Uplink, bars: Int? = nil) -> String {
        var tags: [String] = []
        if u.primary { tags.append("primary") }
        if let role = u.role, !(role == .primary && u.primary) { tags.append("role \(role.rawValue)") }
        var line = "uplink \(u.interface)" + (tags.isEmpty ? "" : " (" + tags.joined(separator: ", ") + ")") + ": "
        if u.reachable {
            line += "reachable over \(u.medium.rawValue)"
            // The route standing for it may be a tunnel's riding on it: "via clat → wwan0".
            if let chain = u.route?.underlay, chain.underlay != nil { line += " via \(chain.names)" }
            if let r = u.route { line += r.gateway.map { " (gateway \($0))" } ?? " (on-link)" }
        } else {
            line += "not reachable: " + (u.reason ?? "?")
        }
        var parts = [line]
        if let r = u.route {
            if r.family == .ipv6 { parts.append("ipv6") }
            if let m = r.metric { parts.append("metric \(m)") }
        }
        if let tables = u.tablesText { parts.append(tables) }
        if !u.validationText.isEmpty { parts.append(String(u.validationText.dropFirst(3))) }
        if let m = u.modem, !m.present || m.error != nil {
            // A modem that could not be read has no radio state to show (its failure is on its own line).
            parts.append(m.present ? "radio unknown" : "modem absent")
        } else if let m = u.modem {
            let b = bars ?? m.bars(u.signalPolicy)
            parts.append((m.generation == .none ? "no service" : m.generation.name.uppercased()) + " \(barGlyphs(b)) \(b)/4")
        } else if let w = u.wifi, w.associated {
            let b = bars ?? w.bars
            parts.append("\"\(w.ssid ?? "?")\" \(barGlyphs(b)) \(b)/4")
        }
        return parts.joined(separator: " · ")
    }
}

// MARK: - Policy rules

/// One `ip rule` (a FIB rule, `linux/fib_rules.h`), as far as uplinks care: which table it sends lookups to.
public struct PolicyRule: Sendable, Equatable {
    /// FR_ACT_*: TO_TBL 1, GOTO 2, NOP 3, BLACKHOLE 6, UNREACHABLE 7, PROHIBIT 8.
    public enum Action: Sendable, Equatable {
        case toTable, goto, nop, blackhole, unreachable, prohibit, other(Int)

        public init(code: Int) {
            switch code {
            case 1: self = .toTable
            case 2: self = .goto
            case 3: self = .nop
            case 6: self = .blackhole
            case 7: self = .unreachable
            case 8: self = .prohibit
            default: self = .other(code)
            }
        }
    }

    public var family: AddressFamily
    public var priority: Int
    public var action: Action
    /// The table (FRA_TABLE, else the header's 8-bit table); 0 when the rule names none.
    public var table: Int
    /// FRA_L3MDEV: the table is the VRF device's, chosen per packet; no fixed table to count.
    public var l3mdev: Bool

    public init(family: AddressFamily, priority: Int, action: Action, table: Int, l3mdev: Bool = false) {
        self.family = family
        self.priority = priority
        self.action = action
        self.table = table
        self.l3mdev = l3mdev
    }

    /// The tables whose default routes make uplinks for one family: main, plus every fixed table a rule of that
    /// family sends lookups to, except local.
    public static func countedTables(_ rules: [PolicyRule], family: AddressFamily) -> Set<Int> {
        Uplink.countedTables(
            ruleTables: rules.filter { $0.family == family && $0.action == .toTable && !$0.l3mdev && $0.table != 0 }
                .map(\.table))
    }
}
