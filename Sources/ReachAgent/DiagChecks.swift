// `reach diag`: the checks an installer needs, evaluated from plain facts without I/O (DiagFacts), so every
// branch is table-tested. Gathering the facts is Diagnostics.swift.

import GatewayReach

public enum CheckStatus: String, Sendable, Equatable, Comparable {
    case ok, warn, fail, skip

    var rank: Int { [.skip: 0, .ok: 1, .warn: 2, .fail: 3][self]! }
    public static func < (a: CheckStatus, b: CheckStatus) -> Bool { a.rank < b.rank }
}

public struct DiagCheck: Sendable, Equatable {
    /// Stable id for scripts ("modem.sim", "route.default", …), suffixed with the device or interface where per-link.
    public var id: String
    public var title: String
    public var status: CheckStatus
    public var detail: String
    /// What to do about it; set for warn and fail.
    public var hint: String?

    public init(_ id: String, _ title: String, _ status: CheckStatus, _ detail: String, hint: String? = nil) {
        self.id = id
        self.title = title
        self.status = status
        self.detail = detail
        self.hint = hint
    }

    public var json: JSON {
        .object([
            ("id", .string(id)), ("title", .string(title)), ("status", .string(status.rawValue)),
            ("detail", .string(detail)), ("hint", .optional(hint)),
        ])
    }
}

/// A network interface as the diagnostics see it (getifaddrs).
public struct InterfaceFacts: Sendable, Equatable {
    public var up: Bool
    public var running: Bool
    public var addresses: [String]

    public init(up: Bool, running: Bool, addresses: [String]) {
        self.up = up
        self.running = running
        self.addresses = addresses
    }
}

public struct ProbeResult: Sendable, Equatable {
    public var ok: Bool
    public var detail: String

    public init(ok: Bool, detail: String) {
        self.ok = ok
        self.detail = detail
    }
}

/// Everything the checks look at, gathered once.
public struct DiagFacts: Sendable {
    public var snapshot: Snapshot
    public var interfaces: [String: InterfaceFacts]
    public var gatewayNeighbour: Result<NeighbourState?, NetlinkError>?
    public var dnsServers: [String]
    /// Where the DNS servers were read ("/etc/resolv.conf", and systemd-resolved's file).
    public var dnsSources: [String]
    public var dnsError: String?
    /// The configured probe and its result; nil when no probe is configured.
    public var probe: (AgentConfig.Probe, ProbeResult)?
    /// One validation round per reachable uplink, by interface; nil when validation is not enabled.
    public var validation: [String: ValidationRound]?

    public init(snapshot: Snapshot) {
        self.snapshot = snapshot
        self.interfaces = [:]
        self.dnsServers = []
        self.dnsSources = []
    }
}

public enum Verdict: String, Sendable {
    case ok
    /// Packets leave, but some check failed or warned (a locked SIM on a standby modem, a weak signal…).
    case degraded
    case notReachable = "not_reachable"

    /// 0 ok, 1 not reachable, 2 reachable with problems.
    public var exitCode: Int32 {
        switch self {
        case .ok: return 0
        case .notReachable: return 1
        case .degraded: return 2
        }
    }
}

public enum DiagChecks {
    public static func evaluate(_ f: DiagFacts, showIdentifiers: Bool = false) -> [DiagCheck] {
        var checks: [DiagCheck] = []
        checks += modems(f)
        checks += wifi(f, showIdentifiers: showIdentifiers)
        checks += route(f)
        checks += uplinks(f)
        checks.append(dns(f))
        checks.append(probe(f))
        checks += validation(f)
        return checks
    }

    public static func verdict(_ checks: [DiagCheck]) -> Verdict {
        let routeOK = checks.first { $0.id == "route.default" }?.status == .ok
        let probeFailed = checks.first { $0.id == "probe" }?.status == .fail
        if !routeOK || probeFailed { return .notReachable }
        return checks.contains { $0.status == .fail || $0.status == .warn } ? .degraded : .ok
    }

