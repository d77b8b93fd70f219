// `reach status` and `reach diag` beside a running agent: the agent is the one program that opens the modems, so
// the command asks it for its readings over the Varlink socket (GetStatus) and opens no modem and no nl80211 socket
// of its own. It still resolves its own target's route (the agent may watch other targets, and a route is one
// netlink request). A dead agent, a stale state (older than twice the agent's refresh interval, which is at most its
// poll interval), an agent in another network namespace, or `--direct` make it read everything itself, and the
// output says which.

import GatewayReach
import Glibc
import ReachCore

/// Where the modem and WiFi readings of an answer came from.
public struct Readings: Error, Sendable, Equatable {
    public enum Origin: String, Sendable { case agent, direct }

    public var origin: Origin
    /// Why direct (`--direct`, no agent, a stale one, …), or the agent's socket and pid.
    public var detail: String
    /// The age of the agent's state when it was taken.
    public var ageSeconds: Double?
    /// Why an agent that runs was not used, when that is a problem of the agent's (diag warns of it): decided where
    /// the Varlink error name or the state's age is known, not read back from `detail`.
    public var trouble: AgentTrouble?

    public enum AgentTrouble: Sendable, Equatable {
        /// It refused the connection (org.gatewayreach.Reach.TooManyClients).
        case tooManyClients
        /// Its state is older than twice its refresh interval.
        case stale
    }

    public init(origin: Origin, detail: String, ageSeconds: Double? = nil, trouble: AgentTrouble? = nil) {
        self.origin = origin
        self.detail = detail
        self.ageSeconds = ageSeconds
        self.trouble = trouble
    }

    public var json: JSON {
        var m: [(String, JSON)] = [("from", .string(origin.rawValue)), ("detail", .string(detail))]
        if let ageSeconds { m.append(("age_seconds", .double((ageSeconds * 10).rounded() / 10))) }
        return .object(m)
    }

    /// "readings: from the running agent (pid 812, state 0.4 s old)" / "readings: direct (no agent answers …)".
    public var text: String {
        origin == .agent ? "readings: from the running agent (\(detail))" : "readings: read directly (\(detail))"
    }
}

public enum AgentClient {
    /// Why GetStatus gave no state.
    public enum Failure: Error, Sendable, Equatable {
        /// The socket could not be reached, or the agent did not answer with a Varlink message.
        case system(SystemError)
        /// The agent answered with a Varlink error: its name (without the interface) and, for TooManyClients, the
        /// uid it judged the connection by.
        case varlink(error: String, uid: Int64?)

        public var reason: String {
            switch self {
            case let .system(e): return e.reason
            case let .varlink(error, uid?): return "\(error) for uid \(uid)"
            case let .varlink(error, nil): return error
            }
        }
    }

    /// Calls org.gatewayreach.Reach.GetStatus on the agent's socket; the state object, or why not. Bounded: the
    /// connect, the request and the reply each wait at most `timeoutMS`, and the reply at most 16 MiB.
    public static func getStatus(socketPath: String, timeoutMS: Int32 = 1000) -> Result<JSON, Failure> {
        getStatusMessage(socketPath: socketPath, timeoutMS: timeoutMS).mapError(Failure.system).flatMap { json in
            if let error = json["error"]?.stringValue {
                let name = error.hasPrefix(VarlinkServer.interfaceName + ".")
                    ? String(error.dropFirst(VarlinkServer.interfaceName.count + 1)) : error
                return .failure(.varlink(error: name, uid: json["parameters"]?["uid"]?.intValue))
            }
            guard let status = json["parameters"]?["status"], status.objectValue != nil else {
                return .failure(.system(SystemError(
                    "GetStatus", errno: EPROTO, path: socketPath, detail: "the reply has no status object")))
            }
            return .success(status)
        }
    }

