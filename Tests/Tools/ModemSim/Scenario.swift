// The scenario model: what the simulated modem is (device, SIM), what it sees (registration, technologies,
// operator, signal in physical units), how it changes over time (timeline) and how it misbehaves (faults).
//
// One format serves both protocols: the QMI and MBIM encoders turn the same generic state into their own
// messages. `hw/scenarios/README.md` documents every key; `ScenarioParser` turns JSON into these values and names
// the key path of anything wrong.

import ReachCore

/// Network and SIM state in physical units: what the protocol encoders read.
public struct SimulatedState: Sendable, Equatable {
    public var sim: SIMState
    public var registration: RegistrationState
    public var accessTechnologies: AccessTechnologies
    public var networkOperator: NetworkOperator?
    /// The serving cell (the LTE anchor under 5G NSA; the NR cell under 5G SA).
    public var signal: SignalMeasurement
    /// The NR leg under 5G NSA (QMI 5G Signal Strength TLVs, MBIMEx v2 5G RSRP/SNR entry).
    public var nrSignal: SignalMeasurement?
    public var packetService: PacketServiceState
    /// 3GPP TS 24.008 / 24.301 reject cause while denied.
    public var rejectCause: Int?
    public var cell: Cell
    /// The serving cell's radio, carriers and neighbours (ScenarioCells.swift).
    public var cells: SimulatedCells
    /// The data sessions, each on its channel (QMI mux id, MBIM session id). Nil: the default session (channel 0,
    /// IPv4 and IPv6), connected while registered and attached, disconnected otherwise (`effectiveSessions`).
    public var dataSessions: [SimulatedSession]?

    public init(
        sim: SIMState = .ready, registration: RegistrationState = .idle, accessTechnologies: AccessTechnologies = .none,
        networkOperator: NetworkOperator? = nil, signal: SignalMeasurement = SignalMeasurement(),
        nrSignal: SignalMeasurement? = nil, packetService: PacketServiceState = .detached, rejectCause: Int? = nil,
        cell: Cell = Cell(), cells: SimulatedCells = SimulatedCells(), dataSessions: [SimulatedSession]? = nil
    ) {
        self.sim = sim
        self.registration = registration
        self.accessTechnologies = accessTechnologies
        self.networkOperator = networkOperator
        self.signal = signal
        self.nrSignal = nrSignal
        self.packetService = packetService
        self.rejectCause = rejectCause
        self.cell = cell
        self.cells = cells
        self.dataSessions = dataSessions
    }

    /// The sessions in force: the declared ones, or the default session that follows registration and attach (a
    /// network that deregisters or detaches the modem drops its PDN).
    public var effectiveSessions: [SimulatedSession] {
        if let dataSessions { return dataSessions }
        let up = isRegistered && packetService == .attached
        return [SimulatedSession(channel: 0, ipv4: true, ipv6: true, state: up ? .connected : .disconnected)]
    }

    /// The session a client on `channel` asking about one family sees (nil: none, i.e. disconnected).
    public func session(channel: Int, ipv6: Bool) -> SimulatedSession? {
        effectiveSessions.first { $0.channel == channel && (ipv6 ? $0.ipv6 : $0.ipv4) }
    }

    public var isRegistered: Bool { registration.isRegistered }
    public var isSIMReady: Bool { sim == .ready }
    /// The NR measurements to report: the NR leg if given, else the serving cell when NR is the only technology.
    public var nrMeasurement: SignalMeasurement? {
        if let nrSignal { return nrSignal }
        if accessTechnologies.contains(.nr) && !accessTechnologies.isNonStandalone5G { return signal }
        return nil
    }
}

public struct NetworkOperator: Sendable, Equatable {
    public var plmn: PLMN
    public var name: String

    public init(mcc: String, mnc: String, name: String) {
        self.plmn = PLMN(mcc: mcc, mnc: mnc)
        self.name = name
    }

    public var mcc: String { plmn.mcc }
    public var mnc: String { plmn.mnc }
    public var providerID: String { plmn.mcc + plmn.mnc }
}

