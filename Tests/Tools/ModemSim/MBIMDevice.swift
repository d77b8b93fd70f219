// The MBIM side of the simulated modem: the session (OPEN/CLOSE, MaxControlTransfer), MBIMEx negotiation,
// notification subscriptions, and the answer to each command.
//
// The session survives the port being closed without CLOSE_MSG, as a real function does (libmbim's
// "in-session" open relies on it); OPEN starts a fresh one at MBIM 1.0 until the host negotiates MBIMEx.

import ReachCore

public struct MBIMDevice: Sendable {
    public let scenario: Scenario
    public private(set) var isOpen = false
    public private(set) var maxTransfer = 4096
    /// The MBIMEx version agreed through MS Basic Connect Extensions Version; 1.0 until then.
    public private(set) var negotiated: MBIMExVersion = .v1
    /// nil: the host never set a subscribe list, so every notification is sent. Otherwise service → CIDs, where
    /// an empty list means every CID of the service.
    private var subscriptions: [MBIMUUID: [UInt32]]?
    private var signalConfig = MBIMEncoding.SignalConfig()
    private var radioOn = true
    /// The activation state each session id was last reported with (MBIMConnect.swift).
    var lastConnect: [Int: UInt32] = [:]

    public init(scenario: Scenario) { self.scenario = scenario }

    typealias BC = MBIMServices.BasicConnect

    // MARK: Requests

    public mutating func handle(_ m: MBIMMessage, state: SimulatedState) -> [MBIMMessage] {
        switch m.type {
        case .open:
            isOpen = true
            negotiated = .v1
            subscriptions = nil
            signalConfig = MBIMEncoding.SignalConfig()
            // The sessions as they stand at OPEN; Connect notifications report changes from here.
            lastConnect = Dictionary(
                state.effectiveSessions.map { ($0.channel, $0.state.mbimActivationState) }, uniquingKeysWith: { a, _ in a })
            // MBIM 1.0 §9.3.1: at least 64 bytes; libmbim sends 4096. Our replies never need more than a few
            // hundred bytes, but longer ones are fragmented to what the host asked for.
            maxTransfer = max(64, min(Int(m.code), MBIMAssembler.maxMessage))
            return [MBIMMessage(type: .openDone, transactionID: m.transactionID, code: MBIMStatus.success)]
        case .close:
            isOpen = false
            return [MBIMMessage(type: .closeDone, transactionID: m.transactionID, code: MBIMStatus.success)]
        case .command:
            guard isOpen else {
                return [MBIMMessage(type: .functionError, transactionID: m.transactionID, code: MBIMProtocolError.notOpened)]
            }
            let (status, buffer) = command(m, state)
            return [done(m, status: status, buffer: buffer)]
        case .hostError:
            return []
        default:
            // A function-to-host message type sent by the host.
            return [MBIMMessage(type: .functionError, transactionID: m.transactionID, code: MBIMProtocolError.unknown)]
        }
    }

    func done(_ request: MBIMMessage, status: UInt32, buffer: [UInt8] = []) -> MBIMMessage {
        MBIMMessage(
            type: .commandDone, transactionID: request.transactionID, code: status, service: request.service,
            cid: request.cid, buffer: status == MBIMStatus.success ? buffer : [])
    }

    private mutating func command(_ m: MBIMMessage, _ state: SimulatedState) -> (UInt32, [UInt8]) {
        guard let service = m.service else { return (MBIMStatus.noDeviceSupport, []) }
        if service == MBIMServices.basicConnect { return basicConnect(m, state) }
        if service == MBIMServices.msBasicConnectExtensions, m.cid == MBIMServices.MSBasicConnectExtensions.version,
            scenario.mbimex >= .v2
        {
            return version(m)
        }
        if service == MBIMServices.msBasicConnectExtensions, m.cid == MBIMServices.MSBasicConnectExtensions.baseStationsInfo {
            return baseStationsInfo(m, state)
        }
        return (MBIMStatus.noDeviceSupport, [])
    }

    /// MS Basic Connect Extensions Version: the host says what it wants (MbimVersion, MbimExtendedVersion); the
    /// device answers the highest version both know, and that is what both use from then on.
    private mutating func version(_ m: MBIMMessage) -> (UInt32, [UInt8]) {
        guard !m.isSet else { return (MBIMStatus.invalidDeviceServiceOperation, []) }
        var r = MBIMBufferReader(m.buffer)
        guard (try? r.u16("MbimVersion")) != nil, let hostExtended = try? r.u16("MbimExtendedVersion") else {
            return (MBIMStatus.invalidParameters, [])
        }
        // The highest version the host asked for that we know (a host asking 3.x gets 3.0), capped by the device.
        let host = MBIMExVersion.allCases.last(where: { $0.bcd <= hostExtended }) ?? .v1
        let agreed = min(scenario.mbimex, host)
        negotiated = agreed
        var b = MBIMBufferBuilder()
        b.u16(0x0100)
        b.u16(agreed.bcd)
        return (MBIMStatus.success, b.build())
    }

