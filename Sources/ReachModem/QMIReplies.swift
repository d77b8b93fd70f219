// Copies QMI replies and indications out of libqmi's output objects into ReachCore's plain structs.
//
// Each function runs on the GLib loop thread, reads the TLVs it needs through libqmi's getters (a getter that
// returns FALSE means the TLV was absent, which becomes nil) and never keeps a pointer into the output. Responses
// and indications of the same shape (System Info 0x004D/0x004E, Signal Info 0x004F/0x0051) share one reader
// through a table of getters, because libqmi gives them distinct C types with identical getters.

import CGLibShims
import ReachCore

typealias GErrorOut = UnsafeMutablePointer<UnsafeMutablePointer<GError>?>

/// A QMI fixed-size string field (MCC/MNC: 3 bytes, no terminator guaranteed) as its bytes.
private func fixedBytes(_ p: UnsafePointer<CChar>?, max: Int) -> [UInt8] {
    guard let p else { return [] }
    return (0..<max).lazy.map { UInt8(bitPattern: p[$0]) }.prefix(while: { $0 != 0 }).map { $0 }
}

/// A NUL-terminated string field's bytes.
func cBytes(_ p: UnsafePointer<CChar>?) -> [UInt8]? {
    guard let p else { return nil }
    return Array(UnsafeBufferPointer(start: p, count: strlen(p))).map { UInt8(bitPattern: $0) }
}

/// A NUL-terminated string field as text, trimmed; nil when absent or empty.
func cText(_ p: UnsafePointer<CChar>?) -> String? {
    guard let bytes = cBytes(p) else { return nil }
    let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces
    return text.isEmpty ? nil : text
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" || c == "\r" || c == "\n" || c == "\0" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" || c == "\n" || c == "\0" { s = s.dropLast() }
        return String(s)
    }
}

// MARK: - System Info (0x004D response, 0x004E indication)

typealias QMIServiceStatusGetter = @Sendable (
    OpaquePointer?, UnsafeMutablePointer<QmiNasServiceStatus>?, UnsafeMutablePointer<QmiNasServiceStatus>?,
    UnsafeMutablePointer<gboolean>?, GErrorOut?
) -> gboolean

/// The fields every per-RAT "System Info v2" TLV starts with.
struct QMISystemInfoCommon {
    var domainValid: gboolean = 0
    var domain = QmiNasNetworkServiceDomain(0)
    var capabilityValid: gboolean = 0
    var capability = QmiNasNetworkServiceDomain(0)
    var roamingValid: gboolean = 0
    var roaming = QmiNasRoamingStatus(0)
    var forbiddenValid: gboolean = 0
    var forbidden: gboolean = 0
    var lacValid: gboolean = 0
    var lac: UInt16 = 0
    var cidValid: gboolean = 0
    var cid: UInt32 = 0
    var rejectValid: gboolean = 0
    var rejectDomain = QmiNasNetworkServiceDomain(0)
    var rejectCause: UInt32 = 0
    var networkIDValid: gboolean = 0
    var mcc: UnsafePointer<CChar>? = nil
    var mnc: UnsafePointer<CChar>? = nil
}

/// The getters of one System Info message type (the response or the indication).
struct QMISystemInfoGetters: Sendable {
    var gsmStatus: QMIServiceStatusGetter
    var wcdmaStatus: QMIServiceStatusGetter
    var lteStatus: QMIServiceStatusGetter
    var nr5gStatus: QMIServiceStatusGetter
    var gsmInfo: @Sendable (OpaquePointer?, inout QMISystemInfoCommon) -> Bool
    var wcdmaInfo: @Sendable (OpaquePointer?, inout QMISystemInfoCommon) -> Bool
    var lteInfo: @Sendable (OpaquePointer?, inout QMISystemInfoCommon) -> Bool
    var nr5gInfo: @Sendable (OpaquePointer?, inout QMISystemInfoCommon) -> Bool
    var eutraWithNR5G: @Sendable (OpaquePointer?, UnsafeMutablePointer<gboolean>?, GErrorOut?) -> gboolean

