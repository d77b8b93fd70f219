// IPv4/IPv6 addresses as bytes: parsing (RFC 4291 text forms) and formatting (RFC 5952), without libc.

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var family: AddressFamily { bytes.count == 4 ? .ipv4 : .ipv6 }

    public static let ipv4Any = IPAddress(bytes: [0, 0, 0, 0])!
    public static let ipv6Any = IPAddress(bytes: [UInt8](repeating: 0, count: 16))!
    /// 169.254.0.0, the network YYReachability's `reachabilityForLocalWifi` asks about.
    public static let ipv4LinkLocalNetwork = IPAddress(bytes: [169, 254, 0, 0])!

    /// IPv4 169.254.0.0/16 or IPv6 fe80::/10.
    public var isLinkLocal: Bool {
        bytes.count == 4 ? (bytes[0] == 169 && bytes[1] == 254) : (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
    }

    /// Parses dotted-quad IPv4 ("192.0.2.1", exactly four decimal parts 0-255, no leading zeros that would read as
    /// octal) or IPv6 text ("2001:db8::1", "::ffff:192.0.2.1"). Zone ids ("fe80::1%eth0") are not accepted here.
    public init?(_ text: String) {
        if text.contains(":") {
            guard let b = IPAddress.parseIPv6(Substring(text)) else { return nil }
            bytes = b
        } else {
            guard let b = IPAddress.parseIPv4(Substring(text)) else { return nil }
            bytes = b
        }
    }

    static func parseIPv4(_ s: Substring) -> [UInt8]? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCIIDigit) else { return nil }
            if p.count > 1 && p.first == "0" { return nil }
            guard let v = UInt8(p) else { return nil }
            out.append(v)
        }
        return out
    }

    static func parseIPv6(_ s: Substring) -> [UInt8]? {
        guard !s.isEmpty, s.count <= 45 else { return nil }
        let halves = s.pieces(separatedBy: "::")
        guard halves.count <= 2 else { return nil }

        // Each side is a list of 16-bit groups; the last group of the whole address may be an IPv4 dotted quad.
        func groups(_ part: Substring, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let items = part.split(separator: ":", omittingEmptySubsequences: false)
            var out: [UInt16] = []
            for (i, item) in items.enumerated() {
                if allowIPv4Tail && i == items.count - 1 && item.contains(".") {
                    guard let v4 = parseIPv4(item) else { return nil }
                    out.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    out.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard !item.isEmpty, item.count <= 4, let v = UInt16(item, radix: 16),
                    item.allSatisfy(\.isHexDigit)
                else { return nil }
                out.append(v)
            }
            return out
        }

        let words: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0], allowIPv4Tail: false),
                let tail = groups(halves[1], allowIPv4Tail: true),
                head.count + tail.count <= 7
            else { return nil }
            words = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let all = groups(halves[0], allowIPv4Tail: true), all.count == 8 else { return nil }
            words = all
        }
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// RFC 5952 text: lower-case hex, leading zeros dropped, the longest run (≥ 2) of zero groups as "::",
    /// IPv4-mapped addresses as "::ffff:a.b.c.d".
    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        let words = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        if words[0..<5].allSatisfy({ $0 == 0 }) && words[5] == 0xFFFF {
            return "::ffff:" + bytes[12..<16].map(String.init).joined(separator: ".")
        }
        var bestStart = -1
        var bestLen = 0
        var i = 0
        while i < 8 {
            if words[i] == 0 {
                var j = i
                while j < 8 && words[j] == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else {
                i += 1
            }
        }
        func hex(_ r: Range<Int>) -> String { words[r].map { String($0, radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLen)..<8)
    }
}
