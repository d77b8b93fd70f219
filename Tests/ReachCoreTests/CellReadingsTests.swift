import Testing
@testable import ReachCore

/// Serving cell, carriers and neighbours from QMI (NAS Get Cell Location Info, RF Band Information, LTE CPHY CA Info)
/// and MBIM (Base Stations Info). The captures are libqmi's and libmbim's own test vectors (hw/captures), with the
/// values qmicli/mbimcli print for them; the byte-level decoding of the same files is checked in ReachModemTests.
@Suite struct CellReadingsTests {
    typealias Loc = QMICellLocationInfo

    /// libqmi test_generated_nas_get_cell_location_info_2, as qmicli prints it: EARFCN 43390 "(E-UTRA band 42: TD
    /// 3500)", serving cell id 0, TAC 153, global cell id 115201, one cell at RSRP -99.9 dBm, RSRQ -6.7 dB.
    static var libqmiLTEBand42: Loc {
        var loc = Loc()
        loc.lteIntra = Loc.LTEIntra(
            ueIdle: true, tac: 153, globalCellID: 115201, earfcn: 43390, servingPCI: 0,
            cells: [Loc.LTECell(pci: 0, rsrq: -67, rsrp: -999, rssi: -733)])
        loc.lteInter = []
        loc.lteNeighbourGSM = []
        loc.lteNeighbourWCDMA = []
        return loc
    }

    @Test func libqmiLTEBand42() throws {
        let r = QMICellSources(location: Self.libqmiLTEBand42).readings(rats: [.lte], plmn: PLMN(mcc: "999", mnc: "40"))
        let cell = try #require(r.cell)
        #expect(cell.rat == .lte)
        #expect(cell.channel == 43390)
        #expect(cell.band == RadioBand(.lte, 42))
        #expect(cell.bandFromChannel)
        #expect(cell.physicalID == 0)
        #expect(cell.tac == 153)
        #expect(cell.cellID == 115201)
        #expect(r.neighbours == [])  // the only cell in the list is the serving one
        #expect(r.carriers == nil)  // no CA info read
    }

    /// libqmi test_compat_nas_get_cell_location_info_geran_info: a real modem on GSM 214/03, serving ARFCN 989, LAC
    /// 1142, cell 2306, BSIC 0, RX level 50; six neighbours, the first identified (cell 2190, ARFCN 976, BSIC 40, RX
    /// level 40), the others not (cell id 0xFFFFFFFF).
    @Test func libqmiGERAN() throws {
        var loc = Loc()
        let none: UInt32 = 0xFFFF_FFFF
        loc.geran = Loc.GERAN(
            serving: Loc.GERANCell(cellID: 2306, lac: 1142, arfcn: 989, bsic: 0, rxLevel: 50),
            neighbours: [
                Loc.GERANCell(cellID: 2190, lac: 1142, arfcn: 976, bsic: 40, rxLevel: 40),
                Loc.GERANCell(cellID: none, lac: 0, arfcn: 982, bsic: 11, rxLevel: 28),
                Loc.GERANCell(cellID: none, lac: 0, arfcn: 981, bsic: 36, rxLevel: 26),
                Loc.GERANCell(cellID: none, lac: 0, arfcn: 983, bsic: 1, rxLevel: 24),
                Loc.GERANCell(cellID: none, lac: 0, arfcn: 991, bsic: 34, rxLevel: 23),
                Loc.GERANCell(cellID: none, lac: 0, arfcn: 986, bsic: 8, rxLevel: 16),
            ])
        let r = QMICellSources(location: loc).readings(rats: [.gsm, .gprs], plmn: PLMN(mcc: "214", mnc: "03"))
        let cell = try #require(r.cell)
        #expect(cell.rat == .gsm)
        #expect(cell.band == RadioBand(.gsm, 900))
        #expect(cell.channel == 989)
        #expect(cell.physicalID == 0)
        #expect(cell.lac == 1142)
        #expect(cell.cellID == 2306)
        let n = try #require(r.neighbours)
        #expect(n.count == 6)
        #expect(n[0].channel == 976 && n[0].physicalID == 40 && n[0].signal.rssi == -71 && n[0].cellID == 2190)
        #expect(n[1].cellID == nil && n[1].lac == nil && n[1].signal.rssi == -83)
        #expect(n.allSatisfy { $0.band == RadioBand(.gsm, 900) })
    }

