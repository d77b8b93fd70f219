// Plain values copied out of QMI and MBIM replies, and the pure rules that turn them into a `ModemState`'s signal,
// quality, technologies and registration.
//
// The adapters (ReachModem) copy C values into these structs as soon as a reply or indication arrives; everything
// that decides lives here, where tables can test it without a modem. Units are the messages' own (noted per field);
// conversions to dBm/dB happen in one place each. Sources: libqmi `data/qmi-service-nas.json` (1.32.2), the MBIM 1.0
// specification and Microsoft's MBIMEx 2.0/3.0 (via libmbim `data/*.json` 1.28.2), ModemManager's
// `mm-broadband-modem-qmi.c` / `mm-broadband-modem-mbim.c` for how the pieces combine.

// MARK: - QMI signal

/// QMI NAS Get Signal Info (0x004F) or its Signal Info indication (0x0051). Absent TLVs are nil.
public struct QMISignalInfo: Sendable, Equatable {
    /// TLV 0x10: RSSI dBm, EC/IO in -0.5 dB units.
    public var cdma: (rssi: Int8, ecio: Int16)?
    /// TLV 0x11: RSSI dBm, EC/IO in -0.5 dB units, SINR level 0-8, IO dBm.
    public var hdr: (rssi: Int8, ecio: Int16, sinrLevel: UInt8, io: Int32)?
    /// TLV 0x12: RSSI dBm.
    public var gsmRSSI: Int8?
    /// TLV 0x13: RSSI dBm, EC/IO in -0.5 dB units.
    public var wcdma: (rssi: Int8, ecio: Int16)?
    /// TLV 0x14: RSSI dBm, RSRQ dB, RSRP dBm, SNR in 0.1 dB.
    public var lte: (rssi: Int8, rsrq: Int8, rsrp: Int16, snr: Int16)?
    /// TLV 0x17: SS-RSRP dBm, SS-SINR in 0.1 dB (-32768 = not measured).
    public var nr: (rsrp: Int16, snr: Int16)?
    /// TLV 0x18: SS-RSRQ dB (-32768 = not measured).
    public var nrRSRQ: Int16?

    public init() {}

    public static func == (a: QMISignalInfo, b: QMISignalInfo) -> Bool {
        a.cdma?.rssi == b.cdma?.rssi && a.cdma?.ecio == b.cdma?.ecio && a.hdr?.rssi == b.hdr?.rssi
            && a.hdr?.ecio == b.hdr?.ecio && a.hdr?.sinrLevel == b.hdr?.sinrLevel && a.hdr?.io == b.hdr?.io
            && a.gsmRSSI == b.gsmRSSI && a.wcdma?.rssi == b.wcdma?.rssi && a.wcdma?.ecio == b.wcdma?.ecio
            && a.lte?.rssi == b.lte?.rssi && a.lte?.rsrq == b.lte?.rsrq && a.lte?.rsrp == b.lte?.rsrp
            && a.lte?.snr == b.lte?.snr && a.nr?.rsrp == b.nr?.rsrp && a.nr?.snr == b.nr?.snr && a.nrRSRQ == b.nrRSRQ
    }

    /// QMI's "not measured" marker for the 16-bit NR fields (uqmi omits such fields too).
    static let notMeasured16: Int16 = -32768

    /// The NR values as the modem sent them, "not measured" removed, before any range check.
    var nrRaw: SignalMeasurement {
        var m = SignalMeasurement()
        if let nr {
            if nr.rsrp != Self.notMeasured16 { m.rsrp = Double(nr.rsrp) }
            if nr.snr != Self.notMeasured16 { m.sinr = Double(nr.snr) / 10 }
        }
        if let nrRSRQ, nrRSRQ != Self.notMeasured16 { m.rsrq = Double(nrRSRQ) }
        return m
    }

