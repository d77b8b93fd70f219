import Testing
@testable import ReachCore

/// QMI/MBIM readings → ModemState. Units per libqmi's data/qmi-service-nas.json (1.32.2) and the MBIM 1.0 /
/// MBIMEx 2.0 tables; how the pieces combine per ModemManager (mm-broadband-modem-qmi.c, mm-modem-helpers-qmi.c).
@Suite struct QMISignalReadingsTests {
    /// A Quectel EC25-style LTE reply (TLV 0x14): RSSI -65, RSRQ -10, RSRP -95, SNR 125 (12.5 dB).
    static let lte: QMISignalInfo = {
        var s = QMISignalInfo()
        s.lte = (-65, -10, -95, 125)
        return s
    }()

    @Test func lteUnitsAndBars() {
        let r = Self.lte.readings(for: [.lte])
        #expect(r.serving == SignalMeasurement(rssi: -65, rsrp: -95, rsrq: -10, sinr: 12.5))
        #expect(r.nr == nil)
        #expect(SignalPolicy.android.bars([.lte], serving: r.serving, nr: r.nr) == 4)  // RSRP -95 ≥ -98
        #expect(SignalPolicy.strict.bars([.lte], serving: r.serving, nr: r.nr) == 3)  // min(RSRP 3, RSRQ 4, SNR 3)
        #expect(Self.lte.qualityPercent == 78)  // MM_RSSI_TO_QUALITY(-65), integer arithmetic
    }

    @Test func nsaSplitsAnchorAndNRLeg() {
        var s = Self.lte
        s.nr = (-88, 180)  // 5G Signal Strength TLV 0x17: RSRP -88, SNR 18.0 dB
        s.nrRSRQ = -11  // 5G Signal Strength Extended TLV 0x18
        let r = s.readings(for: [.lte, .nr])
        #expect(r.serving.rsrp == -95)
        #expect(r.nr == SignalMeasurement(rsrp: -88, rsrq: -11, sinr: 18))
        // strict: the NR leg with a valid SS-RSRP gives the bars: -88 → 2 (≥ -90), RSRQ -11 → 2, SINR 18 → 3.
        #expect(SignalPolicy.strict.bars([.lte, .nr], serving: r.serving, nr: r.nr) == 2)
        // android: the LTE anchor is primary: RSRP -95 ≥ -98 → 4.
        #expect(SignalPolicy.android.bars([.lte, .nr], serving: r.serving, nr: r.nr) == 4)
    }

    @Test func saUsesNRAsServing() {
        var s = QMISignalInfo()
        s.nr = (-75, 220)
        let r = s.readings(for: [.nr])
        #expect(r.serving == SignalMeasurement(rsrp: -75, sinr: 22))
        #expect(r.nr == nil)
        #expect(SignalPolicy.android.bars([.nr], serving: r.serving) == 3)  // SS-RSRP -75 ≥ -80
        #expect(SignalPolicy.strict.bars([.nr], serving: r.serving) == 3)
    }

    @Test func notMeasuredNRFieldsAreDropped() {
        var s = Self.lte
        s.nr = (QMISignalInfo.notMeasured16, QMISignalInfo.notMeasured16)
        s.nrRSRQ = QMISignalInfo.notMeasured16
        #expect(s.nrMeasurement == nil)
        #expect(s.readings(for: [.lte, .nr]).nr == nil)
    }

    @Test func wcdmaECIOIsInMinusHalfDecibels() {
        var s = QMISignalInfo()
        s.wcdma = (-85, 12)
        #expect(s.readings(for: [.umts]).serving == SignalMeasurement(rssi: -85, ecio: -6))
    }

    @Test func unregisteredTakesTheNewestFamilyMeasured() {
        var s = QMISignalInfo()
        s.gsmRSSI = -90
        s.wcdma = (-80, 10)
        #expect(s.readings(for: .none).serving.rssi == -80)
    }

    /// libqmi test-message.c `test_message_parse_complete`: Get Signal Strength, UMTS -101 dBm, RSSI list 101,
    /// ECIO list 17.
    @Test func signalStrengthCapture() {
        let s = QMISignalStrength(
            current: .init(-101, radioInterface: 5), rssiList: [.init(101, radioInterface: 5)],
            ecioList: [.init(17, radioInterface: 5)])
        let serving = s.serving(for: [.umts])
        #expect(serving == SignalMeasurement(rssi: -101, ecio: -8.5))
        #expect(SignalPolicy.android.bars([.umts], serving: serving) == 1)  // RSSI -101 ≥ -107
        #expect(s.qualityPercent == 20)  // MM_RSSI_TO_QUALITY(-101)
        #expect(s.serving(for: .none) == serving)  // not registered: the current radio interface's
    }

