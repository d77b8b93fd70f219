// Signal measurements, bars (0-4) and quality percentages.
//
// Bars follow Android's CellSignalStrength* default thresholds (ANCHORS.md §2.2): a level is the number of
// thresholds the value reaches (value >= threshold[i]); a value outside the valid range is "unknown", which is
// level 0 (SIGNAL_STRENGTH_NONE_OR_UNKNOWN). Where several measures are given, the minimum level wins, as Android
// does when a carrier enables RSRQ/RSSNR next to RSRP.

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
public struct BarThresholds: Sendable, Equatable {
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
    // AOSP CellSignalStrengthLte built-in defaults: RSRP valid [-140, -44], RSRQ [-34, 3], RSSNR [-20, 30].
    public static let lteRSRP = BarThresholds([-115, -105, -95, -85], valid: -140 ... -44)
    public static let lteRSRQ = BarThresholds([-19, -17, -14, -12], valid: -34 ... 3)
    public static let lteRSSNR = BarThresholds([-3, 1, 5, 13], valid: -20 ... 30)
    // AOSP CellSignalStrengthLte legacy RSSI fallback when no RSRP is known.
    public static let lteRSSI = BarThresholds([-113, -103, -97, -89], valid: -113 ... -51)
    // AOSP CellSignalStrengthNr: SS-RSRP [-140, -44], SS-RSRQ [-43, 20], SS-SINR [-23, 40].
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
    /// Bars for a measurement on a family of radio technologies. Unknown (nothing valid) is 0.
    /// `bias` (dB) is passed to every threshold table (see `BarThresholds.level(_:bias:)`); 0 gives the plain bars.
    public static func level(_ family: SignalFamily, _ m: SignalMeasurement, evdo: Bool = false, bias: Double = 0) -> Int {
        let b = bias
        switch family {
        case .gsm:
            return BarThresholds.gsmRSSI.level(m.rssi, bias: b) ?? 0
        case .wcdma:
            // RSSI is Android's default WCDMA method; RSCP is used when the modem gave no RSSI.
            return BarThresholds.wcdmaRSSI.level(m.rssi, bias: b) ?? BarThresholds.wcdmaRSCP.level(m.rscp, bias: b) ?? 0
        case .cdma:
            return (evdo ? BarThresholds.evdoRSSI : BarThresholds.cdmaRSSI).level(m.rssi, bias: b) ?? 0
        case .lte:
            guard let rsrp = BarThresholds.lteRSRP.level(m.rsrp, bias: b) else {
                return BarThresholds.lteRSSI.level(m.rssi, bias: b) ?? 0
            }
            return [rsrp, BarThresholds.lteRSRQ.level(m.rsrq, bias: b), BarThresholds.lteRSSNR.level(m.sinr, bias: b)]
                .compactMap { $0 }.min()!
        case .nr:
            guard let rsrp = BarThresholds.nrRSRP.level(m.rsrp, bias: b) else { return 0 }
            return [rsrp, BarThresholds.nrRSRQ.level(m.rsrq, bias: b), BarThresholds.nrSINR.level(m.sinr, bias: b)]
                .compactMap { $0 }.min()!
        }
    }

    /// Bars for a radio access technology.
    public static func level(_ rat: RadioAccessTechnology, _ m: SignalMeasurement, bias: Double = 0) -> Int {
        level(rat.signalFamily, m, evdo: [.evdo0, .evdoA, .evdoB, .eHRPD].contains(rat), bias: bias)
    }

    /// Bars for a set of technologies in use. `serving` is what the modem measured on its serving cell; `nr` is the
    /// NR leg that QMI and MBIMEx v2 report separately under 5G NSA (EN-DC).
    /// - SA (NR only): NR thresholds on `nr`, or on `serving` when that is all there is.
    /// - NSA (LTE + NR): the NR leg gives the bars when it has a valid SS-RSRP, otherwise the LTE anchor does.
    /// - Otherwise: the newest technology in the set. An empty set (not registered) has 0 bars.
    public static func level(
        _ rats: AccessTechnologies, serving: SignalMeasurement, nr: SignalMeasurement? = nil, bias: Double = 0
    ) -> Int {
        if rats.contains(.nr) {
            if let nr, BarThresholds.nrRSRP.level(nr.rsrp) != nil { return level(.nr, nr, bias: bias) }
            if !rats.isNonStandalone5G { return level(.nr, nr ?? serving, bias: bias) }
        }
        guard let anchor = rats.members.filter({ $0 != .nr }).max() else { return 0 }
        return level(anchor, serving, bias: bias)
    }

