// One socket of one probe: bound to the uplink's interface, non-blocking, every wait bounded by the probe's deadline.
//
// How a probe leaves by the uplink it judges (mwan3track's `ping -I DEVICE`): SO_BINDTODEVICE (socket(7)). The kernel
// then looks the destination up with the interface as the required output device, so the packet takes that uplink's
// default route from the main table (netifd, NetworkManager and ifupdown install one per WAN with its metric; mwan3
// requires them) and never another uplink's. Since Linux 5.7 a process needs no capability to bind a socket that is
// not yet bound (commit c427bfec18f2, "net: core: enable SO_BINDTODEVICE for non-root users"); only changing a binding
// needs CAP_NET_RAW, which the probes never do.
//
// The system calls are ReachSystem's (EINTR retried there); their errors become `ProbeFailure` words for the probe's
// outcome.

import Glibc
import ReachCore
import ReachSystem

/// Why a probe got no answer, in the words its outcome shows ("timed out", "connection refused").
struct ProbeFailure: Error, Sendable, Equatable {
    var words: String

    init(_ words: String) { self.words = words }

    /// A system call's failure: the errno's usual meaning, named after the call when it is unusual.
    init(_ call: String, errno e: Int32) {
        switch e {
        case ETIMEDOUT: words = "timed out"
        case ECONNREFUSED: words = "connection refused"
        case ENETUNREACH: words = "network unreachable"
        case EHOSTUNREACH: words = "host unreachable"
        case ECONNRESET: words = "connection reset"
        default: words = "\(call): \(String(cString: strerror(e)))"
        }
    }

    /// A failed call of ReachSystem's, in the same words.
    init(_ error: SystemError) { self.init(error.call, errno: error.errno) }

    /// The errno's meaning, named after `call` (not the wrapper's name for it) when unusual.
    init(_ call: String, _ error: SystemError) { self.init(call, errno: error.errno)
    }

    static let timedOut = ProbeFailure("timed out")
}

/// A probe's time limit on the monotonic clock.
struct Deadline: Sendable {
    let end: ContinuousClock.Instant

    init(_ timeout: Duration) { end = .now + timeout }

    /// Milliseconds left, rounded up so that a deadline a fraction of a millisecond away still waits; 0 when passed.
    var remainingMilliseconds: Int32 { Sys.milliseconds(ContinuousClock.now.duration(to: end)) }

    var passed: Bool { ContinuousClock.now >= end }
}

/// A socket owned by one probe: closed when the probe is done with it.
final class ProbeSocket {
    let fd: Int32
    let family: AddressFamily

    private init(fd: Int32, family: AddressFamily) {
        self.fd = fd
        self.family = family
    }

    deinit { Sys.close(fd) }

    /// A non-blocking, close-on-exec socket bound to `device`; nil: not bound (the routing picks the way).
    static func open(_ family: AddressFamily, type: Int32, protocol proto: Int32, device: String?) -> Result<ProbeSocket, ProbeFailure> {
        let domain = family == .ipv4 ? AF_INET : AF_INET6
        let fd: Int32
        switch Sys.socket(domain, type, proto, nonBlocking: true) {
        case let .success(f): fd = f
        case let .failure(e): return .failure(ProbeFailure(e))
        }
        let s = ProbeSocket(fd: fd, family: family)
        if let device, case let .failure(f) = s.bind(device: device) { return .failure(f) }
        return .success(s)
    }