    /// The NR measurement, when the modem measured NR at all; values outside their range are unavailable
    /// (AOSP CellSignalStrengthNr keeps SS-RSRP in [-156, -31], SS-RSRQ [-43, 20], SS-SINR [-23, 40]).
    public var nrMeasurement: SignalMeasurement? {
        let m = nrRaw.validated(for: .nr)
        return m.isEmpty ? nil : m
    }

    /// The measurement of one technology family, in physical units; values outside their measure's range on that
    /// family are unavailable (`SignalRanges`), so a reading the modem could not have measured never shows.
    public func measurement(_ family: SignalFamily) -> SignalMeasurement? {
        let m = rawMeasurement(family)?.validated(for: family)
        return m?.isEmpty == false ? m : nil
    }

    private func rawMeasurement(_ family: SignalFamily) -> SignalMeasurement? {
        switch family {
        case .gsm:
            return gsmRSSI.map { SignalMeasurement(rssi: Double($0)) }
        case .wcdma:
            return wcdma.map { SignalMeasurement(rssi: Double($0.rssi), ecio: Double($0.ecio) * -0.5) }
        case .cdma:
            if let hdr { return SignalMeasurement(rssi: Double(hdr.rssi), ecio: Double(hdr.ecio) * -0.5) }
            return cdma.map { SignalMeasurement(rssi: Double($0.rssi), ecio: Double($0.ecio) * -0.5) }
        case .lte:
            return lte.map {
                SignalMeasurement(rssi: Double($0.rssi), rsrp: Double($0.rsrp), rsrq: Double($0.rsrq), sinr: Double($0.snr) / 10)
            }
        case .nr:
            return nrRaw
        }
    }

    /// The families the reply carried, newest first.
    var familiesPresent: [SignalFamily] {
        var f: [SignalFamily] = []
        if nrMeasurement != nil { f.append(.nr) }
        if lte != nil { f.append(.lte) }
        if wcdma != nil { f.append(.wcdma) }
        if cdma != nil || hdr != nil { f.append(.cdma) }
        if gsmRSSI != nil { f.append(.gsm) }
        return f
    }

    /// The serving-cell measurement and, under 5G NSA, the NR leg, for the technologies in use. When the
    /// technologies are not known (not registered), the newest family the modem measured is taken.
    public func readings(for rats: AccessTechnologies) -> (serving: SignalMeasurement, nr: SignalMeasurement?) {
        if rats.isNonStandalone5G {
            let anchor = rats.members.filter { $0 != .nr }.max()!
            return (measurement(anchor.signalFamily) ?? SignalMeasurement(), nrMeasurement)
        }
        if let primary = rats.primary {
            return (measurement(primary.signalFamily) ?? SignalMeasurement(), nil)
        }
        guard let newest = familiesPresent.first else { return (SignalMeasurement(), nil) }
        if newest == .nr, let lteMeasurement = measurement(.lte) { return (lteMeasurement, nrMeasurement) }
        return (measurement(newest) ?? SignalMeasurement(), nil)
    }

    /// ModemManager's quality figure for this reply (`SignalQuality.percentQMI`), from the values as sent: MM applies
    /// its own windows (CDMA/EV-DO/UMTS only), not the reading ranges.
    public var qualityPercent: Int? {
        var rssi: [(dBm: Double, radioInterface: Int)] = []
        if let cdma { rssi.append((Double(cdma.rssi), 1)) }
        if let hdr { rssi.append((Double(hdr.rssi), 2)) }
        if let gsmRSSI { rssi.append((Double(gsmRSSI), 4)) }
        if let wcdma { rssi.append((Double(wcdma.rssi), 5)) }
        if let lte { rssi.append((Double(lte.rssi), 8)) }
        let raw = nrRaw
        return SignalQuality.percentQMI(rssi: rssi, nr: raw.isEmpty ? nil : (rsrp: raw.rsrp, snr: raw.sinr, rsrq: raw.rsrq))
    }
}

