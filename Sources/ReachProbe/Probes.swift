// The three probes, each one exchange through a socket bound to the uplink, bounded by the probe's deadline. Each
// counts the IP bytes it sent (headers included): what a metered link bills.

import Glibc
import ReachCore
import ReachSystem

/// What the probes of one round share: the uplink's interface and the time each probe may take.
struct ProbeContext: Sendable {
    /// nil: the socket is not bound to an interface (`EndpointProbe`).
    var interface: String?
    var ifindex: Int
    var timeout: Duration
}

/// A probe's result before it becomes a `ProbeOutcome`.
struct ProbeReport {
    var result: ProbeOutcome.Result
    var detail: String
    var bytesSent: Int
    /// For a DNS probe: the A/AAAA addresses of the answer (an HTTP probe of the same name uses them).
    var addresses: [IPAddress] = []
}

enum DNSProbe {
    /// One query for `name` to `server`:`port`. A response with our id and question counts as the server answering
    /// when its RCODE is NOERROR or NXDOMAIN; SERVFAIL, REFUSED and the rest are failures (the resolver cannot
    /// resolve through this uplink).
    static func run(server: IPAddress, port: Int, name: String, type: UInt16, _ c: ProbeContext) -> ProbeReport {
        let deadline = Deadline(c.timeout)
        let socket: ProbeSocket
        switch ProbeSocket.open(server.family, type: Int32(SOCK_DGRAM.rawValue), protocol: 0, device: c.interface) {
        case let .success(s): socket = s
        case let .failure(f): return ProbeReport(result: .failed, detail: f.words, bytesSent: 0)
        }
        // Connected: only the server's datagrams are received, and an ICMP port unreachable is reported.
        if case let .failure(f) = socket.connect(server, port: port, scope: c.ifindex) {
            return ProbeReport(result: .failed, detail: f.words, bytesSent: 0)
        }
        let id = UInt16.random(in: 0...UInt16.max)  // SystemRandomNumberGenerator: getrandom(2)
        let query = DNSMessage.query(id: id, name: name, type: name == "." ? DNSMessage.typeNS : type)
        let sent = socket.ipHeaderBytes + 8 + query.count
        if case let .failure(f) = socket.send(query, deadline) { return ProbeReport(result: .failed, detail: f.words, bytesSent: 0) }
        while true {
            let bytes: [UInt8]
            switch socket.receive(limit: 4096, deadline) {
            case let .success(b): bytes = b
            case let .failure(f):
                let words = f.words == "connection refused" ? "port \(port) unreachable" : f.words
                return ProbeReport(result: .failed, detail: words, bytesSent: sent)
            }
            let asked = name == "." ? DNSMessage.typeNS : type
            guard let r = DNSMessage.parse(bytes, id: id, name: name, type: asked) else { continue }  // not ours
            switch r.rcode {
            case 0, 3: return ProbeReport(result: .ok, detail: "answered \(r.rcodeName)", bytesSent: sent, addresses: r.addresses)
            default: return ProbeReport(result: .failed, detail: "answered \(r.rcodeName)", bytesSent: sent)
            }
        }
    }
}

enum ICMPProbe {
    /// The payload of an echo request: small, since a metered link pays for every byte (ping(8) sends 56).
    static let payloadBytes = 16

    /// One echo request to `address`, through a ping socket (SOCK_DGRAM, IPPROTO_ICMP) where
    /// net.ipv4.ping_group_range admits our group, else a raw socket (which needs CAP_NET_RAW).
    static func run(address: IPAddress, _ c: ProbeContext) -> ProbeReport {
        let deadline = Deadline(c.timeout)
        let v4 = address.family == .ipv4
        let proto = v4 ? Int32(IPPROTO_ICMP) : Int32(IPPROTO_ICMPV6)
        var raw = false
        let socket: ProbeSocket
        switch ProbeSocket.open(address.family, type: Int32(SOCK_DGRAM.rawValue), protocol: proto, device: c.interface) {
        case let .success(s): socket = s
        case let .failure(dgram):
            switch ProbeSocket.open(address.family, type: Int32(SOCK_RAW.rawValue), protocol: proto, device: c.interface) {
            case let .success(s):
                socket = s
                raw = true
            case .failure:
                return ProbeReport(
                    result: .failed,
                    detail: "no ICMP socket (\(dgram.words)): net.ipv4.ping_group_range must include group "
                        + "\(getegid()), or reach needs CAP_NET_RAW", bytesSent: 0)
            }
        }
        let random = (0..<(payloadBytes + 4)).map { _ in UInt8.random(in: 0...255) }
        let ident = UInt16(random[0]) << 8 | UInt16(random[1])
        let seq = UInt16(random[2]) << 8 | UInt16(random[3])
        let payload = Array(random[4...])
        // Type 8 / 128 echo request (RFC 792, RFC 4443 §4.1). A ping socket sets the identifier and the checksum
        // itself; on a raw IPv4 socket both are ours, on a raw IPv6 socket the kernel computes the checksum.
        var packet: [UInt8] = [v4 ? 8 : 128, 0, 0, 0, UInt8(ident >> 8), UInt8(ident & 0xFF), UInt8(seq >> 8), UInt8(seq & 0xFF)]
        packet += payload
        if raw && v4 {
            let sum = checksum(packet)
            packet[2] = UInt8(sum >> 8)
            packet[3] = UInt8(sum & 0xFF)
        }
        let sent = socket.ipHeaderBytes + packet.count
        let start = ContinuousClock.now
        if case let .failure(f) = socket.send(packet, to: address, scope: c.ifindex, deadline) {
            return ProbeReport(result: .failed, detail: f.words, bytesSent: 0)
        }
        while true {
            var reply: [UInt8]
            switch socket.receive(limit: 1500, deadline) {
            case let .success(b): reply = b
            case let .failure(f):
                return ProbeReport(result: .failed, detail: f.words == "timed out" ? "no echo reply" : f.words, bytesSent: sent)
            }
            // A raw IPv4 socket hands over the IP header too; skip it (IHL words).
            if raw && v4 {
                guard let first = reply.first, reply.count >= Int(first & 0x0F) * 4 else { continue }
                reply = Array(reply[(Int(first & 0x0F) * 4)...])
            }
            guard reply.count >= 8 + payloadBytes, reply[0] == (v4 ? 0 : 129), reply[6] == packet[6], reply[7] == packet[7],
                Array(reply[8..<(8 + payloadBytes)]) == payload
            else { continue }  // another echo's reply, or not a reply
            if raw && (reply[4] != packet[4] || reply[5] != packet[5]) { continue }
            let ms = (ContinuousClock.now - start).milliseconds
            return ProbeReport(result: .ok, detail: "echo reply in \(ms) ms", bytesSent: sent)
        }
    }

