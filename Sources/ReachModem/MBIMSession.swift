// One open MBIM control port: an MbimDevice driven on the GLib loop thread.
//
// The flow follows ModemManager's MBIM modem (mm-broadband-modem-mbim.c, mm-port-mbim.c), reduced to what
// reachability needs: open asking for MBIMEx 3.0 (libmbim then queries Device Services and, when the device lists
// MS Basic Connect Extensions "Version", exchanges versions: the device answers 3.0 or 2.0; otherwise the session
// stays plain MBIM 1.0), read Device Caps, Register State, Packet Service, Signal State and Subscriber Ready
// Status in the forms that version implies, set signal-state reporting, and close.

import CGLibShims
import ReachCore
import ReachGLib
import ReachLog

/// What an MBIM modem announces on its own (INDICATE_STATUS), copied into Swift values on the loop thread.
enum MBIMIndication: Sendable {
    case registerState(MBIMRegisterState)
    case packetService(MBIMPacketService)
    case signalState(MBIMSignalState)
    case subscriber(MBIMSubscriber)
    /// Connect (CID 12): a session's activation state changed (MBIMDataSession.swift).
    case connect(MBIMConnectState)
    /// A notification that could not be parsed, or libmbim's "device-error".
    case malformed(String)
    /// The port went away (HUP/EOF on the control device).
    case removed
}

extension GLibError {
    /// An MBIM status error (the device answered COMMAND_DONE with a failure status).
    var isMBIMStatusError: Bool {
        isDomain(mbim_status_error_quark)
    }
}

final class MBIMSession: @unchecked Sendable {
    // @unchecked: mutable members are touched only on GLibLoop.shared's thread (see QMISession).

    let path: String
    let timeout: Duration
    let logger: Logger
    private let loop = GLibLoop.shared
    private let calls = GLibCallGroup()
    private let device: GPtr<MbimDevice>
    private var handlers: [gulong] = []
    /// The session keeps itself alive while GLib holds it as signal user data; released once disconnected.
    private var retainedForHandlers: Unmanaged<MBIMSession>?
    private var closed = false
    private var sink: (@Sendable (MBIMIndication) -> Void)?
    /// The MBIMEx major version in use: 1 (plain MBIM), 2 or 3.
    private(set) var mbimex: UInt8 = 1
    /// Device Caps' custom data class, as a data class (`MBIMDataClass(customDataClass:capsDataClass:)`).
    private var customClass: UInt32 = 0

    private init(path: String, timeout: Duration, logger: Logger, device: GPtr<MbimDevice>) {
        self.path = path
        self.timeout = timeout
        self.logger = logger
        self.device = device
    }

    private static func newDevice(path: String, timeout: Duration) async throws -> GPtr<MbimDevice> {
        try await GLibLoop.shared.call(
            "mbim_device_new", timeout: timeout,
            start: { call in
                let file = g_file_new_for_path(path)
                mbim_device_new(file, call.cancellable, call.callback, call.userData)
                g_object_unref(UnsafeMutableRawPointer(file))
            },
            finish: { _, result in
                var error: UnsafeMutablePointer<GError>? = nil
                guard let device = mbim_device_new_finish(result, &error) else {
                    throw GLibError(consuming: error, call: "mbim_device_new")
                }
                return GPtr(device)
            },
            discard: { g_object_unref(UnsafeMutableRawPointer($0.p)) })
    }

