import Testing
@testable import ReachCore

/// 2001:db8::1 as bytes. (Out of `ipTunnels`' arguments: Swift 6.0's type checker gives up on the chains there.)
let documentationAddress6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]

/// The merge with an underlay: flags, medium, status, the modem truth through the chain, the text, the JSON and
/// change detection; and the decoders that feed the walk.
enum Chains {
    static func link(_ name: String, _ index: Int, _ kind: InterfaceKind, carrier: Bool = true, up: Bool = true) -> LinkState {
        LinkState(name: name, index: index, kind: kind, adminUp: up, carrier: carrier)
    }

    /// The IPv4 default route on clatd's `clat`, riding on wwan0.
    static func clat(wwanCarrier: Bool = true) -> RouteLookup {
        let top = link("clat", 10, .other)
        let chain = UnderlayChain(hops: [
            UnderlayHop(link: top, infoKind: "tun"),
            UnderlayHop(link: link("wwan0", 2, .wwan, carrier: wwanCarrier), via: .clat, remote: "64:ff9b::/96"),
        ])
        return RouteLookup(family: .ipv4, type: .unicast, link: top, underlay: chain)
    }

    /// A VXLAN holding the default route, its remote reached over `bottom`.
    static func vxlan(over bottom: LinkState, problem: String? = nil, blocking: Bool = false) -> RouteLookup {
        let top = link("vx0", 10, .ethernet)
        var hops = [UnderlayHop(link: top, infoKind: "vxlan")]
        if problem == nil || !blocking { hops.append(UnderlayHop(link: bottom, via: .tunnel, remote: "198.18.0.1")) }
        return RouteLookup(
            family: .ipv4, type: .unicast, link: top, gateway: "10.99.0.1",
            underlay: UnderlayChain(hops: hops, problem: problem, blocking: blocking))
    }

    static func modem(sim: SIMState = .ready) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.accessTechnologies = [.lte]
        m.registration = .home
        m.sim = sim
        return m
    }

    static func snapshot(_ route: RouteLookup?, modems: [ModemState] = []) -> Snapshot {
        var s = Snapshot(time: Timestamp(seconds: 1_700_000_000), target: .defaultRoute)
        s.route = route
        s.wwan = modems
        s.derive()
        return s
    }
}

@Suite struct UnderlayMergeTests {
    /// The headline case of the issue: a cellular-only gateway behind 464XLAT is WWAN, not WiFi.
    @Test func clatOverWWANIsWWAN() {
        let s = Chains.snapshot(Chains.clat(), modems: [Chains.modem()])
        #expect(s.flags == [.reachable, .isDirect, .isWWAN])
        #expect(s.status == .wwan)
        #expect(s.medium == .wwan)
        #expect(s.wwanStatus == .g4)  // the modem under the CLAT carries the route
        #expect(SnapshotText.headline(s) == "reachable over wwan via clat → wwan0 (on-link)")
    }

    @Test(arguments: [
        (InterfaceKind.wwan, ReachabilityFlags([.reachable, .isWWAN]), ReachabilityStatus.wwan, Medium.wwan),
        (.ethernet, [.reachable], .wifi, .ethernet),
        (.wifi, [.reachable], .wifi, .wifi),
        (.ppp, [.transientConnection, .reachable], .wifi, .other),
    ] as [(InterfaceKind, ReachabilityFlags, ReachabilityStatus, Medium)])
    func tunnelTakesTheBottomLinksKind(kind: InterfaceKind, flags: ReachabilityFlags, status: ReachabilityStatus, medium: Medium) {
        let s = Chains.snapshot(Chains.vxlan(over: Chains.link("up0", 2, kind)))
        #expect(s.flags == flags)
        #expect(s.status == status)
        #expect(s.medium == medium)
    }

    /// The underlay without carrier: the tunnel is not reachable, and the reason names the hop.
    @Test func underlayWithoutCarrier() {
        let s = Chains.snapshot(Chains.vxlan(over: Chains.link("wwan0", 2, .wwan, carrier: false)))
        #expect(s.flags == [.connectionRequired, .isWWAN])
        #expect(!s.reachable)
        #expect(s.status == .none)
        #expect(s.medium == .none)
        #expect(SnapshotText.headline(s) == "not reachable: vx0: its underlay wwan0 has no carrier")
        let down = Chains.snapshot(Chains.vxlan(over: Chains.link("wwan0", 2, .wwan, carrier: false, up: false)))
        #expect(SnapshotText.headline(down) == "not reachable: vx0: its underlay wwan0 is down")
    }

