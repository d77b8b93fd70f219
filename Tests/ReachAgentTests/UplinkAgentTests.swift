import Foundation
import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

/// A dual-WAN gateway's route parts as the route source hands them to the hub: eth0 (metric 10) and wwan0 (a
/// Sierra EM7455 on qmi_wwan, metric 20).
enum DualWANParts {
    static func link(_ name: String, _ kind: InterfaceKind, carrier: Bool = true) -> LinkState {
        LinkState(name: name, index: name == "eth0" ? 2 : 3, kind: kind, adminUp: true, carrier: carrier)
    }

    static func route(_ link: LinkState, _ gateway: String, metric: Int) -> RouteLookup {
        RouteLookup(family: .ipv4, type: .unicast, link: link, gateway: gateway, metric: metric, table: 254)
    }

    /// The default target's route part: the main answer is the lowest metric.
    static func part(eth0: Bool = true, eth0Carrier: Bool = true, wwan0: Bool = true, wwan0Carrier: Bool = true,
                     specs: [UplinkSpec] = [], links: [String: LinkState?] = [:]) -> RouteView {
        var routes: [RouteLookup] = []
        if eth0 { routes.append(route(link("eth0", .ethernet, carrier: eth0Carrier), "192.0.2.1", metric: 10)) }
        if wwan0 { routes.append(route(link("wwan0", .wwan, carrier: wwan0Carrier), "198.18.0.1", metric: 20)) }
        var v = RouteView()
        v.route = routes.first
        v.supportsIPv4 = v.route.map { ReachabilityFlags.derive(from: $0).isReachable } ?? false
        v.uplinks = Uplink.group(routes: routes, specs: specs, links: links, primaryInterface: v.route?.link?.name)
        return v
    }

    static func modem(registered: Bool = true, rsrp: Double = -95) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = registered ? .home : .searching
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: rsrp)
        m.sim = .ready
        m.packetService = registered ? .attached : .detached
        return m
    }

    static func snapshot(_ part: RouteView, modems: [ModemState] = [modem()]) -> Snapshot {
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        part.apply(to: &s)
        s.wwan = modems
        s.derive()
        return s
    }
}

/// The hub with a fake route source and a manual clock: what the agent writes for uplink changes.
@Suite struct UplinkAgentTests {
    typealias Rig = AgentTests.Rig

    /// The library's promise: a change on a backup notifies, once, naming the uplink, with the hold-down applied to
    /// that uplink alone; every periodic line carries the uplinks.
    @Test func backupChangeIsOneLineAfterItsHoldDownAndPeriodicLinesCarryUplinks() async throws {
        let rig = Rig(holdDown: 5)
        try await rig.run { r in
            r.route.set(DualWANParts.part())
            r.wifi.set([])
            #expect(await eventually { r.lines.of(.start).count == 1 })
            let start = try #require(r.lines.of(.start).first)
            #expect(start["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("eth0"), .string("wwan0")])

            // The backup loses carrier: held down for 5 s, then exactly one line.
            r.route.set(DualWANParts.part(wwan0Carrier: false))
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(5) })
            r.clock.advance(by: .seconds(4))
            #expect(r.lines.of(.change).isEmpty)
            r.clock.advance(by: .seconds(1))
            #expect(await eventually { r.lines.of(.change).count == 1 })
            let change = r.lines.of(.change)[0]
            #expect(change["event"]?["changed"] == .array([.string("uplinks")]))
            #expect(change["event"]?["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("wwan0")])
            #expect(change["event"]?["reason"] == .string("uplink wwan0 not reachable: wwan0 has no carrier (connection required)"))
            #expect(change["reachable"] == .bool(true))  // the answer stays: exit status and top level unchanged

            // A periodic line carries the uplinks as they are.
            r.clock.advance(by: .seconds(55))
            #expect(await eventually { r.lines.of(.periodic).count == 1 })
            let periodic = r.lines.of(.periodic)[0]
            #expect(periodic["uplinks"]?.arrayValue?[1]["reachable"] == .bool(false))

