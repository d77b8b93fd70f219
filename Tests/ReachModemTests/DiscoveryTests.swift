import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// Builds a fake /sys in a temporary directory, with relative symlinks where the kernel has them.
final class FakeSysfs {
    let root: String

    init() throws {
        root = NSTemporaryDirectory() + "reach-sysfs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func dir(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: root + path, withIntermediateDirectories: true)
    }

    func file(_ path: String, _ text: String) throws {
        try dir((path as NSString).deletingLastPathComponent)
        try (text + "\n").write(toFile: root + path, atomically: true, encoding: .utf8)
    }

    /// A symlink at `path` whose target is `target`, relative to the link's directory (as sysfs links are).
    func link(_ path: String, _ target: String) throws {
        try dir((path as NSString).deletingLastPathComponent)
        try FileManager.default.createSymbolicLink(atPath: root + path, withDestinationPath: target)
    }

    /// A USB modem: device `usbPath` (e.g. /devices/pci0000:00/0000:00:14.0/usb1/1-1) with `interface` (e.g. 1.4)
    /// bound to `driver`, its cdc-wdm node registered in class `cls`, and a netdev on `netInterface` (defaults to
    /// the same interface).
    func usbModem(
        usbPath: String, vendor: String, product: String, interface: String, driver: String, wdm: String,
        netdev: String?, netInterface: String? = nil, cls: String = "usbmisc"
    ) throws {
        let base = (usbPath as NSString).lastPathComponent
        let intf = "\(usbPath)/\(base):\(interface)"
        try file("\(usbPath)/idVendor", vendor)
        try file("\(usbPath)/idProduct", product)
        try dir("/bus/usb/drivers/\(driver)")
        let depth = intf.split(separator: "/").count
        try link("\(intf)/driver", String(repeating: "../", count: depth) + "bus/usb/drivers/\(driver)")
        try dir("\(intf)/\(cls)/\(wdm)")
        try link("\(intf)/\(cls)/\(wdm)/device", "../../../\(base):\(interface)")
        try link("/class/\(cls)/\(wdm)", "../.." + "\(intf)/\(cls)/\(wdm)")
        if let netdev {
            let netIntf = netInterface.map { "\(usbPath)/\(base):\($0)" } ?? intf
            try dir("\(netIntf)/net/\(netdev)")
        }
    }
}

@Suite struct DiscoveryTests {
    static let ec25USB = "/devices/pci0000:00/0000:00:14.0/usb1/1-1"

    func discovery(_ fs: FakeSysfs, hardware: HardwareDatabase = .builtIn) -> ModemDiscovery {
        ModemDiscovery(sysfsRoot: fs.root, devRoot: "/dev", hardware: hardware)
    }

