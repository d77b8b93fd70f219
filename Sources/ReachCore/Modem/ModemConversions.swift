// Conversions from the modems' own vocabularies (MBIM and QMI) to ReachCore values.
//
// Pure functions over plain integers and bytes; the adapters copy values out of libqmi/libmbim and call these.
// Names say the direction: `AccessTechnologies(mbimDataClass:)` reads an MBIM value. Sources are ModemManager's
// `mm-modem-helpers-mbim.c` / `mm-modem-helpers-qmi.c`; departures are documented in place.

// MARK: - MBIM

/// MBIM_DATA_CLASS (MBIM 1.0 §10.5.9 plus the MBIMEx 2.0 5G bits), as libmbim's `MbimDataClass`.
public struct MBIMDataClass: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let gprs = MBIMDataClass(rawValue: 1 << 0)
    public static let edge = MBIMDataClass(rawValue: 1 << 1)
    public static let umts = MBIMDataClass(rawValue: 1 << 2)
    public static let hsdpa = MBIMDataClass(rawValue: 1 << 3)
    public static let hsupa = MBIMDataClass(rawValue: 1 << 4)
    public static let lte = MBIMDataClass(rawValue: 1 << 5)
    public static let nr5gNSA = MBIMDataClass(rawValue: 1 << 6)
    public static let nr5gSA = MBIMDataClass(rawValue: 1 << 7)
    public static let cdma1xRTT = MBIMDataClass(rawValue: 1 << 16)
    public static let cdma1xEVDO = MBIMDataClass(rawValue: 1 << 17)
    public static let cdma1xEVDORevA = MBIMDataClass(rawValue: 1 << 18)
    public static let cdma1xEVDV = MBIMDataClass(rawValue: 1 << 19)
    public static let cdma3xRTT = MBIMDataClass(rawValue: 1 << 20)
    public static let cdma1xEVDORevB = MBIMDataClass(rawValue: 1 << 21)
    public static let umb = MBIMDataClass(rawValue: 1 << 22)
    public static let custom = MBIMDataClass(rawValue: 1 << 31)

    /// MBIMEx 3.0 `MbimDataClassV3`: one 5G bit where v1/v2 had two.
    public static let v3NR5G = MBIMDataClass(rawValue: 1 << 6)
}

/// MBIMEx 3.0 `MbimDataSubclass`.
public struct MBIMDataSubclass: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let endc = MBIMDataSubclass(rawValue: 1 << 0)
    public static let nr = MBIMDataSubclass(rawValue: 1 << 1)
    public static let nedc = MBIMDataSubclass(rawValue: 1 << 2)
    public static let elte = MBIMDataSubclass(rawValue: 1 << 3)
    public static let ngendc = MBIMDataSubclass(rawValue: 1 << 4)
}

extension AccessTechnologies {
    /// An MBIM data-class bitmask (MBIM 1.0, or MBIMEx 2.0 with 5G_NSA/5G_SA), as ModemManager's
    /// `mm_modem_access_technology_from_mbim_data_class`: 5G_NSA is LTE + NR, 5G_SA is NR; 1xEV-DV, 3xRTT, UMB and
    /// CUSTOM have no technology of their own and are skipped.
    public init(mbimDataClass raw: UInt32) {
        let dc = MBIMDataClass(rawValue: raw)
        var set = AccessTechnologies.none
        let table: [(MBIMDataClass, [RadioAccessTechnology])] = [
            (.gprs, [.gprs]), (.edge, [.edge]), (.umts, [.umts]), (.hsdpa, [.hsdpa]), (.hsupa, [.hsupa]),
            (.lte, [.lte]), (.nr5gNSA, [.lte, .nr]), (.nr5gSA, [.nr]),
            (.cdma1xRTT, [.cdma1x]), (.cdma1xEVDO, [.evdo0]), (.cdma1xEVDORevA, [.evdoA]), (.cdma1xEVDORevB, [.evdoB]),
        ]
        for (bit, rats) in table where dc.contains(bit) { rats.forEach { set.insert($0) } }
        self = set
    }

