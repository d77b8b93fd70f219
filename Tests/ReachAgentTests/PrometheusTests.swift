import Foundation
import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

func makeTempDir(_ prefix: String) throws -> String {
    // The pid in the name lets ReachTestSupport's janitor find it should this process die before removing it.
    let path = NSTemporaryDirectory() + prefix + "-\(getpid())-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite struct PrometheusTests {
    static func sample() -> MetricsInput {
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        s.route = Routes.via("wwan0", kind: .wwan)
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .mbim)
        m.interface = "wwan0"
        m.registration = .home
        m.accessTechnologies = [.lte, .nr]
        m.signal = SignalMeasurement(rsrp: -97, rsrq: -11, sinr: 9)
        m.nrSignal = SignalMeasurement(rsrp: -85)
        s.wwan = [m]
        var w = WiFiLink(interface: "wlan\"1", mode: .station, associated: true)
        w.signalDBm = -61
        s.wifi = [w]
        s.derive()
        var stats = ReportLog.Stats()
        stats.linesWritten = 42
        stats.linesDropped = 3
        stats.errors = 4
        return MetricsInput(
            targets: [.init(snapshot: s, view: nil, changes: 7, lastChange: Timestamp(seconds: 1_795_305_000))], log: stats)
    }

    @Test func rendersGaugesWithEscapedLabels() {
        let text = PrometheusText.render(Self.sample())
        #expect(text.contains("reach_reachable{target=\"default\"} 1\n"))
        #expect(text.contains("reach_status{target=\"default\",status=\"wwan\"} 1\n"))
        #expect(text.contains("reach_wwan_generation{target=\"default\"} 5\n"))
        // android: under NSA the LTE anchor gives the bars, RSRP -97 ≥ -98 → 4 (strict would take the NR leg: 2).
        #expect(text.contains("reach_modem_bars{device=\"/dev/cdc-wdm0\",interface=\"wwan0\"} 4\n"))
        #expect(text.contains("reach_modem_bars_profile{profile=\"android\",custom_thresholds=\"false\"} 1\n"))
        #expect(text.contains("reach_modem_signal_dbm{device=\"/dev/cdc-wdm0\",interface=\"wwan0\",measure=\"rsrp\"} -97\n"))
        #expect(text.contains("reach_wifi_signal_dbm{interface=\"wlan\\\"1\"} -61\n"))
        #expect(text.contains("reach_report_dropped_lines_total 3\n"))
        #expect(text.contains("reach_last_change_timestamp_seconds{target=\"default\"} 1795305000\n"))
    }

    /// The snapshot's policy gives the gauge: strict reads the NR leg under NSA (SS-RSRP -85 → 2).
    @Test func barsFollowTheSnapshotPolicy() throws {
        var input = Self.sample()
        input.targets[0].snapshot.signalPolicy = .strict
        let text = PrometheusText.render(input)
        #expect(text.contains("reach_modem_bars{device=\"/dev/cdc-wdm0\",interface=\"wwan0\"} 2\n"))
        #expect(text.contains("reach_modem_bars_profile{profile=\"strict\",custom_thresholds=\"false\"} 1\n"))
    }

    /// Debian's node_exporter, its textfile collector only, on a free loopback port, scraped with curl.
    @Test(
        .needs(FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus-node-exporter"), "prometheus-node-exporter installed"),
        .needs(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl installed")) func nodeExporterServesTheTextfile() async throws {
        let exporter = "/usr/bin/prometheus-node-exporter"
        let dir = try makeTempDir("reach-prom")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = PrometheusTextfile(path: dir + "/reach.prom", logger: testLogger())
        #expect(file.write(PrometheusText.render(Self.sample())))
        // No temporary file left beside it (node_exporter would not read one, but it must not pile up).
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["reach.prom"])

        // A free port: bind port 0 on loopback, read it back, close, hand it to node_exporter.
        let port = try freeLoopbackPort()
        let p = try await Spawned.start([
            exporter, "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
            "--collector.textfile.directory=\(dir)",
        ])
        defer { p.stop() }
        var body = ""
        for _ in 0..<100 {
            let r = try await TestSupport.run(
                ["curl", "-sf", "--max-time", "2", "http://127.0.0.1:\(port)/metrics"], timeout: 10)
            if r.status == 0 {
                body = r.stdout
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(body.contains("reach_reachable{target=\"default\"} 1"))
        #expect(body.contains("reach_modem_bars{device=\"/dev/cdc-wdm0\",interface=\"wwan0\"} 4"))
        #expect(body.contains("reach_modem_bars_profile{custom_thresholds=\"false\",profile=\"android\"} 1"))
        #expect(body.contains("reach_report_dropped_lines_total 3"))
        // node_exporter says whether it could parse our file: no scrape error.
        #expect(body.contains("node_textfile_scrape_error 0"))
    }
}

func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
        }
    }
    guard ok else { throw SystemError("bind", errno: errno) }
    return Int(UInt16(bigEndian: addr.sin_port))
}
