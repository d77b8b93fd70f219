// What sysfs and procfs say about a network interface: its driver, DEVTYPE, whether it is a cfg80211 (WiFi) netdev,
// whether its parent is a kernel wwan device, and the linkdown-routing sysctl. Inside `ip netns exec`, /sys is
// remounted for the namespace, so these paths describe the namespace's own links.

import Glibc
import ReachCore

struct SysfsLinkFacts {
    let root: String
    let procRoot: String

    init(root: String = "/sys", procRoot: String = "/proc") {
        self.root = root
        self.procRoot = procRoot
    }

    /// Facts from sysfs alone; the caller adds what rtnetlink says (ARP type, flags, link kind).
    func facts(name: String) -> LinkFacts {
        let base = "\(root)/class/net/\(name)"
        var f = LinkFacts(name: name, arpType: 0)
        f.driver = SysFS.readLink("\(base)/device/driver").map(SysFS.basename)
        f.devType = SysFS.readFile("\(base)/uevent").flatMap { text in
            text.split(separator: "\n").first(where: { $0.hasPrefix("DEVTYPE=") }).map { String($0.dropFirst(8)) }
        }
        f.hasPhy80211 = SysFS.exists("\(base)/phy80211")
        f.wwanClassParent = SysFS.readLink("\(base)/device/subsystem").map(SysFS.basename) == "wwan"
        return f
    }

    /// `net.ipv4.conf.{all,IF}.ignore_routes_with_linkdown` (or ipv6): when set, the kernel skips next hops without
    /// carrier.
    func ignoresRoutesWithLinkdown(ifindex: Int, _ family: AddressFamily) -> Bool {
        let fam = family == .ipv4 ? "ipv4" : "ipv6"
        var names = ["all"]
        if let n = SysFS.interfaceName(index: ifindex) { names.append(n) }
        return names.contains { SysFS.readFile("\(procRoot)/sys/net/\(fam)/conf/\($0)/ignore_routes_with_linkdown")?.hasPrefix("1") == true }
    }
}

/// Small, allocation-light helpers for reading sysfs/procfs files.
enum SysFS {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The target of a symbolic link, or nil.
    static func readLink(_ path: String) -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// A small text file's contents (sysfs attributes are at most a page), or nil.
    static func readFile(_ path: String, limit: Int = 65536) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while out.count < limit {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// if_indextoname.
    static func interfaceName(index: Int) -> String? {
        var buf = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard let ifindex = UInt32(exactly: index), if_indextoname(ifindex, &buf) != nil else { return nil }
        return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
