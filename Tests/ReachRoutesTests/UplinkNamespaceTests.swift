// Uplinks in real network namespaces: a gateway namespace whose WANs are veth pairs to an "isp" namespace, with
// default routes per metric as netifd installs them and per-WAN tables with `ip rule`s as mwan3 installs them. The
// built `reach` runs inside with `ip netns exec`; nothing leaves the namespaces made here.

import Foundation
import Glibc
@testable import ReachRoutes
import ReachCore
import ReachTestSupport
import Testing

/// A gateway namespace with WAN links to an "isp" namespace: eth0 (192.0.2.2/24 via .1, fd00:2::2/64), wwan0
/// (198.18.0.2/24 via .1, fd00:18::2/64: a veth named like a modem's netdev is classified WWAN by name) and, when
/// asked, eth1 (203.0.113.2/24 via .1). No default routes until a test adds them.
final class MultiWANTopology {
    let gw: Namespace
    let isp: Namespace

    struct WAN {
        var name: String
        var peer: String
        var v4: (local: String, peer: String)
        var v6: (local: String, peer: String)
    }

    static let eth0 = WAN(name: "eth0", peer: "up0", v4: ("192.0.2.2", "192.0.2.1"), v6: ("fd00:2::2", "fd00:2::1"))
    static let wwan0 = WAN(name: "wwan0", peer: "up1", v4: ("198.18.0.2", "198.18.0.1"), v6: ("fd00:18::2", "fd00:18::1"))
    static let eth1 = WAN(name: "eth1", peer: "up2", v4: ("203.0.113.2", "203.0.113.1"), v6: ("fd00:113::2", "fd00:113::1"))

    init(_ wans: [WAN] = [eth0, wwan0], ipv4: Set<String>? = nil) throws {
        gw = try Namespace("gw")
        isp = try Namespace("isp")
        for w in wans {
            try gw.veth(w.name, peer: isp, w.peer)
            if ipv4?.contains(w.name) ?? true {
                try gw.ip("addr", "add", w.v4.local + "/24", "dev", w.name)
                try isp.ip("addr", "add", w.v4.peer + "/24", "dev", w.peer)
            }
            try gw.ip("-6", "addr", "add", w.v6.local + "/64", "dev", w.name, "nodad")
            try isp.ip("-6", "addr", "add", w.v6.peer + "/64", "dev", w.peer, "nodad")
            try isp.ip("link", "set", w.peer, "up")
            try gw.ip("link", "set", w.name, "up")
        }
    }

    /// `ip route add default via PEER dev NAME metric M [table T]`
    func defaultRoute(_ w: WAN, metric: Int? = nil, table: Int? = nil, ipv6: Bool = false) throws {
        var args = (ipv6 ? ["-6"] : []) + ["route", "add", "default", "via", ipv6 ? w.v6.peer : w.v4.peer, "dev", w.name]
        if let metric { args += ["metric", String(metric)] }
        if let table { args += ["table", String(table)] }
        try gw.ip(args)
    }

    deinit {
        gw.delete()
        isp.delete()
    }
}

extension Namespace {
    @discardableResult
    func ip(_ args: [String]) throws -> String { try TestSupport.sh(["ip", "-n", name] + args) }
}

/// `reach status` text (exit status too) inside `ns`.
func statusText(_ ns: Namespace, _ args: [String] = []) async throws -> (text: String, exit: Int32) {
    let r = try await ns.exec([TestPaths.reach, "status", "--no-modems", "--no-wifi"] + args, timeout: 20)
    guard !r.timedOut else { throw TestFailure("reach status timed out") }
    return (r.stdout, r.status)
}

func uplinks(_ j: JSON) -> [JSON] { j["uplinks"]?.arrayValue ?? [] }
func names(_ j: JSON) -> [String] { uplinks(j).compactMap { $0["interface"]?.stringValue } }
func uplink(_ j: JSON, _ name: String) -> JSON? { uplinks(j).first { $0["interface"] == .string(name) } }

