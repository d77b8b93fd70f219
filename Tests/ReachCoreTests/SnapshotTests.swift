import Testing
@testable import ReachCore

@Suite struct SnapshotTests {
    static func modem(_ device: String, interface: String?, rats: [RadioAccessTechnology], sim: SIMState = .ready) -> ModemState {
        var m = ModemState(device: device, protocol: .qmi)
        m.interface = interface
        m.registration = rats.isEmpty ? .searching : .home
        m.accessTechnologies = AccessTechnologies(rats)
        m.sim = sim
        m.signal = SignalMeasurement(rsrp: -90)
        m.identifiers = ModemIdentifiers(imei: "359225050039973", imsi: "310410000110761")
        return m
    }

    static func route(_ name: String, _ kind: InterfaceKind, gateway: String? = nil) -> RouteLookup {
        RouteLookup(family: .ipv4, type: .unicast, link: LinkState(name: name, index: 3, kind: kind, adminUp: true, carrier: true),
                    gateway: gateway)
    }

    @Test func wwanStatusIsTheRouteCarryingModemsGeneration() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [.lte]), Self.modem("/dev/cdc-wdm1", interface: "wwan1", rats: [.umts])]
        s.route = Self.route("wwan1", .wwan)
        s.derive()
        #expect(s.wwanStatus == .g3)
        #expect(s.status == .wwan)
        #expect(s.medium == .wwan)
    }

    /// Issue 31: the text leads with the medium; YYReachability's status is named (as iOS's) only where it says
    /// something the medium does not.
    @Test(arguments: [
        (InterfaceKind.ethernet, "medium ethernet · wwan none · ipv4 · iOS status wifi"),
        (.wifi, "medium wifi · wwan none · ipv4"),
        (.wwan, "medium wwan · wwan 4g · ipv4"),
    ])
    func statusLineLeadsWithTheMedium(kind: InterfaceKind, expected: String) {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = kind == .wwan ? [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [.lte])] : []
        s.route = Self.route(kind == .wwan ? "wwan0" : "if0", kind, gateway: "192.0.2.1")
        s.derive()
        let lines = SnapshotText.render(s).split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("reachable over \(s.medium.rawValue) via"))
        #expect(lines[1] == "  " + expected)
        #expect(!lines[0].contains("wifi") || kind == .wifi)
    }

    /// Modems on and none found: a line says so and where discovery looked; modems off: nothing.
    @Test func noModemFoundSaysWhereItLooked() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.route = Self.route("eth0", .ethernet, gateway: "192.0.2.1")
        s.derive()
        #expect(SnapshotText.render(s).contains("\n  WWAN: no modem found (looked at /sys/class/usbmisc/cdc-wdm*, /sys/class/wwan)"))
        s.wwanSource = .disabled
        #expect(!SnapshotText.render(s).contains("WWAN"))
        s.wwanSource = .ok
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [.lte])]
        #expect(!SnapshotText.render(s).contains("no modem found"))
    }

    @Test func wwanStatusFallsBackToTheFirstRegisteredModem() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: []), Self.modem("/dev/cdc-wdm1", interface: "wwan1", rats: [.lte, .nr])]
        s.route = Self.route("eth0", .ethernet, gateway: "192.0.2.1")
        s.derive()
        #expect(s.wwanStatus == .g5)
        #expect(s.status == .wifi)
        #expect(s.medium == .ethernet)
    }

    @Test func lockedSIMBehindTheRouteNeedsIntervention() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [.lte], sim: .pinRequired)]
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(s.flags.contains(.interventionRequired))
        #expect(!s.reachable)
        #expect(s.status == .none)
    }

    @Test func lockedSIMOnAnotherModemDoesNotBlockAWorkingRoute() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [], sim: .pukRequired)]
        s.route = Self.route("eth0", .ethernet, gateway: "192.0.2.1")
        s.derive()
        #expect(s.reachable)
        #expect(!s.flags.contains(.interventionRequired))
    }

    /// Apple's Reachability sample: local WiFi is reachable only when the route is direct.
    @Test func linkLocalNeedsAnOnLinkRoute() {
        var viaGateway = Snapshot(time: Timestamp(seconds: 0), target: .linkLocal)
        viaGateway.route = Self.route("eth0", .ethernet, gateway: "192.0.2.1")
        viaGateway.derive()
        #expect(!viaGateway.reachable)
        #expect(viaGateway.status == .none)
        #expect(viaGateway.medium == .none)

        var onLink = Snapshot(time: Timestamp(seconds: 0), target: .linkLocal)
        onLink.route = Self.route("wlan0", .wifi)
        onLink.derive()
        #expect(onLink.reachable)
        #expect(onLink.status == .wifi)
    }

    @Test func unknownWhenTheRouteCouldNotBeDetermined() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.error = "RTM_GETROUTE: no answer from the kernel"
        s.derive()
        #expect(s.status == .unknown)
        #expect(s.json()["status"] == .string("unknown"))
    }

    @Test func jsonKeysInSchemaOrderAndIdentifiersRedacted() throws {
        var s = Snapshot(time: Timestamp(seconds: 1_700_000_000, nanoseconds: 5_000_000), target: .defaultRoute)
        s.wwan = [Self.modem("/dev/cdc-wdm0", interface: "wwan0", rats: [.lte, .nr])]
        s.route = Self.route("wwan0", .wwan)
        s.supportsIPv4 = true
        s.supportsIPv6 = false
        s.derive()
        let j = s.json()
        let keys = j.objectValue!.map(\.0)
        #expect(keys == ["schema", "time", "target", "status", "medium", "wwan_status", "reachable", "flags", "flags_raw",
                         "route", "supports_ipv4", "supports_ipv6", "modem_check", "wwan", "wifi", "uplinks", "sources",
                         "usable", "validated", "validation"])
        #expect(j["time"] == .string("2023-11-14T22:13:20.005Z"))
        #expect(j["wwan_status"] == .string("5g"))
        #expect(j["flags_raw"] == .int(Int64(ReachabilityFlags([.reachable, .isDirect, .isWWAN]).rawValue)))
        let modem = j["wwan"]!.arrayValue![0]
        #expect(modem["nr_mode"] == .string("nsa"))
        #expect(modem["identifiers"] == nil)
        let text = j.serialized()
        #expect(!text.contains("359225050039973") && !text.contains("310410000110761"))
        let shown = s.json(showIdentifiers: true)["wwan"]!.arrayValue![0]["identifiers"]
        #expect(shown?["imei"] == .string("359225050039973"))
        // A report line is one line and parses back to the same value.
        #expect(!text.contains("\n"))
        #expect(try JSON.parse(text) == j)
    }

    /// The kernel driver sysfs named for the port is said in the modem's JSON (`driver`, right after `protocol`; null
    /// for a port sysfs does not know, such as a pty) and after the protocol in its text line, absent or not; the
    /// JSON reads back to the same driver.
    @Test(arguments: [
        ("qmi_wwan", ModemProtocol.qmi, true, "WWAN /dev/cdc-wdm0 qmi (qmi_wwan)  wwan0  no service"),
        ("cdc_mbim", ModemProtocol.mbim, true, "WWAN /dev/cdc-wdm0 mbim (cdc_mbim)  wwan0  no service"),
        ("wwan", ModemProtocol.mbim, true, "WWAN /dev/cdc-wdm0 mbim (wwan)  wwan0  no service"),
        ("qmi_wwan", ModemProtocol.qmi, false, "WWAN /dev/cdc-wdm0 qmi (qmi_wwan)  wwan0  absent"),
        (nil, ModemProtocol.qmi, true, "WWAN /dev/cdc-wdm0 qmi  wwan0  no service"),
        (nil, ModemProtocol.mbim, false, "WWAN /dev/cdc-wdm0 mbim  wwan0  absent"),
    ] as [(String?, ModemProtocol, Bool, String)])
    func theDriverIsSaid(driver: String?, proto: ModemProtocol, present: Bool, line: String) throws {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: proto)
        m.interface = "wwan0"
        m.driver = driver
        m.present = present
        #expect(SnapshotText.modemLine(m, signalPolicy: .android).hasPrefix(line), "\(SnapshotText.modemLine(m, signalPolicy: .android))")
        let j = m.json(signalPolicy: .android)
        #expect(Array(j.objectValue!.map(\.0).prefix(4)) == ["device", "protocol", "driver", "interface"])
        #expect(j["driver"] == (driver.map(JSON.string) ?? .null))
        let back = try #require(ModemState(json: try JSON.parse(j.serialized())))
        #expect(back.driver == driver && back == m)
    }
}
