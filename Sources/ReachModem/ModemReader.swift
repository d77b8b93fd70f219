// The entry points the rest of GatewayReach uses to ask modems. Implemented by the WWAN issue (#3).
import ReachCore
import ReachGLib
import ReachLog
import ReachTime


public struct ModemReadOptions: Sendable, Codable {
    /// Per-request timeout.
    public var requestTimeout: Duration
    /// The most one modem's whole read may take (open, every request). A modem that has not finished by then is
    /// reported with what was read so far and an error. Default: three request timeouts (a silent modem costs one
    /// request timeout; this budget is for a slow one that answers everything late).
    public var readTimeout: Duration
    /// How ports are opened: through qmi-proxy / mbim-proxy as ModemManager does (`auto`, the default: directly only
    /// when no proxy can be started; `proxy`: always), or exclusively (`direct`).
    public var access: ModemAccess
    /// Stands for /sys in discovery (tests point it at a fake tree).
    public var sysfsRoot: String
    /// hw/modems.json to use instead of the default search (hw/README.md).
    public var hardwareDatabasePath: String?
    /// Where adapter and GLib debug records go. Default: nowhere. A modem worker process logs to its own standard
    /// error at this logger's level (`ProcessLocalLogger`).
    @ProcessLocalLogger public var logger: Logger
    /// Run each modem's I/O in a worker process of its own, started with this command (`ModemWorkerLaunch`), so that
    /// a modem library that crashes or hangs costs that modem's worker and never the caller. nil (the default for a
    /// program embedding GatewayReach, which has no worker entry unless it adds one): in this process. The `reach`
    /// command sets it. `IsolatedModemReader` and `IsolatedModemMonitor` are what use it.
    public var worker: ModemWorkerLaunch? = nil
    /// The bar boundaries a monitored QMI modem is asked to announce signal changes at (Config Signal Info).
    public var signalPolicy: SignalPolicy

    public init(
        requestTimeout: Duration = Defaults.duration(Defaults.modemRequestTimeoutSeconds), readTimeout: Duration? = nil, access: ModemAccess = .auto,
        sysfsRoot: String = "/sys", hardwareDatabasePath: String? = nil,
        logger: Logger = Logger.discarding(label: "gatewayreach.modem"),
        signalPolicy: SignalPolicy = .android
    ) {
        self.requestTimeout = requestTimeout
        self.readTimeout = readTimeout ?? requestTimeout * 3
        self.access = access
        self.sysfsRoot = sysfsRoot
        self.hardwareDatabasePath = hardwareDatabasePath
        self.logger = logger
        self.signalPolicy = signalPolicy
    }
}

public enum ModemReader {
    /// Reads every modem once: `specs`, or the ports discovery finds when nil. Never throws: a modem that cannot be
    /// read is returned with its `error` set, and the source is unavailable only when it cannot be asked at all.
    /// Modems are read in parallel; each read ends within `options.readTimeout` (plus the close), so a silent
    /// modem cannot hold up the rest of a status. libqmi's and libmbim's own log records go to `options.logger` at
    /// debug level (`GLibLog.route`) when that logger logs debug records; otherwise they are dropped.
    public static func read(_ specs: [ModemPortSpec]?, options: ModemReadOptions) async -> (SourceHealth, [ModemState]) {
        if options.logger.logLevel <= .debug { GLibLog.route(to: options.logger) }
        let (health, ports) = prepare(specs, options: options)
        guard health.available else { return (health, []) }
        let states = await withTaskGroup(of: (Int, ModemState).self) { group in
            for (i, (spec, quirks)) in ports.enumerated() {
                group.addTask { (i, await readOne(spec, quirks: quirks, options: options)) }
            }
            var states = [ModemState?](repeating: nil, count: ports.count)
            for await (i, state) in group { states[i] = state }
            return states.compactMap { $0 }
        }
        return (health, states)
    }

    /// The modem control ports sysfs shows now (the discovery `read(nil, ...)` does), for a caller that watches each
    /// port itself. Unavailable when sysfs cannot be read.
    public static func discover(options: ModemReadOptions) -> (SourceHealth, [ModemPortSpec]) {
        let (health, ports) = prepare(nil, options: options)
        return (health, ports.map(\.0))
    }

