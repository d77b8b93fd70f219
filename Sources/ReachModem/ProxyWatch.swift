// A qmi-proxy / mbim-proxy that accepted our connection but did not answer (issue 25): named with its pid and CPU
// time, and, when reach started it and nothing else is connected to it, ended and started again.
//
// Who is connected to a proxy cannot be read from /proc/net/unix alone: proc(5) lists each unix socket with its
// name, state and inode, but not its peer, and the proxy's accepted sockets carry the listener's name whichever
// client they lead to. The kernel's socket-diagnostics netlink interface (sock_diag(7), UNIX_DIAG_PEER and
// UNIX_DIAG_RQLEN, which `ss -xp` uses) gives each socket's peer inode and unread bytes; the processes behind those
// inodes are found in /proc/PID/fd ("socket:[INODE]", proc(5)) by the scan `ProcFacts` already does for port holders.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CGLibShims
import ReachCore
import ReachGLib
import ReachSystem
import Synchronization

/// A proxied open that got no answer in time: which proxy, and how long was waited. Sent by a modem worker to its
/// parent, which alone may look into other processes.
public struct ProxySilence: Sendable, Equatable, Codable {
    public var name: String
    public var waitedMs: Int

    /// "mbim-proxy accepted the connection but did not answer within 5000 ms", the pid named by `subject`.
    func text(subject: String) -> String { "\(subject) accepted the connection but did not answer within \(waitedMs) ms" }
    var fault: ModemFault { ModemFault(.proxySilent, waitedMs: waitedMs) }
}

/// The kernel's table of this network namespace's unix sockets, through sock_diag(7).
enum UnixSocketTable {
    struct Entry: Sendable, Equatable {
        var inode: UInt32
        var listening: Bool
        /// The bound name; abstract names start with "@", as in /proc/net/unix.
        var name: String?
        /// The inode of the connected peer; 0 once the peer closed (it has no inode left).
        var peer: UInt32?
        /// Both directions shut down (sk_shutdown == SHUTDOWN_MASK): what a stream socket's peer leaves when it closes.
        var peerGone = false
        /// Unread bytes (a listener: connections not yet accepted).
        var unread: UInt32?
        /// A listener's connections not yet accepted: their clients' inodes (0 for one that closed).
        var waiting: [UInt32] = []
    }

    // linux/netlink.h, linux/sock_diag.h, linux/unix_diag.h
    private static let netlinkSockDiag: Int32 = 4
    private static let sockDiagByFamily: UInt16 = 20
    private static let showName: UInt32 = 0x01, showPeer: UInt32 = 0x04, showIcons: UInt32 = 0x08, showRQLen: UInt32 = 0x10
    private static let attrName: UInt16 = 0, attrPeer: UInt16 = 2, attrIcons: UInt16 = 3, attrRQLen: UInt16 = 4
    private static let attrShutdown: UInt16 = 6
    private static let tcpListen: UInt8 = 10

