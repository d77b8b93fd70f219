import Testing
@testable import ReachCore

/// A dual-WAN OpenWrt gateway as netifd sets it up: eth0 (Ethernet WAN, metric 10) and wwan0 (a Quectel EG25-G on
/// qmi_wwan, metric 20), plus, where a test says so, wlan1 (WiFi-as-WAN, metric 15) and mwan3's per-WAN tables.
enum DualWAN {
    static func link(_ name: String, _ kind: InterfaceKind, carrier: Bool = true, up: Bool = true) -> LinkState {
        LinkState(name: name, index: ["eth0": 2, "wlan1": 3, "wwan0": 4][name] ?? 9, kind: kind, adminUp: up, carrier: carrier)
    }

    static func route(
        _ link: LinkState, gateway: String?, metric: Int, table: Int = RoutingTable.main, family: AddressFamily = .ipv4
    ) -> RouteLookup {
        RouteLookup(family: family, type: .unicast, link: link, gateway: gateway, metric: metric, table: table)
    }

    static let eth0 = link("eth0", .ethernet)
    static let wwan0 = link("wwan0", .wwan)
    static let wlan1 = link("wlan1", .wifi)

    static func modem(registered: Bool = true, sim: SIMState = .ready) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = registered ? .home : .searching
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: -100)  // 3 bars on Android's LTE RSRP thresholds (-108 ≤ RSRP < -98)
        m.sim = sim
        m.packetService = .attached
        return m
    }

    /// The default target's snapshot with these default routes (the main answer is the lowest-metric main-table
    /// route, as the kernel picks it), derived.
    static func snapshot(
        _ routes: [RouteLookup], specs: [UplinkSpec] = [], links: [String: LinkState?] = [:], modems: [ModemState] = [],
        wifi: [WiFiLink] = [], target: Target = .defaultRoute, kernelDefault: String? = nil
    ) -> Snapshot {
        var s = Snapshot(time: Timestamp(seconds: 1_700_000_000), target: target)
        let main = routes.filter { $0.table == RoutingTable.main && $0.family == .ipv4 }.min { ($0.metric ?? 0) < ($1.metric ?? 0) }
        s.route = target == .defaultRoute ? main : route(eth0, gateway: nil, metric: 0)
        s.wwan = modems
        s.wifi = wifi
        s.uplinks = Uplink.group(
            routes: routes, specs: specs, links: links, primaryInterface: kernelDefault ?? main?.link?.name)
        s.derive()
        return s
    }

    static let both = [route(eth0, gateway: "192.0.2.1", metric: 10), route(wwan0, gateway: "198.18.0.1", metric: 20)]
}

@Suite struct UplinkTests {
    /// The first step: both uplinks reachable, eth0 (the lower metric) primary and listed first.
    @Test func twoUplinksBothReachableLowestMetricPrimary() {
        let s = DualWAN.snapshot(DualWAN.both.reversed(), modems: [DualWAN.modem()])
        #expect(s.reachable)
        #expect(s.uplinks.map(\.interface) == ["eth0", "wwan0"])
        #expect(s.uplinks.map(\.primary) == [true, false])
        #expect(s.uplinks.map(\.reachable) == [true, true])
        #expect(s.uplinks.map(\.metric) == [10, 20])
        #expect(s.uplinks[0].medium == .ethernet && s.uplinks[0].status == .wifi)
        #expect(s.uplinks[1].medium == .wwan && s.uplinks[1].status == .wwan)
        #expect(s.uplinks[1].flags == [.reachable, .isWWAN])
        #expect(s.uplinks[1].modem?.device == "/dev/cdc-wdm0")
        #expect(s.uplinks[0].modem == nil)
        #expect(s.uplinks.allSatisfy { $0.reason == nil })
    }

