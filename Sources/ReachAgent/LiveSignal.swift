// `reach signal`'s sources and cadence, apart from the terminal.
//
// The seam: `LiveSignalFeed` gives the latest state of every modem and WiFi uplink. `MonitorLiveSignalFeed` builds it
// from GatewayReach's modem and WiFi sources, the ones `Reachability` runs, with the live view's own modem options
// (signal reports of about 1 dB, the signal polled every interval, no hold-down): a `Reachability` reports debounced
// changes, the live view wants every sample, so it reads the sources' states itself. `LiveSignalSampler` takes one
// sample per interval on an injected clock (tests use a manual one) and records it in ReachCore's `LiveSignalModel`;
// drawing is ReachCore's `LiveSignalText`; the terminal is the command's.

import GatewayReach
import ReachLog

/// The latest modems and WiFi interfaces, as far as the sources have told.
public struct LiveSignalSnapshot: Sendable, Equatable {
    public var wwan: [ModemState]
    public var wifi: [WiFiLink]
    public var wwanSource: SourceHealth
    public var wifiSource: SourceHealth
    /// Whether every source has answered at least once.
    public var complete: Bool

    public init(
        wwan: [ModemState] = [], wifi: [WiFiLink] = [], wwanSource: SourceHealth = .ok, wifiSource: SourceHealth = .ok,
        complete: Bool = false
    ) {
        self.wwan = wwan
        self.wifi = wifi
        self.wwanSource = wwanSource
        self.wifiSource = wifiSource
        self.complete = complete
    }
}

public protocol LiveSignalFeed: Sendable {
    /// Starts the sources. Call once.
    func start() async
    func latest() async -> LiveSignalSnapshot
    /// Stops the sources (closing modem ports, releasing client ids).
    func stop() async
}

/// The feed built from `ModemSource`s and a `WiFiSource` (the production ones, or fakes).
public actor MonitorLiveSignalFeed: LiveSignalFeed {
    private let modemSources: [any ModemSource]
    private let wifiSource: (any WiFiSource)?
    private let wifiInterfaces: [String]
    private var modems: [String: (SourceHealth, [ModemState])] = [:]
    private var wifi: (SourceHealth, [WiFiLink])?
    private var tasks: [Task<Void, Never>] = []

    /// - Parameter wifiInterfaces: the WiFi interfaces shown (empty: all), as `Reachability` selects them.
    public init(modems: [any ModemSource], wifi: (any WiFiSource)?, wifiInterfaces: [String] = []) {
        self.modemSources = modems
        self.wifiSource = wifi
        self.wifiInterfaces = wifiInterfaces
    }

    public func start() {
        for source in modemSources {
            let name = source.name
            tasks.append(Task { [weak self] in
                for await update in source.updates() { await self?.modem(name, update) }
            })
        }
        if let wifiSource {
            tasks.append(Task { [weak self] in
                for await update in wifiSource.updates() { await self?.wifi(update) }
            })
        }
    }

    private func modem(_ name: String, _ update: (SourceHealth, [ModemState])) { modems[name] = update }
    private func wifi(_ update: (SourceHealth, [WiFiLink])) {
        wifi = (update.0, WiFiLink.selecting(wifiInterfaces, from: update.1, health: update.0))
    }

    public func latest() -> LiveSignalSnapshot {
        var s = LiveSignalSnapshot()
        for source in modemSources {
            guard let (health, states) = modems[source.name] else { continue }
            s.wwan += states
            if !health.available { s.wwanSource = health }
        }
        if let wifi {
            s.wifiSource = wifi.0
            s.wifi = wifi.1
        }
        s.complete = modemSources.allSatisfy { modems[$0.name] != nil } && (wifiSource == nil || wifi != nil)
        return s
    }

    public func stop() async {
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
        tasks = []
    }
}

/// One sample per interval, on a clock of the caller's.
public struct LiveSignalSampler: Sendable {
    public var interval: Duration
    /// nil: until cancelled.
    public var count: Int?
    /// How long the first sample waits for every source's first answer (a modem's first read can take a few
    /// request timeouts); after that it is taken with what there is.
    public var firstSampleWait: Duration
    public var clock: any AgentClock
    public var wall: @Sendable () -> Timestamp
    /// How the model grades bars (the configuration's `signal`).
    public var signalPolicy: SignalPolicy

    public init(
        interval: Duration, count: Int?, firstSampleWait: Duration, clock: any AgentClock,
        wall: @escaping @Sendable () -> Timestamp = { .now() }, signalPolicy: SignalPolicy = .android
    ) {
        self.signalPolicy = signalPolicy
        self.interval = interval
        self.count = count
        self.firstSampleWait = firstSampleWait
        self.clock = clock
        self.wall = wall
    }

    /// Takes samples until `count` is reached or the task is cancelled; `emit` gets each one with the model after it.
    /// Samples keep to a fixed cadence from the first one (a slow `emit` does not shift the later ones; a sample
    /// whose time has already passed is taken at once, never twice).
    public func run(
        _ feed: any LiveSignalFeed, emit: (Timestamp, LiveSignalSnapshot, LiveSignalModel) async -> Void
    ) async {
        let waitUntil = clock.now() + firstSampleWait
        while !(await feed.latest().complete), clock.now() < waitUntil {
            do { try await clock.sleep(until: min(waitUntil, clock.now() + .milliseconds(50))) } catch { return }
        }
        var model = LiveSignalModel(start: wall(), signalPolicy: signalPolicy)
        var next = clock.now()
        var taken = 0
        while !Task.isCancelled {
            let snapshot = await feed.latest()
            let time = wall()
            model.record(time: time, wwan: snapshot.wwan, wifi: snapshot.wifi)
            await emit(time, snapshot, model)
            taken += 1
            if let count, taken >= count { return }
            next += interval
            let now = clock.now()
            if next < now { next = now }
            do { try await clock.sleep(until: next) } catch { return }
        }
    }
}
