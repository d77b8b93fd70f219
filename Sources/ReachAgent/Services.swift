// Running the agent: the hub until SIGTERM or SIGINT (or a test's trigger), SIGHUP reloading the configuration
// meanwhile, then the stop lines within a bounded time. (This was a swift-service-lifecycle ServiceGroup of two
// services; the few lines below do the same without its ~1.4 MB of dependencies in the static binary.)

import GatewayReach
import Glibc
import ReachLog
import Synchronization

/// Runs one `AgentHub`. `run()` starts the hub, waits for a graceful shutdown (a signal in `shutdownSignals`, or
/// `triggerGracefulShutdown()`), then stops the hub: every instance writes its stop line and the sinks drain. If that
/// takes longer than `maximumShutdown`, the stop is cancelled (its sinks hurry); a cancelled `run()` stops with the
/// reason "cancelled". Run it once.
public final class AgentRunner: Sendable {
    public let hub: AgentHub
    let reload: (@Sendable () async -> Void)?
    let shutdownSignals: [Int32]
    let maximumShutdown: Duration
    private let requests: AsyncStream<Void>
    private let requester: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - reload: what SIGHUP does (nil: SIGHUP is not watched).
    ///   - shutdownSignals: the signals that stop the agent gracefully (none in tests, which trigger it).
    public init(
        hub: AgentHub, reload: (@Sendable () async -> Void)?, shutdownSignals: [Int32] = [SIGTERM, SIGINT],
        maximumShutdown: Duration = .seconds(10)
    ) {
        self.hub = hub
        self.reload = reload
        self.shutdownSignals = shutdownSignals
        self.maximumShutdown = maximumShutdown
        (requests, requester) = AsyncStream<Void>.makeStream()
    }

    /// Asks a running (or a later) `run()` to stop gracefully.
    public func triggerGracefulShutdown() { requester.yield(()) }

    public func run() async {
        let watched = shutdownSignals + (reload == nil ? [] : [SIGHUP])
        let signals = await SignalWatch(watched)
        await hub.start()
        await withTaskGroup(of: Void.self) { group in
            if !watched.isEmpty {
                group.addTask { [reload, requester] in
                    for await number in signals {
                        if number == SIGHUP {
                            await reload?()
                        } else {
                            requester.yield(())
                            return
                        }
                    }
                }
            }
            // The first request ends the wait; so does cancellation (the iterator then returns nil).
            for await _ in requests { break }
            group.cancelAll()
        }
        let reason = Task.isCancelled ? "cancelled" : "graceful shutdown"
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { [hub] in
                await hub.stop(reason: reason)
                return true
            }
            group.addTask { [maximumShutdown] in
                try? await Task.sleep(for: maximumShutdown)
                return false
            }
            _ = await group.next()
            group.cancelAll()
        }
    }
}

/// SIGHUP: read the config file again. A bad file is refused with an error naming the key, and the running
/// configuration stays. The report log is reopened either way (after an external move of the file).
public enum ReloadService {
    /// One reload, as SIGHUP does it. Returns whether the new configuration was taken.
    @discardableResult
    public static func reload(configPath: String?, hub: AgentHub, logger: Logger) async -> Bool {
        let path = configPath ?? AgentConfig.defaultPath
        switch ConfigFile.load(configPath) {
        case let .success(config):
            let changed = await hub.apply(config)
            // An empty `config.changed=` read like a field lost; a reload of the same file says so in words.
            logger.info(
                changed.isEmpty ? "Configuration reloaded, nothing changed" : "Configuration reloaded",
                metadata: ["config.path": "\(path)", "config.changed": "\(changed.isEmpty ? "none" : changed.joined(separator: ","))"])
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
