// The simulated modem's WDS service, as an observer of a data session meets it: per-client state (IP family, the
// data channel the client is bound to) and a session that only clients on its channel and family see.
//
// What a real modem does and this models (Qualcomm's WDS header via libqmi data/qmi-service-wds.json 1.32.2;
// ModemManager mm-bearer-qmi.c): a fresh client sits on mux id 0 and IPv4. Bind Mux Data Port (0x00A2; TLV 0x10
// endpoint type + interface number, 0x11 mux id, 0x13 client type) moves it to a QMAP mux id and must be its first
// message; Bind Data Port (0x0089; TLV 0x01 SIO port) does the same for BAM-DMUX ports (A2 MUX RMNETn, 0x0E04 + n,
// is channel n here). Set IP Family (0x004D; TLV 0x01: 4, 6, or 8 unspecified) picks the family. Get Packet Service
// Status (0x0022; TLV 0x01 u8 QmiWdsConnectionStatus) answers for the client's channel and family, and the same
// message id is the indication, whose TLV 0x01 carries two bytes (status, reconfiguration required) and TLV 0x12 the
// IP family. Indications go only to the clients whose own answer changed.
//
// A client can also bring a session up and down, as ModemManager's QMI bearer does (mm-bearer-qmi.c,
// connect_context_step and disconnect_context_step): Set Event Report (0x0001) and Indication Register (0x0003) are
// accepted; Start Network (0x0020; TLV 0x19 IP family preference) connects the session on the client's channel and
// family and answers TLV 0x01, the packet data handle (u32); Stop Network (0x0021; TLV 0x01 that handle, or the
// global handle 0xFFFFFFFF) disconnects it; Get Current Settings (0x002D) answers the session's addresses
// (IPv4 0x1E, gateway 0x20, mask 0x21, DNS 0x15/0x16; IPv6 0x25, gateway 0x26, DNS 0x27; MTU 0x29; family 0x2B).
// A start on a session already up answers NO_EFFECT (ModemManager's start_network_ready takes that as connected), a
// stop on one already down NO_EFFECT too; off the network a start fails with CALL_FAILED and call end reason
// NO_SERVICE (TLV 0x10, QmiWdsCallEndReason 3). The first start or stop turns the default session, which follows
// registration, into a declared one that stays as the host left it.

/// The WDS clients of the simulated modem.
struct WDSClients: Sendable, Equatable {
    struct Client: Sendable, Equatable {
        /// QmiWdsIpFamily: 4 until Set IP Family says otherwise (8, unspecified, reads as IPv4 here).
        var family: UInt8 = 4
        /// The data channel: the bound mux id, or n for SIO port A2 MUX RMNETn; 0 when unbound.
        var channel = 0
        /// Requests this client has sent (a bind must be the first).
        var requests = 0
        /// The status this client was last told, by a response or an indication.
        var lastStatus: UInt8?
        /// The packet data handle of the session this client started (Start Network), until it stops it.
        var handle: UInt32?
    }

    private(set) var clients: [UInt8: Client] = [:]

    static let setEventReport: UInt16 = 0x0001
    static let indicationRegister: UInt16 = 0x0003
    static let startNetwork: UInt16 = 0x0020
    static let stopNetwork: UInt16 = 0x0021
    static let getPacketServiceStatus: UInt16 = 0x0022
    static let getCurrentSettings: UInt16 = 0x002D
    /// The handle a Stop Network may name instead of the one its client was given (libqmi's
    /// QMI_WDS_PACKET_DATA_HANDLE_GLOBAL... spelled GLOBAL_PACKET_DATA_HANDLE in mm-bearer-qmi.c).
    static let globalPacketDataHandle: UInt32 = 0xFFFF_FFFF
    /// QmiWdsCallEndReason GENERIC_NO_SERVICE (libqmi qmi-enums-wds.h).
    static let callEndNoService: UInt16 = 3
    static let bindDataPort: UInt16 = 0x0089
    static let setIPFamily: UInt16 = 0x004D
    static let bindMuxDataPort: UInt16 = 0x00A2
    /// QmiSioPort A2 MUX RMNET0 (libqmi qmi-enums-wds.h); RMNET1-7 follow.
    static let sioA2MuxRMNet0: UInt16 = 0x0E04

    mutating func added(_ cid: UInt8) { clients[cid] = Client() }
    mutating func removed(_ cid: UInt8) { clients[cid] = nil }
    mutating func removeAll() { clients = [:] }