/// What a simulated data session is doing. `suspended` exists only in QMI (a session held during a CS call).
public enum SimulatedSessionState: String, Sendable, Equatable, CaseIterable {
    case connected, disconnected, connecting, disconnecting, suspended

    /// QmiWdsConnectionStatus: DISCONNECTED 1, CONNECTED 2, SUSPENDED 3, AUTHENTICATING 4. QMI has no "tearing down":
    /// a session being torn down reads disconnected.
    public var qmiStatus: UInt8 {
        switch self {
        case .disconnected, .disconnecting: return 1
        case .connected: return 2
        case .suspended: return 3
        case .connecting: return 4
        }
    }

    /// MBIM_ACTIVATION_STATE: ACTIVATED 1, ACTIVATING 2, DEACTIVATED 3, DEACTIVATING 4 (suspended is activated).
    public var mbimActivationState: UInt32 {
        switch self {
        case .connected, .suspended: return 1
        case .connecting: return 2
        case .disconnected: return 3
        case .disconnecting: return 4
        }
    }
}

/// One data session on a channel: a QMI mux id (0: the default channel of an unbound client) or an MBIM session id.
public struct SimulatedSession: Sendable, Equatable {
    public var channel: Int
    public var ipv4: Bool
    public var ipv6: Bool
    public var state: SimulatedSessionState

    public init(channel: Int = 0, ipv4: Bool = true, ipv6: Bool = true, state: SimulatedSessionState) {
        self.channel = channel
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.state = state
    }
}

/// Cell identity, reported where a message has a field for it.
public struct Cell: Sendable, Equatable {
    public var lac: UInt16
    public var tac: UInt32
    public var cellID: UInt32

    public init(lac: UInt16 = 0x1A2B, tac: UInt32 = 0x3C4D, cellID: UInt32 = 0x0123_4567) {
        self.lac = lac
        self.tac = tac
        self.cellID = cellID
    }
}

public struct DeviceInfo: Sendable, Equatable {
    public var manufacturer: String
    public var model: String
    public var revision: String
    public var imei: String

    public init(
        manufacturer: String = "GatewayReach", model: String = "reach-modem-sim", revision: String = "SIM 1.0",
        imei: String = "990000862471854"
    ) {
        self.manufacturer = manufacturer
        self.model = model
        self.revision = revision
        self.imei = imei
    }
}

public struct Identifiers: Sendable, Equatable {
    public var imsi: String?
    public var iccid: String?
    public var msisdn: String?

    public init(imsi: String? = nil, iccid: String? = nil, msisdn: String? = nil) {
        self.imsi = imsi
        self.iccid = iccid
        self.msisdn = msisdn
    }
}

/// The MS MBIM extension version the device offers in Device Services / answers in MS Basic Connect Extensions
/// Version. 1.0 means no MBIMEx: the Version CID is not listed.
public enum MBIMExVersion: String, Sendable, Comparable, CaseIterable {
    case v1 = "1.0", v2 = "2.0", v3 = "3.0"

    public var bcd: UInt16 {
        switch self {
        case .v1: return 0x0100
        case .v2: return 0x0200
        case .v3: return 0x0300
        }
    }

    public init?(bcd: UInt16) {
        guard let v = MBIMExVersion.allCases.first(where: { $0.bcd == bcd }) else { return nil }
        self = v
    }

    public static func < (a: MBIMExVersion, b: MBIMExVersion) -> Bool { a.bcd < b.bcd }
}