    /// Opens the port. `mbimex`: ask for MBIMEx 3.0 (the device may answer 2.0); when the device refuses the
    /// Device Services query that negotiation needs, the port is reopened as plain MBIM.
    static func open(path: String, timeout: Duration, proxy: Bool, mbimex: Bool, logger: Logger) async throws
        -> MBIMSession
    {
        var attempts: [MbimDeviceOpenFlags] = []
        let base = proxy ? MBIM_DEVICE_OPEN_FLAGS_PROXY : MBIM_DEVICE_OPEN_FLAGS_NONE
        if mbimex { attempts.append(MbimDeviceOpenFlags(base.rawValue | MBIM_DEVICE_OPEN_FLAGS_MS_MBIMEX_V3.rawValue)) }
        attempts.append(base)
        var lastError: Error = ModemError("mbim_device_open_full: no attempt made")
        for (n, flags) in attempts.enumerated() {
            let device = try await newDevice(path: path, timeout: timeout)
            let session = MBIMSession(path: path, timeout: timeout, logger: logger, device: device)
            do {
                try await GLibLoop.shared.call(
                    "mbim_device_open_full", timeout: timeout, group: session.calls,
                    start: { call in
                        mbim_device_open_full(
                            device.p, flags, call.timeoutSeconds, call.cancellable, call.callback, call.userData)
                    },
                    finish: { _, result in
                        try checkGError("mbim_device_open_full") { mbim_device_open_full_finish(device.p, result, $0) }
                    })
                await GLibLoop.shared.run {
                    session.mbimex = max(1, mbim_device_get_ms_mbimex_version(device.p, nil))
                    session.watchDevice()
                }
                return session
            } catch let error as GLibError where error.isMBIMStatusError && n + 1 < attempts.count {
                logger.debug("MBIMEx negotiation refused, opening as plain MBIM", metadata: ["error": "\(error)"])
                lastError = error
                await session.close(sendClose: false)
            } catch {
                await session.close(sendClose: false)
                throw error
            }
        }
        throw lastError
    }

    /// Loop thread: "device-removed" (HUP), "device-error" (a message libmbim could not handle) and
    /// "device-indicate-status" (notifications).
    private func watchDevice() {
        let me = retainForHandlers()
        handlers.append(CGLibShims_mbim_device_connect_removed(device.p, { _, data in
            Unmanaged<MBIMSession>.fromOpaque(data!).takeUnretainedValue().portRemoved()
        }, me))
        handlers.append(CGLibShims_mbim_device_connect_error(device.p, { _, error, data in
            let s = Unmanaged<MBIMSession>.fromOpaque(data!).takeUnretainedValue()
            let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
            s.logger.debug("MBIM device error", metadata: ["modem.device": "\(s.path)", "error": "\(message)"])
            s.sink?(.malformed("mbim device error: \(message)"))
        }, me))
        handlers.append(CGLibShims_mbim_device_connect_indicate_status(device.p, { _, message, data in
            Unmanaged<MBIMSession>.fromOpaque(data!).takeUnretainedValue().notification(message)
        }, me))
    }

    /// The user data for signal handlers: this session, retained until `close` disconnects them (so a handler can
    /// never see a freed session). Loop thread.
    private func retainForHandlers() -> UnsafeMutableRawPointer {
        if retainedForHandlers == nil { retainedForHandlers = Unmanaged.passRetained(self) }
        return retainedForHandlers!.toOpaque()
    }

    private func portRemoved() {
        logger.debug("MBIM port removed", metadata: ["modem.device": "\(path)"])
        calls.abortAll(GLibError(kind: .gError(domain: GLibError.domainName(g_io_error_quark), code: Int32(G_IO_ERROR_CLOSED.rawValue)),
                                 call: "mbim_device", message: "the port hung up"))
        sink?(.removed)
    }

    /// Loop thread: one INDICATE_STATUS message.
    private func notification(_ message: OpaquePointer?) {
        guard let sink, mbim_message_indicate_status_get_service(message) == MBIM_SERVICE_BASIC_CONNECT else { return }
        let cid = mbim_message_indicate_status_get_cid(message)
        do {
            switch cid {
            case u32(MBIM_CID_BASIC_CONNECT_REGISTER_STATE.rawValue):
                sink(.registerState(try MBIMReplies.registerState(message, .notification, mbimex: mbimex)))
            case u32(MBIM_CID_BASIC_CONNECT_PACKET_SERVICE.rawValue):
                sink(.packetService(try MBIMReplies.packetService(message, .notification, mbimex: mbimex)))
            case u32(MBIM_CID_BASIC_CONNECT_SIGNAL_STATE.rawValue):
                sink(.signalState(try MBIMReplies.signalState(message, .notification, mbimex: mbimex)))
            case u32(MBIM_CID_BASIC_CONNECT_SUBSCRIBER_READY_STATUS.rawValue):
                sink(.subscriber(try MBIMReplies.subscriber(message, .notification, mbimex: mbimex)))
            case u32(MBIM_CID_BASIC_CONNECT_CONNECT.rawValue):
                sink(.connect(try MBIMReplies.connect(message, .notification, mbimex: mbimex)))
            default:
                break
            }
        } catch {
            logger.debug("MBIM notification not understood", metadata: ["mbim.cid": "\(cid)", "error": "\(error)"])
            sink(.malformed("\(error)"))
        }
    }

