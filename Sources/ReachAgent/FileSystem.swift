// The few file-system calls the report writers make, behind one protocol so tests can play the kernel (short writes,
// ENOSPC, EROFS, EINTR) without a real full disk. `PosixFileSystem` is the only implementation that ships; it goes
// through ReachSystem, the one place reach creates, replaces, rotates or appends to a file.

@_exported import ReachSystem

public protocol FileSystem: Sendable {
    /// Opens the report log for appending, creating it (0640) and its directory (one level, 0750) when absent: a
    /// regular file, or a character device or FIFO written in place (`SafeWrite.openAppend`).
    func openAppend(_ path: String) -> Result<SafeWrite.Appendable, SystemError>
    /// Replaces a regular file whole (temporary file, fsync, rename), or writes a device or FIFO in place
    /// (`SafeWrite.replace`).
    func replace(_ path: String, with bytes: [UInt8], mode: UInt32) -> Result<Void, SystemError>
    /// One `write(2)`; EINTR before anything was written is retried. Returns the count written (maybe short).
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SystemError>
    /// The file's size. The corresponding C function is `fstat`.
    func size(_ fd: Int32) -> Result<Int, SystemError>
    /// The last byte of the file, nil when it is empty. The corresponding C function is `pread`.
    func lastByte(_ fd: Int32, size: Int) -> UInt8?
    /// The corresponding C function is `ftruncate`.
    func truncate(_ fd: Int32, to size: Int) -> Result<Void, SystemError>
    /// Size-based rotation that renames and removes regular files only (`SafeWrite.rotate`).
    func rotate(_ path: String, keep: Int) -> Result<Void, SystemError>
    func close(_ fd: Int32)
}

public struct PosixFileSystem: FileSystem {
    public init() {}

    public func openAppend(_ path: String) -> Result<SafeWrite.Appendable, SystemError> {
        SafeWrite.openAppend(path, mode: 0o640, createDirectory: 0o750)
    }

    public func replace(_ path: String, with bytes: [UInt8], mode: UInt32) -> Result<Void, SystemError> {
        SafeWrite.replace(path, with: bytes, mode: mode).map { _ in () }
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        Sys.write(fd, bytes, path: nil)
    }

    public func size(_ fd: Int32) -> Result<Int, SystemError> {
        Sys.fstat(fd, path: nil).map { Int($0.st_size) }
    }

    public func lastByte(_ fd: Int32, size: Int) -> UInt8? {
        guard size > 0 else { return nil }
        var b: UInt8 = 0
        let r = withUnsafeMutableBytes(of: &b) { Sys.pread(fd, into: $0, at: size - 1, path: nil) }
        if case .success(1) = r { return b }
        return nil
    }

    public func truncate(_ fd: Int32, to size: Int) -> Result<Void, SystemError> {
        Sys.ftruncate(fd, size, path: nil)
    }

    public func rotate(_ path: String, keep: Int) -> Result<Void, SystemError> {
        SafeWrite.rotate(path, keep: keep)
    }

    public func close(_ fd: Int32) { Sys.close(fd) }
}
