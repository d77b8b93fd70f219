import Testing
@testable import ReachCore

/// A gateway's links as the kernel would describe them, for the underlay walk: an LTE modem's wwan0 (index 2),
/// Ethernet eth0 (3) and eth1 (4), and whatever a test stacks on them.
private struct Box {
    var facts = UnderlayFacts()

    static func state(_ name: String, _ index: Int, _ kind: InterfaceKind, carrier: Bool = true, up: Bool = true) -> LinkState {
        LinkState(name: name, index: index, kind: kind, adminUp: up, carrier: carrier)
    }

    init(config: UnderlayConfig = .standard) {
        facts = UnderlayFacts(config: config)
        add(UnderlayLink(state: Self.state("wwan0", 2, .wwan)))
        add(UnderlayLink(state: Self.state("eth0", 3, .ethernet)))
        add(UnderlayLink(state: Self.state("eth1", 4, .ethernet)))
        facts.defaultRoutes = [.ipv4: .none, .ipv6: .none]
    }

    mutating func add(_ link: UnderlayLink) { facts.add(link) }

    func state(_ index: Int) -> LinkState {
        guard case let .link(l)? = facts.links[index] else { fatalError("no link \(index)") }
        return l.state
    }

    /// A unicast route out of link `index`.
    func route(_ index: Int, family: AddressFamily = .ipv4, gateway: String? = nil) -> UnderlayRouteAnswer {
        .route(RouteLookup(family: family, type: .unicast, link: state(index), gateway: gateway))
    }

    mutating func answer(_ query: RouteQuery, _ answer: UnderlayRouteAnswer) { facts.routes[query] = answer }

    /// The chain of a route out of `index` towards `destination`.
    func chain(_ index: Int, _ destination: UnderlayDestination = .defaultRoute(.ipv4), gateway: String? = nil)
        -> UnderlayChain
    {
        let r = RouteLookup(family: destination.family, type: .unicast, link: state(index), gateway: gateway)
        return Underlay.resolve(route: r, destination: destination, config: facts.config, source: facts)!
    }
}

private func ip(_ s: String) -> IPAddress { IPAddress(s)! }
private func prefix(_ s: String) -> IPPrefix { IPPrefix(s)! }

@Suite struct IPPrefixTests {
    /// RFC 6052 §2.4, Table 1: 192.0.2.33 embedded in each allowed prefix length.
    @Test(arguments: [
        ("2001:db8::/32", "2001:db8:c000:221::"),
        ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
        ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::/96", "2001:db8:122:344::c000:221"),
        ("64:ff9b::/96", "64:ff9b::c000:221"),
    ])
    func rfc6052Table1(prefixText: String, expected: String) {
        #expect(prefix(prefixText).embedding(ip("192.0.2.33")) == ip(expected))
    }

    @Test func embeddingNeedsAnAllowedIPv6Length() {
        #expect(prefix("64:ff9b::/80").embedding(ip("192.0.2.33")) == nil)
        #expect(prefix("10.0.0.0/8").embedding(ip("192.0.2.33")) == nil)
        #expect(prefix("64:ff9b::/96").embedding(ip("2001:db8::1")) == nil)
    }

    @Test(arguments: [
        ("192.0.0.0/29", "192.0.0.4", true), ("192.0.0.0/29", "192.0.0.7", true), ("192.0.0.0/29", "192.0.0.8", false),
        ("0.0.0.0/0", "203.0.113.9", true), ("10.0.0.0/8", "11.0.0.1", false), ("2001:db8::/32", "2001:db8:1::1", true),
        ("2001:db8::/32", "2001:db9::1", false), ("::/0", "192.0.2.1", false), ("192.0.2.1", "192.0.2.1", true),
    ])
    func contains(prefixText: String, address: String, inside: Bool) {
        #expect(prefix(prefixText).contains(ip(address)) == inside)
    }

