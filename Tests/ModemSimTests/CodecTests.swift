// QMUX and MBIM codecs: round trips, the libqmi test-suite framing vectors, and malformed input.

import ModemSim
import Testing

@Suite struct QMUXCodecTests {
    /// libqmi test-message.c `test_message_parse_complete` (1.32.2): NAS Get Signal Strength, -101 dBm UMTS.
    static let signalStrength: [UInt8] = [
        0x01, 0x26, 0x00, 0x80, 0x03, 0x01, 0x02, 0x01, 0x00, 0x20, 0x00, 0x1a,
        0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x9b,
        0x05, 0x11, 0x04, 0x00, 0x01, 0x00, 0x65, 0x05, 0x12, 0x04, 0x00, 0x01,
        0x00, 0x11, 0x05,
    ]

    @Test func decodesTheLibqmiSignalStrengthVector() throws {
        let m = try QMIMessage.decode(Self.signalStrength)
        #expect(m.service == QMIService.nas && m.clientID == 1 && m.transactionID == 1)
        #expect(m.kind == .response && m.messageID == 0x0020)
        #expect(m.result?.status == 0)
        #expect(m.tlv(0x01) == [0x9B, 0x05])  // -101 dBm, UMTS
        #expect(m.tlv(0x11) == [0x01, 0x00, 0x65, 0x05])  // one RSSI (101 → -101 dBm) on UMTS
        #expect(m.tlv(0x12) == [0x01, 0x00, 0x11, 0x05])  // one ECIO (17 → -8.5 dB) on UMTS
        #expect(m.encoded() == Self.signalStrength)
    }

    @Test(arguments: [
        (QMIService.ctl, QMIMessage.Kind.request, UInt16(7)), (QMIService.ctl, .response, 0xFF),
        (QMIService.ctl, .indication, 0), (QMIService.nas, .request, 0x1234), (QMIService.nas, .response, 1),
        (QMIService.uim, .indication, 0),
    ])
    func roundTrips(service: UInt8, kind: QMIMessage.Kind, tid: UInt16) throws {
        let m = QMIMessage(
            service: service, clientID: 3, kind: kind, transactionID: tid, messageID: 0x004D,
            tlvs: [QMITLV(0x10, [1, 2, 3]), QMITLV(0x11, []), QMITLV(0x4E, [1])])
        let bytes = m.encoded()
        #expect(bytes[0] == 0x01 && Int(bytes[1]) | Int(bytes[2]) << 8 == bytes.count - 1)
        #expect(bytes[3] == (kind == .request ? 0x00 : 0x80))
        // SDU flags: CTL 0x00/0x01/0x02, services 0x00/0x02/0x04.
        let expected: UInt8 = switch (kind, service == QMIService.ctl) {
        case (.request, _): 0
        case (.response, true): 1
        case (.indication, true): 2
        case (.response, false): 2
        case (.indication, false): 4
        }
        #expect(bytes[6] == expected)
        #expect(try QMIMessage.decode(bytes) == m)
    }