/// QMI NAS Get Signal Strength (0x0020), the older signal request, or the signal TLVs of a NAS Event Report
/// indication (0x0002). Radio interfaces are QmiNasRadioInterface values.
public struct QMISignalStrength: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var value: Int
        public var radioInterface: Int
        public init(_ value: Int, radioInterface: Int) {
            self.value = value
            self.radioInterface = radioInterface
        }
    }

    /// TLV 0x01 (mandatory in the response): strength dBm of the current radio interface.
    public var current: Entry?
    /// TLV 0x10: strength dBm per radio interface.
    public var strengthList: [Entry]
    /// TLV 0x11: RSSI per radio interface, in positive units of -1 dBm.
    public var rssiList: [Entry]
    /// TLV 0x12: EC/IO per radio interface, in units of -0.5 dB.
    public var ecioList: [Entry]
    /// TLV 0x16: RSRQ dB (LTE).
    public var rsrq: Entry?
    /// TLV 0x17: LTE SNR in 0.1 dB.
    public var lteSNR: Int?
    /// TLV 0x18: LTE RSRP dBm.
    public var lteRSRP: Int?

    public init(
        current: Entry? = nil, strengthList: [Entry] = [], rssiList: [Entry] = [], ecioList: [Entry] = [],
        rsrq: Entry? = nil, lteSNR: Int? = nil, lteRSRP: Int? = nil
    ) {
        self.current = current
        self.strengthList = strengthList
        self.rssiList = rssiList
        self.ecioList = ecioList
        self.rsrq = rsrq
        self.lteSNR = lteSNR
        self.lteRSRP = lteRSRP
    }

    /// The RSSI dBm of each radio interface: the strength list, the current strength, then the RSSI list.
    private func rssiDBm(radio: Int) -> Double? {
        if let e = strengthList.first(where: { $0.radioInterface == radio }) { return Double(e.value) }
        if let current, current.radioInterface == radio { return Double(current.value) }
        if let e = rssiList.first(where: { $0.radioInterface == radio }) { return -Double(e.value) }
        return nil
    }

    /// The measurement on one radio interface (QmiNasRadioInterface); values outside their measure's range on that
    /// interface's family are unavailable: a 0 dBm strength is no RSSI at all (AOSP keeps RSSI in [-113, -51]).
    public func measurement(radio: Int) -> SignalMeasurement {
        var m = SignalMeasurement(rssi: rssiDBm(radio: radio))
        if let e = ecioList.first(where: { $0.radioInterface == radio }) { m.ecio = Double(e.value) * -0.5 }
        if radio == 8 {
            if let rsrq, rsrq.radioInterface == 8 { m.rsrq = Double(rsrq.value) }
            m.rsrp = lteRSRP.map(Double.init)
            m.sinr = lteSNR.map { Double($0) / 10 }
        }
        guard let family = RadioAccessTechnology(qmiRadioInterface: radio)?.signalFamily else { return m }
        return m.validated(for: family)
    }

    /// The serving-cell measurement for the technologies in use; with none known, the current radio interface's.
    public func serving(for rats: AccessTechnologies) -> SignalMeasurement {
        let radio: Int?
        switch rats.members.filter({ $0 != .nr }).max()?.signalFamily {
        case .gsm: radio = 4
        case .wcdma: radio = 5
        case .lte: radio = 8
        case .cdma: radio = rats.members.contains(where: { [.evdo0, .evdoA, .evdoB, .eHRPD].contains($0) }) ? 2 : 1
        default: radio = current?.radioInterface
        }
        return radio.map { measurement(radio: $0) } ?? SignalMeasurement()
    }

    /// ModemManager's figure (`SignalQuality.percentQMIStrength`): none when the mandatory strength is invalid for
    /// its radio interface or the best strength is not below 0 dBm.
    public var qualityPercent: Int? {
        guard let current else { return nil }
        return SignalQuality.percentQMIStrength(
            main: (Double(current.value), current.radioInterface),
            list: strengthList.map { (Double($0.value), $0.radioInterface) })
    }
}

