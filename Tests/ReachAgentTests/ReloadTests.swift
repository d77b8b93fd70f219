import Foundation
import GatewayReach
import ReachAgent
import ReachLog
import ReachTestSupport
import Synchronization
import Testing

/// SIGHUP applies every section of the configuration at once by rebuilding what changed: targets, modems, WiFi,
/// interface kinds, the textfile and the log level, with no "needs a restart" left. The hub runs over sources the
/// test drives (whose answers follow the configuration as the real ones do) and a manual clock.
/// What a test's fakes were handed, in order.
final class Recorded<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ e: Element) { items.withLock { $0.append(e) } }
    var all: [Element] { items.withLock { $0 } }
}

@Suite struct ReloadTests {
    /// The route source as the kernel would answer with the configured interface kinds: ppp0 is PPP unless the
    /// configuration says otherwise.
    struct KindsRoute: RouteSource {
        let base: FakeRouteSource
        let kinds: [String: InterfaceKind]
        var id: String { base.id }
        func events() throws -> AsyncStream<RouteEvent> { try base.events() }
        func resolve(_ name: String) async -> Result<[IPAddress], ResolutionError> { .success([]) }
        func compute(_ target: Target, resolved: Result<[IPAddress], ResolutionError>?) async -> RouteView {
            var v = await base.compute(target, resolved: resolved)
            if let link = v.route?.link, let kind = kinds[link.name] { v.route?.link?.kind = kind }
            return v
        }
    }

    /// One modem source per configured port, made once per port: what the production sources do, with fakes.
    final class Modems: Sendable {
        private let made = Mutex<[String: FakeModemSource]>([:])
        func sources(_ options: ReachabilityOptions) -> [any ModemSource] {
            made.withLock { made in
                options.modems.ports.map { spec in
                    if let m = made[spec.path] { return m }
                    let m = FakeModemSource(name: spec.path)
                    var state = ModemState(device: spec.path, protocol: .qmi)
                    state.registration = .home
                    state.accessTechnologies = [.lte]
                    state.signal = SignalMeasurement(rsrp: -90)
                    m.set([state])
                    made[spec.path] = m
                    return m
                }
            }
        }
    }

    final class Rig: Sendable {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let wifi = FakeWiFiSource()
        let modems = Modems()
        let lines = LineCollector()
        let level = LogLevelSwitch(.info)
        /// The options each instance's sources were last made with, by target.
        let built = Recorded<ReachabilityOptions>()
        /// The API outputs the hub started, in order.
        let outputs = Recorded<AgentOutputs>()
        let hub: AgentHub
        let dir: String

        /// - Parameter api: start the state file, Varlink socket and hooks as `reach agent` does.
        init(api: Bool = false, _ edit: (inout AgentConfig) -> Void = { _ in }) throws {
            dir = try makeTempDir("reach-reload")
            var config = AgentConfig()
            config.modems.ports = []
            config.changes.holdDownSeconds = 0
            config.report.intervalSeconds = 3600
            edit(&config)
            let (route, wifi, modems, built, outputs) = (route, wifi, modems, built, outputs)
            let sources = ReachabilitySources(
                route: { options in
                    built.append(options)
                    return KindsRoute(base: route, kinds: options.interfaceKinds)
                },
                modems: { options, _, _ in modems.sources(options) },
                wifi: { _ in wifi })
            let startAPI: @Sendable (AgentConfig, Timestamp) -> AgentOutputs = { config, started in
                let o = AgentOutputs.start(config: config, logger: testLogger(), started: started)
                outputs.append(o)
                return o
            }
            hub = AgentHub(
                config: config, log: nil, prometheus: nil, onLine: lines.handler, apiOutputs: api ? startAPI : nil,
                clock: clock, wall: wallClock(clock), sources: sources, logLevel: level, logger: testLogger())
        }

        deinit { try? FileManager.default.removeItem(atPath: dir) }

        func started() async -> Bool {
            await hub.start()
            route.set(Routes.via("ppp0", kind: .ppp))
            var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
            w.signalDBm = -60
            wifi.set([w])
            return await eventually { self.lines.of(.start).count == (await self.hub.targetList.count) }
        }

        func reload(_ edit: (inout AgentConfig) -> Void) async -> [String] {
            var config = await hub.configuration
            edit(&config)
            return await hub.apply(config)
        }
    }

