// Finds modem control ports and the network interface each one drives, from sysfs as the kernel lays it out.
//
// USB modems (qmi_wwan, cdc_mbim): the cdc-wdm character device is registered on the USB interface through
// usb_register_dev (class "usbmisc"; "usb" on kernels before 3.x), and usbnet registers the netdev on the same
// interface, so both appear below it:
//   /sys/class/usbmisc/cdc-wdm0 -> ../../devices/…/1-1/1-1:1.4/usbmisc/cdc-wdm0
//   /sys/devices/…/1-1/1-1:1.4/driver -> ../../../../../../bus/usb/drivers/qmi_wwan
//   /sys/devices/…/1-1/1-1:1.4/net/wwan0
//   /sys/devices/…/1-1/idVendor, idProduct
// (libqmi's qmi-device.c and ModemManager read the same `device/driver` link.)
//
// WWAN-subsystem modems (PCIe/MHI, t7xx, iosm): drivers/net/wwan/wwan_core.c creates one "wwanN" device and its
// ports as children named wwanN<type>M with a `type` attribute (AT, MBIM, QMI, QCDM, FIREHOSE…); WWAN netdevs
// created through the wwan rtnetlink link type hang below the same wwanN device:
//   /sys/class/wwan/wwan0qmi0 -> ../../devices/…/0000:01:00.0/mhi0/wwan/wwan0/wwan0qmi0   (type: QMI)
//   /sys/devices/…/mhi0/wwan/wwan0/net/wwan0
// Older MHI setups (mhi_net) register the netdev on an MHI channel device instead; that one is found next to
// the wwan device's parent.

import ReachCore

/// A control port found in sysfs.
public struct DiscoveredPort: Sendable, Equatable {
    /// The device node, for example /dev/cdc-wdm0 or /dev/wwan0mbim0.
    public var path: String
    /// QMI or MBIM, when known.
    public var `protocol`: ModemProtocol?
    /// The network interface the modem's data goes through, when found.
    public var interface: String?
    /// The kernel driver of the USB interface ("qmi_wwan", "cdc_mbim"), or "wwan" for wwan-class ports.
    public var driver: String?
    /// "usb:vvvv:pppp" or "pci:vvvv:pppp" when sysfs names it.
    public var deviceID: String?
    /// The hardware database entry for `deviceID`, if any.
    public var hardware: HardwareEntry?

    public var spec: ModemPortSpec { ModemPortSpec(path: path, protocol: `protocol`, interface: interface, driver: driver) }
}

public struct ModemDiscovery: Sendable {
    /// Stands for "/sys" (tests point it at a fake tree).
    public var sysfsRoot: String
    /// Where device nodes live ("/dev").
    public var devRoot: String
    public var hardware: HardwareDatabase

    public init(sysfsRoot: String = "/sys", devRoot: String = "/dev", hardware: HardwareDatabase = .builtIn) {
        self.sysfsRoot = sysfsRoot
        self.devRoot = devRoot
        self.hardware = hardware
    }

    private var sys: SysFS { SysFS(root: sysfsRoot) }

    /// Whether sysfs can be read at all (it has a `class` directory).
    public var sysfsAvailable: Bool { sys.exists("/class") }

    /// Every QMI or MBIM control port, cdc-wdm ones first, each once, sorted by name.
    public func ports() -> [DiscoveredPort] {
        var found: [DiscoveredPort] = []
        var seen = Set<String>()
        for cls in ["usbmisc", "usb"] {
            for name in sys.list("/class/\(cls)") where name.hasPrefix("cdc-wdm") && !seen.contains(name) {
                seen.insert(name)
                if let port = cdcWDMPort(name: name, classDir: "/class/\(cls)/\(name)"), port.protocol != nil {
                    found.append(port)
                }
            }
        }
        for name in sys.list("/class/wwan") {
            if let port = wwanPort(name: name), port.protocol != nil { found.append(port) }
        }
        return found
    }

    /// A cdc-wdm port: its USB interface's driver decides the protocol; the hardware database decides when the
    /// driver is not one it names. Nil when the driver says it is not a QMI/MBIM port.
    func cdcWDMPort(name: String, classDir: String) -> DiscoveredPort? {
        var port = DiscoveredPort(path: devRoot + "/" + name)
        guard let interfaceDir = sys.resolve(classDir + "/device") else { return port }
        let driver = sys.linkBasename(interfaceDir + "/driver")
        port.driver = driver
        let usbDevice = parent(interfaceDir)
        if let vendor = sys.read(usbDevice + "/idVendor"), let product = sys.read(usbDevice + "/idProduct") {
            port.deviceID = "usb:\(vendor.lowercased()):\(product.lowercased())"
            port.hardware = hardware.entry(usbVendor: vendor, product: product)
        }
        switch driver.flatMap({ hardware.drivers[$0] }) ?? port.hardware?.protocol {
        case let .modem(p)?: port.protocol = p
        case .none?: return nil
        case nil: break
        }
        port.interface = netdev(in: interfaceDir) ?? siblingNetdev(usbDevice: usbDevice, interfaceDir: interfaceDir)
        return port
    }

