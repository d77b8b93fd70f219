// MBIM control messages (USB MBIM 1.0 §9) and information buffers.
//
// Every message starts with MessageType u32, MessageLength u32, TransactionId u32 (little-endian). COMMAND,
// COMMAND_DONE and INDICATE_STATUS continue with a fragment header (TotalFragments u32, CurrentFragment u32), the
// service UUID (16 bytes, in the order it is written), the CID u32, then
//
//     COMMAND:          CommandType u32 (0 query, 1 set) | InformationBufferLength u32 | buffer
//     COMMAND_DONE:     Status u32                       | InformationBufferLength u32 | buffer
//     INDICATE_STATUS:                                     InformationBufferLength u32 | buffer
//
// OPEN carries MaxControlTransfer u32; OPEN_DONE, CLOSE_DONE and FUNCTION_ERROR a status/error code u32.
// A message longer than the MaxControlTransfer the host gave in OPEN travels as several fragments, each with the
// full header and fragment header and its share of the payload.
//
// Inside an information buffer, strings, byte arrays and referenced structs are (offset u32, size u32) pairs in
// the fixed part that point into a data part after it; offsets count from the start of the buffer (or of the
// enclosing struct), data is padded to 4 bytes, strings are UTF-16LE without a terminator.

/// A 16-byte MBIM UUID, kept in wire order.
public struct MBIMUUID: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        precondition(bytes.count == 16, "an MBIM UUID has 16 bytes")
        self.bytes = bytes
    }

    /// "a289cc33-bcbb-8b4f-b6b0-133ec2aae6df"
    public init?(_ text: String) {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32, let b = try? Hex.bytes(hex), b.count == 16 else { return nil }
        self.bytes = b
    }

    public var description: String {
        let h = Hex.string(bytes, separator: "")
        let c = Array(h)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-"
            + String(c[20..<32])
    }
}

public enum MBIMServices {
    public static let basicConnect = MBIMUUID("a289cc33-bcbb-8b4f-b6b0-133ec2aae6df")!
    public static let msBasicConnectExtensions = MBIMUUID("3d01dcc5-fef5-4d05-0d3a-bef7058e9aaf")!

    public static let names: [(MBIMUUID, String)] = [
        (basicConnect, "basic_connect"), (msBasicConnectExtensions, "ms_basic_connect_extensions"),
    ]

    /// Basic Connect CIDs (MBIM 1.0 §10.5).
    public enum BasicConnect {
        public static let deviceCaps: UInt32 = 1
        public static let subscriberReadyStatus: UInt32 = 2
        public static let radioState: UInt32 = 3
        public static let pin: UInt32 = 4
        public static let homeProvider: UInt32 = 6
        public static let registerState: UInt32 = 9
        public static let packetService: UInt32 = 10
        public static let signalState: UInt32 = 11
        public static let connect: UInt32 = 12
        public static let deviceServices: UInt32 = 16
        public static let deviceServiceSubscribeList: UInt32 = 19
    }

    /// MS Basic Connect Extensions CIDs used here.
    public enum MSBasicConnectExtensions {
        public static let baseStationsInfo: UInt32 = 11
        public static let version: UInt32 = 15
    }

    public static let cidNames: [MBIMUUID: [(UInt32, String)]] = [
        basicConnect: [
            (1, "device_caps"), (2, "subscriber_ready_status"), (3, "radio_state"), (4, "pin"), (5, "pin_list"),
            (6, "home_provider"), (7, "preferred_providers"), (8, "visible_providers"), (9, "register_state"),
            (10, "packet_service"), (11, "signal_state"), (12, "connect"), (13, "provisioned_contexts"),
            (14, "service_activation"), (15, "ip_configuration"), (16, "device_services"),
            (19, "device_service_subscribe_list"), (20, "packet_statistics"), (21, "network_idle_hint"),
            (22, "emergency_mode"), (23, "ip_packet_filters"), (24, "multicarrier_providers"),
        ],
        msBasicConnectExtensions: [
            (1, "provisioned_contexts"), (2, "network_denylist"), (3, "lte_attach_configuration"),
            (4, "lte_attach_info"), (5, "sys_caps"), (6, "device_caps"), (7, "device_slot_mappings"),
            (8, "slot_info_status"), (9, "pco"), (10, "device_reset"), (11, "base_stations_info"),
            (12, "location_info_status"), (15, "version"), (16, "modem_configuration"),
            (17, "registration_parameters"), (18, "network_params"), (19, "wake_reason"),
        ],
    ]

