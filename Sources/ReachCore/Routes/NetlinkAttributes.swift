// Netlink attributes (struct nlattr: u16 length, u16 type, payload, padded to 4 bytes) decoded from plain bytes.
//
// This is the pure half of the netlink adapters (nl80211, WireGuard's genetlink family, rtnetlink's link
// attributes): libnl delivers each message's payload as bytes and everything below works on those bytes alone, so
// tests feed captured messages straight in. Decoding never traps: an
// attribute whose length runs past its container, or is shorter than its own header, ends the walk of that
// container and marks it malformed; an attribute of an unknown type is kept but simply never asked for; a value of
// the wrong size reads as absent.

/// The attributes of one container (a message or a nested attribute), first occurrence of each type kept.
public struct NetlinkAttributes: Sendable, Equatable {
    /// NLA_F_NESTED and NLA_F_NET_BYTEORDER are flags in the type's top two bits.
    static let typeMask: UInt16 = 0x3FFF
    static let headerLength = 4

    private var payloads: [UInt16: [UInt8]]
    /// Types in the order they first appeared.
    public private(set) var order: [UInt16]
    /// True when the container ended in a malformed attribute (bad length, truncated header or payload).
    public private(set) var malformed: Bool

    public init<C: Collection<UInt8>>(_ bytes: C) where C.Index == Int {
        var payloads: [UInt16: [UInt8]] = [:]
        var order: [UInt16] = []
        malformed = !Self.walk(bytes) { type, payload in
            if payloads[type] == nil {
                payloads[type] = Array(payload)
                order.append(type)
            }
        }
        self.payloads = payloads
        self.order = order
    }

    /// Calls `body` with every attribute's type (flags masked) and payload, in order; false when the bytes end in a
    /// malformed attribute.
    static func walk<C: Collection<UInt8>>(_ bytes: C, _ body: (UInt16, C.SubSequence) -> Void) -> Bool
    where C.Index == Int {
        var offset = bytes.startIndex
        let end = bytes.endIndex
        while offset < end {
            guard end - offset >= Self.headerLength else { return false }
            let length = Int(NativeInteger.u16(bytes[offset], bytes[offset + 1]))
            let rawType = NativeInteger.u16(bytes[offset + 2], bytes[offset + 3])
            guard length >= Self.headerLength, length <= end - offset else { return false }
            body(rawType & Self.typeMask, bytes[(offset + Self.headerLength)..<(offset + length)])
            offset += (length + 3) & ~3
        }
        return true
    }

    public var isEmpty: Bool { order.isEmpty }

    public func contains(_ type: UInt16) -> Bool { payloads[type] != nil }

    /// The raw payload of an attribute.
    public func bytes(_ type: UInt16) -> [UInt8]? { payloads[type] }

    /// A nested container.
    public func nested(_ type: UInt16) -> NetlinkAttributes? { payloads[type].map { NetlinkAttributes($0) } }

    public func u8(_ type: UInt16) -> UInt8? { payloads[type].flatMap { $0.count >= 1 ? $0[0] : nil } }
    public func s8(_ type: UInt16) -> Int8? { u8(type).map { Int8(bitPattern: $0) } }
    public func u16(_ type: UInt16) -> UInt16? { payloads[type].flatMap { NativeInteger.read(UInt16.self, $0) } }
    public func u32(_ type: UInt16) -> UInt32? { payloads[type].flatMap { NativeInteger.read(UInt32.self, $0) } }
    public func s32(_ type: UInt16) -> Int32? { u32(type).map { Int32(bitPattern: $0) } }
    public func u64(_ type: UInt16) -> UInt64? { payloads[type].flatMap { NativeInteger.read(UInt64.self, $0) } }
    public func flag(_ type: UInt16) -> Bool { payloads[type] != nil }

    /// A NUL-terminated (or unterminated) string attribute, decoded as UTF-8 with invalid bytes repaired.
    public func string(_ type: UInt16) -> String? {
        guard var b = payloads[type] else { return nil }
        if let nul = b.firstIndex(of: 0) { b.removeSubrange(nul...) }
        return String(decoding: b, as: UTF8.self)
    }

    /// The elements of an array-of-nests attribute (each element's own type is an index and is ignored).
    public func elements(_ type: UInt16) -> [NetlinkAttributes] {
        guard let container = nested(type) else { return [] }
        return container.order.compactMap { container.nested($0) }
    }

    /// Every nest inside the attribute `type`, whatever the elements' own types: for lists whose elements all carry
    /// type 0, as WireGuard's peers and allowed IPs do (drivers/net/wireguard/netlink.c), which `elements` would
    /// fold into one.
    public func list(_ type: UInt16) -> [NetlinkAttributes] {
        guard let container = payloads[type] else { return [] }
        var out: [NetlinkAttributes] = []
        _ = Self.walk(container) { _, payload in out.append(NetlinkAttributes(payload)) }
        return out
    }
}

/// Netlink integers are in the host's byte order (not network order).
public enum NativeInteger {
    /// True on a big-endian host (MIPS BE, PowerPC, s390x): where host-order structs differ from little-endian.
    public static let isBigEndian = UInt16(1).bigEndian == 1

    /// Two bytes in host order as a UInt16.
    public static func u16(_ first: UInt8, _ second: UInt8) -> UInt16 {
        var value: UInt16 = 0
        withUnsafeMutableBytes(of: &value) { raw in
            raw[0] = first
            raw[1] = second
        }
        return value
    }

    public static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: [UInt8], at offset: Int = 0) -> T? {
        let size = MemoryLayout<T>.size
        guard offset >= 0, bytes.count - offset >= size else { return nil }
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { raw in
            for i in 0..<size { raw[i] = bytes[offset + i] }
        }
        return value
    }

    public static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }
}

/// Builds attribute bytes; used by tests to make malformed and synthetic messages, and by the CQM planner's tests.
public struct NetlinkAttributeWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func put(_ type: UInt16, _ payload: [UInt8], nested: Bool = false) {
        let length = UInt16(truncatingIfNeeded: 4 + payload.count)
        bytes += NativeInteger.bytes(length)
        bytes += NativeInteger.bytes(nested ? type | 0x8000 : type)
        bytes += payload
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    public mutating func put<T: FixedWidthInteger>(_ type: UInt16, integer value: T) {
        put(type, NativeInteger.bytes(value))
    }

    public mutating func put(_ type: UInt16, string: String) { put(type, Array(string.utf8) + [0]) }

    public mutating func nest(_ type: UInt16, _ build: (inout NetlinkAttributeWriter) -> Void) {
        var inner = NetlinkAttributeWriter()
        build(&inner)
        put(type, inner.bytes, nested: true)
    }
}

/// The messages a CNetlinkShims exchange packed into one buffer: each record a u32 length (host order), that many
/// bytes, padding to 4. A record that runs past the buffer ends the list.
public enum NetlinkRecords {
    public static func split(_ all: UnsafeRawBufferPointer, count: Int = 0) -> [[UInt8]] {
        var result: [[UInt8]] = []
        result.reserveCapacity(count)
        var offset = 0
        while offset + 4 <= all.count {
            let length = Int(all.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard offset + 4 + length <= all.count else { break }
            result.append(Array(all[(offset + 4)..<(offset + 4 + length)]))
            offset += 4 + ((length + 3) & ~3)
        }
        return result
    }
}
