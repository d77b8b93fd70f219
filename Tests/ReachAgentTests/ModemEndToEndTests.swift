import Foundation
import ReachAgent
import ReachCore
import Testing

/// `reach agent` reading a simulated modem (reach-modem-sim on a pty, changed through its control socket): a RAT
/// flip gives one change line, signal noise below the hysteresis gives none, a real drop gives one.
@Suite(.serialized) struct ModemEndToEndTests {
    static var simBinary: String {
        URL(fileURLWithPath: reachBinary()).deletingLastPathComponent().appendingPathComponent("reach-modem-sim").path
    }

    /// Sends one control line and returns the answer line.
    static func control(_ socketPath: String, _ line: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { buf in
            for (i, b) in socketPath.utf8.prefix(buf.count - 1).enumerated() { buf[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else { throw SystemError("connect \(socketPath)", errno: errno) }
        let bytes = Array((line + "\n").utf8)
        _ = write(fd, bytes, bytes.count)
        var answer: [UInt8] = []
        var b: UInt8 = 0
        while read(fd, &b, 1) == 1 && b != UInt8(ascii: "\n") { answer.append(b) }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test func ratFlipAndSignalNoise() throws {
        guard requirement(FileManager.default.isExecutableFile(atPath: Self.simBinary), "reach-modem-sim built") else { return }
        let dir = try makeTempDir("reach-modem-e2e")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = PackagingTests.root
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: Self.simBinary)
        sim.arguments = ["--scenario", root + "/hw/scenarios/qmi-4g-lte.json", "--link", dir + "/modem", "--control", dir + "/control.sock"]
        sim.standardOutput = FileHandle.nullDevice
        sim.standardError = FileHandle.nullDevice
        try sim.run()
        defer {
            sim.terminate()
            sim.waitUntilExit()
        }
        #expect(EndToEndTests.waitFor("sim") { FileManager.default.fileExists(atPath: dir + "/control.sock") })

        let config = """
            {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},
             "changes":{"hold_down_seconds":0.3,"bar_hysteresis_db":3},
             "modems":{"ports":[{"path":"\(dir)/modem","protocol":"qmi"}],"request_timeout_seconds":2,"poll_interval_seconds":600},
             "wifi":{"enabled":false}}
            """
        let agent = try EndToEndTests.AgentProcess(config: config, dir: dir)
        #expect(EndToEndTests.waitFor("start", timeout: 15) { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        let modem = try #require(start["wwan"]?.arrayValue?.first)
        #expect(modem["generation"] == .string("4g"), "\(start.serialized())")
        #expect(modem["bars"] == .int(3))
        #expect(start["wwan_status"] == .string("4g"))
        #expect(modem["identifiers"] == nil)  // never written by the agent

        func changes(_ field: String) -> [JSON] {
            agent.events("change").filter { $0["event"]?["changed"]?.arrayValue?.contains(.string(field)) == true }
        }

        // 4G → 2G: a downgrade, held down 0.3 s, then one line naming wwan_status. (EDGE's bars come from RSSI, -65
        // dBm = 4 bars: that improvement is its own line at once, and that line's event.held names wwan_status.)
        #expect(try Self.control(dir + "/control.sock", #"{"set":{"access_technologies":["edge"]}}"#).contains("true"))
        #expect(EndToEndTests.waitFor("2g") { changes("wwan_status").count == 1 })
        var change = try #require(changes("wwan_status").first)
        #expect(change["wwan_status"] == .string("2g"))
        #expect(change["event"]?["reason"]?.stringValue?.contains("4g→2g") == true, "\(change.serialized())")
        if let early = agent.events("change").first, early["event"]?["changed"] == .array([.string("bars")]) {
            #expect(early["event"]?["held"]?.arrayValue?.contains(.string("wwan_status")) == true)
        }

        // Back to LTE: an upgrade, at once.
        #expect(try Self.control(dir + "/control.sock", #"{"set":{"access_technologies":["lte"]}}"#).contains("true"))
        #expect(EndToEndTests.waitFor("4g") { changes("wwan_status").count == 2 })
        #expect(changes("wwan_status")[1]["wwan_status"] == .string("4g"))
        // Let the bars settle (LTE's 3 bars after EDGE's 4 is a loss: held 0.3 s).
        #expect(EndToEndTests.waitFor("settled") {
            agent.lines.last?["wwan"]?.arrayValue?.first?["bars"] == .int(3) && agent.lines.last?["event"]?["held"] == nil
        })
        let settled = agent.events("change").count

        // RSRP around the -95 dBm boundary (3/2 bars), within the 3 dB hysteresis: no line.
        for rsrp in [-96, -94, -97, -95, -96] {
            #expect(try Self.control(dir + "/control.sock", #"{"set":{"signal":{"rssi_dbm":-65,"rsrp_dbm":\#(rsrp),"rsrq_db":-10,"sinr_db":12.5}}}"#).contains("true"))
            Thread.sleep(forTimeInterval: 0.1)
        }
        Thread.sleep(forTimeInterval: 0.8)
        #expect(agent.events("change").count == settled)
        // -101 dBm crosses -98: 3 → 2 bars, one line after the hold-down.
        #expect(try Self.control(dir + "/control.sock", #"{"set":{"signal":{"rssi_dbm":-65,"rsrp_dbm":-101,"rsrq_db":-10,"sinr_db":12.5}}}"#).contains("true"))
        #expect(EndToEndTests.waitFor("bars") { agent.events("change").count == settled + 1 })
        change = agent.events("change")[settled]
        #expect(change["event"]?["changed"] == .array([.string("bars")]))
        let bars = change["event"]?["bars"]?.arrayValue?.first
        #expect(bars?["from"] == .int(3) && bars?["to"] == .int(2))

        let (status, log) = agent.stop()
        #expect(status == 0, "\(log)")
        #expect(agent.lines.last?["event"]?["type"] == .string("stop"))
        #expect(agent.events("change").count == settled + 1)
    }
}
