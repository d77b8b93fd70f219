import Testing

@testable import ReachCore

/// `MonitorEngine` driven by hand, with time as a parameter: a gateway whose uplink is WiFi (wlan1, on an
/// AR9271-class USB adapter) with an LTE modem beside it (Quectel EG25-G on qmi_wwan: /dev/cdc-wdm0 → wwan0).
/// Nothing here sleeps; every deadline is asked for and then reached by a `tick` at that moment.
private enum Box {
    static let t0 = Timestamp(seconds: 1_795_305_600)

    static func at(_ seconds: Double) -> MonitorTime {
        let d = Duration.milliseconds(Int64(seconds * 1000))
        return MonitorTime(monotonic: d, wall: Timestamp(seconds: t0.seconds + Int64(seconds)))
    }

    static func route(_ name: String, _ kind: InterfaceKind, carrier: Bool = true) -> RouteView {
        var v = RouteView()
        v.route = RouteLookup(
            family: .ipv4, type: .unicast,
            link: LinkState(name: name, index: 3, kind: kind, adminUp: true, carrier: carrier),
            gateway: kind == .wwan ? nil : "192.0.2.1")
        return v
    }

    static let onWiFi = route("wlan1", .wifi)
    static let onLTE = route("wwan0", .wwan)
    static let noRoute = RouteView()

    static func wlan1(_ dBm: Int) -> [WiFiLink] {
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.signalDBm = dBm
        return [w]
    }

    static func eg25(registered: Bool = true) -> [ModemState] {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.accessTechnologies = [.lte]
        m.registration = registered ? .home : .searching
        m.signal = SignalMeasurement(rsrp: -90)
        return [m]
    }

    static func settings(holdDown: Double = 5, interval: Double? = nil) -> MonitorSettings {
        MonitorSettings(
            policy: ChangePolicy(holdDown: .milliseconds(Int64(holdDown * 1000)), barHysteresisDB: 3),
            startupGrace: .seconds(16), reportInterval: interval.map { .seconds($0) })
    }

    static func engine(holdDown: Double = 5, interval: Double? = nil) -> MonitorEngine {
        MonitorEngine(
            target: .defaultRoute, settings: settings(holdDown: holdDown, interval: interval),
            expecting: [.route, .modem("/dev/cdc-wdm0"), .wifi], at: .zero)
    }

    /// An engine past its start line, on WiFi at 3 bars with the modem registered.
    static func running(holdDown: Double = 5, interval: Double? = nil) -> MonitorEngine {
        var e = engine(holdDown: holdDown, interval: interval)
        _ = e.receive(.route(onWiFi), at: at(0))
        _ = e.receive(.modems(source: "/dev/cdc-wdm0", .ok, eg25()), at: at(0))
        _ = e.receive(.wifi(.ok, wlan1(-60)), at: at(0))
        return e
    }
}

@Suite struct MonitorEngineTests {
    @Test func theStartWaitsForEverySourceThenComesOnce() {
        var e = Box.engine()
        #expect(e.receive(.route(Box.onWiFi), at: Box.at(0.1)).isEmpty)
        #expect(e.receive(.modems(source: "/dev/cdc-wdm0", .ok, Box.eg25()), at: Box.at(0.5)).isEmpty)
        #expect(e.nextDeadline == .seconds(16))
        let events = e.receive(.wifi(.ok, Box.wlan1(-60)), at: Box.at(0.7))
        #expect(events.map(\.kind) == [.start])
        #expect(events[0].reason == "first determination")
        #expect(events[0].change?.initial == true)
        #expect(events[0].snapshot.status == .wifi && events[0].snapshot.wwanStatus == .g4)
        #expect(e.phase == .running)
        // The same answers again: nothing to tell (AFNetworking #4302).
        #expect(e.receive(.wifi(.ok, Box.wlan1(-60)), at: Box.at(1)).isEmpty)
        #expect(e.receive(.route(Box.onWiFi), at: Box.at(1)).isEmpty)
    }

    @Test func aSilentSourceHoldsTheStartOnlyUntilTheGraceEnds() {
        var e = Box.engine()
        _ = e.receive(.route(Box.onWiFi), at: Box.at(0))
        _ = e.receive(.wifi(.ok, Box.wlan1(-60)), at: Box.at(0))
        #expect(e.receive(.tick, at: Box.at(15.9)).isEmpty)
        let events = e.receive(.tick, at: Box.at(16))
        #expect(events.map(\.kind) == [.start])
        #expect(events[0].snapshot.wwanSource == .notReadYet)
        // Its first answer later is a change like any other (a modem appearing is not a loss: no hold-down), once the
        // modem has been quiet for the settle (`ChangePolicy.modemSettle`).
        #expect(e.receive(.modems(source: "/dev/cdc-wdm0", .ok, Box.eg25()), at: Box.at(17)).isEmpty)
        #expect(e.nextDeadline == .seconds(17.5))
        let later = e.receive(.tick, at: Box.at(17.5))
        #expect(later.map(\.kind) == [.change])
        #expect(later[0].change?.changed == [.wwanStatus, .bars])
    }

