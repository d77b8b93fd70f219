import Testing
@testable import ReachCore

@Suite struct ConfigTests {
    @Test func emptyObjectIsTheDefaults() throws {
        let c = try AgentConfig.parse("{}")
        #expect(c == AgentConfig())
        #expect(c.report.path == "/var/log/reach/reach.jsonl")
        #expect(c.report.intervalSeconds == 60)
        #expect(c.targets == [.defaultRoute])
        #expect(c.changePolicy == ChangePolicy.standard)
    }

    @Test func fullConfigRoundTrips() throws {
        let text = """
            {"schema":1,"report":{"path":"/tmp/r.jsonl","interval_seconds":5,"rotate_bytes":65536,"rotate_keep":2},
             "changes":{"hold_down_seconds":2.5,"bar_hysteresis_db":4},
             "signal":{"profile":"strict","thresholds":{"lte":{"rsrp":[-120,-110,-100,-90]},"wcdma":{"rscp":[-116,-106,-96,-86]}}},
             "targets":[{"kind":"default"},{"kind":"address","value":"2001:db8::1"},{"kind":"host","value":"example.net"},
                        {"kind":"link_local"}],
             "modems":{"enabled":true,"ports":[{"path":"/dev/cdc-wdm0","protocol":"mbim","interface":"wwan0"}],
                       "request_timeout_seconds":3,"poll_interval_seconds":120},
             "wifi":{"enabled":false,"interfaces":["wlan1"],"poll_interval_seconds":10},
             "interface_kinds":{"ppp0":"wwan"},
             "probe":{"kind":"tcp","host":"192.0.2.10","port":443,"timeout_seconds":1.5},
             "prometheus":{"textfile":"/var/lib/prometheus/node-exporter/reach.prom"},
             "diag":{"report_lines":50},"log_level":"debug"}
            """
        let c = try AgentConfig.parse(text)
        #expect(c.report.rotateKeep == 2)
        #expect(c.changePolicy == ChangePolicy(holdDown: .milliseconds(2500), barHysteresisDB: 4))
        #expect(c.targets == [.defaultRoute, .address("2001:db8::1"), .host("example.net"), .linkLocal])
        #expect(c.modems.ports == [ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim, interface: "wwan0")])
        #expect(c.interfaceKinds == ["ppp0": .wwan])
        #expect(c.probe == AgentConfig.Probe(kind: .tcp, host: "192.0.2.10", port: 443, timeoutSeconds: 1.5))
        #expect(c.logLevel == .debug)
        #expect(c.signal.profile == .strict)
        #expect(c.signalPolicy.overridden == ["wcdma.rscp", "lte.rsrp"])
        #expect(c.signalPolicy.level(BarFamily.lte, SignalMeasurement(rsrp: -110)) == 2)
        // The written form parses back to the same config.
        #expect(try AgentConfig.parse(c.json.prettySerialized()) == c)
    }

