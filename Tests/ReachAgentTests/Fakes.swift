// Test doubles: a manual clock, sources the test drives, a line collector, and a file system that plays the kernel.

import Glibc
import Logging
import ReachAgent
import ReachCore
import ServiceLifecycle
import GatewayReach
import Synchronization

/// A clock that moves only when the test says so.
final class ManualClock: AgentClock {
    private struct Sleeper {
        var id: Int
        var deadline: Duration
        var continuation: CheckedContinuation<Void, Error>
    }
    private let state = Mutex<(now: Duration, nextID: Int, sleepers: [Sleeper])>((.zero, 0, []))

    func now() -> Duration { state.withLock { $0.now } }

    func sleep(until deadline: Duration) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, Error>) in
                let due = state.withLock { s -> Bool in
                    if deadline <= s.now { return true }
                    if Task.isCancelled { return true }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    return false
                }
                if due { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, Error>? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// How many tasks are asleep on this clock.
    var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    func advance(by d: Duration) {
        let due = state.withLock { s -> [CheckedContinuation<Void, Error>] in
            s.now += d
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due.map(\.continuation)
        }
        for c in due { c.resume() }
    }
}

/// A wall clock the test can read back: 2026-11-22T00:00:00Z plus the manual clock.
func wallClock(_ clock: ManualClock) -> @Sendable () -> Timestamp {
    { Timestamp(seconds: 1_795_305_600 + Int64(clock.now().components.seconds)) }
}

/// A route source whose answer the test sets, and whose notices the test sends.
final class FakeRouteSource: RouteSource {
    private let view = Mutex<RouteView>(RouteView())
    private let stream: AsyncStream<RouteEvent>
    private let continuation: AsyncStream<RouteEvent>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: RouteEvent.self)
    }

    func events() throws -> AsyncStream<RouteEvent> { stream }

    func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView {
        view.withLock { $0 }
    }

    func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError> { .success([]) }

    /// Sets the kernel's answer and sends a notice, as a route change would.
    func set(_ route: RouteLookup?) {
        view.withLock { $0.route = route }
        continuation.yield(.route(.new, .ipv4))
    }

    /// Sets the whole route part (route and uplinks) and sends a notice.
    func set(_ part: RouteView) {
        view.withLock { $0 = part }
        continuation.yield(.route(.new, .ipv4))
    }
}

final class FakeWiFiSource: WiFiSource {
    let name = "fake"
    private let stream: AsyncStream<(SourceHealth, [WiFiLink])>
    private let continuation: AsyncStream<(SourceHealth, [WiFiLink])>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: (SourceHealth, [WiFiLink]).self)
    }

    func updates() -> AsyncStream<(SourceHealth, [WiFiLink])> { stream }

    func set(_ links: [WiFiLink]) { continuation.yield((.ok, links)) }
}

/// Collects the lines the hub writes.
final class LineCollector: Sendable {
    private let lines = Mutex<[(ReportEventType, JSON)]>([])

    var handler: LineHandler {
        { type, line, _, _ in self.lines.withLock { $0.append((type, line)) } }
    }

    var all: [(ReportEventType, JSON)] { lines.withLock { $0 } }
    var types: [ReportEventType] { all.map(\.0) }
    func of(_ type: ReportEventType) -> [JSON] { all.filter { $0.0 == type }.map(\.1) }
}

/// Waits (in real time, for other tasks to run; never for the agent's cadence) until `condition` holds.
func eventually(_ what: String = "condition", timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while clock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

enum Routes {
    static func via(_ name: String, kind: InterfaceKind, carrier: Bool = true) -> RouteLookup {
        RouteLookup(
            family: .ipv4, type: .unicast,
            link: LinkState(name: name, index: 2, kind: kind, adminUp: true, carrier: carrier), gateway: "192.0.2.1")
    }
}

/// An agent on the test's sources and clock (no modems, no log files), and the service group that runs it.
/// `validationRunner`: the validation rounds in place of the probes (no jitter then).
func testAgent(
    _ config: AgentConfig, clock: ManualClock, route: FakeRouteSource, lines: LineCollector, wifi: FakeWiFiSource? = nil,
    validationRunner: ValidationRoundRunner? = nil
) -> (AgentAssembly, ServiceGroup) {
    let agent = AgentAssembly(
        config: config, configPath: nil, log: nil, prometheus: nil, onLine: lines.handler, clock: clock,
        wall: wallClock(clock), route: route, modems: [], wifi: wifi, validationRunner: validationRunner,
        validationRandom: { 0.5 }, reloadOnSIGHUP: false, logger: testLogger())
    return (agent, ServiceGroup(configuration: ServiceGroupConfiguration(services: agent.services, logger: testLogger())))
}

func testLogger() -> Logger {
    var l = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    l.logLevel = .critical
    return l
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
