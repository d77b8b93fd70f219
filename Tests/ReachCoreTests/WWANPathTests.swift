import Testing
@testable import ReachCore

/// The merge rule (WWANPath, Snapshot.derive): the data session's vocabularies (QmiWdsConnectionStatus,
/// MBIM_ACTIVATION_STATE), how observers combine, and every combination of what a modem can say about a route
/// over its network interface, checked against the rule written out independently below.
@Suite struct WWANPathTests {
    // MARK: Vocabularies

    /// libqmi `QmiWdsConnectionStatus` (data/qmi-service-wds.json): 1 disconnected, 2 connected, 3 suspended,
    /// 4 authenticating; 0 and values a newer firmware may add say nothing.
    @Test(arguments: [
        (0, DataSessionState.unknown), (1, .disconnected), (2, .connected), (3, .connected), (4, .connecting),
        (5, .unknown), (255, .unknown),
    ])
    func qmiConnectionStatus(raw: Int, state: DataSessionState) {
        #expect(DataSessionState(qmiConnectionStatus: raw) == state)
    }

    /// MBIM 1.0 §10.5.12 MBIM_ACTIVATION_STATE; UNKNOWN is what a Huawei ME936 reports before its first activation.
    @Test(arguments: [
        (UInt32(0), DataSessionState.unknown), (1, .connected), (2, .connecting), (3, .disconnected),
        (4, .disconnecting), (5, .unknown),
    ])
    func mbimActivationState(raw: UInt32, state: DataSessionState) {
        #expect(DataSessionState(mbimActivationState: raw) == state)
    }

    /// One client per IP family (ModemManager's mm-bearer-qmi.c, quectel-CM): an IPv6-only session reads
    /// disconnected on the IPv4 client and connected on the IPv6 one, and is connected.
    @Test(arguments: [
        ([DataSessionState](), nil as DataSessionState?),
        ([.disconnected, .connected], .connected),  // IPv6-only carrier (464XLAT): v4 client sees nothing
        ([.connected, .unknown], .connected),  // INCOMPATIBLE_STATE on one family never hides the other
        ([.disconnected, .disconnected], .disconnected),
        ([.disconnected, .unknown], .unknown),  // a doubt is never "down"
        ([.disconnected, .connecting], .connecting),
        ([.disconnected, .disconnecting], .disconnecting),
        ([.connecting, .unknown], .unknown),
        ([.unknown], .unknown),
    ])
    func combine(states: [DataSessionState], expected: DataSessionState?) {
        #expect(DataSessionState.combine(states) == expected)
    }

    @Test func channelStateAndDetail() {
        let unbindable = DataChannel(interface: "qmimux0", error: "qmimux0 is multiplexed but its mux id is unknown")
        #expect(unbindable.state == .unknown)
        #expect(unbindable.unknownDetail == "qmimux0 is multiplexed but its mux id is unknown")
        let dualSIM = DataChannel(interface: "wwan0", clients: [
            DataClientReading(family: .ipv4, state: .unknown, error: "INCOMPATIBLE_STATE"),
            DataClientReading(family: .ipv6, state: .disconnected),
        ])
        #expect(dualSIM.state == .unknown)
        #expect(dualSIM.unknownDetail == "ipv4 client: INCOMPATIBLE_STATE")
        #expect(DataChannel(muxID: 1).label == "mux 1" && DataChannel(sessionID: 0).label == "session 0")
        #expect(DataChannel().state == .unknown)  // no observer: nothing read
    }

    // MARK: Every combination

    enum Session: CaseIterable {
        case noDataService, connected, disconnected, connecting, disconnecting, unknown, noChannelForLink
        /// The IPv4 client reads disconnected; the IPv6 one cannot observe (the firmware refused Set IP Family).
        case disconnectedIPv6CannotObserve
    }

    static let registrations = RegistrationState.allCases
    static let packetServices: [PacketServiceState?] = [nil, .unknown, .attaching, .attached, .detaching, .detached]
    static let sims: [SIMState] = [.ready, .pinRequired, .pukRequired, .absent, .unknown]

