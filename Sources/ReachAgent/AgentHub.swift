// The running agent: one `Reachability` per configured target (their sources shared: one rtnetlink socket, one
// session per modem, one nl80211 socket for all of them) and the outputs those instances feed. The monitoring is the
// library's; the agent adds only the sinks (report log, Prometheus textfile, and with `api` the state file, the
// Varlink socket and the hooks) and reloading: SIGHUP applies every section of a new configuration by rebuilding only
// what changed.

import GatewayReach
import ReachLog

public actor AgentHub {
    private struct SinkRun {
        let sink: any AgentSink
        let mailbox: Mailbox<MonitorEvent>
        var task: Task<Void, Never>?
    }

    /// The state file, Varlink socket and hooks of one `api` configuration, with the sinks that feed them.
    private struct APIRun {
        let outputs: AgentOutputs
        let lines: APILineSink
        let state: StateSink
        var tasks: [Task<Void, Never>] = []
    }

    public private(set) var configuration: AgentConfig
    /// The report lines' sink (always there; without a log it only numbers lines and hands them on).
    public nonisolated let report: ReportSink
    private var instances: [(target: Target, reach: Reachability)] = []
    /// The report sink first: at the end it finishes before the others read its counters.
    private var sinks: [SinkRun]
    private var api: APIRun?
    private var started = false
    private var stopped = false

    private let clock: any MonitorClock
    private let wall: @Sendable () -> Timestamp
    private let sources: ReachabilitySources
    private let modemWorker: ModemWorkerLaunch?
    private let resolveTimeout: Duration
    private let apiOutputs: (@Sendable (AgentConfig, Timestamp) -> AgentOutputs)?
    private let startedAt: Timestamp
    private let logLevel: LogLevelSwitch?
    private let logger: Logger

    /// - Parameters:
    ///   - log / prometheus: the outputs (nil for `reach watch`); `onLine` also gets every report line.
    ///   - apiOutputs: starts the state file, Varlink socket and hooks for a configuration's `api` (with the agent's
    ///     start time); nil: none (`reach watch`, tests on fake sources).
    ///   - sources: where the instances' parts come from (`.system` in production, fakes in tests).
    ///   - modemWorker: how a production modem source starts its worker process while `modems.worker` is true (nil:
    ///     modems are read in this process).
    ///   - resolveTimeout: how long one lookup of a host target may take.
    ///   - logLevel: what a reload's `log_level` sets (nil: the level stays).
    public init(
        config: AgentConfig, log: ReportLog?, prometheus: PrometheusTextfile?, onLine: LineHandler?,
        apiOutputs: (@Sendable (AgentConfig, Timestamp) -> AgentOutputs)? = nil, clock: any MonitorClock,
        wall: @escaping @Sendable () -> Timestamp = { .now() }, sources: ReachabilitySources = .system,
        modemWorker: ModemWorkerLaunch? = nil, resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds), logLevel: LogLevelSwitch? = nil,
        logger: Logger
    ) {
        self.configuration = config
        self.clock = clock
        self.wall = wall
        self.sources = sources
        self.modemWorker = modemWorker
        self.resolveTimeout = resolveTimeout
        self.apiOutputs = apiOutputs
        self.startedAt = wall()
        self.logLevel = logLevel
        self.logger = logger
        let report = ReportSink(log: log, onLine: onLine)
        self.report = report
        var sinks = [SinkRun(sink: report, mailbox: Mailbox(capacity: report.capacity))]
        if let prometheus {
            let p = PrometheusSink(textfile: prometheus, targets: config.targets, logStats: { report.logStats })
            sinks.append(SinkRun(sink: p, mailbox: Mailbox(capacity: p.capacity)))
        }
        self.sinks = sinks
    }

    public var targetList: [Target] { instances.map(\.target) }
    public nonisolated var linesSequenced: UInt64 { report.linesSequenced }
    public nonisolated var logStats: ReportLog.Stats { report.logStats }

    /// The instance watching `target`, if it is configured.
    public func reachability(for target: Target) -> Reachability? { instances.first { $0.target == target }?.reach }

    /// The earliest moment any target's monitoring has work (grace, hold-down, report interval).
    public func nextDeadline() -> Duration? { instances.compactMap { $0.reach.nextDeadline }.min() }

    // MARK: Lifecycle

    /// Starts the sinks, the API outputs, then one instance per target.
    public func start() {
        guard !started else { return }
        started = true
        for i in sinks.indices { startSink(i) }
        startAPI(configuration)
        for target in configuration.targets { addInstance(target) }
        api?.state.show(instances.map(\.reach))
    }

    /// The last lines: every instance stops (its sources first, then its `stop` event), then each sink drains its
    /// mailbox and ends, the report log first; then the API outputs (their last state says `stopped`).
    public func stop(reason: String) async {
        guard started, !stopped else { return }
        stopped = true
        for (_, reach) in instances { reach.stop(reason: reason) }
        for run in sinks {
            run.mailbox.finish()
            await run.task?.value
        }
        await stopAPI(final: true)
    }

    private func startSink(_ i: Int) {
        let run = sinks[i]
        sinks[i].task = Task { await run.sink.run(run.mailbox) }
    }

    private func addInstance(_ target: Target) {
        let reach = Reachability(
            target: target, options: options(configuration, target: target), sources: sources, clock: clock,
            wall: wall, logger: logger)
        for run in sinks { reach.attach(run.mailbox) }
        if let api { reach.attach(api.state.wakeup) }
        instances.append((target, reach))
        reach.start()
    }

    /// The monitoring options of one target under `config`: uplink changes are reported by one target only.
    private func options(_ config: AgentConfig, target: Target) -> ReachabilityOptions {
        var o = ReachabilityOptions(config: config, worker: modemWorker)
        o.resolveTimeout = resolveTimeout
        let reporter = UplinkChangeTracker.reportingTarget(config.targets).map { config.targets[$0] }
        o.reportsUplinks = reporter == target
        return o
    }

    // MARK: The API outputs

    private func startAPI(_ config: AgentConfig) {
        guard let apiOutputs else { return }
        let outputs = apiOutputs(config, startedAt)
        let report = self.report
        outputs.measure(report)
        let reportEvents = sinks[0].mailbox
        let wakeup = Wakeup()
        let lines = APILineSink(outputs: outputs, handed: wakeup, logger: logger)
        var run = APIRun(
            outputs: outputs, lines: lines,
            state: StateSink(
                refresh: .seconds(config.stateRefreshSeconds), wakeup: wakeup, report: report,
                linesPending: { reportEvents.count > 0 || report.isWriting || lines.pending }, clock: clock, wall: wall,
                onState: { outputs.post(state: $0) }))
        report.follow(run.lines.mailbox)
        let state = run.state
        run.tasks = [Task { await lines.run() }, Task { await state.run() }]  // in this order: see stopAPI
        for (_, reach) in instances { reach.attach(state.wakeup) }
        state.show(instances.map(\.reach))
        api = run
    }

    /// Drains the API sinks and stops the outputs (socket removed, hooks let go). `final`: the agent ends, and the
    /// last state says `stopped`; otherwise (a reload) the last state written stays as it was, running.
    private func stopAPI(final: Bool) async {
        guard let run = api else { return }
        api = nil
        report.unfollow(run.lines.mailbox)
        report.unobserve(run.state.wakeup)
        for (_, reach) in instances { reach.detach(run.state.wakeup) }
        // The lines first (the last state names each target's last event), then the state.
        run.lines.mailbox.finish()
        await run.tasks[0].value
        run.state.finish(publishing: final)
        await run.tasks[1].value
        run.outputs.stop()
    }

    // MARK: Reload

    /// Applies a new configuration at once, every section of it: the outputs take their new settings (the report log
    /// is reopened either way), a new or removed textfile starts or stops its sink, a changed `api` starts the state
    /// file, Varlink socket and hooks again, a removed target writes its `stop` line and a new one its `start` line,
    /// and each instance rebuilds only the sources whose settings changed (kept targets keep their reported view: a
    /// reload is not a change). Returns the sections that changed.
    @discardableResult
    public func apply(_ new: AgentConfig) async -> [String] {
        let old = configuration
        var changed: [String] = []
        if new.report != old.report { changed.append("report") }
        if new.changes != old.changes { changed.append("changes") }
        if new.signal != old.signal { changed.append("signal") }
        if new.targets != old.targets { changed.append("targets") }
        if new.modems != old.modems { changed.append("modems") }
        if new.wifi != old.wifi { changed.append("wifi") }
        if new.interfaceKinds != old.interfaceKinds { changed.append("interface_kinds") }
        if new.interfaceUnderlays != old.interfaceUnderlays { changed.append("interface_underlays") }
        if new.platPrefix != old.platPrefix { changed.append("clat") }
        if new.uplinks != old.uplinks { changed.append("uplinks") }
        if new.validation != old.validation { changed.append("validation") }
        if new.probe != old.probe { changed.append("probe") }
        if new.prometheusTextfile != old.prometheusTextfile { changed.append("prometheus") }
        if new.logLevel != old.logLevel { changed.append("log_level") }
        if new.diagReportLines != old.diagReportLines { changed.append("diag") }
        if new.api != old.api { changed.append("api") }
        configuration = new

        logLevel?.set(new.logLevel)
        for run in sinks { run.sink.apply(new) }
        if stopped { return changed }

        // The textfile: started or stopped with its key.
        if old.prometheusTextfile == nil, let path = new.prometheusTextfile {
            let report = self.report
            let p = PrometheusSink(
                textfile: PrometheusTextfile(path: path, logger: logger), targets: new.targets,
                logStats: { report.logStats })
            sinks.append(SinkRun(sink: p, mailbox: Mailbox(capacity: p.capacity)))
            if started { startSink(sinks.count - 1) }
            for (_, reach) in instances { reach.attach(sinks[sinks.count - 1].mailbox) }
        } else if new.prometheusTextfile == nil, let i = sinks.firstIndex(where: { $0.sink is PrometheusSink }) {
            // Written one last time with what it has, then left alone.
            let run = sinks.remove(at: i)
            for (_, reach) in instances { reach.detach(run.mailbox) }
            run.mailbox.finish()
            await run.task?.value
        }

        guard started, !stopped else { return changed }
        // The API outputs: started again with a changed `api` (their state goes on from the same lines).
        if new.api != old.api {
            await stopAPI(final: false)
            startAPI(new)
        } else {
            api?.state.update(refresh: .seconds(new.stateRefreshSeconds))
        }

        // Targets: removed ones stop (their last line), kept ones take the new options, new ones start.
        for (target, reach) in instances where !new.targets.contains(target) {
            reach.stop(reason: "target removed from the configuration")
            for run in sinks { reach.detach(run.mailbox) }
            if let api { reach.detach(api.state.wakeup) }
        }
        let kept = instances.filter { new.targets.contains($0.target) }
        instances = []
        for target in new.targets {
            if let existing = kept.first(where: { $0.target == target }) {
                existing.reach.options = options(new, target: target)
                instances.append(existing)
            } else {
                addInstance(target)
            }
        }
        api?.state.show(instances.map(\.reach))
        return changed
    }
}
