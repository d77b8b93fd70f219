// The underlay in real network namespaces: a CLAT (clatd's layout: a tun with 192.0.0.4/29 holding the IPv4 default
// while wwan0 carries IPv6), a VXLAN riding on wwan0, OpenVPN's tun mapped by configuration, stacked links and a
// bridge, and `reach watch` reporting an underlay that moves. wwan0 is an attached tun (a raw-IP link with carrier,
// as qmi_wwan's is); this kernel has no WireGuard or GRE: those are tested in the WiFi lab's VM (hw/lab).

import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// A namespace with wwan0 (an attached tun) carrying IPv6 (fd00:20::2/64) and the IPv6 default route, and an
/// Ethernet eth0 (EthernetTopology's veth, 10.10.0.2/24 and fd00:10::2/64) without a default route.
final class CellularBox {
    let topology: EthernetTopology
    var host: Namespace { topology.host }

    init(_ tag: String) throws {
        topology = try EthernetTopology(tag, defaultRoutes: false)
        try host.attachedTun("wwan0")
        try host.ip("-6", "addr", "add", "fd00:20::2/64", "dev", "wwan0", "nodad")
        try host.ip("link", "set", "wwan0", "up")
        try host.ip("-6", "route", "add", "default", "dev", "wwan0")
    }

    /// A CLAT tun named `name` holding `address` and the IPv4 default route.
    func clat(_ name: String, address: String) throws {
        try host.attachedTun(name)
        try host.ip("addr", "add", address, "dev", name)
        try host.ip("link", "set", name, "up")
        try host.ip("route", "add", "default", "dev", name)
    }

    /// vx0 (remote 198.18.0.1, routed over wwan0) holding the IPv4 default route via 10.99.0.1.
    func vxlanOverWWAN() throws {
        try host.ip("addr", "add", "10.20.0.2", "peer", "10.20.0.1", "dev", "wwan0")
        try host.ip("route", "add", "198.18.0.0/24", "dev", "wwan0")
        try host.ip("link", "add", "vx0", "type", "vxlan", "id", "7", "remote", "198.18.0.1", "dstport", "4789")
        try host.ip("addr", "add", "10.99.0.2/24", "dev", "vx0")
        try host.ip("link", "set", "vx0", "up")
        try host.ip("route", "add", "default", "via", "10.99.0.1", "dev", "vx0")
    }
}

/// A config file of the test's own, removed with the handle.
final class TestConfig {
    let path: String

