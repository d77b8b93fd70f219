// Config `validation`: off unless the operator turns it on and names the probes; reach has no default target of its
// own, so it never sends a packet anywhere nobody chose. Every value is checked, each problem naming its key.

extension AgentConfig {
    public struct Validation: Sendable, Equatable {
        public var enabled = false
        public var intervalSeconds: Double = Defaults.validationIntervalSeconds
        public var timeoutSeconds: Double = Defaults.validationTimeoutSeconds
        public var downAfter = Defaults.validationDownAfter
        public var upAfter = Defaults.validationUpAfter
        public var retryIntervalSeconds: Double = Defaults.validationRetryIntervalSeconds
        /// The backoff's cap while an uplink stays not validated; at least the interval.
        public var maxIntervalSeconds: Double = Defaults.validationMaxIntervalSeconds
        public var probes: [ProbeSpec] = []

        public init() {}

        public var policy: ValidationPolicy {
            ValidationPolicy(
                interval: Defaults.duration(intervalSeconds), retryInterval: Defaults.duration(retryIntervalSeconds),
                maxInterval: Defaults.duration(max(maxIntervalSeconds, intervalSeconds)), timeout: Defaults.duration(timeoutSeconds),
                downAfter: downAfter, upAfter: upAfter)
        }

        public var json: JSON {
            .object([
                ("enabled", .bool(enabled)),
                ("interval_seconds", .double(intervalSeconds)),
                ("timeout_seconds", .double(timeoutSeconds)),
                ("down_after", .int(downAfter)),
                ("up_after", .int(upAfter)),
                ("retry_interval_seconds", .double(retryIntervalSeconds)),
                ("max_interval_seconds", .double(maxIntervalSeconds)),
                ("probes", .array(probes.map(\.json))),
            ])
        }
    }
}

extension ProbeSpec {
    /// The configuration form.
    public var json: JSON {
        switch self {
        case let .dns(server, name, port):
            let s: String
            switch server {
            case let .address(a): s = a.description
            case .gateway: s = "gateway"
            case .uplink: s = "uplink"
            }
            var m: [(String, JSON)] = [("kind", .string("dns")), ("server", .string(s)), ("name", .string(name))]
            if port != 53 { m.append(("port", .int(port))) }
            return .object(m)
        case let .icmp(address):
            let a: String
            switch address {
            case let .address(ip): a = ip.description
            case .gateway: a = "gateway"
            }
            return .object([("kind", .string("icmp")), ("address", .string(a))])
        case let .http(url, expect):
            return .object([("kind", .string("http")), ("url", .string(url.description)), ("expect", .int(expect))])
        }
    }
}

extension ConfigReader {
    /// The most probes one round may run (each is bounded by the timeout; a round must stay short).
    static let maxProbes = 8

