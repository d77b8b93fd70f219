// QMI cell readings, copied out of NAS Get Cell Location Info (0x0043), Get RF Band Information (0x0031) and Get LTE
// CPHY CA Info (0x00AC), and the rules that turn them into a serving cell, carriers and neighbours.
//
// Layouts and units: libqmi `data/qmi-service-nas.json` (1.32.2). LTE and NR5G measurements are in 0.1 dB (qmicli and
// ModemManager's `get_cell_info_ready` scale them by 0.1); UMTS Info v2 RSCP/Ec/Io are whole dBm/dB; a GERAN RX level
// is the TS 45.008 §8.1.4 code (0 below -110 dBm … 63 above -48 dBm). The serving LTE cell is the element of the
// intra-frequency list whose PCI is the "Serving Cell ID", as ModemManager takes it. 0xFFFFFFFF (GERAN cell id) and
// 0xFFFF (UMTS cell id) mean "unavailable", as qmicli prints them.

/// NAS Get Cell Location Info. Absent TLVs are nil.
public struct QMICellLocationInfo: Sendable, Equatable {
    public struct GERANCell: Sendable, Equatable {
        public var cellID: UInt32
        public var lac: UInt16
        public var arfcn: UInt16
        public var bsic: UInt8
        public var rxLevel: UInt16
        public init(cellID: UInt32, lac: UInt16, arfcn: UInt16, bsic: UInt8, rxLevel: UInt16) {
            self.cellID = cellID
            self.lac = lac
            self.arfcn = arfcn
            self.bsic = bsic
            self.rxLevel = rxLevel
        }
    }

    /// TLV 0x10: the serving GSM cell and its neighbours.
    public struct GERAN: Sendable, Equatable {
        public var serving: GERANCell
        public var neighbours: [GERANCell]
        public init(serving: GERANCell, neighbours: [GERANCell] = []) {
            self.serving = serving
            self.neighbours = neighbours
        }
    }

    public struct UMTSCell: Sendable, Equatable {
        public var uarfcn: UInt16
        public var psc: UInt16
        public var rscp: Int16
        public var ecio: Int16
        public init(uarfcn: UInt16, psc: UInt16, rscp: Int16, ecio: Int16) {
            self.uarfcn = uarfcn
            self.psc = psc
            self.rscp = rscp
            self.ecio = ecio
        }
    }

    public struct GERANNeighbour: Sendable, Equatable {
        public var arfcn: UInt16
        public var rssi: Int16
        public init(arfcn: UInt16, rssi: Int16) {
            self.arfcn = arfcn
            self.rssi = rssi
        }
    }

    /// TLV 0x11: the serving UMTS cell, its neighbours and GSM neighbours.
    public struct UMTS: Sendable, Equatable {
        public var cellID: UInt16
        public var lac: UInt16
        public var serving: UMTSCell
        public var neighbours: [UMTSCell]
        public var geranNeighbours: [GERANNeighbour]
        public init(
            cellID: UInt16, lac: UInt16, serving: UMTSCell, neighbours: [UMTSCell] = [],
            geranNeighbours: [GERANNeighbour] = []
        ) {
            self.cellID = cellID
            self.lac = lac
            self.serving = serving
            self.neighbours = neighbours
            self.geranNeighbours = geranNeighbours
        }
    }

    /// An LTE cell of the intra- or inter-frequency lists; measures in 0.1 dB.
    public struct LTECell: Sendable, Equatable {
        public var pci: UInt16
        public var rsrq: Int16
        public var rsrp: Int16
        public var rssi: Int16
        public init(pci: UInt16, rsrq: Int16, rsrp: Int16, rssi: Int16) {
            self.pci = pci
            self.rsrq = rsrq
            self.rsrp = rsrp
            self.rssi = rssi
        }
    }

    /// TLV 0x13: the serving LTE cell's identity and the cells on its frequency (itself included).
    public struct LTEIntra: Sendable, Equatable {
        public var ueIdle: Bool
        public var tac: UInt16
        public var globalCellID: UInt32
        public var earfcn: UInt16
        public var servingPCI: UInt16
        public var cells: [LTECell]
        public init(ueIdle: Bool, tac: UInt16, globalCellID: UInt32, earfcn: UInt16, servingPCI: UInt16, cells: [LTECell]) {
            self.ueIdle = ueIdle
            self.tac = tac
            self.globalCellID = globalCellID
            self.earfcn = earfcn
            self.servingPCI = servingPCI
            self.cells = cells
        }
    }

