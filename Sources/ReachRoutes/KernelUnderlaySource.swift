// The kernel as the underlay walk's fact source (`UnderlayFactSource`, ReachCore): rtnetlink for links (IFLA_LINK,
// IFLA_LINKINFO), addresses, routes and a bridge's forwarding database; WireGuard's genetlink family for peers.
// Every answer is recorded in `facts`, which the route part carries so a merge can walk again without the kernel.

import CNetlinkShims
import Glibc
import ReachCore

/// Asks the kernel on first need and remembers every answer. One instance per route computation; not thread-safe.
public final class KernelUnderlaySource: UnderlayFactSource {
    let resolver: RouteResolver
    /// What was asked, and answered.
    public private(set) var facts: UnderlayFacts
    private var ipv4: Result<[Int: [IPAddress]], UnderlayReadError>?
    private var wireguard: Result<WireGuardSocket, UnderlayReadError>?
    private var ports: Result<[Int: [Int]], UnderlayReadError>?

    public init(resolver: RouteResolver, config: UnderlayConfig) {
        self.resolver = resolver
        self.facts = UnderlayFacts(config: config)
    }

    /// Walks `route` and attaches its chain (`route.underlay`).
    public func attach(to route: inout RouteLookup, destination: UnderlayDestination) {
        route.underlay = Underlay.resolve(route: route, destination: destination, config: facts.config, source: self)
    }

    // MARK: UnderlayFactSource

    public func link(index: Int) -> UnderlayLinkAnswer {
        if let known = facts.links[index] { return known }
        let answer = read(index: index, name: nil)
        facts.links[index] = answer
        if case let .link(l) = answer { facts.names[l.state.name] = answer }
        return answer
    }

    public func link(named name: String) -> UnderlayLinkAnswer {
        if let known = facts.names[name] { return known }
        let answer = read(index: 0, name: name)
        facts.names[name] = answer
        if case let .link(l) = answer { facts.links[l.state.index] = answer }
        return answer
    }

    public func route(_ query: RouteQuery) -> UnderlayRouteAnswer {
        if let known = facts.routes[query] { return known }
        let answer = Self.answer { () throws(NetlinkError) in try resolver.lookup(query) }
        facts.routes[query] = answer
        return answer
    }

    public func defaultRoute(_ family: AddressFamily) -> UnderlayRouteAnswer {
        if let known = facts.defaultRoutes[family] { return known }
        let answer = Self.answer { () throws(NetlinkError) in try resolver.defaultRoute(family) }
        facts.defaultRoutes[family] = answer
        return answer
    }

    private static func answer(_ ask: () throws(NetlinkError) -> RouteLookup?) -> UnderlayRouteAnswer {
        do {
            return try ask().map { .route($0) } ?? .none
        } catch {
            return .failed(UnderlayReadError(error.description))
        }
    }

    /// The port the bridge's forwarding database learned the next hop's MAC address on (RTM_GETNEIGH for the
    /// address on the bridge, then the AF_BRIDGE dump); without an entry, the only port with carrier.
    public func bridgePort(bridge: Int, nextHop: IPAddress?) -> BridgePortAnswer {
        let key = UnderlayFacts.BridgeKey(bridge: bridge, nextHop: nextHop)
        if let known = facts.bridgePorts[key] { return known }
        let answer = readBridgePort(bridge: bridge, nextHop: nextHop)
        facts.bridgePorts[key] = answer
        return answer
    }

    // MARK: Reading

    private func read(index: Int, name: String?) -> UnderlayLinkAnswer {
        let message: LinkMessage?
        do {
            message = try linkMessage(index: index, name: name)
        } catch {
            return .failed(UnderlayReadError(error.description))
        }
        guard let message else { return .absent }
        let state: LinkState
        do {
            guard let s = try resolver.link(index: message.index) else { return .absent }
            state = s
        } catch {
            return .failed(UnderlayReadError(error.description))
        }
        var link = UnderlayLink(
            state: state, infoKind: message.infoKind, lower: message.link,
            lowerInOtherNamespace: message.linkInOtherNamespace)
        if let kind = message.infoKind, let data = message.infoData {
            link.tunnel = UnderlayTunnel.decode(kind: kind, data)
        }
        if message.infoKind == "wireguard" { link.wireguard = readWireGuard(index: message.index) }
        // A CLAT is told by its IPv4 address; only links without a rule of their own can be one.
        if !Underlay.tunnelKinds.contains(message.infoKind ?? "") && !Underlay.lowerKinds.contains(message.infoKind ?? "") {
            if case let .success(all) = ipv4Addresses() { link.ipv4Addresses = all[message.index] ?? [] }
        }
        return .link(link)
    }