    @Test func signalStrengthLTEExtras() {
        let s = QMISignalStrength(
            current: .init(-70, radioInterface: 8), rsrq: .init(-12, radioInterface: 8), lteSNR: 55, lteRSRP: -101)
        #expect(s.serving(for: [.lte]) == SignalMeasurement(rssi: -70, rsrp: -101, rsrq: -12, sinr: 5.5))
    }

    @Test func thresholdsAreTheBarBoundaries() {
        // android: GSM, WCDMA and LTE-fallback RSSI; LTE RSRP -128/-118/-108/-98 and NR SS-RSRP; no RSRQ or SNR.
        let android = QMISignalThresholds(.android)
        #expect(android.rssi == [-113, -107, -103, -97, -89, -87, -77])
        #expect(android.rsrp == [-128, -118, -110, -108, -98, -90, -80, -65])
        #expect(android.rsrq.isEmpty && android.lteSNR.isEmpty)
        let strict = QMISignalThresholds(.strict)
        #expect(strict.rssi == [-113, -107, -103, -97, -89, -87, -77])
        #expect(strict.rsrp == [-115, -110, -105, -95, -90, -85, -80, -65])
        #expect(strict.rsrq == [-19, -17, -14, -12])
        #expect(strict.lteSNR == [-30, 10, 50, 130])
        // A replaced threshold moves the indication boundary with it.
        var custom = SignalPolicy.android
        try? custom.override(.lte, .rsrp, thresholds: [-125, -115, -105, -95])
        #expect(QMISignalThresholds(custom).rsrp == [-125, -115, -110, -105, -95, -90, -80, -65])
    }
}

@Suite struct QMIRegistrationReadingsTests {
    /// libqmi test-generated.c `test_generated_nas_get_system_info` (libqmi#33): LTE available, CS+PS, MCC "530",
    /// MNC "24" padded with 0xFF.
    @Test func systemInfoCaptureIsHomeLTE() {
        var readings = QMIModemReadings()
        readings.systemInfo = QMISystemInfo(
            lte: .init(
                serviceStatus: .available, domain: .csPS, roaming: false, forbidden: false,
                plmn: PLMN(qmiMCC: Array("530".utf8), qmiMNC: Array("24".utf8) + [0xFF])))
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.registration == .home)
        #expect(state.generation == .g4)
        #expect(state.plmn == PLMN(mcc: "530", mnc: "24"))
    }

    /// libqmi `test_generated_nas_get_serving_system`: registered, UMTS, data capabilities HSDPA/HSUPA/WCDMA,
    /// roaming indicator off, 222/50 "Iliad".
    @Test func servingSystemCaptureIsHomeUMTS() {
        var readings = QMIModemReadings()
        readings.servingSystem = QMIServingSystem(
            registrationState: 1, radioInterfaces: [5], dataCapabilities: [3, 4, 5], roamingIndicator: 1,
            plmn: PLMN(qmiMCC: 222, qmiMNC: 50), operatorName: "Iliad")
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.generation == .g3)
        #expect(state.accessTechnologies == [.hsdpa, .hsupa, .umts])
        #expect(state.operatorName == "Iliad")
        #expect(state.roaming == false)
    }

    @Test func endcFlagMakesLTEFiveGNSA() {
        var readings = QMIModemReadings()
        readings.systemInfo = QMISystemInfo(
            lte: .init(serviceStatus: .available, domain: .ps, roaming: true), eutraWithNR5GAvailable: true)
        var s = QMISignalInfo()
        s.lte = (-70, -9, -92, 140)
        s.nr = (-84, 200)
        readings.signalInfo = s
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.generation == .g5)
        #expect(state.nrMode == "nsa")
        #expect(state.roaming)
        #expect(state.nrSignal?.rsrp == -84)
        #expect(state.signal.rsrp == -92)
    }

    @Test func systemInfoWinsOverServingSystemAndIndicationsReplace() {
        var readings = QMIModemReadings()
        readings.systemInfo = QMISystemInfo(wcdma: .init(serviceStatus: .available, domain: .csPS))
        readings.servingSystem = QMIServingSystem(registrationState: 1, radioInterfaces: [4])
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.generation == .g3)
        // A System Info indication flips the modem to LTE: the same readings derive 4G.
        readings.systemInfo = QMISystemInfo(lte: .init(serviceStatus: .available, domain: .csPS))
        readings.apply(to: &state)
        #expect(state.generation == .g4)
    }

    @Test func deniedKeepsRejectCause() {
        var readings = QMIModemReadings()
        readings.systemInfo = QMISystemInfo(lte: .init(serviceStatus: .none, forbidden: true, rejectCause: 15))
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.registration == .searching)
        readings.systemInfo = QMISystemInfo(lte: .init(serviceStatus: .limited, forbidden: true, rejectCause: 15))
        readings.apply(to: &state)
        #expect(state.registration == .denied)
        #expect(state.rejectCause == 15)
        #expect(state.generation == .none)
    }

    @Test func lockedSIMNeedsIntervention() {
        var readings = QMIModemReadings()
        readings.sim = SIMState(qmiCardState: 1, pin1Status: 1)
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        readings.apply(to: &state)
        #expect(state.sim == .pinRequired)
        #expect(state.sim.needsIntervention)
    }
}

