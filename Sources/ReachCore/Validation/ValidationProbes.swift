// The validation probes as configured, and made concrete for one uplink: which address each one asks, or why it does
// not apply there. Pure: the uplink's facts (routes, gateway, the resolvers it was given) come in as values.
//
// Only addresses are ever contacted: a DNS server or ICMP target is an address literal, the uplink's own next hop
// (`gateway`) or the resolver the uplink was given (`uplink`); an HTTP URL's host is an address literal, or a name
// resolved by one DNS query over the same uplink (to the first dns probe's server), never by getaddrinfo, which could
// block on a resolver outside the uplink.

/// Where a DNS probe asks.
public enum ProbeServer: Sendable, Equatable {
    case address(IPAddress)
    /// The uplink's own next hop (a router that runs a resolver, as most CPE do).
    case gateway
    /// The resolver the uplink was given (DHCP, PPP, networkd), where one is known.
    case uplink
}

/// What an ICMP probe pings.
public enum ProbeAddress: Sendable, Equatable {
    case address(IPAddress)
    /// The uplink's own next hop: mwan3track's default track target on a point-to-point-less WAN.
    case gateway
}

/// One configured probe (`validation.probes[]`).
public enum ProbeSpec: Sendable, Equatable {
    /// One DNS query for `name` (an A query, or AAAA on an uplink with only an IPv6 route; "." asks for the root's NS).
    case dns(server: ProbeServer, name: String, port: Int)
    /// One ICMP echo request.
    case icmp(address: ProbeAddress)
    /// One HTTP GET, judged as Android's HTTP probe: `expect` (204) validates, a redirect or another 2xx/3xx is a
    /// captive portal.
    case http(url: HTTPURL, expect: Int)

    public var kind: String {
        switch self {
        case .dns: return "dns"
        case .icmp: return "icmp"
        case .http: return "http"
        }
    }
}

/// An `http://` URL as the HTTP probe uses it.
public struct HTTPURL: Sendable, Equatable, CustomStringConvertible {
    /// The host as written (brackets removed from an IPv6 literal).
    public var host: String
    /// The host when it is an address literal.
    public var address: IPAddress?
    public var port: Int
    /// Path and query, "/" at least.
    public var path: String

    public var description: String {
        let h = address?.family == .ipv6 ? "[\(host)]" : host
        return "http://" + h + (port == 80 ? "" : ":\(port)") + path
    }

    /// The Host header's value (RFC 9112 §3.2).
    public var hostHeader: String {
        let h = address?.family == .ipv6 ? "[\(host)]" : host
        return port == 80 ? h : "\(h):\(port)"
    }

    /// Parses `http://HOST[:PORT][/PATH[?QUERY]]`; the error says what is wrong.
    public static func parse(_ text: String) -> Result<HTTPURL, URLProblem> {
        let lower = text.lowercased()
        if lower.hasPrefix("https://") {
            return .failure(URLProblem(
                "https is not supported: reach carries no TLS library; use http (a captive portal shows itself over "
                    + "plain http, which is what Android's HTTP probe asks)"))
        }
        guard lower.hasPrefix("http://") else { return .failure(URLProblem("expected a URL starting with http://")) }
        let rest = text.dropFirst(7)
        guard rest.utf8.count <= 2048 else { return .failure(URLProblem("longer than 2048 bytes")) }
        // Only printable ASCII without spaces: the path goes into the request line as it is, so nothing in it can end
        // the line early (no CR, LF or other control character).
        guard rest.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            return .failure(URLProblem("only printable ASCII without spaces is allowed (percent-encode the rest)"))
        }
        if rest.contains("#") { return .failure(URLProblem("a fragment (#…) is never sent; remove it")) }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        if authority.contains("@") { return .failure(URLProblem("user information (…@) is not allowed")) }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(URLProblem("an unclosed [ in the host")) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .failure(URLProblem("unexpected text after the IPv6 address")) }
                portText = after.dropFirst()
            }
            guard let a = IPAddress(String(host)), a.family == .ipv6 else {
                return .failure(URLProblem("expected an IPv6 address inside [ ]"))
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            if parts.count == 2 { portText = parts[1] }
        }
        var port = 80
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p), portText.allSatisfy(\.isASCIIDigit) else {
                return .failure(URLProblem("expected a port from 1 to 65535, found \"\(portText)\""))
            }
            port = p
        }
        guard !host.isEmpty else { return .failure(URLProblem("no host")) }
        let address = IPAddress(String(host))
        if address == nil {
            guard IPAddressText.isHostName(String(host)) else {
                return .failure(URLProblem("expected a host name or an address literal, found \"\(host)\""))
            }
        }
        return .success(HTTPURL(host: String(host), address: address, port: port, path: path))
    }
}

