// IP prefixes (address/length): WireGuard's allowed IPs, the CLAT range of RFC 7335 and the PLAT prefix of RFC 6877,
// with RFC 6052's rule for writing an IPv4 address into an IPv6 prefix.

/// An IPv4 or IPv6 prefix. The address keeps the bits given; `contains` compares only the first `length` bits.
public struct IPPrefix: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let length: Int

    public init?(address: IPAddress, length: Int) {
        guard length >= 0, length <= address.bytes.count * 8 else { return nil }
        self.address = address
        self.length = length
    }

    /// "192.0.0.0/29", "64:ff9b::/96"; a bare address is its own host prefix (/32, /128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        var length = address.bytes.count * 8
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy(\.isASCIIDigit),
                !(digits.count > 1 && digits.first == "0"), let n = Int(digits)
            else { return nil }
            length = n
        }
        self.init(address: address, length: length)
    }

    public var family: AddressFamily { address.family }

    public var description: String { "\(address)/\(length)" }

    /// Whether `other` lies inside this prefix (never across families).
    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        var bits = length
        for i in 0..<address.bytes.count where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if address.bytes[i] & mask != other.bytes[i] & mask { return false }
            bits -= 8
        }
        return true
    }

    /// True when no bit beyond `length` is set (what `ip route` calls a valid prefix).
    public var isCanonical: Bool {
        var bits = length
        for b in address.bytes {
            let keep: UInt8 = bits >= 8 ? 0xFF : (bits <= 0 ? 0 : ~(0xFF >> UInt8(bits)))
            if b & ~keep != 0 { return false }
            bits -= 8
        }
        return true
    }

    // MARK: 464XLAT

    /// 192.0.0.0/29, the IPv4 Service Continuity Prefix RFC 7335 reserves for CLAT interfaces (clatd gives its tun
    /// 192.0.0.4, Android's `v4-*` links take one from this range).
    public static let clatRange = IPPrefix("192.0.0.0/29")!

    /// 64:ff9b::/96, the NAT64 Well-Known Prefix (RFC 6052 §2.1), the PLAT-side prefix RFC 6877 uses by default.
    public static let wellKnownNAT64 = IPPrefix("64:ff9b::/96")!

    /// The prefix lengths RFC 6052 §2.2 allows for IPv4-embedded IPv6 addresses.
    public static let nat64Lengths: Set<Int> = [32, 40, 48, 56, 64, 96]

    /// `ipv4` written into this IPv6 prefix as RFC 6052 §2.2 lays it out: the 32 bits follow the prefix, skipping
    /// bits 64-71 (the "u" octet, always zero); the suffix is zero. Nil unless this is an IPv6 prefix of one of the
    /// allowed lengths and `ipv4` an IPv4 address.
    public func embedding(_ ipv4: IPAddress) -> IPAddress? {
        guard address.family == .ipv6, ipv4.family == .ipv4, Self.nat64Lengths.contains(length) else { return nil }
        var out = Array(address.bytes[0..<(length / 8)]) + [UInt8](repeating: 0, count: 16 - length / 8)
        var position = length / 8
        for byte in ipv4.bytes {
            if position == 8 { position += 1 }  // the u octet
            out[position] = byte
            position += 1
        }
        return IPAddress(bytes: out)
    }
}
