import Foundation
import Glibc
import Testing

/// A child process started with an empty signal mask and default signal actions. (Foundation's Process hands
/// the child the spawning thread's mask, and the test runner's threads block SIGTERM, so a child that relies on a
/// SIGTERM handler would never see it.) The corresponding C function is `posix_spawn`.
final class Child: @unchecked Sendable {
    let pid: pid_t
    /// The read end of the child's standard output.
    let stdout: CInt

    init(_ path: String, _ arguments: [String]) throws {
        var fds: [CInt] = [0, 0]
        guard pipe(&fds) == 0 else { throw SimulatorError("pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw SimulatorError("posix_spawn \(path): error \(rc)")
        }
        self.pid = pid
        self.stdout = fds[0]
    }

    /// The first line the child prints, waiting at most `timeout`.
    func firstLine(timeout: Duration) -> String {
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var byte: UInt8 = 0
        while ContinuousClock.now < deadline {
            var p = pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) >= 0 else { break }
            guard p.revents != 0 else { continue }
            guard read(stdout, &byte, 1) == 1 else { break }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// SIGTERM, then SIGKILL if it has not exited within two seconds; reaps it.
    func stop() {
        kill(pid, SIGTERM)
        for _ in 0..<200 {
            var status: CInt = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: CInt = 0
        waitpid(pid, &status, 0)
    }

    deinit { close(stdout) }
}

/// A running `reach-modem-sim` (the project's QMUX/MBIM modem simulator on a pty; hw/scenarios/README.md), with
/// its pty behind a symlink, a frame log and optionally a control socket. Stopped (SIGTERM, then reaped) when
/// released.
final class Simulator: @unchecked Sendable {
    let link: String
    let logPath: String
    let controlPath: String?
    private var child: Child?
    private let dir: String
    /// A scenario file written by `Scenario.file`, removed with the simulator.
    private let ownedScenario: String?

    /// Starts the simulator on a scenario file or a replay capture. Fails (throws) when the binary is missing or
    /// does not come up: a missing simulator is a broken build, not a reason to skip.
    init(scenario: String? = nil, replay: String? = nil, control: Bool = false) throws {
        dir = NSTemporaryDirectory() + "reach-sim-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        link = dir + "/modem"
        logPath = dir + "/frames.log"
        controlPath = control ? dir + "/control.sock" : nil
        ownedScenario = scenario.flatMap { $0.hasPrefix(Scenario.prefix) ? $0 : nil }
        guard FileManager.default.isExecutableFile(atPath: TestPaths.simulator) else {
            throw SimulatorError("reach-modem-sim not built at \(TestPaths.simulator) (swift build --build-tests)")
        }
        var args: [String] = []
        if let scenario { args += ["--scenario", scenario] }
        if let replay { args += ["--replay", replay] }
        args += ["--link", link, "--log", logPath]
        if let controlPath { args += ["--control", controlPath] }
        let child = try Child(TestPaths.simulator, args)
        self.child = child
        // The first line is "pty: /dev/pts/N"; the link and the socket exist by then.
        let first = child.firstLine(timeout: .seconds(10))
        guard first.hasPrefix("pty: /dev/pts/") else {
            stop()
            throw SimulatorError("reach-modem-sim did not start (\(args.joined(separator: " "))): \(first)")
        }
    }

    /// The simulator's frame log so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends one control line and returns the reply line.
    @discardableResult
    func control(_ json: String) throws -> String {
        guard let controlPath else { throw SimulatorError("started without --control") }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SimulatorError("socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in controlPath.utf8.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw SimulatorError("connect \(controlPath): errno \(errno)") }
        let line = Array((json + "\n").utf8)
        guard write(fd, line, line.count) == line.count else { throw SimulatorError("control write failed") }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { break }
            reply.append(byte)
        }
        return String(decoding: reply, as: UTF8.self)
    }

    func stop() {
        child?.stop()
        child = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
        if let ownedScenario { try? FileManager.default.removeItem(atPath: ownedScenario) }
    }
}

struct SimulatorError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Scenario files written for a test (the simulator's format, hw/scenarios/README.md).
enum Scenario {
    static let prefix = NSTemporaryDirectory() + "reach-scenario-"

    /// Writes `json` to a temporary file and returns its path; the `Simulator` started on it removes it.
    static func file(_ json: String) throws -> String {
        let path = prefix + UUID().uuidString.prefix(8) + ".json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A registered modem on `rats` with `signal` (a JSON object body), and any extra top-level members.
    static func registered(
        _ proto: String, rats: [String], signal: String, mbimex: String? = nil, extra: String = "",
        registration: String = "home", sim: String = "ready"
    ) -> String {
        let ratList = rats.map { "\"\($0)\"" }.joined(separator: ", ")
        let mbimexMember = mbimex.map { "\"mbimex\": \"\($0)\"," } ?? ""
        return """
            {
              "protocol": "\(proto)",
              "description": "written by ReachModemTests",
              "device": {"manufacturer": "Test", "model": "T1", "revision": "1.0", "imei": "356938035643809"},
              "identifiers": {"imsi": "262011234567890", "iccid": "89490200001234567890", "msisdn": "+4915112345678"},
              "sim": "\(sim)",
              \(mbimexMember)
              \(extra)
              "state": {
                "registration": "\(registration)",
                "access_technologies": [\(ratList)],
                "operator": {"mcc": "262", "mnc": "01", "name": "Telekom.de"},
                "signal": {\(signal)},
                "packet_service": "attached"
              }
            }
            """
    }
}

/// Runs the built `reach` binary and returns its exit status, standard output, standard error and wall time. The
/// blocking wait happens on a Dispatch thread, not on the Swift concurrency pool, so that other tests' tasks keep
/// running (the pool has one thread per core, two in CI).
func runReach(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String, seconds: Double) {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: TestPaths.reach)
            p.arguments = arguments
            let out = Pipe()
            let errPath = NSTemporaryDirectory() + "reach-stderr-" + UUID().uuidString
            _ = FileManager.default.createFile(atPath: errPath, contents: nil)
            defer { try? FileManager.default.removeItem(atPath: errPath) }
            p.standardOutput = out
            p.standardError = FileHandle(forWritingAtPath: errPath)
            let start = Date()
            do {
                try p.run()
            } catch {
                continuation.resume(throwing: error)
                return
            }
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            let errData = FileManager.default.contents(atPath: errPath) ?? Data()
            let seconds = Date().timeIntervalSince(start)
            continuation.resume(returning: (
                p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self),
                seconds))
        }
    }
}

/// `reach status --json` parsed.
func reachStatusJSON(_ arguments: [String]) async throws -> [String: Any] {
    let r = try await runReach(["status", "--json", "--no-wifi"] + arguments)
    guard let object = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
        throw SimulatorError("reach status printed no JSON (exit \(r.status)): \(r.stdout) \(r.stderr)")
    }
    return object
}
