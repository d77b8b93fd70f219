// Sharing a modem: open its control port through qmi-proxy / mbim-proxy as ModemManager does, and say who else holds
// the port when something goes wrong.
//
// A cdc-wdm node (like a pty) hands each read to whichever reader comes first: two processes that open the port
// directly each lose some of the other's replies, and so do a direct opener and the proxy ModemManager uses. Two
// clients of the same proxy do not (the proxy routes each reply by client id / transaction). libqmi and libmbim start
// the proxy on demand (QMI_DEVICE_OPEN_FLAGS_PROXY, MBIM_DEVICE_OPEN_FLAGS_PROXY); it listens on an abstract unix
// socket, "@qmi-proxy" / "@mbim-proxy", one per network namespace. The proxies serve only root (or the one user
// libqmi/libmbim were built for): a root qmi-proxy hangs up on another user, a root mbim-proxy lets its open time out,
// and a proxy started by another user exits at once.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReachCore
import ReachSystem

/// How a port is to be opened, and why when that is not the configured way.
struct AccessPlan: Sendable, Equatable {
    var proxy: Bool
    var reason: String?

    /// - Parameters:
    ///   - listening: a proxy for this protocol already listens in our network namespace.
    ///   - installed: the proxy binary libqmi/libmbim would start exists.
    static func decide(_ access: ModemAccess, proxyName: String, euid: UInt32, listening: Bool, installed: Bool) -> AccessPlan {
        switch access {
        case .direct: return AccessPlan(proxy: false)
        case .proxy: return AccessPlan(proxy: true)
        case .auto:
            if listening { return AccessPlan(proxy: true) }
            if !installed {
                return AccessPlan(proxy: false, reason: "\(proxyName) is not installed; opened directly")
            }
            if euid != 0 {
                // A proxy we started would run as us and refuse us: it serves only root (or its build-time user).
                return AccessPlan(
                    proxy: false, reason: "\(proxyName) serves only root and none is running; opened directly (uid \(euid))")
            }
            return AccessPlan(proxy: true)
        }
    }
}

/// Facts from /proc about proxies and who holds a port. Every scan is bounded by what /proc lists; unreadable entries
/// are counted, never fatal.
enum ProcFacts {
    /// Where libqmi/libmbim look for their proxy (their libexecdir: /usr/libexec on Debian and OpenWrt; older Debian
    /// and Ubuntu builds used /usr/lib/libqmi and /usr/lib/libmbim).
    static func proxyPath(_ name: String) -> String? {
        let dirs: [String] = ["/usr/libexec", "/usr/lib/libqmi", "/usr/lib/libmbim", "/usr/local/libexec"]
        return dirs.map { dir in dir + "/" + name }.first { path in access(path, X_OK) == 0 }
    }

    static func proxyInstalled(_ name: String) -> Bool { proxyPath(name) != nil }

    /// Whether an abstract unix socket `@name` exists in our network namespace (proc(5), /proc/net/unix: the path is
    /// the last column, abstract names start with "@").
    static func listening(_ name: String, procNetUnix: String = "/proc/net/unix") -> Bool {
        // Streamed in chunks: the table has a line per unix socket of the namespace, which a busy box has thousands of.
        let needle = Array((" @" + name + "\n").utf8)
        guard case let .success(fd) = Sys.openat(AT_FDCWD, procNetUnix, O_RDONLY, path: procNetUnix) else { return false }
        defer { Sys.close(fd) }
        var chunk = [UInt8](repeating: 0, count: 16384)
        var window: [UInt8] = []
        while true {
            guard case let .success(n) = chunk.withUnsafeMutableBytes({ Sys.read(fd, into: $0, path: procNetUnix) }), n > 0 else {
                return false
            }
            window += chunk[0..<n]
            if window.count >= needle.count {
                for i in 0...(window.count - needle.count) where window[i] == needle[0] && Array(window[i..<(i + needle.count)]) == needle {
                    return true
                }
                window = Array(window.suffix(needle.count - 1))
            }
        }
    }

    /// A process holding the port.
    struct Holder: Sendable, Equatable, CustomStringConvertible {
        var pid: Int32
        var command: String
        var description: String { "\(command) (pid \(pid))" }
    }

    /// The processes (other than us) with `path` open, and how many processes could not be inspected (another user's
    /// /proc/PID/fd needs ptrace access).
    static func holders(of path: String, proc: String = "/proc") -> (holders: [Holder], uninspectable: Int) {
        guard let target = realPath(path) else { return ([], 0) }
        let (found, hidden) = holders(ofAny: [target], proc: proc, all: false)
        return (found.map(\.holder), hidden)
    }

