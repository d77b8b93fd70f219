// The only way reach reads a file: it cannot block and it cannot grow without bound.
//
// The path is looked at before it is opened (a FIFO, a device or a socket is refused unopened: opening a FIFO for
// reading waits for a writer, and opening a device can have effects of its own, /dev/watchdog arms the watchdog),
// opened O_NONBLOCK|O_NOCTTY, checked again with fstat (what was opened is what is read: a regular file no larger than
// the limit), then read to its end, never past the limit. sysfs attributes say 4096 bytes and procfs files 0 in
// st_size; both are regular files, so the size check passes with any limit of at least a page and the read itself
// enforces the limit.

import Glibc

public enum BoundedRead {
    /// Whether symbolic links in the path are followed.
    public enum Links: Sendable, Equatable {
        /// By the kernel, as open(2) does: for files an administrator names (the config, whose symbolic links are
        /// normal under configuration management) and for sysfs/procfs, whose structure is links.
        case follow
        /// Through PathWalk: in the directory part only when root or we own them and their directory, and never at the
        /// file itself. For files other users may be able to change: the report log a root `reach diag` copies.
        case refuse
    }

    /// The whole file, which must be a regular file of at most `limit` bytes.
    public static func bytes(_ path: String, limit: Int, links: Links = .follow) -> Result<[UInt8], SystemError> {
        openRegular(path, links: links).flatMap { fd, st in
            defer { Sys.close(fd) }
            if Int(st.st_size) > limit { return .failure(tooLarge(path, Int(st.st_size), limit)) }
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: min(max(Int(st.st_size) + 1, 4096), limit + 1))
            while true {
                let r = chunk.withUnsafeMutableBytes { Sys.read(fd, into: $0, path: path) }
                switch r {
                case .success(0):
                    return .success(out)
                case let .success(n):
                    out.append(contentsOf: chunk[0..<n])
                    if out.count > limit { return .failure(tooLarge(path, out.count, limit)) }
                case let .failure(e):
                    return .failure(e)
                }
            }
        }
    }

    /// The last `count` bytes of a regular file (all of it when it is smaller), and whether the file went on before them.
    public static func tail(_ path: String, bytes count: Int, links: Links = .refuse) -> Result<(bytes: [UInt8], cut: Bool), SystemError> {
        openRegular(path, links: links).flatMap { fd, st in
            defer { Sys.close(fd) }
            let size = Int(st.st_size)
            let want = min(size, count)
            var buffer = [UInt8](repeating: 0, count: want)
            var got = 0
            while got < want {
                let r = buffer.withUnsafeMutableBytes { all in
                    Sys.pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: all[got...]), at: size - want + got, path: path)
                }
                switch r {
                case .success(0): return .success((Array(buffer[0..<got]), size > want))  // shrank meanwhile
                case let .success(n): got += n
                case let .failure(e): return .failure(e)
                }
            }
            return .success((buffer, size > want))
        }
    }

    /// Opens a regular file for reading, refusing every other kind before it is opened.
    static func openRegular(_ path: String, links: Links) -> Result<(Int32, stat), SystemError> {
        let flags = O_RDONLY | O_NONBLOCK | O_NOCTTY
        let opened: Result<Int32, SystemError>
        switch links {
        case .follow:
            opened = Sys.stat(path).flatMap { st in
                guard st.kind == .regular else { return .failure(notRegular(path, st.kind)) }
                return Sys.openat(AT_FDCWD, path, flags, path: path)
            }
        case .refuse:
            opened = PathWalk.parent(of: path).flatMap { parent in
                defer { parent.close() }
                return Sys.lstatat(parent.fd, parent.name, path: path).flatMap { st in
                    guard st.kind == .regular else { return .failure(notRegular(path, st.kind)) }
                    return Sys.openat(parent.fd, parent.name, flags | O_NOFOLLOW, path: path)
                }
            }
        }
        return opened.flatMap { fd in
            Sys.fstat(fd, path: path).flatMap { st -> Result<(Int32, stat), SystemError> in
                guard st.kind == .regular else { return .failure(notRegular(path, st.kind)) }
                return .success((fd, st))
            }.mapError { e in Sys.close(fd); return e }
        }
    }

    static func notRegular(_ path: String, _ kind: FileKind) -> SystemError {
        let errno: Int32 = kind == .directory ? EISDIR : kind == .symbolicLink ? ELOOP : EINVAL
        return SystemError("open", errno: errno, path: path, detail: "\(kind.withArticle), not a regular file")
    }

    static func tooLarge(_ path: String, _ size: Int, _ limit: Int) -> SystemError {
        SystemError("read", errno: EFBIG, path: path, detail: "larger than the \(limit) bytes allowed (\(size) or more)")
    }
}
