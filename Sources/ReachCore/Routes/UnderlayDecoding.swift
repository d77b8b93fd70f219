// The kernel's messages about a link's underlay, decoded from plain bytes: an RTM_NEWLINK's relations and tunnel
// parameters (IFLA_LINK, IFLA_MASTER, IFLA_LINKINFO/IFLA_INFO_DATA) and WireGuard's WG_CMD_GET_DEVICE replies.
// Attribute numbers are those of include/uapi/linux/if_link.h, if_tunnel.h and wireguard.h.

/// One RTM_NEWLINK message (ifinfomsg + attributes), as far as the underlay walk reads it.
public struct LinkMessage: Sendable, Equatable {
    public var index: Int
    public var name: String?
    /// IFLA_LINK.
    public var link: Int?
    /// IFLA_LINK_NETNSID is present: IFLA_LINK names a link of another namespace.
    public var linkInOtherNamespace: Bool
    /// IFLA_MASTER: the bridge (or bond, VRF) this link is a port of.
    public var master: Int?
    /// IFLA_INFO_KIND.
    public var infoKind: String?
    /// IFLA_INFO_DATA, for the tunnel decoders.
    public var infoData: NetlinkAttributes?

    enum Attribute {
        static let ifname: UInt16 = 3
        static let link: UInt16 = 5
        static let master: UInt16 = 10
        static let linkinfo: UInt16 = 18
        static let linkNetnsid: UInt16 = 37
        static let infoKind: UInt16 = 1
        static let infoData: UInt16 = 2
    }

    /// `payload` is the message after its nlmsghdr: a 16-byte ifinfomsg, then attributes.
    public init?(payload: [UInt8]) {
        guard payload.count >= 16, let index = NativeInteger.read(Int32.self, payload, at: 4) else { return nil }
        let a = NetlinkAttributes(payload[16...])
        self.index = Int(index)
        name = a.string(Attribute.ifname)
        link = a.u32(Attribute.link).map { Int($0) }.flatMap { $0 == 0 ? nil : $0 }
        linkInOtherNamespace = a.contains(Attribute.linkNetnsid)
        master = a.u32(Attribute.master).map { Int($0) }.flatMap { $0 == 0 ? nil : $0 }
        let info = a.nested(Attribute.linkinfo)
        infoKind = info?.string(Attribute.infoKind)
        infoData = info?.nested(Attribute.infoData)
    }
}

extension UnderlayTunnel {
    /// The remote, local, bound device, fwmark and UDP port of a tunnel of IFLA_INFO_KIND `kind`, from its
    /// IFLA_INFO_DATA. Nil for a kind that is not an IP tunnel. An all-zero remote (`remote any`) is no remote.
    public static func decode(kind: String, _ data: NetlinkAttributes) -> UnderlayTunnel? {
        func address(_ type: UInt16, _ length: Int) -> IPAddress? {
            guard let b = data.bytes(type), b.count == length, b.contains(where: { $0 != 0 }) else { return nil }
            return IPAddress(bytes: b)
        }
        func index(_ type: UInt16) -> Int? { data.u32(type).flatMap { $0 == 0 ? nil : Int($0) } }
        func bigEndianPort(_ type: UInt16) -> UInt16? {
            guard let b = data.bytes(type), b.count == 2 else { return nil }
            return UInt16(b[0]) << 8 | UInt16(b[1])
        }
        switch kind {
        // IFLA_GRE_LINK 1, IFLA_GRE_LOCAL 6, IFLA_GRE_REMOTE 7, IFLA_GRE_FWMARK 20 (if_tunnel.h).
        case "gre", "gretap", "erspan", "ip6gre", "ip6gretap", "ip6erspan":
            let length = kind.hasPrefix("ip6") ? 16 : 4
            return UnderlayTunnel(
                remote: address(7, length), local: address(6, length), boundIndex: index(1), fwmark: data.u32(20) ?? 0)
        // IFLA_IPTUN_LINK 1, IFLA_IPTUN_LOCAL 2, IFLA_IPTUN_REMOTE 3, IFLA_IPTUN_FWMARK 20.
        case "ipip", "sit", "ip6tnl":
            let length = kind == "ip6tnl" ? 16 : 4
            return UnderlayTunnel(
                remote: address(3, length), local: address(2, length), boundIndex: index(1), fwmark: data.u32(20) ?? 0)
        // IFLA_VXLAN_GROUP 2 / GROUP6 16 (the remote or a multicast group), LINK 3, LOCAL 4 / LOCAL6 17, PORT 15 (be16).
        case "vxlan":
            return UnderlayTunnel(
                remote: address(2, 4) ?? address(16, 16), local: address(4, 4) ?? address(17, 16), boundIndex: index(3),
                udpPort: bigEndianPort(15))
        // IFLA_GENEVE_REMOTE 2 / REMOTE6 7, PORT 5 (be16); Geneve has no device binding.
        case "geneve":
            return UnderlayTunnel(remote: address(2, 4) ?? address(7, 16), udpPort: bigEndianPort(5))
        default:
            return nil
        }
    }
}

