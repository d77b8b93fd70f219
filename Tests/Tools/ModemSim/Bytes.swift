// Little-endian byte writing and reading, hex text, and a deterministic generator for "garbage" bytes.
//
// Both QMUX and MBIM are little-endian on the wire; these helpers are the only place that knows it.

/// Appends little-endian integers, strings and raw bytes to a growing buffer.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    public mutating func u16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
    public mutating func i16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
    public mutating func u32(_ v: UInt32) {
        bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
    }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func u64(_ v: UInt64) {
        u32(UInt32(truncatingIfNeeded: v))
        u32(UInt32(truncatingIfNeeded: v >> 32))
    }
    public mutating func append(_ other: [UInt8]) { bytes += other }
    public mutating func ascii(_ s: String) { bytes += Array(s.utf8) }

    /// Overwrites a little-endian u16 written earlier (lengths known only at the end).
    public mutating func patch16(at offset: Int, _ v: UInt16) {
        bytes[offset] = UInt8(v & 0xFF)
        bytes[offset + 1] = UInt8(v >> 8)
    }

    public mutating func patch32(at offset: Int, _ v: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8(v >> (8 * UInt32(i)) & 0xFF) }
    }
}

/// Why bytes could not be read.
public struct DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Reads little-endian values from a byte slice, failing with the offset and what was wanted.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    private mutating func need(_ n: Int, _ what: String) throws(DecodeError) {
        guard n <= remaining else {
            throw DecodeError("\(what) needs \(n) bytes at offset \(offset), \(remaining) left")
        }
    }

    public mutating func u8(_ what: String = "u8") throws(DecodeError) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func i8(_ what: String = "i8") throws(DecodeError) -> Int8 { Int8(bitPattern: try u8(what)) }

    public mutating func u16(_ what: String = "u16") throws(DecodeError) -> UInt16 {
        try need(2, what)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    public mutating func i16(_ what: String = "i16") throws(DecodeError) -> Int16 { Int16(bitPattern: try u16(what)) }

    public mutating func u32(_ what: String = "u32") throws(DecodeError) -> UInt32 {
        try need(4, what)
        defer { offset += 4 }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        return v
    }

    public mutating func i32(_ what: String = "i32") throws(DecodeError) -> Int32 { Int32(bitPattern: try u32(what)) }

    public mutating func u64(_ what: String = "u64") throws(DecodeError) -> UInt64 {
        let lo = try u32(what)
        let hi = try u32(what)
        return UInt64(hi) << 32 | UInt64(lo)
    }

    public mutating func take(_ n: Int, _ what: String = "bytes") throws(DecodeError) -> [UInt8] {
        try need(n, what)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

public enum Hex {
    private static let digits: [Character] = Array("0123456789abcdef")

    /// "01 0c 00 …": lower case, one space between bytes.
    public static func string(_ bytes: [UInt8], separator: String = " ") -> String {
        var out = ""
        out.reserveCapacity(bytes.count * 3)
        for (i, b) in bytes.enumerated() {
            if i > 0 { out += separator }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return out
    }

    /// Parses hex bytes separated by white space or commas; a token may carry a `0x` prefix and hold several
    /// bytes ("0x01, 0x0C", "01 0c" and "010c" all work).
    public static func bytes(_ text: String) throws(DecodeError) -> [UInt8] {
        var out: [UInt8] = []
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" || $0 == "\t" || $0 == "\r" })
        for token in tokens {
            var digits = Substring(token)
            if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
            guard !digits.isEmpty, digits.count % 2 == 0 else {
                throw DecodeError("'\(token)' is not a whole number of hex bytes")
            }
            var high: UInt8?
            for c in digits {
                guard let v = c.hexDigitValue else { throw DecodeError("'\(c)' in '\(token)' is not a hex digit") }
                if let h = high {
                    out.append(h << 4 | UInt8(v))
                    high = nil
                } else {
                    high = UInt8(v)
                }
            }
        }
        return out
    }
}

/// SplitMix64: a tiny deterministic generator, so garbage bytes are the same on every run of a scenario.
public struct SplitMix64: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random-looking bytes that never contain `avoiding` (a frame marker the client would resync on).
    public mutating func bytes(_ count: Int, avoiding: Set<UInt8> = []) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            var word = next()
            for _ in 0..<8 where out.count < count {
                let b = UInt8(word & 0xFF)
                word >>= 8
                if !avoiding.contains(b) { out.append(b) }
            }
        }
        return out
    }
}
