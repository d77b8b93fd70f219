import Foundation
import ReachTestSupport
import Testing

/// The signal profiles through the binary: a simulated QMI modem (its replies checked with qmicli first), then
/// `reach status --json` with the default configuration (android) and with `"signal": {"profile": "strict"}`.
struct SignalProfileCase: CustomTestStringConvertible, Sendable {
    var scenario: String
    /// qmicli arguments and lines its output must contain: the modem says what the scenario says.
    var qmicli: [String]
    var qmicliLines: [String]
    var android: Int
    var strict: Int
    /// The serving cell's RSSI and ModemManager's quality figure, nil when there must be none.
    var rssi: Double?
    var quality: Int?
    var testDescription: String { scenario }
}

@Suite(.serialized) struct SignalProfileThroughSimulatorTests {
    static let cases: [SignalProfileCase] = [
        // The phone shows 2 bars (RSRP -110 ≥ -118); strict: min(RSRP 1, RSRQ 4, SNR 3) = 1.
        .init(
            scenario: "qmi-signal-info-lte-rsrp-110", qmicli: ["--nas-get-signal-info"],
            qmicliLines: ["LTE:", "RSRP: '-110 dBm'", "RSRQ: '-12 dB'", "SNR: '5.0 dB'"],
            android: 2, strict: 1, rssi: -80, quality: 54),
        // NSA: the phone's LTE anchor, -100 ≥ -108 → 3; strict's NR leg, -115 < -110 → 0.
        .init(
            scenario: "qmi-signal-info-nsa-lte-100-nr-115", qmicli: ["--nas-get-signal-info"],
            qmicliLines: ["LTE:", "RSRP: '-100 dBm'", "5G:", "RSRP: '-115 dBm'"],
            android: 3, strict: 0, rssi: -72, quality: 67),
        // 0 dBm: no RSSI, no quality; the bars come from the RSRP TLV, -95 (android ≥ -98: 4; strict 3).
        .init(
            scenario: "qmi-signal-strength-0dbm", qmicli: ["--nas-get-signal-strength"],
            qmicliLines: ["Current:", "Network 'lte': '0 dBm'", "RSRP:", "Network 'lte': '-95 dBm'"],
            android: 4, strict: 3, rssi: nil, quality: nil),
        // UMTS main strength -125 dBm: outside MM's window, the reply gives no quality (despite LTE -70 in the
        // list) and no RSSI: 0 bars in both profiles.
        .init(
            scenario: "qmi-signal-strength-invalid-main", qmicli: ["--nas-get-signal-strength"],
            qmicliLines: ["Network 'umts': '-125 dBm'", "Other:", "Network 'lte': '-70 dBm'"],
            android: 0, strict: 0, rssi: nil, quality: nil),
    ]

    @Test(arguments: cases)
    func profileBars(_ c: SignalProfileCase) async throws {
        let sim = try await ModemSimulator.start(scenario: c.scenario)
        defer { sim.stop() }
        let q = try await TestSupport.run(["qmicli", "-d", sim.pty, "--device-open-qmi"] + c.qmicli, timeout: 10)
        #expect(q.status == 0, "\(q.stderr)")
        for line in c.qmicliLines { #expect(q.stdout.contains(line), "qmicli \(c.qmicli): \(line)\n\(q.stdout)") }

        let android = try await reachStatusJSON(["--modem", "\(sim.link):qmi"])
        let a = try #require((android["wwan"] as? [[String: Any]])?.first)
        #expect(a["error"] is NSNull, "\(a["error"] ?? "")")
        #expect(a["bars"] as? Int == c.android)
        #expect(a["bars_profile"] as? String == "android")
        #expect(a["bars_overrides"] == nil)
        let signal = try #require(a["signal"] as? [String: Any])
        #expect((signal["rssi_dbm"] as? Double) == c.rssi, "\(signal)")
        if let quality = c.quality {
            #expect(a["quality_percent"] as? Int == quality)
        } else {
            #expect(a["quality_percent"] is NSNull)
        }

        let config = NSTemporaryDirectory() + "reach-signal-\(getpid())-\(UUID().uuidString.prefix(8)).json"
        try #"{"signal": {"profile": "strict"}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let strict = try await reachStatusJSON(["--modem", "\(sim.link):qmi", "--config", config])
        let s = try #require((strict["wwan"] as? [[String: Any]])?.first)
        #expect(s["bars"] as? Int == c.strict)
        #expect(s["bars_profile"] as? String == "strict")
    }

    /// A threshold the configuration replaces reaches the binary's bars and is named in the JSON; a bad one is a
    /// configuration error (exit 78) that names its key.
    @Test func thresholdOverrideAndItsValidation() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-signal-info-lte-rsrp-110")
        defer { sim.stop() }
        let dir = NSTemporaryDirectory() + "reach-signal-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = dir + "/good.json"
        try #"{"signal": {"thresholds": {"lte": {"rsrp": [-115, -105, -95, -85]}}}}"#
            .write(toFile: good, atomically: true, encoding: .utf8)
        let status = try await reachStatusJSON(["--modem", "\(sim.link):qmi", "--config", good])
        let m = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect(m["bars"] as? Int == 1)  // -110 ≥ -115 only
        #expect(m["bars_profile"] as? String == "android")
        #expect(m["bars_overrides"] as? [String] == ["lte.rsrp"])

        let bad = dir + "/bad.json"
        try #"{"signal": {"thresholds": {"lte": {"rsrp": [-98, -108, -118, -128]}}}}"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let r = try await runReach(["status", "--json", "--no-wifi", "--modem", "\(sim.link):qmi", "--config", bad])
        #expect(r.status == 78)
        #expect(r.stderr.contains("signal.thresholds.lte.rsrp: expected four ascending numbers"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}
