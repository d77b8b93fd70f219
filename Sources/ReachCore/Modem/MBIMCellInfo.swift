// MBIM cell readings: MS Basic Connect Extensions Base Stations Info (CID 11), in its MBIMEx 1.0/2.0 layout or the
// 3.0 one with NR serving and neighbour cells, and the rules that turn it into a serving cell, carriers and neighbours.
//
// Layout: libmbim `data/mbim-service-ms-basic-connect-extensions{,-v3}.json` (1.28.2). Unknown values are 0xFFFFFFFF
// (a signed -1); UMTS RSCP 0 and Ec/No 1 mean unknown too; NR RSRP/RSRQ/SINR are coded offsets of -156 dBm, -43 dB
// and -23 dB. These are ModemManager's readings (`base_stations_info_query_ready` in mm-broadband-modem-mbim.c).
// MBIM names no band and no secondary carrier: bands come from the channel numbers, and the carriers are known only
// under EN-DC (the LTE serving cell and the NR serving cell).

public struct MBIMBaseStations: Sendable, Equatable {
    public struct GSMCell: Sendable, Equatable {
        public var lac: UInt32
        public var cellID: UInt32
        public var arfcn: UInt32
        public var bsic: UInt32
        public var rxLevel: UInt32
        public init(lac: UInt32, cellID: UInt32, arfcn: UInt32, bsic: UInt32, rxLevel: UInt32) {
            self.lac = lac
            self.cellID = cellID
            self.arfcn = arfcn
            self.bsic = bsic
            self.rxLevel = rxLevel
        }
    }

    public struct UMTSCell: Sendable, Equatable {
        public var lac: UInt32
        public var cellID: UInt32
        public var uarfcn: UInt32
        public var psc: UInt32
        public var rscp: Int32
        public var ecno: Int32
        public init(lac: UInt32, cellID: UInt32, uarfcn: UInt32, psc: UInt32, rscp: Int32, ecno: Int32) {
            self.lac = lac
            self.cellID = cellID
            self.uarfcn = uarfcn
            self.psc = psc
            self.rscp = rscp
            self.ecno = ecno
        }
    }

    public struct LTECell: Sendable, Equatable {
        public var cellID: UInt32
        public var earfcn: UInt32
        public var pci: UInt32
        public var tac: UInt32
        public var rsrp: Int32
        public var rsrq: Int32
        public init(cellID: UInt32, earfcn: UInt32, pci: UInt32, tac: UInt32, rsrp: Int32, rsrq: Int32) {
            self.cellID = cellID
            self.earfcn = earfcn
            self.pci = pci
            self.tac = tac
            self.rsrp = rsrp
            self.rsrq = rsrq
        }
    }

    /// An NR serving cell (MbimCellInfoServingNr) or neighbour (MbimCellInfoNeighboringNr, which has no NR-ARFCN
    /// and gives the cell id as a string).
    public struct NRCell: Sendable, Equatable {
        public var nci: UInt64?
        public var pci: UInt32
        public var nrarfcn: UInt32?
        public var tac: UInt32
        public var rsrp: UInt32
        public var rsrq: UInt32
        public var sinr: UInt32
        public init(nci: UInt64?, pci: UInt32, nrarfcn: UInt32?, tac: UInt32, rsrp: UInt32, rsrq: UInt32, sinr: UInt32) {
            self.nci = nci
            self.pci = pci
            self.nrarfcn = nrarfcn
            self.tac = tac
            self.rsrp = rsrp
            self.rsrq = rsrq
            self.sinr = sinr
        }
    }

    public var gsmServing: GSMCell?
    public var umtsServing: UMTSCell?
    public var lteServing: LTECell?
    public var nrServing: [NRCell]
    public var gsmNeighbours: [GSMCell]
    public var umtsNeighbours: [UMTSCell]
    public var lteNeighbours: [LTECell]
    public var nrNeighbours: [NRCell]

