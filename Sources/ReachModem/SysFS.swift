// Minimal read-only file-system access for sysfs and /dev (no Foundation): list a directory, read a small file,
// resolve symlinks, stat a node. Every path is taken below an injectable root so tests can lay out a fake tree.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReachSystem

struct SysFS: Sendable {
    /// The directory that stands for "/sys" (or "/dev").
    var root: String

    init(root: String) {
        var r = root
        while r.count > 1 && r.hasSuffix("/") { r.removeLast() }
        self.root = r
    }

    /// `root` + `path` (path starts with "/").
    func full(_ path: String) -> String { root == "/" ? path : root + path }

    /// The names in a directory, sorted, without "." and ".."; empty when it cannot be read.
    /// The corresponding C functions are `opendir`, `readdir` and `closedir`.
    func list(_ path: String) -> [String] {
        guard let dir = opendir(full(path)) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// A small text file's contents without the trailing newline, or nil: read through `BoundedRead` (a regular
    /// file of at most `limit` bytes, links followed as sysfs needs, never blocking).
    func read(_ path: String, limit: Int = 4096) -> String? {
        guard case let .success(bytes) = BoundedRead.bytes(full(path), limit: limit, links: .follow) else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" || text.last == " " { text.removeLast() }
        return text
    }

    /// The canonical path of `path` below the root (symlinks resolved), or nil when it does not exist or
    /// resolves outside the root. The corresponding C function is `realpath`.
    func resolve(_ path: String) -> String? {
        guard let resolved = realpath(full(path), nil) else { return nil }
        defer { free(resolved) }
        let absolute = String(cString: resolved)
        if root == "/" { return absolute }
        let rootReal = realpath(root, nil).map { p -> String in
            defer { free(p) }
            return String(cString: p)
        } ?? root
        guard absolute == rootReal || absolute.hasPrefix(rootReal + "/") else { return nil }
        return String(absolute.dropFirst(rootReal.count))
    }

    /// A symlink's target as written (`/proc/PID/fd/N` → "/dev/cdc-wdm0"). The corresponding C function is
    /// `readlink`.
    func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(full(path), &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The last path component of a symlink's target (a driver's name from `…/driver`).
    func linkBasename(_ path: String) -> String? {
        readLink(path)?.split(separator: "/").last.map(String.init)
    }

    /// Whether `path` exists at all (any type; symlinks followed).
    func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(full(path), &st) == 0
    }
}

/// What a device node is, for a clear error before libqmi/libmbim try it.
enum DeviceNode {
    enum Check: Equatable {
        case characterDevice
        case missing
        case notCharacterDevice
    }

    /// The corresponding C function is `stat` (symlinks followed, so a symlink to a pty counts).
    static func check(_ path: String) -> Check {
        var st = stat()
        guard stat(path, &st) == 0 else { return .missing }
        return (st.st_mode & S_IFMT) == S_IFCHR ? .characterDevice : .notCharacterDevice
    }
}
