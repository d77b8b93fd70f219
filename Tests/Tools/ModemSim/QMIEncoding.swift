// The simulated state as QMI TLVs, one function per message, laid out as libqmi 1.32.2's
// data/qmi-service-{dms,nas,uim}.json defines them. TLV ids that differ between a response and its indication
// are passed in by the caller (`ServingSystemIDs`, `SystemInfoIDs`).
//
// Units on the wire: dBm as signed integers; QMI's ECIO is in -0.5 dB steps (a positive count), LTE and 5G SNR
// in 0.1 dB; strings in TLVs of their own have no length prefix, strings inside a struct have a u8 one.

import ReachCore

enum QMIEncoding {
    // MARK: Helpers

    static func u8String(_ w: inout ByteWriter, _ s: String) {
        let bytes = Array(s.utf8.prefix(255))
        w.u8(UInt8(bytes.count))
        w.append(bytes)
    }

    static func int8(_ d: Double) -> Int8 { Int8(clamping: Int(d.rounded())) }
    static func int16(_ d: Double) -> Int16 { Int16(clamping: Int(d.rounded())) }
    /// QMI's ECIO: Ec/Io in dB as a positive count of -0.5 dB (-8.5 dB → 17).
    static func ecio(_ db: Double) -> Int { Int((-db * 2).rounded()) }

    /// 3 ASCII digits; a 2-digit MNC is padded with 0xFF as Qualcomm firmware sends it (libqmi issue #33).
    static func plmnDigits(_ digits: String) -> [UInt8] {
        var b = Array(digits.utf8.prefix(3))
        while b.count < 3 { b.append(0xFF) }
        return b
    }

    static func rejectCause(_ state: SimulatedState) -> Int? {
        state.registration == .denied ? state.rejectCause : nil
    }

    // MARK: NAS Serving System (0x0024 response and indication)

    /// TLV ids that move between the Get Serving System response and the Serving System indication.
    struct ServingSystemIDs {
        var lac: UInt8, cid: UInt8, lteTAC: UInt8, mncPCSDigit: UInt8
        static let response = ServingSystemIDs(lac: 0x1C, cid: 0x1D, lteTAC: 0x24, mncPCSDigit: 0x27)
        static let indication = ServingSystemIDs(lac: 0x1D, cid: 0x1E, lteTAC: 0x25, mncPCSDigit: 0x29)
    }

    /// QmiNasRegistrationState: NOT_REGISTERED 0, REGISTERED 1, SEARCHING 2, DENIED 3.
    static func qmiRegistration(_ r: RegistrationState) -> UInt8 {
        switch r {
        case .home, .roaming: return 1
        case .searching: return 2
        case .denied: return 3
        default: return 0
        }
    }