    public init(
        gsmServing: GSMCell? = nil, umtsServing: UMTSCell? = nil, lteServing: LTECell? = nil, nrServing: [NRCell] = [],
        gsmNeighbours: [GSMCell] = [], umtsNeighbours: [UMTSCell] = [], lteNeighbours: [LTECell] = [],
        nrNeighbours: [NRCell] = []
    ) {
        self.gsmServing = gsmServing
        self.umtsServing = umtsServing
        self.lteServing = lteServing
        self.nrServing = nrServing
        self.gsmNeighbours = gsmNeighbours
        self.umtsNeighbours = umtsNeighbours
        self.lteNeighbours = lteNeighbours
        self.nrNeighbours = nrNeighbours
    }

    static let unknown: UInt32 = 0xFFFF_FFFF

    static func value(_ v: UInt32) -> Int? { v == unknown ? nil : Int(v) }
    static func signed(_ v: Int32) -> Double? { v == -1 ? nil : Double(v) }
    static func offset(_ v: UInt32, _ by: Double) -> Double? { v == unknown ? nil : Double(v) + by }

    /// Serving cell, carriers (EN-DC only) and neighbours for the technologies in use on network `plmn`.
    public func readings(rats: AccessTechnologies, plmn: PLMN?) -> CellReadings {
        let region = BandRegion(mcc: plmn?.mcc)
        func band(_ rat: CellRAT, _ channel: Int?) -> RadioBand? {
            channel.flatMap { BandPlan.band(rat, channel: $0, region: region) }
        }
        var out = CellReadings()
        let rat: CellRAT? = CellRAT.serving(rats)
            ?? (lteServing != nil ? .lte : !nrServing.isEmpty ? .nr : umtsServing != nil ? .umts : gsmServing != nil ? .gsm : nil)
        var cell: ServingCell?
        switch rat {
        case .lte?:
            if let l = lteServing {
                cell = ServingCell(
                    rat: .lte, channel: Self.value(l.earfcn), physicalID: Self.value(l.pci), tac: Self.value(l.tac),
                    cellID: Self.value(l.cellID).map(UInt64.init))
            }
        case .nr?:
            if let n = nrServing.first {
                cell = ServingCell(
                    rat: .nr, channel: n.nrarfcn.flatMap(Self.value), physicalID: Self.value(n.pci),
                    tac: Self.value(n.tac), cellID: n.nci.flatMap { $0 == UInt64.max ? nil : $0 })
            }
        case .umts?:
            if let u = umtsServing {
                cell = ServingCell(
                    rat: .umts, channel: Self.value(u.uarfcn), physicalID: Self.value(u.psc), lac: Self.value(u.lac),
                    cellID: Self.value(u.cellID).map(UInt64.init))
            }
        case .gsm?:
            if let g = gsmServing {
                cell = ServingCell(
                    rat: .gsm, channel: Self.value(g.arfcn), physicalID: Self.value(g.bsic), lac: Self.value(g.lac),
                    cellID: Self.value(g.cellID).map(UInt64.init))
            }
        default:
            break
        }
        if var c = cell {
            c.band = band(c.rat, c.channel)
            c.bandFromChannel = c.band != nil
            cell = c
        }
        out.cell = cell
        if rats.isNonStandalone5G, let s = cell, s.rat == .lte, let nr = nrServing.first {
            let channel = nr.nrarfcn.flatMap(Self.value)
            let nrBand = band(.nr, channel)
            out.carriers = [
                ComponentCarrier(pcell: s),
                ComponentCarrier(
                    role: .pscell, rat: .nr, band: nrBand, bandFromChannel: nrBand != nil, channel: channel,
                    physicalID: Self.value(nr.pci)),
            ]
        }
        var neighbours: [NeighbourCell] = []
        for l in lteNeighbours {
            let ch = Self.value(l.earfcn)
            neighbours.append(NeighbourCell(
                rat: .lte, channel: ch, band: band(.lte, ch), physicalID: Self.value(l.pci),
                signal: SignalMeasurement(rsrp: Self.signed(l.rsrp), rsrq: Self.signed(l.rsrq))))
        }
        for n in nrNeighbours {
            let ch = n.nrarfcn.flatMap(Self.value)
            neighbours.append(NeighbourCell(
                rat: .nr, channel: ch, band: band(.nr, ch), physicalID: Self.value(n.pci),
                signal: SignalMeasurement(
                    rsrp: Self.offset(n.rsrp, -156), rsrq: Self.offset(n.rsrq, -43), sinr: Self.offset(n.sinr, -23))))
        }
        for u in umtsNeighbours {
            let ch = Self.value(u.uarfcn)
            neighbours.append(NeighbourCell(
                rat: .umts, channel: ch, band: band(.umts, ch), physicalID: Self.value(u.psc),
                signal: SignalMeasurement(rscp: u.rscp == 0 ? nil : Double(u.rscp), ecio: u.ecno == 1 ? nil : Double(u.ecno)),
                lac: Self.value(u.lac), cellID: Self.value(u.cellID).map(UInt64.init)))
        }
        for g in gsmNeighbours {
            let ch = Self.value(g.arfcn)
            neighbours.append(NeighbourCell(
                rat: .gsm, channel: ch, band: band(.gsm, ch), physicalID: Self.value(g.bsic),
                signal: SignalMeasurement(rssi: Self.value(g.rxLevel).flatMap(GSMRxLevel.dBm)),
                lac: Self.value(g.lac), cellID: Self.value(g.cellID).map(UInt64.init)))
        }
        out.neighbours = neighbours
        return out
    }
}

