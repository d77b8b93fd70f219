import Testing
@testable import ReachCore

/// The signal policy: profiles as data, the bar grid of the `android` profile, NSA, overrides, and the issue's
/// reference cases (a phone on Android's default carrier config next to the gateway).
@Suite struct SignalPolicyTests {
    /// One RAT's Android thresholds (CarrierConfigManager sDefaults, Android 14; WCDMA's RSSI table is
    /// CellSignalStrengthWcdma's built-in one, which the default measurement "rssi" uses).
    struct Grid: Sendable, CustomTestStringConvertible {
        var family: BarFamily
        var measure: SignalMeasure
        var thresholds: [Double]
        var testDescription: String { "\(family.rawValue).\(measure.rawValue)" }
    }

    static let androidGrids = [
        Grid(family: .gsm, measure: .rssi, thresholds: [-107, -103, -97, -89]),  // KEY_GSM_RSSI_THRESHOLDS_INT_ARRAY
        Grid(family: .wcdma, measure: .rssi, thresholds: [-107, -97, -87, -77]),  // CellSignalStrengthWcdma sRssiThresholds
        Grid(family: .lte, measure: .rsrp, thresholds: [-128, -118, -108, -98]),  // KEY_LTE_RSRP_THRESHOLDS_INT_ARRAY
        Grid(family: .nr, measure: .rsrp, thresholds: [-110, -90, -80, -65]),  // KEY_5G_NR_SSRSRP_THRESHOLDS_INT_ARRAY
    ]

    /// The bar grid: for each RAT, the value 1 dB below each threshold gives one bar less, the value at it the
    /// level Android gives (the count of thresholds reached).
    @Test(arguments: androidGrids)
    func androidBarGrid(_ g: Grid) {
        #expect(SignalPolicy.android.rule(g.family).primary.table.thresholds == g.thresholds)
        for (i, t) in g.thresholds.enumerated() {
            var below = SignalMeasurement()
            below.set(g.measure, t - 1)
            var at = SignalMeasurement()
            at.set(g.measure, t)
            #expect(SignalPolicy.android.level(g.family, below) == i, "\(g.testDescription) \(t - 1)")
            #expect(SignalPolicy.android.level(g.family, at) == i + 1, "\(g.testDescription) \(t)")
        }
    }

    /// LTE with no RSRP: CellSignalStrengthLte's RSSI levels (rssi > -51 → 0; ≥ -89 → 4; ≥ -97 → 3; ≥ -103 → 2;
    /// ≥ -113 → 1), below and at each boundary.
    @Test(arguments: [
        (-114.0, 0), (-113, 1), (-104, 1), (-103, 2), (-98, 2), (-97, 3), (-90, 3), (-89, 4), (-51, 4), (-50, 0),
    ] as [(Double, Int)])
    func androidLTERSSIFallback(rssi: Double, bars: Int) {
        #expect(SignalPolicy.android.level(BarFamily.lte, SignalMeasurement(rssi: rssi)) == bars)
    }

    /// The android profile's LTE bars come from RSRP alone: RSRQ and SNR change nothing
    /// (KEY_PARAMETERS_USED_FOR_LTE_SIGNAL_BAR_INT = USE_RSRP); SS-RSRQ and SS-SINR likewise for NR.
    @Test func androidUsesRSRPOnly() {
        let a = SignalPolicy.android
        #expect(a.level(BarFamily.lte, SignalMeasurement(rsrp: -100, rsrq: -30, sinr: -15)) == 3)
        #expect(a.level(BarFamily.nr, SignalMeasurement(rsrp: -70, rsrq: -40, sinr: -20)) == 3)
        // RSRP -43 is a valid reading but gives no level (MAX_LTE_RSRP -44): the RSSI fallback decides.
        #expect(a.level(BarFamily.lte, SignalMeasurement(rssi: -100, rsrp: -43)) == 2)
        // WCDMA: the RSSI method only (no RSCP fallback as in strict).
        #expect(a.level(BarFamily.wcdma, SignalMeasurement(rscp: -90)) == 0)
        #expect(SignalPolicy.strict.level(BarFamily.wcdma, SignalMeasurement(rscp: -90)) == 3)
    }