@Suite(.serialized) struct UplinkNamespaceTests {
    /// The issue's "Done when", step by step, with `reach status` in text and JSON at each step.
    @Test(.needsRoot) func eth0PrimaryWwan0BackupThroughPeerLossAndPrimaryRemoval() async throws {
        let t = try MultiWANTopology()
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        try t.defaultRoute(MultiWANTopology.wwan0, metric: 20)

        // 1. Both listed, both reachable, eth0 primary and first.
        var (j, exit, _) = try await status(t.gw)
        #expect(exit == 0)
        #expect(names(j) == ["eth0", "wwan0"])
        #expect(uplinks(j).map { $0["reachable"] } == [.bool(true), .bool(true)])
        #expect(uplinks(j).map { $0["primary"] } == [.bool(true), .bool(false)])
        #expect(uplink(j, "eth0")?["kind"] == .string("ethernet"))
        #expect(uplink(j, "eth0")?["metric"] == .int(10))
        #expect(uplink(j, "eth0")?["gateway"] == .string("192.0.2.1"))
        #expect(uplink(j, "wwan0")?["kind"] == .string("wwan"))
        #expect(uplink(j, "wwan0")?["metric"] == .int(20))
        #expect(uplink(j, "wwan0")?["tables"] == .array([.int(254)]))
        #expect(uplink(j, "wwan0")?["flags"] == .array([.string("reachable"), .string("is_wwan")]))
        var text = try await statusText(t.gw)
        print("step 1 (both up):\n\(text.text)")
        #expect(text.text.contains("  uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10\n"))
        #expect(text.text.contains("  uplink wwan0: reachable over wwan (gateway 198.18.0.1) · metric 20\n"))

        // 2. wwan0's peer goes down: wwan0 not reachable, the answer stays on eth0 (exit 0).
        try t.isp.ip("link", "set", "up1", "down")
        try #require(await TestSupport.eventually(timeout: 5) {
            (try? await status(t.gw).json).flatMap { uplink($0, "wwan0")?["carrier"] } == .bool(false)
        })
        (j, exit, _) = try await status(t.gw)
        #expect(exit == 0)
        #expect(j["reachable"] == .bool(true))
        #expect(j["route"]?["interface"] == .string("eth0"))
        #expect(uplink(j, "wwan0")?["reachable"] == .bool(false))
        #expect(uplink(j, "wwan0")?["reason"] == .string("wwan0 has no carrier (connection required)"))
        #expect(uplink(j, "wwan0")?["flags"] == .array([.string("connection_required"), .string("is_wwan")]))
        #expect(uplink(j, "eth0")?["reachable"] == .bool(true))
        text = try await statusText(t.gw)
        print("step 2 (wwan0's peer down):\n\(text.text)")
        #expect(text.exit == 0)
        #expect(text.text.hasPrefix("reachable over ethernet via eth0"))
        #expect(text.text.contains("  uplink wwan0: not reachable: wwan0 has no carrier (connection required) · metric 20\n"))

        // 3. The peer is back; eth0's default is deleted: the answer and `primary` move to wwan0, and eth0, holding no
        //    default route, is no uplink any more.
        try t.isp.ip("link", "set", "up1", "up")
        try #require(await TestSupport.eventually(timeout: 5) {
            (try? await status(t.gw).json).flatMap { uplink($0, "wwan0")?["reachable"] } == .bool(true)
        })
        try t.gw.ip("route", "del", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "10")
        (j, exit, _) = try await status(t.gw)
        #expect(exit == 0)
        #expect(j["route"]?["interface"] == .string("wwan0"))
        #expect(j["status"] == .string("wwan"))
        #expect(names(j) == ["wwan0"])
        #expect(uplink(j, "wwan0")?["primary"] == .bool(true))
        text = try await statusText(t.gw)
        print("step 3 (eth0's default deleted):\n\(text.text)")
        #expect(text.text.hasPrefix("reachable over wwan via wwan0 (gateway 198.18.0.1)"))
        #expect(text.text.contains("  uplink wwan0 (primary): reachable over wwan (gateway 198.18.0.1) · metric 20\n"))
    }

    /// Three WANs with metrics 10, 15, 20 (in the order netifd might add them): listed primary first, then by
    /// metric; the primary's carrier loss (the kernel keeps the route) leaves the others reachable.
    @Test(.needsRoot) func threeUplinksWithMetrics() async throws {
        let t = try MultiWANTopology([MultiWANTopology.eth0, MultiWANTopology.wwan0, MultiWANTopology.eth1])
        try t.defaultRoute(MultiWANTopology.wwan0, metric: 20)
        try t.defaultRoute(MultiWANTopology.eth1, metric: 15)
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        var (j, _, _) = try await status(t.gw)
        #expect(names(j) == ["eth0", "eth1", "wwan0"])
        #expect(uplinks(j).map { $0["metric"] } == [.int(10), .int(15), .int(20)])
        #expect(uplinks(j).allSatisfy { $0["reachable"] == .bool(true) })

        try t.isp.ip("link", "set", "up0", "down")
        try #require(await TestSupport.eventually(timeout: 5) {
            (try? await status(t.gw).json).flatMap { uplink($0, "eth0")?["carrier"] } == .bool(false)
        })
        (j, _, _) = try await status(t.gw)
        // The kernel keeps using eth0 (ignore_routes_with_linkdown is off): the answer is not reachable, eth0 stays
        // primary, and the uplinks say the other two would work.
        #expect(j["reachable"] == .bool(false))
        #expect(names(j) == ["eth0", "eth1", "wwan0"])
        #expect(uplinks(j).map { $0["reachable"] } == [.bool(false), .bool(true), .bool(true)])
        #expect(uplink(j, "eth0")?["primary"] == .bool(true))
    }

    /// mwan3's layout (`mwan3_create_iface_rules`): per-WAN tables 1 and 2 reached by iif and fwmark rules, plus
    /// its unreachable rules; wwan0 has no main-table default (netifd's defaultroute 0). A table no rule points to
    /// makes no uplink; when mwan3 takes wwan0's rules away, wwan0 is no uplink any more.
    @Test(.needsRoot) func mwan3StylePolicyTables() async throws {
        let t = try MultiWANTopology()
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        try t.defaultRoute(MultiWANTopology.eth0, table: 1)
        try t.defaultRoute(MultiWANTopology.wwan0, table: 2)
        try t.defaultRoute(MultiWANTopology.wwan0, table: 99)  // no rule leads here
        for (id, dev) in [(1, "eth0"), (2, "wwan0")] {
            let mark = String(format: "0x%x/0x3f00", id * 256)
            try t.gw.ip("rule", "add", "pref", String(1000 + id), "iif", dev, "lookup", String(id))
            try t.gw.ip("rule", "add", "pref", String(2000 + id), "fwmark", mark, "lookup", String(id))
            try t.gw.ip("rule", "add", "pref", String(3000 + id), "fwmark", mark, "unreachable")
        }
        var (j, exit, _) = try await status(t.gw)
        #expect(exit == 0)
        #expect(names(j) == ["eth0", "wwan0"])
        #expect(uplink(j, "eth0")?["tables"] == .array([.int(254), .int(1)]))
        #expect(uplink(j, "eth0")?["metric"] == .int(10))
        #expect(uplink(j, "wwan0")?["tables"] == .array([.int(2)]))
        #expect(uplink(j, "wwan0")?["reachable"] == .bool(true))
        #expect(uplink(j, "wwan0")?["gateway"] == .string("198.18.0.1"))
        let text = try await statusText(t.gw)
        #expect(text.text.contains("  uplink wwan0: reachable over wwan (gateway 198.18.0.1) · metric 0 · table 2\n"))

        // The backup's link goes down: its table's route stays, and it is not reachable.
        try t.isp.ip("link", "set", "up1", "down")
        try #require(await TestSupport.eventually(timeout: 5) {
            (try? await status(t.gw).json).flatMap { uplink($0, "wwan0")?["reachable"] } == .bool(false)
        })

        for pref in ["1002", "2002"] { try t.gw.ip("rule", "del", "pref", pref) }
        (j, _, _) = try await status(t.gw)
        #expect(names(j) == ["eth0"])
    }

    /// A backup with IPv6 only (a carrier that gives no IPv4): an uplink through its ::/0 route.
    @Test(.needsRoot) func ipv6OnlyBackup() async throws {
        let t = try MultiWANTopology(ipv4: ["eth0"])
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        try t.defaultRoute(MultiWANTopology.wwan0, metric: 20, ipv6: true)
        var (j, _, _) = try await status(t.gw)
        #expect(names(j) == ["eth0", "wwan0"])
        #expect(uplink(j, "wwan0")?["family"] == .string("ipv6"))
        #expect(uplink(j, "wwan0")?["gateway"] == .string("fd00:18::1"))
        #expect(uplink(j, "wwan0")?["reachable"] == .bool(true))
        #expect(uplink(j, "wwan0")?["metric"] == .int(20))
        let text = try await statusText(t.gw)
        #expect(text.text.contains("  uplink wwan0: reachable over wwan (gateway fd00:18::1) · ipv6 · metric 20\n"))

        try t.isp.ip("link", "set", "up1", "down")
        try #require(await TestSupport.eventually(timeout: 5) {
            (try? await status(t.gw).json).flatMap { uplink($0, "wwan0")?["reachable"] } == .bool(false)
        })
        (j, _, _) = try await status(t.gw)
        #expect(j["reachable"] == .bool(true))
        #expect(uplink(j, "wwan0")?["reason"] == .string("wwan0 has no carrier (connection required)"))
    }

    /// Configured uplinks: named and ordered; one without a route (a modem still connecting) is listed, not
    /// reachable, instead of vanishing; one that does not exist says so.
    @Test(.needsRoot) func configuredUplinksWithoutRoutes() async throws {
        let t = try MultiWANTopology()
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        let path = FileManager.default.temporaryDirectory.path + "/gr-uplinks-\(getpid()).json"
        try #"{"uplinks": [{"interface": "wwan1", "role": "backup"}, {"interface": "wwan0", "role": "backup"}, {"interface": "eth0", "role": "primary"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (j, exit, _) = try await status(t.gw, ["--config", path])
        #expect(exit == 0)
        #expect(names(j) == ["eth0", "wwan1", "wwan0"])
        #expect(uplink(j, "eth0")?["role"] == .string("primary"))
        #expect(uplink(j, "wwan0")?["reachable"] == .bool(false))
        #expect(uplink(j, "wwan0")?["reason"] == .string("no default route via wwan0"))
        #expect(uplink(j, "wwan0")?["tables"] == .array([]))
        #expect(uplink(j, "wwan0")?["carrier"] == .bool(true))
        #expect(uplink(j, "wwan1")?["reason"] == .string("wwan1 does not exist"))
        #expect(uplink(j, "wwan1")?["kind"] == .null)
        let text = try await statusText(t.gw, ["--config", path])
        #expect(text.text.contains("  uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10\n"))
        #expect(text.text.contains("  uplink wwan1 (role backup): not reachable: wwan1 does not exist\n"))
        #expect(text.text.contains("  uplink wwan0 (role backup): not reachable: no default route via wwan0\n"))

        // The modem connects: netifd adds its route, and it becomes reachable in place.
        try t.defaultRoute(MultiWANTopology.wwan0, metric: 20)
        let (after, _, _) = try await status(t.gw, ["--config", path])
        #expect(names(after) == ["eth0", "wwan1", "wwan0"])
        #expect(uplink(after, "wwan0")?["reachable"] == .bool(true))
    }

    /// The uplinks come with every target; the primary is the default route's, not the target's.
    @Test(.needsRoot) func addressTargetKeepsTheDefaultRoutesPrimary() async throws {
        let t = try MultiWANTopology()
        try t.defaultRoute(MultiWANTopology.eth0, metric: 10)
        try t.defaultRoute(MultiWANTopology.wwan0, metric: 20)
        let (j, _, _) = try await status(t.gw, ["--address", "198.18.0.1"])
        #expect(j["route"]?["interface"] == .string("wwan0"))
        #expect(names(j) == ["eth0", "wwan0"])
        #expect(uplink(j, "eth0")?["primary"] == .bool(true))
    }

    /// The rtnetlink layer on its own: the rule dump and the per-table default routes, from a thread inside the
    /// namespace.
    @Test(.needsRoot) func resolverReadsRulesAndPerTableDefaults() async throws {
        let t = try MultiWANTopology()
        try t.defaultRoute(MultiWANTopology.wwan0, table: 1234)
        try t.gw.ip("rule", "add", "pref", "2001", "fwmark", "0x100/0x3f00", "lookup", "1234")
        try t.gw.ip("-6", "rule", "add", "pref", "2002", "fwmark", "0x200/0x3f00", "lookup", "7")
        let (rules4, rules6, routes) = try await inNamespace(t.gw) {
            let r = try RouteResolver()
            return (try r.policyRules(.ipv4), try r.policyRules(.ipv6), try r.uplinkRoutes())
        }
        #expect(rules4.contains(PolicyRule(family: .ipv4, priority: 2001, action: .toTable, table: 1234)))
        #expect(rules4.contains(PolicyRule(family: .ipv4, priority: 32766, action: .toTable, table: 254)))
        #expect(rules4.contains(PolicyRule(family: .ipv4, priority: 0, action: .toTable, table: 255)))
        #expect(rules6.contains(PolicyRule(family: .ipv6, priority: 2002, action: .toTable, table: 7)))
        #expect(!rules6.contains { $0.table == 1234 })
        #expect(routes.count == 1)
        #expect(routes.first?.table == 1234)
        #expect(routes.first?.link?.name == "wwan0")
        #expect(routes.first?.gateway == "198.18.0.1")
    }

    /// A rule change is a notice: mwan3 adding or removing its rules changes the uplinks.
    @Test(.needsRoot) func monitorHearsRuleChanges() async throws {
        let ns = try Namespace("rules")
        let monitor = try await startedMonitor(in: ns)
        try ns.ip("rule", "add", "pref", "2001", "fwmark", "0x100/0x3f00", "lookup", "1")
        try ns.ip("-6", "rule", "add", "pref", "2001", "fwmark", "0x100/0x3f00", "lookup", "1")
        try ns.ip("rule", "del", "pref", "2001")
        let events = await collect(monitor.events, timeout: 5) { $0.contains(.rule(.deleted, .ipv4)) }
        #expect(events.contains(.rule(.new, .ipv4)))
        #expect(events.contains(.rule(.new, .ipv6)))
        #expect(events.contains(.rule(.deleted, .ipv4)))
        monitor.stop()
    }
}

