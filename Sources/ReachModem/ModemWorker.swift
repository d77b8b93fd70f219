// The parent's side of a modem worker: start it, feed it its request, read its frames, and end it when it crashes,
// hangs (no heartbeat within the request timeout) or says something malformed. `IsolatedModemReader` and
// `IsolatedModemMonitor` have the shapes of `ModemReader.read` and `ModemMonitor.updates()`; with
// `ModemReadOptions.worker` nil they are those, in this process.
//
// Why a process and not a thread: libmbim 1.28's `mbim_message_device_services_response_parse` allocates a size read
// from the wire with g_malloc0, and GLib aborts the whole process when that fails; a modem that frames nothing
// (a copy of /dev/zero) keeps libmbim's reader inside one callback, where no cancellation reaches it. Only a process
// boundary contains the first, and only killing the process ends the second at a deadline.

import CGLibShims
import ReachCore
import ReachSystem
import ReachLog
import ReachTime
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How a worker process ended, in the words its modem's `error` uses.
enum WorkerEnd: Error, Sendable, Equatable, CustomStringConvertible {
    /// It exited by itself (status).
    case exited(Int32)
    /// A signal it did not ask for ended it.
    case died(signal: Int32)
    /// No message (heartbeat or other) within the limit: killed.
    case hung(Duration)
    /// It sent something that is not a frame of ours, or a value out of bounds: killed.
    case malformed(String)
    /// A read that went past its hard deadline: killed.
    case overran(Duration)
    /// It could not be started.
    case notStarted(String)
    /// It refused its request.
    case refused(String)
    /// It closed its socket but had not exited this long after: killed.
    case lingered(Duration)
    /// Reading its socket failed (an error, not end of file): killed.
    case socketFailed(String)

    /// The modem library a worker of this protocol runs.
    static func library(_ p: ModemProtocol?) -> String {
        switch p {
        case .qmi?: return "libqmi"
        case .mbim?: return "libmbim"
        case nil: return "libqmi/libmbim"
        }
    }

    func message(protocol p: ModemProtocol?, lastFatalLog: String?) -> String {
        let library = WorkerEnd.library(p)
        switch self {
        case let .exited(status):
            return "modem worker exited with status \(status) (\(library))"
        case let .died(signal):
            let name = WorkerEnd.signalName(signal)
            if let log = lastFatalLog { return "modem worker died: \(name) (\(library): \(log))" }
            return "modem worker died: \(name) (\(library))"
        case let .hung(limit):
            return "modem worker hung: no heartbeat for \(limit.milliseconds) ms (\(library)); killed"
        case let .malformed(why):
            return "modem worker sent a malformed message (\(why)); killed"
        case let .overran(limit):
            return "modem worker did not finish within \(limit.milliseconds) ms (\(library)); killed"
        case let .notStarted(why):
            return "modem worker could not be started: \(why)"
        case let .refused(why):
            return "modem worker refused its request: \(why)"
        case let .lingered(limit):
            return "modem worker closed its socket but did not exit within \(limit.milliseconds) ms (\(library)); killed"
        case let .socketFailed(why):
            return "modem worker's socket failed (\(why)); killed"
        }
    }

    var description: String { message(protocol: nil, lastFatalLog: nil) }

    static func signalName(_ s: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGSYS: "SIGSYS", SIGXCPU: "SIGXCPU",
            SIGXFSZ: "SIGXFSZ",
        ]
        return names[s] ?? "signal \(s)"
    }
}

/// The timing a worker is held to, from the modem's request timeout.
struct WorkerTiming: Sendable, Equatable {
    /// How often the worker proves its GLib loop turns.
    var heartbeat: Duration
    /// Silence (no frame at all) after which the worker counts as hung.
    var silence: Duration
    /// Time from the spawn to the worker's first frame (process start-up, before any modem I/O).
    var startup: Duration
    /// A read job's whole budget, after which it is killed; nil for a monitor.
    var deadline: Duration?

