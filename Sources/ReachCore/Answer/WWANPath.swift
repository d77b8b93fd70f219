// The merge rule: whether a route whose egress is a modem's network interface carries packets, from what the modem
// says. Pure; `Snapshot.derive()` calls it for the route it reports.
//
// Why the route alone is not enough: qmi_wwan (usbnet without a link-state interrupt) and mhi_net keep carrier on
// whatever the data session does, and with a static setup (or a hung connection manager) the address and the route
// stay after the network dropped the PDN, deregistered or rejected the modem. Android drops a cellular network
// when its data call ends (ConnectivityService, the RIL data call list): that is the bar here.
//
// Why the modem alone is not enough either: calling a working uplink dead makes failover scripts tear down the only
// link there is. So only a definite answer blocks a route: not registered (searching, idle, denied, limited
// service), PS-detached, or every observer of the link's data channel reading disconnected. A locked SIM keeps
// intervention_required (`ReachabilityFlags.derive`). Anything unknown (a timeout, a port gone, an unbindable
// channel) leaves the route's answer standing and says the check failed.
//
// A request the firmware refused (`ModemState.unread`) makes unknown only what it would have told: definite evidence
// read beside it still decides, as ModemManager keeps a modem usable when an optional request fails (its SIM, its
// operator name, Set IP Family in `mm-bearer-qmi.c` set_ip_family_ready). Only a modem that could not be read at all
// (`ModemState.error`: no answer, the port gone) leaves nothing to decide with.

/// The modem check of a route over a modem's network interface (`modem_check` in the JSON).
public struct ModemCheck: Sendable, Equatable {
    public enum Result: String, Sendable, Equatable {
        /// The modem says packets can flow: registered, attached, and the link's data session connected (or the
        /// modem has no data service to ask).
        case ok
        /// The modem says they cannot: the route is connection_required, not reachable.
        case blocked
        /// The modem could not say: the route's own answer stands.
        case unknown
    }

    /// The route's egress interface.
    public var interface: String
    /// The modem's control port; nil when no modem is known to carry the interface.
    public var device: String?
    public var result: Result
    /// For `blocked`, the evidence that decided, which people can act on ("wwan0: the modem has no data session");
    /// for `unknown`, what could not be read. Either lists the readings the modem refused ("(could not read: SIM
    /// status)"). Nil when ok.
    public var reason: String?
    /// The readings the modem refused this time (`not_read` in the JSON), whatever the result.
    public var notRead: [UnreadReading.Reading]

    public init(
        interface: String, device: String?, result: Result, reason: String? = nil,
        notRead: [UnreadReading.Reading] = []
    ) {
        self.interface = interface
        self.device = device
        self.result = result
        self.reason = reason
        self.notRead = notRead
    }
}

public enum WWANPath {
    /// The modem whose data an interface carries: the modem's own netdev (sysfs: the same USB interface or wwan
    /// device; or `modems.ports[].interface`), or a link of one of its data channels (qmimux, rmnet, a session
    /// VLAN). The first such modem.
    public static func modem(carrying interface: String, in modems: [ModemState]) -> ModemState? {
        modems.first { m in m.interface == interface || m.dataChannels.contains { c in c.interface == interface } }
    }

    /// The data channel that carries `interface`: the one named for it, else (for the modem's own netdev) the one
    /// without a link name of its own.
    public static func channel(for interface: String, of modem: ModemState) -> DataChannel? {
        if let c = modem.dataChannels.first(where: { $0.interface == interface }) { return c }
        guard modem.interface == interface else { return nil }
        return modem.dataChannels.first { $0.interface == nil }
    }

    /// The check of a route over `interface`, which `modem` carries.
    public static func check(interface: String, modem m: ModemState) -> ModemCheck {
        let notRead = m.unread.map(\.reading)
        let unreadNote = notRead.isEmpty ? "" : " (could not read: \(m.unreadWords))"
        func result(_ r: ModemCheck.Result, _ why: String?) -> ModemCheck {
            ModemCheck(
                interface: interface, device: m.device, result: r, reason: why.map { "\(interface): \($0)\(unreadNote)" },
                notRead: notRead)
        }
        // (`unknown` says the check failed; the reason says only why, so that a line showing both says it once.)
        if !m.present { return result(.unknown, "\(m.device) is gone") }
        if m.sim.needsIntervention { return result(.blocked, "the SIM needs its \(m.sim == .pukRequired ? "PUK" : "PIN")") }
        if let e = m.error { return result(.unknown, m.fault?.words(protocol: m.protocol) ?? e) }
        let c = m.dataChannels.isEmpty ? nil : channel(for: interface, of: m)
        // Definite evidence first, whatever else could not be read.
        if let down = definiteDown(m, channel: c) { return result(.blocked, down) }
        if m.registration == .unknown { return result(.unknown, "registration unknown") }
        guard !m.dataChannels.isEmpty else { return result(.ok, nil) }
        guard let c else { return result(.unknown, "no observer of this interface's data channel") }
        switch c.state {
        case .connected: return result(.ok, nil)
        case .connecting: return result(.unknown, "the data session is connecting")
        case .unknown, .disconnected, .disconnecting:  // the last two decided above
            return result(.unknown, "data session unknown (\(c.unknownDetail ?? "no usable answer"))")
        }
    }

