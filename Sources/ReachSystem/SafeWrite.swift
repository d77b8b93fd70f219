// The only way reach creates or replaces a file.
//
// A regular file (or none) at the path is replaced whole: a temporary file with an unpredictable name is created in
// the same directory with O_CREAT|O_EXCL|O_NOFOLLOW (so nothing already there, a planted symbolic link least of all,
// is ever opened), given its mode with fchmod before any data, written, fsync'ed and renamed over the target; then
// the directory is fsync'ed so the rename survives a power cut (the sequence rename(2) documents and
// ext4/xfs users rely on). Readers see the old file or the new one, never half of one.
//
// Anything else at the path is never renamed, deleted or replaced: a character device or a FIFO with a reader is
// written in place (--bundle /dev/stdout into a pipe, a report log on a serial console), a socket, a block device,
// a directory or a symbolic link is refused with the reason. /dev/stdout, /dev/stderr, /dev/fd/N and
// /proc/self/fd/N name our own descriptors and are written through them (a socket from journald included).
// The directory part of the path is opened by PathWalk (symbolic links only when root or we own them).

import Glibc

public enum SafeWrite {
    /// How a write reached its target.
    public enum Outcome: Sendable, Equatable {
        /// A regular file, replaced through a temporary file and rename.
        case replaced
        /// A device, FIFO or descriptor of ours, written in place.
        case inPlace(FileKind)
    }

    /// An open file to append to.
    public struct Appendable: Sendable, Equatable {
        public var fd: Int32
        public var kind: FileKind
        /// Written in place and never rotated, truncated or read back: a character device, a FIFO, or one of our own
        /// descriptors (/dev/stdout: the file behind it, if any, is the supervisor's). False only for a regular file
        /// opened by its path.
        public var isStream: Bool

        public init(fd: Int32, kind: FileKind, isStream: Bool? = nil) {
            self.fd = fd
            self.kind = kind
            self.isStream = isStream ?? (kind != .regular)
        }
    }