    public static func name(_ uuid: MBIMUUID) -> String { names.first(where: { $0.0 == uuid })?.1 ?? uuid.description }

    public static func uuid(named name: String) -> MBIMUUID? {
        names.first(where: { $0.1 == name })?.0 ?? MBIMUUID(name)
    }

    public static func cidName(service: MBIMUUID, cid: UInt32) -> String? {
        cidNames[service]?.first(where: { $0.0 == cid })?.1
    }

    public static func cid(service: MBIMUUID, name: String) -> UInt32? {
        cidNames[service]?.first(where: { $0.1 == name })?.0
    }
}

/// MBIM_STATUS_CODES (MBIM 1.0 §9.4.5; libmbim MbimStatusError).
public enum MBIMStatus {
    public static let success: UInt32 = 0
    public static let failure: UInt32 = 2
    public static let simNotInserted: UInt32 = 3
    public static let badSIM: UInt32 = 4
    public static let pinRequired: UInt32 = 5
    public static let noDeviceSupport: UInt32 = 9
    public static let invalidParameters: UInt32 = 21
    public static let invalidDeviceServiceOperation: UInt32 = 34

    public static let names: [(String, UInt32)] = [
        ("SUCCESS", 0), ("BUSY", 1), ("FAILURE", 2), ("SIM_NOT_INSERTED", 3), ("BAD_SIM", 4), ("PIN_REQUIRED", 5),
        ("PIN_DISABLED", 6), ("NOT_REGISTERED", 7), ("PROVIDERS_NOT_FOUND", 8), ("NO_DEVICE_SUPPORT", 9),
        ("PROVIDER_NOT_VISIBLE", 10), ("DATA_CLASS_NOT_AVAILABLE", 11), ("PACKET_SERVICE_DETACHED", 12),
        ("MAX_ACTIVATED_CONTEXTS", 13), ("NOT_INITIALIZED", 14), ("VOICE_CALL_IN_PROGRESS", 15),
        ("CONTEXT_NOT_ACTIVATED", 16), ("SERVICE_NOT_ACTIVATED", 17), ("INVALID_ACCESS_STRING", 18),
        ("INVALID_USER_NAME_PWD", 19), ("RADIO_POWER_OFF", 20), ("INVALID_PARAMETERS", 21), ("READ_FAILURE", 22),
        ("WRITE_FAILURE", 23), ("NO_PHONEBOOK", 25), ("PARAMETER_TOO_LONG", 26), ("STK_BUSY", 27),
        ("OPERATION_NOT_ALLOWED", 28), ("MEMORY_FAILURE", 29), ("INVALID_MEMORY_INDEX", 30), ("MEMORY_FULL", 31),
        ("FILTER_NOT_SUPPORTED", 32), ("DSS_INSTANCE_LIMIT", 33), ("INVALID_DEVICE_SERVICE_OPERATION", 34),
        ("AUTH_INCORRECT_AUTN", 35), ("AUTH_SYNC_FAILURE", 36), ("AUTH_AMF_NOT_SET", 37),
        ("CONTEXT_NOT_SUPPORTED", 38),
    ]

    public static func code(_ name: String) -> UInt32? { names.first(where: { $0.0 == name })?.1 }
    public static func name(_ code: UInt32) -> String { names.first(where: { $0.1 == code })?.0 ?? String(code) }
}

/// MBIM_PROTOCOL_ERROR_CODES carried by FUNCTION_ERROR (MBIM 1.0 §9.4.6).
public enum MBIMProtocolError {
    public static let timeoutFragment: UInt32 = 1
    public static let fragmentOutOfSequence: UInt32 = 2
    public static let lengthMismatch: UInt32 = 3
    public static let duplicatedTID: UInt32 = 4
    public static let notOpened: UInt32 = 5
    public static let unknown: UInt32 = 6
    public static let maxTransfer: UInt32 = 8
}

