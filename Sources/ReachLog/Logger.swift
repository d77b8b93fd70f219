// ReachLog: the logging GatewayReach needs, in place of apple/swift-log (whose releases since 1.7 need a newer Swift
// than the 6.0 this package supports, and which Debian does not package). A `Logger` has a label, a level and a
// destination: records at or above the level go to a handler (a closure of the caller's, or standard error), or
// nowhere. The module's name is not swift-log's `Logging`, so a program may link both.
//
// Standard error gets swift-log's StreamLogHandler line, so the agent's log reads as before:
//     2026-11-27T18:22:09+0000 warning reach: modem.device=/dev/cdc-wdm0 [ReachModem] Modem worker failed
// and, when standard error is the journal, the record's syslog priority in front of it (StandardError.swift).

import Synchronization

/// A function that takes every record a logger passes on, on the thread that logged it.
public typealias LogHandler = @Sendable (LogRecord) -> Void

public struct Logger: Sendable {
    /// swift-log's levels, in rising order of severity.
    public enum Level: String, Sendable, Codable, CaseIterable, Comparable {
        case trace, debug, info, notice, warning, error, critical

        var rank: UInt8 {
            switch self {
            case .trace: 0
            case .debug: 1
            case .info: 2
            case .notice: 3
            case .warning: 4
            case .error: 5
            case .critical: 6
            }
        }

        init(rank: UInt8) { self = Self.allCases[Int(min(rank, 6))] }

        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }

        /// The syslog(3) priority (LOG_CRIT ... LOG_DEBUG; syslog has nothing below debug).
        public var syslogPriority: Int {
            switch self {
            case .trace, .debug: 7
            case .info: 6
            case .notice: 5
            case .warning: 4
            case .error: 3
            case .critical: 2
            }
        }
    }

    /// Key-value pairs a record carries besides its message.
    public typealias Metadata = [String: String]

    private enum Threshold: Sendable {
        case fixed(Level)
        case shared(LogLevelSwitch)
    }

    public let label: String
    /// Carried by every record of this logger (and its copies made after); a record's own metadata wins a key.
    public var metadata: Metadata = [:]
    private var threshold: Threshold
    /// nil: nowhere.
    private let handler: LogHandler?

    private init(label: String, threshold: Threshold, handler: LogHandler?) {
        self.label = label
        self.threshold = threshold
        self.handler = handler
    }

    /// A logger of this process's logging system: standard error at info, unless `bootstrap` said otherwise.
    public init(label: String) {
        let process = Logger.process.withLock { $0 }
        self.init(label: label, threshold: process.threshold, handler: process.handler)
    }

    /// A logger whose records at `level` and above go to `handler`: how a program that embeds GatewayReach routes the
    /// library's records into its own log (`Reachability(logger:)`, `ModemReadOptions.logger`).
    public init(label: String, level: Level = .info, handler: @escaping LogHandler) {
        self.init(label: label, threshold: .fixed(level), handler: handler)
    }

    /// A logger whose level is `level`'s, read at every record (and set through it by every copy).
    public init(label: String, level: LogLevelSwitch, handler: @escaping LogHandler = StandardError.handler) {
        self.init(label: label, threshold: .shared(level), handler: handler)
    }

    /// A logger that passes nothing on. Its level is critical, so that nothing goes to the trouble of making records
    /// for it (GLib's are routed only to a logger at debug).
    public static func discarding(label: String) -> Logger {
        Logger(label: label, threshold: .fixed(.critical), handler: nil)
    }

    /// What `Logger(label:)` makes from now on in this process: loggers at `level`'s level (every one of them reads
    /// it at each record, so a reload's new level reaches them all) whose records go to `handler`.
    public static func bootstrap(level: LogLevelSwitch, handler: @escaping LogHandler = StandardError.handler) {
        process.withLock { $0 = (.shared(level), handler) }
    }

    private static let process = Mutex<(threshold: Threshold, handler: LogHandler?)>((.fixed(.info), StandardError.handler))

    /// The least severe level passed on. Setting it on a logger whose level is a `LogLevelSwitch` sets the switch.
    public var logLevel: Level {
        get {
            switch threshold {
            case let .fixed(level): level
            case let .shared(s): s.level
            }
        }
        set {
            switch threshold {
            case .fixed: threshold = .fixed(newValue)
            case let .shared(s): s.level = newValue
            }
        }
    }

    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Passes the record on when `level` is at or above the logger's; the message and metadata are made only then.
    public func log(
        level: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard let handler, level >= logLevel else { return }
        var all = self.metadata
        if let own = metadata() { all.merge(own) { _, own in own } }
        handler(
            LogRecord(
                level: level, label: label, message: message(), metadata: all, file: file, function: function,
                line: line))
    }

    public func trace(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .trace, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func debug(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .debug, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func info(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .info, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func notice(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .notice, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func warning(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .warning, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func error(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .error, message(), metadata: metadata(), file: file, function: function, line: line) }

    public func critical(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) { log(level: .critical, message(), metadata: metadata(), file: file, function: function, line: line) }
}

/// One record, as a handler gets it.
public struct LogRecord: Sendable {
    public var level: Logger.Level
    public var label: String
    public var message: String
    public var metadata: Logger.Metadata
    /// `#fileID` of the call: "Module/File.swift".
    public var file: String
    public var function: String
    public var line: UInt

    public init(
        level: Logger.Level, label: String, message: String, metadata: Logger.Metadata = [:], file: String,
        function: String, line: UInt
    ) {
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
        self.file = file
        self.function = function
        self.line = line
    }

    /// The module that logged it (what swift-log calls the source): `file` up to its first slash.
    public var module: String {
        guard let slash = file.utf8.firstIndex(of: UInt8(ascii: "/")) else { return "n/a" }
        return String(file[..<slash])
    }

    /// The line swift-log's StreamLogHandler writes, newline included:
    /// "<time> <level> <label>: <key=value ...> [<module>] <message>", the metadata sorted by key.
    public func formatted(time: String) -> String {
        var text = time + " " + level.rawValue + (label.isEmpty ? "" : " ") + label + ":"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += " " + key + "=" + value
        }
        return text + " [" + module + "] " + message + "\n"
    }
}

/// A level that many loggers share and that can change while they run: the agent's `log_level`, which a reload sets
/// for every logger at once.
public final class LogLevelSwitch: Sendable {
    private let rank: Atomic<UInt8>

    public init(level: Logger.Level) {
        rank = Atomic(level.rank)
    }

    public var level: Logger.Level {
        get { Logger.Level(rank: rank.load(ordering: .relaxed)) }
        set { rank.store(newValue.rank, ordering: .relaxed) }
    }
}
