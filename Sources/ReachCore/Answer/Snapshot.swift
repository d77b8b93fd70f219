// The merged answer (route + modems + WiFi) and its JSON form: the schema of `reach status --json` and of every
// report line. docs/reach.json.5.md ("JSON schema") documents the keys; a key is never renamed within a schema version.

/// What a status is asked about.
public enum Target: Sendable, Hashable {
    /// The default route, IPv4 and IPv6: Reachability's "internet connection" (0.0.0.0 / ::).
    case defaultRoute
    /// An IP address literal.
    case address(String)
    /// A host name, resolved without blocking the process and within a bounded time.
    case host(String)
    /// IPv4 link-local (169.254.0.0/16): YYReachability's `reachabilityForLocalWifi`.
    case linkLocal

    public var kind: String {
        switch self {
        case .defaultRoute: return "default"
        case .address: return "address"
        case .host: return "host"
        case .linkLocal: return "link_local"
        }
    }

    public var value: String {
        switch self {
        case .defaultRoute: return "0.0.0.0,::"
        case let .address(a): return a
        case let .host(h): return h
        case .linkLocal: return "169.254.0.0"
        }
    }

    /// YYReachability's `allowWWAN`: NO for the local-WiFi target, YES otherwise.
    public var allowsWWAN: Bool { self != .linkLocal }
}

public enum ModemProtocol: String, Sendable, Codable {
    case qmi, mbim
}

/// A modem control port named by the user (command line, config) or found in sysfs: `/dev/cdc-wdm0`,
/// `/dev/wwan0qmi0`, or a simulator pty.
public struct ModemPortSpec: Sendable, Equatable, Codable {
    public var path: String
    /// nil: decide from sysfs (driver qmi_wwan → QMI, cdc_mbim → MBIM, wwan port type).
    public var `protocol`: ModemProtocol?
    /// The network interface that carries this modem's data, when known.
    public var interface: String?
    /// The data channel `interface` carries, overriding what sysfs and rtnetlink say: the QMAP mux id (QMI) or the
    /// session id (MBIM). Nil: learn it from the link.
    public var muxID: Int?
    /// The kernel driver sysfs names for the port (`qmi_wwan`, `cdc_mbim`, `wwan`), when it names one. Read, never
    /// configured: it rides along so that the modem's state can say it.
    public var driver: String?

    public init(
        path: String, protocol: ModemProtocol? = nil, interface: String? = nil, muxID: Int? = nil, driver: String? = nil
    ) {
        self.path = path
        self.protocol = `protocol`
        self.interface = interface
        self.muxID = muxID
        self.driver = driver
    }
}

/// Identifiers that name a subscriber or a device. Printed only when the user asks (`--show-identifiers`).
public struct ModemIdentifiers: Sendable, Equatable, Codable {
    public var imei: String?
    public var imsi: String?
    public var iccid: String?
    public var msisdn: String?

    public init(imei: String? = nil, imsi: String? = nil, iccid: String? = nil, msisdn: String? = nil) {
        self.imei = imei
        self.imsi = imsi
        self.iccid = iccid
        self.msisdn = msisdn
    }

    public var isEmpty: Bool { imei == nil && imsi == nil && iccid == nil && msisdn == nil }
}

