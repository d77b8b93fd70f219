import Glibc
import GatewayReach
import ReachAgent
import ReachLog
import ReachTestSupport
import Testing

/// The agent's services against fake sources and a manual clock: no test here waits for a report interval or a
/// hold-down to pass in real time.
@Suite struct AgentTests {
    struct Rig {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let wifi = FakeWiFiSource()
        let lines = LineCollector()
        let agent: AgentAssembly
        let group: AgentRunner

        /// `validation` with `prober`: validation on, its rounds scripted (ValidationAgentTests).
        init(
            holdDown: Double = 5, interval: Double = 60, hysteresis: Double = 3, validation: AgentConfig.Validation? = nil,
            prober: FakeProber? = nil
        ) {
            var config = AgentConfig()
            config.report.intervalSeconds = interval
            config.changes.holdDownSeconds = holdDown
            config.changes.barHysteresisDB = hysteresis
            config.modems.enabled = false
            if let validation { config.validation = validation }
            (agent, group) = testAgent(
                config, clock: clock, route: route, lines: lines, wifi: wifi, validationRunner: prober?.runner)
        }

        func wifiLink(_ dBm: Int) -> [WiFiLink] {
            var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
            w.signalDBm = dBm
            return [w]
        }

        /// Runs the group, calls `body`, then shuts down gracefully and returns every line written.
        func run(_ body: (Rig) async throws -> Void) async throws {
            let group = self.group
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await group.run() }
                try await body(self)
                group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }

        func count(_ type: ReportEventType) -> Int { lines.of(type).count }
    }

    @Test func startWaitsForEverySourceThenReportsOnce() async throws {
        let rig = Rig()
        try await rig.run { r in
            r.route.set(Routes.via("wlan1", kind: .wifi))
            // Routes are known, WiFi not yet: no line until every source answered (or the grace ends).
            #expect(await eventually { await r.agent.hub.linesSequenced == 0 && r.lines.all.isEmpty })
            r.wifi.set(r.wifiLink(-60))
            #expect(await eventually { r.count(.start) == 1 })
            let start = try #require(r.lines.of(.start).first)
            #expect(start["status"] == .string("wifi"))
            #expect(start["event"]?["seq"] == .int(1))
        }
        #expect(rig.lines.types == [.start, .stop])
    }

    @Test func graceEndsWithoutASilentSource() async throws {
        let rig = Rig()
        try await rig.run { r in
            r.route.set(nil)
            // The grace runs from the start of the monitoring (the service's run), not from the assembly.
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(16) })
            r.clock.advance(by: .seconds(16))  // a modem's whole first read (3 × 5 s) plus one second
            #expect(await eventually { r.count(.start) == 1 })
            #expect(r.lines.of(.start).first?["sources"]?["wifi"]?["available"] == .bool(false))
        }
    }

    @Test func changesAreReportedOnceAndBlipsNever() async throws {
        let rig = Rig(holdDown: 5)
        try await rig.run { r in
            r.route.set(Routes.via("wlan1", kind: .wifi))
            r.wifi.set(r.wifiLink(-60))
            #expect(await eventually { r.count(.start) == 1 })

            // A blip: the route goes and comes back within the hold-down.
            r.route.set(nil)
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(5) })
            r.clock.advance(by: .seconds(2))
            r.route.set(Routes.via("wlan1", kind: .wifi))
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(60) })  // hold cleared
            r.clock.advance(by: .seconds(10))
            #expect(await eventually { r.count(.periodic) == 0 && r.count(.change) == 0 })

            // A loss that lasts: one change line when the hold-down ends, none before.
            r.route.set(Routes.via("wlan1", kind: .wifi, carrier: false))
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(17) })
            r.clock.advance(by: .seconds(4))
            #expect(r.count(.change) == 0)
            r.clock.advance(by: .seconds(1))
            #expect(await eventually { r.count(.change) == 1 })
            let change = try #require(r.lines.of(.change).first)
            #expect(change["event"]?["reason"]?.stringValue?.contains("lost carrier") == true)
            #expect(change["reachable"] == .bool(false))

            // The same state again: no line. Recovery: at once.
            r.route.set(Routes.via("wlan1", kind: .wifi, carrier: false))
            r.route.set(Routes.via("wlan1", kind: .wifi))
            #expect(await eventually { r.count(.change) == 2 })
            #expect(r.lines.of(.change).last?["reachable"] == .bool(true))
        }
        #expect(rig.lines.types.last == .stop)
        let seqs = rig.lines.all.compactMap { $0.1["event"]?["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(seqs.count)))
    }

    @Test func periodicLinesFollowTheInterval() async throws {
        let rig = Rig(interval: 60)
        try await rig.run { r in
            r.route.set(Routes.via("eth0", kind: .ethernet))
            r.wifi.set([])
            #expect(await eventually { r.count(.start) == 1 })
            for n in 1...5 {
                r.clock.advance(by: .seconds(60))
                #expect(await eventually { r.count(.periodic) == n })
            }
            r.clock.advance(by: .seconds(59))
            #expect(r.count(.periodic) == 5)
        }
    }

    @Test func barNoiseBelowHysteresisGivesNoLine() async throws {
        let rig = Rig(holdDown: 0, hysteresis: 3)
        try await rig.run { r in
            r.route.set(Routes.via("wlan1", kind: .wifi))
            r.wifi.set(r.wifiLink(-65))
            #expect(await eventually { r.count(.start) == 1 })
            for dBm in [-66, -67, -65, -68, -66, -64] { r.wifi.set(r.wifiLink(dBm)) }
            r.wifi.set(r.wifiLink(-70))  // crosses -66 by more than 3 dB: 3 → 2 bars
            #expect(await eventually { r.count(.change) == 1 })
            let bars = r.lines.of(.change).first?["event"]?["bars"]?.arrayValue?.first
            #expect(bars?["from"] == .int(3) && bars?["to"] == .int(2))
        }
        #expect(rig.count(.change) == 1)
    }

    @Test func reloadTakesGoodConfigAndRefusesBadOne() async throws {
        var template = Array("/tmp/reach-cfg-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf '\(dir)'") }
        let path = dir + "/reach.json"
        let rig = Rig(holdDown: 5)
        try await rig.run { r in
            r.route.set(Routes.via("wlan1", kind: .wifi))
            r.wifi.set([])
            #expect(await eventually { r.count(.start) == 1 })
            try writeFile(path, #"{"changes":{"hold_down_seconds":1},"modems":{"enabled":false}}"#)
            #expect(await ReloadService.reload(configPath: path, hub: r.agent.hub, logger: testLogger()))
            #expect(await r.agent.hub.configuration.changes.holdDownSeconds == 1)
            try writeFile(path, #"{"changes":{"hold_down_seconds":"soon"}}"#)
            #expect(await !ReloadService.reload(configPath: path, hub: r.agent.hub, logger: testLogger()))
            #expect(await r.agent.hub.configuration.changes.holdDownSeconds == 1)
            // The kept config is in force: a loss is reported after 1 s, not 5 s.
            r.route.set(nil)
            #expect(await eventually { await r.agent.hub.nextDeadline() == .seconds(1) })
            r.clock.advance(by: .seconds(1))
            #expect(await eventually { r.count(.change) == 1 })
        }
    }
}

func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw SystemError("open", errno: errno) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard write(fd, bytes, bytes.count) == bytes.count else { throw SystemError("write", errno: errno) }
}