    /// WiFi bars from RSSI (Android 11+ RssiUtil: -88/-77/-66/-55).
    public static func wifi(rssi: Double?, bias: Double = 0) -> Int { BarThresholds.wifiRSSI.level(rssi, bias: bias) ?? 0 }
}

/// Quality percentages as ModemManager computes them (`src/mm-modem-helpers.h`, `mm-broadband-modem-qmi.c`).
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

    /// MM's 5G figure: min of RSRP [-140, -44], SNR [-23, 40] and RSRQ [-43, 20], each scaled linearly.
    public static func percentNR(rsrp: Double?, snr: Double?, rsrq: Double?) -> Int? {
        func scale(_ v: Double?, _ lo: Double, _ hi: Double) -> Int? {
            guard let v else { return nil }
            return Int(((min(max(v, lo), hi) - lo) * 100 / (hi - lo)).rounded(.down))
        }
        let parts = [scale(rsrp, -140, -44), scale(snr, -23, 40), scale(rsrq, -43, 20)].compactMap { $0 }
        return parts.min()
    }

    /// QMI (Get Signal Info): the best RSSI over the technologies reported, through MM_RSSI_TO_QUALITY; the 5G figure
    /// replaces it when it is at least as high. CDMA/EV-DO/UMTS RSSI counts only inside (-125, -30) dBm.
    public static func percentQMI(rssi: [Double], nr: (rsrp: Double?, snr: Double?, rsrq: Double?)? = nil) -> Int? {
        let best = rssi.filter { $0 > -125 && $0 < -30 }.max()
        let rssiPercent = best.map { percent(rssi: $0) }
        let nrPercent = nr.flatMap { percentNR(rsrp: $0.rsrp, snr: $0.snr, rsrq: $0.rsrq) }
        switch (rssiPercent, nrPercent) {
        case let (r?, n?): return n >= r ? n : r
        case let (r?, nil): return r
        case let (nil, n?): return n
        default: return nil
        }
    }

    /// MBIM Signal State: coded RSSI (0-31) as `min(n, 31) * 100 / 31`; when RSSI is unknown (99), the best RSRP of
    /// the MBIMEx v2 RSRP/SNR entries through MM_RSRP_TO_QUALITY.
    public static func percentMBIM(codedRSSI: UInt32, rsrpDBm: [Double] = []) -> Int? {
        if codedRSSI <= 31 { return Int(codedRSSI) * 100 / 31 }
        if let best = rsrpDBm.max() { return percent(rsrp: best) }
        return codedRSSI == MBIMCoding.unknownRSSI ? 0 : nil
    }

    /// WiFi quality as iwinfo computes it (clamp(dBm, -110, -40) + 110 of 70), scaled to percent as LuCI does.
    public static func percentWiFi(rssi: Double) -> Int {
        let q = Int(min(max(rssi, -110), -40).rounded(.down)) + 110
        return q * 100 / 70
    }
}

/// Coded values of the MBIM specification and Microsoft's MBIM extensions.
public enum MBIMCoding {
    public static let unknownRSSI: UInt32 = 99

    /// MBIM 1.0 §10.5.10 (Signal State) RSSI: 0 = -113 dBm or less, n = -113 + 2n, 31 = -51 dBm or greater,
    /// 99 = unknown. (ModemManager's `mm_signal_rssi_from_coded_value` uses `n - 113`; the spec is `-113 + 2n`.)
    public static func rssiDBm(coded n: UInt32) -> Double? {
        n <= 31 ? Double(-113 + 2 * Int(n)) : nil
    }

    /// MBIMEx 2.0 RSRP (WWAN_SIGNAL_STATE_EXT): reported value n (1...126) covers [-157 + n, -156 + n) dBm, so the
    /// range is -156 ... -31 dBm; 0 means below -156 dBm. Anything larger (0xFFFFFFFF) is unknown.
    public static func rsrpDBm(coded n: UInt32) -> Double? {
        n <= 126 ? Double(-157 + Int(n)) : nil
    }

    /// MBIMEx 2.0 SNR: n (0...126) is -23 + n/2 dB, so -23 ... 40 dB; larger values are unknown.
    public static func snrDB(coded n: UInt32) -> Double? {
        n <= 126 ? -23 + Double(n) / 2 : nil
    }

    /// MBIM error-rate code (0-7) → lower bound of the bit error rate in percent; 99 = unknown.
    public static func berPercent(coded n: UInt32) -> Double? {
        let table: [Double] = [0, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8]
        return n < 8 ? table[Int(n)] : nil
    }
}