    @Test func aLossIsHeldDownAndReportedOnlyIfItLasts() {
        var e = Box.running(holdDown: 5)
        // DHCP renew: the route goes and comes back within the hold-down (Alamofire #2707): nothing.
        #expect(e.receive(.route(Box.noRoute), at: Box.at(10)).isEmpty)
        #expect(e.nextDeadline == .seconds(15))
        #expect(e.latest?.status == ReachabilityStatus.none)  // the latest determination shows it at once
        #expect(e.receive(.route(Box.onWiFi), at: Box.at(12)).isEmpty)
        #expect(e.nextDeadline == nil)
        #expect(e.receive(.tick, at: Box.at(15)).isEmpty)
        // Carrier lost for good: one change when the hold-down ends, none before, with the fields held until then.
        #expect(e.receive(.route(Box.route("wlan1", .wifi, carrier: false)), at: Box.at(20)).isEmpty)
        #expect(e.receive(.tick, at: Box.at(24.9)).isEmpty)
        let events = e.receive(.tick, at: Box.at(25))
        #expect(events.map(\.kind) == [.change])
        #expect(events[0].change?.reason == "route via wlan1 lost carrier")
        #expect(events[0].snapshot.time == Box.at(25).wall)
        #expect(events[0].held.isEmpty)
        // Failover to LTE is better: at once.
        let failover = e.receive(.route(Box.onLTE), at: Box.at(26))
        #expect(failover.map(\.kind) == [.change])
        #expect(failover[0].snapshot.status == .wwan)
    }

    @Test func periodicEventsKeepTheirCadenceAcrossLateTicks() {
        var e = Box.running(interval: 60)
        #expect(e.nextDeadline == .seconds(60))
        #expect(e.receive(.tick, at: Box.at(59)).isEmpty)
        #expect(e.receive(.tick, at: Box.at(60)).map(\.kind) == [.periodic])
        // A tick that comes late (a suspended box) gives one periodic event, and the cadence stays on the grid.
        #expect(e.receive(.tick, at: Box.at(250)).map(\.kind) == [.periodic])
        #expect(e.nextDeadline == .seconds(300))
        // A hold-down due before the next periodic event comes first.
        _ = e.receive(.route(Box.noRoute), at: Box.at(280))
        #expect(e.nextDeadline == .seconds(285))
        #expect(e.receive(.tick, at: Box.at(285)).map(\.kind) == [.change])
        #expect(e.receive(.tick, at: Box.at(300)).map(\.kind) == [.periodic])
    }

    @Test func stopBeforeTheStartStillGivesTheStartThenTheStop() {
        var e = Box.engine()
        _ = e.receive(.route(Box.onWiFi), at: Box.at(0))
        let events = e.receive(.stop(reason: "graceful shutdown"), at: Box.at(1))
        #expect(events.map(\.kind) == [.start, .stop])
        #expect(events[1].reason == "graceful shutdown")
        #expect(e.phase == .stopped && e.nextDeadline == nil)
        #expect(e.receive(.route(Box.noRoute), at: Box.at(2)).isEmpty)
        #expect(e.receive(.tick, at: Box.at(100)).isEmpty)
    }

    @Test func newRulesApplyToTheHoldInProgress() {
        var e = Box.running(holdDown: 5)
        _ = e.receive(.route(Box.noRoute), at: Box.at(10))
        #expect(e.nextDeadline == .seconds(15))
        var s = Box.settings(holdDown: 1)
        s.reportInterval = .seconds(30)
        #expect(e.receive(.configure(s), at: Box.at(10.5)).isEmpty)
        #expect(e.nextDeadline == .seconds(11))
        #expect(e.receive(.tick, at: Box.at(11)).map(\.kind) == [.change])
        #expect(e.nextDeadline == .seconds(40.5))
    }

    @Test func switchingASourceOffIsAChangeAndItsWordIsDisabled() {
        var e = Box.running(holdDown: 0)
        var s = Box.settings(holdDown: 0)
        s.wifiEnabled = false
        let events = e.receive(.configure(s), at: Box.at(3))
        #expect(events.map(\.kind) == [.change])
        #expect(events[0].snapshot.wifiSource == .disabled)
        #expect(events[0].snapshot.wifi.isEmpty)
        #expect(events[0].change?.bars == [BarChange(link: LinkKey(.wifi, "wlan1"), from: 3, to: nil)])
    }

