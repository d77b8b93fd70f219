// The agent's configuration: a pure model, read from JSON with strict validation.
//
// JSON, not TOML: ReachCore already carries a strict parser with line/column errors, so the config costs no extra
// parser in the binary. Every key is documented in README.md ("Configuration") and in config/reach.json.
// Every problem names the key path ("report.interval_seconds", "targets[1].kind") and what was expected; unknown
// keys are errors too, so a typo never silently falls back to a default.

/// The whole agent configuration. Every member has a default; an empty object `{}` is a valid config.
public struct AgentConfig: Sendable, Equatable {
    public static let schemaVersion = 1
    public static let defaultPath = "/etc/reach/reach.json"

    public struct Report: Sendable, Equatable {
        /// The JSON-lines report log.
        public var path: String = "/var/log/reach/reach.jsonl"
        /// A periodic line is written every interval (and a change line at every change).
        public var intervalSeconds: Double = 60
        /// The log is rotated before a line would take it past this size.
        public var rotateBytes: Int = 1 << 20
        /// Rotated files kept (reach.jsonl.1 … .N); 0 keeps none.
        public var rotateKeep: Int = 5
        public init() {}
    }

    /// Change detection: see `ChangePolicy`.
    public struct Changes: Sendable, Equatable {
        public var holdDownSeconds: Double = 5
        public var barHysteresisDB: Double = 3
        public init() {}
    }


    public struct Modems: Sendable, Equatable {
        public var enabled = true
        /// Ports to open; empty: those that discovery finds in sysfs.
        public var ports: [ModemPortSpec] = []
        public var requestTimeoutSeconds: Double = 5
        /// The poll used only when a modem sends no indications.
        public var pollIntervalSeconds: Double = 60
        /// How the control ports are opened: through qmi-proxy/mbim-proxy (auto, proxy) or directly.
        public var access: ModemAccess = .auto
        /// How often the data session is asked again although indications announce it: some firmware sends them
        /// late or never (README "Data session").
        public var sessionRequerySeconds: Double = 10
        public init() {}
    }

    public struct WiFi: Sendable, Equatable {
        public var enabled = true
        /// Interfaces to watch; empty: all.
        public var interfaces: [String] = []
        /// The poll used only when nl80211 events are unavailable.
        public var pollIntervalSeconds: Double = 30
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

    public var report = Report()
    public var changes = Changes()
    /// What the agent watches; each target has its own snapshot, change detection and report lines.
    public var targets: [Target] = [.defaultRoute]
    public var modems = Modems()
    public var wifi = WiFi()
    /// Interface kind overrides by interface name, e.g. `{"ppp0": "wwan"}` for a modem behind pppd.
    public var interfaceKinds: [String: InterfaceKind] = [:]
    public var probe: Probe?
    /// Path of a Prometheus textfile (node_exporter's textfile collector), or nil for none.
    public var prometheusTextfile: String?
    public var logLevel: LogLevel = .info
    /// Report lines a diagnostics bundle carries.
    public var diagReportLines = 200

    public init() {}