    /// What the modem said that stops packets, if anything: not registered, PS detached, or the channel's session
    /// down or going down. Each stands on its own reading.
    static func definiteDown(_ m: ModemState, channel c: DataChannel?) -> String? {
        switch m.registration {
        case .home, .roaming, .unknown: break
        case .denied:
            let cause = m.rejectCause.map { " (cause \($0)" + (RejectCause.words($0).map { ": \($0)" } ?? "") + ")" } ?? ""
            return "registration denied\(cause)"
        case .searching: return "the modem is searching for a network"
        case .idle: return "the modem is not registered and not searching (radio off or power save)"
        case .emergencyOnly: return "limited service (emergency calls only)"
        }
        if m.packetService == .detached { return "the modem is not attached for packet data" }
        switch c?.state {
        case .disconnected?: return "the modem has no data session"
        case .disconnecting?: return "the data session is being torn down"
        default: return nil
        }
    }

    /// The check of a route, when its egress interface is a modem's; for a WWAN-kind interface no modem is known to
    /// carry, an `unknown` check that says so (when the modems were asked at all). Nil otherwise.
    ///
    /// The truth applies through the route's underlay (a CLAT, a tunnel, a VLAN): the link checked is the lowest one
    /// of the chain that a modem carries, and the reason names the route's own link first ("vx0: its underlay wwan0:
    /// the modem has no data session").
    public static func check(route: RouteLookup?, modems: [ModemState], modemsAsked: Bool) -> ModemCheck? {
        guard let r = route, r.type == .unicast, let top = r.link else { return nil }
        if let (link, m) = carrier(of: r, in: modems) {
            var c = check(interface: link.name, modem: m)
            if link.name != top.name, let why = c.reason { c.reason = "\(top.name): its underlay \(why)" }
            return c
        }
        let bottom = r.physicalLink ?? top
        guard bottom.kind == .wwan, modemsAsked else { return nil }
        let via = bottom.name == top.name ? "" : "\(top.name): its underlay "
        return ModemCheck(
            interface: bottom.name, device: nil, result: .unknown,
            reason: "\(via)\(bottom.name): no modem is known to carry it (name it in modems.ports[].interface)")
    }

    /// The lowest link of the route's chain that a modem carries, with that modem (the route's own link when it has
    /// no underlay).
    public static func carrier(of route: RouteLookup, in modems: [ModemState]) -> (link: LinkState, modem: ModemState)? {
        for link in route.linksFromBottom {
            if let m = modem(carrying: link.name, in: modems) { return (link, m) }
        }
        return nil
    }

    /// The route's flags after the check: a blocked route needs a connection and is not reachable; an ok or unknown
    /// check leaves the flags as the route made them.
    public static func flags(_ flags: ReachabilityFlags, after check: ModemCheck?) -> ReachabilityFlags {
        guard check?.result == .blocked, !flags.contains(.isLocalAddress) else { return flags }
        var f = flags
        f.remove(.reachable)
        f.insert(.connectionRequired)
        return f
    }
}