    @Test func blockingAndNonBlockingProblems() {
        let loop = Chains.snapshot(Chains.vxlan(
            over: Chains.link("wwan0", 2, .wwan), problem: "vx0: the route to its remote 198.18.0.1 goes back through vx0 (a loop)",
            blocking: true))
        #expect(!loop.reachable)
        #expect(loop.flags == [.connectionRequired])
        #expect(SnapshotText.headline(loop) == "not reachable: vx0: the route to its remote 198.18.0.1 goes back through vx0 (a loop)")
        // Could not see further: the answer stands on what was seen, and the text says what is missing.
        let unknown = Chains.snapshot(Chains.vxlan(over: Chains.link("wwan0", 2, .wwan), problem: "vx0: peers?", blocking: false))
        #expect(unknown.reachable)
        #expect(unknown.medium == .wwan)
        #expect(SnapshotText.render(unknown).contains("  underlay: vx0: peers?"))
    }

    /// The modem truth applies through the chain: a locked SIM on the modem under the CLAT needs a person.
    @Test func lockedSIMUnderTheCLAT() {
        let s = Chains.snapshot(Chains.clat(), modems: [Chains.modem(sim: .pinRequired)])
        #expect(s.flags.contains(.interventionRequired))
        #expect(!s.reachable)
        #expect(s.status == .none)
        #expect(SnapshotText.headline(s)
            == "not reachable: clat: its underlay wwan0 has a SIM that needs its PIN/PUK (intervention required)")
        #expect(Snapshot.modem(carrying: Chains.clat(), in: [Chains.modem()])?.device == "/dev/cdc-wdm0")
    }

    /// Through a CLAT too, a refused request voids nothing: the session down under it decides, and the reason names
    /// the chain, the evidence and what was not read.
    @Test func refusalsUnderTheCLATLeaveTheEvidenceStanding() {
        var m = Chains.modem(sim: .unknown)
        m.unread = [UnreadReading(.sim, reason: "qmi_client_dms_uim_get_pin_status: QMI protocol error (94): 'NotSupported'")]
        m.dataChannels = [DataChannel(clients: [
            DataClientReading(family: .ipv4, state: .disconnected),
            DataClientReading(family: .ipv6, state: .unknown, error: "Set IP Family refused", observing: false),
        ])]
        let s = Chains.snapshot(Chains.clat(), modems: [m])
        #expect(!s.reachable)
        #expect(s.modemCheck?.reason == "clat: its underlay wwan0: the modem has no data session (could not read: SIM status)")
        m.dataChannels[0].clients[0].state = .connected
        #expect(Chains.snapshot(Chains.clat(), modems: [m]).reachable)
    }

    @Test func json() throws {
        let s = Chains.snapshot(Chains.clat())
        let route = try #require(s.json()["route"])
        #expect(route["interface"] == .string("clat"))
        #expect(route["kind"] == .string("other"))
        #expect(route["underlay"] == .object([("interface", .string("wwan0")), ("kind", .string("wwan")), ("via", .string("clat"))]))
        let chain = try #require(route["chain"]?.arrayValue)
        #expect(chain.map { $0["interface"] } == [.string("clat"), .string("wwan0")])
        #expect(chain.map { $0["via"] } == [.null, .string("clat")])
        #expect(chain[0]["link_kind"] == .string("tun"))
        #expect(chain[1]["remote"] == .string("64:ff9b::/96"))
        #expect(route["underlay_error"] == nil)

        // A plain route: a one-hop chain and no underlay.
        let plain = Chains.snapshot(RouteLookup(family: .ipv4, type: .unicast, link: Chains.link("eth0", 3, .ethernet)))
        #expect(plain.json()["route"]?["chain"]?.arrayValue?.count == 1)
        #expect(plain.json()["route"]?["underlay"] == .null)
        let broken = Chains.snapshot(Chains.vxlan(over: Chains.link("wwan0", 2, .wwan), problem: "vx0: no route to its remote 198.18.0.1", blocking: true))
        #expect(broken.json()["route"]?["underlay_error"] == .string("vx0: no route to its remote 198.18.0.1"))
    }

    /// The uplinks are the physical links: a CLAT's and a WireGuard table's default routes count for wwan0, which they
    /// ride on; wwan0's own IPv4 route stands for it, and the text names a rider's chain when its route stands.
    @Test func uplinksAreThePhysicalLinks() throws {
        let wwan = Chains.link("wwan0", 2, .wwan)
        let own = RouteLookup(family: .ipv6, type: .unicast, link: wwan, metric: 10, table: 254)
        var clat = Chains.clat()
        clat.table = 254
        let wg = Chains.link("wg0", 11, .other)
        let vpn = RouteLookup(
            family: .ipv4, type: .unicast, link: wg, table: 51820,
            underlay: UnderlayChain(hops: [UnderlayHop(link: wg, infoKind: "wireguard"), UnderlayHop(link: wwan, via: .wireguard)]))
        let eth = RouteLookup(family: .ipv4, type: .unicast, link: Chains.link("eth0", 3, .ethernet), gateway: "192.0.2.1", metric: 100, table: 254)
        let grouped = Uplink.group(routes: [clat, own, vpn, eth], primaryInterface: "wwan0")
        #expect(grouped.map(\.interface) == ["wwan0", "eth0"])
        #expect(grouped[0].routes.count == 3)
        #expect(grouped[0].link?.kind == .wwan)
        #expect(grouped[0].json["upper"] == .array([.string("clat"), .string("wg0")]))
        #expect(grouped[1].json["upper"] == .array([]))

        var s = Chains.snapshot(clat, modems: [Chains.modem()])
        s.uplinks = grouped
        s.deriveUplinks()
        let wwanUplink = try #require(s.uplinks.first { $0.interface == "wwan0" })
        #expect(wwanUplink.primary)  // the answer's route rides on it
        #expect(wwanUplink.medium == .wwan)
        #expect(wwanUplink.modem?.device == "/dev/cdc-wdm0")
        #expect(SnapshotText.uplinkLine(wwanUplink).hasPrefix("uplink wwan0 (primary): reachable over wwan via clat → wwan0 (on-link)"))
    }

    /// An underlay that moves while packets still leave is a change at once; one that goes with the reachability
    /// waits out the hold-down like the loss.
    @Test func changeDetection() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        let overWWAN = Chains.snapshot(Chains.vxlan(over: Chains.link("wwan0", 2, .wwan)))
        let overEth = Chains.snapshot(Chains.vxlan(over: Chains.link("eth1", 4, .ethernet)))
        let noCarrier = Chains.snapshot(Chains.vxlan(over: Chains.link("eth1", 4, .ethernet, carrier: false)))
        let first = d.observe(overWWAN, at: .seconds(0))
        #expect(first?.current.underlay == "vx0 → wwan0")
        let e1 = d.observe(overEth, at: .seconds(1))
        let moved = try #require(e1)
        #expect(moved.changed == [.status, .medium, .underlay])
        #expect(moved.reason == "vx0: underlay moved from wwan0 to eth1")
        let line = ReportLine.event(.change, seq: 2, change: moved)
        #expect(line["from"]?["underlay"] == .string("vx0 → wwan0"))
        let again = d.observe(overEth, at: .seconds(2))
        #expect(again == nil)

        // The same chain losing carrier below: no underlay change, a held loss named after the hop.
        let held = d.observe(noCarrier, at: .seconds(3))
        #expect(held == nil)
        let e2 = d.tick(at: .seconds(8))
        let lost = try #require(e2)
        #expect(lost.changed == [.status, .medium, .reachable])
        #expect(lost.reason == "vx0: underlay eth1 lost carrier")

        // The route leaves the tunnel for a plain link: the underlay goes at once (packets still leave).
        let plain = Chains.snapshot(RouteLookup(family: .ipv4, type: .unicast, link: Chains.link("eth0", 3, .ethernet), gateway: "192.0.2.1"))
        let e3 = d.observe(plain, at: .seconds(9))
        let off = try #require(e3)
        #expect(off.changed.contains(.underlay))
        #expect(off.current.underlay == nil)
    }
}