/// One modem, as its adapter last read it.
public struct ModemState: Sendable, Equatable, Codable {
    public var device: String
    public var `protocol`: ModemProtocol
    public var interface: String?
    /// The kernel driver behind the port, as sysfs names it (`qmi_wwan`, `cdc_mbim`, `wwan`); nil for a port sysfs
    /// does not know (a pty).
    public var driver: String?
    /// False once the port vanished (EOF/EIO, USB unplug) until it is opened again.
    public var present: Bool
    public var accessTechnologies: AccessTechnologies
    public var registration: RegistrationState
    public var plmn: PLMN?
    public var operatorName: String?
    /// The serving cell's measurement.
    public var signal: SignalMeasurement
    /// The NR leg under 5G NSA, which QMI and MBIMEx v2 report apart from the LTE anchor.
    public var nrSignal: SignalMeasurement?
    public var qualityPercent: Int?
    public var sim: SIMState
    public var packetService: PacketServiceState?
    public var rejectCause: Int?
    public var identifiers: ModemIdentifiers
    public var model: String?
    public var manufacturer: String?
    public var firmware: String?
    /// Serving cell, component carriers and neighbours; each nil when the modem gave none.
    public var cells: CellReadings
    /// Why the modem could not be read at all this time (no answer, the port gone, the read cut short), if so.
    /// Nothing read alongside is then trusted.
    public var error: String?
    /// `error` as a case (not answering, gone, refused by the proxy…), decided where the errno or the library's
    /// error code was known; nil exactly when `error` is.
    public var fault: ModemFault?
    /// Other processes that hold the port beside reach's own way to it (a direct opener beside the proxy, anything
    /// beside a direct open), once it was opened: "uqmi (pid 4242)".
    public var sharedWith: [String]
    /// What the modem would not tell this time: each request it refused or answered unusably (`unread` in the JSON).
    /// Only what that request would have told is unknown; every other reading stands.
    public var unread: [UnreadReading]
    /// How the control port was opened (through qmi-proxy/mbim-proxy, or directly); nil before it was opened.
    public var access: ModemAccessPath?
    /// Why it was opened that way when that is not the configured way (`auto` fell back to direct), or why the
    /// proxy did not serve us.
    public var accessReason: String?
    /// The data channels of the links this modem carries, with what the observers read; empty when the modem has
    /// no data service to ask (or was not read).
    public var dataChannels: [DataChannel]

    public init(device: String, protocol: ModemProtocol) {
        self.device = device
        self.protocol = `protocol`
        self.present = true
        self.accessTechnologies = .none
        self.registration = .unknown
        self.signal = SignalMeasurement()
        self.sim = .unknown
        self.identifiers = ModemIdentifiers()
        self.cells = CellReadings()
        self.dataChannels = []
        self.unread = []
        self.sharedWith = []
    }

    /// Records that the modem could not be read: the words for people and the case for readers.
    public mutating func fail(_ error: String, _ fault: ModemFault) {
        self.error = error
        self.fault = fault
    }

    /// The modem answered: the last failure no longer holds.
    public mutating func clearFailure() {
        error = nil
        fault = nil
    }

    /// The readings the modem refused, for people ("SIM status, signal"); empty when none.
    public var unreadWords: String { unread.map(\.reading.words).joined(separator: ", ") }

    /// Records that `reading` could not be read (the first reason for each reading is kept).
    public mutating func noteUnread(_ reading: UnreadReading.Reading, _ reason: String) {
        guard !unread.contains(where: { $0.reading == reading }) else { return }
        unread.append(UnreadReading(reading, reason: reason))
    }

    /// `wwan[].data_session`: the channels' sessions combined (`DataSessionState.combine`); nil when the modem has
    /// no data service to ask.
    public var dataSession: DataSessionState? { DataSessionState.combine(dataChannels.map(\.state)) }

    public var generation: Generation { registration.isRegistered ? accessTechnologies.generation : .none }
    public var roaming: Bool { registration == .roaming }

    /// "nsa" or "sa" when on 5G, else nil.
    public var nrMode: String? {
        guard generation == .g5 else { return nil }
        return accessTechnologies.isNonStandalone5G ? "nsa" : "sa"
    }
}

/// A reading a modem did not give: the request was refused (QMI NotSupported / InvalidQmiCommand, MBIM
/// NoDeviceSupport…) or its answer was unusable. Firmware refuses optional requests as a matter of course
/// (ModemManager treats most of them as optional features, e.g. `mm-broadband-modem-qmi.c` falling back from DMS to
/// UIM for the SIM), so one of them never makes the modem unreadable.
public struct UnreadReading: Sendable, Equatable, Codable {
    public enum Reading: String, Sendable, Equatable, Codable, CaseIterable {
        case registration, packetService = "packet_service", signal, sim, cells, operatorName = "operator_name"
        case identifiers, deviceInfo = "device_info"

        /// For people: "registration", "packet service", "SIM status"…
        public var words: String {
            switch self {
            case .sim: return "SIM status"
            case .packetService: return "packet service"
            case .operatorName: return "operator name"
            case .deviceInfo: return "device info"
            default: return rawValue
            }
        }
    }

