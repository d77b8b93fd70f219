// The route resolver, the uplink tables and the route monitor through the real libnl, with the kernel's side
// scripted (RouteReplay.swift): no root, no namespace.
import CNetlinkShims
import Foundation
import Glibc
import ReachCore
import Synchronization
import Testing

@testable import ReachRoutes

/// eth0 (index 2, Ethernet), wwan0 (index 4: a modem's netdev by name), eth1 (index 5).
func replayGateway() -> RouteReplayKernel {
    let k = RouteReplayKernel()
    k.links = [
        .init(index: 2, name: "eth0"), .init(index: 4, name: "wwan0", arpType: 0xFFFE /* ARPHRD_NONE */),
        .init(index: 5, name: "eth1"),
    ]
    // The rules every Linux starts with: local, main, default.
    k.rules = [.init(priority: 0, table: 255), .init(priority: 32766, table: 254), .init(priority: 32767, table: 253)]
    return k
}

typealias ReplayRoute = RouteReplayKernel.Route

func hostRoutes(_ n: Int, via oif: Int) -> [ReplayRoute] {
    (0..<n).map { i in
        ReplayRoute(destination: (IPAddress(bytes: [10, 99, UInt8(i / 256), UInt8(i % 256)])!, 32), oif: oif)
    }
}

@Suite struct RouteReplayTests {
    @Test func lookupAnswerWithItsLink() throws {
        let k = replayGateway()
        k.lookups["1.1.1.1"] = .success(
            ReplayRoute(metric: 10, oif: 2, gateway: IPAddress("192.0.2.1"), preferredSource: IPAddress("192.0.2.2")))
        let r = try #require(try k.resolver().lookup(IPAddress("1.1.1.1")!))
        #expect(r.type == .unicast)
        #expect(r.link?.name == "eth0")
        #expect(r.link?.kind == .ethernet)
        #expect(r.link?.carrier == true)
        #expect(r.gateway == "192.0.2.1")
        #expect(r.source == "192.0.2.2")
        #expect(r.metric == 10)
        #expect(r.table == 254)
        // The request asked for the address the way `ip route get` does.
        let ask = try #require(k.requests.first { $0.type == UInt16(RTM_GETROUTE) })
        #expect(!ask.isDump)
        #expect(ask.attributes.bytes(UInt16(RTA_DST.rawValue)) == [1, 1, 1, 1])
    }

    /// The kernel's refusals: no route at all is nil; the route types that refuse come back as lookups of that type.
    @Test(arguments: [(ENETUNREACH, nil), (EHOSTUNREACH, RouteType.unreachable), (EACCES, .prohibit), (EINVAL, .blackhole)])
    func refusalsAreRouteTypes(code: Int32, type: RouteType?) throws {
        let k = replayGateway()
        k.lookups["203.0.113.9"] = .failure(.init(code: code))
        #expect(try k.resolver().lookup(IPAddress("203.0.113.9")!)?.type == type)
    }

