// The human form of a snapshot: one glance at status, medium, WWAN generation, bars, interface and gateway.
// Pure string building, like iwinfo's format_* helpers, so `status`, `watch` and `diag` print alike.

public enum SnapshotText {
    /// "▂▄▆█" with unfilled bars as "_": four cells, the first `bars` filled.
    public static func barGlyphs(_ bars: Int) -> String {
        let full: [Character] = ["▂", "▄", "▆", "█"]
        return String((0..<4).map { $0 < bars ? full[$0] : "_" })
    }

    /// The headline: "reachable over ethernet via eth0 (gateway 192.0.2.1)" or "not reachable: …".
    public static func headline(_ s: Snapshot) -> String {
        if s.status == .unknown { return "unknown: \(s.error ?? "the route could not be determined")" }
        guard s.reachable else {
            return "not reachable: " + notReachableReason(s)
        }
        var line = "reachable over \(s.medium.rawValue)"
        if let r = s.route, let link = r.link {
            if s.flags.contains(.isLocalAddress) {
                line = "reachable: \(s.target.value) is this host's own address"
            } else {
                // With an underlay, every link down to the one packets leave on: "via clat → wwan0".
                line += " via " + (r.underlay?.underlay != nil ? r.underlay!.names : link.name)
                line += r.gateway.map { " (gateway \($0))" } ?? " (on-link)"
            }
        }
        return line + validationSuffix(s)
    }

    static func notReachableReason(_ s: Snapshot) -> String {
        if let e = s.resolutionError { return e }
        if let e = s.error { return e }
        if s.flags.contains(.interventionRequired) {
            if let r = s.route, let chain = r.underlay, let m = Snapshot.modem(carrying: r, in: s.wwan),
                let hop = chain.hops.dropFirst().first(where: { $0.link.name == m.interface })
            {
                return chain.reason(hop, "has a SIM that needs its PIN/PUK (intervention required)")
            }
            return "a SIM needs its PIN/PUK (intervention required)"
        }
        if let c = s.modemCheck, c.result == .blocked, let why = c.reason { return why + " (connection required)" }
        guard let r = s.route else {
            return s.target == .defaultRoute ? "no default route" : "no route to \(s.target.value)"
        }
        switch r.type {
        case .unreachable, .blackhole, .prohibit, .throw:
            return "the route to \(s.target.value) is \(r.typeName)"
        default: break
        }
        if let link = r.link {
            if !link.adminUp { return "\(link.name) is down" }
            if !link.carrier { return "\(link.name) has no carrier (connection required)" }
        }
        if let chain = r.underlay {
            if let hop = chain.firstDownHop { return chain.reason(hop, hop.link.adminUp ? "has no carrier" : "is down") }
            if chain.blocking, let problem = chain.problem { return problem }
        }
        if s.target == .linkLocal { return "no on-link 169.254.0.0/16 network" }
        return "route via \(r.link?.name ?? "?") is not usable"
    }

    /// The whole text: headline, a status line, one line per uplink, then one line per modem and WiFi interface.
    public static func render(_ s: Snapshot) -> String {
        var lines = [headline(s)]
        lines.append("  " + statusLine(s))
        if !s.flags.isEmpty { lines.append("  flags: " + s.flags.names.joined(separator: ", ")) }
        if let chain = s.route?.underlay {
            lines += chain.peerLines.map { "  " + $0 }
            // A blocking problem is the headline's reason already.
            if let problem = chain.problem, !chain.blocking { lines.append("  underlay: \(problem)") }
        }
        if case .host = s.target, !s.resolvedAddresses.isEmpty {
            lines.append("  \(s.target.value) → " + s.resolvedAddresses.joined(separator: ", "))
        }
        if let c = s.modemCheck, c.result == .unknown, let why = c.reason {
            lines.append("  modem check failed, the route's answer stands: \(why)")
        }
        for u in s.uplinks { lines.append("  " + uplinkLine(u)) }
        if let e = s.uplinksError { lines.append("  uplinks unavailable: \(e)") }
        for m in s.wwan { lines.append("  " + modemLine(m, signalPolicy: s.signalPolicy)) }
        if !s.wwanSource.available, let reason = s.wwanSource.reason, reason != SourceHealth.disabled.reason {
            lines.append("  WWAN unavailable: \(reason)")
        } else if s.wwanSource.available && s.wwan.isEmpty {
            // JSON says `wwan: []`; people need the words, and where to look next.
            lines.append("  WWAN: no modem found (looked at \(modemSearchPlaces))")
        }
        for w in s.wifi { lines.append("  " + wifiLine(w)) }
        if !s.wifiSource.available, let reason = s.wifiSource.reason, reason != SourceHealth.disabled.reason {
            lines.append("  WiFi unavailable: \(reason)")
        }
        return lines.joined(separator: "\n")
    }