    public var reading: Reading
    /// The request and how it failed ("qmi_client_dms_uim_get_pin_status: QMI protocol error (94): 'NotSupported'").
    public var reason: String

    public init(_ reading: Reading, reason: String) {
        self.reading = reading
        self.reason = reason
    }

    public var json: JSON { .object([("reading", .string(reading.rawValue)), ("reason", .string(reason))]) }
}

/// Whether a source (modems, WiFi) could be asked at all, and why not.
public struct SourceHealth: Sendable, Equatable, Codable {
    public var available: Bool
    public var reason: String?

    public init(available: Bool, reason: String? = nil) {
        self.available = available
        self.reason = reason
    }

    public static let ok = SourceHealth(available: true)
}

/// The whole answer at one moment.
public struct Snapshot: Sendable, Equatable {
    public static let schemaVersion = 1

    public var time: Timestamp
    public var target: Target
    /// Addresses a host target resolved to, and why resolution failed.
    public var resolvedAddresses: [String]
    public var resolutionError: String?
    public var route: RouteLookup?
    public var flags: ReachabilityFlags
    public var status: ReachabilityStatus
    public var medium: Medium
    public var wwanStatus: Generation
    public var wwan: [ModemState]
    public var wifi: [WiFiLink]
    public var wwanSource: SourceHealth
    public var wifiSource: SourceHealth
    /// For the default target: whether an IPv4 / IPv6 default route is usable (NWPath's supportsIPv4/IPv6).
    public var supportsIPv4: Bool?
    public var supportsIPv6: Bool?
    /// Set when the route itself could not be determined (netlink failure); the status is then unknown.
    public var error: String?
    /// How the modems' bars are computed: the one policy the configuration chose, carried with the snapshot to
    /// every place that shows bars (JSON, text, change detection, diag, Prometheus).
    public var signalPolicy: SignalPolicy
    /// What the kernel said about the links below the route's (and any link the route part followed): a merge can
    /// walk a chain again from it (`Underlay.resolve(index:destination:config:source:)`). Not part of the JSON.
    public var underlayFacts: UnderlayFacts?
    /// Every interface holding a default route (main table or a table an `ip rule` points to), each derived as if it
    /// were the only way out; the primary first (`Uplinks.swift`).
    public var uplinks: [Uplink]
    /// Set when the uplinks could not be read (a netlink failure after the main answer was found).
    public var uplinksError: String?
    /// The routes `route` was chosen from (the default target: the IPv4 and the IPv6 default route; a host: one per
    /// address), so that a route a modem blocks gives way to one that works. Not part of the JSON.
    public var routeCandidates: [RouteLookup]
    /// What the modem behind the route says (`WWANPath`); nil when the route does not leave through a modem.
    public var modemCheck: ModemCheck?
    /// The validation source's part (`Validation.swift`); nil: validation is off for this answer.
    public var validation: ValidationPart?

    public init(time: Timestamp, target: Target, signalPolicy: SignalPolicy = .android) {
        self.time = time
        self.target = target
        self.resolvedAddresses = []
        self.flags = []
        self.status = .unknown
        self.medium = .none
        self.wwanStatus = .none
        self.wwan = []
        self.wifi = []
        self.wwanSource = .ok
        self.wifiSource = .ok
        self.signalPolicy = signalPolicy
        self.uplinks = []
        self.routeCandidates = []
    }

    /// AFNetworking's reachability of the flags; for the link-local target only an on-link route counts (Apple's
    /// Reachability sample, `localWiFiStatusForFlags`: reachable *and* direct), since 169.254/16 behind a gateway is
    /// never forwarded.
    public var reachable: Bool {
        flags.isReachable && (target != .linkLocal || flags.contains(.isDirect))
    }