    /// One line for people: "verdict: ok — …".
    public static func verdictLine(_ verdict: Verdict, _ checks: [DiagCheck], _ s: Snapshot) -> String {
        let fails = checks.filter { $0.status == .fail }.count
        let warns = checks.filter { $0.status == .warn }.count
        switch verdict {
        case .ok:
            return "verdict: OK — \(SnapshotText.headline(s))"
        case .degraded:
            return "verdict: REACHABLE WITH PROBLEMS — \(fails) failed, \(warns) warning\(warns == 1 ? "" : "s"); "
                + SnapshotText.headline(s)
        case .notReachable:
            let first = checks.first { $0.status == .fail && ($0.id == "route.default" || $0.id == "probe") }
            return "verdict: NOT REACHABLE — " + (first?.detail ?? SnapshotText.headline(s))
        }
    }

    // MARK: Modems

    static func modems(_ f: DiagFacts) -> [DiagCheck] {
        let s = f.snapshot
        guard s.wwanSource.available || !s.wwan.isEmpty else {
            return [DiagCheck("modem", "Modem present and answering", .skip, s.wwanSource.reason ?? "WWAN not available")]
        }
        guard !s.wwan.isEmpty else {
            return [DiagCheck(
                "modem", "Modem present and answering", .skip, "no modem found (looked at \(SnapshotText.modemSearchPlaces))")]
        }
        var out: [DiagCheck] = []
        for m in s.wwan {
            let id = "modem[\(m.device)]"
            if !m.present {
                out.append(
                    DiagCheck(
                        id + ".present", "Modem \(m.device) present and answering", .fail, "the control port is gone",
                        hint: "check the USB connection and power; `ls /dev/cdc-wdm* /dev/wwan*` should list it"))
                continue
            }
            if let e = m.error {
                out.append(DiagCheck(id + ".present", "Modem \(m.device) present and answering", .fail, e, hint: errorHint(m)))
                continue
            }
            let model = [m.manufacturer, m.model].compactMap { $0 }.joined(separator: " ")
            let refused = m.unread.isEmpty ? "" : "; refused: " + m.unreadWords
            out.append(
                DiagCheck(
                    id + ".present", "Modem \(m.device) present and answering", .ok,
                    "\(m.protocol.rawValue.uppercased())" + (model.isEmpty ? "" : ", \(model)") + refused))
            out.append(sim(m, id))
            out.append(registration(m, id))
            out.append(radio(m, id, s.signalPolicy))
            out.append(data(m, id, f))
            out.append(dataSession(m, id))
            if let a = access(m, id) { out.append(a) }
        }
        return out
    }

    /// What to do about a modem that could not be read, by the case of its failure.
    static func errorHint(_ m: ModemState) -> String {
        let proxy = m.protocol == .qmi ? "qmi-proxy" : "mbim-proxy"
        switch m.fault?.kind {
        case .proxyRefused?:
            return "run reach as root (without capabilities, as the shipped unit does: config/reach.service): \(proxy) "
                + "serves only root or the user lib\(m.protocol.rawValue) was built for; where no ModemManager runs, "
                + "modems.access direct also works"
        case .proxySilent?:
            return "\(proxy) took the connection and never answered; reach ends and restarts one it started that no "
                + "other program uses, and leaves one that another program uses (ModemManager) running: restart that "
                + "program, or end the proxy named here by pid"
        case .portHeld?:
            return "another program holds the port and takes replies meant for reach: stop it, or let both share the "
                + "modem through \(proxy) (qmicli -p, mbimcli -p, ModemManager) with modems.access auto"
        case .wrongProtocol?:
            let other = m.protocol == .qmi ? "mbim" : "qmi"
            return "the port speaks the other protocol: name it as \(m.device):\(other) (or leave the protocol out and "
                + "let sysfs tell it)"
        default:
            return "the modem does not answer \(m.protocol.rawValue.uppercased()) requests; "
                + "stop other users of the port (ModemManager) or power-cycle the modem"
        }
    }

