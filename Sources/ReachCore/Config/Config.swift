// The agent's configuration: a pure model, read from JSON with strict validation.
//
// JSON, not TOML: ReachCore already carries a strict parser with line/column errors, so the config costs no extra
// parser in the binary. Every key is documented in docs/reach.json.5.md (the reach.json(5) man page) and in config/reach.json.
// Every problem names the key path ("report.interval_seconds", "targets[1].kind") and what was expected; unknown
// keys are errors too, so a typo never silently falls back to a default.

/// The whole agent configuration. Every member has a default; an empty object `{}` is a valid config.
public struct AgentConfig: Sendable, Equatable {
    public static let schemaVersion = 1
    public static let defaultPath = "/etc/reach/reach.json"

    public struct Report: Sendable, Equatable {
        /// The JSON-lines report log.
        public var path: String = Defaults.reportPath
        /// A periodic line is written every interval (and a change line at every change).
        public var intervalSeconds: Double = Defaults.reportIntervalSeconds
        /// The log is rotated before a line would take it past this size.
        public var rotateBytes: Int = Defaults.reportRotateBytes
        /// Rotated files kept (reach.jsonl.1 … .N); 0 keeps none.
        public var rotateKeep: Int = Defaults.reportRotateKeep
        public init() {}
    }

    /// Change detection: see `ChangePolicy`.
    public struct Changes: Sendable, Equatable {
        public var holdDownSeconds: Double = Defaults.holdDownSeconds
        public var barHysteresisDB: Double = Defaults.barHysteresisDB
        public init() {}
    }

    /// How modem bars are computed: a profile of `SignalPolicy`, with the thresholds the file replaces.
    public struct Signal: Sendable, Equatable {
        public var profile: SignalPolicy.Profile = .android
        /// Replaced thresholds, `signal.thresholds.<family>.<measure>`, in `BarFamily` then `SignalMeasure` order.
        public var thresholds: [Threshold] = []
        public init() {}

        public struct Threshold: Sendable, Equatable {
            public var family: BarFamily
            public var measure: SignalMeasure
            public var values: [Double]
            public init(_ family: BarFamily, _ measure: SignalMeasure, _ values: [Double]) {
                self.family = family
                self.measure = measure
                self.values = values
            }
        }

        /// The policy every bar is computed with. Thresholds were validated when the file was read.
        public var policy: SignalPolicy {
            var p = SignalPolicy(profile)
            for t in thresholds { try? p.override(t.family, t.measure, thresholds: t.values) }
            return p
        }
    }


    public struct Modems: Sendable, Equatable {
        public var enabled = true
        /// Ports to open; empty: those that discovery finds in sysfs.
        public var ports: [ModemPortSpec] = []
        public var requestTimeoutSeconds: Double = Defaults.modemRequestTimeoutSeconds
        /// The poll used only when a modem sends no indications.
        public var pollIntervalSeconds: Double = Defaults.modemPollIntervalSeconds
        /// Each modem's I/O (libqmi/libmbim) in a supervised worker process of its own; false: in reach's process.
        public var worker = true
        /// How the control ports are opened: through qmi-proxy/mbim-proxy (auto, proxy) or directly.
        public var access: ModemAccess = .auto
        /// How often the data session is asked again although indications announce it: some firmware sends them
        /// late or never (docs/how-it-works.md, "Data session").
        public var sessionRequerySeconds: Double = Defaults.modemSessionRequerySeconds
        public init() {}
    }

    public struct WiFi: Sendable, Equatable {
        public var enabled = true
        /// Interfaces to watch; empty: all.
        public var interfaces: [String] = []
        /// The poll used only when nl80211 events are unavailable.
        public var pollIntervalSeconds: Double = Defaults.wifiPollIntervalSeconds
        public init() {}
    }

    public enum ProbeKind: String, Sendable, Equatable, CaseIterable {
        case tcp, dns
    }

    /// An active check to an endpoint the operator names. Off unless configured: the agent never phones home.
    public struct Probe: Sendable, Equatable {
        public var kind: ProbeKind
        public var host: String
        public var port: Int
        public var timeoutSeconds: Double
        /// For a DNS probe: the name asked for.
        public var query: String
        public init(kind: ProbeKind, host: String, port: Int? = nil, timeoutSeconds: Double = 2, query: String = ".") {
            self.kind = kind
            self.host = host
            self.port = port ?? (kind == .dns ? 53 : 443)
            self.timeoutSeconds = timeoutSeconds
            self.query = query
        }
    }

