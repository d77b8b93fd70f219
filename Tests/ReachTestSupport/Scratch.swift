// A scratch directory of the test's own, with the hostile things a local user (or a careless configuration) can put
// where reach writes: symbolic links, private copies of device nodes (mknod), FIFOs and listening sockets.

import Foundation
import ReachSystem
import Testing

public final class Scratch {
    public let dir: String
    private var sockets: [Int32] = []

    /// A fresh directory (mode 0700) under the temporary directory; its name carries the pid for the janitor.
    public init(_ tag: String) throws {
        var template = Array("\(NSTemporaryDirectory())reach-files-\(tag)-\(getpid())-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestFailure("mkdtemp: \(String(cString: strerror(errno)))")
        }
        dir = String(cString: made)
    }

    deinit {
        for fd in sockets { close(fd) }
        try? FileManager.default.removeItem(atPath: dir)
    }

    public func path(_ name: String) -> String { dir + "/" + name }

    public func write(_ name: String, _ text: String) throws {
        try text.write(toFile: path(name), atomically: false, encoding: .utf8)
    }

    public func read(_ name: String) -> String? { try? String(contentsOfFile: path(name), encoding: .utf8) }

    /// A copy of a character device (major, minor): 1,3 is /dev/null, 1,5 /dev/zero, 1,7 /dev/full.
    public func device(_ name: String, major: UInt32, minor: UInt32, block: Bool = false) throws {
        let type = block ? S_IFBLK : S_IFCHR
        guard mknod(path(name), type | 0o666, devNumber(major, minor)) == 0 else {
            throw TestFailure("mknod \(name): \(String(cString: strerror(errno)))")
        }
    }

    public func fifo(_ name: String) throws {
        guard mkfifo(path(name), 0o666) == 0 else { throw TestFailure("mkfifo: \(String(cString: strerror(errno)))") }
    }

    /// A listening AF_UNIX socket bound at `name` (closed with the scratch directory).
    public func socket(_ name: String) throws {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path(name).utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
        guard ok, listen(fd, 1) == 0 else { throw TestFailure("bind \(name): \(String(cString: strerror(errno)))") }
        sockets.append(fd)
    }

    /// A symbolic link at `name` with text `target`, owned by `owner` (lchown; root only) when given.
    public func link(_ name: String, to target: String, owner: uid_t? = nil) throws {
        guard symlink(target, path(name)) == 0 else { throw TestFailure("symlink: \(String(cString: strerror(errno)))") }
        if let owner, lchown(path(name), owner, owner) != 0 { throw TestFailure("lchown: \(String(cString: strerror(errno)))") }
    }

    public func mkdir(_ name: String, mode: mode_t = 0o700) throws {
        guard Glibc.mkdir(path(name), mode) == 0, chmod(path(name), mode) == 0 else {
            throw TestFailure("mkdir: \(String(cString: strerror(errno)))")
        }
    }

    /// What is at `name` (not following a link), nil when nothing is.
    public func kind(_ name: String) -> FileKind? {
        var st = stat()
        return lstat(path(name), &st) == 0 ? FileKind(mode: st.st_mode) : nil
    }

    public func mode(_ name: String) -> mode_t? {
        var st = stat()
        return lstat(path(name), &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    public func rdev(_ name: String) -> UInt? {
        var st = stat()
        return lstat(path(name), &st) == 0 ? UInt(st.st_rdev) : nil
    }

    /// The names in the directory, sorted.
    public func names(_ sub: String = "") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: sub.isEmpty ? dir : path(sub))) ?? []).sorted()
    }
}

/// nobody: the owner of a link a hostile local user planted.
public let nobody: uid_t = 65534

/// makedev(3), a macro Swift cannot call: the kernel's dev_t layout (include/linux/kdev_t.h new_encode_dev, as glibc
/// packs it in sys/sysmacros.h).
public func devNumber(_ major: UInt32, _ minor: UInt32) -> dev_t {
    let ma = UInt64(major), mi = UInt64(minor)
    // In two halves: Swift 6.0's type checker gives up on the four-term expression.
    let high: UInt64 = ((ma & 0xFFFF_F000) << 32) | ((mi & 0xFFFF_FF00) << 12)
    let low: UInt64 = ((ma & 0xFFF) << 8) | (mi & 0xFF)
    return dev_t(high | low)
}