    static let response = QMISystemInfoGetters(
        gsmStatus: qmi_message_nas_get_system_info_output_get_gsm_service_status,
        wcdmaStatus: qmi_message_nas_get_system_info_output_get_wcdma_service_status,
        lteStatus: qmi_message_nas_get_system_info_output_get_lte_service_status,
        nr5gStatus: qmi_message_nas_get_system_info_output_get_nr5g_service_status_info,
        gsmInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var a: gboolean = 0, b: gboolean = 0, d: gboolean = 0, e: gboolean = 0
            let ok = qmi_message_nas_get_system_info_output_get_gsm_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &a, &b, &d, &e, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        wcdmaInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var a: gboolean = 0, b: gboolean = 0, psc: gboolean = 0, pscValue: UInt16 = 0
            var hs1 = QmiNasWcdmaHsService(0), hs2 = QmiNasWcdmaHsService(0)
            let ok = qmi_message_nas_get_system_info_output_get_wcdma_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &a, &hs1, &b, &hs2, &psc, &pscValue, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        lteInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var tacValid: gboolean = 0, tac: UInt16 = 0
            let ok = qmi_message_nas_get_system_info_output_get_lte_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &tacValid, &tac, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        nr5gInfo: { o, c in
            var rc: UInt8 = 0
            var tacValid: gboolean = 0, tac: UInt16 = 0
            let ok = qmi_message_nas_get_system_info_output_get_nr5g_system_info(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &tacValid, &tac, nil) != 0
            c.rejectCause = UInt32(rc)
            return ok
        },
        eutraWithNR5G: qmi_message_nas_get_system_info_output_get_eutra_with_nr5g_availability)

    static let indication = QMISystemInfoGetters(
        gsmStatus: qmi_indication_nas_system_info_output_get_gsm_service_status,
        wcdmaStatus: qmi_indication_nas_system_info_output_get_wcdma_service_status,
        lteStatus: qmi_indication_nas_system_info_output_get_lte_service_status,
        nr5gStatus: qmi_indication_nas_system_info_output_get_nr5g_service_status_info,
        gsmInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var a: gboolean = 0, b: gboolean = 0, d: gboolean = 0, e: gboolean = 0
            let ok = qmi_indication_nas_system_info_output_get_gsm_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &a, &b, &d, &e, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        wcdmaInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var a: gboolean = 0, b: gboolean = 0, psc: gboolean = 0, pscValue: UInt16 = 0
            var hs1 = QmiNasWcdmaHsService(0), hs2 = QmiNasWcdmaHsService(0)
            let ok = qmi_indication_nas_system_info_output_get_wcdma_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &a, &hs1, &b, &hs2, &psc, &pscValue, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        lteInfo: { o, c in
            var rc = QmiNasRejectCause(0)
            var tacValid: gboolean = 0, tac: UInt16 = 0
            let ok = qmi_indication_nas_system_info_output_get_lte_system_info_v2(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &tacValid, &tac, nil) != 0
            c.rejectCause = rc.rawValue
            return ok
        },
        nr5gInfo: { o, c in
            var rc: UInt8 = 0
            var tacValid: gboolean = 0, tac: UInt16 = 0
            let ok = qmi_indication_nas_system_info_output_get_nr5g_system_info(
                o, &c.domainValid, &c.domain, &c.capabilityValid, &c.capability, &c.roamingValid, &c.roaming,
                &c.forbiddenValid, &c.forbidden, &c.lacValid, &c.lac, &c.cidValid, &c.cid, &c.rejectValid,
                &c.rejectDomain, &rc, &c.networkIDValid, &c.mcc, &c.mnc, &tacValid, &tac, nil) != 0
            c.rejectCause = UInt32(rc)
            return ok
        },
        eutraWithNR5G: qmi_indication_nas_system_info_output_get_eutra_with_nr5g_availability)
}

enum QMIReplies {
    /// One technology: its service-status TLV (required) and its system-info TLV (optional).
    private static func ratInfo(
        _ o: OpaquePointer?, status: QMIServiceStatusGetter, info: (OpaquePointer?, inout QMISystemInfoCommon) -> Bool
    ) -> QMISystemInfo.RATInfo? {
        var service = QmiNasServiceStatus(0), trueService = QmiNasServiceStatus(0)
        var preferred: gboolean = 0
        guard status(o, &service, &trueService, &preferred, nil) != 0 else { return nil }
        var rat = QMISystemInfo.RATInfo(
            serviceStatus: QMISystemInfo.ServiceStatus(rawValue: Int(service.rawValue)) ?? .none)
        var c = QMISystemInfoCommon()
        if info(o, &c) {
            if c.domainValid != 0 { rat.domain = QMISystemInfo.Domain(rawValue: Int(c.domain.rawValue)) ?? .unknown }
            // QmiNasRoamingStatus: OFF 0, ON 1; the other values are CDMA indicator states that mean roaming.
            if c.roamingValid != 0 { rat.roaming = c.roaming.rawValue != 0 }
            if c.forbiddenValid != 0 { rat.forbidden = c.forbidden != 0 }
            if c.networkIDValid != 0 {
                rat.plmn = PLMN(qmiMCC: fixedBytes(c.mcc, max: 3), qmiMNC: fixedBytes(c.mnc, max: 3))
            }
            if c.rejectValid != 0, c.rejectCause != 0 { rat.rejectCause = Int(c.rejectCause) }
        }
        return rat
    }