// MARK: - Decoding the information buffer

/// Base Stations Info read from its information buffer. libmbim 1.28 (Debian 12) steps 0 bytes between the elements
/// of an "ms-struct-array" whose struct holds a string (every cell list here: each starts with ProviderId), so with
/// two neighbours or more it returns the first one again and again; libmbim fixed it in 1.31 (commit 07a8dff,
/// "assume extra_bytes_read is always needed for ms-struct-array elements"). This reader does what the fixed one
/// does: elements follow one another, each followed by the strings it references.
public enum MBIMBaseStationsDecoder {
    public struct Malformed: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    struct Reader {
        let bytes: [UInt8]

        func u32(_ at: Int) throws(Malformed) -> UInt32 {
            guard at >= 0, at + 4 <= bytes.count else {
                throw Malformed(description: "Base Stations Info: field at byte \(at) is past the end (\(bytes.count) bytes)")
            }
            return UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }

        func i32(_ at: Int) throws(Malformed) -> Int32 { Int32(bitPattern: try u32(at)) }

        func u64(_ at: Int) throws(Malformed) -> UInt64 { UInt64(try u32(at)) | UInt64(try u32(at + 4)) << 32 }

        /// A UTF-16LE string referenced by an (offset, size) pair at `at`, its offset counted from `base`; and the
        /// end of its (4-byte padded) data.
        func string(_ at: Int, base: Int) throws(Malformed) -> (String?, end: Int) {
            let offset = Int(try u32(at)), size = Int(try u32(at + 4))
            guard offset != 0, size != 0 else { return (nil, 0) }
            let start = base + offset
            guard size % 2 == 0, start + size <= bytes.count else {
                throw Malformed(description: "Base Stations Info: string at byte \(start) (\(size) bytes) is past the end")
            }
            var units: [UInt16] = []
            for i in stride(from: start, to: start + size, by: 2) { units.append(UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8) }
            return (String(decoding: units, as: UTF16.self), start + (size + 3) / 4 * 4)
        }
    }

    /// The structs of an array whose (offset, size) pair is at `at`: `fixed` bytes each, plus the strings that
    /// follow each one; `strings` are the positions of its string pairs within the struct.
    static func array<T>(
        _ r: Reader, pairAt at: Int, fixed: Int, strings: [Int], _ read: (Int) throws(Malformed) -> T
    ) throws(Malformed) -> [T] {
        let offset = Int(try r.u32(at))
        guard offset != 0 else { return [] }
        let count = Int(try r.u32(offset))
        guard count <= 256 else { throw Malformed(description: "Base Stations Info: \(count) cells in one list") }
        var out: [T] = []
        var start = offset + 4
        for _ in 0..<count {
            out.append(try read(start))
            var end = start + fixed
            for s in strings { end = max(end, try r.string(start + s, base: start).end) }
            start = end
        }
        return out
    }