    /// An MBIMEx 3.0 data class and subclass. The 5G bit with subclass NR is SA (NR); with ENDC, NEDC or NGENDC it
    /// is NSA (LTE + NR); with eLTE it is LTE (`mm_mbim_data_class_from_mbim_data_class_v3_and_subclass`).
    /// Departure from ModemManager: the 5G bit with no subclass at all yields NR, not nothing, because the device
    /// did say it is on 5G; MM drops the bit and the user would see no generation.
    public init(mbimDataClassV3 raw: UInt32, subclass: UInt32) {
        let v3 = MBIMDataClass(rawValue: raw)
        let sub = MBIMDataSubclass(rawValue: subclass)
        var set = AccessTechnologies(mbimDataClass: raw & ~(MBIMDataClass.nr5gNSA.rawValue | MBIMDataClass.nr5gSA.rawValue))
        if v3.contains(.v3NR5G) {
            if sub.contains(.nr) {
                set.insert(.nr)
            } else if !sub.isDisjoint(with: [.endc, .nedc, .ngendc]) {
                set.insert(.lte)
                set.insert(.nr)
            } else if sub.contains(.elte) {
                set.insert(.lte)
            } else {
                set.insert(.nr)
            }
        }
        self = set
    }
}

/// Registration state, the vocabulary both protocols share after conversion.
public enum RegistrationState: String, Sendable, CaseIterable, Codable {
    case unknown
    case idle  // not registered and not searching (MBIM deregistered, QMI power save)
    case searching
    case home
    case roaming
    case denied
    case emergencyOnly = "emergency_only"

    public var isRegistered: Bool { self == .home || self == .roaming }

    /// MBIM_REGISTER_STATE (Basic Connect Register State): UNKNOWN 0, DEREGISTERED 1, SEARCHING 2, HOME 3, ROAMING 4,
    /// PARTNER 5, DENIED 6. Partner (a preferred roaming partner) is roaming. Deregistered is idle, as in MM.
    public init(mbimRegisterState raw: UInt32) {
        switch raw {
        case 1: self = .idle
        case 2: self = .searching
        case 3: self = .home
        case 4, 5: self = .roaming
        case 6: self = .denied
        default: self = .unknown
        }
    }
}

/// MBIM_PACKET_SERVICE_STATE: UNKNOWN 0, ATTACHING 1, ATTACHED 2, DETACHING 3, DETACHED 4.
public enum PacketServiceState: String, Sendable, Codable {
    case unknown, attaching, attached, detaching, detached

    public init(mbimPacketServiceState raw: UInt32) {
        switch raw {
        case 1: self = .attaching
        case 2: self = .attached
        case 3: self = .detaching
        case 4: self = .detached
        default: self = .unknown
        }
    }
}

extension AccessTechnologies {
    /// The technology ModemManager reports for an MBIM modem: Packet Service's data class while attached, otherwise
    /// Register State's available data classes (`enabled_cache_best_available_data_class`).
    public static func mbimEffective(
        packetService: PacketServiceState, packetDataClass: AccessTechnologies?, registerAvailable: AccessTechnologies
    ) -> AccessTechnologies {
        if packetService == .attached, let packetDataClass, !packetDataClass.isEmpty { return packetDataClass }
        return registerAvailable
    }
}

// MARK: - QMI

extension RadioAccessTechnology {
    /// QmiNasRadioInterface: NONE 0, CDMA_1X 1, CDMA_1XEVDO 2, AMPS 3, GSM 4, UMTS 5, LTE 8, TD_SCDMA 9, 5GNR 12.
    /// Departure from ModemManager, which maps TD-SCDMA to unknown: TD-SCDMA is a 3G (UTRA TDD) technology and Android
    /// classes it 3G, so it keeps its name here. AMPS (analogue) and NONE have no technology.
    public init?(qmiRadioInterface raw: Int) {
        switch raw {
        case 1: self = .cdma1x
        case 2: self = .evdo0
        case 4: self = .gsm
        case 5: self = .umts
        case 8: self = .lte
        case 9: self = .tdScdma
        case 12: self = .nr
        default: return nil
        }
    }

    /// QmiNasDataCapability (Serving System "Data Service Capability" TLV): GPRS 1, EDGE 2, HSDPA 3, HSUPA 4,
    /// WCDMA 5, CDMA 6, EVDO_REV_0 7, EVDO_REV_A 8, GSM 9, EVDO_REV_B 10, LTE 11, HSDPA_PLUS 12, DC_HSDPA_PLUS 13.
    /// WCDMA is UMTS, CDMA is 1xRTT, HSDPA+ and DC-HSDPA+ are HSPA+ (as MM).
    public init?(qmiDataCapability raw: Int) {
        switch raw {
        case 1: self = .gprs
        case 2: self = .edge
        case 3: self = .hsdpa
        case 4: self = .hsupa
        case 5: self = .umts
        case 6: self = .cdma1x
        case 7: self = .evdo0
        case 8: self = .evdoA
        case 9: self = .gsm
        case 10: self = .evdoB
        case 11: self = .lte
        case 12, 13: self = .hspaPlus
        default: return nil
        }
    }
}

