import Testing
@testable import ReachCore

// Tables whose rows come from the peers' own tests and constants, each named above its table. The rows are
// transcribed values (inputs and the level or state the peer asserts), not code.

/// AOSP frameworks/opt/telephony tests/telephonytests SignalStrengthTest.java (Android 14 QPR2: AOSP snapshot
/// "24Q1-release" dda3d6df, as carried by GrapheneOS platform_frameworks_opt_telephony branch 14).
@Suite struct AOSPSignalStrengthTestTables {
    // The test's own DEFAULT_LTE_* tables (RSRQ and RSSNR are CellSignalStrengthLte's built-ins, not the carrier
    // config's {-20, -17, -14, -11}).
    static let rsrp = MeasureThresholds(.rsrp, BarThresholds([-128, -118, -108, -98], valid: -140 ... -44))
    static let rsrq = MeasureThresholds(.rsrq, BarThresholds([-19, -17, -14, -12], valid: -34 ... 3))
    static let rssnr = MeasureThresholds(.sinr, BarThresholds([-3, 1, 5, 13], valid: -20 ... 30))

    /// `createSignalStrengthLteReportRsrq`: RSSI -89, RSSNR -25 (outside [-20, 30]: unavailable), measures
    /// USE_RSRP | USE_RSRQ. testRsrqThresholds_rsrp_{great,good,moderate,poor,unknown}.
    @Test(arguments: [
        (-98.0, -34.0, 0), (-98, -19, 1), (-98, -17, 2), (-98, -14, 3), (-98, -12, 4),
        (-108, -34, 0), (-108, -19, 1), (-108, -17, 2), (-108, -14, 3), (-108, -12, 3),
        (-118, -34, 0), (-118, -19, 1), (-118, -17, 2), (-118, -14, 2), (-118, -12, 2),
        (-128, -34, 0), (-128, -19, 1), (-128, -17, 1), (-128, -14, 1), (-128, -12, 1),
        (-138, -34, 0), (-138, -19, 0), (-138, -17, 0), (-138, -14, 0), (-138, -12, 0),
    ] as [(Double, Double, Int)])
    func rsrqThresholds(rsrp: Double, rsrq: Double, level: Int) {
        let rule = BarRule(Self.rsrp, limitedBy: [Self.rsrq], fallback: MeasureThresholds(.rssi, .lteRSSI))
        let m = SignalMeasurement(rssi: -89, rsrp: rsrp, rsrq: rsrq, sinr: -25).validated(for: .lte)
        #expect(m.sinr == nil)
        #expect(rule.level(m) == level)
    }

    /// `createSignalStrengthLteReportRssnr`: RSSI -89, RSRQ 15 (outside [-34, 3]: unavailable), measures
    /// USE_RSRP | USE_RSSNR. testRssnrThresholds_rsrp_{great,good,moderate,poor,unknown}.
    @Test(arguments: [
        (-98.0, -20.0, 0), (-98, -3, 1), (-98, 1, 2), (-98, 5, 3), (-98, 13, 4),
        (-108, -20, 0), (-108, -3, 1), (-108, 1, 2), (-108, 5, 3), (-108, 13, 3),
        (-118, -20, 0), (-118, -3, 1), (-118, 1, 2), (-118, 5, 2), (-118, 13, 2),
        (-128, -20, 0), (-128, -3, 1), (-128, 1, 1), (-128, 5, 1), (-128, 13, 1),
        (-138, -20, 0), (-138, -3, 0), (-138, 1, 0), (-138, 5, 0), (-138, 13, 0),
    ] as [(Double, Double, Int)])
    func rssnrThresholds(rsrp: Double, rssnr: Double, level: Int) {
        let rule = BarRule(Self.rsrp, limitedBy: [Self.rssnr], fallback: MeasureThresholds(.rssi, .lteRSSI))
        let m = SignalMeasurement(rssi: -89, rsrp: rsrp, rsrq: 15, sinr: rssnr).validated(for: .lte)
        #expect(m.rsrq == nil)
        #expect(rule.level(m) == level)
    }

    /// testValidateInput: RSRQ kept in [-34, 3], RSSNR in [-20, 30]; outside, SignalStrength.INVALID.
    @Test(arguments: [
        (SignalMeasure.rsrq, 4.0, false), (.rsrq, 3, true), (.rsrq, -34, true), (.rsrq, -35, false),
        (.sinr, 31, false), (.sinr, 30, true), (.sinr, -20, true), (.sinr, -21, false),
    ] as [(SignalMeasure, Double, Bool)])
    func validateInput(measure: SignalMeasure, value: Double, kept: Bool) {
        var m = SignalMeasurement(rsrp: -60)
        m.set(measure, value)
        #expect((m.validated(for: .lte).value(measure) != nil) == kept)
    }
}