/// One MBIM control message (reassembled when it came in fragments).
public struct MBIMMessage: Sendable, Equatable {
    public enum MessageType: UInt32, Sendable {
        case open = 0x0000_0001
        case close = 0x0000_0002
        case command = 0x0000_0003
        case hostError = 0x0000_0004
        case openDone = 0x8000_0001
        case closeDone = 0x8000_0002
        case commandDone = 0x8000_0003
        case functionError = 0x8000_0004
        case indicateStatus = 0x8000_0007

        public var hasFragmentHeader: Bool { self == .command || self == .commandDone || self == .indicateStatus }
    }

    public var type: MessageType
    public var transactionID: UInt32
    /// OPEN: MaxControlTransfer. OPEN_DONE/CLOSE_DONE/COMMAND_DONE: status. FUNCTION_ERROR/HOST_ERROR: error.
    /// COMMAND: command type (0 query, 1 set).
    public var code: UInt32
    public var service: MBIMUUID?
    public var cid: UInt32
    public var buffer: [UInt8]

    public init(
        type: MessageType, transactionID: UInt32, code: UInt32 = 0, service: MBIMUUID? = nil, cid: UInt32 = 0,
        buffer: [UInt8] = []
    ) {
        self.type = type
        self.transactionID = transactionID
        self.code = code
        self.service = service
        self.cid = cid
        self.buffer = buffer
    }

    public var isSet: Bool { type == .command && code == 1 }

    /// The payload after the fragment header (fragmented messages split this).
    private var fragmentPayload: [UInt8] {
        var w = ByteWriter()
        w.append(service?.bytes ?? [UInt8](repeating: 0, count: 16))
        w.u32(cid)
        if type != .indicateStatus { w.u32(code) }
        w.u32(UInt32(buffer.count))
        w.append(buffer)
        return w.bytes
    }

    /// The message as one or more fragments of at most `maxTransfer` bytes each.
    public func encodedFragments(maxTransfer: Int = 4096) -> [[UInt8]] {
        guard type.hasFragmentHeader else {
            // CLOSE_MSG is the bare header; the others add one u32 (MaxControlTransfer, status or error).
            var w = ByteWriter()
            w.u32(type.rawValue)
            w.u32(type == .close ? 12 : 16)
            w.u32(transactionID)
            if type != .close { w.u32(code) }
            return [w.bytes]
        }
        let payload = fragmentPayload
        let room = max(1, maxTransfer - 20)
        let total = max(1, (payload.count + room - 1) / room)
        var out: [[UInt8]] = []
        for i in 0..<total {
            let chunk = payload[(i * room)..<min(payload.count, (i + 1) * room)]
            var w = ByteWriter()
            w.u32(type.rawValue)
            w.u32(UInt32(20 + chunk.count))
            w.u32(transactionID)
            w.u32(UInt32(total))
            w.u32(UInt32(i))
            w.append(Array(chunk))
            out.append(w.bytes)
        }
        return out
    }

    /// The message as a single byte string (no fragmenting).
    public func encoded() -> [UInt8] { encodedFragments(maxTransfer: Int.max / 2).joined().map { $0 } }

    /// Decodes the payload of a complete (reassembled) message.
    static func decode(type: MessageType, transactionID: UInt32, payload: [UInt8]) throws(DecodeError) -> MBIMMessage {
        var r = ByteReader(payload)
        switch type {
        case .open, .openDone, .closeDone, .functionError, .hostError:
            return MBIMMessage(type: type, transactionID: transactionID, code: try r.u32("status/error code"))
        case .close:
            return MBIMMessage(type: type, transactionID: transactionID)
        case .command, .commandDone, .indicateStatus:
            let uuid = MBIMUUID(try r.take(16, "service UUID"))
            let cid = try r.u32("CID")
            let code = type == .indicateStatus ? 0 : try r.u32(type == .command ? "command type" : "status")
            let length = Int(try r.u32("information buffer length"))
            guard length == r.remaining else {
                throw DecodeError("information buffer length \(length) disagrees with the \(r.remaining) bytes left")
            }
            return MBIMMessage(
                type: type, transactionID: transactionID, code: code, service: uuid, cid: cid, buffer: r.rest())
        }
    }

