// The active probe of `reach diag`: one DNS query or one TCP connect to an endpoint the operator configured, the way
// the routing picks (not bound to an uplink). The exchanges are validation's own (`DNSProbe`, the connect of
// `HTTPProbe`), so a DNS answer counts only with our id and our question, in diag as in validation.

import Glibc
import ReachCore

public enum EndpointProbe {
    /// What a probe found: whether the endpoint answered, and in words what it said or why it did not.
    public struct Answer: Sendable, Equatable {
        public var ok: Bool
        public var detail: String
    }

    /// One query for `name` (NS for the root ".", else A or AAAA as the server's family) to `server`:`port`;
    /// NOERROR and NXDOMAIN count as the server answering. On a thread of its own; ends by `timeout`.
    public static func dns(server: IPAddress, port: Int, name: String, timeout: Duration) async -> Answer {
        await ValidationProber.onThread {
            let type = server.family == .ipv4 ? DNSMessage.typeA : DNSMessage.typeAAAA
            let r = DNSProbe.run(server: server, port: port, name: name, type: type, context(timeout))
            return Answer(ok: r.result == .ok, detail: r.detail)
        }
    }

    /// A TCP connect to `address`:`port`, closed at once. On a thread of its own; ends by `timeout`.
    public static func tcp(address: IPAddress, port: Int, timeout: Duration) async -> Answer {
        await ValidationProber.onThread {
            let deadline = Deadline(timeout)
            let socket: ProbeSocket
            switch ProbeSocket.open(address.family, type: Int32(SOCK_STREAM.rawValue), protocol: 0, device: nil) {
            case let .success(s): socket = s
            case let .failure(f): return Answer(ok: false, detail: f.words)
            }
            switch socket.connect(address, port: port, scope: 0) {
            case .success(true): break
            case .success(false):
                if case let .failure(f) = socket.finishConnect(deadline) { return Answer(ok: false, detail: f.words) }
            case let .failure(f): return Answer(ok: false, detail: f.words)
            }
            return Answer(ok: true, detail: "connected")
        }
    }

    static func context(_ timeout: Duration) -> ProbeContext { ProbeContext(interface: nil, ifindex: 0, timeout: timeout) }
}
