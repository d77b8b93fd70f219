// `reach agent` and `reach watch`: the ServiceGroup built from a configuration.

import GatewayReach
import Glibc
import Logging
import ServiceLifecycle

public enum ConfigFile {
    /// Reads and validates a config file. With no path, /etc/reach/reach.json when it exists, else the defaults.
    public static func load(_ path: String?) -> Result<AgentConfig, ConfigError> {
        let file = path ?? AgentConfig.defaultPath
        if path == nil && access(file, F_OK) != 0 { return .success(AgentConfig()) }
        let text: String
        switch readTextFile(file, limit: 1 << 20) {
        case let .success(t): text = t
        case let .failure(e): return .failure(ConfigError(key: "", "cannot read \(file): \(e)"))
        }
        do {
            return .success(try AgentConfig.parse(text))
        } catch {
            return .failure(error)
        }
    }
}

/// Reads a whole (small) text file; fails beyond `limit` bytes.
public func readTextFile(_ path: String, limit: Int) -> Result<String, SystemError> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 { return .failure(SystemError("open", errno: errno)) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16384)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            return .failure(SystemError("read", errno: errno))
        }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
        if bytes.count > limit { return .failure(SystemError("read (file larger than \(limit) bytes)", errno: EFBIG)) }
    }
    return .success(String(decoding: bytes, as: UTF8.self))
}

/// The pieces of a running agent, for `reach agent`, `reach watch` and tests: the hub (one `Reachability` per
/// target, and the outputs) and the services that run it.
public struct AgentAssembly {
    public let hub: AgentHub
    public let services: [ServiceGroupConfiguration.ServiceConfiguration]

    /// - Parameters:
    ///   - log / prometheus: the report outputs (nil for `reach watch`).
    ///   - route / modems / wifi: the sources; nil picks the production one for the config.
    ///   - logLevel: what a reload's `log_level` changes.
    public init(
        config: AgentConfig, configPath: String?, log: ReportLog?, prometheus: PrometheusTextfile?, onLine: LineHandler?,
        clock: any AgentClock, wall: @escaping @Sendable () -> Timestamp = { .now() },
        route: (any RouteSource)? = nil, modems: [any ModemSource]? = nil, wifi: (any WiFiSource)? = nil,
        reloadOnSIGHUP: Bool, logLevel: LogLevelSwitch? = nil, logger: Logger
    ) {
        let system = ReachabilitySources.system
        let sources = ReachabilitySources(
            route: { options in route ?? system.route(options) },
            modems: { options, clock, logger in modems ?? system.modems(options, clock, logger) },
            wifi: { options in wifi ?? system.wifi(options) })
        let hub = AgentHub(
            config: config, log: log, prometheus: prometheus, onLine: onLine, clock: clock, wall: wall, sources: sources,
            logLevel: logLevel, logger: logger)
        self.hub = hub
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: AgentService(hub: hub))]
        if reloadOnSIGHUP {
            services.append(.init(service: ReloadService(configPath: configPath, hub: hub, logger: logger)))
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
