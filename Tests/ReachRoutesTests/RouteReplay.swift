// A scripted rtnetlink kernel behind the real libnl, for route tests that need no root and no namespace: a
// NETLINK_ROUTE socket is connected for real (any user may), and its send and receive are replaced through libnl's
// own overrides (nl_cb_overwrite_send/recv, include/netlink/handlers.h), so libnl's sequence checks, its
// NLMSG_DONE/ERROR handling, `rtnl_link_get_kernel`'s parser and our callbacks all run as they do against Linux.
//
// What the script knows: links, routes (each in a table), policy rules, the answers to RTM_GETROUTE lookups, and
// notices for a monitor (`nil` among them is an overrun, ENOBUFS). It answers the way net/ipv4/fib_frontend.c and
// net/core/rtnetlink.c do: a dump is one message a datagram (NLM_F_MULTI) and NLMSG_DONE; a request is its reply and
// an ACK (libnl asks for one); a failed request is NLMSG_ERROR with the errno. A route dump that carries RTA_TABLE is
// answered with that table alone, as a kernel with NETLINK_GET_STRICT_CHK on filters it.
import CNetlinkShims
import Foundation
import Glibc
import ReachCore
import ReachTestSupport
import Synchronization

@testable import ReachRoutes

final class RouteReplayKernel: @unchecked Sendable {
    struct Link {
        var index: Int
        var name: String
        var arpType: UInt16 = 1  // ARPHRD_ETHER
        var up = true
        var carrier = true
        var kind: String?
    }

    struct Route {
        var family: AddressFamily = .ipv4
        var table = 254
        var destination: (IPAddress, Int)?
        var metric: Int?
        var type: UInt8 = 1  // RTN_UNICAST
        var oif: Int?
        var gateway: IPAddress?
        var flags: UInt32 = 0
        var preferredSource: IPAddress?
        /// Multipath next hops (ifindex, gateway, RTNH_F_* flags) instead of `oif`/`gateway`.
        var hops: [(Int, IPAddress?, UInt8)] = []
    }

    struct Rule {
        var family: AddressFamily = .ipv4
        var priority: Int
        var table: Int
        var action: UInt8 = 1  // FR_ACT_TO_TBL
    }

    /// One request the kernel saw.
    struct Request {
        var type: UInt16
        var flags: UInt16
        var family: UInt8
        var attributes: NetlinkAttributes
        var isDump: Bool { flags & 0x300 == 0x300 }
    }

    var links: [Link] = []
    var routes: [Route] = []
    var rules: [Rule] = []
    /// RTM_GETROUTE lookups: the destination's text → the route to answer with, or an errno.
    var lookups: [String: Result<Route, Errno>] = [:]
    /// Answer RTM_GETRULE with EAFNOSUPPORT (a kernel without policy routing).
    var noPolicyRouting = false
    /// Request types whose send fails with EOPNOTSUPP before any kernel sees them, as under qemu-user, which
    /// translates only the rtnetlink types it knows (linux-user/fd-trans.c) and refuses RTM_GETRULE.
    var refusedAtSend: Set<Int32> = []
    private(set) var requests: [Request] = []

    struct Errno: Error { var code: Int32 }