    /// The backup's peer goes away: wwan0 is not reachable and says why; the answer stays on eth0.
    @Test func backupWithoutCarrierIsNotReachableWhileTheAnswerStays() {
        let dead = DualWAN.link("wwan0", .wwan, carrier: false)
        let s = DualWAN.snapshot(
            [DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10), DualWAN.route(dead, gateway: "198.18.0.1", metric: 20)])
        #expect(s.reachable)
        #expect(s.medium == .ethernet)
        let wwan0 = s.uplinks[1]
        #expect(!wwan0.reachable)
        #expect(wwan0.flags == [.connectionRequired, .isWWAN])
        #expect(wwan0.status == .none)
        #expect(wwan0.reason == "wwan0 has no carrier (connection required)")
        #expect(wwan0.carrier == false)
    }

    /// The primary's route is removed: the answer and `primary` move to the backup.
    @Test func primaryFollowsTheAnswer() {
        let s = DualWAN.snapshot([DualWAN.both[1]])
        #expect(s.route?.link?.name == "wwan0")
        #expect(s.uplinks.map(\.interface) == ["wwan0"])
        #expect(s.uplinks[0].primary)
    }

    /// Three WANs (eth0 10, wlan1 15, wwan0 20): the primary first, then by metric.
    @Test func threeUplinksInMetricOrder() {
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.ssid = "depot"
        w.beaconSignalAvgDBm = -60  // 3 bars (-66 ≤ s < -55)
        let routes = [
            DualWAN.route(DualWAN.wwan0, gateway: "198.18.0.1", metric: 20),
            DualWAN.route(DualWAN.wlan1, gateway: "203.0.113.1", metric: 15),
            DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10),
        ]
        let s = DualWAN.snapshot(routes, modems: [DualWAN.modem()], wifi: [w])
        #expect(s.uplinks.map(\.interface) == ["eth0", "wlan1", "wwan0"])
        #expect(s.uplinks[1].wifi?.ssid == "depot")
        #expect(s.uplinks[1].wifi?.bars == 3)
        #expect(s.uplinks[1].medium == .wifi)
        #expect(s.uplinks.filter(\.primary).map(\.interface) == ["eth0"])
    }

    /// A locked SIM behind the backup: the backup needs a person; the answer over eth0 is untouched.
    @Test func lockedSIMOnTheBackupOnly() {
        let s = DualWAN.snapshot(DualWAN.both, modems: [DualWAN.modem(sim: .pinRequired)])
        #expect(s.reachable)
        #expect(!s.flags.contains(.interventionRequired))
        #expect(!s.uplinks[1].reachable)
        #expect(s.uplinks[1].flags.contains(.interventionRequired))
        #expect(s.uplinks[1].reason == "a SIM needs its PIN/PUK (intervention required)")
    }

    /// An IPv6-only backup (a carrier that gives no IPv4, e.g. T-Mobile US with 464XLAT): answered over ::/0.
    @Test func ipv6OnlyBackup() {
        let routes = [
            DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10),
            DualWAN.route(DualWAN.wwan0, gateway: "fe80::1", metric: 1024, family: .ipv6),
        ]
        let s = DualWAN.snapshot(routes)
        let wwan0 = s.uplinks[1]
        #expect(wwan0.interface == "wwan0")
        #expect(wwan0.reachable)
        #expect(wwan0.route?.family == .ipv6)
        #expect(wwan0.gateway == "fe80::1")
        #expect(wwan0.json["family"] == .string("ipv6"))
    }

    /// Neither family is usable (the link lost carrier): the IPv4 route stands for the uplink, as it does for the
    /// main answer.
    @Test func firstUsableFamilyStandsForTheUplink() {
        let down = DualWAN.link("eth0", .ethernet, carrier: false)
        let s = DualWAN.snapshot([
            DualWAN.route(down, gateway: "192.0.2.1", metric: 10),
            DualWAN.route(down, gateway: "fe80::1", metric: 1024, family: .ipv6),
        ])
        #expect(s.uplinks[0].route?.family == .ipv4)
        #expect(!s.uplinks[0].reachable)
    }

    /// mwan3 (`mwan3_create_iface_rules`): table N holds WAN N's default; a WAN whose main-table route netifd
    /// removed still holds its table's default and is still an uplink.
    @Test func mwan3TablesMakeUplinks() {
        let routes = [
            DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10),
            DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 0, table: 1),
            DualWAN.route(DualWAN.wwan0, gateway: "198.18.0.1", metric: 0, table: 2),
        ]
        let s = DualWAN.snapshot(routes)
        #expect(s.uplinks.map(\.interface) == ["eth0", "wwan0"])
        #expect(s.uplinks[0].tables == [254, 1])
        #expect(s.uplinks[0].metric == 10)  // the main table's route stands for it
        #expect(s.uplinks[1].tables == [2])
        #expect(s.uplinks[1].tablesText == "table 2")
        #expect(s.uplinks[0].tablesText == "tables main, 1")
        #expect(s.uplinks[1].reachable)
    }

    /// A multipath default (`ip route add default nexthop via A dev eth0 nexthop via B dev wwan0`) arrives as one
    /// route per next hop: both links are uplinks.
    @Test func multipathDefaultNamesEachLink() {
        let s = DualWAN.snapshot(
            [DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 0), DualWAN.route(DualWAN.wwan0, gateway: "198.18.0.1", metric: 0)])
        #expect(Set(s.uplinks.map(\.interface)) == ["eth0", "wwan0"])
        #expect(s.uplinks[0].interface == "eth0" && s.uplinks[0].primary)
    }

    // MARK: Configured uplinks

    @Test func configuredUplinkWithoutARouteStaysListed() {
        let specs = [UplinkSpec(interface: "eth0", role: .primary), UplinkSpec(interface: "wwan0", role: .backup)]
        let cases: [(LinkState?, String)] = [
            (DualWAN.wwan0, "no default route via wwan0"),  // modem still connecting, or mwan3 took the route away
            (DualWAN.link("wwan0", .wwan, carrier: false), "wwan0 has no carrier and no default route"),
            (DualWAN.link("wwan0", .wwan, carrier: false, up: false), "wwan0 is down"),
            (nil, "wwan0 does not exist"),
        ]
        for (link, reason) in cases {
            let s = DualWAN.snapshot([DualWAN.both[0]], specs: specs, links: ["wwan0": link])
            #expect(s.uplinks.map(\.interface) == ["eth0", "wwan0"], "\(reason)")
            let wwan0 = s.uplinks[1]
            #expect(!wwan0.reachable, "\(reason)")
            #expect(wwan0.reason == reason)
            #expect(wwan0.role == .backup)
            #expect(wwan0.route == nil && wwan0.tables.isEmpty && wwan0.metric == nil, "\(reason)")
            #expect(wwan0.label == "backup wwan0")
        }
    }

    @Test func configuredOrderAfterThePrimaryThenTheRest() {
        let routes = [
            DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10),
            DualWAN.route(DualWAN.wlan1, gateway: "203.0.113.1", metric: 15),
            DualWAN.route(DualWAN.wwan0, gateway: "198.18.0.1", metric: 20),
            DualWAN.route(DualWAN.link("eth1", .ethernet), gateway: "192.0.2.129", metric: 5, table: 7),
        ]
        // The operator lists the modem first; eth0 stays first because it carries the default route.
        let s = DualWAN.snapshot(
            routes, specs: [UplinkSpec(interface: "wwan0", role: .backup), UplinkSpec(interface: "wlan1")])
        #expect(s.uplinks.map(\.interface) == ["eth0", "wwan0", "wlan1", "eth1"])
    }

    /// For an address target the primary is the kernel's default route, as the route collection found it.
    @Test func otherTargetsKeepTheKernelsPrimary() {
        let s = DualWAN.snapshot(DualWAN.both, target: .address("192.0.2.77"), kernelDefault: "wwan0")
        #expect(s.uplinks.first?.interface == "wwan0")
        #expect(s.uplinks.filter(\.primary).map(\.interface) == ["wwan0"])
    }

    /// The uplinks could not be read (a netlink failure after the main answer): said, and the answer stands.
    @Test func uplinksErrorLeavesTheAnswer() {
        var s = DualWAN.snapshot([DualWAN.both[0]])
        s.uplinks = []
        s.uplinksError = "RTM_GETRULE dump ipv4: no answer from the kernel"
        s.derive()
        #expect(s.reachable)
        #expect(s.json()["uplinks_error"] == .string("RTM_GETRULE dump ipv4: no answer from the kernel"))
        #expect(s.json()["error"] == nil)
        #expect(SnapshotText.render(s).contains("\n  uplinks unavailable: RTM_GETRULE dump ipv4: no answer from the kernel"))
    }

    @Test func noUplinksWithoutDefaultRoutes() {
        let s = DualWAN.snapshot([])
        #expect(s.uplinks.isEmpty)
        #expect(s.json()["uplinks"] == .array([]))
    }

    // MARK: Policy rules

    /// The kernel's three default rules (`ip rule show` on a fresh box: 0 local, 32766 main, 32767 default).
    @Test func defaultRulesCountMainAndDefault() {
        let rules = [
            PolicyRule(family: .ipv4, priority: 0, action: .toTable, table: 255),
            PolicyRule(family: .ipv4, priority: 32766, action: .toTable, table: 254),
            PolicyRule(family: .ipv4, priority: 32767, action: .toTable, table: 253),
        ]
        #expect(PolicyRule.countedTables(rules, family: .ipv4) == [254, 253])
        #expect(PolicyRule.countedTables([], family: .ipv4) == [254])  // no policy routing: main only
    }

    /// mwan3's rules for WANs 1 and 2 (`mwan3_create_iface_rules`: pref id+1000 iif lookup id, id+2000 fwmark lookup
    /// id, id+3000 fwmark unreachable), a VRF's l3mdev rule, and a rule of the other family.
    @Test func mwan3RulesAddTheirTables() {
        let rules = [
            PolicyRule(family: .ipv4, priority: 1001, action: .toTable, table: 1),
            PolicyRule(family: .ipv4, priority: 1002, action: .toTable, table: 2),
            PolicyRule(family: .ipv4, priority: 2001, action: .toTable, table: 1),
            PolicyRule(family: .ipv4, priority: 2002, action: .toTable, table: 2),
            PolicyRule(family: .ipv4, priority: 3001, action: .unreachable, table: 0),
            PolicyRule(family: .ipv4, priority: 1000, action: .toTable, table: 0, l3mdev: true),
            PolicyRule(family: .ipv4, priority: 2254, action: .blackhole, table: 0),
            PolicyRule(family: .ipv6, priority: 2003, action: .toTable, table: 3),
            PolicyRule(family: .ipv4, priority: 32766, action: .toTable, table: 254),
        ]
        #expect(PolicyRule.countedTables(rules, family: .ipv4) == [254, 1, 2])
        #expect(PolicyRule.countedTables(rules, family: .ipv6) == [254, 3])
        #expect(PolicyRule.Action(code: 1) == .toTable)
        #expect(PolicyRule.Action(code: 8) == .prohibit)
        #expect(PolicyRule.Action(code: 42) == .other(42))
    }

    // MARK: JSON and text

    @Test func jsonOfAnUplink() {
        let s = DualWAN.snapshot(DualWAN.both, specs: [UplinkSpec(interface: "wwan0", role: .backup)], modems: [DualWAN.modem()])
        let j = s.json()["uplinks"]?.arrayValue ?? []
        #expect(j.count == 2)
        let wwan0 = j[1]
        #expect(wwan0["interface"] == .string("wwan0"))
        #expect(wwan0["kind"] == .string("wwan"))
        #expect(wwan0["role"] == .string("backup"))
        #expect(wwan0["primary"] == .bool(false))
        #expect(wwan0["reachable"] == .bool(true))
        #expect(wwan0["reason"] == .null)
        #expect(wwan0["flags"] == .array([.string("reachable"), .string("is_wwan")]))
        #expect(wwan0["tables"] == .array([.int(254)]))
        #expect(wwan0["metric"] == .int(20))
        #expect(wwan0["gateway"] == .string("198.18.0.1"))
        #expect(wwan0["carrier"] == .bool(true))
        #expect(wwan0["wwan"]?["generation"] == .string("4g"))
        #expect(wwan0["wwan"]?["bars"] == .int(3))
        #expect(wwan0["wwan"]?["packet_service"] == .string("attached"))
        #expect(wwan0["wifi"] == .null)
        #expect(j[0]["role"] == .null)
        #expect(j[0]["primary"] == .bool(true))
        // The key sits between `wifi` and `sources`, so the other keys keep their places.
        let keys = s.json().objectValue?.map(\.0) ?? []
        #expect(keys.firstIndex(of: "uplinks") == keys.firstIndex(of: "wifi").map { $0 + 1 })
    }

    @Test func textHasOneLinePerUplinkUnderTheAnswer() {
        let dead = DualWAN.link("wwan0", .wwan, carrier: false)
        let s = DualWAN.snapshot(
            [DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10), DualWAN.route(dead, gateway: "198.18.0.1", metric: 20),
             DualWAN.route(dead, gateway: "198.18.0.1", metric: 0, table: 2)],
            specs: [UplinkSpec(interface: "wwan0", role: .backup)], modems: [DualWAN.modem()])
        let lines = SnapshotText.render(s).split(separator: "\n").map(String.init)
        #expect(lines[0] == "reachable over ethernet via eth0 (gateway 192.0.2.1)")
        #expect(lines.contains("  uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10"))
        #expect(lines.contains(
            "  uplink wwan0 (role backup): not reachable: wwan0 has no carrier (connection required) · metric 20 · tables main, 2 · 4G ▂▄▆_ 3/4"))
        // Under the answer: before the modem's own line.
        let uplinkLine = lines.firstIndex { $0.hasPrefix("  uplink wwan0") }!
        let modemLine = lines.firstIndex { $0.hasPrefix("  WWAN ") }!
        #expect(uplinkLine < modemLine)
    }
}

extension Uplink {
    var metric: Int? { route?.metric }
    var gateway: String? { route?.gateway }
    var carrier: Bool? { link?.carrier }
}
