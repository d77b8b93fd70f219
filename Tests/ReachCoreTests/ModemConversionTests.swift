import Testing
@testable import ReachCore

/// MBIM and QMI vocabularies → technologies (ModemManager mm-modem-helpers-mbim.c / -qmi.c).
@Suite struct ModemConversionTests {
    @Test(arguments: [
        (UInt32(0x0000_0001), ["gprs"]),
        (0x0000_0002, ["edge"]),
        (0x0000_001C, ["umts", "hsdpa", "hsupa"]),  // libmbim test_basic_connect_register_state: UMTS|HSDPA|HSUPA
        (0x0000_0020, ["lte"]),
        (0x0000_0040, ["lte", "5gnr"]),  // 5G_NSA is LTE + NR (MM)
        (0x0000_0060, ["lte", "5gnr"]),  // libmbim base-stations capture: system type 0x60 = LTE + 5G NSA
        (0x0000_0080, ["5gnr"]),  // 5G_SA
        (0x0001_0000, ["1xrtt"]),
        (0x0002_0000, ["evdo0"]), (0x0004_0000, ["evdoa"]), (0x0020_0000, ["evdob"]),
        (0x0018_0000, []),  // 1xEV-DV and 3xRTT: no technology of their own (MM skips them)
        (0x8000_0000, []),  // CUSTOM alone
        (0x0000_0000, []),
    ] as [(UInt32, [String])])
    func mbimDataClass(raw: UInt32, names: [String]) {
        #expect(AccessTechnologies(mbimDataClass: raw).names == names)
    }

    @Test(arguments: [
        // MBIMEx 3.0: one 5G bit (0x40) plus MbimDataSubclass
        (UInt32(0x60), UInt32(0x01), ["lte", "5gnr"]),  // 5G + ENDC → NSA
        (0x40, 0x02, ["5gnr"]),  // 5G + NR → SA
        (0x40, 0x04, ["lte", "5gnr"]),  // NEDC → NSA
        (0x40, 0x10, ["lte", "5gnr"]),  // NGENDC → NSA
        (0x40, 0x08, ["lte"]),  // eLTE → LTE
        (0x40, 0x03, ["5gnr"]),  // NR wins over ENDC, as in MM
        (0x40, 0x00, ["5gnr"]),  // departure from MM: 5G with no subclass is still 5G
        (0x20, 0x00, ["lte"]),
        (0x1C, 0x01, ["umts", "hsdpa", "hsupa"]),  // subclass ignored without the 5G bit
    ] as [(UInt32, UInt32, [String])])
    func mbimDataClassV3(raw: UInt32, subclass: UInt32, names: [String]) {
        #expect(AccessTechnologies(mbimDataClassV3: raw, subclass: subclass).names == names)
    }

    @Test func mbimEffectiveTechnologyFollowsModemManager() {
        let reg = AccessTechnologies([.umts, .hsdpa])
        #expect(AccessTechnologies.mbimEffective(packetService: .attached, packetDataClass: [.lte], registerAvailable: reg) == [.lte])
        #expect(AccessTechnologies.mbimEffective(packetService: .detached, packetDataClass: [.lte], registerAvailable: reg) == reg)
        #expect(AccessTechnologies.mbimEffective(packetService: .attached, packetDataClass: .none, registerAvailable: reg) == reg)
    }

    @Test(arguments: [
        (0, nil), (1, "1xrtt"), (2, "evdo0"), (3, nil) /* AMPS */, (4, "gsm"), (5, "umts"), (8, "lte"),
        (9, "td-scdma") /* MM: unknown */, (12, "5gnr"), (255, nil), (-1, nil),
    ] as [(Int, String?)])
    func qmiRadioInterface(raw: Int, name: String?) {
        #expect(RadioAccessTechnology(qmiRadioInterface: raw)?.rawValue == name)
    }

    @Test(arguments: [
        (1, "gprs"), (2, "edge"), (3, "hsdpa"), (4, "hsupa"), (5, "umts"), (6, "1xrtt"), (7, "evdo0"), (8, "evdoa"),
        (9, "gsm"), (10, "evdob"), (11, "lte"), (12, "hspa-plus"), (13, "hspa-plus"), (0, nil), (14, nil),
    ] as [(Int, String?)])
    func qmiDataCapability(raw: Int, name: String?) {
        #expect(RadioAccessTechnology(qmiDataCapability: raw)?.rawValue == name)
    }

    /// libqmi test_generated_nas_get_serving_system (a real UMTS modem, PLMN 222/50 "Iliad"): registered, radio
    /// interface UMTS, no data-capability list → UMTS, 3G.
    @Test func servingSystemIliadCapture() {
        let ss = QMIServingSystem(
            registrationState: 1, radioInterfaces: [5], dataCapabilities: [], roamingIndicator: 1,
            plmn: PLMN(qmiMCC: 222, qmiMNC: 50), operatorName: "Iliad")
        #expect(ss.registration == .home)
        #expect(ss.accessTechnologies.names == ["umts"])
        #expect(ss.accessTechnologies.generation == .g3)
        #expect(ss.plmn == PLMN(mcc: "222", mnc: "50"))
    }

    @Test func servingSystemPrefersDataCapabilities() {
        let ss = QMIServingSystem(registrationState: 1, radioInterfaces: [5], dataCapabilities: [12], roamingIndicator: 0)
        #expect(ss.accessTechnologies.names == ["hspa-plus"])
        #expect(ss.registration == .roaming)  // roaming indicator 0 = ON
    }

    @Test(arguments: [
        (0, RegistrationState.idle), (1, .home), (2, .searching), (3, .denied), (4, .unknown),
    ] as [(Int, RegistrationState)])
    func servingSystemRegistration(raw: Int, state: RegistrationState) {
        #expect(QMIServingSystem(registrationState: raw, radioInterfaces: [8]).registration == state)
    }

