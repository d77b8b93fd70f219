// The simulator's cell answers read by the real clients: qmicli's --nas-get-cell-location-info, --nas-get-rf-band-info
// and --nas-get-lte-cphy-ca-info, mbimcli's --ms-query-base-stations-info; and by libmbim's own parser at each MBIMEx
// version the scenario offers. qmicli names the E-UTRA band of an EARFCN itself (qmicli_earfcn_to_eutra_band_string),
// so its words check our channel numbers against an independent table.

import CMBIM
import ModemSim
import ReachTestSupport
import Testing

@Suite(.enabled(if: Tools.clientTestsEnabled, "needs qmicli, mbimcli (scripts/setup) and a built reach-modem-sim"))
struct CellClientTests {
    /// LTE-A with two SCells: cells, bands and carrier aggregation as qmicli prints them.
    @Test func qmicliReadsCarrierAggregation() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        defer { sim.stop() }
        let cells = try await qmicli(sim, "--nas-get-cell-location-info")
        #expect(cells.status == 0, "\(cells.stderr)")
        #expect(cells.value("EUTRA Absolute RF Channel Number") == "'1300' (E-UTRA band 3: 1800+)", "\(cells.stdout)")
        #expect(cells.value("Serving Cell ID") == "123")
        #expect(cells.value("Global Cell ID") == "26498817")
        #expect(cells.value("RSRP", after: "Cell [0]") == "'-92.0' dBm")
        #expect(cells.value("EUTRA Absolute RF Channel Number", after: "Interfrequency LTE Info") == "'6300' (E-UTRA band 20: 800 DD)")
        #expect(cells.value("GERAN Absolute RF Channel Number", after: "LTE Info Neighboring GSM") == "62")
        #expect(cells.value("Primary Scrambling Code", after: "LTE Info Neighboring WCDMA") == "300")
        let rf = try await qmicli(sim, "--nas-get-rf-band-info")
        #expect(rf.status == 0 && rf.value("Active Band Class") == "eutran-3", "\(rf.stdout)")
        #expect(rf.stdout.contains("Bandwidth:         '20'"), "\(rf.stdout)")
        let ca = try await qmicli(sim, "--nas-get-lte-cphy-ca-info")
        #expect(ca.status == 0, "\(ca.stderr)")
        #expect(ca.value("LTE Band", after: "Primary Cell Info") == "eutran-3")
        #expect(ca.value("LTE Band", after: "Secondary Cell 1 Info") == "eutran-7")
        #expect(ca.value("State", after: "Secondary Cell 1 Info") == "activated")
        #expect(ca.value("LTE Band", after: "Secondary Cell 2 Info") == "eutran-20")
        #expect(ca.value("DL Bandwidth", after: "Secondary Cell 2 Info") == "10")
        #expect(ca.value("State", after: "Secondary Cell 2 Info") == "deactivated")
    }

    /// EN-DC: the NR5G TLVs and the NR entry of RF Band Information.
    @Test func qmicliReadsTheNRLeg() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-5g-nsa-cells")
        defer { sim.stop() }
        let cells = try await qmicli(sim, "--nas-get-cell-location-info")
        #expect(cells.value("5GNR ARFCN") == "632628", "\(cells.stdout)")
        #expect(cells.stdout.contains("501"))
        let rf = try await qmicli(sim, "--nas-get-rf-band-info")
        #expect(rf.value("Active Band Class", after: "Band Information (Extended)") == "eutran-3", "\(rf.stdout)")
        #expect(rf.stdout.contains("'nr5g-78'") && rf.stdout.contains("'632628'"), "\(rf.stdout)")
    }

    /// A scenario without cells is a modem that lacks the requests; off the registered network they are unavailable.
    @Test func withoutCellsTheRequestsAreUnsupported() async throws {
        let plain = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { plain.stop() }
        for command in ["--nas-get-cell-location-info", "--nas-get-lte-cphy-ca-info"] {
            let r = try await qmicli(plain, command)
            #expect(r.status != 0 && r.stderr.contains("'NotSupported'"), "\(command): \(r.stderr)")
        }
        // libqmi 1.32 looks for RF Band Information's mandatory TLV 0x01 before the result, so an error reply reads
        // as a missing TLV; GatewayReach takes that as "no reading" too.
        let rf = try await qmicli(plain, "--nas-get-rf-band-info")
        #expect(rf.status != 0 && rf.stderr.contains("TLV 0x01 not found"), "\(rf.stderr)")
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        defer { sim.stop() }
        #expect(try await sim.control(#"{"set":{"registration":"searching","operator":null,"access_technologies":[]}}"#).contains("true"))
        let r = try await qmicli(sim, "--nas-get-cell-location-info")
        #expect(r.stderr.contains("'InformationUnavailable'"), "\(r.stderr)")
    }

    @Test func mbimcliReadsBaseStations() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-4g-lte-cells")
        defer { sim.stop() }
        let r = try await mbimcli(sim, "--ms-query-base-stations-info")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.value("EARFCN") == "6300" && r.value("Physical cell id") == "88" && r.value("TAC") == "41001", "\(r.stdout)")
        #expect(r.value("Provider id") == "26201")
        #expect(r.value("Neighboring LTE cells") == "2")
        let v3 = try await ModemSimulator.start(scenario: "mbim-5g-nsa-cells-mbimex3")
        defer { v3.stop() }
        let nr = try await mbimcli(v3, "--device-open-ms-mbimex-v3", "--ms-query-base-stations-info")
        #expect(nr.status == 0, "\(nr.stderr)")
        #expect(nr.value("NRARFCN") == "632628" && nr.value("System subtype") == "5g-endc", "\(nr.stdout)")
        #expect(nr.value("SINR", after: "Neighboring NR cells") == "7 dB")
        let plain = try await ModemSimulator.start(scenario: "mbim-4g-lte")
        defer { plain.stop() }
        let none = try await mbimcli(plain, "--ms-query-base-stations-info")
        #expect(none.stderr.contains("NoDeviceSupport"), "\(none.stderr)")
    }
}

