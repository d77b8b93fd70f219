// Operating bands and their channel numbers, for every radio a gateway modem speaks, and the band of a channel when
// the modem names none.
//
// Sources (values carried over as data, checked band edge by band edge in BandPlanTests):
// - E-UTRA: 3GPP TS 36.101, Table 5.7.3-1 "E-UTRA channel numbers" (F_DL_low, N_Offs-DL, range of N_DL), §5.7.3
//   F_DL = F_DL_low + 0.1 (N_DL - N_Offs-DL). Every band has its own EARFCN range, so a channel names one band.
// - NR: 3GPP TS 38.101-1 Table 5.2-1 (FR1 operating bands) and TS 38.101-2 Table 5.2-1 (FR2), with the global
//   frequency raster of TS 38.104 §5.4.2.1 (F_REF = F_REF-Offs + ΔF_Global (N_REF - N_REF-Offs)). NR bands share the
//   raster, so one NR-ARFCN can lie in several bands (n78 inside n77, n1 inside n65/n66, n7 inside n41/n90).
// - UTRA FDD: 3GPP TS 25.101 Table 5.2 (general UARFCN, N_DL = 5 (F_DL - F_DL_Offset)) and Table 5.2A (additional
//   UARFCN on the 100 kHz offset raster of bands II, IV, V, VI, VII, X, XII, XIII, XIV, XIX, XXV).
// - GSM: 3GPP TS 45.005 §2 (ARFCN ranges of GSM 450/480/750/850/810, P/E/R-GSM 900, DCS 1800, PCS 1900). DCS 1800
//   and PCS 1900 share ARFCN 512-810; the network's band indicator decides, which a modem rarely passes on.
// - The QMI active band values: libqmi `src/libqmi-glib/qmi-enums-nas.h` (QmiNasActiveBand).
//
// Where a channel fits several bands the choice follows where the network is (`BandRegion`, from the MCC): a band
// used only in one region is taken only there; otherwise the narrowest band wins (the more specific allocation),
// then the lower number. A band found this way is flagged (`band_from_channel`), because only the modem knows.

/// The radio system of a cell or carrier.
public enum CellRAT: String, Sendable, Hashable, Codable, CaseIterable {
    case gsm
    case umts
    case tdscdma = "td-scdma"
    case lte
    case nr = "5gnr"

    /// The human name: "GSM", "UMTS", "TD-SCDMA", "LTE", "NR".
    public var label: String {
        switch self {
        case .gsm: return "GSM"
        case .umts: return "UMTS"
        case .tdscdma: return "TD-SCDMA"
        case .lte: return "LTE"
        case .nr: return "NR"
        }
    }

    /// The name of the channel number: ARFCN, UARFCN, EARFCN, NR-ARFCN.
    public var channelName: String {
        switch self {
        case .gsm: return "ARFCN"
        case .umts, .tdscdma: return "UARFCN"
        case .lte: return "EARFCN"
        case .nr: return "NR-ARFCN"
        }
    }

    /// The JSON key of the cell's physical identity: `pci` (LTE, NR), `psc` (UMTS primary scrambling code), `bsic`
    /// (GSM base station identity code), `cpid` (TD-SCDMA cell parameter id).
    public var physicalIDKey: String {
        switch self {
        case .gsm: return "bsic"
        case .umts: return "psc"
        case .tdscdma: return "cpid"
        case .lte, .nr: return "pci"
        }
    }
}

