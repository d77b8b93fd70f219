import GatewayReach
import ReachAgent
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
        let hub = StatusHub(
            config: config, expecting: ["route", "modem:m"], startupGrace: .seconds(5), log: nil, prometheus: nil,
            onLine: lines.handler, clock: clock, wall: wallClock(clock), logger: testLogger())
        var route = RouteView()
        route.route = Routes.via("wwan0", kind: .wwan)
        await hub.setRoute(0, route)
        await hub.setModems(source: "m", .ok, [Self.lteModem()])

        let start = try #require(lines.of(.start).first?["wwan"]?.arrayValue?.first)
        #expect(start["bars"] == .int(2))  // android: RSRP -110 ≥ -118
        #expect(start["bars_profile"] == .string("android"))

        var strict = config
        strict.signal.profile = .strict
        #expect(await hub.apply(strict).isEmpty)  // no restart needed
        await hub.setModems(source: "m", .ok, [Self.lteModem()])  // the same reading, a new snapshot
        let change = try #require(lines.of(.change).last)
        let modem = try #require(change["wwan"]?.arrayValue?.first)
        #expect(modem["bars"] == .int(1))  // strict: min(RSRP 1, RSRQ 4, SNR 3)
        #expect(modem["bars_profile"] == .string("strict"))
        let bars = change["event"]?["bars"]?.arrayValue?.first
        #expect(bars?["from"] == .int(2) && bars?["to"] == .int(1))
    }
}
