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
        #expect(c.modems.access == .auto)
        #expect(c.modems.sessionRequerySeconds == 10)
    }

    @Test func fullConfigRoundTrips() throws {
        let text = """
            {"schema":1,"report":{"path":"/tmp/r.jsonl","interval_seconds":5,"rotate_bytes":65536,"rotate_keep":2},
             "changes":{"hold_down_seconds":2.5,"bar_hysteresis_db":4},
             "targets":[{"kind":"default"},{"kind":"address","value":"2001:db8::1"},{"kind":"host","value":"example.net"},
                        {"kind":"link_local"}],
             "modems":{"enabled":true,"ports":[{"path":"/dev/cdc-wdm0","protocol":"mbim","interface":"wwan0"},
                                               {"path":"/dev/cdc-wdm1","protocol":"qmi","interface":"qmimux0","mux_id":1}],
                       "request_timeout_seconds":3,"poll_interval_seconds":120,"access":"proxy",
                       "session_requery_seconds":30},
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
        #expect(c.modems.ports == [ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .mbim, interface: "wwan0"),
                                   ModemPortSpec(path: "/dev/cdc-wdm1", protocol: .qmi, interface: "qmimux0", muxID: 1)])
        #expect(c.modems.access == .proxy)
        #expect(c.modems.sessionRequerySeconds == 30)
        #expect(c.interfaceKinds == ["ppp0": .wwan])
        #expect(c.probe == AgentConfig.Probe(kind: .tcp, host: "192.0.2.10", port: 443, timeoutSeconds: 1.5))
        #expect(c.logLevel == .debug)
        // The written form parses back to the same config.
        #expect(try AgentConfig.parse(c.json.prettySerialized()) == c)
    }

    /// Each bad value is named by its key path, with what was expected.
    @Test(arguments: [
        (#"{"report":{"interval_seconds":-1}}"#, "report.interval_seconds", "expected a number of seconds"),
        (#"{"report":{"interval_seconds":"60"}}"#, "report.interval_seconds", "found \"60\""),
        (#"{"report":{"intervall_seconds":60}}"#, "report.intervall_seconds", "unknown key"),
        (#"{"report":{"rotate_keep":1.5}}"#, "report.rotate_keep", "expected an integer from 0 to 100"),
        (#"{"report":{"path":""}}"#, "report.path", "non-empty string"),
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
        (#"{"modems":{"access":"shared"}}"#, "modems.access", "expected auto, proxy or direct, found \"shared\""),
        (#"{"modems":{"session_requery_seconds":0.5}}"#, "modems.session_requery_seconds", "from 1 to 3600"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0","interface":"wwan0","mux_id":256}]}}"#,
         "modems.ports[0].mux_id", "from 0 to 255"),
        (#"{"modems":{"ports":[{"path":"/dev/cdc-wdm0","mux_id":1}]}}"#, "modems.ports[0].mux_id", "needs \"interface\""),
        (#"{"wifi":{"interfaces":["wlan0/x"]}}"#, "wifi.interfaces[0]", "interface name"),
        (#"{"wifi":{"enabled":"yes"}}"#, "wifi.enabled", "true or false"),
        (#"{"interface_kinds":{"ppp0":"cellular"}}"#, "interface_kinds.ppp0", "expected one of wwan, wifi"),
        (#"{"probe":{"kind":"icmp","host":"192.0.2.1"}}"#, "probe.kind", "tcp or dns"),
        (#"{"probe":{"kind":"tcp"}}"#, "probe.host", "missing"),
        (#"{"probe":{"kind":"tcp","host":"192.0.2.1","port":70000}}"#, "probe.port", "from 1 to 65535"),
        (#"{"prometheus":{"textfile":"/tmp/reach.txt"}}"#, "prometheus.textfile", ".prom"),
        (#"{"log_level":"verbose"}"#, "log_level", "expected one of trace"),
        (#"{"schema":2}"#, "schema", "expected 1"),
        (#"{"colour":"blue"}"#, "colour", "unknown key"),
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
}