/// AOSP CellSignalStrengthNrTest.java and CellSignalStrengthWcdmaTest.java (same snapshot as above), and the
/// CarrierConfigManager defaults they are read against.
@Suite struct AOSPCellSignalStrengthTestTables {
    /// testSignalLevel_thresholdBoundaries: SS-RSRP at each default threshold (USE_SSRSRP) gives POOR…GREAT;
    /// testLevel: SS-RSRP -112 with the defaults gives NONE.
    @Test(arguments: [(-110.0, 1), (-90, 2), (-80, 3), (-65, 4), (-112, 0)] as [(Double, Int)])
    func nrThresholdBoundaries(ssRsrp: Double, level: Int) {
        // The test's CSI and SS-RSRQ/SINR values (-11 dB, 32 dB) do not take part: USE_SSRSRP only.
        let m = SignalMeasurement(rsrp: ssRsrp, rsrq: -13, sinr: 32).validated(for: .nr)
        #expect(SignalPolicy.android.level(BarFamily.nr, m) == level)
    }

    /// testSignalLevel_validValue walks SS-RSRP -156…-31: every value is kept (Android 14 constructor range).
    @Test func nrValidRange() {
        for v in -156 ... -31 { #expect(SignalMeasurement(rsrp: Double(v)).validated(for: .nr).rsrp == Double(v)) }
        #expect(SignalMeasurement(rsrp: -157).validated(for: .nr).rsrp == nil)
        #expect(SignalMeasurement(rsrp: -30).validated(for: .nr).rsrp == nil)
    }

    /// CellSignalStrengthWcdmaTest.testLevel: RSSI -95, RSCP -106: "rssi" (the default) gives MODERATE; "rscp"
    /// with {-115, -105, -95, -85} gives POOR. testInvalidConstructor: RSSI -1, RSCP -1, Ec/No 10 are unavailable.
    @Test func wcdmaLevelAndRanges() {
        let m = SignalMeasurement(rssi: -95, rscp: -106, ecio: -5)
        #expect(SignalPolicy.android.level(BarFamily.wcdma, m) == 2)
        #expect(MeasureThresholds(.rscp, .wcdmaRSCP).level(m, bias: 0) == 1)
        #expect(SignalPolicy.strict.level(BarFamily.wcdma, SignalMeasurement(rscp: -106)) == 1)  // strict's fallback
        #expect(SignalMeasurement(rssi: -1, rscp: -1, ecio: 10).validated(for: .wcdma).isEmpty)
    }
}

/// ModemManager src/tests/test-modem-helpers-qmi.c (1.25.95-dev, 9a2d5863):
/// `test_registration_state_from_qmi_system_info_*`, each reply reduced to the per-technology values
/// `mm_modem_registration_state_from_qmi_system_info` reads (service status, domain, roaming, network id).
@Suite struct ModemManagerSystemInfoTables {
    typealias Info = QMISystemInfo.RATInfo
    static let plmn = PLMN(mcc: "901", mnc: "70")