    /// Quectel EC25 on qmi_wwan: cdc-wdm0 and wwan0 on interface 4 (as `lsusb -t` shows "If 4, Driver=qmi_wwan").
    @Test func quectelEC25OnQMIWWAN() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: Self.ec25USB, vendor: "2c7c", product: "0125", interface: "1.4", driver: "qmi_wwan",
                        wdm: "cdc-wdm0", netdev: "wwan0")
        let ports = discovery(fs).ports()
        #expect(ports.count == 1)
        #expect(ports.first?.path == "/dev/cdc-wdm0")
        #expect(ports.first?.protocol == .qmi)
        #expect(ports.first?.interface == "wwan0")
        #expect(ports.first?.driver == "qmi_wwan")
        #expect(ports.first?.deviceID == "usb:2c7c:0125")
    }

    /// Telit FN990 in its MBIM composition (1bc7:1071) on cdc_mbim, next to a QMI modem: both found, sorted.
    @Test func mbimAndQMIModemsTogether() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: "/devices/pci0000:00/0000:00:14.0/usb2/2-3", vendor: "1bc7", product: "1071",
                        interface: "1.2", driver: "cdc_mbim", wdm: "cdc-wdm1", netdev: "wwan1")
        try fs.usbModem(usbPath: Self.ec25USB, vendor: "2c7c", product: "0125", interface: "1.4", driver: "qmi_wwan",
                        wdm: "cdc-wdm0", netdev: "wwan0")
        let db = try HardwareDatabase.parse(String(contentsOfFile: TestPaths.repo + "/hw/modems.json", encoding: .utf8),
                                            file: "hw/modems.json")
        let ports = discovery(fs, hardware: db).ports()
        #expect(ports.map(\.path) == ["/dev/cdc-wdm0", "/dev/cdc-wdm1"])
        #expect(ports.map(\.protocol) == [.qmi, .mbim])
        #expect(ports.map(\.interface) == ["wwan0", "wwan1"])
        #expect(ports[1].hardware?.quirks.customDataClass == "5G/TDS")
    }

    /// Kernels before usbmisc registered cdc-wdm in class "usb" (libqmi looks in both).
    @Test func oldUSBClass() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: Self.ec25USB, vendor: "1199", product: "9071", interface: "1.8", driver: "qmi_wwan",
                        wdm: "cdc-wdm0", netdev: "wwan0", cls: "usb")
        let ports = discovery(fs).ports()
        #expect(ports.map(\.path) == ["/dev/cdc-wdm0"])
        #expect(ports.first?.interface == "wwan0")
    }

    /// A netdev registered on another interface of the same USB device is still the modem's.
    @Test func netdevOnSiblingInterface() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: Self.ec25USB, vendor: "2c7c", product: "0306", interface: "1.4", driver: "qmi_wwan",
                        wdm: "cdc-wdm0", netdev: "wwan0", netInterface: "1.5")
        #expect(discovery(fs).ports().first?.interface == "wwan0")
    }

    /// Huawei's AT-over-cdc-wdm (huawei_cdc_ncm) is not a QMI/MBIM port; an unknown driver with an unknown id is
    /// skipped; the same unknown driver with a database entry takes the entry's protocol.
    @Test func driverAndDatabaseDecide() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: "/devices/pci0000:00/0000:00:14.0/usb1/1-2", vendor: "12d1", product: "1506",
                        interface: "1.1", driver: "huawei_cdc_ncm", wdm: "cdc-wdm0", netdev: "wwan0")
        try fs.usbModem(usbPath: "/devices/pci0000:00/0000:00:14.0/usb1/1-3", vendor: "1234", product: "5678",
                        interface: "1.0", driver: "cdc_wdm", wdm: "cdc-wdm1", netdev: nil)
        try fs.usbModem(usbPath: "/devices/pci0000:00/0000:00:14.0/usb1/1-4", vendor: "1bc7", product: "1071",
                        interface: "1.2", driver: "cdc_wdm", wdm: "cdc-wdm2", netdev: "wwan2")
        var db = HardwareDatabase.builtIn
        db.drivers["huawei_cdc_ncm"] = PortProtocol.none
        db.entries["usb:1bc7:1071"] = HardwareEntry(
            id: "usb:1bc7:1071", name: "Telit FN990 (MBIM composition)", protocol: .modem(.mbim), quirks: ModemQuirks(),
            source: "test")
        let ports = discovery(fs, hardware: db).ports()
        #expect(ports.map(\.path) == ["/dev/cdc-wdm2"])
        #expect(ports.first?.protocol == .mbim)
    }

    /// A PCIe (MHI) modem such as Foxconn T99W175 (17cb:0306): wwan_core names ports wwan<N><type><M> with a
    /// `type` attribute, below the wwanN device that also carries the WWAN netdev. AT/QCDM ports are not ours.
    @Test func wwanClassMBIMPort() throws {
        let fs = try FakeSysfs()
        let pci = "/devices/pci0000:00/0000:00:1c.0/0000:01:00.0"
        let wwan = "\(pci)/mhi0/wwan/wwan0"
        try fs.file("\(pci)/vendor", "0x17cb")
        try fs.file("\(pci)/device", "0x0306")
        for (port, type) in [("wwan0mbim0", "MBIM"), ("wwan0at0", "AT"), ("wwan0qcdm0", "QCDM")] {
            try fs.file("\(wwan)/\(port)/type", type)
            try fs.link("/class/wwan/\(port)", "../.." + "\(wwan)/\(port)")
        }
        try fs.link("/class/wwan/wwan0", "../.." + wwan)
        try fs.dir("\(wwan)/net/wwan0")
        let ports = discovery(fs).ports()
        #expect(ports.map(\.path) == ["/dev/wwan0mbim0"])
        #expect(ports.first?.protocol == .mbim)
        #expect(ports.first?.interface == "wwan0")
        #expect(ports.first?.deviceID == "pci:17cb:0306")
    }

    /// Older MHI setups register the netdev (mhi_net) on an MHI channel device, not below wwan0.
    @Test func wwanClassQMIPortWithMHINetdev() throws {
        let fs = try FakeSysfs()
        let pci = "/devices/pci0000:00/0000:00:1c.0/0000:02:00.0"
        let wwan = "\(pci)/mhi0/wwan/wwan0"
        try fs.file("\(pci)/vendor", "0x17cb")
        try fs.file("\(pci)/device", "0x0308")
        try fs.file("\(wwan)/wwan0qmi0/type", "QMI")
        try fs.link("/class/wwan/wwan0qmi0", "../.." + "\(wwan)/wwan0qmi0")
        try fs.dir("\(pci)/mhi0/mhi0_IP_HW0/net/mhi_hwip0")
        let ports = discovery(fs).ports()
        #expect(ports.map(\.path) == ["/dev/wwan0qmi0"])
        #expect(ports.first?.protocol == .qmi)
        #expect(ports.first?.interface == "mhi_hwip0")
    }

    @Test func completesANamedKernelPortButNotAPty() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: Self.ec25USB, vendor: "2c7c", product: "0125", interface: "1.4", driver: "qmi_wwan",
                        wdm: "cdc-wdm0", netdev: "wwan0")
        let d = discovery(fs)
        #expect(d.complete(ModemPortSpec(path: "/dev/cdc-wdm0"))
            == ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0", driver: "qmi_wwan"))
        #expect(d.complete(ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim)).protocol == .mbim)  // the user wins
        #expect(d.complete(ModemPortSpec(path: "/dev/pts/7")) == ModemPortSpec(path: "/dev/pts/7"))
    }

    @Test func emptyAndMissingTrees() throws {
        let fs = try FakeSysfs()
        #expect(discovery(fs).ports().isEmpty)
        #expect(!discovery(fs).sysfsAvailable)
        try fs.dir("/class")
        #expect(discovery(fs).sysfsAvailable)
    }
}