    /// The agent's first message on a GetStatus call: a reply or an error.
    static func getStatusMessage(socketPath: String, timeoutMS: Int32) -> Result<JSON, SystemError> {
        let fd: Int32
        switch Sys.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), nonBlocking: true, path: socketPath) {
        case let .success(s): fd = s
        case let .failure(e): return .failure(e)
        }
        defer { Sys.close(fd) }
        switch ListeningSocket.withAddress(socketPath, { Sys.connect(fd, $0, $1, path: socketPath) }) {
        case .success: break
        case let .failure(e) where e.errno == EINPROGRESS || e.errno == EAGAIN:
            guard case let .success(ready) = Sys.poll(fd, Int16(POLLOUT), timeoutMs: timeoutMS), ready != 0 else {
                return .failure(SystemError("connect", errno: ETIMEDOUT, path: socketPath, detail: "the agent did not accept within \(timeoutMS) ms"))
            }
        case let .failure(e): return .failure(e)
        }
        let request = Array(#"{"method":"org.gatewayreach.Reach.GetStatus","parameters":{}}"#.utf8) + [0]
        var sent = 0
        sending: while sent < request.count {
            switch request[sent...].withUnsafeBytes({ Sys.send(fd, $0, path: socketPath) }) {
            case let .success(n) where n > 0: sent += n; continue
            // An agent that refused the connection has sent its error and closed before the call arrived: the error
            // is still to be read.
            case let .failure(e) where e.errno == EPIPE || e.errno == ECONNRESET: break sending
            case let .failure(e) where e.errno != EAGAIN: return .failure(e)
            case .success: return .failure(SystemError("send", errno: EIO, path: socketPath, detail: "the socket took no bytes"))
            case .failure: break  // EAGAIN: wait until it takes more
            }
            guard case let .success(ready) = Sys.poll(fd, Int16(POLLOUT), timeoutMs: timeoutMS), ready != 0 else {
                return .failure(SystemError("send", errno: ETIMEDOUT, path: socketPath))
            }
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let limit = 16 << 20
        while !reply.contains(0) {
            guard case let .success(ready) = Sys.poll(fd, Int16(POLLIN), timeoutMs: timeoutMS), ready != 0 else {
                return .failure(SystemError("recv", errno: ETIMEDOUT, path: socketPath, detail: "the agent did not answer within \(timeoutMS) ms"))
            }
            let n: Int
            switch buffer.withUnsafeMutableBytes({ Sys.recv(fd, into: $0, path: socketPath) }) {
            case let .success(count): n = count
            case let .failure(e) where e.errno == EAGAIN: continue
            case let .failure(e): return .failure(e)
            }
            if n == 0 { return .failure(SystemError("recv", errno: ECONNRESET, path: socketPath, detail: "the agent closed the connection")) }
            reply += buffer[0..<n]
            if reply.count > limit { return .failure(SystemError("recv", errno: EFBIG, path: socketPath, detail: "a reply over 16 MiB")) }
        }
        let message = reply.prefix { $0 != 0 }
        guard let json = try? JSON.parse(bytes: Array(message)), json.objectValue != nil else {
            return .failure(SystemError("recv", errno: EPROTO, path: socketPath, detail: "the reply is not a JSON object"))
        }
        return .success(json)
    }

    /// The agent's modem and WiFi readings, if they may be used: the agent runs in this network namespace and its
    /// state is fresh. Otherwise why not.
    public struct Usable: Sendable {
        public var state: JSON
        /// nil for a source the agent does not read (turned off in its configuration): that one is read here.
        public var wwan: (SourceHealth, [ModemState])?
        public var wifi: (SourceHealth, [WiFiLink])?
        public var readings: Readings
    }

    public static func usable(socketPath: String, now: Timestamp = .now(), timeoutMS: Int32 = 1000) -> Result<Usable, Readings> {
        func direct(_ why: String, _ trouble: Readings.AgentTrouble? = nil) -> Result<Usable, Readings> {
            .failure(Readings(origin: .direct, detail: why, trouble: trouble))
        }
        let state: JSON
        switch getStatus(socketPath: socketPath, timeoutMS: timeoutMS) {
        case let .success(s): state = s
        case let .failure(.system(e)) where e.errno == ENOENT || e.errno == ECONNREFUSED:
            return direct("no agent answers on \(socketPath): \(e.reason)")
        case let .failure(.varlink(error, uid)) where error == "TooManyClients":
            // docs/integration.md ("Varlink"): who may hold how many connections.
            return direct("the agent refused: " + Failure.varlink(error: error, uid: uid).reason, .tooManyClients)
        case let .failure(.varlink(error, _)):
            return direct("the agent on \(socketPath) could not be asked: the agent answered \(error)")
        case let .failure(e):
            return direct("the agent on \(socketPath) could not be asked: \(e.reason)")
        }
        let agent = state["agent"]
        let pid = agent?["pid"]?.intValue.map { String($0) } ?? "?"
        let mine = AgentIdentity.currentNetworkNamespace()
        if let theirs = agent?["network_namespace"]?.stringValue, theirs != mine {
            return direct("the agent (pid \(pid)) runs in another network namespace (\(theirs), this is \(mine))")
        }
        guard let time = state["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
              let refresh = agent?["refresh_seconds"]?.doubleValue,
              let target = state["targets"]?.arrayValue?.first
        else {
            return direct("the agent's state lacks time, refresh_seconds or a target")
        }
        let age = time.seconds(until: now)
        if age > 2 * refresh {
            return direct("the agent's state is stale: \(format(age)) s old, more than twice its \(format(refresh)) s refresh interval", .stale)
        }
        func sourceAge(_ name: String) -> Double {
            (state["sources"]?[name]?["updated"]?.stringValue.flatMap(Timestamp.init(rfc3339:))).map { $0.seconds(until: now) } ?? age
        }
        func health(_ name: String, _ age: Double) -> SourceHealth {
            let theirs = target["sources"]?[name].flatMap(SourceHealth.init(json:)) ?? SourceHealth(available: false)
            let from = "from the running agent (age \(Int(max(0, age).rounded())) s)"
            return SourceHealth(available: theirs.available, reason: theirs.reason.map { "\(from): \($0)" } ?? from)
        }
        /// What the agent says of a source its configuration turns off (`SourceHealth.disabled`; agents before the
        /// monitoring moved into GatewayReach said "disabled in the configuration").
        func watched(_ name: String) -> Bool {
            let reason = target["sources"]?[name]?["reason"]?.stringValue
            return reason != SourceHealth.disabled.reason && reason != "disabled in the configuration"
        }
        guard watched("wwan") || watched("wifi") else {
            return direct("the agent (pid \(pid)) reads no modem and no WiFi")
        }
        let modems = (target["wwan"]?.arrayValue ?? []).compactMap(ModemState.init(json:))
        let links = (target["wifi"]?.arrayValue ?? []).compactMap(WiFiLink.init(json:))
        return .success(Usable(
            state: state,
            wwan: watched("wwan") ? (health("wwan", sourceAge("wwan")), modems) : nil,
            wifi: watched("wifi") ? (health("wifi", sourceAge("wifi")), links) : nil,
            readings: Readings(origin: .agent, detail: "pid \(pid) on \(socketPath), state \(format(age)) s old", ageSeconds: age)))
    }

    static func format(_ d: Double) -> String {
        let r = (d * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(r)
    }

    /// `GatewayReach.status` with the agent's readings when they are usable: the route is resolved here, modems and
    /// WiFi come from the agent (no modem is opened). Falls back to reading everything.
    public static func status(_ request: StatusRequest, socketPath: String?, direct reason: String?) async
        -> (Snapshot, Readings, JSON?)
    {
        if reason == nil, let socketPath {
            switch usable(socketPath: socketPath) {
            case let .success(u):
                // A source the agent does not read is read here (its own modems or WiFi are then opened).
                var local = request
                local.readModems = request.readModems && u.wwan == nil
                local.readWiFi = request.readWiFi && u.wifi == nil
                var snapshot = await GatewayReach.status(local)
                if request.readModems, let wwan = u.wwan { (snapshot.wwanSource, snapshot.wwan) = wwan }
                if request.readWiFi, let wifi = u.wifi { (snapshot.wifiSource, snapshot.wifi) = wifi }
                snapshot.derive()
                var readings = u.readings
                if local.readModems { readings.detail += "; modems read here: the agent reads none" }
                if local.readWiFi { readings.detail += "; WiFi read here: the agent reads none" }
                return (snapshot, readings, u.state)
            case let .failure(readings):
                return (await GatewayReach.status(request), readings, nil)
            }
        }
        return (await GatewayReach.status(request), Readings(origin: .direct, detail: reason ?? "no state directory configured"), nil)
    }
}
