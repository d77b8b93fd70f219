// How bars are computed: named profiles as data, one value passed from the configuration to every place that
// shows bars (snapshot JSON, change detection and its hysteresis, text, diag, Prometheus, `reach watch`).
//
// `android` is what an Android phone on its default carrier configuration shows. Sources, one release: Android 14.
// - Thresholds and switches: the `sDefaults` of frameworks/base telephony/java/android/telephony/
//   CarrierConfigManager.java (Android 14; read in LineageOS 21's copy, android_frameworks_base @ 0a2280ce):
//   KEY_GSM_RSSI_THRESHOLDS_INT_ARRAY, KEY_WCDMA_DEFAULT_SIGNAL_STRENGTH_MEASUREMENT_STRING = "rssi",
//   KEY_PARAMETERS_USED_FOR_LTE_SIGNAL_BAR_INT = USE_RSRP, KEY_LTE_RSRP_THRESHOLDS_INT_ARRAY,
//   KEY_PARAMETERS_USE_FOR_5G_NR_SIGNAL_BAR_INT = USE_SSRSRP, KEY_5G_NR_SSRSRP_THRESHOLDS_INT_ARRAY,
//   KEY_SIGNAL_STRENGTH_NR_NSA_USE_LTE_AS_PRIMARY_BOOL = true.
// - Level rules: CellSignalStrength{Gsm,Wcdma,Lte,Nr}.updateLevel and SignalStrength.getPrimary of the same
//   release: a level is the number of thresholds the value reaches; a value outside the measure's range is
//   unavailable; LTE falls back to RSSI {-113, -103, -97, -89} when no enabled measure is available; WCDMA's RSSI
//   method uses the built-in {-107, -97, -87, -77} (not carrier-configurable in Android).
// - Their tests: frameworks/opt/telephony tests/telephonytests SignalStrengthTest, CellSignalStrengthNrTest,
//   CellSignalStrengthWcdmaTest (Android 14 QPR2, AOSP snapshot "24Q1-release" dda3d6df as carried by
//   GrapheneOS platform_frameworks_opt_telephony branch 14).
//
// `strict` is GatewayReach's rule before profiles existed: the built-in fallbacks of CellSignalStrengthLte
// (-115/-105/-95/-85, used by Android only when no carrier config exists), the minimum of RSRP, RSRQ and SNR
// levels, WCDMA RSCP when there is no RSSI, and the NR leg deciding under 5G NSA. It reads lower than a phone.

/// A measure the bar rules can use; the raw value is its configuration name (`signal.thresholds.lte.rsrp`).
public enum SignalMeasure: String, Sendable, CaseIterable, Hashable, Codable {
    case rssi, rsrp, rsrq, sinr, rscp, ecio

    public var unit: String {
        switch self {
        case .rssi, .rsrp, .rscp: return "dBm"
        case .rsrq, .sinr, .ecio: return "dB"
        }
    }
}

extension SignalMeasurement {
    public func value(_ measure: SignalMeasure) -> Double? {
        switch measure {
        case .rssi: return rssi
        case .rsrp: return rsrp
        case .rsrq: return rsrq
        case .sinr: return sinr
        case .rscp: return rscp
        case .ecio: return ecio
        }
    }

    public mutating func set(_ measure: SignalMeasure, _ v: Double?) {
        switch measure {
        case .rssi: rssi = v
        case .rsrp: rsrp = v
        case .rsrq: rsrq = v
        case .sinr: sinr = v
        case .rscp: rscp = v
        case .ecio: ecio = v
        }
    }

    /// The measurement with every value outside its measure's valid range on `family` removed: a value outside the
    /// range is unavailable, never a reading (`SignalRanges`).
    public func validated(for family: SignalFamily) -> SignalMeasurement {
        var out = self
        for measure in SignalMeasure.allCases {
            guard let v = value(measure) else { continue }
            if let range = SignalRanges.valid(measure, on: family), !range.contains(v) { out.set(measure, nil) }
        }
        return out
    }
}

