import Testing
@testable import ReachCore

/// Snapshots of a gateway with a WiFi uplink (wlan1), an LTE/5G modem (cdc-wdm0 → wwan0) and Ethernet (eth0).
private enum Gateway {
    static func route(_ name: String, kind: InterfaceKind, carrier: Bool = true, gateway: String? = "192.0.2.1")
        -> RouteLookup
    {
        RouteLookup(
            family: .ipv4, type: .unicast,
            link: LinkState(name: name, index: 3, kind: kind, adminUp: true, carrier: carrier), gateway: gateway)
    }

    static func modem(_ rats: AccessTechnologies = [.lte], rsrp: Double = -90, registered: Bool = true) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.accessTechnologies = rats
        m.registration = registered ? .home : .searching
        m.signal = SignalMeasurement(rsrp: rsrp)
        return m
    }

    static func wifi(_ dBm: Int?, associated: Bool = true) -> WiFiLink {
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: associated)
        w.signalDBm = dBm
        w.ssid = "uplink"
        return w
    }

    static func snapshot(route: RouteLookup?, modem: ModemState? = nil, wifi: WiFiLink? = nil) -> Snapshot {
        var s = Snapshot(time: Timestamp(seconds: 1_700_000_000), target: .defaultRoute)
        s.route = route
        s.wwan = modem.map { [$0] } ?? []
        s.wifi = wifi.map { [$0] } ?? []
        s.derive()
        return s
    }

    static let onWiFi = snapshot(route: route("wlan1", kind: .wifi), wifi: wifi(-60))
    static let wifiNoCarrier = snapshot(route: route("wlan1", kind: .wifi, carrier: false), wifi: wifi(nil, associated: false))
    static let noRoute = snapshot(route: nil, wifi: wifi(nil, associated: false))
    static let onLTE = snapshot(route: route("wwan0", kind: .wwan, gateway: nil), modem: modem())
}

private func at(_ s: Int) -> Duration { .seconds(s) }

@Suite struct ChangeDetectorTests {
    @Test func firstSnapshotIsTheInitialEventAndRepeatsAreNoChange() {
        var d = ChangeDetector(policy: .standard)
        let first = d.observe(Gateway.onWiFi, at: at(0))
        #expect(first?.initial == true)
        #expect(d.view?.status == .wifi)
        // AFNetworking #4302: the same state delivered again (a second callback) is not a change.
        for t in 1...5 { #expect(d.observe(Gateway.onWiFi, at: at(t)) == nil) }
        #expect(d.nextDeadline == nil)
    }

    /// Alamofire #2707: a notReachable→reachable blip on reconnect (DHCP renew, roam) must not be reported.
    @Test func shortLossWithinHoldDownIsNeverReported() {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        _ = d.observe(Gateway.onWiFi, at: at(0))
        #expect(d.observe(Gateway.noRoute, at: at(10)) == nil)
        #expect(d.held == [.status, .medium, .reachable, .bars])
        #expect(d.nextDeadline == at(15))
        #expect(d.observe(Gateway.onWiFi, at: at(12)) == nil)
        #expect(d.held.isEmpty)
        #expect(d.tick(at: at(15)) == nil)
        #expect(d.nextDeadline == nil)
    }

    @Test func lossThatLastsIsReportedOnceWhenTheHoldDownEnds() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        _ = d.observe(Gateway.onWiFi, at: at(0))
        #expect(d.observe(Gateway.wifiNoCarrier, at: at(10)) == nil)
        #expect(d.tick(at: at(14)) == nil)
        let eResult = d.tick(at: at(15))
        let e = try #require(eResult)
        #expect(e.changed == [.status, .medium, .reachable, .bars])
        #expect(e.reason.contains("route via wlan1 lost carrier"))
        #expect(e.previous?.status == .wifi)
        #expect(e.current.status == .none)
        // Exactly once: later ticks and repeats report nothing.
        #expect(d.tick(at: at(20)) == nil)
        #expect(d.observe(Gateway.wifiNoCarrier, at: at(21)) == nil)
        // Recovery is better: reported at once.
        let backResult = d.observe(Gateway.onWiFi, at: at(22))
        let back = try #require(backResult)
        #expect(back.changed == [.status, .medium, .reachable, .bars])
        #expect(back.reason.contains("regained carrier"))
    }

