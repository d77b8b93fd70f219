// A listening AF_UNIX socket at a path, made the way SafeWrite makes files: the directory is opened by PathWalk (one
// level created when asked, symbolic links only when root or we own them), and the bind goes through that descriptor
// (/proc/self/fd/N/NAME, the kernel's name for "this directory"), so a link swapped in on the way cannot move the
// socket elsewhere. bind(2) never follows a link at the last component: anything at the name is looked at first. A
// socket nobody accepts on (a crashed agent's) is removed and replaced; one that answers belongs to a running
// program and is left alone (EADDRINUSE); any other kind of file is refused.

import Glibc

public enum ListeningSocket {
    /// A bound, listening, non-blocking, close-on-exec socket and what is needed to remove it again.
    public struct Bound: Sendable {
        public let fd: Int32
        public let path: String
        /// The socket's inode, so that `remove` unlinks only the socket this process made.
        let inode: UInt
        let device: UInt
    }

    /// Binds and listens at `path` with file mode `mode` (the socket inode's permissions decide who may connect).
    public static func bind(_ path: String, mode: mode_t, backlog: Int32 = 64, createDirectory: mode_t? = nil)
        -> Result<Bound, SystemError>
    {
        let parent: Parent
        switch PathWalk.parent(of: path, createDirectory: createDirectory) {
        case let .success(p): parent = p
        case let .failure(e): return .failure(e)
        }
        defer { parent.close() }
        let viaDirectory = "/proc/self/fd/\(parent.fd)/\(parent.name)"
        guard viaDirectory.utf8.count < 108, path.utf8.count < 108 else {
            return .failure(SystemError("bind", errno: ENAMETOOLONG, path: path, detail: "longer than a socket path may be (107 bytes)"))
        }
        switch Sys.lstatat(parent.fd, parent.name, path: path) {
        case .success(let st) where st.kind == .socket:
            if answers(path) {
                return .failure(SystemError("bind", errno: EADDRINUSE, path: path, detail: "another program answers on this socket"))
            }
            if case let .failure(e) = Sys.unlinkat(parent.fd, parent.name, path: path), e.errno != ENOENT { return .failure(e) }
        case .success(let st):
            return .failure(SystemError("bind", errno: EEXIST, path: path, detail: "\(st.kind.withArticle) is there; not replaced by a socket"))
        case .failure(let e) where e.errno == ENOENT:
            break
        case .failure(let e):
            return .failure(e)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket", errno: errno, path: path)) }
        func fail(_ call: String) -> Result<Bound, SystemError> {
            let e = SystemError(call, errno: errno, path: path)
            Sys.close(fd)
            return .failure(e)
        }
        let bound = withAddress(viaDirectory) { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else { return fail("bind") }
        // The inode's mode decides who may connect (fchmod on the socket descriptor would not change it).
        guard fchmodat(parent.fd, parent.name, mode, 0) == 0 else { return fail("chmod") }
        guard listen(fd, backlog) == 0 else { return fail("listen") }
        switch Sys.lstatat(parent.fd, parent.name, path: path) {
        case let .success(st):
            return .success(Bound(fd: fd, path: path, inode: UInt(st.st_ino), device: UInt(st.st_dev)))
        case let .failure(e):
            Sys.close(fd)
            return .failure(e)
        }
    }

    /// Removes the socket `bound` made, when the name still holds that very socket, and closes it.
    public static func remove(_ bound: Bound) {
        Sys.close(bound.fd)
        guard case let .success(parent) = PathWalk.parent(of: bound.path) else { return }
        defer { parent.close() }
        if case let .success(st) = Sys.lstatat(parent.fd, parent.name, path: bound.path),
           st.kind == .socket, UInt(st.st_ino) == bound.inode, UInt(st.st_dev) == bound.device {
            _ = Sys.unlinkat(parent.fd, parent.name, path: bound.path)
        }
    }

    /// Whether something accepts connections at `path` (a connect that does not fail with ECONNREFUSED/ENOENT).
    public static func answers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Sys.close(fd) }
        let r = withAddress(path) { connect(fd, $0, $1) }
        return r == 0 || errno == EAGAIN || errno == EINPROGRESS
    }

    /// Calls `body` with a sockaddr_un for `path` (which must fit).
    public static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