/// The signal-quality thresholds GatewayReach asks a QMI modem to report at (NAS Config Signal Info, 0x0050): the
/// bar boundaries of the signal policy in use, so that an indication arrives whenever the bars may change.
public struct QMISignalThresholds: Sendable, Equatable {
    /// RSSI dBm (i8): GSM, WCDMA and the LTE RSSI fallback.
    public var rssi: [Int8]
    /// RSRP dBm (i16): LTE and NR.
    public var rsrp: [Int16]
    /// RSRQ dB (i8): LTE, when the policy uses it.
    public var rsrq: [Int8]
    /// LTE SNR in 0.1 dB (i16), when the policy uses it.
    public var lteSNR: [Int16]

    public init(rssi: [Int8], rsrp: [Int16], rsrq: [Int8], lteSNR: [Int16]) {
        self.rssi = rssi
        self.rsrp = rsrp
        self.rsrq = rsrq
        self.lteSNR = lteSNR
    }

    public init(_ policy: SignalPolicy) {
        rssi = policy.boundaries(.rssi, families: [.gsm, .wcdma, .lte]).map { Int8(clamping: Int($0.rounded())) }
        rsrp = policy.boundaries(.rsrp, families: [.lte, .nr]).map { Int16(clamping: Int($0.rounded())) }
        rsrq = policy.boundaries(.rsrq, families: [.lte]).map { Int8(clamping: Int($0.rounded())) }
        lteSNR = policy.boundaries(.sinr, families: [.lte]).map { Int16(clamping: Int(($0 * 10).rounded())) }
    }

    /// The RSSI thresholds ModemManager programs through NAS Set Event Report (about 11/30/50/70/90 %), for modems
    /// without Config Signal Info.
    public static let eventReportRSSI: [Int8] = [-106, -94, -82, -69, -57]
}

// MARK: - MBIM signal

/// MBIM Signal State (Basic Connect CID 11), plain or in its MBIMEx 2.0 form with RSRP/SNR entries.
public struct MBIMSignalState: Sendable, Equatable {
    /// One RSRP/SNR entry of the MBIMEx 2.0 form, per data class in use (LTE and 5G under NSA).
    public struct RSRPSNR: Sendable, Equatable {
        public var rsrp: UInt32
        public var snr: UInt32
        /// The entry's system type, an MBIM data class bitmask.
        public var systemType: UInt32
        public init(rsrp: UInt32, snr: UInt32, systemType: UInt32) {
            self.rsrp = rsrp
            self.snr = snr
            self.systemType = systemType
        }
    }

    /// Coded RSSI 0-31, 99 unknown.
    public var rssi: UInt32
    /// Coded error rate 0-7, 99 unknown.
    public var errorRate: UInt32
    public var rsrpSNR: [RSRPSNR]

    public init(rssi: UInt32, errorRate: UInt32 = 99, rsrpSNR: [RSRPSNR] = []) {
        self.rssi = rssi
        self.errorRate = errorRate
        self.rsrpSNR = rsrpSNR
    }

    /// The first entry whose system type passes `test`, decoded and checked against `family`'s ranges (an LTE RSRP
    /// below -140 dBm, a coded 0 "below the scale", is unavailable).
    private func entry(_ family: SignalFamily, where test: (MBIMDataClass) -> Bool) -> SignalMeasurement? {
        guard let e = rsrpSNR.first(where: { test(MBIMDataClass(rawValue: $0.systemType)) }) else { return nil }
        let m = SignalMeasurement(rsrp: MBIMCoding.rsrpDBm(coded: e.rsrp), sinr: MBIMCoding.snrDB(coded: e.snr))
            .validated(for: family)
        return m.isEmpty ? nil : m
    }

