// Drives a ModemEngine without a pty, on a clock the test moves by hand.

import ModemSim
import ReachCore
import Testing

extension [EngineAction] {
    /// The bytes of every write, in order.
    var writes: [[UInt8]] {
        compactMap { if case let .write(bytes, _) = $0 { return bytes } else { return nil } }
    }
}

struct QMIHarness {
    var engine: ModemEngine
    var now: UInt64 = 0
    var nextTID: UInt16 = 1

    init(_ scenario: Scenario, capture: Capture? = nil) {
        engine = ModemEngine(scenario: scenario, capture: capture)
        _ = engine.start(now: 0)
    }

    init(scenarioFile: String) throws { self.init(try Repo.scenario(scenarioFile)) }

    init(replayOnly capture: Capture) {
        engine = ModemEngine(scenario: nil, capture: capture)
        _ = engine.start(now: 0)
    }

    mutating func raw(_ bytes: [UInt8]) -> [EngineAction] { engine.receive(bytes, now: now) }

    /// Sends a request; returns every QMI message written at once (responses and indications).
    mutating func send(_ service: UInt8, cid: UInt8, _ id: UInt16, _ tlvs: [QMITLV] = []) throws -> [QMIMessage] {
        let tid = nextTID
        nextTID += 1
        let m = QMIMessage(service: service, clientID: cid, kind: .request, transactionID: tid, messageID: id, tlvs: tlvs)
        return try raw(m.encoded()).writes.map { try QMIMessage.decode($0) }
    }

    /// Sends a request and returns its one response, checking it echoes service, client, tid and message id.
    mutating func request(_ service: UInt8, cid: UInt8, _ id: UInt16, _ tlvs: [QMITLV] = []) throws -> QMIMessage {
        let tid = nextTID
        let out = try send(service, cid: cid, id, tlvs)
        let r = try #require(out.first(where: { $0.kind == .response }))
        #expect(r.service == service && r.clientID == cid && r.messageID == id)
        #expect(r.transactionID == (service == QMIService.ctl ? tid & 0xFF : tid))
        #expect(r.qmuxFlags == 0x80)
        return r
    }

    mutating func allocate(_ service: UInt8) throws -> UInt8 {
        let r = try request(QMIService.ctl, cid: 0, QMIMessageID.ctlAllocateCID, [QMITLV(0x01, [service])])
        #expect(r.result?.status == 0)
        let v = try #require(r.tlv(0x01))
        #expect(v.count == 2 && v[0] == service)
        return v[1]
    }

    /// Applies a control line (or timeline-like operation) and returns the QMI messages it wrote.
    mutating func control(_ line: String) throws -> (reply: String, messages: [QMIMessage]) {
        let (reply, actions) = engine.control(line, now: now)
        return (reply, try actions.writes.map { try QMIMessage.decode($0) })
    }

    mutating func advance(to t: UInt64) -> [EngineAction] {
        now = t
        return engine.advance(now: t)
    }
}

struct MBIMHarness {
    var engine: ModemEngine
    var now: UInt64 = 0
    var nextTID: UInt32 = 1

    init(_ scenario: Scenario, capture: Capture? = nil) {
        engine = ModemEngine(scenario: scenario, capture: capture)
        _ = engine.start(now: 0)
    }

    init(scenarioFile: String) throws { self.init(try Repo.scenario(scenarioFile)) }

    init(replayOnly capture: Capture) {
        engine = ModemEngine(scenario: nil, capture: capture)
        _ = engine.start(now: 0)
    }

    mutating func raw(_ bytes: [UInt8]) -> [EngineAction] { engine.receive(bytes, now: now) }

    /// Sends a message and returns the reassembled messages written at once.
    mutating func send(_ m: MBIMMessage) throws -> [MBIMMessage] {
        var a = MBIMAssembler()
        var out: [MBIMMessage] = []
        for w in raw(m.encoded()).writes {
            for item in a.feed(w) {
                switch item {
                case let .message(msg): out.append(msg)
                case .incomplete: break
                case let .malformed(_, _, why): Issue.record("the simulator wrote a malformed message: \(why)")
                }
            }
        }
        return out
    }

    @discardableResult
    mutating func open(maxTransfer: UInt32 = 4096) throws -> MBIMMessage {
        let tid = nextTID
        nextTID += 1
        let out = try send(MBIMMessage(type: .open, transactionID: tid, code: maxTransfer))
        let r = try #require(out.first)
        #expect(r.type == .openDone && r.transactionID == tid)
        return r
    }

    /// A Basic Connect command.
    mutating func command(_ cid: UInt32, set: Bool = false, _ buffer: [UInt8] = []) throws -> MBIMMessage {
        try command(MBIMServices.basicConnect, cid, set: set, buffer)
    }

    mutating func command(_ service: MBIMUUID, _ cid: UInt32, set: Bool = false, _ buffer: [UInt8] = []) throws -> MBIMMessage {
        let tid = nextTID
        nextTID += 1
        let out = try send(.command(tid: tid, service: service, cid: cid, set: set, buffer: buffer))
        let r = try #require(out.first(where: { $0.type != .indicateStatus }))
        #expect(r.transactionID == tid)
        if r.type == .commandDone { #expect(r.service == service && r.cid == cid) }
        return r
    }

    /// Negotiates MBIMEx as libmbim does (Device Services, then Version with the host's wish).
    mutating func negotiate(host: UInt16) throws -> UInt16? {
        var b = MBIMBufferBuilder()
        b.u16(0x0100)
        b.u16(host)
        let r = try command(MBIMServices.msBasicConnectExtensions, 15, b.build())
        guard r.code == MBIMStatus.success else { return nil }
        var reader = MBIMBufferReader(r.buffer)
        #expect(try reader.u16("version") == 0x0100)
        return try reader.u16("extended version")
    }

    mutating func control(_ line: String) throws -> (reply: String, messages: [MBIMMessage]) {
        let (reply, actions) = engine.control(line, now: now)
        return (reply, try actions.writes.map { try MBIMMessage.decode($0) })
    }
}