/// A PLMN (MCC + MNC) as digits.
public struct PLMN: Sendable, Equatable, Hashable, CustomStringConvertible, Codable {
    public var mcc: String
    public var mnc: String

    public init(mcc: String, mnc: String) {
        self.mcc = mcc
        self.mnc = mnc
    }

    /// From QMI's fixed-size MCC/MNC byte strings. A 2-digit MNC is sent as 3 bytes with 0xFF padding (libqmi#33);
    /// padding and anything that is not a digit ends the field. Nil unless MCC has 3 digits and MNC 2 or 3.
    public init?(qmiMCC: [UInt8], qmiMNC: [UInt8]) {
        func digits(_ b: [UInt8]) -> String {
            String(decoding: b.prefix(while: { $0 >= 0x30 && $0 <= 0x39 }), as: UTF8.self)
        }
        let mcc = digits(qmiMCC)
        let mnc = digits(qmiMNC)
        guard mcc.count == 3, (2...3).contains(mnc.count) else { return nil }
        self.init(mcc: mcc, mnc: mnc)
    }

    /// From a provider id such as MBIM's "26006": 3 digits of MCC then 2 or 3 of MNC.
    public init?(providerID: String) {
        guard (5...6).contains(providerID.count), providerID.allSatisfy(\.isASCIIDigit) else { return nil }
        self.init(mcc: String(providerID.prefix(3)), mnc: String(providerID.dropFirst(3)))
    }

    /// QMI Serving System's u16 MCC/MNC. The integer loses a leading zero of a 3-digit MNC; `mncDigits` (from the
    /// MNC PCS digit TLV, when the modem sends it) says whether to pad to 3.
    public init?(qmiMCC mcc: UInt16, qmiMNC mnc: UInt16, mncIsThreeDigits: Bool? = nil) {
        guard mcc >= 1, mcc <= 999, mnc <= 999 else { return nil }
        let m = String(mcc)
        let n = String(mnc)
        let width = (mncIsThreeDigits ?? (mnc >= 100)) ? 3 : 2
        self.init(
            mcc: String(repeating: "0", count: max(0, 3 - m.count)) + m,
            mnc: String(repeating: "0", count: max(0, width - n.count)) + n)
    }

    public var description: String { mcc + mnc }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// What QMI NAS Get Serving System (0x0024) said, as plain values.
public struct QMIServingSystem: Sendable, Equatable {
    /// QmiNasRegistrationState: NOT_REGISTERED 0, REGISTERED 1, NOT_REGISTERED_SEARCHING 2, REGISTRATION_DENIED 3,
    /// UNKNOWN 4.
    public var registrationState: Int
    /// QmiNasRadioInterface values of TLV 0x01.
    public var radioInterfaces: [Int]
    /// QmiNasDataCapability values of TLV 0x11, when present.
    public var dataCapabilities: [Int]
    /// QmiNasRoamingIndicatorStatus of TLV 0x10 (ON 0, OFF 1), when present.
    public var roamingIndicator: Int?
    public var plmn: PLMN?
    public var operatorName: String?
    /// QmiNasAttachState of the PS domain (TLV 0x01): UNKNOWN 0, ATTACHED 1, DETACHED 2.
    public var psAttachState: Int?

    public init(
        registrationState: Int, radioInterfaces: [Int], dataCapabilities: [Int] = [], roamingIndicator: Int? = nil,
        plmn: PLMN? = nil, operatorName: String? = nil, psAttachState: Int? = nil
    ) {
        self.registrationState = registrationState
        self.radioInterfaces = radioInterfaces
        self.dataCapabilities = dataCapabilities
        self.roamingIndicator = roamingIndicator
        self.plmn = plmn
        self.operatorName = operatorName
        self.psAttachState = psAttachState
    }

    /// The PS attach state (ModemManager's `mm_modem_3gpp_registration_state` for PS reads the same TLV): attached,
    /// detached, or nil when the modem says unknown.
    public var packetService: PacketServiceState? {
        switch psAttachState {
        case 1: return .attached
        case 2: return .detached
        default: return nil
        }
    }

    public var registration: RegistrationState {
        switch registrationState {
        case 0: return .idle
        case 1: return roamingIndicator == 0 ? .roaming : .home
        case 2: return .searching
        case 3: return .denied
        default: return .unknown
        }
    }