    @Test(arguments: [
        ([0x02, 0x0C, 0x00, 0x00, 0x03, 0x01, 0x00, 0x01, 0x00, 0x4D, 0x00, 0x00, 0x00], "does not start with 0x01"),
        ([0x01, 0x0D, 0x00, 0x00, 0x03, 0x01, 0x00, 0x01, 0x00, 0x4D, 0x00, 0x00, 0x00], "disagrees with a 13-byte frame"),
        ([0x01, 0x0C, 0x00, 0x00, 0x03, 0x01, 0x00, 0x01, 0x00, 0x4D, 0x00, 0x01, 0x00], "TLV length 1 disagrees"),
        ([0x01, 0x0C, 0x00, 0x00, 0x03, 0x01, 0x08, 0x01, 0x00, 0x4D, 0x00, 0x00, 0x00], "flags 0x8"),
        ([0x01, 0x0F, 0x00, 0x00, 0x03, 0x01, 0x00, 0x01, 0x00, 0x4D, 0x00, 0x03, 0x00, 0x10, 0x05, 0x00], "TLV 0x10 value needs 5 bytes"),
        ([0x01, 0x06, 0x00, 0x00, 0x03, 0x01, 0x00], "transaction id needs 2 bytes"),
    ] as [([UInt8], String)])
    func rejectsMalformedFrames(frame: [UInt8], reason: String) {
        #expect {
            _ = try QMIMessage.decode(frame)
        } throws: { error in
            (error as? DecodeError)?.message.contains(reason) == true
        }
    }

    @Test func framerSplitsJoinsAndSkipsNoise() {
        var f = QMUXFramer()
        let a = Self.signalStrength
        // Noise, a frame split in three writes, then two frames in one write (libqmi's "complete and complete").
        #expect(f.feed([0xAA, 0x55, 0x00]) == [.skipped(3)])
        #expect(f.feed(Array(a[0..<2])) == [])
        #expect(f.feed(Array(a[2..<20])) == [])
        #expect(f.feed(Array(a[20...]) + a + a) == [.frame(a), .frame(a), .frame(a)])
        #expect(f.pending == 0)
        // libqmi's "complete and short": one frame and the start of another, which waits for the rest.
        #expect(f.feed(a + Array(a[0..<30])) == [.frame(a)])
        #expect(f.pending == 30)
        #expect(f.feed(Array(a[30...])) == [.frame(a)])
    }

    @Test func framerSkipsAMarkerWithAnImpossibleLength() {
        var f = QMUXFramer()
        // 0x01 followed by a length of 2: no QMUX frame is that short, so the marker is noise.
        #expect(f.feed([0x01, 0x02, 0x00] + Self.signalStrength) == [.skipped(3), .frame(Self.signalStrength)])
    }

    @Test(arguments: ["01 0c 00", "0x01, 0x0C, 0x00", "010c00", "01\n0C\t00"])
    func hexParses(_ text: String) throws {
        #expect(try Hex.bytes(text) == [0x01, 0x0C, 0x00])
    }

    @Test(arguments: ["01 0", "0g", "01 zz"])
    func hexRejects(_ text: String) {
        #expect(throws: DecodeError.self) { try Hex.bytes(text) }
    }
}

@Suite struct MBIMCodecTests {
    @Test func uuidTextRoundTrips() {
        #expect(MBIMServices.basicConnect.description == "a289cc33-bcbb-8b4f-b6b0-133ec2aae6df")
        #expect(MBIMServices.basicConnect.bytes.prefix(4) == [0xA2, 0x89, 0xCC, 0x33])
        #expect(MBIMUUID("3d01dcc5-fef5-4d05-0d3a-bef7058e9aaf") == MBIMServices.msBasicConnectExtensions)
        #expect(MBIMUUID("not-a-uuid") == nil)
    }

    @Test func commandRoundTripsAsOneMessage() throws {
        let m = MBIMMessage.command(tid: 7, service: MBIMServices.basicConnect, cid: 9, set: true, buffer: [1, 2, 3, 4])
        let bytes = m.encoded()
        #expect(bytes.count == 48 + 4)
        #expect(Array(bytes[0..<4]) == [3, 0, 0, 0] && Array(bytes[4..<8]) == [52, 0, 0, 0])
        #expect(Array(bytes[12..<20]) == [1, 0, 0, 0, 0, 0, 0, 0])  // one fragment, number 0
        #expect(try MBIMMessage.decode(bytes) == m)
    }

    @Test(arguments: [MBIMMessage.MessageType.open, .close, .openDone, .closeDone, .functionError])
    func controlMessagesHaveTheirSizes(type: MBIMMessage.MessageType) throws {
        let m = MBIMMessage(type: type, transactionID: 3, code: type == .close ? 0 : 4096)
        let bytes = m.encoded()
        #expect(bytes.count == (type == .close ? 12 : 16))
        #expect(try MBIMMessage.decode(bytes) == m)
    }