    static func modem(
        _ registration: RegistrationState, _ ps: PacketServiceState?, _ session: Session, sim: SIMState,
        error: String?, present: Bool, unread: [UnreadReading.Reading] = []
    ) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = registration
        m.accessTechnologies = registration.isRegistered ? [.lte] : .none
        m.packetService = ps
        m.sim = sim
        m.error = error
        m.present = present
        m.unread = unread.map { UnreadReading($0, reason: "\($0.rawValue) request: QMI protocol error (94): 'NotSupported'") }
        m.rejectCause = registration == .denied ? 15 : nil
        func channel(_ v4: DataSessionState, _ v6: DataSessionState, interface: String? = nil) -> DataChannel {
            DataChannel(interface: interface, clients: [
                DataClientReading(family: .ipv4, state: v4, error: v4 == .unknown ? "timed out" : nil),
                DataClientReading(family: .ipv6, state: v6),
            ])
        }
        switch session {
        case .noDataService: m.dataChannels = []
        case .connected: m.dataChannels = [channel(.disconnected, .connected)]
        case .disconnected: m.dataChannels = [channel(.disconnected, .disconnected)]
        case .connecting: m.dataChannels = [channel(.connecting, .disconnected)]
        case .disconnecting: m.dataChannels = [channel(.disconnecting, .disconnected)]
        case .unknown: m.dataChannels = [channel(.unknown, .disconnected)]
        case .noChannelForLink: m.dataChannels = [channel(.disconnected, .disconnected, interface: "qmimux1")]
        case .disconnectedIPv6CannotObserve:
            m.dataChannels = [DataChannel(clients: [
                DataClientReading(family: .ipv4, state: .disconnected),
                DataClientReading(family: .ipv6, state: .unknown, error: "Set IP Family refused", observing: false),
            ])]
        }
        return m
    }

    static func route(_ name: String, _ kind: InterfaceKind, family: AddressFamily = .ipv4, gateway: String? = nil)
        -> RouteLookup
    {
        RouteLookup(family: family, type: .unicast, link: LinkState(name: name, index: 5, kind: kind, adminUp: true, carrier: true),
                    gateway: gateway)
    }

    /// The rule, written from the issues rather than from the code: definite evidence blocks (a locked SIM, not
    /// registered, PS detached, every observer disconnected or tearing down), each on its own reading, whatever else
    /// the modem refused to tell; a modem that cannot be read (gone, an error) or that reads unknown leaves the route
    /// standing.
    static func expectedResult(
        _ registration: RegistrationState, _ ps: PacketServiceState?, _ session: Session, sim: SIMState,
        error: String?, present: Bool
    ) -> ModemCheck.Result {
        if !present { return .unknown }
        if sim == .pinRequired || sim == .pukRequired { return .blocked }
        if error != nil { return .unknown }
        if [.searching, .idle, .denied, .emergencyOnly].contains(registration) { return .blocked }
        if ps == .detached { return .blocked }
        if [.disconnected, .disconnecting, .disconnectedIPv6CannotObserve].contains(session) { return .blocked }
        if registration == .unknown { return .unknown }
        switch session {
        case .noDataService, .connected: return .ok
        case .disconnected, .disconnecting, .disconnectedIPv6CannotObserve: return .blocked
        case .connecting, .unknown, .noChannelForLink: return .unknown
        }
    }

    @Test func everyCombinationOverTheModemsInterface() {
        var rows = 0
        for registration in Self.registrations {
            for ps in Self.packetServices {
                for session in Session.allCases {
                    for sim in Self.sims {
                        for error in [nil, "qmi_client_nas_get_system_info: timed out after 5000 ms"] as [String?] {
                            for present in [true, false] {
                              for unread in Self.refusals {
                                rows += 1
                                let m = Self.modem(
                                    registration, ps, session, sim: sim, error: error, present: present, unread: unread)
                                let row = "\(registration) \(String(describing: ps)) \(session) \(sim) error=\(error != nil) present=\(present) unread=\(unread)"
                                let check = WWANPath.check(interface: "wwan0", modem: m)
                                // What the modem refused changes no result: the readings it refused are unknown in
                                // the table's own values already.
                                let expected = Self.expectedResult(registration, ps, session, sim: sim, error: error, present: present)
                                #expect(check.result == expected, "\(row)")
                                #expect(check.device == "/dev/cdc-wdm0" && check.interface == "wwan0")
                                #expect(check.notRead == unread, "\(row)")
                                if expected == .ok {
                                    #expect(check.reason == nil, "\(row)")
                                } else {
                                    #expect(check.reason?.hasPrefix("wwan0: ") == true, "\(row): \(String(describing: check.reason))")
                                    let listed = unread.isEmpty || check.reason?.hasSuffix(
                                        " (could not read: \(unread.map(\.words).joined(separator: ", ")))") == true
                                    #expect(listed, "\(row): \(String(describing: check.reason))")
                                }

                                var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
                                s.wwan = [m]
                                s.route = Self.route("wwan0", .wwan)
                                s.derive()
                                #expect(s.modemCheck == check, "\(row)")
                                let routeOnly = ReachabilityFlags.derive(
                                    from: s.route, interventionRequired: sim.needsIntervention)
                                switch expected {
                                case .blocked:
                                    #expect(!s.reachable && s.status == .none && s.medium == .none, "\(row)")
                                    #expect(s.flags.contains(.connectionRequired) && s.flags.contains(.isWWAN), "\(row)")
                                    #expect(s.flags.contains(.interventionRequired) == sim.needsIntervention, "\(row)")
                                case .ok, .unknown:
                                    // The route's answer stands, to the bit.
                                    #expect(s.flags == routeOnly, "\(row)")
                                    #expect(s.reachable == routeOnly.isReachable, "\(row)")
                                    #expect(s.reachable == !sim.needsIntervention, "\(row)")
                                }

                                // Other links are untouched: the same modem beside an Ethernet default route.
                                var eth = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
                                eth.wwan = [m]
                                eth.route = Self.route("eth0", .ethernet, gateway: "192.0.2.1")
                                eth.derive()
                                #expect(eth.reachable && eth.medium == .ethernet && eth.modemCheck == nil, "\(row)")
                                #expect(eth.flags == [.reachable], "\(row)")
                              }
                            }
                        }
                    }
                }
            }
        }
        #expect(rows == 7 * 6 * 8 * 5 * 2 * 2 * 3)
    }

    /// Readings a modem may refuse beside the ones the table varies: none, the SIM alone (DMS UIM Get PIN Status
    /// and UIM Get Card Status both refused), and the optional ones together.
    static let refusals: [[UnreadReading.Reading]] = [[], [.sim], [.sim, .signal, .cells, .operatorName]]

    // MARK: Named cases

    /// The reasons people act on, as the text and JSON say them.
    @Test(arguments: [
        ("Quectel EC25-E searching (no network found)", RegistrationState.searching, PacketServiceState?.some(.detached),
         Session.disconnected, "wwan0: the modem is searching for a network"),
        ("denied, TS 24.301 cause 15", .denied, .detached, .disconnected,
         "wwan0: registration denied (cause 15: no suitable cells in location/tracking area)"),
        ("registered, PDN dropped by the network", .home, .attached, .disconnected, "wwan0: the modem has no data session"),
        ("registered, PS detached (MBIM PACKET_SERVICE_STATE 4)", .roaming, .detached, .connected,
         "wwan0: the modem is not attached for packet data"),
        ("QMI power save", .idle, nil, .noDataService, "wwan0: the modem is not registered and not searching (radio off or power save)"),
    ] as [(String, RegistrationState, PacketServiceState?, Session, String)])
    func reasons(_ name: String, registration: RegistrationState, ps: PacketServiceState?, session: Session, reason: String) {
        let m = Self.modem(registration, ps, session, sim: .ready, error: nil, present: true)
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [m]
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(s.modemCheck?.reason == reason, "\(name)")
        #expect(SnapshotText.headline(s) == "not reachable: \(reason) (connection required)", "\(name)")
        #expect(s.json()["modem_check"]?["result"] == .string("blocked"))
        #expect(s.json()["modem_check"]?["reason"] == .string(reason))
    }

    /// A modem whose firmware refuses optional requests (old Gobi: WDS Set IP Family; many current modules: DMS UIM
    /// Get PIN Status; an MBIM modem: Subscriber Ready Status): the evidence that was read decides, the reason names
    /// it and lists what could not be read, and the JSON lists the refused readings.
    @Test func refusedRequestsLeaveTheEvidenceStanding() {
        let searching = Self.modem(.searching, .detached, .noDataService, sim: .unknown, error: nil, present: true, unread: [.sim])
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [searching]
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(!s.reachable)
        #expect(s.modemCheck?.reason == "wwan0: the modem is searching for a network (could not read: SIM status)")
        #expect(s.json()["modem_check"]?["not_read"] == .array([.string("sim")]))
        let modem = s.json()["wwan"]?.arrayValue?.first
        #expect(modem?["unread"]?.arrayValue?.first?["reading"] == .string("sim"))
        #expect(modem?["error"] == .null)

        // Session down as the IPv4 client reads it, IPv6 unobservable, registration refused as well.
        let down = Self.modem(.unknown, nil, .disconnectedIPv6CannotObserve, sim: .unknown, error: nil, present: true,
                              unread: [.registration, .sim])
        let check = WWANPath.check(interface: "wwan0", modem: down)
        #expect(check.result == .blocked)
        #expect(check.reason == "wwan0: the modem has no data session (could not read: registration, SIM status)")

        // Nothing definite read: the route stands, and the reason still says what was not read.
        let connected = Self.modem(.unknown, nil, .connected, sim: .unknown, error: nil, present: true, unread: [.registration])
        #expect(WWANPath.check(interface: "wwan0", modem: connected).reason == "wwan0: registration unknown (could not read: registration)")

        // The JSON round trip keeps what was not read (a `reach status` reading through the agent derives again).
        let back = ModemState(json: down.json(signalPolicy: .android))
        #expect(back?.unread == down.unread)
        #expect(back?.dataChannels == down.dataChannels)
    }

    /// A client that cannot observe is shown but left out of the channel's session; alone, it makes it unknown.
    @Test func clientsThatCannotObserveAreNotObservers() {
        let cannot = DataClientReading(family: .ipv6, state: .unknown, error: "Set IP Family refused", observing: false)
        #expect(DataChannel(clients: [DataClientReading(family: .ipv4, state: .disconnected), cannot]).state == .disconnected)
        #expect(DataChannel(clients: [DataClientReading(family: .ipv4, state: .connected), cannot]).state == .connected)
        #expect(DataChannel(clients: [cannot]).state == .unknown)
        // A client that could observe but did not answer still holds the session unknown.
        let silent = DataClientReading(family: .ipv6, state: .unknown, error: "no answer within 5000 ms")
        #expect(DataChannel(clients: [DataClientReading(family: .ipv4, state: .disconnected), silent]).state == .unknown)
    }

    /// A locked SIM keeps intervention_required, and the text says so first.
    @Test func lockedSIMKeepsInterventionRequired() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem(.home, .attached, .connected, sim: .pinRequired, error: nil, present: true)]
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(s.flags.contains(.interventionRequired))
        #expect(s.modemCheck?.reason == "wwan0: the SIM needs its PIN")
        #expect(SnapshotText.headline(s) == "not reachable: a SIM needs its PIN/PUK (intervention required)")
    }

    /// A modem that cannot be read leaves the route standing, and both the JSON and the text say the check failed.
    @Test func unreadableModemSaysTheCheckFailed() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [Self.modem(.unknown, nil, .noDataService, sim: .unknown,
                             error: "no answer while opening within 15000 ms", present: true)]
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(s.reachable && s.status == .wwan)
        #expect(s.json()["modem_check"]?["result"] == .string("unknown"))
        #expect(s.modemCheck?.reason == "wwan0: no answer while opening within 15000 ms")
        #expect(SnapshotText.render(s).contains("modem check failed, the route's answer stands: wwan0: no answer while opening"))
    }

    /// A QMAP link (qmi_wwan qmimux1 on wwan0) maps to the modem through its channel; the modem's own netdev, which
    /// carries only the mux links, has no observer of its own: unknown, never "down".
    @Test func muxLinksMapThroughTheirChannel() {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = .home
        m.accessTechnologies = [.lte, .nr]
        m.packetService = .attached
        m.dataChannels = [
            DataChannel(interface: "qmimux0", muxID: 1, clients: [DataClientReading(family: .ipv4, state: .connected)]),
            DataChannel(interface: "qmimux1", muxID: 2, clients: [DataClientReading(family: .ipv4, state: .disconnected)]),
        ]
        #expect(WWANPath.check(interface: "qmimux0", modem: m).result == .ok)
        #expect(WWANPath.check(interface: "qmimux1", modem: m).result == .blocked)
        #expect(WWANPath.check(interface: "wwan0", modem: m).result == .unknown)
        #expect(WWANPath.modem(carrying: "qmimux1", in: [m])?.device == "/dev/cdc-wdm0")
        #expect(WWANPath.modem(carrying: "eth0", in: [m]) == nil)
        #expect(m.dataSession == .connected)
    }

    /// A WWAN netdev no modem is mapped to: said, never blocked.
    @Test func wwanInterfaceWithoutAModemIsUnknown() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.route = Self.route("wwan0", .wwan)
        s.derive()
        #expect(s.reachable)
        #expect(s.modemCheck?.result == .unknown)
        #expect(s.modemCheck?.device == nil)
        var notAsked = s
        notAsked.wwanSource = SourceHealth(available: false, reason: "not asked")
        notAsked.derive()
        #expect(notAsked.modemCheck == nil)
    }

    /// Other links are never held back: the IPv4 default over a dead modem gives way to the IPv6 default over
    /// Ethernet, and the per-family answers say which works.
    @Test func aBlockedRouteGivesWayToAWorkingCandidate() {
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        let v4 = Self.route("wwan0", .wwan)
        let v6 = Self.route("eth0", .ethernet, family: .ipv6, gateway: "fe80::1")
        s.wwan = [Self.modem(.searching, .detached, .disconnected, sim: .ready, error: nil, present: true)]
        s.route = v4
        s.routeCandidates = [v4, v6]
        s.supportsIPv4 = true
        s.supportsIPv6 = true
        s.derive()
        #expect(s.reachable)
        #expect(s.route == v6)
        #expect(s.medium == .ethernet)
        #expect(s.supportsIPv4 == false)
        #expect(s.supportsIPv6 == true)
        #expect(s.modemCheck == nil)

        // Both over the dead modem: not reachable, the first candidate kept.
        var both = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        let v6w = Self.route("wwan0", .wwan, family: .ipv6)
        both.wwan = s.wwan
        both.route = v4
        both.routeCandidates = [v4, v6w]
        both.supportsIPv4 = true
        both.supportsIPv6 = true
        both.derive()
        #expect(!both.reachable && both.route == v4)
        #expect(both.supportsIPv4 == false && both.supportsIPv6 == false)
    }

    /// TS 24.008 / 24.301 causes in words; an unlisted cause keeps its number only.
    @Test func rejectCauseWords() {
        #expect(RejectCause.words(11) == "PLMN not allowed")
        #expect(RejectCause.words(15) == "no suitable cells in location/tracking area")
        #expect(RejectCause.words(1) == nil)
        var m = Self.modem(.denied, .detached, .disconnected, sim: .ready, error: nil, present: true)
        m.rejectCause = 1
        #expect(WWANPath.check(interface: "wwan0", modem: m).reason == "wwan0: registration denied (cause 1)")
    }
}

