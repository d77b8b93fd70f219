// `reach agent` and `reach watch`: the ServiceGroup built from a configuration.

import GatewayReach
import Glibc
import Logging
import ServiceLifecycle

public enum ConfigFile {
    /// The largest config file read (a full one with every key is about 1 KiB).
    public static let limit = 1 << 20

    /// Reads and validates a config file. With no path, /etc/reach/reach.json when it exists, else the defaults.
    /// The file is read through `BoundedRead`: a FIFO, a device or a directory is an error at once (never a blocked
    /// `reach`), and so is a file over 1 MiB; its bytes go to the parser as they are, so invalid UTF-8 is an error
    /// with its line and column. Symbolic links are followed: configuration management links configs into /etc.
    public static func load(_ path: String?) -> Result<AgentConfig, ConfigError> {
        let file = path ?? AgentConfig.defaultPath
        if path == nil && access(file, F_OK) != 0 { return .success(AgentConfig()) }
        let bytes: [UInt8]
        switch BoundedRead.bytes(file, limit: limit, links: .follow) {
        case let .success(b): bytes = b
        case let .failure(e): return .failure(ConfigError(key: "", "cannot read: \(e.call): \(e.reason)"))
        }
        do {
            return .success(try AgentConfig.parse(bytes: bytes))
        } catch {
            return .failure(error)
        }
    }
}

/// Reads a whole (small) text file through `BoundedRead` (a regular file only, links followed); fails beyond `limit`
/// bytes. Bytes that are not UTF-8 are replaced (for files that are only searched, such as resolv.conf).
public func readTextFile(_ path: String, limit: Int) -> Result<String, SystemError> {
    BoundedRead.bytes(path, limit: limit, links: .follow).map { String(decoding: $0, as: UTF8.self) }
}

/// The pieces of a running agent, for `reach agent`, `reach watch` and tests.
public struct AgentAssembly {
    public let hub: StatusHub
    public let services: [ServiceGroupConfiguration.ServiceConfiguration]

    /// - Parameters:
    ///   - log / prometheus: the report outputs (nil for `reach watch`).
    ///   - route / modems / wifi: the sources; nil picks the production one for the config.
    ///   - modemWorker: run each production modem source's I/O in a worker process started this way (nil: in this
    ///     process); see `ModemReadOptions.worker`.
    public init(
        config: AgentConfig, configPath: String?, log: ReportLog?, prometheus: PrometheusTextfile?, onLine: LineHandler?,
        onState: StateHandler? = nil, clock: any AgentClock, wall: @escaping @Sendable () -> Timestamp = { .now() },
        route: (any RouteSource)? = nil, modems: [any ModemSource]? = nil, wifi: (any WiFiSource)? = nil,
        modemWorker: ModemWorkerLaunch? = nil, validationRunner: ValidationRoundRunner? = nil,
        validationRandom: (@Sendable () -> Double)? = nil, reloadOnSIGHUP: Bool, logger: Logger
    ) {
        let routeSource =
            route
            ?? KernelRouteSource(interfaceOverrides: config.interfaceKinds, uplinks: config.uplinks, underlays: config.underlayConfig)
        var modemSources: [any ModemSource] = []
        if config.modems.enabled {
            if let modems {
                modemSources = modems
            } else {
                var read = ModemReadOptions(
                    requestTimeout: .seconds(config.modems.requestTimeoutSeconds), access: config.modems.access)
                read.logger = logger
                read.signalPolicy = config.signalPolicy
                read.worker = modemWorker
                let interval = Duration.seconds(config.modems.pollIntervalSeconds)
                let monitorOptions = ModemMonitorOptions(
                    read: read, pollInterval: interval, sessionRequery: .seconds(config.modems.sessionRequerySeconds))
                // One monitor per modem: a slow or vanished modem does not hold up the others. Configured ports are
                // watched as named; without them, discovery follows modems that come, go or re-enumerate.
                if config.modems.ports.isEmpty {
                    modemSources = [DiscoveredModemSource(options: monitorOptions, interval: interval, clock: clock)]
                } else {
                    modemSources = config.modems.ports.map { IndicationModemSource(spec: $0, options: monitorOptions) }
                }
            }
        }
        var wifiSource: (any WiFiSource)?
        if config.wifi.enabled {
            wifiSource =
                wifi ?? NL80211WiFiSource(interfaces: config.wifi.interfaces, pollInterval: .seconds(config.wifi.pollIntervalSeconds))
        }

        var expecting: Set<String> = ["route"]
        for m in modemSources { expecting.insert("modem:" + m.name) }
        if wifiSource != nil { expecting.insert("wifi") }
        if config.validation.enabled { expecting.insert("validation") }
        // The first lines wait for every source's first answer, but never longer than one modem's whole first read
        // (three request timeouts, ModemReadOptions.readTimeout) plus a second…
        var grace = Duration.seconds(config.modems.requestTimeoutSeconds * 3 + 1)
        // ...and, with validation on, never shorter than one round (each probe, and an http name lookup, one timeout).
        if config.validation.enabled {
            let steps = config.validation.probes.count + config.validation.probes.filter {
                if case let .http(url, _) = $0 { return url.address == nil } else { return false }
            }.count
            grace = max(grace, config.validation.policy.timeout * steps + .seconds(1))
        }
        let hub = StatusHub(
            config: config, expecting: expecting, startupGrace: grace, log: log, prometheus: prometheus, onLine: onLine,
            onState: onState, clock: clock, wall: wall, logger: logger)
        self.hub = hub

        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: ReporterService(hub: hub, clock: clock))
        ]
        if reloadOnSIGHUP {
            services.append(.init(service: ReloadService(configPath: configPath, hub: hub, logger: logger)))
        }
        let resolveEvery = Duration.seconds(config.report.intervalSeconds)
        services.append(
            .init(
                service: RouteService(
                    source: routeSource, hub: hub, targets: config.targets, clock: clock, resolveEvery: resolveEvery,
                    logger: logger)))
        for m in modemSources {
            var l = logger
            l[metadataKey: "modem.source"] = "\(m.name)"
            services.append(.init(service: ModemService(source: m, hub: hub, clock: clock, logger: l)))
        }
        if let wifiSource {
            services.append(.init(service: WiFiService(source: wifiSource, hub: hub, clock: clock, logger: logger)))
        }
        if config.validation.enabled {
            services.append(
                .init(
                    service: ValidationService(
                        hub: hub, settings: config.validation, clock: clock, wall: wall,
                        random: validationRandom ?? { .random(in: 0..<1) }, runner: validationRunner, logger: logger)))
        }
        self.services = services
    }

    /// Runs until SIGTERM or SIGINT (graceful: the stop lines are written) or a service fails.
    public func run(logger: Logger) async throws {
        var groupConfig = ServiceGroupConfiguration(services: services, logger: logger)
        groupConfig.gracefulShutdownSignals = [.sigterm, .sigint]
        groupConfig.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: groupConfig)
        try await group.run()
    }
}

extension AgentConfig.LogLevel {
    public var loggerLevel: Logger.Level {
        switch self {
        case .trace: return .trace
        case .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error: return .error
        case .critical: return .critical
        }
    }
}
