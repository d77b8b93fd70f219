// One rtnetlink route message (RTM_NEWROUTE) decoded from its bytes: `struct rtmsg` (linux/rtnetlink.h: family,
// dst_len, src_len, tos, table, protocol, scope, type as u8, flags as u32), then attributes. Only what the route
// answers use is kept: table, metric, destination length, preferred source, type and the next hops (RTA_OIF and
// RTA_GATEWAY/RTA_VIA of a single-path route with rtm_flags as its flags, or each `struct rtnexthop` of RTA_MULTIPATH
// with its own). A route dump of a big table is mostly routes nobody asked for: `isDefault(payload:)` reads two
// header bytes so that a caller skips them without decoding (or copying) anything.

public struct RouteMessage: Sendable, Equatable {
    public struct NextHop: Sendable, Equatable {
        public var ifindex: Int
        public var gateway: IPAddress?
        /// RTNH_F_* (RTNH_F_DEAD 1, RTNH_F_LINKDOWN 16, ...).
        public var flags: UInt32

        public init(ifindex: Int, gateway: IPAddress?, flags: UInt32) {
            self.ifindex = ifindex
            self.gateway = gateway
            self.flags = flags
        }
    }

    /// RTN_* (RTN_UNICAST 1).
    public var type: Int
    /// RTA_TABLE when present (tables above 255), else the header's byte.
    public var table: Int
    /// RTA_PRIORITY, 0 when absent.
    public var metric: Int
    public var dstLength: Int
    /// RTA_PREFSRC.
    public var preferredSource: IPAddress?
    public var nextHops: [NextHop]

    public init(type: Int, table: Int, metric: Int, dstLength: Int, preferredSource: IPAddress?, nextHops: [NextHop]) {
        self.type = type
        self.table = table
        self.metric = metric
        self.dstLength = dstLength
        self.preferredSource = preferredSource
        self.nextHops = nextHops
    }

    /// sizeof(struct rtmsg).
    public static let headerLength = 12
    static let unicast: UInt8 = 1  // RTN_UNICAST
    // Attribute types (enum rtattr_type_t).
    static let oif: UInt16 = 4, gatewayType: UInt16 = 5, priority: UInt16 = 6, prefsrc: UInt16 = 7
    static let multipath: UInt16 = 9, tableType: UInt16 = 15, via: UInt16 = 18

    /// True for a unicast route to 0/0 (or ::/0): the payload's rtm_dst_len is 0 and rtm_type is RTN_UNICAST. Reads
    /// two bytes of the payload (the bytes after the nlmsghdr); false for anything shorter than a `struct rtmsg`.
    public static func isDefault(payload: UnsafeRawBufferPointer) -> Bool {
        payload.count >= headerLength && payload[1] == 0 && payload[7] == unicast
    }

    /// Decodes a message's payload (the bytes after the nlmsghdr). Nil when it is shorter than `struct rtmsg` or
    /// names a family other than AF_INET (2) / AF_INET6 (10); attributes that run past the end are ignored from there
    /// on, as the attribute walk does everywhere.
    public init?(payload: [UInt8]) {
        guard payload.count >= Self.headerLength, payload[0] == 2 || payload[0] == 10 else { return nil }
        let a = NetlinkAttributes(payload[Self.headerLength...])
        type = Int(payload[7])
        table = a.u32(Self.tableType).map { Int($0) } ?? Int(payload[4])
        metric = a.u32(Self.priority).map { Int($0) } ?? 0
        dstLength = Int(payload[1])
        preferredSource = a.bytes(Self.prefsrc).flatMap { IPAddress(bytes: $0) }
        let flags = NativeInteger.read(UInt32.self, payload, at: 8) ?? 0
        if let hops = a.bytes(Self.multipath) {
            nextHops = Self.multipathHops(hops)
        } else if a.contains(Self.oif) || a.contains(Self.gatewayType) || a.contains(Self.via) {
            // A single-path route's next-hop flags are the low byte of rtm_flags (RTNH_F_*; RTM_F_* sit above it).
            nextHops = [
                NextHop(ifindex: a.s32(Self.oif).map { Int($0) } ?? 0, gateway: Self.gateway(a), flags: flags & 0xFF)
            ]
        } else {
            nextHops = []
        }
    }

    /// RTA_GATEWAY, or RTA_VIA (`struct rtvia`: a u16 family, then the address; an IPv6 next hop for an IPv4 route,
    /// RFC 5549).
    static func gateway(_ a: NetlinkAttributes) -> IPAddress? {
        if let g = a.bytes(Self.gatewayType), let address = IPAddress(bytes: g) { return address }
        if let v = a.bytes(Self.via), v.count > 2 { return IPAddress(bytes: Array(v[2...])) }
        return nil
    }

    /// The `struct rtnexthop` records of RTA_MULTIPATH (len u16, flags u8, hops u8, ifindex s32, then attributes),
    /// each 4-byte aligned. A record shorter than its header or running past the end ends the list.
    static func multipathHops(_ bytes: [UInt8]) -> [NextHop] {
        var hops: [NextHop] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            guard let length = NativeInteger.read(UInt16.self, bytes, at: offset).map(Int.init), length >= 8,
                offset + length <= bytes.count
            else { break }
            let ifindex = NativeInteger.read(Int32.self, bytes, at: offset + 4) ?? 0
            let a = NetlinkAttributes(bytes[(offset + 8)..<(offset + length)])
            hops.append(NextHop(ifindex: Int(ifindex), gateway: gateway(a), flags: UInt32(bytes[offset + 2])))
            offset += (length + 3) & ~3
        }
        return hops
    }
}
