// The simulated modem's Basic Connect Connect (CID 12): the query and the notification of each session's state.
//
// MBIM 1.0 §10.5.12 (libmbim data/mbim-service-basic-connect.json 1.28.2): the query carries a whole
// MBIM_SET_CONNECT-shaped buffer of which only SessionId counts; the answer and the notification are MBIM_CONNECT_INFO:
// SessionId u32, ActivationState u32, VoiceCallState u32, IPType u32, ContextType UUID, NwError u32. After MBIMEx 3.0
// is agreed they carry MediaPreference u32, AccessString as a TLV and a list of unnamed TLVs too (libmbim
// data/mbim-service-ms-basic-connect-v3.json). The query is device-global: any host session sees a context another
// one activated. A session id no session is on reads DEACTIVATED with context type None, as an idle modem answers.

extension MBIMDevice {
    /// MBIMContextType Internet (7E5E2A7E-4E6F-7272-736B-656E7E5E2A7E).
    static let contextTypeInternet = MBIMUUID("7e5e2a7e-4e6f-7272-736b-656e7e5e2a7e")!
    /// MBIMContextTypeNone (B43F758C-A560-4B46-B35E-C5869641FB54): no context.
    static let contextTypeNone = MBIMUUID("b43f758c-a560-4b46-b35e-c5869641fb54")!

    /// MBIM_CONTEXT_IP_TYPE: DEFAULT 0, IPV4 1, IPV6 2, IPV4V6 3.
    static func ipType(_ s: SimulatedSession) -> UInt32 {
        switch (s.ipv4, s.ipv6) {
        case (true, true): return 3
        case (false, true): return 2
        case (true, false): return 1
        default: return 0
        }
    }

    /// An MBIMEx 3.0 TLV (MBIM_TLV_IE: Type u16, Reserved u8, PaddingLength u8, DataLength u32, data padded to 4).
    static func tlv(type: UInt16, _ data: [UInt8]) -> [UInt8] {
        let padding = (4 - data.count % 4) % 4
        var w = ByteWriter()
        w.u16(type)
        w.u8(0)
        w.u8(UInt8(padding))
        w.u32(UInt32(data.count))
        w.append(data + [UInt8](repeating: 0, count: padding))
        return w.bytes
    }

    /// MBIM_TLV_TYPE_WCHAR_STR.
    static let tlvWideString: UInt16 = 10

    /// The session on `id`, with its activation state, in the 1.0 layout or the MBIMEx 3.0 one.
    static func connectInfo(_ state: SimulatedState, sessionID id: Int, v3: Bool) -> (activation: UInt32, buffer: [UInt8]) {
        let session = state.effectiveSessions.first { $0.channel == id }
        let activation = session?.state.mbimActivationState ?? 3
        var b = MBIMBufferBuilder()
        b.u32(UInt32(id))
        b.u32(activation)
        b.u32(0)  // VoiceCallState: none
        b.u32(session.map(ipType) ?? 0)
        b.raw((session == nil ? contextTypeNone : contextTypeInternet).bytes)
        b.u32(0)  // NwError
        if v3 {
            b.u32(1)  // MediaPreference: 3GPP
            b.raw(tlv(type: tlvWideString, MBIMBufferBuilder.utf16le(session == nil ? "" : "internet")))
            // UnnamedIes: none.
        }
        return (activation, b.build())
    }

    /// Connect query: the state of the session the query names. A set (activate/deactivate) is not simulated: the
    /// simulator observes sessions, it does not start them.
    mutating func connect(_ m: MBIMMessage, _ state: SimulatedState) -> (UInt32, [UInt8]) {
        guard !m.isSet else { return (MBIMStatus.invalidDeviceServiceOperation, []) }
        var r = MBIMBufferReader(m.buffer)
        guard let id = try? r.u32("SessionId"), id <= 255 else { return (MBIMStatus.invalidParameters, []) }
        let info = Self.connectInfo(state, sessionID: Int(id), v3: negotiated >= .v3)
        lastConnect[Int(id)] = info.activation
        return (MBIMStatus.success, info.buffer)
    }

    /// Connect notifications for the sessions whose activation state differs from what was last reported (each known
    /// session and session 0 when `force`), while the session is open and the host subscribed.
    public mutating func connectNotifications(state: SimulatedState, force: Bool) -> [MBIMMessage] {
        guard isOpen, scenario.mbim.connect, scenario.mbim.connectNotifications,
            subscribed(MBIMServices.basicConnect, MBIMServices.BasicConnect.connect)
        else { return [] }
        var ids = Set(state.effectiveSessions.map(\.channel)).union(lastConnect.keys)
        if force { ids.insert(0) }
        var out: [MBIMMessage] = []
        for id in ids.sorted() {
            let info = Self.connectInfo(state, sessionID: id, v3: negotiated >= .v3)
            // A session id that was never there and still is not is no news.
            guard force || info.activation != (lastConnect[id] ?? 3) else { continue }
            lastConnect[id] = info.activation
            out.append(MBIMMessage(
                type: .indicateStatus, transactionID: 0, service: MBIMServices.basicConnect,
                cid: MBIMServices.BasicConnect.connect, buffer: info.buffer))
        }
        return out
    }
}