    /// The technologies in use: the data-capability list when the modem gave one (it is more precise: HSPA+ rather
    /// than UMTS), otherwise the radio interfaces, as MM does. Nothing unless registered.
    public var accessTechnologies: AccessTechnologies {
        guard registration.isRegistered else { return .none }
        let fromCaps = AccessTechnologies(dataCapabilities.compactMap { RadioAccessTechnology(qmiDataCapability: $0) })
        if !fromCaps.isEmpty { return fromCaps }
        return AccessTechnologies(radioInterfaces.compactMap { RadioAccessTechnology(qmiRadioInterface: $0) })
    }
}

/// What QMI NAS Get System Info (0x004D) or its System Info indication (0x004E) said, per radio technology.
public struct QMISystemInfo: Sendable, Equatable {
    /// QmiNasServiceStatus: NONE 0, LIMITED 1, AVAILABLE 2, LIMITED_REGIONAL 3, POWER_SAVE 4.
    public enum ServiceStatus: Int, Sendable {
        case none = 0, limited = 1, available = 2, limitedRegional = 3, powerSave = 4
    }

    /// QmiNasNetworkServiceDomain: NONE 0, CS 1, PS 2, CS_PS 3, CAMPED 4, UNKNOWN 255.
    public enum Domain: Int, Sendable {
        case none = 0, cs = 1, ps = 2, csPS = 3, camped = 4, unknown = 255
    }

    /// One technology's service status TLV and its system-info TLV.
    public struct RATInfo: Sendable, Equatable {
        public var serviceStatus: ServiceStatus
        public var domain: Domain?
        public var roaming: Bool?
        public var forbidden: Bool?
        public var plmn: PLMN?
        public var rejectCause: Int?

        public init(
            serviceStatus: ServiceStatus, domain: Domain? = nil, roaming: Bool? = nil, forbidden: Bool? = nil,
            plmn: PLMN? = nil, rejectCause: Int? = nil
        ) {
            self.serviceStatus = serviceStatus
            self.domain = domain
            self.roaming = roaming
            self.forbidden = forbidden
            self.plmn = plmn
            self.rejectCause = rejectCause
        }

        /// ModemManager's `process_common_info` for a GSM or WCDMA technology, reduced to one state (the CS or the PS
        /// registration, whichever is registered: MM's GSM/UMTS access technology comes from either).
        /// Power save → idle; no service → searching; forbidden → denied; limited → emergency only;
        /// available with a CS, PS or CS+PS domain → home or roaming.
        public var registration: RegistrationState {
            switch serviceStatus {
            case .powerSave: return .idle
            case .none: return .searching
            default: break
            }
            if forbidden == true { return .denied }
            if serviceStatus == .limited || serviceStatus == .limitedRegional { return .emergencyOnly }
            if let domain, domain != .none, domain != .camped, domain != .unknown, serviceStatus == .available {
                return roaming == true ? .roaming : .home
            }
            return .unknown
        }

        /// The EPS (LTE) or 5GS (NR) registration: `process_common_info` is given no CS output for LTE and NR5G, so
        /// an "available" cell whose domain is CS only leaves the packet registration idle (`mm_modem_registration_
        /// state_from_qmi_system_info` then adds no LTE/5GNR technology). Data needs the PS domain.
        public var packetRegistration: RegistrationState {
            let r = registration
            return r.isRegistered && domain == .cs ? .idle : r
        }

        var hasPS: Bool { domain == .ps || domain == .csPS }
    }

    public var gsm: RATInfo?
    public var wcdma: RATInfo?
    public var lte: RATInfo?
    public var nr5g: RATInfo?
    /// TLV 0x4E in the response (0x50 in the indication): LTE cell with NR5G available for EN-DC.
    public var eutraWithNR5GAvailable: Bool

    public init(
        gsm: RATInfo? = nil, wcdma: RATInfo? = nil, lte: RATInfo? = nil, nr5g: RATInfo? = nil,
        eutraWithNR5GAvailable: Bool = false
    ) {
        self.gsm = gsm
        self.wcdma = wcdma
        self.lte = lte
        self.nr5g = nr5g
        self.eutraWithNR5GAvailable = eutraWithNR5GAvailable
    }

    /// Technologies as `mm_modem_registration_state_from_qmi_system_info` derives them: NR (5GS) registered → NR;
    /// LTE (EPS) registered → LTE, plus NR when EUTRA-with-NR5G is available (EN-DC, 5G NSA); WCDMA registered →
    /// UMTS; else GSM registered → GPRS in the PS domain, GSM in the CS domain.
    public var accessTechnologies: AccessTechnologies {
        var set = AccessTechnologies.none
        if nr5g?.packetRegistration.isRegistered == true { set.insert(.nr) }
        if lte?.packetRegistration.isRegistered == true {
            set.insert(.lte)
            if eutraWithNR5GAvailable { set.insert(.nr) }
        }
        if wcdma?.registration.isRegistered == true {
            set.insert(.umts)
        } else if let gsm, gsm.registration.isRegistered {
            set.insert(gsm.hasPS ? .gprs : .gsm)
        }
        return set
    }

