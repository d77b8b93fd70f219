// A gateway's neighbour-table entry (RTM_GETNEIGH), for `reach diag`: is the next hop answering ARP/NDP?
// Added by the agent issue (#5).

import CNetlinkShims
import Glibc
import ReachCore

/// The kernel's neighbour (ARP/NDP) state of one address: NUD_* bits from `linux/neighbour.h`.
public struct NeighbourState: Sendable, Equatable, CustomStringConvertible {
    public var nud: UInt16
    public var linkAddress: String?

    public init(nud: UInt16, linkAddress: String? = nil) {
        self.nud = nud
        self.linkAddress = linkAddress
    }

    static let names: [(UInt16, String)] = [
        (0x01, "incomplete"), (0x02, "reachable"), (0x04, "stale"), (0x08, "delay"), (0x10, "probe"),
        (0x20, "failed"), (0x40, "noarp"), (0x80, "permanent"),
    ]

    /// "reachable", "stale", "failed", … (several joined with '+'), "none" for 0.
    public var description: String {
        let n = Self.names.filter { nud & $0.0 != 0 }.map(\.1)
        return n.isEmpty ? "none" : n.joined(separator: "+")
    }

    /// The gateway answered recently or is known for good (reachable, permanent, noarp), or was known and is being
    /// checked again (stale, delay, probe: the kernel confirms on next use).
    public var isUsable: Bool { nud & (0x02 | 0x80 | 0x40 | 0x04 | 0x08 | 0x10) != 0 }
    /// Resolution failed or never completed.
    public var isFailed: Bool { nud & (0x20 | 0x01) != 0 && nud & 0x02 == 0 }
}

extension RouteResolver {
    /// The neighbour entry of `address` on the link `ifindex`, or nil when the kernel has none (never resolved).
    /// Dumps the family's neighbour table (RTM_GETNEIGH, NLM_F_DUMP) and picks the entry.
    public static func neighbour(of address: IPAddress, ifindex: Int) throws(NetlinkError) -> NeighbourState? {
        let socket = try RouteSocket()
        guard let msg = nlmsg_alloc_simple(Int32(RTM_GETNEIGH), NLM_F_DUMP) else {
            throw NetlinkError(.library(Int32(NLE_NOMEM)), call: "nlmsg_alloc_simple")
        }
        var ndm = ndmsg()
        ndm.ndm_family = UInt8(address.family == .ipv4 ? AF_INET : AF_INET6)
        ndm.ndm_ifindex = Int32(ifindex)
        let appended = nlmsg_append(msg, &ndm, MemoryLayout<ndmsg>.size, 4 /* NLMSG_ALIGNTO */)
        if appended < 0 {
            nlmsg_free(msg)
            throw NetlinkError(.library(-appended), call: "RTM_GETNEIGH build")
        }
        var found: NeighbourState?
        try socket.exchange(msg, call: "RTM_GETNEIGH dump") { hdr in
            guard let entry = parseNeighbour(hdr), entry.ifindex == ifindex, entry.dst == address.bytes else { return }
            found = NeighbourState(nud: entry.state, linkAddress: entry.lladdr)
        }
        return found
    }

    /// One RTM_NEWNEIGH message: ndmsg, then NDA_DST (1) and NDA_LLADDR (2) attributes.
    static func parseNeighbour(_ hdr: UnsafeMutablePointer<nlmsghdr>) -> (ifindex: Int, state: UInt16, dst: [UInt8], lladdr: String?)? {
        let total = Int(hdr.pointee.nlmsg_len)
        let headerLen = 16  // NLMSG_HDRLEN
        let ndmLen = (MemoryLayout<ndmsg>.size + 3) & ~3
        guard Int32(hdr.pointee.nlmsg_type) == Int32(RTM_NEWNEIGH), total >= headerLen + ndmLen else { return nil }
        let base = UnsafeRawPointer(hdr)
        let ndm = base.advanced(by: headerLen).loadUnaligned(as: ndmsg.self)
        var dst: [UInt8] = []
        var lladdr: String?
        var offset = headerLen + ndmLen
        while offset + 4 <= total {
            let len = Int(base.advanced(by: offset).loadUnaligned(as: UInt16.self))
            let type = base.advanced(by: offset + 2).loadUnaligned(as: UInt16.self) & 0x3FFF
            guard len >= 4, offset + len <= total else { break }
            let value = UnsafeRawBufferPointer(start: base.advanced(by: offset + 4), count: len - 4)
            switch type {
            case 1: dst = Array(value)
            case 2: lladdr = value.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined(separator: ":")
            default: break
            }
            offset += (len + 3) & ~3
        }
        return (Int(ndm.ndm_ifindex), ndm.ndm_state, dst, lladdr)
    }
}