    /// The data session the modem's observers read (`wwan[].data_session`), with what to check when there is none.
    static func dataSession(_ m: ModemState, _ id: String) -> DiagCheck {
        let title = "Data session"
        guard let session = m.dataSession else {
            return DiagCheck(id + ".data_session", title, .skip, "the modem has no data service to ask")
        }
        let channels = m.dataChannels.map { c in (c.interface.map { "\($0) " } ?? "") + "(\(c.label)) \(c.state.rawValue)" }
            .joined(separator: ", ")
        switch session {
        case .connected:
            return DiagCheck(id + ".data_session", title, .ok, channels)
        case .disconnected, .disconnecting:
            let hint: String
            if m.registration == .denied {
                let cause = m.rejectCause.map { c in " (cause \(c)" + (RejectCause.words(c).map { ": \($0)" } ?? "") + ")" } ?? ""
                hint = "the network denied the registration\(cause): no session can start until it accepts the SIM"
            } else if !m.registration.isRegistered {
                hint = "the modem is not registered (\(m.registration.rawValue)): fix the registration first"
            } else if m.packetService == .detached {
                hint = "the modem is not attached for packet data: check the APN/attach settings and the data plan"
            } else {
                hint = "no data connection is up: check the APN and start it (mmcli -m 0 --simple-connect='apn=…', "
                    + "qmicli -p --wds-start-network=apn=…, mbimcli -p --connect=apn=…, or the connection manager)"
            }
            return DiagCheck(id + ".data_session", title, .fail, "no data session: " + channels, hint: hint)
        case .connecting:
            return DiagCheck(id + ".data_session", title, .warn, channels, hint: "the session is being set up; check again shortly")
        case .unknown:
            let detail = m.dataChannels.compactMap { c in c.unknownDetail.map { (c.interface ?? c.label) + ": " + $0 } }
                .joined(separator: "; ")
            return DiagCheck(
                id + ".data_session", title, .warn, "unknown: " + (detail.isEmpty ? channels : detail),
                hint: "the session could not be read (the client or binding named above): the route's answer stands; "
                    + "a multiplexed link needs its mux id (modems.ports[].mux_id)")
        }
    }

    /// How the port was opened: through the proxy as ModemManager does, or directly, and whether anything else holds
    /// it. Nil when the port was not opened.
    static func access(_ m: ModemState, _ id: String) -> DiagCheck? {
        guard let path = m.access else { return nil }
        let proxy = m.protocol == .qmi ? "qmi-proxy" : "mbim-proxy"
        let title = "Modem port shared safely"
        let how = path == .proxy ? "through \(proxy)" : "directly"
        guard let reason = m.accessReason else { return DiagCheck(id + ".access", title, .ok, how) }
        if !m.sharedWith.isEmpty {
            return DiagCheck(
                id + ".access", title, .warn, "\(how); \(reason)",
                hint: "two readers of one port lose each other's replies: make the other program use \(proxy) "
                    + "(qmicli -p, mbimcli -p, ModemManager) and keep modems.access auto")
        }
        return DiagCheck(id + ".access", title, .ok, "\(how) (\(reason))")
    }

    static func sim(_ m: ModemState, _ id: String) -> DiagCheck {
        let title = "SIM"
        switch m.sim {
        case .ready: return DiagCheck(id + ".sim", title, .ok, "ready (unlocked)")
        case .absent:
            return DiagCheck(id + ".sim", title, .fail, "no SIM", hint: "insert a SIM card (power off first on most modems)")
        case .unknown:
            // Firmware that refuses every SIM status request has a SIM state nobody can read: nothing to fix.
            if let refused = m.unread.first(where: { $0.reading == .sim }) {
                return DiagCheck(id + ".sim", title, .skip, "the modem does not report its SIM state (\(refused.reason))")
            }
            return DiagCheck(id + ".sim", title, .warn, "SIM state unknown", hint: "the modem did not report its SIM state")
        default:
            if m.sim.needsIntervention {
                return DiagCheck(
                    id + ".sim", title, .fail, "SIM needs \(m.sim.rawValue)",
                    hint: "unlock the SIM (e.g. `qmicli -d \(m.device) --uim-verify-pin=PIN1,NNNN`) or remove its PIN")
            }
            return DiagCheck(id + ".sim", title, .warn, m.sim.rawValue, hint: "the SIM is not ready yet")
        }
    }

    static func registration(_ m: ModemState, _ id: String) -> DiagCheck {
        let title = "Registered on a network"
        // "Telekom.de 262/01": the PLMN written as `reach status` writes it.
        let op = [m.operatorName, m.plmn.map { "\($0.mcc)/\($0.mnc)" }].compactMap { $0 }.joined(separator: " ")
        switch m.registration {
        case .home:
            return DiagCheck(id + ".registration", title, .ok, "home" + (op.isEmpty ? "" : " (\(op))"))
        case .roaming:
            return DiagCheck(
                id + ".registration", title, .warn, "roaming" + (op.isEmpty ? "" : " (\(op))"),
                hint: "roaming may cost extra or be slow; check the SIM's home network coverage")
        case .denied:
            let cause = m.rejectCause.map { c in ", reject cause \(c)" + (RejectCause.words(c).map { " (\($0))" } ?? "") } ?? ""
            return DiagCheck(
                id + ".registration", title, .fail, "registration denied\(cause)",
                hint: m.rejectCause.flatMap(RejectCause.hint)
                    ?? "the network refused the SIM without a cause reach knows: check that the subscription is active")
        case .searching:
            return DiagCheck(
                id + ".registration", title, .fail, "searching for a network",
                hint: "check the antennas and coverage; on a fixed install try another position or an external antenna")
        default:
            return DiagCheck(
                id + ".registration", title, .fail, m.registration.rawValue,
                hint: "the modem is not registered: check the antennas, the SIM and the modem's radio (is it in low-power mode?)")
        }
    }