            // Back: at once, one line.
            r.route.set(DualWANParts.part())
            #expect(await eventually { r.lines.of(.change).count == 2 })
            #expect(r.lines.of(.change)[1]["event"]?["reason"] == .string("uplink wwan0 reachable again"))
        }
        #expect(rig.lines.of(.change).count == 2)
    }

    /// The primary's default route is removed: one line at once (the answer and `primary` move to wwan0), one line
    /// when eth0's loss has lasted the hold-down.
    @Test func primaryRemovalIsOneLinePerUplinkChange() async throws {
        let rig = Rig(holdDown: 5)
        try await rig.run { r in
            r.route.set(DualWANParts.part())
            r.wifi.set([])
            #expect(await eventually { r.lines.of(.start).count == 1 })
            r.route.set(DualWANParts.part(eth0: false))
            #expect(await eventually { r.lines.of(.change).count == 1 })
            let moved = r.lines.of(.change)[0]
            #expect(moved["route"]?["interface"] == .string("wwan0"))
            #expect(moved["event"]?["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("wwan0")])
            #expect(moved["event"]?["uplinks"]?.arrayValue?.first?["to"]?["primary"] == .bool(true))
            #expect(moved["event"]?["held"] == .array([.string("uplinks")]))
            r.clock.advance(by: .seconds(5))
            #expect(await eventually { r.lines.of(.change).count == 2 })
            let gone = r.lines.of(.change)[1]
            #expect(gone["event"]?["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("eth0")])
            #expect(gone["event"]?["uplinks"]?.arrayValue?.first?["to"] == .null)
            #expect(gone["event"]?["reason"] == .string("uplink eth0 gone (no default route)"))
        }
        #expect(rig.lines.of(.change).count == 2)
    }

    /// An address target beside the default one: the backup's loss is one line (the default target's), not two.
    @Test func severalTargetsReportAnUplinkChangeOnce() async throws {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let lines = LineCollector()
        var config = AgentConfig()
        config.targets = [.address("192.0.2.10"), .defaultRoute]
        config.modems.enabled = false
        config.wifi.enabled = false
        config.changes.holdDownSeconds = 0
        let (_, group) = testAgent(config, clock: clock, route: route, lines: lines)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await group.run() }
            route.set(DualWANParts.part())
            #expect(await eventually { lines.of(.start).count == 2 })
            route.set(DualWANParts.part(wwan0Carrier: false))
            #expect(await eventually { lines.of(.change).count == 1 })
            try await Task.sleep(for: .milliseconds(200))
            group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let changes = lines.of(.change)
        #expect(changes.count == 1)
        #expect(changes.first?["target"]?["kind"] == .string("default"))
        // Both targets' lines still carry the uplinks.
        #expect(lines.of(.stop).allSatisfy { $0["uplinks"]?.arrayValue?.count == 2 })
    }

    @Test func configuredUplinksAreAReloadedSection() async throws {
        let rig = Rig()
        try await rig.run { r in
            r.wifi.set([])
            var new = await r.agent.hub.configuration
            new.uplinks = [UplinkSpec(interface: "wwan0", role: .backup)]
            #expect(await r.agent.hub.apply(new) == ["uplinks"])
        }
    }
}

@Suite struct UplinkOutputTests {
    @Test func prometheusGaugesPerUplink() {
        var s = DualWANParts.snapshot(DualWANParts.part(wwan0Carrier: false))
        s.wwan[0].signal = SignalMeasurement(rsrp: -100)  // 3 bars on Android's LTE thresholds
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(s, at: .zero)
        let text = PrometheusText.render(
            MetricsInput(targets: [.init(snapshot: s, view: d.view, changes: 0, lastChange: nil)], log: ReportLog.Stats()))
        #expect(text.contains("# TYPE reach_uplink_reachable gauge\n"))
        #expect(text.contains("reach_uplink_reachable{interface=\"eth0\",kind=\"ethernet\"} 1\n"))
        #expect(text.contains("reach_uplink_reachable{interface=\"wwan0\",kind=\"wwan\"} 0\n"))
        #expect(text.contains("reach_uplink_primary{interface=\"eth0\",kind=\"ethernet\"} 1\n"))
        #expect(text.contains("reach_uplink_primary{interface=\"wwan0\",kind=\"wwan\"} 0\n"))
        #expect(text.contains("reach_uplink_bars{interface=\"wwan0\",kind=\"wwan\"} 3\n"))
        #expect(!text.contains("reach_uplink_bars{interface=\"eth0\""))  // no radio, no bars
    }

    static func facts(_ s: Snapshot) -> DiagFacts {
        var f = DiagFacts(snapshot: s)
        f.interfaces = ["wwan0": InterfaceFacts(up: true, running: true, addresses: ["198.18.0.2"])]
        f.gatewayNeighbour = .success(NeighbourState(nud: 0x02))
        f.dnsServers = ["192.0.2.53"]
        f.dnsSources = ["/etc/resolv.conf"]
        return f
    }