    /// A hang is "no heartbeat within the request timeout" (never below 0.5 s: a loaded machine may leave a worker
    /// unscheduled for a moment); the worker beats four times per timeout, at most once a second.
    init(requestTimeout: Duration, readTimeout: Duration?) {
        silence = max(requestTimeout, .milliseconds(500))
        heartbeat = min(max(silence / 4, .milliseconds(50)), .seconds(1))
        startup = .seconds(5)
        // ModemReader's read: open within the read timeout, then every request within it, then the close.
        deadline = readTimeout.map { $0 * 2 + requestTimeout + .seconds(1) }
    }
}

/// One worker process, supervised on the event loop: its socket is a read registration, its silence, deadline and
/// stop limits one timer, and its exit, once it is ending, a `ChildExit` (a pidfd; without pidfd_open, a 10 ms look
/// with waitpid(WNOHANG)). It is spawned from the loop's thread: the worker's parent-death signal (PR_SET_PDEATHSIG, set
/// in the worker) follows the thread that spawned it, and the loop's thread lives as long as something is registered
/// on it, this worker's socket or exit among them.
final class WorkerProcess: Sendable {
    /// This process's modem workers from their start until they are reaped: each holds the port it reads, and
    /// `ProcFacts.holders` does not name one as another reader of it.
    static let running = Mutex<Set<pid_t>>([])

    typealias Ended = @Sendable (WorkerEnd, String?) -> Void

    private enum Phase {
        case reading
        /// Its socket closed: it is exiting. `verdict` is the end to report whatever its status says (a refusal).
        case exiting(since: Int64, verdict: WorkerEnd?)
        /// Killed by us for `end`: waiting for the kernel to finish it.
        case killed(WorkerEnd)
        case done
    }

    private struct State {
        var phase = Phase.reading
        var buffer = WireFrameBuffer(maxPayload: WorkerLimits.maxPayload)
        var lastFrame: Int64
        var heardAny = false
        var stopSince: Int64?
        var fatalLog: String?
        var socket: EventLoop.Registration?
        var exit: ChildExit?
    }

    private static let stopGrace: Int64 = 2_000_000_000
    private static let exitGrace: Int64 = 2_000_000_000

    let pid: pid_t
    private let fd: Int32
    private let timing: WorkerTiming
    private let loop: EventLoop
    private let startedAt: Int64
    private let deliver: @Sendable (WorkerMessage) -> Void
    private let ended: Ended
    private let stopRequested = Atomic<Bool>(false)
    private let state: Mutex<State>
    private let timer: LoopTimer

    private init(
        pid: pid_t, fd: Int32, timing: WorkerTiming, loop: EventLoop, deliver: @escaping @Sendable (WorkerMessage) -> Void,
        ended: @escaping Ended
    ) {
        self.pid = pid
        self.fd = fd
        self.timing = timing
        self.loop = loop
        startedAt = EventLoop.now()
        self.deliver = deliver
        self.ended = ended
        state = Mutex(State(lastFrame: startedAt))
        timer = LoopTimer(loop: loop)
    }