    static func radio(_ m: ModemState, _ id: String, _ policy: SignalPolicy) -> DiagCheck {
        let title = "Radio technology and signal"
        guard m.registration.isRegistered else {
            // Listed all the same: an installer who counts the checks sees which one was not made, and why.
            return DiagCheck(id + ".radio", title, .skip, "not registered (\(m.registration.rawValue)): no serving cell to measure")
        }
        let bars = m.bars(policy)
        var detail = "\(m.generation.name)"
        if let mode = m.nrMode { detail += " \(mode)" }
        detail += " (" + m.accessTechnologies.names.joined(separator: "+") + ")"
        // Where the modem is: "on LTE B3 + B7, 40 MHz, EARFCN 1300, PCI 123".
        var cell: [String] = []
        if let bands = CellSummary.bands(m) { cell.append(bands) }
        if let c = m.cells.cell, let ch = CellSummary.channel(c) { cell.append(ch) }
        if !cell.isEmpty { detail += " on " + cell.joined(separator: ", ") + ";" } else { detail += "," }
        detail += " \(bars) bar\(bars == 1 ? "" : "s")"
        detail += " (\(policy.name)\(policy.overridden.isEmpty ? "" : ", custom thresholds"))"
        let sig = m.signal
        let measures: [(String, Double?, String)] = [
            ("rsrp", sig.rsrp, "dBm"), ("rsrq", sig.rsrq, "dB"), ("sinr", sig.sinr, "dB"), ("rscp", sig.rscp, "dBm"),
            ("rssi", sig.rssi, "dBm"),
        ]
        let shown = measures.compactMap { name, v, unit in v.map { "\(name) \(fmt($0)) \(unit)" } }
        if !shown.isEmpty { detail += ", " + shown.joined(separator: ", ") }
        switch bars {
        case 0:
            return DiagCheck(id + ".radio", title, .fail, detail, hint: "no usable signal: check the antenna connections")
        case 1:
            return DiagCheck(
                id + ".radio", title, .warn, detail,
                hint: "poor signal: move the gateway or its antennas, or fit an external antenna")
        default:
            return DiagCheck(id + ".radio", title, .ok, detail)
        }
    }

    static func data(_ m: ModemState, _ id: String, _ f: DiagFacts) -> DiagCheck {
        let title = "Data attached, WWAN interface up with an address"
        var parts: [String] = []
        // Attached only when the modem says so: a modem that does not report packet service (or reports it only once
        // registered) is not taken as attached.
        let reported = m.packetService.flatMap { $0 == .unknown ? nil : $0 }
        switch reported {
        case .attached?:
            parts.append("packet service attached")
        case let ps?:
            return DiagCheck(
                id + ".data", title, .fail, "packet service \(ps.rawValue)",
                hint: m.registration.isRegistered
                    ? "not attached for data: check the APN and the data plan"
                    : "not registered (\(m.registration.rawValue)): the modem attaches for data once registered")
        case nil where !m.registration.isRegistered:
            return DiagCheck(
                id + ".data", title, .fail, "not attached: the modem is not registered (\(m.registration.rawValue))",
                hint: "the modem attaches for data once registered: fix the registration first")
        case nil:
            parts.append("packet service not reported")
        }
        guard let name = m.interface else {
            return DiagCheck(
                id + ".data", title, .warn, (parts + ["network interface unknown"]).joined(separator: ", "),
                hint: "name it in the config: modems.ports[].interface")
        }
        guard let netdev = f.interfaces[name] else {
            return DiagCheck(
                id + ".data", title, .fail, (parts + ["\(name) does not exist"]).joined(separator: ", "),
                hint: "the modem's network interface is missing: check the driver (qmi_wwan, cdc_mbim, mhi_net)")
        }
        if !netdev.up {
            return DiagCheck(
                id + ".data", title, .fail, (parts + ["\(name) is down"]).joined(separator: ", "),
                hint: "bring the data connection up (qmicli --wds-start-network / mbimcli --connect), then `ip link set \(name) up`")
        }
        if netdev.addresses.isEmpty {
            return DiagCheck(
                id + ".data", title, .fail, (parts + ["\(name) is up without an address"]).joined(separator: ", "),
                hint: "run DHCP on \(name) or set the address the modem gave (raw-IP modems need `qmi_wwan` raw_ip mode)")
        }
        parts.append("\(name) up, " + netdev.addresses.joined(separator: ", "))
        guard reported == .attached else {
            return DiagCheck(
                id + ".data", title, .warn, parts.joined(separator: ", "),
                hint: "the interface carries an address but the modem did not say it is attached for data: "
                    + "check `reach status` for the modem's packet service")
        }
        return DiagCheck(id + ".data", title, .ok, parts.joined(separator: ", "))
    }