    /// The serving measurement (coded RSSI, plus the LTE or NR entry's RSRP/SNR) and the NR leg under 5G NSA.
    public func readings(for rats: AccessTechnologies) -> (serving: SignalMeasurement, nr: SignalMeasurement?) {
        var serving = SignalMeasurement(rssi: MBIMCoding.rssiDBm(coded: rssi))
        let nrBits: MBIMDataClass = [.nr5gNSA, .nr5gSA]
        let nrEntry = entry(.nr, where: { !$0.isDisjoint(with: nrBits) })
        let lteEntry = entry(.lte, where: { $0.contains(.lte) && $0.isDisjoint(with: nrBits) })
        if rats.isNonStandalone5G {
            if let lteEntry {
                serving.rsrp = lteEntry.rsrp
                serving.sinr = lteEntry.sinr
            }
            return (serving, nrEntry)
        }
        let onNR = rats.contains(.nr) || (rats.isEmpty && nrEntry != nil && lteEntry == nil)
        if let e = onNR ? nrEntry : lteEntry {
            serving.rsrp = e.rsrp
            serving.sinr = e.sinr
        }
        return (serving, nil)
    }

    /// ModemManager's quality figure (`SignalQuality.percentMBIM`).
    public var qualityPercent: Int? {
        SignalQuality.percentMBIM(codedRSSI: rssi, codedRSRP: rsrpSNR.map(\.rsrp))
    }
}

// MARK: - MBIM registration and packet service

extension MBIMDataClass {
    /// The data class a device's "custom data class" string stands for, given its Device Caps data classes
    /// (`mm_mbim_data_class_from_custom_caps`): "5GSA" is 5G SA; "5G" is 5G NSA, or 5G SA when the caps already
    /// list NSA (Foxconn T99W175 reports NSA plus CUSTOM "5G" under MBIMEx 2.0); "HSPA+" is HSDPA|HSUPA. Only when the
    /// caps carry the CUSTOM bit; otherwise empty.
    public init(customDataClass name: String, capsDataClass caps: UInt32) {
        let capsClass = MBIMDataClass(rawValue: caps)
        guard capsClass.contains(.custom) else {
            self = []
            return
        }
        let table: [(String, MBIMDataClass, MBIMDataClass)] = [
            ("5GSA", .nr5gSA, []), ("5G", .nr5gNSA, .nr5gSA), ("HSPA+", [.hsdpa, .hsupa], []),
        ]
        for (needle, primary, secondary) in table where name.contains(text: needle) {
            // MM tests `orig & primary`: any bit of the primary class already present selects the secondary.
            self = capsClass.isDisjoint(with: primary) ? primary : secondary
            return
        }
        self = []
    }

    /// An MBIMEx 3.0 data class and subclass in the v1/v2 bits, with the rule of
    /// `AccessTechnologies(mbimDataClassV3:subclass:)`: the 5G bit with subclass NR is 5G SA; with ENDC, NEDC or
    /// NGENDC it is 5G NSA (which carries LTE); with eLTE it is LTE; with no subclass, 5G SA. CUSTOM is kept.
    public init(v3 raw: UInt32, subclass: UInt32) {
        let v3 = MBIMDataClass(rawValue: raw)
        let sub = MBIMDataSubclass(rawValue: subclass)
        var bits = v3.subtracting([.nr5gNSA, .nr5gSA])
        if v3.contains(.v3NR5G) {
            if sub.contains(.nr) {
                bits.insert(.nr5gSA)
            } else if !sub.isDisjoint(with: [.endc, .nedc, .ngendc]) {
                bits.formUnion([.lte, .nr5gNSA])
            } else if sub.contains(.elte) {
                bits.insert(.lte)
            } else {
                bits.insert(.nr5gSA)
            }
        }
        self = bits
    }

    /// A reported data class with its CUSTOM bit replaced by the device's custom class
    /// (`mm_modem_mbim_normalize_data_class_mask`).
    public func normalized(custom: MBIMDataClass) -> MBIMDataClass {
        guard contains(.custom) else { return self }
        return union(custom).subtracting(.custom)
    }
}