    /// Fills flags, status, medium, WWAN status and the modem check from the route, the modems and the target.
    ///
    /// The merge rule (`WWANPath`): a route over a modem's network interface is usable only while that modem is
    /// registered, attached and (where it has data service) its link's data session is connected; a modem that
    /// cannot say leaves the route's answer standing. When the modem blocks the route and another candidate route
    /// (the other family's default, another address of a host) works, that one is reported: other links are never
    /// held back by a dead modem.
    ///
    /// `wwan_status` is the generation of the modem that carries the route (its netdev is the egress interface, or
    /// a link of the route's underlay: the modem truth applies through a CLAT or a tunnel), else of the first
    /// registered modem. A locked SIM on that modem, or, with no route at all, on any modem, sets
    /// intervention_required.
    public mutating func derive() {
        let asked = wwanSource.available || !wwan.isEmpty
        let (wwan, target) = (self.wwan, self.target)
        func evaluate(_ r: RouteLookup?) -> (flags: ReachabilityFlags, check: ModemCheck?, carrier: ModemState?) {
            let carrier = r.flatMap { Self.modem(carrying: $0, in: wwan) }
            let locked = carrier.map { $0.sim.needsIntervention } ?? (r == nil && wwan.contains { $0.sim.needsIntervention })
            let check = WWANPath.check(route: r, modems: wwan, modemsAsked: asked)
            return (WWANPath.flags(ReachabilityFlags.derive(from: r, interventionRequired: locked), after: check), check, carrier)
        }
        var chosen = evaluate(route)
        if !chosen.flags.isReachable, chosen.check?.result == .blocked {
            for candidate in routeCandidates where candidate != route {
                let e = evaluate(candidate)
                if e.flags.isReachable && (target != .linkLocal || e.flags.contains(.isDirect)) {
                    route = candidate
                    chosen = e
                    break
                }
            }
        }
        if !routeCandidates.isEmpty {
            let candidates = routeCandidates
            func usable(_ f: AddressFamily) -> Bool {
                candidates.filter { $0.family == f }.contains { evaluate($0).flags.isReachable }
            }
            if supportsIPv4 != nil { supportsIPv4 = usable(.ipv4) }
            if supportsIPv6 != nil { supportsIPv6 = usable(.ipv6) }
        }
        flags = chosen.flags
        modemCheck = chosen.check
        if error != nil && route == nil {
            status = .unknown
        } else if target == .linkLocal && !flags.contains(.isDirect) {
            status = .none
        } else {
            status = ReachabilityStatus(flags: flags, allowWWAN: target.allowsWWAN)
        }
        medium = reachable ? Medium(route: route, flags: flags) : .none
        wwanStatus = (chosen.carrier ?? wwan.first(where: { $0.registration.isRegistered }))?.generation ?? .none
        deriveUplinks()
        deriveValidation()
    }

    /// The modem whose netdev carries `route`: the lowest link of its chain that a modem carries
    /// (`WWANPath.modem(carrying:in:)`: the bottom of a CLAT or a tunnel, else the route's own link).
    public static func modem(carrying route: RouteLookup, in modems: [ModemState]) -> ModemState? {
        WWANPath.carrier(of: route, in: modems)?.modem
    }
}

// MARK: - JSON

extension Snapshot {
    /// The schema-1 JSON object. Identifiers (IMEI, IMSI, ICCID, MSISDN) appear only when `showIdentifiers`.
    public func json(showIdentifiers: Bool = false) -> JSON {
        var targetJSON: [(String, JSON)] = [("kind", .string(target.kind)), ("value", .string(target.value))]
        if case .host = target {
            targetJSON.append(("addresses", .array(resolvedAddresses.map(JSON.string))))
            if let resolutionError { targetJSON.append(("error", .string(resolutionError))) }
        }
        var members: [(String, JSON)] = [
            ("schema", .int(Snapshot.schemaVersion)),
            ("time", .string(time.rfc3339)),
            ("target", .object(targetJSON)),
            ("status", .string(status.rawValue)),
            ("medium", .string(medium.rawValue)),
            ("wwan_status", .string(wwanStatus.name)),
            ("reachable", .bool(reachable)),
            ("flags", .array(flags.names.map(JSON.string))),
            ("flags_raw", .int(Int64(flags.rawValue))),
            ("route", route.map { $0.json } ?? .null),
            ("wwan", .array(wwan.map { $0.json(showIdentifiers: showIdentifiers, signalPolicy: signalPolicy) })),
            ("wifi", .array(wifi.map(\.json))),
            ("uplinks", .array(uplinks.map(\.json))),
            ("sources", .object([("wwan", wwanSourceJSON), ("wifi", wifiSource.json)])),
        ]
        members.insert(("modem_check", modemCheck.map(\.json) ?? .null), at: 10)
        members.append(contentsOf: validationMembers)
        if let supportsIPv4 { members.insert(("supports_ipv4", .bool(supportsIPv4)), at: 10) }
        if let supportsIPv6 { members.insert(("supports_ipv6", .bool(supportsIPv6)), at: supportsIPv4 == nil ? 10 : 11) }
        if let error { members.append(("error", .string(error))) }
        if let uplinksError { members.append(("uplinks_error", .string(uplinksError))) }
        return .object(members)
    }