    /// `reach diag`: a check per uplink; a dead backup makes the verdict "reachable with problems" (exit 2), never
    /// "not reachable".
    @Test func diagChecksEveryUplink() {
        let healthy = DiagChecks.evaluate(Self.facts(DualWANParts.snapshot(DualWANParts.part())))
        let ok = healthy.filter { $0.id.hasPrefix("uplink[") }
        #expect(ok.map(\.id) == ["uplink[eth0]", "uplink[wwan0]"])
        #expect(ok.map(\.status) == [.ok, .ok])
        #expect(ok[0].title == "Uplink eth0 (carries the default route)")
        #expect(ok[1].detail == "backup wwan0: reachable over wwan via 198.18.0.1, metric 20")
        #expect(DiagChecks.verdict(healthy) == .ok)

        let dead = DiagChecks.evaluate(Self.facts(DualWANParts.snapshot(DualWANParts.part(wwan0Carrier: false))))
        let check = dead.first(where: { $0.id == "uplink[wwan0]" })
        #expect(check?.status == .fail)
        #expect(check?.detail == "backup wwan0: wwan0 has no carrier (connection required)")
        #expect(check?.hint == "check the cable or the radio link of wwan0")
        #expect(DiagChecks.verdict(dead) == .degraded)
        #expect(dead.first { $0.id == "route.default" }?.status == .ok)
    }

    @Test(arguments: [
        // (what, the wwan0 link, the reason, a word of the hint)
        ("modem still connecting", DualWANParts.link("wwan0", .wwan) as LinkState?, "no default route via wwan0", "mwan3 status"),
        ("no such interface", nil, "wwan0 does not exist", "configuration's uplinks"),
    ])
    func diagConfiguredBackupWithoutRoute(what: String, link: LinkState?, reason: String, hint: String) {
        let part = DualWANParts.part(
            wwan0: false, specs: [UplinkSpec(interface: "eth0", role: .primary), UplinkSpec(interface: "wwan0", role: .backup)],
            links: ["wwan0": link])
        let checks = DiagChecks.evaluate(Self.facts(DualWANParts.snapshot(part)))
        let c = checks.first { $0.id == "uplink[wwan0]" }
        #expect(c?.status == .fail, "\(what)")
        #expect(c?.detail == "backup wwan0: \(reason)", "\(what)")
        #expect(c?.hint?.contains(hint) == true, "\(what): \(c?.hint ?? "")")
    }

    /// The configured primary is fine but the kernel uses the backup (metrics disagree with the intent): a warning.
    @Test func diagWarnsWhenTheConfiguredPrimaryIsNotInUse() {
        var part = DualWANParts.part(specs: [UplinkSpec(interface: "wwan0", role: .primary)])
        part.route = part.uplinks[0].routes[0]  // eth0 carries the default route
        let checks = DiagChecks.evaluate(Self.facts(DualWANParts.snapshot(part)))
        let c = checks.first { $0.id == "uplink[wwan0]" }
        #expect(c?.status == .warn)
        #expect(c?.detail.hasSuffix("; the default route uses eth0") == true)
        #expect(c?.hint != nil)
    }

    @Test func watchLineNamesTheUplink() throws {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(DualWANParts.snapshot(DualWANParts.part()), at: .zero)
        let s = DualWANParts.snapshot(DualWANParts.part(wwan0Carrier: false))
        let event = d.observe(s, at: .seconds(1))
        let e = try #require(event)
        let line = WatchText.line(.change, s, e)
        #expect(line == "2026-11-22T00:00:00.000Z  reachable over ethernet via eth0 (gateway 192.0.2.1) · wwan 4g"
            + "  [uplinks] uplink wwan0 not reachable: wwan0 has no carrier (connection required)")
        let moved = DualWANParts.snapshot(DualWANParts.part(eth0: false))
        let next = d.observe(moved, at: .seconds(2))
        let m = try #require(next)
        // The fields in brackets, each uplink once, in the reason.
        #expect(WatchText.line(.change, moved, m).hasSuffix(
            "  [status, medium, uplinks] route moved from eth0 to wwan0; uplink eth0 gone (no default route);"
                + " uplink wwan0 reachable again; primary uplink now wwan0"))
    }
}
