// Copies MBIM responses and notifications out of libmbim's parsers into ReachCore's plain structs.
//
// libmbim has one parser per message form: Basic Connect (MBIM 1.0), MS Basic Connect v2 (MBIMEx 2.0 layouts of
// Register State, Packet Service, Signal State) and v3 (Packet Service, Subscriber Ready Status). Which form the
// device sends depends on the MBIMEx version negotiated at open, so every reader takes that version. A response and
// a notification of the same CID share the layout and differ only in the parser's name. Runs on the loop thread.

import CGLibShims
import ReachCore
import ReachGLib

/// Whether a message is a COMMAND_DONE response or an INDICATE_STATUS notification.
enum MBIMMessageKind: Sendable {
    case response, notification
}

/// The parts of MBIM Register State (CID 9) GatewayReach uses.
struct MBIMRegisterState: Sendable, Equatable {
    var registerState: UInt32
    var availableDataClasses: UInt32
    var providerID: String?
    var providerName: String?
    var networkError: UInt32
}

/// The parts of MBIM Packet Service (CID 10, or its MBIMEx 2.0/3.0 forms) GatewayReach uses.
struct MBIMPacketService: Sendable, Equatable {
    var state: UInt32
    var dataClass: UInt32
    var dataClassIsV3: Bool
    var subclass: UInt32
}

/// What Device Caps (CID 1) says that matters here.
struct MBIMDeviceCaps: Sendable, Equatable {
    var dataClass: UInt32
    var customDataClass: String?
    var deviceID: String?
    var firmware: String?
    var hardware: String?
}

/// Subscriber Ready Status (CID 2).
struct MBIMSubscriber: Sendable, Equatable {
    var readyState: UInt32
    var imsi: String?
    var iccid: String?
    var numbers: [String]
}

/// A C enum's raw value as the UInt32 the wire carries (libmbim enums import as signed or unsigned).
func u32<T: BinaryInteger>(_ v: T) -> UInt32 { UInt32(truncatingIfNeeded: v) }

enum MBIMReplies {
    /// Takes a libmbim-allocated string (g_free'd here).
    private static func take(_ p: UnsafeMutablePointer<CChar>?) -> String? {
        guard let p else { return nil }
        defer { g_free(p) }
        return cText(p)
    }

    private static func parse(_ call: String, _ body: (GErrorOut) -> gboolean) throws -> Void {
        try checkGError(call, body)
    }

    static func registerState(_ m: OpaquePointer?, _ kind: MBIMMessageKind, mbimex: UInt8) throws -> MBIMRegisterState {
        var nwError = MbimNwError(0), state = MbimRegisterState(0), mode = MbimRegisterMode(0)
        var available = MbimDataClass(0), cellular = MbimCellularClass(0), flags = MbimRegistrationFlag(0)
        var preferred = MbimDataClass(0)
        var providerID: UnsafeMutablePointer<CChar>? = nil, providerName: UnsafeMutablePointer<CChar>? = nil
        var roaming: UnsafeMutablePointer<CChar>? = nil
        let name: String
        switch (kind, mbimex >= 2) {
        case (.response, false):
            name = "mbim_message_register_state_response_parse"
            try parse(name) {
                mbim_message_register_state_response_parse(
                    m, &nwError, &state, &mode, &available, &cellular, &providerID, &providerName, &roaming, &flags, $0)
            }
        case (.notification, false):
            name = "mbim_message_register_state_notification_parse"
            try parse(name) {
                mbim_message_register_state_notification_parse(
                    m, &nwError, &state, &mode, &available, &cellular, &providerID, &providerName, &roaming, &flags, $0)
            }
        case (.response, true):
            name = "mbim_message_ms_basic_connect_v2_register_state_response_parse"
            try parse(name) {
                mbim_message_ms_basic_connect_v2_register_state_response_parse(
                    m, &nwError, &state, &mode, &available, &cellular, &providerID, &providerName, &roaming, &flags,
                    &preferred, $0)
            }
        case (.notification, true):
            name = "mbim_message_ms_basic_connect_v2_register_state_notification_parse"
            try parse(name) {
                mbim_message_ms_basic_connect_v2_register_state_notification_parse(
                    m, &nwError, &state, &mode, &available, &cellular, &providerID, &providerName, &roaming, &flags,
                    &preferred, $0)
            }
        }
        _ = take(roaming)
        return MBIMRegisterState(
            registerState: u32(state.rawValue), availableDataClasses: u32(available.rawValue), providerID: take(providerID),
            providerName: take(providerName), networkError: u32(nwError.rawValue))
    }

