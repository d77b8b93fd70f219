// The agent's Varlink service (https://varlink.org: JSON calls and replies, each ending in a NUL byte, on a Unix
// stream socket), the way systemd-networkd serves io.systemd.Network and systemd-resolved streams changes with a
// method called with "more". Read-only: every answer comes from what the agent already holds (the last state the
// hub published, the change lines as they are written); a client can never make the agent resolve a name, open a
// modem or wait.
//
// No thread of its own: the listening socket and every client are registrations on the process's event loop
// (ReachSystem's EventLoop), and the hub's side posts to it when it leaves something in the mailbox.
// Bounded everywhere: connections as `APIAdmission` admits them, judged by the peer's uid and groups from
// SO_PEERCRED and SO_PEERGROUPS (socket(7)): at most `max_clients` in all and `max_clients_per_uid` per uid but
// root, with slots kept for root and for the group `reach` that no other uid can take (a refused peer gets
// TooManyClients naming its uid, and is closed; the log says so once a minute per uid). At the limit the server
// first reaps the connections whose peer has hung up (POLLHUP, POLLRDHUP, recv() == 0), so a client that closed
// frees its slot before the next one is judged. Requests of at most `maxRequest` bytes, at most `maxPending` bytes
// of replies queued per client (a subscriber that stops reading is dropped when its queue passes that; its kernel
// send buffer is made small too), a connection with nothing to do is closed after `idleSeconds`. Every send is
// non-blocking. Malformed JSON, an unknown interface or method, or a request that is too large gets its Varlink error
// and the connection is closed.

import GatewayReach
import Glibc
import ReachLog
import ReachSystem
import Synchronization

public final class VarlinkServer: Sendable {
    public static let interfaceName = "org.gatewayreach.Reach"

    /// The interface description GetInterfaceDescription returns (varlink's interface definition syntax).
    public static let interfaceDescription = """
        # GatewayReach: can packets leave this gateway, over what, and how good is the link?
        # The running agent's answer, read-only; docs/integration.md ("Other programs") documents the objects.
        interface org.gatewayreach.Reach

        # The agent's whole current answer: the same object as STATE_DIRECTORY/state.json (schema 1): "agent"
        # (pid, start time, last seq, counters), "sources" (when each source was last heard from) and "targets"
        # (one `reach status --json` object per configured target, with its last event).
        method GetStatus() -> (status: object)

        # Called with "more": the current answer at once (as GetStatus returns it), then one reply per change line
        # of the report log, in order, whose status is that line's object (its event.seq numbers it). The stream
        # ends when the agent stops.
        method Subscribe() -> (status: object)

        # This connection was refused: the peer's uid holds its share of the connections (limit is
        # api.max_clients_per_uid), or the free ones are all held or kept for root and the group reach (limit is
        # api.max_clients). uid is the peer's uid as the agent judged it (SO_PEERCRED).
        error TooManyClients (limit: int, uid: int)

        # A request longer than the limit without its terminating NUL byte.
        error RequestTooLarge (limit: int)

        # Not a Varlink call: not JSON, not an object, or no method.
        error InvalidRequest (reason: string)
        """

    static let serviceDescription = """
        # The Varlink service interface (https://varlink.org/Service).
        interface org.varlink.service

        # Information about the service.
        method GetInfo() -> (vendor: string, product: string, version: string, url: string, interfaces: []string)

        # The description of an interface the service implements.
        method GetInterfaceDescription(interface: string) -> (description: string)

        error InterfaceNotFound (interface: string)
        error MethodNotFound (method: string)
        error MethodNotImplemented (method: string)
        error InvalidParameter (parameter: string)
        error PermissionDenied ()
        error ExpectedMore ()
        """

    public struct Limits: Sendable {
        /// Who may connect (`api.max_clients`, `api.max_clients_per_uid`).
        public var admission = APIAdmission()
        /// The group whose members have slots of their own (the gid of `reach`, `groupID(named:)`); nil: none.
        public var group: UInt32?
        public var maxRequest = 64 << 10
        public var maxPending = 64 << 10
        /// The kernel send buffer asked for per client (the kernel doubles it).
        public var sendBuffer: Int32 = 32 << 10
        public var idleSeconds: Int64 = 60
        public init() {}
    }

