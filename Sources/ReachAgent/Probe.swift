// The optional active probe of `reach diag`: a TCP connect, or one DNS query over UDP, to an endpoint the operator
// configured, with a short timeout. Never run unless configured.

import GatewayReach
import Glibc

public enum Probe {
    public static func run(_ p: AgentConfig.Probe) async -> ProbeResult {
        let timeout = Duration.milliseconds(Int64(p.timeoutSeconds * 1000))
        let addresses: [IPAddress]
        switch await HostResolver.resolve(p.host, timeout: timeout) {
        case let .success(a) where !a.isEmpty: addresses = a
        case .success: return ProbeResult(ok: false, detail: "\(p.host) resolved to no address")
        case let .failure(e): return ProbeResult(ok: false, detail: e.message)
        }
        let address = addresses[0]
        let clock = ContinuousClock()
        let start = clock.now
        let result: Result<String, SystemError>
        switch p.kind {
        case .tcp: result = tcpConnect(address, port: p.port, timeoutMs: Int32(p.timeoutSeconds * 1000))
        case .dns: result = dnsQuery(address, port: p.port, name: p.query, timeoutMs: Int32(p.timeoutSeconds * 1000))
        }
        let ms = Double((clock.now - start).components.attoseconds / 1_000_000_000_000_000) / 1000
            + Double((clock.now - start).components.seconds) * 1000
        let took = " in \(Int(ms.rounded())) ms"
        switch result {
        case let .success(what): return ProbeResult(ok: true, detail: "\(what) \(address)\(took)")
        case let .failure(e): return ProbeResult(ok: false, detail: "\(address) port \(p.port): \(e)")
        }
    }

    static func sockaddr(_ a: IPAddress, port: Int) -> (storage: sockaddr_storage, length: socklen_t) {
        SocketAddress.make(a, port: port)
    }

    /// Waits for `events` on `fd` up to `timeoutMs`, retrying EINTR. The corresponding C function is `poll`.
    static func wait(_ fd: Int32, _ events: Int16, timeoutMs: Int32) -> Result<Void, SystemError> {
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let r = poll(&pfd, 1, timeoutMs)
            if r > 0 { return .success(()) }
            if r == 0 { return .failure(SystemError("poll (timed out)", errno: ETIMEDOUT)) }
            if errno != EINTR { return .failure(SystemError("poll", errno: errno)) }
        }
    }

    /// A non-blocking connect, bounded by the timeout. The corresponding C function is `connect`.
    static func tcpConnect(_ a: IPAddress, port: Int, timeoutMs: Int32) -> Result<String, SystemError> {
        let fd = socket(a.family == .ipv4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket", errno: errno)) }
        defer { close(fd) }
        var (ss, len) = sockaddr(a, port: port)
        let r = withUnsafePointer(to: &ss) { $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { connect(fd, $0, len) } }
        if r != 0 && errno != EINPROGRESS { return .failure(SystemError("connect", errno: errno)) }
        if r != 0 {
            if case let .failure(e) = wait(fd, Int16(POLLOUT), timeoutMs: timeoutMs) { return .failure(e) }
            var err: Int32 = 0
            var errLen = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errLen)
            if err != 0 { return .failure(SystemError("connect", errno: err)) }
        }
        return .success("connected to")
    }

    /// One DNS query (A for a name, NS for the root ".") over UDP; any well-formed answer with our id counts as the
    /// server answering (NOERROR or NXDOMAIN), SERVFAIL/REFUSED as a failure.
    static func dnsQuery(_ a: IPAddress, port: Int, name: String, timeoutMs: Int32) -> Result<String, SystemError> {
        let fd = socket(a.family == .ipv4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket", errno: errno)) }
        defer { close(fd) }
        var (ss, len) = sockaddr(a, port: port)
        let c = withUnsafePointer(to: &ss) { $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { connect(fd, $0, len) } }
        if c != 0 { return .failure(SystemError("connect", errno: errno)) }
        let id = UInt16.random(in: 0...UInt16.max)
        let query = DNSMessage.query(id: id, name: name)
        if send(fd, query, query.count, 0) != query.count { return .failure(SystemError("send", errno: errno)) }
        var buffer = [UInt8](repeating: 0, count: 1500)
        let end = ContinuousClock.now + .milliseconds(Int64(timeoutMs))
        while true {
            let left = ContinuousClock.now.duration(to: end)
            let leftMs = Int32(max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            if case let .failure(e) = wait(fd, Int16(POLLIN), timeoutMs: leftMs) { return .failure(e) }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError("recv", errno: errno))
            }
            guard let rcode = DNSMessage.responseCode(Array(buffer[0..<n]), id: id) else { continue }  // not ours
            switch rcode {
            case 0: return .success("answered (NOERROR) by")
            case 3: return .success("answered (NXDOMAIN) by")
            default: return .failure(SystemError("DNS answer with rcode \(rcode)", errno: EPROTO))
            }
        }
    }
}