    /// NAS Get System Info's output or a System Info indication.
    static func systemInfo(_ o: OpaquePointer?, _ g: QMISystemInfoGetters) -> QMISystemInfo {
        var endc: gboolean = 0
        return QMISystemInfo(
            gsm: ratInfo(o, status: g.gsmStatus, info: g.gsmInfo),
            wcdma: ratInfo(o, status: g.wcdmaStatus, info: g.wcdmaInfo),
            lte: ratInfo(o, status: g.lteStatus, info: g.lteInfo),
            nr5g: ratInfo(o, status: g.nr5gStatus, info: g.nr5gInfo),
            eutraWithNR5GAvailable: g.eutraWithNR5G(o, &endc, nil) != 0 && endc != 0)
    }
}

// MARK: - Serving System (0x0024 response and indication)

/// The elements of a GArray of integers or C enums, whatever their width: libqmi stores an array TLV of u8
/// enum values (Radio Interfaces, Data Capabilities) as an array of the C enum type, four bytes each.
func integers(_ a: UnsafeMutablePointer<GArray>) -> [Int] {
    let size = g_array_get_element_size(a)
    return (0..<a.pointee.len).map { i in
        let e = CGLibShims_array_element(a, i)!
        switch size {
        case 1: return Int(e.load(as: Int8.self))
        case 2: return Int(e.load(as: Int16.self))
        case 4: return Int(e.load(as: Int32.self))
        default: return Int(e.load(as: Int64.self))
        }
    }
}

struct QMIServingSystemGetters: Sendable {
    var servingSystem: @Sendable (
        OpaquePointer?, UnsafeMutablePointer<QmiNasRegistrationState>?, UnsafeMutablePointer<QmiNasAttachState>?,
        UnsafeMutablePointer<QmiNasAttachState>?, UnsafeMutablePointer<QmiNasNetworkType>?,
        UnsafeMutablePointer<UnsafeMutablePointer<GArray>?>?, GErrorOut?
    ) -> gboolean
    var roamingIndicator: @Sendable (OpaquePointer?, UnsafeMutablePointer<QmiNasRoamingIndicatorStatus>?, GErrorOut?) -> gboolean
    var dataCapability: @Sendable (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<GArray>?>?, GErrorOut?) -> gboolean
    var currentPLMN: @Sendable (
        OpaquePointer?, UnsafeMutablePointer<UInt16>?, UnsafeMutablePointer<UInt16>?,
        UnsafeMutablePointer<UnsafePointer<CChar>?>?, GErrorOut?
    ) -> gboolean
    var mncPCSDigit: @Sendable (
        OpaquePointer?, UnsafeMutablePointer<UInt16>?, UnsafeMutablePointer<UInt16>?, UnsafeMutablePointer<gboolean>?,
        GErrorOut?
    ) -> gboolean

    static let response = QMIServingSystemGetters(
        servingSystem: qmi_message_nas_get_serving_system_output_get_serving_system,
        roamingIndicator: qmi_message_nas_get_serving_system_output_get_roaming_indicator,
        dataCapability: qmi_message_nas_get_serving_system_output_get_data_service_capability,
        currentPLMN: qmi_message_nas_get_serving_system_output_get_current_plmn,
        mncPCSDigit: qmi_message_nas_get_serving_system_output_get_mnc_pcs_digit_include_status)

    static let indication = QMIServingSystemGetters(
        servingSystem: qmi_indication_nas_serving_system_output_get_serving_system,
        roamingIndicator: qmi_indication_nas_serving_system_output_get_roaming_indicator,
        dataCapability: qmi_indication_nas_serving_system_output_get_data_service_capability,
        currentPLMN: qmi_indication_nas_serving_system_output_get_current_plmn,
        mncPCSDigit: qmi_indication_nas_serving_system_output_get_mnc_pcs_digit_include_status)
}