    public struct Stats: Sendable, Equatable {
        public var clients = 0
        /// Connections with Subscribe running.
        public var subscribers = 0
        public var accepted: UInt64 = 0
        public var refused: UInt64 = 0
        public var dropped: UInt64 = 0
        public var badRequests: UInt64 = 0
        public var replies: UInt64 = 0
        /// How many times the loop called the server (a post, a connection, client traffic, an idle deadline): an
        /// agent without clients calls it only when it posts.
        public var wakeups: UInt64 = 0
        public init() {}
    }

    private struct Mailbox {
        var state: String?
        var lines: [String] = []
        var lostLines: UInt64 = 0
        var stopping = false
        /// A post to the loop is on its way: more mail needs no other.
        var posted = false
    }

    private let socket: ListeningSocket.Bound
    private let limits: Limits
    private let logger: Logger
    private let loop: EventLoop
    private let mailbox = Mutex(Mailbox())
    private let statsBox = Mutex(Stats())
    private let finished = WorkerEnd()
    /// What the loop's thread alone touches.
    private let session: Session

    /// Binds the socket (mode 0666, like networkd's) and registers it on `loop`.
    public static func start(
        path: String, limits: Limits = Limits(), logger: Logger, loop: EventLoop = .shared
    ) -> Result<VarlinkServer, SystemError> {
        ListeningSocket.bind(path, mode: 0o666, createDirectory: 0o755).flatMap { bound in
            let server = VarlinkServer(socket: bound, limits: limits, logger: logger, loop: loop)
            do throws(EventLoopError) {
                server.session.listener = try loop.register(fd: bound.fd, interest: .read) { [server] _ in server.accepting() }
            } catch {
                ListeningSocket.remove(bound)
                return .failure(SystemError("event loop", errno: error == .noThread ? EAGAIN : EBADF, path: path, detail: error.description))
            }
            return .success(server)
        }
    }

    private init(socket: ListeningSocket.Bound, limits: Limits, logger: Logger, loop: EventLoop) {
        self.socket = socket
        var limits = limits
        limits.admission.groupExists = limits.group != nil
        self.limits = limits
        self.logger = logger
        self.loop = loop
        self.session = Session(loop: loop)
    }

    public var path: String { socket.path }
    public var stats: Stats { statsBox.withLock { $0 } }

    /// The current answer (state.json's object, serialized), for GetStatus and each new subscriber.
    public func post(state: String) {
        let first = mailbox.withLock { m -> Bool in
            m.state = state
            defer { m.posted = true }
            return !m.posted
        }
        if first { deliver() }
    }

    /// A change line (serialized report line), for the subscribers.
    public func post(changeLine: String) {
        let first = mailbox.withLock { m -> Bool in
            if m.lines.count >= 1024 {
                m.lines.removeFirst()
                m.lostLines += 1
            }
            m.lines.append(changeLine)
            defer { m.posted = true }
            return !m.posted
        }
        if first { deliver() }
    }

    /// Closes every connection and removes the socket; returns when that is done (at most `timeoutMS`).
    public func stop(timeoutMS: Int64 = 2000) {
        let first = mailbox.withLock { m -> Bool in
            m.stopping = true
            defer { m.posted = true }
            return !m.posted
        }
        if first { deliver() }
        finished.await(timeoutMS: timeoutMS)
    }

    /// Hands the mailbox to the loop's thread.
    private func deliver() {
        do {
            try loop.post { [self] in takeMail() }
        } catch {
            // No loop (out of threads): the mail waits for the next post, and a stop closes here.
            if mailbox.withLock({ $0.stopping }) { shutDown() }
            mailbox.withLock { $0.posted = false }
        }
    }

    // MARK: - On the loop's thread