    /// The descriptor a path names without a file of its own: /dev/stdout (1), /dev/stderr (2), /dev/fd/N and
    /// /proc/self/fd/N. Opening those would reopen what the descriptor points at (impossible for a socket, and a
    /// new offset for a file); writing to the descriptor is what the caller meant.
    public static func ownDescriptor(_ path: String) -> Int32? {
        switch path {
        case "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default:
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
                let digits = path.dropFirst(prefix.count)
                guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCII), let n = Int32(digits) else { return nil }
                return n
            }
            return nil
        }
    }

    /// Replaces the regular file at `path` (or creates it) with `bytes`, mode `mode`; writes a character device or a
    /// FIFO with a reader in place; refuses anything else. A failure is never reported as success.
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t) -> Result<Outcome, SystemError> {
        if let fd = ownDescriptor(path) {
            return Sys.fstat(fd, path: path).flatMap { st in
                Sys.writeAll(fd, bytes, path: path).map { .inPlace(st.kind) }
            }
        }
        let parent: Parent
        switch PathWalk.parent(of: path) {
        case let .success(p): parent = p
        case let .failure(e): return .failure(e)
        }
        defer { parent.close() }
        switch Sys.lstatat(parent.fd, parent.name, path: path) {
        case let .failure(e) where e.errno == ENOENT:
            return replaceRegular(parent, bytes, mode: mode).map { .replaced }
        case let .failure(e):
            return .failure(e)
        case let .success(st) where st.kind == .regular:
            return replaceRegular(parent, bytes, mode: mode).map { .replaced }
        case let .success(st):
            return openInPlace(parent, kind: st.kind, flags: O_WRONLY).flatMap { fd in
                defer { Sys.close(fd) }
                // A stream the caller asked for: block as a pipe normally does (the caller's reader sets the pace).
                return Sys.setNonBlocking(fd, false, path: path)
                    .flatMap { Sys.writeAll(fd, bytes, path: path) }
                    .map { .inPlace(st.kind) }
            }
        }
    }

    /// Opens `path` for appending: a regular file (created with `mode` when absent; its directory, one level, with
    /// `createDirectory` when that is given), or a character device or FIFO with a reader, opened O_NONBLOCK so a
    /// reader that stops reading costs a failed write (EAGAIN), never a hang. Our own descriptors (/dev/stdout…)
    /// are duplicated. Anything else is refused.
    public static func openAppend(_ path: String, mode: mode_t, createDirectory: mode_t? = nil) -> Result<Appendable, SystemError> {
        if let fd = ownDescriptor(path) {
            return Sys.dup(fd, path: path).flatMap { copy in
                Sys.fstat(copy, path: path).map { Appendable(fd: copy, kind: $0.kind, isStream: true) }
                    .mapError { e in Sys.close(copy); return e }
            }
        }
        let parent: Parent
        switch PathWalk.parent(of: path, createDirectory: createDirectory) {
        case let .success(p): parent = p
        case let .failure(e): return .failure(e)
        }
        defer { parent.close() }
        let flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
        // Exclusive creation first, so that we know whether the mode is ours to set; then the file that is there.
        for _ in 0..<4 {
            switch Sys.openat(parent.fd, parent.name, flags | O_CREAT | O_EXCL, 0o600, path: path) {
            case let .success(fd):
                return Sys.fchmod(fd, mode, path: path).map { Appendable(fd: fd, kind: .regular) }
                    .mapError { e in Sys.close(fd); return e }
            case let .failure(e) where e.errno == EEXIST:
                break
            case let .failure(e):
                return .failure(e)
            }
            let st: stat
            switch Sys.lstatat(parent.fd, parent.name, path: path) {
            case let .success(s): st = s
            case let .failure(e) where e.errno == ENOENT: continue  // removed in between: create it
            case let .failure(e): return .failure(e)
            }
            let kind = st.kind
            return openInPlace(parent, kind: kind, flags: kind == .regular ? flags : O_WRONLY | O_APPEND)
                .map { Appendable(fd: $0, kind: kind) }
        }
        return .failure(SystemError("open", errno: EAGAIN, path: path, detail: "created and removed again while opening"))
    }

    /// Size-based rotation: path.keep is removed, path.N-1 becomes path.N, …, path becomes path.1 (keep 0: path is
    /// removed). Only regular files are renamed or removed, and only regular files (or nothing) are renamed over:
    /// a device, FIFO, socket or link at any of those names stays as it is, and the rotation reports it.
    public static func rotate(_ path: String, keep: Int) -> Result<Void, SystemError> {
        let parent: Parent
        switch PathWalk.parent(of: path) {
        case let .success(p): parent = p
        case let .failure(e): return .failure(e)
        }
        defer { parent.close() }
        let name = parent.name
        func kind(_ n: String) -> Result<FileKind?, SystemError> {
            switch Sys.lstatat(parent.fd, n, path: "\(parentPath(path))/\(n)") {
            case let .success(st): return .success(st.kind)
            case let .failure(e) where e.errno == ENOENT: return .success(nil)
            case let .failure(e): return .failure(e)
            }
        }
        func refusal(_ n: String, _ k: FileKind, _ what: String) -> SystemError {
            SystemError("rotate", errno: EEXIST, path: "\(parentPath(path))/\(n)", detail: "\(k.withArticle); not \(what)")
        }
        /// Renames `from` over `to` when `from` is a regular file and `to` is absent or a regular file.
        func shift(_ from: String, _ to: String) -> Result<Void, SystemError> {
            kind(from).flatMap { f in
                guard let f else { return .success(()) }
                guard f == .regular else { return .failure(refusal(from, f, "renamed")) }
                return kind(to).flatMap { t in
                    if let t, t != .regular { return .failure(refusal(to, t, "replaced")) }
                    return Sys.renameat(parent.fd, from, to, path: "\(parentPath(path))/\(from)")
                }
            }
        }
        if keep <= 0 {
            return kind(name).flatMap { k in
                guard let k else { return .success(()) }
                guard k == .regular else { return .failure(refusal(name, k, "removed")) }
                return Sys.unlinkat(parent.fd, name, path: path)
            }
        }
        var firstFailure: SystemError?
        let oldest = "\(name).\(keep)"
        switch kind(oldest) {
        case .success(.regular?):
            if case let .failure(e) = Sys.unlinkat(parent.fd, oldest, path: "\(parentPath(path))/\(oldest)") { firstFailure = e }
        case let .success(k?): firstFailure = refusal(oldest, k, "removed")
        case .success(nil): break
        case let .failure(e): firstFailure = e
        }
        for i in stride(from: keep - 1, through: 1, by: -1) {
            if case let .failure(e) = shift("\(name).\(i)", "\(name).\(i + 1)"), firstFailure == nil { firstFailure = e }
        }
        // The current file must move, or the rotation failed (the caller keeps writing and tries again later).
        switch kind(name) {
        case .success(.regular?): break
        case let .success(k?): return .failure(refusal(name, k, "renamed"))
        case .success(nil): return firstFailure.map { .failure($0) } ?? .success(())
        case let .failure(e): return .failure(e)
        }
        if case let .failure(e) = shift(name, "\(name).1") { return .failure(e) }
        return firstFailure.map { .failure($0) } ?? .success(())
    }

    // MARK: - The pieces

    /// Temporary file, fchmod, data, fsync, close, rename, fsync of the directory. The temporary file is removed on
    /// any failure.
    static func replaceRegular(_ parent: Parent, _ bytes: [UInt8], mode: mode_t) -> Result<Void, SystemError> {
        let path = parent.path
        var created: (fd: Int32, name: String)?
        for _ in 0..<16 {
            let tmp = temporaryName(for: parent.name)
            switch Sys.openat(parent.fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0o600, path: "\(parentPath(path))/\(tmp)") {
            case let .success(fd): created = (fd, tmp)
            case let .failure(e) where e.errno == EEXIST: continue  // someone's file at that name: another name
            case let .failure(e): return .failure(e)
            }
            break
        }
        guard let (fd, tmp) = created else {
            return .failure(SystemError("open", errno: EEXIST, path: path, detail: "no free temporary name beside it"))
        }
        let tmpPath = "\(parentPath(path))/\(tmp)"
        let written = Sys.fchmod(fd, mode, path: tmpPath)
            .flatMap { Sys.writeAll(fd, bytes, path: tmpPath) }
            .flatMap { Sys.fsync(fd, path: tmpPath) }
        let closed = Sys.close(fd, path: tmpPath)
        let result = written.flatMap { closed }.flatMap { Sys.renameat(parent.fd, tmp, parent.name, path: path) }
        if case .failure = result {
            _ = Sys.unlinkat(parent.fd, tmp, path: tmpPath)
            return result
        }
        guard parent.canSync else { return .success(()) }
        switch Sys.fsync(parent.fd, path: parentPath(path)) {
        case let .failure(e) where e.errno != EINVAL && e.errno != EROFS && e.errno != ENOTSUP:
            return .failure(e)  // in place, but the rename may not survive a power cut
        default:
            return .success(())
        }
    }

    /// Opens a character device or a FIFO that is already there, without following a link and without blocking
    /// (a FIFO nobody reads is ENXIO at once); refuses every other kind. The descriptor is checked again with fstat:
    /// what was opened is what is written.
    static func openInPlace(_ parent: Parent, kind: FileKind, flags: Int32) -> Result<Int32, SystemError> {
        let path = parent.path
        switch kind {
        case .regular, .characterDevice, .fifo: break
        case .symbolicLink:
            return .failure(SystemError("open", errno: ELOOP, path: path,
                                        detail: "a symbolic link; reach does not follow one at the file it writes (name the file itself)"))
        case .directory:
            return .failure(SystemError("open", errno: EISDIR, path: path, detail: "a directory, not a file"))
        case .blockDevice:
            return .failure(SystemError("open", errno: EINVAL, path: path, detail: "a block device; reach never writes over one"))
        case .socket, .unknown:
            return .failure(SystemError("open", errno: EINVAL, path: path, detail: "\(kind.withArticle); reach writes only files, character devices and FIFOs"))
        }
        let opened = Sys.openat(parent.fd, parent.name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, path: path)
        if case let .failure(e) = opened, e.errno == ENXIO, kind == .fifo {
            return .failure(SystemError("open", errno: ENXIO, path: path, detail: "a FIFO with no reader"))
        }
        return opened.flatMap { fd in
            Sys.fstat(fd, path: path).flatMap { st -> Result<Int32, SystemError> in
                guard st.kind == kind else {
                    return .failure(SystemError("open", errno: EAGAIN, path: path, detail: "replaced while opening (now \(st.kind.withArticle))"))
                }
                return .success(fd)
            }.mapError { e in Sys.close(fd); return e }
        }
    }

    /// `.NAME.XXXXXXXXXXXX.tmp`: hidden, not matching the target's suffix (node_exporter reads only *.prom), with 12
    /// random letters and digits (71 bits, from getrandom(2) through the standard library), at most NAME_MAX bytes.
    static func temporaryName(for name: String) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var rng = SystemRandomNumberGenerator()
        let random = String(decoding: (0..<12).map { _ in alphabet.randomElement(using: &rng)! }, as: UTF8.self)
        var base = ""
        for c in name {
            if base.utf8.count + c.utf8.count > 200 { break }
            base.append(c)
        }
        return ".\(base).\(random).tmp"
    }

    /// The directory part of a path, for messages ("/" for "/x", "." for "x").
    static func parentPath(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "" : String(path[..<slash])
    }
}