    /// The status a client on `channel` asking about `family` sees.
    static func status(_ state: SimulatedState, channel: Int, family: UInt8) -> UInt8 {
        state.session(channel: channel, ipv6: family == 6)?.state.qmiStatus ?? 1
    }

    mutating func handle(_ r: QMIMessage, state: inout SimulatedState, unsupported: UInt16) -> QMIMessage {
        let cid = r.clientID
        guard var client = clients[cid] else { return QMIMessage.response(to: r, error: QMIError.invalidClientID) }
        client.requests += 1
        defer { clients[cid] = client }
        switch r.messageID {
        case Self.bindMuxDataPort:
            guard client.requests == 1 else {
                // The channel of a client is fixed by its first message (Qualcomm's WDS header).
                return QMIMessage.response(to: r, error: QMIError.code("INVALID_OPERATION")!)
            }
            if let endpoint = r.tlv(0x10), endpoint.count != 8 {
                return QMIMessage.response(to: r, error: QMIError.malformedMessage)
            }
            guard let mux = r.tlv(0x11), mux.count == 1 else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            client.channel = Int(mux[0])
            client.lastStatus = Self.status(state, channel: client.channel, family: client.family)
            return QMIMessage.response(to: r)
        case Self.bindDataPort:
            guard client.requests == 1 else {
                return QMIMessage.response(to: r, error: QMIError.code("INVALID_OPERATION")!)
            }
            guard let v = r.tlv(0x01), v.count == 2 else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            let port = UInt16(v[0]) | UInt16(v[1]) << 8
            guard port >= Self.sioA2MuxRMNet0, port < Self.sioA2MuxRMNet0 + 8 else {
                return QMIMessage.response(to: r, error: QMIError.invalidArgument)
            }
            client.channel = Int(port - Self.sioA2MuxRMNet0)
            client.lastStatus = Self.status(state, channel: client.channel, family: client.family)
            return QMIMessage.response(to: r)
        case Self.setIPFamily:
            guard let v = r.tlv(0x01), v.count == 1 else {
                return QMIMessage.response(to: r, error: QMIError.missingArgument)
            }
            guard [4, 6, 8].contains(v[0]) else {
                return QMIMessage.response(to: r, error: QMIError.code("INVALID_IP_FAMILY_PREFERENCE")!)
            }
            client.family = v[0] == 8 ? 4 : v[0]
            client.lastStatus = Self.status(state, channel: client.channel, family: client.family)
            return QMIMessage.response(to: r)
        case Self.getPacketServiceStatus:
            let status = Self.status(state, channel: client.channel, family: client.family)
            client.lastStatus = status
            return QMIMessage.response(to: r, [QMITLV(0x01, [status])])
        case Self.setEventReport, Self.indicationRegister:
            // Accepted; the reports they ask for (bearer technology, extended IP configuration) are not sent.
            return QMIMessage.response(to: r)
        case Self.startNetwork:
            return start(r, client: &client, cid: cid, state: &state)
        case Self.stopNetwork:
            return stop(r, client: &client, state: &state)
        case Self.getCurrentSettings:
            guard Self.status(state, channel: client.channel, family: client.family) != 1 else {
                return QMIMessage.response(to: r, error: QMIError.code("OUT_OF_CALL")!)
            }
            return QMIMessage.response(to: r, Self.currentSettings(channel: client.channel, family: client.family))
        default:
            return QMIMessage.response(to: r, error: unsupported)
        }
    }

    private func start(
        _ r: QMIMessage, client: inout Client, cid: UInt8, state: inout SimulatedState
    ) -> QMIMessage {
        if let v = r.tlv(0x19) {
            guard v.count == 1 else { return QMIMessage.response(to: r, error: QMIError.malformedMessage) }
            guard [4, 6, 8].contains(v[0]) else {
                return QMIMessage.response(to: r, error: QMIError.code("INVALID_IP_FAMILY_PREFERENCE")!)
            }
            client.family = v[0] == 8 ? 4 : v[0]
        }
        if let apn = r.tlv(0x14), String(validating: apn, as: UTF8.self) == nil {
            return QMIMessage.response(to: r, error: QMIError.invalidArgument)
        }
        guard client.handle == nil,
            Self.status(state, channel: client.channel, family: client.family) == 1
        else {
            return QMIMessage.response(to: r, error: QMIError.code("NO_EFFECT")!)
        }
        guard state.isRegistered, state.packetService == .attached else {
            return QMIMessage.response(
                to: r, error: QMIError.code("CALL_FAILED")!, [QMITLV(0x10) { $0.u16(Self.callEndNoService) }])
        }
        state.dataSessions = Self.sessions(
            state.effectiveSessions, channel: client.channel, family: client.family, to: .connected)
        // A handle of the client's own: its id and family, never 0 nor the global handle.
        let handle = 0x5100_0000 | UInt32(cid) << 8 | UInt32(client.family)
        client.handle = handle
        return QMIMessage.response(to: r, [QMITLV(0x01) { $0.u32(handle) }])
    }