    /// Decodes one complete, unfragmented message.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> MBIMMessage {
        var assembler = MBIMAssembler()
        let items = assembler.feed(bytes)
        guard items.count == 1, assembler.pending == 0 else {
            throw DecodeError("not exactly one MBIM message (\(items.count) items, \(assembler.pending) bytes left)")
        }
        switch items[0] {
        case let .message(m): return m
        case let .malformed(_, _, why): throw DecodeError(why)
        case .incomplete: throw DecodeError("MBIM message is an unfinished fragment")
        }
    }

    public static func command(
        tid: UInt32, service: MBIMUUID, cid: UInt32, set: Bool = false, buffer: [UInt8] = []
    ) -> MBIMMessage {
        MBIMMessage(type: .command, transactionID: tid, code: set ? 1 : 0, service: service, cid: cid, buffer: buffer)
    }
}

/// Splits a byte stream into MBIM messages and reassembles fragments.
///
/// A pty is a byte stream, so a message is delimited by its MessageLength alone. A length that cannot be a message
/// (under 12 bytes, or over `maxMessage`) leaves no way to find the next one: the buffer is dropped and reported.
public struct MBIMAssembler: Sendable {
    public enum Item: Sendable, Equatable {
        case message(MBIMMessage)
        /// A fragment was stored; more are expected.
        case incomplete
        /// Why a message was rejected, with the transaction id (0 when unknown) and the MBIM protocol error
        /// FUNCTION_ERROR should carry.
        case malformed(tid: UInt32, error: UInt32, why: String)
    }

    public static let maxMessage = 65536
    private var buffer: [UInt8] = []
    private var partial: (type: MBIMMessage.MessageType, tid: UInt32, total: UInt32, next: UInt32, payload: [UInt8])?

    public init() {}

    public var pending: Int { buffer.count }

    public mutating func feed(_ bytes: [UInt8]) -> [Item] {
        buffer += bytes
        var items: [Item] = []
        while buffer.count >= 12 {
            var r = ByteReader(buffer)
            let rawType = (try? r.u32()) ?? 0
            let length = Int((try? r.u32()) ?? 0)
            let tid = (try? r.u32()) ?? 0
            guard length >= 12, length <= MBIMAssembler.maxMessage else {
                items.append(.malformed(tid: tid, error: MBIMProtocolError.lengthMismatch,
                                        why: "MBIM message length \(length) is impossible; \(buffer.count) bytes dropped"))
                buffer.removeAll()
                break
            }
            guard buffer.count >= length else { break }
            let message = Array(buffer[0..<length])
            buffer.removeFirst(length)
            items.append(take(message, rawType: rawType, tid: tid))
        }
        return items
    }

    private mutating func take(_ bytes: [UInt8], rawType: UInt32, tid: UInt32) -> Item {
        guard let type = MBIMMessage.MessageType(rawValue: rawType) else {
            return .malformed(tid: tid, error: MBIMProtocolError.unknown,
                              why: "unknown MBIM message type 0x\(String(rawType, radix: 16))")
        }
        guard type.hasFragmentHeader else {
            do {
                return .message(try MBIMMessage.decode(type: type, transactionID: tid, payload: Array(bytes[12...])))
            } catch {
                return .malformed(tid: tid, error: MBIMProtocolError.lengthMismatch, why: error.message)
            }
        }
        guard bytes.count >= 20 else {
            return .malformed(tid: tid, error: MBIMProtocolError.lengthMismatch,
                              why: "MBIM message of \(bytes.count) bytes has no fragment header")
        }
        var r = ByteReader(bytes, offset: 12)
        let total = (try? r.u32()) ?? 0
        let current = (try? r.u32()) ?? 0
        let chunk = Array(bytes[20...])
        if current == 0 {
            guard total >= 1 else {
                return .malformed(tid: tid, error: MBIMProtocolError.fragmentOutOfSequence,
                                  why: "fragment header says 0 fragments")
            }
            partial = (type, tid, total, 1, chunk)
        } else {
            guard var p = partial, p.tid == tid, p.type == type, p.next == current, current < p.total else {
                partial = nil
                return .malformed(tid: tid, error: MBIMProtocolError.fragmentOutOfSequence,
                                  why: "fragment \(current) of transaction \(tid) arrived out of sequence")
            }
            p.payload += chunk
            p.next += 1
            partial = p
        }
        guard let p = partial, p.next == p.total else { return .incomplete }
        partial = nil
        do {
            return .message(try MBIMMessage.decode(type: p.type, transactionID: p.tid, payload: p.payload))
        } catch {
            return .malformed(tid: tid, error: MBIMProtocolError.lengthMismatch, why: error.message)
        }
    }
}