    /// TLV 0x14: one other LTE frequency and its cells.
    public struct LTEFrequency: Sendable, Equatable {
        public var earfcn: UInt16
        public var cells: [LTECell]
        public init(earfcn: UInt16, cells: [LTECell]) {
            self.earfcn = earfcn
            self.cells = cells
        }
    }

    /// TLV 0x15: a GSM cell seen from LTE; RSSI in 0.1 dB.
    public struct LTENeighbourGSM: Sendable, Equatable {
        public var arfcn: UInt16
        public var band1900: Bool
        public var bsic: UInt8?
        public var rssi: Int16
        public init(arfcn: UInt16, band1900: Bool, bsic: UInt8?, rssi: Int16) {
            self.arfcn = arfcn
            self.band1900 = band1900
            self.bsic = bsic
            self.rssi = rssi
        }
    }

    /// TLV 0x16: a UMTS cell seen from LTE; CPICH RSCP and Ec/No in 0.1 dB.
    public struct LTENeighbourWCDMA: Sendable, Equatable {
        public var uarfcn: UInt16
        public var psc: UInt16
        public var rscp: Int16
        public var ecno: Int16
        public init(uarfcn: UInt16, psc: UInt16, rscp: Int16, ecno: Int16) {
            self.uarfcn = uarfcn
            self.psc = psc
            self.rscp = rscp
            self.ecno = ecno
        }
    }

    /// TLV 0x2F: the NR5G cell (the SA serving cell, or the EN-DC secondary cell); measures in 0.1 dB.
    public struct NR5GCell: Sendable, Equatable {
        /// 3 bytes, most significant first.
        public var tac: [UInt8]
        public var globalCellID: UInt64
        public var pci: UInt16
        public var rsrq: Int16
        public var rsrp: Int16
        public var snr: Int16
        public init(tac: [UInt8], globalCellID: UInt64, pci: UInt16, rsrq: Int16, rsrp: Int16, snr: Int16) {
            self.tac = tac
            self.globalCellID = globalCellID
            self.pci = pci
            self.rsrq = rsrq
            self.rsrp = rsrp
            self.snr = snr
        }
    }

    public var geran: GERAN?
    public var umts: UMTS?
    /// TLV 0x17: the 28-bit UTRAN cell id (RNC id and cell id), where TLV 0x11 has only 16 bits.
    public var umtsCellID: UInt32?
    public var lteIntra: LTEIntra?
    public var lteInter: [LTEFrequency]?
    public var lteNeighbourGSM: [LTENeighbourGSM]?
    public var lteNeighbourWCDMA: [LTENeighbourWCDMA]?
    /// TLV 0x2E.
    public var nr5gARFCN: UInt32?
    public var nr5gCell: NR5GCell?

    public init() {}
}

/// NAS Get RF Band Information: the band and channel per radio interface in use (TLV 0x01, or 0x11 with 32-bit
/// channels), and the downlink bandwidth (TLV 0x12).
public struct QMIRFBandInfo: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// QmiNasRadioInterface.
        public var radioInterface: Int
        /// QmiNasActiveBand.
        public var band: Int
        public var channel: UInt32
        public init(radioInterface: Int, band: Int, channel: UInt32) {
            self.radioInterface = radioInterface
            self.band = band
            self.channel = channel
        }
    }

    public var entries: [Entry]
    /// QmiNasRadioInterface → QmiNasDLBandwidth.
    public var bandwidths: [Int: Int]

    public init(entries: [Entry] = [], bandwidths: [Int: Int] = [:]) {
        self.entries = entries
        self.bandwidths = bandwidths
    }

    public func entry(_ rat: CellRAT) -> Entry? { entries.first { $0.radioInterface == rat.qmiRadioInterface } }
}

/// NAS Get LTE CPHY CA Info.
public struct QMICarrierAggregation: Sendable, Equatable {
    public struct Carrier: Sendable, Equatable {
        public var pci: UInt16
        public var channel: UInt16
        /// QmiNasDLBandwidth.
        public var bandwidth: UInt32
        /// QmiNasActiveBand.
        public var band: UInt16
        /// QmiNasScellState (SCells only).
        public var state: UInt32?
        public init(pci: UInt16, channel: UInt16, bandwidth: UInt32, band: UInt16, state: UInt32? = nil) {
            self.pci = pci
            self.channel = channel
            self.bandwidth = bandwidth
            self.band = band
            self.state = state
        }
    }

    /// TLV 0x13.
    public var pcell: Carrier?
    /// TLV 0x15 (several SCells, newer firmware), else TLV 0x12 (one SCell; a zero channel means none, as uqmi
    /// reads it).
    public var scells: [Carrier]