    public enum LogLevel: String, Sendable, Equatable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    /// What the agent offers other programs: the state file and the Varlink socket in `stateDirectory`, the event
    /// hooks in `hooksDirectory`. nil turns each off.
    public struct API: Sendable, Equatable {
        public static let socketName = "org.gatewayreach.Reach"
        public static let stateFileName = "state.json"
        /// sun_path holds 108 bytes with its NUL (include/uapi/linux/un.h UNIX_PATH_MAX): the directory must leave
        /// room for "/org.gatewayreach.Reach".
        public static let maxStateDirectoryBytes = 107 - 1 - socketName.utf8.count

        public var stateDirectory: String? = Defaults.stateDirectory
        public var hooksDirectory: String? = Defaults.hooksDirectory
        public var hookTimeoutSeconds: Double = Defaults.hookTimeoutSeconds
        /// Varlink connections in all, and per uid but root (`APIAdmission`, which holds the defaults).
        public var maxClients = Defaults.maxClients
        public var maxClientsPerUID = Defaults.maxClientsPerUID
        public init() {}

        public var admission: APIAdmission { APIAdmission(maxClients: maxClients, maxClientsPerUID: maxClientsPerUID) }

        public var stateFile: String? { stateDirectory.map { $0 + "/" + Self.stateFileName } }
        public var socketPath: String? { stateDirectory.map { $0 + "/" + Self.socketName } }
    }

    public var report = Report()
    public var changes = Changes()
    public var signal = Signal()
    /// What the agent watches; each target has its own snapshot, change detection and report lines.
    public var targets: [Target] = [.defaultRoute]
    public var modems = Modems()
    public var wifi = WiFi()
    /// Interface kind overrides by interface name, e.g. `{"ppp0": "wwan"}` for a modem behind pppd.
    public var interfaceKinds: [String: InterfaceKind] = [:]
    /// The link each interface rides on, where the kernel cannot show it (`{"tun0": "wwan0"}`); wins over every
    /// underlay rule (docs/how-it-works.md, "How the answer is derived").
    public var interfaceUnderlays: [String: String] = [:]
    /// `clat.plat_prefix`: the PLAT-side NAT64 prefix a CLAT sends to (RFC 6877), 64:ff9b::/96 by default.
    public var platPrefix: IPPrefix = .wellKnownNAT64
    /// Uplinks named and ordered by the operator: listed even while they hold no default route. Empty: the uplinks
    /// are the interfaces holding a default route, as the kernel's tables show them.
    public var uplinks: [UplinkSpec] = []
    public var probe: Probe?
    /// Validated uplinks: opt-in probes through each uplink (`ValidationConfig.swift`); off by default.
    public var validation = Validation()
    /// Path of a Prometheus textfile (node_exporter's textfile collector), or nil for none.
    public var prometheusTextfile: String?
    public var logLevel: LogLevel = .info
    /// Report lines a diagnostics bundle carries.
    public var diagReportLines = Defaults.diagReportLines
    public var api = API()

    public init() {}

    /// The signal policy of `signal`: passed to every snapshot and to the modems' indication thresholds.
    public var signalPolicy: SignalPolicy { signal.policy }

    /// What the underlay walk uses: `interface_underlays` and `clat.plat_prefix`.
    public var underlayConfig: UnderlayConfig {
        UnderlayConfig(interfaceUnderlays: interfaceUnderlays, platPrefix: platPrefix)
    }

    /// How often the agent publishes its state (state file, Varlink) at the latest: the shortest of the report interval
    /// and the poll intervals of the sources it reads. A reader treats a state older than twice this as stale.
    public var stateRefreshSeconds: Double {
        var s = report.intervalSeconds
        if modems.enabled { s = min(s, modems.pollIntervalSeconds) }
        if wifi.enabled { s = min(s, wifi.pollIntervalSeconds) }
        return s
    }

    public var changePolicy: ChangePolicy {
        ChangePolicy(holdDown: Defaults.duration(changes.holdDownSeconds), barHysteresisDB: changes.barHysteresisDB)
    }
}

/// A configuration that cannot be used: each problem names the key path and what was expected.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// Dotted key path ("report.interval_seconds", "targets[0].kind"); empty for a syntax error.
        public var key: String
        public var message: String
        public var description: String { key.isEmpty ? message : "\(key): \(message)" }
    }

    public var problems: [Problem]

    public init(problems: [Problem]) { self.problems = problems }
    public init(key: String, _ message: String) { self.problems = [Problem(key: key, message: message)] }

    public var description: String { problems.map(\.description).joined(separator: "; ") }
}

// MARK: - Reading

