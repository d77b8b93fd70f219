// A scripted kernel behind the real libnl: requests sent through a genl socket are answered from captured
// messages, via libnl's own send/receive overrides (nl_cb_overwrite_send/recv, libnl's include/netlink/handlers.h). Everything
// above the socket, libnl's sequence checks, NLMSG_DONE/ERROR handling and callbacks included, runs for real.
//
// Rules kept: one datagram per receive; each reply gets the request's sequence number and port; nl80211 replies
// get the family id the controller reply announced; a non-dump reply is followed by an ACK, a dump by NLMSG_DONE.
import CNetlinkShims
import Foundation
import ReachCore
import ReachTestSupport
import Synchronization

@testable import ReachWiFi

final class ReplayKernel: @unchecked Sendable {
    /// What the scripted kernel does with one nl80211 request.
    enum Answer {
        /// A dump: each message in its own datagram (NLM_F_MULTI), then NLMSG_DONE.
        case dump([[UInt8]])
        /// A reply message, then an ACK.
        case reply([UInt8])
        /// An ACK only (SET_* commands).
        case ack
        /// NLMSG_ERROR with this errno.
        case error(Int32)
        /// Dump parts and then nothing at all: the dump never finishes.
        case unfinishedDump([[UInt8]])
        /// Dump parts forever (generated as they are read).
        case endlessDump([UInt8])
        /// A dump flagged NLM_F_DUMP_INTR (the kernel's list changed while dumping).
        case interruptedDump([[UInt8]])
    }

    static let familyID: UInt16 = 28  // as in the PureSwift NEWFAMILY capture
    /// nl80211 genl command → answer. Consulted for every request.
    var answers: [UInt8: [Answer]] = [:]
    /// Unsolicited datagrams for event sockets; `nil` stands for an ENOBUFS overrun.
    var events: [[UInt8]?] = []
    /// Answer GETFAMILY with ENOENT, as a kernel without cfg80211 does.
    var familyAbsent = false
    /// Every nl80211 request seen: (command, attribute bytes).
    private(set) var requests: [(command: UInt8, attributes: NetlinkAttributes, flags: UInt16)] = []
    private var queue: [[UInt8]?] = []
    private var endless: (part: [UInt8], seq: UInt32, port: UInt32)?

    func answer(_ command: UInt8, _ a: Answer...) { answers[command] = a }

    // MARK: sockets

    private static let sessions = Mutex<[UInt32: ReplayKernel]>([:])

    /// A connected genl socket whose send and receive go to this kernel. Free with nl_socket_free (the adapter's
    /// socket objects do that when they own it).
    func socket() -> OpaquePointer {
        let sk = nl_socket_alloc()!
        precondition(genl_connect(sk) == 0, "genl_connect failed")
        let cb = nl_socket_get_cb(sk)
        nl_cb_overwrite_send(cb, replaySend)
        nl_cb_overwrite_recv(cb, replayReceive)
        nl_cb_put(cb)
        let port = nl_socket_get_local_port(sk)
        Self.sessions.withLock { $0[port] = self }
        return sk
    }

    static func session(_ sk: OpaquePointer?) -> ReplayKernel? {
        guard let sk else { return nil }
        let port = nl_socket_get_local_port(sk)
        return sessions.withLock { $0[port] }
    }

    // MARK: kernel behaviour