    /// Starts `launch` with `request` on a fresh socket and supervises it on `loop`, handing each message but
    /// heartbeats to `deliver`; `ended` runs once, last, with how it ended and the last GLib error it reported (the
    /// worker reaped). Call it on the loop's thread. Nil when it could not be started (`ended` has run).
    static func start(
        _ launch: ModemWorkerLaunch, request: WorkerRequest, label: String, timing: WorkerTiming, loop: EventLoop,
        deliver: @escaping @Sendable (WorkerMessage) -> Void, ended: @escaping Ended
    ) -> WorkerProcess? {
        let frame: [UInt8]
        do {
            frame = try WireFrame.encode(request)
        } catch {
            ended(.notStarted("cannot encode the request: \(error)"), nil)
            return nil
        }
        let pair: (ours: Int32, child: Int32)
        switch Sys.socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue)) {
        case let .success(p): pair = p
        case let .failure(e):
            ended(.notStarted("\(e)"), nil)
            return nil
        }
        // Standard input from /dev/null, standard output onto standard error (a worker's words are log lines), the
        // socket as fd 3, nothing else of ours. The child's end is copied above 3 first: fds 0-3 are overwritten.
        let spawned = Sys.dup(pair.child, minimum: 10, path: nil).flatMap { childEnd in
            defer { Sys.close(childEnd) }
            return Spawn.posix_spawn(
                launch.executable, argv: [launch.executable] + launch.arguments + [label],
                environment: Spawn.currentEnvironment(),
                actions: [.null(0), .dup2(from: 2, to: 1), .dup2(from: childEnd, to: ModemWorkerProcess.channel)],
                closeFrom: ModemWorkerProcess.channel + 1)
        }
        Sys.close(pair.child)
        let pid: pid_t
        switch spawned {
        case let .success(p): pid = p
        case let .failure(e):
            Sys.close(pair.ours)
            ended(.notStarted(e.call == "posix_spawn" ? "\(launch.executable): \(e.reason)" : "\(e)"), nil)
            return nil
        }
        WorkerProcess.running.withLock { _ = $0.insert(pid) }
        // The request is small and the socket buffer empty: this write does not block on a live child. When it fails
        // the worker is gone already (it could not run, or died at once): the supervision says how it ended.
        var held = timing
        if case .failure = Sys.sendAll(pair.ours, frame, path: nil) {
            held = WorkerTiming(requestTimeout: .seconds(1), readTimeout: nil)
        }
        let process = WorkerProcess(pid: pid, fd: pair.ours, timing: held, loop: loop, deliver: deliver, ended: ended)
        if let e = process.arm() {
            // No loop to watch it on: it must not run unwatched.
            Sys.kill(pid, SIGKILL)
            _ = Sys.waitpid(pid, block: true)
            process.forget()
            process.closeDescriptors()
            ended(.notStarted("\(e)"), nil)
            return nil
        }
        return process
    }

    /// Asks the worker to finish (it sees end of file, stops its job and exits); it is killed if it has not gone 2 s
    /// later. From any thread.
    func stop() {
        if !stopRequested.exchange(true, ordering: .acquiringAndReleasing) {
            _ = Sys.shutdown(fd, Int32(SHUT_WR), path: nil)
            try? loop.post { [self] in settle() }
        }
    }

    private func arm() -> EventLoopError? {
        do {
            let socket = try loop.register(fd: fd, interest: .read) { [self] _ in readSocket() }
            state.withLock { $0.socket = socket }
        } catch {
            return error
        }
        settle()
        return nil
    }

    /// One read of the socket: its frames, or its end.
    private func readSocket() {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n: Int
        switch chunk.withUnsafeMutableBytes({ Sys.recv(fd, into: $0, path: nil) }) {
        case let .success(count): n = count
        case let .failure(e) where e.errno == ECONNRESET: n = 0
        case let .failure(e) where e.errno == EAGAIN: return
        case let .failure(e): return kill(.socketFailed("\(e)"))
        }
        if n == 0 {
            // End of file, or ECONNRESET (it died with our request unread): the worker is exiting, or closed its
            // socket, which only an exiting worker does. Its status says how it ended.
            return awaitExit(verdict: nil)
        }
        var messages: [WorkerMessage] = []
        var outcome: (kill: WorkerEnd?, refused: WorkerEnd?) = (nil, nil)
        state.withLock { s in
            s.buffer.append(chunk[0..<n])
            do throws(WireError) {
                while let payload = try s.buffer.next() {
                    let message = try WireCodec.decode(WorkerMessage.self, from: payload, limits: WorkerLimits.wire)
                    s.lastFrame = EventLoop.now()
                    s.heardAny = true
                    switch message {
                    case .heartbeat:
                        continue
                    case let .fatalLog(domain, text):
                        s.fatalLog = "\(domain): \(String(text.prefix(200)))"
                    case let .result(_, states) where states.count > WorkerLimits.maxStates:
                        outcome.kill = .malformed("\(states.count) states in one result")
                        return
                    case let .refused(why):
                        outcome.refused = .refused(String(why.prefix(200)))
                        return
                    default:
                        break
                    }
                    messages.append(message)
                }
            } catch {
                outcome.kill = .malformed(error.message)
            }
        }
        for m in messages { deliver(m) }
        if let end = outcome.kill { return kill(end) }
        if let end = outcome.refused { return awaitExit(verdict: end) }
        settle()
    }

    /// The limits of the reading phase (silence, the read's deadline, a stop not honoured), or the exit's grace.
    private func settle() {
        let now = EventLoop.now()
        let stopping = stopRequested.load(ordering: .acquiring)
        enum Step { case wait(Int64?), kill(WorkerEnd), linger(WorkerEnd) }
        let step = state.withLock { s -> Step in
            switch s.phase {
            case .reading:
                if stopping && s.stopSince == nil { s.stopSince = now }
                let silence = s.heardAny ? timing.silence : timing.startup
                var due = s.lastFrame + Sys.nanoseconds(silence)
                let deadline = timing.deadline.map { startedAt + Sys.nanoseconds($0) }
                if let d = deadline { due = min(due, d) }
                if let stop = s.stopSince { due = min(due, stop + Self.stopGrace) }
                guard now >= due else { return .wait(due) }
                if let stop = s.stopSince, now >= stop + Self.stopGrace { return .kill(.hung(.seconds(2))) }
                if let d = timing.deadline, let at = deadline, now >= at { return .kill(.overran(d)) }
                return .kill(.hung(silence))
            case let .exiting(since, verdict):
                if now >= since + Self.exitGrace { return .linger(verdict ?? .lingered(.seconds(2))) }
                return .wait(since + Self.exitGrace)
            case .killed:
                return .wait(nil)
            case .done:
                return .wait(nil)
            }
        }
        switch step {
        case let .wait(at):
            timer.set(at: at) { [self] in settle() }
        case let .kill(end): kill(end)
        case let .linger(end):
            // It closed its socket but has not exited: killed, and its status (our SIGKILL) says nothing.
            Sys.kill(pid, SIGKILL)
            state.withLock { $0.phase = .killed(end) }
            settle()
        }
    }

    /// Kills the worker for `end` and waits for the kernel to finish it.
    private func kill(_ end: WorkerEnd) {
        Sys.kill(pid, SIGKILL)
        state.withLock { $0.phase = .killed(end) }
        stopReading()
        watchExit()
        settle()
    }

    /// Its socket closed (or it refused its request): it is exiting; its status decides, unless `verdict` does.
    private func awaitExit(verdict: WorkerEnd?) {
        state.withLock { $0.phase = .exiting(since: EventLoop.now(), verdict: verdict) }
        stopReading()
        watchExit()
        settle()
    }

    private func stopReading() {
        if let r = state.withLock({ s -> EventLoop.Registration? in defer { s.socket = nil }; return s.socket }) {
            loop.cancel(r)
        }
    }

    /// Follows the exit, once the worker is ending (while it is read, its exit is seen as the end of its socket, after
    /// the frames it sent last). Called on the loop's thread, as the exit's callback is.
    private func watchExit() {
        guard state.withLock({ $0.exit == nil }) else { return }
        do throws(EventLoopError) {
            let exit = try ChildExit.watch(pid, on: loop) { [self] status in finish(status: status) }
            state.withLock { $0.exit = exit }
        } catch {
            // The loop cannot take it: wait here, briefly blocked (the worker is exiting or killed).
            finish(status: (try? Sys.waitpid(pid, block: true).get()) ?? nil)
        }
    }

    private func finish(status: WaitStatus?) {
        let end = state.withLock { s -> WorkerEnd? in
            let end: WorkerEnd?
            switch s.phase {
            case .reading, .done: end = nil
            case let .exiting(_, verdict): end = verdict ?? status.map(WorkerProcess.end) ?? .exited(-1)
            case let .killed(e): end = e
            }
            if end != nil { s.phase = .done }
            return end
        }
        guard let end else { return }
        timer.set(at: nil)
        let (socket, exit) = state.withLock { s -> (EventLoop.Registration?, ChildExit?) in
            defer {
                s.socket = nil
                s.exit = nil
            }
            return (s.socket, s.exit)
        }
        if let socket { loop.cancel(socket) }
        exit?.cancel()
        forget()
        closeDescriptors()
        ended(end, state.withLock { $0.fatalLog })
    }

    private func closeDescriptors() {
        Sys.close(fd)
    }

    /// Reaped (or beyond reaping): no longer one of `running`.
    private func forget() {
        _ = WorkerProcess.running.withLock { $0.remove(pid) }
    }

    private static func end(_ status: WaitStatus) -> WorkerEnd {
        switch status {
        case let .exited(code): .exited(code)
        case let .signalled(signal): .died(signal: signal)
        }
    }
}