@Suite struct WatchTextTests {
    @Test func changeLineNamesFieldsBarsAndReason() throws {
        var d = ChangeDetector(policy: .immediate)
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        s.route = Routes.via("wlan1", kind: .wifi)
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.signalDBm = -60
        s.wifi = [w]
        s.derive()
        _ = d.observe(s, at: .zero)
        var t = s
        t.route = Routes.via("wlan1", kind: .wifi, carrier: false)
        t.wifi[0].associated = false
        t.derive()
        let event = d.observe(t, at: .seconds(1))
        let e = try #require(event)
        let line = WatchText.line(.change, t, e)
        #expect(line.hasPrefix("2026-11-22T00:00:00.000Z  not reachable: wlan1 has no carrier"))
        #expect(line.contains("[status, medium, reachable, bars] route via wlan1 lost carrier;"), "\(line)")
        #expect(line.hasSuffix("wlan1 3→0 bars (-60 dBm)"), "\(line)")
        // Each detail is said once (issue 18: the bars change appeared in the brackets and again in the reason).
        #expect(line.components(separatedBy: "3→0").count == 2, "\(line)")
        #expect(WatchText.line(.start, s, nil).contains("reachable over wifi via wlan1"))
    }

    /// A modem's bars change: "[bars] /dev/x 3→2 bars", once.
    @Test func modemBarsLineSaysItOnce() throws {
        var d = ChangeDetector(policy: .immediate)
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        var m = ModemState(device: "/dev/x", protocol: .qmi)
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: -100)  // android: 3 bars
        s.wwan = [m]
        s.derive()
        _ = d.observe(s, at: .zero)
        var t = s
        t.wwan[0].signal.rsrp = -122  // android: 1 bar
        t.derive()
        let event = d.observe(t, at: .seconds(1))
        let e = try #require(event)
        let line = WatchText.line(.change, t, e)
        #expect(line.hasSuffix("  [bars] /dev/x 3→1 bars"), "\(line)")
    }
}

@Suite struct MultiTargetTests {
    /// Two targets: each has its own snapshot, detector and lines; a route change reaches both.
    @Test func eachTargetGetsItsOwnLines() async throws {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let lines = LineCollector()
        var config = AgentConfig()
        config.targets = [.defaultRoute, .address("192.0.2.10")]
        config.modems.enabled = false
        config.wifi.enabled = false
        config.changes.holdDownSeconds = 0
        let (_, group) = testAgent(config, clock: clock, route: route, lines: lines)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await group.run() }
            route.set(Routes.via("eth0", kind: .ethernet))
            #expect(await eventually { lines.of(.start).count == 2 })
            route.set(nil)
            #expect(await eventually { lines.of(.change).count == 2 })
            group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let kinds = lines.of(.change).compactMap { $0["target"]?["kind"]?.stringValue }
        #expect(Set(kinds) == ["default", "address"])
        #expect(lines.of(.stop).count == 2)
    }
}
