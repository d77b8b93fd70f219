import Testing
@testable import ReachCore

/// A modem that could not be read is never shown as radio state: the status line, the modem check, and the live
/// view's screen and plain line say the failure once, as what it is, with bars and registration unknown.
@Suite struct ModemFailureTextTests {
    static func failed(_ error: String, _ fault: ModemFault?, present: Bool = true) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.present = present
        m.error = error
        m.fault = fault
        return m
    }

    static func count(_ needle: String, in text: String) -> Int {
        var n = 0
        var rest = Substring(text)
        while let r = rest.firstRange(of: needle) {
            n += 1
            rest = rest[r.upperBound...]
        }
        return n
    }

    static let silent = "qmi_device_allocate_client(NAS): no answer within 5000 ms"

    @Test(arguments: [
        (failed(silent, ModemFault(.notAnswering, waitedMs: 5000)),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  modem not answering (5 s)  bars ?/4  registration unknown",
         "wwan0: modem not answering (5 s)"),
        (failed("qmi_device_open: endpoint hangup; qmi-proxy (pid 17, uid 0) refused us", ModemFault(.proxyRefused)),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  qmi-proxy refused reach  bars ?/4  registration unknown",
         "wwan0: qmi-proxy refused reach"),
        (failed(silent + "; the port is also open in uqmi (pid 4242)", ModemFault(.portHeld, waitedMs: 5000, holders: ["uqmi (pid 4242)"])),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  port held by uqmi (pid 4242); modem not answering (5 s)  bars ?/4  registration unknown",
         "wwan0: port held by uqmi (pid 4242); modem not answering (5 s)"),
        (failed("qmi_device_open: no answer within 5000 ms (the port's driver speaks MBIM, not QMI)", ModemFault(.wrongProtocol)),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  not a QMI port  bars ?/4  registration unknown",
         "wwan0: not a QMI port"),
        (failed("libqmi-glib cannot be loaded: no such file", ModemFault(.failed)),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  error: libqmi-glib cannot be loaded: no such file  bars ?/4  registration unknown",
         "wwan0: libqmi-glib cannot be loaded: no such file"),
        // A state from before faults existed (an older agent's JSON): its words stand in.
        (failed("no answer while opening within 15000 ms", nil),
         "WWAN /dev/cdc-wdm0 qmi  wwan0  error: no answer while opening within 15000 ms  bars ?/4  registration unknown",
         "wwan0: no answer while opening within 15000 ms"),
        (failed("the port hung up", ModemFault(.gone), present: false), "WWAN /dev/cdc-wdm0 qmi  wwan0  absent",
         "wwan0: /dev/cdc-wdm0 is gone"),
    ] as [(ModemState, String, String)])
    func saidOnceAsWhatItIs(modem: ModemState, line: String, check: String) {
        #expect(SnapshotText.modemLine(modem, signalPolicy: .android) == line)
        let s = DualWAN.snapshot([DualWAN.route(DualWAN.wwan0, gateway: nil, metric: 200)], modems: [modem])
        #expect(s.modemCheck?.result == .unknown)
        #expect(s.modemCheck?.reason == check)
        let text = SnapshotText.render(s)
        #expect(text.contains("  modem check failed, the route's answer stands: \(check)\n"), "\(text)")
        #expect(Self.count("modem check failed", in: text) == 1, "\(text)")
        #expect(text.contains("uplink wwan0 (primary): reachable over wwan (on-link) · metric 200 · " + (modem.present ? "radio unknown" : "modem absent")), "\(text)")
        #expect(Self.count("no service", in: text) == 0 && Self.count("0/4", in: text) == 0, "\(text)")
    }

    /// `reach signal`: the screen and the plain line say the failure, never "not registered (unknown)".
    @Test func theLiveViewSaysTheFailure() {
        let t0 = Timestamp(seconds: 1_790_000_000)
        let m = Self.failed(Self.silent, ModemFault(.notAnswering, waitedMs: 5000))
        var model = LiveSignalModel(start: t0)
        model.record(time: t0, wwan: [m], wifi: [])
        let frame = LiveSignalText.frame(model, now: t0, intervalSeconds: 1).joined(separator: "\n")
        #expect(frame.contains("/dev/cdc-wdm0 (qmi)  modem not answering (5 s)"), "\(frame)")
        #expect(!frame.contains("not registered"), "\(frame)")
        #expect(LiveSignalText.plainLine(time: t0, wwan: [m], wifi: [])
            == t0.rfc3339 + "  /dev/cdc-wdm0 modem not answering (5 s) (\(Self.silent))")
    }
}