    @Test func sidewaysFailoverIsReportedAtOnce() throws {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Gateway.onWiFi, at: at(0))
        var lte = Gateway.onLTE
        lte.wifi = [Gateway.wifi(-60)]
        let eResult = d.observe(lte, at: at(1))
        let e = try #require(eResult)
        #expect(e.changed.contains(.status) && e.changed.contains(.medium) && e.changed.contains(.wwanStatus))
        #expect(e.current.status == .wwan)
        #expect(e.reason.contains("route moved from wlan1 to wwan0"))
    }

    @Test func zeroHoldDownReportsLossAtOnce() throws {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Gateway.onWiFi, at: at(0))
        let eResult = d.observe(Gateway.noRoute, at: at(1))
        let e = try #require(eResult)
        #expect(e.current.reachable == false)
        #expect(e.reason.contains("route via wlan1 removed"))
    }

    /// 5G NSA losing its NR leg on inactivity (NetToggle #28) is a downgrade: held, and absorbed when it comes back.
    @Test func nsaSecondaryCellDropIsHeld() throws {
        var d = ChangeDetector(policy: .standard)
        let nsa = Gateway.snapshot(route: Gateway.route("wwan0", kind: .wwan, gateway: nil), modem: Gateway.modem([.lte, .nr]))
        #expect(nsa.wwanStatus == .g5)
        _ = d.observe(nsa, at: at(0))
        #expect(d.observe(Gateway.onLTE, at: at(1)) == nil)
        #expect(d.held == [.wwanStatus])
        #expect(d.observe(nsa, at: at(3)) == nil)
        #expect(d.observe(Gateway.onLTE, at: at(10)) == nil)
        let eResult = d.tick(at: at(15))
        let e = try #require(eResult)
        #expect(e.changed == [.wwanStatus])
        #expect(e.reason.contains("5g→4g"))
    }

    /// WiFi bars on the -66 dBm boundary (3/2 bars): with 3 dB hysteresis the bars move only past -63 or -69.
    @Test(arguments: [
        // (signals fed in order, bars reported after each)
        ([-65, -66, -67, -65, -68, -66, -65], [3, 3, 3, 3, 3, 3, 3]),
        ([-65, -70, -68, -66, -64, -63], [3, 2, 2, 2, 2, 3]),
        ([-50, -54, -56, -57, -58, -59], [4, 4, 4, 4, 4, 3]),
    ])
    func wifiBarHysteresis(signals: [Int], expected: [Int]) {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .zero, barHysteresisDB: 3))
        var reported: [Int] = []
        for (i, dBm) in signals.enumerated() {
            let s = Gateway.snapshot(route: Gateway.route("wlan1", kind: .wifi), wifi: Gateway.wifi(dBm))
            _ = d.observe(s, at: at(i))
            reported.append(d.bars(LinkKey(.wifi, "wlan1")) ?? -1)
        }
        #expect(reported == expected)
    }

    @Test func noiseBelowHysteresisGivesNoEventAndACrossingGivesOne() {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .zero, barHysteresisDB: 3))
        let route = Gateway.route("wwan0", kind: .wwan, gateway: nil)
        // The snapshot's default (android) profile: the LTE RSRP boundary between 2 and 3 bars is -108 dBm
        // (CarrierConfigManager KEY_LTE_RSRP_THRESHOLDS_INT_ARRAY); with 3 dB hysteresis down at -112, up at -104.
        var events: [ChangeEvent] = []
        for (i, rsrp) in [-107.0, -109, -108, -110, -107, -109, -112, -108, -104].enumerated() {
            if let e = d.observe(Gateway.snapshot(route: route, modem: Gateway.modem(rsrp: rsrp)), at: at(i)) {
                events.append(e)
            }
        }
        #expect(events.map(\.initial) == [true, false, false])
        #expect(events.dropFirst().map { $0.bars.map { "\($0.from!)→\($0.to!)" } } == [["3→2"], ["2→3"]])
    }

    @Test func barsDownIsHeldDownToo() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        let route = Gateway.route("wlan1", kind: .wifi)
        _ = d.observe(Gateway.snapshot(route: route, wifi: Gateway.wifi(-50)), at: at(0))
        #expect(d.observe(Gateway.snapshot(route: route, wifi: Gateway.wifi(-85)), at: at(1)) == nil)
        #expect(d.held == [.bars])
        let eResult = d.tick(at: at(6))
        let e = try #require(eResult)
        #expect(e.bars == [BarChange(link: LinkKey(.wifi, "wlan1"), from: 4, to: 1)])
        #expect(e.reason.contains("wlan1 4→1 bars (-85 dBm)"))
    }

    @Test func linkThatVanishesIsHeldThenReportedGone() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(2), barHysteresisDB: 3))
        _ = d.observe(Gateway.onLTE, at: at(0))
        var gone = Gateway.onLTE
        gone.wwan = []
        gone.derive()
        _ = d.observe(gone, at: at(1))
        let eResult = d.tick(at: at(3))
        let e = try #require(eResult)
        #expect(e.bars.contains(BarChange(link: LinkKey(.wwan, "/dev/cdc-wdm0"), from: 4, to: nil)))  // RSRP -90 ≥ -98
        #expect(d.view?.bars.isEmpty == true)
    }

    @Test func unknownAfterAnErrorIsWorse() {
        #expect(ChangeDetector.isWorse(.unknown, than: .wifi))
        #expect(ChangeDetector.isWorse(.none, than: .wwan))
        #expect(!ChangeDetector.isWorse(.wwan, than: .wifi))
        #expect(!ChangeDetector.isWorse(.none, than: .unknown))
        #expect(!ChangeDetector.isWorse(.wifi, than: .none))
    }

    @Test(arguments: [-100, -89, -88, -77, -70, -66, -55, -40])
    func zeroBiasEqualsPlainBars(dBm: Int) {
        let w = Gateway.wifi(dBm)
        #expect(w.bars(bias: 0) == w.bars)
        for rsrp in stride(from: -130.0, through: -60, by: 5) {
            let m = Gateway.modem(rsrp: rsrp)
            for policy in [SignalPolicy.android, .strict] {
                #expect(m.bars(policy, bias: 0) == m.bars(policy))
            }
        }
    }

    @Test func reportLineCarriesDebouncedBarsAndEvent() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .zero, barHysteresisDB: 3))
        let route = Gateway.route("wlan1", kind: .wifi)
        _ = d.observe(Gateway.snapshot(route: route, wifi: Gateway.wifi(-65)), at: at(0))
        let s = Gateway.snapshot(route: route, wifi: Gateway.wifi(-67))  // raw 2 bars, reported 3
        #expect(d.observe(s, at: at(1)) == nil)
        let line = ReportLine.json(
            snapshot: s, view: d.view, event: ReportLine.event(.periodic, seq: 7, held: d.held))
        let text = line.serialized()
        let parsed = try JSON.parse(text)
        #expect(parsed["wifi"]?.arrayValue?.first?["bars"] == .int(3))
        #expect(parsed["wifi"]?.arrayValue?.first?["bars_raw"] == .int(2))
        #expect(parsed["event"]?["type"] == .string("periodic"))
        #expect(parsed["event"]?["seq"] == .int(7))
        #expect(parsed["event"]?["held"] == nil)
        #expect(parsed["status"] == .string("wifi"))
        #expect(!text.contains("\n"))
    }

    @Test func changeEventJSONNamesFieldsAndPreviousValues() throws {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Gateway.onWiFi, at: at(0))
        let eResult = d.observe(Gateway.noRoute, at: at(1))
        let e = try #require(eResult)
        let ev = ReportLine.event(.change, seq: 2, change: e)
        #expect(ev["changed"] == .array([.string("status"), .string("medium"), .string("reachable"), .string("bars")]))
        #expect(ev["from"]?["status"] == .string("wifi"))
        #expect(ev["from"]?["reachable"] == .bool(true))
        #expect(ev["bars"]?.arrayValue?.first?["link"] == .string("wifi:wlan1"))
        #expect(ev["reason"]?.stringValue?.isEmpty == false)
    }

    /// A downgrade held while another field is reported at once: the later line still names the generation change.
    @Test func heldDowngradeNamesItsTransition() throws {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(1), barHysteresisDB: 3))
        let route = Gateway.route("wwan0", kind: .wwan, gateway: nil)
        _ = d.observe(Gateway.snapshot(route: route, modem: Gateway.modem([.lte], rsrp: -105)), at: at(0))
        var edge = Gateway.modem([.edge])
        edge.signal = SignalMeasurement(rssi: -65)  // GSM thresholds: 4 bars, better than LTE's 3 (-105 ≥ -108)
        let first = d.observe(Gateway.snapshot(route: route, modem: edge), at: at(1))
        #expect(first?.changed == [.bars])
        #expect(d.held == [.wwanStatus])
        let laterResult = d.tick(at: at(2))
        let later = try #require(laterResult)
        #expect(later.changed == [.wwanStatus])
        #expect(later.reason == "wwan 4g→2g")
    }
}
