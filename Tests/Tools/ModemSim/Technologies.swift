// From ReachCore technology names to what each protocol calls them. The inverse of ReachCore's
// ModemConversions (which reads modem values): here the simulator writes them.

import ReachCore

/// The radio families QMI reports separately (one service-status and system-info TLV each).
public enum RadioFamily: Sendable, Hashable, CaseIterable, Comparable {
    case cdma, hdr, gsm, wcdma, tdscdma, lte, nr

    public static func < (a: RadioFamily, b: RadioFamily) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

extension RadioAccessTechnology {
    public var family: RadioFamily {
        switch self {
        case .gsm, .gprs, .edge: return .gsm
        case .umts, .hsdpa, .hsupa, .hspa, .hspaPlus: return .wcdma
        case .tdScdma: return .tdscdma
        case .cdma1x: return .cdma
        case .evdo0, .evdoA, .evdoB, .eHRPD: return .hdr
        case .lte, .lteCatM, .lteNBIoT: return .lte
        case .nr: return .nr
        }
    }

    /// QmiNasDataCapability values (Serving System TLV 0x11). TD-SCDMA, eHRPD and NR have none in libqmi 1.32.
    var qmiDataCapabilities: [UInt8] {
        switch self {
        case .gprs: return [1]
        case .edge: return [2]
        case .hsdpa: return [3]
        case .hsupa: return [4]
        case .hspa: return [3, 4]
        case .umts: return [5]
        case .cdma1x: return [6]
        case .evdo0: return [7]
        case .evdoA: return [8]
        case .gsm: return [9]
        case .evdoB: return [10]
        case .lte, .lteCatM, .lteNBIoT: return [11]
        case .hspaPlus: return [12]
        case .tdScdma, .eHRPD, .nr: return []
        }
    }

    /// MbimDataClass bits (MBIM 1.0 plus MBIMEx 2.0). GSM without GPRS has no bit of its own: a GSM-only modem
    /// reports GPRS, as real MBIM firmware does. HSPA+ has no bit either (vendors use CUSTOM "HSPA+"): HSDPA|HSUPA.
    var mbimDataClass: UInt32 {
        switch self {
        case .gsm, .gprs: return MBIMDataClass.gprs.rawValue
        case .edge: return MBIMDataClass.edge.rawValue
        case .umts, .tdScdma: return MBIMDataClass.umts.rawValue
        case .hsdpa: return MBIMDataClass.hsdpa.rawValue
        case .hsupa: return MBIMDataClass.hsupa.rawValue
        case .hspa, .hspaPlus: return MBIMDataClass.hsdpa.rawValue | MBIMDataClass.hsupa.rawValue
        case .lte, .lteCatM, .lteNBIoT: return MBIMDataClass.lte.rawValue
        case .nr: return MBIMDataClass.nr5gSA.rawValue
        case .cdma1x: return MBIMDataClass.cdma1xRTT.rawValue
        case .evdo0: return MBIMDataClass.cdma1xEVDO.rawValue
        case .evdoA, .eHRPD: return MBIMDataClass.cdma1xEVDORevA.rawValue
        case .evdoB: return MBIMDataClass.cdma1xEVDORevB.rawValue
        }
    }
}

extension RadioFamily {
    /// QmiNasRadioInterface (Serving System, Signal Strength, Event Report).
    var qmiRadioInterface: Int8 {
        switch self {
        case .cdma: return 1
        case .hdr: return 2
        case .gsm: return 4
        case .wcdma: return 5
        case .lte: return 8
        case .tdscdma: return 9
        case .nr: return 12
        }
    }

    /// QmiDmsRadioInterface (DMS Get Capabilities): 5G NR is 10 there, not 12.
    var dmsRadioInterface: UInt8 {
        switch self {
        case .cdma: return 1
        case .hdr: return 2
        case .gsm: return 4
        case .wcdma: return 5
        case .lte: return 8
        case .tdscdma: return 9
        case .nr: return 10
        }
    }
}

extension AccessTechnologies {
    /// The radio families in use, oldest first.
    public var families: [RadioFamily] { Set(members.map(\.family)).sorted() }

    /// MbimDataClass for MBIM 1.0 and MBIMEx 2.0: 5G NSA (EN-DC) is LTE | 5G_NSA, 5G SA is 5G_SA.
    var mbimDataClass: UInt32 {
        var bits: UInt32 = 0
        for rat in members where rat != .nr { bits |= rat.mbimDataClass }
        if contains(.nr) {
            bits |= isNonStandalone5G ? MBIMDataClass.nr5gNSA.rawValue : MBIMDataClass.nr5gSA.rawValue
        }
        return bits
    }

    /// MbimDataClassV3 and MbimDataSubclass for MBIMEx 3.0: one 5G bit, NSA/SA told by the subclass (ENDC or NR).
    var mbimDataClassV3: (dataClass: UInt32, subclass: UInt32) {
        var bits: UInt32 = 0
        for rat in members where rat != .nr { bits |= rat.mbimDataClass }
        guard contains(.nr) else { return (bits, 0) }
        bits |= MBIMDataClass.v3NR5G.rawValue
        return (bits, isNonStandalone5G ? MBIMDataSubclass.endc.rawValue : MBIMDataSubclass.nr.rawValue)
    }
}
