// WiFi state that changes without polling: nl80211 multicast notifications ("config" and "mlme" groups: interface
// added/removed, connect, disconnect, roam, station added/removed, NOTIFY_CQM) trigger a fresh read, and the
// kernel's connection quality monitor is given RSSI thresholds at the bar boundaries so that bar changes are pushed
// too. Polling at `Options.pollInterval` remains only as the fallback (and a safety net).
//
// Usage (the agent's WiFi service):
//
//     let monitor = WiFiMonitor(interface: "wlan0")          // or WiFiMonitor(options: …)
//     for await update in monitor.updates { … update.links … }   // the first update is the initial state
//     monitor.current()                                          // the latest state, without waiting
//     monitor.stop()                                             // also happens when the stream is dropped
//
// The monitor runs on the process's event loop (ReachSystem's EventLoop, thread `reach-loop`): the event socket is
// a registration whose deadline is the next periodic read; libnl is only ever touched from the loop's thread.
import CNetlinkShims
import Glibc
import ReachCore
import ReachSystem
import Synchronization

public final class WiFiMonitor: Sendable {
    public struct Options: Sendable {
        /// Only this interface (nil: every nl80211 interface).
        public var interface: String?
        /// Re-read this often even when no event came (the safety net; events do the real work).
        public var pollInterval: Duration
        /// Re-read this often while nl80211 events cannot be received (no cfg80211 yet, socket failure).
        public var fallbackPollInterval: Duration
        /// CQM RSSI thresholds (dBm): the bar boundaries unless told otherwise. Empty: no CQM.
        public var signalThresholds: [Int32]
        public var hysteresis: UInt32
        /// Force one moving threshold even where the kernel takes a list (to exercise the fallback).
        public var singleThresholdOnly: Bool

        public init(
            interface: String? = nil, pollInterval: Duration = Defaults.duration(Defaults.wifiPollIntervalSeconds),
            fallbackPollInterval: Duration = .seconds(5),
            signalThresholds: [Int32] = SignalThresholdPlan.barBoundaries, hysteresis: UInt32 = 2,
            singleThresholdOnly: Bool = false
        ) {
            self.interface = interface
            self.pollInterval = pollInterval
            self.fallbackPollInterval = fallbackPollInterval
            self.signalThresholds = signalThresholds
            self.hysteresis = hysteresis
            self.singleThresholdOnly = singleThresholdOnly
        }
    }

    /// Why an update was published.
    public enum Cause: String, Sendable {
        /// The state when the monitor started.
        case initial
        /// nl80211 notifications (in `Update.events`).
        case event
        /// The event socket overran (ENOBUFS): notifications were lost, so everything was read again.
        case overrun
        /// The periodic (fallback) read found a change.
        case poll
    }

    public struct Update: Sendable {
        public var cause: Cause
        /// The notifications that led to this update (for `.event`).
        public var events: [NL80211.Event]
        public var health: SourceHealth
        public var links: [WiFiLink]
        /// Interfaces present in the previous update and absent now (unplugged, driver unloaded, deleted).
        public var gone: [String]
        /// When it was read, in milliseconds of the deadline clock (ReachSystem's CLOCK_BOOTTIME).
        public var monotonicMilliseconds: Int64
    }

    private struct Shared {
        var health = SourceHealth(available: false, reason: "not read yet")
        var links: [WiFiLink] = []
        var stopped = false
    }

    private final class SharedBox: Sendable {
        let mutex = Mutex(Shared())
    }

    /// Every state change, starting with the initial state. Finishes when the monitor stops.
    public let updates: AsyncStream<Update>
    private let shared = SharedBox()
    private let monitor: MonitorLoop

    public init(options: Options = Options(), loop: EventLoop = .shared) {
        let (stream, continuation) = AsyncStream.makeStream(of: Update.self, bufferingPolicy: .bufferingNewest(64))
        updates = stream
        monitor = MonitorLoop(options: options, loop: loop, continuation: continuation) { [shared] health, links in
            shared.mutex.withLock {
                $0.health = health
                $0.links = links
            }
        }
        continuation.onTermination = { [weak self] _ in self?.stop() }
        do {
            try monitor.start()
        } catch {
            // No loop to be had (out of threads): the monitor says so and ends.
            shared.mutex.withLock { $0.health = SourceHealth(available: false, reason: error.description) }
            continuation.finish()
        }
    }

