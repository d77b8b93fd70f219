import Testing

@testable import ReachCore

/// The wire form a modem worker hands states to its parent in: exact round trips of synthesized Codable values, and
/// bytes from a hostile worker refused with an error, never a trap.
@Suite struct WireCodecTests {
    /// A Quectel RM500Q on 5G NSA (EN-DC) as `reach status` shows it, every optional field set.
    static var nsaModem: ModemState {
        var s = ModemState(device: "/dev/cdc-wdm0", protocol: .mbim)
        s.interface = "wwan0"
        s.accessTechnologies = [.lte, .nr]
        s.registration = .roaming
        s.plmn = PLMN(mcc: "262", mnc: "01")
        s.operatorName = "Telekom.de ✓"
        s.signal = SignalMeasurement(rssi: -63, rsrp: -92.5, rsrq: -11, sinr: 14.25)
        s.nrSignal = SignalMeasurement(rsrp: -88, sinr: 18)
        s.qualityPercent = 80
        s.sim = .pinRequired
        s.packetService = .attached
        s.rejectCause = 11
        s.identifiers = ModemIdentifiers(imei: "866758041234567", imsi: "262011234567890")
        s.model = "RM500Q-GL"
        s.manufacturer = "Quectel"
        s.firmware = "RM500QGLABR11A06M4G"
        s.error = "mbim_message_signal_state_query: no answer within 1000 ms"
        return s
    }

    @Test func modemStateRoundTrips() throws {
        let bytes = try WireCodec.encode(Self.nsaModem)
        #expect(try WireCodec.decode(ModemState.self, from: bytes) == Self.nsaModem)
        let bare = ModemState(device: "/dev/wwan0qmi0", protocol: .qmi)
        #expect(try WireCodec.decode(ModemState.self, from: WireCodec.encode(bare)) == bare)
    }

    @Test func healthAndSpecsRoundTrip() throws {
        let value = (SourceHealth(available: true, reason: "hw/modems.json: modems[3].id: bad"),
                     [ModemPortSpec(path: "/dev/cdc-wdm1", protocol: nil, interface: "wwan1")])
        struct Pair: Codable, Equatable {
            var health: SourceHealth
            var specs: [ModemPortSpec]
        }
        let pair = Pair(health: value.0, specs: value.1)
        #expect(try WireCodec.decode(Pair.self, from: WireCodec.encode(pair)) == pair)
    }

    /// Every integer width at its extremes, doubles bit for bit, optionals, enums with payloads, a Duration.
    @Test func primitivesAreExact() throws {
        struct All: Codable, Equatable {
            var i8: [Int8] = [.min, -1, 0, .max]
            var i64: [Int64] = [.min, -1, 0, .max]
            var u8: UInt8 = .max
            var u64: [UInt64] = [0, 127, 128, .max]
            var d: [Double] = [0, -0.0, 1e-310, .greatestFiniteMagnitude, -14.25]
            var f: Float = 0.1
            var absent: Int? = nil
            var text = "αβγ\u{0}\n"
            enum Kind: Codable, Equatable { case a, b(Int, String), c(x: Double?) }
            var kinds: [Kind] = [.a, .b(-7, "x"), .c(x: nil), .c(x: 2.5)]
            var map: [String: Int] = ["one": 1, "two": 2]
            var duration: Duration = .milliseconds(1500)
        }
        let all = All()
        let decoded = try WireCodec.decode(All.self, from: WireCodec.encode(all))
        #expect(decoded == all)
        #expect(decoded.d[1].sign == .minus)
    }