extension QMIReplies {
    /// NAS Get Serving System's output or a Serving System indication; nil when the mandatory TLV is missing.
    static func servingSystem(_ o: OpaquePointer?, _ g: QMIServingSystemGetters) -> QMIServingSystem? {
        var reg = QmiNasRegistrationState(0)
        var cs = QmiNasAttachState(0), ps = QmiNasAttachState(0)
        var net = QmiNasNetworkType(0)
        var radios: UnsafeMutablePointer<GArray>? = nil
        guard g.servingSystem(o, &reg, &cs, &ps, &net, &radios, nil) != 0 else { return nil }
        var result = QMIServingSystem(
            registrationState: Int(reg.rawValue),
            radioInterfaces: radios.map(integers) ?? [], psAttachState: Int(ps.rawValue))
        var roaming = QmiNasRoamingIndicatorStatus(0)
        if g.roamingIndicator(o, &roaming, nil) != 0 { result.roamingIndicator = Int(roaming.rawValue) }
        var caps: UnsafeMutablePointer<GArray>? = nil
        if g.dataCapability(o, &caps, nil) != 0, let caps { result.dataCapabilities = integers(caps) }
        var mcc: UInt16 = 0, mnc: UInt16 = 0
        var description: UnsafePointer<CChar>? = nil
        if g.currentPLMN(o, &mcc, &mnc, &description, nil) != 0 {
            var threeDigits: Bool? = nil
            var pcsMCC: UInt16 = 0, pcsMNC: UInt16 = 0
            var includes: gboolean = 0
            if g.mncPCSDigit(o, &pcsMCC, &pcsMNC, &includes, nil) != 0, pcsMCC == mcc, pcsMNC == mnc {
                threeDigits = includes != 0
            }
            result.plmn = PLMN(qmiMCC: mcc, qmiMNC: mnc, mncIsThreeDigits: threeDigits)
            result.operatorName = cBytes(description).flatMap(OperatorName.decode)
        }
        return result
    }
}

// MARK: - Signal Info (0x004F response, 0x0051 indication)

struct QMISignalInfoGetters: Sendable {
    var cdma: @Sendable (OpaquePointer?, UnsafeMutablePointer<Int8>?, UnsafeMutablePointer<Int16>?, GErrorOut?) -> gboolean
    var hdr: @Sendable (
        OpaquePointer?, UnsafeMutablePointer<Int8>?, UnsafeMutablePointer<Int16>?,
        UnsafeMutablePointer<QmiNasEvdoSinrLevel>?, UnsafeMutablePointer<Int32>?, GErrorOut?
    ) -> gboolean
    var gsm: @Sendable (OpaquePointer?, UnsafeMutablePointer<Int8>?, GErrorOut?) -> gboolean
    var wcdma: @Sendable (OpaquePointer?, UnsafeMutablePointer<Int8>?, UnsafeMutablePointer<Int16>?, GErrorOut?) -> gboolean
    var lte: @Sendable (
        OpaquePointer?, UnsafeMutablePointer<Int8>?, UnsafeMutablePointer<Int8>?, UnsafeMutablePointer<Int16>?,
        UnsafeMutablePointer<Int16>?, GErrorOut?
    ) -> gboolean
    var nr: @Sendable (OpaquePointer?, UnsafeMutablePointer<Int16>?, UnsafeMutablePointer<Int16>?, GErrorOut?) -> gboolean
    var nrExtended: @Sendable (OpaquePointer?, UnsafeMutablePointer<Int16>?, GErrorOut?) -> gboolean

    static let response = QMISignalInfoGetters(
        cdma: qmi_message_nas_get_signal_info_output_get_cdma_signal_strength,
        hdr: qmi_message_nas_get_signal_info_output_get_hdr_signal_strength,
        gsm: qmi_message_nas_get_signal_info_output_get_gsm_signal_strength,
        wcdma: qmi_message_nas_get_signal_info_output_get_wcdma_signal_strength,
        lte: qmi_message_nas_get_signal_info_output_get_lte_signal_strength,
        nr: qmi_message_nas_get_signal_info_output_get_5g_signal_strength,
        nrExtended: qmi_message_nas_get_signal_info_output_get_5g_signal_strength_extended)