    /// The reference cases: what the phone in the installer's hand shows, and today's figures under strict.
    @Test func phoneNextToTheGateway() {
        // LTE RSRP -110, RSRQ -12, SNR 5 dB: the phone shows 2 bars (-110 ≥ -118).
        let lte = SignalMeasurement(rsrp: -110, rsrq: -12, sinr: 5)
        #expect(SignalPolicy.android.bars([.lte], serving: lte) == 2)
        #expect(SignalPolicy.strict.bars([.lte], serving: lte) == 1)  // min(RSRP 1, RSRQ 4, SNR 3)
        // NR NSA: LTE anchor RSRP -100, NR leg SS-RSRP -115: the phone shows 3 (the LTE anchor, -100 ≥ -108).
        let anchor = SignalMeasurement(rsrp: -100)
        let leg = SignalMeasurement(rsrp: -115)
        #expect(SignalPolicy.android.bars([.lte, .nr], serving: anchor, nr: leg) == 3)
        #expect(SignalPolicy.strict.bars([.lte, .nr], serving: anchor, nr: leg) == 0)  // the NR leg, -115 < -110
    }

    /// AOSP SignalStrength.getPrimary with KEY_SIGNAL_STRENGTH_NR_NSA_USE_LTE_AS_PRIMARY_BOOL: the LTE anchor when it
    /// is valid at all, else the NR leg; SA uses NR.
    @Test func nsaPrimary() {
        let a = SignalPolicy.android
        #expect(a.bars([.lte, .nr], serving: SignalMeasurement(), nr: SignalMeasurement(rsrp: -85)) == 2)
        #expect(a.bars([.lte, .nr], serving: SignalMeasurement(rssi: -95), nr: SignalMeasurement(rsrp: -60)) == 3)
        #expect(a.bars([.lte, .nr], serving: SignalMeasurement(rsrp: -95), nr: nil) == 4)
        #expect(a.bars([.nr], serving: SignalMeasurement(rsrp: -85)) == 2)
        #expect(a.bars([.nr], serving: SignalMeasurement(), nr: SignalMeasurement(rsrp: -64)) == 4)
        #expect(a.bars(.none, serving: SignalMeasurement(rsrp: -60)) == 0)
        #expect(a.bars([.umts, .hspaPlus], serving: SignalMeasurement(rssi: -88)) == 2)
    }