/// An operating band: "B3" (E-UTRA), "n78" (NR), "B1" (UTRA band I), "GSM900", "TD-A".
public struct RadioBand: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var rat: CellRAT
    /// The band number; for GSM the band's MHz designation (450, 480, 750, 810, 850, 900, 1800, 1900); for
    /// TD-SCDMA the band letter as 1 (A) … 6 (F).
    public var number: Int

    public init(_ rat: CellRAT, _ number: Int) {
        self.rat = rat
        self.number = number
    }

    public var name: String {
        switch rat {
        case .lte, .umts: return "B\(number)"
        case .nr: return "n\(number)"
        case .gsm: return "GSM\(number)"
        case .tdscdma:
            let letters = Array("ABCDEF")
            return (1...6).contains(number) ? "TD-\(letters[number - 1])" : "TD-\(number)"
        }
    }

    public var description: String { name }

    /// The name as written by `name`, for the radio given ("B3" is E-UTRA band 3 or UTRA band I…).
    public init?(name: String, rat: CellRAT) {
        let prefix: String
        switch rat {
        case .lte, .umts: prefix = "B"
        case .nr: prefix = "n"
        case .gsm: prefix = "GSM"
        case .tdscdma:
            guard name.hasPrefix("TD-"), name.count == 4, let i = Array("ABCDEF").firstIndex(of: name.last!) else {
                return nil
            }
            self.init(rat, i + 1)
            return
        }
        guard name.hasPrefix(prefix), let n = Int(name.dropFirst(prefix.count)), n > 0, n < 100_000 else { return nil }
        self.init(rat, n)
    }

    public static func < (a: RadioBand, b: RadioBand) -> Bool {
        (CellRAT.allCases.firstIndex(of: a.rat)!, a.number) < (CellRAT.allCases.firstIndex(of: b.rat)!, b.number)
    }
}

/// Where the network is, as far as its MCC tells (ITU-T E.212 zones): decides between bands that share channels.
public enum BandRegion: String, Sendable, Hashable {
    /// ITU zones 3 and 7 (MCC 3xx: North America and the Caribbean; 7xx: Central and South America).
    case americas
    /// MCC 440, 441.
    case japan
    /// MCC 460.
    case china
    case other
    case unknown

    public init(mcc: String?) {
        guard let mcc, mcc.count == 3, let n = Int(mcc) else {
            self = .unknown
            return
        }
        switch n {
        case 440, 441: self = .japan
        case 460: self = .china
        case 300...399, 700...799: self = .americas
        default: self = .other
        }
    }
}

/// One band's channel numbers and what is needed to choose among bands that share them.
public struct BandChannels: Sendable, Equatable {
    public var band: RadioBand
    /// Downlink channel numbers (first...last), one range or several (GSM 900: 0-124 and 955-1023).
    public var ranges: [ClosedRange<Int>]
    /// Single channels outside `ranges` (UTRA additional UARFCNs).
    public var extra: [Int]
    /// The downlink width in MHz: the narrower band is the more specific allocation.
    public var widthMHz: Double
    /// Regions where the band is deployed when it shares channels with another; empty: anywhere.
    public var regions: Set<BandRegion>
    /// Downlink-only (supplementary downlink): never a primary cell, so the last choice.
    public var supplementary: Bool

    public init(
        _ band: RadioBand, _ ranges: [ClosedRange<Int>], extra: [Int] = [], widthMHz: Double,
        regions: Set<BandRegion> = [], supplementary: Bool = false
    ) {
        self.band = band
        self.ranges = ranges
        self.extra = extra
        self.widthMHz = widthMHz
        self.regions = regions
        self.supplementary = supplementary
    }

    public func contains(_ channel: Int) -> Bool {
        ranges.contains { $0.contains(channel) } || extra.contains(channel)
    }
}

public enum BandPlan {
    // MARK: E-UTRA (TS 36.101 Table 5.7.3-1)

