// Which data channels a modem's watched network interfaces carry: the map from netdevs to what an observer must bind
// to, from sysfs and rtnetlink, overridden by configuration.
//
// QMI (a WDS client sees only its own channel; ModemManager mm-bearer-qmi.c, mm-port-qmi.c):
// - qmi_wwan QMAP links (`qmimuxN`, created through the main netdev's qmi/add_mux) carry their mux id in sysfs,
//   `/sys/class/net/qmimuxN/qmap/mux_id`, printed as hex ("0x01", qmi_wwan.c mux_id_show); they hang above the main
//   netdev (`upper_qmimuxN` / `lower_wwan0` links).
// - rmnet links (on mhi_net, ipa, or qmi_wwan in pass-through mode) carry theirs in rtnetlink, IFLA_RMNET_MUX_ID in
//   IFLA_INFO_DATA of a link of kind "rmnet" (include/uapi/linux/if_link.h).
// - A multiplexed link whose mux id cannot be learnt is not observed: unknown, never "down".
// - Bind Mux Data Port needs the data endpoint (mm_port_qmi_get_endpoint_info and the qcom-soc plugin): qmi_wwan is
//   HSUSB with the USB interface number, mhi_net PCIE 4, ipa EMBEDDED 1; bam-dmux binds with Bind Data Port to the
//   SIO port A2 MUX RMNETn, n being the netdev's `dev_port`.
// MBIM (the Connect query is device-global per session id): cdc_mbim maps 802.1Q VLAN ids 1-255 on its netdev to
// session ids (cdc_mbim.c), the WWAN framework's links carry IFLA_WWAN_LINK_ID (wwan_core.c); the netdev itself is
// session 0.
// `modems.ports[].mux_id` names the channel of `interface` and overrides both.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReachCore
import ReachSystem

/// The Bind Mux Data Port endpoint (QmiDataEndpointType and interface number).
public struct DataEndpoint: Sendable, Equatable {
    /// QmiDataEndpointType: HSUSB 2, PCIE 3, EMBEDDED 4, BAM_DMUX 5.
    public var type: UInt32
    public var interfaceNumber: UInt32

    public init(type: UInt32, interfaceNumber: UInt32) {
        self.type = type
        self.interfaceNumber = interfaceNumber
    }
}

/// One network interface a modem carries, and how to observe its channel.
public struct DataLink: Sendable, Equatable {
    public var interface: String?
    /// QMI: the QMAP mux id to bind to (nil: not multiplexed, the default channel). MBIM: the session id (nil: 0).
    public var muxID: Int?
    /// QMI BAM-DMUX: the SIO port for Bind Data Port instead of a mux binding.
    public var sioPort: UInt16?
    public var endpoint: DataEndpoint?
    /// Why the link cannot be observed (multiplexed, mux id unknown).
    public var error: String?

    public init(
        interface: String?, muxID: Int? = nil, sioPort: UInt16? = nil, endpoint: DataEndpoint? = nil,
        error: String? = nil
    ) {
        self.interface = interface
        self.muxID = muxID
        self.sioPort = sioPort
        self.endpoint = endpoint
        self.error = error
    }
}

/// What rtnetlink says about a link: its kind and the attributes of its kind (IFLA_LINKINFO).
public struct LinkKindInfo: Sendable, Equatable {
    public var kind: String?
    /// IFLA_INFO_DATA's attributes by type.
    public var data: [UInt16: [UInt8]]

    public init(kind: String?, data: [UInt16: [UInt8]] = [:]) {
        self.kind = kind
        self.data = data
    }

    /// IFLA_RMNET_MUX_ID (1, u16) of an rmnet link.
    public var rmnetMuxID: Int? { kind == "rmnet" ? data[1].flatMap { RTNetlinkLinkInfo.native($0, UInt16.self) }.map(Int.init) : nil }
    /// IFLA_VLAN_ID (1, u16) of a vlan link.
    public var vlanID: Int? { kind == "vlan" ? data[1].flatMap { RTNetlinkLinkInfo.native($0, UInt16.self) }.map(Int.init) : nil }
    /// IFLA_WWAN_LINK_ID (1, u32) of a wwan link.
    public var wwanLinkID: Int? { kind == "wwan" ? data[1].flatMap { RTNetlinkLinkInfo.native($0, UInt32.self) }.map(Int.init) : nil }
}

