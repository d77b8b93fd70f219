import Testing
@testable import ReachCore

/// sun_path: 107 bytes, "/org.gatewayreach.Reach" takes 23: a state directory of 85 bytes leaves no room. (Out here:
/// Swift 6.0's compiler crashes on string interpolation inside `@Test(arguments:)`.)
let stateDirectoryTooLong = "{\"api\":{\"state_directory\":\"/\(String(repeating: "r", count: 84))\"}}"

/// The pure parts of the agent's API: the `api` config section, the way back from the status JSON to readings (so
/// `reach status` can merge the agent's readings with a route it resolved), the hooks' environment, RFC 3339 parsing.
@Suite struct AgentAPICoreTests {
    @Test func apiDefaultsAndNulls() throws {
        let d = try AgentConfig.parse("{}")
        #expect(d.api.stateDirectory == "/run/reach")
        #expect(d.api.socketPath == "/run/reach/org.gatewayreach.Reach")
        #expect(d.api.stateFile == "/run/reach/state.json")
        #expect(d.api.hooksDirectory == "/etc/reach/events.d")
        #expect(d.api.hookTimeoutSeconds == 30)
        #expect(d.api.maxClients == 32 && d.api.maxClientsPerUID == 4)
        let limits = try AgentConfig.parse(#"{"api":{"max_clients":12,"max_clients_per_uid":4}}"#)
        #expect(limits.api.admission == APIAdmission(maxClients: 12, maxClientsPerUID: 4))
        #expect(try AgentConfig.parse(limits.json.serialized()) == limits)
        let off = try AgentConfig.parse(#"{"api":{"state_directory":null,"hooks_directory":null,"hook_timeout_seconds":2.5}}"#)
        #expect(off.api.stateDirectory == nil && off.api.socketPath == nil && off.api.hooksDirectory == nil)
        #expect(off.api.hookTimeoutSeconds == 2.5)
        #expect(try AgentConfig.parse(off.json.serialized()) == off)
        let slash = try AgentConfig.parse(#"{"api":{"state_directory":"/var/run/reach/"}}"#)
        #expect(slash.api.socketPath == "/var/run/reach/org.gatewayreach.Reach")
    }

    @Test(arguments: [
        (#"{"api":{"state_directory":"run/reach"}}"#, "api.state_directory", "not an absolute path"),
        (#"{"api":{"state_directory":"/"}}"#, "api.state_directory", "the root directory"),
        (#"{"api":{"state_directory":"/run/../etc"}}"#, "api.state_directory", "component"),
        (#"{"api":{"state_directory":7}}"#, "api.state_directory", "an absolute directory path"),
        (#"{"api":{"state_directory":"/run/reach\u0000x"}}"#, "api.state_directory", "NUL"),
        (stateDirectoryTooLong, "api.state_directory", "85 bytes"),
        (#"{"api":{"hooks_directory":""}}"#, "api.hooks_directory", "not an absolute path"),
        (#"{"api":{"hook_timeout_seconds":0}}"#, "api.hook_timeout_seconds", "from 0.1 to 3600"),
        (#"{"api":{"hook_timeout_seconds":"30"}}"#, "api.hook_timeout_seconds", "seconds"),
        (#"{"api":{"state_dir":"/run/reach"}}"#, "api.state_dir", "unknown key"),
        (#"{"api":{"max_clients":2}}"#, "api.max_clients", "expected an integer from 3 to 768, found 2"),
        (#"{"api":{"max_clients":"32"}}"#, "api.max_clients", "expected an integer from 3 to 768"),
        (#"{"api":{"max_clients":32.5}}"#, "api.max_clients", "expected an integer"),
        (#"{"api":{"max_clients_per_uid":0}}"#, "api.max_clients_per_uid", "expected an integer from 1 to 256, found 0"),
        (#"{"api":{"max_clients_per_uid":11}}"#, "api.max_clients_per_uid", "from 1 to 10 (a third of api.max_clients, 32"),
        (#"{"api":{"max_clients":12,"max_clients_per_uid":5}}"#, "api.max_clients_per_uid", "from 1 to 4"),
        (#"{"api":[]}"#, "api", "expected an object"),
    ])
    func badApiValueNamesItsKey(text: String, key: String, message: String) {
        do {
            _ = try AgentConfig.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.problems.first { $0.key == key }?.message.contains(message) == true, "\(error)")
        }
    }

    @Test func theLongestStateDirectoryStillFitsASocketPath() throws {
        let dir = "/" + String(repeating: "r", count: AgentConfig.API.maxStateDirectoryBytes - 1)
        let c = try AgentConfig.parse("{\"api\":{\"state_directory\":\"\(dir)\"}}")
        #expect(c.api.socketPath!.utf8.count == 107)
    }

    /// The agent refreshes its state at least as often as it polls: twice that is the staleness bound.
    @Test func stateRefreshIsTheShortestIntervalOfWhatIsRead() throws {
        #expect(AgentConfig().stateRefreshSeconds == 30)  // WiFi's 30 s poll
        let noWiFi = try AgentConfig.parse(#"{"wifi":{"enabled":false}}"#)
        #expect(noWiFi.stateRefreshSeconds == 60)
        let fast = try AgentConfig.parse(#"{"report":{"interval_seconds":5},"modems":{"enabled":false},"wifi":{"enabled":false}}"#)
        #expect(fast.stateRefreshSeconds == 5)
    }

    /// A 5G NSA modem on a Quectel RM500Q-like reading and an associated 5 GHz station: written as JSON, read back,
    /// they are the same values (what `reach status` gets from the agent is what the agent read).
    @Test func modemAndWiFiRoundTripThroughTheirJSON() throws {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.driver = "qmi_wwan"
        m.accessTechnologies = [.lte, .nr]
        m.registration = .roaming
        m.plmn = PLMN(mcc: "262", mnc: "01")
        m.operatorName = "Telekom.de"
        m.signal = SignalMeasurement(rssi: -65, rsrp: -95, rsrq: -10, sinr: 12.5)
        m.nrSignal = SignalMeasurement(rsrp: -88, rsrq: -11, sinr: 20)
        m.qualityPercent = 62
        m.sim = .ready
        m.packetService = .attached
        m.rejectCause = 15
        m.error = "timeout"
        m.fault = ModemFault(.portHeld, waitedMs: 5000, holders: ["uqmi (pid 42)"])
        m.identifiers = ModemIdentifiers(imei: "359225050039973", imsi: "262011234567890", iccid: "8949", msisdn: "+49")
        m.model = "RM500Q-GL"
        m.manufacturer = "Quectel"
        m.firmware = "RM500QGLABR11A06M4G"
        m.access = .proxy
        m.accessReason = "the port is also open in uqmi (pid 42): a direct opener and the proxy lose each other's replies"
        m.sharedWith = ["uqmi (pid 42)"]
        m.dataChannels = [
            DataChannel(
                interface: "qmimux0", muxID: 1,
                clients: [
                    DataClientReading(family: .ipv4, state: .connected),
                    DataClientReading(family: .ipv6, state: .unknown, error: "INCOMPATIBLE_STATE"),
                ]),
            DataChannel(interface: "qmimux1", error: "mux id unknown"),
            DataChannel(
                interface: "qmimux2", muxID: 2,
                clients: [
                    DataClientReading(family: .ipv4, state: .disconnected),
                    DataClientReading(family: .ipv6, state: .unknown, error: "Set IP Family refused", observing: false),
                ]),
        ]
        m.unread = [UnreadReading(.sim, reason: "qmi_client_dms_uim_get_pin_status: QMI protocol error (94): 'NotSupported'")]
        m.cells = CellReadings(
            cell: ServingCell(
                rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, tac: 4660, cellID: 0x1A2B3C,
                bandwidthMHz: 20),
            carriers: [
                ComponentCarrier(role: .pcell, rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, bandwidthMHz: 20),
                ComponentCarrier(
                    role: .scell, rat: .lte, band: RadioBand(.lte, 7), bandFromChannel: true, channel: 3350, physicalID: 7,
                    bandwidthMHz: 20, state: .deactivated),
                ComponentCarrier(role: .pscell, rat: .nr, band: RadioBand(.nr, 78), channel: 632628, physicalID: 500),
            ],
            neighbours: [
                NeighbourCell(rat: .lte, channel: 1300, band: RadioBand(.lte, 3), physicalID: 124, signal: SignalMeasurement(rsrp: -105, rsrq: -14)),
                NeighbourCell(rat: .gsm, channel: 62, physicalID: 33, signal: SignalMeasurement(rssi: -80), lac: 24500, cellID: 18045),
            ])
        // Every member is set above, so a member the JSON (or its reading back) forgets fails here, not in the field:
        // `reach status` beside an agent shows only what comes back.
        for child in Mirror(reflecting: m).children {
            let shown = "\(child.value)"
            #expect(shown != "nil" && shown != "[]" && shown != "CellReadings(cell: nil, carriers: nil, neighbours: nil)",
                    "ModemState.\(child.label ?? "?") is not set in this test")
        }
        let back = try #require(ModemState(json: m.json(showIdentifiers: true, signalPolicy: .android)))
        #expect(back == m)
        // Without identifiers (what the agent publishes) the identifiers, the TAC and the cell ids stay behind.
        let published = try #require(ModemState(json: m.json(signalPolicy: .android)))
        var expected = m
        expected.identifiers = ModemIdentifiers()
        expected.cells.cell?.tac = nil
        expected.cells.cell?.cellID = nil
        expected.cells.neighbours?[1].lac = nil
        expected.cells.neighbours?[1].cellID = nil
        #expect(published == expected)
        var locked = ModemState(device: "/dev/wwan0mbim0", protocol: .mbim)
        locked.present = false
        locked.sim = .pukRequired
        #expect(ModemState(json: locked.json(signalPolicy: .strict)) == locked)

        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.ssid = "lab \\xff"
        w.bssid = "02:00:00:00:01:00"
        w.frequencyMHz = 5180
        w.signalDBm = -61
        w.signalAvgDBm = -60
        w.beaconSignalAvgDBm = -59
        w.noiseDBm = -95
        w.txBitrateMbps = 866.7
        w.rxBitrateMbps = 6
        w.connectedSeconds = 42
        w.inactiveMilliseconds = 12
        w.channelWidthMHz = 80
        w.txPowerDBm = 20
        #expect(WiFiLink(json: w.json) == w)
        #expect(ModemState(json: .object([("device", .string("x"))])) == nil)
        #expect(WiFiLink(json: .object([("interface", .string("wlan0")), ("mode", .string("mesh"))])) == nil)
    }

    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0, 0),
        ("2026-11-22T10:15:30.123Z", 1_795_342_530, 123_000_000),
        ("2000-02-29T23:59:59.5Z", 951_868_799, 500_000_000),
        ("1969-12-31T23:59:59.999999999Z", -1, 999_999_999),
    ])
    func rfc3339Parses(text: String, seconds: Int64, nanos: Int32) throws {
        let t = try #require(Timestamp(rfc3339: text))
        #expect(t == Timestamp(seconds: seconds, nanoseconds: nanos))
        if nanos % 1_000_000 == 0 { #expect(t.rfc3339.hasPrefix(String(text.dropLast()))) }
    }

    @Test func rfc3339RefusesOtherForms() {
        for bad in ["2026-11-22 10:15:30Z", "2026-11-22T10:15:30+01:00", "2026-13-22T10:15:30Z", "2026-11-22T10:15:30.Z",
                    "2026-11-22T10:15:30.1234567890Z", "x", ""] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
        let now = Timestamp(seconds: 100, nanoseconds: 250_000_000)
        #expect(now.seconds(until: Timestamp(seconds: 102, nanoseconds: 0)) == 1.75)
    }

    /// NetworkManager's dispatcher passes its scripts a few named variables; ours are the line's, plus every top-level
    /// scalar as REACH_<KEY> so keys the line gains later reach hooks too.
    @Test func hookEnvironmentFromAChangeLine() throws {
        let line = try JSON.parse("""
            {"schema":1,"time":"2026-11-22T10:15:30.123Z","target":{"kind":"default","value":"0.0.0.0,::"},
             "status":"wwan","medium":"wwan","wwan_status":"4g","reachable":true,"flags":["reachable","is_wwan"],
             "flags_raw":262146,"route":{"interface":"wwan0","gateway":null,"underlay":null},"validated":true,
             "uplinks":[{"interface":"wwan0","primary":true},{"interface":"wlan1","primary":false}],
             "event":{"type":"change","seq":12,"changed":["status","medium","uplinks"],
                      "reason":"route moved from wlan1 to wwan0","from":{"status":"wifi","medium":"wifi"},
                      "uplinks":[{"interface":"wlan1","from":{"reachable":true},"to":{"reachable":false}}]}}
            """)
        let env = Dictionary(uniqueKeysWithValues: HookEnvironment.variables(line: line))
        #expect(env["REACH_EVENT"] == "change")
        #expect(env["REACH_SEQ"] == "12")
        #expect(env["REACH_STATUS"] == "wwan")
        #expect(env["REACH_PREVIOUS_STATUS"] == "wifi")
        #expect(env["REACH_MEDIUM"] == "wwan")
        #expect(env["REACH_PREVIOUS_MEDIUM"] == "wifi")
        #expect(env["REACH_WWAN_STATUS"] == "4g")
        #expect(env["REACH_INTERFACE"] == "wwan0")
        #expect(env["REACH_GATEWAY"] == "")
        #expect(env["REACH_REASON"] == "route moved from wlan1 to wwan0")
        #expect(env["REACH_CHANGED"] == "status,medium,uplinks")
        #expect(env["REACH_UPLINKS_CHANGED"] == "wlan1")
        #expect(env["REACH_PRIMARY_UPLINK"] == "wwan0")
        #expect(env["REACH_UNDERLAY"] == "")
        #expect(env["REACH_REACHABLE"] == "1")
        #expect(env["REACH_TARGET"] == "default")
        #expect(env["REACH_FLAGS_RAW"] == "262146")
        #expect(env["REACH_VALIDATED"] == "1")  // a key this code does not know
        #expect(env["REACH_FLAGS"] == nil)  // arrays are not flattened
        #expect(HookEnvironment.variables(line: line).count == env.count)
        #expect(HookEnvironment.name("bars-raw.x") == "BARS_RAW_X")
    }

    @Test func hookNamesFollowRunParts() {
        for ok in ["10-notify", "failover_script", "A9"] { #expect(HookEnvironment.isHookName(ok)) }
        for skipped in ["README.md", "10-notify~", "10-notify.dpkg-old", ".hidden", "", "a b"] {
            #expect(!HookEnvironment.isHookName(skipped), "\(skipped)")
        }
    }
}