/// The stop switch of a worker that may not have been spawned yet.
final class WorkerHandle: Sendable {
    private let process = Mutex<WorkerProcess?>(nil)
    private let stopped = Atomic<Bool>(false)

    func attach(_ p: WorkerProcess) {
        process.withLock { $0 = p }
        if stopped.load(ordering: .acquiring) { p.stop() }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        process.withLock { $0 }?.stop()
    }
}

/// One worker's run seen from async code: messages as they come, then how it ended.
enum WorkerEvent: Sendable {
    case message(WorkerMessage)
    case ended(WorkerEnd, fatalLog: String?)
}

enum WorkerRun {
    /// Starts a worker for `job` and streams what it says, ending with `.ended`. Cancelling the consumer stops the
    /// worker (end of file on its socket, SIGKILL 2 s later).
    ///
    /// The worker is spawned from the event loop's thread, which lives until the worker is reaped (its registrations
    /// keep it): the worker's parent-death signal follows the thread that created it (prctl(2), PR_SET_PDEATHSIG), so
    /// spawning from a pool thread that the runtime later retires would kill a healthy worker.
    static func events(_ launch: ModemWorkerLaunch, job: WorkerRequest.Job, timing: WorkerTiming, label: String)
        -> AsyncStream<WorkerEvent>
    {
        // Bounded: a worker that floods its parent with states costs it at most this many (the newest are kept, and
        // the last event, `.ended`, always is).
        let (stream, continuation) = AsyncStream.makeStream(of: WorkerEvent.self, bufferingPolicy: .bufferingNewest(256))
        let request = WorkerRequest(version: WorkerRequest.version, job: job, heartbeat: timing.heartbeat)
        let handle = WorkerHandle()
        continuation.onTermination = { _ in handle.stop() }
        let loop = EventLoop.shared
        do {
            try loop.post {
                let process = WorkerProcess.start(
                    launch, request: request, label: label, timing: timing, loop: loop,
                    deliver: { continuation.yield(.message($0)) },
                    ended: { end, log in
                        continuation.yield(.ended(end, fatalLog: log))
                        continuation.finish()
                    })
                if let process { handle.attach(process) }
            }
        } catch {
            continuation.yield(.ended(.notStarted("\(error)"), fatalLog: nil))
            continuation.finish()
        }
        return stream
    }

