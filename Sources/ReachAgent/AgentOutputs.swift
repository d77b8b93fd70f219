// The agent's answer for every other program: the state file, the Varlink socket and the event hooks (with ubus and
// hotplug on OpenWrt), configured by `api`. Each output is self-contained with a narrow input ("the current state",
// "the line just written") and a worker of its own:
// - `StateWriter` renders the state document and replaces STATE_DIRECTORY/state.json through SafeWrite (0644),
//   then hands the same text to the Varlink server; only the newest state waits, older ones are never written;
// - `VarlinkServer` answers GetStatus/Subscribe from what it was handed;
// - `HookRunner` runs the hooks for change lines.
// The agent's sinks (Sinks.swift) call `line` (from the API line sink, each line after it is in the log) and `post`
// (from the state sink), which only store and poke: no I/O, no waiting.

import GatewayReach
import Glibc
import ReachCore
import ReachLog
import Synchronization

/// What the state outputs (state file, Varlink) show: every target's current snapshot with the values last reported,
/// when each source was last heard from, and the last seq (`StateSink` publishes it; `StateDocument` renders it).
public struct HubState: Sendable {
    public struct TargetPart: Sendable {
        public var snapshot: Snapshot
        public var view: ReportedView?
    }

    public var time: Timestamp
    public var targets: [TargetPart]
    /// "route", "wwan", "wifi": the wall time of each source's last update.
    public var heard: [String: Timestamp]
    public var lastSeq: UInt64
    public var stopped: Bool
    /// How often the state is published at the latest (`AgentConfig.stateRefreshSeconds`).
    public var refreshSeconds: Double
}

public final class AgentOutputs: Sendable {
    public let stateFile: String?
    public let varlink: VarlinkServer?
    public let hooks: HookRunner?
    private let writer: StateWriter?
    private let lastEvents = Mutex<[(Target, JSON)]>([])
    /// The report sink whose hand-over figures the counters show (set once the outputs are wired to it). A reference,
    /// not a closure: a function value kept in a Mutex is reabstracted at every `withLock` and written back wrapped
    /// in one more thunk, a chain that grows with every state written.
    private let timingSource = Mutex<ReportSink?>(nil)

    /// Starts the outputs `config.api` asks for. A socket another agent answers on, or a directory that cannot be
    /// made, turns the state file and the socket off for this run (logged); the report log is never affected.
    public static func start(config: AgentConfig, logger: Logger, started: Timestamp = .now()) -> AgentOutputs {
        var varlink: VarlinkServer?
        var stateFile: String?
        if let socketPath = config.api.socketPath {
            var limits = VarlinkServer.Limits()
            limits.admission = config.api.admission
            // The agent's own group (config/reach.sysusers, the unit's Group=): its members have slots of their own.
            limits.group = VarlinkServer.groupID(named: "reach")
            switch VarlinkServer.start(path: socketPath, limits: limits, logger: logger) {
            case let .success(server):
                varlink = server
                stateFile = config.api.stateFile
            case let .failure(e):
                logger.error(
                    "State directory unusable: no state file and no Varlink socket this run",
                    metadata: ["api.state_directory": "\(config.api.stateDirectory ?? "")", "error": "\(e)"])
            }
        }
        var hooks: HookRunner?
        let ubus = HookRunner.Settings.find(["/bin/ubus", "/sbin/ubus", "/usr/bin/ubus", "/usr/sbin/ubus"])
        let hotplug = HookRunner.Settings.find(["/sbin/hotplug-call", "/usr/sbin/hotplug-call"])
        if config.api.hooksDirectory != nil || ubus != nil || hotplug != nil {
            hooks = HookRunner.start(
                HookRunner.Settings(
                    directory: config.api.hooksDirectory, timeoutSeconds: config.api.hookTimeoutSeconds, ubus: ubus,
                    hotplugCall: hotplug),
                logger: logger)
        }
        return AgentOutputs(
            stateFile: stateFile, varlink: varlink, hooks: hooks, identity: AgentIdentity(started: started), logger: logger)
    }

