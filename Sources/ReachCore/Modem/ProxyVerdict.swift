// What to do about a qmi-proxy / mbim-proxy that let a proxied open time out. The facts come from /proc and the
// kernel's unix socket table (ReachModem's ProxyWatch); the decision is here, apart from the I/O, so that it can be
// checked as a table.
//
// A proxy that is merely waiting for a silent modem is healthy: libmbim's mbim-proxy.c and libqmi's qmi-proxy.c
// read a client's request as soon as it arrives (each client socket is a GLib source on the proxy's main loop) and
// hold the answer until the device answers. So a proxy is taken as wedged only when its own state says so: a
// request still unread in its socket (or a connection it never accepted), or its CPU busy while nothing answers.

/// What is known of the proxy at the moment a proxied open timed out.
public struct ProxyFacts: Sendable, Equatable {
    /// The process holding the listening socket; nil when none could be found (gone, or another user's).
    public var pid: Int32?
    /// Whether reach started it (its launcher's mark, or its parent is this process or one of its modem workers).
    public var startedByReach: Bool
    /// Processes other than this one and its workers connected to it (pids).
    public var otherClients: [Int32]
    /// Connections to it whose client process could not be named (another user's, or one between two states).
    public var unnamedClients: Int
    /// Bytes or connections waiting in its sockets that it never read: it is not serving its main loop.
    public var unread: Bool
    /// Its share of one CPU over a short sample (0...1, more on several threads); nil when not measured.
    public var cpuShare: Double?

    public init(
        pid: Int32?, startedByReach: Bool, otherClients: [Int32] = [], unnamedClients: Int = 0, unread: Bool,
        cpuShare: Double? = nil
    ) {
        self.pid = pid
        self.startedByReach = startedByReach
        self.otherClients = otherClients
        self.unnamedClients = unnamedClients
        self.unread = unread
        self.cpuShare = cpuShare
    }
}

public enum ProxyVerdict: Sendable, Equatable {
    /// No proxy process could be found: nothing to name or end.
    case unknown
    /// The proxy reads its clients: the silence is the modem's (or a request it is still working on). Named only.
    case reading
    /// Wedged, but someone else's (ModemManager's, another reach's) or not ours to judge: named, left running.
    case wedgedNotOurs
    /// Wedged and in use by another program: named, left running.
    case wedgedInUse
    /// Wedged, started by reach, nobody else connected: end it and start it again.
    case restart

    /// A CPU share at or above this, with nothing answered, counts as spinning (the wedge seen in issue 25 used
    /// 30-90 % of a core; an idle proxy waiting for a modem uses none).
    public static let busyShare = 0.2

    public static func decide(_ f: ProxyFacts) -> ProxyVerdict {
        guard f.pid != nil else { return .unknown }
        guard f.unread || (f.cpuShare ?? 0) >= busyShare else { return .reading }
        guard f.startedByReach else { return .wedgedNotOurs }
        guard f.otherClients.isEmpty && f.unnamedClients == 0 else { return .wedgedInUse }
        return .restart
    }

    /// Why it was left running, for the error; nil for `restart` and `unknown`.
    public func leftAlone(_ f: ProxyFacts) -> String? {
        switch self {
        case .unknown, .restart: return nil
        case .reading: return "it reads its clients, so the silence may be the modem's"
        case .wedgedNotOurs: return "it is not one reach started: left running"
        case .wedgedInUse:
            var users = f.otherClients.map { "pid \($0)" }
            if f.unnamedClients > 0 { users.append("\(f.unnamedClients) connections of unknown processes") }
            return "it also serves " + users.joined(separator: ", ") + ": left running"
        }
    }
}

/// "41 s of CPU" with one decimal below 10 s.
public func cpuTimeText(_ seconds: Double) -> String {
    if seconds < 10 {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s of CPU"
    }
    return "\(Int(seconds.rounded())) s of CPU"
}
