// Test doubles of the agent: a line collector and a file system that plays the kernel. (The clock and the sources
// the test drives are in ReachTestSupport/MonitorFakes.swift, shared with the library's tests.)

import Glibc
import Logging
import ReachAgent
import ReachCore
import GatewayReach
import Synchronization

/// Collects the report lines.
final class LineCollector: Sendable {
    private let lines = Mutex<[(ReportEventType, JSON)]>([])

    var handler: LineHandler {
        { type, line, _, _ in self.lines.withLock { $0.append((type, line)) } }
    }

    var all: [(ReportEventType, JSON)] { lines.withLock { $0 } }
    var types: [ReportEventType] { all.map(\.0) }
    func of(_ type: ReportEventType) -> [JSON] { all.filter { $0.0 == type }.map(\.1) }
}

/// A file system that plays the kernel for `write`: each write's result is taken from a script (a count, or an errno),
/// after which writes behave normally. The "file" is kept in memory.
final class ScriptedFileSystem: FileSystem, @unchecked Sendable {
    enum Step { case writeAll, writeShort(Int), fail(Int32), interrupted }
    let lock = Mutex<Void>(())
    var files: [String: [UInt8]] = [:]
    var fds: [Int32: String] = [:]
    var nextFD: Int32 = 10
    var script: [Step] = []
    var openFailures: [Int32] = []
    var writes = 0

    func openAppend(_ path: String) -> Result<Int32, SystemError> {
        if !openFailures.isEmpty { return .failure(SystemError("open", errno: openFailures.removeFirst())) }
        if files[path] == nil { files[path] = [] }
        nextFD += 1
        fds[nextFD] = path
        return .success(nextFD)
    }

    func openTruncate(_ path: String) -> Result<Int32, SystemError> {
        files[path] = []
        nextFD += 1
        fds[nextFD] = path
        return .success(nextFD)
    }

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        writes += 1
        guard let path = fds[fd] else { return .failure(SystemError("write", errno: EBADF)) }
        var step = script.isEmpty ? Step.writeAll : script.removeFirst()
        while case .interrupted = step { step = script.isEmpty ? .writeAll : script.removeFirst() }  // EINTR: retried
        switch step {
        case .writeAll, .interrupted:
            files[path]!.append(contentsOf: bytes)
            return .success(bytes.count)
        case let .writeShort(n):
            files[path]!.append(contentsOf: bytes.prefix(n))
            return .success(n)
        case let .fail(e):
            return .failure(SystemError("write", errno: e))
        }
    }

    func size(_ fd: Int32) -> Result<Int, SystemError> {
        guard let path = fds[fd] else { return .failure(SystemError("fstat", errno: EBADF)) }
        return .success(files[path]!.count)
    }

    func lastByte(_ fd: Int32, size: Int) -> UInt8? { fds[fd].flatMap { files[$0]?.last } }

    func truncate(_ fd: Int32, to size: Int) -> Result<Void, SystemError> {
        guard let path = fds[fd] else { return .failure(SystemError("ftruncate", errno: EBADF)) }
        files[path] = Array(files[path]!.prefix(size))
        return .success(())
    }

    func sync(_ fd: Int32) -> Result<Void, SystemError> { .success(()) }

    func rename(_ from: String, _ to: String) -> Result<Void, SystemError> {
        guard let data = files[from] else { return .failure(SystemError("rename", errno: ENOENT)) }
        files[to] = data
        files[from] = nil
        for (fd, p) in fds where p == from { fds[fd] = to }
        return .success(())
    }

    func unlink(_ path: String) -> Result<Void, SystemError> {
        files[path] == nil ? .failure(SystemError("unlink", errno: ENOENT)) : { files[path] = nil; return .success(()) }()
    }

    func makeDirectory(_ path: String) -> Result<Void, SystemError> { .success(()) }
    func close(_ fd: Int32) { fds[fd] = nil }

    func lines(_ path: String) -> [String] {
        String(decoding: files[path] ?? [], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.isEmpty }
    }
}
