// A small binary form for Codable values, and length-prefixed frames to carry them over a pipe: how a modem worker
// process (ReachModem's ModemWorker) hands `ModemState`s to its parent. Pure: no Foundation, no I/O.
//
// Any type with synthesized Codable travels as it is, so a field added to `ModemState` (or to the options sent the
// other way) needs no change here. The decoding side treats its input as hostile: the frame length, nesting depth,
// element counts and string sizes are bounded, integers are converted with `init(exactly:)` and a value that does
// not fit is an error, never a trap; non-finite doubles and invalid UTF-8 are refused.
//
// A value is a tag byte and its payload (integers as LEB128 varints, little-endian):
//
//     0x00 nil   0x01 false   0x02 true
//     0x03 signed integer (zigzag varint)      0x04 unsigned integer (varint)
//     0x05 double (8 bytes, IEEE 754 bits)     0x06 string (varint byte count, UTF-8)
//     0x07 array (varint count, values)        0x08 map (varint count, then key string + value pairs)
//
// A frame is a 4-byte big-endian payload length followed by the payload.

/// A decoded value tree (what the codec's Decoder walks).
public enum WireValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([WireValue])
    case map([WireMember])

    var typeName: String {
        switch self {
        case .null: return "nil"
        case .bool: return "a boolean"
        case .int, .uint: return "an integer"
        case .double: return "a double"
        case .string: return "a string"
        case .array: return "an array"
        case .map: return "a map"
        }
    }
}

/// One member of a `WireValue.map`.
public struct WireMember: Sendable, Equatable {
    public var key: String
    public var value: WireValue
    public init(_ key: String, _ value: WireValue) {
        self.key = key
        self.value = value
    }
}

/// Bounds a decoder applies to bytes it did not produce itself.
public struct WireLimits: Sendable, Equatable {
    /// Arrays and maps nested deeper than this are refused.
    public var maxDepth: Int
    /// Longest string, in bytes.
    public var maxStringBytes: Int
    /// Most elements of one array or map.
    public var maxCount: Int

    public init(maxDepth: Int = 32, maxStringBytes: Int = 16 * 1024, maxCount: Int = 4096) {
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
        self.maxCount = maxCount
    }
}

/// Why bytes could not be decoded (or a value encoded), with where.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum WireCodec {
    /// The binary form of `value`.
    public static func encode<T: Encodable>(_ value: T) throws(WireError) -> [UInt8] {
        let box = WireBox()
        do {
            try value.encode(to: WireTreeEncoder(box: box, codingPath: []))
        } catch {
            throw WireError("cannot encode \(T.self): \(describe(error))")
        }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        box.resolve().write(to: &out)
        return out
    }

    /// A value of `type` from its binary form, within `limits`. Trailing bytes are an error.
    public static func decode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], limits: WireLimits = WireLimits()
    ) throws(WireError) -> T {
        let tree = try parse(bytes, limits: limits)
        do {
            return try T(from: WireTreeDecoder(value: tree, codingPath: []))
        } catch {
            throw WireError("cannot decode \(T.self): \(describe(error))")
        }
    }

    /// The value tree of a binary form, within `limits`.
    public static func parse(_ bytes: [UInt8], limits: WireLimits = WireLimits()) throws(WireError) -> WireValue {
        var reader = WireReader(bytes: bytes, limits: limits)
        let value = try reader.value(depth: 0)
        guard reader.position == bytes.count else {
            throw WireError("\(bytes.count - reader.position) bytes after the value")
        }
        return value
    }

    static func describe(_ error: Error) -> String {
        func path(_ p: [CodingKey]) -> String {
            p.isEmpty ? "the top level" : p.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case let e as DecodingError:
            switch e {
            case let .typeMismatch(_, c), let .valueNotFound(_, c), let .dataCorrupted(c):
                return "\(path(c.codingPath)): \(c.debugDescription)"
            case let .keyNotFound(key, c):
                return "\(path(c.codingPath)): missing key '\(key.stringValue)'"
            @unknown default:
                return "\(e)"
            }
        case let e as EncodingError:
            switch e {
            case let .invalidValue(_, c): return "\(path(c.codingPath)): \(c.debugDescription)"
            @unknown default: return "\(e)"
            }
        default:
            return "\(error)"
        }
    }
}