    private var queue: [[UInt8]] = []
    /// Notices for the monitor, and the pipe that is readable while any are queued.
    private let notices = Mutex<[[UInt8]?]>([])
    let noticeReadable: Int32
    private let noticeWritable: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0)
        for fd in fds {
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        noticeReadable = fds[0]
        noticeWritable = fds[1]
    }

    deinit {
        close(noticeReadable)
        close(noticeWritable)
    }

    // MARK: sockets

    private static let sessions = Mutex<[UInt32: RouteReplayKernel]>([:])

    /// A connected NETLINK_ROUTE socket whose send and receive go to this kernel.
    func socket() -> OpaquePointer {
        let sk = nl_socket_alloc()!
        precondition(nl_connect(sk, NETLINK_ROUTE) == 0, "nl_connect failed")
        let cb = nl_socket_get_cb(sk)
        nl_cb_overwrite_send(cb, routeReplaySend)
        nl_cb_overwrite_recv(cb, routeReplayReceive)
        nl_cb_put(cb)
        Self.sessions.withLock { $0[nl_socket_get_local_port(sk)] = self }
        return sk
    }

    static func session(_ sk: OpaquePointer?) -> RouteReplayKernel? {
        guard let sk else { return nil }
        let port = nl_socket_get_local_port(sk)
        return sessions.withLock { $0[port] }
    }

    /// A resolver over this kernel; sysfs facts from a tree that does not exist (kinds come from names and ARP
    /// types).
    func resolver(oneAnswer: Bool = false, overrides: [String: InterfaceKind] = [:]) -> RouteResolver {
        RouteResolver(
            socket: RouteSocket(adopting: socket()), interfaceOverrides: overrides, sysfsRoot: "/nonexistent",
            oneAnswer: oneAnswer)
    }

    /// A started monitor over this kernel.
    func monitor() throws -> RouteMonitor {
        try RouteMonitor(adopting: socket(), readable: noticeReadable)
    }

    /// Queues notices (nil: an overrun) and wakes the monitor.
    func post(_ messages: [[UInt8]?]) {
        notices.withLock { queued in
            queued += messages
            var one: UInt8 = 1
            _ = write(noticeWritable, &one, 1)
        }
    }

    /// How many RTM_GETROUTE dumps were asked for.
    var routeDumps: Int { requests.filter { $0.type == UInt16(RTM_GETROUTE) && $0.isDump }.count }

    // MARK: kernel behaviour

    func handle(request: [UInt8], port: UInt32) {
        guard request.count >= 17 else { return }
        let type = NativeInteger.u16(request[4], request[5])
        let flags = NativeInteger.u16(request[6], request[7])
        let seq = NativeInteger.read(UInt32.self, request, at: 8) ?? 0
        let headerLength: Int
        switch Int32(type) {
        case Int32(RTM_GETROUTE): headerLength = 12
        case Int32(RTM_GETRULE): headerLength = 12
        case Int32(RTM_GETLINK): headerLength = 16
        default: headerLength = 0
        }
        let attributes = NetlinkAttributes(request.count > 16 + headerLength ? Array(request[(16 + headerLength)...]) : [])
        let r = Request(type: type, flags: flags, family: request[16], attributes: attributes)
        requests.append(r)
        let reply = { (m: [UInt8], t: Int32, multi: Bool) in
            self.queue.append(Self.stamp(m, type: UInt16(t), flags: multi ? 2 : 0, seq: seq, port: port))
        }
        let family: AddressFamily = request[16] == UInt8(AF_INET6) ? .ipv6 : .ipv4
        switch Int32(type) {
        case Int32(RTM_GETROUTE) where r.isDump:
            let table = attributes.u32(UInt16(RTA_TABLE.rawValue)).map(Int.init)
            for route in routes where route.family == family && (table == nil || route.table == table) {
                reply(Self.message(route), Int32(RTM_NEWROUTE), true)
            }
            queue.append(Self.done(seq: seq, port: port))
        case Int32(RTM_GETROUTE):
            let key = attributes.bytes(UInt16(RTA_DST.rawValue)).flatMap { IPAddress(bytes: $0) }?.description ?? "?"
            switch lookups[key] ?? .failure(Errno(code: ENETUNREACH)) {
            case let .success(route):
                reply(Self.message(route), Int32(RTM_NEWROUTE), false)
                queue.append(Self.error(0, seq: seq, port: port, request: request))
            case let .failure(e):
                queue.append(Self.error(-e.code, seq: seq, port: port, request: request))
            }
        case Int32(RTM_GETRULE):
            if noPolicyRouting {
                queue.append(Self.error(-EAFNOSUPPORT, seq: seq, port: port, request: request))
                return
            }
            for rule in rules where rule.family == family { reply(Self.message(rule), Int32(RTM_NEWRULE), true) }
            queue.append(Self.done(seq: seq, port: port))
        case Int32(RTM_GETLINK):
            let index = Int(NativeInteger.read(Int32.self, request, at: 20) ?? 0)
            let name = attributes.string(UInt16(IFLA_IFNAME))
            guard let link = links.first(where: { index != 0 ? $0.index == index : $0.name == name }) else {
                queue.append(Self.error(-ENODEV, seq: seq, port: port, request: request))
                return
            }
            reply(Self.message(link), Int32(RTM_NEWLINK), false)
            queue.append(Self.error(0, seq: seq, port: port, request: request))
        default:
            queue.append(Self.error(-EOPNOTSUPP, seq: seq, port: port, request: request))
        }
    }

    /// The next datagram for a request socket, else a notice (`.some(nil)`: an overrun); nil when nothing is queued.
    func nextDatagram() -> [UInt8]?? {
        if !queue.isEmpty { return queue.removeFirst() }
        return notices.withLock { queued -> [UInt8]?? in
            if queued.isEmpty {
                // Nothing left: the monitor's poll sleeps until the next `post`.
                var sink = [UInt8](repeating: 0, count: 64)
                while read(noticeReadable, &sink, sink.count) > 0 {}
                return nil
            }
            return .some(queued.removeFirst())
        }
    }

    // MARK: message building

    static func header(length: Int) -> [UInt8] { NativeInteger.bytes(UInt32(length)) + [UInt8](repeating: 0, count: 12) }

    static func stamp(_ message: [UInt8], type: UInt16, flags: UInt16, seq: UInt32, port: UInt32) -> [UInt8] {
        var m = message
        m.replaceSubrange(0..<4, with: NativeInteger.bytes(UInt32(m.count)))
        m.replaceSubrange(4..<6, with: NativeInteger.bytes(type))
        m.replaceSubrange(6..<8, with: NativeInteger.bytes(flags))
        m.replaceSubrange(8..<12, with: NativeInteger.bytes(seq))
        m.replaceSubrange(12..<16, with: NativeInteger.bytes(port))
        return m
    }

    static func error(_ errno: Int32, seq: UInt32, port: UInt32, request: [UInt8]) -> [UInt8] {
        let body = NativeInteger.bytes(errno) + Array(request[0..<16])
        return stamp(header(length: 16 + body.count) + body, type: 2, flags: 0, seq: seq, port: port)
    }

    static func done(seq: UInt32, port: UInt32) -> [UInt8] {
        stamp(header(length: 20) + NativeInteger.bytes(Int32(0)), type: 3, flags: 2, seq: seq, port: port)
    }

    /// An RTM_NEWROUTE message (nlmsghdr included; the type is stamped when it is sent).
    static func message(_ r: Route, type messageType: Int32 = Int32(RTM_NEWROUTE)) -> [UInt8] {
        var w = NetlinkAttributeWriter()
        w.put(UInt16(RTA_TABLE.rawValue), integer: UInt32(r.table))
        if let (dst, _) = r.destination { w.put(UInt16(RTA_DST.rawValue), dst.bytes) }
        if let m = r.metric { w.put(UInt16(RTA_PRIORITY.rawValue), integer: UInt32(m)) }
        if let s = r.preferredSource { w.put(UInt16(RTA_PREFSRC.rawValue), s.bytes) }
        if let o = r.oif { w.put(UInt16(RTA_OIF.rawValue), integer: UInt32(o)) }
        if let g = r.gateway {
            if g.family == r.family {
                w.put(UInt16(RTA_GATEWAY.rawValue), g.bytes)
            } else {
                w.put(UInt16(RTA_VIA.rawValue), NativeInteger.bytes(UInt16(g.family == .ipv6 ? AF_INET6 : AF_INET)) + g.bytes)
            }
        }
        if !r.hops.isEmpty {
            var all: [UInt8] = []
            for (ifindex, gateway, flags) in r.hops {
                var a = NetlinkAttributeWriter()
                if let g = gateway { a.put(UInt16(RTA_GATEWAY.rawValue), g.bytes) }
                all += NativeInteger.bytes(UInt16(8 + a.bytes.count)) + [flags, 0] + NativeInteger.bytes(Int32(ifindex)) + a.bytes
            }
            w.put(UInt16(RTA_MULTIPATH.rawValue), all)
        }
        let family = UInt8(r.family == .ipv4 ? AF_INET : AF_INET6)
        let rtm = [family, UInt8(r.destination?.1 ?? 0), 0, 0, UInt8(min(r.table, 252)), 4 /* RTPROT_STATIC */, 0, r.type]
            + NativeInteger.bytes(r.flags)
        let payload = rtm + w.bytes
        return stamp(header(length: 16 + payload.count) + payload, type: UInt16(messageType), flags: 0, seq: 0, port: 0)
    }

    /// An RTM_NEWLINK message: `struct ifinfomsg`, IFLA_IFNAME, IFLA_OPERSTATE and IFLA_LINKINFO's kind.
    static func message(_ l: Link) -> [UInt8] {
        var w = NetlinkAttributeWriter()
        w.put(UInt16(IFLA_IFNAME), string: l.name)
        w.put(UInt16(IFLA_OPERSTATE), [l.carrier ? 6 : 2])  // IF_OPER_UP / IF_OPER_DOWN
        if let kind = l.kind { w.nest(UInt16(IFLA_LINKINFO)) { $0.put(1, string: kind) } }
        var flags = UInt32(0)
        if l.up { flags |= UInt32(IFF_UP.rawValue) | UInt32(IFF_RUNNING.rawValue) }
        if l.carrier { flags |= UInt32(IFF_LOWER_UP.rawValue) }
        let ifi = [UInt8(AF_UNSPEC), 0] + NativeInteger.bytes(l.arpType) + NativeInteger.bytes(Int32(l.index))
            + NativeInteger.bytes(flags) + NativeInteger.bytes(UInt32(0))
        let payload = ifi + w.bytes
        return header(length: 16 + payload.count) + payload
    }

    /// An RTM_NEWRULE message: `struct fib_rule_hdr`, FRA_PRIORITY and FRA_TABLE.
    static func message(_ r: Rule) -> [UInt8] {
        var w = NetlinkAttributeWriter()
        w.put(6, integer: UInt32(r.priority))
        w.put(15, integer: UInt32(r.table))
        let family = UInt8(r.family == .ipv4 ? AF_INET : AF_INET6)
        let payload = [family, 0, 0, 0, UInt8(min(r.table, 252)), 0, 0, r.action] + NativeInteger.bytes(UInt32(0)) + w.bytes
        return header(length: 16 + payload.count) + payload
    }

    /// A route notice as the kernel multicasts it (RTM_NEWROUTE or RTM_DELROUTE, sequence 0).
    static func notice(_ r: Route, deleted: Bool = false) -> [UInt8] {
        stamp(message(r), type: UInt16(deleted ? RTM_DELROUTE : RTM_NEWROUTE), flags: 0, seq: 0, port: 0)
    }
}

private let routeReplaySend: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { sk, msg in
    guard let kernel = RouteReplayKernel.session(sk), let msg, let hdr = nlmsg_hdr(msg) else { return -Int32(NLE_BAD_SOCK) }
    let length = Int(hdr.pointee.nlmsg_len)
    if kernel.refusedAtSend.contains(Int32(hdr.pointee.nlmsg_type)) { return -Int32(NLE_OPNOTSUPP) }
    kernel.handle(request: [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(hdr), count: length)), port: nl_socket_get_local_port(sk))
    return Int32(length)
}

private let routeReplayReceive:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<sockaddr_nl>?, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
        UnsafeMutablePointer<OpaquePointer?>?
    ) -> Int32 = { sk, nla, buf, creds in
        guard let kernel = RouteReplayKernel.session(sk), let buf else { return -Int32(NLE_BAD_SOCK) }
        if let nla { nla.pointee.nl_family = sa_family_t(AF_NETLINK) }
        return NetlinkReplay.deliver(
            kernel.nextDatagram(), buffer: buf, credentials: creds, again: -Int32(NLE_AGAIN), overrun: -Int32(NLE_NOMEM))
    }
