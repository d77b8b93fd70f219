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
    }

    private(set) var clients: [UInt8: Client] = [:]

    static let getPacketServiceStatus: UInt16 = 0x0022
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

    mutating func handle(_ r: QMIMessage, state: SimulatedState, unsupported: UInt16) -> QMIMessage {
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
        default:
            return QMIMessage.response(to: r, error: unsupported)
        }
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
