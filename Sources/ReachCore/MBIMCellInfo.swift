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