/// The agent's view of a session drop: one held-down change line naming the modem and why, and one line back.
@Suite struct SessionChangeTests {
    static func snapshot(_ session: DataSessionState, registration: RegistrationState = .home) -> Snapshot {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.registration = registration
        m.accessTechnologies = registration.isRegistered ? [.lte] : .none
        m.packetService = .attached
        m.signal = SignalMeasurement(rsrp: -95)
        m.dataChannels = [DataChannel(interface: "wwan0", clients: [
            DataClientReading(family: .ipv4, state: session), DataClientReading(family: .ipv6, state: session),
        ])]
        var s = Snapshot(time: Timestamp(seconds: 0), target: .defaultRoute)
        s.wwan = [m]
        s.route = WWANPathTests.route("wwan0", .wwan)
        s.derive()
        return s
    }

    @Test func dropIsHeldDownThenOneLineAndTheReturnIsAtOnce() {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        _ = d.observe(Self.snapshot(.connected), at: .seconds(0))
        #expect(d.observe(Self.snapshot(.disconnected), at: .seconds(10)) == nil)  // held
        #expect(d.tick(at: .seconds(12)) == nil)
        let drop = d.tick(at: .seconds(15))
        #expect(drop?.changed == [.status, .medium, .reachable])
        #expect(drop?.reason == "/dev/cdc-wdm0 data session connected→disconnected; wwan0: the modem has no data session")
        #expect(d.tick(at: .seconds(30)) == nil)
        let back = d.observe(Self.snapshot(.connected), at: .seconds(31))
        #expect(back?.changed == [.status, .medium, .reachable])
        #expect(back?.reason == "/dev/cdc-wdm0 data session disconnected→connected; wwan0: the modem carries packets again")
        // A drop shorter than the hold-down is never reported.
        #expect(d.observe(Self.snapshot(.disconnected), at: .seconds(40)) == nil)
        #expect(d.observe(Self.snapshot(.connected), at: .seconds(42)) == nil)
        #expect(d.tick(at: .seconds(60)) == nil)
    }

    @Test func deregistrationNamesTheRegistration() {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Self.snapshot(.connected), at: .zero)
        let lost = d.observe(Self.snapshot(.disconnected, registration: .searching), at: .seconds(1))
        #expect(lost?.reason.contains("/dev/cdc-wdm0 registration home→searching") == true, "\(lost?.reason ?? "")")
        #expect(lost?.reason.contains("; wwan0: the modem is searching for a network") == true, "\(lost?.reason ?? "")")
    }
}