    init(_ text: String) throws {
        path = FileManager.default.temporaryDirectory.path + "/gr-underlay-\(getpid())-\(UUID().uuidString.prefix(8)).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

private func text(_ ns: Namespace, _ args: [String] = []) async throws -> String {
    try await ns.exec([TestPaths.reach, "status", "--no-modems", "--no-wifi"] + args).stdout
}

/// The `i`th hop of `route.chain`.
private func hop(_ j: JSON, _ i: Int) -> JSON? {
    guard let hops = j["route"]?["chain"]?.arrayValue, hops.indices.contains(i) else { return nil }
    return hops[i]
}

private func chainNames(_ j: JSON) -> [String] {
    j["route"]?["chain"]?.arrayValue?.compactMap { $0["interface"]?.stringValue } ?? []
}

@Suite(.serialized) struct UnderlayNamespaceTests {
    /// clatd's layout found by its RFC 7335 address alone (the name says nothing): the answer is WWAN.
    @Test(.needsRoot) func clatByAddress() async throws {
        let box = try CellularBox("clat")
        try box.clat("nat46", address: "192.0.0.4/29")
        let (j, exit, _) = try await status(box.host)
        #expect(exit == 0)
        #expect(j["status"] == .string("wwan"))
        #expect(j["medium"] == .string("wwan"))
        #expect(flags(j) == ["reachable", "is_direct", "is_wwan"])
        #expect(j["route"]?["interface"] == .string("nat46"))
        #expect(j["route"]?["family"] == .string("ipv4"))
        #expect(j["route"]?["underlay"] == .object([("interface", .string("wwan0")), ("kind", .string("wwan")), ("via", .string("clat"))]))
        #expect(chainNames(j) == ["nat46", "wwan0"])
        #expect(hop(j, 1)?["remote"] == .string("64:ff9b::/96"))
        #expect(try await text(box.host).hasPrefix("reachable over wwan via nat46 → wwan0 (on-link)\n  medium wwan · wwan"))
        // The uplinks are the physical links: nat46's IPv4 default counts for wwan0, which it rides on.
        let uplinks = j["uplinks"]?.arrayValue ?? []
        #expect(uplinks.map { $0["interface"] } == [.string("wwan0")])
        #expect(uplinks.first?["primary"] == .bool(true))
        #expect(uplinks.first?["upper"] == .array([.string("nat46")]))
        #expect(uplinks.first?["medium"] == .string("wwan"))
        #expect(try await text(box.host).contains("  uplink wwan0 (primary): reachable over wwan via nat46 → wwan0 (on-link)"))
    }

    /// A CLAT known by its name (OpenWrt's `464-wan6`) with an ordinary address. With a route to the PLAT prefix
    /// over eth0 that route is the underlay; without it, the IPv6 default route (wwan0); a configured PLAT prefix
    /// is the one asked.
    @Test(.needsRoot) func clatByNameWithAndWithoutAPLATRoute() async throws {
        let box = try CellularBox("clatname")
        try box.clat("464-wan6", address: "10.64.0.2/32")
        try box.host.ip("-6", "route", "add", "64:ff9b::/96", "via", "fd00:10::1", "dev", "eth0")
        let (viaPLAT, exit1, _) = try await status(box.host)
        #expect(exit1 == 0)
        #expect(chainNames(viaPLAT) == ["464-wan6", "eth0"])
        #expect(viaPLAT["medium"] == .string("ethernet"))
        #expect(viaPLAT["status"] == .string("wifi"))

        try box.host.ip("-6", "route", "del", "64:ff9b::/96")
        let (viaDefault, exit2, _) = try await status(box.host)
        #expect(exit2 == 0)
        #expect(chainNames(viaDefault) == ["464-wan6", "wwan0"])
        #expect(viaDefault["medium"] == .string("wwan"))
        #expect(try await text(box.host).hasPrefix("reachable over wwan via 464-wan6 → wwan0 (on-link)"))

        // A network-specific PLAT prefix (RFC 6877) routed over eth0, named in the configuration; an address target
        // is written into it (RFC 6052).
        try box.host.ip("-6", "route", "add", "2001:db8:64::/96", "via", "fd00:10::1", "dev", "eth0")
        let config = try TestConfig(#"{"clat": {"plat_prefix": "2001:db8:64::/96"}}"#)
        let (configured, _, _) = try await status(box.host, ["--config", config.path, "--address", "192.0.2.33"])
        #expect(chainNames(configured) == ["464-wan6", "eth0"])
        #expect(hop(configured, 1)?["remote"] == .string("2001:db8:64::/96"))

        // No IPv6 route at all: the CLAT cannot carry anything.
        try box.host.ip("-6", "route", "del", "default")
        try box.host.ip("-6", "route", "del", "2001:db8:64::/96")
        let (none, exit3, _) = try await status(box.host, ["--address", "192.0.2.33"])
        #expect(exit3 == 1)
        #expect(none["route"]?["underlay_error"] == .string("464-wan6: no IPv6 route to the PLAT prefix 64:ff9b::/96"))
        #expect(try await text(box.host, ["--address", "192.0.2.33"])
            .hasPrefix("not reachable: 464-wan6: no IPv6 route to the PLAT prefix 64:ff9b::/96"))
    }

    /// A VXLAN holding the default route, its remote reached over wwan0.
    @Test(.needsRoot) func vxlanOverWWAN() async throws {
        let box = try CellularBox("vxlan")
        try box.vxlanOverWWAN()
        let (j, exit, _) = try await status(box.host)
        #expect(exit == 0)
        #expect(j["route"]?["interface"] == .string("vx0"))
        #expect(j["route"]?["kind"] == .string("ethernet"))  // the route's own link, as before
        #expect(j["medium"] == .string("wwan"))
        #expect(j["status"] == .string("wwan"))
        #expect(flags(j) == ["reachable", "is_wwan"])
        #expect(chainNames(j) == ["vx0", "wwan0"])
        #expect(hop(j, 0)?["link_kind"] == .string("vxlan"))
        #expect(hop(j, 1)?["via"] == .string("tunnel"))
        #expect(hop(j, 1)?["remote"] == .string("198.18.0.1"))
        #expect(try await text(box.host).hasPrefix("reachable over wwan via vx0 → wwan0 (gateway 10.99.0.1)"))

        // Bound to eth0 (`dev eth0`): the kernel sends its packets there whatever the routes say.
        try box.host.ip("link", "add", "vx1", "type", "vxlan", "id", "8", "remote", "10.10.0.1", "dstport", "4789", "dev", "eth0")
        try box.host.ip("addr", "add", "10.98.0.2/24", "dev", "vx1")
        try box.host.ip("link", "set", "vx1", "up")
        let (bound, _, _) = try await status(box.host, ["--address", "10.98.0.1"])
        #expect(chainNames(bound) == ["vx1", "eth0"])
        #expect(bound["medium"] == .string("ethernet"))
    }

    /// OpenVPN's tun shows no underlay to the kernel; the configuration names it.
    @Test(.needsRoot) func tunMappedByConfig() async throws {
        let box = try CellularBox("tunmap")
        try box.host.attachedTun("tun0")
        try box.host.ip("addr", "add", "10.8.0.2", "peer", "10.8.0.1", "dev", "tun0")
        try box.host.ip("link", "set", "tun0", "up")
        try box.host.ip("route", "add", "default", "dev", "tun0")
        let (plain, _, _) = try await status(box.host)
        #expect(plain["medium"] == .string("other"))
        #expect(chainNames(plain) == ["tun0"])
        #expect(plain["route"]?["underlay"] == .null)

        let config = try TestConfig(#"{"interface_underlays": {"tun0": "wwan0"}}"#)
        let (mapped, exit, _) = try await status(box.host, ["--config", config.path])
        #expect(exit == 0)
        #expect(mapped["medium"] == .string("wwan"))
        #expect(mapped["status"] == .string("wwan"))
        #expect(mapped["route"]?["underlay"]?["via"] == .string("config"))
        #expect(try await text(box.host, ["--config", config.path]).hasPrefix("reachable over wwan via tun0 → wwan0 (on-link)"))

        // A configured underlay that does not exist: the tunnel cannot carry packets (the default target then
        // answers with the IPv6 default route over wwan0; an IPv4 address has only tun0).
        let missing = try TestConfig(#"{"interface_underlays": {"tun0": "wwan7"}}"#)
        let (fallback, _, _) = try await status(box.host, ["--config", missing.path])
        #expect(fallback["supports_ipv4"] == .bool(false))
        #expect(fallback["route"]?["interface"] == .string("wwan0"))
        let (gone, exit2, _) = try await status(box.host, ["--config", missing.path, "--address", "192.0.2.1"])
        #expect(exit2 == 1)
        #expect(gone["route"]?["underlay_error"] == .string("tun0: its configured underlay wwan7 does not exist"))
    }

    @Test func configLoopIsRefused() async throws {
        let config = try TestConfig(#"{"interface_underlays": {"tun0": "ppp0", "ppp0": "tun0", "wg0": "wwan0"}}"#)
        for args in [["status", "--config", config.path, "--no-modems", "--no-wifi"], ["agent", "--check-config", "--config", config.path]] {
            let r = try await TestSupport.run([TestPaths.reach] + args, timeout: 10)
            #expect(r.status == 78, "\(args)")
            #expect(r.stderr.contains("interface_underlays: ppp0 → tun0 → ppp0 is a loop"), "\(r.stderr)")
            #expect(r.stdout.isEmpty, "\(args)")
        }
    }

    /// The link under a tunnel loses carrier (its peer goes down; the route to the remote stays, linkdown): the
    /// tunnel is not reachable, and the reason names the hop.
    @Test(.needsRoot) func underlayLosingCarrier() async throws {
        let host = try Namespace("uloss")
        let net = try Namespace("uloss-net")
        defer {
            host.delete()
            net.delete()
        }
        try host.veth("wwan0", peer: net, "up0")  // named like a modem's netdev: WWAN by name
        try host.ip("addr", "add", "10.20.0.2/24", "dev", "wwan0")
        try net.ip("link", "set", "up0", "up")
        try host.ip("link", "set", "wwan0", "up")
        try host.ip("route", "add", "198.18.0.0/24", "via", "10.20.0.1", "dev", "wwan0")
        try host.ip("link", "add", "vx0", "type", "vxlan", "id", "7", "remote", "198.18.0.1", "dstport", "4789")
        try host.ip("addr", "add", "10.99.0.2/24", "dev", "vx0")
        try host.ip("link", "set", "vx0", "up")
        try host.ip("route", "add", "default", "via", "10.99.0.1", "dev", "vx0")
        let (up, exit1, _) = try await status(host)
        #expect(exit1 == 0)
        #expect(up["medium"] == .string("wwan"))

        try net.ip("link", "set", "up0", "down")
        let (down, exit2, _) = try await status(host)
        #expect(exit2 == 1)
        #expect(down["reachable"] == .bool(false))
        #expect(down["status"] == .string("none"))
        #expect(flags(down) == ["connection_required", "is_wwan"])
        #expect(down["route"]?["interface"] == .string("vx0"))
        #expect(down["route"]?["carrier"] == .bool(true))  // vx0 itself is fine
        #expect(hop(down, 1)?["carrier"] == .bool(false))
        #expect(try await text(host).hasPrefix("not reachable: vx0: its underlay wwan0 has no carrier"))
    }

    /// Stacked links follow IFLA_LINK; a bridge follows its forwarding database to the port the gateway is on.
    @Test(.needsRoot) func stackedLinksAndABridge() async throws {
        let box = try CellularBox("stack")
        try box.host.ip("link", "add", "mv0", "link", "eth0", "type", "macvlan", "mode", "bridge")
        try box.host.ip("addr", "add", "10.10.0.3/24", "dev", "mv0")
        try box.host.ip("link", "set", "mv0", "up")
        let (mv, _, _) = try await status(box.host, ["--address", "10.10.0.1"])
        // Both carry 10.10.0.0/24; the kernel's choice decides which one the chain starts from.
        if mv["route"]?["interface"] == .string("mv0") {
            #expect(chainNames(mv) == ["mv0", "eth0"])
            #expect(hop(mv, 1)?["via"] == .string("lower"))
        }
        try box.host.ip("route", "add", "192.0.2.0/24", "via", "10.10.0.1", "dev", "mv0")
        let (viaMacvlan, _, _) = try await status(box.host, ["--address", "192.0.2.9"])
        #expect(chainNames(viaMacvlan) == ["mv0", "eth0"])

        // A bridge with two ports up; a static neighbour and forwarding entry put the gateway behind port p2.
        try box.host.ip("link", "add", "br0", "type", "bridge")
        try box.host.ip("link", "add", "p1", "type", "veth", "peer", "name", "p1x")
        try box.host.ip("link", "add", "p2", "type", "veth", "peer", "name", "p2x")
        for l in ["p1", "p2"] { try box.host.ip("link", "set", l, "master", "br0") }
        for l in ["p1", "p1x", "p2", "p2x", "br0"] { try box.host.ip("link", "set", l, "up") }
        try box.host.ip("addr", "add", "172.31.0.2/24", "dev", "br0")
        try box.host.ip("route", "add", "203.0.113.0/24", "via", "172.31.0.1", "dev", "br0")
        try box.host.ip("neigh", "replace", "172.31.0.1", "lladdr", "02:00:5e:00:53:01", "dev", "br0", "nud", "permanent")
        _ = try await box.host.exec(["bridge", "fdb", "replace", "02:00:5e:00:53:01", "dev", "p2", "master", "static"])
        let (bridged, exit, _) = try await status(box.host, ["--address", "203.0.113.5"])
        #expect(exit == 0)
        #expect(chainNames(bridged) == ["br0", "p2"])
        #expect(hop(bridged, 1)?["via"] == .string("lower"))
    }

    /// `reach watch`: the route to the VXLAN's remote moves from wwan0 to eth0, and one change line says so.
    @Test(.needsRoot) func watchReportsAnUnderlayMove() async throws {
        let box = try CellularBox("uwatch")
        try box.vxlanOverWWAN()
        let config = try TestConfig(#"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#)
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", box.host.name, TestPaths.reach, "watch", "--json", "--hold-down", "0.2", "--config", config.path],
            stdout: .capture)
        func lines() -> [JSON] { (watch.stdout?.text ?? "").split(separator: "\n").compactMap { try? JSON.parse(String($0)) } }
        try #require(await TestSupport.eventually(timeout: 10) { lines().count == 1 }, "\(watch.errorText)")
        #expect(lines()[0]["medium"] == .string("wwan"))
        try box.host.ip("route", "replace", "198.18.0.0/24", "via", "10.10.0.1", "dev", "eth0")
        let moved = await TestSupport.eventually(timeout: 10) { lines().count >= 2 }
        watch.signal(SIGINT)
        #expect(await watch.wait(timeout: 10) == 0)
        try #require(moved, "\(lines())")
        let change = lines()[1]
        #expect(change["event"]?["type"] == .string("change"))
        // vx0's default route counts for the link it rides on: the primary uplink moves with it.
        #expect(change["event"]?["changed"] == .array([.string("status"), .string("medium"), .string("underlay"), .string("uplinks")]))
        #expect(change["event"]?["reason"] == .string("vx0: underlay moved from wwan0 to eth0; uplink eth0 appeared; primary uplink now eth0"))
        #expect(change["event"]?["from"]?["underlay"] == .string("vx0 → wwan0"))
        #expect(change["medium"] == .string("ethernet"))
        #expect(lines().count == 2, "one line per change: \(lines())")
    }
}
