import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// The netdev → data channel map (DataLinkMap) over fake sysfs trees laid out as the kernel lays them out, the
/// rtnetlink IFLA_LINKINFO reader over messages built as include/uapi/linux/if_link.h defines them, and the access
/// decisions and /proc facts behind modems.access.
@Suite struct DataLinkTests {
    static let usb = "/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.4"

    /// A netdev at /class/net/NAME → ../../devices/…/net/NAME, with its device's driver and attributes.
    static func netdev(_ fs: FakeSysfs, _ name: String, device: String?, driver: String?, attributes: [String: String] = [:]) throws {
        let dir = (device ?? "/devices/virtual") + "/net/\(name)"
        try fs.dir(dir)
        try fs.link("/class/net/\(name)", "../.." + dir)
        if let device, let driver {
            try fs.dir("/bus/usb/drivers/\(driver)")
            try fs.link(dir + "/device", "../..")
            try fs.link(device + "/driver", String(repeating: "../", count: device.split(separator: "/").count) + "bus/usb/drivers/\(driver)")
        }
        for (k, v) in attributes { try fs.file(dir + "/" + k, v) }
    }

    /// A mux link stacked on `lower` (netdev_upper_dev_link: upper_X in the lower's directory, lower_Y in the upper's).
    /// (Only the names matter to the map; the links point at the class entries.)
    static func stack(_ fs: FakeSysfs, upper: String, lower: String) throws {
        try fs.link("/class/net/\(upper)/lower_\(lower)", "../\(lower)")
        try fs.link("/class/net/\(lower)/upper_\(upper)", "../\(upper)")
    }

    static func noNetlink(_: String) -> LinkKindInfo? { nil }