    @Test func anotherKernelErrorIsThrownWithItsCall() {
        let k = replayGateway()
        k.lookups["203.0.113.9"] = .failure(.init(code: EPERM))
        #expect(throws: NetlinkError(.kernel(EPERM), call: "RTM_GETROUTE 203.0.113.9")) {
            try k.resolver().lookup(IPAddress("203.0.113.9")!)
        }
    }

    @Test func aLinkThatIsGoneIsNil() throws {
        #expect(try replayGateway().resolver().link(index: 77) == nil)
        #expect(try replayGateway().resolver().link(name: "wwan0")?.kind == .wwan)
    }

    /// The main table's lowest metric wins, dead next hops skipped; other tables and the thousands of routes to
    /// anything but 0/0 play no part.
    @Test func defaultRouteFromOneDumpOfABigTable() throws {
        let k = replayGateway()
        k.routes = hostRoutes(3000, via: 2) + [
            ReplayRoute(metric: 10, oif: 2, gateway: IPAddress("192.0.2.1"), flags: 1 /* RTNH_F_DEAD */),
            ReplayRoute(metric: 20, oif: 4),
            ReplayRoute(table: 100, metric: 1, oif: 5, gateway: IPAddress("203.0.113.1")),
            ReplayRoute(metric: 5, type: 7 /* RTN_UNREACHABLE */),
        ]
        let r = try #require(try k.resolver().defaultRoute(.ipv4))
        #expect(r.link?.name == "wwan0")
        #expect(r.link?.kind == .wwan)
        #expect(r.metric == 20)
        #expect(r.table == 254)
        #expect(try k.resolver().defaultRoute(.ipv6) == nil)
    }

    /// mwan3's layout: a table per WAN reached by rules; a table no rule names does not count.
    @Test func uplinkTablesFollowThePolicyRules() throws {
        let k = replayGateway()
        k.rules += [.init(priority: 2001, table: 1), .init(priority: 2002, table: 2)]
        k.routes = hostRoutes(500, via: 2) + [
            ReplayRoute(metric: 10, oif: 2, gateway: IPAddress("192.0.2.1")),
            ReplayRoute(table: 1, oif: 2, gateway: IPAddress("192.0.2.1")),
            ReplayRoute(table: 2, oif: 4),
            ReplayRoute(table: 3, oif: 5, gateway: IPAddress("203.0.113.1")),
            ReplayRoute(family: .ipv6, metric: 1024, oif: 4, gateway: IPAddress("fe80::1")),
        ]
        let routes = try k.resolver().uplinkRoutes()
        #expect(routes.map { "\($0.link?.name ?? "-") \($0.table ?? -1) \($0.family)" }.sorted() == [
            "eth0 1 ipv4", "eth0 254 ipv4", "wwan0 2 ipv4", "wwan0 254 ipv6",
        ])
        // One dump per family: IPv4's rules name four tables (main, default, 1, 2), so it asks for every table;
        // IPv6 has no rule of its own here, so only its main table counts and the kernel is asked for that alone.
        let dumps = k.requests.filter { $0.type == UInt16(RTM_GETROUTE) && $0.isDump }
        #expect(dumps.map(\.family) == [UInt8(AF_INET), UInt8(AF_INET6)])
        #expect(dumps.map { $0.attributes.u32(UInt16(RTA_TABLE.rawValue)) } == [nil, 254])
    }

    /// With one table to read (the rules point nowhere else), the dump asks the kernel for that table alone.
    @Test func oneCountedTableIsAskedForByFilter() throws {
        let k = replayGateway()
        k.rules = [.init(priority: 0, table: 255), .init(priority: 32766, table: 254)]
        k.routes = [
            ReplayRoute(metric: 10, oif: 2, gateway: IPAddress("192.0.2.1")),
            ReplayRoute(table: 9, oif: 5, gateway: IPAddress("203.0.113.1")),
        ]
        #expect(try k.resolver().uplinkRoutes().map { $0.link?.name } == ["eth0"])
        let dump = try #require(k.requests.first { $0.type == UInt16(RTM_GETROUTE) && $0.isDump })
        #expect(dump.attributes.u32(UInt16(RTA_TABLE.rawValue)) == 254)
    }

    /// A kernel without policy routing refuses the rules dump: only the main table counts.
    @Test func noPolicyRoutingMeansTheMainTable() throws {
        let k = replayGateway()
        k.noPolicyRouting = true
        k.routes = [ReplayRoute(metric: 10, oif: 2), ReplayRoute(table: 1, oif: 4)]
        let r = k.resolver()
        #expect(try r.policyRules(.ipv4) == [])
        #expect(try r.uplinkRoutes().map { $0.link?.name } == ["eth0"])
    }

    /// A rule dump that cannot even be sent (qemu-user) costs the uplinks their answer, not the route: the default
    /// route comes from the main table asked alone, and the uplinks say why they have none.
    @Test func aRuleDumpRefusedAtSendLeavesTheRoute() throws {
        let k = replayGateway()
        k.refusedAtSend = [Int32(RTM_GETRULE)]
        k.routes = [ReplayRoute(metric: 10, oif: 2), ReplayRoute(table: 1, metric: 5, oif: 4)]
        let r = k.resolver(oneAnswer: true)
        // The route dump follows the refused send on the same socket, whose sequence number no answer followed.
        #expect(try r.defaultRoute(.ipv4)?.link?.name == "eth0")
        let dump = try #require(k.requests.first { $0.type == UInt16(RTM_GETROUTE) && $0.isDump })
        #expect(dump.attributes.u32(UInt16(RTA_TABLE.rawValue)) == 254)
        #expect(throws: NetlinkError(.library(Int32(NLE_OPNOTSUPP)), call: "RTM_GETRULE dump ipv4 send")) {
            try r.uplinkRoutes()
        }
    }

    /// A multipath default names each of its links; an IPv4 default via an IPv6 next hop keeps that gateway.
    @Test func multipathAndViaNextHops() throws {
        let k = replayGateway()
        k.routes = [
            ReplayRoute(metric: 10, hops: [(2, IPAddress("192.0.2.1"), 0), (4, nil, 0)]),
            ReplayRoute(table: 254, metric: 30, oif: 5, gateway: IPAddress("fe80::1")),
        ]
        let routes = try k.resolver().uplinkRoutes()
        #expect(routes.map { $0.link?.name } == ["eth0", "wwan0", "eth1"])
        #expect(routes.map(\.gateway) == ["192.0.2.1", nil, "fe80::1"])
    }

    /// One answer (the route, the uplinks, the underlay's default routes) reads each family's rules and routes once.
    @Test func oneAnswerReadsEachDumpOnce() throws {
        let k = replayGateway()
        k.routes = hostRoutes(100, via: 2) + [ReplayRoute(metric: 10, oif: 2), ReplayRoute(metric: 20, oif: 4)]
        let once = k.resolver(oneAnswer: true)
        for _ in 0..<3 {
            _ = try once.defaultRoute(.ipv4)
            _ = try once.defaultRoute(.ipv6)
            _ = try once.uplinkRoutes()
        }
        #expect(k.routeDumps == 2)
        #expect(k.requests.filter { $0.type == UInt16(RTM_GETRULE) }.count == 2)
        #expect(k.requests.filter { $0.type == UInt16(RTM_GETLINK) }.count == 2)  // eth0 and wwan0, once each
        // Without it, every call asks anew (a long-lived resolver must not answer from an old table).
        let fresh = replayGateway()
        fresh.routes = k.routes
        let each = fresh.resolver()
        _ = try each.defaultRoute(.ipv4)
        _ = try each.uplinkRoutes()
        #expect(fresh.routeDumps == 3)
    }
}