    @Test(arguments: [
        ("2g_searching", QMISystemInfo(gsm: Info(serviceStatus: .none)), [String](), RegistrationState.searching),
        ("2g_idle", QMISystemInfo(gsm: Info(serviceStatus: .powerSave)), [], .idle),
        ("2g_cs_home",
         QMISystemInfo(gsm: Info(serviceStatus: .available, domain: .cs, roaming: false, forbidden: false, plmn: plmn)),
         ["gsm"], .home),
        ("2g3g_searching", QMISystemInfo(gsm: Info(serviceStatus: .none), wcdma: Info(serviceStatus: .none)), [], .searching),
        ("2g3g_idle", QMISystemInfo(gsm: Info(serviceStatus: .powerSave), wcdma: Info(serviceStatus: .powerSave)), [], .idle),
        ("2g3g_ps_home",
         QMISystemInfo(
            gsm: Info(serviceStatus: .none),
            wcdma: Info(serviceStatus: .available, domain: .ps, roaming: false, forbidden: false, plmn: plmn)),
         ["umts"], .home),
        ("2g3g_csps_home",
         QMISystemInfo(
            gsm: Info(serviceStatus: .none),
            wcdma: Info(serviceStatus: .available, domain: .csPS, roaming: false, forbidden: false, plmn: plmn)),
         ["umts"], .home),
        ("2g3g4g_searching",
         QMISystemInfo(gsm: Info(serviceStatus: .none), wcdma: Info(serviceStatus: .none), lte: Info(serviceStatus: .none)),
         [], .searching),
        ("2g3g4g_idle",
         QMISystemInfo(
            gsm: Info(serviceStatus: .powerSave), wcdma: Info(serviceStatus: .powerSave), lte: Info(serviceStatus: .powerSave)),
         [], .idle),
        ("2g3g4g_eps_home",
         QMISystemInfo(
            gsm: Info(serviceStatus: .none), wcdma: Info(serviceStatus: .none),
            lte: Info(serviceStatus: .available, domain: .ps, roaming: false, forbidden: false, plmn: plmn)),
         ["lte"], .home),
        ("4g_eps_home",
         QMISystemInfo(lte: Info(serviceStatus: .available, domain: .ps, roaming: false, forbidden: false, plmn: plmn)),
         ["lte"], .home),
        ("5g_5gs_home",
         QMISystemInfo(nr5g: Info(serviceStatus: .available, domain: .ps, roaming: false, forbidden: false, plmn: plmn)),
         ["5gnr"], .home),
    ] as [(String, QMISystemInfo, [String], RegistrationState)])
    func modemManagerRows(_ name: String, info: QMISystemInfo, names: [String], registration: RegistrationState) {
        #expect(info.accessTechnologies.names == names, "\(name)")
        #expect(info.registration == registration, "\(name)")
        if registration.isRegistered { #expect(info.plmn == Self.plmn, "\(name)") }
    }

    /// `process_common_info` is given no CS output for LTE and NR5G: an "available" cell in the CS domain only
    /// leaves the EPS/5GS registration idle and adds no technology (no MM test has this row; the function does).
    @Test(arguments: [
        ("LTE CS only", QMISystemInfo(lte: Info(serviceStatus: .available, domain: .cs)), [String](), RegistrationState.idle),
        ("NR CS only", QMISystemInfo(nr5g: Info(serviceStatus: .available, domain: .cs)), [], .idle),
        ("LTE CS only with NR5G available",
         QMISystemInfo(lte: Info(serviceStatus: .available, domain: .cs), eutraWithNR5GAvailable: true), [], .idle),
        ("LTE CS only, WCDMA PS",
         QMISystemInfo(wcdma: Info(serviceStatus: .available, domain: .ps), lte: Info(serviceStatus: .available, domain: .cs)),
         ["umts"], .home),
        ("GSM CS only: GSM, as MM", QMISystemInfo(gsm: Info(serviceStatus: .available, domain: .cs)), ["gsm"], .home),
    ] as [(String, QMISystemInfo, [String], RegistrationState)])
    func csOnlyDomain(_ name: String, info: QMISystemInfo, names: [String], registration: RegistrationState) {
        #expect(info.accessTechnologies.names == names, "\(name)")
        #expect(info.registration == registration, "\(name)")
    }
}

/// ModemManager src/mm-broadband-modem-qmi.c (1.25.95-dev, 9a2d5863): `qmi_dbm_valid`,
/// `common_signal_info_get_quality`, `signal_strength_get_quality`. MM has no unit test for these; the rows are the
/// functions' own bounds, at and past each edge.
@Suite struct ModemManagerQualityTables {
    /// qmi_dbm_valid: (-125, -30) for CDMA 1x (1), EV-DO (2) and UMTS (5); no window for GSM (4), LTE (8), 5G NR (12).
    @Test(arguments: [
        (1, -125.0, false), (1, -124, true), (2, -31, true), (2, -30, false), (5, -125, false), (5, -100, true),
        (5, -30, false), (4, -125, true), (4, -20, true), (8, -20, true), (8, 0, true), (12, -140, true),
    ] as [(Int, Double, Bool)])
    func dbmValid(radio: Int, dBm: Double, valid: Bool) {
        #expect(SignalQuality.qmiDBmValid(dBm, radioInterface: radio) == valid)
    }