/// RTM_NEWRULE messages built by hand, including broken ones: parsed or refused, never a crash or a read past the
/// end.
@Suite struct RuleMessageTests {
    static func message(type: UInt16 = 32, family: UInt8 = 2, table: UInt8 = 0, action: UInt8 = 1, attributes: [(UInt16, [UInt8])])
        -> [UInt8]
    {
        var body: [UInt8] = [family, 0, 0, 0, table, 0, 0, action, 0, 0, 0, 0]
        for (kind, value) in attributes {
            let length = UInt16(4 + value.count)
            body += withUnsafeBytes(of: length.littleEndian, Array.init) + withUnsafeBytes(of: kind.littleEndian, Array.init) + value
            body += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        }
        let total = UInt32(16 + body.count)
        return withUnsafeBytes(of: total.littleEndian, Array.init) + withUnsafeBytes(of: type.littleEndian, Array.init)
            + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + body
    }

    static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

    static func parse(_ bytes: [UInt8]) -> PolicyRule? { bytes.withUnsafeBytes { RouteResolver.parseRule($0) } }

    @Test func mwan3FwmarkRule() {
        // ip rule add pref 2001 fwmark 0x100/0x3f00 lookup 1
        let m = Self.message(table: 1, attributes: [(6, Self.u32(2001)), (10, Self.u32(0x100)), (16, Self.u32(0x3f00)), (15, Self.u32(1))])
        #expect(Self.parse(m) == PolicyRule(family: .ipv4, priority: 2001, action: .toTable, table: 1))
    }

