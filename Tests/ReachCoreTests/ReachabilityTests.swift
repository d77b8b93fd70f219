import Testing
@testable import ReachCore

/// SCNetworkReachabilityFlags bit values and the statuses built on them (SCNetworkReachability.h).
@Suite struct ReachabilityTests {
    /// Apple's SCNetworkReachability.h values, bit for bit.
    @Test func flagBitsAreApples() {
        #expect(ReachabilityFlags.transientConnection.rawValue == 1 << 0)
        #expect(ReachabilityFlags.reachable.rawValue == 1 << 1)
        #expect(ReachabilityFlags.connectionRequired.rawValue == 1 << 2)
        #expect(ReachabilityFlags.connectionOnTraffic.rawValue == 1 << 3)
        #expect(ReachabilityFlags.interventionRequired.rawValue == 1 << 4)
        #expect(ReachabilityFlags.connectionOnDemand.rawValue == 1 << 5)
        #expect(ReachabilityFlags.isLocalAddress.rawValue == 1 << 16)
        #expect(ReachabilityFlags.isDirect.rawValue == 1 << 17)
        #expect(ReachabilityFlags.isWWAN.rawValue == 1 << 18)
        #expect(ReachabilityFlags([.reachable, .isWWAN]).names == ["reachable", "is_wwan"])
    }

    /// YYReachability's YYReachabilityStatusFromFlags, including its quirk that a non-transient
    /// connection-required route counts as WiFi.
    @Test(arguments: [
        (ReachabilityFlags([]), true, ReachabilityStatus.none),
        ([.reachable], true, .wifi),
        ([.reachable, .isWWAN], true, .wwan),
        ([.reachable, .isWWAN], false, .wifi),  // allowWWAN = NO (reachabilityForLocalWifi)
        ([.reachable, .connectionRequired, .transientConnection], true, .none),
        ([.reachable, .connectionRequired], true, .wifi),
        ([.connectionRequired], true, .none),
        ([.isWWAN], true, .none),
        ([.reachable, .isLocalAddress, .isDirect], true, .wifi),
    ] as [(ReachabilityFlags, Bool, ReachabilityStatus)])
    func yyStatus(flags: ReachabilityFlags, allowWWAN: Bool, status: ReachabilityStatus) {
        #expect(ReachabilityStatus(flags: flags, allowWWAN: allowWWAN) == status)
    }

    /// AFNetworking's AFNetworkReachabilityStatusForFlags reachability.
    @Test(arguments: [
        (ReachabilityFlags([]), false),
        ([.reachable], true),
        ([.reachable, .connectionRequired], false),
        ([.reachable, .connectionRequired, .connectionOnTraffic], true),
        ([.reachable, .connectionRequired, .connectionOnDemand], true),
        ([.reachable, .connectionRequired, .connectionOnDemand, .interventionRequired], false),
        ([.reachable, .interventionRequired], true),
    ] as [(ReachabilityFlags, Bool)])
    func afNetworkingReachable(flags: ReachabilityFlags, reachable: Bool) {
        #expect(flags.isReachable == reachable)
    }

    static func link(_ kind: InterfaceKind, carrier: Bool = true, up: Bool = true) -> LinkState {
        LinkState(name: "x0", index: 2, kind: kind, adminUp: up, carrier: carrier)
    }

    @Test(arguments: [
        ("no route", nil as RouteLookup?, false, ReachabilityFlags([])),
        ("own address", RouteLookup(family: .ipv4, type: .local, link: link(.loopback)), false,
         [.reachable, .isLocalAddress, .isDirect]),
        ("ethernet via a gateway", RouteLookup(family: .ipv4, type: .unicast, link: link(.ethernet), gateway: "192.0.2.1"),
         false, [.reachable]),
        ("on-link", RouteLookup(family: .ipv4, type: .unicast, link: link(.ethernet)), false, [.reachable, .isDirect]),
        ("wwan0 default dev", RouteLookup(family: .ipv4, type: .unicast, link: link(.wwan)), false,
         [.reachable, .isDirect, .isWWAN]),
        ("ppp0", RouteLookup(family: .ipv4, type: .unicast, link: link(.ppp)), false,
         [.reachable, .isDirect, .transientConnection]),
        ("no carrier", RouteLookup(family: .ipv4, type: .unicast, link: link(.ethernet, carrier: false), gateway: "192.0.2.1"),
         false, [.connectionRequired]),
        ("ppp without carrier", RouteLookup(family: .ipv4, type: .unicast, link: link(.ppp, carrier: false)), false,
         [.connectionRequired, .isDirect, .transientConnection]),
        ("admin down", RouteLookup(family: .ipv4, type: .unicast, link: link(.ethernet, up: false)), false, []),
        ("unreachable route", RouteLookup(family: .ipv4, type: .unreachable, link: nil), false, []),
        ("prohibit route", RouteLookup(family: .ipv6, type: .prohibit, link: nil), false, []),
        ("locked SIM behind the route", RouteLookup(family: .ipv4, type: .unicast, link: link(.wwan)), true,
         [.interventionRequired, .connectionRequired, .isDirect, .isWWAN]),
        ("locked SIM, no route", nil, true, [.interventionRequired, .connectionRequired]),
    ] as [(String, RouteLookup?, Bool, ReachabilityFlags)])
    func derivedFlags(_ name: String, route: RouteLookup?, intervention: Bool, flags: ReachabilityFlags) {
        #expect(ReachabilityFlags.derive(from: route, interventionRequired: intervention) == flags, "\(name)")
    }

    @Test func mediumNamesTheEgressLink() {
        let wwan = RouteLookup(family: .ipv4, type: .unicast, link: Self.link(.wwan))
        #expect(Medium(route: wwan, flags: .derive(from: wwan)) == .wwan)
        let wifi = RouteLookup(family: .ipv4, type: .unicast, link: Self.link(.wifi), gateway: "10.0.0.1")
        #expect(Medium(route: wifi, flags: .derive(from: wifi)) == .wifi)
        let ppp = RouteLookup(family: .ipv4, type: .unicast, link: Self.link(.ppp))
        #expect(Medium(route: ppp, flags: .derive(from: ppp)) == .other)
        let down = RouteLookup(family: .ipv4, type: .unicast, link: Self.link(.ethernet, carrier: false))
        #expect(Medium(route: down, flags: .derive(from: down)) == .none)
        let local = RouteLookup(family: .ipv4, type: .local, link: Self.link(.loopback))
        #expect(Medium(route: local, flags: .derive(from: local)) == .other)
        #expect(Medium(route: nil, flags: []) == .none)
    }
}