// MARK: - Frames

public enum WireFrame {
    /// The largest payload a frame may announce by default: a modem state is a few hundred bytes; this leaves room
    /// for cell lists and neighbours while keeping what a hostile sender can make the reader buffer small.
    public static let defaultMaxPayload = 256 * 1024

    /// `payload` with its 4-byte big-endian length in front.
    public static func frame(_ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(truncatingIfNeeded: payload.count)
        return [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
                UInt8(truncatingIfNeeded: n)] + payload
    }

    /// `value` encoded and framed.
    public static func encode<T: Encodable>(_ value: T) throws(WireError) -> [UInt8] {
        let payload = try WireCodec.encode(value)
        guard payload.count <= UInt32.max else { throw WireError("a frame of \(payload.count) bytes is too long") }
        return frame(payload)
    }
}

/// Collects bytes as they are read and hands out whole frame payloads. An announced length above `maxPayload`
/// is an error (the stream cannot be trusted after it).
public struct WireFrameBuffer: Sendable {
    public let maxPayload: Int
    private var bytes: [UInt8] = []
    private var start = 0

    public init(maxPayload: Int = WireFrame.defaultMaxPayload) { self.maxPayload = maxPayload }

    /// Bytes held that do not make a whole frame yet.
    public var pending: Int { bytes.count - start }

    public mutating func append(_ chunk: some Collection<UInt8>) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        bytes.append(contentsOf: chunk)
    }

    /// The next whole payload, nil when more bytes are needed.
    public mutating func next() throws(WireError) -> [UInt8]? {
        guard bytes.count - start >= 4 else { return nil }
        // Assembled as a UInt32: on a 32-bit board (armv7) an Int would turn a length of 2^31 or more negative, and
        // a negative length passes the bound below and then traps on the slice.
        let announced = UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8
            | UInt32(bytes[start + 3])
        guard let length = Int(exactly: announced), length <= maxPayload else {
            throw WireError("a frame announces \(announced) bytes, more than the \(maxPayload) allowed")
        }
        guard bytes.count - start - 4 >= length else { return nil }
        let payload = Array(bytes[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        if start > 64 * 1024 {
            bytes.removeFirst(start)
            start = 0
        }
        return payload
    }
}

// MARK: - Writing and reading the binary form

extension WireValue {
    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(0x00)
        case let .bool(b): out.append(b ? 0x02 : 0x01)
        case let .int(i):
            out.append(0x03)
            WireValue.varint(UInt64(bitPattern: (i << 1) ^ (i >> 63)), to: &out)
        case let .uint(u):
            out.append(0x04)
            WireValue.varint(u, to: &out)
        case let .double(d):
            out.append(0x05)
            let bits = d.bitPattern
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        case let .string(s):
            out.append(0x06)
            WireValue.string(s, to: &out)
        case let .array(items):
            out.append(0x07)
            WireValue.varint(UInt64(items.count), to: &out)
            for item in items { item.write(to: &out) }
        case let .map(members):
            out.append(0x08)
            WireValue.varint(UInt64(members.count), to: &out)
            for m in members {
                WireValue.string(m.key, to: &out)
                m.value.write(to: &out)
            }
        }
    }

    private static func varint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private static func string(_ s: String, to out: inout [UInt8]) {
        let utf8 = Array(s.utf8)
        varint(UInt64(utf8.count), to: &out)
        out.append(contentsOf: utf8)
    }
}

/// Reads the binary form from untrusted bytes: every length is checked against what is left and the limits.
struct WireReader {
    let bytes: [UInt8]
    let limits: WireLimits
    var position = 0

