// Hostile modems for fuzzing clients: `garbage` answers requests with random frames (right headers around random
// bodies, wrong headers, pure noise), `mutate` sends a scenario's own answers damaged (bits flipped, cut short,
// extended). Both are seeded, so a failing seed is a regression case that replays byte for byte. Modem firmware does
// send such things (a USB reset mid-frame, vendor bugs); a client must survive every one of them.

/// How the engine damages what it sends.
public enum FuzzMode: Sendable, Equatable {
    /// Each request is answered with 1-3 random frames: 30 % the real answer, 40 % (MBIM 50 %) the right header
    /// (transaction id, service, message) with status success around a random body, 15 % (MBIM 10 %) a random
    /// header and body, the rest noise. MBIM's OPEN gets its real answer alone three times in four, so that the
    /// commands behind it are reached.
    case garbage(seed: UInt64)
    /// The scenario's answers, each frame left alone (40 %), bit-flipped (20 %), header-flipped (10 %), truncated
    /// (15 %) or extended with random bytes (15 %).
    case mutate(seed: UInt64)

    public var seed: UInt64 {
        switch self {
        case let .garbage(s), let .mutate(s): return s
        }
    }

    public var name: String {
        switch self {
        case .garbage: return "garbage"
        case .mutate: return "mutate"
        }
    }
}

/// The random decisions of a fuzz mode (pure: a seed in, frames out).
public struct Fuzzer: Sendable {
    public let mode: FuzzMode
    private var rng: SplitMix64

    public init(_ mode: FuzzMode) {
        self.mode = mode
        // Distinct streams for seeds 0, 1, 2…: SplitMix64 of the seed itself.
        var mix = SplitMix64(seed: mode.seed)
        rng = SplitMix64(seed: mix.next())
    }

    /// A number in 0..<n.
    private mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(rng.next() % UInt64(n)) }

    private mutating func noise(_ max: Int) -> [UInt8] { rng.bytes(1 + below(max)) }

    // MARK: Garbage

    /// The frames answering a QMI request; `real` are the frames the device would have sent.
    public mutating func garbage(qmi request: QMIMessage, real: [[UInt8]]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for _ in 0..<(1 + below(3)) {
            switch below(100) {
            case 0..<30:
                out += real
            case 30..<70:
                // A response the client will match to its request and parse, full of random TLVs.
                var tlvs = [QMITLV(0x02, [0, 0, 0, 0])]
                for _ in 0..<below(6) { tlvs.append(QMITLV(UInt8(truncatingIfNeeded: 1 + below(0x50)), noise(48))) }
                let reply = QMIMessage(
                    service: request.service, clientID: request.clientID, kind: .response,
                    transactionID: request.transactionID, messageID: request.messageID, tlvs: tlvs)
                var frame = reply.encoded()
                // Sometimes a result TLV length that overruns the message (after the 12- or 13-byte QMUX and SDU
                // header and the TLV's type byte).
                let length = request.isControl ? 13 : 14
                if below(4) == 0 { frame[length] = UInt8(truncatingIfNeeded: rng.next()) }
                out.append(frame)
            case 70..<85:
                var frame: [UInt8] = [0x01, 0, 0, 0x80]
                frame += noise(60)
                let length = UInt16(truncatingIfNeeded: below(2) == 0 ? frame.count - 1 : below(0x10000))
                frame[1] = UInt8(truncatingIfNeeded: length)
                frame[2] = UInt8(truncatingIfNeeded: length >> 8)
                out.append(frame)
            default:
                out.append(noise(64))
            }
        }
        return out
    }

    /// The frames answering an MBIM message; `real` are the frames the device would have sent.
    public mutating func garbage(mbim request: MBIMMessage, real: [[UInt8]]) -> [[UInt8]] {
        // The session must open for the commands behind it to be fuzzed at all: OPEN gets its real answer alone
        // three times in four.
        if request.type == .open && below(4) != 0 { return real }
        var out: [[UInt8]] = []
        for _ in 0..<(1 + below(3)) {
            switch below(100) {
            case 0..<30:
                out += real
            case 30..<80:
                // The done message the client waits for, status success, information buffer random.
                let reply: MBIMMessage
                switch request.type {
                case .open: reply = MBIMMessage(type: .openDone, transactionID: request.transactionID, code: 0)
                case .close: reply = MBIMMessage(type: .closeDone, transactionID: request.transactionID, code: 0)
                default:
                    reply = MBIMMessage(
                        type: .commandDone, transactionID: request.transactionID, code: 0, service: request.service,
                        cid: request.cid, buffer: noise(96))
                }
                var frame = reply.encoded()
                // Sometimes a declared information buffer length that disagrees with the bytes.
                if reply.type == .commandDone && below(4) == 0 && frame.count >= 48 {
                    let v = UInt32(truncatingIfNeeded: rng.next())
                    for i in 0..<4 { frame[44 + i] = UInt8(truncatingIfNeeded: v >> UInt32(8 * i)) }
                }
                out.append(frame)
            case 80..<90:
                // A header of a random type and transaction, a random body, a length that may lie.
                let types: [UInt32] = [0x8000_0001, 0x8000_0002, 0x8000_0003, 0x8000_0004, 0x8000_0007, 0x8000_0005]
                let body = noise(80)
                var w = ByteWriter()
                w.u32(types[below(types.count)])
                w.u32(below(2) == 0 ? UInt32(12 + body.count) : UInt32(truncatingIfNeeded: rng.next()))
                w.u32(below(2) == 0 ? request.transactionID : UInt32(truncatingIfNeeded: rng.next()))
                w.append(body)
                out.append(w.bytes)
            default:
                out.append(noise(64))
            }
        }
        return out
    }

    // MARK: Mutation

    /// One frame of a real answer, damaged or not.
    public mutating func mutate(_ frame: [UInt8]) -> [UInt8] {
        guard !frame.isEmpty else { return frame }
        var f = frame
        switch below(100) {
        case 0..<40:
            return f
        case 40..<60:
            for _ in 0..<(1 + below(4)) { f[below(f.count)] ^= UInt8(1) << UInt8(below(8)) }
        case 60..<70:
            // The header: lengths, types, transaction ids, TLV counts.
            let head = min(f.count, 24)
            for _ in 0..<(1 + below(3)) { f[below(head)] = UInt8(truncatingIfNeeded: rng.next()) }
        case 70..<85:
            f = Array(f.prefix(max(1, below(f.count))))
        default:
            f += noise(64)
        }
        return f
    }
}