    /// qmicli's RX level ranges for the same capture: 50 is "-61 dBm > level > -60 dBm", 0 below -110, 63 above -48.
    @Test(arguments: [(50, -61.0), (40, -71), (0, -111), (63, -48)] as [(Int, Double)])
    func rxLevel(code: Int, dBm: Double) {
        #expect(GSMRxLevel.dBm(code) == dBm)
        #expect(GSMRxLevel.code(dBm: dBm) == code)
        #expect(GSMRxLevel.dBm(64) == nil)
    }

    /// Carrier aggregation with one SCell: PCell B3 20 MHz + SCell B7 20 MHz, as qmicli --nas-get-lte-cphy-ca-info
    /// shows a two-carrier LTE-A link (QmiNasActiveBand 122/126, QmiNasDLBandwidth 5 = 20 MHz).
    static let pcellB3 = QMICarrierAggregation.Carrier(pci: 123, channel: 1300, bandwidth: 5, band: 122)

    @Test func carrierAggregationOneSCell() throws {
        var loc = Loc()
        loc.lteIntra = Loc.LTEIntra(ueIdle: false, tac: 41001, globalCellID: 26498817, earfcn: 1300, servingPCI: 123, cells: [])
        let ca = QMICarrierAggregation(
            pcell: Self.pcellB3, scells: [.init(pci: 77, channel: 3050, bandwidth: 5, band: 126, state: 2)])
        let r = QMICellSources(location: loc, carrierAggregation: ca).readings(rats: [.lte], plmn: PLMN(mcc: "262", mnc: "01"))
        let carriers = try #require(r.carriers)
        #expect(carriers.map(\.role) == [.pcell, .scell])
        #expect(carriers.map { $0.band?.name } == ["B3", "B7"])
        #expect(carriers.map(\.bandwidthMHz) == [20, 20])
        #expect(carriers[1].state == .activated)
        #expect(!carriers[1].bandFromChannel)
        #expect(r.cell?.band == RadioBand(.lte, 3))
        #expect(r.cell?.bandFromChannel == false)  // from the CA PCell's band
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.cells = r
        #expect(CellSummary.bands(m) == "LTE B3 + B7, 40 MHz")
        #expect(CellSummary.bandList(m) == "B3+B7")
    }

    /// Cell Location Info refused (many modules answer NotSupported or InvalidQmiCommand) but LTE CPHY CA Info
    /// answered: the serving cell is the PCell, so its channel, PCI and band come from there; what only Cell Location
    /// Info tells (TAC, cell id) stays unknown.
    @Test func servingCellFromThePCellWhenCellLocationIsRefused() throws {
        let ca = QMICarrierAggregation(pcell: Self.pcellB3, scells: [])
        let r = QMICellSources(carrierAggregation: ca).readings(rats: [.lte], plmn: nil)
        let cell = try #require(r.cell)
        #expect(cell.rat == .lte)
        #expect(cell.channel == 1300)
        #expect(cell.physicalID == 123)
        #expect(cell.band == RadioBand(.lte, 3))
        #expect(cell.bandwidthMHz == 20)
        #expect(cell.tac == nil)
        #expect(cell.cellID == nil)
        // Where both answered, Cell Location Info's own values stand.
        var loc = QMICellLocationInfo()
        loc.lteIntra = Loc.LTEIntra(ueIdle: false, tac: 41001, globalCellID: 26498817, earfcn: 1300, servingPCI: 99, cells: [])
        let both = QMICellSources(location: loc, carrierAggregation: ca).readings(rats: [.lte], plmn: nil)
        #expect(both.cell?.physicalID == 99)
        #expect(both.cell?.tac == 41001)
    }

    /// Two SCells (TLV 0x15): B3 + B7 + B20, the third deactivated, and an unknown band value left to the channel.
    @Test func carrierAggregationTwoSCells() throws {
        let ca = QMICarrierAggregation(
            pcell: Self.pcellB3,
            scells: [
                .init(pci: 77, channel: 3050, bandwidth: 5, band: 126, state: 2),
                .init(pci: 301, channel: 6300, bandwidth: 3, band: 0xFFFF, state: 1),
            ])
        let r = QMICellSources(carrierAggregation: ca).readings(rats: [.lte], plmn: nil)
        let carriers = try #require(r.carriers)
        #expect(carriers.count == 3)
        #expect(carriers[2].band == RadioBand(.lte, 20))
        #expect(carriers[2].bandFromChannel)
        #expect(carriers[2].bandwidthMHz == 10)
        #expect(carriers[2].state == .deactivated)
        var m = ModemState(device: "x", protocol: .qmi)
        m.cells = r
        // A deactivated SCell carries nothing: the summary names the active carriers only.
        #expect(CellSummary.bands(m) == "LTE B3 + B7, 40 MHz")
        var twoActive = ca
        twoActive.scells[1].state = 2
        m.cells = QMICellSources(carrierAggregation: twoActive).readings(rats: [.lte], plmn: nil)
        #expect(CellSummary.bands(m) == "LTE B3 + B7 + B20, 50 MHz")
    }

