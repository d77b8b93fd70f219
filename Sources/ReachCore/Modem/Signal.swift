// Signal measurements, threshold tables, bars and quality percentages.
//
// Bars: a level is the number of thresholds the value reaches (value >= threshold[i]), as AOSP's
// CellSignalStrength* classes count them; a value outside the valid range is unknown, level 0
// (SIGNAL_STRENGTH_NONE_OR_UNKNOWN). Which tables and measures give a modem's bars is the signal policy's choice
// (SignalPolicy.swift). Quality percentages are ModemManager's figures, a different number from the bars.

/// What a modem reported about its serving cell, in physical units. Absent means the modem did not say.
public struct SignalMeasurement: Sendable, Equatable, Hashable, Codable {
    public var rssi: Double?  // dBm
    public var rsrp: Double?  // dBm (LTE RSRP or NR SS-RSRP)
    public var rsrq: Double?  // dB
    public var sinr: Double?  // dB (LTE RS-SNR or NR SS-SINR)
    public var rscp: Double?  // dBm (WCDMA)
    public var ecio: Double?  // dB (WCDMA / CDMA)

    public init(
        rssi: Double? = nil, rsrp: Double? = nil, rsrq: Double? = nil, sinr: Double? = nil,
        rscp: Double? = nil, ecio: Double? = nil
    ) {
        self.rssi = rssi
        self.rsrp = rsrp
        self.rsrq = rsrq
        self.sinr = sinr
        self.rscp = rscp
        self.ecio = ecio
    }

    public var isEmpty: Bool { self == SignalMeasurement() }
}

/// Threshold tables: four ascending thresholds and the valid range of the measure.
public struct BarThresholds: Sendable, Equatable, Codable {
    public var thresholds: [Double]
    public var valid: ClosedRange<Double>

    public init(_ thresholds: [Double], valid: ClosedRange<Double>) {
        precondition(thresholds.count == 4 && thresholds == thresholds.sorted(), "four ascending thresholds")
        self.thresholds = thresholds
        self.valid = valid
    }

    /// 0...4, or nil when the value is absent or outside the valid range (unknown).
    ///
    /// `bias` (dB) raises every threshold by that much for this one evaluation: the agent's bar hysteresis asks
    /// "which level would this value reach if each boundary had to be crossed by N dB?" with `bias: ±N`. The valid
    /// range is checked on the unbiased value.
    public func level(_ value: Double?, bias: Double = 0) -> Int? {
        guard let value, valid.contains(value) else { return nil }
        return thresholds.reduce(0) { $0 + (value >= $1 + bias ? 1 : 0) }
    }

    // AOSP CellSignalStrengthGsm: RSSI, valid [-113, -51].
    public static let gsmRSSI = BarThresholds([-107, -103, -97, -89], valid: -113 ... -51)
    // AOSP CellSignalStrengthWcdma (Android 10+): default method RSSI; RSCP method, valid [-120, -24].
    public static let wcdmaRSSI = BarThresholds([-107, -97, -87, -77], valid: -113 ... -51)
    public static let wcdmaRSCP = BarThresholds([-115, -105, -95, -85], valid: -120 ... -24)
    // AOSP CellSignalStrengthLte built-in tables (sRsrpThresholds, sRsrqThresholds, sRssnrThresholds), which Android
    // uses only when no carrier config is given; the strict profile's. RSRP gives a level in [-140, -44]
    // (MIN_LTE_RSRP, MAX_LTE_RSRP), RSRQ [-34, 3], RSSNR [-20, 30].
    public static let lteRSRP = BarThresholds([-115, -105, -95, -85], valid: -140 ... -44)
    public static let lteRSRQ = BarThresholds([-19, -17, -14, -12], valid: -34 ... 3)
    public static let lteRSSNR = BarThresholds([-3, 1, 5, 13], valid: -20 ... 30)
    // AOSP CellSignalStrengthLte.updateLevel: the RSSI levels used when no enabled measure has a level.
    public static let lteRSSI = BarThresholds([-113, -103, -97, -89], valid: -113 ... -51)
    // AOSP CellSignalStrengthNr thresholds (CarrierConfigManager's SSRSRP/SSRSRQ/SSSINR defaults); the strict
    // profile keeps the Android 12 SS-RSRP range [-140, -44] (Android 14 widened it to [-156, -31]).
    public static let nrRSRP = BarThresholds([-110, -90, -80, -65], valid: -140 ... -44)
    public static let nrRSRQ = BarThresholds([-31, -19, -7, 6], valid: -43 ... 20)
    public static let nrSINR = BarThresholds([-5, 5, 15, 30], valid: -23 ... 40)
    // AOSP CellSignalStrengthCdma: CDMA 1x dBm levels (-100/-95/-85/-75) and EV-DO dBm levels (-105/-90/-75/-65).
    public static let cdmaRSSI = BarThresholds([-100, -95, -85, -75], valid: -120 ... -1)
    public static let evdoRSSI = BarThresholds([-105, -90, -75, -65], valid: -120 ... -1)
    // Android 11+ WiFi (RssiUtil, config_wifiRssiLevelThresholds default).
    public static let wifiRSSI = BarThresholds([-88, -77, -66, -55], valid: -127 ... 0)
}