    init(stateFile: String?, varlink: VarlinkServer?, hooks: HookRunner?, identity: AgentIdentity, logger: Logger) {
        self.stateFile = stateFile
        self.varlink = varlink
        self.hooks = hooks
        self.writer = stateFile != nil || varlink != nil
            ? StateWriter(path: stateFile, varlink: varlink, identity: identity, logger: logger) : nil
        writer?.counters = { [weak self] in self?.counters() ?? .object([]) }
        writer?.events = { [weak self] in self?.lastEvents.withLock { $0 } ?? [] }
    }

    /// Where the counters' hand-over figures come from (the report sink that feeds these outputs).
    func measure(_ report: ReportSink) { timingSource.withLock { $0 = report } }

    /// The newest state, for the state file and GetStatus (rendered and written on the writer's thread).
    func post(state: HubState) { writer?.post(state) }

    /// A line that is in the report log: the target's last event, and for a change its Varlink subscribers and hooks.
    func line(_ written: WrittenLine) {
        if let event = written.line["event"] {
            lastEvents.withLock { events in
                if let i = events.firstIndex(where: { $0.0 == written.snapshot.target }) { events[i].1 = event } else {
                    events.append((written.snapshot.target, event))
                }
            }
        }
        if written.type == .change {
            varlink?.post(changeLine: written.line.serialized())
            hooks?.post(line: written.line)
        }
    }

    /// The outputs' counters, for the state's `agent.outputs`.
    func counters() -> JSON {
        var m: [(String, JSON)] = []
        let t = timingSource.withLock { $0 }?.timing ?? ReportSink.Timing()
        m.append(("line_handoff_cpu_max_ms", .double(Double(t.handoffMaxNanos) / 1e6)))
        m.append(("change_line_delay_max_ms", .double(Double(t.changeDelayMaxNanos) / 1e6)))
        if let w = writer {
            let s = w.stats
            m.append(("state_writes", .int(Int64(s.writes))))
            m.append(("state_write_errors", .int(Int64(s.errors))))
        }
        if let v = varlink {
            let s = v.stats
            m.append((
                "varlink",
                .object([
                    ("clients", .int(s.clients)), ("subscribers", .int(s.subscribers)), ("accepted", .int(Int64(s.accepted))),
                    ("refused", .int(Int64(s.refused))),
                    ("dropped", .int(Int64(s.dropped))), ("bad_requests", .int(Int64(s.badRequests))),
                ])))
        }
        if let h = hooks {
            let s = h.stats
            m.append((
                "hooks",
                .object([
                    ("events", .int(Int64(s.events))), ("skipped", .int(Int64(s.skipped))), ("runs", .int(Int64(s.runs))),
                    ("failures", .int(Int64(s.failures))), ("timeouts", .int(Int64(s.timeouts))),
                    ("refused", .int(Int64(s.refused))),
                ])))
        }
        return .object(m)
    }

    /// After the stop lines: the last state is written, the socket removed, hooks let go. Bounded in time.
    public func stop() {
        writer?.stop()
        varlink?.stop()
        hooks?.stop()
    }
}

/// Who is answering: the `agent` object's fixed part.
struct AgentIdentity: Sendable {
    var pid = getpid()
    var started: Timestamp
    /// The network namespace the agent reads routes and links in ("net:[4026531840]"): an answer is only valid for
    /// a reader in the same one.
    var networkNamespace = AgentIdentity.currentNetworkNamespace()