    /// `sources.wwan`: the source's health, plus how the modems were opened (`proxy`, `direct`, or `mixed`) and,
    /// when a modem was not opened the configured way, why.
    var wwanSourceJSON: JSON {
        guard case var .object(m) = wwanSource.json else { return wwanSource.json }
        let paths = Set(wwan.compactMap(\.access))
        if let only = paths.first {
            m.append(("access", .string(paths.count == 1 ? only.rawValue : "mixed")))
        }
        let reasons = wwan.compactMap { w in w.accessReason.map { "\(w.device): \($0)" } }
        if !reasons.isEmpty { m.append(("access_reason", .string(reasons.joined(separator: "; ")))) }
        return .object(m)
    }
}

extension ModemCheck {
    public var json: JSON {
        .object([
            ("interface", .string(interface)), ("device", .optional(device)), ("result", .string(result.rawValue)),
            ("reason", .optional(reason)), ("not_read", .array(notRead.map { .string($0.rawValue) })),
        ])
    }
}

extension DataChannel {
    public var json: JSON {
        var m: [(String, JSON)] = [("interface", .optional(interface))]
        if let muxID { m.append(("mux_id", .int(muxID))) }
        if let sessionID { m.append(("session_id", .int(sessionID))) }
        m.append(("state", .string(state.rawValue)))
        m.append((
            "clients",
            .array(clients.map { c in
                var o: [(String, JSON)] = []
                if let f = c.family { o.append(("family", .string(f.rawValue))) }
                o.append(("state", .string(c.state.rawValue)))
                if !c.observing { o.append(("observing", .bool(false))) }
                o.append(("error", .optional(c.error)))
                return .object(o)
            })
        ))
        m.append(("error", .optional(error)))
        return .object(m)
    }
}

extension RouteLookup {
    public var json: JSON {
        .object([
            ("interface", .optional(link?.name)),
            ("kind", .optional(link?.kind.rawValue)),
            ("gateway", .optional(gateway)),
            ("source", .optional(source)),
            ("family", .string(family.rawValue)),
            ("type", .string(typeName)),
            ("carrier", .optional(link?.carrier)),
        ] + underlayJSON)
    }

    public var typeName: String {
        switch type {
        case .unicast: return "unicast"
        case .local: return "local"
        case .broadcast: return "broadcast"
        case .multicast: return "multicast"
        case .unreachable: return "unreachable"
        case .blackhole: return "blackhole"
        case .prohibit: return "prohibit"
        case .throw: return "throw"
        case let .other(n): return "rtn\(n)"
        }
    }
}

extension SignalMeasurement {
    public var json: JSON {
        var m: [(String, JSON)] = []
        if let rssi { m.append(("rssi_dbm", .double(rssi))) }
        if let rsrp { m.append(("rsrp_dbm", .double(rsrp))) }
        if let rsrq { m.append(("rsrq_db", .double(rsrq))) }
        if let sinr { m.append(("sinr_db", .double(sinr))) }
        if let rscp { m.append(("rscp_dbm", .double(rscp))) }
        if let ecio { m.append(("ecio_db", .double(ecio))) }
        return .object(m)
    }
}

extension SourceHealth {
    public var json: JSON {
        var m: [(String, JSON)] = [("available", .bool(available))]
        if let reason { m.append(("reason", .string(reason))) }
        return .object(m)
    }
}

