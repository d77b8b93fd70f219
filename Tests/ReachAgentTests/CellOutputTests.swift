// Cells in the agent's outputs: the diag radio check names band, channel, PCI and carrier aggregation; the support
// bundle carries cells and neighbours with TAC/LAC and cell ids redacted; the Prometheus textfile has
// reach_wwan_carriers and the band on reach_modem_info.

import Foundation
import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

@Suite struct CellOutputTests {
    /// LTE-A on B3 + B7 (as the simulator's qmi-4g-lte-ca), with a neighbour and the cell's identity.
    static func aggregatedModem() -> ModemState {
        var m = DiagTests.modem(rsrp: -92)
        m.signal.rsrq = -9
        m.signal.sinr = 14
        m.plmn = PLMN(mcc: "262", mnc: "01")
        m.cells = CellReadings(
            cell: ServingCell(rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, tac: 41001, cellID: 26498817, bandwidthMHz: 20),
            carriers: [
                ComponentCarrier(role: .pcell, rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, bandwidthMHz: 20),
                ComponentCarrier(role: .scell, rat: .lte, band: RadioBand(.lte, 7), channel: 3050, physicalID: 77, bandwidthMHz: 20, state: .activated),
                ComponentCarrier(role: .scell, rat: .lte, band: RadioBand(.lte, 20), channel: 6300, physicalID: 301, bandwidthMHz: 10, state: .deactivated),
            ],
            neighbours: [NeighbourCell(rat: .lte, channel: 1300, band: RadioBand(.lte, 3), physicalID: 124, signal: SignalMeasurement(rsrp: -101, rsrq: -13))])
        return m
    }

    @Test func radioCheckNamesBandChannelPCIAndCA() throws {
        let s = DiagTests.snapshot(route: Routes.via("wwan0", kind: .wwan), modems: [Self.aggregatedModem()])
        let checks = DiagChecks.evaluate(DiagTests.facts(s))
        let radio = try #require(checks.first { $0.id == "modem[/dev/cdc-wdm0].radio" })
        #expect(radio.detail == "4g (lte) on LTE B3 + B7, 40 MHz, EARFCN 1300, PCI 123; 4 bars (android), rsrp -92 dBm, rsrq -9 dB, sinr 14 dB", "\(radio.detail)")
        // Without cells the check reads as before.
        let plain = DiagTests.snapshot(route: Routes.via("wwan0", kind: .wwan), modems: [DiagTests.modem()])
        let before = try #require(DiagChecks.evaluate(DiagTests.facts(plain)).first { $0.id == "modem[/dev/cdc-wdm0].radio" })
        #expect(before.detail == "4g (lte), 4 bars (android), rsrp -95 dBm")
    }

    @Test func bundleCarriesCellsRedacted() throws {
        let s = DiagTests.snapshot(route: Routes.via("wwan0", kind: .wwan), modems: [Self.aggregatedModem()])
        let report = DiagReport(facts: DiagTests.facts(s), showIdentifiers: false)
        for show in [false, true] {
            let bytes = SupportBundle.build(report: report, config: AgentConfig(), showIdentifiers: show)
            let dir = try makeTempDir("reach-cells")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            if case let .failure(e) = SupportBundle.write(bytes, to: dir + "/b.tar.gz") { Issue.record("\(e)") }
            try TestSupport.sh(["tar", "-xzf", dir + "/b.tar.gz", "-C", dir])
            let snapshotFile = try #require(try FileManager.default.subpathsOfDirectory(atPath: dir).first { $0.hasSuffix("snapshot.json") })
            let text = try String(contentsOfFile: dir + "/" + snapshotFile, encoding: .utf8)
            #expect(text.contains("\"carriers\"") && text.contains("\"neighbours\"") && text.contains("\"B7\""), "\(text)")
            #expect(text.contains("26498817") == show, "identifiers \(show)")
            #expect(text.contains("41001") == show, "identifiers \(show)")
        }
        // A report line that carries them (an agent started with identifiers) is redacted in the bundle too.
        let line = ReportLine.json(snapshot: s, view: nil, event: ReportLine.event(.periodic, seq: 1), showIdentifiers: true)
        let redacted = Redact.json(line).serialized()
        #expect(line.serialized().contains("26498817") && !redacted.contains("26498817") && !redacted.contains("\"tac\""))
        #expect(redacted.contains("\"pci\":123"))
    }

    @Test func prometheusCarriersAndBand() {
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        s.route = Routes.via("wwan0", kind: .wwan)
        var without = DiagTests.modem()
        without.device = "/dev/cdc-wdm1"
        without.interface = "wwan1"
        s.wwan = [Self.aggregatedModem(), without]
        s.derive()
        let text = PrometheusText.render(MetricsInput(
            targets: [.init(snapshot: s, view: nil, changes: 0, lastChange: nil)], log: ReportLog.Stats()))
        #expect(text.contains("reach_wwan_carriers{device=\"/dev/cdc-wdm0\",interface=\"wwan0\"} 2\n"), "\(text)")
        #expect(!text.contains("reach_wwan_carriers{device=\"/dev/cdc-wdm1\""))  // not known: no sample
        #expect(text.contains("reach_modem_info{device=\"/dev/cdc-wdm0\",interface=\"wwan0\",protocol=\"qmi\",access_technologies=\"lte\",band=\"B3+B7\",operator=\"262-01\"} 1\n"), "\(text)")
        #expect(text.contains("reach_modem_info{device=\"/dev/cdc-wdm1\",interface=\"wwan1\",protocol=\"qmi\",access_technologies=\"lte\",band=\"\",operator=\"\"} 1\n"))
        #expect(!text.contains("26498817"))
    }
}
