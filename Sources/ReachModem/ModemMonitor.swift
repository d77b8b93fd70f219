// Watching one modem without polling it: the modem's own indications drive the updates; a poll at a configurable
// interval covers only what the modem cannot announce (and everything when it announces nothing).
//
//     let monitor = ModemMonitor(ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi))
//     for await update in monitor.updates() {
//         print(update.cause, update.state.generation, update.state.bars(.android))
//     }
//
// A port that vanishes (HUP/EOF/EIO, USB unplug) yields `present: false` (cause `.portLost`) and is reopened with
// exponential backoff; the first successful read after that is `.reopened`.

import ReachCore
import ReachGLib
import ReachLog
import ReachTime
import Synchronization

/// Why a `ModemUpdate` was sent.
public enum ModemUpdateCause: String, Sendable, Equatable, Codable {
    /// The first read after starting.
    case initialRead = "initial_read"
    /// The modem announced a change (QMI indication, MBIM notification).
    case indication
    /// The fallback poll found a change.
    case poll
    /// The port went away or stopped answering.
    case portLost = "port_lost"
    /// Opening (or reopening) the port failed; a retry is scheduled.
    case openFailed = "open_failed"
    /// The port is back and was read again.
    case reopened
    /// The modem's worker process died, hung or sent something malformed (`IsolatedModemMonitor`); it is started
    /// again with the reopen backoff.
    case workerFailed = "worker_failed"
}

/// One modem's state after a change.
public struct ModemUpdate: Sendable, Equatable, Codable {
    public var state: ModemState
    public var cause: ModemUpdateCause

    public init(state: ModemState, cause: ModemUpdateCause) {
        self.state = state
        self.cause = cause
    }
}

public struct ModemMonitorOptions: Sendable, Codable {
    /// Timeouts, proxy, sysfs root, hardware database and logger, as for `ModemReader.read`.
    public var read: ModemReadOptions
    /// How often to re-read what the modem does not announce. nil: never poll (updates come from indications only;
    /// tests use this to prove a change arrived through an indication).
    public var pollInterval: Duration?
    /// Delays between attempts to reopen a lost port.
    public var reopen: Backoff
    /// How finely the modem is asked to report its signal: at the bar boundaries (the agent) or on every change of
    /// about 1 dB (`reach signal`).
    public var signalReporting: SignalReporting
    /// How often the cells (band, channel, carriers, neighbours) are read again; no indication announces them.
    /// nil: only with the first read.
    public var cellInterval: Duration?
    /// When set, a modem that cannot announce its signal has the signal alone polled this often (the live view's
    /// interval), while the rest it cannot announce (the SIM) keeps `pollInterval`.
    public var signalPollInterval: Duration?
    /// How often the data sessions are asked again although indications announce them: some firmware sends them
    /// late or never (ModemManager commit 291300cf, the Netgear AC341U; quectel-CM polls for the same reason). They
    /// are also asked again at every registration change. nil: only then.
    public var sessionRequery: Duration?

    public init(
        read: ModemReadOptions = ModemReadOptions(), pollInterval: Duration? = Defaults.duration(Defaults.modemPollIntervalSeconds), reopen: Backoff = Backoff(),
        signalReporting: SignalReporting = .barBoundaries, cellInterval: Duration? = .seconds(60),
        signalPollInterval: Duration? = nil, sessionRequery: Duration? = Defaults.duration(Defaults.modemSessionRequerySeconds)
    ) {
        self.read = read
        self.pollInterval = pollInterval
        self.reopen = reopen
        self.signalReporting = signalReporting
        self.cellInterval = cellInterval
        self.signalPollInterval = signalPollInterval
        self.sessionRequery = sessionRequery
    }
}

/// Watches one modem control port.
public struct ModemMonitor: Sendable {
    public let port: ModemPortSpec
    public let options: ModemMonitorOptions

    public init(_ port: ModemPortSpec, options: ModemMonitorOptions = ModemMonitorOptions()) {
        self.port = port
        self.options = options
    }