    static func servingSystem(_ state: SimulatedState, options: QMIOptions, ids: ServingSystemIDs) -> [QMITLV] {
        let registered = state.isRegistered
        let rats = state.accessTechnologies
        // Radio interfaces in use. Under 5G NSA the serving system is the LTE anchor: NR does not show here.
        var radios: [Int8] = []
        for family in rats.families.reversed() where !(family == .nr && rats.isNonStandalone5G) {
            radios.append(family.qmiRadioInterface)
        }
        if let forced = options.radioInterfaces { radios = forced }
        if !registered && options.radioInterfaces == nil { radios = [] }
        let threeGPP2 = !rats.isEmpty && rats.families.allSatisfy { $0 == .cdma || $0 == .hdr }
        var tlvs = [
            QMITLV(0x01) { w in
                w.u8(qmiRegistration(state.registration))
                // CS attach (ATTACHED 1, DETACHED 2): 5G SA has no circuit-switched domain.
                w.u8(registered && rats != [.nr] ? 1 : 2)
                w.u8(registered && state.packetService == .attached ? 1 : 2)
                w.u8(threeGPP2 ? 1 : 2)  // selected network: 3GPP2 1, 3GPP 2
                w.u8(UInt8(radios.count))
                for r in radios { w.i8(r) }
            }
        ]
        guard registered || state.registration == .denied else { return tlvs }
        if registered {
            tlvs.append(QMITLV(0x10, [state.registration == .roaming ? 0 : 1]))  // roaming indicator ON 0, OFF 1
            var caps: [UInt8] = []
            for rat in rats.members.sorted() { caps += rat.qmiDataCapabilities }
            if let forced = options.dataCapabilities { caps = forced }
            if !caps.isEmpty {
                tlvs.append(QMITLV(0x11) { w in
                    w.u8(UInt8(caps.count))
                    caps.forEach { w.u8($0) }
                })
            }
        }
        if let op = state.networkOperator {
            tlvs.append(QMITLV(0x12) { w in
                w.u16(UInt16(op.mcc)!)
                w.u16(UInt16(op.mnc)!)
                u8String(&w, op.name)
            })
        }
        let families = rats.families
        if families.contains(.gsm) || families.contains(.wcdma) || families.contains(.tdscdma) {
            tlvs.append(QMITLV(ids.lac) { $0.u16(state.cell.lac) })
        }
        tlvs.append(QMITLV(ids.cid) { $0.u32(state.cell.cellID) })
        if families.contains(.lte) {
            tlvs.append(QMITLV(ids.lteTAC) { $0.u16(UInt16(truncatingIfNeeded: state.cell.tac)) })
        }
        if let op = state.networkOperator {
            tlvs.append(QMITLV(ids.mncPCSDigit) { w in
                w.u16(UInt16(op.mcc)!)
                w.u16(UInt16(op.mnc)!)
                w.u8(op.mnc.count == 3 ? 1 : 0)
            })
        }
        return tlvs
    }

    // MARK: NAS System Info (0x004D response, 0x004E indication)

    /// Service-status and system-info TLV ids per family; TD-SCDMA and NR5G move in the indication.
    struct SystemInfoIDs {
        var status: [RadioFamily: UInt8]
        var info: [RadioFamily: UInt8]
        var eutraWithNR5G: UInt8
        static let response = SystemInfoIDs(
            status: [.gsm: 0x12, .wcdma: 0x13, .lte: 0x14, .tdscdma: 0x24, .nr: 0x4A],
            info: [.gsm: 0x17, .wcdma: 0x18, .lte: 0x19, .tdscdma: 0x25, .nr: 0x4B],
            eutraWithNR5G: 0x4E)
        static let indication = SystemInfoIDs(
            status: [.gsm: 0x12, .wcdma: 0x13, .lte: 0x14, .tdscdma: 0x25, .nr: 0x4C],
            info: [.gsm: 0x17, .wcdma: 0x18, .lte: 0x19, .tdscdma: 0x26, .nr: 0x4D],
            eutraWithNR5G: 0x50)
    }

    /// QmiNasServiceStatus for a family the modem is using: AVAILABLE 2 when registered, NONE 0 while searching,
    /// LIMITED 1 when denied (emergency calls only), POWER_SAVE 4 when idle.
    static func serviceStatus(_ r: RegistrationState) -> UInt8 {
        switch r {
        case .home, .roaming: return 2
        case .denied: return 1
        case .idle: return 4
        default: return 0
        }
    }

    /// The families System Info reports: those in use, else (not camped anywhere) the 3GPP ones the device has.
    static func systemInfoFamilies(_ state: SimulatedState, supports5G: Bool) -> [RadioFamily] {
        let used = state.accessTechnologies.families.filter { $0 != .cdma && $0 != .hdr }
        if !used.isEmpty { return used }
        return supports5G ? [.gsm, .wcdma, .lte, .nr] : [.gsm, .wcdma, .lte]
    }