extension WireGuardDevice {
    /// WGDEVICE_A_* (include/uapi/linux/wireguard.h).
    enum DeviceAttribute {
        static let listenPort: UInt16 = 6
        static let fwmark: UInt16 = 7
        static let peers: UInt16 = 8
    }

    enum PeerAttribute {
        static let publicKey: UInt16 = 1
        static let endpoint: UInt16 = 4
        static let allowedIPs: UInt16 = 9
    }

    enum AllowedIPAttribute {
        static let family: UInt16 = 1
        static let address: UInt16 = 2
        static let cidr: UInt16 = 3
    }

    /// One device from the messages of a WG_CMD_GET_DEVICE dump (each a genlmsghdr, then attributes). A device with
    /// many peers spans several messages: the device's attributes come in the first, and a peer whose allowed IPs
    /// did not fit continues, under the same public key, at the start of the next; they are joined here as
    /// wireguard.h asks. Nil when no message carries device attributes.
    public static func decode(messages: [[UInt8]]) -> WireGuardDevice? {
        var device: WireGuardDevice?
        var peers: [WireGuardPeer] = []
        var lastKey: [UInt8]?
        for message in messages {
            guard message.count >= 4 else { continue }
            let a = NetlinkAttributes(message[4...])
            if device == nil {
                device = WireGuardDevice(
                    listenPort: a.u16(DeviceAttribute.listenPort).flatMap { $0 == 0 ? nil : $0 },
                    fwmark: a.u32(DeviceAttribute.fwmark) ?? 0, peers: [])
            }
            for p in a.list(DeviceAttribute.peers) {
                let key = p.bytes(PeerAttribute.publicKey)
                let allowed = p.list(PeerAttribute.allowedIPs).compactMap(Self.allowedIP)
                if let key, key == lastKey, !peers.isEmpty {
                    peers[peers.count - 1].allowedIPs += allowed
                    continue
                }
                lastKey = key
                let (endpoint, port) = p.bytes(PeerAttribute.endpoint).map(Self.socketAddress) ?? (nil, nil)
                peers.append(WireGuardPeer(endpoint: endpoint, endpointPort: port, allowedIPs: allowed))
            }
        }
        device?.peers = peers
        return device
    }

    /// A `struct sockaddr_in` or `sockaddr_in6`: family (host order), port (network order), then the address
    /// (after the flow label for IPv6). AF_INET 2, AF_INET6 10.
    static func socketAddress(_ b: [UInt8]) -> (IPAddress?, UInt16?) {
        guard let family = NativeInteger.read(UInt16.self, b), b.count >= 8 else { return (nil, nil) }
        let port = UInt16(b[2]) << 8 | UInt16(b[3])
        switch family {
        case 2: return (IPAddress(bytes: Array(b[4..<8])), port)
        case 10 where b.count >= 24: return (IPAddress(bytes: Array(b[8..<24])), port)
        default: return (nil, nil)
        }
    }

    static func allowedIP(_ a: NetlinkAttributes) -> IPPrefix? {
        guard let bytes = a.bytes(AllowedIPAttribute.address), let address = IPAddress(bytes: bytes),
            let cidr = a.u8(AllowedIPAttribute.cidr)
        else { return nil }
        return IPPrefix(address: address, length: Int(cidr))
    }
}