    @Test func registeredOnlyHasBars() {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: -90)
        #expect(m.bars(.android) == 0)
        m.registration = .roaming
        #expect(m.bars(.android) == 4)
        #expect(m.bars(.android, bias: 9) == 3)  // every threshold 9 dB higher: -90 < -98 + 9
    }

    @Test func overrideReplacesOneMeasure() throws {
        var p = SignalPolicy.android
        try p.override(.lte, .rsrp, thresholds: [-120, -110, -100, -90])
        #expect(p.overridden == ["lte.rsrp"])
        #expect(p.profile == .android)
        #expect(p.level(BarFamily.lte, SignalMeasurement(rsrp: -110)) == 2)
        #expect(p.level(BarFamily.lte, SignalMeasurement(rssi: -60)) == 4)  // the RSSI fallback is untouched
        try p.override(.lte, .rssi, thresholds: [-110, -100, -90, -80])
        #expect(p.overridden == ["lte.rsrp", "lte.rssi"])
        #expect(p.level(BarFamily.lte, SignalMeasurement(rssi: -85)) == 3)
    }

    @Test(arguments: [
        (BarFamily.lte, SignalMeasure.rsrq, [-20.0, -17, -14, -11], "not used by this profile (it uses rsrp, rssi here)"),
        (.lte, .rsrp, [-128, -118, -108], "expected four ascending numbers (poor, moderate, good, great)"),
        (.lte, .rsrp, [-98, -108, -118, -128], "expected four ascending numbers (poor, moderate, good, great)"),
        (.lte, .rsrp, [-110, -110, -100, -90], "expected four ascending numbers (poor, moderate, good, great)"),
        (.lte, .rsrp, [-150, -118, -108, -98], "expected values from -140 to -44 dBm"),
        (.nr, .rsrp, [-110, -90, -80, -20], "expected values from -156 to -31 dBm"),
    ] as [(BarFamily, SignalMeasure, [Double], String)])
    func overrideIsValidated(family: BarFamily, measure: SignalMeasure, values: [Double], message: String) {
        var p = SignalPolicy.android
        #expect(throws: SignalPolicy.OverrideError.self) { try p.override(family, measure, thresholds: values) }
        do {
            try p.override(family, measure, thresholds: values)
        } catch {
            #expect(error.description == message)
        }
        #expect(p == .android)
    }

    /// Strict accepts the measures it uses.
    @Test func strictOverridesItsOwnMeasures() throws {
        var p = SignalPolicy.strict
        try p.override(.lte, .rsrq, thresholds: [-20, -17, -14, -11])
        try p.override(.wcdma, .rscp, thresholds: [-116, -106, -96, -86])
        #expect(p.overridden == ["lte.rsrq", "wcdma.rscp"])
    }

    /// The JSON says which profile produced the bars, and which thresholds the configuration replaced.
    @Test func jsonNamesTheProfile() throws {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: -110, rsrq: -12, sinr: 5)
        var s = Snapshot(time: Timestamp(seconds: 1_700_000_000), target: .defaultRoute)
        s.wwan = [m]
        let android = try #require(s.json()["wwan"]?.arrayValue?.first)
        #expect(android["bars"] == .int(2))
        #expect(android["bars_profile"] == .string("android"))
        #expect(android["bars_overrides"] == nil)
        s.signalPolicy = .strict
        let strict = try #require(s.json()["wwan"]?.arrayValue?.first)
        #expect(strict["bars"] == .int(1))
        #expect(strict["bars_profile"] == .string("strict"))
        var custom = SignalPolicy.android
        try custom.override(.lte, .rsrp, thresholds: [-115, -105, -95, -85])
        s.signalPolicy = custom
        let c = try #require(s.json()["wwan"]?.arrayValue?.first)
        #expect(c["bars"] == .int(1))
        #expect(c["bars_overrides"] == .array([.string("lte.rsrp")]))
        #expect(SnapshotText.modemLine(m, signalPolicy: custom).contains("1/4 (android, custom thresholds)"))
        #expect(SnapshotText.modemLine(m, signalPolicy: .android).contains("2/4  home"))
    }

    /// The change detector's hysteresis runs on the snapshot's policy: the same readings move differently.
    @Test func changeDetectionFollowsThePolicy() {
        func snapshot(_ rsrp: Double, _ policy: SignalPolicy) -> Snapshot {
            var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
            m.registration = .home
            m.accessTechnologies = [.lte]
            m.signal = SignalMeasurement(rsrp: rsrp)
            var s = Snapshot(time: Timestamp(seconds: 1), target: .defaultRoute, signalPolicy: policy)
            s.wwan = [m]
            s.derive()
            return s
        }
        let key = LinkKey(.wwan, "/dev/cdc-wdm0")
        for (policy, expected) in [(SignalPolicy.android, [2, 2, 3]), (.strict, [1, 1, 2])] {
            var d = ChangeDetector(policy: ChangePolicy(holdDown: .zero, barHysteresisDB: 3))
            var seen: [Int] = []
            // android: -110 → 2; -107 clears -108 by 1 dB only (kept at 2); -101 by 7 dB → 3.
            // strict: -110 → 1 (≥ -115); -107 → 1; -101 clears -105 by 4 dB → 2.
            for (i, rsrp) in [-110.0, -107, -101].enumerated() {
                _ = d.observe(snapshot(rsrp, policy), at: .seconds(i))
                seen.append(d.bars(key) ?? -1)
            }
            #expect(seen == expected, "\(policy.name)")
        }
    }
}