    static let indication = QMISignalInfoGetters(
        cdma: qmi_indication_nas_signal_info_output_get_cdma_signal_strength,
        hdr: qmi_indication_nas_signal_info_output_get_hdr_signal_strength,
        gsm: qmi_indication_nas_signal_info_output_get_gsm_signal_strength,
        wcdma: qmi_indication_nas_signal_info_output_get_wcdma_signal_strength,
        lte: qmi_indication_nas_signal_info_output_get_lte_signal_strength,
        nr: qmi_indication_nas_signal_info_output_get_5g_signal_strength,
        nrExtended: qmi_indication_nas_signal_info_output_get_5g_signal_strength_extended)
}

extension QMIReplies {
    static func signalInfo(_ o: OpaquePointer?, _ g: QMISignalInfoGetters) -> QMISignalInfo {
        var s = QMISignalInfo()
        var i8a: Int8 = 0, i8b: Int8 = 0, i16a: Int16 = 0, i16b: Int16 = 0, i32: Int32 = 0
        var sinr = QmiNasEvdoSinrLevel(0)
        if g.cdma(o, &i8a, &i16a, nil) != 0 { s.cdma = (i8a, i16a) }
        if g.hdr(o, &i8a, &i16a, &sinr, &i32, nil) != 0 { s.hdr = (i8a, i16a, UInt8(truncatingIfNeeded: sinr.rawValue), i32) }
        if g.gsm(o, &i8a, nil) != 0 { s.gsmRSSI = i8a }
        if g.wcdma(o, &i8a, &i16a, nil) != 0 { s.wcdma = (i8a, i16a) }
        if g.lte(o, &i8a, &i8b, &i16a, &i16b, nil) != 0 { s.lte = (i8a, i8b, i16a, i16b) }
        if g.nr(o, &i16a, &i16b, nil) != 0 { s.nr = (i16a, i16b) }
        if g.nrExtended(o, &i16a, nil) != 0 { s.nrRSRQ = i16a }
        return s
    }

    /// NAS Get Signal Strength's output.
    static func signalStrength(_ o: OpaquePointer?) -> QMISignalStrength? {
        var strength: Int8 = 0
        var radio = QmiNasRadioInterface(0)
        guard qmi_message_nas_get_signal_strength_output_get_signal_strength(o, &strength, &radio, nil) != 0 else {
            return nil
        }
        var s = QMISignalStrength(current: .init(Int(strength), radioInterface: Int(radio.rawValue)))
        s.strengthList = elements(o, qmi_message_nas_get_signal_strength_output_get_strength_list) {
            (e: QmiMessageNasGetSignalStrengthOutputStrengthListElement) in
            .init(Int(e.strength), radioInterface: Int(e.radio_interface.rawValue))
        }
        s.rssiList = elements(o, qmi_message_nas_get_signal_strength_output_get_rssi_list) {
            (e: QmiMessageNasGetSignalStrengthOutputRssiListElement) in
            .init(Int(e.rssi), radioInterface: Int(e.radio_interface.rawValue))
        }
        s.ecioList = elements(o, qmi_message_nas_get_signal_strength_output_get_ecio_list) {
            (e: QmiMessageNasGetSignalStrengthOutputEcioListElement) in
            .init(Int(e.ecio), radioInterface: Int(e.radio_interface.rawValue))
        }
        var rsrq: Int8 = 0
        if qmi_message_nas_get_signal_strength_output_get_rsrq(o, &rsrq, &radio, nil) != 0 {
            s.rsrq = .init(Int(rsrq), radioInterface: Int(radio.rawValue))
        }
        var i16: Int16 = 0
        if qmi_message_nas_get_signal_strength_output_get_lte_snr(o, &i16, nil) != 0 { s.lteSNR = Int(i16) }
        if qmi_message_nas_get_signal_strength_output_get_lte_rsrp(o, &i16, nil) != 0 { s.lteRSRP = Int(i16) }
        return s
    }

    /// The elements of an array-of-structs TLV, copied out.
    static func elements<Element, T>(
        _ o: OpaquePointer?,
        _ getter: (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<GArray>?>?, GErrorOut?) -> gboolean,
        _ transform: (Element) -> T
    ) -> [T] {
        var array: UnsafeMutablePointer<GArray>? = nil
        guard getter(o, &array, nil) != 0, let array else { return [] }
        precondition(g_array_get_element_size(array) == MemoryLayout<Element>.stride, "libqmi element layout")
        return (0..<array.pointee.len).map { i in
            transform(CGLibShims_array_element(array, i)!.assumingMemoryBound(to: Element.self).pointee)
        }
    }