/// The valid range of each measure a modem reports, per family: the ranges Android 14's CellSignalStrength*
/// constructors keep (`inRangeOrUnavailable`); anything outside becomes CellInfo.UNAVAILABLE there and unavailable
/// here. A measure a family does not have (SS-RSRP on GSM) has no range and is kept as the modem gave it.
public enum SignalRanges {
    public static func valid(_ measure: SignalMeasure, on family: SignalFamily) -> ClosedRange<Double>? {
        switch (family, measure) {
        // CellSignalStrengthGsm: RSSI [-113, -51] (TS 27.007 8.5: ASU 0-31).
        case (.gsm, .rssi): return -113 ... -51
        // CellSignalStrengthWcdma: RSSI [-113, -51], RSCP [-120, -24], Ec/No [-24, 1].
        case (.wcdma, .rssi): return -113 ... -51
        case (.wcdma, .rscp): return -120 ... -24
        case (.wcdma, .ecio): return -24 ... 1
        // CellSignalStrengthCdma: CDMA/EV-DO dBm [-120, 0], Ec/Io [-160, 0] in 0.1 dB.
        case (.cdma, .rssi): return -120 ... 0
        case (.cdma, .ecio): return -16 ... 0
        // CellSignalStrengthLte: RSSI [-113, -51], RSRP [-140, -43], RSRQ [-34, 3], RSSNR [-20, 30].
        case (.lte, .rssi): return -113 ... -51
        case (.lte, .rsrp): return -140 ... -43
        case (.lte, .rsrq): return -34 ... 3
        case (.lte, .sinr): return -20 ... 30
        // CellSignalStrengthNr (Android 14): SS-RSRP [-156, -31], SS-RSRQ [-43, 20], SS-SINR [-23, 40]
        // (TS 38.133 reporting ranges; CellSignalStrengthNrTest.testSignalLevel_validValue walks -156…-31).
        case (.nr, .rsrp): return -156 ... -31
        case (.nr, .rsrq): return -43 ... 20
        case (.nr, .sinr): return -23 ... 40
        default: return nil
        }
    }
}

/// One measure of a bar rule: which value, its four thresholds and the range in which it gives a level.
public struct MeasureThresholds: Sendable, Equatable, Codable {
    public var measure: SignalMeasure
    public var table: BarThresholds

    public init(_ measure: SignalMeasure, _ table: BarThresholds) {
        self.measure = measure
        self.table = table
    }

    public func level(_ m: SignalMeasurement, bias: Double) -> Int? { table.level(m.value(measure), bias: bias) }
}

/// How one family's bars are computed from a measurement.
/// - `primary` gives the level when it is available;
/// - `limitedBy` measures, when available, can only lower it (the lowest level wins, as Android does when a
///   carrier enables several LTE or NR measures);
/// - `fallback` gives the level when the primary measure is unavailable.
/// Nothing available: no level (0 bars).
public struct BarRule: Sendable, Equatable, Codable {
    public var primary: MeasureThresholds
    public var limitedBy: [MeasureThresholds]
    public var fallback: MeasureThresholds?

    public init(_ primary: MeasureThresholds, limitedBy: [MeasureThresholds] = [], fallback: MeasureThresholds? = nil) {
        self.primary = primary
        self.limitedBy = limitedBy
        self.fallback = fallback
    }

    /// Every measure of the rule, primary first.
    public var measures: [MeasureThresholds] { [primary] + limitedBy + (fallback.map { [$0] } ?? []) }

    /// 0...4, or nil when the rule has nothing to work with. `bias` raises every threshold (bar hysteresis).
    public func level(_ m: SignalMeasurement, bias: Double = 0) -> Int? {
        if let p = primary.level(m, bias: bias) {
            return limitedBy.compactMap { $0.level(m, bias: bias) }.reduce(p, min)
        }
        return fallback?.level(m, bias: bias)
    }

    mutating func replace(_ measure: SignalMeasure, thresholds: [Double]) -> Bool {
        if primary.measure == measure {
            primary.table.thresholds = thresholds
            return true
        }
        if let i = limitedBy.firstIndex(where: { $0.measure == measure }) {
            limitedBy[i].table.thresholds = thresholds
            return true
        }
        if fallback?.measure == measure {
            fallback!.table.thresholds = thresholds
            return true
        }
        return false
    }
}

/// The families a policy has a rule for; the raw value is the configuration name (`signal.thresholds.lte`).
/// CDMA 1x and EV-DO share `SignalFamily.cdma` but have tables of their own.
public enum BarFamily: String, Sendable, CaseIterable, Hashable, Codable {
    case gsm, wcdma, cdma, evdo, lte, nr

    /// The family whose reading ranges apply.
    public var signalFamily: SignalFamily {
        switch self {
        case .gsm: return .gsm
        case .wcdma: return .wcdma
        case .cdma, .evdo: return .cdma
        case .lte: return .lte
        case .nr: return .nr
        }
    }

    public init(_ rat: RadioAccessTechnology) {
        switch rat.signalFamily {
        case .gsm: self = .gsm
        case .wcdma: self = .wcdma
        case .cdma: self = [.evdo0, .evdoA, .evdoB, .eHRPD].contains(rat) ? .evdo : .cdma
        case .lte: self = .lte
        case .nr: self = .nr
        }
    }
}