    /// Every unix socket of our namespace; nil when the table cannot be read (no unix_diag in the kernel).
    static func dump() -> [Entry]? {
        guard case let .success(fd) = Sys.socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue), netlinkSockDiag) else { return nil }
        defer { Sys.close(fd) }
        _ = Sys.setReceiveTimeout(fd, .seconds(2), path: nil)
        var request: [UInt8] = []
        func put32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { request += $0 } }
        func put16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { request += $0 } }
        put32(40); put16(sockDiagByFamily); put16(0x0001 | 0x0300); put32(1); put32(0)  // nlmsghdr: REQUEST | DUMP
        request += [UInt8(AF_UNIX), 0, 0, 0]  // unix_diag_req: family, protocol, pad
        put32(0xffff_ffff); put32(0); put32(showName | showPeer | showIcons | showRQLen); put32(0); put32(0)
        guard case .success = Sys.sendAll(fd, request, path: nil) else { return nil }
        var entries: [Entry] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            guard case let .success(n) = buffer.withUnsafeMutableBytes({ Sys.recv(fd, into: $0, path: nil) }), n > 0 else {
                return nil
            }
            var offset = 0
            while offset + 16 <= n {
                let length = Int(u32(buffer, offset))
                let type = u16(buffer, offset + 4)
                guard length >= 16, offset + length <= n else { return nil }
                if type == 3 { return entries }  // NLMSG_DONE
                if type == 2 { return nil }  // NLMSG_ERROR
                if type == sockDiagByFamily, length >= 32 {
                    entries.append(entry(buffer, from: offset + 16, to: offset + length))
                }
                offset += (length + 3) & ~3
            }
        }
    }

    /// One unix_diag_msg (family, type, state, pad, inode, cookie[2]) and its attributes.
    private static func entry(_ b: [UInt8], from start: Int, to end: Int) -> Entry {
        var e = Entry(inode: u32(b, start + 4), listening: b[start + 2] == tcpListen)
        var at = start + 16
        while at + 4 <= end {
            let length = Int(u16(b, at))
            let type = u16(b, at + 2)
            guard length >= 4, at + length <= end else { break }
            let data = Array(b[(at + 4)..<(at + length)])
            switch type {
            case attrName where !data.isEmpty:
                // An abstract name starts with a NUL byte (unix(7)); shown with "@" as /proc/net/unix does.
                e.name = data[0] == 0
                    ? "@" + String(decoding: data.dropFirst(), as: UTF8.self)
                    : String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
            case attrPeer where data.count >= 4: e.peer = u32(data, 0)
            case attrRQLen where data.count >= 4: e.unread = u32(data, 0)
            case attrIcons: e.waiting = stride(from: 0, to: data.count - 3, by: 4).map { u32(data, $0) }
            case attrShutdown where data.count >= 1: e.peerGone = data[0] & 3 == 3
            default: break
            }
            at += (length + 3) & ~3
        }
        return e
    }

    private static func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
    private static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
}

enum ProxyWatch {
    /// The environment variable the launcher marks the proxies it starts with: the pid of the reach process they
    /// belong to (the agent, also when a modem worker of it started the proxy).
    static let markVariable = "REACH_PROXY_FOR"

    /// Set in a modem worker: passes a silence to the parent (the worker may not look into other processes).
    nonisolated(unsafe) static var reportToParent: (@Sendable (ProxySilence) -> Void)? = nil

    /// How long a proxy is given to end on SIGTERM before SIGKILL, and after SIGKILL.
    static let termGrace: Duration = .milliseconds(1000)
    static let killGrace: Duration = .milliseconds(1000)
    /// How long its CPU use is sampled.
    static let cpuSample: Duration = .milliseconds(300)

    /// Whether an error of a proxied open means "no answer in time" (our deadline or the library's own).
    static func isTimeout(_ error: Error) -> Bool {
        guard let e = error as? GLibError else { return false }
        if e.kind == .timedOut { return true }
        return e.matches(mbim_core_error_quark, Int32(MBIM_CORE_ERROR_TIMEOUT.rawValue))
            || e.matches(qmi_core_error_quark, Int32(QMI_CORE_ERROR_TIMEOUT.rawValue))
            || e.matches(g_io_error_quark, Int32(G_IO_ERROR_TIMED_OUT.rawValue))
    }

    /// What was found and done.
    struct Outcome: Sendable, Equatable {
        var verdict: ProxyVerdict
        /// The error text: the proxy named, and what was done or why it was left running.
        var note: String
        /// The proxy was ended and a new one listens.
        var restarted: Bool

        /// The case of the failure this outcome explains: a proxy that reads its clients (or none that could be
        /// found) leaves the silence to the modem; a wedged one is the proxy's.
        func fault(after silence: ProxySilence) -> ModemFault {
            switch verdict {
            case .reading, .unknown: return ModemFault(.notAnswering, waitedMs: silence.waitedMs)
            case .wedgedNotOurs, .wedgedInUse, .restart: return silence.fault
            }
        }
    }

    /// The answer under way per proxy name: modems read at once through one wedged proxy (several workers, or
    /// several channels in one process) share one look and one restart, and each retries its open after it.
    private static let underWay = Mutex<[String: Task<Outcome, Never>]>([:])

