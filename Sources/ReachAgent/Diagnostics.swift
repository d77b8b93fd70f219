// `reach diag`: gathers the facts (status, interfaces, the gateway's neighbour entry, DNS servers, the optional probe)
// and hands them to DiagChecks. Bounded in time: the status read is bounded by the modem timeout, the probe by its own.

import CMBIM
import CNLRoute
import CQMI
import GatewayReach
import Glibc

public struct DiagReport: Sendable {
    public var facts: DiagFacts
    public var checks: [DiagCheck]
    public var verdict: Verdict
    /// Where the modem and WiFi readings came from, and the running agent's state when it answered.
    public var readings: Readings? = nil
    public var agentState: JSON? = nil

    public func json(showIdentifiers: Bool) -> JSON {
        var snapshot = facts.snapshot.json(showIdentifiers: showIdentifiers)
        if !showIdentifiers { snapshot = Redact.json(snapshot) }
        return .object([
            ("schema", .int(1)),
            ("time", .string(facts.snapshot.time.rfc3339)),
            ("verdict", .string(verdict.rawValue)),
            ("exit_code", .int(Int(verdict.exitCode))),
            ("checks", .array(checks.map(\.json))),
            ("snapshot", snapshot),
            ("readings", readings?.json ?? .null),
        ])
    }

    /// The human form: one line per check, a hint under each failure or warning, and the verdict last. With
    /// `colour` the tags and the verdict carry SGR colours (green ok, yellow warn, red FAIL, dim skip); the words
    /// are the same, so nothing depends on seeing colour.
    public func text(colour: Bool = false) -> String {
        func paint(_ text: String, _ sgr: String) -> String { colour ? "\u{1B}[\(sgr)m" + text + "\u{1B}[0m" : text }
        var lines: [String] = []
        for c in checks {
            let tag: String
            switch c.status {
            case .ok: tag = paint("[ ok ]", "32")
            case .warn: tag = paint("[warn]", "33")
            case .fail: tag = paint("[FAIL]", "1;31")
            case .skip: tag = paint("[skip]", "2")
            }
            lines.append("\(tag) \(c.title): \(c.detail)")
            if c.status == .fail || c.status == .warn, let h = c.hint { lines.append("       hint: \(h)") }
        }
        let verdictColour: String
        switch verdict {
        case .ok: verdictColour = "1;32"
        case .degraded: verdictColour = "1;33"
        case .notReachable: verdictColour = "1;31"
        }
        lines.append(paint(DiagChecks.verdictLine(verdict, checks, facts.snapshot), verdictColour))
        return lines.joined(separator: "\n")
    }

    /// Whether the text gets colours: only on a terminal, never with `NO_COLOR` set to anything but the empty
    /// string (no-color.org), nor on a terminal that says it cannot (`TERM=dumb`).
    public static func colour(terminal: Bool, noColor: String?, term: String?) -> Bool {
        guard terminal else { return false }
        if let noColor, !noColor.isEmpty { return false }
        return term != "dumb"
    }
}

extension DiagReport {
    /// The report of these facts: their checks and the verdict.
    public init(facts: DiagFacts, showIdentifiers: Bool) {
        let checks = DiagChecks.evaluate(facts, showIdentifiers: showIdentifiers)
        self.init(facts: facts, checks: checks, verdict: DiagChecks.verdict(checks))
    }
}

public enum Diagnostics {
    /// `modemWorker`: read the modems in worker processes started this way (`ModemReadOptions.worker`).
    /// - Parameter direct: read modems and WiFi here even when an agent runs (and why), else ask the agent first.
    public static func run(
        config: AgentConfig, showIdentifiers: Bool, modemWorker: ModemWorkerLaunch? = nil, direct: String? = nil
    ) async -> DiagReport {
        let request = StatusRequest(ReachabilityOptions(config: config, worker: modemWorker), target: .defaultRoute)
        let probe = config.probe
        async let probeResult: ProbeResult? = { if let probe { return await Probe.run(probe) } else { return nil } }()
        let direct = direct ?? (showIdentifiers ? "--show-identifiers: the agent publishes no identifiers" : nil)
        var (snapshot, readings, agentState) = await AgentClient.status(
            request, socketPath: config.api.socketPath, direct: direct ?? (config.api.socketPath == nil ? "api.state_directory is null" : nil))
        // The validation probes, once, through each reachable uplink (only when validation is enabled).
        var rounds: [String: ValidationRound]?
        if config.validation.enabled {
            let r = await GatewayReach.rounds(snapshot, probes: config.validation.probes, timeout: config.validation.policy.timeout)
            snapshot.applyValidation(GatewayReach.part(r))
            rounds = r
        }
        var facts = DiagFacts(snapshot: snapshot)
        facts.validation = rounds
        facts.interfaces = interfaceFacts()
        if let r = snapshot.route, let gw = r.gateway.flatMap(IPAddress.init), let link = r.link {
            do {
                facts.gatewayNeighbour = .success(try RouteResolver.neighbour(of: gw, ifindex: link.index))
            } catch {
                facts.gatewayNeighbour = .failure(error)
            }
        }
        let dns = ResolvConf.servers()
        facts.dnsServers = dns.servers
        facts.dnsSources = dns.sources
        facts.dnsError = dns.error
        if let p = config.probe, let r = await probeResult { facts.probe = (p, r) }
        var checks = DiagChecks.evaluate(facts, showIdentifiers: showIdentifiers)
        checks.insert(agentCheck(readings, agentState), at: 0)
        var report = DiagReport(facts: facts, checks: checks, verdict: DiagChecks.verdict(checks))
        report.readings = readings
        report.agentState = agentState
        return report
    }

