// QMUX framing and the QMI message/TLV codec.
//
// A QMUX frame on a cdc-wdm port (or our pty) is
//
//     0x01 | length u16 (everything after the marker) | QMUX flags u8 | service u8 | client id u8 | QMI SDU
//
// QMUX flags are 0x00 from the host and 0x80 from the modem. The QMI SDU header differs by service:
//
//     CTL (service 0):  flags u8 | transaction id u8  | message id u16 | TLV length u16 | TLVs
//     other services:   flags u8 | transaction id u16 | message id u16 | TLV length u16 | TLVs
//
// SDU flags: CTL request 0x00, response 0x01, indication 0x02; services request 0x00, response 0x02,
// indication 0x04. A TLV is type u8 | length u16 | value. Every response carries the result TLV 0x02
// (status u16: 0 success, 1 failure; error u16: a QmiProtocolError). libqmi matches a response to its request
// by transaction id *and* message id; indications have transaction id 0.

/// One type-length-value element of a QMI message.
public struct QMITLV: Sendable, Equatable {
    public var type: UInt8
    public var value: [UInt8]

    public init(_ type: UInt8, _ value: [UInt8]) {
        self.type = type
        self.value = value
    }

    public init(_ type: UInt8, _ build: (inout ByteWriter) -> Void) {
        var w = ByteWriter()
        build(&w)
        self.init(type, w.bytes)
    }
}

/// A QMI message with its QMUX envelope.
public struct QMIMessage: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case request, response, indication
    }

    public var service: UInt8
    public var clientID: UInt8
    public var kind: Kind
    /// 8 bits on CTL, 16 bits on the other services.
    public var transactionID: UInt16
    public var messageID: UInt16
    public var tlvs: [QMITLV]
    /// QMUX control flags: 0x00 host to modem, 0x80 modem to host.
    public var qmuxFlags: UInt8

    public init(
        service: UInt8, clientID: UInt8, kind: Kind, transactionID: UInt16, messageID: UInt16, tlvs: [QMITLV],
        qmuxFlags: UInt8? = nil
    ) {
        self.service = service
        self.clientID = clientID
        self.kind = kind
        self.transactionID = transactionID
        self.messageID = messageID
        self.tlvs = tlvs
        self.qmuxFlags = qmuxFlags ?? (kind == .request ? 0x00 : 0x80)
    }

    public var isControl: Bool { service == QMIService.ctl }

    /// The SDU flags byte for this kind on this service.
    public var sduFlags: UInt8 {
        switch (kind, isControl) {
        case (.request, _): return 0x00
        case (.response, true): return 0x01
        case (.indication, true): return 0x02
        case (.response, false): return 0x02
        case (.indication, false): return 0x04
        }
    }

    public func tlv(_ type: UInt8) -> [UInt8]? { tlvs.first(where: { $0.type == type })?.value }

    /// The result TLV as (status, error), when present and well formed.
    public var result: (status: UInt16, error: UInt16)? {
        guard let v = tlv(0x02), v.count == 4 else { return nil }
        return (UInt16(v[0]) | UInt16(v[1]) << 8, UInt16(v[2]) | UInt16(v[3]) << 8)
    }

    public func encoded() -> [UInt8] {
        var tlvBytes = ByteWriter()
        for t in tlvs {
            tlvBytes.u8(t.type)
            tlvBytes.u16(UInt16(t.value.count))
            tlvBytes.append(t.value)
        }
        var w = ByteWriter()
        w.u8(0x01)
        w.u16(0)  // patched below
        w.u8(qmuxFlags)
        w.u8(service)
        w.u8(clientID)
        w.u8(sduFlags)
        if isControl { w.u8(UInt8(truncatingIfNeeded: transactionID)) } else { w.u16(transactionID) }
        w.u16(messageID)
        w.u16(UInt16(tlvBytes.count))
        w.append(tlvBytes.bytes)
        w.patch16(at: 1, UInt16(w.count - 1))
        return w.bytes
    }

    /// Decodes one complete frame (marker included). Rejects a wrong marker, a length that disagrees with the
    /// frame, SDU flags that are not a known kind, and TLVs that overrun or underrun the TLV area.
    public static func decode(_ frame: [UInt8]) throws(DecodeError) -> QMIMessage {
        var r = ByteReader(frame)
        guard try r.u8("QMUX marker") == 0x01 else { throw DecodeError("QMUX frame does not start with 0x01") }
        let length = Int(try r.u16("QMUX length"))
        guard length + 1 == frame.count else {
            throw DecodeError("QMUX length \(length) disagrees with a \(frame.count)-byte frame")
        }
        let qmuxFlags = try r.u8("QMUX flags")
        let service = try r.u8("QMUX service")
        let client = try r.u8("QMUX client id")
        let flags = try r.u8("QMI flags")
        let isControl = service == QMIService.ctl
        let tid = isControl ? UInt16(try r.u8("CTL transaction id")) : try r.u16("transaction id")
        let messageID = try r.u16("message id")
        let tlvLength = Int(try r.u16("TLV length"))
        guard tlvLength == r.remaining else {
            throw DecodeError("QMI TLV length \(tlvLength) disagrees with the \(r.remaining) bytes that follow")
        }
        let kind: Kind
        switch (flags, isControl) {
        case (0x00, _): kind = .request
        case (0x01, true), (0x02, false): kind = .response
        case (0x02, true), (0x04, false): kind = .indication
        default:
            throw DecodeError("QMI flags 0x\(String(flags, radix: 16)) are not a request, response or indication")
        }
        var tlvs: [QMITLV] = []
        while !r.isAtEnd {
            let type = try r.u8("TLV type")
            let len = Int(try r.u16("TLV 0x\(String(type, radix: 16)) length"))
            tlvs.append(QMITLV(type, try r.take(len, "TLV 0x\(String(type, radix: 16)) value")))
        }
        return QMIMessage(
            service: service, clientID: client, kind: kind, transactionID: tid, messageID: messageID, tlvs: tlvs,
            qmuxFlags: qmuxFlags)
    }

    /// A response to `request` with the given TLVs; `error` nil means success. The result TLV comes first, as
    /// Qualcomm firmware sends it.
    public static func response(to request: QMIMessage, error: UInt16? = nil, _ tlvs: [QMITLV] = []) -> QMIMessage {
        var all = [resultTLV(error: error)]
        all += tlvs
        return QMIMessage(
            service: request.service, clientID: request.clientID, kind: .response,
            transactionID: request.transactionID, messageID: request.messageID, tlvs: all)
    }

    public static func resultTLV(error: UInt16?) -> QMITLV {
        QMITLV(0x02) { w in
            w.u16(error == nil ? 0 : 1)
            w.u16(error ?? 0)
        }
    }
}