/// What an MBIM modem said about its network: Register State (CID 9) and Packet Service (CID 10 or its MBIMEx 2.0 /
/// 3.0 forms), plus the custom data class from Device Caps.
public struct MBIMNetworkReading: Sendable, Equatable {
    /// MBIM_REGISTER_STATE.
    public var registerState: UInt32
    /// Register State's AvailableDataClasses.
    public var availableDataClasses: UInt32
    /// "MCCMNC" as the modem sent it.
    public var providerID: String?
    public var providerName: String?
    /// MBIM_NW_ERROR of Register State (a 3GPP reject cause), 0 when none.
    public var networkError: UInt32
    /// MBIM_PACKET_SERVICE_STATE, when Packet Service was read.
    public var packetServiceState: UInt32?
    /// Packet Service's data class: HighestAvailableDataClass (v1), CurrentDataClass (MBIMEx 2.0), or the
    /// MBIMEx 3.0 HighestAvailableDataClass (`packetDataClassIsV3`).
    public var packetDataClass: UInt32?
    public var packetDataClassIsV3: Bool
    /// MBIMEx 3.0 DataSubclass.
    public var packetDataSubclass: UInt32
    /// The custom data class from Device Caps (`MBIMDataClass(customDataClass:capsDataClass:)`).
    public var customDataClass: UInt32

    public init(
        registerState: UInt32, availableDataClasses: UInt32 = 0, providerID: String? = nil,
        providerName: String? = nil, networkError: UInt32 = 0, packetServiceState: UInt32? = nil,
        packetDataClass: UInt32? = nil, packetDataClassIsV3: Bool = false, packetDataSubclass: UInt32 = 0,
        customDataClass: UInt32 = 0
    ) {
        self.registerState = registerState
        self.availableDataClasses = availableDataClasses
        self.providerID = providerID
        self.providerName = providerName
        self.networkError = networkError
        self.packetServiceState = packetServiceState
        self.packetDataClass = packetDataClass
        self.packetDataClassIsV3 = packetDataClassIsV3
        self.packetDataSubclass = packetDataSubclass
        self.customDataClass = customDataClass
    }

    public var registration: RegistrationState { RegistrationState(mbimRegisterState: registerState) }
    public var packetService: PacketServiceState? { packetServiceState.map(PacketServiceState.init(mbimPacketServiceState:)) }

    private func technologies(_ raw: UInt32, v3: Bool, subclass: UInt32) -> AccessTechnologies {
        let dataClass = v3 ? MBIMDataClass(v3: raw, subclass: subclass) : MBIMDataClass(rawValue: raw)
        return AccessTechnologies(mbimDataClass: dataClass.normalized(custom: MBIMDataClass(rawValue: customDataClass)).rawValue)
    }

    /// The technologies in use: Packet Service's data class while attached, else Register State's available data
    /// classes (`AccessTechnologies.mbimEffective`); nothing unless registered.
    public var accessTechnologies: AccessTechnologies {
        guard registration.isRegistered else { return .none }
        let packet = packetDataClass.map { technologies($0, v3: packetDataClassIsV3, subclass: packetDataSubclass) }
        let available = technologies(availableDataClasses, v3: false, subclass: 0)
        return .mbimEffective(
            packetService: packetService ?? .unknown, packetDataClass: packet, registerAvailable: available)
    }

    public var plmn: PLMN? { providerID.flatMap(PLMN.init(providerID:)) }

    /// A 3GPP reject cause when the registration was denied.
    public var rejectCause: Int? { registration == .denied && networkError != 0 ? Int(networkError) : nil }
}

// MARK: - Operator names

