import GatewayReach
import ReachAgent
import Testing

/// The underlay where the answer goes besides the JSON: diag (a check per hop), the Prometheus textfile (the medium
/// from the bottom link, the underlay as a series) and `reach watch`'s change line.
@Suite struct UnderlayOutputTests {
    static func link(_ name: String, _ index: Int, _ kind: InterfaceKind, carrier: Bool = true) -> LinkState {
        LinkState(name: name, index: index, kind: kind, adminUp: true, carrier: carrier)
    }

    /// vx0 holding the default route, its remote reached over wwan0.
    static func vxlan(wwanCarrier: Bool = true, problem: String? = nil, blocking: Bool = false) -> Snapshot {
        let top = link("vx0", 10, .ethernet)
        var hops = [UnderlayHop(link: top, infoKind: "vxlan")]
        if !blocking { hops.append(UnderlayHop(link: link("wwan0", 2, .wwan, carrier: wwanCarrier), via: .tunnel, remote: "198.18.0.1")) }
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        s.route = RouteLookup(
            family: .ipv4, type: .unicast, link: top, gateway: "10.99.0.1",
            underlay: UnderlayChain(hops: hops, problem: problem, blocking: blocking))
        s.derive()
        return s
    }

    static func checks(_ s: Snapshot) -> [DiagCheck] {
        var f = DiagFacts(snapshot: s)
        f.gatewayNeighbour = .success(NeighbourState(nud: 0x02))
        f.dnsServers = ["192.0.2.53"]
        f.dnsSources = ["/etc/resolv.conf"]
        return DiagChecks.evaluate(f)
    }

    @Test func diagChecksEveryHop() throws {
        let ok = Self.checks(Self.vxlan())
        let route = try #require(ok.first { $0.id == "route.default" })
        #expect(route.status == .ok)
        #expect(route.detail == "via vx0 → wwan0 gateway 10.99.0.1, wwan, ipv4")
        let hop = try #require(ok.first { $0.id == "route.underlay[wwan0]" })
        #expect(hop.status == .ok)
        #expect(hop.title == "Underlay wwan0 of vx0 (tunnel to 198.18.0.1)")
        #expect(DiagChecks.verdict(ok) == .ok)

        let lost = Self.checks(Self.vxlan(wwanCarrier: false))
        #expect(lost.first { $0.id == "route.underlay[wwan0]" }?.status == .fail)
        #expect(lost.first { $0.id == "route.underlay[wwan0]" }?.hint != nil)
        #expect(lost.first { $0.id == "route.default" }?.detail == "not reachable: vx0: its underlay wwan0 has no carrier")
        #expect(lost.first { $0.id == "route.default" }?.hint == "vx0 cannot carry packets below it: see the underlay checks")
        #expect(DiagChecks.verdict(lost) == .notReachable)

        let loop = Self.checks(Self.vxlan(problem: "vx0: the route to its remote 198.18.0.1 goes back through vx0 (a loop)", blocking: true))
        #expect(loop.first { $0.id == "route.underlay" }?.status == .fail)
        #expect(DiagChecks.verdict(loop) == .notReachable)

        let unknown = Self.checks(Self.vxlan(problem: "vx0: its peers are not readable", blocking: false))
        #expect(unknown.first { $0.id == "route.underlay" }?.status == .warn)
        #expect(DiagChecks.verdict(unknown) == .degraded)
    }

    @Test func prometheusMediumAndUnderlay() {
        let s = Self.vxlan()
        let text = PrometheusText.render(MetricsInput(targets: [.init(snapshot: s, view: nil, changes: 0, lastChange: nil)], log: ReportLog.Stats()))
        #expect(text.contains("reach_medium{target=\"default\",medium=\"wwan\"} 1\n"))
        #expect(text.contains("reach_medium{target=\"default\",medium=\"ethernet\"} 0\n"))
        #expect(text.contains(
            "reach_route_underlay{target=\"default\",interface=\"vx0\",underlay=\"wwan0\",kind=\"wwan\",via=\"tunnel\"} 1\n"))
        let plain = Snapshot(time: Timestamp(seconds: 1), target: .defaultRoute)
        let none = PrometheusText.render(MetricsInput(targets: [.init(snapshot: plain, view: nil, changes: 0, lastChange: nil)], log: ReportLog.Stats()))
        #expect(none.contains("# TYPE reach_route_underlay gauge\n"))
        #expect(!none.contains("reach_route_underlay{"))
    }

    @Test func watchLineNamesTheUnderlayChange() throws {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Self.vxlan(), at: .zero)
        let lost = Self.vxlan(wwanCarrier: false)
        let e = d.observe(lost, at: .seconds(1))
        let change = try #require(e)
        let line = WatchText.line(.change, lost, change)
        #expect(line.hasSuffix("not reachable: vx0: its underlay wwan0 has no carrier  [status, medium, reachable] vx0: underlay wwan0 lost carrier"), "\(line)")
    }
}
