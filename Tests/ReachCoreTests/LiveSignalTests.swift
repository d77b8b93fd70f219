import Testing
@testable import ReachCore

/// The live view's model and text (`reach signal`): sparklines, peak hold, change since start, gone and back, 80
/// columns. The signal walk is the one of the issue's field test: -95, -110, -100, -85, -120 and back to -95 dBm.
@Suite struct LiveSignalTests {
    static let t0 = Timestamp(seconds: 1_790_000_000)

    static func lte(rsrp: Double?, present: Bool = true, device: String = "/dev/cdc-wdm0") -> ModemState {
        var m = ModemState(device: device, protocol: .qmi)
        m.present = present
        guard present else {
            m.error = "the port hung up"
            return m
        }
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.plmn = PLMN(mcc: "262", mnc: "01")
        m.signal = SignalMeasurement(rssi: -65, rsrp: rsrp, rsrq: -10, sinr: 12.5)
        m.cells = CellReadings(cell: ServingCell(rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123))
        return m
    }

    /// LTE B3 + B7 with an NR n78 leg (EN-DC), 140 MHz in all.
    static func nsa(rsrp: Double, nr: SignalMeasurement) -> ModemState {
        var m = lte(rsrp: rsrp)
        m.accessTechnologies = [.lte, .nr]
        m.nrSignal = nr
        m.cells.carriers = [
            ComponentCarrier(role: .pcell, rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, bandwidthMHz: 20),
            ComponentCarrier(role: .scell, rat: .lte, band: RadioBand(.lte, 7), channel: 3050, physicalID: 77, bandwidthMHz: 20, state: .activated),
            ComponentCarrier(role: .pscell, rat: .nr, band: RadioBand(.nr, 78), channel: 632628, physicalID: 501, bandwidthMHz: 100),
        ]
        return m
    }

    static func wifi(_ dBm: Int?) -> WiFiLink {
        var w = WiFiLink(interface: "wlan0", mode: .station)
        w.associated = dBm != nil
        w.ssid = "uplink"
        w.frequencyMHz = 5180  // channel 36
        w.beaconSignalAvgDBm = dBm
        return w
    }

    @Test func sparklineLevelsAndGaps() {
        let scale = -125.0 ... -75.0
        #expect(LiveSignalText.sparkline([-125, -100, -75, nil, -130, -60], scale: scale, width: 6) == "▁▅█ ▁█")
        #expect(LiveSignalText.sparkline([-100], scale: scale, width: 4) == "   ▅")  // right-aligned: newest at the edge
        let many = (0..<70).map { Double(-125 + $0) }
        #expect(LiveSignalText.sparkline(many, scale: scale).count == 60)
    }

    /// The walk: every sample recorded, the best value held with its time, the change measured from the start.
    @Test func peakHoldFollowsTheWalk() throws {
        var model = LiveSignalModel(start: Self.t0)
        let walk: [Double] = [-95, -110, -100, -85, -120, -95]
        for (i, rsrp) in walk.enumerated() {
            model.record(time: Timestamp(seconds: Self.t0.seconds + Int64(i * 4)), wwan: [Self.lte(rsrp: rsrp)], wifi: [])
        }
        let link = try #require(model.links.first)
        let rsrp = try #require(link.tracks.first { $0.measure == .rsrp })
        #expect(rsrp.samples == walk)
        #expect(rsrp.best == -85)
        #expect(rsrp.bestAt == Timestamp(seconds: Self.t0.seconds + 12))
        #expect(rsrp.change == 0)
        #expect(link.tracks.map(\.measure) == [.rsrp, .rsrq, .sinr, .rssi])
        // Bars per measure come from the same tables as the link's bars: the profile's (android: LTE RSRP
        // -128/-118/-108/-98; strict: -115/-105/-95/-85); a measure the profile does not grade gets strict's.
        #expect(SignalBars.level(.rsrp, -95, family: .lte, policy: .android) == 4)
        #expect(SignalBars.level(.rsrp, -120, family: .lte, policy: .android) == 1)
        #expect(SignalBars.level(.rsrp, -95, family: .lte, policy: .strict) == 3)
        #expect(SignalBars.level(.rsrp, -120, family: .lte, policy: .strict) == 0)
        #expect(SignalBars.level(.rsrq, -13, family: .lte, policy: .android) == 3)
        #expect(SignalBars.level(.ecio, -8, family: .wcdma, policy: .android) == nil)
        #expect(link.bars == Self.lte(rsrp: -95).bars(.android))
    }

