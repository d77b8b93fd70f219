// The agent's outputs. Each sink reads the events of every target from a bounded mailbox of its own, on a task of
// its own: a slow disk under the report log, or a textfile on a stuck mount, delays only that sink, never a source,
// another sink or another target. A sink that falls further behind than its mailbox holds loses the oldest events
// and knows how many (the report log counts them as dropped lines). More outputs (a state file, a Varlink server,
// hooks) are more sinks.

import GatewayReach
import Logging
import Synchronization

/// Where lines go besides the report log: `reach watch` prints them, tests collect them.
public typealias LineHandler = @Sendable (_ type: ReportEventType, _ line: JSON, _ snapshot: Snapshot, _ change: ChangeEvent?) -> Void

/// One output of the agent.
public protocol AgentSink: AnyObject, Sendable {
    /// For logs.
    var name: String { get }
    /// Events held for the sink while it is busy (the newest kept).
    var capacity: Int { get }
    /// Consumes events until the mailbox ends (after the last targets' stop events). Runs on a task of its own.
    func run(_ events: Mailbox<MonitorEvent>) async
    /// A new configuration (SIGHUP); called between events, never during one.
    func apply(_ config: AgentConfig)
}

/// The report lines: numbered over every target (`event.seq`, from 1 per agent run), written to the report log and
/// handed to `onLine`. A line that was due but dropped from the mailbox still takes its number, and the log counts
/// it as dropped, so a gap in `seq` is always a line that could not be written.
public final class ReportSink: AgentSink {
    private struct State {
        var log: ReportLog?
        var seq: UInt64 = 0
    }

    public let name = "report"
    public let capacity: Int
    private let state: Mutex<State>
    private let onLine: LineHandler?
    private let published = Mutex(ReportLog.Stats())

    public init(log: ReportLog?, onLine: LineHandler?, capacity: Int = 1024) {
        self.state = Mutex(State(log: log))
        self.onLine = onLine
        self.capacity = capacity
    }

    /// Lines numbered so far (written or not).
    public var linesSequenced: UInt64 { state.withLock { $0.seq } }
    /// The log's counters as of the last line (for the textfile; never waits for a write in progress).
    public var logStats: ReportLog.Stats { published.withLock { $0 } }

    public func run(_ events: Mailbox<MonitorEvent>) async {
        while let delivery = await events.receive() {
            let e = delivery.element
            let line = state.withLock { s -> JSON in
                if delivery.droppedBefore > 0 {
                    s.seq += UInt64(delivery.droppedBefore)
                    s.log?.countDropped(delivery.droppedBefore, time: e.snapshot.time)
                }
                s.seq += 1
                let line = ReportLine.json(e, seq: s.seq)
                s.log?.append(line, time: e.snapshot.time)
                if let stats = s.log?.stats { published.withLock { $0 = stats } }
                return line
            }
            onLine?(e.kind, line, e.snapshot, e.change)
        }
    }

    public func apply(_ config: AgentConfig) {
        state.withLock { s in
            s.log?.update(ReportLog.Settings(config.report))
            s.log?.reopen()
        }
    }

    /// Reopens the report log (SIGHUP, after an external move), keeping its settings.
    public func reopen() { state.withLock { $0.log?.reopen() } }
}

/// node_exporter's textfile: rewritten whenever the sink has caught up with its events (and once more at the end),
/// from the latest snapshot and reported view of each target and the report log's counters.
public final class PrometheusSink: AgentSink {
    private struct TargetState {
        var snapshot: Snapshot
        var view: ReportedView?
        var changes: UInt64 = 0
        var lastChange: Timestamp?
    }

    private struct State {
        var textfile: PrometheusTextfile
        var order: [Target]
        var targets: [Target: TargetState] = [:]
    }

    public let name = "prometheus"
    public let capacity: Int
    private let state: Mutex<State>
    private let logStats: @Sendable () -> ReportLog.Stats

    public init(textfile: PrometheusTextfile, targets: [Target], logStats: @escaping @Sendable () -> ReportLog.Stats, capacity: Int = 256) {
        self.state = Mutex(State(textfile: textfile, order: targets))
        self.logStats = logStats
        self.capacity = capacity
    }

    public func run(_ events: Mailbox<MonitorEvent>) async {
        while let delivery = await events.receive() {
            let e = delivery.element
            state.withLock { s in
                let target = e.snapshot.target
                var t = s.targets[target] ?? TargetState(snapshot: e.snapshot)
                t.snapshot = e.snapshot
                t.view = e.reported
                switch e.kind {
                case .start: t.lastChange = e.snapshot.time
                case .change:
                    t.changes += 1
                    t.lastChange = e.snapshot.time
                case .periodic, .stop: break
                }
                s.targets[target] = t
            }
            if events.count == 0 { write() }
        }
        write()
    }

    private func write() {
        let stats = logStats()
        state.withLock { s in
            let input = MetricsInput(
                targets: s.order.compactMap { target in
                    s.targets[target].map {
                        MetricsInput.TargetMetrics(snapshot: $0.snapshot, view: $0.view, changes: $0.changes, lastChange: $0.lastChange)
                    }
                },
                log: stats)
            s.textfile.write(PrometheusText.render(input))
        }
    }

    public func apply(_ config: AgentConfig) {
        state.withLock { s in
            if let path = config.prometheusTextfile { s.textfile.update(path: path) }
            s.order = config.targets
            s.targets = s.targets.filter { config.targets.contains($0.key) }
        }
    }
}