extension AgentConfig {
    /// Parses and validates a config text. All problems found are reported together.
    public static func parse(_ text: String) throws(ConfigError) -> AgentConfig {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses and validates a config file's bytes as read: invalid UTF-8 is an error naming its line and column, never
    /// a path quietly changed to U+FFFD.
    public static func parse(bytes: [UInt8]) throws(ConfigError) -> AgentConfig {
        let json: JSON
        do {
            json = try JSON.parse(bytes: bytes)
        } catch {
            throw ConfigError(key: "", "not valid JSON: \(error)")
        }
        return try from(json: json)
    }

    public static func from(json: JSON) throws(ConfigError) -> AgentConfig {
        let r = ConfigReader()
        var c = AgentConfig()
        r.object(json, at: "") { o in
            if let v = o.value("schema") {
                if v.intValue != Int64(schemaVersion) {
                    r.problem(o.path("schema"), "expected \(schemaVersion), found \(r.show(v))")
                }
            }
            o.optionalObject("report") { rep in
                rep.filePath("path") { c.report.path = $0 }
                rep.number("interval_seconds", in: 0.001...86_400, unit: "seconds") { c.report.intervalSeconds = $0 }
                rep.integer("rotate_bytes", in: 4096...(1 << 40)) { c.report.rotateBytes = $0 }
                rep.integer("rotate_keep", in: 0...100) { c.report.rotateKeep = $0 }
            }
            o.optionalObject("changes") { ch in
                ch.number("hold_down_seconds", in: 0...3600, unit: "seconds") { c.changes.holdDownSeconds = $0 }
                ch.number("bar_hysteresis_db", in: 0...20, unit: "dB") { c.changes.barHysteresisDB = $0 }
            }
            o.optionalObject("signal") { sig in r.signal(sig, into: &c.signal) }
            o.optionalArray("targets") { items in
                let key = o.path("targets")
                let targets = items.enumerated().compactMap { i, item in r.target(item, at: key + "[\(i)]").map { (i, $0) } }
                if items.isEmpty { r.problem(key, "expected at least one target") }
                // Two equal targets would give two equal Prometheus series, which node_exporter refuses.
                c.targets = r.firstOfEach(targets, key: key, what: "target") { $0 == $1 }
            }
            o.optionalObject("modems") { m in
                m.bool("enabled") { c.modems.enabled = $0 }
                m.optionalArray("ports") { items in
                    let key = m.path("ports")
                    let ports = items.enumerated().compactMap { i, item in r.modemPort(item, at: key + "[\(i)]").map { (i, $0) } }
                    // One monitor per port: two on one port would fight over its client ids.
                    c.modems.ports = r.firstOfEach(ports, key: key, what: "port path") { $0.path == $1.path }
                }
                m.number("request_timeout_seconds", in: 0.1...120, unit: "seconds") {
                    c.modems.requestTimeoutSeconds = $0
                }
                m.number("poll_interval_seconds", in: 1...86_400, unit: "seconds") { c.modems.pollIntervalSeconds = $0 }
                m.bool("worker") { c.modems.worker = $0 }
                if let v = m.value("access") {
                    if let s = v.stringValue, let a = ModemAccess(rawValue: s) {
                        c.modems.access = a
                    } else {
                        r.problem(m.path("access"), "expected auto, proxy or direct, found \(r.show(v))")
                    }
                }
                m.number("session_requery_seconds", in: 1...3600, unit: "seconds") { c.modems.sessionRequerySeconds = $0 }
            }
            o.optionalObject("wifi") { w in
                w.bool("enabled") { c.wifi.enabled = $0 }
                w.optionalArray("interfaces") { items in
                    let key = w.path("interfaces")
                    let names = items.enumerated().compactMap { i, item in r.interfaceName(item, at: key + "[\(i)]").map { (i, $0) } }
                    c.wifi.interfaces = r.firstOfEach(names, key: key, what: "interface") { $0 == $1 }
                }
                w.number("poll_interval_seconds", in: 1...86_400, unit: "seconds") { c.wifi.pollIntervalSeconds = $0 }
            }
            o.optionalObject("interface_kinds") { k in
                r.byInterface(k) { name, value, path in
                    let kinds = InterfaceKind.allCases.map(\.rawValue)
                    guard let s = value.stringValue, let kind = InterfaceKind(rawValue: s) else {
                        r.problem(path, "expected one of \(kinds.joined(separator: ", ")), found \(r.show(value))")
                        return
                    }
                    c.interfaceKinds[name] = kind
                }
            }
            o.optionalObject("interface_underlays") { u in
                r.byInterface(u) { name, value, path in
                    if let below = r.interfaceName(value, at: path) { c.interfaceUnderlays[name] = below }
                }
                for loop in UnderlayConfig.loops(c.interfaceUnderlays) {
                    r.problem(
                        o.path("interface_underlays"),
                        "\(loop.joined(separator: " → ")) is a loop: an interface cannot ride on itself")
                }
            }
            o.optionalObject("clat") { cl in
                if let v = cl.value("plat_prefix") {
                    let lengths = IPPrefix.nat64Lengths.sorted().map(String.init).joined(separator: ", ")
                    let expected = "an IPv6 prefix of length \(lengths) (RFC 6052) such as \"64:ff9b::/96\""
                    if let text = v.stringValue, let p = IPPrefix(text), text.contains("/"), p.family == .ipv6,
                        IPPrefix.nat64Lengths.contains(p.length), p.isCanonical
                    {
                        c.platPrefix = p
                    } else {
                        r.problem(cl.path("plat_prefix"), "expected \(expected), found \(r.show(v))")
                    }
                }
            }
            o.optionalArray("uplinks") { items in
                var seen: [String: Int] = [:]
                for (i, item) in items.enumerated() {
                    let path = o.path("uplinks") + "[\(i)]"
                    guard let spec = r.uplink(item, at: path) else { continue }
                    if let first = seen[spec.interface] {
                        r.problem(path + ".interface", "\"\(spec.interface)\" is already listed at uplinks[\(first)]")
                        continue
                    }
                    seen[spec.interface] = i
                    c.uplinks.append(spec)
                }
            }
            if let v = o.value("probe"), !v.isNull {
                c.probe = r.probe(v, at: o.path("probe"))
            }
            o.optionalObject("validation") { v in r.validation(v, into: &c.validation) }
            o.optionalObject("prometheus") { p in
                if let v = p.value("textfile"), !v.isNull {
                    p.filePath("textfile", suffix: ".prom", because: "node_exporter reads only *.prom", orNull: true) {
                        c.prometheusTextfile = $0
                    }
                }
            }
            o.optionalObject("diag") { d in
                d.integer("report_lines", in: 0...100_000) { c.diagReportLines = $0 }
            }
            o.optionalObject("api") { a in
                a.directoryPath("state_directory", maxBytes: AgentConfig.API.maxStateDirectoryBytes,
                                because: "the socket's path must fit sun_path") { c.api.stateDirectory = $0 }
                a.directoryPath("hooks_directory", maxBytes: 4000, because: nil) { c.api.hooksDirectory = $0 }
                a.number("hook_timeout_seconds", in: 0.1...3600, unit: "seconds") { c.api.hookTimeoutSeconds = $0 }
                let before = r.problems.count
                a.integer("max_clients", in: 3...APIAdmission.maxClientsLimit) { c.api.maxClients = $0 }
                a.integer("max_clients_per_uid", in: 1...(APIAdmission.maxClientsLimit / 3)) { c.api.maxClientsPerUID = $0 }
                // Together only when each is valid on its own (a bad max_clients would be judged as the default).
                if r.problems.count == before, let why = c.api.admission.problem {
                    r.problem(a.path("max_clients_per_uid"), why)
                }
            }
            if let v = o.value("log_level") {
                if let s = v.stringValue, let l = LogLevel(rawValue: s) {
                    c.logLevel = l
                } else {
                    let levels = LogLevel.allCases.map(\.rawValue).joined(separator: ", ")
                    r.problem(o.path("log_level"), "expected one of \(levels), found \(r.show(v))")
                }
            }
        }
        if !r.problems.isEmpty { throw ConfigError(problems: r.problems) }
        return c
    }
}

/// Walks a JSON tree collecting problems; each `ObjectReader` rejects the keys nobody asked for.
final class ConfigReader {
    var problems: [ConfigError.Problem] = []