@Suite struct MBIMReadingsTests {
    /// libmbim test-message-parser.c `test_basic_connect_register_state`: home, data classes UMTS|HSDPA|HSUPA,
    /// provider "26006".
    @Test func registerStateCaptureIsThreeG() {
        var readings = MBIMModemReadings()
        readings.network = MBIMNetworkReading(registerState: 3, availableDataClasses: 0x1C, providerID: "26006")
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .mbim)
        readings.apply(to: &state)
        #expect(state.generation == .g3)
        #expect(state.plmn == PLMN(mcc: "260", mnc: "06"))
    }

    @Test(arguments: [
        // (packet service state, packet data class, register available, v3?, subclass) → generation, nr mode
        (2 as UInt32?, 0x20 as UInt32?, 0x3C as UInt32, false, 0 as UInt32, Generation.g4, nil as String?),
        (4, 0x20, 0x1C, false, 0, .g3, nil),  // detached: Register State's available classes (UMTS/HSPA)
        (2, 0x40, 0x20, false, 0, .g5, "nsa"),  // MBIMEx 2.0 5G_NSA
        (2, 0x80, 0x20, false, 0, .g5, "sa"),  // MBIMEx 2.0 5G_SA
        (2, 0x40, 0x20, true, 0x01, .g5, "nsa"),  // MBIMEx 3.0 5G + ENDC
        (2, 0x40, 0x20, true, 0x02, .g5, "sa"),  // MBIMEx 3.0 5G + NR
        (2, 0x40, 0x20, true, 0x08, .g4, nil),  // MBIMEx 3.0 5G + eLTE
        (nil, nil, 0x03, false, 0, .g2, nil),  // no Packet Service answer: GPRS|EDGE available
    ] as [(UInt32?, UInt32?, UInt32, Bool, UInt32, Generation, String?)])
    func packetServiceRule(
        state ps: UInt32?, dataClass: UInt32?, available: UInt32, v3: Bool, subclass: UInt32, generation: Generation,
        nrMode: String?
    ) {
        var readings = MBIMModemReadings()
        readings.network = MBIMNetworkReading(
            registerState: 3, availableDataClasses: available, packetServiceState: ps, packetDataClass: dataClass,
            packetDataClassIsV3: v3, packetDataSubclass: subclass)
        var state = ModemState(device: "/dev/wwan0mbim0", protocol: .mbim)
        readings.apply(to: &state)
        #expect(state.generation == generation)
        #expect(state.nrMode == nrMode)
    }

    /// ModemManager's custom data classes (mm-modem-helpers-mbim.c `custom_data_classes`, found with strstr as MM
    /// does): Telit FN990 / Gosuncn GM800 "5G/TDS", Quectel RM502Q "5GSA/TDS", Foxconn T99W175 "5G" (with 5G_NSA
    /// already in the caps under MBIMEx 2.0), Huawei EM820W "HSPA+". This is the only custom-class rule: the exact-
    /// match twin `AccessTechnologies.formUnion(mbimCustomDataClass:)`, which called "5G/TDS" nothing, is gone.
    @Test(arguments: [
        ("5G/TDS", 0x8000_003C as UInt32, 0x40 as UInt32),
        ("5GSA/TDS", 0x8000_003C, 0x80),
        ("5G", 0x8000_007C, 0x80),
        ("HSPA+", 0x8000_0004, 0x18),
        ("HSPA+", 0x8000_001C, 0),  // caps already list HSDPA/HSUPA: MM adds nothing (any-bit overlap rule)
        ("5G", 0x0000_003C, 0),  // no CUSTOM bit in the caps: no custom class
    ])
    func customDataClass(name: String, caps: UInt32, expected: UInt32) {
        #expect(MBIMDataClass(customDataClass: name, capsDataClass: caps).rawValue == expected)
    }

    @Test func customBitInPacketServiceBecomesFiveG() {
        var readings = MBIMModemReadings()
        readings.network = MBIMNetworkReading(
            registerState: 3, availableDataClasses: 0x20, packetServiceState: 2, packetDataClass: 0x8000_0020,
            customDataClass: MBIMDataClass.nr5gNSA.rawValue)
        var state = ModemState(device: "/dev/cdc-wdm0", protocol: .mbim)
        readings.apply(to: &state)
        #expect(state.generation == .g5)
        #expect(state.nrMode == "nsa")
    }

    @Test func signalStateV2SplitsLTEAndNR() {
        // Coded RSSI 25 = -63 dBm; LTE RSRP 65 = -92 dBm, SNR 75 = 14 dB; 5G-NSA RSRP 69 = -88 dBm, SNR 83 = 18 dB
        // (SNR n covers [-23.5 + n/2, -23 + n/2) dB).
        let s = MBIMSignalState(
            rssi: 25, rsrpSNR: [.init(rsrp: 65, snr: 75, systemType: 0x20), .init(rsrp: 69, snr: 83, systemType: 0x40)])
        let r = s.readings(for: [.lte, .nr])
        #expect(r.serving == SignalMeasurement(rssi: -63, rsrp: -92, sinr: 14))
        #expect(r.nr == SignalMeasurement(rsrp: -88, sinr: 18))
        #expect(s.qualityPercent == 80)  // 25 * 100 / 31
    }

    @Test func unknownRSSIFallsBackToRSRPQuality() {
        let s = MBIMSignalState(rssi: 99, rsrpSNR: [.init(rsrp: 57, snr: 0xFFFF_FFFF, systemType: 0x20)])
        #expect(s.readings(for: [.lte]).serving == SignalMeasurement(rsrp: -100))
        #expect(s.qualityPercent == 20)  // MM_RSRP_TO_QUALITY(-100)
    }

    @Test func deniedReportsTheNetworkError() {
        let n = MBIMNetworkReading(registerState: 6, availableDataClasses: 0x20, networkError: 11)
        #expect(n.registration == .denied)
        #expect(n.rejectCause == 11)
        #expect(n.accessTechnologies == .none)
    }
}