    func handle(request: [UInt8], port: UInt32) {
        guard request.count >= 20 else { return }
        let type = UInt16(request[4]) | UInt16(request[5]) << 8
        let flags = UInt16(request[6]) | UInt16(request[7]) << 8
        let seq = request[8..<12].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        let cmd = request[16]
        if type == 0x10 {  // GENL_ID_CTRL: GETFAMILY
            if familyAbsent {
                queue.append(Self.error(-2, seq: seq, port: port, request: request))
                return
            }
            let newfamily = Captures.named("pureswift-wlan.nlmsgs", "newfamily-reply").message
            queue.append(Self.stamp(newfamily, type: 0x10, flags: 0, seq: seq, port: port))
            queue.append(Self.error(0, seq: seq, port: port, request: request))
            return
        }
        requests.append((cmd, NetlinkAttributes(request[20...]), flags))
        var list = answers[cmd] ?? [.error(-95)]
        let answer = list.removeFirst()
        if !list.isEmpty { answers[cmd] = list }
        switch answer {
        case .dump(let parts):
            for p in parts { queue.append(Self.stamp(p, type: Self.familyID, flags: 2, seq: seq, port: port)) }
            queue.append(Self.done(seq: seq, port: port, flags: 2))
        case .interruptedDump(let parts):
            for p in parts { queue.append(Self.stamp(p, type: Self.familyID, flags: 2 | 16, seq: seq, port: port)) }
            queue.append(Self.done(seq: seq, port: port, flags: 2 | 16))
        case .reply(let m):
            queue.append(Self.stamp(m, type: Self.familyID, flags: 0, seq: seq, port: port))
            queue.append(Self.error(0, seq: seq, port: port, request: request))
        case .ack:
            queue.append(Self.error(0, seq: seq, port: port, request: request))
        case .error(let e):
            queue.append(Self.error(e, seq: seq, port: port, request: request))
        case .unfinishedDump(let parts):
            for p in parts { queue.append(Self.stamp(p, type: Self.familyID, flags: 2, seq: seq, port: port)) }
        case .endlessDump(let part):
            endless = (part, seq, port)
        }
    }

    /// The next datagram, or nil for "nothing arrives" (the receive then times out: -NLE_AGAIN).
    func nextDatagram() -> [UInt8]?? {
        if !queue.isEmpty { return queue.removeFirst() }
        if let e = endless { return Self.stamp(e.part, type: Self.familyID, flags: 2, seq: e.seq, port: e.port) }
        if !events.isEmpty { return events.removeFirst() }
        return nil
    }

    // MARK: message building

    static func stamp(_ message: [UInt8], type: UInt16, flags: UInt16, seq: UInt32, port: UInt32) -> [UInt8] {
        var m = message
        let length = UInt32(m.count)
        m.replaceSubrange(0..<4, with: withUnsafeBytes(of: length) { Array($0) })
        m.replaceSubrange(4..<6, with: withUnsafeBytes(of: type) { Array($0) })
        m.replaceSubrange(6..<8, with: withUnsafeBytes(of: flags) { Array($0) })
        m.replaceSubrange(8..<12, with: withUnsafeBytes(of: seq) { Array($0) })
        m.replaceSubrange(12..<16, with: withUnsafeBytes(of: port) { Array($0) })
        return m
    }

    static func error(_ errno: Int32, seq: UInt32, port: UInt32, request: [UInt8]) -> [UInt8] {
        let body = withUnsafeBytes(of: errno) { Array($0) } + Array(request[0..<16])
        return stamp(Captures.header(length: 16 + body.count) + body, type: 2, flags: 0, seq: seq, port: port)
    }

    static func done(seq: UInt32, port: UInt32, flags: UInt16) -> [UInt8] {
        let body = withUnsafeBytes(of: Int32(0)) { Array($0) }
        return stamp(Captures.header(length: 20) + body, type: 3, flags: flags, seq: seq, port: port)
    }

    /// An nl80211 message with the given command and attributes (nlmsghdr included).
    static func message(_ command: UInt8, _ build: (inout NetlinkAttributeWriter) -> Void) -> [UInt8] {
        var w = NetlinkAttributeWriter()
        build(&w)
        let payload = [command, 1, 0, 0] + w.bytes
        return Captures.header(length: 16 + payload.count) + payload
    }
}

private let replaySend: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { sk, msg in
    guard let kernel = ReplayKernel.session(sk), let msg, let hdr = nlmsg_hdr(msg) else { return -Int32(NLE_BAD_SOCK) }
    let length = Int(hdr.pointee.nlmsg_len)
    let bytes = [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(hdr), count: length))
    kernel.handle(request: bytes, port: nl_socket_get_local_port(sk))
    return Int32(length)
}

private let replayReceive:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<sockaddr_nl>?, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
        UnsafeMutablePointer<OpaquePointer?>?
    ) -> Int32 = { sk, nla, buf, creds in
        guard let kernel = ReplayKernel.session(sk), let buf else { return -Int32(NLE_BAD_SOCK) }
        if let nla { nla.pointee.nl_family = sa_family_t(AF_NETLINK) }
        return NetlinkReplay.deliver(
            kernel.nextDatagram(), buffer: buf, credentials: creds, again: -Int32(NLE_AGAIN), overrun: -Int32(NLE_NOMEM))
    }
