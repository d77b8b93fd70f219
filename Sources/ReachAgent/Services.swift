// The agent's services. The ServiceGroup starts them in order and shuts them down in reverse: the reload service
// goes first, then the agent's instances stop (their sources first, then the stop lines) and its sinks drain.

import GatewayReach
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the hub: its sinks and one `Reachability` per target until a graceful shutdown (or cancellation), then the
/// stop lines.
public struct AgentService: Service {
    let hub: AgentHub

    public init(hub: AgentHub) {
        self.hub = hub
    }

    public func run() async {
        await hub.start()
        // Returns when the group shuts down gracefully (SIGTERM, SIGINT) or the task is cancelled.
        let cancelled: Bool
        do {
            try await gracefulShutdown()
            cancelled = false
        } catch {
            cancelled = true
        }
        await hub.stop(reason: cancelled || Task.isCancelled ? "cancelled" : "graceful shutdown")
    }
}

/// SIGHUP: read the config file again. A bad file is refused with an error naming the key, and the running
/// configuration stays. The report log is reopened either way (after an external move of the file).
public struct ReloadService: Service {
    let configPath: String?
    let hub: AgentHub
    let logger: Logger

    public init(configPath: String?, hub: AgentHub, logger: Logger) {
        self.configPath = configPath
        self.hub = hub
        self.logger = logger
    }

    public func run() async {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            await Self.reload(configPath: configPath, hub: hub, logger: logger)
        }
    }

    /// One reload, as SIGHUP does it. Returns whether the new configuration was taken.
    @discardableResult
    public static func reload(configPath: String?, hub: AgentHub, logger: Logger) async -> Bool {
        let path = configPath ?? AgentConfig.defaultPath
        switch ConfigFile.load(configPath) {
        case let .success(config):
            let changed = await hub.apply(config)
            logger.info(
                "Configuration reloaded",
                metadata: ["config.path": "\(path)", "config.changed": "\(changed.joined(separator: ","))"])
            return true
        case let .failure(error):
            logger.error(
                "Configuration reload refused; keeping the running configuration",
                metadata: ["config.path": "\(path)", "config.error": "\(error)"])
            hub.report.reopen()
            return false
        }
    }
}
