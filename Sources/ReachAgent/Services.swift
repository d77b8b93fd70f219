// The agent's services. Each is small and does one thing; the ServiceGroup starts them in order (reporter first)
// and shuts them down in reverse, so the sources stop before the reporter writes its last line.

import GatewayReach
import Logging
import ServiceLifecycle
import UnixSignals

/// Drives time: the start lines after the startup grace, held-down changes, periodic lines; the stop lines on a
/// graceful shutdown.
public struct ReporterService: Service {
    let hub: StatusHub
    let clock: any AgentClock

    public init(hub: StatusHub, clock: any AgentClock) {
        self.hub = hub
        self.clock = clock
    }

    public func run() async {
        let wakeup = hub.wakeup
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let deadline = await hub.nextDeadline()
                await clock.sleep(until: deadline, orUntil: wakeup)
                if Task.isShuttingDownGracefully || Task.isCancelled { break }
                await hub.tick()
            }
        } onGracefulShutdown: {
            wakeup.signal()
        }
        await hub.stop(reason: Task.isCancelled ? "cancelled" : "graceful shutdown")
    }
}

/// Routes and links: on every rtnetlink notice (and on a resync after lost notices) each target's route is asked
/// again. Host targets are resolved at start and again when a notice comes and the last answer is older than
/// `resolveEvery`.
public struct RouteService: Service {
    let source: any RouteSource
    let hub: StatusHub
    let targets: [Target]
    let clock: any AgentClock
    let resolveEvery: Duration
    let logger: Logger

    public init(source: any RouteSource, hub: StatusHub, targets: [Target], clock: any AgentClock, resolveEvery: Duration, logger: Logger) {
        self.source = source
        self.hub = hub
        self.targets = targets
        self.clock = clock
        self.resolveEvery = resolveEvery
        self.logger = logger
    }

    struct RouteMonitorStopped: Error, CustomStringConvertible {
        var description: String { "the rtnetlink monitor stopped" }
    }

    public func run() async throws {
        // Subscribe first, then read: a change between the two is not missed.
        let events = try source.events()
        var resolved: [Int: (Result<[IPAddress], ResolutionError>, Duration)] = [:]
        await refresh(&resolved)
        for await event in events.cancelOnGracefulShutdown() {
            if event == .resync { logger.info("Route notices were lost; reading every target again") }
            await refresh(&resolved)
        }
        if !Task.isShuttingDownGracefully && !Task.isCancelled {
            logger.error("The rtnetlink monitor stopped; the agent cannot follow route changes")
            throw RouteMonitorStopped()
        }
    }

    private func refresh(_ resolved: inout [Int: (Result<[IPAddress], ResolutionError>, Duration)]) async {
        for (i, target) in targets.enumerated() {
            var resolution: Result<[IPAddress], ResolutionError>?
            if case let .host(name) = target {
                let now = clock.now()
                if let (r, at) = resolved[i], now - at < resolveEvery {
                    resolution = r
                } else {
                    let r = await source.resolve(name)
                    resolved[i] = (r, clock.now())
                    resolution = r
                }
            }
            let view = await source.compute(target, resolved: resolution)
            await hub.setRoute(i, view)
        }
    }
}

/// One modem source (one modem, or discovery): its states into the hub. A source that ends on its own is started
/// again after a backoff (1 s doubling to 60 s), reported unavailable meanwhile.
public struct ModemService: Service {
    let source: any ModemSource
    let hub: StatusHub
    let clock: any AgentClock
    let logger: Logger

    public init(source: any ModemSource, hub: StatusHub, clock: any AgentClock, logger: Logger) {
        self.source = source
        self.hub = hub
        self.clock = clock
        self.logger = logger
    }

    public func run() async {
        let (source, hub) = (source, hub)
        await superviseSource(
            "Modem", name: source.name, clock: clock, logger: logger, updates: source.updates,
            publish: { health, states in await hub.setModems(source: source.name, health, states) })
    }
}

/// The WiFi source into the hub, restarted like a modem source when it ends on its own.
public struct WiFiService: Service {
    let source: any WiFiSource
    let hub: StatusHub
    let clock: any AgentClock
    let logger: Logger

    public init(source: any WiFiSource, hub: StatusHub, clock: any AgentClock, logger: Logger) {
        self.source = source
        self.hub = hub
        self.clock = clock
        self.logger = logger
    }

    public func run() async {
        let hub = hub
        await superviseSource(
            "WiFi", name: source.name, clock: clock, logger: logger, updates: source.updates,
            publish: { health, links in await hub.setWiFi(health, links) })
    }
}

/// A source's updates into the hub until shutdown. A stream that ends on its own (the source failed) is started
/// again after a backoff (1 s doubling to 60 s, back to 1 s once it delivers), reported unavailable meanwhile.
func superviseSource<Element: Sendable>(
    _ kind: String, name: String, clock: any AgentClock, logger: Logger,
    updates: () -> AsyncStream<(SourceHealth, [Element])>,
    publish: (SourceHealth, [Element]) async -> Void
) async {
    var backoff = Duration.seconds(1)
    while !Task.isShuttingDownGracefully && !Task.isCancelled {
        for await (health, value) in updates().cancelOnGracefulShutdown() {
            await publish(health, value)
            backoff = .seconds(1)
        }
        if Task.isShuttingDownGracefully || Task.isCancelled { return }
        logger.warning(
            "\(kind) source stopped; starting it again",
            metadata: ["\(kind.lowercased()).source": "\(name)", "backoff": "\(backoff)"])
        await publish(SourceHealth(available: false, reason: "source stopped; restarting"), [])
        let wait = backoff
        try? await cancelWhenGracefulShutdown { try await clock.sleep(until: clock.now() + wait) }
        backoff = min(backoff * 2, .seconds(60))
    }
}

/// SIGHUP: read the config file again. A bad file is refused with an error naming the key, and the running
/// configuration stays. The report log is reopened either way (after an external move of the file).
public struct ReloadService: Service {
    let configPath: String?
    let hub: StatusHub
    let logger: Logger

    public init(configPath: String?, hub: StatusHub, logger: Logger) {
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
    public static func reload(configPath: String?, hub: StatusHub, logger: Logger) async -> Bool {
        let path = configPath ?? AgentConfig.defaultPath
        switch ConfigFile.load(configPath) {
        case let .success(config):
            let restart = await hub.apply(config)
            if restart.isEmpty {
                logger.info("Configuration reloaded", metadata: ["config.path": "\(path)"])
            } else {
                logger.warning(
                    "Configuration reloaded; some keys take effect only after a restart",
                    metadata: ["config.path": "\(path)", "config.restart_keys": "\(restart.joined(separator: ","))"])
            }
            return true
        case let .failure(error):
            logger.error(
                "Configuration reload refused; keeping the running configuration",
                metadata: ["config.path": "\(path)", "config.error": "\(error)"])
            return false
        }
    }
}
