// The system calls reach's file helpers make, one wrapper each, as swift-system keeps one choke point per syscall
// (its Internals/Syscalls.swift): nothing else in this module calls libc for them. Each wrapper retries EINTR in one
// place (`retrying`) and returns the errno as a `SystemError` naming the call and the path. `close` is never retried:
// on Linux the descriptor is gone even when close(2) reports EINTR.

import Glibc

/// O_PATH (include/uapi/asm-generic/fcntl.h; only alpha, parisc and sparc differ), which Glibc's module map hides
/// without _GNU_SOURCE: a descriptor that names a directory for the *at calls without reading it.
let O_PATH: Int32 = 0o10_000_000

public enum Sys {
    /// Runs `body` until it does not fail with EINTR; a negative result becomes the errno as an error.
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ call: String, _ path: String?, _ body: () -> T) -> Result<T, SystemError> {
        while true {
            let r = body()
            if r >= 0 { return .success(r) }
            let e = errno
            if e == EINTR { continue }
            return .failure(SystemError(call, errno: e, path: path))
        }
    }

    /// The corresponding C function is `openat` (AT_FDCWD for `dir` opens relative to the working directory).
    public static func openat(_ dir: Int32, _ name: String, _ flags: Int32, _ mode: mode_t = 0, path: String) -> Result<Int32, SystemError> {
        retrying("open", path) { Glibc.openat(dir, name, flags | O_CLOEXEC, mode) }
    }

    /// The corresponding C function is `fstat`.
    public static func fstat(_ fd: Int32, path: String?) -> Result<stat, SystemError> {
        var st = Glibc.stat()
        return retrying("fstat", path) { Glibc.fstat(fd, &st) }.map { _ in st }
    }

    /// The entry itself, a symbolic link not followed. The corresponding C function is `fstatat` with
    /// AT_SYMLINK_NOFOLLOW.
    public static func lstatat(_ dir: Int32, _ name: String, path: String) -> Result<stat, SystemError> {
        var st = Glibc.stat()
        return retrying("lstat", path) { Glibc.fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) }.map { _ in st }
    }

    /// What `path` names, symbolic links followed. The corresponding C function is `stat` (as `fstatat`).
    public static func stat(_ path: String) -> Result<stat, SystemError> {
        var st = Glibc.stat()
        return retrying("stat", path) { Glibc.fstatat(AT_FDCWD, path, &st, 0) }.map { _ in st }
    }

    /// A symbolic link's text. The corresponding C function is `readlinkat`.
    public static func readlinkat(_ dir: Int32, _ name: String, path: String) -> Result<[UInt8], SystemError> {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.count
        return retrying("readlink", path) {
            buffer.withUnsafeMutableBytes { Glibc.readlinkat(dir, name, $0.baseAddress!.assumingMemoryBound(to: CChar.self), count) }
        }.flatMap { n in
            n >= count ? .failure(SystemError("readlink", errno: ENAMETOOLONG, path: path)) : .success(Array(buffer[0..<n]))
        }
    }

    /// One `read(2)` into `buffer`; 0 at the end of the file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String?) -> Result<Int, SystemError> {
        retrying("read", path) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// One `pread(2)` at `offset`.
    public static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String?) -> Result<Int, SystemError> {
        retrying("pread", path) { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// One `write(2)`; the count written, which may be short.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) -> Result<Int, SystemError> {
        retrying("write", path) { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    /// The corresponding C function is `fchmod`.
    public static func fchmod(_ fd: Int32, _ mode: mode_t, path: String?) -> Result<Void, SystemError> {
        retrying("fchmod", path) { Glibc.fchmod(fd, mode) }.map { _ in () }
    }

    /// The corresponding C function is `fsync`.
    public static func fsync(_ fd: Int32, path: String?) -> Result<Void, SystemError> {
        retrying("fsync", path) { Glibc.fsync(fd) }.map { _ in () }
    }

    /// The corresponding C function is `ftruncate`.
    public static func ftruncate(_ fd: Int32, _ size: Int, path: String?) -> Result<Void, SystemError> {
        retrying("ftruncate", path) { Glibc.ftruncate(fd, off_t(size)) }.map { _ in () }
    }

    /// Renames within one directory. The corresponding C function is `renameat`.
    public static func renameat(_ dir: Int32, _ from: String, _ to: String, path: String) -> Result<Void, SystemError> {
        retrying("rename", path) { Glibc.renameat(dir, from, dir, to) }.map { _ in () }
    }

    /// The corresponding C function is `unlinkat` (a file, never a directory).
    public static func unlinkat(_ dir: Int32, _ name: String, path: String) -> Result<Void, SystemError> {
        retrying("unlink", path) { Glibc.unlinkat(dir, name, 0) }.map { _ in () }
    }

    /// The corresponding C function is `mkdirat`.
    public static func mkdirat(_ dir: Int32, _ name: String, _ mode: mode_t, path: String) -> Result<Void, SystemError> {
        retrying("mkdir", path) { Glibc.mkdirat(dir, name, mode) }.map { _ in () }
    }

    /// A second descriptor for the same open file (close-on-exec), numbered `minimum` or above. The corresponding C
    /// function is `fcntl` (F_DUPFD_CLOEXEC).
    public static func dup(_ fd: Int32, minimum: Int32 = 3, path: String?) -> Result<Int32, SystemError> {
        retrying("dup", path) { Glibc.fcntl(fd, F_DUPFD_CLOEXEC, minimum) }
    }

    /// Sets FD_CLOEXEC on a descriptor made without it. The corresponding C function is `fcntl` (F_SETFD).
    public static func setCloseOnExec(_ fd: Int32, path: String?) -> Result<Void, SystemError> {
        retrying("fcntl", path) { Glibc.fcntl(fd, F_SETFD, FD_CLOEXEC) }.map { _ in () }
    }

    /// Grows (or shrinks) a pipe's buffer to at least `bytes` (the kernel rounds up to a power of two of pages, and
    /// caps it at /proc/sys/fs/pipe-max-size for an unprivileged caller). The corresponding C function is `fcntl`
    /// (F_SETPIPE_SZ, include/uapi/linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 7, which Glibc's module hides).
    public static func setPipeSize(_ fd: Int32, _ bytes: Int, path: String?) -> Result<Void, SystemError> {
        let F_SETPIPE_SZ: Int32 = 1031
        return retrying("fcntl", path) { Glibc.fcntl(fd, F_SETPIPE_SZ, Int32(clamping: bytes)) }.map { _ in () }
    }

    /// A pipe whose two ends are close-on-exec (and non-blocking too with `nonBlocking`). The corresponding C
    /// function is `pipe2` (a GNU extension Glibc's module hides, looked up at run time; `pipe` and `fcntl` where it
    /// is missing).
    public static func pipe(nonBlocking: Bool = false) -> Result<(read: Int32, write: Int32), SystemError> {
        var fds: [Int32] = [-1, -1]
        let flags = O_CLOEXEC | (nonBlocking ? O_NONBLOCK : 0)
        let made = retrying("pipe", nil) {
            fds.withUnsafeMutableBufferPointer { fds in pipe2Function.map { $0(fds.baseAddress!, flags) } ?? Glibc.pipe(fds.baseAddress!) }
        }
        if case let .failure(e) = made { return .failure(e) }
        if pipe2Function == nil {
            for fd in fds {
                let set = setCloseOnExec(fd, path: nil).flatMap { nonBlocking ? setNonBlocking(fd, true, path: nil) : .success(()) }
                if case let .failure(e) = set {
                    fds.forEach { close($0) }
                    return .failure(e)
                }
            }
        }
        return .success((fds[0], fds[1]))
    }

    private static let pipe2Function: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32)? = symbol("pipe2")

    /// Waits until one of `fds` is ready or `timeoutMs` passes (-1: no limit); the number of ready entries, 0 on
    /// timeout. EINTR is retried with the same timeout: a caller with a deadline computes the next timeout from its
    /// clock after every return anyway. The corresponding C function is `poll`.
    public static func poll(_ fds: inout [pollfd], timeoutMs: Int32) -> Result<Int32, SystemError> {
        let count = nfds_t(fds.count)
        return fds.withUnsafeMutableBufferPointer { buffer in
            retrying("poll", nil) { Glibc.poll(buffer.baseAddress, count, timeoutMs) }
        }
    }

    /// Waits until `fd` is ready for `events` or `timeoutMs` passes: the events it reported (0 on timeout).
    public static func poll(_ fd: Int32, _ events: Int16, timeoutMs: Int32) -> Result<Int16, SystemError> {
        var fds = [pollfd(fd: fd, events: events, revents: 0)]
        return poll(&fds, timeoutMs: timeoutMs).map { _ in fds[0].revents }
    }

    /// Writes all of `bytes`, continuing after short writes. A descriptor that takes no bytes fails with EIO.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) -> Result<Void, SystemError> {
        var offset = 0
        while offset < bytes.count {
            switch write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]), path: path) {
            case let .success(n) where n > 0: offset += n
            case .success: return .failure(SystemError("write", errno: EIO, path: path, detail: "the file took no bytes"))
            case let .failure(e): return .failure(e)
            }
        }
        return .success(())
    }

    /// Writes all of `bytes`, continuing after short writes.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String?) -> Result<Void, SystemError> {
        bytes.withUnsafeBytes { writeAll(fd, $0, path: path) }
    }

    /// Sets or clears O_NONBLOCK on an open file. The corresponding C function is `fcntl` (F_GETFL, F_SETFL).
    public static func setNonBlocking(_ fd: Int32, _ on: Bool, path: String?) -> Result<Void, SystemError> {
        retrying("fcntl", path) { Glibc.fcntl(fd, F_GETFL) }.flatMap { flags in
            let new = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
            return new == flags ? .success(()) : retrying("fcntl", path) { Glibc.fcntl(fd, F_SETFL, new) }.map { _ in () }
        }
    }

    /// The corresponding C function is `close`; never retried (Linux has released the descriptor even on EINTR).
    public static func close(_ fd: Int32, path: String?) -> Result<Void, SystemError> {
        Glibc.close(fd) == 0 || errno == EINTR ? .success(()) : .failure(SystemError("close", errno: errno, path: path))
    }

    /// `close` where nothing can be done about a failure (a descriptor only read, or already failed).
    public static func close(_ fd: Int32) { _ = close(fd, path: nil) }
}

extension stat {
    public var kind: FileKind { FileKind(mode: st_mode) }
}