/// 3GPP reject causes in words (TS 24.008 §10.5.3.6 / annex G for GSM/UMTS, TS 24.301 §9.9.3.9 for EPS, TS 24.501
/// §9.11.3.2 for 5GS share the numbers below), with what to do about each.
public enum RejectCause {
    /// Every value ModemManager's `MMNetworkError` names (ModemManager-enums.h; registration causes of TS 24.008
    /// and TS 24.301, and the session causes of their annexes I and B that MBIM's `NwError` also carries). 27 is
    /// read as the registration cause it is in TS 24.301 (N1 mode not allowed); as a session cause it is "missing
    /// or unknown APN", which its hint covers too.
    static let table: [Int: String] = [
        2: "IMSI unknown in HLR/HSS", 3: "illegal MS/UE", 4: "IMSI unknown in VLR", 5: "IMEI not accepted",
        6: "illegal ME", 7: "EPS/GPRS services not allowed", 8: "EPS/GPRS and non-EPS/GPRS services not allowed",
        9: "MS/UE identity cannot be derived by the network", 10: "implicitly detached",
        11: "PLMN not allowed", 12: "location/tracking area not allowed",
        13: "roaming not allowed in this location/tracking area", 14: "EPS/GPRS services not allowed in this PLMN",
        15: "no suitable cells in location/tracking area", 16: "MSC temporarily not reachable", 17: "network failure",
        18: "CS domain not available", 19: "ESM failure", 20: "MAC failure", 21: "synch failure", 22: "congestion",
        23: "UE security capabilities mismatch / GSM authentication unacceptable", 25: "not authorized for this CSG",
        26: "insufficient resources", 27: "N1 mode not allowed", 28: "unknown PDP address or PDP type",
        29: "user authentication failed", 30: "activation rejected by GGSN, Serving GW or PDN GW",
        31: "redirection to 5GCN required", 32: "service option not supported",
        33: "requested service option not subscribed", 34: "service option temporarily out of order",
        35: "requested service option not authorized", 38: "call cannot be identified",
        39: "CS service temporarily not available", 40: "no PDP context activated",
        41: "semantic error in the TFT operation", 42: "syntactical error in the TFT operation",
        43: "unknown PDP context", 44: "semantic errors in packet filter", 45: "syntactical errors in packet filter",
        46: "PDP context without TFT already activated", 48: "request rejected, bearer control mode violation",
        49: "last PDN disconnection not allowed", 50: "PDP type IPv4 only allowed", 51: "PDP type IPv6 only allowed",
        62: "no network slices available", 65: "maximum number of PDP contexts reached",
        66: "requested APN not supported in current RAT and PLMN combination",
        67: "insufficient resources for specific slice and DNN", 69: "insufficient resources for specific slice",
        71: "ngKSI already in use", 72: "non-3GPP access to 5GCN not allowed", 73: "serving network not authorized",
        74: "temporarily not authorized for this SNPN", 75: "permanently not authorized for this SNPN",
        76: "not authorized for this CAG or authorized for CAG cells only", 77: "wireline access area not allowed",
        90: "payload was not forwarded", 91: "DNN not supported or not subscribed in the slice",
        92: "insufficient user-plane resources for the PDU session", 95: "semantically incorrect message",
        96: "invalid mandatory information", 97: "message type non-existent or not implemented",
        98: "message type not compatible with the protocol state",
        99: "information element non-existent or not implemented", 100: "conditional IE error",
        101: "message not compatible with the protocol state", 111: "protocol error, unspecified",
        112: "APN restriction value incompatible with active PDP context",
        113: "multiple accesses to a PDN connection not allowed",
    ]

    /// The cause in words, when known.
    public static func words(_ cause: Int) -> String? { table[cause] }

    /// What an installer can do about a cause, when the network gave one; every cause of `table` has one (a cause
    /// outside it gets the general advice). Grouped as the specs group them: the SIM or device barred, data not in
    /// the subscription, the area or network refused, the network's own trouble, authentication, closed groups,
    /// the APN or session, and protocol errors between firmware and network.
    public static func hint(_ cause: Int) -> String? {
        switch cause {
        case 2, 3, 4, 6, 8:
            return "the network does not accept this SIM (barred, unknown or not activated): ask the operator to "
                + "check the subscription; a SIM rejected this way stays rejected until the modem is power-cycled"
        case 5:
            return "the network refuses this modem's IMEI (blocked or not certified for the network): ask the "
                + "operator, or use another modem"
        case 7, 14:
            return "the subscription has no data service (here or on this network): ask the operator to enable data, "
                + "or try another network"
        case 9, 10:
            return "the network lost the modem's identity or detached it: the modem registers again by itself; "
                + "power-cycle it if this stays"
        case 11:
            return "this network (PLMN) does not accept the SIM: let the modem choose another operator (automatic "
                + "selection) or check the SIM's roaming agreements"
        case 12, 13:
            return "the SIM is not allowed in this area (location/tracking area, or roaming here): the modem tries "
                + "other areas or networks by itself; check the subscription's coverage and roaming"
        case 15:
            return "no cell of this area suits the SIM (often a radio technology the subscription lacks, e.g. LTE "
                + "without an LTE plan): allow other technologies (3G/2G) or move to another area or antenna position"
        case 16, 17, 18, 19, 22, 26, 34, 38, 39:
            return "the network has a problem of its own (failure, congestion, resources): wait, the modem retries; "
                + "if it lasts, ask the operator"
        case 20, 21, 23, 29:
            return "authentication between the SIM and the network failed: reseat the SIM or try another; if it "
                + "lasts, the operator must check the SIM's keys (or the APN's user name and password for 29)"
        case 25, 73, 74, 75, 76, 77:
            return "the network admits only a closed group of users here (CSG, SNPN, CAG): use a public network "
                + "or ask the operator to add the SIM"
        case 27, 28, 30, 32, 33, 35, 66, 91:
            return "the network refused the session (an APN or service not in the subscription): check the APN "
                + "(modems.ports[], the connection manager) against the operator's settings"
        case 31, 72:
            return "the network wants the modem on another core (5GC/EPC): allow 5G (or LTE) in the modem's mode "
                + "preferences, or update its firmware"
        case 40, 41, 42, 43, 44, 45, 46, 48, 49, 50, 51, 112, 113:
            return "the network refused a change to the data session (its context, filters or IP type): restart "
                + "the connection; set the IP type (ipv4, ipv6, ipv4v6) the operator allows"
        case 62, 65, 67, 69, 71, 90, 92:
            return "the network has no room for another session or slice now: close unused sessions and retry later"
        case 95, 96, 97, 98, 99, 100, 101, 111:
            return "a protocol error between the modem's firmware and the network: power-cycle the modem; if it "
                + "repeats, update the firmware or report it to the operator"
        default:
            return nil
        }
    }
}
