// Test doubles of the agent: a line collector and a file system that plays the kernel. (The clock and the sources
// the test drives are in ReachTestSupport/MonitorFakes.swift, shared with the library's tests.)

import Glibc
import ReachAgent
import ReachCore
import ReachLog
import ReachTestSupport
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

/// An agent on the test's sources and clock (no modems, no log files), and the service group that runs it.
/// `validationRunner`: the validation rounds in place of the probes (no jitter then).
func testAgent(
    _ config: AgentConfig, clock: ManualClock, route: FakeRouteSource, lines: LineCollector, wifi: FakeWiFiSource? = nil,
    validationRunner: ValidationRoundRunner? = nil
) -> (AgentAssembly, AgentRunner) {
    let agent = AgentAssembly(
        config: config, configPath: nil, log: nil, prometheus: nil, onLine: lines.handler, clock: clock,
        wall: wallClock(clock), route: route, modems: [], wifi: wifi, validationRunner: validationRunner,
        validationRandom: { 0.5 }, reloadOnSIGHUP: false, stopSignals: [], logger: testLogger())
    return (agent, agent.runner)
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

    /// Paths that open as a stream (a character device or FIFO): no rotation, no truncation.
    var streams: Set<String> = []
    var replaced = 0

    func openAppend(_ path: String) -> Result<SafeWrite.Appendable, SystemError> {
        if !openFailures.isEmpty { return .failure(SystemError("open", errno: openFailures.removeFirst())) }
        if files[path] == nil { files[path] = [] }
        nextFD += 1
        fds[nextFD] = path
        return .success(SafeWrite.Appendable(fd: nextFD, kind: streams.contains(path) ? .characterDevice : .regular))
    }

    func replace(_ path: String, with bytes: [UInt8], mode: UInt32) -> Result<Void, SystemError> {
        if !openFailures.isEmpty { return .failure(SystemError("open", errno: openFailures.removeFirst())) }
        replaced += 1
        files[path] = bytes
        return .success(())
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

    /// path.keep removed, path.N-1 → path.N, …, path → path.1 (open descriptors follow their file, as in the kernel).
    func rotate(_ path: String, keep: Int) -> Result<Void, SystemError> {
        func move(_ from: String, _ to: String) {
            guard let data = files[from] else { return }
            files[to] = data
            files[from] = nil
            for (fd, p) in fds where p == from { fds[fd] = to }
        }
        if keep == 0 {
            files[path] = nil
            return .success(())
        }
        files["\(path).\(keep)"] = nil
        for i in stride(from: keep - 1, through: 1, by: -1) { move("\(path).\(i)", "\(path).\(i + 1)") }
        move(path, "\(path).1")
        return .success(())
    }

    func close(_ fd: Int32) { fds[fd] = nil }

    func lines(_ path: String) -> [String] {
        String(decoding: files[path] ?? [], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.isEmpty }
    }
}
