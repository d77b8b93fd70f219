// The engine: bytes in, bytes out, on an injected clock. It frames what the host wrote, applies faults, answers
// from the capture (replay) or the protocol device, runs the timeline, and says what to write and when.
// It does no I/O: `reach-modem-sim` feeds it from the pty and the control socket and carries out its actions.

import ReachCore

/// What the I/O loop must do.
public enum EngineAction: Sendable, Equatable {
    /// Write these bytes to the port. `note` is the decoded summary for the log.
    case write([UInt8], note: String)
    /// Close the port (the master side of the pty).
    case close
    /// Open a new port after a close.
    case reopen
    /// A line for the log.
    case log(String)
}

public struct ModemEngine: Sendable {
    enum Device: Sendable {
        case qmi(QMIDevice)
        case mbim(MBIMDevice)
    }

    public let scenario: Scenario
    public let modemProtocol: ModemProtocol
    public private(set) var state: SimulatedState
    var device: Device
    var replayer: Replayer?
    /// With a capture and no scenario, requests the capture does not hold get NOT_SUPPORTED / NoDeviceSupport.
    let replayOnly: Bool
    var qmuxFramer = QMUXFramer()
    var mbimAssembler = MBIMAssembler()
    /// Request-triggered faults in force, and close faults waiting for a request count.
    public private(set) var faults: [FaultRule] = []
    /// Requests the modem refuses (the scenario's `refuse`, replaced by a `refuse` operation); faults leave them.
    public private(set) var refusals: [Refusal]
    var closeAt: [(requests: Int, reopenAfterMs: UInt64?)] = []
    var timelineIndex = 0
    var pending: [(due: UInt64, seq: Int, action: EngineAction)] = []
    var sequence = 0
    var rng: SplitMix64
    public private(set) var portOpen = true
    /// Requests answered (fault-free or not), and per message, for `{"query": "stats"}` and close faults.
    public private(set) var answered = 0
    public private(set) var requestCounts: [String: Int] = [:]
    /// Requests refused per message (a `refuse` entry matched).
    public private(set) var refusedCounts: [String: Int] = [:]
    public private(set) var indicationsSent = 0
    var started = false
    /// Damages answers on purpose (`--garbage` / `--mutate`); nil for an honest modem.
    var fuzzer: Fuzzer?

    /// A scenario, a capture, or both (the capture answers first, the scenario the rest).
    public init(scenario: Scenario?, capture: Capture? = nil, fuzz: FuzzMode? = nil) {
        precondition(scenario != nil || capture != nil, "the engine needs a scenario or a capture")
        self.fuzzer = fuzz.map(Fuzzer.init)
        let s = scenario ?? Scenario(modemProtocol: capture!.modemProtocol)
        self.scenario = s
        self.modemProtocol = s.modemProtocol
        self.state = s.state
        self.refusals = s.refusals
        self.replayer = capture.map(Replayer.init)
        self.replayOnly = scenario == nil
        self.rng = SplitMix64(seed: s.seed)
        switch s.modemProtocol {
        case .qmi: device = .qmi(QMIDevice(scenario: s))
        case .mbim: device = .mbim(MBIMDevice(scenario: s))
        }
    }

    // MARK: Clock

