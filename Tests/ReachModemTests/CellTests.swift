import CGLibShims
import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// Cells through the real libraries: libqmi's and libmbim's captures replayed, and the simulator's cell scenarios,
/// read by the built `reach` (status --json) or by the adapter itself.
@Suite struct CellCaptureTests {
    func wwan(_ status: [String: Any]) throws -> [String: Any] {
        try #require((status["wwan"] as? [[String: Any]])?.first)
    }

    /// libqmi test_generated_nas_get_cell_location_info_2: qmicli prints EARFCN 43390 "(E-UTRA band 42: TD 3500)",
    /// serving cell id 0; GatewayReach reads band B42 (from the channel: the capture names no band) and PCI 0.
    @Test func libqmiLTEBand42() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/qmi-nas-get-cell-location-info-lte-b42.json")
        let plain = try wwan(try await reachStatusJSON(["--modem", "\(sim.link):qmi", "--modem-timeout", "2"]))
        let cell = try #require(plain["cell"] as? [String: Any])
        #expect(cell["rat"] as? String == "lte")
        #expect(cell["band"] as? String == "B42")
        #expect(cell["band_from_channel"] as? Bool == true)
        #expect(cell["channel"] as? Int == 43390)
        #expect(cell["pci"] as? Int == 0)
        #expect(cell["tac"] == nil && cell["cell_id"] == nil)
        #expect(plain["carriers"] is NSNull)  // the capture has no CA info: not known
        #expect((plain["neighbours"] as? [Any])?.isEmpty == true)
        let shown = try wwan(try await reachStatusJSON(["--modem", "\(sim.link):qmi", "--modem-timeout", "2", "--show-identifiers"]))
        let ids = try #require(shown["cell"] as? [String: Any])
        #expect(ids["tac"] as? Int == 153)
        #expect(ids["cell_id"] as? Int == 115201)
    }

    /// libqmi test_compat_nas_get_cell_location_info_geran_info: a real modem on GSM 214/03.
    @Test func libqmiGSM() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/qmi-nas-get-cell-location-info-gsm-21403.json")
        let (_, states) = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: .qmi)], options: ModemReadOptions(requestTimeout: .seconds(2)))
        let cells = try #require(states.first?.cells)
        #expect(cells.cell == ServingCell(
            rat: .gsm, band: RadioBand(.gsm, 900), bandFromChannel: true, channel: 989, physicalID: 0, lac: 1142, cellID: 2306))
        let n = try #require(cells.neighbours)
        #expect(n.map(\.channel) == [976, 982, 981, 983, 991, 986])
        #expect(n.map(\.physicalID) == [40, 11, 36, 1, 34, 8])
        #expect(n.map(\.signal.rssi) == [-71, -83, -85, -87, -88, -95])
        #expect(n[0].cellID == 2190 && n[1].cellID == nil)
    }

    /// libmbim test_ms_basic_connect_extensions_base_stations: decoded from the information buffer by GatewayReach and
    /// by libmbim's own parser, which must agree (one neighbour: the case libmbim 1.28 reads right).
    @Test func libmbimBaseStations() throws {
        let bytes = try Capture("mbim-base-stations-info-lte-21407.json").exchanges[0].response
        let ours = try MBIMBaseStationsDecoder.decode(Array(bytes[48...]), v3: false)
        #expect(ours.lteServing == .init(cellID: 73780511, earfcn: 6400, pci: 310, tac: 28670, rsrp: -103, rsrq: -12))
        #expect(ours.lteNeighbours == [.init(cellID: 0xFFFF_FFFF, earfcn: 0xFFFF_FFFF, pci: 310, tac: 0xFFFF_FFFF, rsrp: -103, rsrq: -12)])
        #expect(ours.gsmServing == nil && ours.umtsServing == nil && ours.gsmNeighbours.isEmpty)
        let message = bytes.withUnsafeBufferPointer { mbim_message_new($0.baseAddress, UInt32($0.count)) }
        defer { mbim_message_unref(message) }
        var system = MbimDataClass(0)
        var lte: UnsafeMutablePointer<MbimCellInfoServingLte>?
        var count: UInt32 = 0
        var neighbours: UnsafeMutablePointer<UnsafeMutablePointer<MbimCellInfoNeighboringLte>?>?
        #expect(mbim_message_ms_basic_connect_extensions_base_stations_info_response_parse(
            message, &system, nil, nil, nil, &lte, nil, nil, nil, nil, nil, nil, &count, &neighbours, nil, nil, nil) != 0)
        defer {
            mbim_cell_info_serving_lte_free(lte)
            mbim_cell_info_neighboring_lte_array_free(neighbours)
        }
        #expect(system.rawValue == 0x60)
        let l = try #require(lte?.pointee)
        #expect(l.earfcn == ours.lteServing?.earfcn && l.physical_cell_id == ours.lteServing?.pci && l.tac == ours.lteServing?.tac)
        #expect(l.rsrp == ours.lteServing?.rsrp && l.rsrq == ours.lteServing?.rsrq && l.cell_id == ours.lteServing?.cellID)
        #expect(count == 1 && neighbours?[0]?.pointee.physical_cell_id == 310)
        let readings = ours.readings(rats: [.lte, .nr], plmn: PLMN(mcc: "214", mnc: "07"))
        #expect(readings.cell?.band == RadioBand(.lte, 20))
    }

    /// Two LTE neighbours, each followed by its provider id (the layout later libmbim reads): both are read.
    @Test func neighbourListsWithStrings() throws {
        func utf16(_ s: String) -> [UInt8] { s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }
        func le(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func neighbour(_ earfcn: UInt32, _ pci: UInt32, _ rsrp: Int32) -> [UInt8] {
            let provider = utf16("26201") + [0, 0]  // 10 bytes, padded to 12
            return le(32) + le(10) + le(0xFFFF_FFFF) + le(earfcn) + le(pci) + le(41001) + le(UInt32(bitPattern: rsrp))
                + le(UInt32(bitPattern: -12)) + provider
        }
        var buffer = le(0x20)  // LTE
        let listOffset: UInt32 = 4 + 9 * 8
        for i in 0..<9 { buffer += i == 7 ? le(listOffset) + le(4 + 2 * 44) : le(0) + le(0) }
        buffer += le(2) + neighbour(1300, 124, -101) + neighbour(6300, 302, -108)
        let decoded = try MBIMBaseStationsDecoder.decode(buffer, v3: false)
        #expect(decoded.lteNeighbours.map(\.earfcn) == [1300, 6300])
        #expect(decoded.lteNeighbours.map(\.pci) == [124, 302])
        #expect(decoded.lteNeighbours.map(\.rsrp) == [-101, -108])
    }

    @Test(arguments: [0, 3, 20, 60])
    func truncatedBuffersAreErrors(keep: Int) throws {
        let bytes = try Capture("mbim-base-stations-info-lte-21407.json").exchanges[0].response
        let info = Array(bytes[48...])
        #expect(throws: MBIMBaseStationsDecoder.Malformed.self) { try MBIMBaseStationsDecoder.decode(Array(info.prefix(keep)), v3: false) }
    }
}