    /// (band, F_DL_low in units of 100 kHz, N_Offs-DL, last N_DL). The first N_DL is N_Offs-DL.
    static let eutraRows: [(band: Int, fLow: Int, offset: Int, last: Int)] = [
        (1, 21100, 0, 599), (2, 19300, 600, 1199), (3, 18050, 1200, 1949), (4, 21100, 1950, 2399),
        (5, 8690, 2400, 2649), (6, 8750, 2650, 2749), (7, 26200, 2750, 3449), (8, 9250, 3450, 3799),
        (9, 18449, 3800, 4149), (10, 21100, 4150, 4749), (11, 14759, 4750, 4949), (12, 7290, 5010, 5179),
        (13, 7460, 5180, 5279), (14, 7580, 5280, 5379), (17, 7340, 5730, 5849), (18, 8600, 5850, 5999),
        (19, 8750, 6000, 6149), (20, 7910, 6150, 6449), (21, 14959, 6450, 6599), (22, 35100, 6600, 7399),
        (23, 21800, 7500, 7699), (24, 15250, 7700, 8039), (25, 19300, 8040, 8689), (26, 8590, 8690, 9039),
        (27, 8520, 9040, 9209), (28, 7580, 9210, 9659), (29, 7170, 9660, 9769), (30, 23500, 9770, 9869),
        (31, 4625, 9870, 9919), (32, 14520, 9920, 10359), (33, 19000, 36000, 36199), (34, 20100, 36200, 36349),
        (35, 18500, 36350, 36949), (36, 19300, 36950, 37549), (37, 19100, 37550, 37749), (38, 25700, 37750, 38249),
        (39, 18800, 38250, 38649), (40, 23000, 38650, 39649), (41, 24960, 39650, 41589), (42, 34000, 41590, 43589),
        (43, 36000, 43590, 45589), (44, 7030, 45590, 46589), (45, 14470, 46590, 46789), (46, 51500, 46790, 54539),
        (47, 58550, 54540, 55239), (48, 35500, 55240, 56739), (49, 35500, 56740, 58239), (50, 14320, 58240, 59089),
        (51, 14270, 59090, 59139), (52, 33000, 59140, 60139), (53, 24835, 60140, 60254), (54, 16700, 60255, 60304),
        (65, 21100, 65536, 66435), (66, 21100, 66436, 67335), (67, 7380, 67336, 67535), (68, 7530, 67536, 67835),
        (69, 25700, 67836, 68335), (70, 19950, 68336, 68585), (71, 6170, 68586, 68935), (72, 4610, 68936, 68985),
        (73, 4600, 68986, 69035), (74, 14750, 69036, 69465), (75, 14320, 69466, 70315), (76, 14270, 70316, 70365),
        (85, 7280, 70366, 70545), (87, 4200, 70546, 70595), (88, 4220, 70596, 70645), (103, 7570, 70646, 70655),
        (106, 9350, 70656, 70705),
    ]

    /// Supplementary-downlink E-UTRA bands (TS 36.101 Table 5.5-1, "FDD" with no uplink).
    static let eutraDownlinkOnly: Set<Int> = [29, 32, 67, 69, 75, 76]

    public static let eutra: [BandChannels] = eutraRows.map {
        BandChannels(
            RadioBand(.lte, $0.band), [$0.offset...$0.last], widthMHz: Double($0.last - $0.offset + 1) / 10,
            supplementary: eutraDownlinkOnly.contains($0.band))
    }

    /// The downlink carrier frequency of an EARFCN, MHz (TS 36.101 §5.7.3).
    public static func eutraFrequencyMHz(earfcn: Int) -> Double? {
        guard let row = eutraRows.first(where: { ($0.offset...$0.last).contains(earfcn) }) else { return nil }
        return (Double(row.fLow) + Double(earfcn - row.offset)) / 10
    }

    // MARK: NR (TS 38.101-1 / 38.101-2 Table 5.2-1, TS 38.104 §5.4.2.1)

