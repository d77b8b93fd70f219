import Testing
@testable import ReachCore

/// Config `validation`: off by default, every value checked, each problem naming its key.
@Suite struct ValidationConfigTests {
    /// The issue's example, read and printed back.
    static let example = #"""
        {"validation": {"enabled": true, "interval_seconds": 30, "timeout_seconds": 2, "down_after": 3, "up_after": 2,
          "probes": [{"kind": "dns", "server": "9.9.9.9", "name": "example.org"},
                     {"kind": "icmp", "address": "gateway"},
                     {"kind": "http", "url": "http://connectivity.example/generate_204", "expect": 204}]}}
        """#

    @Test func issueExampleRoundTrips() throws {
        let c = try AgentConfig.parse(Self.example)
        #expect(c.validation.enabled)
        // Parsed before #expect: Swift 6.0 rejects a `try` inside an array literal in its autoclosure.
        let url = try HTTPURL.parse("http://connectivity.example/generate_204").get()
        #expect(c.validation.probes == [
            .dns(server: .address(IPAddress("9.9.9.9")!), name: "example.org", port: 53),
            .icmp(address: .gateway),
            .http(url: url, expect: 204),
        ])
        #expect(c.validation.policy == ValidationPolicy())
        #expect(try AgentConfig.parse(c.json.prettySerialized()) == c)
    }

    /// Off, and no probe of ours, unless configured.
    @Test func offByDefaultWithoutTargets() throws {
        let c = try AgentConfig.parse("{}")
        #expect(!c.validation.enabled)
        #expect(c.validation.probes.isEmpty)
        #expect(c.json["validation"]?["enabled"] == .bool(false))
        #expect(c.json["validation"]?["probes"] == .array([]))
    }

    @Test func serverKinds() throws {
        let c = try AgentConfig.parse(
            #"{"validation":{"probes":[{"kind":"dns","server":"uplink"},{"kind":"dns","server":"gateway","name":"x.example","port":5353},{"kind":"icmp","address":"2001:db8::1"}]}}"#)
        #expect(c.validation.probes == [
            .dns(server: .uplink, name: ".", port: 53),
            .dns(server: .gateway, name: "x.example", port: 5353),
            .icmp(address: .address(IPAddress("2001:db8::1")!)),
        ])
        #expect(!c.validation.enabled)
    }

    /// A retry slower than the interval follows the interval; a max below it is the interval.
    @Test func derivedBounds() throws {
        let c = try AgentConfig.parse(#"{"validation":{"interval_seconds":3}}"#)
        #expect(c.validation.retryIntervalSeconds == 3)
        #expect(c.validation.policy.maxInterval == .seconds(120))
        let d = try AgentConfig.parse(#"{"validation":{"interval_seconds":600}}"#)
        #expect(d.validation.policy.maxInterval == .seconds(600))
    }

    @Test(arguments: [
        (#"{"validation":{"enabled":"yes"}}"#, "validation.enabled", "expected true or false"),
        (#"{"validation":{"enabled":true}}"#, "validation.probes", "expected at least one probe"),
        (#"{"validation":{"enabled":true,"probes":[]}}"#, "validation.probes", "expected at least one probe"),
        (#"{"validation":{"interval_seconds":0}}"#, "validation.interval_seconds", "expected a number of seconds from 1 to 86400"),
        (#"{"validation":{"timeout_seconds":31}}"#, "validation.timeout_seconds", "from 0.1 to 30"),
        (#"{"validation":{"interval_seconds":2,"timeout_seconds":2}}"#, "validation.timeout_seconds", "expected less than interval_seconds (2)"),
        (#"{"validation":{"down_after":0}}"#, "validation.down_after", "expected an integer from 1 to 100"),
        (#"{"validation":{"up_after":1.5}}"#, "validation.up_after", "expected an integer from 1 to 100"),
        (#"{"validation":{"retry_interval_seconds":60}}"#, "validation.retry_interval_seconds", "expected at most interval_seconds (30)"),
        (#"{"validation":{"max_interval_seconds":10}}"#, "validation.max_interval_seconds", "expected at least interval_seconds (30)"),
        (#"{"validation":{"probe":[]}}"#, "validation.probe", "unknown key"),
        (#"{"validation":{"probes":{}}}"#, "validation.probes", "expected an array"),
        (#"{"validation":{"probes":[{"kind":"ping"}]}}"#, "validation.probes[0].kind", "expected dns, icmp or http"),
        (#"{"validation":{"probes":[{"server":"9.9.9.9"}]}}"#, "validation.probes[0].kind", "missing"),
        (#"{"validation":{"probes":[{"kind":"dns"}]}}"#, "validation.probes[0].server", "missing"),
        (#"{"validation":{"probes":[{"kind":"dns","server":"dns.quad9.net"}]}}"#, "validation.probes[0].server",
         "expected an IP address, \"gateway\" or \"uplink\""),
        (#"{"validation":{"probes":[{"kind":"dns","server":"9.9.9.9","name":"a b"}]}}"#, "validation.probes[0].name", "domain name"),
        (#"{"validation":{"probes":[{"kind":"dns","server":"9.9.9.9","port":0}]}}"#, "validation.probes[0].port", "from 1 to 65535"),
        (#"{"validation":{"probes":[{"kind":"dns","server":"9.9.9.9","address":"1.1.1.1"}]}}"#, "validation.probes[0].address", "unknown key"),
        (#"{"validation":{"probes":[{"kind":"icmp","address":"uplink"}]}}"#, "validation.probes[0].address", "expected an IP address or \"gateway\""),
        (#"{"validation":{"probes":[{"kind":"icmp"}]}}"#, "validation.probes[0].address", "missing"),
        (#"{"validation":{"probes":[{"kind":"http","url":"https://x.example/"}]}}"#, "validation.probes[0].url", "https is not supported"),
        (#"{"validation":{"probes":[{"kind":"http","url":42}]}}"#, "validation.probes[0].url", "expected an http:// URL"),
        (#"{"validation":{"probes":[{"kind":"http","url":"http://192.0.2.80/","expect":302}]}}"#, "validation.probes[0].expect", "from 200 to 299"),
        (#"{"validation":{"probes":[{"kind":"http","url":"http://connectivity.example/"}]}}"#, "validation.probes[0].url",
         "add a dns probe"),
        (#"{"validation":{"probes":[{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"}]}}"#,
         "validation.probes[1]", "the same probe as validation.probes[0]"),
        (#"{"validation":{"probes":[{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"},{"kind":"icmp","address":"gateway"}]}}"#,
         "validation.probes", "expected at most 8 probes"),
    ])
    func badValueNamesItsKey(text: String, key: String, message: String) {
        do {
            _ = try AgentConfig.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.problems.contains { $0.key == key }, "\(error)")
            #expect(error.problems.first { $0.key == key }?.message.contains(message) == true, "\(error)")
        }
    }
}

/// The probes made concrete for one uplink: `gateway` is the uplink's own next hop, `uplink` its own resolver, and a
/// probe that cannot leave by this uplink's bound socket is skipped with the reason.
@Suite struct ValidationPlanTests {
    static let probes: [ProbeSpec] = [
        .dns(server: .uplink, name: "connectivity.example", port: 53),
        .icmp(address: .gateway),
        .http(url: try! HTTPURL.parse("http://connectivity.example/generate_204").get(), expect: 204),
        .dns(server: .address(IPAddress("2001:db8::53")!), name: ".", port: 53),
    ]

    static func eth0(resolvers: [String] = ["192.0.2.53"], v6: Bool = false, mainTable: Bool = true) -> ValidationSubject {
        ValidationSubject(
            interface: "eth0", ifindex: 2, reachable: true,
            ipv4: .init(gateway: IPAddress("192.0.2.1"), mainTable: mainTable),
            ipv6: v6 ? .init(gateway: IPAddress("fe80::1"), mainTable: true) : nil, pointToPoint: false,
            resolvers: resolvers.map { IPAddress($0)! })
    }

    @Test func ethernetUplinkWithItsOwnResolverAndGateway() {
        let plan = ValidationPlan.make(Self.probes, for: Self.eth0())
        #expect(plan.map(\.label) == ["dns 192.0.2.53", "icmp 192.0.2.1", "http connectivity.example", "dns 2001:db8::53"])
        guard case let .http(_, _, resolver, _, reuse, family, _) = plan[2] else {
            Issue.record("\(plan[2])")
            return
        }
        #expect(resolver == IPAddress("192.0.2.53"))
        #expect(reuse == 0)  // the dns probe asks for the same name: its answer is used
        #expect(family == .ipv4)
        #expect(plan[3] == .skipped(ProbeOutcome(probe: "dns 2001:db8::53", result: .skipped, detail: "no IPv6 default route via eth0")))
    }

    /// A rawip WWAN uplink: no gateway to ping, no resolver known.
    @Test func pointToPointWithoutGatewayOrResolver() {
        let wwan0 = ValidationSubject(
            interface: "wwan0", ifindex: 4, reachable: true, ipv4: .init(gateway: nil, mainTable: false), ipv6: nil,
            pointToPoint: true)
        let plan = ValidationPlan.make(Self.probes, for: wwan0)
        #expect(plan[0] == .skipped(ProbeOutcome(probe: "dns uplink", result: .skipped, detail: "no resolver known for wwan0")))
        #expect(plan[1] == .skipped(ProbeOutcome(probe: "icmp gateway", result: .skipped, detail: "no gateway (wwan0 is on-link)")))
        #expect(plan[2].label == "http connectivity.example")
        #expect(plan[2].skipReason == "connectivity.example cannot be resolved: no resolver known for wwan0")
    }

    /// An Ethernet uplink whose default lives only in a policy table: a bound socket would send on-link, so the probe
    /// is skipped rather than failed. (A point-to-point link is fine: on-link is the way out there.)
    @Test func policyTableOnlyRouteOnEthernetIsSkipped() {
        let plan = ValidationPlan.make([.icmp(address: .address(IPAddress("203.0.113.1")!))], for: Self.eth0(mainTable: false))
        #expect(plan[0].skipReason == "the IPv4 default via eth0 is only in a policy table, which a socket bound to eth0 does not follow")
    }

    /// An IPv6 link-local gateway is the ICMP target when there is no IPv4 route.
    @Test func ipv6OnlyGateway() {
        var s = Self.eth0(v6: true)
        s.ipv4 = nil
        let plan = ValidationPlan.make([.icmp(address: .gateway)], for: s)
        #expect(plan[0] == .icmp(label: "icmp fe80::1", address: IPAddress("fe80::1")!, local: true))
    }

    /// Built from a derived uplink of the dual-WAN snapshot.
    @Test func subjectFromUplink() throws {
        let s = DualWAN.snapshot(DualWAN.both)
        let wwan0 = try #require(s.uplinks.first { $0.interface == "wwan0" })
        let subject = ValidationSubject(wwan0)
        #expect(subject.ifindex == 4)
        #expect(subject.pointToPoint)
        #expect(subject.ipv4 == .init(gateway: IPAddress("198.18.0.1"), mainTable: true))
        #expect(subject.ipv6 == nil)
    }
}
