// The agent's outputs. Each sink reads from a bounded mailbox of its own, on a task of its own: a slow disk under the
// report log, a textfile on a stuck mount, a Varlink client that stops reading or a hook that hangs delays only that
// sink, never a source, another sink or another target. A sink that falls further behind than its mailbox holds loses
// the oldest elements and knows how many (the report log counts them as dropped lines).
//
//     targets' Reachability ──events──▶ report sink ──numbered lines──▶ API sink (Varlink change lines, hooks)
//                           ──events──▶ textfile sink
//                           ──"a part changed"──▶ state sink (state.json, Varlink GetStatus)
//
// Lines are numbered in one place, the report sink, after which they are handed on: every output that shows a
// line shows the log's number for it, and never before the line is in the log.

import GatewayReach
import ReachLog
import ReachSystem
import Synchronization

/// Where lines go besides the report log: `reach watch` prints them, tests collect them. Called on the report sink's
/// task right after the line is written: it must not block (`reach watch` prints to its terminal).
public typealias LineHandler = @Sendable (_ type: ReportEventType, _ line: JSON, _ snapshot: Snapshot, _ change: ChangeEvent?) -> Void

/// One output of the agent fed with the targets' events.
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

/// A report line as written to the log, numbered: what the outputs after the log see.
public struct WrittenLine: Sendable {
    public var type: ReportEventType
    public var seq: UInt64
    public var line: JSON
    public var snapshot: Snapshot
    public var change: ChangeEvent?
}

/// The report lines: numbered over every target (`event.seq`, from 1 per agent run), written to the report log,
/// handed to `onLine` and then to each follower's mailbox. A line that was due but dropped from the mailbox still
/// takes its number, and the log counts it as dropped, so a gap in `seq` is always a line that could not be written.
public final class ReportSink: AgentSink {
    /// The cost of handing lines on, by the agent's own clocks (the state's `agent.outputs`).
    public struct Timing: Sendable {
        /// The most CPU time this sink's thread spent handing one line to the outputs after the log (posting into
        /// their mailboxes, and `onLine`): all that those outputs can cost a line.
        public var handoffMaxNanos: Int64 = 0
        /// The most wall time from a change's snapshot (assembled on the event) to its line being in the log.
        public var changeDelayMaxNanos: Int64 = 0
    }

    private struct State {
        var log: ReportLog?
        var seq: UInt64 = 0
    }

    public let name = "report"
    public let capacity: Int
    private let state: Mutex<State>
    private let onLine: LineHandler?
    private let published = Mutex(ReportLog.Stats())
    /// The number of the last line written (read without waiting for a write in progress).
    private let written = Atomic<UInt64>(0)
    private let followers = Mutex<[ObjectIdentifier: Mailbox<WrittenLine>]>([:])
    private let observers = Mutex<[ObjectIdentifier: Wakeup]>([:])
    private let timingBox = Mutex(Timing())
    /// An event taken from the mailbox and not yet written (and its observers not yet told).
    private let writing = Atomic<Bool>(false)

    public init(log: ReportLog?, onLine: LineHandler?, capacity: Int = 1024) {
        self.state = Mutex(State(log: log))
        self.onLine = onLine
        self.capacity = capacity
    }

    /// Lines numbered and written (or counted as dropped) so far: the last `seq`.
    public var linesSequenced: UInt64 { written.load(ordering: .acquiring) }
    /// The log's counters as of the last line (for the textfile; never waits for a write in progress).
    public var logStats: ReportLog.Stats { published.withLock { $0 } }
    public var timing: Timing { timingBox.withLock { $0 } }
    /// Whether a line is being written now (its observers are told when it is).
    public var isWriting: Bool { writing.load(ordering: .acquiring) }