    static func systemInfo(_ state: SimulatedState, supports5G: Bool, ids: SystemInfoIDs) -> [QMITLV] {
        let rats = state.accessTechnologies
        let nsa = rats.isNonStandalone5G
        var tlvs: [QMITLV] = []
        var infos: [QMITLV] = []
        for family in systemInfoFamilies(state, supports5G: supports5G) {
            guard let statusID = ids.status[family], let infoID = ids.info[family] else { continue }
            // Under EN-DC the NR leg is no service of its own: the LTE anchor carries it (TLV 0x4E/0x50).
            let status: UInt8 = family == .nr && nsa ? 0 : serviceStatus(state.registration)
            tlvs.append(QMITLV(statusID, [status, status, 0]))  // status, true status, preferred data path
            guard status == 2 || state.registration == .denied else { continue }
            infos.append(QMITLV(infoID) { w in
                commonSystemInfo(&w, state, family: family)
                switch family {
                case .gsm:
                    w.u8(1)
                    w.u8(rats.contains(.edge) ? 1 : 0)  // EGPRS support
                    w.u8(0)
                    w.u8(0)  // DTM support not valid
                case .wcdma:
                    let hs = hsService(rats)
                    w.u8(1)
                    w.u8(hs)  // HS call status
                    w.u8(1)
                    w.u8(hs)  // HS service
                    w.u8(0)
                    w.u16(0)  // primary scrambling code not valid
                case .tdscdma:
                    w.u8(1)
                    w.u8(0)  // HS call status
                    w.u8(1)
                    w.u8(0)  // HS service
                    w.u8(0)
                    w.u16(0)  // cell parameter id
                    w.u8(0)
                    w.u32(0)  // cell broadcast
                    w.u8(0)
                    w.i32(0)  // CS call barring
                    w.u8(0)
                    w.i32(0)  // PS call barring
                    w.u8(0)
                    w.u8(0)  // cipher domain
                case .lte, .nr:
                    w.u8(1)
                    w.u16(UInt16(truncatingIfNeeded: state.cell.tac))
                case .cdma, .hdr:
                    break
                }
            })
        }
        tlvs += infos
        if rats.members.contains(where: { $0.family == .lte }) || (rats.isEmpty && supports5G) {
            tlvs.append(QMITLV(ids.eutraWithNR5G, [nsa ? 1 : 0]))
        }
        return tlvs
    }

    /// QmiNasWcdmaHsService from the 3G technologies in use.
    static func hsService(_ rats: AccessTechnologies) -> UInt8 {
        if rats.contains(.hspaPlus) { return 5 }  // HSDPA+ and HSUPA
        let dl = rats.contains(.hsdpa) || rats.contains(.hspa)
        let ul = rats.contains(.hsupa) || rats.contains(.hspa)
        switch (dl, ul) {
        case (true, true): return 3
        case (true, false): return 1
        case (false, true): return 2
        default: return 0
        }
    }

