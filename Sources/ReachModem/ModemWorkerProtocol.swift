// What a modem worker process and its parent say to each other (ModemWorker.swift is the parent's side,
// ModemWorkerProcess.swift the worker's). One socket, the worker's fd 3, carries frames of ReachCore's wire form
// (WireCodec): the parent sends one `WorkerRequest`; the worker answers with `WorkerMessage`s. Everything here is
// synthesized Codable, so a field added to ModemState, ModemPortSpec or the options crosses with no change here.

import ReachCore
import ReachLog

#if canImport(Glibc)
import Glibc
#endif

/// How to start a modem worker: an executable that runs `ModemWorkerProcess.main()` when given these arguments.
/// `reach` passes its own executable (`/proc/self/exe`, which stays the running binary even while a package
/// upgrade replaces the file) and its hidden `modem-worker` command.
public struct ModemWorkerLaunch: Sendable, Equatable, Codable {
    public var executable: String
    /// The arguments after argv[0].
    public var arguments: [String]

    public init(executable: String, arguments: [String]) {
        self.executable = executable
        self.arguments = arguments
    }

    /// This very executable with `arguments`: for a program whose main hands `arguments` to
    /// `ModemWorkerProcess.main()`.
    public static func currentExecutable(_ arguments: [String]) -> ModemWorkerLaunch {
        ModemWorkerLaunch(executable: "/proc/self/exe", arguments: arguments)
    }
}

/// A logger that stays in its process: it crosses to a worker as its label and level only, and arrives as a logger
/// of the receiving process's logging system (a worker's standard error) at that level.
@propertyWrapper
public struct ProcessLocalLogger: Sendable, Codable {
    public var wrappedValue: Logger

    public init(wrappedValue: Logger) { self.wrappedValue = wrappedValue }

    private enum CodingKeys: String, CodingKey { case label, level }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(wrappedValue.label, forKey: .label)
        try c.encode(wrappedValue.logLevel.rawValue, forKey: .level)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var logger = Logger(label: try c.decode(String.self, forKey: .label))
        logger.logLevel = Logger.Level(rawValue: try c.decode(String.self, forKey: .level)) ?? .info
        wrappedValue = logger
    }
}

/// The parent's one frame: the protocol version and what to do.
struct WorkerRequest: Codable, Sendable {
    /// Raised whenever the frames change meaning; a worker refuses another version.
    static let version = 1

    enum Job: Codable, Sendable {
        /// One read of one modem (`ModemReader.read([spec])`), answered with `.result`, then the worker exits.
        case read(ModemPortSpec, ModemReadOptions)
        /// Watch one modem (`ModemMonitor`), sending `.update`s until the parent closes the socket.
        case monitor(ModemPortSpec, ModemMonitorOptions)
    }

    var version: Int
    var job: Job
    /// How often to prove the worker's GLib loop still turns (`WorkerMessage.heartbeat`).
    var heartbeat: Duration
}

/// The worker's frames.
enum WorkerMessage: Codable, Sendable {
    /// The request was understood and the worker confined itself; carries the capabilities left (CAP_* bits).
    case ready(capabilities: UInt64)
    /// The worker's GLib loop ran a callback just now: modem I/O is not wedged.
    case heartbeat
    /// A monitor's update.
    case update(ModemUpdate)
    /// A read's answer.
    case result(SourceHealth, [ModemState])
    /// A GLib record at critical or error level, sent at once because the next thing may be an abort: the parent
    /// names it when the worker dies.
    case fatalLog(domain: String, message: String)
    /// The worker cannot do the job (bad request, version mismatch); it exits after this.
    case refused(String)
    /// A proxied open got no answer in time: the parent, which may look into other processes, names the proxy and
    /// replaces it when it is reach's alone (`ProxyWatch.answer`), before the state with the error that follows.
    case proxySilent(ProxySilence)
}

/// The bounds the parent applies to a worker's frames, and the bounds it holds decoded states to.
enum WorkerLimits {
    /// The largest frame a worker may send (WireFrame's default).
    static let maxPayload = WireFrame.defaultMaxPayload
    static let wire = WireLimits(maxDepth: 16, maxStringBytes: 4096, maxCount: 1024)
    /// The most modem states in one read result (one port per worker).
    static let maxStates = 1
}