    /// EN-DC: NAS Cell Location Info's NR5G TLVs are the secondary cell group's PSCell; RF Band Information names its
    /// band (QmiNasActiveBand 269 = n78) and the LTE anchor's.
    @Test func nonStandaloneNRLeg() throws {
        var loc = Loc()
        loc.lteIntra = Loc.LTEIntra(ueIdle: false, tac: 41001, globalCellID: 26498817, earfcn: 1300, servingPCI: 123, cells: [])
        loc.nr5gARFCN = 632628
        loc.nr5gCell = Loc.NR5GCell(tac: [0, 0, 0], globalCellID: 0, pci: 501, rsrq: -110, rsrp: -880, snr: 180)
        let rf = QMIRFBandInfo(
            entries: [.init(radioInterface: 8, band: 122, channel: 1300), .init(radioInterface: 12, band: 269, channel: 632628)],
            bandwidths: [8: 5, 12: 17])
        let r = QMICellSources(location: loc, rfBands: rf).readings(rats: [.lte, .nr], plmn: PLMN(mcc: "262", mnc: "01"))
        #expect(r.cell?.rat == .lte)
        #expect(r.cell?.band == RadioBand(.lte, 3))
        #expect(r.cell?.bandwidthMHz == 20)
        let carriers = try #require(r.carriers)
        #expect(carriers.map(\.role) == [.pcell, .pscell])
        #expect(carriers[1].band == RadioBand(.nr, 78))
        #expect(carriers[1].physicalID == 501)
        #expect(carriers[1].bandwidthMHz == 100)
        var m = ModemState(device: "x", protocol: .qmi)
        m.cells = r
        #expect(CellSummary.bands(m) == "LTE B3 + NR n78, 120 MHz")
    }

    /// 5G SA: the NR5G cell is the serving cell; its TAC is 3 bytes, most significant first.
    @Test func standaloneNRCell() throws {
        var loc = Loc()
        loc.nr5gARFCN = 627264
        loc.nr5gCell = Loc.NR5GCell(tac: [0x01, 0x02, 0x03], globalCellID: 0x1_2345_6789, pci: 42, rsrq: -105, rsrp: -850, snr: 200)
        let r = QMICellSources(location: loc).readings(rats: [.nr], plmn: PLMN(mcc: "310", mnc: "260"))
        let cell = try #require(r.cell)
        #expect(cell.rat == .nr)
        #expect(cell.tac == 0x010203)
        #expect(cell.cellID == 0x1_2345_6789)
        #expect(cell.channel == 627264)
        #expect(cell.band == RadioBand(.nr, 77))  // 3408.96 MHz in the US: n77
        #expect(r.carriers == nil)
    }

    /// UMTS: the 28-bit cell id of TLV 0x17 wins over TLV 0x11's 16 bits; the serving cell is not its own neighbour.
    @Test func umtsCell() throws {
        var loc = Loc()
        loc.umts = Loc.UMTS(
            cellID: 0x5678, lac: 24500, serving: Loc.UMTSCell(uarfcn: 10688, psc: 300, rscp: -85, ecio: -7),
            neighbours: [Loc.UMTSCell(uarfcn: 10688, psc: 300, rscp: -85, ecio: -7), Loc.UMTSCell(uarfcn: 10713, psc: 12, rscp: -98, ecio: -14)])
        loc.umtsCellID = 18045647
        let r = QMICellSources(location: loc).readings(rats: [.umts, .hsdpa], plmn: PLMN(mcc: "222", mnc: "50"))
        let cell = try #require(r.cell)
        #expect(cell.band == RadioBand(.umts, 1))
        #expect(cell.cellID == 18045647)
        #expect(cell.lac == 24500)
        #expect(cell.physicalID == 300)
        #expect(r.neighbours?.count == 1)
        #expect(r.neighbours?.first?.signal == SignalMeasurement(rscp: -98, ecio: -14))
    }

