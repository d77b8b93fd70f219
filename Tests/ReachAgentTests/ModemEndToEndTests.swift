import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// `reach agent` reading a simulated modem (reach-modem-sim on a pty, changed through its control socket): a RAT
/// flip gives one change line, signal noise below the hysteresis gives none, a real drop gives one.
@Suite(.serialized) struct ModemEndToEndTests {
    @Test(.needs(TestPaths.isBuilt(TestPaths.simulator), "reach-modem-sim built")) func ratFlipAndSignalNoise() async throws {
        let dir = try makeTempDir("reach-modem-e2e")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sim = try await ModemSimulator.start(scenario: PackagingTests.root + "/hw/scenarios/qmi-4g-lte.json")
        defer { sim.stop() }
        let control = try #require(sim.controlPath)
        #expect(await EndToEndTests.waitFor("sim") { FileManager.default.fileExists(atPath: control) })

        // The hold-down is also the window in which a RAT change and the signal that goes with it (two indications,
        // handled one after the other) make one state. At 0.3 s a loaded machine sometimes handled the signal later:
        // the agent then reported "2g, 0 bars" (no GSM signal yet), LTE came back at 2 bars through the hysteresis
        // instead of 3, and every later step was off.
        let holdDown = 1.0
        // The strict profile (the minimum of RSRP/RSRQ/SNR on CellSignalStrengthLte's built-in tables): the
        // configuration's choice reaches the agent's snapshots, its change detection and hysteresis, and the QMI
        // indication thresholds (-95 dBm is a boundary only in this profile).
        let config = """
            {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},
             "changes":{"hold_down_seconds":\(holdDown),"bar_hysteresis_db":3},
             "signal":{"profile":"strict"},
             "modems":{"ports":[{"path":"\(sim.link)","protocol":"qmi"}],"request_timeout_seconds":2,"poll_interval_seconds":600,
                       "access":"direct"},
             "wifi":{"enabled":false},"api":{"state_directory":null,"hooks_directory":null}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir)
        #expect(await EndToEndTests.waitFor("start", timeout: 15) { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        let modem = try #require(start["wwan"]?.arrayValue?.first)
        #expect(modem["generation"] == .string("4g"), "\(start.serialized())")
        #expect(modem["bars"] == .int(3))
        #expect(modem["bars_profile"] == .string("strict"))
        #expect(start["wwan_status"] == .string("4g"))
        #expect(modem["identifiers"] == nil)  // never written by the agent

        func changes(_ field: String) -> [JSON] {
            agent.events("change").filter { $0["event"]?["changed"]?.arrayValue?.contains(.string(field)) == true }
        }

        // 4G → 2G: a downgrade, held down, then one line naming wwan_status. (EDGE's bars come from RSSI, -65
        // dBm = 4 bars: that improvement is its own line at once, and that line's event.held names wwan_status.)
        #expect(try await sim.control(#"{"set":{"access_technologies":["edge"]}}"#).contains("true"))
        #expect(await EndToEndTests.waitFor("2g") { changes("wwan_status").count == 1 })
        var change = try #require(changes("wwan_status").first)
        #expect(change["wwan_status"] == .string("2g"))
        #expect(change["event"]?["reason"]?.stringValue?.contains("4g→2g") == true, "\(change.serialized())")
        if let early = agent.events("change").first, early["event"]?["changed"] == .array([.string("bars")]) {
            #expect(early["event"]?["held"]?.arrayValue?.contains(.string("wwan_status")) == true)
        }

        // Back to LTE: an upgrade, at once.
        #expect(try await sim.control(#"{"set":{"access_technologies":["lte"]}}"#).contains("true"))
        try #require(await EndToEndTests.waitFor("4g") { changes("wwan_status").count == 2 }, "\(agent.lines)")
        #expect(changes("wwan_status")[1]["wwan_status"] == .string("4g"))
        // Let the bars settle (LTE's 3 bars after EDGE's 4 is a loss: held down).
        #expect(await EndToEndTests.waitFor("settled") {
            agent.lines.last?["wwan"]?.arrayValue?.first?["bars"] == .int(3) && agent.lines.last?["event"]?["held"] == nil
        }, "\(agent.lines.map { $0.serialized() })")
        let settled = agent.events("change").count

        // RSRP around the -95 dBm boundary (3/2 bars), within the 3 dB hysteresis: no line.
        for rsrp in [-96, -94, -97, -95, -96] {
            #expect(try await sim.control(#"{"set":{"signal":{"rssi_dbm":-65,"rsrp_dbm":\#(rsrp),"rsrq_db":-10,"sinr_db":12.5}}}"#).contains("true"))
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(holdDown + 0.5))  // a held change would be out by now
        #expect(agent.events("change").count == settled)
        // -101 dBm crosses -98: 3 → 2 bars, one line after the hold-down.
        #expect(try await sim.control(#"{"set":{"signal":{"rssi_dbm":-65,"rsrp_dbm":-101,"rsrq_db":-10,"sinr_db":12.5}}}"#).contains("true"))
        try #require(await EndToEndTests.waitFor("bars") { agent.events("change").count == settled + 1 },
                     "\(agent.lines.map { $0.serialized() })")
        change = agent.events("change")[settled]
        #expect(change["event"]?["changed"] == .array([.string("bars")]))
        let bars = change["event"]?["bars"]?.arrayValue?.first
        #expect(bars?["from"] == .int(3) && bars?["to"] == .int(2))

        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        #expect(agent.lines.last?["event"]?["type"] == .string("stop"))
        #expect(agent.events("change").count == settled + 1)
    }
}