    /// The processes (other than us and our modem workers) holding any of `targets` (what /proc/PID/fd/N links to:
    /// a path, or "socket:[INODE]" for a socket, proc(5)), with the targets each holds (with `all` false, the first
    /// found), and how many processes could not be inspected.
    static func holders(ofAny targets: Set<String>, proc: String = "/proc", all: Bool = true)
        -> (found: [(holder: Holder, targets: Set<String>)], uninspectable: Int)
    {
        guard !targets.isEmpty else { return ([], 0) }
        let me = getpid()
        let workers = WorkerProcess.running.withLock { $0 }
        var found: [(holder: Holder, targets: Set<String>)] = []
        var hidden = 0
        for entry in list(proc) {
            // Not this process, nor a modem worker of its own: the worker reading the port is the one holding it.
            guard let pid = Int32(entry), pid != me, !workers.contains(pid) else { continue }
            let fdDir = "\(proc)/\(entry)/fd"
            guard let dir = opendir(fdDir) else {
                if errno == EACCES || errno == EPERM { hidden += 1 }
                continue
            }
            var held = Set<String>()
            while all || held.isEmpty, let e = readdir(dir) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name != ".", name != "..", let link = readLink("\(fdDir)/\(name)"), targets.contains(link) else {
                    continue
                }
                held.insert(link)
            }
            closedir(dir)
            if !held.isEmpty {
                let command = readSmallFile("\(proc)/\(entry)/comm", limit: 64)?.trimmingSpaces ?? "?"
                found.append((Holder(pid: pid, command: command), held))
            }
        }
        return (found.sorted { $0.holder.pid < $1.holder.pid }, hidden)
    }

    /// The processes named `command` in our network namespace (by /proc/PID/ns/net); when no process's namespace
    /// could be read (a user that may not inspect root's processes), every process of that name.
    static func processes(named command: String, proc: String = "/proc") -> [Holder] {
        let ours = readLink("\(proc)/self/ns/net")
        var sameNamespace: [Holder] = []
        var unknownNamespace: [Holder] = []
        for entry in list(proc) {
            guard let pid = Int32(entry), readSmallFile("\(proc)/\(entry)/comm", limit: 64)?.trimmingSpaces == command else {
                continue
            }
            switch readLink("\(proc)/\(entry)/ns/net") {
            case nil: unknownNamespace.append(Holder(pid: pid, command: command))
            case let ns? where ns == ours: sameNamespace.append(Holder(pid: pid, command: command))
            default: break
            }
        }
        return (sameNamespace.isEmpty ? unknownNamespace : sameNamespace).sorted { $0.pid < $1.pid }
    }

    /// "qmi-proxy (pid 4242, uid 0)" for the proxy of our network namespace; without the pid when that cannot be
    /// told (another user may not read root's /proc/PID/ns/net, and every namespace has a proxy of its own).
    static func describeProxy(_ name: String) -> String {
        let candidates = processes(named: name)
        let uids = Set(candidates.compactMap { uid(of: $0.pid) })
        if candidates.count == 1, let p = candidates.first {
            return "\(name) (pid \(p.pid)\(uids.first.map { ", uid \($0)" } ?? ""))"
        }
        return uids.count == 1 ? "\(name) (run by uid \(uids.first!))" : name
    }

    /// The uid of a process (the real uid, /proc/PID/status "Uid:").
    static func uid(of pid: Int32, proc: String = "/proc") -> UInt32? {
        guard let text = readSmallFile("\(proc)/\(pid)/status", limit: 8192) else { return nil }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { UInt32($0) }
    }

    /// "the port is also open in uqmi (pid 4242)".
    static func holdersWords(_ holders: [Holder]) -> String {
        "the port is also open in " + holders.map(\.description).joined(separator: ", ")
    }

    /// When nothing could be named but some processes could not be inspected (for an error whose cause may be one
    /// of them).
    static func hiddenWords(_ hidden: Int) -> String {
        "\(hidden) processes could not be inspected (run as root to name what holds the port)"
    }

    /// procfs through the same small reader as sysfs.
    static let fs = SysFS(root: "/")
    static func list(_ dir: String) -> [String] { fs.list(dir) }
    static func readLink(_ path: String) -> String? { fs.readLink(path) }
    static func readSmallFile(_ path: String, limit: Int) -> String? { fs.read(path, limit: limit) }

    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}

