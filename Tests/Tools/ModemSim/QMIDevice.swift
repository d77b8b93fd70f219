// The QMI side of the simulated modem: client ids, indication registrations, and the answer to each request.
//
// State that a real modem keeps per client (allocated CIDs, NAS indication registrations, UIM event masks) lives
// here; the network state is passed in. Client ids survive the port being closed and reopened, as on a real
// cdc-wdm device (that is what `qmicli --client-no-release-cid` relies on).

import ReachCore

public struct QMIDevice: Sendable {
    public let scenario: Scenario
    /// Allocated client ids per service.
    private(set) var clients: [UInt8: Set<UInt8>] = [:]
    private var lastCID: [UInt8: UInt8] = [:]
    private var nas: [UInt8: NASRegistration] = [:]
    private var uimCardStatus: Set<UInt8> = []
    /// WDS clients: their IP family and data channel (QMIWDS.swift).
    var wds = WDSClients()

    struct NASRegistration: Equatable {
        var servingSystem = false
        var systemInfo = false
        var signalInfo = false
        var eventReport = QMIEncoding.EventReportConfig()
    }

    public init(scenario: Scenario) { self.scenario = scenario }

    private var options: QMIOptions { scenario.qmi }

    // MARK: Requests

    /// The answer to one request: the response messages (normally one), or none for an indication/response the
    /// host should never send. A WDS Start or Stop Network changes `state`'s data sessions.
    public mutating func handle(_ request: QMIMessage, state: inout SimulatedState) -> [QMIMessage] {
        guard request.kind == .request else { return [] }
        if request.isControl { return [control(request)] }
        guard clients[request.service]?.contains(request.clientID) == true else {
            return [QMIMessage.response(to: request, error: QMIError.invalidClientID)]
        }
        switch request.service {
        case QMIService.dms: return [dms(request, state)]
        case QMIService.nas: return [nasRequest(request, state)]
        case QMIService.uim: return [uim(request, state)]
        case QMIService.wds: return [wds.handle(request, state: &state, unsupported: options.unsupportedError)]
        default: return [QMIMessage.response(to: request, error: options.unsupportedError)]
        }
    }

    private mutating func control(_ r: QMIMessage) -> QMIMessage {
        typealias ID = QMIMessageID
        switch r.messageID {
        case ID.ctlGetVersionInfo:
            let services = QMIService.supported.filter { $0.service != QMIService.wds || options.wds }
            return QMIMessage.response(to: r, [
                QMITLV(0x01) { w in
                    w.u8(UInt8(services.count))
                    for s in services {
                        w.u8(s.service)
                        w.u16(s.major)
                        w.u16(s.minor)
                    }
                }
            ])
        case ID.ctlAllocateCID:
            guard let service = r.tlv(0x01)?.first else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            guard service != QMIService.ctl, QMIService.supported.contains(where: { $0.service == service }),
                service != QMIService.wds || options.wds
            else {
                return QMIMessage.response(to: r, error: QMIError.invalidServiceType)
            }
            guard let cid = allocate(service) else {
                return QMIMessage.response(to: r, error: 5)  // CLIENT_IDS_EXHAUSTED
            }
            return QMIMessage.response(to: r, [QMITLV(0x01, [service, cid])])
        case ID.ctlReleaseCID:
            guard let v = r.tlv(0x01), v.count == 2 else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            guard clients[v[0]]?.remove(v[1]) != nil else {
                return QMIMessage.response(to: r, error: QMIError.invalidClientID)
            }
            forget(service: v[0], cid: v[1])
            return QMIMessage.response(to: r, [QMITLV(0x01, v)])
        case ID.ctlSync:
            // Sync releases every client, as firmware does after a host restart.
            clients = [:]
            nas = [:]
            uimCardStatus = []
            wds.removeAll()
            return QMIMessage.response(to: r)
        case ID.ctlInternalProxyOpen:
            return QMIMessage.response(to: r)
        default:
            return QMIMessage.response(to: r, error: QMIError.notSupported)
        }
    }

    private mutating func allocate(_ service: UInt8) -> UInt8? {
        var used = clients[service] ?? []
        var candidate = lastCID[service] ?? 0
        for _ in 0..<254 {
            candidate = candidate == 254 ? 1 : candidate + 1
            if !used.contains(candidate) {
                used.insert(candidate)
                clients[service] = used
                lastCID[service] = candidate
                if service == QMIService.wds { wds.added(candidate) }
                return candidate
            }
        }
        return nil
    }

    private mutating func forget(service: UInt8, cid: UInt8) {
        if service == QMIService.nas { nas[cid] = nil }
        if service == QMIService.uim { uimCardStatus.remove(cid) }
        if service == QMIService.wds { wds.removed(cid) }
    }

    /// DMS, UIM and NAS home-network answers need a usable SIM; this is the error otherwise.
    private func simError(_ state: SimulatedState) -> UInt16? {
        state.sim == .ready ? nil : QMIError.uimUninitialized
    }