/// `ModemDiscovery.lookUp`, which `reach --modem PATH` uses when the protocol or the netdev is left out: what sysfs
/// supplies, and where it looked when it cannot.
@Suite struct PortLookupTests {
    func discovery(_ fs: FakeSysfs) -> ModemDiscovery { ModemDiscovery(sysfsRoot: fs.root, devRoot: "/dev") }

    @Test func driverGivesProtocolAndNetdev() throws {
        let fs = try FakeSysfs()
        try fs.usbModem(usbPath: DiscoveryTests.ec25USB, vendor: "2c7c", product: "0125", interface: "1.4",
                        driver: "qmi_wwan", wdm: "cdc-wdm0", netdev: "wwan0")
        try fs.usbModem(usbPath: "/devices/pci0000:00/0000:00:14.0/usb1/1-2", vendor: "1199", product: "9091",
                        interface: "1.12", driver: "cdc_mbim", wdm: "cdc-wdm1", netdev: "wwan1")
        let d = discovery(fs)
        #expect(d.lookUp(ModemPortSpec(path: "/dev/cdc-wdm0")).spec
            == ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0", driver: "qmi_wwan"))
        #expect(d.lookUp(ModemPortSpec(path: "/dev/cdc-wdm1")).spec
            == ModemPortSpec(path: "/dev/cdc-wdm1", protocol: .mbim, interface: "wwan1", driver: "cdc_mbim"))
        // Whether the node itself exists (a modem unplugged, or a node that is no modem's).
        #expect(d.lookUp(ModemPortSpec(path: "/dev/reach-no-such-port")).nodeMissing)
        #expect(!d.lookUp(ModemPortSpec(path: "/dev/null")).nodeMissing)
        // What the user named stands: the netdev, and the protocol.
        #expect(d.lookUp(ModemPortSpec(path: "/dev/cdc-wdm0", interface: "qmimux0")).spec.interface == "qmimux0")
        #expect(d.lookUp(ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim)).spec.protocol == .mbim)
        #expect(d.lookUp(ModemPortSpec(path: "/dev/cdc-wdm0")).lookedAt.isEmpty)
    }

    @Test func aDriverThatIsNoModemsIsNamed() throws {
        let fs = try FakeSysfs()
        // A cdc-wdm node on an interface bound to a driver that knows no QMI or MBIM (cdc_ether here), on a device
        // the hardware database does not know either.
        try fs.usbModem(usbPath: DiscoveryTests.ec25USB, vendor: "abcd", product: "0001", interface: "1.0",
                        driver: "cdc_ether", wdm: "cdc-wdm3", netdev: nil)
        let found = discovery(fs).lookUp(ModemPortSpec(path: "/dev/cdc-wdm3"))
        #expect(found.spec.protocol == nil)
        #expect(found.lookedAt == "\(fs.root)/class/usbmisc/cdc-wdm3/device/driver names cdc_ether, not a QMI or MBIM driver")
    }

    @Test func aPortSysfsDoesNotKnowSaysWhereItLooked() throws {
        let fs = try FakeSysfs()
        try fs.dir("/class/usbmisc")
        let found = discovery(fs).lookUp(ModemPortSpec(path: "/tmp/no-such-sim-pty"))
        #expect(found.spec == ModemPortSpec(path: "/tmp/no-such-sim-pty"))
        #expect(found.lookedAt == "no-such-sim-pty is in neither \(fs.root)/class/usbmisc nor \(fs.root)/class/wwan")
    }

    @Test func aWWANPortOfAnotherTypeIsNamed() throws {
        let fs = try FakeSysfs()
        try fs.file("/class/wwan/wwan0at0/type", "AT")
        let found = discovery(fs).lookUp(ModemPortSpec(path: "/dev/wwan0at0"))
        #expect(found.spec.protocol == nil)
        #expect(found.lookedAt == "\(fs.root)/class/wwan/wwan0at0/type is AT, neither QMI nor MBIM")
    }
}
