// `reach agent` and `reach watch`: the hub and its runner built from a configuration.

import GatewayReach
import Glibc
import ReachLog

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

/// The pieces of a running agent, for `reach agent`, `reach watch` and tests: the hub (one `Reachability` per
/// target, and the outputs) and the runner that runs it.
public struct AgentAssembly {
    public let hub: AgentHub
    public let runner: AgentRunner

    /// - Parameters:
    ///   - log / prometheus: the report outputs (nil for `reach watch`).
    ///   - api: run the state file, the Varlink socket and the hooks that `config.api` asks for (`reach agent`).
    ///   - route / modems / wifi: the sources; nil picks the production one for the config.
    ///   - modemWorker: how a production modem source starts its worker process while `modems.worker` is true (nil:
    ///     in this process); see `ModemReadOptions.worker`.
    ///   - resolveTimeout: how long one lookup of a host target may take.
    ///   - validationRunner / validationRandom: validation's rounds and its schedule's jitter (tests script them; nil:
    ///     the real probes and the system generator).
    ///   - stopSignals: the signals that stop the agent gracefully (tests pass none and trigger the stop themselves).
    ///   - logLevel: what a reload's `log_level` changes.
    public init(
        config: AgentConfig, configPath: String?, log: ReportLog?, prometheus: PrometheusTextfile?, onLine: LineHandler?,
        api: Bool = false, clock: any AgentClock, wall: @escaping @Sendable () -> Timestamp = { .now() },
        route: (any RouteSource)? = nil, modems: [any ModemSource]? = nil, wifi: (any WiFiSource)? = nil,
        modemWorker: ModemWorkerLaunch? = nil, resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds),
        validationRunner: ValidationRoundRunner? = nil, validationRandom: (@Sendable () -> Double)? = nil,
        reloadOnSIGHUP: Bool, stopSignals: [Int32] = [SIGTERM, SIGINT], logLevel: LogLevelSwitch? = nil, logger: Logger
    ) {
        let system = ReachabilitySources.system
        // Every target's instance asks for the validation source: one scope for this agent's, so that they share it.
        let scope = "agent:\(UInt64.random(in: 0...UInt64.max))"
        let validation: ReachabilitySources.ValidationFactory = { options, clock, wall, logger in
            ProbeValidationSource(
                settings: options.validation, clock: clock, wall: wall, runner: validationRunner, random: validationRandom,
                scope: scope, logger: logger)
        }
        let sources = ReachabilitySources(
            route: { options in route ?? system.route(options) },
            modems: { options, clock, logger in modems ?? system.modems(options, clock, logger) },
            wifi: { options in wifi ?? system.wifi(options) }, validation: validation)
        let startAPI: @Sendable (AgentConfig, Timestamp) -> AgentOutputs = { config, started in
            AgentOutputs.start(config: config, logger: logger, started: started)
        }
        let hub = AgentHub(
            config: config, log: log, prometheus: prometheus, onLine: onLine, apiOutputs: api ? startAPI : nil,
            clock: clock, wall: wall, sources: sources, modemWorker: modemWorker, resolveTimeout: resolveTimeout,
            logLevel: logLevel, logger: logger)
        self.hub = hub
        var reload: (@Sendable () async -> Void)? = nil
        if reloadOnSIGHUP {
            reload = { @Sendable in await ReloadService.reload(configPath: configPath, hub: hub, logger: logger) }
        }
        runner = AgentRunner(hub: hub, reload: reload, shutdownSignals: stopSignals)
    }

    /// Runs until SIGTERM or SIGINT (graceful: the stop lines are written, within 10 s).
    public func run() async {
        await runner.run()
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