@Suite struct UnderlayDecodingTests {
    /// An RTM_NEWLINK payload: ifinfomsg with the index, then attributes.
    static func linkPayload(index: Int32, _ build: (inout NetlinkAttributeWriter) -> Void) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 16)
        header.replaceSubrange(4..<8, with: NativeInteger.bytes(index))
        var w = NetlinkAttributeWriter()
        build(&w)
        return header + w.bytes
    }

    @Test func vxlanLink() throws {
        let payload = Self.linkPayload(index: 9) { w in
            w.put(3, string: "vx0")
            w.put(5, integer: UInt32(2))
            w.nest(18) { info in
                info.put(1, string: "vxlan")
                info.nest(2) { data in
                    data.put(1, integer: UInt32(7))  // VNI
                    data.put(2, [198, 18, 0, 1])  // IFLA_VXLAN_GROUP
                    data.put(3, integer: UInt32(2))  // IFLA_VXLAN_LINK
                    data.put(15, [0x12, 0xB5])  // IFLA_VXLAN_PORT 4789, network order
                }
            }
        }
        let m = try #require(LinkMessage(payload: payload))
        #expect(m.index == 9)
        #expect(m.name == "vx0")
        #expect(m.link == 2)
        #expect(!m.linkInOtherNamespace)
        #expect(m.infoKind == "vxlan")
        let data = try #require(m.infoData)
        let t = try #require(UnderlayTunnel.decode(kind: "vxlan", data))
        #expect(t == UnderlayTunnel(remote: IPAddress("198.18.0.1"), boundIndex: 2, udpPort: 4789))
    }

    @Test(arguments: [
        ("gre", 7 as UInt16, 6 as UInt16, [UInt8]([203, 0, 113, 5]), "203.0.113.5"),
        ("ipip", 3, 2, [203, 0, 113, 5], "203.0.113.5"),
        ("sit", 3, 2, [203, 0, 113, 5], "203.0.113.5"),
        ("ip6tnl", 3, 2, documentationAddress6, "2001:db8::1"),
        ("ip6gre", 7, 6, documentationAddress6, "2001:db8::1"),
    ])
    func ipTunnels(kind: String, remoteType: UInt16, localType: UInt16, remote: [UInt8], text: String) throws {
        var w = NetlinkAttributeWriter()
        w.put(1, integer: UInt32(3))  // LINK
        w.put(remoteType, remote)
        w.put(localType, [UInt8](repeating: 0, count: remote.count))  // local any
        w.put(20, integer: UInt32(0x51))  // FWMARK
        let t = try #require(UnderlayTunnel.decode(kind: kind, NetlinkAttributes(w.bytes)))
        #expect(t.remote == IPAddress(text))
        #expect(t.local == nil)
        #expect(t.boundIndex == 3)
        #expect(t.fwmark == 0x51)
    }

    @Test func geneveAndUnknownKinds() throws {
        var w = NetlinkAttributeWriter()
        w.put(2, [198, 18, 0, 9])
        w.put(5, [0x17, 0xC1])  // 6081
        #expect(UnderlayTunnel.decode(kind: "geneve", NetlinkAttributes(w.bytes)) == UnderlayTunnel(remote: IPAddress("198.18.0.9"), udpPort: 6081))
        #expect(UnderlayTunnel.decode(kind: "veth", NetlinkAttributes(w.bytes)) == nil)
        // `remote any`: no remote.
        var any = NetlinkAttributeWriter()
        any.put(7, [0, 0, 0, 0])
        #expect(UnderlayTunnel.decode(kind: "gre", NetlinkAttributes(any.bytes))?.remote == nil)
    }

    @Test func linkInAnotherNamespace() throws {
        let payload = Self.linkPayload(index: 4) { w in
            w.put(5, integer: UInt32(12))
            w.put(37, integer: Int32(0))  // IFLA_LINK_NETNSID
            w.put(10, integer: UInt32(20))  // IFLA_MASTER
        }
        let m = try #require(LinkMessage(payload: payload))
        #expect(m.linkInOtherNamespace)
        #expect(m.master == 20)
        #expect(LinkMessage(payload: [1, 2, 3]) == nil)
    }

    /// WG_CMD_GET_DEVICE as drivers/net/wireguard/netlink.c writes it: every peer and allowed IP nested under type
    /// 0, and a peer whose allowed IPs overflow one message continued, same public key, in the next.
    @Test func wireGuardDumpAcrossMessages() throws {
        let keyA = [UInt8](repeating: 0xA, count: 32)
        let keyB = [UInt8](repeating: 0xB, count: 32)
        func allowed(_ w: inout NetlinkAttributeWriter, _ family: UInt16, _ address: [UInt8], _ cidr: UInt8) {
            w.nest(0) { a in
                a.put(1, integer: family)
                a.put(2, address)
                a.put(3, [cidr])
            }
        }
        var first = NetlinkAttributeWriter()
        first.put(2, string: "wg0")
        first.put(6, integer: UInt16(51820))
        first.put(7, integer: UInt32(0xca6c))
        first.nest(8) { peers in
            peers.nest(0) { p in
                p.put(1, keyA)
                // struct sockaddr_in: AF_INET (host order), port 51820 (network order), 198.18.0.1, zero padding.
                p.put(4, NativeInteger.bytes(UInt16(2)) + [0xCA, 0x6C, 198, 18, 0, 1] + [UInt8](repeating: 0, count: 8))
                p.nest(9) { list in allowed(&list, 2, [0, 0, 0, 0], 0) }
            }
            peers.nest(0) { p in
                p.put(1, keyB)
                // struct sockaddr_in6: AF_INET6, port 51821, flow label, 2001:db8::7, scope id.
                p.put(4, NativeInteger.bytes(UInt16(10)) + [0xCA, 0x6D, 0, 0, 0, 0, 0x20, 0x01, 0x0d, 0xb8]
                    + [UInt8](repeating: 0, count: 11) + [7, 0, 0, 0, 0])
                p.nest(9) { list in allowed(&list, 2, [10, 0, 0, 0], 8) }
            }
        }
        var second = NetlinkAttributeWriter()
        second.put(2, string: "wg0")
        second.nest(8) { peers in
            peers.nest(0) { p in
                p.put(1, keyB)
                p.nest(9) { list in allowed(&list, 10, [0xfd] + [UInt8](repeating: 0, count: 15), 8) }
            }
        }
        let genl: [UInt8] = [0, 1, 0, 0]  // genlmsghdr: cmd WG_CMD_GET_DEVICE, version 1
        let d = try #require(WireGuardDevice.decode(messages: [genl + first.bytes, genl + second.bytes]))
        #expect(d.listenPort == 51820)
        #expect(d.fwmark == 0xca6c)
        #expect(d.peers.count == 2)
        #expect(d.peers[0].endpointText == "198.18.0.1:51820")
        #expect(d.peers[0].allowedIPs == [IPPrefix("0.0.0.0/0")!])
        #expect(d.peers[1].endpointText == "[2001:db8::7]:51821")
        #expect(d.peers[1].allowedIPs == [IPPrefix("10.0.0.0/8")!, IPPrefix("fd00::/8")!])
        #expect(WireGuardDevice.decode(messages: []) == nil)
    }
}

