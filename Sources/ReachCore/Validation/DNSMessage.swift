// The few DNS message bytes the probes need (RFC 1035 §4.1): a query of one question, and the parts of a response a
// probe judges (its id and question, the RCODE, the A/AAAA records of the answer section). Pure; every length read
// from the wire is checked against the bytes that are there, so a hostile or truncated response is "not an answer",
// never a crash.

public enum DNSMessage {
    /// QTYPEs (RFC 1035 §3.2.2, RFC 3596 §2.1).
    public static let typeA: UInt16 = 1
    public static let typeNS: UInt16 = 2
    public static let typeAAAA: UInt16 = 28

    /// A query with recursion desired for `name` ("." is the root) and `type`: NS for the root, A otherwise unless
    /// given.
    public static func query(id: UInt16, name: String, type: UInt16? = nil) -> [UInt8] {
        var m: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]  // RD, QDCOUNT 1
        let labels = name.split(separator: ".").filter { !$0.isEmpty }
        for l in labels {
            let bytes = Array(l.utf8.prefix(63))
            m.append(UInt8(bytes.count))
            m += bytes
        }
        m.append(0)
        let t = type ?? (labels.isEmpty ? typeNS : typeA)
        m += [UInt8(t >> 8), UInt8(t & 0xFF), 0, 1]  // QCLASS IN
        return m
    }

    /// The RCODE of a response to `id`, or nil when the bytes are not a response with that id.
    public static func responseCode(_ m: [UInt8], id: UInt16) -> Int? {
        guard m.count >= 12, UInt16(m[0]) << 8 | UInt16(m[1]) == id, m[2] & 0x80 != 0 else { return nil }
        return Int(m[3] & 0x0F)
    }

    /// What a response says.
    public struct Response: Sendable, Equatable {
        /// 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED (RFC 1035 §4.1.1).
        public var rcode: Int
        /// TC: the answer did not fit the datagram.
        public var truncated: Bool
        /// The addresses of the answer section's records of the asked type (A or AAAA), in order.
        public var addresses: [IPAddress]
        /// The answer section ended early or held a record that does not parse: `addresses` holds those before it.
        public var malformed: Bool

        /// "NOERROR", "NXDOMAIN", …, or "rcode N".
        public var rcodeName: String { DNSMessage.rcodeName(rcode) }
    }

    public static func rcodeName(_ rcode: Int) -> String {
        switch rcode {
        case 0: return "NOERROR"
        case 1: return "FORMERR"
        case 2: return "SERVFAIL"
        case 3: return "NXDOMAIN"
        case 4: return "NOTIMP"
        case 5: return "REFUSED"
        default: return "rcode \(rcode)"
        }
    }

    /// The response to the query (`id`, `name`, `type`), or nil when `m` is not one: too short, not a response, another
    /// id, or another question (a late answer to an earlier query, or a forged one).
    public static func parse(_ m: [UInt8], id: UInt16, name: String, type: UInt16) -> Response? {
        guard let rcode = responseCode(m, id: id) else { return nil }
        let qd = Int(m[4]) << 8 | Int(m[5])
        let an = Int(m[6]) << 8 | Int(m[7])
        guard qd == 1 else { return nil }
        var at = 12
        // The question must be ours, label by label (case-insensitive, RFC 4343), uncompressed.
        let wanted = name.split(separator: ".").filter { !$0.isEmpty }.map { Array($0.utf8.prefix(63)).map(lower) }
        for label in wanted {
            guard at < m.count, Int(m[at]) == label.count, at + 1 + label.count <= m.count else { return nil }
            guard m[(at + 1)..<(at + 1 + label.count)].map(lower) == label else { return nil }
            at += 1 + label.count
        }
        guard at + 5 <= m.count, m[at] == 0 else { return nil }
        at += 1
        guard UInt16(m[at]) << 8 | UInt16(m[at + 1]) == type, m[at + 2] == 0, m[at + 3] == 1 else { return nil }
        at += 4
        var response = Response(rcode: rcode, truncated: m[2] & 0x02 != 0, addresses: [], malformed: false)
        for _ in 0..<an {
            guard let end = skipName(m, at) else {
                response.malformed = true
                break
            }
            at = end
            guard at + 10 <= m.count else {
                response.malformed = true
                break
            }
            let rtype = UInt16(m[at]) << 8 | UInt16(m[at + 1])
            let rclass = UInt16(m[at + 2]) << 8 | UInt16(m[at + 3])
            let length = Int(m[at + 8]) << 8 | Int(m[at + 9])
            at += 10
            guard at + length <= m.count else {
                response.malformed = true
                break
            }
            if rclass == 1, rtype == type, (type == typeA && length == 4) || (type == typeAAAA && length == 16) {
                IPAddress(bytes: Array(m[at..<(at + length)])).map { response.addresses.append($0) }
            }
            at += length
        }
        return response
    }

    /// The index after a (possibly compressed) name at `at`, or nil when it runs past the end or is not a name.
    static func skipName(_ m: [UInt8], _ start: Int) -> Int? {
        var at = start
        // A name is at most 255 bytes (RFC 1035 §2.3.4): 128 labels is more than any name can hold.
        for _ in 0..<128 {
            guard at < m.count else { return nil }
            let len = Int(m[at])
            switch len & 0xC0 {
            case 0x00:
                if len == 0 { return at + 1 }
                at += 1 + len
            case 0xC0:
                return at + 2 <= m.count ? at + 2 : nil  // a pointer ends the name where it stands
            default:
                return nil  // 0x40, 0x80: extended label types nobody sends
            }
        }
        return nil
    }

    private static func lower(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b + 0x20 : b }
}