    /// The modem's state: once after the first read, then whenever it changes (identical states are not repeated).
    /// Each call opens its own session on the port, so call it once per monitor. The stream runs until the
    /// consumer stops iterating or cancels its task; the request in flight then ends (answered, or at its timeout)
    /// and the port is closed politely, every client id released: a cancelled request would leave the modem owing
    /// an answer, and the close would then skip the releases (see `GLibCallGroup.sawUnansweredCall`), leaving ids
    /// allocated in its firmware at every stop.
    public func updates() -> AsyncStream<ModemUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: ModemUpdate.self, bufferingPolicy: .bufferingNewest(64))
        let stop = StopSignal()
        Task { [self] in
            await self.run(stop: stop) { continuation.yield($0) }
            continuation.finish()
        }
        continuation.onTermination = { _ in stop.fire() }
        return stream
    }

    /// The monitor with its stop in the caller's hands (a modem worker process, whose parent ends it by closing the
    /// socket): `send` gets each update; returns once `stop` fired and the port is closed, its client ids released.
    func run(stop: StopSignal, send: (ModemUpdate) -> Void) async {
        if options.read.logger.logLevel <= .debug { GLibLog.route(to: options.read.logger) }
        let (_, prepared) = ModemReader.prepare([port], options: options.read)
        var (spec, quirks) = prepared[0]
        let logger = options.read.logger
        var last: ModemState?
        var attempt = 0
        func emit(_ state: ModemState, _ cause: ModemUpdateCause) {
            guard state != last else { return }
            last = state
            send(ModemUpdate(state: state, cause: cause))
        }

        while !stop.fired {
            if attempt > 0 {
                let delay = options.reopen.delay(attempt: attempt - 1)
                logger.debug("Reopening modem port", metadata: ["modem.device": "\(spec.path)", "delay": "\(delay)"])
                guard await stop.sleep(for: delay) else { break }
            }
            attempt += 1
            // A port named without a protocol while it was unplugged: sysfs may tell it now that it is back.
            if spec.protocol == nil, let again = ModemReader.prepare([port], options: options.read).1.first {
                (spec, quirks) = again
            }
            let opened = await withDeadline(options.read.readTimeout) { [spec, quirks] () async -> Result<ModemChannel, Error> in
                do {
                    return .success(try await ModemChannel.open(spec, options: options.read, quirks: quirks))
                } catch {
                    return .failure(error)
                }
            }
            let channel: ModemChannel
            switch opened {
            case let .finished(.success(c)):
                channel = c
            case let .finished(.failure(error)):
                emit(ModemChannel.failedState(spec, error), last == nil ? .initialRead : .openFailed)
                continue
            case let .timedOut(late):
                if let late, case let .success(c) = late { await Self.close(c) }
                let silent = ModemFault(.notAnswering, waitedMs: Int(options.read.readTimeout.milliseconds))
                emit(ModemChannel.failedState(spec, ModemError("no answer while opening", silent), present: true),
                     last == nil ? .initialRead : .openFailed)
                continue
            }

            if stop.fired {  // nobody listens any more: close what was opened, ask nothing
                await Self.close(channel)
                break
            }
            let wasRunning = last != nil
            let readOutcome = await withDeadline(options.read.readTimeout) { await channel.readAll() }
            emit(await channel.state, wasRunning ? .reopened : .initialRead)
            guard case .finished(true) = readOutcome, !stop.fired else {
                await Self.close(channel)
                continue
            }
            attempt = 0
            await watch(channel, stop: stop, emit: emit)
            await Self.close(channel)
            if stop.fired { break }
            attempt = 1
        }
    }

    /// Closes a channel even when the monitor's task was cancelled (its consumer went away): the release of every
    /// client id must reach the modem, or each stop leaves ids allocated in its firmware until it runs out (QMI
    /// CTL Release Client ID, as libqmi's `qmi_device_release_client` sends it; ModemManager releases its clients
    /// the same way when it closes a port). An unstructured task does not inherit the cancellation.
    static func close(_ channel: ModemChannel) async {
        await Task { await channel.close() }.value
    }

    /// Subscribes to the channel's indications and polls what they do not cover, until the port is lost or the
    /// consumer goes away.
    private func watch(_ channel: ModemChannel, stop: StopSignal, emit: (ModemState, ModemUpdateCause) -> Void) async {
        let (events, sink) = AsyncStream.makeStream(of: ChannelEvent.self, bufferingPolicy: .unbounded)
        stop.onFire { sink.finish() }
        guard !stop.fired else { return }
        let support = await channel.subscribe({ sink.yield($0) }, signal: options.signalReporting)
        options.read.logger.debug(
            "Modem indications", metadata: [
                "modem.device": "\(port.path)", "registration": "\(support.registration)",
                "signal": "\(support.signal)", "sim": "\(support.sim)",
            ])
        var poller: Task<Void, Never>?
        let everythingAnnounced = support.registration && support.signal && support.sim
        if let interval = options.pollInterval, !everythingAnnounced {
            poller = Task {
                while !Task.isCancelled {
                    do { try await Timers.shared.sleep(for: interval) } catch { return }
                    sink.yield(.poll)
                }
            }
        }
        func every(_ interval: Duration?, _ event: ChannelEvent) -> Task<Void, Never>? {
            guard let interval else { return nil }
            return Task {
                while !Task.isCancelled {
                    do { try await Timers.shared.sleep(for: interval) } catch { return }
                    sink.yield(event)
                }
            }
        }
        let cellReader = every(options.cellInterval, .refreshCells)
        let signalPoller = support.signal ? nil : every(options.signalPollInterval, .pollSignal)
        let requerier = await channel.observesDataSessions ? every(options.sessionRequery, .requery) : nil
        defer {
            poller?.cancel()
            cellReader?.cancel()
            signalPoller?.cancel()
            requerier?.cancel()
            sink.finish()
        }
        for await event in events {
            // Nobody listens any more: what is still queued is not asked (the request in flight has finished).
            if stop.fired { return }
            // The fallback poll, a cell or signal refresh, or the data sessions asked again: each asks the modem
            // within the read deadline.
            let ask: (@Sendable () async -> Bool)?
            switch event {
            case .poll: ask = { await channel.poll(support) }
            case .pollSignal: ask = { await channel.poll(IndicationSupport(registration: true, signal: false, sim: true)) }
            // Only the cells: everything else comes from indications or the poll.
            case .refreshCells: ask = { await channel.poll(IndicationSupport(registration: true, signal: true, sim: true), cells: true) }
            case .requery: ask = { await channel.requery() }
            default: ask = nil
            }
            if let ask {
                let ok = await withDeadline(options.read.readTimeout) { await ask() }
                let state = await channel.state
                guard case .finished(true) = ok else {
                    emit(state, .portLost)
                    return
                }
                emit(state, .poll)
                continue
            }
            let alive = await channel.handle(event)
            emit(await channel.state, alive ? .indication : .portLost)
            if !alive { return }
            // A registration change may have ended or started a session that some firmware does not announce.
            if await channel.takeRequeryRequest() { sink.yield(.requery) }
        }
    }
}