    /// A worker's proxied open got no answer: the proxy is named, and replaced when it is reach's alone, here in the
    /// parent (the worker may not look into other processes). The note is for the state with the error that follows.
    static func answer(_ silence: ProxySilence, logger: Logger) async -> ProxyNote? {
        // The worker is untrusted (it parses what the modem sends): only the two proxies, and a plausible wait, are
        // acted on; a name from it must never reach the launcher (it picks the program to start by name).
        guard [ModemProtocol.qmi, .mbim].map(PortHolders.proxyName).contains(silence.name),
            (0...3_600_000).contains(silence.waitedMs)
        else {
            logger.warning("Modem worker sent a proxy silence that is not understood", metadata: ["proxy": "\(silence.name)"])
            return nil
        }
        let outcome = await ProxyWatch.answer(silence)
        logger.warning("Proxy did not answer", metadata: ["proxy": "\(silence.name)", "outcome": "\(outcome.note)"])
        return ProxyNote(text: outcome.note, fault: outcome.fault(after: silence))
    }

    /// What the parent found about a worker's proxy silence, for the state that follows.
    struct ProxyNote: Sendable {
        var text: String
        var fault: ModemFault
    }

    /// The state the worker sent after a proxy silence, its error replaced by the parent's note (which names the
    /// proxy and what was done). The note applies to the next state whose port could not be opened (`access` nil);
    /// a state of an open port ends it.
    static func withProxyNote(_ state: ModemState, _ note: inout ProxyNote?) -> ModemState {
        guard let found = note else { return state }
        var s = state
        if s.access == nil, s.error != nil { s.fail(found.text, found.fault) }
        note = nil
        return s
    }