public struct QMIOptions: Sendable, Equatable {
    /// NAS Get System Info (0x004D) and its indication; older firmware lacks them.
    public var getSystemInfo = true
    /// NAS Get Signal Info (0x004F), Config Signal Info (0x0050/0x006C) and the Signal Info indication.
    public var getSignalInfo = true
    /// What an unsupported service message is answered with: NOT_SUPPORTED, or INVALID_QMI_COMMAND as older
    /// Qualcomm firmware does.
    public var unsupportedError: UInt16 = QMIError.notSupported
    /// QmiNasDataCapability values for Serving System TLV 0x11, replacing the ones derived from the technologies.
    public var dataCapabilities: [UInt8]?
    /// QmiNasRadioInterface values for Serving System TLV 0x01, replacing the derived ones.
    public var radioInterfaces: [Int8]?
    /// Get Signal Strength's mandatory strength (TLV 0x01) and strength list (TLV 0x10) exactly as given, replacing
    /// the strength derived from `state.signal`: values a real modem sends that no signal range admits (0 dBm).
    public var signalStrength: SignalStrengthOverride?
    /// Whether the modem has a WDS service at all (false: client allocation fails, no data service to ask).
    public var wds = true
    /// Whether WDS Packet Service Status indications are sent (false: firmware that never sends them, like the
    /// Netgear AC341U in ModemManager commit 291300cf).
    public var wdsIndications = true

    public init() {}
}

/// Raw Get Signal Strength values (dBm, QmiNasRadioInterface); `radioInterface` nil: the newest family in use.
public struct SignalStrengthOverride: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var dBm: Int8
        public var radioInterface: Int8
        public init(dBm: Int8, radioInterface: Int8) {
            self.dBm = dBm
            self.radioInterface = radioInterface
        }
    }

    public var dBm: Int8
    public var radioInterface: Int8?
    public var list: [Entry]

    public init(dBm: Int8, radioInterface: Int8? = nil, list: [Entry] = []) {
        self.dBm = dBm
        self.radioInterface = radioInterface
        self.list = list
    }
}

public struct MBIMOptions: Sendable, Equatable {
    /// MbimDataClass bits for Register State / Packet Service, replacing the derived ones (v3: MbimDataClassV3).
    public var dataClass: UInt32?
    /// MbimDataSubclass for Packet Service v3, replacing the derived one.
    public var dataSubclass: UInt32?
    /// Device Caps "custom data class" string; when set, the CUSTOM bit joins the data classes.
    public var customDataClass: String?
    /// Whether Basic Connect Connect (CID 12) is answered (false: NoDeviceSupport, no data service to ask).
    public var connect = true
    /// Whether Connect notifications are sent when a session changes.
    public var connectNotifications = true

    public init() {}
}

/// A partial state: what a timeline step or a control line changes.
public struct StatePatch: Sendable, Equatable {
    public var sim: SIMState?
    public var registration: RegistrationState?
    public var accessTechnologies: AccessTechnologies?
    public var networkOperator: NetworkOperator??
    /// Merged into the serving cell's reading: the measures named change, the others stay.
    public var signal: MeasurementPatch?
    /// The NR leg: `.some(nil)` (`"nr": null`) removes it; a patch merges into it (or into an empty reading).
    public var nrSignal: MeasurementPatch??
    public var packetService: PacketServiceState?
    public var rejectCause: Int??
    public var cell: Cell?
    public var cells: SimulatedCellsPatch?
    /// `.some(nil)`: back to the default session that follows registration.
    public var dataSessions: [SimulatedSession]??

    public init() {}

    public var isEmpty: Bool { self == StatePatch() }
}

/// Part of a signal reading, keyed by the scenario's names (`rsrp_dbm`…): a number sets that measure, nil (JSON
/// `null`) clears it, a measure not named keeps its value. A modem reports each measure on its own (a QMI Signal
/// Info TLV, an MBIM Signal State field), so a step that moves one leaves the rest of the reading as it was.
public struct MeasurementPatch: Sendable, Equatable {
    public var values: [String: Double?]

    public init(_ values: [String: Double?] = [:]) { self.values = values }

    /// Every measure of `m`, the absent ones cleared: the patch that makes a reading exactly `m`.
    public init(replacingWith m: SignalMeasurement) {
        values = [
            "rssi_dbm": m.rssi, "rsrp_dbm": m.rsrp, "rsrq_db": m.rsrq, "sinr_db": m.sinr, "rscp_dbm": m.rscp,
            "ecio_db": m.ecio,
        ]
    }