    static func packetService(_ m: OpaquePointer?, _ kind: MBIMMessageKind, mbimex: UInt8) throws -> MBIMPacketService {
        var nwError: UInt32 = 0
        var state = MbimPacketServiceState(0)
        var up: guint64 = 0, down: guint64 = 0
        if mbimex >= 3 {
            var dc = MbimDataClassV3(0), range = MbimFrequencyRange(0), sub = MbimDataSubclass(0)
            var tai: UnsafeMutablePointer<MbimTai>? = nil
            let name = kind == .response
                ? "mbim_message_ms_basic_connect_v3_packet_service_response_parse"
                : "mbim_message_ms_basic_connect_v3_packet_service_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_ms_basic_connect_v3_packet_service_response_parse(
                        m, &nwError, &state, &dc, &up, &down, &range, &sub, &tai, $0)
                    : mbim_message_ms_basic_connect_v3_packet_service_notification_parse(
                        m, &nwError, &state, &dc, &up, &down, &range, &sub, &tai, $0)
            }
            if let tai { mbim_tai_free(tai) }
            return MBIMPacketService(state: u32(state.rawValue), dataClass: u32(dc.rawValue), dataClassIsV3: true, subclass: u32(sub.rawValue))
        }
        var dc = MbimDataClass(0)
        if mbimex >= 2 {
            var range = MbimFrequencyRange(0)
            let name = kind == .response
                ? "mbim_message_ms_basic_connect_v2_packet_service_response_parse"
                : "mbim_message_ms_basic_connect_v2_packet_service_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_ms_basic_connect_v2_packet_service_response_parse(
                        m, &nwError, &state, &dc, &up, &down, &range, $0)
                    : mbim_message_ms_basic_connect_v2_packet_service_notification_parse(
                        m, &nwError, &state, &dc, &up, &down, &range, $0)
            }
        } else {
            let name = kind == .response
                ? "mbim_message_packet_service_response_parse" : "mbim_message_packet_service_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_packet_service_response_parse(m, &nwError, &state, &dc, &up, &down, $0)
                    : mbim_message_packet_service_notification_parse(m, &nwError, &state, &dc, &up, &down, $0)
            }
        }
        return MBIMPacketService(state: u32(state.rawValue), dataClass: u32(dc.rawValue), dataClassIsV3: false, subclass: 0)
    }

    static func signalState(_ m: OpaquePointer?, _ kind: MBIMMessageKind, mbimex: UInt8) throws -> MBIMSignalState {
        var rssi: UInt32 = 0, errorRate: UInt32 = 0, interval: UInt32 = 0, rssiThreshold: UInt32 = 0
        var errorThreshold: UInt32 = 0
        if mbimex >= 2 {
            var count: UInt32 = 0
            var entries: UnsafeMutablePointer<UnsafeMutablePointer<MbimRsrpSnrInfo>?>? = nil
            let name = kind == .response
                ? "mbim_message_ms_basic_connect_v2_signal_state_response_parse"
                : "mbim_message_ms_basic_connect_v2_signal_state_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_ms_basic_connect_v2_signal_state_response_parse(
                        m, &rssi, &errorRate, &interval, &rssiThreshold, &errorThreshold, &count, &entries, $0)
                    : mbim_message_ms_basic_connect_v2_signal_state_notification_parse(
                        m, &rssi, &errorRate, &interval, &rssiThreshold, &errorThreshold, &count, &entries, $0)
            }
            var list: [MBIMSignalState.RSRPSNR] = []
            if let entries {
                for i in 0..<Int(count) {
                    guard let e = entries[i]?.pointee else { break }
                    list.append(.init(rsrp: e.rsrp, snr: e.snr, systemType: e.system_type))
                }
                mbim_rsrp_snr_info_array_free(entries)
            }
            return MBIMSignalState(rssi: rssi, errorRate: errorRate, rsrpSNR: list)
        }
        let name = kind == .response
            ? "mbim_message_signal_state_response_parse" : "mbim_message_signal_state_notification_parse"
        try parse(name) {
            kind == .response
                ? mbim_message_signal_state_response_parse(
                    m, &rssi, &errorRate, &interval, &rssiThreshold, &errorThreshold, $0)
                : mbim_message_signal_state_notification_parse(
                    m, &rssi, &errorRate, &interval, &rssiThreshold, &errorThreshold, $0)
        }
        return MBIMSignalState(rssi: rssi, errorRate: errorRate)
    }

    static func subscriber(_ m: OpaquePointer?, _ kind: MBIMMessageKind, mbimex: UInt8) throws -> MBIMSubscriber {
        var ready = MbimSubscriberReadyState(0)
        var imsi: UnsafeMutablePointer<CChar>? = nil, iccid: UnsafeMutablePointer<CChar>? = nil
        var info = MbimReadyInfoFlag(0)
        var count: UInt32 = 0
        var numbers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        if mbimex >= 3 {
            var flags = MbimSubscriberReadyStatusFlag(0)
            let name = kind == .response
                ? "mbim_message_ms_basic_connect_v3_subscriber_ready_status_response_parse"
                : "mbim_message_ms_basic_connect_v3_subscriber_ready_status_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_ms_basic_connect_v3_subscriber_ready_status_response_parse(
                        m, &ready, &flags, &imsi, &iccid, &info, &count, &numbers, $0)
                    : mbim_message_ms_basic_connect_v3_subscriber_ready_status_notification_parse(
                        m, &ready, &flags, &imsi, &iccid, &info, &count, &numbers, $0)
            }
        } else {
            let name = kind == .response
                ? "mbim_message_subscriber_ready_status_response_parse"
                : "mbim_message_subscriber_ready_status_notification_parse"
            try parse(name) {
                kind == .response
                    ? mbim_message_subscriber_ready_status_response_parse(
                        m, &ready, &imsi, &iccid, &info, &count, &numbers, $0)
                    : mbim_message_subscriber_ready_status_notification_parse(
                        m, &ready, &imsi, &iccid, &info, &count, &numbers, $0)
            }
        }
        var list: [String] = []
        if let numbers {
            for i in 0..<Int(count) { if let n = cText(numbers[i]) { list.append(n) } }
            g_strfreev(numbers)
        }
        return MBIMSubscriber(readyState: u32(ready.rawValue), imsi: take(imsi), iccid: take(iccid), numbers: list)
    }

    static func deviceCaps(_ m: OpaquePointer?) throws -> MBIMDeviceCaps {
        var type = MbimDeviceType(0), cellular = MbimCellularClass(0), voice = MbimVoiceClass(0)
        var simClass = MbimSimClass(0), dataClass = MbimDataClass(0), sms = MbimSmsCaps(0), ctrl = MbimCtrlCaps(0)
        var sessions: UInt32 = 0
        var custom: UnsafeMutablePointer<CChar>? = nil, deviceID: UnsafeMutablePointer<CChar>? = nil
        var firmware: UnsafeMutablePointer<CChar>? = nil, hardware: UnsafeMutablePointer<CChar>? = nil
        try parse("mbim_message_device_caps_response_parse") {
            mbim_message_device_caps_response_parse(
                m, &type, &cellular, &voice, &simClass, &dataClass, &sms, &ctrl, &sessions, &custom, &deviceID,
                &firmware, &hardware, $0)
        }
        return MBIMDeviceCaps(
            dataClass: u32(dataClass.rawValue), customDataClass: take(custom), deviceID: take(deviceID),
            firmware: take(firmware), hardware: take(hardware))
    }

    /// PIN query (CID 4): the PIN type the device waits for (MBIM_PIN_TYPE), when it is locked.
    static func pinType(_ m: OpaquePointer?) throws -> UInt32? {
        var type = MbimPinType(0), state = MbimPinState(0)
        var attempts: UInt32 = 0
        try parse("mbim_message_pin_response_parse") { mbim_message_pin_response_parse(m, &type, &state, &attempts, $0) }
        return state == MBIM_PIN_STATE_LOCKED ? u32(type.rawValue) : nil
    }
}