    private mutating func basicConnect(_ m: MBIMMessage, _ state: SimulatedState) -> (UInt32, [UInt8]) {
        let ok = MBIMStatus.success
        switch (m.cid, m.isSet) {
        case (BC.deviceCaps, false):
            return (ok, MBIMEncoding.deviceCaps(scenario))
        case (BC.subscriberReadyStatus, false):
            return (ok, MBIMEncoding.subscriberReadyStatus(state, scenario.identifiers, v3: negotiated >= .v3))
        case (BC.radioState, false):
            return (ok, MBIMEncoding.radioState(on: radioOn))
        case (BC.radioState, true):
            var r = MBIMBufferReader(m.buffer)
            guard let on = try? r.u32("RadioState") else { return (MBIMStatus.invalidParameters, []) }
            radioOn = on != 0
            return (ok, MBIMEncoding.radioState(on: radioOn))
        case (BC.pin, false):
            let (status, buffer) = MBIMEncoding.pin(state.sim)
            return (status, buffer)
        case (BC.homeProvider, false):
            switch state.sim {
            case .absent: return (MBIMStatus.simNotInserted, [])
            case .error: return (MBIMStatus.badSIM, [])
            case .pinRequired, .pukRequired: return (MBIMStatus.pinRequired, [])
            default: break
            }
            guard let home = scenario.home else { return (MBIMStatus.failure, []) }
            return (ok, MBIMEncoding.homeProvider(home))
        case (BC.registerState, _):
            // A set (register action) is accepted; the network decides, so the answer is the current state.
            return (ok, MBIMEncoding.registerState(state, scenario, v2: negotiated >= .v2))
        case (BC.packetService, _):
            return (ok, MBIMEncoding.packetService(state, scenario, version: negotiated))
        case (BC.signalState, false):
            return (ok, MBIMEncoding.signalState(state, config: signalConfig, v2: negotiated >= .v2))
        case (BC.signalState, true):
            var r = MBIMBufferReader(m.buffer)
            guard let interval = try? r.u32("SignalStrengthInterval"), let rssi = try? r.u32("RssiThreshold"),
                let errorRate = try? r.u32("ErrorRateThreshold")
            else { return (MBIMStatus.invalidParameters, []) }
            // 0 keeps the device default (MBIM 1.0 §10.5.10).
            if interval != 0 { signalConfig.interval = interval }
            if rssi != 0 { signalConfig.rssiThreshold = rssi }
            if errorRate != 0 { signalConfig.errorRateThreshold = errorRate }
            return (ok, MBIMEncoding.signalState(state, config: signalConfig, v2: negotiated >= .v2))
        case (BC.deviceServices, false):
            return (ok, MBIMEncoding.deviceServices(
                mbimex: scenario.mbimex, baseStations: scenario.hasCellReporting, connect: scenario.mbim.connect))
        case (BC.connect, _) where scenario.mbim.connect:
            return connect(m, state)
        case (BC.deviceServiceSubscribeList, true):
            guard let events = try? MBIMEncoding.parseSubscribeList(m.buffer) else {
                return (MBIMStatus.invalidParameters, [])
            }
            var map: [MBIMUUID: [UInt32]] = [:]
            for (uuid, cids) in events { map[uuid, default: []] += cids }
            subscriptions = map
            return (ok, MBIMEncoding.subscribeList(events))
        case (BC.deviceCaps, true), (BC.subscriberReadyStatus, true), (BC.deviceServices, true),
            (BC.homeProvider, true), (BC.pin, true), (BC.deviceServiceSubscribeList, false):
            return (MBIMStatus.invalidDeviceServiceOperation, [])
        default:
            return (MBIMStatus.noDeviceSupport, [])
        }
    }

    // MARK: Notifications

    func subscribed(_ service: MBIMUUID, _ cid: UInt32) -> Bool {
        guard let subscriptions else { return true }
        guard let cids = subscriptions[service] else { return false }
        return cids.isEmpty || cids.contains(cid)
    }

    /// INDICATE_STATUS messages for what changed, in the layouts the session negotiated; nothing while closed.
    public func indications(_ changed: StateAspects, state: SimulatedState) -> [MBIMMessage] {
        guard isOpen else { return [] }
        var out: [MBIMMessage] = []
        func note(_ cid: UInt32, _ buffer: [UInt8]) {
            guard subscribed(MBIMServices.basicConnect, cid) else { return }
            out.append(MBIMMessage(
                type: .indicateStatus, transactionID: 0, service: MBIMServices.basicConnect, cid: cid, buffer: buffer))
        }
        if changed.contains(.sim) {
            note(BC.subscriberReadyStatus, MBIMEncoding.subscriberReadyStatus(state, scenario.identifiers, v3: negotiated >= .v3))
        }
        if changed.contains(.registration) {
            note(BC.registerState, MBIMEncoding.registerState(state, scenario, v2: negotiated >= .v2))
        }
        if changed.contains(.packetService) {
            note(BC.packetService, MBIMEncoding.packetService(state, scenario, version: negotiated))
        }
        if changed.contains(.signal) {
            note(BC.signalState, MBIMEncoding.signalState(state, config: signalConfig, v2: negotiated >= .v2))
        }
        return out
    }
}