/// 3GPP TS 23.038 GSM 7-bit default alphabet, as some QMI modems send the Serving System's network description.
public enum GSM7 {
    /// The default alphabet (no extension table); positions that are not ASCII map to their Unicode scalars.
    private static let table: [Unicode.Scalar] = {
        let special: [Int: UInt32] = [
            0x00: 0x40, 0x01: 0xA3, 0x02: 0x24, 0x03: 0xA5, 0x04: 0xE8, 0x05: 0xE9, 0x06: 0xF9, 0x07: 0xEC,
            0x08: 0xF2, 0x09: 0xC7, 0x0B: 0xD8, 0x0C: 0xF8, 0x0E: 0xC5, 0x0F: 0xE5, 0x10: 0x394, 0x11: 0x5F,
            0x12: 0x3A6, 0x13: 0x393, 0x14: 0x39B, 0x15: 0x3A9, 0x16: 0x3A0, 0x17: 0x3A8, 0x18: 0x3A3, 0x19: 0x398,
            0x1A: 0x39E, 0x1B: 0xA0, 0x1C: 0xC6, 0x1D: 0xE6, 0x1E: 0xDF, 0x1F: 0xC9, 0x24: 0xA4, 0x40: 0xA1,
            0x5B: 0xC4, 0x5C: 0xD6, 0x5D: 0xD1, 0x5E: 0xDC, 0x5F: 0xA7, 0x60: 0xBF, 0x7B: 0xE4, 0x7C: 0xF6,
            0x7D: 0xF1, 0x7E: 0xFC, 0x7F: 0xE0,
        ]
        return (0..<128).map { Unicode.Scalar(special[$0] ?? UInt32($0))! }
    }()

    /// Septets packed LSB-first into octets (TS 23.038 §6.1.2.1.1). A trailing zero septet that only fills the
    /// last octet's spare bits is dropped.
    public static func unpack(_ octets: [UInt8]) -> [UInt8] {
        var septets: [UInt8] = []
        var carry: UInt16 = 0
        var bits = 0
        for o in octets {
            carry |= UInt16(o) << bits
            bits += 8
            while bits >= 7 {
                septets.append(UInt8(carry & 0x7F))
                carry >>= 7
                bits -= 7
            }
        }
        if octets.count % 7 == 0, septets.last == 0 { septets.removeLast() }
        return septets
    }

    public static func decode(septets: [UInt8]) -> String {
        var s = String.UnicodeScalarView()
        for c in septets { s.append(table[Int(c & 0x7F)]) }
        return String(s)
    }
}

/// Picks a readable operator name from what a QMI modem sent.
public enum OperatorName {
    private static func isPrintable(_ bytes: [UInt8]) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { $0 >= 0x20 && $0 != 0x7F }
    }

    /// A name given as raw bytes: UTF-8 when it is printable text, else packed GSM 7-bit when that unpacks to
    /// printable text (the libqmi capture of Iliad, 222/50, sends "Iliad" packed), else nil. Trailing NULs and
    /// white space are trimmed.
    public static func decode(_ raw: [UInt8]) -> String? {
        var bytes = raw
        while let last = bytes.last, last == 0 || last == 0x20 { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        if isPrintable(bytes.filter { $0 < 0x80 }), let text = String(validating: bytes, as: UTF8.self) {
            return text
        }
        let septets = GSM7.unpack(bytes)
        if septets.allSatisfy({ $0 >= 0x20 || $0 == 0x00 || $0 == 0x11 }), !septets.isEmpty {
            let text = GSM7.decode(septets: septets)
            return text.isEmpty ? nil : text
        }
        return nil
    }

    /// A name in UCS-2 little-endian (a NITZ network name with QMI's encoding scheme 1): code units up to the first
    /// NUL, an odd trailing byte dropped; nil when empty, when a unit is a surrogate (UCS-2 has none) or a control
    /// character.
    public static func decodeUCS2LE(_ raw: [UInt8]) -> String? {
        var scalars = String.UnicodeScalarView()
        var i = 0
        while i + 1 < raw.count {
            let unit = UInt32(raw[i]) | UInt32(raw[i + 1]) << 8
            i += 2
            if unit == 0 { break }
            guard let scalar = Unicode.Scalar(unit), unit >= 0x20, unit != 0x7F else { return nil }
            scalars.append(scalar)
        }
        while scalars.last == " " { scalars.removeLast() }
        return scalars.isEmpty ? nil : String(scalars)
    }
}