public enum DataLinkMap {
    /// The links a modem's port carries: `spec.interface` with its channel from the configuration, else its upper
    /// links (qmimux, rmnet, VLAN sessions) when it has any, else itself; no interface known: the default channel
    /// only, mapped to no netdev. `linkInfo` asks rtnetlink (injected for tests).
    public static func links(
        for spec: ModemPortSpec, protocol p: ModemProtocol, sysfsRoot: String = "/sys",
        linkInfo: (String) -> LinkKindInfo? = { RTNetlinkLinkInfo.read($0) }
    ) -> [DataLink] {
        let sys = SysFS(root: sysfsRoot)
        guard let name = spec.interface else { return [DataLink(interface: nil)] }
        let uppers = sys.list("/class/net/\(name)").filter { $0.hasPrefix("upper_") }.map { String($0.dropFirst(6)) }
        if let mux = spec.muxID {
            var link = resolve(name, protocol: p, sys: sys, linkInfo: linkInfo)
            link.error = nil
            link.muxID = mux == 0 && p == .qmi ? nil : mux
            return [link]
        }
        let names = uppers.isEmpty ? [name] : uppers
        return names.map { resolve($0, protocol: p, sys: sys, linkInfo: linkInfo) }
    }

    /// One netdev's channel.
    static func resolve(_ name: String, protocol p: ModemProtocol, sys: SysFS, linkInfo: (String) -> LinkKindInfo?)
        -> DataLink
    {
        var link = DataLink(interface: name)
        let info = linkInfo(name)
        switch p {
        case .mbim:
            link.muxID = info?.vlanID ?? info?.wwanLinkID
            return link
        case .qmi:
            break
        }
        // The transport below a mux link (qmimux0 → wwan0, rmnet_data0 → rmnet_ipa0).
        let lower = sys.list("/class/net/\(name)").first { $0.hasPrefix("lower_") }.map { String($0.dropFirst(6)) }
        let transport = lower ?? name
        let driver = sys.linkBasename("/class/net/\(transport)/device/driver")
        switch driver {
        case "qmi_wwan":
            if let n = sys.read("/class/net/\(transport)/device/bInterfaceNumber").flatMap({ UInt32($0, radix: 16) }) {
                link.endpoint = DataEndpoint(type: 2, interfaceNumber: n)
            }
        case "mhi_net": link.endpoint = DataEndpoint(type: 3, interfaceNumber: 4)
        case "ipa": link.endpoint = DataEndpoint(type: 4, interfaceNumber: 1)
        case "bam-dmux":
            if let port = sys.read("/class/net/\(name)/dev_port").flatMap({ Int($0) }), (0..<8).contains(port) {
                link.sioPort = 0x0E04 + UInt16(port)
                link.endpoint = DataEndpoint(type: 5, interfaceNumber: UInt32(port))
            } else {
                link.error = "\(name) is a BAM-DMUX link whose dev_port (its SIO port) cannot be read"
            }
            return link
        default: break
        }
        if let text = sys.read("/class/net/\(name)/qmap/mux_id") {
            if let mux = parseMuxID(text) {
                link.muxID = mux
            } else {
                link.error = "\(name) is a QMAP link whose qmap/mux_id (\"\(text)\") cannot be read"
            }
        } else if sys.exists("/class/net/\(name)/qmap") || name.hasPrefix("qmimux") {
            link.error = "\(name) is a QMAP mux link but its mux id is unknown (set modems.ports[].mux_id)"
        } else if info?.kind == "rmnet" {
            if let mux = info?.rmnetMuxID {
                link.muxID = mux
            } else {
                link.error = "\(name) is an rmnet link but rtnetlink gave no mux id (set modems.ports[].mux_id)"
            }
        } else if driver == "ipa" {
            link.error = "\(name) is the IPA transport: its sessions are on the rmnet links above it"
        }
        return link
    }

    /// "0x01" (qmi_wwan prints hex) or "1": a mux id from 1 to 254.
    static func parseMuxID(_ text: String) -> Int? {
        let t = text.trimmingSpaces
        let value = t.hasPrefix("0x") ? Int(t.dropFirst(2), radix: 16) : Int(t)
        guard let value, (1...254).contains(value) else { return nil }
        return value
    }
}