    func validation(_ o: ObjectReader, into v: inout AgentConfig.Validation) {
        o.bool("enabled") { v.enabled = $0 }
        o.number("interval_seconds", in: 1...86_400, unit: "seconds") { v.intervalSeconds = $0 }
        o.number("timeout_seconds", in: 0.1...30, unit: "seconds") { v.timeoutSeconds = $0 }
        o.integer("down_after", in: 1...100) { v.downAfter = $0 }
        o.integer("up_after", in: 1...100) { v.upAfter = $0 }
        var retryGiven = false
        o.number("retry_interval_seconds", in: 1...86_400, unit: "seconds") {
            v.retryIntervalSeconds = $0
            retryGiven = true
        }
        var maxGiven = false
        o.number("max_interval_seconds", in: 1...86_400, unit: "seconds") {
            v.maxIntervalSeconds = $0
            maxGiven = true
        }
        if v.timeoutSeconds >= v.intervalSeconds {
            problem(o.path("timeout_seconds"), "expected less than interval_seconds (\(JSON.format(v.intervalSeconds)))")
        }
        if v.retryIntervalSeconds > v.intervalSeconds {
            if retryGiven {
                problem(o.path("retry_interval_seconds"), "expected at most interval_seconds (\(JSON.format(v.intervalSeconds)))")
            } else {
                v.retryIntervalSeconds = v.intervalSeconds
            }
        }
        if maxGiven && v.maxIntervalSeconds < v.intervalSeconds {
            problem(o.path("max_interval_seconds"), "expected at least interval_seconds (\(JSON.format(v.intervalSeconds)))")
        }
        o.optionalArray("probes") { items in
            let key = o.path("probes")
            if items.count > Self.maxProbes { problem(key, "expected at most \(Self.maxProbes) probes, found \(items.count)") }
            let probes = items.enumerated().compactMap { i, item in validationProbe(item, at: key + "[\(i)]").map { (i, $0) } }
            v.probes = firstOfEach(probes, key: key, what: "probe") { $0 == $1 }
            // An http probe's host name is resolved by the first dns probe's server, over the uplink.
            if !v.probes.contains(where: { $0.kind == "dns" }) {
                for (i, p) in probes {
                    if case let .http(url, _) = p, url.address == nil {
                        problem(key + "[\(i)].url", "the host \"\(url.host)\" is a name: add a dns probe (it resolves the "
                            + "name over each uplink) or use an address literal")
                    }
                }
            }
        }
        let listed = o.value("probes")
        let noneListed = listed == nil || listed!.isNull || listed!.arrayValue?.isEmpty == true
        if v.enabled && noneListed {
            problem(o.path("probes"), "expected at least one probe when validation is enabled (reach has no default target)")
        }
    }

    func validationProbe(_ v: JSON, at path: String) -> ProbeSpec? {
        var spec: ProbeSpec?
        object(v, at: path) { o in
            guard let kindJSON = o.value("kind") else {
                problem(o.path("kind"), "missing; expected dns, icmp or http")
                return
            }
            switch kindJSON.stringValue {
            case "dns":
                var server: ProbeServer?
                if let s = o.value("server") {
                    switch s.stringValue {
                    case "uplink"?: server = .uplink
                    case "gateway"?: server = .gateway
                    case let text? where IPAddress(text) != nil: server = .address(IPAddress(text)!)
                    default: problem(o.path("server"), "expected an IP address, \"gateway\" or \"uplink\", found \(show(s))")
                    }
                } else {
                    problem(o.path("server"), "missing; expected an IP address, \"gateway\" or \"uplink\"")
                }
                var name = "."
                o.string("name", nonEmpty: true) { n in
                    if n == "." || IPAddressText.isHostName(n) {
                        name = n
                    } else {
                        problem(o.path("name"), "expected \".\" or a domain name to ask for, found \(show(.string(n)))")
                    }
                }
                var port = 53
                o.integer("port", in: 1...65535) { port = $0 }
                if let server { spec = .dns(server: server, name: name, port: port) }
            case "icmp":
                if let a = o.value("address") {
                    switch a.stringValue {
                    case "gateway"?: spec = .icmp(address: .gateway)
                    case let text? where IPAddress(text) != nil: spec = .icmp(address: .address(IPAddress(text)!))
                    default: problem(o.path("address"), "expected an IP address or \"gateway\", found \(show(a))")
                    }
                } else {
                    problem(o.path("address"), "missing; expected an IP address or \"gateway\"")
                }
            case "http":
                var url: HTTPURL?
                if let u = o.value("url") {
                    if let s = u.stringValue {
                        switch HTTPURL.parse(s) {
                        case let .success(parsed): url = parsed
                        case let .failure(why): problem(o.path("url"), "\(why), found \(show(u))")
                        }
                    } else {
                        problem(o.path("url"), "expected an http:// URL, found \(show(u))")
                    }
                } else {
                    problem(o.path("url"), "missing; expected an http:// URL such as http://192.0.2.80/generate_204")
                }
                var expect = 204
                o.integer("expect", in: 200...299) { expect = $0 }
                if let url { spec = .http(url: url, expect: expect) }
            default:
                problem(o.path("kind"), "expected dns, icmp or http, found \(show(kindJSON))")
            }
        }
        return spec
    }
}