// MARK: - From readings to a ModemState

/// The latest of each QMI reading about one modem. A read fills it from replies; indications replace single
/// members; `apply` derives the state's technologies, registration, operator, signal and quality from it each time
/// (so that a RAT change re-splits an unchanged signal reading into serving cell and NR leg).
public struct QMIModemReadings: Sendable, Equatable {
    /// NAS Get System Info / System Info indication: preferred over `servingSystem` when present.
    public var systemInfo: QMISystemInfo?
    /// NAS Get Serving System / Serving System indication: used when the modem has no System Info.
    public var servingSystem: QMIServingSystem?
    /// NAS Get Signal Info / Signal Info indication: preferred over `signalStrength` when present.
    public var signalInfo: QMISignalInfo?
    /// NAS Get Signal Strength / Event Report: used when the modem has no Signal Info.
    public var signalStrength: QMISignalStrength?
    public var sim: SIMState?
    /// A name from NAS Get Operator Name or Get Home Network, when the registration messages carried none.
    public var operatorName: String?

    public init() {}

    public func apply(to state: inout ModemState) {
        if let systemInfo {
            state.registration = systemInfo.registration
            state.accessTechnologies = systemInfo.accessTechnologies
            state.plmn = systemInfo.plmn
            state.rejectCause = systemInfo.registration == .denied ? systemInfo.rejectCause : nil
            state.operatorName = operatorName ?? servingSystem?.operatorName
            state.packetService = systemInfo.packetService ?? servingSystem?.packetService
        } else if let servingSystem {
            state.registration = servingSystem.registration
            state.accessTechnologies = servingSystem.accessTechnologies
            state.plmn = servingSystem.plmn
            state.rejectCause = nil
            state.operatorName = servingSystem.operatorName ?? operatorName
            state.packetService = servingSystem.packetService
        } else {
            state.forgetRegistration()
        }
        if let signalInfo {
            let r = signalInfo.readings(for: state.accessTechnologies)
            state.signal = r.serving
            state.nrSignal = r.nr
            state.qualityPercent = signalInfo.qualityPercent
        } else if let signalStrength {
            state.signal = signalStrength.serving(for: state.accessTechnologies)
            state.nrSignal = nil
            state.qualityPercent = signalStrength.qualityPercent
        } else {
            state.forgetSignal()
        }
        state.sim = sim ?? .unknown
    }
}

/// The latest of each MBIM reading about one modem (see `QMIModemReadings`).
public struct MBIMModemReadings: Sendable, Equatable {
    public var network: MBIMNetworkReading?
    public var signal: MBIMSignalState?
    public var sim: SIMState?

    public init() {}

    public func apply(to state: inout ModemState) {
        if let network {
            state.registration = network.registration
            state.accessTechnologies = network.accessTechnologies
            state.plmn = network.plmn
            state.operatorName = network.providerName.flatMap { $0.isEmpty ? nil : $0 }
            state.packetService = network.packetService
            state.rejectCause = network.rejectCause
        } else {
            state.forgetRegistration()
        }
        if let signal {
            let r = signal.readings(for: state.accessTechnologies)
            state.signal = r.serving
            state.nrSignal = r.nr
            state.qualityPercent = signal.qualityPercent
        } else {
            state.forgetSignal()
        }
        state.sim = sim ?? .unknown
    }
}

extension ModemState {
    /// No registration reading (never read, or the modem refused the request): nothing of it is known.
    mutating func forgetRegistration() {
        registration = .unknown
        accessTechnologies = .none
        plmn = nil
        operatorName = nil
        packetService = nil
        rejectCause = nil
    }

    /// No signal reading: no measurement and no quality.
    mutating func forgetSignal() {
        signal = SignalMeasurement()
        nrSignal = nil
        qualityPercent = nil
    }
}