    @Test func targetsComeAndGoWithTheirOwnStartAndStopLines() async throws {
        let rig = try Rig()
        #expect(await rig.started())
        let changed = await rig.reload { $0.targets = [.defaultRoute, .address("192.0.2.10")] }
        #expect(changed == ["targets"])
        #expect(await eventually { rig.lines.of(.start).count == 2 })
        #expect(rig.lines.of(.start).last?["target"]?["kind"] == .string("address"))
        #expect(rig.lines.of(.change).isEmpty, "a kept target reports no change for a reload")

        _ = await rig.reload { $0.targets = [.address("192.0.2.10")] }
        #expect(await eventually { rig.lines.of(.stop).count == 1 })
        let stop = try #require(rig.lines.of(.stop).first)
        #expect(stop["target"]?["kind"] == .string("default"))
        #expect(stop["event"]?["reason"] == .string("target removed from the configuration"))
        #expect(await rig.hub.targetList == [.address("192.0.2.10")])
        await rig.hub.stop(reason: "graceful shutdown")
        #expect(rig.lines.of(.stop).count == 2)
        let seqs = rig.lines.all.compactMap { $0.1["event"]?["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(seqs.count)))
    }

    @Test func interfaceKindsRebuildTheRouteAnswer() async throws {
        let rig = try Rig()
        #expect(await rig.started())
        #expect(rig.lines.of(.start).first?["medium"] == .string("other"))
        // ppp0 is the modem behind pppd: said in the configuration, seen in the next line without a restart.
        _ = await rig.reload { $0.interfaceKinds = ["ppp0": .wwan] }
        #expect(await eventually { rig.lines.of(.change).last?["medium"] == .string("wwan") })
        #expect(rig.lines.of(.change).last?["status"] == .string("wwan"))
        await rig.hub.stop(reason: "graceful shutdown")
    }

    @Test func modemPortsAndWiFiAreFollowedAsConfigured() async throws {
        let rig = try Rig()
        #expect(await rig.started())
        #expect(rig.lines.of(.start).first?["wwan"]?.arrayValue?.isEmpty == true)
        // A modem port configured: its modem is in the next line.
        _ = await rig.reload { $0.modems.ports = [ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi)] }
        #expect(await eventually { rig.lines.of(.change).last?["wwan"]?.arrayValue?.count == 1 })
        #expect(rig.lines.of(.change).last?["wwan_status"] == .string("4g"))
        // WiFi switched off: its link leaves, and the source says so in one word.
        _ = await rig.reload { $0.wifi.enabled = false }
        #expect(await eventually { rig.lines.of(.change).last?["sources"]?["wifi"]?["reason"] == .string("disabled") })
        // The port removed again: the modem leaves.
        _ = await rig.reload { $0.modems.ports = [] }
        #expect(await eventually { rig.lines.of(.change).last?["wwan"]?.arrayValue?.isEmpty == true })
        await rig.hub.stop(reason: "graceful shutdown")
    }

    @Test func theTextfileAndTheLogLevelFollowTheConfiguration() async throws {
        let rig = try Rig()
        #expect(await rig.started())
        let prom = rig.dir + "/reach.prom"
        _ = await rig.reload {
            $0.prometheusTextfile = prom
            $0.logLevel = .debug
        }
        #expect(rig.level.level == .debug)
        // The new sink writes at the next event.
        rig.route.set(nil)
        #expect(await eventually { (try? String(contentsOfFile: prom, encoding: .utf8))?.contains("reach_reachable{target=\"default\"} 0") == true })
        _ = await rig.reload { $0.prometheusTextfile = nil }
        try FileManager.default.removeItem(atPath: prom)
        rig.route.set(Routes.via("ppp0", kind: .ppp))
        #expect(await eventually { rig.lines.of(.change).count == 2 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(!FileManager.default.fileExists(atPath: prom), "the removed textfile is not written again")
        await rig.hub.stop(reason: "graceful shutdown")
    }

    /// The keys that shape the route answer (`uplinks`, `interface_underlays`, `clat`) reach the route source at once:
    /// the route is asked again with them, no notice needed, and a kept target reports no change for the reload.
    @Test func routeRulesReachTheRouteSourceAtOnce() async throws {
        let rig = try Rig()
        #expect(await rig.started())
        let asked = rig.route.computations
        let changed = await rig.reload {
            $0.uplinks = [UplinkSpec(interface: "ppp0", role: .primary)]
            $0.interfaceUnderlays = ["tun0": "ppp0"]
            $0.platPrefix = IPPrefix("2001:db8:64::/96")!
        }
        #expect(changed == ["interface_underlays", "clat", "uplinks"])
        #expect(await eventually { rig.route.computations > asked })
        let last = try #require(rig.built.all.last)
        #expect(last.uplinks == [UplinkSpec(interface: "ppp0", role: .primary)])
        #expect(last.underlays.interfaceUnderlays == ["tun0": "ppp0"])
        #expect(last.underlays.platPrefix.description == "2001:db8:64::/96")
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.lines.of(.change).isEmpty)
        await rig.hub.stop(reason: "graceful shutdown")
    }