    func problem(_ key: String, _ message: String) {
        problems.append(ConfigError.Problem(key: key, message: message))
    }

    /// A value as the error message shows it: short JSON, cut at 40 characters.
    func show(_ v: JSON) -> String {
        let s = v.serialized()
        return s.count > 40 ? String(s.prefix(37)) + "..." : s
    }

    func object(_ v: JSON, at path: String, _ body: (ObjectReader) -> Void) {
        guard let members = v.objectValue else {
            problem(path, "expected an object, found \(v.typeName)")
            return
        }
        let o = ObjectReader(reader: self, base: path, members: members)
        body(o)
        o.rejectUnknown()
    }

    /// The first of each set of equal items (with their array indices); each later one is a problem naming the first.
    func firstOfEach<T>(_ items: [(Int, T)], key: String, what: String, same: (T, T) -> Bool) -> [T] {
        var kept: [(Int, T)] = []
        for (i, item) in items {
            if let (j, _) = kept.first(where: { same($0.1, item) }) {
                problem("\(key)[\(i)]", "the same \(what) as \(key)[\(j)]")
            } else {
                kept.append((i, item))
            }
        }
        return kept.map(\.1)
    }

    /// An object keyed by interface name (`interface_kinds`, `interface_underlays`): `body` gets each member whose
    /// key is a valid name, with its key path; a bad key is a problem.
    func byInterface(_ o: ObjectReader, _ body: (String, JSON, String) -> Void) {
        for (name, value) in o.members {
            let path = o.path(name)
            if let why = InterfaceName.problem(name) {
                problem(path, "expected \(InterfaceName.expected) as the key, found \(show(.string(name))): \(why)")
                continue
            }
            body(name, value, path)
        }
        o.markAllUsed()
    }

