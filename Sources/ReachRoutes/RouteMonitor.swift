// Kernel notices of link, address and route changes (rtnetlink multicast), as an AsyncStream.
//
// Events are hints: a consumer re-reads what it needs (RouteResolver) rather than patching state from messages.
// Habits from netifd's system-linux.c: sequence checks off for the event socket, a large receive buffer, and on an
// overrun (ENOBUFS, events lost) a `.resync` event so the consumer re-reads everything instead of trusting stale
// state; the buffer is doubled for next time. One overrun is one `.resync`: the notices still queued behind it are
// read and dropped (the re-read covers them) until the socket is empty, so a flood costs one re-read, not one per
// notice.

import CNetlinkShims
import Glibc
import ReachSystem
import ReachCore
import Synchronization

public enum RouteEvent: Sendable, Equatable {
    public enum Change: String, Sendable { case new, deleted }

    /// A link appeared, changed (admin state, carrier, name) or went away.
    case link(Change, index: Int)
    /// An address was added or removed.
    case address(Change, AddressFamily, index: Int)
    /// A route was added or removed.
    case route(Change, AddressFamily)
    /// A policy rule (`ip rule`) was added or removed.
    case rule(Change, AddressFamily)
    /// Notices were lost (socket overrun, or the consumer fell behind): re-read everything.
    case resync
}

/// Listens to RTNLGRP_LINK, IPV4/IPV6_IFADDR, IPV4/IPV6_ROUTE and IPV4/IPV6_RULE on the process's event loop.
public final class RouteMonitor: Sendable {
    public let events: AsyncStream<RouteEvent>
    private let worker: Worker

    /// Subscribes at once; notices are queued in the socket from then on.
    /// - Parameters:
    ///   - bufferBytes: the socket's receive buffer; doubled (up to 16 MiB) after each overrun.
    ///   - startReading: false to subscribe now and `start()` reading later, e.g. after a first full read of the
    ///     state, so nothing that changes in between is missed (what the kernel cannot queue is reported as
    ///     `.resync` once reading starts).
    public init(bufferBytes: Int = 1 << 20, startReading: Bool = true) throws(NetlinkError) {
        let (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self, bufferingPolicy: .bufferingNewest(256))
        events = stream
        let sk = try Worker.subscribedSocket(bufferBytes: bufferBytes)
        worker = try Worker(sk: sk, continuation: continuation, bufferBytes: bufferBytes)
        continuation.onTermination = { [worker] _ in worker.stop() }
        if startReading { try worker.start() }
    }

    /// Over a given connected socket, watching `readable` instead of the socket's descriptor for "notices queued"
    /// (tests hand in a socket whose kernel is scripted, and a descriptor it makes readable).
    init(adopting sk: OpaquePointer, readable: Int32, bufferBytes: Int = 1 << 20) throws(NetlinkError) {
        let (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self, bufferingPolicy: .bufferingNewest(256))
        events = stream
        nl_socket_disable_seq_check(sk)
        worker = try Worker(sk: sk, readable: readable, continuation: continuation, bufferBytes: bufferBytes)
        continuation.onTermination = { [worker] _ in worker.stop() }
        try worker.start()
    }

    /// Starts reading notices (once; later calls do nothing).
    public func start() throws(NetlinkError) { try worker.start() }

    /// Stops listening and finishes the stream. Also happens when the stream's consumer goes away.
    public func stop() { worker.stop() }

    deinit { worker.stop() }
}

/// The socket and its registration on the event loop. After `start` only the loop's thread touches the socket (the
/// callback, and `stop`'s post).
private final class Worker: @unchecked Sendable {
    let sk: OpaquePointer
    /// What the loop watches for notices: the socket's descriptor, or a scripted kernel's.
    let readable: Int32
    let loop: EventLoop
    let continuation: AsyncStream<RouteEvent>.Continuation
    var bufferBytes: Int
    /// Set when a yield was dropped because the consumer is behind: the next event is a resync.
    var lost = false
    /// Set from an overrun until the queue behind it is read: those notices are dropped, one `.resync` stands for
    /// them all.
    var overrun = false
    /// Reads since the overrun; a flood that never lets the socket empty still gets its `.resync` after this many
    /// (more notices than the largest buffer, 16 MiB, holds at ~256 bytes each).
    var readsSinceOverrun = 0
    static let overrunReadBound = 65536
    /// The socket's own callback set (it carries the disabled sequence check: notices have no sequence numbers),
    /// set by `start`.
    var cb: OpaquePointer?
    /// The registration (from `start`), and whether the stream is finished (by `stop`'s post or a dead socket).
    let state = Mutex<(started: Bool, stopped: Bool, registration: EventLoop.Registration?, finished: Bool)>(
        (false, false, nil, false))