    /// RTM_GETLINK for one link, by index or by name (IFLA_IFNAME); nil when there is none (ENODEV).
    func linkMessage(index: Int, name: String?) throws(NetlinkError) -> LinkMessage? {
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETLINK), 0) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var ifi = ifinfomsg()
        ifi.ifi_family = UInt8(AF_UNSPEC)
        ifi.ifi_index = Int32(index)
        var appended = nlmsg_append(msg, &ifi, MemoryLayout<ifinfomsg>.size, 4 /* NLMSG_ALIGNTO */)
        if appended == 0, let name { appended = nla_put_string(msg, Int32(IFLA_IFNAME), name) }
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETLINK build")
        }
        var found: LinkMessage?
        do throws(NetlinkError) {
            try resolver.socket.exchange(msg, call: "RTM_GETLINK \(name ?? String(index))") { hdr in
                if Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWLINK) { found = LinkMessage(payload: Self.payload(hdr)) }
            }
        } catch {
            if case let .kernel(e) = error.kind, e == ENODEV { return nil }
            throw error
        }
        return found
    }

    /// Every link's IFLA_MASTER (one RTM_GETLINK dump): the bridges' ports.
    private func bridgePorts() -> Result<[Int: [Int]], UnderlayReadError> {
        if let ports { return ports }
        let result: Result<[Int: [Int]], UnderlayReadError>
        do {
            var byMaster: [Int: [Int]] = [:]
            try dump(RTM_GETLINK, header: ifinfomsg(), call: "RTM_GETLINK dump") { payload in
                if let m = LinkMessage(payload: payload), let master = m.master { byMaster[master, default: []].append(m.index) }
            }
            result = .success(byMaster)
        } catch {
            result = .failure(UnderlayReadError(error.description))
        }
        ports = result
        return result
    }

    /// Every IPv4 address by link (one RTM_GETADDR dump): IFA_LOCAL, else IFA_ADDRESS.
    private func ipv4Addresses() -> Result<[Int: [IPAddress]], UnderlayReadError> {
        if let ipv4 { return ipv4 }
        let result: Result<[Int: [IPAddress]], UnderlayReadError>
        do {
            var byLink: [Int: [IPAddress]] = [:]
            var ifa = ifaddrmsg()
            ifa.ifa_family = UInt8(AF_INET)
            try dump(RTM_GETADDR, header: ifa, call: "RTM_GETADDR dump") { payload in
                // struct ifaddrmsg: family, prefixlen, flags, scope (u8 each), index (u32); IFA_ADDRESS 1, IFA_LOCAL 2.
                guard payload.count >= 8, payload[0] == UInt8(AF_INET), let index = NativeInteger.read(UInt32.self, payload, at: 4)
                else { return }
                let a = NetlinkAttributes(payload[8...])
                if let b = a.bytes(2) ?? a.bytes(1), let address = IPAddress(bytes: b) {
                    byLink[Int(index), default: []].append(address)
                }
            }
            result = .success(byLink)
        } catch {
            result = .failure(UnderlayReadError(error.description))
        }
        ipv4 = result
        return result
    }

    private func readBridgePort(bridge: Int, nextHop: IPAddress?) -> BridgePortAnswer {
        let members: [Int]
        switch bridgePorts() {
        case let .success(all): members = all[bridge] ?? []
        case let .failure(e): return .failed(e)
        }
        if let nextHop {
            do {
                if let mac = try RouteResolver.neighbour(of: nextHop, ifindex: bridge)?.linkAddress,
                    let port = try fdbPort(bridge: bridge, mac: mac), members.contains(port)
                {
                    return .learned(port: port)
                }
            } catch {
                return .failed(UnderlayReadError(error.description))
            }
        }
        let up = members.filter { (try? resolver.link(index: $0))??.carrier == true }
        return up.count == 1 ? .onlyPort(up[0]) : .none
    }

    /// The port of `bridge` whose forwarding database entry holds `mac` (RTM_GETNEIGH, AF_BRIDGE dump: ndm_ifindex
    /// is the port, NDA_LLADDR 2 the MAC, NDA_MASTER 9 the bridge).
    private func fdbPort(bridge: Int, mac: String) throws(NetlinkError) -> Int? {
        var ndm = ndmsg()
        ndm.ndm_family = UInt8(AF_BRIDGE)
        var port: Int?
        try dump(RTM_GETNEIGH, header: ndm, call: "RTM_GETNEIGH bridge dump") { payload in
            // struct ndmsg: family u8, pads, ifindex s32 at 4, state u16, flags u8, type u8 (12 bytes).
            guard payload.count >= 12, let ifindex = NativeInteger.read(Int32.self, payload, at: 4) else { return }
            let a = NetlinkAttributes(payload[12...])
            guard let lladdr = a.bytes(2), Self.macText(lladdr) == mac, Int(ifindex) != bridge else { return }
            if let master = a.u32(9), Int(master) != bridge { return }
            port = Int(ifindex)
        }
        return port
    }

    private func readWireGuard(index: Int) -> Result<WireGuardDevice, UnderlayReadError> {
        if wireguard == nil { wireguard = WireGuardSocket.open() }
        switch wireguard! {
        case let .success(socket): return socket.device(index: index)
        case let .failure(e): return .failure(e)
        }
    }

    // MARK: Helpers

    /// A dump request of `type` with `header` as its family header; `body` gets each reply's payload.
    private func dump<Header>(
        _ type: Int, header: Header, call: String, _ body: @escaping ([UInt8]) -> Void
    ) throws(NetlinkError) {
        guard let msg = nlmsg_alloc_simple(Int32(type), NLM_F_DUMP) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var h = header
        let appended = nlmsg_append(msg, &h, MemoryLayout<Header>.size, 4 /* NLMSG_ALIGNTO */)
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "\(call) build")
        }
        try resolver.socket.exchange(msg, call: call) { hdr in body(Self.payload(hdr)) }
    }

    /// The bytes after the nlmsghdr.
    static func payload(_ hdr: UnsafeMutablePointer<nlmsghdr>) -> [UInt8] {
        let total = Int(hdr.pointee.nlmsg_len)
        let headerLength = 16  // NLMSG_HDRLEN
        guard total > headerLength else { return [] }
        return Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(hdr).advanced(by: headerLength), count: total - headerLength))
    }

    static func macText(_ bytes: [UInt8]) -> String {
        bytes.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined(separator: ":")
    }
}