    /// A monitor of one interface (or all, for nil) with the default options.
    public convenience init(interface: String?) {
        self.init(options: Options(interface: interface))
    }

    deinit { stop() }

    /// The state of the last read.
    public func current() -> (SourceHealth, [WiFiLink]) {
        shared.mutex.withLock { ($0.health, $0.links) }
    }

    /// Ends the monitor's registration and the update stream. Safe to call more than once.
    public func stop() {
        let first = shared.mutex.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        monitor.stop()
    }
}

/// The nl80211 event socket: joined to the "config" and "mlme" multicast groups, non-blocking, sequence checks off.
final class NL80211EventSocket {
    static let groups = ["config", "mlme"]
    let sk: OpaquePointer
    private(set) var bufferSize: Int32 = 256 * 1024

    /// Wraps `nl_socket_alloc`, `genl_connect`, `genl_ctrl_resolve_grp` and `nl_socket_add_membership`.
    static func open() throws(NL80211Error) -> NL80211EventSocket {
        guard let sk = nl_socket_alloc() else { throw .libnl(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let err = genl_connect(sk)
        if err < 0 {
            nl_socket_free(sk)
            throw .libnl(call: "genl_connect", code: -err)
        }
        return try NL80211EventSocket(adopting: sk)
    }

    /// Takes ownership of `sk` (freed by deinit, or here when joining the groups fails).
    init(adopting sk: OpaquePointer) throws(NL80211Error) {
        do {
            try Self.join(sk)
        } catch {
            nl_socket_free(sk)
            throw error
        }
        self.sk = sk
        _ = nl_socket_set_buffer_size(sk, bufferSize, 0)
        _ = nl_socket_set_nonblocking(sk)
    }

    private static func join(_ sk: OpaquePointer) throws(NL80211Error) {
        nl_socket_disable_seq_check(sk)
        for group in groups {
            let id = genl_ctrl_resolve_grp(sk, NL80211.familyName, group)
            if id < 0 {
                if -id == NLE_OBJ_NOTFOUND { throw .familyAbsent }
                throw .libnl(call: "genl_ctrl_resolve_grp(\"nl80211\", \"\(group)\")", code: -id)
            }
            let err = nl_socket_add_membership(sk, id)
            if err < 0 { throw .libnl(call: "nl_socket_add_membership(\(group))", code: -err) }
        }
    }

    deinit { nl_socket_free(sk) }

    var fd: Int32 { nl_socket_get_fd(sk) }

    enum Received {
        case messages([NL80211.Message])
        /// ENOBUFS: the kernel dropped notifications.
        case overrun
        /// Nothing (more) to read now.
        case empty
        case failed(NL80211Error)
    }

    /// One read of whatever is queued. Wraps `nl_recvmsgs_report` (CNetlinkShims_genl_receive_events).
    func receive() -> Received {
        var out = CNetlinkShims_genl_messages()
        defer { CNetlinkShims_genl_messages_free(&out) }
        let err = CNetlinkShims_genl_receive_events(sk, 1024, &out)
        if err == -NLE_NOMEM {
            // Make the next burst fit, as netifd does, up to 4 MiB.
            if bufferSize < 4 * 1024 * 1024 {
                bufferSize *= 2
                _ = nl_socket_set_buffer_size(sk, bufferSize, 0)
            }
            return .overrun
        }
        if err == -NLE_AGAIN { return out.count > 0 ? .messages(decode(out)) : .empty }
        if err < 0 { return .failed(.libnl(call: "nl_recvmsgs_report(nl80211 events)", code: -err)) }
        return out.count > 0 ? .messages(decode(out)) : .empty
    }

    private func decode(_ out: CNetlinkShims_genl_messages) -> [NL80211.Message] {
        NL80211Socket.records(out).compactMap(NL80211.Message.init(payload:))
    }
}

/// The monitor's logic without the thread: what to read, when to publish, how to program CQM. Tests drive it
/// directly with replayed sockets and decoded events.
final class MonitorCore {
    let options: WiFiMonitor.Options
    private var request: NL80211Socket?
    private let openRequest: () throws(NL80211Error) -> NL80211Socket
    private(set) var health = SourceHealth(available: false, reason: "not read yet")
    private(set) var links: [WiFiLink] = []
    /// ifindex → the BSSID and plan CQM was last programmed for.
    private(set) var cqmConfigured: [Int: (bssid: String, plan: SignalThresholdPlan)] = [:]
    /// ifindexes whose wiphy refused a threshold list.
    private(set) var singleThresholdOnly: Set<Int> = []
    /// The last CQM programming failure, kept for diagnostics.
    private(set) var cqmError: String?

    init(options: WiFiMonitor.Options, openRequest: @escaping () throws(NL80211Error) -> NL80211Socket) {
        self.options = options
        self.openRequest = openRequest
    }

    /// Reads everything again, programs CQM where the association changed, and returns the update to publish
    /// (nil when nothing changed and the cause does not demand publication).
    func refresh(cause: WiFiMonitor.Cause, events: [NL80211.Event] = [], now: Int64) -> WiFiMonitor.Update? {
        let previous = links
        let previousHealth = health
        if request == nil {
            do {
                request = try openRequest()
            } catch {
                health = SourceHealth(available: false, reason: error.description)
                links = []
            }
        }
        if let socket = request {
            let (h, l) = WiFiReader.read(using: socket, interface: options.interface)
            health = h
            links = l
            // A failed exchange can leave replies queued on the socket: start the next read on a fresh one.
            if !h.available || l.contains(where: { $0.error != nil && $0.ifindex != nil }) { request = nil }
        }
        programSignalThresholds()
        let present = Set(links.map(\.interface))
        let gone = previous.map(\.interface).filter { !present.contains($0) }
        let changed = previous != links || previousHealth != health
        let ours = Set(links.compactMap(\.ifindex))
        let concernsUs = events.contains { $0.ifindex.map(ours.contains) ?? false } || !gone.isEmpty
        switch cause {
        case .initial, .overrun: break
        case .event: guard changed || concernsUs else { return nil }
        case .poll: guard changed else { return nil }
        }
        return WiFiMonitor.Update(
            cause: cause, events: events, health: health, links: links, gone: gone, monotonicMilliseconds: now)
    }

    /// Events that concern link state (ignored ones are dropped by the caller).
    func stateEvents(_ messages: [NL80211.Message]) -> [NL80211.Event] {
        messages.map(NL80211.Event.init).filter(\.changesState)
    }

    /// CQM for each associated station: a threshold list once per association, or one moving threshold.
    private func programSignalThresholds() {
        guard !options.signalThresholds.isEmpty, let socket = request else { return }
        var keep: [Int: (bssid: String, plan: SignalThresholdPlan)] = [:]
        for link in links where link.mode == .station && link.associated {
            guard let ifindex = link.ifindex, let bssid = link.bssid else { continue }
            let single = options.singleThresholdOnly || singleThresholdOnly.contains(ifindex)
            let plan: SignalThresholdPlan =
                single
                ? .single(
                    signal: link.barSignalDBm, boundaries: options.signalThresholds, hysteresis: options.hysteresis)
                : .list(options.signalThresholds, hysteresis: options.hysteresis)
            if let done = cqmConfigured[ifindex], done.bssid == bssid, done.plan == plan {
                keep[ifindex] = done
                continue
            }
            do {
                try socket.setSignalThresholds(
                    ifindex: ifindex, thresholds: plan.thresholds, hysteresis: plan.hysteresis)
                keep[ifindex] = (bssid, plan)
                cqmError = nil
            } catch {
                if case .list = plan, case .kernel(_, let e) = error, e == EOPNOTSUPP || e == EINVAL {
                    singleThresholdOnly.insert(ifindex)
                    let fallback = SignalThresholdPlan.single(
                        signal: link.barSignalDBm, boundaries: options.signalThresholds, hysteresis: options.hysteresis)
                    if (try? socket.setSignalThresholds(
                        ifindex: ifindex, thresholds: fallback.thresholds, hysteresis: fallback.hysteresis)) != nil
                    {
                        keep[ifindex] = (bssid, fallback)
                        continue
                    }
                }
                // No CQM on this interface (some full-MAC drivers): the poll keeps the bars current.
                cqmError = error.description
            }
        }
        cqmConfigured = keep
    }
}

/// The monitor on the event loop: the event socket's registration, its deadline the next periodic read.
final class MonitorLoop: @unchecked Sendable {
    // @unchecked: created on the caller's thread, then used only on the loop's thread (`start` and `stop` post).
    let options: WiFiMonitor.Options
    let loop: EventLoop
    let continuation: AsyncStream<WiFiMonitor.Update>.Continuation
    let store: @Sendable (SourceHealth, [WiFiLink]) -> Void
    private var core: MonitorCore?
    private var events: NL80211EventSocket?
    private var registration: EventLoop.Registration?
    /// The descriptor `registration` watches (-1: a deadline alone, while there is no event socket).
    private var registeredFD: Int32 = -1
    /// When the next periodic read is due (the loop's clock, nanoseconds).
    private var nextPoll: Int64 = 0
    private var finished = false

    init(
        options: WiFiMonitor.Options, loop: EventLoop, continuation: AsyncStream<WiFiMonitor.Update>.Continuation,
        store: @escaping @Sendable (SourceHealth, [WiFiLink]) -> Void
    ) {
        self.options = options
        self.loop = loop
        self.continuation = continuation
        self.store = store
    }

    func start() throws(EventLoopError) { try loop.post { [self] in begin() } }

    /// Ends the registration and the stream, on the loop's thread.
    func stop() { try? loop.post { [self] in finish() } }

    static func now() -> Int64 { Sys.monotonicMilliseconds() }

    static func milliseconds(_ d: Duration) -> Int64 {
        let (s, attos) = d.components
        return max(1, s * 1000 + attos / 1_000_000_000_000_000)
    }

    func publish(_ update: WiFiMonitor.Update?, core: MonitorCore) {
        store(core.health, core.links)
        if let update { continuation.yield(update) }
    }

    private static func nanoseconds(_ d: Duration) -> Int64 { milliseconds(d) * 1_000_000 }

    private func begin() {
        guard !finished else { return }
        let core = MonitorCore(options: options) { () throws(NL80211Error) in try NL80211Socket.open() }
        self.core = core
        events = try? NL80211EventSocket.open()
        publish(core.refresh(cause: .initial, now: Self.now()), core: core)
        nextPoll = EventLoop.now() + Self.nanoseconds(events == nil ? options.fallbackPollInterval : options.pollInterval)
        arm()
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        if let registration { loop.cancel(registration) }
        registration = nil
        events = nil
        continuation.finish()
    }

    /// Watches the event socket (when there is one) until the next periodic read.
    private func arm() {
        let fd = events?.fd ?? -1
        if let registration, fd == registeredFD, fd >= 0 {
            loop.setDeadline(registration, nextPoll)
            return
        }
        if let registration { loop.cancel(registration) }
        registeredFD = fd
        registration = try? loop.register(fd: fd, interest: fd >= 0 ? .read : [], deadline: nextPoll) { [self] fired in
            handle(fired)
        }
    }

    private func handle(_ fired: EventLoop.Fired) {
        guard !finished, let core else { return }
        if case .ready = fired, let socket = events {
            var gathered: [NL80211.Event] = []
            var overrun = false
            var failed = false
            drain: for _ in 0..<64 {
                switch socket.receive() {
                case .messages(let m): gathered += core.stateEvents(m)
                case .overrun: overrun = true
                case .empty: break drain
                case .failed:
                    failed = true
                    break drain
                }
            }
            if failed { events = nil }
            if overrun || failed {
                publish(core.refresh(cause: .overrun, events: gathered, now: Self.now()), core: core)
            } else if !gathered.isEmpty {
                publish(core.refresh(cause: .event, events: gathered, now: Self.now()), core: core)
            }
        }
        if events == nil { events = try? NL80211EventSocket.open() }
        if EventLoop.now() >= nextPoll {
            publish(core.refresh(cause: .poll, now: Self.now()), core: core)
            let interval = events == nil || !core.health.available ? options.fallbackPollInterval : options.pollInterval
            nextPoll = EventLoop.now() + Self.nanoseconds(interval)
        }
        arm()
    }
}