    /// A NETLINK_ROUTE socket subscribed to the groups, non-blocking, with the receive buffer set.
    static func subscribedSocket(bufferBytes: Int) throws(NetlinkError) -> OpaquePointer {
        guard let sk = nl_socket_alloc() else { throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nl_socket_alloc") }
        nl_socket_disable_seq_check(sk)
        var r = nl_connect(sk, NETLINK_ROUTE)
        if r < 0 {
            nl_socket_free(sk)
            throw NetlinkError(.library(-r), call: "nl_connect(NETLINK_ROUTE)")
        }
        // Rules too: mwan3 adds and removes the rules that lead to its per-uplink tables.
        let groups = [
            RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
            RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE,
        ]
        for g in groups {
            r = nl_socket_add_membership(sk, Int32(g.rawValue))
            if r < 0 {
                nl_socket_free(sk)
                throw NetlinkError(.library(-r), call: "nl_socket_add_membership(\(g.rawValue))")
            }
        }
        _ = nl_socket_set_buffer_size(sk, Int32(bufferBytes), 0)
        _ = nl_socket_set_nonblocking(sk)
        return sk
    }

    init(
        sk: OpaquePointer, readable: Int32? = nil, continuation: AsyncStream<RouteEvent>.Continuation, bufferBytes: Int,
        loop: EventLoop = .shared
    ) throws(NetlinkError) {
        self.sk = sk
        self.readable = readable ?? nl_socket_get_fd(sk)
        self.loop = loop
        self.continuation = continuation
        self.bufferBytes = bufferBytes
    }

    deinit {
        if let cb { nl_cb_put(cb) }
        nl_socket_free(sk)
    }

    func start() throws(NetlinkError) {
        guard state.withLock({ !$0.started && !$0.stopped && !$0.finished }) else { return }
        guard let cb = nl_socket_get_cb(sk) else { throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nl_socket_get_cb") }
        self.cb = cb
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, monitorValid, Unmanaged.passUnretained(self).toOpaque())
        // The registration holds the worker until `stop` (or a dead socket) cancels it on the loop's thread.
        let registered: EventLoop.Registration
        do throws(EventLoopError) {
            registered = try loop.register(fd: readable, interest: .read) { [self] _ in readQueued() }
        } catch {
            switch error {
            case .noThread: throw NetlinkError(.kernel(EAGAIN), call: "pthread_create")
            case let .wakeUp(e): throw NetlinkError(.kernel(e.errno), call: e.call)
            case .stopped, .badDescriptor: throw NetlinkError(.kernel(EBADF), call: "event loop")
            }
        }
        // A dead socket may have finished the stream before the registration was stored here: then it goes now.
        let finishedAlready = state.withLock { s -> Bool in
            s.started = true
            s.registration = registered
            return s.finished
        }
        if finishedAlready { loop.cancel(registered) }
    }

    /// Ends the registration and the stream on the loop's thread (never here: `stop` runs from the stream's
    /// onTermination, under the Swift runtime's task lock, which `continuation.finish()` needs).
    func stop() {
        let started = state.withLock { s -> Bool in
            if s.stopped { return false }
            s.stopped = true
            return s.started
        }
        guard started else { return }
        try? loop.post { [self] in finish() }
    }

    private func finish() {
        let registration = state.withLock { s -> EventLoop.Registration?? in
            if s.finished { return .none }
            s.finished = true
            return .some(s.registration)
        }
        guard let registration else { return }
        if let registration { loop.cancel(registration) }
        continuation.finish()
    }

    func emit(_ e: RouteEvent) {
        if lost {
            if case .dropped = continuation.yield(.resync) { return }
            lost = false
        }
        if case .dropped = continuation.yield(e) { lost = true }
    }

    /// The loop's callback: reads everything that is queued. (POLLERR on a netlink socket is an overrun; the read
    /// reports it as ENOBUFS and clears it.)
    private func readQueued() {
        guard let cb, !state.withLock({ $0.finished }) else { return }
        while true {
            let r = nl_recvmsgs(sk, cb)
            if overrun {
                readsSinceOverrun += 1
                if readsSinceOverrun >= Self.overrunReadBound { endOverrun() }
            }
            if r >= 0 { continue }
            if -r == NLE_AGAIN { break }
            if -r == NLE_NOMEM || -r == NLE_MSG_OVERFLOW || -r == NLE_MSG_TRUNC {
                // ENOBUFS: the kernel dropped notices. Grow the buffer; the consumer re-reads once the queue behind
                // the loss is read.
                bufferBytes = min(bufferBytes * 2, 16 << 20)
                _ = nl_socket_set_buffer_size(sk, Int32(bufferBytes), 0)
                overrun = true
                continue
            }
            if -r == NLE_BAD_SOCK {
                finish()
                return
            }
            // Anything else (a malformed message): skip it and keep listening; say state may be stale.
            overrun = true
            break
        }
        // The queue is read: one `.resync`, after every notice it stands for, so the re-read that follows sees them
        // all; notices from here on are events again.
        if overrun { endOverrun() }
    }

    private func endOverrun() {
        overrun = false
        readsSinceOverrun = 0
        emit(.resync)
    }
}

private func monitorValid(_ msg: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    let w = Unmanaged<Worker>.fromOpaque(arg!).takeUnretainedValue()
    // Behind an overrun: the `.resync` to come covers this notice.
    if w.overrun { return Int32(NL_OK.rawValue) }
    let hdr = nlmsg_hdr(msg)!
    let len = Int(hdr.pointee.nlmsg_len)
    let payload = UnsafeRawPointer(hdr).advanced(by: 16)  // NLMSG_HDRLEN
    switch Int32(hdr.pointee.nlmsg_type) {
    case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
        guard len >= 16 + MemoryLayout<ifinfomsg>.size else { return Int32(NL_SKIP.rawValue) }
        let ifi = payload.loadUnaligned(as: ifinfomsg.self)
        w.emit(.link(Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWLINK) ? .new : .deleted, index: Int(ifi.ifi_index)))
    case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
        guard len >= 16 + MemoryLayout<ifaddrmsg>.size else { return Int32(NL_SKIP.rawValue) }
        let ifa = payload.loadUnaligned(as: ifaddrmsg.self)
        w.emit(
            .address(
                Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWADDR) ? .new : .deleted,
                Int32(ifa.ifa_family) == AF_INET6 ? .ipv6 : .ipv4, index: Int(ifa.ifa_index)))
    case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
        guard len >= 16 + MemoryLayout<rtmsg>.size else { return Int32(NL_SKIP.rawValue) }
        let rtm = payload.loadUnaligned(as: rtmsg.self)
        // Only routes of the tables the lookup can use matter; the local table churns with every address.
        if rtm.rtm_table == UInt8(RT_TABLE_LOCAL.rawValue) { return Int32(NL_OK.rawValue) }
        w.emit(
            .route(
                Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWROUTE) ? .new : .deleted,
                Int32(rtm.rtm_family) == AF_INET6 ? .ipv6 : .ipv4))
    case Int32(RTM_NEWRULE), Int32(RTM_DELRULE):
        // struct fib_rule_hdr begins with the family byte.
        guard len >= 16 + 12 else { return Int32(NL_SKIP.rawValue) }
        let family = Int32(payload.load(as: UInt8.self))
        w.emit(
            .rule(
                Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWRULE) ? .new : .deleted, family == AF_INET6 ? .ipv6 : .ipv4))
    default:
        break
    }
    return Int32(NL_OK.rawValue)
}