    @Test func extendedTableWinsOverTheHeadersByte() {
        // Tables above 255 only fit FRA_TABLE; the header says RT_TABLE_COMPAT (252).
        let m = Self.message(family: 10, table: 252, attributes: [(15, Self.u32(1234))])
        #expect(Self.parse(m) == PolicyRule(family: .ipv6, priority: 0, action: .toTable, table: 1234))
    }

    @Test func unreachableAndVRFRules() {
        #expect(Self.parse(Self.message(action: 7, attributes: [(6, Self.u32(3001))]))?.action == .unreachable)
        #expect(Self.parse(Self.message(attributes: [(19, [1])]))?.l3mdev == true)
    }

    @Test func brokenMessagesAreRefusedOrCutShort() {
        let good = Self.message(table: 1, attributes: [(6, Self.u32(5)), (15, Self.u32(9))])
        // Truncated anywhere: never a crash; the fixed header must be whole.
        for n in 0..<good.count {
            let r = Self.parse(Array(good.prefix(n)))
            if n < 28 { #expect(r == nil, "\(n) bytes") }
        }
        // An attribute claiming more than the message holds ends the walk.
        var lying = Self.message(table: 1, attributes: [(6, Self.u32(5))])
        lying[28] = 0xFF
        #expect(Self.parse(lying) == PolicyRule(family: .ipv4, priority: 0, action: .toTable, table: 1))
        // An attribute length below its own header ends the walk too.
        var short = Self.message(table: 1, attributes: [(6, Self.u32(5))])
        short[28] = 2
        #expect(Self.parse(short)?.priority == 0)
        // A length field larger than the buffer is clamped to it.
        var long = good
        long[0] = 0xFF
        #expect(Self.parse(long)?.table == 9)
        // Wrong message type or family.
        #expect(Self.parse(Self.message(type: 24, attributes: [])) == nil)
        #expect(Self.parse(Self.message(family: 7, attributes: [])) == nil)
    }
}

@Suite struct UplinkConfigCommandLineTests {
    /// A bad `uplinks` entry stops `reach status`, `watch` and `agent` with 78, naming the key.
    @Test(arguments: [["status", "--no-modems"], ["watch"], ["agent"], ["agent", "--check-config"]])
    func badUplinksExit78NamingTheKey(args: [String]) async throws {
        let path = FileManager.default.temporaryDirectory.path + "/gr-uplinks-bad-\(getpid())-\(args.joined(separator: "_")).json"
        try #"{"uplinks": [{"interface": "wwan0"}, {"interface": "wwan0", "role": "spare"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try await TestSupport.run([TestPaths.reach] + args + ["--config", path], timeout: 10)
        #expect(r.status == 78, "\(args): \(r.stderr)")
        #expect(r.stderr.contains("uplinks[1].interface: \"wwan0\" is already listed at uplinks[0]"), "\(r.stderr)")
        #expect(r.stderr.contains("uplinks[1].role: expected one of primary, backup or null, found \"spare\""), "\(r.stderr)")
    }

    @Test func checkConfigPrintsTheUplinks() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/gr-uplinks-ok-\(getpid()).json"
        try #"{"uplinks": [{"interface": "wwan0", "role": "backup"}]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", path], timeout: 10)
        #expect(r.status == 0, "\(r.stderr)")
        let printed = try AgentConfig.parse(r.stdout)
        #expect(printed.uplinks == [UplinkSpec(interface: "wwan0", role: .backup)])
    }
}