    /// signal_strength_get_quality: no figure when the mandatory strength is invalid for its interface (the list is
    /// not consulted then) or when the best strength is not below 0 dBm.
    @Test(arguments: [
        ((0.0, 8), [(Double, Int)](), nil as Int?),  // LTE 0 dBm: valid for LTE, but not below 0: no quality
        ((-125, 5), [(-70, 8)], nil),  // UMTS -125 is invalid: the whole reply is dropped despite LTE -70
        ((-100, 5), [(-70, 8)], 70),  // UMTS -100 valid: best of -100 and LTE -70 → MM_RSSI_TO_QUALITY(-70)
        ((-100, 5), [(-20, 5)], 21),  // a list entry outside UMTS's window is skipped: -100 → 21 %
        ((-20, 8), [], 100),  // LTE has no window: -20 dBm clamps to 100 %
        ((-101, 5), [], 20),  // libqmi test_message_parse_complete: UMTS -101 dBm
    ] as [((Double, Int), [(Double, Int)], Int?)])
    func signalStrength(main: (Double, Int), list: [(Double, Int)], percent: Int?) {
        #expect(SignalQuality.percentQMIStrength(main: main, list: list.map { ($0.0, $0.1) }) == percent)
    }

    /// common_signal_info_get_quality: an RSSI counts when below 0 dBm and, for CDMA/EV-DO/UMTS, inside the window;
    /// the best must lie in (-125, 0). 5G values outside their range are skipped, not clamped.
    @Test func signalInfo() {
        #expect(SignalQuality.percentQMI(rssi: [(-20, 8)]) == 100)  // LTE: no window
        #expect(SignalQuality.percentQMI(rssi: [(-20, 5)]) == nil)  // UMTS: outside (-125, -30)
        #expect(SignalQuality.percentQMI(rssi: [(0, 4)]) == nil)  // not below 0 dBm
        #expect(SignalQuality.percentQMI(rssi: [(-125, 4)]) == nil)  // not above -125
        #expect(SignalQuality.percentNR(rsrp: -145, snr: nil, rsrq: nil) == nil)  // below -140: skipped
        #expect(SignalQuality.percentNR(rsrp: -40, snr: 45, rsrq: nil) == nil)  // above -44 and 40: skipped
        #expect(SignalQuality.percentNR(rsrp: -140, snr: nil, rsrq: nil) == 0)
        #expect(SignalQuality.percentNR(rsrp: -44, snr: 40, rsrq: 20) == 100)
        #expect(SignalQuality.percentNR(rsrp: -60, snr: -5.9, rsrq: nil) == 28)  // SNR cut toward zero: -5 → 28 %
        // 5G replaces the RSSI figure only when at least as high; alone it is the figure.
        #expect(SignalQuality.percentQMI(rssi: [(-200, 4)], nr: (rsrp: -92, snr: nil, rsrq: nil)) == 50)
    }
}

/// ModemManager src/tests/test-modem-helpers-mbim.c (9a2d5863) `signal_tests`: "5g-no-rsrp-snr", coded RSSI 16 on
/// 5G SA, which MM decodes as -97 dBm (`mm_signal_rssi_from_coded_value`: n - 113). A documented departure: the MBIM
/// specification and Microsoft's WWAN_SIGNAL_STATE table code RSSI as -113 + 2n, which gives -81 dBm.
@Suite struct ModemManagerMBIMTables {
    @Test func codedRSSIDeparture() {
        let mmDecoded = -97.0
        #expect(MBIMCoding.rssiDBm(coded: 16) == -81)
        #expect(MBIMCoding.rssiDBm(coded: 16) != mmDecoded)
        let s = MBIMSignalState(rssi: 16)
        #expect(s.readings(for: [.nr]).serving.rssi == -81)
    }

    /// mm_signal_quality_from_mbim_signal_state, and where we depart (a value outside the coding is unavailable).
    @Test(arguments: [
        (UInt32(31), [UInt32](), 100 as Int?), (0, [], 0), (15, [], 48),
        (32, [], nil),  // MM: clamped to 31 → 100 %; here outside the coding: no figure
        (98, [], nil),
        (99, [], nil),  // MM: 0 %; here unknown stays unknown
        (99, [57, 67], 40),  // the best v2 RSRP entry, -157 + 67 = -90 dBm → MM_RSRP_TO_QUALITY
        (99, [127, 0xFFFF_FFFF], nil),  // MM: 0 % (no entry below 127); here no figure
        (99, [0], 0),  // coded 0 (below -156 dBm) still counts for MM's figure: -157 → 0 %
    ] as [(UInt32, [UInt32], Int?)])
    func quality(rssi: UInt32, rsrp: [UInt32], percent: Int?) {
        #expect(SignalQuality.percentMBIM(codedRSSI: rssi, codedRSRP: rsrp) == percent)
    }
}