    private func dms(_ r: QMIMessage, _ state: SimulatedState) -> QMIMessage {
        typealias ID = QMIMessageID
        let device = scenario.device
        func string(_ s: String) -> QMIMessage { QMIMessage.response(to: r, [QMITLV(0x01, Array(s.utf8))]) }
        switch r.messageID {
        case ID.dmsSetEventReport:
            // ModemManager's enabling step registers for power-state reports here; accepted, none are sent (the
            // simulated modem never leaves online).
            return QMIMessage.response(to: r)
        case ID.dmsGetOperatingMode:
            // TLV 0x01: QmiDmsOperatingMode, 0 = online (libqmi's qmi-enums-dms.h); ModemManager reads it before
            // enabling and gives up on the modem when it cannot.
            return QMIMessage.response(to: r, [QMITLV(0x01, [0x00])])
        case ID.dmsGetCapabilities:
            return QMIMessage.response(to: r, QMIEncoding.capabilities(supports5G: scenario.supports5G))
        case ID.dmsGetManufacturer: return string(device.manufacturer)
        case ID.dmsGetModel: return string(device.model)
        case ID.dmsGetRevision: return string(device.revision)
        case ID.dmsGetMSISDN:
            if let e = simError(state) { return QMIMessage.response(to: r, error: e) }
            guard let msisdn = scenario.identifiers.msisdn else {
                return QMIMessage.response(to: r, error: QMIError.notProvisioned)
            }
            return string(msisdn)
        case ID.dmsGetIDs:
            return QMIMessage.response(to: r, [QMITLV(0x11, Array(device.imei.utf8))])
        case ID.dmsUIMGetPINStatus:
            if state.sim == .absent || state.sim == .error {
                return QMIMessage.response(to: r, error: QMIError.uimUninitialized)
            }
            let pin = QMIEncoding.pin1(state.sim)
            return QMIMessage.response(to: r, [
                QMITLV(0x11, [pin.status, pin.retries, pin.unblockRetries]), QMITLV(0x12, [3, 3, 10]),
            ])
        case ID.dmsUIMGetICCID:
            // EF_ICCID is readable without the PIN; only a missing or dead card has none.
            guard state.sim != .absent, state.sim != .error, let iccid = scenario.identifiers.iccid else {
                return QMIMessage.response(to: r, error: QMIError.uimUninitialized)
            }
            return string(iccid)
        case ID.dmsUIMGetIMSI:
            if let e = simError(state) { return QMIMessage.response(to: r, error: e) }
            guard let imsi = scenario.identifiers.imsi else {
                return QMIMessage.response(to: r, error: QMIError.notProvisioned)
            }
            return string(imsi)
        case ID.dmsUIMGetState:
            return QMIMessage.response(to: r, [QMITLV(0x01, [QMIEncoding.uimState(state.sim)])])
        default:
            return QMIMessage.response(to: r, error: options.unsupportedError)
        }
    }

    private mutating func nasRequest(_ r: QMIMessage, _ state: SimulatedState) -> QMIMessage {
        typealias ID = QMIMessageID
        let cid = r.clientID
        switch r.messageID {
        case ID.nasSetEventReport:
            var config = nas[cid]?.eventReport ?? QMIEncoding.EventReportConfig()
            if let v = r.tlv(0x10), let on = v.first { config.signalStrength = on != 0 }
            if let v = r.tlv(0x12), let on = v.first { config.rejectReason = on != 0 }
            if let v = r.tlv(0x13), let on = v.first { config.rssi = on != 0 }
            if let v = r.tlv(0x14), let on = v.first { config.ecio = on != 0 }
            if let v = r.tlv(0x1B), let on = v.first { config.lteSNR = on != 0 }
            if let v = r.tlv(0x1C), let on = v.first { config.lteRSRP = on != 0 }
            nas[cid, default: NASRegistration()].eventReport = config
            return QMIMessage.response(to: r)
        case ID.nasRegisterIndications:
            var reg = nas[cid] ?? NASRegistration()
            if let v = r.tlv(0x13), let on = v.first { reg.servingSystem = on != 0 }
            if let v = r.tlv(0x18), let on = v.first {
                guard options.getSystemInfo || on == 0 else {
                    return QMIMessage.response(to: r, error: options.unsupportedError)
                }
                reg.systemInfo = on != 0
            }
            if let v = r.tlv(0x19), let on = v.first {
                guard options.getSignalInfo || on == 0 else {
                    return QMIMessage.response(to: r, error: options.unsupportedError)
                }
                reg.signalInfo = on != 0
            }
            nas[cid] = reg
            return QMIMessage.response(to: r)
        case ID.nasGetSignalStrength:
            let mask = r.tlv(0x10).flatMap { $0.count == 2 ? UInt16($0[0]) | UInt16($0[1]) << 8 : nil }
            guard let tlvs = QMIEncoding.signalStrength(state, mask: mask, override: options.signalStrength) else {
                return QMIMessage.response(to: r, error: QMIError.informationUnavailable)
            }
            return QMIMessage.response(to: r, tlvs)
        case ID.nasGetServingSystem:
            return QMIMessage.response(to: r, QMIEncoding.servingSystem(state, options: options, ids: .response))
        case ID.nasGetHomeNetwork:
            if let e = simError(state) { return QMIMessage.response(to: r, error: e) }
            guard let home = scenario.home else {
                return QMIMessage.response(to: r, error: QMIError.informationUnavailable)
            }
            return QMIMessage.response(to: r, QMIEncoding.homeNetwork(home))
        case ID.nasGetOperatorName:
            let home = state.sim == .ready ? scenario.home : nil
            let tlvs = QMIEncoding.operatorName(home: home, state: state)
            guard !tlvs.isEmpty else { return QMIMessage.response(to: r, error: QMIError.informationUnavailable) }
            return QMIMessage.response(to: r, tlvs)
        case ID.nasGetSystemInfo:
            guard options.getSystemInfo else { return QMIMessage.response(to: r, error: options.unsupportedError) }
            return QMIMessage.response(
                to: r, QMIEncoding.systemInfo(state, supports5G: scenario.supports5G, ids: .response))
        case ID.nasGetSignalInfo:
            guard options.getSignalInfo else { return QMIMessage.response(to: r, error: options.unsupportedError) }
            return QMIMessage.response(to: r, QMIEncoding.signalInfo(state))
        case ID.nasConfigSignalInfo, ID.nasConfigSignalInfoV2:
            // Thresholds are accepted and not applied: every signal change is reported (see README).
            guard options.getSignalInfo else { return QMIMessage.response(to: r, error: options.unsupportedError) }
            return QMIMessage.response(to: r)
        default:
            if let answer = cellRequest(r, state) { return answer }
            return QMIMessage.response(to: r, error: options.unsupportedError)
        }
    }