/// Base Stations Info of every scenario with cells, at every MBIMEx version it offers, read by libmbim-glib 1.28.2's
/// printer: no field it cannot read. (With two neighbours or more, libmbim 1.28 repeats the first: see
/// MBIMBaseStationsDecoder; the layout it reads is the one of later libmbim.)
@Suite struct LibmbimReadsBaseStations {
    static var cases: [(String, MBIMExVersion)] {
        LibmbimParserTests.cases.filter { (try? Repo.scenario($0.0))?.hasCellReporting == true }
    }

    @Test(arguments: cases)
    func baseStations(file: String, version: MBIMExVersion) throws {
        var h = MBIMHarness(withoutFaults(try Repo.scenario(file)))
        _ = try h.open()
        if version > .v1 {
            var b = MBIMBufferBuilder()
            b.u16(0x0100)
            b.u16(version.bcd)
            _ = try h.send(.command(tid: 900, service: MBIMServices.msBasicConnectExtensions, cid: 15, buffer: b.build()))
        }
        let query = [UInt8](repeating: 0, count: version >= .v3 ? 24 : 20)
        let m = try h.command(MBIMServices.msBasicConnectExtensions, MBIMServices.MSBasicConnectExtensions.baseStationsInfo, query)
        #expect(m.code == 0)
        let text = try libmbimPrintable(m.encoded(), mbimex: version).get()
        #expect(!text.contains("n/a:"), "\(text)")
        #expect(text.contains("LteServingCell") || text.contains("UmtsServingCell"), "\(text)")
        #expect(text.contains("NrServingCells") == (version >= .v3), "\(text)")
    }

    @Test func cellsAppearInDeviceServices() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-lte-cells")
        _ = try h.open()
        let services = try libmbimPrintable(try h.command(16).encoded(), mbimex: .v1).get()
        #expect(services.contains("base-stations-info") || services.contains("11"), "\(services)")
    }
}