    static func currentNetworkNamespace() -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/self/ns/net", &buffer, buffer.count - 1)
        guard n > 0 else { return "" }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The state document (docs/integration.md, "Other programs"): schema, time, agent, sources, targets. Pure.
enum StateDocument {
    static func render(
        _ state: HubState, identity: AgentIdentity, events: [(Target, JSON)], counters: JSON
    ) -> JSON {
        let agent: JSON = .object([
            ("pid", .int(Int(identity.pid))), ("started", .string(identity.started.rfc3339)),
            ("version", .string(GatewayReachVersion.string)), ("state", .string(state.stopped ? "stopped" : "running")),
            ("last_seq", .int(Int64(clamping: state.lastSeq))), ("refresh_seconds", .double(state.refreshSeconds)),
            ("network_namespace", .string(identity.networkNamespace)), ("outputs", counters),
        ])
        var sources: [(String, JSON)] = []
        for name in ["route", "wwan", "wifi"] {
            guard let t = state.heard[name] else { continue }
            let age = max(0, t.seconds(until: state.time))
            sources.append((name, .object([("updated", .string(t.rfc3339)), ("age_seconds", .double((age * 1000).rounded() / 1000))])))
        }
        let targets: [JSON] = state.targets.map { part in
            let event = events.first(where: { $0.0 == part.snapshot.target })?.1 ?? .null
            guard case var .object(m) = ReportLine.json(snapshot: part.snapshot, view: part.view, event: .null) else { return .null }
            m.removeAll { $0.0 == "event" }
            m.append(("last_event", event))
            return .object(m)
        }
        return .object([
            ("schema", .int(Snapshot.schemaVersion)), ("time", .string(state.time.rfc3339)), ("agent", agent),
            ("sources", .object(sources)), ("targets", .array(targets)),
        ])
    }
}

/// Renders the newest state and writes it, on a thread of its own. Only the newest state waits: a slow disk makes it
/// skip states, never queue them.
final class StateWriter: @unchecked Sendable {
    // @unchecked: `counters` and `events` are set once, before the first post.
    struct Stats: Sendable {
        var writes: UInt64 = 0
        var errors: UInt64 = 0
    }

    let path: String?
    let varlink: VarlinkServer?
    let identity: AgentIdentity
    let logger: Logger
    var counters: @Sendable () -> JSON = { .object([]) }
    var events: @Sendable () -> [(Target, JSON)] = { [] }
    private let wake: SelfPipe?
    private let slot = Mutex<(state: HubState?, stopping: Bool)>((nil, false))
    private let statsBox = Mutex(Stats())
    private let finished = WorkerEnd()

    init(path: String?, varlink: VarlinkServer?, identity: AgentIdentity, logger: Logger) {
        self.path = path
        self.varlink = varlink
        self.identity = identity
        self.logger = logger
        wake = SelfPipe()
        if wake == nil || !startThread("state", { [self] in run() }) {
            logger.error("State writer could not start: no state file this run")
            finished.done()
        }
    }

    var stats: Stats { statsBox.withLock { $0 } }

    func post(_ state: HubState) {
        slot.withLock { $0.state = state }
        wake?.poke()
    }

    /// Writes what is waiting (the stopped state), then ends; at most `timeoutMS`.
    func stop(timeoutMS: Int64 = 2000) {
        slot.withLock { $0.stopping = true }
        wake?.poke()
        finished.await(timeoutMS: timeoutMS)
    }

    private func run() {
        defer { finished.done() }
        var failing = false
        while true {
            wake?.wait(milliseconds: -1)
            let (state, stopping) = slot.withLock { s -> (HubState?, Bool) in
                defer { s.state = nil }
                return (s.state, s.stopping)
            }
            if let state {
                let text = StateDocument.render(state, identity: identity, events: events(), counters: counters()).serialized()
                varlink?.post(state: text)
                if let path {
                    switch SafeWrite.replace(path, with: Array((text + "\n").utf8), mode: 0o644) {
                    case .success:
                        statsBox.withLock { $0.writes += 1 }
                        if failing { logger.info("State file writable again", metadata: ["api.state_file": "\(path)"]) }
                        failing = false
                    case let .failure(e):
                        statsBox.withLock { $0.errors += 1 }
                        if !failing {
                            logger.warning("State file could not be written", metadata: ["api.state_file": "\(path)", "error": "\(e)"])
                        }
                        failing = true
                    }
                }
            }
            if stopping { return }
        }
    }
}
