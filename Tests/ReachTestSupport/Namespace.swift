// Network namespaces of a test's own, deleted afterwards.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A network namespace of the test's own (`gr-TAG-PID-N`), deleted (with everything in it) on `delete()` or deinit.
public final class Namespace: @unchecked Sendable {
    public let name: String
    private var helpers: [Spawned] = []
    private var deleted = false
    private let lock = NSLock()
    private static let counter = NSLock()
    nonisolated(unsafe) private static var next = 0

    /// Creates the namespace and brings its loopback up. (Synchronous: `ip` takes milliseconds.)
    public init(_ tag: String) throws {
        Namespace.counter.lock()
        Namespace.next += 1
        let n = Namespace.next
        Namespace.counter.unlock()
        name = "gr-\(tag)-\(getpid())-\(n)"
        try Self.shell(["ip", "netns", "add", name])
        do { try ip("link", "set", "lo", "up") } catch {
            delete()
            throw error
        }
    }

    deinit { delete() }

    public func delete() {
        let helpers: [Spawned]? = lock.withLock {
            guard !deleted else { return nil }
            deleted = true
            defer { self.helpers = [] }
            return self.helpers
        }
        guard let helpers else { return }
        for h in helpers { h.stop(grace: 0) }
        _ = endProxies()
        endPrograms()
        _ = try? Self.shell(["ip", "netns", "delete", name], timeout: 10)
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
    }

    /// Ends every program still running in the namespace (`ip netns pids`), all of them started by the test: a
    /// qmi-proxy/mbim-proxy that libqmi/libmbim started for a program in here, say. SIGTERM, then SIGKILL after a
    /// second for whatever is left (a proxy spawned from a thread that blocks SIGTERM inherits the block).
    public func endPrograms() {
        func pids() -> [pid_t] {
            ((try? Self.shell(["ip", "netns", "pids", name], timeout: 10)) ?? "").split(separator: "\n").compactMap { pid_t($0) }
        }
        let first = pids()
        guard !first.isEmpty else { return }
        for pid in first { kill(pid, SIGTERM) }
        let deadline = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < deadline, !pids().isEmpty { usleep(50_000) }
        for pid in pids() { kill(pid, SIGKILL) }
    }

    /// `ip -n NAME args…`
    @discardableResult
    public func ip(_ args: String...) throws -> String { try Self.shell(["ip", "-n", name] + args) }

    /// Runs a program inside the namespace (`ip netns exec`, which also remounts /sys for it).
    @available(*, noasync, message: "await the async exec")
    public func exec(_ argv: [String], timeout: Double = 30) throws -> RunResult {
        try TestSupport.run(["ip", "netns", "exec", name] + argv, timeout: timeout)
    }

    /// `exec` from async code (waits on a thread of its own).
    public func exec(_ argv: [String], timeout: Double = 30) async throws -> RunResult {
        try await TestSupport.run(["ip", "netns", "exec", name] + argv, timeout: timeout)
    }

    /// Writes /etc/netns/NAME/FILE, which `ip netns exec` bind-mounts over /etc/FILE (hosts, resolv.conf).
    public func etc(_ file: String, _ contents: String) throws {
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(name)", withIntermediateDirectories: true)
        try contents.write(toFile: "/etc/netns/\(name)/\(file)", atomically: true, encoding: .utf8)
    }

    /// Creates a tun device and keeps it attached (so it has carrier) until the namespace is deleted.
    public func attachedTun(_ dev: String) throws {
        try ip("tuntap", "add", "dev", dev, "mode", "tun")
        let script = """
            import fcntl, struct, sys, time
            fd = open("/dev/net/tun", "r+b", buffering=0)
            fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x0001 | 0x1000))
            print("attached", flush=True)
            time.sleep(3600)
            """
        let p = try Self.spawn(["ip", "netns", "exec", name, "python3", "-c", script, dev])
        lock.withLock { helpers.append(p) }
        guard (try? Self.line(p, timeout: 10)) == "attached" else {
            throw TestFailure("could not attach to tun \(dev) in \(name): \(p.errorText)")
        }
    }

    /// The processes running in the namespace (`ip netns pids`) whose command (/proc/PID/comm) is one of `commands`.
    public func processes(named commands: Set<String>) -> [pid_t] {
        let pids = (try? Self.shell(["ip", "netns", "pids", name]))?.split(whereSeparator: \.isWhitespace)
            .compactMap { pid_t($0) } ?? []
        return pids.filter { pid in
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return comm.map(commands.contains) ?? false
        }
    }

    /// Ends the qmi-proxy / mbim-proxy processes a test's clients started in this namespace (libqmi and libmbim start
    /// them on demand and they outlive their clients), by pid: SIGTERM, then SIGKILL after `grace` seconds. Returns
    /// the pids it ended. Their abstract sockets are per namespace, so only this namespace's proxies are touched.
    @discardableResult
    public func endProxies(grace: Double = 3) -> [pid_t] {
        let pids = processes(named: ["qmi-proxy", "mbim-proxy"])
        for pid in pids { kill(pid, SIGTERM) }
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline, pids.contains(where: { Self.alive($0) }) { usleep(20_000) }
        for pid in pids where Self.alive(pid) { kill(pid, SIGKILL) }
        return pids
    }

    /// Alive and not a zombie (a proxy whose parent exited is reparented, and a zombie counts as ended).
    public static func alive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(close, offsetBy: 2)...].first != "Z"
    }

    /// Moves one end of a new veth pair into `peer` (another namespace).
    public func veth(_ local: String, peer: Namespace, _ remote: String) throws {
        try Self.shell(
            ["ip", "link", "add", local, "netns", name, "type", "veth", "peer", "name", remote, "netns", peer.name])
    }

    // Synchronous on purpose (creation and deletion happen in initialisers and deinit); `ip` is quick.
    @discardableResult
    private static func shell(_ argv: [String], timeout: Double = 30) throws -> String {
        try TestSupport.sh(argv, timeout: timeout)
    }
    private static func spawn(_ argv: [String]) throws -> Spawned { try Spawned(argv, stdout: .pipe, stderr: .capture) }
    private static func line(_ p: Spawned, timeout: Double) throws -> String { try p.readLine(timeout: timeout) }
}