/// RTM_GETLINK by name on a NETLINK_ROUTE socket of our own (rtnetlink(7)), for IFLA_LINKINFO: the link's kind and
/// its kind's attributes. Only a few attributes are read, so no library is involved.
public enum RTNetlinkLinkInfo {
    static let rtmGetLink: UInt16 = 18, rtmNewLink: UInt16 = 16, nlmsgError: UInt16 = 2
    static let iflaIfname: UInt16 = 3, iflaLinkinfo: UInt16 = 18
    static let iflaInfoKind: UInt16 = 1, iflaInfoData: UInt16 = 2

    /// The link's kind info, or nil when there is no such link or the kernel cannot be asked.
    public static func read(_ name: String) -> LinkKindInfo? {
        guard !name.isEmpty, name.utf8.count < 16 else { return nil }
        // Protocol 0: NETLINK_ROUTE (linux/netlink.h).
        guard case let .success(fd) = Sys.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue), 0) else { return nil }
        defer { Sys.close(fd) }
        _ = Sys.setReceiveTimeout(fd, .seconds(1), path: nil)
        let request = Self.request(name: name, seq: 1)
        guard case .success(request.count) = request.withUnsafeBytes({ Sys.send(fd, $0, path: nil) }) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 32768)
        guard case let .success(n) = buffer.withUnsafeMutableBytes({ Sys.recv(fd, into: $0, path: nil) }), n > 0 else {
            return nil
        }
        return parse(Array(buffer[..<n]))
    }

    /// An RTM_GETLINK request: nlmsghdr, an empty ifinfomsg, IFLA_IFNAME.
    static func request(name: String, seq: UInt32) -> [UInt8] {
        var attr = Array(name.utf8) + [0]
        let attrLength = 4 + attr.count
        while attr.count % 4 != 0 { attr.append(0) }
        var body = [UInt8](repeating: 0, count: 16)  // struct ifinfomsg, AF_UNSPEC
        body += ne16(UInt16(attrLength)) + ne16(iflaIfname) + attr
        let length = UInt32(16 + body.count)
        return ne32(length) + ne16(rtmGetLink) + ne16(1) + ne32(seq) + ne32(0) + body  // NLM_F_REQUEST
    }

    /// The kind info of the first RTM_NEWLINK in `bytes`; nil for an error answer or anything malformed.
    public static func parse(_ bytes: [UInt8]) -> LinkKindInfo? {
        guard bytes.count >= 16 else { return nil }
        let length = Int(u32(bytes, 0))
        let type = u16(bytes, 4)
        guard type == rtmNewLink, length >= 32, length <= bytes.count else { return nil }
        var info = LinkKindInfo(kind: nil)
        for (t, value) in attributes(bytes, from: 32, to: length) where t == iflaLinkinfo {
            for (it, iv) in attributes(value, from: 0, to: value.count) {
                if it == iflaInfoKind {
                    info.kind = String(decoding: iv.prefix { $0 != 0 }, as: UTF8.self)
                } else if it == iflaInfoData {
                    for (dt, dv) in attributes(iv, from: 0, to: iv.count) { info.data[dt] = dv }
                }
            }
        }
        return info
    }

    /// The (type, value) pairs of a run of netlink attributes (type without the NLA_F_NESTED/NET_BYTEORDER bits);
    /// stops at the first attribute that does not fit.
    static func attributes(_ b: [UInt8], from start: Int, to end: Int) -> [(UInt16, [UInt8])] {
        var out: [(UInt16, [UInt8])] = []
        var i = start
        while i + 4 <= end {
            let len = Int(u16(b, i))
            guard len >= 4, i + len <= end else { break }
            out.append((u16(b, i + 2) & 0x3FFF, Array(b[(i + 4)..<(i + len)])))
            i += (len + 3) & ~3
        }
        return out
    }

    // Netlink is in the host's byte order (big-endian on the MIPS routers OpenWrt runs on).
    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { native(Array(b[i..<(i + 2)]), UInt16.self)! }
    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 { native(Array(b[i..<(i + 4)]), UInt32.self)! }
    static func ne16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v) { Array($0) } }
    static func ne32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v) { Array($0) } }

    /// An integer in the host's byte order from the first bytes of `b`, or nil when `b` is too short.
    static func native<T: FixedWidthInteger>(_ b: [UInt8], _: T.Type) -> T? {
        guard b.count >= MemoryLayout<T>.size else { return nil }
        return b.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }
}
