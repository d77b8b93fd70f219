// A log level that a reload can change: swift-log copies a handler into every Logger value, so the level lives in
// one shared place that every copy reads, and SIGHUP's `log_level` takes effect in every logger at once.

import GatewayReach
import Logging
import Synchronization

public final class LogLevelSwitch: Sendable {
    private let raw: Atomic<UInt8>

    public init(_ level: AgentConfig.LogLevel) {
        raw = Atomic(Self.code(level.loggerLevel))
    }

    public var level: Logger.Level {
        get { Logger.Level.allCases[Int(raw.load(ordering: .relaxed))] }
        set { raw.store(Self.code(newValue), ordering: .relaxed) }
    }

    public func set(_ level: AgentConfig.LogLevel) { self.level = level.loggerLevel }

    private static func code(_ level: Logger.Level) -> UInt8 {
        UInt8(Logger.Level.allCases.firstIndex(of: level) ?? 2)
    }
}

/// A handler whose level is the switch's (setting a logger's level sets the switch).
public struct SwitchedLogHandler: LogHandler {
    public var inner: any LogHandler
    public let levelSwitch: LogLevelSwitch

    /// `inner` logs whatever it is given (its own level is set to trace); the switch decides.
    public init(_ inner: any LogHandler, level: LogLevelSwitch) {
        self.inner = inner
        self.inner.logLevel = .trace
        self.levelSwitch = level
    }

    public var logLevel: Logger.Level {
        get { levelSwitch.level }
        set { levelSwitch.level = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public func log(event: LogEvent) { inner.log(event: event) }
}