    private func stop(_ r: QMIMessage, client: inout Client, state: inout SimulatedState) -> QMIMessage {
        guard let v = r.tlv(0x01), v.count == 4 else {
            return QMIMessage.response(to: r, error: QMIError.missingArgument)
        }
        let handle = UInt32(v[0]) | UInt32(v[1]) << 8 | UInt32(v[2]) << 16 | UInt32(v[3]) << 24
        guard handle == Self.globalPacketDataHandle || handle == client.handle else {
            return QMIMessage.response(to: r, error: QMIError.code("INVALID_HANDLE")!)
        }
        client.handle = nil
        guard Self.status(state, channel: client.channel, family: client.family) != 1 else {
            return QMIMessage.response(to: r, error: QMIError.code("NO_EFFECT")!)
        }
        state.dataSessions = Self.sessions(
            state.effectiveSessions, channel: client.channel, family: client.family, to: .disconnected)
        return QMIMessage.response(to: r)
    }

    /// `sessions` with the one on `channel` (made for `family` when there is none) turned `to`.
    static func sessions(
        _ sessions: [SimulatedSession], channel: Int, family: UInt8, to new: SimulatedSessionState
    ) -> [SimulatedSession] {
        var out = sessions
        if let i = out.firstIndex(where: { $0.channel == channel }) {
            out[i].state = new
            if new == .connected {
                if family == 6 { out[i].ipv6 = true } else { out[i].ipv4 = true }
            }
        } else if new == .connected {
            out.append(SimulatedSession(channel: channel, ipv4: family != 6, ipv6: family == 6, state: new))
        }
        return out
    }

    /// Get Current Settings for a session: the addresses the USB lab's operator side uses (RFC 5737 192.0.2.0/24,
    /// RFC 3849 2001:db8::/32), the host at 2 plus the channel, the gateway and DNS server at 1, MTU 1500.
    static func currentSettings(channel: Int, family: UInt8) -> [QMITLV] {
        let host = UInt8(truncatingIfNeeded: 2 + channel)
        var tlvs: [QMITLV] = []
        if family == 6 {
            let prefix: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11)
            tlvs.append(QMITLV(0x25, prefix + [host, 64]))
            tlvs.append(QMITLV(0x26, prefix + [1, 64]))
            tlvs.append(QMITLV(0x27, prefix + [1]))
        } else {
            func ipv4(_ id: UInt8, _ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> QMITLV {
                // The address as a number, most significant octet first, written little-endian as every QMI u32.
                QMITLV(id) { $0.u32(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)) }
            }
            tlvs += [
                ipv4(0x1E, 192, 0, 2, host), ipv4(0x20, 192, 0, 2, 1), ipv4(0x21, 255, 255, 255, 0),
                ipv4(0x15, 192, 0, 2, 1),
            ]
        }
        tlvs.append(QMITLV(0x29) { $0.u32(1500) })
        tlvs.append(QMITLV(0x2B, [family]))
        return tlvs
    }

    /// Packet Service Status indications for the clients whose answer differs from what they were last told (every
    /// client when `force`), each with its own status and IP family.
    mutating func indications(state: SimulatedState, force: Bool) -> [QMIMessage] {
        var out: [QMIMessage] = []
        for cid in clients.keys.sorted() {
            guard var client = clients[cid] else { continue }
            let status = Self.status(state, channel: client.channel, family: client.family)
            guard force || status != client.lastStatus else { continue }
            client.lastStatus = status
            clients[cid] = client
            out.append(QMIMessage(
                service: QMIService.wds, clientID: cid, kind: .indication, transactionID: 0,
                messageID: Self.getPacketServiceStatus,
                tlvs: [QMITLV(0x01, [status, 0]), QMITLV(0x12, [client.family])]))
        }
        return out
    }
}

extension QMIDevice {
    /// WDS indications after a data-session change (none when the scenario's firmware sends none).
    public mutating func wdsIndications(state: SimulatedState, force: Bool) -> [QMIMessage] {
        guard scenario.qmi.wds, scenario.qmi.wdsIndications else { return [] }
        return wds.indications(state: state, force: force)
    }
}