    private mutating func uim(_ r: QMIMessage, _ state: SimulatedState) -> QMIMessage {
        switch r.messageID {
        case QMIMessageID.uimRegisterEvents:
            guard let v = r.tlv(0x01), v.count == 4 else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            let mask = UInt32(v[0]) | UInt32(v[1]) << 8 | UInt32(v[2]) << 16 | UInt32(v[3]) << 24
            if mask & 1 != 0 { uimCardStatus.insert(r.clientID) } else { uimCardStatus.remove(r.clientID) }
            return QMIMessage.response(to: r, [QMITLV(0x10) { $0.u32(mask & 1) }])  // only card status is supported
        case QMIMessageID.uimGetCardStatus:
            return QMIMessage.response(to: r, [QMIEncoding.cardStatus(state.sim)])
        default:
            return QMIMessage.response(to: r, error: options.unsupportedError)
        }
    }

    // MARK: Indications

    /// Indications for what changed, each to the clients that registered for it. `all` (the "indicate" operation)
    /// sends every registered indication whether or not anything changed.
    public func indications(_ changed: StateAspects, state: SimulatedState) -> [QMIMessage] {
        typealias ID = QMIMessageID
        var out: [QMIMessage] = []
        func indication(_ service: UInt8, _ cid: UInt8, _ id: UInt16, _ tlvs: [QMITLV]) -> QMIMessage {
            QMIMessage(service: service, clientID: cid, kind: .indication, transactionID: 0, messageID: id, tlvs: tlvs)
        }
        for cid in nas.keys.sorted() {
            guard let reg = nas[cid] else { continue }
            if changed.contains(.registration) || changed.contains(.packetService) {
                if reg.systemInfo && options.getSystemInfo {
                    out.append(indication(QMIService.nas, cid, ID.nasSystemInfoIndication,
                        QMIEncoding.systemInfo(state, supports5G: scenario.supports5G, ids: .indication)))
                }
                if reg.servingSystem {
                    out.append(indication(QMIService.nas, cid, ID.nasGetServingSystem,
                        QMIEncoding.servingSystem(state, options: options, ids: .indication)))
                }
            }
            if changed.contains(.signal) && reg.signalInfo && options.getSignalInfo {
                out.append(indication(QMIService.nas, cid, ID.nasSignalInfoIndication, QMIEncoding.signalInfo(state)))
            }
            if !reg.eventReport.isEmpty {
                let tlvs = QMIEncoding.eventReport(
                    state, config: reg.eventReport, signal: changed.contains(.signal),
                    registration: changed.contains(.registration))
                if !tlvs.isEmpty { out.append(indication(QMIService.nas, cid, ID.nasSetEventReport, tlvs)) }
            }
        }
        if changed.contains(.sim) {
            for cid in uimCardStatus.sorted() {
                out.append(indication(QMIService.uim, cid, ID.uimCardStatusIndication, [QMIEncoding.cardStatus(state.sim)]))
            }
        }
        return out
    }
}