    func interfaceName(_ v: JSON, at path: String) -> String? {
        guard let s = v.stringValue else {
            problem(path, "expected \(InterfaceName.expected), found \(show(v))")
            return nil
        }
        if let why = InterfaceName.problem(s) {
            problem(path, "expected \(InterfaceName.expected), found \(show(v)): \(why)")
            return nil
        }
        return s
    }

    func target(_ v: JSON, at path: String) -> Target? {
        var result: Target?
        object(v, at: path) { o in
            guard let kindJSON = o.value("kind") else {
                problem(o.path("kind"), "missing; expected default, link_local, address or host")
                return
            }
            let value = o.value("value")
            switch kindJSON.stringValue {
            case "default": result = .defaultRoute
            case "link_local": result = .linkLocal
            case "address":
                if let s = value?.stringValue, IPAddress(s) != nil {
                    result = .address(s)
                } else {
                    problem(o.path("value"), "expected an IPv4 or IPv6 address, found \(value.map(show) ?? "nothing")")
                }
            case "host":
                if let s = value?.stringValue, IPAddressText.isHostName(s) {
                    result = .host(s)
                } else {
                    problem(o.path("value"), "expected a host name, found \(value.map(show) ?? "nothing")")
                }
            default:
                problem(o.path("kind"), "expected default, link_local, address or host, found \(show(kindJSON))")
            }
            if case .defaultRoute? = result, value != nil { problem(o.path("value"), "not allowed for kind default") }
            if case .linkLocal? = result, value != nil { problem(o.path("value"), "not allowed for kind link_local") }
        }
        return result
    }

    func modemPort(_ v: JSON, at path: String) -> ModemPortSpec? {
        var port: ModemPortSpec?
        object(v, at: path) { o in
            var devicePath: String?
            o.filePath("path", what: "an absolute device path") { devicePath = $0 }
            if o.value("path") == nil { problem(o.path("path"), "missing; expected a device path like /dev/cdc-wdm0") }
            var proto: ModemProtocol?
            if let p = o.value("protocol"), !p.isNull {
                if let s = p.stringValue, let m = ModemProtocol(rawValue: s) { proto = m } else {
                    problem(o.path("protocol"), "expected qmi, mbim or null, found \(show(p))")
                }
            }
            var interface: String?
            if let i = o.value("interface"), !i.isNull { interface = interfaceName(i, at: o.path("interface")) }
            var muxID: Int?
            if let v = o.value("mux_id"), !v.isNull {
                if let n = v.intValue, (0...255).contains(n) {
                    muxID = Int(n)
                } else {
                    problem(o.path("mux_id"), "expected a mux id (QMI) or session id (MBIM) from 0 to 255, or null, found \(show(v))")
                }
                if o.value("interface") == nil || o.value("interface")?.isNull == true {
                    problem(o.path("mux_id"), "needs \"interface\": the network interface that carries this channel")
                }
            }
            if let devicePath { port = ModemPortSpec(path: devicePath, protocol: proto, interface: interface, muxID: muxID) }
        }
        return port
    }