    public init(pcell: Carrier? = nil, scells: [Carrier] = []) {
        self.pcell = pcell
        self.scells = scells
    }
}

extension CellRAT {
    /// QmiNasRadioInterface of the radio.
    public var qmiRadioInterface: Int {
        switch self {
        case .gsm: return 4
        case .umts: return 5
        case .lte: return 8
        case .tdscdma: return 9
        case .nr: return 12
        }
    }

    /// The radio whose cell serves a set of technologies: the LTE anchor under NSA, NR under SA.
    public static func serving(_ rats: AccessTechnologies) -> CellRAT? {
        if rats.isNonStandalone5G { return .lte }
        switch rats.primary?.signalFamily {
        case .nr: return .nr
        case .lte: return .lte
        case .wcdma: return rats.contains(.tdScdma) ? .tdscdma : .umts
        case .gsm: return .gsm
        case .cdma, nil: return nil
        }
    }
}

public enum QMIBandwidth {
    /// QmiNasDLBandwidth → MHz (libqmi `qmi-enums-nas.h`: 0-5 LTE 1.4-20 MHz; 6-19 and 24 NR; 20 GSM 0.2, 21
    /// TD-SCDMA 1.6, 22-23 WCDMA 5/10). nil for unknown values (0xFF).
    public static func megahertz(_ v: Int) -> Double? {
        let table: [Double] = [
            1.4, 3, 5, 10, 15, 20, 5, 10, 15, 20, 25, 30, 40, 50, 60, 80, 90, 100, 200, 400, 0.2, 1.6, 5, 10, 70,
        ]
        return table.indices.contains(v) ? table[v] : nil
    }

    /// The QmiNasDLBandwidth value of an LTE (0-5) or NR (6-19, 24) bandwidth, for the simulator.
    public static func code(megahertz: Double, nr: Bool) -> Int? {
        let range = nr ? Array(6...19) + [24] : Array(0...5)
        return range.first { Self.megahertz($0) == megahertz }
    }
}

/// The latest of each QMI cell reading of one modem. nil: not read, or the modem does not know the request.
public struct QMICellSources: Sendable, Equatable {
    public var location: QMICellLocationInfo?
    public var rfBands: QMIRFBandInfo?
    public var carrierAggregation: QMICarrierAggregation?

    public init(
        location: QMICellLocationInfo? = nil, rfBands: QMIRFBandInfo? = nil,
        carrierAggregation: QMICarrierAggregation? = nil
    ) {
        self.location = location
        self.rfBands = rfBands
        self.carrierAggregation = carrierAggregation
    }

    /// Serving cell, carriers and neighbours for the technologies in use (`rats`) on network `plmn` (its MCC decides
    /// between bands that share channels).
    public func readings(rats: AccessTechnologies, plmn: PLMN?) -> CellReadings {
        let region = BandRegion(mcc: plmn?.mcc)
        var out = CellReadings()
        out.cell = servingCell(rats: rats, region: region)
        out.carriers = carriers(rats: rats, serving: out.cell, region: region)
        out.neighbours = neighbours(region: region, serving: out.cell)
        return out
    }

    /// A band from the modem (QmiNasActiveBand) when it names one of this radio, else from the channel.
    static func band(_ rat: CellRAT, qmi: Int?, channel: Int?, region: BandRegion) -> (RadioBand?, Bool) {
        if let qmi, let b = BandPlan.band(qmiActiveBand: qmi), b.rat == rat { return (b, false) }
        guard let channel, let b = BandPlan.band(rat, channel: channel, region: region) else { return (nil, false) }
        return (b, true)
    }

