// `reach status`: one answer, now. Text for people, JSON (schema 1) for machines.

import GatewayReach
import ReachAgent
import ReachCommandLine

/// --host / --address / --link-local / --resolve-timeout, shared by `status` and `watch`.
struct TargetOptions: Sendable {
    static let specs = [
        OptionSpec("host", .value("NAME"), help: "Ask about a host name (resolved asynchronously, bounded by --resolve-timeout)."),
        OptionSpec("address", .value("IP"), help: "Ask about an IPv4 or IPv6 address."),
        OptionSpec("link-local", help: "Ask about the IPv4 link-local network 169.254.0.0/16 (YYReachability's local WiFi)."),
        OptionSpec("resolve-timeout", .value("SECONDS"), help: "Seconds to wait for a host name to resolve (default \(Int(Defaults.resolveTimeoutSeconds)))."),
    ]

    /// nil when no target option was given (the default route, or the configured targets for `watch`).
    var target: Target?
    var resolveTimeout: Double

    init(_ p: ParsedArguments) throws(UsageError) {
        let host = p.value("host")
        let address = p.value("address")
        if [host != nil, address != nil, p.flag("link-local")].filter({ $0 }).count > 1 {
            throw UsageError("--host, --address and --link-local are mutually exclusive")
        }
        if let address {
            guard IPAddress(address) != nil else { throw UsageError("--address '\(address)' is not an IPv4 or IPv6 address") }
            target = .address(address)
        } else if let host {
            if IPAddress(host) != nil {
                target = .address(host)
            } else {
                // The rule the config's targets use (RFC 1123): getaddrinfo would only fail later, and slower.
                guard IPAddressText.isHostName(host) else { throw UsageError("--host '\(host)' is not a valid host name") }
                target = .host(host)
            }
        } else if p.flag("link-local") {
            target = .linkLocal
        }
        resolveTimeout = try CommandLineParser.seconds(p, "resolve-timeout", default: Defaults.resolveTimeoutSeconds, max: 60)
    }
}

extension Reach {
    struct Status: Subcommand {
        static let spec = CommandSpec(
            name: "status",
            abstract: "Print whether, and over what, packets can leave now.",
            discussion: """
                Without a target option the default route is asked (IPv4 and IPv6). The configuration (--config, \
                else \(AgentConfig.defaultPath) when it exists) supplies interface kinds, modem ports and the \
                modem timeout; options override it (a --modem or --wifi given here is read even when the \
                configuration turns that source off).
                When an agent runs (its socket in api.state_directory answers), the modem and WiFi readings are \
                taken from it and no modem is opened; the route is still resolved here. --direct reads everything \
                here; so do --modem, --wifi and --show-identifiers, and a stale or dead agent (the output says why).
                With --validate, the configured validation probes run once through each reachable uplink, each \
                within validation.timeout_seconds; without it nothing is sent. Validation never changes the exit \
                status: see `usable` and `validated`.
                Exit status: 0 reachable, 1 not reachable, 64 bad usage, 69 the route could not be determined, \
                78 bad configuration.
                """,
            options: [OptionSpec("json", help: "Print one JSON object (schema 1) instead of text.")] + TargetOptions.specs + [
                OptionSpec("direct", help: "Read modems and WiFi here even when an agent runs."),
            ] + SourceOptions.specs + [
                OptionSpec("show-identifiers", help: "Show IMEI, IMSI, ICCID and phone numbers (hidden by default)."),
                OptionSpec("validate", help: "Also run the configured validation probes (validation.probes) once through each reachable uplink."),
            ])

        var json: Bool
        var targetOptions: TargetOptions
        var sources: SourceOptions
        var showIdentifiers: Bool
        var validate: Bool
        var direct: Bool

        init(_ p: ParsedArguments) throws(UsageError) {
            json = p.flag("json")
            direct = p.flag("direct")
            validate = p.flag("validate")
            targetOptions = try TargetOptions(p)
            sources = try SourceOptions(p)
            showIdentifiers = p.flag("show-identifiers")
        }

        func run() async -> Int32 {
            guard let cfg = sources.configuration() else { return ExitStatus.config }
            let request = StatusRequest(
                ReachabilityOptions(config: cfg, worker: Reach.modemWorker(cfg)),
                target: targetOptions.target ?? .defaultRoute, resolveTimeout: .seconds(targetOptions.resolveTimeout))
            if validate && cfg.validation.probes.isEmpty {
                printError("reach status: error: --validate needs probes in the configuration's validation.probes "
                    + "(reach has no default target)\nSee 'reach status --help'.")
                return ExitStatus.usage
            }
            var (snapshot, readings, _) = await AgentClient.status(
                request, socketPath: cfg.api.socketPath, direct: directReason(request, cfg))
            if validate {
                snapshot = await GatewayReach.validate(
                    snapshot, probes: cfg.validation.probes, timeout: cfg.validation.policy.timeout)
            }
            if json {
                var out = snapshot.json(showIdentifiers: showIdentifiers)
                if case var .object(m) = out {
                    m.append(("readings", readings.json))
                    out = .object(m)
                }
                print(out.serialized())
            } else {
                print(SnapshotText.render(snapshot))
                print("  " + readings.text)
            }
            if snapshot.status == .unknown { return ExitStatus.unavailable }
            return snapshot.reachable ? ExitStatus.ok : ExitStatus.notReachable
        }
    }
}

extension Reach.Status {
    /// Why the running agent's readings are not asked for, or nil when they may be.
    func directReason(_ request: StatusRequest, _ cfg: AgentConfig) -> String? {
        if direct { return "--direct" }
        if let why = sources.agentCannotAnswer { return why }
        if showIdentifiers { return "--show-identifiers: the agent publishes no identifiers" }
        if !request.readModems && !request.readWiFi { return "no modem or WiFi reading asked for" }
        if cfg.api.socketPath == nil { return "api.state_directory is null" }
        return nil
    }
}

/// Loads the configuration (the default file only when it exists); a bad one prints every problem (key path and
/// what was expected) and returns nil: exit 78.
func loadConfig(_ path: String?) -> AgentConfig? {
    switch ConfigFile.load(path) {
    case let .success(c):
        return c
    case let .failure(e):
        let file = path ?? AgentConfig.defaultPath
        for p in e.problems { printError("reach: \(file): \(p)") }
        return nil
    }
}