    /// Where modem discovery looks (ReachModem's `ModemDiscovery.ports`), for the "no modem found" lines.
    public static let modemSearchPlaces = "/sys/class/usbmisc/cdc-wdm*, /sys/class/wwan"

    /// "medium ethernet · wwan 4g · ipv4 src 192.0.2.2": the medium first (an installer reads the first word), then
    /// the WWAN generation and the route's family. YYReachability's status is named only where it differs from the
    /// medium (its `wifi` means "not over the modem", which on Ethernet reads as WiFi to anyone but an iOS
    /// developer), labelled as what it is.
    public static func statusLine(_ s: Snapshot) -> String {
        var line = "medium \(s.medium.rawValue) · wwan \(s.wwanStatus.name)"
        if let r = s.route {
            line += " · \(r.family.rawValue)"
            if let src = r.source { line += " src \(src)" }
        }
        if s.status.rawValue != s.medium.rawValue && s.status != .unknown {
            line += " · iOS status \(s.status.rawValue)"
        }
        return line
    }

    /// One modem; the bars are `signalPolicy`'s, named after them unless they are the default profile's. The kernel
    /// driver follows the protocol when sysfs named one: "WWAN /dev/cdc-wdm0 qmi (qmi_wwan)  wwan0  …".
    public static func modemLine(_ m: ModemState, signalPolicy: SignalPolicy) -> String {
        var parts = ["WWAN \(m.device) \(m.protocol.rawValue)" + (m.driver.map { " (\($0))" } ?? "")]
        if let i = m.interface { parts.append(i) }
        if !m.present {
            parts.append("absent")
        } else if let e = m.error {
            // Nothing read alongside a failure is trusted: the failure is said as what it is, the radio as unknown
            // (never "no service 0/4", which reads like a dead spot).
            parts.append(m.fault?.words(protocol: m.protocol) ?? "error: \(e)")
            parts.append("bars ?/4")
            parts.append("registration unknown")
        } else {
            var gen = m.generation == .none ? "no service" : m.generation.name.uppercased()
            if let mode = m.nrMode { gen += " " + mode.uppercased() }
            parts.append(gen)
            if !m.accessTechnologies.isEmpty {
                let bands = CellSummary.bandList(m).map { " " + $0 } ?? ""
                parts.append("(" + m.accessTechnologies.names.joined(separator: "+") + bands + ")")
            }
            let bars = m.bars(signalPolicy)
            var barText = "\(barGlyphs(bars)) \(bars)/4"
            if signalPolicy != .android {
                barText += " (\(signalPolicy.name)\(signalPolicy.overridden.isEmpty ? "" : ", custom thresholds"))"
            }
            parts.append(barText)
            parts.append(m.registration.rawValue)
            if let name = m.operatorName ?? m.plmn?.description {
                parts.append(name + (m.operatorName != nil && m.plmn != nil ? " (\(m.plmn!.mcc)/\(m.plmn!.mnc))" : ""))
            }
            if let rsrp = m.signal.rsrp {
                parts.append("rsrp \(JSON.format(rsrp)) dBm")
            } else if let rssi = m.signal.rssi {
                parts.append("rssi \(JSON.format(rssi)) dBm")
            }
            if m.sim != .ready && m.sim != .unknown { parts.append("SIM \(m.sim.rawValue)") }
            if m.packetService == .detached { parts.append("PS detached") }
            if let session = m.dataSession { parts.append("data \(session.rawValue)") }
        }
        if !m.present, let e = m.error, m.fault?.kind != .gone { parts.append("error: \(e)") }
        if !m.unread.isEmpty { parts.append("not read: " + m.unreadWords) }
        return parts.joined(separator: "  ")
    }

    public static func wifiLine(_ w: WiFiLink) -> String {
        var parts = ["WiFi \(w.interface) \(w.mode.rawValue)"]
        if w.mode == .station {
            if w.associated {
                parts.append((w.ssid ?? "?") + (w.bssid.map { " (\($0))" } ?? ""))
                if let ch = w.channel, let band = w.band { parts.append("ch \(ch) \(band.rawValue)") }
                if let sig = w.barSignalDBm { parts.append("\(sig) dBm \(barGlyphs(w.bars)) \(w.bars)/4") }
                if let tx = w.txBitrateMbps { parts.append("tx \(JSON.format(tx)) Mbit/s") }
            } else {
                parts.append("not associated")
            }
        } else if w.mode == .ap {
            if let ssid = w.ssid { parts.append(ssid) }
            if let n = w.clients { parts.append("\(n) client\(n == 1 ? "" : "s")") }
        }
        if let e = w.error { parts.append("error: \(e)") }
        return parts.joined(separator: "  ")
    }
}