/// The simulator's cell scenarios read through `reach status --json`: cell, carriers and neighbours, identifiers
/// hidden unless asked for.
@Suite struct CellSimulatorTests {
    @Test func qmiCarrierAggregation() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        let status = try await reachStatusJSON(["--modem", "\(sim.link):qmi"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        let cell = try #require(modem["cell"] as? [String: Any])
        #expect(cell["band"] as? String == "B3" && cell["channel"] as? Int == 1300 && cell["pci"] as? Int == 123)
        #expect(cell["band_from_channel"] == nil)  // named by the modem
        #expect(cell["tac"] == nil && cell["cell_id"] == nil)
        let carriers = try #require(modem["carriers"] as? [[String: Any]])
        #expect(carriers.map { $0["role"] as? String } == ["pcell", "scell", "scell"])
        #expect(carriers.map { $0["band"] as? String } == ["B3", "B7", "B20"])
        #expect(carriers.map { $0["bandwidth_mhz"] as? Double } == [20, 20, 10])
        #expect(carriers[2]["state"] as? String == "deactivated")
        let neighbours = try #require(modem["neighbours"] as? [[String: Any]])
        #expect(neighbours.map { $0["rat"] as? String } == ["lte", "lte", "gsm", "umts"])
        #expect(neighbours[2]["bsic"] as? Int == 21 && neighbours[3]["psc"] as? Int == 300)
        #expect(neighbours[1]["rsrp_dbm"] as? Double == -108)
        let shown = try #require(((try await reachStatusJSON(["--modem", "\(sim.link):qmi", "--show-identifiers"]))["wwan"] as? [[String: Any]])?.first)
        let ids = try #require(shown["cell"] as? [String: Any])
        #expect(ids["tac"] as? Int == 41001 && ids["cell_id"] as? Int == 26498817)
        let text = try await runReach(["status", "--no-wifi", "--modem", "\(sim.link):qmi"])
        #expect(text.stdout.contains("4G  (lte B3+B7)"), "\(text.stdout)")
    }

    @Test(arguments: [("mbim-4g-lte-cells", "B20", 2), ("mbim-5g-nsa-cells-mbimex3", "B3", 1)] as [(String, String, Int)])
    func mbimBaseStations(scenario: String, band: String, neighbours: Int) async throws {
        let sim = try await ModemSimulator.start(scenario: scenario)
        let status = try await reachStatusJSON(["--modem", "\(sim.link):mbim"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        let cell = try #require(modem["cell"] as? [String: Any])
        #expect(cell["band"] as? String == band && cell["band_from_channel"] as? Bool == true)
        #expect((modem["neighbours"] as? [Any])?.count == neighbours)
        if scenario.contains("nsa") {
            let carriers = try #require(modem["carriers"] as? [[String: Any]])
            #expect(carriers.map { $0["band"] as? String } == ["B3", "n78"])
        } else {
            #expect(modem["carriers"] is NSNull)  // MBIM reports no carrier aggregation
            let list = try #require(modem["neighbours"] as? [[String: Any]])
            #expect(list.map { $0["pci"] as? Int } == [89, 123])
        }
    }

    /// A modem without the cell requests: null, and no error.
    @Test(arguments: [("qmi-4g-lte", "qmi"), ("mbim-4g-lte", "mbim")])
    func withoutCellsNullNotError(scenario: String, proto: String) async throws {
        let sim = try await ModemSimulator.start(scenario: scenario)
        let modem = try #require((try await reachStatusJSON(["--modem", "\(sim.link):\(proto)"])["wwan"] as? [[String: Any]])?.first)
        #expect(modem["cell"] is NSNull && modem["carriers"] is NSNull && modem["neighbours"] is NSNull)
        #expect(modem["error"] is NSNull, "\(modem)")
        #expect(modem["generation"] as? String == "4g")
    }
}