    /// SO_BINDTODEVICE. The corresponding C call is `setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, len)`.
    private func bind(device: String) -> Result<Void, ProbeFailure> {
        let name = Array(device.utf8.prefix(Int(IFNAMSIZ) - 1)) + [0]
        return name.withUnsafeBytes { Sys.setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, $0, path: device) }
            .mapError { ProbeFailure("binding to \(device) (SO_BINDTODEVICE)", $0) }
    }

    static func sockaddr(_ address: IPAddress, port: Int, scope: Int) -> (storage: sockaddr_storage, length: socklen_t) {
        SocketAddress.make(address, port: port, scope: scope)
    }

    /// `connect`; for a stream socket it is under way on return (EINPROGRESS), finish it with `finishConnect`.
    func connect(_ address: IPAddress, port: Int, scope: Int) -> Result<Bool, ProbeFailure> {
        var (ss, len) = Self.sockaddr(address, port: port, scope: scope)
        let r = withUnsafePointer(to: &ss) {
            $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { Sys.connect(fd, $0, len, path: nil) }
        }
        switch r {
        case .success: return .success(true)
        // EINTR: the connect goes on in the kernel, as with EINPROGRESS; finishing it waits for its end.
        case let .failure(e) where e.errno == EINPROGRESS || e.errno == EINTR: return .success(false)
        case let .failure(e): return .failure(ProbeFailure(e))
        }
    }

    /// A stream connect carried to its end within `deadline` (`connect`, then `finishConnect` when under way).
    func connect(_ address: IPAddress, port: Int, scope: Int, _ deadline: Deadline) -> Result<Void, ProbeFailure> {
        switch connect(address, port: port, scope: scope) {
        case .success(true): return .success(())
        case .success(false): return finishConnect(deadline)
        case let .failure(f): return .failure(f)
        }
    }

    /// Waits for a non-blocking connect to end, within `deadline`. The corresponding C calls are `poll` and
    /// `getsockopt(SO_ERROR)`.
    func finishConnect(_ deadline: Deadline) -> Result<Void, ProbeFailure> {
        if case let .failure(f) = wait(Int16(POLLOUT), deadline) { return .failure(f) }
        switch Sys.socketError(fd, path: nil) {
        case .success(0): return .success(())
        case let .success(err): return .failure(ProbeFailure("connect", errno: err))
        case let .failure(e): return .failure(ProbeFailure(e))
        }
    }

    /// Waits for `events` until `deadline`.
    func wait(_ events: Int16, _ deadline: Deadline) -> Result<Void, ProbeFailure> {
        let ms = deadline.remainingMilliseconds
        if ms == 0 { return .failure(.timedOut) }
        switch Sys.poll(fd, events, timeoutMs: ms) {
        case .success(0): return .failure(.timedOut)
        case .success: return .success(())
        case let .failure(e): return .failure(ProbeFailure(e))
        }
    }

    /// Sends all of `bytes` (to the connected peer, or to `to`), waiting for room until `deadline`.
    func send(_ bytes: [UInt8], to: IPAddress? = nil, port: Int = 0, scope: Int = 0, _ deadline: Deadline) -> Result<Void, ProbeFailure> {
        var done = 0
        while done < bytes.count {
            let sent: Result<Int, SystemError>
            if let to {
                var (ss, len) = Self.sockaddr(to, port: port, scope: scope)
                sent = bytes[done...].withUnsafeBytes { b in
                    withUnsafePointer(to: &ss) {
                        $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { Sys.sendto(fd, b, to: $0, len, path: nil) }
                    }
                }
            } else {
                sent = bytes[done...].withUnsafeBytes { Sys.send(fd, $0, path: nil) }
            }
            switch sent {
            case let .success(n): done += n
            case let .failure(e) where e.errno == EAGAIN || e.errno == EWOULDBLOCK:
                if case let .failure(f) = wait(Int16(POLLOUT), deadline) { return .failure(f) }
            case let .failure(e): return .failure(ProbeFailure("send", e))
            }
        }
        return .success(())
    }

    /// One datagram or what a stream has now (at most `limit` bytes), waiting until `deadline`; an empty array is the
    /// end of a stream.
    func receive(limit: Int, _ deadline: Deadline) -> Result<[UInt8], ProbeFailure> {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            switch buffer.withUnsafeMutableBytes({ Sys.recv(fd, into: $0, path: nil) }) {
            case let .success(n): return .success(Array(buffer[0..<n]))
            case let .failure(e) where e.errno == EAGAIN || e.errno == EWOULDBLOCK:
                if case let .failure(f) = wait(Int16(POLLIN), deadline) { return .failure(f) }
            case let .failure(e): return .failure(ProbeFailure(e))
            }
        }
    }

    /// The IP header a packet of this socket carries: 20 bytes for IPv4 (no options), 40 for IPv6.
    var ipHeaderBytes: Int { family == .ipv4 ? 20 : 40 }
}

/// A socket address for an `IPAddress`, as connect(2) and sendto(2) take it.
public enum SocketAddress {
    /// `address`:`port`; an IPv6 link-local address (a gateway fe80::1) gets `scope` (the interface index) as its
    /// sin6_scope_id.
    public static func make(_ address: IPAddress, port: Int, scope: Int = 0) -> (storage: sockaddr_storage, length: socklen_t) {
        var ss = sockaddr_storage()
        if address.family == .ipv4 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &sin.sin_addr) { $0.copyBytes(from: address.bytes) }
            withUnsafeMutableBytes(of: &ss) { $0.storeBytes(of: sin, as: sockaddr_in.self) }
            return (ss, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = UInt16(port).bigEndian
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: address.bytes) }
        if address.isLinkLocal { sin6.sin6_scope_id = UInt32(scope) }
        withUnsafeMutableBytes(of: &ss) { $0.storeBytes(of: sin6, as: sockaddr_in6.self) }
        return (ss, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }
}