    public var changePolicy: ChangePolicy {
        ChangePolicy(holdDown: .milliseconds(Int64((changes.holdDownSeconds * 1000).rounded())),
                     barHysteresisDB: changes.barHysteresisDB)
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
        let json: JSON
        do {
            json = try JSON.parse(text)
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
                rep.string("path", nonEmpty: true) { c.report.path = $0 }
                rep.number("interval_seconds", in: 0.001...86_400, unit: "seconds") { c.report.intervalSeconds = $0 }
                rep.integer("rotate_bytes", in: 4096...(1 << 40)) { c.report.rotateBytes = $0 }
                rep.integer("rotate_keep", in: 0...100) { c.report.rotateKeep = $0 }
            }
            o.optionalObject("changes") { ch in
                ch.number("hold_down_seconds", in: 0...3600, unit: "seconds") { c.changes.holdDownSeconds = $0 }
                ch.number("bar_hysteresis_db", in: 0...20, unit: "dB") { c.changes.barHysteresisDB = $0 }
            }
            o.optionalArray("targets") { items in
                var targets: [Target] = []
                for (i, item) in items.enumerated() {
                    if let t = r.target(item, at: o.path("targets") + "[\(i)]") { targets.append(t) }
                }
                if items.isEmpty { r.problem(o.path("targets"), "expected at least one target") }
                c.targets = targets
            }
            o.optionalObject("modems") { m in
                m.bool("enabled") { c.modems.enabled = $0 }
                m.optionalArray("ports") { items in
                    c.modems.ports = items.enumerated().compactMap { i, item in
                        r.modemPort(item, at: m.path("ports") + "[\(i)]")
                    }
                }
                m.number("request_timeout_seconds", in: 0.1...120, unit: "seconds") {
                    c.modems.requestTimeoutSeconds = $0
                }
                m.number("poll_interval_seconds", in: 1...86_400, unit: "seconds") { c.modems.pollIntervalSeconds = $0 }
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
                    c.wifi.interfaces = items.enumerated().compactMap { i, item in
                        r.interfaceName(item, at: w.path("interfaces") + "[\(i)]")
                    }
                }
                w.number("poll_interval_seconds", in: 1...86_400, unit: "seconds") { c.wifi.pollIntervalSeconds = $0 }
            }
            o.optionalObject("interface_kinds") { k in
                for (name, value) in k.members {
                    let path = k.path(name)
                    guard r.isInterfaceName(name) else {
                        r.problem(path, "expected an interface name (1-15 characters, no '/' or spaces) as the key")
                        continue
                    }
                    let kinds = InterfaceKind.allCases.map(\.rawValue)
                    guard let s = value.stringValue, let kind = InterfaceKind(rawValue: s) else {
                        r.problem(path, "expected one of \(kinds.joined(separator: ", ")), found \(r.show(value))")
                        continue
                    }
                    c.interfaceKinds[name] = kind
                }
                k.markAllUsed()
            }
            if let v = o.value("probe"), !v.isNull {
                c.probe = r.probe(v, at: o.path("probe"))
            }
            o.optionalObject("prometheus") { p in
                if let v = p.value("textfile"), !v.isNull {
                    if let s = v.stringValue, s.hasPrefix("/"), s.hasSuffix(".prom") {
                        c.prometheusTextfile = s
                    } else {
                        r.problem(p.path("textfile"), "expected an absolute path ending in .prom (node_exporter reads "
                            + "only *.prom), or null, found \(r.show(v))")
                    }
                }
            }
            o.optionalObject("diag") { d in
                d.integer("report_lines", in: 0...100_000) { c.diagReportLines = $0 }
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
private final class ConfigReader {
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

    func isInterfaceName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 15 && !s.contains("/") && !s.contains(" ") && s != "." && s != ".."
    }

    func interfaceName(_ v: JSON, at path: String) -> String? {
        guard let s = v.stringValue, isInterfaceName(s) else {
            problem(path, "expected an interface name (1-15 characters, no '/' or spaces), found \(show(v))")
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
            o.string("path", nonEmpty: true) { s in
                if s.hasPrefix("/") { devicePath = s } else { self.problem(o.path("path"), "expected an absolute device path, found \"\(s)\"") }
            }
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
            o.string("query", nonEmpty: true) { query = $0 }
            if let kind, let host {
                probe = AgentConfig.Probe(kind: kind, host: host, port: port, timeoutSeconds: timeout, query: query)
            }
        }
        return probe
    }
}

private final class ObjectReader {
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
        ]
        if let probe {
            var p: [(String, JSON)] = [("kind", .string(probe.kind.rawValue)), ("host", .string(probe.host)),
                                       ("port", .int(probe.port)), ("timeout_seconds", .double(probe.timeoutSeconds))]
            if probe.kind == .dns { p.append(("query", .string(probe.query))) }
            members.append(("probe", .object(p)))
        } else {
            members.append(("probe", .null))
        }
        members.append(("prometheus", .object([("textfile", .optional(prometheusTextfile))])))
        members.append(("diag", .object([("report_lines", .int(diagReportLines))])))
        members.append(("log_level", .string(logLevel.rawValue)))
        return .object(members)
    }

    static func targetJSON(_ t: Target) -> JSON {
        switch t {
        case .defaultRoute, .linkLocal: return .object([("kind", .string(t.kind))])
        case let .address(a): return .object([("kind", .string("address")), ("value", .string(a))])
        case let .host(h): return .object([("kind", .string("host")), ("value", .string(h))])
        }
    }
}