@Suite struct RouteMonitorReplayTests {
    static func collect(_ stream: AsyncStream<RouteEvent>, quiet: Duration = .milliseconds(300)) async -> [RouteEvent] {
        await withTaskGroup(of: [RouteEvent]?.self) { group in
            let box = EventBox()
            group.addTask {
                for await e in stream { box.append(e) }
                return nil
            }
            group.addTask {
                var seen = -1
                while seen != box.count {
                    seen = box.count
                    try? await Task.sleep(for: quiet)
                }
                return box.events
            }
            for await r in group {
                if let r {
                    group.cancelAll()
                    return r
                }
            }
            return []
        }
    }

    final class EventBox: Sendable {
        private let list = Mutex<[RouteEvent]>([])
        func append(_ e: RouteEvent) { list.withLock { $0.append(e) } }
        var count: Int { list.withLock { $0.count } }
        var events: [RouteEvent] { list.withLock { $0 } }
    }

    static let route = ReplayRoute(destination: (IPAddress("10.9.0.0")!, 16), oif: 2)

    /// Notices become events; an overrun in the middle of a flood is one `.resync` standing for everything queued
    /// behind it, and the notices after that are events again.
    @Test func anOverrunIsOneResync() async throws {
        let k = replayGateway()
        let monitor = try k.monitor()
        var it = monitor.events.makeAsyncIterator()
        k.post([RouteReplayKernel.notice(Self.route)])
        #expect(await it.next() == .route(.new, .ipv4))

        let flood: [[UInt8]?] = Array(repeating: RouteReplayKernel.notice(Self.route), count: 2000)
        k.post([nil] + flood + [nil] + flood)
        #expect(await it.next() == .resync)
        k.post([RouteReplayKernel.notice(Self.route, deleted: true)])
        #expect(await it.next() == .route(.deleted, .ipv4))
        monitor.stop()
        #expect(await it.next() == nil)
    }

    /// A flood with an overrun, as the agent's route feed meets it: one event, so one re-dump of each family,
    /// where a notice at a time would have been thousands.
    @Test func aFloodEndsInOneReDump() async throws {
        let k = replayGateway()
        k.routes = hostRoutes(1000, via: 2) + [ReplayRoute(metric: 10, oif: 2)]
        let monitor = try k.monitor()
        let events = Task { await Self.collect(monitor.events) }
        k.post([nil] + Array(repeating: .some(RouteReplayKernel.notice(Self.route)), count: 5000))
        try await Task.sleep(for: .milliseconds(100))
        monitor.stop()
        let seen = await events.value
        #expect(seen == [.resync])
        let dumpsBefore = k.routeDumps
        for _ in seen { _ = try k.resolver(oneAnswer: true).uplinkRoutes() }
        #expect(k.routeDumps - dumpsBefore == 2)
    }
}