    /// Looks at the proxy behind a silence and acts on the verdict, or joins the answer already under way for it.
    /// Only where /proc of other processes can be read (not in a modem worker).
    static func answer(_ silence: ProxySilence) async -> Outcome {
        let task = underWay.withLock { running in
            if let t = running[silence.name] { return t }
            let t = Task { await answerNow(silence) }
            running[silence.name] = t
            return t
        }
        let outcome = await task.value
        underWay.withLock { running in
            if running[silence.name] == task { running[silence.name] = nil }
        }
        return outcome
    }

    private static func answerNow(_ silence: ProxySilence) async -> Outcome {
        let inspected = await inspect(silence.name)
        let facts = inspected.facts
        let verdict = ProxyVerdict.decide(facts)
        var subject = silence.name
        if let pid = facts.pid {
            subject += " (pid \(pid)" + (inspected.cpuSeconds.map { ", " + cpuTimeText($0) } ?? "") + ")"
        }
        var note = silence.text(subject: subject)
        if let why = verdict.leftAlone(facts) { note += "; " + why }
        guard verdict == .restart, let pid = facts.pid else { return Outcome(verdict: verdict, note: note, restarted: false) }
        let how = await end(pid)
        if let failed = how.failed { return Outcome(verdict: verdict, note: note + "; " + failed, restarted: false) }
        if let why = await ProxyLauncher.ensure(silence.name) {
            return Outcome(verdict: verdict, note: note + "; reach ended it (\(how.text)) but " + why, restarted: false)
        }
        let new = listenerPid(silence.name).map { " (pid \($0))" } ?? ""
        return Outcome(verdict: verdict, note: note + "; reach ended it (\(how.text)) and started it again\(new)", restarted: true)
    }

    /// The facts `ProxyVerdict` decides on, and the proxy's CPU time so far.
    static func inspect(_ name: String) async -> (facts: ProxyFacts, cpuSeconds: Double?) {
        let abstract = "@" + name
        let none = (ProxyFacts(pid: nil, startedByReach: false, unread: false), nil as Double?)
        guard let first = UnixSocketTable.dump()?.first(where: { $0.listening && $0.name == abstract }),
            let pid = ProcFacts.holders(ofAny: ["socket:[\(first.inode)]"]).found.first?.holder.pid
        else { return none }
        // Its CPU over a short sample. Meanwhile the connections we just gave up on finish closing: libmbim/libqmi
        // close them on their GLib loop after our deadline, not at once.
        let before = cpuSeconds(pid)
        try? await Task.sleep(for: cpuSample)
        let after = cpuSeconds(pid)
        let share = before.flatMap { b in after.map { a in (a - b) / cpuSample.seconds } }
        guard let table = UnixSocketTable.dump() else { return none }
        let listener = table.first { $0.listening && $0.name == abstract }
        let served = table.filter { !$0.listening && $0.name == abstract }
        let peers = connectedPeers(table, abstract)
        let (found, _) = ProcFacts.holders(ofAny: peers)
        var named = Set<String>()
        var others: [Int32] = []
        for (holder, held) in found where holder.pid != pid {
            named.formUnion(held)
            others.append(holder.pid)
        }
        // Sockets of this process and its workers are ours: `holders` leaves them out, so count them as named.
        named.formUnion(ownSockets(among: peers))
        // A peer nobody was found holding may have closed since the table was read: only one still connected in a
        // new reading counts as another program's.
        var unnamed = peers.subtracting(named)
        if !unnamed.isEmpty, let again = UnixSocketTable.dump() {
            unnamed.formIntersection(connectedPeers(again, abstract))
        }
        let unread = (listener?.unread ?? 0) > 0 || served.contains { ($0.unread ?? 0) > 0 }
        let facts = ProxyFacts(
            pid: pid, startedByReach: startedByReach(pid), otherClients: others.sorted(), unnamedClients: unnamed.count,
            unread: unread, cpuShare: share)
        return (facts, after ?? before)
    }

    /// The clients still connected to the proxy's sockets `name`, accepted or waiting, as /proc/PID/fd shows them
    /// ("socket:[INODE]"). A client that closed leaves no inode (0), and its peer's socket shut down both ways
    /// (unix_release_sock, net/unix/af_unix.c in Linux); either says it is gone.
    private static func connectedPeers(_ table: [UnixSocketTable.Entry], _ name: String) -> Set<String> {
        let mine = table.filter { $0.name == name }
        let accepted = mine.filter { !$0.listening && !$0.peerGone }.compactMap(\.peer)
        let waiting = mine.filter(\.listening).flatMap(\.waiting)
        return Set((accepted + waiting).filter { $0 != 0 }.map { "socket:[\($0)]" })
    }