    @Test(arguments: ["10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "10.0.0/8", "::/129", "64:ff9b::/9a", "/24", "a/b/c"])
    func malformedPrefixes(text: String) {
        #expect(IPPrefix(text) == nil)
    }

    @Test func canonical() {
        #expect(prefix("64:ff9b::/96").isCanonical)
        #expect(!prefix("64:ff9b::1/96").isCanonical)
        #expect(prefix("0.0.0.0/0").isCanonical)
        #expect(!prefix("10.0.0.1/8").isCanonical)
    }
}

@Suite struct UnderlayRuleTests {
    /// clatd (`clat`, 192.0.0.4), OpenWrt's 464xlat (`464-wan6`), Android's stacked link (`v4-rmnet_data0`), and
    /// links that are not CLATs.
    @Test(arguments: [
        ("clat", ["192.0.0.4"], true), ("464-wan6", [], true), ("v4-rmnet_data0", ["192.0.0.4"], true),
        ("nat46", ["192.0.0.1"], true), ("tun0", ["10.8.0.2"], false), ("clat0", [], false), ("v4", [], false),
        ("tun1", ["192.0.0.8"], false),
    ])
    func clatDetection(name: String, addresses: [String], isCLAT: Bool) {
        let link = UnderlayLink(state: Box.state(name, 9, .other), infoKind: "tun", ipv4Addresses: addresses.map(ip))
        #expect(Underlay.isCLAT(link) == isCLAT)
    }

    /// wg-quick's full tunnel (0.0.0.0/0, ::/0) to a VPN server beside a site peer (10.0.0.0/8): the kernel's
    /// allowedips lookup is a longest-prefix match.
    @Test(arguments: [
        (UnderlayDestination.defaultRoute(.ipv4), 0 as Int?), (.defaultRoute(.ipv6), 0), (.address(ip("10.1.2.3")), 1),
        (.address(ip("203.0.113.9")), 0), (.address(ip("2001:db8::1")), 0),
    ])
    func wireGuardPeerSelection(destination: UnderlayDestination, peer: Int?) {
        let device = WireGuardDevice(peers: [
            WireGuardPeer(endpoint: ip("198.18.0.1"), allowedIPs: [prefix("0.0.0.0/0"), prefix("::/0")]),
            WireGuardPeer(endpoint: ip("198.51.100.7"), allowedIPs: [prefix("10.0.0.0/8")]),
        ])
        #expect(device.peer(for: destination) == peer)
    }

    @Test func noPeerHoldsTheDefault() {
        let device = WireGuardDevice(peers: [WireGuardPeer(endpoint: nil, allowedIPs: [prefix("10.0.0.0/8")])])
        #expect(device.peer(for: .defaultRoute(.ipv4)) == nil)
        #expect(device.peer(for: .defaultRoute(.ipv6)) == nil)
    }

    @Test(arguments: [
        ([String: String](), [[String]]()),
        (["tun0": "wwan0"], []),
        (["tun0": "tun0"], [["tun0", "tun0"]]),
        (["tun0": "ppp0", "ppp0": "tun0"], [["ppp0", "tun0", "ppp0"]]),
        (["a": "b", "b": "c", "c": "b", "x": "y"], [["b", "c", "b"]]),
        (["a": "b", "b": "a", "c": "d", "d": "c"], [["a", "b", "a"], ["c", "d", "c"]]),
    ])
    func configLoops(map: [String: String], loops: [[String]]) {
        #expect(UnderlayConfig.loops(map) == loops)
    }
}

@Suite struct UnderlayWalkTests {
    /// clatd: the IPv4 default route on `clat` (192.0.0.4/29), IPv6 to the PLAT prefix over wwan0.
    @Test func clatByAddressRidesOnTheRouteToThePLAT() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("nat46", 10, .other), infoKind: "tun", ipv4Addresses: [ip("192.0.0.4")]))
        box.answer(RouteQuery(ip("64:ff9b::")), box.route(2, family: .ipv6))
        let chain = box.chain(10)
        #expect(chain.names == "nat46 → wwan0")
        #expect(chain.underlay?.via == .clat)
        #expect(chain.underlay?.remote == "64:ff9b::/96")
        #expect(chain.problem == nil)
        #expect(chain.hops[0].infoKind == "tun")
    }

    /// An address target is written into the PLAT prefix (RFC 6052), and a configured prefix is the one asked.
    @Test func configuredPLATPrefixAndTheTargetAddress() {
        var box = Box(config: UnderlayConfig(platPrefix: prefix("2001:db8:64::/96")))
        box.add(UnderlayLink(state: Box.state("clat", 10, .other), infoKind: "tun"))
        box.answer(RouteQuery(ip("2001:db8:64::c000:221")), box.route(3, family: .ipv6, gateway: "fe80::1"))
        let chain = box.chain(10, .address(ip("192.0.2.33")))
        #expect(chain.names == "clat → eth0")
        #expect(chain.underlay?.remote == "2001:db8:64::/96")
    }

    /// No route to the PLAT prefix: the IPv6 default route is the underlay; with neither, packets cannot leave.
    @Test func clatFallsBackToTheIPv6DefaultRoute() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("464-wan6", 10, .other), infoKind: "tun"))
        box.answer(RouteQuery(ip("64:ff9b::")), .none)
        box.facts.defaultRoutes[.ipv6] = box.route(4, family: .ipv6)
        #expect(box.chain(10).names == "464-wan6 → eth1")

        box.facts.defaultRoutes[.ipv6] = UnderlayRouteAnswer.none
        let broken = box.chain(10)
        #expect(broken.blocking)
        #expect(broken.problem == "464-wan6: no IPv6 route to the PLAT prefix 64:ff9b::/96")
        #expect(broken.underlay == nil)
    }

    /// Android names the CLAT after its base network (`v4-rmnet_data0`) and clatd binds to that interface.
    @Test func androidClatIsBoundToItsBaseInterface() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("rmnet_data0", 7, .wwan)))
        box.add(UnderlayLink(state: Box.state("v4-rmnet_data0", 8, .other), infoKind: "tun", ipv4Addresses: [ip("192.0.0.4")]))
        box.answer(RouteQuery(ip("64:ff9b::"), boundIndex: 7), box.route(7, family: .ipv6))
        #expect(box.chain(8).names == "v4-rmnet_data0 → rmnet_data0")
    }

    /// A VXLAN with a remote, reached over wwan0; bound to a device (`dev eth1`) the lookup carries the binding,
    /// and its fwmark.
    @Test func tunnelsFollowTheRouteToTheirRemote() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("vx0", 10, .ethernet), infoKind: "vxlan",
                             tunnel: UnderlayTunnel(remote: ip("198.18.0.1"), udpPort: 4789)))
        box.answer(RouteQuery(ip("198.18.0.1"), udpDestinationPort: 4789), box.route(2))
        let vx = box.chain(10, gateway: "10.99.0.1")
        #expect(vx.names == "vx0 → wwan0")
        #expect(vx.underlay?.via == .tunnel)
        #expect(vx.underlay?.remote == "198.18.0.1")

        box.add(UnderlayLink(state: Box.state("gre1", 11, .other), infoKind: "gre",
                             tunnel: UnderlayTunnel(remote: ip("203.0.113.5"), local: ip("192.0.2.2"), boundIndex: 4, fwmark: 7)))
        box.answer(RouteQuery(ip("203.0.113.5"), boundIndex: 4, mark: 7, source: ip("192.0.2.2")), box.route(4, gateway: "192.0.2.1"))
        let gre = box.chain(11)
        #expect(gre.names == "gre1 → eth1")
        #expect(gre.underlay?.fwmark == 7)
    }

    @Test func tunnelFailures() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("gre1", 11, .other), infoKind: "gre", tunnel: UnderlayTunnel(remote: ip("203.0.113.5"))))
        box.answer(RouteQuery(ip("203.0.113.5")), .none)
        #expect(box.chain(11).problem == "gre1: no route to its remote 203.0.113.5")
        #expect(box.chain(11).blocking)
        box.answer(RouteQuery(ip("203.0.113.5")), .route(RouteLookup(family: .ipv4, type: .unreachable, link: nil)))
        #expect(box.chain(11).problem == "gre1: the route to its remote 203.0.113.5 is unreachable")
        // The remote's route goes through the tunnel itself: the kernel drops such packets (a loop).
        box.answer(RouteQuery(ip("203.0.113.5")), box.route(11))
        #expect(box.chain(11).problem == "gre1: the route to its remote 203.0.113.5 goes back through gre1 (a loop)")
        #expect(box.chain(11).blocking)
        // A failure to ask is no verdict: the answer stands.
        box.answer(RouteQuery(ip("203.0.113.5")), .failed(UnderlayReadError("EIO")))
        #expect(!box.chain(11).blocking)

        // Bound to a device, without a remote (a point-to-multipoint GRE): the device is the underlay.
        box.add(UnderlayLink(state: Box.state("gre2", 12, .other), infoKind: "gre", tunnel: UnderlayTunnel(remote: nil, boundIndex: 2)))
        #expect(box.chain(12).names == "gre2 → wwan0")
        // Neither (an FDB-driven VXLAN): the kernel cannot say; configuration can.
        box.add(UnderlayLink(state: Box.state("vx1", 13, .ethernet), infoKind: "vxlan", tunnel: UnderlayTunnel(remote: nil)))
        let unknown = box.chain(13)
        #expect(!unknown.blocking)
        #expect(unknown.problem?.contains("interface_underlays") == true)
    }

    @Test func stackedLinksAndBridges() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("eth0.100", 10, .ethernet), infoKind: "vlan", lower: 3))
        box.add(UnderlayLink(state: Box.state("mv0", 11, .ethernet), infoKind: "macvlan", lower: 10))
        let chain = box.chain(11)
        #expect(chain.names == "mv0 → eth0.100 → eth0")
        #expect(chain.hops.dropFirst().allSatisfy { $0.via == .lower })

        box.add(UnderlayLink(state: Box.state("ipvl0", 12, .ethernet), infoKind: "ipvlan", lower: 7, lowerInOtherNamespace: true))
        #expect(box.chain(12).problem == "ipvl0: its lower device is in another network namespace")
        #expect(!box.chain(12).blocking)

        // A bridge: the port its FDB learned the gateway on; without one the bridge is the bottom.
        box.add(UnderlayLink(state: Box.state("br-wan", 20, .ethernet), infoKind: "bridge"))
        box.facts.bridgePorts[.init(bridge: 20, nextHop: ip("192.0.2.1"))] = .learned(port: 4)
        #expect(box.chain(20, gateway: "192.0.2.1").names == "br-wan → eth1")
        box.facts.bridgePorts[.init(bridge: 20, nextHop: ip("192.0.2.1"))] = BridgePortAnswer.none
        #expect(box.chain(20, gateway: "192.0.2.1").names == "br-wan")
    }

    /// The configuration wins over the kernel's rules, and names what the kernel cannot (OpenVPN's tun).
    @Test func configuration() {
        var box = Box(config: UnderlayConfig(interfaceUnderlays: ["tun0": "wwan0", "vx0": "eth1", "tun9": "wwan9"]))
        box.add(UnderlayLink(state: Box.state("tun0", 10, .other), infoKind: "tun"))
        box.add(UnderlayLink(state: Box.state("vx0", 11, .ethernet), infoKind: "vxlan", tunnel: UnderlayTunnel(remote: ip("198.18.0.1"))))
        box.add(UnderlayLink(state: Box.state("tun9", 12, .other), infoKind: "tun"))
        box.facts.names["wwan9"] = .absent
        #expect(box.chain(10).names == "tun0 → wwan0")
        #expect(box.chain(10).underlay?.via == .config)
        #expect(box.chain(11).names == "vx0 → eth1")
        let missing = box.chain(12)
        #expect(missing.blocking)
        #expect(missing.problem == "tun9: its configured underlay wwan9 does not exist")
    }

    /// A loop the configuration check cannot see (a tunnel's route leads into a configured link) and a chain deeper
    /// than the kernel nests.
    @Test func loopsAndDepth() {
        var box = Box(config: UnderlayConfig(interfaceUnderlays: ["tun0": "gre1"]))
        box.add(UnderlayLink(state: Box.state("tun0", 10, .other), infoKind: "tun"))
        box.add(UnderlayLink(state: Box.state("gre1", 11, .other), infoKind: "gre", tunnel: UnderlayTunnel(remote: ip("203.0.113.5"))))
        box.answer(RouteQuery(ip("203.0.113.5")), box.route(10))
        let loop = box.chain(10)
        #expect(loop.blocking)
        #expect(loop.problem == "gre1: the route to its remote 203.0.113.5 goes back through tun0 (a loop)")

        var deep = Box()
        for i in 0..<12 {
            deep.add(UnderlayLink(state: Box.state("v\(i)", 100 + i, .ethernet), infoKind: "vlan", lower: i == 11 ? 3 : 101 + i))
        }
        let chain = deep.chain(100)
        #expect(chain.blocking)
        #expect(chain.hops.count == Underlay.maxDepth + 1)
        #expect(chain.problem?.hasPrefix("more than 8 links below v0") == true)
    }

    /// WireGuard with two peers and a fwmark (wg-quick's layout): the endpoint routes are asked with the mark and
    /// the UDP ports, the peer holding the default carries it, and both are listed.
    @Test func wireGuardTwoPeers() throws {
        var box = Box()
        let device = WireGuardDevice(listenPort: 51820, fwmark: 0xca6c, peers: [
            WireGuardPeer(endpoint: ip("198.51.100.7"), endpointPort: 51821, allowedIPs: [prefix("10.0.0.0/8")]),
            WireGuardPeer(endpoint: ip("198.18.0.1"), endpointPort: 51820, allowedIPs: [prefix("0.0.0.0/0")]),
            WireGuardPeer(endpoint: nil, allowedIPs: [prefix("172.16.0.0/12")]),
        ])
        box.add(UnderlayLink(state: Box.state("wg0", 10, .other), infoKind: "wireguard", wireguard: .success(device)))
        box.answer(RouteQuery(ip("198.18.0.1"), mark: 0xca6c, udpSourcePort: 51820, udpDestinationPort: 51820), box.route(2))
        box.answer(RouteQuery(ip("198.51.100.7"), mark: 0xca6c, udpSourcePort: 51820, udpDestinationPort: 51821), box.route(4, gateway: "192.0.2.1"))
        let chain = box.chain(10)
        #expect(chain.names == "wg0 → wwan0")
        #expect(chain.underlay?.via == .wireguard)
        #expect(chain.underlay?.remote == "198.18.0.1:51820")
        #expect(chain.underlay?.fwmark == 0xca6c)
        let peers = chain.hops[0].peers
        #expect(peers.map(\.endpoint) == ["198.51.100.7:51821", "198.18.0.1:51820", nil])
        #expect(peers.map(\.underlay?.name) == ["eth1", "wwan0", nil])
        #expect(peers.map(\.carries) == [false, true, false])
        #expect(peers[2].problem == "no endpoint")
        #expect(chain.peerLines == [
            "wg0 peers: 198.51.100.7:51821 → eth1, 198.18.0.1:51820 → wwan0 (carries the route), no endpoint → ? [no endpoint]"
        ])
        // An address inside the site peer's allowed IPs rides on that peer's underlay.
        #expect(box.chain(10, .address(ip("10.1.2.3"))).names == "wg0 → eth1")
        // Inside the peer without an endpoint: the kernel drops it.
        #expect(box.chain(10, .address(ip("172.16.0.1"))).problem == "wg0: the peer carrying 172.16.0.1 has no endpoint")
        // No peer for IPv6.
        #expect(box.chain(10, .defaultRoute(.ipv6)).problem == "wg0: no peer's allowed IPs hold ::/0")
    }

    /// Without the fwmark rule the endpoint's route leads back into wg0: WireGuard drops it (ELOOP).
    @Test func wireGuardRoutingLoop() {
        var box = Box()
        let device = WireGuardDevice(peers: [WireGuardPeer(endpoint: ip("198.18.0.1"), endpointPort: 51820, allowedIPs: [prefix("0.0.0.0/0")])])
        box.add(UnderlayLink(state: Box.state("wg0", 10, .other), infoKind: "wireguard", wireguard: .success(device)))
        box.answer(RouteQuery(ip("198.18.0.1"), udpDestinationPort: 51820), box.route(10))
        let chain = box.chain(10)
        #expect(chain.blocking)
        #expect(chain.problem == "wg0: the route to its peer 198.18.0.1:51820 goes back through wg0 (a loop)")
        #expect(chain.hops[0].peers.first?.problem == "the route to 198.18.0.1:51820 goes back through wg0 (a loop)")
    }

    @Test func wireGuardPeersNotReadable() {
        var box = Box()
        box.add(UnderlayLink(state: Box.state("wg0", 10, .other), infoKind: "wireguard",
                             wireguard: .failure(UnderlayReadError("Operation not permitted (reading WireGuard peers needs CAP_NET_ADMIN)"))))
        let chain = box.chain(10)
        #expect(!chain.blocking)
        #expect(chain.names == "wg0")
        #expect(chain.problem == "wg0: its peers are not readable: Operation not permitted (reading WireGuard peers needs CAP_NET_ADMIN)")
    }

    /// WireGuard over a CLAT over wwan0 (an IPv4 VPN endpoint on an IPv6-only carrier).
    @Test func wireGuardOverClatOverWWAN() {
        var box = Box()
        let device = WireGuardDevice(fwmark: 51820, peers: [WireGuardPeer(endpoint: ip("198.18.0.1"), endpointPort: 51820, allowedIPs: [prefix("0.0.0.0/0")])])
        box.add(UnderlayLink(state: Box.state("wg0", 10, .other), infoKind: "wireguard", wireguard: .success(device)))
        box.add(UnderlayLink(state: Box.state("clat", 11, .other), infoKind: "tun", ipv4Addresses: [ip("192.0.0.4")]))
        box.answer(RouteQuery(ip("198.18.0.1"), mark: 51820, udpDestinationPort: 51820), box.route(11))
        box.answer(RouteQuery(ip("64:ff9b::c612:1")), box.route(2, family: .ipv6))
        let chain = box.chain(10)
        #expect(chain.names == "wg0 → clat → wwan0")
        #expect(chain.hops.map(\.via) == [nil, .wireguard, .clat])
        #expect(chain.hops[0].peers.first?.underlay?.name == "wwan0")
    }

    /// Facts a merge did not record say so, and never block the route.
    @Test func unrecordedFactsAreUnknown() {
        let box = Box()
        let r = RouteLookup(family: .ipv4, type: .unicast, link: Box.state("tun5", 55, .other))
        let chain = Underlay.resolve(route: r, destination: .defaultRoute(.ipv4), config: .standard, source: box.facts)!
        #expect(!chain.blocking)
        #expect(chain.problem == "tun5: not readable: not read when the route was computed")
        #expect(Underlay.resolve(
            route: RouteLookup(family: .ipv4, type: .local, link: Box.state("lo", 1, .loopback)),
            destination: .address(ip("127.0.0.1")), config: .standard, source: box.facts) == nil)
        // An uplink's chain from its index alone.
        #expect(Underlay.resolve(index: 2, destination: .defaultRoute(.ipv4), config: .standard, source: box.facts)?.names == "wwan0")
    }
}