    /// Disconnects the handlers, sends CLOSE (unless the port is gone or `sendClose` is false) and drops the
    /// device. Safe to call more than once.
    func close(sendClose: Bool = true) async {
        let device = self.device
        let removed: Bool? = await loop.run {
            guard !self.closed else { return nil }
            self.closed = true
            for id in self.handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(device.p), id) }
            self.handlers = []
            self.retainedForHandlers?.release()
            self.retainedForHandlers = nil
            self.sink = nil
            return self.calls.abortedWith != nil || self.calls.sawUnansweredCall
        }
        guard let removed else { return }
        if sendClose && !removed {
            do {
                try await loop.call(
                    "mbim_device_close", timeout: timeout,
                    start: { call in
                        mbim_device_close(device.p, call.timeoutSeconds, call.cancellable, call.callback, call.userData)
                    },
                    finish: { _, result in
                        try checkGError("mbim_device_close") { mbim_device_close_finish(device.p, result, $0) }
                    })
            } catch {
                logger.debug("MBIM close failed", metadata: ["error": "\(error)"])
            }
        }
        await loop.run { g_object_unref(UnsafeMutableRawPointer(device.p)) }
    }

    // MARK: Commands

    /// One command: build the request, send it, check COMMAND_DONE's status, parse the reply.
    func command<T: Sendable>(
        _ name: String, build: @escaping @Sendable () -> OpaquePointer?,
        parse: @escaping @Sendable (OpaquePointer?, UInt8) throws -> T
    ) async throws -> T {
        let device = self.device
        let mbimex = await loop.run { self.mbimex }
        return try await loop.call(
            name, timeout: timeout, group: calls,
            start: { call in
                let request = build()
                mbim_device_command(device.p, request, call.timeoutSeconds, call.cancellable, call.callback, call.userData)
                mbim_message_unref(request)
            },
            finish: { _, result in
                var error: UnsafeMutablePointer<GError>? = nil
                guard let response = mbim_device_command_finish(device.p, result, &error) else {
                    throw GLibError(consuming: error, call: name)
                }
                defer { mbim_message_unref(response) }
                guard mbim_message_response_get_result(response, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error) != 0 else {
                    throw GLibError(consuming: error, call: name)
                }
                return try parse(response, mbimex)
            })
    }

    func deviceCaps() async throws -> MBIMDeviceCaps {
        let caps = try await command(
            "mbim_message_device_caps_query", build: { mbim_message_device_caps_query_new(nil) },
            parse: { m, _ in try MBIMReplies.deviceCaps(m) })
        let custom = MBIMDataClass(customDataClass: caps.customDataClass ?? "", capsDataClass: caps.dataClass)
        await setCustomDataClass(custom.rawValue)
        return caps
    }

    func registerState() async throws -> MBIMRegisterState {
        try await command(
            "mbim_message_register_state_query", build: { mbim_message_register_state_query_new(nil) },
            parse: { m, v in try MBIMReplies.registerState(m, .response, mbimex: v) })
    }

    func packetService() async throws -> MBIMPacketService {
        try await command(
            "mbim_message_packet_service_query", build: { mbim_message_packet_service_query_new(nil) },
            parse: { m, v in try MBIMReplies.packetService(m, .response, mbimex: v) })
    }

    func signalState() async throws -> MBIMSignalState {
        try await command(
            "mbim_message_signal_state_query", build: { mbim_message_signal_state_query_new(nil) },
            parse: { m, v in try MBIMReplies.signalState(m, .response, mbimex: v) })
    }

    func subscriber() async throws -> MBIMSubscriber {
        try await command(
            "mbim_message_subscriber_ready_status_query", build: { mbim_message_subscriber_ready_status_query_new(nil) },
            parse: { m, v in try MBIMReplies.subscriber(m, .response, mbimex: v) })
    }

    /// The PIN the device waits for (MBIM_PIN_TYPE), nil when unlocked.
    func lockedPINType() async throws -> UInt32? {
        try await command(
            "mbim_message_pin_query", build: { mbim_message_pin_query_new(nil) },
            parse: { m, _ in try MBIMReplies.pinType(m) })
    }

    /// The SIM: Subscriber Ready Status, refined by the PIN query when the device is locked.
    func sim() async throws -> (SIMState, MBIMSubscriber) {
        let subscriber = try await subscriber()
        var pinType: UInt32? = nil
        if subscriber.readyState == u32(MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED.rawValue) {
            do {
                pinType = try await lockedPINType()
            } catch let e as GLibError where e.isMBIMStatusError {
                logger.debug("MBIM PIN query failed", metadata: ["error": "\(e)"])
            }
        }
        return (SIMState(mbimSubscriberReadyState: subscriber.readyState, pinType: pinType), subscriber)
    }

    /// Register State as a network reading with the session's custom data class.
    func registration() async throws -> MBIMNetworkReading {
        let register = try await registerState()
        return MBIMNetworkReading(
            registerState: register.registerState, availableDataClasses: register.availableDataClasses,
            providerID: register.providerID, providerName: register.providerName, networkError: register.networkError,
            customDataClass: await customDataClass)
    }

    // MARK: Notifications

    /// Connects the sink and asks for signal-state reports on every 2 dB change (RssiThreshold 1, the finest MBIM
    /// allows; the interval is the device's, or the live view's with `.live`). MBIM devices send Register State, Packet Service, Signal State and
    /// Subscriber Ready Status notifications without being asked.
    func subscribe(
        _ sink: @escaping @Sendable (MBIMIndication) -> Void, signal reporting: SignalReporting = .barBoundaries
    ) async -> IndicationSupport {
        await loop.run {
            self.sink = sink
            // A hang-up between the read and now had nobody to tell; tell the new subscriber.
            if self.calls.abortedWith != nil { sink(.removed) }
        }
        let interval = reporting.mbimSignalStrengthInterval
        do {
            _ = try await command(
                "mbim_message_signal_state_set",
                build: { mbim_message_signal_state_set_new(interval, 1, 0xFFFF_FFFF, nil) },
                parse: { _, _ in () })
        } catch {
            logger.debug("MBIM Signal State set failed, relying on the device's default reporting",
                         metadata: ["error": "\(error)"])
        }
        return IndicationSupport(registration: true, signal: true, sim: true)
    }

    /// The custom data class in use (from Device Caps or a quirk).
    var customDataClass: UInt32 {
        get async { await loop.run { self.customClass } }
    }

    func setCustomDataClass(_ value: UInt32) async {
        await loop.run { self.customClass = value }
    }

    var isRemoved: Bool {
        get async { await loop.run { self.calls.abortedWith != nil } }
    }

    /// The MBIMEx major version in use, read on the loop thread.
    var negotiatedMBIMEx: UInt8 {
        get async { await loop.run { self.mbimex } }
    }
}

extension MBIMNetworkReading {
    mutating func apply(_ p: MBIMPacketService) {
        packetServiceState = p.state
        packetDataClass = p.dataClass
        packetDataClassIsV3 = p.dataClassIsV3
        packetDataSubclass = p.subclass
    }

    mutating func apply(_ r: MBIMRegisterState) {
        registerState = r.registerState
        availableDataClasses = r.availableDataClasses
        providerID = r.providerID
        providerName = r.providerName
        networkError = r.networkError
    }
}