    /// The signal TLVs of a NAS Event Report indication, in Get Signal Strength's shape.
    static func eventReportSignal(_ o: OpaquePointer?) -> QMISignalStrength? {
        var s = QMISignalStrength()
        var strength: Int8 = 0
        var radio = QmiNasRadioInterface(0)
        if qmi_indication_nas_event_report_output_get_signal_strength(o, &strength, &radio, nil) != 0 {
            s.current = .init(Int(strength), radioInterface: Int(radio.rawValue))
        }
        var rssi: UInt8 = 0
        if qmi_indication_nas_event_report_output_get_rssi(o, &rssi, &radio, nil) != 0 {
            s.rssiList = [.init(Int(rssi), radioInterface: Int(radio.rawValue))]
        }
        var ecio: UInt8 = 0
        if qmi_indication_nas_event_report_output_get_ecio(o, &ecio, &radio, nil) != 0 {
            s.ecioList = [.init(Int(ecio), radioInterface: Int(radio.rawValue))]
        }
        var rsrq: Int8 = 0
        if qmi_indication_nas_event_report_output_get_rsrq(o, &rsrq, &radio, nil) != 0 {
            s.rsrq = .init(Int(rsrq), radioInterface: Int(radio.rawValue))
        }
        var i16: Int16 = 0
        if qmi_indication_nas_event_report_output_get_lte_snr(o, &i16, nil) != 0 { s.lteSNR = Int(i16) }
        if qmi_indication_nas_event_report_output_get_lte_rsrp(o, &i16, nil) != 0 { s.lteRSRP = Int(i16) }
        return s == QMISignalStrength() ? nil : s
    }
}

// MARK: - SIM (UIM Get Card Status, DMS UIM Get PIN Status)

extension QMIReplies {
    /// UIM Get Card Status: the card of the primary GSM/UMTS application, and that application's PIN1 state (UPIN
    /// when it replaces PIN1), as ModemManager reads it. Nil when the TLV is missing.
    static func cardStatus(_ o: OpaquePointer?) -> SIMState? {
        var gwPrimary: UInt16 = 0, x1: UInt16 = 0, gw2: UInt16 = 0, x2: UInt16 = 0
        var cards: UnsafeMutablePointer<GArray>? = nil
        guard qmi_message_uim_get_card_status_output_get_card_status(o, &gwPrimary, &x1, &gw2, &x2, &cards, nil) != 0,
            let cards, cards.pointee.len > 0
        else { return nil }
        // The index is (slot << 8) | application; 0xFFFF means "no primary GW application" → use card 0, app 0.
        let slot = gwPrimary == 0xFFFF ? 0 : UInt32(gwPrimary >> 8)
        let app = gwPrimary == 0xFFFF ? 0 : UInt32(gwPrimary & 0xFF)
        guard slot < cards.pointee.len else { return .unknown }
        let card = CGLibShims_array_element(cards, slot)!
            .assumingMemoryBound(to: QmiMessageUimGetCardStatusOutputCardStatusCardsElement.self).pointee
        var pin1: Int? = nil
        if card.card_state.rawValue == 1, let apps = card.applications, app < apps.pointee.len {
            let a = CGLibShims_array_element(apps, app)!
                .assumingMemoryBound(to: QmiMessageUimGetCardStatusOutputCardStatusCardsElementApplicationsElement.self)
                .pointee
            pin1 = Int(a.upin_replaces_pin1 != 0 ? card.upin_state.rawValue : a.pin1_state.rawValue)
        }
        return SIMState(qmiCardState: Int(card.card_state.rawValue), pin1Status: pin1)
    }

    /// DMS UIM Get PIN Status: PIN1's state.
    static func pinStatus(_ o: OpaquePointer?) -> SIMState? {
        var status = QmiDmsUimPinStatus(0)
        var verify: UInt8 = 0, unblock: UInt8 = 0
        guard qmi_message_dms_uim_get_pin_status_output_get_pin1_status(o, &status, &verify, &unblock, nil) != 0 else {
            return nil
        }
        return SIMState(qmiPINStatus: Int(status.rawValue))
    }
}