    /// One target reports the uplinks' changes (the default one when watched). A reload that removes it hands the
    /// duty to the target left, which takes the uplinks as they are: the next change of a backup is one line, its.
    @Test func uplinkChangesMoveToTheTargetLeft() async throws {
        let rig = try Rig { $0.targets = [.address("192.0.2.10"), .defaultRoute] }
        await rig.hub.start()
        rig.route.set(DualWANParts.part())
        rig.wifi.set([])
        #expect(await eventually { rig.lines.of(.start).count == 2 })
        rig.route.set(DualWANParts.part(wwan0Carrier: false))
        #expect(await eventually { rig.lines.of(.change).count == 1 })
        #expect(rig.lines.of(.change)[0]["target"]?["kind"] == .string("default"))

        _ = await rig.reload { $0.targets = [.address("192.0.2.10")] }
        #expect(await eventually { rig.lines.of(.stop).count == 1 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.lines.of(.change).count == 1, "taking over the uplinks is not a change")
        rig.route.set(DualWANParts.part())
        #expect(await eventually { rig.lines.of(.change).count == 2 })
        let back = rig.lines.of(.change)[1]
        #expect(back["target"]?["kind"] == .string("address"))
        #expect(back["event"]?["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("wwan0")])
        #expect(back["event"]?["reason"] == .string("uplink wwan0 reachable again"))
        await rig.hub.stop(reason: "graceful shutdown")
        #expect(rig.lines.of(.change).count == 2)
    }

    /// The state file follows every determination, not only the lines (a signal that moves within its bars), and a
    /// changed `api` starts the outputs again where it now says: the new state file appears, the old socket goes, and
    /// the old state file is not marked stopped (the agent runs on). The last state, at the end, says `stopped`.
    @Test func theStateFollowsEveryDeterminationAndApiReloads() async throws {
        let base = try makeTempDir("reach-reload-api")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let rig = try Rig(api: true) {
            $0.api.stateDirectory = base + "/run1"
            $0.api.hooksDirectory = nil
        }
        func state(_ dir: String) -> JSON? {
            FileManager.default.contents(atPath: base + "/" + dir + "/state.json").flatMap { try? JSON.parse(bytes: [UInt8]($0)) }
        }
        func signal(_ s: JSON?) -> JSON? { s?["targets"]?.arrayValue?.first?["wifi"]?.arrayValue?.first?["signal_dbm"] }
        #expect(await rig.started())
        #expect(await eventually { signal(state("run1")) == .int(-60) })
        #expect(state("run1")?["agent"]?["last_seq"] == .int(1))
        #expect(state("run1")?["sources"]?["wifi"]?["updated"] != nil)

        // -61 dBm: the same bars, so no line; the state shows it all the same.
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.signalDBm = -61
        rig.wifi.set([w])
        #expect(await eventually { signal(state("run1")) == .int(-61) })
        #expect(rig.lines.of(.change).isEmpty)

        let changed = await rig.reload { $0.api.stateDirectory = base + "/run2" }
        #expect(changed == ["api"])
        #expect(await eventually { signal(state("run2")) == .int(-61) })
        #expect(rig.outputs.all.count == 2)
        #expect(!FileManager.default.fileExists(atPath: base + "/run1/" + AgentConfig.API.socketName))
        #expect(FileManager.default.fileExists(atPath: base + "/run2/" + AgentConfig.API.socketName))
        #expect(state("run1")?["agent"]?["state"] == .string("running"))

        await rig.hub.stop(reason: "graceful shutdown")
        #expect(state("run2")?["agent"]?["state"] == .string("stopped"))
        #expect(state("run2")?["agent"]?["last_seq"] == .int(2))
        #expect(state("run2")?["targets"]?.arrayValue?.first?["last_event"]?["type"] == .string("stop"), "the last state names the stop line")
        #expect(!FileManager.default.fileExists(atPath: base + "/run2/" + AgentConfig.API.socketName))
    }
}