    /// The technologies newest first, as MM walks them for the registration and the operator.
    private var byPreference: [RATInfo] { [nr5g, lte, wcdma, gsm].compactMap { $0 } }

    /// Each technology's registration, newest first: the packet (5GS/EPS) registration for NR and LTE.
    private var states: [RegistrationState] {
        [nr5g?.packetRegistration, lte?.packetRegistration, wcdma?.registration, gsm?.registration].compactMap { $0 }
    }

    /// One registration state for the modem: the newest registered technology's (home or roaming); otherwise
    /// searching if any technology searches, denied if any was denied, emergency-only, idle, or unknown.
    public var registration: RegistrationState {
        let states = self.states
        if let registered = states.first(where: \.isRegistered) { return registered }
        for s in [RegistrationState.searching, .denied, .emergencyOnly, .idle] where states.contains(s) { return s }
        return .unknown
    }

    /// The PLMN of the newest registered technology, else of any technology that reported one (MM also reports the
    /// network id on a registration denial).
    public var plmn: PLMN? {
        zip(byPreference, states).first(where: { $0.1.isRegistered && $0.0.plmn != nil })?.0.plmn
            ?? byPreference.first(where: { $0.plmn != nil })?.plmn
    }

    /// The reject cause of a denied technology, when the modem reported one.
    public var rejectCause: Int? { byPreference.first(where: { $0.rejectCause != nil })?.rejectCause }

    /// PS attach from the newest registered technology's service domain (ModemManager's `process_common_info`
    /// reads PS registration from the same field): PS or CS+PS is attached, CS only is detached; no registered
    /// technology, or a domain that says nothing (none, camped, unknown), is nil.
    public var packetService: PacketServiceState? {
        guard let info = byPreference.first(where: { $0.registration.isRegistered }), let domain = info.domain else {
            return nil
        }
        switch domain {
        case .ps, .csPS: return .attached
        case .cs: return .detached
        default: return nil
        }
    }
}

// MARK: - SIM

/// The SIM as far as reachability cares: ready, locked (needs a person), absent or failed.
public enum SIMState: String, Sendable, CaseIterable, Codable {
    case ready
    case pinRequired = "pin_required"
    case pukRequired = "puk_required"
    case absent
    case error
    case notInitialized = "not_initialized"
    case unknown

    /// A locked SIM needs a person: SCNetworkReachability's `interventionRequired`.
    public var needsIntervention: Bool { self == .pinRequired || self == .pukRequired }

    /// MBIM_SUBSCRIBER_READY_STATE: NOT_INITIALIZED 0, INITIALIZED 1, SIM_NOT_INSERTED 2, BAD_SIM 3, FAILURE 4,
    /// NOT_ACTIVATED 5, DEVICE_LOCKED 6, NO_ESIM_PROFILE 7. A locked device is refined by the PIN query
    /// (MBIM_PIN_TYPE PIN1 2, PUK1 11) when the caller has it.
    public init(mbimSubscriberReadyState raw: UInt32, pinType: UInt32? = nil) {
        switch raw {
        case 0: self = .notInitialized
        case 1, 5: self = .ready  // "not activated" is a provisioning state, the SIM itself is usable
        case 2: self = .absent
        case 3, 4: self = .error
        case 6: self = pinType == 11 ? .pukRequired : .pinRequired
        case 7: self = .absent
        default: self = .unknown
        }
    }

    /// QmiDmsUimPinStatus of PIN1: NOT_INITIALIZED 0, ENABLED_NOT_VERIFIED 1, ENABLED_VERIFIED 2, DISABLED 3,
    /// BLOCKED 4 (PUK needed), PERMANENTLY_BLOCKED 5, UNBLOCKED 6, CHANGED 7.
    public init(qmiPINStatus raw: Int) {
        switch raw {
        case 0: self = .notInitialized
        case 1: self = .pinRequired
        case 2, 3, 6, 7: self = .ready
        case 4: self = .pukRequired
        case 5: self = .error
        default: self = .unknown
        }
    }

    /// QmiUimCardState of a card slot: ABSENT 0, PRESENT 1, ERROR 2; for a present card, its application's PIN1
    /// state decides (`qmiPINStatus`, same values as DMS).
    public init(qmiCardState: Int, pin1Status: Int?) {
        switch qmiCardState {
        case 0: self = .absent
        case 2: self = .error
        case 1: self = pin1Status.map { SIMState(qmiPINStatus: $0) } ?? .ready
        default: self = .unknown
        }
    }
}
