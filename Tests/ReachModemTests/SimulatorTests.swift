import Foundation
import Glibc
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// One scenario per generation and protocol, through the whole path: simulator bytes on a pty → libqmi/libmbim →
/// the adapter → ReachCore → `reach status --json`. Expected bars are the default (android) profile's for the
/// values in each scenario (worked out in the comments; the strict profile is in SignalProfileTests).
struct GenerationCase: CustomTestStringConvertible, Sendable {
    var name: String
    var proto: String
    var rats: [String]
    var signal: String
    var mbimex: String?
    var extra: String = ""
    var generation: String
    var nrMode: String?
    var bars: Int
    var testDescription: String { "\(proto) \(name)" }
}

@Suite(.serialized) struct StatusThroughSimulatorTests {
    static let cases: [GenerationCase] = [
        // GSM RSSI -95 dBm: ≥ -97 → 3 (CellSignalStrengthGsm). QMI System Info GSM in the PS domain → GPRS.
        .init(name: "2g-edge", proto: "qmi", rats: ["edge"], signal: #""rssi_dbm": -95"#, generation: "2g", bars: 3),
        // MBIM coded RSSI (-95 + 113) / 2 = 9 → -95 dBm.
        .init(name: "2g-edge", proto: "mbim", rats: ["edge"], signal: #""rssi_dbm": -95"#, generation: "2g", bars: 3),
        // WCDMA RSSI -85: ≥ -87 → 3 (CellSignalStrengthWcdma RSSI method).
        .init(name: "3g-hspa", proto: "qmi", rats: ["umts", "hsdpa", "hsupa"], signal: #""rssi_dbm": -85, "ecio_db": -6"#,
              generation: "3g", bars: 3),
        .init(name: "3g-hspa", proto: "mbim", rats: ["umts", "hsdpa", "hsupa"], signal: #""rssi_dbm": -85"#,
              generation: "3g", bars: 3),
        // LTE bars from RSRP alone (CarrierConfigManager -128/-118/-108/-98): -95 → 4.
        .init(name: "4g-lte", proto: "qmi", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95, "rsrq_db": -10, "sinr_db": 12"#,
              generation: "4g", bars: 4),
        // MBIMEx 2.0: the RSRP/SNR entry gives RSRP -95 → 4.
        .init(name: "4g-lte", proto: "mbim", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95, "sinr_db": 12"#,
              mbimex: "2.0", generation: "4g", bars: 4),
        // Plain MBIM 1.0 has RSSI only: the LTE RSSI fallback, -65 ≥ -89 → 4.
        .init(name: "4g-lte-mbim1", proto: "mbim", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#,
              mbimex: "1.0", generation: "4g", bars: 4),
        // NSA: the LTE anchor is primary (KEY_SIGNAL_STRENGTH_NR_NSA_USE_LTE_AS_PRIMARY_BOOL): RSRP -92 → 4.
        .init(name: "5g-nsa", proto: "qmi", rats: ["lte", "5gnr"],
              signal: #""rssi_dbm": -63, "rsrp_dbm": -92, "rsrq_db": -9, "sinr_db": 14, "nr": {"rsrp_dbm": -88, "rsrq_db": -11, "sinr_db": 18}"#,
              generation: "5g", nrMode: "nsa", bars: 4),
        // MBIMEx 3.0 (5G + ENDC subclass): the LTE entry's RSRP -92 → 4.
        .init(name: "5g-nsa", proto: "mbim", rats: ["lte", "5gnr"],
              signal: #""rssi_dbm": -63, "rsrp_dbm": -92, "sinr_db": 14, "nr": {"rsrp_dbm": -88, "sinr_db": 18}"#,
              mbimex: "3.0", generation: "5g", nrMode: "nsa", bars: 4),
        // MBIMEx 2.0 (5G_NSA data class) for the same radio conditions.
        .init(name: "5g-nsa-mbimex2", proto: "mbim", rats: ["lte", "5gnr"],
              signal: #""rssi_dbm": -63, "rsrp_dbm": -92, "sinr_db": 14, "nr": {"rsrp_dbm": -88, "sinr_db": 18}"#,
              mbimex: "2.0", generation: "5g", nrMode: "nsa", bars: 4),
        // SA: SS-RSRP -75 → 3 (≥ -80).
        .init(name: "5g-sa", proto: "qmi", rats: ["5gnr"], signal: #""rsrp_dbm": -75, "sinr_db": 22"#,
              generation: "5g", nrMode: "sa", bars: 3),
        .init(name: "5g-sa", proto: "mbim", rats: ["5gnr"], signal: #""rssi_dbm": -60, "rsrp_dbm": -75, "sinr_db": 22"#,
              mbimex: "3.0", generation: "5g", nrMode: "sa", bars: 3),
    ]

    @Test(arguments: cases)
    func generationAndBars(_ c: GenerationCase) async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered(c.proto, rats: c.rats, signal: c.signal, mbimex: c.mbimex))
        let status = try await reachStatusJSON(["--modem", "\(sim.link):\(c.proto)"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(status["wwan_status"] as? String == c.generation)
        #expect(modem["generation"] as? String == c.generation)
        #expect(modem["nr_mode"] as? String == c.nrMode)
        #expect(modem["bars"] as? Int == c.bars)
        #expect(modem["registration"] as? String == "home")
        #expect(modem["error"] is NSNull, "\(modem["error"] ?? "")")
        let op = try #require(modem["operator"] as? [String: Any])
        #expect(op["mcc"] as? String == "262")
        #expect(op["mnc"] as? String == "01")
        #expect(op["name"] as? String == "Telekom.de")
    }

    /// Every scenario the simulator ships (hw/scenarios) gives the generation and registration its state declares.
    @Test func everyShippedScenario() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: TestPaths.scenarios).filter { $0.hasSuffix(".json") }
        #expect(!files.isEmpty, "no scenarios in \(TestPaths.scenarios)")
        for file in files.sorted() {
            let path = TestPaths.scenarios + "/" + file
            let scenario = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            guard scenario["faults"] == nil, scenario["timeline"] == nil else { continue }  // fault scenarios: FaultTests
            let proto = scenario["protocol"] as! String
            let state = scenario["state"] as! [String: Any]
            let rats = AccessTechnologies(((state["access_technologies"] as? [String]) ?? []).compactMap(RadioAccessTechnology.init))
            let registered = ["home", "roaming"].contains(state["registration"] as? String)
            let expected = registered ? rats.generation.name : "none"
            let sim = try await ModemSimulator.start(scenario: path)
            let status = try await reachStatusJSON(["--modem", "\(sim.link):\(proto)"])
            let modem = try #require((status["wwan"] as? [[String: Any]])?.first, "\(file)")
            #expect(modem["generation"] as? String == expected, "\(file)")
            #expect(modem["registration"] as? String == (state["registration"] as? String), "\(file)")
            // The bars a description states ("(3 bars)") are the ones reach shows now (android profile); a signal
            // walk's description speaks of its later steps.
            if scenario["signal_walk"] == nil, let stated = Self.statedBars(scenario["description"] as? String ?? "") {
                #expect(modem["bars"] as? Int == stated, "\(file): its description says \(stated) bars")
            }
        }
    }

