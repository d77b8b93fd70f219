// The few file-system calls the report writers make, behind one protocol so tests can play the kernel (short writes,
// ENOSPC, EROFS, EINTR) without a real full disk. `PosixFileSystem` is the only implementation that ships; each
// wrapper retries EINTR where the call can be repeated safely and returns the errno otherwise.

import Glibc

/// An errno from a named call, e.g. `write: No space left on device`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

public protocol FileSystem: Sendable {
    /// Opens for appending (O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, mode 0640). The corresponding C function is `open`.
    func openAppend(_ path: String) -> Result<Int32, SystemError>
    /// Creates or truncates for writing (O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode 0644).
    func openTruncate(_ path: String) -> Result<Int32, SystemError>
    /// One `write(2)`; EINTR before anything was written is retried. Returns the count written (maybe short).
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SystemError>
    /// The file's size. The corresponding C function is `fstat`.
    func size(_ fd: Int32) -> Result<Int, SystemError>
    /// The last byte of the file, nil when it is empty. The corresponding C function is `pread`.
    func lastByte(_ fd: Int32, size: Int) -> UInt8?
    /// The corresponding C function is `ftruncate`.
    func truncate(_ fd: Int32, to size: Int) -> Result<Void, SystemError>
    /// The corresponding C function is `fsync`.
    func sync(_ fd: Int32) -> Result<Void, SystemError>
    /// The corresponding C function is `rename`.
    func rename(_ from: String, _ to: String) -> Result<Void, SystemError>
    /// The corresponding C function is `unlink`.
    func unlink(_ path: String) -> Result<Void, SystemError>
    /// The corresponding C function is `mkdir` (mode 0750), one level.
    func makeDirectory(_ path: String) -> Result<Void, SystemError>
    func close(_ fd: Int32)
}

public struct PosixFileSystem: FileSystem {
    public init() {}

    public func openAppend(_ path: String) -> Result<Int32, SystemError> {
        retrying("open") { Glibc.open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o640) }.map { Int32($0) }
    }

    public func openTruncate(_ path: String) -> Result<Int32, SystemError> {
        retrying("open") { Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }.map { Int32($0) }
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        retrying("write") { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    public func size(_ fd: Int32) -> Result<Int, SystemError> {
        var st = stat()
        if fstat(fd, &st) != 0 { return .failure(SystemError("fstat", errno: errno)) }
        return .success(Int(st.st_size))
    }

    public func lastByte(_ fd: Int32, size: Int) -> UInt8? {
        guard size > 0 else { return nil }
        var b: UInt8 = 0
        let r = retrying("pread") { pread(fd, &b, 1, off_t(size - 1)) }
        if case .success(1) = r { return b }
        return nil
    }

    public func truncate(_ fd: Int32, to size: Int) -> Result<Void, SystemError> {
        retrying("ftruncate") { Int(ftruncate(fd, off_t(size))) }.map { _ in () }
    }

    public func sync(_ fd: Int32) -> Result<Void, SystemError> {
        retrying("fsync") { Int(fsync(fd)) }.map { _ in () }
    }

    public func rename(_ from: String, _ to: String) -> Result<Void, SystemError> {
        Glibc.rename(from, to) == 0 ? .success(()) : .failure(SystemError("rename", errno: errno))
    }

    public func unlink(_ path: String) -> Result<Void, SystemError> {
        Glibc.unlink(path) == 0 ? .success(()) : .failure(SystemError("unlink", errno: errno))
    }

    public func makeDirectory(_ path: String) -> Result<Void, SystemError> {
        mkdir(path, 0o750) == 0 || errno == EEXIST ? .success(()) : .failure(SystemError("mkdir", errno: errno))
    }

    public func close(_ fd: Int32) { _ = Glibc.close(fd) }

    private func retrying<T: BinaryInteger>(_ call: String, _ body: () -> T) -> Result<Int, SystemError> {
        while true {
            let r = body()
            if r >= 0 { return .success(Int(r)) }
            if errno == EINTR { continue }
            return .failure(SystemError(call, errno: errno))
        }
    }
}

/// The directory part of a path ("/var/log/reach" for "/var/log/reach/reach.jsonl"), nil when there is none.
func parentDirectory(_ path: String) -> String? {
    guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return nil }
    return String(path[..<slash])
}