    /// A state from a worker, held to the port it was asked about: it cannot speak for another device. What else
    /// holds the port is added here (`PortHolders`): the worker, without capabilities, cannot see other processes'
    /// descriptors. `holders` carries the access note between the states of one worker run, so /proc is read once
    /// per way of opening, not per indication.
    static func bounded(_ state: ModemState, spec: ModemPortSpec, holders: inout (ModemAccessPath, String?)?) -> ModemState {
        var s = state
        s.device = spec.path
        if let p = spec.protocol { s.protocol = p }
        if let i = spec.interface { s.interface = i }
        if let d = spec.driver { s.driver = d }
        if let access = s.access {
            if let (seen, reason) = holders, seen == access {
                s.accessReason = reason
            } else {
                PortHolders.noteInAccess(&s, path: spec.path, protocol: s.protocol)
                holders = (access, s.accessReason)
            }
        } else {
            holders = nil
            PortHolders.noteInError(&s, path: spec.path)
        }
        return s
    }
}

// MARK: - The two shapes the rest of GatewayReach uses

public enum IsolatedModemReader {
    /// `ModemReader.read`, with each modem read in a worker process of its own when `options.worker` is set: a
    /// worker that crashes, hangs or overruns is killed and its modem reported with the error, the others are
    /// unaffected. With `options.worker` nil it is `ModemReader.read`.
    public static func read(_ specs: [ModemPortSpec]?, options: ModemReadOptions) async -> (SourceHealth, [ModemState]) {
        guard let launch = options.worker else { return await ModemReader.read(specs, options: options) }
        let (health, ports) = ModemReader.prepare(specs, options: options)
        guard health.available else { return (health, []) }
        let timing = WorkerTiming(requestTimeout: options.requestTimeout, readTimeout: options.readTimeout)
        let states = await withTaskGroup(of: (Int, ModemState).self) { group in
            for (i, (spec, _)) in ports.enumerated() {
                group.addTask { (i, await readOne(spec, options: options, launch: launch, timing: timing)) }
            }
            var states = [ModemState?](repeating: nil, count: ports.count)
            for await (i, state) in group { states[i] = state }
            return states.compactMap { $0 }
        }
        return (health, states)
    }

    static func readOne(_ spec: ModemPortSpec, options: ModemReadOptions, launch: ModemWorkerLaunch, timing: WorkerTiming)
        async -> ModemState
    {
        var result: ModemState?
        var ending: (WorkerEnd, String?) = (.exited(0), nil)
        var proxyNote: WorkerRun.ProxyNote?
        read: for await event in WorkerRun.events(launch, job: .read(spec, options), timing: timing, label: spec.path) {
            switch event {
            case let .message(.proxySilent(silence)):
                proxyNote = await WorkerRun.answer(silence, logger: options.logger)
            case let .message(.result(_, states)):
                var holders: (ModemAccessPath, String?)?
                result = states.first.map {
                    WorkerRun.bounded(WorkerRun.withProxyNote($0, &proxyNote), spec: spec, holders: &holders)
                }
                // The answer is in: the worker is reaped on its supervising thread, nobody waits for that here.
                break read
            case let .message(.ready(capabilities)) where capabilities != 0:
                options.logger.warning(
                    "Modem worker kept capabilities", metadata: ["modem.device": "\(spec.path)", "capabilities": "\(capabilities)"])
            case .message:
                break
            case let .ended(end, log):
                ending = (end, log)
            }
        }
        if let result { return result }
        let message = ending.0 == .exited(0)
            ? "modem worker ended without an answer (\(WorkerEnd.library(spec.protocol)))"
            : ending.0.message(protocol: spec.protocol, lastFatalLog: ending.1)
        options.logger.warning("Modem worker failed", metadata: ["modem.device": "\(spec.path)", "error": "\(message)"])
        return ModemChannel.failedState(spec, ModemError(message), present: DeviceNode.check(spec.path) != .missing)
    }
}