    /// The ports to ask (named ones completed from sysfs, or discovered) with their hardware quirks.
    static func prepare(_ specs: [ModemPortSpec]?, options: ModemReadOptions)
        -> (SourceHealth, [(ModemPortSpec, ModemQuirks)])
    {
        var health = SourceHealth.ok
        let hardware: HardwareDatabase
        do {
            hardware = try HardwareDatabase.load(explicit: options.hardwareDatabasePath)
        } catch {
            options.logger.warning("Hardware database unusable, using built-in knowledge", metadata: ["error": "\(error)"])
            hardware = .builtIn
            health.reason = "\(error); using built-in hardware knowledge"
        }
        let discovery = ModemDiscovery(sysfsRoot: options.sysfsRoot, hardware: hardware)
        let ports: [(ModemPortSpec, ModemQuirks)]
        if let specs {
            ports = specs.map { spec in
                let completed = discovery.complete(spec)
                return (completed, discovery.quirks(for: completed))
            }
        } else {
            guard discovery.sysfsAvailable else {
                return (SourceHealth(available: false, reason: "sysfs is not readable at \(options.sysfsRoot)"), [])
            }
            ports = discovery.ports().map { ($0.spec, $0.hardware?.quirks ?? ModemQuirks()) }
        }
        return (health, ports)
    }

    /// One modem, bounded by `options.readTimeout`.
    static func readOne(_ spec: ModemPortSpec, quirks: ModemQuirks, options: ModemReadOptions) async -> ModemState {
        let channel: ModemChannel
        let outcome = await withDeadline(options.readTimeout) { () async -> Result<ModemChannel, Error> in
            do {
                return .success(try await ModemChannel.open(spec, options: options, quirks: quirks))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case let .timedOut(late):
            if let late, case let .success(c) = late { await c.close() }
            let waited = Int(options.readTimeout.milliseconds)
            return ModemChannel.failedState(
                spec, ModemError("no answer while opening within \(waited) ms", ModemFault(.notAnswering, waitedMs: waited)),
                present: true)
        case let .finished(.failure(error)):
            options.logger.debug("Modem open failed", metadata: ["modem.device": "\(spec.path)", "error": "\(error)"])
            return ModemChannel.failedState(spec, error)
        case let .finished(.success(c)):
            channel = c
        }
        let read = await withDeadline(options.readTimeout) { await channel.readAll() }
        var state = await channel.state
        if case .timedOut = read {
            let partial = state.error.map { " (\($0))" } ?? ""
            let waited = Int(options.readTimeout.milliseconds)
            state.fail("read incomplete after \(waited) ms\(partial)", ModemFault(.notAnswering, waitedMs: waited))
        }
        await channel.close()
        return state
    }
}

extension ModemDiscovery {
    /// The hardware database's quirks for a port, when sysfs names its device.
    func quirks(for spec: ModemPortSpec) -> ModemQuirks {
        let name = spec.path.split(separator: "/").last.map(String.init) ?? spec.path
        let port: DiscoveredPort?
        if name.hasPrefix("cdc-wdm") {
            port = cdcWDMPort(name: name, classDir: "/class/usbmisc/\(name)")
                ?? cdcWDMPort(name: name, classDir: "/class/usb/\(name)")
        } else {
            port = wwanPort(name: name)
        }
        return port?.hardware?.quirks ?? ModemQuirks()
    }
}

/// How a deadline-bounded operation ended.
enum DeadlineOutcome<T: Sendable>: Sendable {
    case finished(T)
    /// The deadline passed first; the operation was cancelled and has finished since, with this late result.
    case timedOut(late: T?)
}

/// Runs `operation` and cancels it when `deadline` passes first. The operation must end promptly once cancelled
/// (every bridged GLib call does); its late result is dropped.
func withDeadline<T: Sendable>(_ deadline: Duration, _ operation: @escaping @Sendable () async -> T) async
    -> DeadlineOutcome<T>
{
    await withTaskGroup(of: DeadlineOutcome<T>.self) { group in
        group.addTask { .finished(await operation()) }
        group.addTask {
            try? await Timers.shared.sleep(for: deadline)  // cancelled at once when the operation wins
            return .timedOut(late: nil)
        }
        let first = await group.next()!
        group.cancelAll()
        guard case .timedOut = first else { return first }
        // Let the cancelled operation finish (it must), so nothing outlives this call, and hand back its result
        // so that the caller can release what it holds.
        while let next = await group.next() {
            if case let .finished(value) = next { return .timedOut(late: value) }
        }
        return first
    }
}
