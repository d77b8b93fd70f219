// Opens the directory a path ends in, one component at a time from "/" with openat(2), so that what is checked is
// what is used: every later call (the temporary file, the rename, the directory's fsync) goes through the one
// descriptor, and a directory renamed or replaced by a symbolic link behind our back changes nothing.
//
// A symbolic link on the way is followed only when nobody but root and us can have put it there or changed it: the
// link belongs to root or to our effective uid, and so does its directory, which others cannot write to (or which
// is sticky, so that they cannot replace what is not theirs). That is the kernel's own rule for links in sticky
// world-writable directories (fs.protected_symlinks, fs/namei.c may_follow_link) made strict, and it keeps the links
// systems really have (/var/run -> /run, OpenWrt's /var -> /tmp, /dev/fd) while refusing one planted in a shared
// or group-writable log directory. The link's text is resolved here, hop by hop, so every hop passes the same test.

import Glibc

/// A directory opened by `PathWalk`, and the name of the entry in it that the path ends with.
struct Parent {
    /// O_RDONLY | O_DIRECTORY when the directory can be opened for reading (fsync needs that), else O_PATH.
    let fd: Int32
    let canSync: Bool
    /// The last component of the path.
    let name: String
    /// The path as given, for messages.
    let path: String

    func close() { Sys.close(fd) }
}

enum PathWalk {
    /// The most symbolic links one lookup follows (the kernel's MAXSYMLINKS, include/linux/namei.h).
    static let maxLinks = 40

    /// Opens the directory holding `path`'s last component. With `createDirectory`, a missing last directory (only the
    /// last: /var/log/reach, never /var/log) is made with that mode.
    static func parent(of path: String, createDirectory: mode_t? = nil) -> Result<Parent, SystemError> {
        var components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let name = components.popLast() else {
            return .failure(SystemError("open", errno: path.isEmpty ? ENOENT : EISDIR, path: path,
                                        detail: path.isEmpty ? "empty path" : "names a directory, not a file"))
        }
        if path.hasSuffix("/") || name == "." || name == ".." {
            return .failure(SystemError("open", errno: EISDIR, path: path, detail: "names a directory, not a file"))
        }
        let start = path.hasPrefix("/") ? "/" : "."
        var current: Int32
        switch Sys.openat(AT_FDCWD, start, O_PATH | O_DIRECTORY, path: start) {
        case let .success(fd): current = fd
        case let .failure(e): return .failure(e)
        }
        var walked = path.hasPrefix("/") ? "" : "."
        var pending = components[...]
        var links = 0
        var created = false
        while let component = pending.first {
            pending = pending.dropFirst()
            if component == "." { continue }
            let here = walked + "/" + component
            switch Sys.openat(current, component, O_PATH | O_DIRECTORY | O_NOFOLLOW, path: here) {
            case let .success(fd):
                Sys.close(current)
                current = fd
                walked = here
                continue
            case let .failure(e) where e.errno == ENOENT && pending.isEmpty && !created && createDirectory != nil:
                created = true
                if case let .failure(m) = Sys.mkdirat(current, component, createDirectory!, path: here), m.errno != EEXIST {
                    Sys.close(current)
                    return .failure(m)
                }
                pending = [component] + pending
                continue
            case let .failure(e) where e.errno == ELOOP || e.errno == ENOTDIR:
                // A symbolic link, or not a directory at all.
                let link: stat
                let directory: stat
                switch Sys.lstatat(current, component, path: here).flatMap({ l in Sys.fstat(current, path: walked).map { (l, $0) } }) {
                case let .success((l, d)):
                    link = l
                    directory = d
                case let .failure(f):
                    Sys.close(current)
                    return .failure(f)
                }
                guard link.kind == .symbolicLink else {
                    Sys.close(current)
                    return .failure(SystemError("open", errno: ENOTDIR, path: here, detail: "\(link.kind.withArticle), not a directory"))
                }
                if let why = distrust(link: link, directory: directory) {
                    Sys.close(current)
                    return .failure(SystemError("open", errno: ELOOP, path: here, detail: "a symbolic link reach does not follow: \(why)"))
                }
                links += 1
                guard links <= maxLinks else {
                    Sys.close(current)
                    return .failure(SystemError("open", errno: ELOOP, path: path))
                }
                let text: [UInt8]
                switch Sys.readlinkat(current, component, path: here) {
                case let .success(t): text = t
                case let .failure(f):
                    Sys.close(current)
                    return .failure(f)
                }
                let target = String(decoding: text, as: UTF8.self)
                if target.hasPrefix("/") {
                    switch Sys.openat(AT_FDCWD, "/", O_PATH | O_DIRECTORY, path: "/") {
                    case let .success(fd):
                        Sys.close(current)
                        current = fd
                        walked = ""
                    case let .failure(f):
                        Sys.close(current)
                        return .failure(f)
                    }
                }
                pending = target.split(separator: "/", omittingEmptySubsequences: true).map(String.init) + pending
            case let .failure(e):
                Sys.close(current)
                return .failure(e)
            }
        }
        // Reopened for reading so that the directory itself can be fsync'ed after a rename.
        switch Sys.openat(current, ".", O_RDONLY | O_DIRECTORY, path: walked.isEmpty ? "/" : walked) {
        case let .success(fd):
            Sys.close(current)
            return .success(Parent(fd: fd, canSync: true, name: name, path: path))
        case .failure:
            return .success(Parent(fd: current, canSync: false, name: name, path: path))
        }
    }

    /// Why a symbolic link must not be followed, or nil when only root and we can have made or changed it.
    static func distrust(link: stat, directory: stat) -> String? {
        let me = geteuid()
        if link.st_uid != 0 && link.st_uid != me { return "it belongs to uid \(link.st_uid)" }
        if directory.st_uid != 0 && directory.st_uid != me { return "its directory belongs to uid \(directory.st_uid)" }
        if directory.st_mode & 0o022 != 0 && directory.st_mode & S_ISVTX == 0 {
            return "its directory is writable by others (mode \(String(directory.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }
}