    /// Whether an agent runs and whether its readings were used. Not running is no problem of the link (skip); an
    /// agent that answers with a stale state is (warn).
    public static func agentCheck(_ readings: Readings, _ state: JSON?) -> DiagCheck {
        if readings.origin == .agent {
            let started = state?["agent"]?["started"]?.stringValue ?? "?"
            return DiagCheck("agent", "Agent", .ok, "running since \(started); readings from it (\(readings.detail))")
        }
        switch readings.trouble {
        case .tooManyClients:
            return DiagCheck("agent", "Agent", .warn, readings.text,
                             hint: "the agent's connections are held by other programs: its log names the uids it refused "
                                 + "(journalctl -u reach, logread); api.max_clients_per_uid in reach.json(5) says who may hold how many")
        case .stale:
            return DiagCheck("agent", "Agent", .warn, readings.detail + "; read directly",
                             hint: "the agent answers but its sources stopped updating: see its log (journalctl -u reach, logread)")
        case nil:
            return DiagCheck("agent", "Agent", .skip, readings.detail + "; read directly")
        }
    }

    /// Every interface with its flags and addresses. The corresponding C function is `getifaddrs`.
    public static func interfaceFacts() -> [String: InterfaceFacts] {
        var out: [String: InterfaceFacts] = [:]
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return out }
        defer { freeifaddrs(list) }
        var p = list
        while let ifa = p {
            let name = String(cString: ifa.pointee.ifa_name)
            let flags = ifa.pointee.ifa_flags
            var f = out[name] ?? InterfaceFacts(
                up: flags & UInt32(IFF_UP.rawValue) != 0, running: flags & UInt32(IFF_RUNNING.rawValue) != 0, addresses: [])
            if let sa = ifa.pointee.ifa_addr {
                var address: IPAddress?
                switch Int32(sa.pointee.sa_family) {
                case AF_INET:
                    let sin = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in.self)
                    address = withUnsafeBytes(of: sin.sin_addr) { IPAddress(bytes: Array($0)) }
                case AF_INET6:
                    let sin6 = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in6.self)
                    address = withUnsafeBytes(of: sin6.sin6_addr) { IPAddress(bytes: Array($0)) }
                default: break
                }
                if let address { f.addresses.append(address.description) }
            }
            out[name] = f
            p = ifa.pointee.ifa_next
        }
        return out
    }

    /// reach, the kernel, and the C libraries: libqmi/libmbim as built against, libnl as loaded.
    public static func versions() -> [(String, String)] {
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: u.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return [
            ("reach", GatewayReachVersion.string),
            ("kernel", "\(release) \(machine)"),
            ("libqmi-glib", "\(QMI_MAJOR_VERSION).\(QMI_MINOR_VERSION).\(QMI_MICRO_VERSION) (built against)"),
            ("libmbim-glib", "\(MBIM_MAJOR_VERSION).\(MBIM_MINOR_VERSION).\(MBIM_MICRO_VERSION) (built against)"),
            ("libnl", "\(nl_ver_maj).\(nl_ver_min).\(nl_ver_mic) (loaded)"),
        ]
    }
}

/// DNS servers from resolv.conf(5), and from systemd-resolved's upstream file when resolv.conf only points at its
/// local stub.
public enum ResolvConf {
    /// The `nameserver` addresses of a resolv.conf text, in order (comments and other options ignored).
    public static func parse(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { raw in
            let line = raw.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: { $0 == "#" || $0 == ";" }).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { return nil }
            return String(words[1])
        }
    }

    public static func servers(
        main: String = "/etc/resolv.conf", resolved: String = "/run/systemd/resolve/resolv.conf"
    ) -> (servers: [String], sources: [String], error: String?) {
        var sources: [String] = []
        var servers: [String] = []
        var error: String?
        switch readTextFile(main, limit: 1 << 20) {
        case let .success(t):
            sources.append(main)
            servers = parse(t)
        case let .failure(e):
            error = "cannot read \(main): \(e)"
        }
        let onlyStub = !servers.isEmpty && servers.allSatisfy { $0.hasPrefix("127.0.0.5") }
        if servers.isEmpty || onlyStub, case let .success(t) = readTextFile(resolved, limit: 1 << 20) {
            sources.append(resolved)
            let upstream = parse(t)
            if !upstream.isEmpty {
                servers = (onlyStub ? servers.map { "\($0) (systemd-resolved)" } : []) + upstream
                error = nil
            }
        }
        return (servers, sources, error)
    }
}
