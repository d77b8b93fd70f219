// An rtnetlink request/response socket over libnl-3, with the receive loop iw and netifd use: VALID, FINISH, ACK
// and ERROR callbacks, looping `nl_recvmsgs` until one of them says the exchange is over. (`nl_send_sync` returns
// after the data reply and leaves the ACK queued for the next request: libnl's lib/nl.c.)

import CNetlinkShims
import Glibc
import ReachSystem

/// A netlink failure: either libnl's own (negative NLE_* codes) or the kernel's answer (an errno in NLMSG_ERROR).
public struct NetlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// libnl failed (NLE_* code, positive here).
        case library(Int32)
        /// The kernel answered with this errno.
        case kernel(Int32)
        /// No answer within the socket's receive timeout.
        case timeout
    }

    public var kind: Kind
    /// The libnl call or netlink request that failed, e.g. "nl_connect" or "RTM_GETROUTE".
    public var call: String

    public init(_ kind: Kind, call: String) {
        self.kind = kind
        self.call = call
    }

    public var description: String {
        switch kind {
        case let .library(code): return "\(call): \(String(cString: nl_geterror(code)))"
        case let .kernel(e): return "\(call): \(String(cString: strerror(e)))"
        case .timeout: return "\(call): no answer from the kernel"
        }
    }
}

/// Per-exchange state the C callbacks reach through their `arg` pointer.
private final class Exchange {
    var done = false
    var kernelErrno: Int32 = 0
    /// The sequence number the request went out with: only its answer counts.
    let sequence: UInt32
    let onMessage: (UnsafeMutablePointer<nlmsghdr>) -> Void

    init(sequence: UInt32, onMessage: @escaping (UnsafeMutablePointer<nlmsghdr>) -> Void) {
        self.sequence = sequence
        self.onMessage = onMessage
    }
}

/// Our own sequence check, in place of libnl's: libnl expects the number after the last answered request, which a
/// request whose send failed leaves one behind (its number was taken, no answer ever moved the expectation on), so
/// every later exchange on the socket would fail with NLE_SEQ_MISMATCH. Here the request's own number is expected,
/// and anything else (the rest of an answer given up on after a timeout) is passed over, as iproute2's
/// rtnl_dump_filter passes over messages of another sequence.
private func exchangeSequence(_ msg: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    let ex = Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue()
    return Int32(nlmsg_hdr(msg).pointee.nlmsg_seq == ex.sequence ? NL_OK.rawValue : NL_SKIP.rawValue)
}

private func exchangeValid(_ msg: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    let ex = Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue()
    ex.onMessage(nlmsg_hdr(msg))
    return Int32(NL_OK.rawValue)
}

private func exchangeFinished(_ msg: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue().done = true
    return Int32(NL_STOP.rawValue)
}

private func exchangeError(
    _ nla: UnsafeMutablePointer<sockaddr_nl>?, _ err: UnsafeMutablePointer<nlmsgerr>?, _ arg: UnsafeMutableRawPointer?
) -> Int32 {
    let ex = Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue()
    ex.kernelErrno = -(err?.pointee.error ?? -EIO)
    ex.done = true
    return Int32(NL_STOP.rawValue)
}

/// One NETLINK_ROUTE socket for request/response exchanges. Not thread-safe: one owner at a time.
final class RouteSocket {
    let sk: OpaquePointer

    /// - Parameter receiveTimeout: bounds every wait for the kernel (it always answers; this guards a broken setup).
    convenience init(receiveTimeout: Duration = .seconds(2)) throws(NetlinkError) {
        guard let sk = nl_socket_alloc() else { throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nl_socket_alloc") }
        let r = nl_connect(sk, NETLINK_ROUTE)
        if r < 0 {
            nl_socket_free(sk)
            throw NetlinkError(.library(-r), call: "nl_connect(NETLINK_ROUTE)")
        }
        self.init(adopting: sk)
        _ = Sys.setReceiveTimeout(nl_socket_get_fd(sk), receiveTimeout, path: nil)
    }

    /// Owns a connected socket (tests hand in one whose send and receive a scripted kernel answers).
    /// A dump's datagrams are read whole into a 32 KiB buffer, as iproute2 reads them, instead of libnl's default of
    /// peeking at each one's size first (two system calls a datagram); the kernel fills datagrams up to the size a
    /// reader's buffer has shown (netlink_dump), so a big table comes in a quarter of the datagrams too.
    init(adopting sk: OpaquePointer) {
        self.sk = sk
        nl_socket_disable_msg_peek(sk)
        _ = nl_socket_set_msg_buf_size(sk, 32768)
    }

    /// Turns NETLINK_GET_STRICT_CHK on or off: with it on, a dump request's header and attributes are filters the
    /// kernel applies (Linux 4.20+). False when the kernel refuses the option.
    func strictChecking(_ on: Bool) -> Bool {
        let value: Int32 = on ? 1 : 0
        if case .success = Sys.setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_GET_STRICT_CHK, value, path: nil) { return true }
        return false
    }

    deinit { nl_socket_free(sk) }

    /// Sends `msg` (consumed) and calls `onMessage` for every data message of the reply until the kernel's ACK,
    /// NLMSG_DONE or NLMSG_ERROR. A kernel error is thrown as `.kernel(errno)`.
    func exchange(
        _ msg: OpaquePointer, call: String, onMessage: @escaping (UnsafeMutablePointer<nlmsghdr>) -> Void
    ) throws(NetlinkError) {
        defer { nlmsg_free(msg) }
        let sent = nl_send_auto(sk, msg)
        if sent < 0 {
            // The request took a sequence number that no answer will follow, so libnl's own check (the number after
            // the last answered request) would fail every later libnl request on this socket (the link lookups'
            // rtnl_link_get_kernel). Exchanges check their own number; libnl's check goes for the socket's life.
            // Only an emulator gets here (qemu-user refuses RTM_GETRULE at send): a kernel answers a request it
            // refuses with NLMSG_ERROR.
            nl_socket_disable_seq_check(sk)
            throw NetlinkError(.library(-sent), call: "\(call) send")
        }

        // A copy of the socket's own callback set: it carries whatever the socket was set up with (a scripted
        // kernel's send and receive in the tests), and the custom handlers below stay on the copy.
        guard let own = nl_socket_get_cb(sk) else { throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nl_socket_get_cb") }
        let copy = nl_cb_clone(own)
        nl_cb_put(own)
        guard let cb = copy else { throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nl_cb_clone") }
        defer { nl_cb_put(cb) }
        let ex = Exchange(sequence: nlmsg_hdr(msg).pointee.nlmsg_seq, onMessage: onMessage)
        let arg = Unmanaged.passUnretained(ex).toOpaque()
        nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, exchangeSequence, arg)
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, exchangeValid, arg)
        nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, exchangeFinished, arg)
        nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, exchangeFinished, arg)
        nl_cb_err(cb, NL_CB_CUSTOM, exchangeError, arg)

        while !ex.done {
            let r = nl_recvmsgs(sk, cb)
            if ex.done { break }
            if r < 0 {
                if -r == NLE_AGAIN { throw NetlinkError(.timeout, call: call) }
                throw NetlinkError(.library(-r), call: call)
            }
        }
        withExtendedLifetime(ex) {}
        if ex.kernelErrno != 0 { throw NetlinkError(.kernel(ex.kernelErrno), call: call) }
    }
}