@Suite struct UnderlayConfigTests {
    @Test func parsesAndPrints() throws {
        let c = try AgentConfig.parse(#"{"interface_underlays": {"tun0": "wwan0", "ppp1": "tun0"}, "clat": {"plat_prefix": "2001:db8:64::/96"}}"#)
        #expect(c.interfaceUnderlays == ["tun0": "wwan0", "ppp1": "tun0"])
        #expect(c.platPrefix == IPPrefix("2001:db8:64::/96"))
        #expect(c.underlayConfig.interfaceUnderlays["tun0"] == "wwan0")
        let printed = c.json
        #expect(printed["interface_underlays"]?["ppp1"] == .string("tun0"))
        #expect(printed["clat"]?["plat_prefix"] == .string("2001:db8:64::/96"))
        #expect(try AgentConfig.parse("{}").platPrefix == IPPrefix("64:ff9b::/96"))
    }

    @Test(arguments: [
        (#"{"interface_underlays": {"tun0": "ppp0", "ppp0": "tun0"}}"#, "interface_underlays: ppp0 → tun0 → ppp0 is a loop"),
        (#"{"interface_underlays": {"tun0": "tun0"}}"#, "interface_underlays: tun0 → tun0 is a loop"),
        (#"{"interface_underlays": {"tun0": 5}}"#, "interface_underlays.tun0: expected an interface name"),
        (#"{"interface_underlays": {"tun/0": "wwan0"}}"#, "interface_underlays.tun/0: expected an interface name"),
        (#"{"interface_underlays": {"tun0": "a very long interface name"}}"#, "interface_underlays.tun0: expected"),
        (#"{"interface_underlays": []}"#, "interface_underlays: expected an object"),
        (#"{"clat": {"plat_prefix": "64:ff9b::/80"}}"#, "clat.plat_prefix: expected an IPv6 prefix of length 32, 40, 48, 56, 64, 96"),
        (#"{"clat": {"plat_prefix": "192.0.0.0/29"}}"#, "clat.plat_prefix: expected"),
        (#"{"clat": {"plat_prefix": "64:ff9b::1/96"}}"#, "clat.plat_prefix: expected"),
        (#"{"clat": {"plat_prefix": "64:ff9b::"}}"#, "clat.plat_prefix: expected"),
        (#"{"clat": {"prefix": "64:ff9b::/96"}}"#, "clat.prefix"),
    ])
    func refused(text: String, message: String) {
        #expect(throws: ConfigError.self) { try AgentConfig.parse(text) }
        do {
            _ = try AgentConfig.parse(text)
        } catch {
            #expect(error.description.contains(message), "\(error)")
        }
    }
}