/// `ModemMonitor`, with the modem watched from a worker process when `options.read.worker` is set. A worker that
/// dies, hangs or sends something malformed is killed; the modem's state then carries the error (cause
/// `.workerFailed`) and a new worker is started after `options.reopen`'s backoff. With `options.read.worker` nil it
/// is `ModemMonitor`.
public struct IsolatedModemMonitor: Sendable {
    public let port: ModemPortSpec
    public let options: ModemMonitorOptions

    public init(_ port: ModemPortSpec, options: ModemMonitorOptions = ModemMonitorOptions()) {
        self.port = port
        self.options = options
    }

    /// As `ModemMonitor.updates()`: the state after the first read, then each change; the stream runs until the
    /// consumer stops, which stops the worker (its port is closed and client ids released).
    public func updates() -> AsyncStream<ModemUpdate> {
        guard let launch = options.read.worker else { return ModemMonitor(port, options: options).updates() }
        let (stream, continuation) = AsyncStream.makeStream(of: ModemUpdate.self, bufferingPolicy: .bufferingNewest(64))
        let task = Task { [self] in
            await self.run(launch, continuation)
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func run(_ launch: ModemWorkerLaunch, _ out: AsyncStream<ModemUpdate>.Continuation) async {
        // The port as the worker will see it (protocol and interface from sysfs), for the states said on its behalf.
        let (_, prepared) = ModemReader.prepare([port], options: options.read)
        let spec = prepared.first?.0 ?? port
        let timing = WorkerTiming(requestTimeout: options.read.requestTimeout, readTimeout: nil)
        let logger = options.read.logger
        var last: ModemState?
        var failedBefore = false
        var attempt = 0
        func emit(_ state: ModemState, _ cause: ModemUpdateCause) {
            guard state != last else { return }
            last = state
            out.yield(ModemUpdate(state: state, cause: cause))
        }

        while !Task.isCancelled {
            if attempt > 0 {
                let delay = options.reopen.delay(attempt: attempt - 1)
                logger.debug("Restarting modem worker", metadata: ["modem.device": "\(spec.path)", "delay": "\(delay)"])
                do { try await Timers.shared.sleep(for: delay) } catch { break }
            }
            attempt += 1
            let started = ContinuousClock.now
            var first = true
            var holders: (ModemAccessPath, String?)?
            var ending: (WorkerEnd, String?) = (.exited(0), nil)
            var proxyNote: WorkerRun.ProxyNote?
            for await event in WorkerRun.events(launch, job: .monitor(port, options), timing: timing, label: port.path) {
                switch event {
                case let .message(.proxySilent(silence)):
                    proxyNote = await WorkerRun.answer(silence, logger: logger)
                case let .message(.update(update)):
                    var cause = update.cause
                    // A new worker's first read after one failed is the modem coming back.
                    if first && failedBefore && cause == .initialRead { cause = .reopened }
                    first = false
                    emit(WorkerRun.bounded(WorkerRun.withProxyNote(update.state, &proxyNote), spec: spec, holders: &holders), cause)
                case let .message(.ready(capabilities)) where capabilities != 0:
                    logger.warning(
                        "Modem worker kept capabilities",
                        metadata: ["modem.device": "\(spec.path)", "capabilities": "\(capabilities)"])
                case .message:
                    break
                case let .ended(end, log):
                    ending = (end, log)
                }
            }
            if Task.isCancelled { break }
            let message = ending.0.message(protocol: spec.protocol, lastFatalLog: ending.1)
            logger.warning("Modem worker failed", metadata: ["modem.device": "\(spec.path)", "error": "\(message)"])
            emit(
                ModemChannel.failedState(spec, ModemError(message), present: DeviceNode.check(spec.path) != .missing),
                .workerFailed)
            failedBefore = true
            // A worker that ran longer than the longest backoff was healthy: start the next one soon.
            if ContinuousClock.now - started > options.reopen.maximum { attempt = 1 }
        }
    }
}
