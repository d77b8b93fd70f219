// Which kind of link a network interface is, from facts the kernel publishes (rtnetlink and sysfs).

/// What the adapter read about one interface. Absent facts are nil/false.
public struct LinkFacts: Sendable, Equatable {
    public var name: String
    /// ARPHRD_* from rtnetlink (ifi_type).
    public var arpType: Int
    /// IFF_POINTOPOINT.
    public var pointToPoint: Bool
    /// IFF_LOOPBACK.
    public var loopback: Bool
    /// The bound driver (basename of /sys/class/net/IF/device/driver), e.g. "qmi_wwan".
    public var driver: String?
    /// DEVTYPE from /sys/class/net/IF/uevent, e.g. "wlan", "wwan", "bridge".
    public var devType: String?
    /// /sys/class/net/IF/phy80211 exists (a cfg80211 netdev).
    public var hasPhy80211: Bool
    /// The parent device belongs to the kernel's wwan class (/sys/class/wwan).
    public var wwanClassParent: Bool
    /// rtnetlink IFLA_INFO_KIND, e.g. "veth", "tun", "bridge", "wireguard".
    public var linkKind: String?

    public init(
        name: String, arpType: Int, pointToPoint: Bool = false, loopback: Bool = false, driver: String? = nil,
        devType: String? = nil, hasPhy80211: Bool = false, wwanClassParent: Bool = false, linkKind: String? = nil
    ) {
        self.name = name
        self.arpType = arpType
        self.pointToPoint = pointToPoint
        self.loopback = loopback
        self.driver = driver
        self.devType = devType
        self.hasPhy80211 = hasPhy80211
        self.wwanClassParent = wwanClassParent
        self.linkKind = linkKind
    }
}

public enum InterfaceClassifier {
    /// ARPHRD values (linux/if_arp.h).
    public static let arphrdEther = 1
    public static let arphrdPPP = 512
    public static let arphrdRawIP = 519
    public static let arphrdLoopback = 772
    public static let arphrdNone = 0xFFFE

    /// Drivers of cellular modems' network functions: USB QMI/MBIM (qmi_wwan, cdc_mbim), PCIe MHI (mhi_net,
    /// mhi_wwan_mbim), Qualcomm IPA and rmnet (SoC modems), Intel/MediaTek PCIe WWAN (iosm, mtk_t7xx), Huawei's NCM
    /// variant (huawei_cdc_ncm) and the Sierra/Option direct-IP drivers.
    public static let wwanDrivers: Set<String> = [
        "qmi_wwan", "qmi_wwan_q", "cdc_mbim", "mhi_net", "mhi_wwan_mbim", "ipa", "rmnet", "iosm", "mtk_t7xx",
        "huawei_cdc_ncm", "sierra_net", "hso", "GobiNet",
    ]

    /// Name prefixes that mean WWAN by convention (the kernel's wwan framework names links wwanN; Qualcomm rmnet
    /// names them rmnet*, rmnet_data*, rmnet_ipa*; qmi_wwan names its QMAP mux links qmimuxN, qmimux_register_device).
    public static let wwanNamePrefixes = ["wwan", "rmnet", "qmimux"]

    /// The kind of a link. Order matters: an explicit override wins, then the most specific kernel evidence.
    ///
    /// 1. `overrides[name]` (configuration; e.g. a PPP link that is really a modem dial-up → wwan).
    /// 2. Loopback (IFF_LOOPBACK or ARPHRD_LOOPBACK).
    /// 3. WiFi: a phy80211 link or DEVTYPE=wlan.
    /// 4. WWAN: a modem driver, DEVTYPE=wwan, a wwan-class parent, ARPHRD_RAWIP, or a wwan*/rmnet*/qmimux* name.
    /// 5. PPP: ARPHRD_PPP, or a point-to-point link named ppp* (transient, as SCNetworkReachability marks PPP).
    /// 6. Ethernet: any other ARPHRD_ETHER link (NICs, bridges, VLANs, veth, USB NICs).
    /// 7. Anything else (WireGuard, GRE, tun in L3 mode, …): other.
    public static func classify(_ f: LinkFacts, overrides: [String: InterfaceKind] = [:]) -> InterfaceKind {
        if let kind = overrides[f.name] { return kind }
        if f.loopback || f.arpType == arphrdLoopback { return .loopback }
        if f.hasPhy80211 || f.devType == "wlan" { return .wifi }
        if let d = f.driver, wwanDrivers.contains(d) { return .wwan }
        if f.devType == "wwan" || f.wwanClassParent || f.arpType == arphrdRawIP { return .wwan }
        if wwanNamePrefixes.contains(where: { f.name.hasPrefix($0) }) { return .wwan }
        if f.arpType == arphrdPPP || (f.pointToPoint && f.name.hasPrefix("ppp")) { return .ppp }
        if f.arpType == arphrdEther { return .ethernet }
        return .other
    }
}
