// A running reach-modem-sim (the project's QMUX/MBIM modem simulator on a pty; hw/scenarios/README.md), and the
// scenario files tests write for it.

import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A running `reach-modem-sim` with its pty behind a symlink (`link`), a frame log (`log`) and a control socket.
/// `stop()` sends SIGTERM and reaps it; releasing the handle stops it too and removes its directory (and the
/// scenario file, when `ScenarioFile` wrote it). Used by one test at a time.
public final class ModemSimulator: @unchecked Sendable {
    /// The first pty it announced ("pty: /dev/pts/N").
    public let pty: String
    /// The symbolic link to the current pty (what a client should open: it follows a reopened port).
    public let link: String
    public let logPath: String
    public let controlPath: String?
    /// The directory holding the link, the log and the socket.
    public let directory: String
    public let arguments: [String]
    private let process: Spawned
    private let ownedScenario: String?

    /// Starts the simulator on a scenario or a capture to replay and waits for its "pty:" line. A bare name is a
    /// shipped file (hw/scenarios/NAME.json, hw/captures/NAME.json); anything with a "/" is a path. Throws when
    /// the binary is missing or does not come up: a missing simulator is a broken build, not a reason to skip.
    public static func start(
        scenario: String? = nil, replay: String? = nil, control: Bool = true, extra: [String] = []
    ) async throws -> ModemSimulator {
        let lease = await ChildSlots.shared.acquire()
        return try await offPool {
            try ModemSimulator(scenario: scenario, replay: replay, control: control, extra: extra, lease: lease)
        }
    }

    /// Starts the simulator on a scenario written for the test (`ScenarioFile.registered`, say); the file goes with
    /// the simulator.
    public static func start(json: String, control: Bool = true, extra: [String] = []) async throws -> ModemSimulator {
        try await start(scenario: ScenarioFile.write(json), control: control, extra: extra)
    }

    /// `start`, blocking this thread while the simulator comes up.
    @available(*, noasync, message: "use ModemSimulator.start")
    public convenience init(
        scenario: String? = nil, replay: String? = nil, control: Bool = true, extra: [String] = []
    ) throws {
        try self.init(scenario: scenario, replay: replay, control: control, extra: extra,
                      lease: ChildSlots.shared.acquireBlocking())
    }

    private init(scenario: String?, replay: String?, control: Bool, extra: [String], lease: ChildSlots.Lease) throws {
        let scenarioPath = scenario.map { $0.contains("/") ? $0 : TestPaths.scenarios + "/" + $0 + ".json" }
        ownedScenario = scenarioPath.flatMap { $0.hasPrefix(ScenarioFile.prefix) ? $0 : nil }
        directory = NSTemporaryDirectory() + "reach-sim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        link = directory + "/modem"
        logPath = directory + "/frames.log"
        controlPath = control ? directory + "/control.sock" : nil
        var args: [String] = []
        if let scenarioPath { args += ["--scenario", scenarioPath] }
        if let replay {
            args += ["--replay", replay.contains("/") ? replay : TestPaths.captures + "/" + replay + ".json"]
        }
        args += ["--link", link, "--log", logPath]
        if let controlPath { args += ["--control", controlPath] }
        arguments = args + extra
        let binary = TestPaths.simulator
        do {
            guard TestPaths.isBuilt(binary) else {
                throw TestFailure("reach-modem-sim is not built at \(binary) (swift build --build-tests)")
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            process = try Spawned([binary] + arguments, stdout: .pipe, stderr: .capture, lease: lease)
        } catch {
            Self.remove(directory, ownedScenario)
            throw error
        }
        // "pty: /dev/pts/N", then "link: PATH", in one write; the link and the socket exist by then.
        let first = try? process.readLine(timeout: 10)
        let second = first == nil ? nil : try? process.readLine(timeout: 5)
        guard let first, first.hasPrefix("pty: /dev/pts/"), second?.hasPrefix("link: ") == true else {
            process.stop()
            Self.remove(directory, ownedScenario)
            throw TestFailure("reach-modem-sim did not start (\(arguments.joined(separator: " "))): "
                              + "'\(first ?? "")' \(process.errorText)")
        }
        pty = String(first.dropFirst(5))
    }

    deinit {
        stop()
        Self.remove(directory, ownedScenario)
    }

    private static func remove(_ directory: String, _ scenario: String?) {
        try? FileManager.default.removeItem(atPath: directory)
        if let scenario { try? FileManager.default.removeItem(atPath: scenario) }
    }

    /// The next line the simulator prints (after a port closes and reopens: "pty: …", then "link: …").
    @available(*, noasync, message: "await the async readLine(timeout:)")
    public func readLine(timeout: Double) throws -> String { try process.readLine(timeout: timeout) }

    public func readLine(timeout: Double) async throws -> String { try await process.readLine(timeout: timeout) }

    /// The frame log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// What the simulator wrote on standard error.
    public var errorText: String { process.errorText }

    public var isRunning: Bool { process.isRunning }

    /// SIGTERM, then reaped; the exit status (0: it shut down cleanly). Idempotent; at most a few seconds.
    @discardableResult
    public func stop() -> Int32 { process.stop() }

    /// One control-socket exchange: a JSON line in, the reply line out (without its newline).
    @available(*, noasync, message: "await the async control(_:)")
    @discardableResult
    public func control(_ json: String) throws -> String { try exchange(json) }

    /// `control`, waiting on a thread of its own.
    @discardableResult
    public func control(_ json: String) async throws -> String {
        try await offPool { try self.exchange(json) }
    }

    private func exchange(_ json: String, timeout: Int32 = 10_000) throws -> String {
        guard let controlPath else { throw TestFailure("reach-modem-sim was started without --control") }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = Array(controlPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw TestFailure("socket path too long: \(controlPath)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { throw TestFailure("connect \(controlPath): \(String(cString: strerror(errno)))") }
        let line = Array((json + "\n").utf8)
        var sent = 0
        while sent < line.count {
            let n = line[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestFailure("control write: \(String(cString: strerror(errno)))") }
            sent += n
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !reply.contains(10) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, timeout) > 0 else { throw TestFailure("no control reply within \(timeout) ms") }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            reply += buffer[0..<n]
        }
        return String(decoding: reply.prefix { $0 != 10 }, as: UTF8.self)
    }
}

/// Scenario files written for a test (the simulator's format, hw/scenarios/README.md).
public enum ScenarioFile {
    static let prefix = NSTemporaryDirectory() + "reach-scenario-\(getpid())-"

    /// Writes `json` to a temporary file and returns its path; the `ModemSimulator` started on it removes it.
    public static func write(_ json: String) throws -> String {
        let path = prefix + String(UInt32.random(in: 0...UInt32.max), radix: 16) + ".json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A registered modem on `rats` with `signal` (a JSON object body), and any extra top-level members.
    public static func registered(
        _ proto: String, rats: [String], signal: String, mbimex: String? = nil, extra: String = "",
        registration: String = "home", sim: String = "ready"
    ) -> String {
        let ratList = rats.map { "\"\($0)\"" }.joined(separator: ", ")
        let mbimexMember = mbimex.map { "\"mbimex\": \"\($0)\"," } ?? ""
        return """
            {
              "protocol": "\(proto)",
              "description": "written by a GatewayReach test",
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