    /// `signal`: `profile` (android, strict) and `thresholds` {family: {measure: [four ascending numbers]}}; a
    /// threshold must be one the profile uses (a key that would change nothing is an error, as unknown keys are).
    func signal(_ o: ObjectReader, into signal: inout AgentConfig.Signal) {
        if let v = o.value("profile") {
            let names = SignalPolicy.Profile.allCases.map(\.rawValue)
            if let s = v.stringValue, let p = SignalPolicy.Profile(rawValue: s) {
                signal.profile = p
            } else {
                problem(o.path("profile"), "expected one of \(names.joined(separator: ", ")), found \(show(v))")
            }
        }
        var policy = SignalPolicy(signal.profile)
        o.optionalObject("thresholds") { t in
            for (familyName, value) in t.members {
                let familyPath = t.path(familyName)
                guard let family = BarFamily(rawValue: familyName) else {
                    let families = BarFamily.allCases.map(\.rawValue).joined(separator: ", ")
                    problem(familyPath, "unknown radio family (expected one of: \(families))")
                    continue
                }
                guard let measures = value.objectValue else {
                    problem(familyPath, "expected an object of measures, found \(value.typeName)")
                    continue
                }
                for (measureName, thresholds) in measures {
                    let path = familyPath + "." + measureName
                    let used = policy.rule(family).measures.map(\.measure)
                    guard let measure = SignalMeasure(rawValue: measureName), used.contains(measure) else {
                        let list = used.map(\.rawValue).joined(separator: ", ")
                        problem(path, "not a measure the \(signal.profile.rawValue) profile uses for \(familyName) "
                            + "(expected one of: \(list))")
                        continue
                    }
                    let values = thresholds.arrayValue?.compactMap(\.doubleValue)
                    guard let values, values.count == thresholds.arrayValue?.count else {
                        problem(path, "expected four ascending numbers (poor, moderate, good, great), found "
                            + show(thresholds))
                        continue
                    }
                    // The profile's own values (as `--check-config` prints them) are no override.
                    let current = policy.rule(family).measures.first(where: { $0.measure == measure })!.table.thresholds
                    if values == current { continue }
                    do {
                        try policy.override(family, measure, thresholds: values)
                        signal.thresholds.append(AgentConfig.Signal.Threshold(family, measure, values))
                    } catch {
                        problem(path, "\(error), found \(show(thresholds))")
                    }
                }
            }
            t.markAllUsed()
        }
        // One order whatever the file's: families and measures as `BarFamily` and `SignalMeasure` list them.
        func rank(_ t: AgentConfig.Signal.Threshold) -> (Int, Int) {
            (BarFamily.allCases.firstIndex(of: t.family)!, SignalMeasure.allCases.firstIndex(of: t.measure)!)
        }
        signal.thresholds.sort { rank($0) < rank($1) }
    }

    func uplink(_ v: JSON, at path: String) -> UplinkSpec? {
        var spec: UplinkSpec?
        object(v, at: path) { o in
            guard let name = o.value("interface") else {
                problem(o.path("interface"), "missing; expected the uplink's interface name, like wwan0")
                return
            }
            var role: UplinkRole?
            if let v = o.value("role"), !v.isNull {
                role = v.stringValue.flatMap(UplinkRole.init(rawValue:))
                if role == nil {
                    let roles = UplinkRole.allCases.map(\.rawValue).joined(separator: ", ")
                    problem(o.path("role"), "expected one of \(roles) or null, found \(show(v))")
                }
            }
            if let interface = interfaceName(name, at: o.path("interface")) {
                spec = UplinkSpec(interface: interface, role: role)
            }
        }
        return spec
    }

    func probe(_ v: JSON, at path: String) -> AgentConfig.Probe? {
        var probe: AgentConfig.Probe?
        object(v, at: path) { o in
            var kind: AgentConfig.ProbeKind?
            if let k = o.value("kind") {
                kind = k.stringValue.flatMap(AgentConfig.ProbeKind.init(rawValue:))
                if kind == nil { problem(o.path("kind"), "expected tcp or dns, found \(show(k))") }
            } else {
                problem(o.path("kind"), "missing; expected tcp or dns")
            }
            var host: String?
            if let h = o.value("host") {
                if let s = h.stringValue, IPAddress(s) != nil || IPAddressText.isHostName(s) {
                    host = s
                } else {
                    problem(o.path("host"), "expected an IP address or host name, found \(show(h))")
                }
            } else {
                problem(o.path("host"), "missing; expected the endpoint to probe")
            }
            var port: Int?
            o.integer("port", in: 1...65535) { port = $0 }
            var timeout = 2.0
            o.number("timeout_seconds", in: 0.1...30, unit: "seconds") { timeout = $0 }
            var query = "."
            o.string("query", nonEmpty: true) { q in
                if kind != .dns {
                    problem(o.path("query"), "only for kind dns (a TCP probe sends no query)")
                } else if q == "." || IPAddressText.isHostName(q) {
                    query = q
                } else {
                    problem(o.path("query"), "expected \".\" or a domain name to ask for, found \(show(.string(q)))")
                }
            }
            if let kind, let host {
                probe = AgentConfig.Probe(kind: kind, host: host, port: port, timeoutSeconds: timeout, query: query)
            }
        }
        return probe
    }
}

final class ObjectReader {
    let reader: ConfigReader
    let base: String
    let members: [(String, JSON)]
    private var used = Set<String>()
    private var allUsed = false

    init(reader: ConfigReader, base: String, members: [(String, JSON)]) {
        self.reader = reader
        self.base = base
        self.members = members
    }

    func path(_ key: String) -> String { base.isEmpty ? key : base + "." + key }