    @Test func historyIsBounded() throws {
        var model = LiveSignalModel(start: Self.t0)
        for i in 0..<150 {
            model.record(time: Timestamp(seconds: Self.t0.seconds + Int64(i)), wwan: [Self.lte(rsrp: -100 - Double(i % 10))], wifi: [])
        }
        let track = try #require(model.links.first?.tracks.first)
        #expect(track.samples.count == LiveSignalModel.history)
        #expect(model.samples == 150)
        #expect(track.best == -100)
        #expect(track.bestAt == Self.t0)
    }

    /// A modem whose port vanishes shows gone, with gaps in its sparklines, and comes back.
    @Test func goneAndBack() throws {
        var model = LiveSignalModel(start: Self.t0)
        let times = (0..<5).map { Timestamp(seconds: Self.t0.seconds + Int64($0)) }
        model.record(time: times[0], wwan: [Self.lte(rsrp: -95)], wifi: [Self.wifi(-60)])
        model.record(time: times[1], wwan: [Self.lte(rsrp: nil, present: false)], wifi: [Self.wifi(-61)])
        #expect(model.links[0].goneSince == times[1])
        var frame = LiveSignalText.frame(model, now: times[1], intervalSeconds: 1).joined(separator: "\n")
        #expect(frame.contains("/dev/cdc-wdm0 (qmi)  GONE since \(LiveSignalText.clock(times[1]))"))
        // The modem missing from a sample altogether (the monitor dropped it) is gone too.
        model.record(time: times[2], wwan: [], wifi: [Self.wifi(-62)])
        #expect(model.links[0].goneSince == times[1])
        model.record(time: times[3], wwan: [Self.lte(rsrp: -90)], wifi: [Self.wifi(-63)])
        #expect(model.links[0].goneSince == nil)
        #expect(model.links[0].backSince == times[3])
        let rsrp = try #require(model.links[0].tracks.first { $0.measure == .rsrp })
        #expect(rsrp.samples == [-95, nil, nil, -90])
        frame = LiveSignalText.frame(model, now: times[3], intervalSeconds: 1).joined(separator: "\n")
        #expect(frame.contains("back since \(LiveSignalText.clock(times[3]))"))
        #expect(frame.contains("wlan0  WiFi \"uplink\"  ch 36 5GHz"))
    }