    /// The earliest time `advance` has work: a delayed write, a reopen, or the next timeline step.
    public var nextDeadline: UInt64? {
        let p = pending.map(\.due).min()
        let t = timelineIndex < scenario.timeline.count ? scenario.timeline[timelineIndex].atMs : nil
        switch (p, t) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        default: return nil
        }
    }

    /// Applies the scenario's fault list (time 0), then whatever is due.
    public mutating func start(now: UInt64) -> [EngineAction] {
        guard !started else { return [] }
        started = true
        var out: [EngineAction] = []
        for rule in scenario.faults { out += arm(rule, now: now) }
        return out + advance(now: now)
    }

    /// Timeline steps and delayed actions that are due.
    public mutating func advance(now: UInt64) -> [EngineAction] {
        var out: [EngineAction] = []
        while timelineIndex < scenario.timeline.count, scenario.timeline[timelineIndex].atMs <= now {
            let step = scenario.timeline[timelineIndex]
            timelineIndex += 1
            out.append(.log("timeline: step at \(step.atMs) ms"))
            out += apply(step.operation, now: now)
        }
        let due = pending.filter { $0.due <= now }.sorted { ($0.due, $0.seq) < ($1.due, $1.seq) }
        pending.removeAll { $0.due <= now }
        for item in due { out += perform(item.action) }
        return out
    }

    private mutating func schedule(_ action: EngineAction, at due: UInt64, now: UInt64) -> [EngineAction] {
        if due <= now { return perform(action) }
        sequence += 1
        pending.append((due, sequence, action))
        return []
    }

    /// Writes are dropped while the port is closed by a fault; close/reopen keep the flag in step.
    private mutating func perform(_ action: EngineAction) -> [EngineAction] {
        switch action {
        case .write:
            return portOpen ? [action] : [.log("port closed: dropped a write")]
        case .close:
            portOpen = false
            return [action]
        case .reopen:
            portOpen = true
            qmuxFramer = QMUXFramer()
            mbimAssembler = MBIMAssembler()
            return [action]
        case .log:
            return [action]
        }
    }

    // MARK: Operations (timeline, control socket)

    public mutating func apply(_ op: Operation, now: UInt64) -> [EngineAction] {
        var out: [EngineAction] = []
        if op.clearFaults {
            faults = []
            closeAt = []
            out.append(.log("faults cleared"))
        }
        for rule in op.faults { out += arm(rule, now: now) }
        if let refuse = op.refuse {
            refusals = refuse
            out.append(.log("refusing: " + (refuse.isEmpty ? "nothing" : refuse.map { "\($0.message) \($0.action)" }
                .joined(separator: ", "))))
        }
        var changed: StateAspects = []
        if let patch = op.set { changed = state.apply(patch) }
        if op.indicate { changed = .all }
        if op.quiet {
            if !changed.isEmpty { out.append(.log("quiet: state changed without indications")) }
        } else if !changed.isEmpty {
            out += indications(changed, now: now)
        }
        return out
    }

    private mutating func arm(_ rule: FaultRule, now: UInt64) -> [EngineAction] {
        switch (rule.trigger, rule.action) {
        case let (.now, .close(reopen)):
            return close(reopenAfterMs: reopen, now: now)
        case let (.afterRequests(n), .close(reopen)):
            closeAt.append((answered + n, reopen))
            return [.log("fault armed: close after \(n) more requests")]
        case let (.now, .garbage(length, _)):
            let bytes = garbage(length)
            return schedule(.write(bytes, note: "garbage (\(length) bytes)"), at: now, now: now)
        default:
            faults.append(rule)
            return [.log("fault armed: \(rule.action)" + (rule.messages.map { " on \($0.map(\.description))" } ?? ""))]
        }
    }

    private mutating func close(reopenAfterMs: UInt64?, now: UInt64) -> [EngineAction] {
        var out = schedule(.close, at: now, now: now)
        if let reopenAfterMs { out += schedule(.reopen, at: now + reopenAfterMs, now: now) }
        return out
    }

    private mutating func garbage(_ length: Int) -> [UInt8] {
        // Never the byte a client resynchronises on: QMUX's 0x01 marker.
        rng.bytes(length, avoiding: modemProtocol == .qmi ? [0x01] : [])
    }

    private mutating func indications(_ changed: StateAspects, now: UInt64) -> [EngineAction] {
        var out: [EngineAction] = []
        switch device {
        case var .qmi(d):
            var messages = d.indications(changed, state: state)
            if changed.contains(.dataSession) { messages += d.wdsIndications(state: state, force: changed == .all) }
            device = .qmi(d)
            for m in messages {
                indicationsSent += 1
                out += schedule(.write(m.encoded(), note: m.summary), at: now, now: now)
            }
        case var .mbim(d):
            var messages = d.indications(changed, state: state)
            if changed.contains(.dataSession) { messages += d.connectNotifications(state: state, force: changed == .all) }
            device = .mbim(d)
            for m in messages {
                indicationsSent += 1
                for f in m.encodedFragments(maxTransfer: d.maxTransfer) {
                    out += schedule(.write(f, note: m.summary), at: now, now: now)
                }
            }
        }
        return out
    }

    // MARK: Requests

    /// Bytes the host wrote.
    public mutating func receive(_ bytes: [UInt8], now: UInt64) -> [EngineAction] {
        guard portOpen else { return [] }
        var out: [EngineAction] = []
        switch modemProtocol {
        case .qmi:
            for item in qmuxFramer.feed(bytes) {
                switch item {
                case let .skipped(n): out.append(.log("in: skipped \(n) bytes that are no QMUX frame"))
                case let .frame(frame): out += qmiFrame(frame, now: now)
                }
            }
        case .mbim:
            // MBIM messages may arrive in pieces or several at once: log the bytes as read, then each message.
            out.append(.log("in: \(Hex.string(bytes))"))
            for item in mbimAssembler.feed(bytes) {
                switch item {
                case .incomplete: out.append(.log("in: MBIM fragment stored"))
                case let .malformed(tid, error, why):
                    out.append(.log("in: malformed MBIM message: \(why)"))
                    let m = MBIMMessage(type: .functionError, transactionID: tid, code: error)
                    out += schedule(.write(m.encoded(), note: m.summary), at: now, now: now)
                case let .message(m): out += mbimMessage(m, now: now)
                }
            }
        }
        return out
    }

    /// The refusal of the request, if any, then the faults that apply to it, taking one use from each counted rule.
    private mutating func matchingFaults(
        _ name: String, _ matches: (MessageSelector) -> Bool
    ) -> [FaultRule.Action] {
        var actions: [FaultRule.Action] = []
        if let refusal = refusals.first(where: { matches($0.message) }) {
            refusedCounts[name, default: 0] += 1
            actions.append(refusal.action)
        }
        for i in faults.indices where faults[i].trigger == .request && faults[i].count != 0 {
            guard faults[i].messages?.contains(where: matches) ?? true else { continue }
            actions.append(faults[i].action)
            if let c = faults[i].count { faults[i].count = c - 1 }
        }
        faults.removeAll { $0.count == 0 }
        return actions
    }

    private mutating func qmiFrame(_ frame: [UInt8], now: UInt64) -> [EngineAction] {
        let request: QMIMessage
        do {
            request = try QMIMessage.decode(frame)
        } catch {
            var out: [EngineAction] = [.log("in: \(Hex.string(frame)) | malformed: \(error)")]
            // Answer MALFORMED_MESSAGE when the header is readable, as firmware does.
            if frame.count >= 12 {
                let service = frame[4]
                let control = service == QMIService.ctl
                let tid = control ? UInt16(frame[7]) : UInt16(frame[7]) | UInt16(frame[8]) << 8
                let idAt = control ? 8 : 9
                if frame.count >= idAt + 2 {
                    let id = UInt16(frame[idAt]) | UInt16(frame[idAt + 1]) << 8
                    let shell = QMIMessage(service: service, clientID: frame[5], kind: .request, transactionID: tid,
                                           messageID: id, tlvs: [])
                    let reply = QMIMessage.response(to: shell, error: QMIError.malformedMessage)
                    out += schedule(.write(reply.encoded(), note: reply.summary), at: now, now: now)
                }
            }
            return out
        }
        var out: [EngineAction] = [.log("in: \(Hex.string(frame)) | \(request.summary)")]
        guard request.kind == .request else { return out + [.log("ignored: the host sent a \(request.kind)")] }
        let selectorName = MessageSelector.qmi(service: request.service, message: request.messageID).description
        requestCounts[selectorName, default: 0] += 1
        let actions = matchingFaults(selectorName) { sel in
            guard case let .qmi(s, m) = sel else { return false }
            return s == request.service && (m == nil || m == request.messageID)
        }
        if actions.contains(.silence) { return out + [.log("fault: silence")] }

        var frames: [(bytes: [UInt8], note: String)]
        // A WDS Start or Stop Network changes the sessions: the clients that see it hear of it after the answer.
        var sessionsChanged = false
        if let code = actions.compactMap({ if case let .error(c) = $0 { return c } else { return nil } }).first {
            let reply = QMIMessage.response(to: request, error: UInt16(truncatingIfNeeded: code))
            frames = [(reply.encoded(), reply.summary + " (fault)")]
        } else if let recorded = replayer?.answer(request) {
            frames = [(recorded, "replay: " + ((try? QMIMessage.decode(recorded).summary) ?? "recorded response"))]
        } else if replayOnly && !request.isControl {
            let reply = QMIMessage.response(to: request, error: QMIError.notSupported)
            frames = [(reply.encoded(), reply.summary + " (not in the capture)")]
        } else {
            guard case var .qmi(d) = device else { return out }
            let before = state.effectiveSessions
            let replies = d.handle(request, state: &state)
            device = .qmi(d)
            frames = replies.map { ($0.encoded(), $0.summary) }
            sessionsChanged = state.effectiveSessions != before
        }
        if var f = fuzzer {
            switch f.mode {
            case .garbage: frames = f.garbage(qmi: request, real: frames.map(\.bytes)).map { ($0, "fuzz: garbage") }
            case .mutate: frames = frames.map { (f.mutate($0.bytes), "fuzz: mutated " + $0.note) }
            }
            fuzzer = f
        }
        out += deliver(frames, actions: actions, now: now)
        if sessionsChanged { out += indications(.dataSession, now: now) }
        return out
    }

    private mutating func mbimMessage(_ m: MBIMMessage, now: UInt64) -> [EngineAction] {
        var out: [EngineAction] = [.log("in: \(m.summary)")]
        let key: MessageSelector?
        switch m.type {
        case .open: key = .mbimOpen
        case .close: key = .mbimClose
        case .command: key = m.service.map { .mbim(service: $0, cid: m.cid) }
        default: key = nil
        }
        if let key { requestCounts[key.description, default: 0] += 1 }
        let actions = matchingFaults(key?.description ?? "") { sel in
            switch (sel, key) {
            case (.mbimOpen, .mbimOpen?), (.mbimClose, .mbimClose?): return true
            case let (.mbim(s, c), .mbim(ks, kc)?): return s == ks && (c == nil || c == kc)
            default: return false
            }
        }
        if actions.contains(.silence) { return out + [.log("fault: silence")] }
        guard case var .mbim(d) = device else { return out }
        var frames: [(bytes: [UInt8], note: String)]
        let errorCode = actions.compactMap({ if case let .error(c) = $0 { return c } else { return nil } }).first
        if let code = errorCode, m.type == .command || m.type == .open {
            let reply = m.type == .open
                ? MBIMMessage(type: .openDone, transactionID: m.transactionID, code: code)
                : d.done(m, status: code)
            frames = reply.encodedFragments(maxTransfer: d.maxTransfer).map { ($0, reply.summary + " (fault)") }
        } else if m.type == .command, d.isOpen, let recorded = replayer?.answer(m) {
            frames = [(recorded, "replay: " + ((try? MBIMMessage.decode(recorded).summary) ?? "recorded response"))]
        } else if replayOnly, m.type == .command, d.isOpen {
            let reply = d.done(m, status: MBIMStatus.noDeviceSupport)
            frames = [(reply.encoded(), reply.summary + " (not in the capture)")]
        } else {
            let replies = d.handle(m, state: state)
            device = .mbim(d)
            frames = replies.flatMap { r in r.encodedFragments(maxTransfer: d.maxTransfer).map { ($0, r.summary) } }
        }
        if var f = fuzzer {
            switch f.mode {
            case .garbage: frames = f.garbage(mbim: m, real: frames.map(\.bytes)).map { ($0, "fuzz: garbage") }
            case .mutate: frames = frames.map { (f.mutate($0.bytes), "fuzz: mutated " + $0.note) }
            }
            fuzzer = f
        }
        out += deliver(frames, actions: actions, now: now)
        return out
    }

    /// Sends the reply frames with the faults that shape them (delay, garbage, truncation), then counts the
    /// request and fires close faults whose count is reached.
    private mutating func deliver(
        _ frames: [(bytes: [UInt8], note: String)], actions: [FaultRule.Action], now: UInt64
    ) -> [EngineAction] {
        var out: [EngineAction] = []
        var due = now
        var frames = frames
        for action in actions {
            switch action {
            case let .delay(ms): due += ms
            case let .truncate(keep):
                if let first = frames.first {
                    let n = min(first.bytes.count - 1, keep ?? first.bytes.count / 2)
                    frames = [(Array(first.bytes.prefix(max(1, n))), "truncated to \(max(1, n)) of \(first.bytes.count) bytes: " + first.note)]
                }
            default: break
            }
        }
        for action in actions {
            if case let .garbage(length, replace) = action {
                let bytes = garbage(length)
                if replace { frames = [] }
                frames.insert((bytes, "garbage (\(length) bytes)"), at: 0)
            }
        }
        for f in frames { out += schedule(.write(f.bytes, note: f.note), at: due, now: now) }
        answered += 1
        if let hit = closeAt.firstIndex(where: { $0.requests <= answered }) {
            let reopen = closeAt[hit].reopenAfterMs
            closeAt.remove(at: hit)
            // After the answer has gone out (a delayed answer is lost with the port, as on a real unplug).
            out += schedule(.log("fault: closing the port after \(answered) requests"), at: now, now: now)
            out += close(reopenAfterMs: reopen, now: now)
        }
        return out
    }

    // MARK: Control socket

    /// One control line → the JSON reply line and the actions it caused.
    public mutating func control(_ line: String, now: UInt64) -> (reply: String, actions: [EngineAction]) {
        let op: Operation
        do {
            op = try ScenarioParser.controlLine(line, modemProtocol)
            if let patch = op.set {
                var probe = state
                _ = probe.apply(patch)
                try ScenarioParser.checkConsistency(probe, path: "control.set", protocol: modemProtocol)
            }
        } catch {
            return (JSON.object([("ok", .bool(false)), ("error", .string(error.description))]).serialized(), [])
        }
        var reply: [(String, JSON)] = [("ok", .bool(true))]
        switch op.query {
        case "state"?: reply.append(("state", stateJSON))
        case "stats"?: reply.append(("stats", statsJSON))
        default: break
        }
        let actions = apply(op, now: now)
        return (JSON.object(reply).serialized(), [.log("control: \(line)")] + actions)
    }

    public var stateJSON: JSON {
        func measurement(_ m: SignalMeasurement) -> JSON {
            var o: [(String, JSON)] = []
            if let v = m.rssi { o.append(("rssi_dbm", .double(v))) }
            if let v = m.rsrp { o.append(("rsrp_dbm", .double(v))) }
            if let v = m.rsrq { o.append(("rsrq_db", .double(v))) }
            if let v = m.sinr { o.append(("sinr_db", .double(v))) }
            if let v = m.rscp { o.append(("rscp_dbm", .double(v))) }
            if let v = m.ecio { o.append(("ecio_db", .double(v))) }
            return .object(o)
        }
        var signal = measurement(state.signal)
        if let nr = state.nrSignal, case var .object(o) = signal {
            o.append(("nr", measurement(nr)))
            signal = .object(o)
        }
        return .object([
            ("sim", .string(state.sim.rawValue)),
            ("registration", .string(state.registration.rawValue)),
            ("access_technologies", .array(state.accessTechnologies.names.map(JSON.string))),
            ("operator", state.networkOperator.map {
                .object([("mcc", .string($0.mcc)), ("mnc", .string($0.mnc)), ("name", .string($0.name))])
            } ?? .null),
            ("signal", signal),
            ("packet_service", .string(state.packetService.rawValue)),
            ("reject_cause", .optional(state.rejectCause)),
            ("data_sessions", .array(state.effectiveSessions.map { d in
                var ips: [JSON] = []
                if d.ipv4 { ips.append(.string("ipv4")) }
                if d.ipv6 { ips.append(.string("ipv6")) }
                return .object([
                    (modemProtocol == .qmi ? "mux_id" : "session_id", .int(d.channel)),
                    ("ip_types", .array(ips)), ("state", .string(d.state.rawValue)),
                ])
            })),
        ])
    }

    public var statsJSON: JSON {
        .object([
            ("requests", .object(requestCounts.sorted { $0.key < $1.key }.map { ($0.key, JSON.int($0.value)) })),
            ("refused", .object(refusedCounts.sorted { $0.key < $1.key }.map { ($0.key, JSON.int($0.value)) })),
            ("answered", .int(answered)),
            ("indications", .int(indicationsSent)),
            ("faults_armed", .int(faults.count + closeAt.count)),
            ("port_open", .bool(portOpen)),
        ])
    }
}