    func servingCell(rats: AccessTechnologies, region: BandRegion) -> ServingCell? {
        let loc = location ?? QMICellLocationInfo()
        let rat: CellRAT?
        if let r = CellRAT.serving(rats) {
            rat = r
        } else if loc.lteIntra != nil {
            rat = .lte
        } else if loc.nr5gCell != nil {
            rat = .nr
        } else if loc.umts != nil {
            rat = .umts
        } else if loc.geran != nil {
            rat = .gsm
        } else {
            rat = rfBands?.entries.compactMap { e in CellRAT.allCases.first { $0.qmiRadioInterface == e.radioInterface } }.first
        }
        guard let rat else { return nil }
        var cell = ServingCell(rat: rat)
        var known = false
        switch rat {
        case .lte:
            if let l = loc.lteIntra {
                cell.channel = Int(l.earfcn)
                cell.physicalID = Int(l.servingPCI)
                cell.tac = Int(l.tac)
                cell.cellID = l.globalCellID == 0xFFFF_FFFF ? nil : UInt64(l.globalCellID)
                known = true
            }
        case .nr:
            if let n = loc.nr5gCell {
                cell.physicalID = Int(n.pci)
                cell.tac = n.tac.count == 3 ? n.tac.reduce(0) { $0 << 8 | Int($1) } : nil
                cell.cellID = n.globalCellID
                known = true
            }
            if let a = loc.nr5gARFCN {
                cell.channel = Int(a)
                known = true
            }
        case .umts:
            if let u = loc.umts {
                cell.channel = Int(u.serving.uarfcn)
                cell.physicalID = Int(u.serving.psc)
                cell.lac = Int(u.lac)
                if let full = loc.umtsCellID, full != 0xFFFF_FFFF {
                    cell.cellID = UInt64(full)
                } else if u.cellID != 0xFFFF {
                    cell.cellID = UInt64(u.cellID)
                }
                known = true
            }
        case .gsm:
            if let g = loc.geran {
                cell.channel = Int(g.serving.arfcn)
                cell.physicalID = Int(g.serving.bsic)
                if g.serving.cellID != 0xFFFF_FFFF {
                    cell.cellID = UInt64(g.serving.cellID)
                    cell.lac = Int(g.serving.lac)
                }
                known = true
            }
        case .tdscdma:
            break
        }
        let rf = rfBands?.entry(rat)
        if let rf {
            // RF Band Information names the channel too; the cell list's is kept when both are given.
            if cell.channel == nil { cell.channel = Int(rf.channel) }
            known = true
        }
        if rat == .lte, let p = carrierAggregation?.pcell {
            // The serving cell is the PCell (TS 36.331 §3.1): CA Info names its channel and PCI when Cell Location
            // Info did not answer (refused by the firmware, or not asked).
            if cell.channel == nil { cell.channel = Int(p.channel) }
            if cell.physicalID == nil { cell.physicalID = Int(p.pci) }
            known = true
        }
        var qmiBand = rf?.band
        if qmiBand == nil, rat == .lte, let p = carrierAggregation?.pcell { qmiBand = Int(p.band) }
        (cell.band, cell.bandFromChannel) = Self.band(rat, qmi: qmiBand, channel: cell.channel, region: region)
        if let bw = rfBands?.bandwidths[rat.qmiRadioInterface] {
            cell.bandwidthMHz = QMIBandwidth.megahertz(bw)
        } else if rat == .lte, let p = carrierAggregation?.pcell {
            cell.bandwidthMHz = QMIBandwidth.megahertz(Int(p.bandwidth))
        }
        return known ? cell : nil
    }

    func carriers(rats: AccessTechnologies, serving: ServingCell?, region: BandRegion) -> [ComponentCarrier]? {
        var list: [ComponentCarrier]?
        if let ca = carrierAggregation {
            var pcell: ComponentCarrier
            if let p = ca.pcell {
                pcell = ComponentCarrier(
                    role: .pcell, rat: .lte, channel: Int(p.channel), physicalID: Int(p.pci),
                    bandwidthMHz: QMIBandwidth.megahertz(Int(p.bandwidth)))
                (pcell.band, pcell.bandFromChannel) = Self.band(.lte, qmi: Int(p.band), channel: pcell.channel, region: region)
            } else if let s = serving, s.rat == .lte {
                pcell = ComponentCarrier(pcell: s)
            } else {
                return nil
            }
            var carriers = [pcell]
            for s in ca.scells {
                var c = ComponentCarrier(
                    role: .scell, rat: .lte, channel: Int(s.channel), physicalID: Int(s.pci),
                    bandwidthMHz: QMIBandwidth.megahertz(Int(s.bandwidth)),
                    state: s.state.flatMap { ComponentCarrier.State(qmi: $0) })
                (c.band, c.bandFromChannel) = Self.band(.lte, qmi: Int(s.band), channel: c.channel, region: region)
                carriers.append(c)
            }
            list = carriers
        }
        // EN-DC: the NR cell of NAS Cell Location Info is the secondary cell group's primary cell.
        if rats.isNonStandalone5G, let loc = location, loc.nr5gCell != nil || loc.nr5gARFCN != nil {
            var nr = ComponentCarrier(role: .pscell, rat: .nr)
            nr.channel = loc.nr5gARFCN.map(Int.init)
            nr.physicalID = loc.nr5gCell.map { Int($0.pci) }
            let rf = rfBands?.entry(.nr)
            if nr.channel == nil { nr.channel = rf.map { Int($0.channel) } }
            (nr.band, nr.bandFromChannel) = Self.band(.nr, qmi: rf?.band, channel: nr.channel, region: region)
            nr.bandwidthMHz = rfBands?.bandwidths[CellRAT.nr.qmiRadioInterface].flatMap(QMIBandwidth.megahertz)
            if list == nil, let s = serving, s.rat == .lte { list = [ComponentCarrier(pcell: s)] }
            list?.append(nr)
        }
        return list
    }