    /// Frames come out whole however the bytes are split, and an announced length above the bound is refused.
    @Test func framesReassembleAndAreBounded() throws {
        let a = try WireFrame.encode(Self.nsaModem)
        let b = try WireFrame.encode(ModemState(device: "/dev/cdc-wdm1", protocol: .qmi))
        let stream = a + b
        for split in [1, 3, 7, stream.count] {
            var buffer = WireFrameBuffer()
            var payloads: [[UInt8]] = []
            var i = 0
            while i < stream.count {
                buffer.append(stream[i..<min(stream.count, i + split)])
                i += split
                while let p = try buffer.next() { payloads.append(p) }
            }
            #expect(payloads.count == 2)
            #expect(try WireCodec.decode(ModemState.self, from: payloads[0]) == Self.nsaModem)
            #expect(buffer.pending == 0)
        }
        var hostile = WireFrameBuffer(maxPayload: 1024)
        hostile.append([0xFF, 0xFF, 0xFF, 0xF0])
        #expect(throws: WireError.self) { try hostile.next() }
    }

    /// Hostile payloads: each is refused with an error naming what was wrong.
    static let hostile: [(String, [UInt8], String)] = [
        ("unknown tag", [0x09], "unknown tag"),
        ("truncated double", [0x05, 1, 2], "double ends early"),
        ("NaN", [0x05, 0, 0, 0, 0, 0, 0, 0xF8, 0x7F], "not finite"),
        ("varint of 11 bytes", [0x04] + [UInt8](repeating: 0xFF, count: 10) + [0x01], "longer than 64 bits"),
        ("string longer than the bytes", [0x06, 0x7F, 0x41], "runs past the end"),
        ("invalid UTF-8", [0x06, 0x02, 0xC3, 0x28], "not UTF-8"),
        ("array count of 2^40", [0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20], "more than the"),
        ("duplicate key", [0x08, 0x02, 0x01, 0x61, 0x00, 0x01, 0x61, 0x00], "twice"),
        ("trailing bytes", [0x00, 0x00], "after the value"),
        ("nesting bomb", Array([[UInt8]](repeating: [0x07, 0x01], count: 100).joined()) + [0x00], "deeper than"),
    ]

    @Test func hostilePayloadsAreRefused() {
        for (name, bytes, expected) in Self.hostile {
            do {
                _ = try WireCodec.parse(bytes)
                Issue.record("\(name): accepted")
            } catch {
                #expect(error.message.contains(expected), "\(name): \(error.message)")
            }
        }
    }

    /// A value that does not fit its field, a wrong type, a missing key or an unknown enum case is a decoding
    /// error with the key path, never a trap.
    @Test func valuesOutOfRangeAreErrors() throws {
        struct Narrow: Codable { var n: Int8 }
        struct Wide: Codable { var n: Int64 }
        let big = try WireCodec.encode(Wide(n: 1000))
        #expect(throws: WireError.self) { try WireCodec.decode(Narrow.self, from: big) }
        do {
            _ = try WireCodec.decode(Narrow.self, from: big)
        } catch {
            #expect(error.message.contains(".n"), "\(error.message)")
        }
        struct Reg: Codable { var registration: String }
        let unknown = try WireCodec.encode(Reg(registration: "on_the_moon"))
        #expect(throws: WireError.self) { try WireCodec.decode(ModemState.self, from: unknown) }
        #expect(throws: WireError.self) { try WireCodec.decode(RegistrationState.self, from: WireCodec.encode("on_the_moon")) }
        #expect(throws: WireError.self) { try WireCodec.decode(UInt8.self, from: WireCodec.encode(-1)) }
    }

    /// Every prefix and every single-bit flip of an encoded state either decodes or throws: nothing traps.
    @Test func damagedStatesNeverTrap() throws {
        let bytes = try WireCodec.encode(Self.nsaModem)
        var refused = 0
        for n in 0..<bytes.count {
            if (try? WireCodec.decode(ModemState.self, from: Array(bytes.prefix(n)))) == nil { refused += 1 }
        }
        #expect(refused == bytes.count)
        for i in 0..<bytes.count {
            for bit in 0..<8 {
                var damaged = bytes
                damaged[i] ^= UInt8(1) << UInt8(bit)
                _ = try? WireCodec.decode(ModemState.self, from: damaged)
            }
        }
    }
}