    /// Quectel RM500Q in QMAP mode: wwan0 (qmi_wwan on USB interface 4) carries qmimux0 (mux 1) and qmimux1 (mux 2);
    /// the observers bind to each with endpoint HSUSB, interface 4 (mm_port_qmi_get_endpoint_info).
    @Test func qmiWWANQMAPLinks() throws {
        let fs = try FakeSysfs()
        try Self.netdev(fs, "wwan0", device: Self.usb, driver: "qmi_wwan")
        try fs.file(Self.usb + "/bInterfaceNumber", "04")
        try Self.netdev(fs, "qmimux0", device: nil, driver: nil, attributes: ["qmap/mux_id": "0x01"])
        try Self.netdev(fs, "qmimux1", device: nil, driver: nil, attributes: ["qmap/mux_id": "0x02"])
        try Self.stack(fs, upper: "qmimux0", lower: "wwan0")
        try Self.stack(fs, upper: "qmimux1", lower: "wwan0")
        let links = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0"), protocol: .qmi,
            sysfsRoot: fs.root, linkInfo: Self.noNetlink)
        #expect(links == [
            DataLink(interface: "qmimux0", muxID: 1, endpoint: DataEndpoint(type: 2, interfaceNumber: 4)),
            DataLink(interface: "qmimux1", muxID: 2, endpoint: DataEndpoint(type: 2, interfaceNumber: 4)),
        ])
        // modems.ports[].mux_id overrides what sysfs says.
        let configured = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "qmimux1", muxID: 7), protocol: .qmi,
            sysfsRoot: fs.root, linkInfo: Self.noNetlink)
        #expect(configured.map(\.muxID) == [7] && configured.first?.error == nil)
    }

    /// A QMAP link whose mux id cannot be read: not observed, and says why (never a guess at mux 0).
    @Test(arguments: [("qmimux3", nil as String?), ("wwan0_1", "garbage")])
    func unknownMuxID(name: String, muxText: String?) throws {
        let fs = try FakeSysfs()
        try Self.netdev(fs, name, device: nil, driver: nil, attributes: muxText.map { ["qmap/mux_id": $0] } ?? [:])
        if muxText == nil { try? FileManager.default.removeItem(atPath: fs.root + "/devices/virtual/net/\(name)/qmap") }
        let links = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: name), protocol: .qmi, sysfsRoot: fs.root,
            linkInfo: Self.noNetlink)
        #expect(links.count == 1 && links[0].muxID == nil)
        #expect(links[0].error?.contains(name) == true, "\(links)")
    }

    /// Qualcomm SoC (IPA): rmnet_data0 on rmnet_ipa0, its mux id from rtnetlink; an rmnet link without one is unknown;
    /// the IPA transport itself carries no session of its own.
    @Test func rmnetOnIPA() throws {
        let fs = try FakeSysfs()
        try Self.netdev(fs, "rmnet_ipa0", device: "/devices/platform/soc/1e40000.ipa", driver: "ipa")
        try Self.netdev(fs, "rmnet_data0", device: nil, driver: nil)
        try Self.netdev(fs, "rmnet_data1", device: nil, driver: nil)
        try Self.stack(fs, upper: "rmnet_data0", lower: "rmnet_ipa0")
        try Self.stack(fs, upper: "rmnet_data1", lower: "rmnet_ipa0")
        let info: (String) -> LinkKindInfo? = { name in
            switch name {
            case "rmnet_data0": return LinkKindInfo(kind: "rmnet", data: [1: withUnsafeBytes(of: UInt16(1)) { Array($0) }])
            case "rmnet_data1": return LinkKindInfo(kind: "rmnet")
            default: return LinkKindInfo(kind: nil)
            }
        }
        let links = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/wwan0qmi0", protocol: .qmi, interface: "rmnet_ipa0"), protocol: .qmi,
            sysfsRoot: fs.root, linkInfo: info)
        #expect(links.count == 2)
        #expect(links[0] == DataLink(interface: "rmnet_data0", muxID: 1, endpoint: DataEndpoint(type: 4, interfaceNumber: 1)))
        #expect(links[1].muxID == nil && links[1].error?.contains("rmnet link but rtnetlink gave no mux id") == true)
        // Named alone (no rmnet link on it yet), the transport is not observed, and says why.
        let bare = try FakeSysfs()
        try Self.netdev(bare, "rmnet_ipa0", device: "/devices/platform/soc/1e40000.ipa", driver: "ipa")
        let transport = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/wwan0qmi0", protocol: .qmi, interface: "rmnet_ipa0"), protocol: .qmi,
            sysfsRoot: bare.root, linkInfo: info)
        #expect(transport.count == 1 && transport[0].error?.contains("IPA transport") == true, "\(transport)")
    }

    /// BAM-DMUX (MSM8916 phones and dongles): Bind Data Port to SIO port A2 MUX RMNETn, n = the netdev's dev_port.
    @Test func bamDMUX() throws {
        let fs = try FakeSysfs()
        try Self.netdev(fs, "wwan1", device: "/devices/platform/soc/a000000.bam-dmux", driver: "bam-dmux", attributes: ["dev_port": "1"])
        let links = DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/wwan0qmi0", protocol: .qmi, interface: "wwan1"), protocol: .qmi,
            sysfsRoot: fs.root, linkInfo: Self.noNetlink)
        #expect(links == [DataLink(interface: "wwan1", sioPort: 0x0E05, endpoint: DataEndpoint(type: 5, interfaceNumber: 1))])
    }

    /// MBIM: cdc_mbim maps VLAN id N on its netdev to session N; a plain netdev is session 0; no netdev known: the
    /// default channel only.
    @Test func mbimSessions() throws {
        let fs = try FakeSysfs()
        try Self.netdev(fs, "wwan0", device: Self.usb, driver: "cdc_mbim")
        try Self.netdev(fs, "wwan0.3", device: nil, driver: nil)
        try Self.stack(fs, upper: "wwan0.3", lower: "wwan0")
        let vlan: (String) -> LinkKindInfo? = { $0 == "wwan0.3" ? LinkKindInfo(kind: "vlan", data: [1: withUnsafeBytes(of: UInt16(3)) { Array($0) }]) : nil }
        #expect(DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim, interface: "wwan0"), protocol: .mbim, sysfsRoot: fs.root,
            linkInfo: vlan) == [DataLink(interface: "wwan0.3", muxID: 3)])
        #expect(DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim), protocol: .mbim, sysfsRoot: fs.root,
            linkInfo: vlan) == [DataLink(interface: nil)])
        let wwanLink: (String) -> LinkKindInfo? = { _ in LinkKindInfo(kind: "wwan", data: [1: withUnsafeBytes(of: UInt32(2)) { Array($0) }]) }
        #expect(DataLinkMap.links(
            for: ModemPortSpec(path: "/dev/wwan0mbim0", protocol: .mbim, interface: "wwan0"), protocol: .mbim, sysfsRoot: fs.root + "/x",
            linkInfo: wwanLink).first?.muxID == 2)
    }

    @Test(arguments: [("0x01", 1), ("0x0a", 10), ("3", 3), ("0x00", nil), ("0xff", nil), ("mux", nil), ("", nil)] as [(String, Int?)])
    func muxIDText(text: String, value: Int?) {
        #expect(DataLinkMap.parseMuxID(text) == value)
    }

    // MARK: rtnetlink

    static func attr(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        var a = RTNetlinkLinkInfo.ne16(UInt16(4 + value.count)) + RTNetlinkLinkInfo.ne16(type) + value
        while a.count % 4 != 0 { a.append(0) }
        return a
    }

    /// An RTM_NEWLINK for an rmnet link (if_link.h: IFLA_LINKINFO 18 { IFLA_INFO_KIND 1 "rmnet", IFLA_INFO_DATA 2
    /// { IFLA_RMNET_MUX_ID 1 u16, IFLA_RMNET_FLAGS 2 } }), nested attributes flagged NLA_F_NESTED as the kernel sends.
    static func newLink(kind: String, data: [UInt8]) -> [UInt8] {
        let info = attr(1, Array(kind.utf8) + [0]) + attr(2 | 0x8000, data)
        let body = [UInt8](repeating: 0, count: 16) + attr(3, Array("rmnet_data0".utf8) + [0]) + attr(18 | 0x8000, info)
        return RTNetlinkLinkInfo.ne32(UInt32(16 + body.count)) + RTNetlinkLinkInfo.ne16(16) + RTNetlinkLinkInfo.ne16(0)
            + RTNetlinkLinkInfo.ne32(1) + RTNetlinkLinkInfo.ne32(0) + body
    }

    @Test func parsesLinkInfo() {
        let mux = Self.attr(1, withUnsafeBytes(of: UInt16(5)) { Array($0) }) + Self.attr(2, [0, 0, 0, 0, 0, 0, 0, 0])
        let info = RTNetlinkLinkInfo.parse(Self.newLink(kind: "rmnet", data: mux))
        #expect(info?.kind == "rmnet" && info?.rmnetMuxID == 5)
        #expect(info?.vlanID == nil)
        // An error answer, a truncated message, an attribute running past its message: nil or no kind, never a crash.
        var error = Self.newLink(kind: "rmnet", data: mux)
        error.replaceSubrange(4..<6, with: RTNetlinkLinkInfo.ne16(2))
        #expect(RTNetlinkLinkInfo.parse(error) == nil)
        let whole = Self.newLink(kind: "rmnet", data: mux)
        for cut in [0, 10, 20, 40, whole.count - 3] { _ = RTNetlinkLinkInfo.parse(Array(whole.prefix(cut))) }
        var lying = whole
        lying.replaceSubrange(32..<34, with: RTNetlinkLinkInfo.ne16(0xFFF0))
        #expect(RTNetlinkLinkInfo.parse(lying)?.kind == nil)
    }

    /// The real kernel: loopback has no IFLA_LINKINFO; a name that does not exist has no answer.
    @Test func readsTheKernel() {
        #expect(RTNetlinkLinkInfo.read("lo") == LinkKindInfo(kind: nil))
        #expect(RTNetlinkLinkInfo.read("reach-none0") == nil)
        #expect(RTNetlinkLinkInfo.read("") == nil)
    }

    // MARK: Access

    @Test(arguments: [
        (ModemAccess.direct, UInt32(0), true, true, false, nil as String?),
        (.proxy, 1000, false, false, true, nil),
        (.auto, 0, true, true, true, nil),
        (.auto, 0, false, true, true, nil),  // root: libqmi would start it; so do we
        (.auto, 0, false, false, false, "qmi-proxy is not installed; opened directly"),
        (.auto, 998, true, true, true, nil),  // someone (ModemManager) runs one: try it, never steal its replies
        (.auto, 998, false, true, false, "qmi-proxy serves only root and none is running; opened directly (uid 998)"),
    ] as [(ModemAccess, UInt32, Bool, Bool, Bool, String?)])
    func accessPlan(access: ModemAccess, euid: UInt32, listening: Bool, installed: Bool, proxy: Bool, reason: String?) {
        let plan = AccessPlan.decide(access, proxyName: "qmi-proxy", euid: euid, listening: listening, installed: installed)
        #expect(plan == AccessPlan(proxy: proxy, reason: reason))
    }

    @Test func procFacts() throws {
        let dir = NSTemporaryDirectory() + "reach-proc-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/4242/fd", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/4343/fd", withIntermediateDirectories: true)
        let port = dir + "/cdc-wdm0"
        try "".write(toFile: port, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: dir + "/4242/fd/5", withDestinationPath: port)
        try FileManager.default.createSymbolicLink(atPath: dir + "/4343/fd/3", withDestinationPath: "/dev/null")
        try "uqmi\n".write(toFile: dir + "/4242/comm", atomically: true, encoding: .utf8)
        try "netifd\n".write(toFile: dir + "/4343/comm", atomically: true, encoding: .utf8)
        let (holders, hidden) = ProcFacts.holders(of: port, proc: dir)
        #expect(holders == [ProcFacts.Holder(pid: 4242, command: "uqmi")])
        #expect(hidden == 0)

        let unix = dir + "/unix"
        try """
            Num       RefCount Protocol Flags    Type St Inode Path
            0000000080f444c5: 00000002 00000000 00010000 0001 01 58945 @qmi-proxy
            00000000470f33a5: 00000002 00000000 00010000 0001 01 58965 @mbim-proxy-not
            """.write(toFile: unix, atomically: true, encoding: .utf8)
        #expect(ProcFacts.listening("qmi-proxy", procNetUnix: unix))
        #expect(!ProcFacts.listening("mbim-proxy", procNetUnix: unix))
        #expect(!ProcFacts.listening("qmi-proxy", procNetUnix: dir + "/missing"))
    }
}