public enum SignalBars {
    /// WiFi bars from RSSI (Android 11+ RssiUtil: -88/-77/-66/-55). Modem bars depend on the signal policy
    /// (`SignalPolicy.bars`).
    public static func wifi(rssi: Double?, bias: Double = 0) -> Int { BarThresholds.wifiRSSI.level(rssi, bias: bias) ?? 0 }
}

/// Quality percentages as ModemManager computes them (src/mm-modem-helpers.h, src/mm-broadband-modem-qmi.c and
/// src/mm-modem-helpers-mbim.c of ModemManager 1.25.95-dev, 9a2d5863): a figure of its own, kept next to the bars
/// so that `quality_percent` matches `mmcli -m N` (its "signal quality").
public enum SignalQuality {
    /// MM_RSSI_TO_QUALITY: -113 dBm → 0 %, -51 dBm → 100 %, linear, integer arithmetic.
    public static func percent(rssi: Double) -> Int {
        let c = Int(min(max(rssi, -113), -51).rounded(.down))
        return 100 - ((c + 51) * 100 / (-113 + 51))
    }

    /// MM_RSRP_TO_QUALITY: -110 dBm → 0 %, -60 dBm → 100 %.
    public static func percent(rsrp: Double) -> Int {
        let c = Int(min(max(rsrp, -110), -60).rounded(.down))
        return 100 - ((c + 60) * 100 / (-110 + 60))
    }

    /// `qmi_dbm_valid`: CDMA 1x, EV-DO (QmiNasRadioInterface 1, 2) and UMTS (5) strengths count only inside
    /// (-125, -30) dBm; MM applies no window to the other interfaces (GSM, LTE, TD-SCDMA, 5G NR).
    public static func qmiDBmValid(_ dBm: Double, radioInterface: Int) -> Bool {
        switch radioInterface {
        case 1, 2, 5: return dBm > -125 && dBm < -30
        default: return true
        }
    }

    /// MM's 5G figure (`common_signal_info_get_quality`): the lowest of RSRP in [-140, -44] dBm, SNR in [-23, 40] dB
    /// and RSRQ in [-43, 20] dB, each scaled linearly with integer arithmetic. A value outside its range is skipped,
    /// never clamped; SNR is first cut to whole dB toward zero as MM's `0.1 * snr` into a gint16 does.
    public static func percentNR(rsrp: Double?, snr: Double?, rsrq: Double?) -> Int? {
        func scale(_ v: Double?, _ lo: Int, _ hi: Int) -> Int? {
            guard let v else { return nil }
            let x = Int(v.rounded(.towardZero))
            guard x >= lo, x <= hi else { return nil }
            return (x - lo) * 100 / (hi - lo)
        }
        return [scale(rsrp, -140, -44), scale(snr, -23, 40), scale(rsrq, -43, 20)].compactMap { $0 }.min()
    }

    /// QMI Get Signal Info: the best RSSI over the technologies reported (each counted only when negative and, for
    /// CDMA/EV-DO/UMTS, inside `qmiDBmValid`'s window; the best must lie in (-125, 0)), through MM_RSSI_TO_QUALITY;
    /// the 5G figure replaces it when it is at least as high.
    public static func percentQMI(
        rssi: [(dBm: Double, radioInterface: Int)], nr: (rsrp: Double?, snr: Double?, rsrq: Double?)? = nil
    ) -> Int? {
        var best = -125.0
        for r in rssi where r.dBm < 0 && qmiDBmValid(r.dBm, radioInterface: r.radioInterface) { best = max(best, r.dBm) }
        let rssiPercent = best < 0 && best > -125 ? percent(rssi: best) : nil
        let nrPercent = nr.flatMap { percentNR(rsrp: $0.rsrp, snr: $0.snr, rsrq: $0.rsrq) }
        if let nrPercent, nrPercent >= (rssiPercent ?? -1) { return nrPercent }
        return rssiPercent
    }

