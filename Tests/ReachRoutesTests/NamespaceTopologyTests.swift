// `reach status` inside real network namespaces: each test builds a topology with ip(8) — veth, tun, routes —
// runs the built `reach` in it and checks the JSON and the exit code. Nothing leaves the namespaces made here.

import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// The JSON and exit status of `reach status --json ARGS` run inside `ns`.
func status(_ ns: Namespace, _ args: [String] = [], timeout: Double = 20) async throws
    -> (json: JSON, exit: Int32, seconds: Double)
{
    let r = try await ns.exec([TestPaths.reach, "status", "--json", "--no-modems", "--no-wifi"] + args, timeout: timeout)
    guard !r.timedOut else { throw TestFailure("reach status \(args) timed out") }
    guard let line = r.stdout.split(separator: "\n").first else {
        throw TestFailure("reach status \(args) printed nothing; exit \(r.status), stderr: \(r.stderr)")
    }
    return (try JSON.parse(String(line)), r.status, r.seconds)
}

func flags(_ j: JSON) -> [String] { j["flags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

/// A host namespace whose eth0 (a veth) reaches a "net" namespace, IPv4 and IPv6, default routes via 10.10.0.1 and
/// fd00:10::1.
final class EthernetTopology {
    let host: Namespace
    let net: Namespace

    /// - Parameter defaultRoutes: false leaves eth0 without the default routes (a second uplink of another test).
    init(_ tag: String = "eth", defaultRoutes: Bool = true) throws {
        host = try Namespace(tag)
        net = try Namespace(tag + "-net")
        try host.veth("eth0", peer: net, "up0")
        try host.ip("addr", "add", "10.10.0.2/24", "dev", "eth0")
        try host.ip("-6", "addr", "add", "fd00:10::2/64", "dev", "eth0", "nodad")
        try net.ip("addr", "add", "10.10.0.1/24", "dev", "up0")
        try net.ip("-6", "addr", "add", "fd00:10::1/64", "dev", "up0", "nodad")
        try net.ip("link", "set", "up0", "up")
        try host.ip("link", "set", "eth0", "up")
        guard defaultRoutes else { return }
        try host.ip("route", "add", "default", "via", "10.10.0.1")
        try host.ip("-6", "route", "add", "default", "via", "fd00:10::1")
    }

    deinit {
        host.delete()
        net.delete()
    }
}

@Suite(.serialized) struct NamespaceTopologyTests {
    @Test(.needsRoot) func defaultRouteOverEthernet() async throws {
        let t = try EthernetTopology()
        let (j, exit, _) = try await status(t.host)
        #expect(exit == 0)
        #expect(j["status"] == .string("wifi"))  // YY: reachable and not WWAN
        #expect(j["medium"] == .string("ethernet"))
        #expect(j["reachable"] == .bool(true))
        #expect(flags(j) == ["reachable"])
        #expect(j["flags_raw"] == .int(2))
        #expect(j["route"]?["interface"] == .string("eth0"))
        #expect(j["route"]?["kind"] == .string("ethernet"))
        #expect(j["route"]?["gateway"] == .string("10.10.0.1"))
        #expect(j["route"]?["source"] == .string("10.10.0.2"))
        #expect(j["route"]?["family"] == .string("ipv4"))
        #expect(j["supports_ipv4"] == .bool(true))
        #expect(j["supports_ipv6"] == .bool(true))
        #expect(j["target"]?["kind"] == .string("default"))

        let text = try await t.host.exec([TestPaths.reach, "status", "--no-modems", "--no-wifi"])
        #expect(text.stdout.hasPrefix("reachable over ethernet via eth0 (gateway 10.10.0.1)"))
    }

    @Test(.needsRoot) func ipv6AddressOverEthernet() async throws {
        let t = try EthernetTopology()
        let (j, exit, _) = try await status(t.host, ["--address", "2001:db8::1"])
        #expect(exit == 0)
        #expect(j["route"]?["family"] == .string("ipv6"))
        #expect(j["route"]?["gateway"] == .string("fd00:10::1"))
        #expect(j["route"]?["source"] == .string("fd00:10::2"))
        #expect(flags(j) == ["reachable"])
    }

    @Test(.needsRoot) func onLinkTargetsAreDirect() async throws {
        let t = try EthernetTopology()
        for target in ["10.10.0.1", "fd00:10::1"] {
            let (j, exit, _) = try await status(t.host, ["--address", target])
            #expect(exit == 0, "\(target)")
            #expect(flags(j) == ["reachable", "is_direct"], "\(target)")
            #expect(j["route"]?["gateway"] == .null, "\(target)")
            #expect(j["medium"] == .string("ethernet"), "\(target)")
        }
    }

    @Test(.needsRoot) func ownAddressIsLocal() async throws {
        let t = try EthernetTopology()
        for target in ["10.10.0.2", "fd00:10::2"] {
            let (j, exit, _) = try await status(t.host, ["--address", target])
            #expect(exit == 0, "\(target)")
            #expect(flags(j) == ["reachable", "is_local_address", "is_direct"], "\(target)")
            #expect(j["route"]?["type"] == .string("local"), "\(target)")
            #expect(j["flags_raw"] == .int(2 | 1 << 16 | 1 << 17), "\(target)")
        }
    }

    @Test(.needsRoot) func carrierDownMeansConnectionRequired() async throws {
        let t = try EthernetTopology()
        try t.net.ip("link", "set", "up0", "down")  // eth0 loses carrier; its routes stay (linkdown)
        for args in [[], ["--address", "198.51.100.7"], ["--address", "2001:db8::7"]] {
            let (j, exit, _) = try await status(t.host, args)
            #expect(exit == 1, "\(args)")
            #expect(flags(j) == ["connection_required"], "\(args)")
            #expect(j["reachable"] == .bool(false), "\(args)")
            #expect(j["status"] == .string("none"), "\(args)")
            #expect(j["medium"] == .string("none"), "\(args)")
            #expect(j["route"]?["interface"] == .string("eth0"), "\(args)")
            #expect(j["route"]?["carrier"] == .bool(false), "\(args)")
        }
        let text = try await t.host.exec([TestPaths.reach, "status", "--no-modems", "--no-wifi"])
        #expect(text.stdout.hasPrefix("not reachable: eth0 has no carrier (connection required)"))
        #expect(text.status == 1)
    }

    @Test(.needsRoot) func wwanTun() async throws {
        let ns = try Namespace("wwan")
        try ns.attachedTun("wwan0")
        try ns.ip("addr", "add", "10.20.0.2", "peer", "10.20.0.1", "dev", "wwan0")
        try ns.ip("-6", "addr", "add", "fd00:20::2/64", "dev", "wwan0", "nodad")
        try ns.ip("link", "set", "wwan0", "up")
        try ns.ip("route", "add", "default", "dev", "wwan0")
        try ns.ip("-6", "route", "add", "default", "dev", "wwan0")
        for args in [[], ["--address", "2001:db8::9"]] {
            let (j, exit, _) = try await status(ns, args)
            #expect(exit == 0, "\(args)")
            #expect(flags(j) == ["reachable", "is_direct", "is_wwan"], "\(args)")
            #expect(j["status"] == .string("wwan"), "\(args)")
            #expect(j["medium"] == .string("wwan"), "\(args)")
            #expect(j["route"]?["kind"] == .string("wwan"), "\(args)")
        }
        let (dflt, _, _) = try await status(ns)
        #expect(dflt["supports_ipv6"] == .bool(true))
    }

    @Test(.needsRoot) func detachedTunHasNoCarrier() async throws {
        let ns = try Namespace("wwandown")
        try ns.ip("tuntap", "add", "dev", "wwan0", "mode", "tun")  // no process attached: NO-CARRIER
        try ns.ip("addr", "add", "10.20.0.2", "peer", "10.20.0.1", "dev", "wwan0")
        try ns.ip("link", "set", "wwan0", "up")
        try ns.ip("route", "add", "default", "dev", "wwan0")
        let (j, exit, _) = try await status(ns)
        #expect(exit == 1)
        #expect(flags(j) == ["connection_required", "is_direct", "is_wwan"])
        #expect(j["status"] == .string("none"))
    }

    @Test(.needsRoot) func pointToPointPPPIsTransient() async throws {
        let ns = try Namespace("ppp")
        try ns.attachedTun("ppp0")
        try ns.ip("addr", "add", "10.30.0.2", "peer", "10.30.0.1", "dev", "ppp0")
        try ns.ip("link", "set", "ppp0", "up")
        try ns.ip("route", "add", "default", "dev", "ppp0")
        let (j, exit, _) = try await status(ns)
        #expect(exit == 0)
        #expect(flags(j) == ["transient_connection", "reachable", "is_direct"])
        #expect(j["flags_raw"] == .int(1 | 2 | 1 << 17))
        #expect(j["route"]?["kind"] == .string("ppp"))
        #expect(j["status"] == .string("wifi"))  // YY: reachable, not connection-required, not WWAN
        #expect(j["medium"] == .string("other"))
    }

    /// A PPP link that is really a modem's dial-up, declared in the configuration: WWAN.
    @Test(.needsRoot) func configuredInterfaceKindWins() async throws {
        let ns = try Namespace("pppwwan")
        try ns.attachedTun("ppp0")
        try ns.ip("addr", "add", "10.30.0.2", "peer", "10.30.0.1", "dev", "ppp0")
        try ns.ip("link", "set", "ppp0", "up")
        try ns.ip("route", "add", "default", "dev", "ppp0")
        let path = FileManager.default.temporaryDirectory.path + "/gr-kinds-\(getpid()).json"
        try #"{"interface_kinds": {"ppp0": "wwan"}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (j, exit, _) = try await status(ns, ["--config", path])
        #expect(exit == 0)
        #expect(flags(j) == ["reachable", "is_direct", "is_wwan"])
        #expect(j["status"] == .string("wwan"))
        #expect(j["route"]?["kind"] == .string("wwan"))
    }

    @Test(.needsRoot) func pppWithoutCarrierIsNone() async throws {
        let ns = try Namespace("pppdown")
        try ns.ip("tuntap", "add", "dev", "ppp0", "mode", "tun")
        try ns.ip("addr", "add", "10.30.0.2", "peer", "10.30.0.1", "dev", "ppp0")
        try ns.ip("link", "set", "ppp0", "up")
        try ns.ip("route", "add", "default", "dev", "ppp0")
        let (j, exit, _) = try await status(ns)
        #expect(exit == 1)
        // YY: connection required *and* transient → None
        #expect(flags(j) == ["transient_connection", "connection_required", "is_direct"])
        #expect(j["status"] == .string("none"))
    }

    @Test(.needsRoot) func noRouteAtAll() async throws {
        let ns = try Namespace("empty")
        for args in [[], ["--address", "192.0.2.55"], ["--address", "2001:db8::5"]] {
            let (j, exit, _) = try await status(ns, args)
            #expect(exit == 1, "\(args)")
            #expect(j["status"] == .string("none"), "\(args)")
            #expect(j["medium"] == .string("none"), "\(args)")
            #expect(j["reachable"] == .bool(false), "\(args)")
            #expect(j["route"] == .null, "\(args)")
            #expect(flags(j).isEmpty, "\(args)")
        }
        let (dflt, _, _) = try await status(ns)
        #expect(dflt["supports_ipv4"] == .bool(false))
        #expect(dflt["supports_ipv6"] == .bool(false))
        let text = try await ns.exec([TestPaths.reach, "status", "--no-modems", "--no-wifi"])
        #expect(text.stdout.hasPrefix("not reachable: no default route"))
    }

    @Test(.needsRoot) func refusingRouteTypes() async throws {
        let t = try EthernetTopology()
        try t.host.ip("route", "add", "unreachable", "198.51.100.0/24")
        try t.host.ip("route", "add", "prohibit", "203.0.113.0/24")
        try t.host.ip("route", "add", "blackhole", "192.0.2.128/25")
        try t.host.ip("-6", "route", "add", "unreachable", "2001:db8:dead::/48")
        for (address, type) in [("198.51.100.1", "unreachable"), ("203.0.113.1", "prohibit"), ("192.0.2.200", "blackhole"),
                                ("2001:db8:dead::1", "unreachable")] {
            let (j, exit, _) = try await status(t.host, ["--address", address])
            #expect(exit == 1, "\(address)")
            #expect(j["route"]?["type"] == .string(type), "\(address)")
            #expect(j["status"] == .string("none"), "\(address)")
        }
    }

    /// The default route is the one the kernel would use: lowest metric, even without carrier, unless the
    /// interface ignores routes with linkdown.
    @Test(.needsRoot) func defaultRouteSelectionFollowsTheKernel() async throws {
        let t = try EthernetTopology()
        try t.host.veth("eth1", peer: t.net, "up1")
        try t.host.ip("addr", "add", "10.11.0.2/24", "dev", "eth1")
        try t.net.ip("addr", "add", "10.11.0.1/24", "dev", "up1")
        try t.net.ip("link", "set", "up1", "up")
        try t.host.ip("link", "set", "eth1", "up")
        try t.host.ip("route", "replace", "default", "via", "10.10.0.1", "metric", "100")
        try t.host.ip("route", "add", "default", "via", "10.11.0.1", "metric", "200")
        #expect(try await status(t.host).json["route"]?["interface"] == .string("eth0"))

        try t.net.ip("link", "set", "up0", "down")  // eth0 loses carrier
        let kept = try await status(t.host).json
        #expect(kept["route"]?["interface"] == .string("eth0"))
        #expect(flags(kept) == ["connection_required"])

        _ = try await t.host.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        let failover = try await status(t.host).json
        #expect(failover["route"]?["interface"] == .string("eth1"))
        #expect(flags(failover) == ["reachable"])
    }

    @Test(.needsRoot) func linkLocalTargetNeedsAnOnLinkNetwork() async throws {
        let t = try EthernetTopology()
        let (viaGateway, exit1, _) = try await status(t.host, ["--link-local"])
        #expect(exit1 == 1)
        #expect(viaGateway["status"] == .string("none"))
        #expect(viaGateway["target"]?["kind"] == .string("link_local"))
        try t.host.ip("route", "add", "169.254.0.0/16", "dev", "eth0")
        let (onLink, exit2, _) = try await status(t.host, ["--link-local"])
        #expect(exit2 == 0)
        #expect(onLink["status"] == .string("wifi"))
        #expect(flags(onLink) == ["reachable", "is_direct"])
    }

    @Test(.needsRoot) func hostNameTargets() async throws {
        let t = try EthernetTopology()
        try t.host.etc("hosts", "127.0.0.1 localhost\n10.10.0.1 gw.example.test\n")
        // Nobody answers at 10.10.0.99: a query there stalls for timeout × attempts (10 s) unless we stop waiting.
        try t.host.etc("resolv.conf", "nameserver 10.10.0.99\noptions timeout:5 attempts:2\n")
        let (found, exit1, _) = try await status(t.host, ["--host", "gw.example.test"])
        #expect(exit1 == 0)
        #expect(found["target"]?["addresses"] == .array([.string("10.10.0.1")]))
        #expect(flags(found) == ["reachable", "is_direct"])

        let (slow, exit2, seconds) = try await status(t.host, ["--host", "slow.example.test", "--resolve-timeout", "1"])
        #expect(exit2 == 1)
        #expect(seconds < 4, "resolution must not block past its deadline (took \(seconds) s)")
        #expect(slow["target"]?["error"]?.stringValue?.contains("timed out") == true)
        #expect(slow["status"] == .string("none"))
    }
}

@Suite struct CommandLineUsageTests {
    @Test(arguments: [
        ["status", "--address", "300.1.1.1"], ["status", "--address", "example.com"],
        ["status", "--host", "a", "--address", "192.0.2.1"], ["status", "--link-local", "--address", "192.0.2.1"],
        ["status", "--modem", "cdc-wdm0"], ["status", "--modem", "/dev/cdc-wdm0:at"], ["status", "--resolve-timeout", "0"],
        ["status", "--modem-timeout", "-1"], ["status", "--no-modems", "--modem", "/dev/x"], ["status", "--bogus"],
        ["status", "--json", "--json"], ["status", "--address"], ["status", "stray"], ["--jsn"],
        ["watch", "--hold-down", "-1"], ["watch", "--hold-down", "x"], ["diag", "--bundle", "/tmp/"],
        ["agent", "--config"], ["agent", "--verbose"], ["staus"],
        ["status", "--modem-access", "shared"], ["status", "--modem-access"], ["diag", "--modem-access", "PROXY"],
        ["status", "--no-modems", "--modem-access", "direct"],
    ])
    func badUsageExits64(args: [String]) async throws {
        let r = try await TestSupport.run([TestPaths.reach] + args, timeout: 10)
        #expect(r.status == 64, "\(args): \(r.stderr)")
        #expect(r.stderr.contains("error: "), "\(args): \(r.stderr)")
        #expect(r.stderr.contains("--help"), "\(args): \(r.stderr)")  // says where to look
        #expect(r.stdout.isEmpty, "\(args)")
    }

    @Test func misspellingsGetASuggestion() async throws {
        let option = try await TestSupport.run([TestPaths.reach, "status", "--jsn"], timeout: 10)
        #expect(option.stderr.contains("did you mean '--json'?"))
        let command = try await TestSupport.run([TestPaths.reach, "diga"], timeout: 10)
        #expect(command.stderr.contains("did you mean 'diag'?"))
    }

    @Test(arguments: [["--help"], ["-h"], ["status", "--help"], ["agent", "-h"], ["watch", "--help"], ["diag", "--help"]])
    func helpExitsZero(args: [String]) async throws {
        let r = try await TestSupport.run([TestPaths.reach] + args, timeout: 10)
        #expect(r.status == 0, "\(args)")
        #expect(r.stdout.hasPrefix("usage: reach"), "\(args)")
        #expect(r.stdout.contains("Exit status"), "\(args)")
    }

    @Test func version() async throws {
        let r = try await TestSupport.run([TestPaths.reach, "--version"], timeout: 10)
        #expect(r.status == 0)
        #expect(r.stdout == "0.1.0\n")
    }

    @Test func badConfigExits78NamingTheKey() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/gr-badcfg-\(getpid()).json"
        try #"{"interface_kinds": {"ppp0": "satellite"}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try await TestSupport.run([TestPaths.reach, "status", "--config", path, "--no-modems"], timeout: 10)
        #expect(r.status == 78)
        #expect(r.stderr.contains("interface_kinds.ppp0"), "\(r.stderr)")
    }
}
