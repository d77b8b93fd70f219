// Scenario keys for cells (state.cell channel/pci/band/bandwidth_mhz, nr_cell, carriers, neighbours) and signal_walk:
// what they mean to the engine, and every mistake named by its key path.

import ModemSim
import ReachCore
import Testing

@Suite struct ScenarioCellTests {
    static func lte(_ extra: String, state: String = "", proto: String = "qmi", rats: String = #"["lte"]"#) -> String {
        """
        {"protocol":"\(proto)","state":{"registration":"home","access_technologies":\(rats),
         "operator":{"mcc":"262","mnc":"01"},"signal":{"rsrp_dbm":-95,"rsrq_db":-10}\(state)}\(extra)}
        """
    }

    @Test func cellsParse() throws {
        let s = try ScenarioParser.parse(Self.lte("", state: #","cell":{"tac":41001,"channel":1300,"pci":123,"band":"B3","bandwidth_mhz":20},"carriers":[{"channel":3050,"pci":77,"state":"deactivated"}],"neighbours":[{"rat":"gsm","channel":62,"pci":21,"rssi_dbm":-80}]"#))
        #expect(s.state.cells.serving == SimulatedCarrier(channel: 1300, pci: 123, bandName: "B3", bandwidthMHz: 20))
        #expect(s.state.cells.scells == [SimulatedCarrier(channel: 3050, pci: 77, state: .deactivated)])
        #expect(s.state.cells.neighbours == [SimulatedNeighbour(rat: .gsm, channel: 62, pci: 21, signal: SignalMeasurement(rssi: -80))])
        #expect(s.state.cell.tac == 41001)
        #expect(s.hasCellReporting)
        #expect(s.state.cells.scells[0].band(.lte, region: .other) == RadioBand(.lte, 7))
        #expect(!(try ScenarioParser.parse(Self.lte(""))).hasCellReporting)
    }

    /// The walk of issue 18 as timeline steps: -95 (the state), then -110, -100, -85, -120, -95 every 4 s; keys a step
    /// does not name keep the state's values.
    @Test func signalWalkExpandsIntoTheTimeline() throws {
        let s = try ScenarioParser.parse(Self.lte(#","timeline":[{"at_ms":5000,"indicate":true}],"signal_walk":{"every_ms":4000,"start_ms":4000,"repeat":2,"steps":[{"rsrp_dbm":-110},{"rsrp_dbm":-100,"nr":{"rsrp_dbm":-90}}]}"#))
        #expect(s.timeline.map(\.atMs) == [4000, 5000, 8000, 12000, 16000])
        // Each step is the whole reading, so it reads the same whatever came before it.
        let signals = s.timeline.compactMap { $0.operation.set?.signal?.applied(to: SignalMeasurement(rssi: -1, rscp: -99)) }
        #expect(signals.map(\.rsrp) == [-110, -100, -110, -100])
        #expect(signals.allSatisfy { $0.rsrq == -10 && $0.rscp == nil && $0.rssi == s.state.signal.rssi })
        #expect(s.timeline[2].operation.set?.nrSignal == .some(MeasurementPatch(replacingWith: SignalMeasurement(rsrp: -90))))
        let shipped = try Repo.scenario("qmi-timeline-signal-walk")
        #expect(shipped.timeline.compactMap { $0.operation.set?.signal?.applied(to: SignalMeasurement()).rsrp } == [-110, -100, -85, -120, -95])
        #expect(shipped.timeline.map(\.atMs) == [4000, 8000, 12000, 16000, 20000])
    }

    @Test(arguments: [
        (lte("", state: #","cell":{"pci":1}"#), "scenario.state.cell.pci: needs \"channel\" in the same object"),
        (lte("", state: #","cell":{"channel":1300}"#), "scenario.state.cell.pci: missing (required)"),
        (lte("", state: #","cell":{"channel":1300,"pci":1,"band":"B7"}"#), "scenario.state.cell.channel: EARFCN 1300 is not in band B7"),
        (lte("", state: #","cell":{"channel":1300,"pci":1,"band":"n78"}"#), "scenario.state.cell.band: \"n78\" is not a LTE band"),
        (lte("", state: #","cell":{"channel":1300,"pci":1,"band":"X9"}"#), "scenario.state.cell.band: \"X9\" is not a band"),
        (lte("", state: #","cell":{"channel":60500,"pci":1}"#), "scenario.state.cell.channel: EARFCN 60500 is in no LTE band"),
        (lte("", state: #","cell":{"channel":66500,"pci":1}"#), "scenario.state.cell.channel: QMI carries EARFCNs in 16 bits"),
        (lte("", state: #","cell":{"channel":1300,"pci":600}"#), "scenario.state.cell.pci: a LTE PCI is 0 to 503"),
        (lte("", state: #","cell":{"channel":1300,"pci":1,"bandwidth_mhz":7}"#), "scenario.state.cell.bandwidth_mhz: 7 MHz is not a channel bandwidth"),
        (lte("", state: #","carriers":[{"channel":3050,"pci":2}]"#), "scenario.state.cell.channel: nr_cell, carriers and neighbours need the serving cell's channel"),
        (lte("", state: #","cell":{"channel":1300,"pci":1},"nr_cell":{"channel":632628,"pci":2}"#), "scenario.state.nr_cell: an NR secondary cell needs 5G NSA"),
        (lte("", state: #","cell":{"channel":10700,"pci":1},"carriers":[{"channel":3050,"pci":2}]"#, rats: #"["umts"]"#), "scenario.state.carriers: secondary carriers need an LTE serving cell"),
        (lte("", state: #","cell":{"channel":1300,"pci":1},"carriers":[{"channel":3050,"pci":2,"state":"on"}]"#), "scenario.state.carriers[0].state: \"on\" is not one of"),
        (lte("", state: #","cell":{"channel":1300,"pci":1},"neighbours":[{"rat":"cdma","channel":1,"pci":1}]"#), "scenario.state.neighbours[0].rat: \"cdma\" is not one of"),
        (lte("", state: #","cell":{"channel":1300,"pci":1},"neighbours":[{"rat":"lte","channel":1300,"pci":2,"rsrp_dbm":-300}]"#), "scenario.state.neighbours[0].rsrp_dbm: -300 is out of range"),
        (lte(#","signal_walk":{"steps":[{"rsrp_dbm":-100}]}"#), "scenario.signal_walk.every_ms: missing (required)"),
        (lte(#","signal_walk":{"every_ms":1000,"steps":[]}"#), "scenario.signal_walk.steps: needs at least one step"),
        (lte(#","signal_walk":{"every_ms":1000,"steps":[{"rsrp":-100}]}"#), "scenario.signal_walk.steps[0].rsrp: unknown key"),
        (lte(#","signal_walk":{"every_ms":1000,"repeat":10000,"steps":[{},{},{},{},{},{},{},{},{},{},{}]}"#), "scenario.signal_walk.repeat: at most 100000 steps"),
    ] as [(String, String)])
    func mistakesNameTheKey(text: String, message: String) {
        do {
            _ = try ScenarioParser.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }

    /// A timeline or control line may move the cell (a handover); the same checks apply.
    @Test func handoverOnTheControlSocket() throws {
        var h = QMIHarness(try Repo.scenario("qmi-4g-lte-ca"))
        let ok = try h.control(#"{"set":{"cell":{"tac":41001,"cell_id":26498900,"channel":6300,"pci":88},"carriers":[]}}"#)
        #expect(ok.reply.contains("\"ok\":true"), "\(ok.reply)")
        #expect(h.engine.state.cells.serving?.channel == 6300)
        let bad = try h.control(#"{"set":{"cell":{"channel":6300,"pci":88,"band":"B3"}}}"#)
        #expect(bad.reply.contains("control.set.cell.channel: EARFCN 6300 is not in band B3"), "\(bad.reply)")
    }
}