    /// The whole screen fits 80 columns, with RAT, band, channel and PCI in each modem's header.
    @Test func frameFits80Columns() {
        var model = LiveSignalModel(start: Self.t0)
        let m = Self.nsa(rsrp: -95, nr: SignalMeasurement(rsrp: -88, rsrq: -11, sinr: 18))
        for i in 0..<90 {
            model.record(time: Timestamp(seconds: Self.t0.seconds + Int64(i)), wwan: [m], wifi: [Self.wifi(-58)])
        }
        let lines = LiveSignalText.frame(model, now: Timestamp(seconds: Self.t0.seconds + 89), intervalSeconds: 1)
        for line in lines { #expect(line.count <= 80, "\(line.count): \(line)") }
        let text = lines.joined(separator: "\n")
        #expect(text.contains("LTE B3 + B7 + NR n78, 140 MHz  EARFCN 1300  PCI 123"))
        #expect(text.contains("NR RSRP"))
        #expect(text.contains("Signal"))
        // A 60-sample sparkline per measure.
        #expect(lines.contains { $0.hasPrefix("    ") && $0.dropFirst(4).prefix(60).allSatisfy { "▁▂▃▄▅▆▇█".contains($0) } })
        #expect(LiveSignalText.frame(model, now: Self.t0, intervalSeconds: 1, width: 40).allSatisfy { $0.count <= 40 })
    }

    @Test func measureLine() throws {
        var model = LiveSignalModel(start: Self.t0)
        model.record(time: Self.t0, wwan: [Self.lte(rsrp: -110)], wifi: [])
        model.record(time: Timestamp(seconds: Self.t0.seconds + 1), wwan: [Self.lte(rsrp: -85)], wifi: [])
        let t = try #require(model.links[0].tracks.first)
        let line = LiveSignalText.measureLine(t, family: .lte)
        #expect(line == "  RSRP       -85 dBm ▂▄▆█  best    -85 dBm at \(LiveSignalText.clock(Timestamp(seconds: Self.t0.seconds + 1)))  Δ +25 dB")
    }

    @Test func plainLineAndJSON() {
        let m = Self.lte(rsrp: -95)
        let line = LiveSignalText.plainLine(time: Self.t0, wwan: [m, Self.lte(rsrp: nil, present: false, device: "/dev/cdc-wdm1")], wifi: [Self.wifi(-60)])
        #expect(line == Self.t0.rfc3339 + "  /dev/cdc-wdm0 LTE B3 EARFCN 1300 PCI 123 bars 4 rsrp -95 dBm rsrq -10 dB"
            + " sinr 12.5 dB rssi -65 dBm | /dev/cdc-wdm1 gone (the port hung up) | wlan0 bars 3 signal -60 dBm")
        let json = LiveSignalText.json(time: Self.t0, wwan: [m], wifi: [Self.wifi(-60)])
        #expect(json["time"]?.stringValue == Self.t0.rfc3339)
        #expect(json["wwan"] == .array([m.json(signalPolicy: .android)]))
        #expect(json["wifi"] == .array([Self.wifi(-60).json]))
    }

    /// A screen with everything that makes lines long: carrier aggregation with NR, a rise of 11 dB (issue 31: at 60
    /// columns "Δ +11 dB" showed as "Δ +1"), a modem gone with a long error, a WiFi uplink.
    static func busyModel() -> (LiveSignalModel, Timestamp) {
        var model = LiveSignalModel(start: t0)
        var m = nsa(rsrp: -106, nr: SignalMeasurement(rsrp: -101, rsrq: -11, sinr: 8))
        var gone = lte(rsrp: -90, device: "/dev/wwan0mbim0")
        let t1 = Timestamp(seconds: t0.seconds + 1)
        model.record(time: t0, wwan: [m, gone], wifi: [wifi(-71)])
        m.signal.rsrp = -95
        m.nrSignal?.sinr = 19
        gone = lte(rsrp: nil, present: false, device: "/dev/wwan0mbim0")
        gone.error = "qmi_device_open: the port hung up while the modem was answering Get Signal Info (errno 5)"
        model.record(time: t1, wwan: [m, gone], wifi: [wifi(-60)])
        return (model, t1)
    }

    /// The words of a screen that carry a sign: every value, change and scale (a cut "+11" reads "+1").
    static func signed(_ lines: [String]) -> [String] {
        lines.flatMap { $0.split(separator: " ") }.map(String.init)
            .filter { $0.first.map { "+-±".contains($0) } == true && $0.contains(where: \.isNumber) }.sorted()
    }