    @Test(arguments: [20, 64, 100])
    func longMessagesFragmentAndReassemble(maxTransfer: Int) throws {
        let buffer = (0..<300).map { UInt8($0 & 0xFF) }
        let m = MBIMMessage(type: .commandDone, transactionID: 9, code: 0, service: MBIMServices.basicConnect,
                            cid: 16, buffer: buffer)
        let fragments = m.encodedFragments(maxTransfer: maxTransfer)
        #expect(fragments.count > 1)
        #expect(fragments.allSatisfy { $0.count <= max(maxTransfer, 21) })
        var a = MBIMAssembler()
        var items: [MBIMAssembler.Item] = []
        for f in fragments { items += a.feed(f) }
        #expect(items.last == .message(m))
        #expect(items.dropLast().allSatisfy { $0 == .incomplete })
    }

    @Test func outOfSequenceFragmentIsReported() {
        let m = MBIMMessage(type: .command, transactionID: 5, service: MBIMServices.basicConnect, cid: 1,
                            buffer: [UInt8](repeating: 7, count: 100))
        let fragments = m.encodedFragments(maxTransfer: 64)
        var a = MBIMAssembler()
        #expect(a.feed(fragments[0]) == [.incomplete])
        guard case let .malformed(tid, error, _)? = a.feed(fragments[2]).first else {
            Issue.record("fragment 2 after 0 was accepted")
            return
        }
        #expect(tid == 5 && error == MBIMProtocolError.fragmentOutOfSequence)
    }

    @Test func impossibleLengthDropsTheBuffer() {
        var a = MBIMAssembler()
        let items = a.feed([3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0xAA])
        guard case let .malformed(tid, error, why)? = items.first else {
            Issue.record("length 8 was accepted")
            return
        }
        #expect(tid == 1 && error == MBIMProtocolError.lengthMismatch && why.contains("length 8"))
        #expect(a.pending == 0)
    }

    @Test func unknownTypeAndShortBufferAreMalformed() throws {
        var a = MBIMAssembler()
        #expect(a.feed([9, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0]).first.map {
            if case .malformed(2, MBIMProtocolError.unknown, _) = $0 { return true } else { return false }
        } == true)
        var bad = MBIMMessage.command(tid: 4, service: MBIMServices.basicConnect, cid: 1, buffer: [1, 2, 3, 4]).encoded()
        bad[44] = 9  // information buffer length 9, 4 bytes follow
        #expect(throws: DecodeError.self) { try MBIMMessage.decode(bad) }
    }

    @Test func bufferBuilderLaysOutOffsetsAndPadding() throws {
        var b = MBIMBufferBuilder()
        b.u32(0x11)
        b.string("26006")  // 10 bytes of UTF-16LE, padded to 12
        b.string(nil)  // (0, 0)
        b.string("ab")
        let buf = b.build()
        // Fixed part: 4 + 8 + 8 + 8 = 28; "26006" at 28 (10 bytes + 2 pad), "ab" at 40 (4 bytes).
        #expect(buf.count == 44)
        var r = MBIMBufferReader(buf)
        #expect(try r.u32("x") == 0x11)
        #expect(try r.string("provider") == "26006")
        #expect(try r.string("none") == "")
        #expect(try r.string("ab") == "ab")
        #expect(Array(buf[4..<12]) == [28, 0, 0, 0, 10, 0, 0, 0])
        #expect(Array(buf[28..<40]) == [0x32, 0, 0x36, 0, 0x30, 0, 0x30, 0, 0x36, 0, 0, 0])
    }

    @Test func bufferReaderRejectsAReferenceOutsideTheBuffer() {
        var r = MBIMBufferReader([0x10, 0, 0, 0, 0x08, 0, 0, 0])
        #expect(throws: DecodeError.self) { try r.reference("field") }
    }
}