@Suite struct OperatorNameTests {
    /// The libqmi Serving System capture carries "Iliad" as 5 packed GSM 7-bit octets.
    @Test func gsm7PackedIliad() {
        #expect(OperatorName.decode([0x49, 0x76, 0x3A, 0x4C, 0x06]) == "Iliad")
    }

    @Test func plainTextStaysAsIs() {
        #expect(OperatorName.decode(Array("Telekom.de".utf8)) == "Telekom.de")
        #expect(OperatorName.decode(Array("Orange F  ".utf8) + [0]) == "Orange F")
        #expect(OperatorName.decode([]) == nil)
    }

    /// NITZ names in UCS-2LE (QMI encoding scheme 1), as the simulator and Qualcomm firmware send them.
    @Test(arguments: [
        ([0x56, 0x00, 0x6F, 0x00, 0x64, 0x00, 0x61, 0x00], "Voda"),
        ([0x4F, 0x00, 0x32, 0x00, 0x00, 0x00, 0x58, 0x00], "O2"),  // ends at the first NUL unit
        ([0xE9, 0x00, 0x20, 0x00, 0x20, 0x00], "é"),  // Latin-1 range; trailing blanks trimmed
        ([0x1F, 0x04, 0x38, 0x04], "Пи"),  // beyond Latin-1
        ([0x41, 0x00, 0x42], "A"),  // an odd trailing byte is dropped
        ([0x00, 0xD8, 0x41, 0x00], nil),  // a surrogate is not UCS-2
        ([0x07, 0x00], nil),  // control character
        ([], nil),
    ] as [([UInt8], String?)])
    func ucs2Names(bytes: [UInt8], name: String?) {
        #expect(OperatorName.decodeUCS2LE(bytes) == name)
    }

    @Test func gsm7SeptetBoundary() {
        // Seven septets ("AAAAAAA") fill seven octets and leave one zero septet of padding, not an "@".
        #expect(GSM7.unpack([0xC1, 0x60, 0x30, 0x18, 0x0C, 0x06, 0x01]) == [UInt8](repeating: 0x41, count: 7))
        #expect(GSM7.decode(septets: [0x00, 0x11, 0x41]) == "@_A")
    }
}