    /// The first "N bars" of a scenario's description: the default profile's, which the descriptions name first.
    static func statedBars(_ description: String) -> Int? {
        let words = description.split(whereSeparator: { $0 == " " || $0 == "(" })
        for i in words.indices.dropLast() where words[i + 1].hasPrefix("bar") {
            if let n = Int(words[i]) { return n }
        }
        return nil
    }

    /// Roaming: the operator is the visited network (PLMN and its name), not the SIM's home operator. QMI gives the
    /// name as NITZ in UCS-2 beside the SIM's service provider name "Telekom.de"; MBIM in Register State.
    @Test(arguments: ["qmi", "mbim"])
    func roamingNamesTheVisitedNetwork(proto: String) async throws {
        let sim = try await ModemSimulator.start(scenario: "\(proto)-roaming")
        let status = try await reachStatusJSON(["--modem", "\(sim.link):\(proto)"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(modem["registration"] as? String == "roaming")
        #expect(modem["roaming"] as? Bool == true)
        let op = try #require(modem["operator"] as? [String: Any])
        #expect(op["mcc"] as? String == "234")
        #expect(op["mnc"] as? String == "15")
        #expect(op["name"] as? String == "Vodafone UK")
    }

    /// IMEI, IMSI, ICCID and MSISDN never appear unless asked for.
    @Test(arguments: ["qmi", "mbim"])
    func identifiersOnlyWhenAsked(proto: String) async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -70"#))
        let plain = try await runReach(["status", "--json", "--no-wifi", "--modem-access", "direct", "--modem", "\(sim.link):\(proto)"]).stdout
        for id in ["356938035643809", "262011234567890", "89490200001234567890", "4915112345678", "identifiers"] {
            #expect(!plain.contains(id), "\(id) printed without --show-identifiers")
        }
        let shown = try await reachStatusJSON(["--modem", "\(sim.link):\(proto)", "--show-identifiers"])
        let ids = try #require(((shown["wwan"] as? [[String: Any]])?.first)?["identifiers"] as? [String: Any])
        #expect(ids["imei"] as? String == "356938035643809")
        #expect(ids["imsi"] as? String == "262011234567890")
        #expect(ids["iccid"] as? String == "89490200001234567890")
        #expect(ids["msisdn"] as? String == "+4915112345678")
    }

    /// A QMI read allocates NAS, DMS and UIM client ids and two WDS observers (IPv4, IPv6), and releases every one
    /// of them before closing.
    @Test func clientIDsAreReleased() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -70"#))
        let (_, states) = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: .qmi)], options: ModemReadOptions(access: .direct))
        #expect(states.first?.error == nil)
        try await Task.sleep(for: .milliseconds(100))
        let log = sim.log
        let allocated = log.components(separatedBy: "ctl:allocate_cid response").count - 1
        let released = log.components(separatedBy: "ctl:release_cid response").count - 1
        #expect(allocated == 5)
        #expect(released == allocated)
        #expect(log.components(separatedBy: "wds:set_ip_family response").count - 1 == 2)
    }

    /// MBIM: the session is closed with CLOSE_MSG.
    @Test func mbimSessionIsClosed() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered("mbim", rats: ["lte"], signal: #""rssi_dbm": -70"#))
        _ = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: .mbim)], options: ModemReadOptions(access: .direct))
        try await Task.sleep(for: .milliseconds(100))
        #expect(sim.log.contains("MBIM closeDone"))
    }
}