    /// (band, downlink F_low MHz, F_high MHz, supplementary downlink, regions where it is preferred).
    static let nrRows: [(band: Int, low: Double, high: Double, sdl: Bool, regions: Set<BandRegion>)] = [
        (1, 2110, 2170, false, []), (2, 1930, 1990, false, [.americas]), (3, 1805, 1880, false, []),
        (5, 869, 894, false, []), (7, 2620, 2690, false, []), (8, 925, 960, false, []),
        (12, 729, 746, false, [.americas]), (13, 746, 756, false, [.americas]), (14, 758, 768, false, [.americas]),
        (18, 860, 875, false, [.japan]), (20, 791, 821, false, []), (24, 1525, 1559, false, [.americas]),
        (25, 1930, 1995, false, [.americas]), (26, 859, 894, false, [.americas]), (28, 758, 803, false, []),
        (29, 717, 728, true, [.americas]), (30, 2350, 2360, false, [.americas]), (34, 2010, 2025, false, []),
        (38, 2570, 2620, false, []), (39, 1880, 1920, false, [.china]), (40, 2300, 2400, false, []),
        (41, 2496, 2690, false, [.americas, .china, .japan]), (46, 5150, 5925, false, []),
        (47, 5855, 5925, false, []), (48, 3550, 3700, false, [.americas]), (50, 1432, 1517, false, []),
        (51, 1427, 1432, false, []), (53, 2483.5, 2495, false, [.americas]), (65, 2110, 2200, false, []),
        (66, 2110, 2200, false, [.americas]), (67, 738, 758, true, []), (70, 1995, 2020, false, [.americas]),
        (71, 617, 652, false, [.americas]), (74, 1475, 1518, false, [.japan]), (75, 1432, 1517, true, []),
        (76, 1427, 1432, true, []), (77, 3300, 4200, false, [.americas, .japan]), (78, 3300, 3800, false, []),
        (79, 4400, 5000, false, []), (85, 729, 746, false, [.americas]), (90, 2496, 2690, false, [.americas]),
        (91, 1427, 1432, false, []), (92, 1432, 1517, false, []), (93, 1427, 1432, false, []),
        (94, 1432, 1517, false, []), (96, 5925, 7125, false, [.americas]), (100, 919.4, 925, false, []),
        (101, 1900, 1910, false, []), (102, 5925, 6425, false, []), (104, 6425, 7125, false, []),
        (105, 612, 652, false, []), (106, 935, 940, false, [.americas]),
        // FR2 (TS 38.101-2)
        (257, 26500, 29500, false, []), (258, 24250, 27500, false, []), (259, 39500, 43500, false, []),
        (260, 37000, 40000, false, [.americas]), (261, 27500, 28350, false, [.americas]),
        (262, 47200, 48200, false, []), (263, 57000, 71000, false, []),
    ]

    /// The highest NR-ARFCN (TS 38.104 Table 5.4.2.1-1: 100 GHz).
    public static let nrARFCNMax = 3_279_165

    /// F_REF in MHz of an NR-ARFCN (TS 38.104 Table 5.4.2.1-1): 5 kHz steps up to 3 GHz, 15 kHz to 24.25 GHz,
    /// 60 kHz above.
    public static func nrFrequencyMHz(arfcn n: Int) -> Double? {
        switch n {
        case 0..<600_000: return Double(n) * 0.005
        case 600_000..<2_016_667: return 3000 + Double(n - 600_000) * 0.015
        case 2_016_667...nrARFCNMax: return 24250.08 + Double(n - 2_016_667) * 0.06
        default: return nil
        }
    }

    /// The lowest NR-ARFCN at or above `mhz` (the inverse of `nrFrequencyMHz`, rounded up onto the raster).
    public static func nrARFCN(atOrAbove mhz: Double) -> Int {
        let n: Double
        if mhz < 3000 {
            n = mhz / 0.005
        } else if mhz < 24250.08 {
            n = 600_000 + (mhz - 3000) / 0.015
        } else {
            n = 2_016_667 + (mhz - 24250.08) / 0.06
        }
        // Tolerate the float error of an exact raster point (3300 MHz is N = 620000, not 620000.0000001).
        return Int((n - 1e-6).rounded(.up))
    }

    /// The highest NR-ARFCN at or below `mhz`.
    public static func nrARFCN(atOrBelow mhz: Double) -> Int {
        let above = nrARFCN(atOrAbove: mhz)
        guard let f = nrFrequencyMHz(arfcn: above) else { return above - 1 }
        return f <= mhz + 1e-9 ? above : above - 1
    }

    public static let nr: [BandChannels] = nrRows.map {
        BandChannels(
            RadioBand(.nr, $0.band), [nrARFCN(atOrAbove: $0.low)...nrARFCN(atOrBelow: $0.high)],
            widthMHz: $0.high - $0.low, regions: $0.regions, supplementary: $0.sdl)
    }

    // MARK: UTRA FDD (TS 25.101 Tables 5.2, 5.2A)

    static func every25(_ first: Int, _ last: Int) -> [Int] { Array(stride(from: first, through: last, by: 25)) }