    @Test func servingSystemNotRegisteredHasNoTechnology() {
        #expect(QMIServingSystem(registrationState: 2, radioInterfaces: [8]).accessTechnologies.isEmpty)
    }

    typealias Info = QMISystemInfo.RATInfo

    @Test(arguments: [
        // (description, system info, expected technologies, registration)
        ("LTE registered", QMISystemInfo(lte: Info(serviceStatus: .available, domain: .csPS)), ["lte"], RegistrationState.home),
        ("LTE + EN-DC available → 5G NSA",
         QMISystemInfo(lte: Info(serviceStatus: .available, domain: .ps), eutraWithNR5GAvailable: true), ["lte", "5gnr"], .home),
        ("NR5G registered → 5G SA", QMISystemInfo(nr5g: Info(serviceStatus: .available, domain: .ps)), ["5gnr"], .home),
        ("WCDMA roaming",
         QMISystemInfo(wcdma: Info(serviceStatus: .available, domain: .csPS, roaming: true)), ["umts"], .roaming),
        ("GSM PS domain → GPRS", QMISystemInfo(gsm: Info(serviceStatus: .available, domain: .ps)), ["gprs"], .home),
        ("GSM CS domain → GSM", QMISystemInfo(gsm: Info(serviceStatus: .available, domain: .cs)), ["gsm"], .home),
        ("WCDMA beats GSM", QMISystemInfo(
            gsm: Info(serviceStatus: .available, domain: .csPS), wcdma: Info(serviceStatus: .available, domain: .csPS)),
         ["umts"], .home),
        ("camped only: not registered", QMISystemInfo(lte: Info(serviceStatus: .available, domain: .camped)), [], .unknown),
        ("forbidden → denied", QMISystemInfo(lte: Info(serviceStatus: .limited, forbidden: true)), [], .denied),
        ("limited → emergency only", QMISystemInfo(lte: Info(serviceStatus: .limited)), [], .emergencyOnly),
        ("no service → searching", QMISystemInfo(wcdma: Info(serviceStatus: .none), lte: Info(serviceStatus: .none)), [], .searching),
        ("power save → idle", QMISystemInfo(lte: Info(serviceStatus: .powerSave)), [], .idle),
        ("nothing reported", QMISystemInfo(), [], .unknown),
        ("EN-DC flag without LTE registration is ignored",
         QMISystemInfo(lte: Info(serviceStatus: .none), eutraWithNR5GAvailable: true), [], .searching),
    ] as [(String, QMISystemInfo, [String], RegistrationState)])
    func systemInfo(_ name: String, info: QMISystemInfo, names: [String], registration: RegistrationState) {
        #expect(info.accessTechnologies.names == names, "\(name)")
        #expect(info.registration == registration, "\(name)")
    }

    /// libqmi test_generated_nas_get_system_info (issue libqmi#33): MCC "530", MNC "24" sent as 3 bytes with 0xFF.
    @Test func plmnWithPaddedMNC() {
        let p = PLMN(qmiMCC: Array("530".utf8), qmiMNC: [0x32, 0x34, 0xFF])
        #expect(p == PLMN(mcc: "530", mnc: "24"))
        #expect(PLMN(qmiMCC: Array("310".utf8), qmiMNC: Array("410".utf8))?.description == "310410")
        #expect(PLMN(qmiMCC: [0xFF, 0xFF, 0xFF], qmiMNC: [0xFF, 0xFF, 0xFF]) == nil)
        #expect(PLMN(providerID: "26006") == PLMN(mcc: "260", mnc: "06"))  // libmbim register-state capture
        #expect(PLMN(providerID: "2600") == nil)
        #expect(PLMN(qmiMCC: 262, qmiMNC: 1)?.description == "26201")
        #expect(PLMN(qmiMCC: 310, qmiMNC: 26, mncIsThreeDigits: true)?.description == "310026")
    }

    @Test(arguments: [
        (UInt32(0), RegistrationState.unknown), (1, .idle), (2, .searching), (3, .home), (4, .roaming), (5, .roaming),
        (6, .denied), (7, .unknown),
    ] as [(UInt32, RegistrationState)])
    func mbimRegisterState(raw: UInt32, state: RegistrationState) {
        #expect(RegistrationState(mbimRegisterState: raw) == state)
    }

    @Test(arguments: [
        (UInt32(0), nil as UInt32?, SIMState.notInitialized), (1, nil, .ready), (2, nil, .absent), (3, nil, .error),
        (6, 2, .pinRequired), (6, 11, .pukRequired), (6, nil, .pinRequired), (7, nil, .absent),
    ] as [(UInt32, UInt32?, SIMState)])
    func mbimSubscriberReadyState(raw: UInt32, pin: UInt32?, state: SIMState) {
        #expect(SIMState(mbimSubscriberReadyState: raw, pinType: pin) == state)
    }

    @Test func qmiSIMStates() {
        #expect(SIMState(qmiPINStatus: 1) == .pinRequired)
        #expect(SIMState(qmiPINStatus: 4) == .pukRequired)
        #expect(SIMState(qmiPINStatus: 2) == .ready)
        #expect(SIMState(qmiPINStatus: 3) == .ready)  // PIN disabled
        #expect(SIMState(qmiCardState: 0, pin1Status: nil) == .absent)
        #expect(SIMState(qmiCardState: 1, pin1Status: 1) == .pinRequired)
        #expect(SIMState.pinRequired.needsIntervention && SIMState.pukRequired.needsIntervention)
        #expect(!SIMState.absent.needsIntervention)
    }
}