/// The consumer of a monitor went away: the monitor ends at its next step instead of being cancelled mid-request.
final class StopSignal: Sendable {
    private let state = Mutex<(fired: Bool, actions: [@Sendable () -> Void], sleeps: [Task<Void, Never>])>((false, [], []))

    var fired: Bool { state.withLock { $0.fired } }

    func fire() {
        let (actions, sleeps) = state.withLock { s -> ([@Sendable () -> Void], [Task<Void, Never>]) in
            if s.fired { return ([], []) }
            s.fired = true
            defer { (s.actions, s.sleeps) = ([], []) }
            return (s.actions, s.sleeps)
        }
        for a in actions { a() }
        for t in sleeps { t.cancel() }
    }

    /// Runs `action` when the signal fires (at once if it has).
    func onFire(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.fired { return true }
            s.actions.append(action)
            return false
        }
        if now { action() }
    }

    /// Sleeps for `duration`; false when the signal fired first.
    func sleep(for duration: Duration) async -> Bool {
        let sleeper = Task<Void, Never> { _ = try? await Timers.shared.sleep(for: duration) }
        let registered = state.withLock { s -> Bool in
            if s.fired { return false }
            s.sleeps.append(sleeper)
            return true
        }
        if !registered { sleeper.cancel() }
        await sleeper.value
        state.withLock { s in s.sleeps.removeAll { $0 == sleeper } }
        return !fired
    }
}

extension ModemMonitorOptions {
    /// Everything that shapes how a monitor asks its modem (timeouts, access, worker, signal thresholds and reporting,
    /// cadences, reopen backoff), as text: two monitors of one port with equal keys would ask it identically, so a
    /// process needs only one session for both; a new key (a reload that changed any of these) needs a new session.
    /// The logger is not part of it: where records go does not change what the modem is asked.
    public var sessionKey: String {
        let r = read
        let policy = r.signalPolicy
        let rules = BarFamily.allCases.map { "\($0.rawValue)=\(policy.rule($0))" }.joined(separator: ";")
        var parts = [
            "timeout=\(r.requestTimeout)", "read=\(r.readTimeout)", "access=\(r.access.rawValue)", "sysfs=\(r.sysfsRoot)",
            "hwdb=\(r.hardwareDatabasePath ?? "")",
            "worker=\(r.worker.map { ([$0.executable] + $0.arguments).joined(separator: " ") } ?? "none")",
            "signal=\(policy.name)/\(policy.nsaPrimary.rawValue)/\(rules)",
        ]
        parts += [
            "poll=\(pollInterval.map { "\($0)" } ?? "none")",
            "reopen=\(reopen.initial)/\(reopen.maximum)/\(reopen.multiplier)/\(reopen.jitter)",
            "reporting=\(signalReporting)", "cells=\(cellInterval.map { "\($0)" } ?? "none")",
            "signal_poll=\(signalPollInterval.map { "\($0)" } ?? "none")",
            "requery=\(sessionRequery.map { "\($0)" } ?? "none")",
        ]
        return parts.joined(separator: "|")
    }
}
