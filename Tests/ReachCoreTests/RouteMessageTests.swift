import Testing

@testable import ReachCore

/// Route messages as `ip route` writes them into the kernel, decoded from their bytes (the payload after the
/// nlmsghdr: `struct rtmsg`, then attributes).
@Suite struct RouteMessageTests {
    static func payload(
        family: UInt8 = 2, dstLength: UInt8 = 0, table: UInt8 = 254, type: UInt8 = 1, flags: UInt32 = 0,
        _ build: (inout NetlinkAttributeWriter) -> Void
    ) -> [UInt8] {
        var w = NetlinkAttributeWriter()
        build(&w)
        return [family, dstLength, 0, 0, table, 4, 0, type] + NativeInteger.bytes(flags) + w.bytes
    }

    static func hop(_ ifindex: Int32, flags: UInt8 = 0, gateway: [UInt8]?) -> [UInt8] {
        var a = NetlinkAttributeWriter()
        if let gateway { a.put(5, gateway) }
        return NativeInteger.bytes(UInt16(8 + a.bytes.count)) + [flags, 0] + NativeInteger.bytes(ifindex) + a.bytes
    }

    static let gw4: [UInt8] = [192, 0, 2, 1]
    static let gw6: [UInt8] = [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]

    /// (what, payload, decoded)
    static let cases: [(String, [UInt8], RouteMessage?)] = [
        (
            "default via 192.0.2.1 dev eth0 metric 10",
            payload { $0.put(15, integer: UInt32(254)); $0.put(6, integer: UInt32(10)); $0.put(4, integer: UInt32(2)); $0.put(5, gw4) },
            RouteMessage(
                type: 1, table: 254, metric: 10, dstLength: 0, preferredSource: nil,
                nextHops: [.init(ifindex: 2, gateway: IPAddress("192.0.2.1"), flags: 0)])
        ),
        (
            "a table above 255 only in RTA_TABLE; a dead, linkdown next hop (rtm_flags low byte); RTM_F_ bits above it",
            payload(table: 252, flags: 0x11 | 0x200) { $0.put(15, integer: UInt32(1000)); $0.put(4, integer: UInt32(3)) },
            RouteMessage(
                type: 1, table: 1000, metric: 0, dstLength: 0, preferredSource: nil,
                nextHops: [.init(ifindex: 3, gateway: nil, flags: 0x11)])
        ),
        (
            "multipath: two next hops, each with its own flags; a preferred source",
            payload {
                $0.put(7, [192, 0, 2, 2])
                $0.put(9, hop(2, gateway: gw4) + hop(4, flags: 1, gateway: [198, 18, 0, 1]))
            },
            RouteMessage(
                type: 1, table: 254, metric: 0, dstLength: 0, preferredSource: IPAddress("192.0.2.2"),
                nextHops: [
                    .init(ifindex: 2, gateway: IPAddress("192.0.2.1"), flags: 0),
                    .init(ifindex: 4, gateway: IPAddress("198.18.0.1"), flags: 1),
                ])
        ),
        (
            "IPv4 default via an IPv6 next hop (RTA_VIA, RFC 5549)",
            payload { $0.put(4, integer: UInt32(2)); $0.put(18, NativeInteger.bytes(UInt16(10)) + gw6) },
            RouteMessage(
                type: 1, table: 254, metric: 0, dstLength: 0, preferredSource: nil,
                nextHops: [.init(ifindex: 2, gateway: IPAddress("fe80::1"), flags: 0)])
        ),
        (
            "IPv6 unreachable default: no next hop",
            payload(family: 10, type: 7) { $0.put(6, integer: UInt32(1024)) },
            RouteMessage(type: 7, table: 254, metric: 1024, dstLength: 0, preferredSource: nil, nextHops: [])
        ),
        ("an AF_BRIDGE message", payload(family: 7) { _ in }, nil),
        ("shorter than struct rtmsg", [2, 0, 0, 0, 254, 4, 0, 1], nil),
    ]

    @Test(arguments: 0..<cases.count) func decodes(_ i: Int) {
        let (what, bytes, expected) = Self.cases[i]
        #expect(RouteMessage(payload: bytes) == expected, "\(what)")
    }

    @Test func defaultIsToldFromTwoHeaderBytes() {
        let cases: [([UInt8], Bool)] = [
            (Self.payload { _ in }, true),
            (Self.payload(dstLength: 32) { _ in }, false),
            (Self.payload(type: 2) { _ in }, false),  // RTN_LOCAL
            (Array(Self.payload { _ in }.prefix(11)), false),
        ]
        for (bytes, expected) in cases {
            #expect(bytes.withUnsafeBytes { RouteMessage.isDefault(payload: $0) } == expected, "\(bytes)")
        }
    }

    /// Cut anywhere, or with a lying length, a message never traps: it is refused or read up to the damage.
    @Test func brokenMessagesNeverTrap() {
        let good = Self.payload { $0.put(6, integer: UInt32(5)); $0.put(9, Self.hop(2, gateway: Self.gw4) + Self.hop(3, gateway: nil)) }
        for n in 0...good.count {
            let r = RouteMessage(payload: Array(good.prefix(n)))
            if n < 12 { #expect(r == nil) }
        }
        var lying = good
        lying[12] = 0xFF  // the first attribute claims more than there is: the walk ends, nothing is read from it
        #expect(RouteMessage(payload: lying)?.metric == 0)
        var badHop = good
        badHop[24] = 3  // the first rtnexthop's length below its own header ends the list
        #expect(RouteMessage(payload: badHop)?.nextHops == [])
    }
}