    public func applied(to m: SignalMeasurement) -> SignalMeasurement {
        var out = m
        for (key, value) in values { out.set(key, value) }
        return out
    }
}

/// Which parts of the state changed, so the engine emits the matching indications.
public struct StateAspects: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let registration = StateAspects(rawValue: 1 << 0)
    public static let packetService = StateAspects(rawValue: 1 << 1)
    public static let signal = StateAspects(rawValue: 1 << 2)
    public static let sim = StateAspects(rawValue: 1 << 3)
    public static let dataSession = StateAspects(rawValue: 1 << 4)
    public static let all: StateAspects = [.registration, .packetService, .signal, .sim, .dataSession]
}

extension SimulatedState {
    /// Applies a patch and says what changed. Technologies feed registration, packet service and signal messages.
    public mutating func apply(_ patch: StatePatch) -> StateAspects {
        let before = self
        if let v = patch.sim { sim = v }
        if let v = patch.registration { registration = v }
        if let v = patch.accessTechnologies { accessTechnologies = v }
        if let v = patch.networkOperator { networkOperator = v }
        if let v = patch.signal { signal = v.applied(to: signal) }
        if let v = patch.nrSignal { nrSignal = v.map { $0.applied(to: nrSignal ?? SignalMeasurement()) } }
        if let v = patch.packetService { packetService = v }
        if let v = patch.rejectCause { rejectCause = v }
        if let v = patch.cell { cell = v }
        patch.cells?.apply(to: &cells)
        if let v = patch.dataSessions { dataSessions = v }
        var changed: StateAspects = []
        if effectiveSessions != before.effectiveSessions { changed.insert(.dataSession) }
        if sim != before.sim { changed.insert(.sim) }
        if registration != before.registration || networkOperator != before.networkOperator
            || rejectCause != before.rejectCause || cell != before.cell
        {
            changed.insert(.registration)
        }
        if accessTechnologies != before.accessTechnologies { changed.formUnion([.registration, .packetService, .signal]) }
        if packetService != before.packetService { changed.insert(.packetService) }
        if signal != before.signal || nrSignal != before.nrSignal { changed.insert(.signal) }
        return changed
    }
}

/// Which requests a fault applies to.
public enum MessageSelector: Sendable, Equatable, CustomStringConvertible {
    /// A QMI service, or one message of it.
    case qmi(service: UInt8, message: UInt16?)
    /// An MBIM service (by UUID), or one CID of it.
    case mbim(service: MBIMUUID, cid: UInt32?)
    case mbimOpen
    case mbimClose

    public var description: String {
        switch self {
        case let .qmi(s, m):
            let service = QMIService.name(s)
            guard let m else { return service }
            return service + ":" + (QMIMessageNames.name(service: s, message: m) ?? "0x" + String(m, radix: 16))
        case let .mbim(s, c):
            let service = MBIMServices.name(s)
            guard let c else { return service }
            return service + ":" + (MBIMServices.cidName(service: s, cid: c) ?? String(c))
        case .mbimOpen: return "open"
        case .mbimClose: return "close"
        }
    }
}

/// One fault rule. Request-triggered rules act on each matching request until `count` runs out.
public struct FaultRule: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// No answer at all.
        case silence
        /// The answer, `ms` late.
        case delay(ms: UInt64)
        /// An error answer: a QmiProtocolError, or an MBIM status code.
        case error(code: UInt32)
        /// `length` random-looking bytes that are no frame; then the answer (`replace` false) or nothing.
        case garbage(length: Int, replace: Bool)
        /// The answer cut after `keep` bytes (half of it when nil); the rest is never sent.
        case truncate(keep: Int?)
        /// The master side of the pty closes (the client sees HUP/EIO); optionally a new pty appears later.
        case close(reopenAfterMs: UInt64?)
    }

    public enum Trigger: Sendable, Equatable {
        /// On every matching request.
        case request
        /// At once, when the rule is applied (timeline step, control line, or start for the `faults` list).
        case now
        /// After the sim has answered this many requests (all kinds) since the rule was applied.
        case afterRequests(Int)
    }

    public var action: Action
    /// nil: every request.
    public var messages: [MessageSelector]?
    /// How many more times the rule applies; nil: no limit.
    public var count: Int?
    public var trigger: Trigger

    public init(_ action: Action, messages: [MessageSelector]? = nil, count: Int? = nil, trigger: Trigger = .request) {
        self.action = action
        self.messages = messages
        self.count = count
        self.trigger = trigger
    }
}