    /// The Internet checksum (RFC 1071).
    static func checksum(_ b: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < b.count {
            sum += UInt32(b[i]) << 8 | UInt32(b[i + 1])
            i += 2
        }
        if i < b.count { sum += UInt32(b[i]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }
}

enum HTTPProbe {
    /// One GET of `url` at `address`, judged by `HTTPProbeResponse`. Connect, request and answer share one deadline.
    static func run(url: HTTPURL, address: IPAddress, expect: Int, _ c: ProbeContext) -> ProbeReport {
        let deadline = Deadline(c.timeout)
        let socket: ProbeSocket
        switch ProbeSocket.open(address.family, type: Int32(SOCK_STREAM.rawValue), protocol: 0, device: c.interface) {
        case let .success(s): socket = s
        case let .failure(f): return ProbeReport(result: .failed, detail: f.words, bytesSent: 0)
        }
        var report = exchange(socket, url: url, address: address, expect: expect, c, deadline)
        report.bytesSent = TCPCounters.bytesSent(socket)
        return report
    }

    static func request(_ url: HTTPURL) -> [UInt8] {
        // HTTP/1.1 with Connection: close (as Android's probe asks): the server ends the exchange, one request.
        Array(
            ("GET \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nUser-Agent: reach-validation\r\n"
                + "Accept: */*\r\nConnection: close\r\n\r\n").utf8)
    }

    private static func exchange(
        _ socket: ProbeSocket, url: HTTPURL, address: IPAddress, expect: Int, _ c: ProbeContext, _ deadline: Deadline
    ) -> ProbeReport {
        func fail(_ f: ProbeFailure) -> ProbeReport { ProbeReport(result: .failed, detail: f.words, bytesSent: 0) }
        if case let .failure(f) = socket.connect(address, port: url.port, scope: c.ifindex, deadline) { return fail(f) }
        if case let .failure(f) = socket.send(request(url), deadline) { return fail(f) }
        var bytes: [UInt8] = []
        var ended = false
        while true {
            if case let .head(head) = HTTPProbeResponse.parse(bytes) {
                let body = bytes.count - head.length
                if ended || !HTTPProbeResponse.needsBody(head, expect: expect) || body > 0 {
                    let (result, detail) = HTTPProbeResponse.judge(head, bodyBytes: body, ended: ended, expect: expect)
                    return ProbeReport(result: result, detail: detail, bytesSent: 0)
                }
            } else if case let .invalid(why) = HTTPProbeResponse.parse(bytes) {
                return ProbeReport(result: .failed, detail: why, bytesSent: 0)
            } else if ended {
                return ProbeReport(
                    result: .failed, detail: bytes.isEmpty ? "closed without an answer" : "closed mid-answer", bytesSent: 0)
            }
            switch socket.receive(limit: 4096, deadline) {
            case let .success(chunk):
                if chunk.isEmpty { ended = true } else { bytes += chunk }
            case let .failure(f):
                return fail(f == .timedOut ? ProbeFailure(bytes.isEmpty ? "timed out" : "timed out mid-answer") : f)
            }
        }
    }
}

/// IP bytes a TCP socket sent, from the kernel's counters (`TCPInfo` reads them and does the sum).
enum TCPCounters {
    static func bytesSent(_ socket: ProbeSocket) -> Int {
        var info = [UInt8](repeating: 0, count: 232)
        let read = info.withUnsafeMutableBytes { Sys.getsockopt(socket.fd, Int32(IPPROTO_TCP), TCP_INFO, into: $0, path: nil) }
        guard case let .success(len) = read, let counters = TCPInfo(Array(info[..<min(len, info.count)])) else { return 0 }
        return counters.ipBytesSent(ipHeaderBytes: socket.ipHeaderBytes)
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int {
        let (s, atto) = components
        return Int(s) * 1000 + Int(atto / 1_000_000_000_000_000)
    }
}