    func neighbours(region: BandRegion, serving: ServingCell?) -> [NeighbourCell]? {
        guard let loc = location else { return nil }
        var out: [NeighbourCell] = []
        func band(_ rat: CellRAT, _ channel: Int) -> RadioBand? { BandPlan.band(rat, channel: channel, region: region) }
        func tenth(_ v: Int16) -> Double { Double(v) / 10 }
        if let l = loc.lteIntra {
            for c in l.cells where c.pci != l.servingPCI {
                out.append(NeighbourCell(
                    rat: .lte, channel: Int(l.earfcn), band: band(.lte, Int(l.earfcn)), physicalID: Int(c.pci),
                    signal: SignalMeasurement(rssi: tenth(c.rssi), rsrp: tenth(c.rsrp), rsrq: tenth(c.rsrq))))
            }
        }
        for f in loc.lteInter ?? [] {
            for c in f.cells {
                out.append(NeighbourCell(
                    rat: .lte, channel: Int(f.earfcn), band: band(.lte, Int(f.earfcn)), physicalID: Int(c.pci),
                    signal: SignalMeasurement(rssi: tenth(c.rssi), rsrp: tenth(c.rsrp), rsrq: tenth(c.rsrq))))
            }
        }
        for g in loc.lteNeighbourGSM ?? [] {
            let b = g.band1900 ? RadioBand(.gsm, 1900) : band(.gsm, Int(g.arfcn)).map { $0.number == 1900 ? RadioBand(.gsm, 1800) : $0 }
            out.append(NeighbourCell(
                rat: .gsm, channel: Int(g.arfcn), band: b, physicalID: g.bsic.map(Int.init),
                signal: SignalMeasurement(rssi: tenth(g.rssi))))
        }
        for w in loc.lteNeighbourWCDMA ?? [] {
            out.append(NeighbourCell(
                rat: .umts, channel: Int(w.uarfcn), band: band(.umts, Int(w.uarfcn)), physicalID: Int(w.psc),
                signal: SignalMeasurement(rscp: tenth(w.rscp), ecio: tenth(w.ecno))))
        }
        if let u = loc.umts {
            for c in u.neighbours where !(c.uarfcn == u.serving.uarfcn && c.psc == u.serving.psc) {
                out.append(NeighbourCell(
                    rat: .umts, channel: Int(c.uarfcn), band: band(.umts, Int(c.uarfcn)), physicalID: Int(c.psc),
                    signal: SignalMeasurement(rscp: Double(c.rscp), ecio: Double(c.ecio))))
            }
            for g in u.geranNeighbours {
                out.append(NeighbourCell(
                    rat: .gsm, channel: Int(g.arfcn), band: band(.gsm, Int(g.arfcn)),
                    signal: SignalMeasurement(rssi: Double(g.rssi))))
            }
        }
        if let g = loc.geran {
            for c in g.neighbours {
                let valid = c.cellID != 0xFFFF_FFFF
                out.append(NeighbourCell(
                    rat: .gsm, channel: Int(c.arfcn), band: band(.gsm, Int(c.arfcn)), physicalID: Int(c.bsic),
                    signal: SignalMeasurement(rssi: GSMRxLevel.dBm(Int(c.rxLevel))),
                    lac: valid ? Int(c.lac) : nil, cellID: valid ? UInt64(c.cellID) : nil))
            }
        }
        return out
    }
}

extension ComponentCarrier.State {
    /// QmiNasScellState.
    public init?(qmi v: UInt32) {
        switch v {
        case 0: self = .deconfigured
        case 1: self = .deactivated
        case 2: self = .activated
        default: return nil
        }
    }

    public var qmiValue: UInt32 {
        switch self {
        case .deconfigured: return 0
        case .deactivated: return 1
        case .activated: return 2
        }
    }
}

/// GSM RXLEV (TS 45.008 §8.1.4): 0 is below -110 dBm, n covers -111 + n to -110 + n dBm, 63 is above -48 dBm.
public enum GSMRxLevel {
    /// The lower edge of the code's range in dBm; nil outside 0...63.
    public static func dBm(_ rxlev: Int) -> Double? { (0...63).contains(rxlev) ? Double(rxlev - 111) : nil }

    public static func code(dBm: Double) -> Int { min(63, max(0, Int(dBm.rounded(.down)) + 111)) }
}