/// Splits a byte stream into QMUX frames. Bytes before a 0x01 marker, and a marker whose length cannot be a
/// QMUX frame, are skipped and counted so the caller can report line noise.
public struct QMUXFramer: Sendable {
    public enum Item: Sendable, Equatable {
        case frame([UInt8])
        case skipped(Int)
    }

    /// Largest frame accepted; libqmi's own buffers are 2 KiB and no message in use comes near 8 KiB.
    public static let maxFrame = 8192
    private var buffer: [UInt8] = []

    public init() {}

    public var pending: Int { buffer.count }

    public mutating func feed(_ bytes: [UInt8]) -> [Item] {
        buffer += bytes
        var items: [Item] = []
        var start = 0
        var skipped = 0
        while start < buffer.count {
            if buffer[start] != 0x01 {
                skipped += 1
                start += 1
                continue
            }
            guard buffer.count - start >= 3 else { break }
            let length = Int(buffer[start + 1]) | Int(buffer[start + 2]) << 8
            // The smallest frame is a CTL header: 5 bytes of QMUX header and 6 of SDU header after the marker.
            guard length >= 11, length < QMUXFramer.maxFrame else {
                skipped += 1
                start += 1
                continue
            }
            guard buffer.count - start >= length + 1 else { break }
            if skipped > 0 {
                items.append(.skipped(skipped))
                skipped = 0
            }
            items.append(.frame(Array(buffer[start..<start + length + 1])))
            start += length + 1
        }
        if skipped > 0 { items.append(.skipped(skipped)) }
        buffer.removeFirst(start)
        return items
    }
}
