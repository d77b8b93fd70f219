import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// ModemMonitor as `reach signal` runs it: live signal reporting (QMI Config Signal Info v2 with 1 dB deltas), the
/// signal alone polled where the modem cannot report it, and the cells read again on their own interval.
@Suite struct LiveMonitorTests {
    typealias Collector = MonitorTests.Collector

    static func options(signalPoll: Duration? = nil, cells: Duration? = nil) -> ModemMonitorOptions {
        ModemMonitorOptions(
            read: ModemReadOptions(requestTimeout: .seconds(2)), pollInterval: nil,
            reopen: Backoff(initial: .milliseconds(100), maximum: .seconds(1), jitter: 0.1),
            signalReporting: .live(interval: .seconds(1)), cellInterval: cells, signalPollInterval: signalPoll)
    }

    /// Live reporting asks for 1 dB deltas; a 1 dB change (no bar boundary crossed) arrives as an indication.
    @Test func oneDecibelArrivesAsAnIndication() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        let updates = Collector(ModemMonitor(ModemPortSpec(path: sim.link, protocol: .qmi), options: Self.options()).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        #expect(first.state.signal.rsrp == -92 && first.state.cells.carriers?.count == 3)
        try await MonitorTests.subscribed(sim, "qmi")
        #expect(sim.log.contains("nas:config_signal_info_v2 request"), "\(sim.log)")
        try await sim.control(#"{"set":{"signal":{"rssi_dbm":-63,"rsrp_dbm":-93,"rsrq_db":-9,"sinr_db":14}}}"#)
        let next = try await updates.next { $0.state.signal.rsrp == -93 }
        #expect(next.cause == .indication)
        #expect(next.state.bars(.android) == first.state.bars(.android))
    }

    /// No signal indications (no Signal Info, Config Signal Info or Event Report): the signal alone is polled at the
    /// live interval; the SIM, which the modem cannot announce either, is not asked again.
    @Test func signalAlonePolledWithoutIndications() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered(
            "qmi", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95, "rsrq_db": -10"#,
            extra: #""qmi": {"get_signal_info": false}, "faults": [{"error": {"status": "NOT_SUPPORTED", "messages": ["nas:set_event_report"]}}],"#))
        let updates = Collector(ModemMonitor(
            ModemPortSpec(path: sim.link, protocol: .qmi), options: Self.options(signalPoll: .milliseconds(300))).updates())
        defer { Task { await updates.stop() } }
        _ = try await updates.next()
        try await Task.sleep(for: .milliseconds(500))
        try await sim.control(#"{"set":{"signal":{"rssi_dbm":-80,"rsrp_dbm":-110,"rsrq_db":-15}}}"#)
        let polled = try await updates.next { $0.state.signal.rsrp == -110 }
        #expect(polled.cause == .poll)
        let log = sim.log
        #expect(MonitorTests.count(log, "nas:get_signal_strength request") >= 2, "\(log)")
        #expect(MonitorTests.count(log, "uim:get_card_status request") == 1, "\(log)")
        #expect(MonitorTests.count(log, "nas:get_system_info request") == 1, "\(log)")
    }

    /// A handover (new channel, PCI and carriers) announces no indication: the cell refresh finds it.
    @Test func cellsAreReadAgain() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        let updates = Collector(ModemMonitor(
            ModemPortSpec(path: sim.link, protocol: .qmi), options: Self.options(cells: .milliseconds(400))).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        #expect(first.state.cells.cell?.physicalID == 123)
        try await sim.control(#"{"set":{"cell":{"tac":41001,"cell_id":26498900,"channel":6300,"pci":88},"carriers":[]}}"#)
        let moved = try await updates.next { $0.state.cells.cell?.physicalID == 88 }
        #expect(moved.cause == .poll)
        #expect(moved.state.cells.cell?.band == RadioBand(.lte, 20))
        #expect(moved.state.cells.carriers?.map(\.role) == [.pcell])
    }
}