    // MARK: WiFi

    static func wifi(_ f: DiagFacts, showIdentifiers: Bool) -> [DiagCheck] {
        let s = f.snapshot
        let stations = s.wifi.filter { $0.mode == .station }
        guard s.wifiSource.available || !s.wifi.isEmpty else {
            return [DiagCheck("wifi", "WiFi uplink associated", .skip, s.wifiSource.reason ?? "WiFi not available")]
        }
        guard !stations.isEmpty else {
            return [DiagCheck("wifi", "WiFi uplink associated", .skip, "no WiFi station interface")]
        }
        return stations.map { w in
            let id = "wifi[\(w.interface)]"
            let title = "WiFi uplink \(w.interface) associated"
            guard w.associated else {
                return DiagCheck(
                    id, title, .fail, "not associated",
                    hint: "check the SSID and passphrase (wpa_supplicant) and that the access point is in range")
            }
            var detail = "to \"\(w.ssid ?? "?")\""
            if let b = w.bssid { detail += " (\(showIdentifiers ? b : Redact.bssid(b)))" }
            if let ch = w.channel, let band = w.band { detail += ", channel \(ch) \(band.rawValue)" }
            if let sig = w.barSignalDBm { detail += ", \(sig) dBm" }
            detail += ", \(w.bars) bar\(w.bars == 1 ? "" : "s")"
            if w.bars <= 1 {
                return DiagCheck(id, title, .warn, detail, hint: "weak signal: move the gateway or the access point closer")
            }
            return DiagCheck(id, title, .ok, detail)
        }
    }

    // MARK: Route, gateway, DNS, probe