    /// A wwan-class port (the wwanN devices themselves have no `type` and are skipped).
    func wwanPort(name: String) -> DiscoveredPort? {
        guard let type = sys.read("/class/wwan/\(name)/type") else { return nil }
        var port = DiscoveredPort(path: devRoot + "/" + name, driver: "wwan")
        switch hardware.wwanPortTypes[type] {
        case let .modem(p)?: port.protocol = p
        default: return nil
        }
        guard let portDir = sys.resolve("/class/wwan/\(name)") else { return port }
        let wwanDevice = parent(portDir)
        port.interface = netdev(in: wwanDevice)
        // The PCI function above (…/0000:01:00.0/mhi0/wwan/wwan0): vendor/device ids, and mhi_net netdevs.
        var dir = parent(wwanDevice)
        while dir.count > 1 {
            if let vendor = sys.read(dir + "/vendor"), let device = sys.read(dir + "/device"),
                vendor.hasPrefix("0x"), device.hasPrefix("0x")
            {
                let v = String(vendor.dropFirst(2)), d = String(device.dropFirst(2))
                port.deviceID = "pci:\(v.lowercased()):\(d.lowercased())"
                port.hardware = hardware.entry(pciVendor: v, device: d)
                break
            }
            if port.interface == nil { port.interface = netdevBelow(dir, depth: 2) }
            dir = parent(dir)
        }
        return port
    }

    /// The netdev registered directly below `dir` (`dir/net/<name>`); the first by name when there are several
    /// (qmi_wwan's qmimux links hang below the main netdev, not here, so one is the rule).
    private func netdev(in dir: String) -> String? {
        sys.list(dir + "/net").first
    }

    /// A netdev registered on another interface of the same USB device, when exactly one interface has one.
    private func siblingNetdev(usbDevice: String, interfaceDir: String) -> String? {
        let base = usbDevice.split(separator: "/").last.map(String.init) ?? ""
        let candidates = sys.list(usbDevice).filter { $0.hasPrefix(base + ":") }
            .compactMap { netdev(in: usbDevice + "/" + $0) }
        return candidates.count == 1 ? candidates[0] : nil
    }

    /// A netdev up to `depth` directory levels below `dir` (`dir/*/net/<name>`), if exactly one.
    private func netdevBelow(_ dir: String, depth: Int) -> String? {
        var found: [String] = []
        func walk(_ d: String, _ level: Int) {
            if level > 0, let n = netdev(in: d) { found.append(n) }
            guard level < depth else { return }
            for child in sys.list(d) where child != "net" && child != "subsystem" && child != "driver" {
                walk(d + "/" + child, level + 1)
            }
        }
        walk(dir, 0)
        return Set(found).count == 1 ? found[0] : nil
    }

    private func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// Fills in what a user-named port lacks (protocol, interface) from sysfs, when its name is a kernel node
    /// (cdc-wdmN, wwanN…). A pty or other path is returned as given.
    public func complete(_ spec: ModemPortSpec) -> ModemPortSpec { lookUp(spec).spec }

    /// What sysfs says about a user-named port.
    public struct PortLookup: Sendable, Equatable {
        /// The spec with what sysfs supplied (what the user named is kept).
        public var spec: ModemPortSpec
        /// Where the protocol was looked for and what was found there, for a message when it is still unknown.
        public var lookedAt: String
        /// The path names nothing (`stat` fails): a modem unplugged, not a port of an unknown kind.
        public var nodeMissing: Bool
    }

    /// `complete` with the places it looked: the driver of a cdc-wdm node's USB interface
    /// (`class/usbmisc/NAME/device/driver`, as libqmi's qmi-device.c and ModemManager read it), or a wwan port's
    /// `type`. A symlink to the node (a udev alias) is followed to the node's own name.
    public func lookUp(_ spec: ModemPortSpec) -> PortLookup {
        let given = spec.path.split(separator: "/").last.map(String.init) ?? spec.path
        var names = [given]
        if let real = SysFS(root: "/").resolve(spec.path)?.split(separator: "/").last.map(String.init), real != given {
            names.append(real)
        }
        var port: DiscoveredPort?
        var looked: [String] = []
        for name in names where port == nil {
            if let cls = ["usbmisc", "usb"].first(where: { sys.exists("/class/\($0)/\(name)") }) {
                let link = "/class/\(cls)/\(name)/device/driver"
                port = cdcWDMPort(name: name, classDir: "/class/\(cls)/\(name)")
                if port?.protocol == nil {
                    looked.append(sys.linkBasename(link).map { "\(sys.full(link)) names \($0), not a QMI or MBIM driver" }
                        ?? "\(sys.full(link)) does not exist")
                }
            } else if sys.exists("/class/wwan/\(name)") {
                port = wwanPort(name: name)
                if port?.protocol == nil {
                    let type = sys.read("/class/wwan/\(name)/type") ?? "unreadable"
                    looked.append("\(sys.full("/class/wwan/\(name)/type")) is \(type), neither QMI nor MBIM")
                }
            } else {
                looked.append("\(name) is in neither \(sys.full("/class/usbmisc")) nor \(sys.full("/class/wwan"))")
            }
        }
        var completed = spec
        if completed.protocol == nil { completed.protocol = port?.protocol }
        if completed.interface == nil { completed.interface = port?.interface }
        if completed.driver == nil { completed.driver = port?.driver }
        return PortLookup(
            spec: completed, lookedAt: looked.joined(separator: "; "), nodeMissing: DeviceNode.check(spec.path) == .missing)
    }
}
