import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

/// The agent's hub builds every snapshot with the configured signal policy, and a reload switches it at once.
@Suite struct SignalPolicyHubTests {
    static func lteModem() -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: -110, rsrq: -12, sinr: 5)
        return m
    }

    @Test func reloadSwitchesTheProfileAtOnce() async throws {
        var config = AgentConfig()
        config.changes.holdDownSeconds = 0
        config.wifi.enabled = false
        let clock = ManualClock()
        let lines = LineCollector()
        let route = FakeRouteSource()
        let modem = FakeModemSource(name: "m")
        var part = RouteView()
        part.route = Routes.via("wwan0", kind: .wwan)
        route.set(part)
        modem.set([Self.lteModem()])
        let agent = AgentAssembly(
            config: config, configPath: nil, log: nil, prometheus: nil, onLine: lines.handler, clock: clock,
            wall: wallClock(clock), route: route, modems: [modem], wifi: nil, reloadOnSIGHUP: false, stopSignals: [], logger: testLogger())
        let hub = agent.hub
        await hub.start()
        #expect(await eventually { lines.of(.start).count == 1 })

        let start = try #require(lines.of(.start).first?["wwan"]?.arrayValue?.first)
        #expect(start["bars"] == .int(2))  // android: RSRP -110 ≥ -118
        #expect(start["bars_profile"] == .string("android"))

        var strict = config
        strict.signal.profile = .strict
        #expect(await hub.apply(strict) == ["signal"])
        // No new reading: the reload alone regrades the bars, and the change is a line at once.
        #expect(await eventually { lines.of(.change).count == 1 })
        let change = try #require(lines.of(.change).last)
        let m = try #require(change["wwan"]?.arrayValue?.first)
        #expect(m["bars"] == .int(1))  // strict: min(RSRP 1, RSRQ 4, SNR 3)
        #expect(m["bars_profile"] == .string("strict"))
        let bars = change["event"]?["bars"]?.arrayValue?.first
        #expect(bars?["from"] == .int(2) && bars?["to"] == .int(1))
        await hub.stop(reason: "test")
    }
}