    static func route(_ f: DiagFacts) -> [DiagCheck] {
        let s = f.snapshot
        var out: [DiagCheck] = []
        let title = "Default route"
        if s.status == .unknown {
            out.append(
                DiagCheck("route.default", title, .fail, s.error ?? "the route could not be determined",
                          hint: "the kernel's routing could not be read (netlink); run as a user allowed to open NETLINK_ROUTE"))
            return out
        }
        guard let r = s.route else {
            out.append(
                DiagCheck("route.default", title, .fail, "no default route",
                          hint: "no way out: check the WAN link and its DHCP/PPP, or the modem's data connection"))
            out.append(DiagCheck("route.gateway", "Gateway answers ARP/NDP", .skip, "no default route"))
            return out
        }
        let via = r.link.map { "via \(r.underlay?.underlay != nil ? r.underlay!.names : $0.name)" } ?? "without an interface"
        let gw = r.gateway.map { " gateway \($0)" } ?? " (on-link)"
        if s.reachable {
            out.append(DiagCheck("route.default", title, .ok, "\(via)\(gw), \(s.medium.rawValue), \(r.family.rawValue)"))
        } else if let l = r.link, !l.adminUp {
            out.append(DiagCheck("route.default", title, .fail, "\(l.name) is down", hint: "`ip link set \(l.name) up`"))
        } else if let l = r.link, !l.carrier {
            out.append(
                DiagCheck("route.default", title, .fail, "\(l.name) has no carrier",
                          hint: "check the cable or the radio link of \(l.name)"))
        } else {
            let underlayBroken = r.underlay.map { $0.firstDownHop != nil || $0.blocking } ?? false
            out.append(
                DiagCheck("route.default", title, .fail, SnapshotText.headline(s),
                          hint: underlayBroken
                            ? "\(r.link?.name ?? "the route") cannot carry packets below it: see the underlay checks"
                            : "the route exists but is not usable"))
        }
        if let chain = r.underlay { out += underlay(chain) }
        guard r.gateway != nil else {
            out.append(DiagCheck("route.gateway", "Gateway answers ARP/NDP", .skip, "no gateway (on-link or point-to-point)"))
            return out
        }
        let gtitle = "Gateway \(r.gateway!) answers ARP/NDP"
        switch f.gatewayNeighbour {
        case nil:
            out.append(DiagCheck("route.gateway", gtitle, .skip, "not asked"))
        case let .failure(e)?:
            out.append(DiagCheck("route.gateway", gtitle, .warn, "neighbour table not readable: \(e)", hint: "run as root"))
        case .success(nil)?:
            // An idle uplink has no entry until something is sent (the kernel resolves on demand): nothing is wrong
            // yet. Only a resolution that failed (FAILED, below) or stays unconfirmed says so.
            out.append(
                DiagCheck("route.gateway", gtitle, .skip,
                          "no neighbour entry yet (no traffic to the gateway): not resolved, so not tested"))
        case let .success(n?)?:
            if n.isFailed {
                out.append(
                    DiagCheck("route.gateway", gtitle, .fail, "neighbour state \(n)",
                              hint: "the gateway does not answer ARP/NDP: check the cable, VLAN and the gateway itself"))
            } else if n.isUsable {
                out.append(DiagCheck("route.gateway", gtitle, .ok, "neighbour state \(n)" + (n.linkAddress.map { " (\(Redact.mac($0)))" } ?? "")))
            } else {
                out.append(DiagCheck("route.gateway", gtitle, .warn, "neighbour state \(n)", hint: "the gateway has not been confirmed yet"))
            }
        }
        return out
    }

    /// A check per link below the route's own (a CLAT's IPv6 uplink, a tunnel's, a VLAN's lower device), and one
    /// for a chain the walk could not follow to the bottom.
    static func underlay(_ chain: UnderlayChain) -> [DiagCheck] {
        var out: [DiagCheck] = []
        let top = chain.hops.first?.link.name ?? "?"
        for hop in chain.hops.dropFirst() {
            let name = hop.link.name
            let via = hop.via.map { " (\($0.rawValue)" + (hop.remote.map { " to \($0)" } ?? "") + ")" } ?? ""
            let title = "Underlay \(name) of \(top)\(via)"
            let id = "route.underlay[\(name)]"
            if !hop.link.adminUp {
                out.append(DiagCheck(id, title, .fail, "\(name) is down", hint: "`ip link set \(name) up`"))
            } else if !hop.link.carrier {
                out.append(
                    DiagCheck(id, title, .fail, "\(name) has no carrier",
                              hint: "\(top) rides on \(name): check its cable, radio link or data connection"))
            } else {
                var detail = "\(hop.link.kind.rawValue), up with carrier"
                if let fwmark = hop.fwmark { detail += ", fwmark \(fwmark)" }
                out.append(DiagCheck(id, title, .ok, detail))
            }
        }
        if let problem = chain.problem {
            if chain.blocking {
                out.append(
                    DiagCheck("route.underlay", "Underlay of \(top)", .fail, problem,
                              hint: "\(top) cannot carry packets: check the route to its remote (a fwmark rule for WireGuard), "
                                + "or name its underlay in interface_underlays"))
            } else {
                out.append(
                    DiagCheck("route.underlay", "Underlay of \(top)", .warn, problem,
                              hint: "run as root to read WireGuard peers (CAP_NET_ADMIN), or name the underlay in interface_underlays"))
            }
        }
        return out
    }

    // MARK: Uplinks