    /// The gid of the group called `name` (getgrnam_r(3)), or nil when there is none.
    public static func groupID(named name: String) -> UInt32? {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &found) == 0, let found else { return nil }
        return found.pointee.gr_gid
    }

    /// The peer's uid and its groups (primary and supplementary) as they were when it connected: SO_PEERCRED's
    /// struct ucred { pid_t pid; uid_t uid; gid_t gid; } (socket(7); Glibc hides the struct without _GNU_SOURCE)
    /// and SO_PEERGROUPS (Linux 4.13; without it the primary group alone). nil when the kernel gives none.
    static func credentials(_ fd: Int32) -> (uid: UInt32, gids: [UInt32])? {
        var cred: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        let credSize = MemoryLayout.size(ofValue: cred)
        guard case .success(credSize) = withUnsafeMutableBytes(of: &cred, { Sys.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, into: $0, path: nil) })
        else { return nil }
        func groups(_ count: Int) -> Result<[UInt32], SystemError> {
            var gids = [UInt32](repeating: 0, count: count)
            return gids.withUnsafeMutableBytes { Sys.getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, into: $0, path: nil) }
                .map { Array(gids.prefix($0 / 4)) }
        }
        var gids: [UInt32]
        switch groups(64) {
        case let .success(g): gids = g
        // A peer in more than 64 groups: asked again with room for NGROUPS_MAX (65536), the most a process can have.
        case let .failure(e) where e.errno == ERANGE: gids = (try? groups(65536).get()) ?? []
        case .failure: gids = []
        }
        return (cred.uid, [cred.gid] + gids)
    }

    /// A client's connection. @unchecked: touched only on the loop's thread.
    private final class Client: @unchecked Sendable {
        let fd: Int32
        let uid: UInt32
        let peerClass: APIAdmission.PeerClass
        var input: [UInt8] = []
        var output: [UInt8] = []
        var sent = 0
        var subscribed = false
        var closeWhenFlushed = false
        var lastActivity: Int64
        var registration: EventLoop.Registration?

        init(fd: Int32, uid: UInt32, peerClass: APIAdmission.PeerClass, now: Int64) {
            self.fd = fd
            self.uid = uid
            self.peerClass = peerClass
            self.lastActivity = now
        }

        var pending: Int { output.count - sent }
    }

    /// The open connections and what they hold, by class and uid (every close goes through `close`).
    private struct Connections {
        let loop: EventLoop
        var clients: [Int32: Client] = [:]
        var held = APIAdmission.Held()

        mutating func add(_ c: Client) {
            clients[c.fd] = c
            held.add(uid: c.uid, c.peerClass)
        }

        mutating func close(_ c: Client) {
            if let r = c.registration { loop.cancel(r) }
            Sys.close(c.fd)
            clients[c.fd] = nil
            held.remove(uid: c.uid, c.peerClass)
        }
    }

    /// POLLRDHUP: the peer shut its sending side or closed.
    static let pollReadHangUp = EventLoop.Interest.readHangUp.rawValue

    /// When each uid's refusal was last logged and how many were not logged since: one line per uid and minute.
    struct RefusalLog {
        var last: [UInt32: (at: Int64, quiet: Int)] = [:]

        /// How many refusals of `uid` went unlogged before this one, or nil when this one is not to be logged.
        mutating func shouldLog(uid: UInt32, now: Int64) -> Int? {
            if let entry = last[uid], now - entry.at < 60_000 {
                last[uid] = (entry.at, entry.quiet + 1)
                return nil
            }
            let quiet = last[uid]?.quiet ?? 0
            // Entries older than a minute say nothing any more: forgotten, so that the table holds only the uids
            // refused within the last minute.
            if last.count >= 256 { last = last.filter { now - $0.value.at < 60_000 } }
            last[uid] = (now, 0)
            return quiet
        }
    }

    /// The server's state on the loop's thread. @unchecked: only the loop's thread touches it after `start`.
    private final class Session: @unchecked Sendable {
        var connections: Connections
        var refusals = RefusalLog()
        var state = "{}"
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var listener: EventLoop.Registration?
        var closed = false

        init(loop: EventLoop) { connections = Connections(loop: loop) }
    }

    /// Milliseconds of the loop's clock (CLOCK_BOOTTIME), the time of the idle deadlines.
    private static func nowMS() -> Int64 { EventLoop.now() / 1_000_000 }

    private func woke() { statsBox.withLock { $0.wakeups += 1 } }

    /// Posts from the hub's side: the newest state, change lines for the subscribers, or the stop.
    private func takeMail() {
        woke()
        let (newState, lines, lost, stopping) = mailbox.withLock { m -> (String?, [String], UInt64, Bool) in
            defer {
                m.state = nil
                m.lines = []
                m.lostLines = 0
                m.posted = false
            }
            return (m.state, m.lines, m.lostLines, m.stopping)
        }
        if stopping {
            shutDown()
            return
        }
        guard !session.closed else { return }
        if let newState { session.state = newState }
        if lost > 0 {
            logger.warning("Varlink server fell behind; subscribers miss change lines", metadata: ["lines": "\(lost)"])
        }
        if !lines.isEmpty {
            for line in lines {
                let reply = Array("{\"parameters\":{\"status\":\(line)},\"continues\":true}".utf8) + [0]
                for c in session.connections.clients.values where c.subscribed { queue(c, reply) }
            }
            let now = Self.nowMS()
            for c in Array(session.connections.clients.values) where c.subscribed { settle(c, now: now) }
            count()
        }
    }

    /// The listening socket is readable: new connections.
    private func accepting() {
        woke()
        guard !session.closed else { return }
        let now = Self.nowMS()
        while true {
            guard case let .success(fd) = Sys.accept(socket.fd, path: socket.path) else { break }
            admit(fd, &session.connections, &session.refusals, &session.buffer, state: session.state, now: now)
            guard let c = session.connections.clients[fd] else { continue }
            do {
                c.registration = try loop.register(fd: fd, interest: .read, deadline: idleDeadline(c)) { [self, c] fired in
                    clientEvent(c, fired)
                }
            } catch {
                session.connections.close(c)
            }
        }
        count()
    }

    /// A client's traffic or idle deadline.
    private func clientEvent(_ c: Client, _ fired: EventLoop.Fired) {
        woke()
        guard session.connections.clients[c.fd] === c else { return }
        let now = Self.nowMS()
        if case let .ready(ready) = fired,
           !serve(c, ready.rawValue, &session.buffer, state: session.state, now: now) {
            session.connections.close(c)
        } else {
            settle(c, now: now)
        }
        count()
    }

    /// After a client was served or handed lines: sends what is queued, closes it when it is to go (its replies
    /// unread past the limit, flushed before a close, idle), else sets what the loop waits for on it.
    private func settle(_ c: Client, now: Int64) {
        var alive = c.pending == 0 || flush(c)
        if alive && c.pending > limits.maxPending {
            alive = false
            statsBox.withLock { $0.dropped += 1 }
            logger.notice("Varlink client dropped: it did not read its replies", metadata: ["pending_bytes": "\(c.pending)", "uid": "\(c.uid)"])
        }
        if alive && c.closeWhenFlushed && c.pending == 0 { alive = false }
        if alive && !c.subscribed && c.pending == 0 && now - c.lastActivity > limits.idleSeconds * 1000 { alive = false }
        guard alive else {
            session.connections.close(c)
            return
        }
        guard let r = c.registration else { return }
        // A connection being closed is only flushed: its end of file or further bytes are not waited on.
        var interest: EventLoop.Interest = c.closeWhenFlushed ? [] : .read
        if c.pending > 0 { interest.insert(.write) }
        loop.setInterest(r, interest)
        loop.setDeadline(r, idleDeadline(c))
    }

    /// When `c` is to be closed for saying nothing (the loop's clock, nanoseconds), or nil while it is subscribed or
    /// has replies to send.
    private func idleDeadline(_ c: Client) -> Int64? {
        guard !c.subscribed, c.pending == 0 else { return nil }
        return (c.lastActivity + limits.idleSeconds * 1000 + 1) * 1_000_000
    }

    private func count() {
        let clients = session.connections.clients.count
        let subscribers = session.connections.clients.values.filter(\.subscribed).count
        statsBox.withLock {
            $0.clients = clients
            $0.subscribers = subscribers
        }
    }

    /// Closes every connection and the socket (once).
    private func shutDown() {
        guard !session.closed else { return }
        session.closed = true
        if let listener = session.listener { loop.cancel(listener) }
        for c in Array(session.connections.clients.values) { session.connections.close(c) }
        ListeningSocket.remove(socket)
        statsBox.withLock {
            $0.clients = 0
            $0.subscribers = 0
        }
        finished.done()
    }

    /// Judges a new connection by its peer's credentials: admitted into `connections`, or refused with TooManyClients
    /// and closed. At the limit, the connections whose peer has hung up are reaped first and the peer judged again.
    private func admit(
        _ fd: Int32, _ connections: inout Connections, _ refusals: inout RefusalLog, _ buffer: inout [UInt8],
        state: String, now: Int64
    ) {
        // Sys.accept made it close-on-exec and non-blocking (accept(2)'s descriptor inherits neither flag).
        _ = Sys.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, Int32(limits.sendBuffer), path: socket.path)
        guard let peer = Self.credentials(fd) else {
            // Not reached on a Unix socket (the kernel records every connecting peer's credentials).
            logger.warning("Varlink connection refused: the kernel gave no peer credentials", metadata: ["errno": "\(errno)"])
            Sys.close(fd)
            statsBox.withLock { $0.refused += 1 }
            return
        }
        let peerClass = APIAdmission.peerClass(uid: peer.uid, gids: peer.gids, group: limits.group)
        var refusal = limits.admission.judge(peerClass, uid: peer.uid, held: connections.held)
        if refusal != nil {
            reapHungUp(&connections, &buffer, state: state, now: now)
            refusal = limits.admission.judge(peerClass, uid: peer.uid, held: connections.held)
        }
        guard let refusal else {
            connections.add(Client(fd: fd, uid: peer.uid, peerClass: peerClass, now: now))
            statsBox.withLock { $0.accepted += 1 }
            return
        }
        let limit = limits.admission.limit(refusal)
        let reply = error("org.gatewayreach.Reach.TooManyClients", ["limit": .int(limit), "uid": .int(Int(peer.uid))])
        _ = reply.withUnsafeBytes { Sys.send(fd, $0, flags: Int32(MSG_DONTWAIT), path: socket.path) }
        Sys.close(fd)
        statsBox.withLock { $0.refused += 1 }
        if let quiet = refusals.shouldLog(uid: peer.uid, now: now) {
            let held = connections.held
            logger.notice(
                "Varlink connection refused (TooManyClients): \(refusal.text)",
                metadata: [
                    "uid": "\(peer.uid)", "class": "\(peerClass.rawValue)", "limit": "\(limit)",
                    "held_by_uid": "\(held.byUID[peer.uid] ?? 0)", "clients": "\(held.total)",
                    "refused_unlogged_before": "\(quiet)",
                ])
        }
    }

    /// Serves, and closes when they are done, the connections whose peer hung up or shut its sending side (POLLHUP,
    /// POLLRDHUP, POLLERR; `receive` sees recv() == 0): what they asked before is still answered if it can be, and
    /// their slots are free before the next peer is judged. A poll(2) of their own, without waiting: the loop's last
    /// poll was before they closed.
    private func reapHungUp(_ connections: inout Connections, _ buffer: inout [UInt8], state: String, now: Int64) {
        let hangUp = Int16(POLLHUP) | Int16(POLLERR) | Self.pollReadHangUp
        var fds = connections.clients.keys.map { pollfd(fd: $0, events: Int16(POLLIN) | Self.pollReadHangUp, revents: 0) }
        guard case let .success(n) = Sys.poll(&fds, timeoutMs: 0), n > 0 else { return }
        for p in fds where p.revents & hangUp != 0 {
            guard let c = connections.clients[p.fd] else { continue }
            if !serve(c, p.revents, &buffer, state: state, now: now) || (c.closeWhenFlushed && c.pending == 0) {
                connections.close(c)
            }
        }
    }

    /// Reads and answers what a client sent, then sends what is queued. False when it is to be closed now.
    private func serve(_ c: Client, _ revents: Int16, _ buffer: inout [UInt8], state: String, now: Int64) -> Bool {
        var alive = true
        if revents & (Int16(POLLIN | POLLHUP | POLLERR) | Self.pollReadHangUp) != 0 {
            alive = receive(c, &buffer, state: state, now: now)
        }
        if alive, c.pending > 0 { alive = flush(c) }
        return alive
    }

    /// Reads what the client sent and answers every complete call. False when the connection is to be closed now.
    private func receive(_ c: Client, _ buffer: inout [UInt8], state: String, now: Int64) -> Bool {
        var taken = 0
        // At most a few requests' worth per round, so one client that never stops sending cannot hold the thread.
        while taken <= 4 * limits.maxRequest {
            let n: Int
            switch buffer.withUnsafeMutableBytes({ Sys.recv(c.fd, into: $0, flags: Int32(MSG_DONTWAIT), path: nil) }) {
            case let .success(count): n = count
            case let .failure(e): return e.errno == EAGAIN
            }
            if n == 0 {
                // The client shut its sending side (or left): what it asked for is still answered, then it is closed.
                c.closeWhenFlushed = true
                return c.pending > 0
            }
            taken += n
            c.lastActivity = now
            if c.closeWhenFlushed { return true }  // nothing more is read or answered on a connection being closed
            c.input += buffer[0..<n]
            while let end = c.input.firstIndex(of: 0) {
                let request = Array(c.input[..<end])
                c.input.removeSubrange(...end)
                handle(c, request, state: state)
                if c.closeWhenFlushed {
                    c.input = []
                    break
                }
            }
            if c.input.count > limits.maxRequest {
                refuse(c, "org.gatewayreach.Reach.RequestTooLarge", ["limit": .int(limits.maxRequest)])
                c.input = []
            }
        }
        return true
    }

    private func handle(_ c: Client, _ request: [UInt8], state: String) {
        guard let call = try? JSON.parse(bytes: request), call.objectValue != nil else {
            refuse(c, "org.gatewayreach.Reach.InvalidRequest", ["reason": .string("not a JSON object")])
            return
        }
        guard let method = call["method"]?.stringValue else {
            refuse(c, "org.gatewayreach.Reach.InvalidRequest", ["reason": .string("no method")])
            return
        }
        if c.subscribed {
            refuse(c, "org.gatewayreach.Reach.InvalidRequest", ["reason": .string("a call on a connection that is subscribed")])
            return
        }
        let more = call["more"]?.boolValue ?? false
        let oneway = call["oneway"]?.boolValue ?? false
        let parameters = call["parameters"]?.objectValue ?? []
        func reply(_ members: [(String, JSON)]) {
            guard !oneway else { return }
            queue(c, Array(JSON.object([("parameters", .object(members))]).serialized().utf8) + [0])
        }
        func only(_ allowed: Set<String>) -> Bool {
            if let bad = parameters.first(where: { !allowed.contains($0.0) }) {
                queue(c, error("org.varlink.service.InvalidParameter", ["parameter": .string(bad.0)]))
                return false
            }
            return true
        }
        switch method {
        case "org.varlink.service.GetInfo":
            guard only([]) else { return }
            reply([
                ("vendor", .string("GatewayReach")), ("product", .string("reach")),
                ("version", .string(GatewayReachVersion.string)), ("url", .string("file:///usr/share/doc/reach/README.md")),
                ("interfaces", .array([.string("org.varlink.service"), .string(Self.interfaceName)])),
            ])
        case "org.varlink.service.GetInterfaceDescription":
            guard only(["interface"]) else { return }
            switch parameters.first(where: { $0.0 == "interface" })?.1.stringValue {
            case "org.varlink.service"?: reply([("description", .string(Self.serviceDescription))])
            case Self.interfaceName?: reply([("description", .string(Self.interfaceDescription))])
            case let other?: queue(c, error("org.varlink.service.InterfaceNotFound", ["interface": .string(other)]))
            case nil: queue(c, error("org.varlink.service.InvalidParameter", ["parameter": .string("interface")]))
            }
        case Self.interfaceName + ".GetStatus":
            guard only([]) else { return }
            if !oneway { queue(c, Array("{\"parameters\":{\"status\":\(state)}}".utf8) + [0]) }
        case Self.interfaceName + ".Subscribe":
            guard only([]) else { return }
            guard more else {
                queue(c, error("org.varlink.service.ExpectedMore", [:]))
                return
            }
            c.subscribed = true
            queue(c, Array("{\"parameters\":{\"status\":\(state)},\"continues\":true}".utf8) + [0])
        default:
            let interface = method.split(separator: ".").dropLast().joined(separator: ".")
            if interface == "org.varlink.service" || interface == Self.interfaceName {
                refuse(c, "org.varlink.service.MethodNotFound", ["method": .string(method)])
            } else {
                refuse(c, "org.varlink.service.InterfaceNotFound", ["interface": .string(interface)])
            }
        }
    }

    private func queue(_ c: Client, _ bytes: [UInt8]) {
        if c.sent > 0 && c.sent == c.output.count {
            c.output = []
            c.sent = 0
        }
        c.output += bytes
        statsBox.withLock { $0.replies += 1 }
    }

    /// Sends the error, then closes the connection once it is flushed (or at once if it cannot be).
    private func refuse(_ c: Client, _ name: String, _ parameters: [String: JSON]) {
        queue(c, error(name, parameters))
        c.closeWhenFlushed = true
        statsBox.withLock { $0.badRequests += 1 }
    }

    private func error(_ name: String, _ parameters: [String: JSON]) -> [UInt8] {
        let members = parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return Array(JSON.object([("error", .string(name)), ("parameters", .object(members))]).serialized().utf8) + [0]
    }

    /// Sends what is queued without waiting. False when the connection failed.
    private func flush(_ c: Client) -> Bool {
        while c.pending > 0 {
            let sent = c.output.withUnsafeBytes { all in
                Sys.send(c.fd, UnsafeRawBufferPointer(rebasing: all[c.sent..<(c.sent + c.pending)]), flags: Int32(MSG_DONTWAIT), path: nil)
            }
            switch sent {
            case let .success(n) where n > 0:
                c.sent += n
                continue
            case let .failure(e) where e.errno == EAGAIN: break
            default: return false
            }
            break
        }
        if c.pending == 0 {
            c.output = []
            c.sent = 0
        }
        return true
    }
}
