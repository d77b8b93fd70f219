import Testing
@testable import ReachCore

/// The `strict` profile keeps GatewayReach's rule before profiles (AOSP CellSignalStrength* built-in tables, the
/// minimum of every measure, the NR leg under NSA): these rows are today's figures and must not move. The `android`
/// profile and the peers' own tables are in SignalPolicyTests. Quality follows ModemManager's formulas
/// (mm-modem-helpers.h, mm-broadband-modem-qmi.c); MBIM coding the MBIM specification and Microsoft's MBIMEx tables.
@Suite struct SignalTests {
    let strict = SignalPolicy.strict

    @Test(arguments: [
        (-120.0, 0) /* below the valid range: unknown */, (-113, 0), (-108, 0), (-107, 1), (-104, 1), (-103, 2),
        (-98, 2), (-97, 3), (-90, 3), (-89, 4), (-51, 4), (-50, 0) /* above the range: unknown */,
    ] as [(Double, Int)])
    func gsmRSSI(dBm: Double, bars: Int) {
        #expect(strict.level(BarFamily.gsm, SignalMeasurement(rssi: dBm)) == bars)
        #expect(SignalPolicy.android.level(BarFamily.gsm, SignalMeasurement(rssi: dBm)) == bars)  // same table
    }

    @Test(arguments: [
        (SignalMeasurement(rssi: -101), 1),  // libqmi test_message_parse_complete: UMTS -101 dBm
        (SignalMeasurement(rssi: -97), 2), (SignalMeasurement(rssi: -88), 2), (SignalMeasurement(rssi: -87), 3),
        (SignalMeasurement(rssi: -77), 4),
        (SignalMeasurement(rscp: -100), 2),  // RSCP method when no RSSI (CellSignalStrengthWcdma)
        (SignalMeasurement(rscp: -84), 4), (SignalMeasurement(rscp: -121), 0),
        (SignalMeasurement(rssi: -101, rscp: -84), 1),  // RSSI, Android's default method, wins
        (SignalMeasurement(), 0),
    ] as [(SignalMeasurement, Int)])
    func wcdma(m: SignalMeasurement, bars: Int) {
        #expect(strict.level(BarFamily.wcdma, m) == bars)
    }

    @Test(arguments: [
        (SignalMeasurement(rsrp: -116), 0), (SignalMeasurement(rsrp: -115), 1), (SignalMeasurement(rsrp: -100), 2),
        (SignalMeasurement(rsrp: -95), 3), (SignalMeasurement(rsrp: -85), 4), (SignalMeasurement(rsrp: -44), 4),
        (SignalMeasurement(rsrp: -141), 0),  // outside [-140, -44]: unknown
        // RSRQ and RS-SNR, when present, can only lower the level (minimum of the enabled measures)
        (SignalMeasurement(rsrp: -80, rsrq: -15), 2), (SignalMeasurement(rsrp: -80, rsrq: -11), 4),
        (SignalMeasurement(rsrp: -80, rsrq: -15, sinr: 0), 1), (SignalMeasurement(rsrp: -80, sinr: 13), 4),
        (SignalMeasurement(rsrp: -80, rsrq: -40), 4),  // RSRQ outside [-34, 3] is ignored
        // No RSRP: the legacy RSSI fallback {-113, -103, -97, -89}
        (SignalMeasurement(rssi: -100), 2), (SignalMeasurement(rssi: -60), 4),
    ] as [(SignalMeasurement, Int)])
    func lte(m: SignalMeasurement, bars: Int) {
        #expect(strict.level(BarFamily.lte, m) == bars)
    }

    @Test(arguments: [
        (SignalMeasurement(rsrp: -111), 0), (SignalMeasurement(rsrp: -110), 1), (SignalMeasurement(rsrp: -90), 2),
        (SignalMeasurement(rsrp: -85), 2), (SignalMeasurement(rsrp: -80), 3), (SignalMeasurement(rsrp: -65), 4),
        (SignalMeasurement(rsrp: -70, rsrq: -10), 2), (SignalMeasurement(rsrp: -70, sinr: 20), 3),
        (SignalMeasurement(rsrp: -60, rsrq: 6, sinr: 30), 4), (SignalMeasurement(rsrq: 6), 0),
    ] as [(SignalMeasurement, Int)])
    func nr(m: SignalMeasurement, bars: Int) {
        #expect(strict.level(BarFamily.nr, m) == bars)
    }

    @Test func cdmaAndEVDOUseTheirOwnTables() {
        for policy in [SignalPolicy.strict, .android] {
            #expect(policy.level(RadioAccessTechnology.cdma1x, SignalMeasurement(rssi: -80)) == 3)  // ≥ -85
            #expect(policy.level(RadioAccessTechnology.evdoA, SignalMeasurement(rssi: -80)) == 2)  // ≥ -90, < -75
        }
    }

    @Test func setsUseTheRightFamily() {
        let lteServing = SignalMeasurement(rsrp: -80)
        let nrLeg = SignalMeasurement(rsrp: -85)
        // NSA: the NR leg gives the bars when it has a valid SS-RSRP, else the LTE anchor
        #expect(strict.bars([.lte, .nr], serving: lteServing, nr: nrLeg) == 2)
        #expect(strict.bars([.lte, .nr], serving: lteServing, nr: nil) == 4)
        #expect(strict.bars([.lte, .nr], serving: lteServing, nr: SignalMeasurement(sinr: 20)) == 4)
        // SA: NR thresholds on whatever the modem measured
        #expect(strict.bars([.nr], serving: SignalMeasurement(rsrp: -70)) == 3)
        #expect(strict.bars([.umts, .hsdpa], serving: SignalMeasurement(rssi: -101)) == 1)
        #expect(strict.bars(.none, serving: lteServing) == 0)
    }