/// A generic netlink socket bound to the `wireguard` family (drivers/net/wireguard/netlink.c).
final class WireGuardSocket {
    let sk: OpaquePointer
    let family: Int32
    static let timeoutMilliseconds: Int32 = 2000

    private init(sk: OpaquePointer, family: Int32) {
        self.sk = sk
        self.family = family
    }

    deinit { nl_socket_free(sk) }

    /// `genl_connect` and `genl_ctrl_resolve("wireguard")`.
    static func open() -> Result<WireGuardSocket, UnderlayReadError> {
        guard let sk = nl_socket_alloc() else { return .failure(UnderlayReadError("nl_socket_alloc: out of memory")) }
        let err = genl_connect(sk)
        if err < 0 {
            nl_socket_free(sk)
            return .failure(UnderlayReadError("genl_connect: \(String(cString: CNetlinkShims_nl_geterror(err)))"))
        }
        _ = CNetlinkShims_genl_set_timeout(sk, timeoutMilliseconds)
        let id = genl_ctrl_resolve(sk, "wireguard")
        if id < 0 {
            nl_socket_free(sk)
            return .failure(UnderlayReadError("the kernel has no wireguard generic netlink family"))
        }
        return .success(WireGuardSocket(sk: sk, family: id))
    }

    /// WG_CMD_GET_DEVICE (0, a dump) for one device by WGDEVICE_A_IFINDEX (1). The kernel answers only with
    /// CAP_NET_ADMIN (GENL_UNS_ADMIN_PERM).
    func device(index: Int) -> Result<WireGuardDevice, UnderlayReadError> {
        for _ in 0..<3 {
            guard let msg = nlmsg_alloc() else { return .failure(UnderlayReadError("nlmsg_alloc: out of memory")) }
            defer { nlmsg_free(msg) }
            guard genlmsg_put(msg, UInt32(NL_AUTO_PORT), UInt32(NL_AUTO_SEQ), family, 0, NLM_F_DUMP, 0, 1) != nil,
                nla_put_u32(msg, 1, UInt32(truncatingIfNeeded: index)) == 0
            else { return .failure(UnderlayReadError("WG_CMD_GET_DEVICE build failed")) }
            var out = CNetlinkShims_genl_messages()
            var status = CNetlinkShims_genl_status()
            defer { CNetlinkShims_genl_messages_free(&out) }
            let err = CNetlinkShims_genl_transact(sk, msg, 4096, Self.timeoutMilliseconds, &out, &status)
            if status.kernel_error < 0 {
                let e = -status.kernel_error
                let why = String(cString: strerror(e))
                if e == EPERM || e == EACCES {
                    return .failure(UnderlayReadError("\(why) (reading WireGuard peers needs CAP_NET_ADMIN)"))
                }
                return .failure(UnderlayReadError("WG_CMD_GET_DEVICE: \(why)"))
            }
            if status.dump_interrupted != 0 { continue }
            if err < 0 || status.bounded_out != 0 {
                return .failure(UnderlayReadError("WG_CMD_GET_DEVICE: \(String(cString: CNetlinkShims_nl_geterror(err)))"))
            }
            let records = out.data.map { NetlinkRecords.split(UnsafeRawBufferPointer(start: $0, count: out.length)) } ?? []
            guard let device = WireGuardDevice.decode(messages: records) else {
                return .failure(UnderlayReadError("WG_CMD_GET_DEVICE: an empty answer"))
            }
            return .success(device)
        }
        return .failure(UnderlayReadError("WG_CMD_GET_DEVICE: the peer list kept changing while it was read"))
    }
}
