// The active probe of `reach diag`: one DNS query or one TCP connect to an endpoint the operator configured, the way
// the routing picks (not bound to an uplink). The exchanges are validation's own (`DNSProbe`, the connect of
// `HTTPProbe`), so a DNS answer counts only with our id and our question, in diag as in validation.

import Glibc
import ReachCore

public enum EndpointProbe {
    /// What a probe found: whether the endpoint answered, in words what it said or why it did not, and how long the
    /// exchange took.
    public struct Answer: Sendable, Equatable {
        public var ok: Bool
        public var detail: String
        public var milliseconds: Int
    }

    /// One query for `name` (NS for the root ".", else A or AAAA as the server's family) to `server`:`port`;
    /// NOERROR and NXDOMAIN count as the server answering. On a thread of its own; ends by `timeout`.
    public static func dns(server: IPAddress, port: Int, name: String, timeout: Duration) async -> Answer {
        await ValidationProber.onThread {
            let start = ContinuousClock.now
            let type = server.family == .ipv4 ? DNSMessage.typeA : DNSMessage.typeAAAA
            let r = DNSProbe.run(server: server, port: port, name: name, type: type, context(timeout))
            return Answer(ok: r.result == .ok, detail: r.detail, milliseconds: start.duration(to: .now).milliseconds)
        }
    }

    /// A TCP connect to `address`:`port`, closed at once. On a thread of its own; ends by `timeout`.
    public static func tcp(address: IPAddress, port: Int, timeout: Duration) async -> Answer {
        await ValidationProber.onThread {
            let start = ContinuousClock.now
            let deadline = Deadline(timeout)
            let connected = ProbeSocket.open(address.family, type: Int32(SOCK_STREAM.rawValue), protocol: 0, device: nil)
                .flatMap { $0.connect(address, port: port, scope: 0, deadline) }
            let ms = start.duration(to: .now).milliseconds
            switch connected {
            case .success: return Answer(ok: true, detail: "connected", milliseconds: ms)
            case let .failure(f): return Answer(ok: false, detail: f.words, milliseconds: ms)
            }
        }
    }

    static func context(_ timeout: Duration) -> ProbeContext { ProbeContext(interface: nil, ifindex: 0, timeout: timeout) }
}
