// The data session a WWAN link's packets depend on, as an observer reads it, and the pure rules over the readings.
//
// An observer sees a session someone else started (ModemManager, netifd's qmi.sh, uqmi). On QMI the session belongs
// to the modem's data channel: a WDS client sees it only when it is bound to that channel's mux id and asked for its
// IP family (Qualcomm's WDS header; ModemManager's mm-bearer-qmi.c keeps one client per family). So each reading
// names the channel and the client it came from, and a doubt is `unknown`, never "down". On MBIM the Connect query
// is device-global per session id (MBIM 1.0 §10.5.12).

/// What a data session is doing, in the vocabulary of `wwan[].data_session`.
public enum DataSessionState: String, Sendable, CaseIterable, Comparable, Codable {
    case connected, disconnected, connecting, disconnecting
    /// We asked and got no usable answer (an error, a timeout, a refusal, an unbindable channel).
    case unknown

    public static func < (a: DataSessionState, b: DataSessionState) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// QmiWdsConnectionStatus (WDS Get Packet Service Status 0x0022, TLV 0x01): DISCONNECTED 1, CONNECTED 2,
    /// SUSPENDED 3, AUTHENTICATING 4. Suspended is a session that stands while data is held (a circuit-switched call
    /// on a network without DTM): ModemManager's bearer acts only on DISCONNECTED, so it counts as connected here.
    /// Authenticating is a session being set up. Anything else (0, a value from a newer firmware) is unknown.
    public init(qmiConnectionStatus raw: Int) {
        switch raw {
        case 1: self = .disconnected
        case 2, 3: self = .connected
        case 4: self = .connecting
        default: self = .unknown
        }
    }

    /// MBIM_ACTIVATION_STATE (Basic Connect Connect, CID 12): UNKNOWN 0, ACTIVATED 1, ACTIVATING 2, DEACTIVATED 3,
    /// DEACTIVATING 4. UNKNOWN is what a Huawei ME936 reports before its first activation: it says nothing.
    public init(mbimActivationState raw: UInt32) {
        switch raw {
        case 1: self = .connected
        case 2: self = .connecting
        case 3: self = .disconnected
        case 4: self = .disconnecting
        default: self = .unknown
        }
    }

    /// The session of one channel from what its observers read: connected when any of them reads connected (one
    /// family is enough to carry packets); disconnected only when every one reads disconnected; otherwise unknown if
    /// any could not be read, else connecting, else disconnecting. Nil when there is nothing to combine.
    public static func combine<S: Sequence>(_ states: S) -> DataSessionState? where S.Element == DataSessionState {
        let all = Array(states)
        guard !all.isEmpty else { return nil }
        if all.contains(.connected) { return .connected }
        if all.allSatisfy({ $0 == .disconnected }) { return .disconnected }
        for s in [DataSessionState.unknown, .connecting, .disconnecting] where all.contains(s) { return s }
        return .unknown
    }
}

/// What one observer read: a QMI WDS client of one IP family, or an MBIM Connect query.
public struct DataClientReading: Sendable, Equatable, Codable {
    /// The IP family the QMI client asked for (Set IP Family); nil for MBIM, whose query covers the session.
    public var family: AddressFamily?
    public var state: DataSessionState
    /// Why the state is unknown: the request that failed and how.
    public var error: String?
    /// False for a client that cannot observe at all because the modem refused what makes it one (QMI Set IP Family
    /// for IPv6: a WDS client's family is IPv4 until it is set, so firmware that refuses the request has no other
    /// family to show). Such a reading is shown, but it is not one of the observers the channel's session is
    /// combined from.
    public var observing: Bool

    public init(family: AddressFamily? = nil, state: DataSessionState, error: String? = nil, observing: Bool = true) {
        self.family = family
        self.state = state
        self.error = error
        self.observing = observing
    }
}

/// One data channel of a modem and what its observers read: the channel a watched network interface carries
/// (QMI: the QMAP mux id, none on a link without multiplexing; MBIM: the session id).
public struct DataChannel: Sendable, Equatable, Codable {
    /// The network interface whose packets go through this channel, when known.
    public var interface: String?
    /// QMI: the QMAP mux id the observers bound to (Bind Mux Data Port); nil on a link without multiplexing.
    public var muxID: Int?
    /// MBIM: the session id asked about.
    public var sessionID: Int?
    public var clients: [DataClientReading]
    /// Why the channel could not be observed at all (a multiplexed link whose mux id is unknown, a failed bind).
    public var error: String?

    public init(
        interface: String? = nil, muxID: Int? = nil, sessionID: Int? = nil, clients: [DataClientReading] = [],
        error: String? = nil
    ) {
        self.interface = interface
        self.muxID = muxID
        self.sessionID = sessionID
        self.clients = clients
        self.error = error
    }

    /// The channel's session: the observers' readings combined (clients that cannot observe left out); unknown when
    /// the channel could not be observed.
    public var state: DataSessionState {
        if error != nil { return .unknown }
        return DataSessionState.combine(clients.filter(\.observing).map(\.state)) ?? .unknown
    }

    /// Why the channel reads unknown, for people: the channel's own error, else each observer's.
    public var unknownDetail: String? {
        if let error { return error }
        let failures = clients.filter { $0.state == .unknown }.map { c in
            (c.family.map { "\($0.rawValue) client" } ?? "query") + ": " + (c.error ?? "no usable answer")
        }
        return failures.isEmpty ? nil : failures.joined(separator: "; ")
    }

    /// "mux 1", "session 0", or "default channel".
    public var label: String {
        if let muxID { return "mux \(muxID)" }
        if let sessionID { return "session \(sessionID)" }
        return "default channel"
    }
}

/// How a modem's control port is opened (`modems.access`, `--modem-access`).
public enum ModemAccess: String, Sendable, Equatable, CaseIterable, Codable {
    /// Through qmi-proxy / mbim-proxy as ModemManager does (libqmi/libmbim start the proxy on demand); directly
    /// only when no proxy can be started.
    case auto
    /// Always through the proxy; fail rather than open the port directly.
    case proxy
    /// Always directly (exclusive): for boxes where nothing else talks to the modem.
    case direct
}

/// How a modem's control port was actually opened.
public enum ModemAccessPath: String, Sendable, Equatable, Codable {
    case proxy, direct
}