    /// A modem that answered none of the requests: no cell, no carriers, no neighbours (null, not an error).
    @Test func nothingKnown() {
        let r = QMICellSources().readings(rats: [.lte], plmn: nil)
        #expect(r.isEmpty)
        let json = r.jsonMembers(showIdentifiers: true)
        #expect(json.map(\.0) == ["cell", "carriers", "neighbours"])
        #expect(json.allSatisfy { $0.1 == .null })
    }

    /// libmbim test_ms_basic_connect_extensions_base_stations, as mbimcli prints it: system type "lte, 5g-nsa", LTE
    /// serving cell 21407, cell id 73780511, EARFCN 6400, PCI 310, TAC 28670, RSRP -103 dBm, RSRQ -12; one LTE
    /// neighbour with PCI 310 and no EARFCN.
    static let libmbimBaseStations = MBIMBaseStations(
        lteServing: .init(cellID: 73780511, earfcn: 6400, pci: 310, tac: 28670, rsrp: -103, rsrq: -12),
        lteNeighbours: [.init(cellID: 0xFFFF_FFFF, earfcn: 0xFFFF_FFFF, pci: 310, tac: 0xFFFF_FFFF, rsrp: -103, rsrq: -12)])

    @Test func libmbimBaseStations() throws {
        let r = Self.libmbimBaseStations.readings(rats: [.lte, .nr], plmn: PLMN(mcc: "214", mnc: "07"))
        let cell = try #require(r.cell)
        #expect(cell == ServingCell(
            rat: .lte, band: RadioBand(.lte, 20), bandFromChannel: true, channel: 6400, physicalID: 310, tac: 28670,
            cellID: 73780511))
        #expect(r.carriers == nil)  // NSA, but the device listed no NR serving cell
        let n = try #require(r.neighbours?.first)
        #expect(n.channel == nil && n.band == nil && n.physicalID == 310)
        #expect(n.signal == SignalMeasurement(rsrp: -103, rsrq: -12))
    }

    /// MBIMEx 3.0 NR cells: RSRP/RSRQ/SINR coded from -156/-43/-23 (ModemManager's reading).
    @Test func mbimNRServingCell() throws {
        var bs = Self.libmbimBaseStations
        bs.nrServing = [.init(nci: 0x12345, pci: 501, nrarfcn: 632628, tac: 0x10203, rsrp: 68, rsrq: 32, sinr: 41)]
        bs.nrNeighbours = [.init(nci: nil, pci: 502, nrarfcn: nil, tac: 0xFFFF_FFFF, rsrp: 60, rsrq: 30, sinr: 30)]
        let r = bs.readings(rats: [.lte, .nr], plmn: PLMN(mcc: "214", mnc: "07"))
        let carriers = try #require(r.carriers)
        #expect(carriers.map(\.role) == [.pcell, .pscell])
        #expect(carriers[1].band == RadioBand(.nr, 78))
        let nr = try #require(r.neighbours?.first { $0.rat == .nr })
        #expect(nr.signal == SignalMeasurement(rsrp: -96, rsrq: -13, sinr: 7))
        let sa = bs.readings(rats: [.nr], plmn: nil)
        #expect(sa.cell?.rat == .nr)
        #expect(sa.cell?.channel == 632628)
        #expect(sa.cell?.cellID == 0x12345)
    }

    /// Privacy: TAC/LAC and cell identities locate the gateway; they appear only with identifiers.
    @Test func identifiersOnlyWhenAsked() throws {
        let r = QMICellSources(location: Self.libqmiLTEBand42).readings(rats: [.lte], plmn: nil)
        let hidden = JSON.object(r.jsonMembers(showIdentifiers: false)).serialized()
        #expect(!hidden.contains("tac") && !hidden.contains("cell_id") && !hidden.contains("115201"))
        #expect(hidden.contains("\"band\":\"B42\"") && hidden.contains("\"pci\":0") && hidden.contains("\"channel\":43390"))
        let shown = JSON.object(r.jsonMembers(showIdentifiers: true)).serialized()
        #expect(shown.contains("\"tac\":153") && shown.contains("\"cell_id\":115201"))
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.cells = r
        #expect(!m.json(signalPolicy: .android).serialized().contains("115201"))
        #expect(m.json(showIdentifiers: true, signalPolicy: .android).serialized().contains("115201"))
    }
}
