// Radio access technologies and their generation (2G/3G/4G/5G).
//
// Names follow ModemManager's access-technology strings where MM has one ("hspa-plus", "1xrtt", "5gnr",
// "lte-cat-m", "lte-nb-iot"), so an installer comparing `mmcli -m 0` with `reach status` reads the same words.
// TD-SCDMA and eHRPD, which MM has no bit for, use their 3GPP/3GPP2 names.

/// A mobile generation as a user sees it on a status bar.
public enum Generation: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case none = 0
    case g2 = 2
    case g3 = 3
    case g4 = 4
    case g5 = 5

    public static func < (a: Generation, b: Generation) -> Bool { a.rawValue < b.rawValue }

    /// "none", "2g", "3g", "4g", "5g": the JSON form of `wwan_status` and `generation`.
    public var name: String {
        switch self {
        case .none: return "none"
        case .g2: return "2g"
        case .g3: return "3g"
        case .g4: return "4g"
        case .g5: return "5g"
        }
    }

    public var description: String { name }

    public init?(name: String) {
        guard let g = Generation.allCases.first(where: { $0.name == name }) else { return nil }
        self = g
    }
}

/// One radio access technology.
public enum RadioAccessTechnology: String, Sendable, CaseIterable, Comparable, Codable {
    case gsm = "gsm"
    case gprs = "gprs"
    case edge = "edge"
    case umts = "umts"
    case hsdpa = "hsdpa"
    case hsupa = "hsupa"
    case hspa = "hspa"
    case hspaPlus = "hspa-plus"
    case tdScdma = "td-scdma"
    case cdma1x = "1xrtt"
    case evdo0 = "evdo0"
    case evdoA = "evdoa"
    case evdoB = "evdob"
    case eHRPD = "ehrpd"
    case lte = "lte"
    case lteCatM = "lte-cat-m"
    case lteNBIoT = "lte-nb-iot"
    case nr = "5gnr"

    /// Declaration order, oldest first: sorts sets for stable output.
    public static func < (a: RadioAccessTechnology, b: RadioAccessTechnology) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The generation following the 3GPP/3GPP2 families as Android's `getNetworkClass()` groups them
    /// (TelephonyManager NETWORK_CLASS_BITMASK_2G/3G/4G/5G).
    ///
    /// Where YYReachability (iOS `CTRadioAccessTechnology*` → `YYReachabilityWWANStatus`) differs:
    /// - CDMA 1x: YY says 3G (its source comment calls it "2.5G"); 3GPP2 1xRTT is a 2G technology and Android
    ///   classes it 2G. We say 2G.
    /// - eHRPD: YY's code says 3G while its header comment says 4G; eHRPD is EV-DO Rev A/B with an LTE-core
    ///   interface, and Android classes it 3G. We say 3G.
    /// - NR: YY knows no 5G and returns None for NR and NRNSA. We say 5G.
    /// - LTE-M and NB-IoT have no Android type; both are E-UTRA UE categories (3GPP Rel-13), so 4G.
    public var generation: Generation {
        switch self {
        case .gsm, .gprs, .edge, .cdma1x: return .g2
        case .umts, .hsdpa, .hsupa, .hspa, .hspaPlus, .tdScdma, .evdo0, .evdoA, .evdoB, .eHRPD: return .g3
        case .lte, .lteCatM, .lteNBIoT: return .g4
        case .nr: return .g5
        }
    }

    /// The signal family whose thresholds give the bars (Android's CellSignalStrength classes).
    public var signalFamily: SignalFamily {
        switch self {
        case .gsm, .gprs, .edge: return .gsm
        case .umts, .hsdpa, .hsupa, .hspa, .hspaPlus, .tdScdma: return .wcdma
        case .cdma1x, .evdo0, .evdoA, .evdoB, .eHRPD: return .cdma
        case .lte, .lteCatM, .lteNBIoT: return .lte
        case .nr: return .nr
        }
    }
}

/// The measurement families with their own bar thresholds.
public enum SignalFamily: String, Sendable {
    case gsm, wcdma, cdma, lte, nr
}

/// A set of radio access technologies in use at once (for example LTE + NR under 5G NSA / EN-DC).
public struct AccessTechnologies: Sendable, Equatable, Hashable, ExpressibleByArrayLiteral, Codable {
    public private(set) var members: Set<RadioAccessTechnology>

    public init(_ members: some Sequence<RadioAccessTechnology>) { self.members = Set(members) }
    public init(arrayLiteral elements: RadioAccessTechnology...) { self.members = Set(elements) }
    public static let none = AccessTechnologies([])

    public var isEmpty: Bool { members.isEmpty }
    public func contains(_ rat: RadioAccessTechnology) -> Bool { members.contains(rat) }
    public mutating func insert(_ rat: RadioAccessTechnology) { members.insert(rat) }
    public mutating func formUnion(_ other: AccessTechnologies) { members.formUnion(other.members) }

    /// The highest generation of any member (5G NSA = LTE + NR is 5G), or `.none` for an empty set.
    public var generation: Generation { members.map(\.generation).max() ?? .none }

    /// The member whose thresholds should give the bars: the newest technology present.
    public var primary: RadioAccessTechnology? { members.max() }

    /// 5G non-standalone: NR carried next to an LTE anchor (EN-DC).
    public var isNonStandalone5G: Bool { members.contains(.nr) && members.contains(where: { $0.generation == .g4 }) }

    /// Members in a stable order (oldest technology first), as their JSON names.
    public var names: [String] { members.sorted().map(\.rawValue) }
}