    /// QMI Get Signal Strength (`signal_strength_get_quality`): no figure at all when the mandatory strength is not
    /// valid for its radio interface; otherwise the best of it and the valid strength-list entries, and a figure
    /// only when that is below 0 dBm (a 0 dBm strength is "no reading", not a perfect signal).
    public static func percentQMIStrength(
        main: (dBm: Double, radioInterface: Int), list: [(dBm: Double, radioInterface: Int)]
    ) -> Int? {
        guard qmiDBmValid(main.dBm, radioInterface: main.radioInterface) else { return nil }
        var best = main.dBm
        for e in list where qmiDBmValid(e.dBm, radioInterface: e.radioInterface) { best = max(best, e.dBm) }
        return best < 0 ? percent(rssi: best) : nil
    }

    /// MBIM Signal State (`mm_signal_quality_from_mbim_signal_state`): coded RSSI n (0-31) as `n * 100 / 31`; when
    /// RSSI is unknown (99), the best RSRP of the MBIMEx 2.0 entries (coded below 127, as -157 + n dBm) through
    /// MM_RSRP_TO_QUALITY.
    ///
    /// Departures from ModemManager, both for the rule that a value outside its range is unavailable, never a
    /// reading: MM clamps a coded RSSI of 32-98 (outside the coding) to 31 and reports 100 %; here it gives no
    /// figure. MM reports 0 % for RSSI 99 without a usable RSRP entry; here there is no figure (unknown is not
    /// "no signal").
    public static func percentMBIM(codedRSSI: UInt32, codedRSRP: [UInt32] = []) -> Int? {
        if codedRSSI == MBIMCoding.unknownRSSI {
            guard let best = codedRSRP.filter({ $0 < 127 }).max() else { return nil }
            return percent(rsrp: Double(-157 + Int(best)))
        }
        return codedRSSI <= 31 ? Int(codedRSSI) * 100 / 31 : nil
    }

    /// WiFi quality as iwinfo computes it (clamp(dBm, -110, -40) + 110 of 70), scaled to percent as LuCI does.
    public static func percentWiFi(rssi: Double) -> Int {
        let q = Int(min(max(rssi, -110), -40).rounded(.down)) + 110
        return q * 100 / 70
    }
}

/// Coded values of the MBIM specification and Microsoft's MBIM extensions. Each coded value stands for an interval
/// of the measure; the decoded value is the interval's lower bound, as libmbim's mbimcli prints them
/// (src/mbimcli/mbimcli-basic-connect.c @ 2f6c6add).
public enum MBIMCoding {
    public static let unknownRSSI: UInt32 = 99

    /// MBIM 1.0 §10.5.10 (Signal State) RSSI: 0 = -113 dBm or less, n = -113 + 2n, 31 = -51 dBm or greater,
    /// 99 = unknown; 32-98 are not in the coding and are unavailable. (ModemManager's `mm_signal_rssi_from_coded_value`
    /// uses `n - 113`; the specification, Microsoft's WWAN_SIGNAL_STATE table and MM's own ATDS path use `-113 + 2n`.)
    public static func rssiDBm(coded n: UInt32) -> Double? {
        n <= 31 ? Double(-113 + 2 * Int(n)) : nil
    }

    /// MBIMEx 2.0 RSRP (WWAN_SIGNAL_STATE_EXT, the TS 38.133 SS-RSRP report mapping): n (1...125) covers
    /// [-157 + n, -156 + n) dBm, 0 is below -156 dBm, 126 is -31 dBm or more; 127 and above are unknown.
    public static func rsrpDBm(coded n: UInt32) -> Double? {
        n <= 126 ? Double(-157 + Int(n)) : nil
    }

    /// MBIMEx 2.0 SNR (the TS 38.133 SS-SINR report mapping, 0.5 dB steps): n (1...126) covers
    /// [-23.5 + n/2, -23 + n/2) dB, 0 is below -23 dB, 127 is 40 dB or more; 128 and above are unknown.
    /// (ModemManager's `mm_signal_snr_from_coded_value` returns the upper bound, n/2 - 23.)
    public static func snrDB(coded n: UInt32) -> Double? {
        n <= 127 ? -23.5 + Double(n) / 2 : nil
    }

    /// MBIM error-rate code (0-7) → lower bound of the bit error rate in percent; 99 = unknown.
    public static func berPercent(coded n: UInt32) -> Double? {
        let table: [Double] = [0, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8]
        return n < 8 ? table[Int(n)] : nil
    }
}