    init(bytes: [UInt8], limits: WireLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    private func fail(_ what: String) -> WireError { WireError("byte \(position): \(what)") }

    mutating func byte() throws(WireError) -> UInt8 {
        guard position < bytes.count else { throw fail("the value ends early") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func varint() throws(WireError) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<10 {
            let b = try byte()
            let part = UInt64(b & 0x7F)
            if i == 9 && part > 1 { throw fail("an integer longer than 64 bits") }
            value |= part << UInt64(7 * i)
            if b & 0x80 == 0 { return value }
        }
        throw fail("an integer longer than 64 bits")
    }

    /// A count or length, which cannot exceed the bytes left (each element takes at least one) nor `limit`.
    mutating func count(limit: Int, of what: String) throws(WireError) -> Int {
        let raw = try varint()
        guard raw <= UInt64(limit) else { throw fail("\(what) of \(raw) is more than the \(limit) allowed") }
        let n = Int(raw)
        guard n <= bytes.count - position else { throw fail("\(what) of \(n) runs past the end") }
        return n
    }

    mutating func string() throws(WireError) -> String {
        let n = try count(limit: limits.maxStringBytes, of: "a string length")
        let slice = bytes[position..<(position + n)]
        guard let s = String(validating: slice, as: UTF8.self) else { throw fail("a string that is not UTF-8") }
        position += n
        return s
    }

    mutating func value(depth: Int) throws(WireError) -> WireValue {
        let tag = try byte()
        switch tag {
        case 0x00: return .null
        case 0x01: return .bool(false)
        case 0x02: return .bool(true)
        case 0x03:
            let z = try varint()
            return .int(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case 0x04: return .uint(try varint())
        case 0x05:
            guard bytes.count - position >= 8 else { throw fail("a double ends early") }
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(bytes[position + i]) << UInt64(8 * i) }
            position += 8
            let d = Double(bitPattern: bits)
            guard d.isFinite else { throw fail("a double that is not finite") }
            return .double(d)
        case 0x06: return .string(try string())
        case 0x07, 0x08:
            guard depth < limits.maxDepth else { throw fail("nesting deeper than \(limits.maxDepth) levels") }
            let n = try count(limit: limits.maxCount, of: tag == 0x07 ? "an array count" : "a map count")
            if tag == 0x07 {
                var items: [WireValue] = []
                items.reserveCapacity(n)
                for _ in 0..<n { items.append(try value(depth: depth + 1)) }
                return .array(items)
            }
            var members: [WireMember] = []
            members.reserveCapacity(n)
            var seen = Set<String>()
            for _ in 0..<n {
                let key = try string()
                guard seen.insert(key).inserted else { throw fail("the key '\(key)' twice in one map") }
                members.append(WireMember(key, try value(depth: depth + 1)))
            }
            return .map(members)
        default:
            throw WireError("byte \(position - 1): unknown tag 0x\(String(tag, radix: 16))")
        }
    }
}

// MARK: - Encoder

/// A node of the tree an encoding builds: containers hand out child boxes that are filled later.
final class WireBox {
    enum Content {
        case empty
        case value(WireValue)
        case array([WireBox])
        case map([(String, WireBox)])
    }

    var content: Content = .empty

    func resolve() -> WireValue {
        switch content {
        case .empty: return .map([])
        case let .value(v): return v
        case let .array(items): return .array(items.map { $0.resolve() })
        case let .map(members): return .map(members.map { WireMember($0.0, $0.1.resolve()) })
        }
    }

    func appendMember(_ key: String) -> WireBox {
        let child = WireBox()
        if case var .map(members) = content {
            members.removeAll { $0.0 == key }
            members.append((key, child))
            content = .map(members)
        } else {
            content = .map([(key, child)])
        }
        return child
    }

    func appendItem() -> WireBox {
        let child = WireBox()
        if case var .array(items) = content {
            items.append(child)
            content = .array(items)
        } else {
            content = .array([child])
        }
        return child
    }
}

struct WireIndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String
    init(_ i: Int) {
        intValue = i
        stringValue = String(i)
    }
    init?(intValue: Int) { self.init(intValue) }
    init?(stringValue: String) { return nil }
}

struct WireTreeEncoder: Encoder {
    let box: WireBox
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .map = box.content {} else { box.content = .map([]) }
        return KeyedEncodingContainer(WireKeyedEncoder<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if case .array = box.content {} else { box.content = .array([]) }
        return WireUnkeyedEncoder(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer {
        WireSingleEncoder(box: box, codingPath: codingPath)
    }
}

/// The primitive values every container writes the same way.
private func wirePrimitive<T: Encodable>(_ value: T) -> WireValue? {
    switch value {
    case let v as Bool: return .bool(v)
    case let v as String: return .string(v)
    case let v as Double: return .double(v)
    case let v as Float: return .double(Double(v))
    case let v as Int: return .int(Int64(v))
    case let v as Int8: return .int(Int64(v))
    case let v as Int16: return .int(Int64(v))
    case let v as Int32: return .int(Int64(v))
    case let v as Int64: return .int(v)
    case let v as UInt: return .uint(UInt64(v))
    case let v as UInt8: return .uint(UInt64(v))
    case let v as UInt16: return .uint(UInt64(v))
    case let v as UInt32: return .uint(UInt64(v))
    case let v as UInt64: return .uint(v)
    default: return nil
    }
}

private func wireEncode<T: Encodable>(_ value: T, into box: WireBox, path: [CodingKey]) throws {
    if let p = wirePrimitive(value) {
        box.content = .value(p)
    } else {
        try value.encode(to: WireTreeEncoder(box: box, codingPath: path))
    }
}

struct WireKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: WireBox
    let codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { box.appendMember(key.stringValue).content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try wireEncode(value, into: box.appendMember(key.stringValue), path: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = box.appendMember(key.stringValue)
        child.content = .map([])
        return KeyedEncodingContainer(WireKeyedEncoder<NestedKey>(box: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = box.appendMember(key.stringValue)
        child.content = .array([])
        return WireUnkeyedEncoder(box: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder {
        WireTreeEncoder(box: box.appendMember("super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        WireTreeEncoder(box: box.appendMember(key.stringValue), codingPath: codingPath + [key])
    }
}

struct WireUnkeyedEncoder: UnkeyedEncodingContainer {
    let box: WireBox
    let codingPath: [CodingKey]
    var count: Int {
        if case let .array(items) = box.content { return items.count }
        return 0
    }

    mutating func encodeNil() throws { box.appendItem().content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = codingPath + [WireIndexKey(count)]
        try wireEncode(value, into: box.appendItem(), path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = codingPath + [WireIndexKey(count)]
        let child = box.appendItem()
        child.content = .map([])
        return KeyedEncodingContainer(WireKeyedEncoder<NestedKey>(box: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let path = codingPath + [WireIndexKey(count)]
        let child = box.appendItem()
        child.content = .array([])
        return WireUnkeyedEncoder(box: child, codingPath: path)
    }

    mutating func superEncoder() -> Encoder {
        let path = codingPath + [WireIndexKey(count)]
        return WireTreeEncoder(box: box.appendItem(), codingPath: path)
    }
}

struct WireSingleEncoder: SingleValueEncodingContainer {
    let box: WireBox
    let codingPath: [CodingKey]

    mutating func encodeNil() throws { box.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try wireEncode(value, into: box, path: codingPath) }
}

// MARK: - Decoder

struct WireTreeDecoder: Decoder {
    let value: WireValue
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .map(members) = value else {
            throw DecodingError.typeMismatch(
                [String: Any].self, .init(codingPath: codingPath, debugDescription: "expected a map, found \(value.typeName)"))
        }
        return KeyedDecodingContainer(WireKeyedDecoder<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard case let .array(items) = value else {
            throw DecodingError.typeMismatch(
                [Any].self, .init(codingPath: codingPath, debugDescription: "expected an array, found \(value.typeName)"))
        }
        return WireUnkeyedDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer {
        WireSingleDecoder(value: value, codingPath: codingPath)
    }
}

/// A primitive of type `T` from `value`, or nil when `T` is not a primitive. Integers must fit exactly.
private func wirePrimitive<T>(_ type: T.Type, from value: WireValue, path: [CodingKey]) throws -> T? {
    func mismatch(_ expected: String) -> DecodingError {
        .typeMismatch(T.self, .init(codingPath: path, debugDescription: "expected \(expected), found \(value.typeName)"))
    }
    func integer<I: FixedWidthInteger>(_: I.Type) throws -> I {
        let result: I?
        switch value {
        case let .int(i): result = I(exactly: i)
        case let .uint(u): result = I(exactly: u)
        default: throw mismatch("an integer")
        }
        guard let result else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "\(value) does not fit in \(I.self)"))
        }
        return result
    }
    switch type {
    case is Bool.Type:
        guard case let .bool(b) = value else { throw mismatch("a boolean") }
        return b as? T
    case is String.Type:
        guard case let .string(s) = value else { throw mismatch("a string") }
        return s as? T
    case is Double.Type:
        guard case let .double(d) = value else { throw mismatch("a double") }
        return d as? T
    case is Float.Type:
        guard case let .double(d) = value else { throw mismatch("a double") }
        guard let f = Float(exactly: d) ?? (abs(d) <= Double(Float.greatestFiniteMagnitude) ? Float(d) : nil) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(d) does not fit in Float"))
        }
        return f as? T
    case is Int.Type: return try integer(Int.self) as? T
    case is Int8.Type: return try integer(Int8.self) as? T
    case is Int16.Type: return try integer(Int16.self) as? T
    case is Int32.Type: return try integer(Int32.self) as? T
    case is Int64.Type: return try integer(Int64.self) as? T
    case is UInt.Type: return try integer(UInt.self) as? T
    case is UInt8.Type: return try integer(UInt8.self) as? T
    case is UInt16.Type: return try integer(UInt16.self) as? T
    case is UInt32.Type: return try integer(UInt32.self) as? T
    case is UInt64.Type: return try integer(UInt64.self) as? T
    default: return nil
    }
}

private func wireDecode<T: Decodable>(_ type: T.Type, from value: WireValue, path: [CodingKey]) throws -> T {
    if let p = try wirePrimitive(type, from: value, path: path) { return p }
    return try T(from: WireTreeDecoder(value: value, codingPath: path))
}

struct WireKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: WireValue]
    let codingPath: [CodingKey]

    init(members: [WireMember], codingPath: [CodingKey]) {
        // The reader refused duplicate keys; a tree built in memory keeps its last member.
        self.members = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        self.codingPath = codingPath
    }

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> WireValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try wireDecode(type, from: member(key), path: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try WireTreeDecoder(value: member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try WireTreeDecoder(value: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder {
        WireTreeDecoder(value: members["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> Decoder {
        WireTreeDecoder(value: try member(key), codingPath: codingPath + [key])
    }
}

struct WireUnkeyedDecoder: UnkeyedDecodingContainer {
    let items: [WireValue]
    let codingPath: [CodingKey]
    var currentIndex = 0

    init(items: [WireValue], codingPath: [CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next<T>(_ type: T.Type) throws -> (WireValue, [CodingKey]) {
        guard currentIndex < items.count else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "the array has only \(items.count) elements"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [WireIndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < items.count else { return false }
        if items[currentIndex] == .null {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next(type)
        return try wireDecode(type, from: value, path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (value, path) = try next([String: Any].self)
        return try WireTreeDecoder(value: value, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        let (value, path) = try next([Any].self)
        return try WireTreeDecoder(value: value, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> Decoder {
        let (value, path) = try next(Any.self)
        return WireTreeDecoder(value: value, codingPath: path)
    }
}

struct WireSingleDecoder: SingleValueDecodingContainer {
    let value: WireValue
    let codingPath: [CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try wireDecode(type, from: value, path: codingPath) }
}