/// Why an URL (or another probe setting) cannot be used.
public struct URLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// The facts about one uplink its probes need.
public struct ValidationSubject: Sendable, Equatable {
    /// The uplink's default route of one family.
    public struct Path: Sendable, Equatable {
        public var gateway: IPAddress?
        /// In the main table: a socket bound to the interface follows it. A route only in another table (reached by
        /// fwmark rules) is not followed by a bound socket: the kernel then sends on-link.
        public var mainTable: Bool

        public init(gateway: IPAddress?, mainTable: Bool) {
            self.gateway = gateway
            self.mainTable = mainTable
        }
    }

    public var interface: String
    public var ifindex: Int
    public var reachable: Bool
    public var ipv4: Path?
    public var ipv6: Path?
    /// A point-to-point link (rawip WWAN, PPP): on-link and via a gateway are the same, any table will do.
    public var pointToPoint: Bool
    /// The DNS servers the uplink was given, where known (`UplinkResolvers`).
    public var resolvers: [IPAddress]

    public init(
        interface: String, ifindex: Int, reachable: Bool, ipv4: Path?, ipv6: Path?, pointToPoint: Bool,
        resolvers: [IPAddress] = []
    ) {
        self.interface = interface
        self.ifindex = ifindex
        self.reachable = reachable
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.pointToPoint = pointToPoint
        self.resolvers = resolvers
    }

    /// From a derived uplink.
    public init(_ u: Uplink, resolvers: [IPAddress] = []) {
        func path(_ f: AddressFamily) -> Path? {
            guard let r = u.bestRoute(f) else { return nil }
            return Path(gateway: r.gateway.flatMap(IPAddress.init), mainTable: r.table == nil || r.table == RoutingTable.main)
        }
        let kind = u.kind
        self.init(
            interface: u.interface, ifindex: u.link?.index ?? 0, reachable: u.reachable, ipv4: path(.ipv4),
            ipv6: path(.ipv6), pointToPoint: kind == .wwan || kind == .ppp, resolvers: resolvers)
    }

    public func path(_ f: AddressFamily) -> Path? { f == .ipv4 ? ipv4 : ipv6 }

    /// The family a query for a name asks for: A where the uplink has an IPv4 route, else AAAA.
    public var preferredFamily: AddressFamily { ipv4 != nil ? .ipv4 : .ipv6 }
}

/// A probe made concrete for one uplink.
public enum PlannedProbe: Sendable, Equatable {
    case dns(label: String, server: IPAddress, port: Int, name: String, family: AddressFamily)
    /// `local`: the address is the uplink's own next hop, whose answer proves the first hop only.
    case icmp(label: String, address: IPAddress, local: Bool)
    /// `resolver`: where the URL's host name is resolved (nil for an address literal); `reuse`: the index of a dns
    /// probe of the same round that asks for this very name, whose answer is used instead of a query of its own.
    case http(label: String, url: HTTPURL, resolver: IPAddress?, resolverPort: Int, reuse: Int?, family: AddressFamily, expect: Int)
    case skipped(ProbeOutcome)

    public var label: String {
        switch self {
        case let .dns(label, _, _, _, _), let .icmp(label, _, _), let .http(label, _, _, _, _, _, _): return label
        case let .skipped(o): return o.probe
        }
    }
}

extension ProbeSpec {
    /// "dns 9.9.9.9", "dns uplink", "icmp gateway", "http connectivity.example": how a probe is named before it is
    /// made concrete (and when it cannot be).
    public var label: String {
        switch self {
        case let .dns(server, _, _):
            switch server {
            case let .address(a): return "dns \(a)"
            case .gateway: return "dns gateway"
            case .uplink: return "dns uplink"
            }
        case let .icmp(address):
            switch address {
            case let .address(a): return "icmp \(a)"
            case .gateway: return "icmp gateway"
            }
        case let .http(url, _): return "http \(url.host)"
        }
    }
}