    /// The serving cell whose (offset, size) pair is at `at`, or nil when the pair is empty.
    static func single<T>(_ r: Reader, pairAt at: Int, _ read: (Int) throws(Malformed) -> T) throws(Malformed) -> T? {
        let offset = Int(try r.u32(at))
        return offset == 0 ? nil : try read(offset)
    }

    /// `v3`: the MBIMEx 3.0 layout (SystemSubType after SystemType, NR lists at the end).
    public static func decode(_ bytes: [UInt8], v3: Bool) throws(Malformed) -> MBIMBaseStations {
        let r = Reader(bytes: bytes)
        let pairs = v3 ? 8 : 4  // the first (offset, size) pair
        func pair(_ i: Int) -> Int { pairs + 8 * i }
        var out = MBIMBaseStations()
        out.gsmServing = try single(r, pairAt: pair(0)) { (s) throws(Malformed) in
            MBIMBaseStations.GSMCell(
                lac: try r.u32(s + 8), cellID: try r.u32(s + 12), arfcn: try r.u32(s + 20), bsic: try r.u32(s + 24),
                rxLevel: try r.u32(s + 28))
        }
        out.umtsServing = try single(r, pairAt: pair(1)) { (s) throws(Malformed) in
            MBIMBaseStations.UMTSCell(
                lac: try r.u32(s + 8), cellID: try r.u32(s + 12), uarfcn: try r.u32(s + 28), psc: try r.u32(s + 32),
                rscp: try r.i32(s + 36), ecno: try r.i32(s + 40))
        }
        out.lteServing = try single(r, pairAt: pair(3)) { (s) throws(Malformed) in
            MBIMBaseStations.LTECell(
                cellID: try r.u32(s + 8), earfcn: try r.u32(s + 12), pci: try r.u32(s + 16), tac: try r.u32(s + 20),
                rsrp: try r.i32(s + 24), rsrq: try r.i32(s + 28))
        }
        out.gsmNeighbours = try array(r, pairAt: pair(4), fixed: 28, strings: [0]) { (s) throws(Malformed) in
            MBIMBaseStations.GSMCell(
                lac: try r.u32(s + 8), cellID: try r.u32(s + 12), arfcn: try r.u32(s + 16), bsic: try r.u32(s + 20),
                rxLevel: try r.u32(s + 24))
        }
        out.umtsNeighbours = try array(r, pairAt: pair(5), fixed: 36, strings: [0]) { (s) throws(Malformed) in
            MBIMBaseStations.UMTSCell(
                lac: try r.u32(s + 8), cellID: try r.u32(s + 12), uarfcn: try r.u32(s + 16), psc: try r.u32(s + 20),
                rscp: try r.i32(s + 24), ecno: try r.i32(s + 28))
        }
        out.lteNeighbours = try array(r, pairAt: pair(7), fixed: 32, strings: [0]) { (s) throws(Malformed) in
            MBIMBaseStations.LTECell(
                cellID: try r.u32(s + 8), earfcn: try r.u32(s + 12), pci: try r.u32(s + 16), tac: try r.u32(s + 20),
                rsrp: try r.i32(s + 24), rsrq: try r.i32(s + 28))
        }
        guard v3 else { return out }
        out.nrServing = try array(r, pairAt: pair(9), fixed: 48, strings: [0]) { (s) throws(Malformed) in
            MBIMBaseStations.NRCell(
                nci: try r.u64(s + 8), pci: try r.u32(s + 16), nrarfcn: try r.u32(s + 20), tac: try r.u32(s + 24),
                rsrp: try r.u32(s + 28), rsrq: try r.u32(s + 32), sinr: try r.u32(s + 36))
        }
        out.nrNeighbours = try array(r, pairAt: pair(10), fixed: 40, strings: [4, 12]) { (s) throws(Malformed) in
            MBIMBaseStations.NRCell(
                nci: try r.string(s + 12, base: s).0.flatMap { UInt64($0, radix: 16) }, pci: try r.u32(s + 20),
                nrarfcn: nil, tac: try r.u32(s + 24), rsrp: try r.u32(s + 28), rsrq: try r.u32(s + 32),
                sinr: try r.u32(s + 36))
        }
        return out
    }
}