    public static let utra: [BandChannels] = [
        BandChannels(RadioBand(.umts, 1), [10562...10838], widthMHz: 60),
        BandChannels(RadioBand(.umts, 2), [9662...9938], extra: every25(412, 687), widthMHz: 60, regions: [.americas]),
        BandChannels(RadioBand(.umts, 3), [1162...1513], widthMHz: 75),
        BandChannels(RadioBand(.umts, 4), [1537...1738], extra: every25(1887, 2087), widthMHz: 45, regions: [.americas]),
        BandChannels(RadioBand(.umts, 5), [4357...4458], extra: [1007, 1012, 1032, 1037, 1062, 1087], widthMHz: 25),
        BandChannels(RadioBand(.umts, 6), [4387...4413], extra: [1037, 1062], widthMHz: 10, regions: [.japan]),
        BandChannels(RadioBand(.umts, 7), [2237...2563], extra: every25(2587, 2912), widthMHz: 70),
        BandChannels(RadioBand(.umts, 8), [2937...3088], widthMHz: 35),
        BandChannels(RadioBand(.umts, 9), [9237...9387], widthMHz: 35, regions: [.japan]),
        BandChannels(RadioBand(.umts, 10), [3112...3388], extra: every25(3412, 3687), widthMHz: 60, regions: [.americas]),
        BandChannels(RadioBand(.umts, 11), [3712...3787], widthMHz: 20, regions: [.japan]),
        BandChannels(RadioBand(.umts, 12), [3842...3903], extra: [3932, 3957, 3962, 3987, 3992], widthMHz: 17, regions: [.americas]),
        BandChannels(RadioBand(.umts, 13), [4017...4043], extra: [4067, 4092], widthMHz: 10, regions: [.americas]),
        BandChannels(RadioBand(.umts, 14), [4117...4143], extra: [4167, 4192], widthMHz: 10, regions: [.americas]),
        BandChannels(RadioBand(.umts, 19), [712...763], extra: [787, 812, 837], widthMHz: 15, regions: [.japan]),
        BandChannels(RadioBand(.umts, 20), [4512...4638], widthMHz: 30),
        BandChannels(RadioBand(.umts, 21), [862...912], widthMHz: 15, regions: [.japan]),
        BandChannels(RadioBand(.umts, 22), [4662...5038], widthMHz: 80),
        BandChannels(RadioBand(.umts, 25), [5112...5413], extra: every25(6292, 6592), widthMHz: 65, regions: [.americas]),
        BandChannels(RadioBand(.umts, 26), [5762...5913], widthMHz: 35, regions: [.americas]),
    ]

    // MARK: GSM (TS 45.005 §2)

    public static let gsm: [BandChannels] = [
        BandChannels(RadioBand(.gsm, 450), [259...293], widthMHz: 7.2),
        BandChannels(RadioBand(.gsm, 480), [306...340], widthMHz: 7.2),
        BandChannels(RadioBand(.gsm, 750), [438...511], widthMHz: 15),
        BandChannels(RadioBand(.gsm, 810), [350...425], widthMHz: 15),
        BandChannels(RadioBand(.gsm, 850), [128...251], widthMHz: 25),
        // P-GSM 1-124, E-GSM 0 and 975-1023, R-GSM 955-974: one band to a user.
        BandChannels(RadioBand(.gsm, 900), [0...124, 955...1023], widthMHz: 39),
        BandChannels(RadioBand(.gsm, 1800), [512...885], widthMHz: 75),
        BandChannels(RadioBand(.gsm, 1900), [512...810], widthMHz: 60, regions: [.americas]),
    ]

    // MARK: Lookup

    public static func table(_ rat: CellRAT) -> [BandChannels] {
        switch rat {
        case .gsm: return gsm
        case .umts: return utra
        case .lte: return eutra
        case .nr: return nr
        case .tdscdma: return []
        }
    }

    /// Every band whose downlink holds the channel.
    public static func candidates(_ rat: CellRAT, channel: Int) -> [RadioBand] {
        table(rat).filter { $0.contains(channel) }.map(\.band)
    }