public enum ValidationPlan {
    /// The configured probes, in order, made concrete for `subject`.
    public static func make(_ probes: [ProbeSpec], for subject: ValidationSubject) -> [PlannedProbe] {
        var planned: [PlannedProbe] = []
        for spec in probes {
            planned.append(plan(spec, subject, earlier: planned, all: probes))
        }
        return planned
    }

    private static func plan(_ spec: ProbeSpec, _ s: ValidationSubject, earlier: [PlannedProbe], all: [ProbeSpec]) -> PlannedProbe {
        func skip(_ why: String) -> PlannedProbe {
            .skipped(ProbeOutcome(probe: spec.label, result: .skipped, detail: why))
        }
        /// Why a packet to `a` cannot leave by this uplink's bound socket, if it cannot.
        func unroutable(_ a: IPAddress) -> String? {
            let name = a.family == .ipv4 ? "IPv4" : "IPv6"
            guard let p = s.path(a.family) else { return "no \(name) default route via \(s.interface)" }
            if !p.mainTable && !s.pointToPoint {
                return "the \(name) default via \(s.interface) is only in a policy table, which a socket bound to "
                    + "\(s.interface) does not follow"
            }
            return nil
        }
        /// The uplink's next hop (its IPv4 route's, else its IPv6 route's).
        let gateway = [s.ipv4, s.ipv6].compactMap { $0?.gateway }.first
        let noGateway = "no gateway (\(s.interface) is on-link)"
        switch spec {
        case let .dns(server, name, port):
            let address: IPAddress
            switch server {
            case let .address(a): address = a
            case .gateway:
                guard let gateway else { return skip(noGateway) }
                address = gateway
            case .uplink:
                guard let r = s.resolvers.first(where: { s.path($0.family) != nil }) else {
                    return skip("no resolver known for \(s.interface)")
                }
                address = r
            }
            if let why = unroutable(address) { return skip(why) }
            return .dns(label: "dns \(address)", server: address, port: port, name: name, family: s.preferredFamily)
        case let .icmp(target):
            let address: IPAddress
            switch target {
            case let .address(a): address = a
            case .gateway:
                guard let gateway else { return skip(noGateway) }
                address = gateway
            }
            if let why = unroutable(address) { return skip(why) }
            return .icmp(label: "icmp \(address)", address: address, local: address == gateway)
        case let .http(url, expect):
            let label = "http \(url.host)"
            if let a = url.address {
                if let why = unroutable(a) { return .skipped(ProbeOutcome(probe: label, result: .skipped, detail: why)) }
                return .http(label: label, url: url, resolver: nil, resolverPort: 53, reuse: nil, family: a.family, expect: expect)
            }
            // A name: resolved by the first dns probe's server, over this uplink (made concrete here when that probe
            // comes later in the list).
            guard let i = all.firstIndex(where: { $0.kind == "dns" }) else {
                return .skipped(ProbeOutcome(probe: label, result: .skipped, detail: "no dns probe to resolve \(url.host)"))
            }
            let resolverPlan = i < earlier.count ? earlier[i] : plan(all[i], s, earlier: [], all: all)
            guard case let .dns(_, server, port, name, family) = resolverPlan else {
                return .skipped(ProbeOutcome(
                    probe: label, result: .skipped, detail: "\(url.host) cannot be resolved: \(resolverPlan.skipReason ?? "")"))
            }
            let same = i < earlier.count && Self.sameName(name, url.host)
            return .http(label: label, url: url, resolver: server, resolverPort: port, reuse: same ? i : nil, family: family, expect: expect)
        }
    }

    /// DNS names compare without case and without a trailing dot (RFC 4343).
    public static func sameName(_ a: String, _ b: String) -> Bool {
        func norm(_ s: String) -> String { (s.hasSuffix(".") ? String(s.dropLast()) : s).lowercased() }
        return norm(a) == norm(b)
    }
}

extension PlannedProbe {
    var skipReason: String? {
        if case let .skipped(o) = self { return o.detail }
        return nil
    }
}