    @Test func aModemSourceRemovedTakesItsModemsAlong() {
        var e = Box.running(holdDown: 0)
        let events = e.receive(.modemSourceRemoved("/dev/cdc-wdm0"), at: Box.at(3))
        #expect(events.first?.snapshot.wwan.isEmpty == true)
        #expect(events.first?.change?.changed.contains(.wwanStatus) == true)
        // A source removed while the start waits for it no longer holds the start.
        var waiting = Box.engine()
        _ = waiting.receive(.route(Box.onWiFi), at: Box.at(0))
        _ = waiting.receive(.wifi(.ok, Box.wlan1(-60)), at: Box.at(0))
        #expect(waiting.receive(.modemSourceRemoved("/dev/cdc-wdm0"), at: Box.at(1)).map(\.kind) == [.start])
    }

    /// YYReachability with allowWWAN = NO (`YYReachabilityStatusFromFlags`): a reachable WWAN route is WiFi.
    @Test func allowWWANOffFollowsYYReachability() {
        var s = Box.settings()
        s.allowWWAN = false
        var e = MonitorEngine(target: .defaultRoute, settings: s, expecting: [.route], at: .zero)
        let events = e.receive(.route(Box.onLTE), at: Box.at(0))
        #expect(events.first?.snapshot.status == .wifi)
        #expect(events.first?.snapshot.medium == .wwan)
        #expect(events.first?.snapshot.flags.contains(.isWWAN) == true)
    }

    /// A reload that changes the signal policy (android → strict) grades the same reading again at once: the EG25-G
    /// at RSRP -110 / RSRQ -12 / SINR 5 is 2 bars on Android's LTE RSRP thresholds and 1 under strict (the worst of
    /// RSRP, RSRQ and SINR), reported as a bar change without waiting for the modem's next reading. (No bar
    /// hysteresis here, so that the bars are each profile's own.)
    @Test func aNewSignalPolicyGradesTheBarsAgainAtOnce() throws {
        var e = Box.running(holdDown: 0)
        var s = Box.settings(holdDown: 0)
        s.policy = ChangePolicy(holdDown: .zero, barHysteresisDB: 0)
        _ = e.receive(.configure(s), at: Box.at(0.5))
        var weak = Box.eg25()
        weak[0].signal = SignalMeasurement(rsrp: -110, rsrq: -12, sinr: 5)
        let first = e.receive(.modems(source: "/dev/cdc-wdm0", .ok, weak), at: Box.at(1))
        #expect(first.first?.change?.bars == [BarChange(link: LinkKey(.wwan, "/dev/cdc-wdm0"), from: 4, to: 2)])
        s.signalPolicy = .strict
        let events = e.receive(.configure(s), at: Box.at(2))
        #expect(events.map(\.kind) == [.change])
        #expect(events[0].snapshot.signalPolicy == .strict)
        #expect(events[0].change?.bars == [BarChange(link: LinkKey(.wwan, "/dev/cdc-wdm0"), from: 2, to: 1)])
        let line = ReportLine.json(events[0], seq: 3)
        #expect(line["wwan"]?.arrayValue?.first?["bars_profile"] == .string("strict"))
        // The same policy again is no reload of the bars.
        #expect(e.receive(.configure(s), at: Box.at(3)).isEmpty)
    }

    /// When each kind of source was last heard from (the agent's state file shows it): wall time, per kind.
    @Test func eachSourceKindIsHeardWhenItSpeaks() {
        var e = Box.engine()
        #expect(e.heard.isEmpty)
        _ = e.receive(.route(Box.onWiFi), at: Box.at(1))
        _ = e.receive(.modems(source: "/dev/cdc-wdm0", .ok, Box.eg25()), at: Box.at(2))
        _ = e.receive(.wifi(.ok, Box.wlan1(-60)), at: Box.at(3))
        _ = e.receive(.route(Box.onWiFi), at: Box.at(4))
        #expect(e.heard == ["route": Box.at(4).wall, "wwan": Box.at(2).wall, "wifi": Box.at(3).wall])
        var off = Box.settings()
        off.wifiEnabled = false
        _ = e.receive(.configure(off), at: Box.at(5))
        #expect(e.heard["wifi"] == nil, "a source switched off is not heard from")
    }