/// Captured replies from real modems (libqmi/libmbim test suites, hw/captures) replayed to GatewayReach.
@Suite struct ReplayTests {
    /// libqmi test_generated_nas_get_serving_system: the modem has no System Info, so GatewayReach falls back to
    /// Serving System: registered on UMTS with HSDPA/HSUPA/WCDMA capabilities, 222/50, "Iliad" (GSM 7-bit).
    @Test func servingSystemUMTSIsThreeG() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/qmi-nas-get-serving-system-umts-iliad.json")
        let status = try await reachStatusJSON(["--modem", "\(sim.link):qmi"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(status["wwan_status"] as? String == "3g")
        #expect(modem["access_technologies"] as? [String] == ["umts", "hsdpa", "hsupa"])
        let op = try #require(modem["operator"] as? [String: Any])
        #expect(op["mcc"] as? String == "222")
        #expect(op["mnc"] as? String == "50")
        #expect(op["name"] as? String == "Iliad")
    }

    /// libqmi test_generated_nas_get_system_info (libqmi#33): LTE, MNC "24" padded with 0xFF.
    @Test func systemInfoLTEIsFourG() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/qmi-nas-get-system-info-lte-530-24.json")
        let status = try await reachStatusJSON(["--modem", "\(sim.link):qmi"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(status["wwan_status"] as? String == "4g")
        let op = try #require(modem["operator"] as? [String: Any])
        #expect(op["mcc"] as? String == "530")
        #expect(op["mnc"] as? String == "24")
    }

    /// libqmi test_message_parse_complete: Get Signal Strength -101 dBm on UMTS, EC/IO -8.5 dB.
    @Test func signalStrengthMinus101() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/qmi-nas-get-signal-strength-umts-101.json")
        let (_, states) = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: .qmi)], options: ModemReadOptions(requestTimeout: .seconds(2), access: .direct))
        let state = try #require(states.first)
        #expect(state.signal.rssi == -101)
        #expect(state.signal.ecio == -8.5)
        #expect(state.qualityPercent == 20)
    }

    /// libmbim test_basic_connect_register_state: home, UMTS/HSDPA/HSUPA, provider 26006.
    @Test func mbimRegisterStateUMTSIsThreeG() async throws {
        let sim = try await ModemSimulator.start(replay: TestPaths.captures + "/mbim-register-state-umts-26006.json")
        let status = try await reachStatusJSON(["--modem", "\(sim.link):mbim", "--modem-timeout", "2"])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(status["wwan_status"] as? String == "3g")
        #expect(modem["generation"] as? String == "3g")
        let op = try #require(modem["operator"] as? [String: Any])
        #expect(op["mcc"] as? String == "260")
        #expect(op["mnc"] as? String == "06")
    }
}