    /// The targets (socket links) held by this process or its modem workers.
    private static func ownSockets(among targets: Set<String>) -> Set<String> {
        let own = [getpid()] + WorkerProcess.running.withLock { Array($0) }
        var held = Set<String>()
        for pid in own {
            for fd in ProcFacts.list("/proc/\(pid)/fd") {
                if let link = ProcFacts.readLink("/proc/\(pid)/fd/\(fd)"), targets.contains(link) { held.insert(link) }
            }
        }
        return held
    }

    /// The pid holding the listening socket `@name`, if any.
    static func listenerPid(_ name: String) -> Int32? {
        guard let l = UnixSocketTable.dump()?.first(where: { $0.listening && $0.name == "@" + name }) else { return nil }
        let target = "socket:[\(l.inode)]"
        return ProcFacts.holders(ofAny: [target]).found.first?.holder.pid
    }

    /// utime + stime of a process in seconds (proc(5), /proc/PID/stat fields 14 and 15).
    static func cpuSeconds(_ pid: Int32, proc: String = "/proc") -> Double? {
        guard let fields = statFields(pid, proc: proc), fields.count > 12,
            let user = Double(fields[11]), let system = Double(fields[12])
        else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses): state first.
    static func statFields(_ pid: Int32, proc: String = "/proc") -> [Substring]? {
        guard let text = ProcFacts.readSmallFile("\(proc)/\(pid)/stat", limit: 4096),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// Started by reach: the launcher's mark names this process, or its parent is this process or one of its
    /// workers (a proxy libqmi/libmbim started from our thread, or ours before the worker that started it ended).
    static func startedByReach(_ pid: Int32, proc: String = "/proc") -> Bool {
        let me = getpid()
        if let fields = statFields(pid, proc: proc), fields.count > 1, let parent = Int32(fields[1]) {
            if parent == me || WorkerProcess.running.withLock({ $0.contains(parent) }) { return true }
        }
        guard let environ = ProcFacts.readSmallFile("\(proc)/\(pid)/environ", limit: 65536) else { return false }
        return environ.split(separator: "\0").contains { $0 == "\(markVariable)=\(me)" }
    }

    /// A proxy reach's launcher started, in this run or an earlier one (its mark names some reach process): reach's
    /// own way to the port, which a failure never blames as another holder.
    static func launchedByReach(_ pid: Int32, proc: String = "/proc") -> Bool {
        if startedByReach(pid, proc: proc) { return true }
        guard let environ = ProcFacts.readSmallFile("\(proc)/\(pid)/environ", limit: 65536) else { return false }
        return environ.split(separator: "\0").contains { $0.hasPrefix("\(markVariable)=") }
    }

    /// Alive and not a zombie.
    static func alive(_ pid: Int32) -> Bool {
        guard case .success = Sys.kill(pid, 0) else { return false }
        return statFields(pid)?.first.map { $0 != "Z" } ?? false
    }

    /// SIGTERM, then SIGKILL when it has not ended within `termGrace`. `failed` when it would not end at all.
    static func end(_ pid: Int32) async -> (text: String, failed: String?) {
        func gone(within: Duration) async -> Bool {
            let deadline = ContinuousClock.now + within
            while ContinuousClock.now < deadline {
                if !alive(pid) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return !alive(pid)
        }
        if case let .failure(e) = Sys.kill(pid, SIGTERM), e.errno == EPERM {
            return ("", "reach may not signal it (\(e.reason))")
        }
        if await gone(within: termGrace) { return ("SIGTERM", nil) }
        Sys.kill(pid, SIGKILL)
        if await gone(within: killGrace) { return ("SIGKILL: SIGTERM did not end it within \(termGrace.milliseconds) ms", nil) }
        return ("", "it outlived SIGKILL for \(killGrace.milliseconds) ms")
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