    /// Hands every line written from now on to `mailbox` too (without waiting: a full mailbox drops its oldest).
    public func follow(_ mailbox: Mailbox<WrittenLine>) { followers.withLock { $0[ObjectIdentifier(mailbox)] = mailbox } }
    public func unfollow(_ mailbox: Mailbox<WrittenLine>) {
        followers.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(mailbox)) }
    }

    /// Signals `wakeup` after every line (the state's `last_seq` moved), until `unobserve`.
    public func observe(_ wakeup: Wakeup) { observers.withLock { $0[ObjectIdentifier(wakeup)] = wakeup } }
    public func unobserve(_ wakeup: Wakeup) { observers.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(wakeup)) } }

    public func run(_ events: Mailbox<MonitorEvent>) async {
        while let delivery = await events.receive() {
            writing.store(true, ordering: .releasing)
            let e = delivery.element
            let (seq, line) = state.withLock { s -> (UInt64, JSON) in
                if delivery.droppedBefore > 0 {
                    s.seq += UInt64(delivery.droppedBefore)
                    s.log?.countDropped(delivery.droppedBefore, time: e.snapshot.time)
                }
                s.seq += 1
                let line = ReportLine.json(e, seq: s.seq)
                s.log?.append(line, time: e.snapshot.time)
                if let stats = s.log?.stats { published.withLock { $0 = stats } }
                return (s.seq, line)
            }
            written.store(seq, ordering: .releasing)
            // Measured on the agent's own clocks: for a change line, the wall time from the snapshot the engine
            // assembled on the event to now, when the line is in the log (a loaded machine's scheduling included);
            // then the CPU time of the hand-over to everything after the log.
            let delay = e.kind == .change ? Int64(e.snapshot.time.seconds(until: .now()) * 1e9) : 0
            let t0 = Sys.threadCPUNanoseconds()
            let written = WrittenLine(type: e.kind, seq: seq, line: line, snapshot: e.snapshot, change: e.change)
            for f in followers.withLock({ Array($0.values) }) { f.post(written) }
            onLine?(e.kind, line, e.snapshot, e.change)
            let handoff = Sys.threadCPUNanoseconds() - t0
            timingBox.withLock { t in
                t.handoffMaxNanos = max(t.handoffMaxNanos, handoff)
                t.changeDelayMaxNanos = max(t.changeDelayMaxNanos, delay)
            }
            writing.store(false, ordering: .releasing)
            for w in observers.withLock({ Array($0.values) }) { w.signal() }
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

/// The change lines for the API outputs (Varlink subscribers, hooks), after the log: from a mailbox of its own that
/// the report sink fills without waiting, on a task of its own. The outputs behind it have threads and queues of
/// their own (AgentOutputs.swift), so this task only hands over.
final class APILineSink: Sendable {
    let outputs: AgentOutputs
    let mailbox: Mailbox<WrittenLine>
    /// Signalled after each line is handed over: the state sink's, so that the state after a line shows the
    /// outputs' counters with that line counted.
    private let handed: Wakeup
    private let handling = Atomic<Bool>(false)
    private let logger: Logger

    init(outputs: AgentOutputs, capacity: Int = 1024, handed: Wakeup, logger: Logger) {
        self.outputs = outputs
        self.mailbox = Mailbox(capacity: capacity)
        self.handed = handed
        self.logger = logger
    }

    /// Whether lines wait here or one is being handed over now.
    var pending: Bool { mailbox.count > 0 || handling.load(ordering: .acquiring) }

    func run() async {
        while let delivery = await mailbox.receive() {
            handling.store(true, ordering: .releasing)
            if delivery.droppedBefore > 0 {
                logger.warning(
                    "API outputs fell behind; lines not handed to Varlink subscribers and hooks",
                    metadata: ["lines.dropped": "\(delivery.droppedBefore)"])
            }
            outputs.line(delivery.element)
            handling.store(false, ordering: .releasing)
            handed.signal()
        }
    }
}

/// The state the state file and Varlink's GetStatus show: every target's current determination with the values last
/// reported, when each source was last heard from, the last `seq`. Published after every determination of any target
/// (a part a source delivered, a tick, a reload), after every line, and at least every `refresh`; nothing before the
/// first line (there is no answer yet), and once more, `stopped`, at the end. A determination whose line is on its way
/// (`linesPending`) is published after that line has reached the API outputs, with its seq and their counters, rather
/// than twice. What it hands over (`onState`)
/// only stores and pokes: rendering and writing happen on the state writer's thread.
final class StateSink: Sendable {
    private struct State {
        var targets: [Reachability] = []
        var refresh: Duration
        /// nil while running; at the end, whether the last state (`stopped`) is published.
        var finishing: Bool?
    }

    let wakeup: Wakeup
    private let state: Mutex<State>
    private let report: ReportSink
    private let onState: @Sendable (HubState) -> Void
    private let linesPending: @Sendable () -> Bool
    private let clock: any MonitorClock
    private let wall: @Sendable () -> Timestamp

    /// - Parameters:
    ///   - wakeup: what the instances, the report sink (after each line) and the API line sink (after handing one
    ///     over) signal.
    ///   - linesPending: whether lines are on their way (events the report sink has not written yet, lines the API
    ///     line sink has not handed over); whoever holds one signals `wakeup` when it is through.
    init(
        refresh: Duration, wakeup: Wakeup, report: ReportSink, linesPending: @escaping @Sendable () -> Bool,
        clock: any MonitorClock, wall: @escaping @Sendable () -> Timestamp, onState: @escaping @Sendable (HubState) -> Void
    ) {
        self.wakeup = wakeup
        self.state = Mutex(State(refresh: refresh))
        self.report = report
        self.linesPending = linesPending
        self.clock = clock
        self.wall = wall
        self.onState = onState
        report.observe(wakeup)
    }

    /// The instances shown, in the configuration's order.
    func show(_ targets: [Reachability]) {
        state.withLock { $0.targets = targets }
        wakeup.signal()
    }

    func update(refresh: Duration) {
        state.withLock { $0.refresh = refresh }
        wakeup.signal()
    }

    /// Ends `run`; with `publishing`, after publishing the last state (`stopped`).
    func finish(publishing: Bool) {
        state.withLock { $0.finishing = publishing }
        wakeup.signal()
    }

    func run() async {
        var next = clock.now()
        while true {
            await clock.sleep(until: next, orUntil: wakeup)
            let (finishing, refresh) = state.withLock { ($0.finishing, $0.refresh) }
            if let finishing {
                if finishing { publish(stopped: true) }
                return
            }
            // A line on its way: its sink wakes this one when the line is written (unless the refresh is due).
            if linesPending(), clock.now() < next { continue }
            publish(stopped: false)
            next = clock.now() + refresh
        }
    }

    private func publish(stopped: Bool) {
        let (targets, refresh) = state.withLock { ($0.targets, $0.refresh) }
        let lastSeq = report.linesSequenced
        guard lastSeq > 0 else { return }
        var heard: [String: Timestamp] = [:]
        var parts: [HubState.TargetPart] = []
        for reach in targets {
            let s = reach.state
            for (source, t) in s.heard where heard[source].map({ $0 < t }) ?? true { heard[source] = t }
            guard let view = s.reported else { continue }  // no first determination yet (a target added by a reload)
            parts.append(HubState.TargetPart(snapshot: s.snapshot, view: view))
        }
        onState(
            HubState(
                time: wall(), targets: parts, heard: heard, lastSeq: lastSeq, stopped: stopped,
                refreshSeconds: Double(refresh.components.seconds) + Double(refresh.components.attoseconds) / 1e18))
    }
}