    /// Each bad value is named by its key path, with what was expected.
    @Test(arguments: [
        (#"{"report":{"interval_seconds":-1}}"#, "report.interval_seconds", "expected a number of seconds"),
        (#"{"report":{"interval_seconds":"60"}}"#, "report.interval_seconds", "found \"60\""),
        (#"{"report":{"intervall_seconds":60}}"#, "report.intervall_seconds", "unknown key"),
        (#"{"report":{"rotate_keep":1.5}}"#, "report.rotate_keep", "expected an integer from 0 to 100"),
        (#"{"report":{"path":""}}"#, "report.path", "an empty path"),
        // Paths a daemon opens from "/": absolute, NUL-free, a file (d680fe5 took all three).
        (#"{"report":{"path":"reach.jsonl"}}"#, "report.path", "expected an absolute file path, found \"reach.jsonl\": not an absolute path"),
        (#"{"report":{"path":"/var/log/reach/\u0000/etc/passwd"}}"#, "report.path", "contains U+0000 (NUL)"),
        (#"{"report":{"path":"/var/log/reach/"}}"#, "report.path", "names a directory"),
        (#"{"report":{"path":7}}"#, "report.path", "expected an absolute file path, found 7"),
        (#"{"prometheus":{"textfile":"reach.prom"}}"#, "prometheus.textfile", "not an absolute path"),
        (#"{"prometheus":{"textfile":"/var/lib/node/\u0000.prom"}}"#, "prometheus.textfile", "contains U+0000 (NUL)"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0\u0000"}]}}"#, "modems.ports[0].path", "contains U+0000"),
        (#"{"wifi":{"interfaces":[""]}}"#, "wifi.interfaces[0]", "an empty name"),
        (#"{"wifi":{"interfaces":["eth0:1"]}}"#, "wifi.interfaces[0]", "contains ':'"),
        (#"{"wifi":{"interfaces":["wlan\t0"]}}"#, "wifi.interfaces[0]", "white space"),
        (#"{"wifi":{"interfaces":["wlan0123456789ab"]}}"#, "wifi.interfaces[0]", "longer than 15 bytes"),
        (#"{"interface_kinds":{"":"wwan"}}"#, "interface_kinds.", "an empty name"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0","interface":""}]}}"#, "modems.ports[0].interface", "an empty name"),
        (#"{"probe":{"kind":"tcp","host":"192.0.2.1","query":"example.net"}}"#, "probe.query", "only for kind dns"),
        // Duplicates: equal Prometheus series (node_exporter refuses the file), two monitors on one port.
        (#"{"targets":[{"kind":"default"},{"kind":"link_local"},{"kind":"default"}]}"#, "targets[2]", "the same target as targets[0]"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0"},{"path":"/dev/cdc-wdm0","protocol":"qmi"}]}}"#, "modems.ports[1]", "the same port path as modems.ports[0]"),
        (#"{"wifi":{"interfaces":["wlan0","wlan1","wlan0"]}}"#, "wifi.interfaces[2]", "the same interface as wifi.interfaces[0]"),
        (#"{"probe":{"kind":"dns","host":"192.0.2.1","query":"two words"}}"#, "probe.query", "a domain name"),
        (#"{"report":[]}"#, "report", "expected an object"),
        (#"{"changes":{"hold_down_seconds":7200}}"#, "changes.hold_down_seconds", "from 0 to 3600"),
        (#"{"changes":{"bar_hysteresis_db":true}}"#, "changes.bar_hysteresis_db", "dB"),
        (#"{"targets":[]}"#, "targets", "at least one target"),
        (#"{"targets":[{"kind":"host","value":"bad host"}]}"#, "targets[0].value", "host name"),
        (#"{"targets":[{"kind":"default"},{"kind":"address","value":"300.1.1.1"}]}"#, "targets[1].value", "IPv4 or IPv6"),
        (#"{"targets":[{"kind":"url"}]}"#, "targets[0].kind", "expected default, link_local"),
        (#"{"modems":{"ports":[{"path":"cdc-wdm0"}]}}"#, "modems.ports[0].path", "absolute device path"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0","protocol":"at"}]}}"#, "modems.ports[0].protocol", "qmi, mbim"),
        (#"{"modems":{"request_timeout_seconds":0}}"#, "modems.request_timeout_seconds", "from 0.1 to 120"),
        (#"{"wifi":{"interfaces":["wlan0/x"]}}"#, "wifi.interfaces[0]", "interface name"),
        (#"{"wifi":{"enabled":"yes"}}"#, "wifi.enabled", "true or false"),
        (#"{"interface_kinds":{"ppp0":"cellular"}}"#, "interface_kinds.ppp0", "expected one of wwan, wifi"),
        (#"{"uplinks":{"interface":"wwan0"}}"#, "uplinks", "expected an array"),
        (#"{"uplinks":["wwan0"]}"#, "uplinks[0]", "expected an object"),
        (#"{"uplinks":[{"role":"backup"}]}"#, "uplinks[0].interface", "missing"),
        (#"{"uplinks":[{"interface":"wwan0/1"}]}"#, "uplinks[0].interface", "interface name"),
        (#"{"uplinks":[{"interface":"an-interface-name-too-long"}]}"#, "uplinks[0].interface", "longer than 15 bytes"),
        (#"{"uplinks":[{"interface":7}]}"#, "uplinks[0].interface", "found 7"),
        (#"{"uplinks":[{"interface":"wwan0","role":"failover"}]}"#, "uplinks[0].role", "expected one of primary, backup"),
        (#"{"uplinks":[{"interface":"wwan0","metric":20}]}"#, "uplinks[0].metric", "unknown key"),
        (#"{"uplinks":[{"interface":"wwan0"},{"interface":"eth0"},{"interface":"wwan0"}]}"#, "uplinks[2].interface",
         "already listed at uplinks[0]"),
        (#"{"probe":{"kind":"icmp","host":"192.0.2.1"}}"#, "probe.kind", "tcp or dns"),
        (#"{"probe":{"kind":"tcp"}}"#, "probe.host", "missing"),
        (#"{"probe":{"kind":"tcp","host":"192.0.2.1","port":70000}}"#, "probe.port", "from 1 to 65535"),
        (#"{"prometheus":{"textfile":"/tmp/reach.txt"}}"#, "prometheus.textfile", ".prom"),
        (#"{"log_level":"verbose"}"#, "log_level", "expected one of trace"),
        (#"{"schema":2}"#, "schema", "expected 1"),
        (#"{"colour":"blue"}"#, "colour", "unknown key"),
        (#"{"signal":{"profile":"ios"}}"#, "signal.profile", "expected one of android, strict"),
        (#"{"signal":{"profil":"strict"}}"#, "signal.profil", "unknown key"),
        (#"{"signal":{"thresholds":{"lte":{"rsrp":[-128,-118,-108]}}}}"#, "signal.thresholds.lte.rsrp",
         "expected four ascending numbers"),
        (#"{"signal":{"thresholds":{"lte":{"rsrp":[-98,-108,-118,-128]}}}}"#, "signal.thresholds.lte.rsrp",
         "expected four ascending numbers"),
        (#"{"signal":{"thresholds":{"lte":{"rsrp":[-128,-118,"x",-98]}}}}"#, "signal.thresholds.lte.rsrp",
         "expected four ascending numbers"),
        (#"{"signal":{"thresholds":{"lte":{"rsrp":"-128"}}}}"#, "signal.thresholds.lte.rsrp", "found \"-128\""),
        (#"{"signal":{"thresholds":{"lte":{"rsrp":[-150,-118,-108,-98]}}}}"#, "signal.thresholds.lte.rsrp",
         "expected values from -140 to -44 dBm"),
        (#"{"signal":{"thresholds":{"lte":{"rsrq":[-20,-17,-14,-11]}}}}"#, "signal.thresholds.lte.rsrq",
         "not a measure the android profile uses for lte (expected one of: rsrp, rssi)"),
        (#"{"signal":{"profile":"strict","thresholds":{"nr":{"rscp":[-1,-2,-3,-4]}}}}"#, "signal.thresholds.nr.rscp",
         "not a measure the strict profile uses for nr (expected one of: rsrp, rsrq, sinr)"),
        (#"{"signal":{"thresholds":{"umts":{"rssi":[-107,-97,-87,-77]}}}}"#, "signal.thresholds.umts",
         "unknown radio family (expected one of: gsm, wcdma, cdma, evdo, lte, nr)"),
        (#"{"signal":{"thresholds":{"gsm":[-107,-103,-97,-89]}}}"#, "signal.thresholds.gsm", "expected an object of measures"),
    ])
    func badValueNamesItsKey(text: String, key: String, message: String) {
        do {
            _ = try AgentConfig.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.problems.contains { $0.key == key }, "\(error)")
            #expect(error.problems.first { $0.key == key }?.message.contains(message) == true, "\(error)")
        }
    }

    /// `--check-config` prints every threshold of the profile; reading that back replaces nothing.
    @Test func printedSignalThresholdsAreNoOverride() throws {
        let c = try AgentConfig.parse(AgentConfig().json.serialized())
        #expect(c.signal.thresholds.isEmpty)
        #expect(c.signalPolicy == .android)
        let lte = AgentConfig().json["signal"]?["thresholds"]?["lte"]
        #expect(lte?["rsrp"] == .array([-128, -118, -108, -98].map { JSON.double($0) }))
        #expect(lte?["rssi"] == .array([-113, -103, -97, -89].map { JSON.double($0) }))
    }

    /// d680fe5 decoded the file with U+FFFD in place of bad bytes, so a path changed silently; now the byte is named
    /// with its line and column.
    @Test func invalidUTF8IsAnErrorWithLineAndColumn() {
        let bytes = Array("{\n  \"report\": {\"path\": \"/var/log/r".utf8) + [0xFF] + Array("e.jsonl\"}\n}".utf8)
        do {
            _ = try AgentConfig.parse(bytes: bytes)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.description == "not valid JSON: line 2, column 33: invalid UTF-8 (byte 0xFF) in a string")
        }
        // An overlong encoding of '/' (0xC0 0xAF) and a lone continuation byte are refused the same way.
        for bad: [UInt8] in [[0xC0, 0xAF], [0x80], [0xED, 0xA0, 0x80]] {
            #expect(throws: ConfigError.self) { try AgentConfig.parse(bytes: Array(#"{"report":{"path":"/x"#.utf8) + bad + Array(#""}}"#.utf8)) }
        }
    }

    @Test func syntaxErrorGivesLineAndColumn() {
        do {
            _ = try AgentConfig.parse("{\n  \"report\": {\"path\": \"/x\",}\n}")
            Issue.record("accepted bad JSON")
        } catch {
            #expect(error.description.contains("line 2"))
        }
    }

    @Test func allProblemsAreReportedTogether() {
        do {
            _ = try AgentConfig.parse(#"{"report":{"interval_seconds":0,"rotate_keep":-1},"wifi":{"enabled":1}}"#)
        } catch {
            #expect(error.problems.map(\.key) == ["report.interval_seconds", "report.rotate_keep", "wifi.enabled"])
        }
    }

    @Test(arguments: [
        ("example.net", true), ("example.net.", true), ("a-b.c_d.example", true), ("-bad.example", false),
        ("bad-.example", false), ("two words", false), ("", false), ("a..b", false),
        (String(repeating: "a", count: 64) + ".example", false),
    ])
    func hostNameSyntax(text: String, valid: Bool) {
        #expect(IPAddressText.isHostName(text) == valid)
    }

    /// The kernel's rule for interface names (net/core/dev.c dev_valid_name), with names real gateways use.
    @Test(arguments: [
        ("wwan0", true), ("wlp2s0", true), ("enx0250f2000000", true), ("rmnet_data0", true), ("br-lan", true),
        ("wlan0.sta1", true), ("ppp0", true), ("", false), ("eth0:1", false), ("a/b", false), (".", false),
        ("..", false), ("wlan 0", false), ("wlan\n0", false), ("abcdefghijklmnop", false), ("abcdefghijklmno", true),
        ("wlän0", true), ("x\u{0}", false),
    ])
    func interfaceNames(name: String, valid: Bool) {
        #expect(InterfaceName.isValid(name) == valid, "\(name)")
    }

    @Test(arguments: [
        ("/var/log/reach/reach.jsonl", nil), ("/overlay/reach/reach.jsonl", nil), ("/dev/stdout", nil),
        ("/var/lib/prometheus/node-exporter/reach.prom", nil), ("reach.jsonl", "not an absolute path"),
        ("./reach.jsonl", "not an absolute path"), ("", "an empty path"), ("/var/log/reach/", "names a directory, not a file"),
        ("/", "names a directory, not a file"), ("/var/log/..", "names a directory, not a file"),
        ("/var/log/\u{0}/x", "contains U+0000 (NUL)"), ("/" + String(repeating: "a", count: 256), "a component longer than 255 bytes"),
        (String(repeating: "/aaaaaaa", count: 512), "longer than 4095 bytes"),
    ] as [(String, String?)])
    func filePaths(path: String, problem: String?) {
        #expect(FilePathText.problem(path) == problem, "\(path)")
    }
}
