// What sysfs and procfs say about a network interface: its driver, DEVTYPE, whether it is a cfg80211 (WiFi) netdev,
// whether its parent is a kernel wwan device, and the linkdown-routing sysctl. Inside `ip netns exec`, /sys is
// remounted for the namespace, so these paths describe the namespace's own links.

import Glibc
import ReachCore
import ReachSystem

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

    /// A small text file's contents (sysfs attributes are at most a page), or nil. Read through `BoundedRead`: a
    /// regular file only (links followed: sysfs is made of them), never blocking, at most `limit` bytes.
    static func readFile(_ path: String, limit: Int = 65536) -> String? {
        guard case let .success(bytes) = BoundedRead.bytes(path, limit: limit, links: .follow) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// if_indextoname.
    static func interfaceName(index: Int) -> String? {
        var buf = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard let ifindex = UInt32(exactly: index), if_indextoname(ifindex, &buf) != nil else { return nil }
        return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