    @Test(arguments: [(-89.0, 0), (-88, 1), (-78, 1), (-77, 2), (-67, 2), (-66, 3), (-56, 3), (-55, 4), (-30, 4)] as [(Double, Int)])
    func wifiBars(rssi: Double, bars: Int) {
        #expect(SignalBars.wifi(rssi: rssi) == bars)
    }

    /// AOSP RssiUtilTest: the API 30 thresholds give the legacy calculateSignalLevel(rssi, 5) result everywhere.
    @Test func wifiBarsEqualLegacyFormula() {
        for rssi in -127...0 {
            let legacy = rssi <= -100 ? 0 : rssi >= -55 ? 4 : Int(Float(rssi + 100) * 4 / 45)
            #expect(SignalBars.wifi(rssi: Double(rssi)) == legacy, "rssi \(rssi)")
        }
    }

    @Test(arguments: [(-113.0, 0), (-120, 0), (-51, 100), (-40, 100), (-82, 50), (-101, 20), (-80, 54)] as [(Double, Int)])
    func qualityFromRSSI(rssi: Double, percent: Int) {
        #expect(SignalQuality.percent(rssi: rssi) == percent)
    }

    @Test(arguments: [(-110.0, 0), (-60, 100), (-85, 50), (-120, 0)] as [(Double, Int)])
    func qualityFromRSRP(rsrp: Double, percent: Int) {
        #expect(SignalQuality.percent(rsrp: rsrp) == percent)
    }

    @Test func qualityQMI() {
        // RSRP (−92+140)·100/96 = 50, SNR cut to 8 dB: 31·100/63 = 49, RSRQ cut to −11: 32·100/63 = 50 → 49.
        #expect(SignalQuality.percentNR(rsrp: -92, snr: 8.5, rsrq: -11.5) == 49)
        #expect(SignalQuality.percentQMI(rssi: [(-101, 4), (-80, 8)]) == 54)  // best RSSI wins
        #expect(SignalQuality.percentQMI(rssi: [(-80, 8)], nr: (rsrp: -92, snr: nil, rsrq: nil)) == 54)  // 5G lower: kept
        #expect(SignalQuality.percentQMI(rssi: [(-80, 8)], nr: (rsrp: -80, snr: nil, rsrq: nil)) == 62)  // 5G higher: used
        #expect(SignalQuality.percentQMI(rssi: []) == nil)
    }

    @Test func qualityMBIM() {
        #expect(SignalQuality.percentMBIM(codedRSSI: 0) == 0)
        #expect(SignalQuality.percentMBIM(codedRSSI: 31) == 100)
        #expect(SignalQuality.percentMBIM(codedRSSI: 15) == 48)
        #expect(SignalQuality.percentMBIM(codedRSSI: 99, codedRSRP: [57, 67]) == 40)  // best RSRP of the v2 entries, -90
    }

    @Test func wifiQualityFollowsIwinfo() {
        #expect(SignalQuality.percentWiFi(rssi: -30) == 100)
        #expect(SignalQuality.percentWiFi(rssi: -75) == 50)
        #expect(SignalQuality.percentWiFi(rssi: -110) == 0)
    }

    /// MBIM 1.0 §10.5.10: -113 + 2n; MBIMEx RSRP_n covers [-157+n, -156+n) dBm; SNR_n [-23.5+n/2, -23+n/2) dB, 127
    /// is 40 dB or more (libmbim mbimcli-basic-connect.c @ 2f6c6add prints the same lower edges).
    @Test func mbimCoding() {
        #expect(MBIMCoding.rssiDBm(coded: 0) == -113)
        #expect(MBIMCoding.rssiDBm(coded: 1) == -111)
        #expect(MBIMCoding.rssiDBm(coded: 31) == -51)
        #expect(MBIMCoding.rssiDBm(coded: 32) == nil)
        #expect(MBIMCoding.rssiDBm(coded: 99) == nil)
        #expect(MBIMCoding.rsrpDBm(coded: 1) == -156)
        #expect(MBIMCoding.rsrpDBm(coded: 17) == -140)
        #expect(MBIMCoding.rsrpDBm(coded: 126) == -31)
        #expect(MBIMCoding.rsrpDBm(coded: 0xFFFF_FFFF) == nil)
        #expect(MBIMCoding.snrDB(coded: 0) == -23.5)  // below -23 dB
        #expect(MBIMCoding.snrDB(coded: 1) == -23)
        #expect(MBIMCoding.snrDB(coded: 126) == 39.5)
        #expect(MBIMCoding.snrDB(coded: 127) == 40)  // 40 dB or more: a reading, not unknown
        #expect(MBIMCoding.snrDB(coded: 128) == nil)
        #expect(MBIMCoding.snrDB(coded: 0xFFFF_FFFF) == nil)
        #expect(MBIMCoding.berPercent(coded: 3) == 0.8)
        #expect(MBIMCoding.berPercent(coded: 99) == nil)
    }
}