    func value(_ key: String) -> JSON? {
        used.insert(key)
        return members.first(where: { $0.0 == key })?.1
    }

    func markAllUsed() { allUsed = true }

    func rejectUnknown() {
        guard !allUsed else { return }
        for (key, _) in members where !used.contains(key) {
            let known = used.sorted().joined(separator: ", ")
            reader.problem(path(key), "unknown key (expected one of: \(known))")
        }
    }

    func optionalObject(_ key: String, _ body: (ObjectReader) -> Void) {
        guard let v = value(key), !v.isNull else { return }
        reader.object(v, at: path(key), body)
    }

    func optionalArray(_ key: String, _ body: ([JSON]) -> Void) {
        guard let v = value(key), !v.isNull else { return }
        guard let items = v.arrayValue else {
            reader.problem(path(key), "expected an array, found \(v.typeName)")
            return
        }
        body(items)
    }

    func string(_ key: String, nonEmpty: Bool, _ set: (String) -> Void) {
        guard let v = value(key) else { return }
        guard let s = v.stringValue, !(nonEmpty && s.isEmpty) else {
            reader.problem(path(key), "expected a non-empty string, found \(reader.show(v))")
            return
        }
        set(s)
    }

    /// A path a daemon opens (`FilePathText`: absolute, no NUL, a file), with a required suffix when given.
    func filePath(
        _ key: String, what: String = FilePathText.expected, suffix: String? = nil, because: String? = nil,
        orNull: Bool = false, _ set: (String) -> Void
    ) {
        guard let v = value(key) else { return }
        var expected = what
        if let suffix { expected += " ending in \(suffix)" + (because.map { " (\($0))" } ?? "") }
        if orNull { expected += ", or null" }
        guard let s = v.stringValue else {
            reader.problem(path(key), "expected \(expected), found \(reader.show(v))")
            return
        }
        if let why = FilePathText.problem(s) {
            reader.problem(path(key), "expected \(expected), found \(reader.show(v)): \(why)")
        } else if let suffix, !s.hasSuffix(suffix) {
            reader.problem(path(key), "expected \(expected), found \(reader.show(v))")
        } else {
            set(s)
        }
    }

    /// An absolute directory path, or null (the feature off): no NUL, no "." or ".." component, at most `maxBytes`.
    /// A trailing "/" is dropped.
    func directoryPath(_ key: String, maxBytes: Int, because: String?, _ set: (String?) -> Void) {
        guard let v = value(key) else { return }
        if v.isNull {
            set(nil)
            return
        }
        let expected = "an absolute directory path of at most \(maxBytes) bytes\(because.map { " (\($0))" } ?? ""), or null"
        guard var s = v.stringValue else {
            reader.problem(path(key), "expected \(expected), found \(reader.show(v))")
            return
        }
        while s.count > 1 && s.hasSuffix("/") { s.removeLast() }
        let components = s.split(separator: "/")
        let why: String?
        if s.utf8.contains(0) { why = "contains U+0000 (NUL)" }
        else if !s.hasPrefix("/") { why = "not an absolute path" }
        else if s == "/" { why = "the root directory" }
        else if s.utf8.count > maxBytes { why = "\(s.utf8.count) bytes" }
        else if components.contains(where: { $0 == "." || $0 == ".." }) { why = "a \".\" or \"..\" component" }
        else if components.contains(where: { $0.utf8.count > 255 }) { why = "a component longer than 255 bytes" }
        else { why = nil }
        if let why {
            reader.problem(path(key), "expected \(expected), found \(reader.show(v)): \(why)")
        } else {
            set(s)
        }
    }

    func bool(_ key: String, _ set: (Bool) -> Void) {
        guard let v = value(key) else { return }
        guard let b = v.boolValue else {
            reader.problem(path(key), "expected true or false, found \(reader.show(v))")
            return
        }
        set(b)
    }

    func number(_ key: String, in range: ClosedRange<Double>, unit: String, _ set: (Double) -> Void) {
        guard let v = value(key) else { return }
        guard let d = v.doubleValue, range.contains(d) else {
            let lo = JSON.format(range.lowerBound)
            let hi = JSON.format(range.upperBound)
            reader.problem(path(key), "expected a number of \(unit) from \(lo) to \(hi), found \(reader.show(v))")
            return
        }
        set(d)
    }

