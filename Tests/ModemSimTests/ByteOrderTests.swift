// QMUX and MBIM are little-endian on the wire whatever the host is. Every multi-byte value here has distinct bytes,
// and every expectation is a fixed byte vector, so an encoder or decoder that used the host's order (a
// withUnsafeBytes copy, a load(as:)) would fail on a big-endian host (MIPS BE, PowerPC), where these run too.

import ModemSim
import Testing

@Suite struct WireByteOrderTests {
    @Test func writerIsLittleEndian() {
        var w = ByteWriter()
        w.u16(0x0102)
        w.i16(-2)  // 0xFFFE
        w.u32(0x0304_0506)
        w.i32(-0x0708_090B)  // 0xF8F7_F6F5
        w.u64(0x1112_1314_1516_1718)
        w.u16(0)
        w.patch16(at: w.count - 2, 0xA1A2)
        #expect(w.bytes == [
            0x02, 0x01, 0xFE, 0xFF, 0x06, 0x05, 0x04, 0x03, 0xF5, 0xF6, 0xF7, 0xF8,
            0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, 0xA2, 0xA1,
        ])
    }

    @Test func readerIsLittleEndian() throws {
        var r = ByteReader([0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, 0xFE, 0xFF])
        #expect(try r.u16() == 0x0102)
        #expect(try r.u32() == 0x0304_0506)
        #expect(try r.u64() == 0x1112_1314_1516_1718)
        #expect(try r.i16() == -2)
        #expect(r.isAtEnd)
    }

    /// A NAS Get Serving System request (0x0024) on client 5 with transaction id 0x0102 and one TLV whose length is
    /// 0x0003: QMUX length, transaction id, message id and TLV lengths all low byte first.
    @Test func qmuxRequestBytes() throws {
        let m = QMIMessage(service: QMIService.nas, clientID: 5, kind: .request, transactionID: 0x0102, messageID: 0x0024,
                           tlvs: [QMITLV(0x10, [0xAA, 0xBB, 0xCC])])
        let bytes: [UInt8] = [
            0x01, 0x12, 0x00,  // marker, length 18
            0x00, 0x03, 0x05,  // QMUX flags (host), service NAS, client 5
            0x00, 0x02, 0x01,  // SDU flags (request), transaction id 0x0102
            0x24, 0x00, 0x06, 0x00,  // message id 0x0024, TLV bytes 6
            0x10, 0x03, 0x00, 0xAA, 0xBB, 0xCC,  // TLV 0x10, length 3
        ]
        #expect(m.encoded() == bytes)
        #expect(try QMIMessage.decode(bytes) == m)
    }

    /// MBIM 1.0 §9.3.1 OPEN_MSG: MessageType 1, MessageLength 16, TransactionId, MaxControlTransfer.
    @Test func mbimOpenBytes() throws {
        let m = MBIMMessage(type: .open, transactionID: 0x0A0B_0C0D, code: 0x1000)
        let bytes: [UInt8] = [0x01, 0, 0, 0, 0x10, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A, 0x00, 0x10, 0, 0]
        #expect(m.encoded() == bytes)
        #expect(try MBIMMessage.decode(bytes) == m)
    }

    /// MBIM 1.0 §9.3.3 COMMAND_MSG: header, fragment header, the service UUID as its 16 bytes in order (not a
    /// host-order GUID), CID, command type and buffer length little-endian.
    @Test func mbimCommandBytes() throws {
        let m = MBIMMessage.command(tid: 0x0102_0304, service: MBIMServices.basicConnect,
                                    cid: MBIMServices.BasicConnect.registerState, set: true, buffer: [0x0A, 0x0B, 0x0C, 0x0D])
        let bytes: [UInt8] = [
            0x03, 0, 0, 0, 0x34, 0, 0, 0, 0x04, 0x03, 0x02, 0x01,  // COMMAND, 52 bytes, transaction id
            0x01, 0, 0, 0, 0x00, 0, 0, 0,  // one fragment, number 0
            0xA2, 0x89, 0xCC, 0x33, 0xBC, 0xBB, 0x8B, 0x4F, 0xB6, 0xB0, 0x13, 0x3E, 0xC2, 0xAA, 0xE6, 0xDF,
            0x09, 0, 0, 0, 0x01, 0, 0, 0, 0x04, 0, 0, 0,  // CID 9, set, 4 bytes
            0x0A, 0x0B, 0x0C, 0x0D,
        ]
        #expect(m.encoded() == bytes)
        #expect(try MBIMMessage.decode(bytes) == m)
    }
}