    /// The fields every "System Info v2" struct starts with: domain, service capability, roaming, forbidden,
    /// LAC, cell id, registration reject info and network id (MCC/MNC as 3 ASCII bytes each).
    static func commonSystemInfo(_ w: inout ByteWriter, _ state: SimulatedState, family: RadioFamily) {
        let registered = state.isRegistered
        let attached = state.packetService == .attached
        // QmiNasNetworkServiceDomain: NONE 0, CS 1, PS 2, CS_PS 3. NR and LTE data is packet-switched.
        let domain: UInt8 = !registered ? 0 : family == .nr ? 2 : attached ? 3 : 1
        w.u8(registered ? 1 : 0)
        w.u8(domain)
        w.u8(1)
        w.u8(family == .nr ? 2 : 3)  // service capability
        w.u8(1)
        w.u8(state.registration == .roaming ? 1 : 0)  // QmiNasRoamingStatus OFF 0, ON 1
        w.u8(1)
        w.u8(state.registration == .denied ? 1 : 0)  // forbidden
        let hasLAC = family == .gsm || family == .wcdma || family == .tdscdma
        w.u8(hasLAC ? 1 : 0)
        w.u16(hasLAC ? state.cell.lac : 0)
        w.u8(1)
        w.u32(state.cell.cellID)
        if let cause = rejectCause(state) {
            w.u8(1)
            w.u8(3)  // reject domain CS_PS
            w.u8(UInt8(clamping: cause))
        } else {
            w.u8(0)
            w.u8(0)
            w.u8(0)
        }
        if let op = state.networkOperator {
            w.u8(1)
            w.append(plmnDigits(op.mcc))
            w.append(plmnDigits(op.mnc))
        } else {
            w.u8(0)
            w.append([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        }
    }

    // MARK: NAS Signal Info (0x004F response, 0x0051 indication: same TLV ids)

    static func signalInfo(_ state: SimulatedState) -> [QMITLV] {
        let s = state.signal
        let families = state.accessTechnologies.families
        var tlvs: [QMITLV] = []
        if families.contains(.gsm), let rssi = s.rssi {
            tlvs.append(QMITLV(0x12, [UInt8(bitPattern: int8(rssi))]))
        }
        if families.contains(.wcdma), let rssi = s.rssi, let ecio = s.ecio {
            tlvs.append(QMITLV(0x13) { w in
                w.i8(int8(rssi))
                w.i16(Int16(clamping: QMIEncoding.ecio(ecio)))
            })
        }
        if families.contains(.lte), let rssi = s.rssi, let rsrq = s.rsrq, let rsrp = s.rsrp, let snr = s.sinr {
            tlvs.append(QMITLV(0x14) { w in
                w.i8(int8(rssi))
                w.i8(int8(rsrq))
                w.i16(int16(rsrp))
                w.i16(int16(snr * 10))
            })
        }
        if families.contains(.tdscdma), let rscp = s.rscp {
            tlvs.append(QMITLV(0x15, [UInt8(bitPattern: int8(rscp))]))
        }
        if let nr = state.nrMeasurement {
            if let rsrp = nr.rsrp, let snr = nr.sinr {
                tlvs.append(QMITLV(0x17) { w in
                    w.i16(int16(rsrp))
                    w.i16(int16(snr * 10))
                })
            }
            if let rsrq = nr.rsrq { tlvs.append(QMITLV(0x18) { $0.i16(int16(rsrq)) }) }
        }
        return tlvs
    }

    // MARK: NAS Get Signal Strength (0x0020)

    /// The family whose measurement Get Signal Strength reports: the newest one in use.
    static func primaryFamily(_ state: SimulatedState) -> RadioFamily? {
        let f = state.accessTechnologies.families
        if state.accessTechnologies.isNonStandalone5G { return .lte }
        return f.last
    }

    /// nil when the modem has no RSSI to give (Get Signal Strength then fails with INFORMATION_UNAVAILABLE).
    /// `override` replaces the strength (TLV 0x01) and adds the strength list (TLV 0x10) as given.
    static func signalStrength(_ state: SimulatedState, mask: UInt16?, override: SignalStrengthOverride? = nil) -> [QMITLV]? {
        guard let family = primaryFamily(state), let rssi = override.map({ Double($0.dBm) }) ?? state.signal.rssi else {
            return nil
        }
        let radio = override?.radioInterface ?? family.qmiRadioInterface
        let mask = mask ?? 0
        var tlvs = [QMITLV(0x01) { w in
            w.i8(override?.dBm ?? int8(rssi))
            w.i8(radio)
        }]
        if let list = override?.list, !list.isEmpty {
            tlvs.append(QMITLV(0x10) { w in
                w.u16(UInt16(list.count))  // a u16 count, as the RSSI and ECIO lists
                for e in list {
                    w.i8(e.dBm)
                    w.i8(e.radioInterface)
                }
            })
        }
        // The strength, RSSI and ECIO lists count their elements in a u16, unlike most QMI arrays.
        if mask & 0x01 != 0 {
            tlvs.append(QMITLV(0x11) { w in
                w.u16(1)
                w.u8(UInt8(clamping: Int((-rssi).rounded())))
                w.i8(radio)
            })
        }
        if mask & 0x02 != 0, let ecio = state.signal.ecio {
            tlvs.append(QMITLV(0x12) { w in
                w.u16(1)
                w.u8(UInt8(clamping: QMIEncoding.ecio(ecio)))
                w.i8(radio)
            })
        }
        if family == .lte {
            if mask & 0x20 != 0, let rsrq = state.signal.rsrq {
                tlvs.append(QMITLV(0x16) { w in
                    w.i8(int8(rsrq))
                    w.i8(radio)
                })
            }
            if mask & 0x40 != 0, let snr = state.signal.sinr { tlvs.append(QMITLV(0x17) { $0.i16(int16(snr * 10)) }) }
            if mask & 0x80 != 0, let rsrp = state.signal.rsrp { tlvs.append(QMITLV(0x18) { $0.i16(int16(rsrp)) }) }
        }
        return tlvs
    }

    // MARK: NAS Event Report indication (0x0002)

    /// What a client asked for with Set Event Report.
    struct EventReportConfig: Equatable {
        var signalStrength = false
        var rssi = false
        var ecio = false
        var rejectReason = false
        var lteSNR = false
        var lteRSRP = false

        var isEmpty: Bool { self == EventReportConfig() }
    }

    static func eventReport(_ state: SimulatedState, config: EventReportConfig, signal: Bool, registration: Bool)
        -> [QMITLV]
    {
        var tlvs: [QMITLV] = []
        let s = state.signal
        if signal, let family = primaryFamily(state) {
            let radio = family.qmiRadioInterface
            if config.signalStrength, let rssi = s.rssi {
                tlvs.append(QMITLV(0x10) { w in
                    w.i8(int8(rssi))
                    w.i8(radio)
                })
            }
            if config.rssi, let rssi = s.rssi {
                tlvs.append(QMITLV(0x13) { w in
                    w.u8(UInt8(clamping: Int((-rssi).rounded())))
                    w.i8(radio)
                })
            }
            if config.ecio, let ecio = s.ecio {
                tlvs.append(QMITLV(0x14) { w in
                    w.u8(UInt8(clamping: QMIEncoding.ecio(ecio)))
                    w.i8(radio)
                })
            }
            if family == .lte {
                if config.lteSNR, let snr = s.sinr { tlvs.append(QMITLV(0x19) { $0.i16(int16(snr * 10)) }) }
                if config.lteRSRP, let rsrp = s.rsrp { tlvs.append(QMITLV(0x1A) { $0.i16(int16(rsrp)) }) }
            }
        }
        if registration, config.rejectReason, let cause = rejectCause(state) {
            tlvs.append(QMITLV(0x12) { w in
                w.u8(3)
                w.u16(UInt16(clamping: cause))
            })
        }
        return tlvs
    }

    // MARK: NAS Home Network (0x0025) and Operator Name (0x0039)

    static func homeNetwork(_ home: NetworkOperator) -> [QMITLV] {
        [
            QMITLV(0x01) { w in
                w.u16(UInt16(home.mcc)!)
                w.u16(UInt16(home.mnc)!)
                u8String(&w, home.name)
            },
            QMITLV(0x12, [1, home.mnc.count == 3 ? 1 : 0]),  // is 3GPP, MNC includes PCS digit
        ]
    }

    /// SPN from the SIM (the home operator) and, once registered, the network's name as NITZ sends it (UCS-2LE).
    static func operatorName(home: NetworkOperator?, state: SimulatedState) -> [QMITLV] {
        var tlvs: [QMITLV] = []
        if let home {
            tlvs.append(QMITLV(0x10) { w in
                w.u8(0)  // display condition
                u8String(&w, home.name)
            })
        }
        if state.isRegistered, let op = state.networkOperator, !op.name.isEmpty {
            let ucs2 = MBIMBufferBuilder.utf16le(op.name)
            tlvs.append(QMITLV(0x14) { w in
                w.u8(1)  // QmiNasPlmnEncodingScheme UCS2LE
                w.u8(0)  // short country initials: do not add
                w.u8(0)
                w.u8(0)  // spare bits
                // Long and short name alike (qmicli trips over an empty UCS-2 short name).
                for _ in 0..<2 {
                    w.u8(UInt8(min(ucs2.count, 254)))
                    w.append(Array(ucs2.prefix(254)))
                }
            })
        }
        return tlvs
    }

    // MARK: DMS

    static func capabilities(supports5G: Bool) -> [QMITLV] {
        var radios: [RadioFamily] = [.gsm, .wcdma, .lte]
        if supports5G { radios.append(.nr) }
        return [
            QMITLV(0x01) { w in
                w.u32(supports5G ? 1_000_000_000 : 150_000_000)  // max TX channel rate (bps)
                w.u32(supports5G ? 4_000_000_000 : 300_000_000)  // max RX channel rate
                w.u8(3)  // data service capability: simultaneous CS and PS
                w.u8(2)  // SIM capability: supported
                w.u8(UInt8(radios.count))
                radios.forEach { w.u8($0.dmsRadioInterface) }
            }
        ]
    }

    /// DMS UIM PIN status and UIM PIN state share values: ENABLED_NOT_VERIFIED 1, ENABLED_VERIFIED 2,
    /// DISABLED 3, BLOCKED 4 (PUK needed).
    static func pin1(_ sim: SIMState) -> (status: UInt8, retries: UInt8, unblockRetries: UInt8) {
        switch sim {
        case .pinRequired: return (1, 3, 10)
        case .pukRequired: return (4, 0, 10)
        default: return (3, 3, 10)
        }
    }

    /// QmiDmsUimState: INITIALIZATION_COMPLETED 0, LOCKED_OR_FAILED 1, NOT_PRESENT 2.
    static func uimState(_ sim: SIMState) -> UInt8 {
        switch sim {
        case .ready: return 0
        case .absent: return 2
        default: return 1
        }
    }

    // MARK: UIM Card Status (0x002F response, 0x0032 indication: TLV 0x10 both)

    /// The USIM application identifier (ETSI TS 101 220: RID A000000087, application code 1002).
    static let usimAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x87, 0x10, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x89, 0x06, 0x19, 0x00, 0x00]

    static func cardStatus(_ sim: SIMState) -> QMITLV {
        QMITLV(0x10) { w in
            let present = sim != .absent && sim != .error
            w.u16(present ? 0x0000 : 0xFFFF)  // GW primary: slot 0, application 0
            w.u16(0xFFFF)
            w.u16(0xFFFF)
            w.u16(0xFFFF)
            w.u8(1)  // one card slot
            // QmiUimCardState ABSENT 0, PRESENT 1, ERROR 2; QmiUimCardError TECHNICAL 7 for a failed card.
            w.u8(sim == .absent ? 0 : sim == .error ? 2 : 1)
            w.u8(0)  // UPIN not initialized
            w.u8(0)
            w.u8(0)
            w.u8(sim == .error ? 7 : 0)
            guard present else {
                w.u8(0)  // no applications
                return
            }
            w.u8(1)
            w.u8(2)  // application type USIM
            // QmiUimCardApplicationState: PIN1_OR_UPIN_PIN_REQUIRED 2, PUK1_OR_UPIN_PUK_REQUIRED 3, READY 7.
            w.u8(sim == .pinRequired ? 2 : sim == .pukRequired ? 3 : 7)
            w.u8(2)  // personalization state READY
            w.u8(11)  // personalization feature UNKNOWN
            w.u8(0)
            w.u8(0)
            w.u8(UInt8(usimAID.count))
            w.append(usimAID)
            w.u8(0)  // UPIN does not replace PIN1
            let pin = pin1(sim)
            w.u8(pin.status)
            w.u8(pin.retries)
            w.u8(pin.unblockRetries)
            w.u8(3)  // PIN2 disabled
            w.u8(3)
            w.u8(10)
        }
    }
}