/// A request the modem refuses for as long as it runs, as firmware refuses optional requests it lacks: an error
/// answer (QMI NotSupported / InvalidQmiCommand, MBIM NoDeviceSupport) or none at all. Unlike a fault, `{"fault":
/// "clear"}` leaves it in force: it is what the firmware is, not something that happens to it.
public struct Refusal: Sendable, Equatable {
    /// One message (QMI service and message id, MBIM service and CID).
    public var message: MessageSelector
    /// `.error(code:)` or `.silence`.
    public var action: FaultRule.Action

    public init(_ message: MessageSelector, _ action: FaultRule.Action) {
        self.message = message
        self.action = action
    }
}

/// What a timeline step or a control line does.
public struct Operation: Sendable, Equatable {
    public var set: StatePatch?
    public var faults: [FaultRule] = []
    public var clearFaults = false
    /// Replaces the refused requests (`[]`: the modem answers everything again); nil leaves them.
    public var refuse: [Refusal]?
    /// Emit every indication now, changed or not.
    public var indicate = false
    /// Change the state without any indication (firmware that announces late or never).
    public var quiet = false
    /// Control socket only: a read-only question ("state" or "stats").
    public var query: String?

    public init(set: StatePatch? = nil, faults: [FaultRule] = [], clearFaults: Bool = false, indicate: Bool = false) {
        self.set = set
        self.faults = faults
        self.clearFaults = clearFaults
        self.indicate = indicate
    }
}

public struct TimelineStep: Sendable, Equatable {
    public var atMs: UInt64
    public var operation: Operation
}

public struct Scenario: Sendable, Equatable {
    public var modemProtocol: ModemProtocol
    public var description: String
    public var device: DeviceInfo
    public var identifiers: Identifiers
    /// The SIM's home network (Get Home Network, Home Provider); defaults to the serving operator.
    public var homeOperator: NetworkOperator?
    public var state: SimulatedState
    public var mbimex: MBIMExVersion
    public var qmi: QMIOptions
    public var mbim: MBIMOptions
    public var timeline: [TimelineStep]
    public var faults: [FaultRule]
    /// Requests the modem refuses from the start (`refuse`).
    public var refusals: [Refusal]
    /// Seeds the garbage-byte generator.
    public var seed: UInt64

    public init(
        modemProtocol: ModemProtocol, description: String = "", device: DeviceInfo = DeviceInfo(),
        identifiers: Identifiers = Identifiers(), homeOperator: NetworkOperator? = nil,
        state: SimulatedState = SimulatedState(), mbimex: MBIMExVersion = .v1, qmi: QMIOptions = QMIOptions(),
        mbim: MBIMOptions = MBIMOptions(), timeline: [TimelineStep] = [], faults: [FaultRule] = [],
        refusals: [Refusal] = [], seed: UInt64 = 1
    ) {
        self.modemProtocol = modemProtocol
        self.description = description
        self.device = device
        self.identifiers = identifiers
        self.homeOperator = homeOperator
        self.state = state
        self.mbimex = mbimex
        self.qmi = qmi
        self.mbim = mbim
        self.timeline = timeline
        self.faults = faults
        self.refusals = refusals
        self.seed = seed
    }

    /// The home network: the declared one, else the serving operator.
    public var home: NetworkOperator? { homeOperator ?? state.networkOperator }

    /// Whether the device has a 5G radio: any 5G technology now or anywhere in the timeline.
    public var supports5G: Bool {
        if state.accessTechnologies.contains(.nr) { return true }
        return timeline.contains { $0.operation.set?.accessTechnologies?.contains(.nr) == true }
    }
}
