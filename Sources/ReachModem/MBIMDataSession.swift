// Observing an MBIM modem's data sessions: the Basic Connect Connect query (CID 12) per session id and its
// notification. Unlike QMI, the query is device-global (MBIM 1.0 §10.5.12): any host session sees a context another
// one (ModemManager, umbim) activated, and mbim-proxy passes Connect notifications to every client. Session 0 is
// always asked (the netdev's untagged traffic); other session ids come from the link map (cdc_mbim VLAN ids, WWAN
// link ids, `modems.ports[].mux_id`).

import CGLibShims
import ReachCore
import ReachGLib

/// What a Connect answer or notification says about one session.
struct MBIMConnectState: Sendable, Equatable {
    var sessionID: UInt32
    /// MBIM_ACTIVATION_STATE.
    var activation: UInt32
}

extension MBIMReplies {
    /// Connect (CID 12), in the MBIM 1.0 layout or, after MBIMEx 3.0 was agreed, the v3 one (libmbim 1.28's
    /// ms-basic-connect-v3 parser).
    static func connect(_ m: OpaquePointer?, _ kind: MBIMMessageKind, mbimex: UInt8) throws -> MBIMConnectState {
        var session: UInt32 = 0
        var activation = MbimActivationState(0)
        let name: String
        switch (kind, mbimex >= 3) {
        case (.response, false):
            name = "mbim_message_connect_response_parse"
            try checkGError(name) { mbim_message_connect_response_parse(m, &session, &activation, nil, nil, nil, nil, $0) }
        case (.notification, false):
            name = "mbim_message_connect_notification_parse"
            try checkGError(name) { mbim_message_connect_notification_parse(m, &session, &activation, nil, nil, nil, nil, $0) }
        case (.response, true):
            name = "mbim_message_ms_basic_connect_v3_connect_response_parse"
            try checkGError(name) {
                mbim_message_ms_basic_connect_v3_connect_response_parse(
                    m, &session, &activation, nil, nil, nil, nil, nil, nil, nil, $0)
            }
        case (.notification, true):
            name = "mbim_message_ms_basic_connect_v3_connect_notification_parse"
            try checkGError(name) {
                mbim_message_ms_basic_connect_v3_connect_notification_parse(
                    m, &session, &activation, nil, nil, nil, nil, nil, nil, nil, $0)
            }
        }
        return MBIMConnectState(sessionID: session, activation: u32(activation.rawValue))
    }
}

extension MBIMSession {
    /// Connect query for one session id.
    func connectState(sessionID: UInt32) async throws -> MBIMConnectState {
        try await command(
            "mbim_message_connect_query_new",
            build: {
                mbim_message_connect_query_new(
                    sessionID, MBIM_ACTIVATION_STATE_UNKNOWN, MBIM_VOICE_CALL_STATE_NONE, MBIM_CONTEXT_IP_TYPE_DEFAULT,
                    mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), 0, nil)
            },
            parse: { m, v in try MBIMReplies.connect(m, .response, mbimex: v) })
    }
}

/// The Connect observer of one MBIM session.
struct MBIMDataObserver: Sendable {
    let session: MBIMSession
    /// One channel per link, plus session 0 when no link is on it.
    let channels: [DataChannel]

    init(session: MBIMSession, links: [DataLink]) {
        self.session = session
        var channels = links.map { DataChannel(interface: $0.interface, sessionID: $0.muxID ?? 0, error: $0.error) }
        if !channels.contains(where: { $0.sessionID == 0 }) { channels.append(DataChannel(sessionID: 0)) }
        self.channels = channels
    }

    /// Asks every channel's session. The status ContextNotActivated means deactivated; other failures are that
    /// channel's unknown. The port going away (or cancellation) is thrown; a device without Connect support has no
    /// data service to ask (empty).
    func read() async throws -> [DataChannel] {
        var out = channels
        for i in out.indices where out[i].error == nil {
            let id = UInt32(out[i].sessionID ?? 0)
            do {
                let state = try await session.connectState(sessionID: id)
                out[i].clients = [DataClientReading(state: DataSessionState(mbimActivationState: state.activation))]
            } catch let e as GLibError where e.matches(mbim_status_error_quark, Int32(MBIM_STATUS_ERROR_CONTEXT_NOT_ACTIVATED.rawValue)) {
                out[i].clients = [DataClientReading(state: .disconnected)]
            } catch let e as GLibError where e.matches(mbim_status_error_quark, Int32(MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT.rawValue)) {
                return []
            } catch let e as GLibError where e.kind == .cancelled || e.isGIOClosed {
                throw e
            } catch {
                out[i].clients = [DataClientReading(state: .unknown, error: ModemChannel.describe(error))]
            }
        }
        return out
    }

    /// Applies a notification to the channel of its session id (others are not watched).
    static func apply(_ s: MBIMConnectState, to channels: inout [DataChannel]) {
        for i in channels.indices where channels[i].sessionID == Int(s.sessionID) {
            channels[i].clients = [DataClientReading(state: DataSessionState(mbimActivationState: s.activation))]
        }
    }
}