    /// Two engines on one gateway (the default target and an address): only the one that tracks the uplinks tells
    /// their changes; handing the duty over (a reload) is not a change, and the next uplink change is the new one's.
    @Test func oneEngineTellsTheUplinksAndTheDutyMovesWithoutALine() throws {
        func part(wwan0Carrier: Bool) -> RouteView {
            let eth0 = LinkState(name: "eth0", index: 2, kind: .ethernet, adminUp: true, carrier: true)
            let wwan0 = LinkState(name: "wwan0", index: 3, kind: .wwan, adminUp: true, carrier: wwan0Carrier)
            let routes = [
                RouteLookup(family: .ipv4, type: .unicast, link: eth0, gateway: "192.0.2.1", metric: 10, table: 254),
                RouteLookup(family: .ipv4, type: .unicast, link: wwan0, gateway: "198.18.0.1", metric: 20, table: 254),
            ]
            var v = RouteView()
            v.route = routes[0]
            v.uplinks = Uplink.group(routes: routes, primaryInterface: "eth0")
            return v
        }
        func engine(tracks: Bool) -> MonitorEngine {
            var s = Box.settings(holdDown: 0)
            s.modemsEnabled = false
            s.wifiEnabled = false
            s.tracksUplinks = tracks
            var e = MonitorEngine(target: .defaultRoute, settings: s, expecting: [.route], at: .zero)
            _ = e.receive(.route(part(wwan0Carrier: true)), at: Box.at(0))
            return e
        }
        var reporter = engine(tracks: true), other = engine(tracks: false)
        let lost = reporter.receive(.route(part(wwan0Carrier: false)), at: Box.at(1))
        #expect(lost.first?.change?.changed == [.uplinks])
        #expect(lost.first?.change?.uplinks.map(\.interface) == ["wwan0"])
        #expect(other.receive(.route(part(wwan0Carrier: false)), at: Box.at(1)).isEmpty)

        var s = other.settings
        s.tracksUplinks = true
        #expect(other.receive(.configure(s), at: Box.at(2)).isEmpty, "taking over is no line")
        let back = other.receive(.route(part(wwan0Carrier: true)), at: Box.at(3))
        #expect(back.first?.change?.changed == [.uplinks])
        #expect(back.first?.change?.reason == "uplink wwan0 reachable again")
        s.tracksUplinks = false
        #expect(other.receive(.configure(s), at: Box.at(4)).isEmpty)
        #expect(other.receive(.route(part(wwan0Carrier: false)), at: Box.at(5)).isEmpty, "handed off: no uplink lines")
    }

    @Test func theReportLineOfAnEventKeepsTheSchema() throws {
        var e = Box.running(holdDown: 0)
        let events = e.receive(.wifi(.ok, Box.wlan1(-85)), at: Box.at(5))
        let line = ReportLine.json(try #require(events.first), seq: 7)
        #expect(line["event"]?["type"] == .string("change"))
        #expect(line["event"]?["seq"] == .int(7))
        #expect(line["event"]?["reason"] == .string("wlan1 3→1 bars (-85 dBm)"))
        #expect(line["wifi"]?.arrayValue?.first?["bars"] == .int(1))
    }
}

/// `Snapshot.assemble`: the one way a snapshot is put together, by the one-shot status and by the monitor alike, with
/// one word for each kind of missing part.
@Suite struct SnapshotAssembleTests {
    @Test(arguments: [
        (SourcePart<ModemState>.disabled, SourceHealth(available: false, reason: "disabled")),
        (.pending, SourceHealth(available: false, reason: "not read yet")),
        (.read(SourceHealth(available: false, reason: "no sysfs"), []), SourceHealth(available: false, reason: "no sysfs")),
        (.read(.ok, []), .ok),
    ])
    func aMissingSourceHasOneWord(part: SourcePart<ModemState>, health: SourceHealth) {
        let s = Snapshot.assemble(target: .defaultRoute, time: Box.t0, route: Box.onWiFi, modems: part, wifi: .disabled)
        #expect(s.wwanSource == health)
        #expect(s.wifiSource.reason == "disabled")
        #expect(s.status == .wifi)
    }

    @Test func noRoutePartYetIsUnknown() {
        let s = Snapshot.assemble(target: .defaultRoute, time: Box.t0, route: nil, modems: .pending, wifi: .pending)
        #expect(s.status == .unknown)
        #expect(s.error == Snapshot.routeNotDeterminedYet)
        #expect(SnapshotText.headline(s) == "unknown: route not determined yet")
    }

    /// Two modem sources (a configured port and discovery): available when either is, else the first failure.
    @Test func modemPartsMerge() {
        let down = SourceHealth(available: false, reason: "cannot open /dev/cdc-wdm1")
        #expect(SourcePart.merging([]) == .pending)
        #expect(SourcePart.merging([(down, []), (.ok, Box.eg25())]) == .read(.ok, Box.eg25()))
        #expect(SourcePart.merging([(down, []), (SourceHealth(available: false, reason: "x"), [])]) == .read(down, []))
    }