/// Starts qmi-proxy / mbim-proxy the way libqmi/libmbim do on demand (the same binary, no arguments, detached), but
/// with every signal unblocked and at its default action. Started by libqmi itself from our GLib thread, the proxy
/// inherited that thread's signal mask (Swift's worker threads block SIGTERM and SIGINT), so it ignored SIGTERM and
/// outlived every polite attempt to stop it; g_spawn_async offers no hook to reset the mask.
enum ProxyLauncher {
    /// Starts the proxy unless one listens already, and waits (suspending) until it does. Nil when it listens; else
    /// why not.
    static func ensure(_ name: String, wait: Duration = .milliseconds(2000)) async -> String? {
        if ProcFacts.listening(name) { return nil }
        guard let binary = ProcFacts.proxyPath(name) else { return "\(name) is not installed" }
        // Marked with the reach process it belongs to (a worker's parent), so that reach knows it as its own later,
        // after the worker that started it has ended and it was reparented (ProxyWatch.startedByReach).
        let owner = PortHolders.scanHere ? getpid() : getppid()
        let mark = ProxyWatch.markVariable + "="
        let environment = ["\(mark)\(owner)"] + Spawn.currentEnvironment().filter { !$0.hasPrefix(mark) }
        // Its own session, as a daemon, with the standard descriptors on /dev/null.
        let pid: pid_t
        switch Spawn.posix_spawn(
            binary, argv: [binary], environment: environment, actions: [.null(0), .null(1), .null(2)],
            flags: [.cleanSignals, .newSession])
        {
        case let .success(p): pid = p
        case let .failure(e): return "\(name) could not be started: \(e.reason)"
        }
        reapLater(pid)
        let deadline = ContinuousClock.now + wait
        while ContinuousClock.now < deadline {
            if ProcFacts.listening(name) { return nil }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return "cancelled while \(name) started" }
        }
        return "\(name) (pid \(pid)) did not start listening within \(wait.milliseconds) ms"
    }

    /// Reaps the proxy when it exits (on the event loop), so that it never stays a zombie of a long-running agent.
    private static func reapLater(_ pid: pid_t) {
        EventLoop.shared.reapWhenExited(pid)
    }
}

/// Who else holds a modem port, named in the modem's state: a direct opener beside anything, or another direct opener
/// beside the proxy, loses replies (a cdc-wdm node hands each read to whichever reader comes first). Read from
/// /proc/*/fd, which only a process with the capabilities of the holders can read: a modem worker, which drops every
/// capability, leaves it to its parent (`scanHere` false), which notes it on the states the worker sends.
public enum PortHolders {
    /// False in a modem worker process (set once at its start, before anything reads it).
    nonisolated(unsafe) static var scanHere = true

    static func proxyName(_ p: ModemProtocol) -> String { p == .qmi ? "qmi-proxy" : "mbim-proxy" }

    /// Adds to `accessReason` who else holds the port, once the port was opened (`access` set), unless said already.
    static func noteInAccess(_ state: inout ModemState, path: String, protocol p: ModemProtocol) {
        guard scanHere, let access = state.access, state.sharedWith.isEmpty else { return }
        let proxy = access == .proxy
        let others = ProcFacts.holders(of: path).holders.filter { !proxy || $0.command != proxyName(p) }
        guard !others.isEmpty else { return }
        state.sharedWith = others.map(\.description)
        let note = ProcFacts.holdersWords(others) + (proxy
            ? ": a direct opener and the proxy lose each other's replies"
            : ": opening it directly beside another reader loses replies on both sides (modems.access auto)")
        state.accessReason = [state.accessReason, note].compactMap { $0 }.joined(separator: "; ")
    }

    /// Adds to the failure of a port that did not answer or could not be read what else holds it, which then is the
    /// likely cause (`portHeld`). Not for a proxy that refused us or went silent (the cause already), nor for a port
    /// that is gone. A proxy reach started is reach's own way to the port, not another holder.
    static func noteInError(_ state: inout ModemState, path: String) {
        guard scanHere, state.present, let error = state.error, let fault = state.fault,
            fault.kind == .notAnswering || fault.kind == .failed
        else { return }
        let (all, hidden) = ProcFacts.holders(of: path)
        let others = all.filter { !(($0.command == "qmi-proxy" || $0.command == "mbim-proxy") && ProxyWatch.launchedByReach($0.pid)) }
        if !others.isEmpty {
            state.fail(
                error + "; " + ProcFacts.holdersWords(others),
                ModemFault(.portHeld, waitedMs: fault.waitedMs, holders: others.map(\.description)))
        } else if hidden > 0 && geteuid() != 0 {
            state.error = error + "; " + ProcFacts.hiddenWords(hidden)
        }
    }
}