extension ModemState {
    /// `bars` under `signalPolicy`, and `bars_profile` naming it (`bars_overrides`: the thresholds the configuration
    /// replaced, when any).
    public func json(showIdentifiers: Bool = false, signalPolicy: SignalPolicy) -> JSON {
        var signalJSON = signal.json
        if let nrSignal, case var .object(m) = signalJSON {
            m.append(("nr", nrSignal.json))
            signalJSON = .object(m)
        }
        var members: [(String, JSON)] = [
            ("device", .string(device)),
            ("protocol", .string(`protocol`.rawValue)),
            ("driver", .optional(driver)),
            ("interface", .optional(interface)),
            ("present", .bool(present)),
            ("generation", .string(generation.name)),
            ("nr_mode", .optional(nrMode)),
            ("access_technologies", .array(accessTechnologies.names.map(JSON.string))),
            ("registration", .string(registration.rawValue)),
            ("roaming", .bool(roaming)),
            (
                "operator",
                .object([
                    ("mcc", .optional(plmn?.mcc)), ("mnc", .optional(plmn?.mnc)), ("name", .optional(operatorName)),
                ])
            ),
            ("signal", signalJSON),
            ("bars", .int(bars(signalPolicy))),
            ("bars_profile", .string(signalPolicy.name)),
            ("quality_percent", .optional(qualityPercent)),
            ("sim", .string(sim.rawValue)),
            ("packet_service", .optional(packetService?.rawValue)),
            ("reject_cause", .optional(rejectCause)),
        ] + cells.jsonMembers(showIdentifiers: showIdentifiers) + [
            ("data_session", .optional(dataSession?.rawValue)),
            ("data_channels", .array(dataChannels.map(\.json))),
            ("access", .optional(access?.rawValue)),
            ("access_reason", .optional(accessReason)),
            ("shared_with", .array(sharedWith.map(JSON.string))),
            ("manufacturer", .optional(manufacturer)),
            ("model", .optional(model)),
            ("firmware", .optional(firmware)),
            ("error", .optional(error)),
            ("fault", fault?.json ?? .null),
            ("unread", .array(unread.map(\.json))),
        ]
        if !signalPolicy.overridden.isEmpty, let i = members.firstIndex(where: { $0.0 == "bars_profile" }) {
            members.insert(("bars_overrides", .array(signalPolicy.overridden.map(JSON.string))), at: i + 1)
        }
        if showIdentifiers {
            members.append(
                (
                    "identifiers",
                    .object([
                        ("imei", .optional(identifiers.imei)), ("imsi", .optional(identifiers.imsi)),
                        ("iccid", .optional(identifiers.iccid)), ("msisdn", .optional(identifiers.msisdn)),
                    ])
                ))
        }
        return .object(members)
    }
}

extension WiFiLink {
    public var json: JSON {
        .object([
            ("interface", .string(interface)),
            ("mode", .string(mode.rawValue)),
            ("associated", .bool(associated)),
            ("ssid", .optional(ssid)),
            ("bssid", .optional(bssid)),
            ("frequency_mhz", .optional(frequencyMHz)),
            ("band", .optional(band?.rawValue)),
            ("channel", .optional(channel)),
            ("signal_dbm", .optional(signalDBm)),
            ("signal_avg_dbm", .optional(signalAvgDBm)),
            ("beacon_signal_avg_dbm", .optional(beaconSignalAvgDBm)),
            ("noise_dbm", .optional(noiseDBm)),
            ("bars", .int(bars)),
            ("quality_percent", .optional(qualityPercent)),
            ("tx_bitrate_mbps", .optional(txBitrateMbps)),
            ("rx_bitrate_mbps", .optional(rxBitrateMbps)),
            ("connected_seconds", .optional(connectedSeconds)),
            ("inactive_ms", .optional(inactiveMilliseconds)),
            ("channel_width_mhz", .optional(channelWidthMHz)),
            ("tx_power_dbm", .optional(txPowerDBm)),
            ("clients", .optional(clients)),
            ("error", .optional(error)),
        ])
    }
}