/// Builds an information buffer: a fixed part of u32 fields and (offset, size) pairs, then the data they point to.
public struct MBIMBufferBuilder: Sendable {
    private enum Field {
        case bytes([UInt8])
        /// Data placed after the fixed part; `padTo4` pads the data area after it.
        case reference([UInt8])
    }

    private var fields: [Field] = []

    public init() {}

    public mutating func u32(_ v: UInt32) {
        var w = ByteWriter()
        w.u32(v)
        fields.append(.bytes(w.bytes))
    }

    public mutating func u16(_ v: UInt16) {
        var w = ByteWriter()
        w.u16(v)
        fields.append(.bytes(w.bytes))
    }

    public mutating func u64(_ v: UInt64) {
        var w = ByteWriter()
        w.u64(v)
        fields.append(.bytes(w.bytes))
    }

    public mutating func raw(_ bytes: [UInt8]) { fields.append(.bytes(bytes)) }

    /// A string as an (offset, size) pair; an empty or nil string is (0, 0), as MBIM says.
    public mutating func string(_ s: String?) {
        fields.append(.reference(MBIMBufferBuilder.utf16le(s ?? "")))
    }

    /// Any referenced data (a struct, a byte array) as an (offset, size) pair.
    public mutating func reference(_ bytes: [UInt8]) { fields.append(.reference(bytes)) }

    public static func utf16le(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        for unit in s.utf16 { out += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        return out
    }

    /// Lays the buffer out. Offsets are relative to its start; each data item starts on a 4-byte boundary.
    public func build() -> [UInt8] {
        var fixedSize = 0
        for f in fields {
            switch f {
            case let .bytes(b): fixedSize += b.count
            case .reference: fixedSize += 8
            }
        }
        var fixed = ByteWriter()
        var data: [UInt8] = []
        for f in fields {
            switch f {
            case let .bytes(b): fixed.append(b)
            case let .reference(b):
                if b.isEmpty {
                    fixed.u32(0)
                    fixed.u32(0)
                    continue
                }
                while (fixedSize + data.count) % 4 != 0 { data.append(0) }
                fixed.u32(UInt32(fixedSize + data.count))
                fixed.u32(UInt32(b.count))
                data += b
            }
        }
        while (fixedSize + data.count) % 4 != 0 { data.append(0) }
        return fixed.bytes + data
    }
}

/// Reads an information buffer the host sent (Version, Device Service Subscribe List, Signal State set).
public struct MBIMBufferReader: Sendable {
    public let buffer: [UInt8]
    private var reader: ByteReader

    public init(_ buffer: [UInt8], offset: Int = 0) {
        self.buffer = buffer
        self.reader = ByteReader(buffer, offset: offset)
    }

    public mutating func u16(_ what: String) throws(DecodeError) -> UInt16 { try reader.u16(what) }
    public mutating func u32(_ what: String) throws(DecodeError) -> UInt32 { try reader.u32(what) }
    public mutating func uuid(_ what: String) throws(DecodeError) -> MBIMUUID { MBIMUUID(try reader.take(16, what)) }

    /// An (offset, size) pair; the data it points at, counted from `base`.
    public mutating func reference(_ what: String, base: Int = 0) throws(DecodeError) -> [UInt8] {
        let offset = Int(try reader.u32("\(what) offset"))
        let size = Int(try reader.u32("\(what) size"))
        guard size > 0 else { return [] }
        guard base + offset >= 0, base + offset + size <= buffer.count else {
            throw DecodeError("\(what) (offset \(offset), size \(size)) lies outside the \(buffer.count)-byte buffer")
        }
        return Array(buffer[(base + offset)..<(base + offset + size)])
    }

    public mutating func string(_ what: String, base: Int = 0) throws(DecodeError) -> String {
        let bytes = try reference(what, base: base)
        guard bytes.count % 2 == 0 else { throw DecodeError("\(what) has an odd UTF-16 byte count") }
        var units: [UInt16] = []
        for i in stride(from: 0, to: bytes.count, by: 2) { units.append(UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8) }
        return String(decoding: units, as: UTF16.self)
    }
}