/// The signal policy: a named profile, possibly with thresholds the configuration replaced.
public struct SignalPolicy: Sendable, Equatable, Codable {
    public enum Profile: String, Sendable, CaseIterable, Codable {
        case android, strict
    }

    /// Which leg gives the bars under 5G NSA (EN-DC), where the modem reports the LTE anchor and the NR leg apart.
    public enum NSAPrimary: String, Sendable, Codable {
        /// Android's SignalStrength.getPrimary with KEY_SIGNAL_STRENGTH_NR_NSA_USE_LTE_AS_PRIMARY_BOOL = true: the
        /// LTE anchor whenever it reported any valid value, else the NR leg.
        case lteAnchor
        /// The NR leg when its primary measure (SS-RSRP) is available, else the LTE anchor.
        case nrLeg
    }

    public var profile: Profile
    public var rules: [BarFamily: BarRule]
    public var nsaPrimary: NSAPrimary
    /// The `family.measure` keys whose thresholds the configuration replaced, in order ("lte.rsrp").
    public private(set) var overridden: [String] = []

    public init(profile: Profile, rules: [BarFamily: BarRule], nsaPrimary: NSAPrimary) {
        precondition(Set(rules.keys) == Set(BarFamily.allCases), "a rule for every family")
        self.profile = profile
        self.rules = rules
        self.nsaPrimary = nsaPrimary
    }

    public init(_ profile: Profile) {
        switch profile {
        case .android: self = .android
        case .strict: self = .strict
        }
    }

    public func rule(_ family: BarFamily) -> BarRule { rules[family]! }

    /// The profile's name, as the JSON gives it (`bars_profile`); replaced thresholds are listed apart.
    public var name: String { profile.rawValue }

    // MARK: Profiles

    // CarrierConfigManager sDefaults, Android 14 (see the top of the file).
    static let androidGSMRSSI = MeasureThresholds(.rssi, BarThresholds([-107, -103, -97, -89], valid: -113 ... -51))
    static let androidWCDMARSSI = MeasureThresholds(.rssi, BarThresholds([-107, -97, -87, -77], valid: -113 ... -51))
    static let androidLTERSRP = MeasureThresholds(.rsrp, BarThresholds([-128, -118, -108, -98], valid: -140 ... -44))
    static let lteRSSIFallback = MeasureThresholds(.rssi, BarThresholds.lteRSSI)
    static let androidNRSSRSRP = MeasureThresholds(.rsrp, BarThresholds([-110, -90, -80, -65], valid: -156 ... -31))
    static let cdmaRSSI = MeasureThresholds(.rssi, BarThresholds.cdmaRSSI)
    static let evdoRSSI = MeasureThresholds(.rssi, BarThresholds.evdoRSSI)

    /// What an Android 14 phone on CarrierConfigManager's defaults shows.
    public static let android = SignalPolicy(
        profile: .android,
        rules: [
            .gsm: BarRule(androidGSMRSSI),
            .wcdma: BarRule(androidWCDMARSSI),
            .lte: BarRule(androidLTERSRP, fallback: lteRSSIFallback),
            .nr: BarRule(androidNRSSRSRP),
            // CDMA and EV-DO: dBm levels only. Departure from CellSignalStrengthCdma, which also takes the minimum
            // with Ec/Io (and EV-DO SNR) levels; no modem we support reports 3GPP2 today.
            .cdma: BarRule(cdmaRSSI),
            .evdo: BarRule(evdoRSSI),
        ],
        nsaPrimary: .lteAnchor)

    /// GatewayReach's rule before profiles: the minimum of every measure, Android's no-carrier-config fallbacks.
    public static let strict = SignalPolicy(
        profile: .strict,
        rules: [
            .gsm: BarRule(MeasureThresholds(.rssi, .gsmRSSI)),
            .wcdma: BarRule(MeasureThresholds(.rssi, .wcdmaRSSI), fallback: MeasureThresholds(.rscp, .wcdmaRSCP)),
            .lte: BarRule(
                MeasureThresholds(.rsrp, .lteRSRP),
                limitedBy: [MeasureThresholds(.rsrq, .lteRSRQ), MeasureThresholds(.sinr, .lteRSSNR)],
                fallback: lteRSSIFallback),
            .nr: BarRule(
                MeasureThresholds(.rsrp, .nrRSRP),
                limitedBy: [MeasureThresholds(.rsrq, .nrRSRQ), MeasureThresholds(.sinr, .nrSINR)]),
            .cdma: BarRule(cdmaRSSI),
            .evdo: BarRule(evdoRSSI),
        ],
        nsaPrimary: .nrLeg)