    @Test func theStatusHasAFNetworkingsWords() {
        #expect(ReachabilityStatus.allCasesForTests.map(\.description) == [
            "Unknown", "Not Reachable", "Reachable via WWAN", "Reachable via WiFi",
        ])
    }
}

extension ReachabilityStatus {
    static let allCasesForTests: [ReachabilityStatus] = [.unknown, .none, .wwan, .wifi]
}

/// Issue 31 item 8: one event a modem tells in pieces is one change line.
@Suite struct ModemPiecesTests {
    /// The recovery from a denied registration as a QMI modem tells it: registration and attach (System Info), the
    /// data session (WDS), then the signal, milliseconds apart, over a route through the modem's wwan0.
    static func recovering(_ step: Int) -> [ModemState] {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = step >= 1 ? .home : .denied
        m.rejectCause = step >= 1 ? nil : 15
        m.accessTechnologies = step >= 1 ? [.lte] : []
        m.packetService = step >= 1 ? .attached : .detached
        m.dataChannels = [DataChannel(clients: [DataClientReading(family: .ipv4, state: step >= 2 ? .connected : .disconnected)])]
        m.signal = step >= 3 ? SignalMeasurement(rsrp: -90) : SignalMeasurement()
        return [m]
    }

    static func engine() -> MonitorEngine {
        var e = MonitorEngine(target: .defaultRoute, settings: Box.settings(holdDown: 5), expecting: [.route, .modem("m")], at: .zero)
        _ = e.receive(.route(Box.onLTE), at: Box.at(0))
        let start = e.receive(.modems(source: "m", .ok, recovering(0)), at: Box.at(0))
        #expect(start.map(\.kind) == [.start] && start.first?.snapshot.reachable == false)
        return e
    }

    @Test func aRecoveryToldInPiecesIsOneLine() throws {
        var e = Self.engine()
        for (step, t) in [(1, 10.0), (2, 10.002), (3, 10.004)] {
            #expect(e.receive(.modems(source: "m", .ok, Self.recovering(step)), at: Box.at(t)).isEmpty)
        }
        #expect(e.nextDeadline == .milliseconds(10_504))
        #expect(e.receive(.tick, at: Box.at(10.5)).isEmpty)
        let events = e.receive(.tick, at: Box.at(10.504))
        #expect(events.map(\.kind) == [.change])
        let change = try #require(events.first?.change)
        #expect(change.changed == [.status, .medium, .wwanStatus, .reachable, .bars], "\(change.changed)")
        #expect(change.current.reachable && change.current.wwanStatus == .g4 && change.current.bars.values.first == 4)
        #expect(!change.reason.contains("no data session"), "\(change.reason)")
        #expect(e.receive(.tick, at: Box.at(20)).isEmpty)
    }

    /// A modem that keeps talking is still judged a hold-down after its first piece, not never.
    @Test func aChattyModemIsJudgedWithinTheHoldDown() {
        var e = Self.engine()
        var t = 10.0
        var events: [MonitorEvent] = []
        while t < 16 {
            events += e.receive(.modems(source: "m", .ok, Self.recovering(Int(t * 10) % 2 == 0 ? 2 : 3)), at: Box.at(t))
            t += 0.25
            events += e.receive(.tick, at: Box.at(t))
        }
        #expect(events.first?.kind == .change)
        #expect(events.first?.snapshot.time == Box.at(15).wall, "judged at the first piece plus the hold-down")
    }

    /// The piece that completes the recovery later than the settle, within the hold-down: the radio's gain waits
    /// for it while the modem still blocks the route (`ChangeDetector`), so there is still one line.
    @Test func aSessionLaterThanTheSettleStillMakesOneLine() throws {
        var e = Self.engine()
        #expect(e.receive(.modems(source: "m", .ok, Self.recovering(1)), at: Box.at(10)).isEmpty)
        #expect(e.receive(.tick, at: Box.at(10.5)).isEmpty, "registered, no session: the gain is held")
        #expect(e.receive(.modems(source: "m", .ok, Self.recovering(3)), at: Box.at(12)).isEmpty)
        let events = e.receive(.tick, at: Box.at(12.5))
        #expect(events.map(\.kind) == [.change])
        #expect(events.first?.change?.changed.contains(.wwanStatus) == true && events.first?.snapshot.reachable == true)
        #expect(e.receive(.tick, at: Box.at(20)).isEmpty)
    }
}