    /// The band of a downlink channel, or nil when no band of the radio has it. Where several do, see the header.
    public static func band(_ rat: CellRAT, channel: Int, region: BandRegion = .unknown) -> RadioBand? {
        let hits = table(rat).filter { $0.contains(channel) }
        guard hits.count > 1 else { return hits.first?.band }
        func rank(_ b: BandChannels) -> (Int, Int, Double, Int) {
            let place: Int
            if b.regions.isEmpty {
                place = 1
            } else if b.regions.contains(region) {
                place = 0
            } else {
                place = 2
            }
            return (place, b.supplementary ? 1 : 0, b.widthMHz, b.band.number)
        }
        return hits.min(by: { rank($0) < rank($1) })?.band
    }

    // MARK: QMI active band (QmiNasActiveBand)

    /// The band a QMI modem names (RF Band Information, LTE CPHY CA Info), or nil for CDMA band classes and values
    /// this table does not know.
    public static func band(qmiActiveBand v: Int) -> RadioBand? {
        switch v {
        case 40: return RadioBand(.gsm, 450)
        case 41: return RadioBand(.gsm, 480)
        case 42: return RadioBand(.gsm, 750)
        case 43: return RadioBand(.gsm, 850)
        case 44, 45, 46: return RadioBand(.gsm, 900)
        case 47: return RadioBand(.gsm, 1800)
        case 48: return RadioBand(.gsm, 1900)
        case 80...88: return RadioBand(.umts, v - 79)  // 2100 (I) … 1700 Japan (IX)
        case 90: return RadioBand(.umts, 11)  // 1500 Japan
        case 91: return RadioBand(.umts, 19)  // 850 Japan
        case 120...133: return RadioBand(.lte, v - 119)  // E-UTRA 1 … 14
        case 134: return RadioBand(.lte, 17)
        case 135...142: return RadioBand(.lte, v - 102)  // 33 … 40
        case 143...146: return RadioBand(.lte, v - 125)  // 18 … 21
        case 147: return RadioBand(.lte, 24)
        case 148: return RadioBand(.lte, 25)
        case 149...151: return RadioBand(.lte, v - 108)  // 41 … 43
        case 152: return RadioBand(.lte, 23)
        case 153: return RadioBand(.lte, 26)
        case 154: return RadioBand(.lte, 32)
        case 158: return RadioBand(.lte, 28)
        case 159: return RadioBand(.lte, 29)
        case 160: return RadioBand(.lte, 30)
        case 161: return RadioBand(.lte, 66)
        case 162: return RadioBand(.lte, 250)
        case 163: return RadioBand(.lte, 46)
        case 164: return RadioBand(.lte, 27)
        case 165: return RadioBand(.lte, 31)
        case 166: return RadioBand(.lte, 47)
        case 167: return RadioBand(.lte, 48)
        case 168: return RadioBand(.lte, 71)
        case 200...205: return RadioBand(.tdscdma, v - 199)
        default: break
        }
        let nrBands: [Int: Int] = [
            250: 1, 251: 2, 252: 3, 253: 5, 254: 7, 255: 8, 256: 20, 257: 28, 258: 38, 259: 41, 260: 50, 261: 51,
            262: 66, 263: 70, 264: 71, 265: 74, 266: 75, 267: 76, 268: 77, 269: 78, 270: 79, 271: 80, 272: 81,
            273: 82, 274: 83, 275: 84, 276: 85, 277: 257, 278: 258, 279: 259, 280: 260, 281: 261, 282: 12, 283: 25,
            284: 34, 285: 39, 286: 40, 287: 65, 288: 86, 289: 48, 290: 14, 291: 13, 292: 18, 293: 26, 294: 30,
            295: 29, 296: 53, 297: 46, 298: 91, 299: 92, 300: 93, 301: 94,
        ]
        return nrBands[v].map { RadioBand(.nr, $0) }
    }

    /// The QmiNasActiveBand value of a band (what a simulated modem sends), or nil when QMI has none for it.
    public static func qmiActiveBand(_ band: RadioBand) -> Int? {
        for v in 40...301 where BandPlan.band(qmiActiveBand: v) == band {
            // GSM 900 has three values (E/P/R); the primary band is the usual answer.
            if band == RadioBand(.gsm, 900) { return 45 }
            return v
        }
        return nil
    }
}