    /// One check per uplink, each answered as if it were the only way out: a dead backup is found before the
    /// outage that needs it.
    static func uplinks(_ f: DiagFacts) -> [DiagCheck] {
        let s = f.snapshot
        let carrying = s.uplinks.first(where: \.primary)?.interface
        return s.uplinks.map { u in
            let id = "uplink[\(u.interface)]"
            let name = (u.role?.rawValue ?? (u.primary ? "primary" : "backup")) + " " + u.interface
            let title = "Uplink \(u.interface)" + (u.primary ? " (carries the default route)" : "")
            guard u.reachable else {
                return DiagCheck(id, title, .fail, "\(name): \(u.reason ?? "not reachable")", hint: uplinkHint(u))
            }
            var detail = "\(name): reachable over \(u.medium.rawValue)"
            if let r = u.route {
                if let chain = r.underlay, chain.underlay != nil { detail += " over \(chain.names)" }
                detail += r.gateway.map { " via \($0)" } ?? " (on-link)"
                if let m = r.metric { detail += ", metric \(m)" }
            }
            if let tables = u.tablesText { detail += ", " + tables }
            if u.role == .primary && !u.primary, let carrying {
                return DiagCheck(
                    id, title, .warn, detail + "; the default route uses \(carrying)",
                    hint: "the configured primary is usable but not in use: compare the default routes' metrics "
                        + "(`ip route show default`) or the mwan3 policy (`mwan3 status`)")
            }
            return DiagCheck(id, title, .ok, detail)
        }
    }

    static func uplinkHint(_ u: Uplink) -> String {
        guard let link = u.link else {
            return "\(u.interface) does not exist: check its driver, or the name in the configuration's uplinks"
        }
        if !link.adminUp { return "`ip link set \(u.interface) up` (netifd: `ifup`)" }
        if u.flags.contains(.interventionRequired) { return "unlock the SIM of the modem behind \(u.interface)" }
        if !link.carrier { return "check the cable or the radio link of \(u.interface)" }
        if u.routes.isEmpty {
            return "\(u.interface) holds no default route: check its DHCP/PPP or the modem's data connection "
                + "(with mwan3: `mwan3 status`)"
        }
        if link.kind == .wwan { return "check the modem's registration, the APN and the data connection" }
        return "the route exists but is not usable"
    }

    static func dns(_ f: DiagFacts) -> DiagCheck {
        let title = "DNS servers configured"
        if let e = f.dnsError, f.dnsServers.isEmpty {
            return DiagCheck("dns", title, .fail, e, hint: "write nameserver lines to /etc/resolv.conf (or configure systemd-resolved)")
        }
        if f.dnsServers.isEmpty {
            return DiagCheck("dns", title, .fail, "no nameserver in " + f.dnsSources.joined(separator: ", "),
                             hint: "no DNS: names will not resolve; set nameservers via DHCP or /etc/resolv.conf")
        }
        return DiagCheck("dns", title, .ok, f.dnsServers.joined(separator: ", ") + " (" + f.dnsSources.joined(separator: ", ") + ")")
    }

    static func probe(_ f: DiagFacts) -> DiagCheck {
        guard let (p, result) = f.probe else {
            return DiagCheck("probe", "Active probe", .skip, "not configured (the agent never phones home by default)")
        }
        let title = "Active probe: \(p.kind.rawValue) \(p.host):\(p.port)"
        if result.ok { return DiagCheck("probe", title, .ok, result.detail) }
        return DiagCheck("probe", title, .fail, result.detail,
                         hint: "the route exists but the endpoint does not answer: a firewall, a captive portal or an outage upstream")
    }

    /// A measure as text: whole numbers without ".0". Bounded before the conversion: a reading from a worker may be
    /// any finite double, and Int(1e300) would trap.
    static func fmt(_ d: Double) -> String { d.rounded() == d && abs(d) < 1e15 ? String(Int(d)) : String(d) }
}

/// Masking of identifiers for output that may leave the device.
public enum Redact {
    /// "aa:bb:cc:xx:xx:xx": the vendor part stays (useful for support), the device part goes.
    public static func bssid(_ b: String) -> String { mac(b) }

    public static func mac(_ m: String) -> String {
        let parts = m.split(separator: ":")
        guard parts.count == 6 else { return "redacted" }
        return parts.prefix(3).joined(separator: ":") + ":xx:xx:xx"
    }

    /// A report or status object with BSSIDs masked and any `identifiers` member removed.
    public static func json(_ v: JSON) -> JSON {
        switch v {
        case let .object(members):
            return .object(
                members.compactMap { k, value in
                    // Identifiers, and what locates the box in public cell databases (TAC/LAC, cell ids).
                    if ["identifiers", "tac", "lac", "cell_id"].contains(k) { return nil }
                    if k == "bssid", let s = value.stringValue { return (k, .string(bssid(s))) }
                    return (k, json(value))
                })
        case let .array(items):
            return .array(items.map(json))
        default:
            return v
        }
    }
}