    // MARK: Overrides

    /// Why an override cannot be applied; the configuration names the key.
    public enum OverrideError: Error, Equatable, CustomStringConvertible {
        case unusedMeasure(used: [SignalMeasure])
        case notFourAscending
        case outOfRange(ClosedRange<Double>, SignalMeasure)

        public var description: String {
            switch self {
            case let .unusedMeasure(used):
                return "not used by this profile (it uses \(used.map(\.rawValue).joined(separator: ", ")) here)"
            case .notFourAscending:
                return "expected four ascending numbers (poor, moderate, good, great)"
            case let .outOfRange(r, m):
                return "expected values from \(JSON.format(r.lowerBound)) to \(JSON.format(r.upperBound)) \(m.unit)"
            }
        }
    }

    /// Replaces the four thresholds of one measure of one family's rule.
    public mutating func override(_ family: BarFamily, _ measure: SignalMeasure, thresholds: [Double]) throws(OverrideError) {
        var rule = rules[family]!
        guard let current = rule.measures.first(where: { $0.measure == measure }) else {
            throw .unusedMeasure(used: rule.measures.map(\.measure))
        }
        guard thresholds.count == 4, zip(thresholds, thresholds.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw .notFourAscending
        }
        let range = current.table.valid
        guard thresholds.allSatisfy({ range.contains($0) }) else { throw .outOfRange(range, measure) }
        _ = rule.replace(measure, thresholds: thresholds)
        rules[family] = rule
        let key = "\(family.rawValue).\(measure.rawValue)"
        if !overridden.contains(key) { overridden.append(key) }
    }

    // MARK: Bars

    /// Bars of one family's measurement. Unknown (nothing valid) is 0.
    public func level(_ family: BarFamily, _ m: SignalMeasurement, bias: Double = 0) -> Int {
        rule(family).level(m, bias: bias) ?? 0
    }

    /// Bars of a radio access technology's measurement.
    public func level(_ rat: RadioAccessTechnology, _ m: SignalMeasurement, bias: Double = 0) -> Int {
        level(BarFamily(rat), m, bias: bias)
    }

    /// Bars for a set of technologies in use. `serving` is what the modem measured on its serving cell (the LTE
    /// anchor under NSA); `nr` is the NR leg that QMI and MBIMEx 2.0 report apart under 5G NSA (EN-DC).
    /// - NSA: `nsaPrimary` says which leg, the other when that one has nothing.
    /// - SA (NR only): the NR rule on `nr`, or on `serving` when that is all there is.
    /// - Otherwise: the newest technology in the set. An empty set (not registered) has 0 bars.
    /// `bias` (dB) raises every threshold (see `BarThresholds.level(_:bias:)`); 0 gives the plain bars.
    public func bars(
        _ rats: AccessTechnologies, serving: SignalMeasurement, nr: SignalMeasurement? = nil, bias: Double = 0
    ) -> Int {
        if rats.contains(.nr) && !rats.isNonStandalone5G { return level(BarFamily.nr, nr ?? serving, bias: bias) }
        guard let anchor = rats.members.filter({ $0 != .nr }).max() else { return 0 }
        guard rats.isNonStandalone5G, let nr else { return level(anchor, serving, bias: bias) }
        switch nsaPrimary {
        case .lteAnchor:
            return serving.isEmpty ? level(BarFamily.nr, nr, bias: bias) : level(anchor, serving, bias: bias)
        case .nrLeg:
            let nrUsable = rule(.nr).primary.level(nr, bias: 0) != nil
            return nrUsable ? level(BarFamily.nr, nr, bias: bias) : level(anchor, serving, bias: bias)
        }
    }

    /// The threshold of every measure the policy uses, per measure, ascending and without repeats: where a QMI
    /// modem is asked to announce a change (Config Signal Info), so an indication comes whenever bars may move.
    public func boundaries(_ measure: SignalMeasure, families: [BarFamily] = BarFamily.allCases) -> [Double] {
        let all = families.flatMap { rule($0).measures.filter { $0.measure == measure }.flatMap(\.table.thresholds) }
        return Array(Set(all)).sorted()
    }
}

extension ModemState {
    /// Bars under `policy`; 0 unless registered. `bias` raises every threshold by that many dB (the change
    /// detector's hysteresis); `bars(policy)` is the plain value.
    public func bars(_ policy: SignalPolicy, bias: Double = 0) -> Int {
        guard registration.isRegistered else { return 0 }
        return policy.bars(accessTechnologies, serving: signal, nr: nrSignal, bias: bias)
    }
}