    func integer(_ key: String, in range: ClosedRange<Int>, _ set: (Int) -> Void) {
        guard let v = value(key) else { return }
        guard let i = v.intValue, i >= Int64(range.lowerBound), i <= Int64(range.upperBound) else {
            reader.problem(path(key), "expected an integer from \(range.lowerBound) to \(range.upperBound), found \(reader.show(v))")
            return
        }
        set(Int(i))
    }
}

/// Syntax check for host-name text (no resolution, no I/O); addresses are checked with `IPAddress`.
public enum IPAddressText {
    /// RFC 1123 host name: labels of 1-63 letters, digits and hyphens, not starting or ending with a hyphen;
    /// at most 253 characters; an optional trailing dot.
    public static func isHostName(_ s: String) -> Bool {
        var name = Substring(s)
        if name.hasSuffix(".") { name = name.dropLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }
}

// MARK: - Writing (for the diagnostics bundle and `--print-config`)

extension AgentConfig {
    public var json: JSON {
        var members: [(String, JSON)] = [
            ("schema", .int(AgentConfig.schemaVersion)),
            (
                "report",
                .object([
                    ("path", .string(report.path)), ("interval_seconds", .double(report.intervalSeconds)),
                    ("rotate_bytes", .int(report.rotateBytes)), ("rotate_keep", .int(report.rotateKeep)),
                ])
            ),
            (
                "changes",
                .object([
                    ("hold_down_seconds", .double(changes.holdDownSeconds)),
                    ("bar_hysteresis_db", .double(changes.barHysteresisDB)),
                ])
            ),
            ("signal", signalJSON),
            ("targets", .array(targets.map(Self.targetJSON))),
            (
                "modems",
                .object([
                    ("enabled", .bool(modems.enabled)),
                    (
                        "ports",
                        .array(
                            modems.ports.map {
                                .object([
                                    ("path", .string($0.path)), ("protocol", .optional($0.protocol?.rawValue)),
                                    ("interface", .optional($0.interface)), ("mux_id", .optional($0.muxID)),
                                ])
                            })
                    ),
                    ("request_timeout_seconds", .double(modems.requestTimeoutSeconds)),
                    ("poll_interval_seconds", .double(modems.pollIntervalSeconds)),
                    ("worker", .bool(modems.worker)),
                    ("access", .string(modems.access.rawValue)),
                    ("session_requery_seconds", .double(modems.sessionRequerySeconds)),
                ])
            ),
            (
                "wifi",
                .object([
                    ("enabled", .bool(wifi.enabled)), ("interfaces", .array(wifi.interfaces.map(JSON.string))),
                    ("poll_interval_seconds", .double(wifi.pollIntervalSeconds)),
                ])
            ),
            ("interface_kinds", .object(interfaceKinds.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.rawValue)) })),
            ("interface_underlays", .object(interfaceUnderlays.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("clat", .object([("plat_prefix", .string(platPrefix.description))])),
            (
                "uplinks",
                .array(uplinks.map { .object([("interface", .string($0.interface)), ("role", .optional($0.role?.rawValue))]) })
            ),
        ]
        if let probe {
            var p: [(String, JSON)] = [("kind", .string(probe.kind.rawValue)), ("host", .string(probe.host)),
                                       ("port", .int(probe.port)), ("timeout_seconds", .double(probe.timeoutSeconds))]
            if probe.kind == .dns { p.append(("query", .string(probe.query))) }
            members.append(("probe", .object(p)))
        } else {
            members.append(("probe", .null))
        }
        members.append(("validation", validation.json))
        members.append(("prometheus", .object([("textfile", .optional(prometheusTextfile))])))
        members.append(("diag", .object([("report_lines", .int(diagReportLines))])))
        members.append((
            "api",
            .object([
                ("state_directory", .optional(api.stateDirectory)), ("hooks_directory", .optional(api.hooksDirectory)),
                ("hook_timeout_seconds", .double(api.hookTimeoutSeconds)), ("max_clients", .int(api.maxClients)),
                ("max_clients_per_uid", .int(api.maxClientsPerUID)),
            ])))
        members.append(("log_level", .string(logLevel.rawValue)))
        return .object(members)
    }

    /// The profile and every threshold it uses, replaced ones included: what the bars are computed with.
    var signalJSON: JSON {
        let policy = signalPolicy
        let families: [(String, JSON)] = BarFamily.allCases.map { family in
            let measures = policy.rule(family).measures.map { ($0.measure.rawValue, JSON.array($0.table.thresholds.map(JSON.double))) }
            return (family.rawValue, .object(measures))
        }
        return .object([("profile", .string(signal.profile.rawValue)), ("thresholds", .object(families))])
    }

    static func targetJSON(_ t: Target) -> JSON {
        switch t {
        case .defaultRoute, .linkLocal: return .object([("kind", .string(t.kind))])
        case let .address(a): return .object([("kind", .string("address")), ("value", .string(a))])
        case let .host(h): return .object([("kind", .string("host")), ("value", .string(h))])
        }
    }
}
