// The options every command that reads modems and WiFi takes (`status`, `watch`, `signal`, `diag`): parsed in one
// place, so that each means the same in every command, and laid over the configuration in one place.

import GatewayReach
import ReachAgent
import ReachCommandLine

struct SourceOptions: Sendable {
    static let specs = [
        OptionSpec(
            "modem", .repeating(ModemPortArgument.syntax),
            help: "A modem control port, with its protocol and the network interface it carries where sysfs cannot tell them (repeatable; default: configured or discovered)."),
        OptionSpec("no-modems", help: "Do not ask any modem."),
        OptionSpec("modem-timeout", .value("SECONDS"), help: "Seconds to wait for each modem request (default \(Int(Defaults.modemRequestTimeoutSeconds)))."),
        ModemAccessOption.spec,
        OptionSpec("wifi", .value("IFACE"), help: "Read only this WiFi interface."),
        OptionSpec("no-wifi", help: "Do not read WiFi state."),
        OptionSpec("config", .value("FILE"), help: "The configuration file (default: \(AgentConfig.defaultPath) when it exists)."),
    ]

    /// The ports named by --modem, completed from sysfs; nil when none was named.
    var modems: [ModemPortSpec]?
    var noModems: Bool
    var modemTimeout: Double?
    var modemAccess: ModemAccess?
    var wifi: String?
    var noWiFi: Bool
    var config: String?

    /// `discovery` completes a --modem that leaves out its protocol or network interface (tests point it at a
    /// fake sysfs); a protocol it cannot find is a usage error naming where it looked.
    init(_ p: ParsedArguments, discovery: ModemDiscovery = ModemDiscovery()) throws(UsageError) {
        noModems = p.flag("no-modems")
        noWiFi = p.flag("no-wifi")
        config = try configOption(p)
        wifi = try CommandLineParser.checked(p, "wifi", expected: InterfaceName.expected, InterfaceName.problem)
        if noModems && !p.values("modem").isEmpty { throw UsageError("--modem and --no-modems are mutually exclusive") }
        if noWiFi && wifi != nil { throw UsageError("--wifi and --no-wifi are mutually exclusive") }
        modemTimeout = p.value("modem-timeout") == nil
            ? nil : try CommandLineParser.seconds(p, "modem-timeout", default: Defaults.modemRequestTimeoutSeconds, max: 120)
        modemAccess = try ModemAccessOption.parse(p)
        if noModems && modemAccess != nil { throw UsageError("--modem-access and --no-modems are mutually exclusive") }
        var named: [ModemPortSpec] = []
        for text in p.values("modem") { named.append(try Self.modemPort(text, discovery: discovery)) }
        modems = named.isEmpty ? nil : named
    }

    /// One --modem: its syntax checked, then what it leaves out asked of sysfs. Without a protocol the port must
    /// be a kernel node whose driver says it; a network interface sysfs cannot tell stays unknown (the config or
    /// the route may still name it). A bare path whose node does not exist is a modem unplugged, not bad usage: it
    /// is read like any port (without a protocol, as a configured port may be) and its state says it is absent.
    /// `PATH:WORD` on a missing node stays an error: WORD may be a netdev or a mistyped protocol (`:at`), and
    /// nothing can tell which while the modem is away.
    static func modemPort(_ text: String, discovery: ModemDiscovery) throws(UsageError) -> ModemPortSpec {
        let spec: ModemPortSpec
        switch ModemPortArgument.spec(text) {
        case let .success(s): spec = s
        case let .failure(problem): throw UsageError("--modem '\(text)': \(problem)")
        }
        guard spec.protocol == nil || spec.interface == nil else { return spec }
        let found = discovery.lookUp(spec)
        guard found.spec.protocol != nil || (found.nodeMissing && spec.interface == nil) else {
            throw UsageError(
                "--modem '\(text)': no protocol given and sysfs does not tell it (\(found.lookedAt)); "
                    + "name it as \(spec.path):qmi or \(spec.path):mbim")
        }
        return found.spec
    }

    /// The configuration with these options laid over it. A port or interface named here is read even when the
    /// configuration turns that source off.
    func apply(to cfg: inout AgentConfig) {
        if let modems {
            cfg.modems.ports = modems
            cfg.modems.enabled = true
        }
        if noModems { cfg.modems.enabled = false }
        if let modemTimeout { cfg.modems.requestTimeoutSeconds = modemTimeout }
        if let modemAccess { cfg.modems.access = modemAccess }
        if let wifi {
            cfg.wifi.interfaces = [wifi]
            cfg.wifi.enabled = true
        }
        if noWiFi { cfg.wifi.enabled = false }
    }

    /// The configuration file with these options laid over it, or nil when it is bad (its problems printed).
    func configuration() -> AgentConfig? {
        guard var cfg = loadConfig(config) else { return nil }
        apply(to: &cfg)
        return cfg
    }

    /// Why a running agent's readings cannot answer for these options (it reads what its own configuration says),
    /// or nil when they can.
    var agentCannotAnswer: String? {
        if modems != nil || wifi != nil { return "--modem or --wifi names what to read" }
        if modemAccess != nil { return "--modem-access says how to open the modems" }
        return nil
    }
}

/// --modem-access: how modem ports are opened (overrides `modems.access`).
enum ModemAccessOption {
    static let spec = OptionSpec(
        "modem-access", .value("auto|proxy|direct"),
        help: "Open modems through qmi-proxy/mbim-proxy as ModemManager does (auto, the default: directly only when no proxy can be started; proxy: always) or exclusively (direct).")

    static func parse(_ p: ParsedArguments) throws(UsageError) -> ModemAccess? {
        guard let text = p.value("modem-access") else { return nil }
        guard let access = ModemAccess(rawValue: text) else {
            throw UsageError("--modem-access must be auto, proxy or direct, got '\(text)'")
        }
        return access
    }
}