    /// At 40, 60, 80 and 120 columns every line fits, and no number is cut or lost: the signed words (values,
    /// changes, scales) are those of the unconstrained screen, every word with a digit is one of its words, and the
    /// gone modem's "waiting for it" is whole.
    @Test(arguments: [40, 60, 80, 120])
    func noNumberIsCut(width: Int) throws {
        let (model, now) = Self.busyModel()
        let wide = LiveSignalText.frame(model, now: now, intervalSeconds: 1, width: 10_000)
        let lines = LiveSignalText.frame(model, now: now, intervalSeconds: 1, width: width)
        for line in lines { #expect(line.count <= width, "\(line.count) > \(width): \(line)") }
        #expect(Self.signed(lines) == Self.signed(wide))
        #expect(Self.signed(wide).contains("+11"), "\(wide.joined(separator: "\n"))")
        let wideWords = Set(wide.flatMap { $0.split(separator: " ") })
        for word in lines.flatMap({ $0.split(separator: " ") }) where word.contains(where: \.isNumber) {
            #expect(wideWords.contains(word), "'\(word)' at \(width) columns is no word of the full screen")
        }
        let text = lines.joined(separator: "\n")
        #expect(text.contains("Δ +11 dB"), "\(text)")
        #expect(text.contains("waiting for it"), "\(text)")
        #expect(text.contains("q quits"), "\(text)")
        // The sparkline narrows to leave its scale whole.
        #expect(lines.contains { $0.hasSuffix("  -138…-88") }, "\(text)")
    }

    /// Before the first sample: what is being opened, and where reach looks when no port is named; after, when
    /// nothing was found, where it looked.
    @Test func openingAndNothingFoundSayWhere() {
        let named = LiveSignalText.Search(modemPorts: ["/dev/cdc-wdm0"], wifiInterfaces: nil)
        let opening = LiveSignalText.opening(named, now: Self.t0, intervalSeconds: 1, width: 60)
        #expect(opening.contains("opening /dev/cdc-wdm0 …"), "\(opening)")
        #expect(!opening.joined().contains("WiFi"))
        let discovered = LiveSignalText.Search(modemPorts: [], wifiInterfaces: ["wlan0"])
        let text = LiveSignalText.opening(discovered, now: Self.t0, intervalSeconds: 1, width: 60).joined(separator: "\n")
        #expect(text.contains("looking for modems in /sys/class/usbmisc/cdc-wdm*,"), "\(text)")
        #expect(text.contains("reading wlan0 (nl80211) …"), "\(text)")
        var model = LiveSignalModel(start: Self.t0)
        model.record(time: Self.t0, wwan: [], wifi: [])
        let empty = LiveSignalText.frame(model, now: Self.t0, intervalSeconds: 1, width: 80, search: discovered)
        #expect(empty.contains("no modem found yet (looked at /sys/class/usbmisc/cdc-wdm*, /sys/class/wwan)"), "\(empty)")
        #expect(empty.contains("no WiFi uplink found yet (looked at wlan0 (nl80211))"), "\(empty)")
        // A source switched off is not looked for.
        let off = LiveSignalText.frame(model, now: Self.t0, intervalSeconds: 1, search: .init(modemPorts: nil, wifiInterfaces: nil))
        #expect(!off.joined().contains("found yet"), "\(off)")
    }

    /// Narrow: the best value's time goes first, then the change wraps; the full line where it fits.
    @Test func measureLinesNarrow() throws {
        var model = LiveSignalModel(start: Self.t0)
        model.record(time: Self.t0, wwan: [Self.lte(rsrp: -106)], wifi: [])
        model.record(time: Timestamp(seconds: Self.t0.seconds + 1), wwan: [Self.lte(rsrp: -95)], wifi: [])
        let t = try #require(model.links[0].tracks.first)
        let at = LiveSignalText.clock(Timestamp(seconds: Self.t0.seconds + 1))
        #expect(LiveSignalText.measureLines(t, family: .lte, width: 80) == ["  RSRP       -95 dBm ▂▄▆█  best    -95 dBm at \(at)  Δ +11 dB"])
        #expect(LiveSignalText.measureLines(t, family: .lte, width: 60) == ["  RSRP       -95 dBm ▂▄▆█  best    -95 dBm  Δ +11 dB"])
        #expect(LiveSignalText.measureLines(t, family: .lte, width: 40) == ["  RSRP       -95 dBm ▂▄▆█", "          best    -95 dBm  Δ +11 dB"])
    }
}
