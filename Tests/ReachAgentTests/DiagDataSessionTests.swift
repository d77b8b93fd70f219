import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

/// `reach diag`'s data-session and port-sharing checks (pure, from the facts): what an installer sees for each
/// situation, and a hint for every warning and failure.
@Suite struct DiagDataSessionTests {
    static func modem(
        _ channels: [DataChannel], registration: RegistrationState = .home, cause: Int? = nil,
        access: ModemAccessPath? = .proxy, accessReason: String? = nil, sharedWith: [String] = [], error: String? = nil,
        fault: ModemFault? = nil
    ) -> ModemState {
        var m = DiagTests.modem(registration: registration, error: error)
        m.rejectCause = cause
        m.dataChannels = channels
        m.access = access
        m.accessReason = accessReason
        m.sharedWith = sharedWith
        m.fault = fault
        return m
    }

    static func channel(_ v4: DataSessionState, _ v6: DataSessionState, error v4Error: String? = nil) -> DataChannel {
        DataChannel(interface: "wwan0", clients: [
            DataClientReading(family: .ipv4, state: v4, error: v4Error), DataClientReading(family: .ipv6, state: v6),
        ])
    }

    static func checks(_ m: ModemState) -> [DiagCheck] {
        DiagChecks.evaluate(DiagTests.facts(DiagTests.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [m])))
    }

    static func check(_ checks: [DiagCheck], _ suffix: String) -> DiagCheck? { checks.first { $0.id.hasSuffix(suffix) } }

    @Test(arguments: [
        ("IPv6-only carrier, connected", modem([channel(.disconnected, .connected)]), CheckStatus.ok, "connected", nil as String?),
        ("the network dropped the PDN", modem([channel(.disconnected, .disconnected)]), .fail, "no data session",
         "check the APN"),
        ("denied, TS 24.301 cause 15", modem([channel(.disconnected, .disconnected)], registration: .denied, cause: 15), .fail,
         "no data session", "cause 15: no suitable cells in location/tracking area"),
        ("searching", modem([channel(.disconnected, .disconnected)], registration: .searching), .fail, "no data session",
         "not registered (searching)"),
        ("dual-SIM firmware answers INCOMPATIBLE_STATE", modem([channel(.unknown, .disconnected, error: "qmi_client_wds_get_packet_service_status: QMI protocol error (90): 'IncompatibleState'")]),
         .warn, "ipv4 client: qmi_client_wds_get_packet_service_status: QMI protocol error (90): 'IncompatibleState'",
         "could not be read"),
        ("QMAP link, mux id unknown", modem([DataChannel(interface: "qmimux0", error: "qmimux0 is a QMAP mux link but its mux id is unknown (set modems.ports[].mux_id)")]),
         .warn, "qmimux0: qmimux0 is a QMAP mux link but its mux id is unknown", "modems.ports[].mux_id"),
        ("being set up", modem([channel(.connecting, .disconnected)]), .warn, "connecting", "check again shortly"),
        ("no data service to ask", modem([]), .skip, "no data service", nil),
    ])
    func dataSession(_ name: String, modem: ModemState, status: CheckStatus, detail: String, hint: String?) {
        let checks = Self.checks(modem)
        let c = Self.check(checks, ".data_session")
        #expect(c?.status == status, "\(name): \(String(describing: c))")
        #expect(c?.detail.contains(detail) == true, "\(name): \(c?.detail ?? "")")
        if let hint { #expect(c?.hint?.contains(hint) == true, "\(name): \(c?.hint ?? "no hint")") }
        for c in checks where c.status == .fail || c.status == .warn { #expect(c.hint != nil, "\(c.id) has no hint") }
    }

    @Test func denialNamesTheCauseInWords() {
        let c = Self.check(Self.checks(Self.modem([], registration: .denied, cause: 11)), ".registration")
        #expect(c?.detail == "registration denied, reject cause 11 (PLMN not allowed)")
    }

    @Test(arguments: [
        ("through the proxy", modem([], access: .proxy), CheckStatus.ok, "through qmi-proxy", nil as String?),
        ("auto fell back: no proxy installed", modem([], access: .direct, accessReason: "qmi-proxy is not installed; opened directly"),
         .ok, "directly (qmi-proxy is not installed; opened directly)", nil),
        ("uqmi holds the port beside the proxy",
         modem([], access: .proxy, accessReason: "the port is also open in uqmi (pid 4242): a direct opener and the proxy lose each other's replies",
               sharedWith: ["uqmi (pid 4242)"]),
         .warn, "uqmi (pid 4242)", "qmicli -p"),
    ])
    func portSharing(_ name: String, modem: ModemState, status: CheckStatus, detail: String, hint: String?) {
        let c = Self.check(Self.checks(modem), ".access")
        #expect(c?.status == status, "\(name): \(String(describing: c))")
        #expect(c?.detail.contains(detail) == true, "\(name): \(c?.detail ?? "")")
        if let hint { #expect(c?.hint?.contains(hint) == true, "\(name)") }
    }

    /// A modem that could not be read: the hint follows the case of the failure, never the words of the error (the
    /// last row's words speak of a refusal, its case is a silent modem).
    @Test(arguments: [
        (ModemFault(.proxyRefused), "qmi_device_open: endpoint hangup; qmi-proxy (pid 17, uid 0) refused us: the proxy serves only root",
         "run reach as root (without capabilities, as the shipped unit does"),
        (ModemFault(.proxySilent, waitedMs: 2000), "qmi-proxy accepted the connection but did not answer within 2000 ms",
         "qmi-proxy took the connection and never answered"),
        (ModemFault(.portHeld, waitedMs: 5000, holders: ["uqmi (pid 4242)"]),
         "qmi_device_allocate_client(NAS): no answer within 5000 ms; the port is also open in uqmi (pid 4242)",
         "another program holds the port"),
        (ModemFault(.wrongProtocol), "qmi_device_open: no answer within 5000 ms (the port's driver speaks MBIM, not QMI)",
         "the port speaks the other protocol: name it as /dev/cdc-wdm0:mbim"),
        (ModemFault(.notAnswering, waitedMs: 5000), "qmi_device_open: refused us, says this text, but no proxy did",
         "the modem does not answer QMI requests"),
    ] as [(ModemFault, String, String)])
    func aFailureGetsTheHintOfItsCase(fault: ModemFault, error: String, hint: String) {
        let m = Self.modem([], access: nil, error: error, fault: fault)
        let c = Self.check(Self.checks(m), ".present")
        #expect(c?.status == .fail)
        #expect(c?.detail == error)
        #expect(c?.hint?.hasPrefix(hint) == true, "\(c?.hint ?? "")")
        #expect(Self.check(Self.checks(m), ".access") == nil)
    }
}
