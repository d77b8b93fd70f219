// One open QMI control port: a QmiDevice and its NAS, DMS and UIM clients, driven on the GLib loop thread.
//
// The flow follows ModemManager's QMI modem (mm-broadband-modem-qmi.c, mm-shared-qmi.c), reduced to what
// reachability needs: open in explicit QMI mode (AUTO needs the sysfs transport, which a pty has not), allocate
// clients, read registration (System Info, falling back to Serving System), signal (Signal Info, falling back to
// Signal Strength), SIM, operator name and identifiers; subscribe to indications; release the client ids and
// close the port.

import CGLibShims
import ReachCore
import ReachGLib
import ReachLog

/// A GObject pointer that may be handed to the loop thread. Dereference it only there.
struct GPtr<T>: @unchecked Sendable {
    let p: UnsafeMutablePointer<T>
    init(_ p: UnsafeMutablePointer<T>) { self.p = p }
    var gobject: UnsafeMutablePointer<GObject> { CGLibShims_G_OBJECT(p) }
}

/// What a QMI modem announces on its own, copied into Swift values on the loop thread.
enum QMIIndication: Sendable {
    case systemInfo(QMISystemInfo)
    case servingSystem(QMIServingSystem)
    case signalInfo(QMISignalInfo)
    case signalStrength(QMISignalStrength)
    /// The port went away (HUP/EOF on the control device).
    case removed
}

/// Which changes the modem will announce after `QMISession.subscribe()`; the rest must be polled.
struct IndicationSupport: Sendable, Equatable {
    var registration: Bool
    var signal: Bool
    var sim: Bool
    static let none = IndicationSupport(registration: false, signal: false, sim: false)
}

/// Errors of the QMI and MBIM adapters that are not GLib's.
struct ModemError: Error, Sendable, CustomStringConvertible {
    var description: String
    /// The case, as the thrower knows it (a proxy's refusal or silence, no answer while opening); `failed` when the
    /// words are all there is.
    var fault: ModemFault
    init(_ description: String, _ fault: ModemFault = ModemFault(.failed)) {
        self.description = description
        self.fault = fault
    }
}

extension GLibError {
    /// QMI_PROTOCOL_ERROR_NOT_SUPPORTED or INVALID_QMI_COMMAND: the modem does not know the request, so the caller
    /// should fall back to an older one (ModemManager's rule for System Info and Signal Info).
    var isQMIUnsupported: Bool {
        matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_NOT_SUPPORTED.rawValue))
            || matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND.rawValue))
    }

    /// Any QMI protocol error (the modem answered with an error result).
    var isQMIProtocolError: Bool {
        isDomain(qmi_protocol_error_quark)
    }
}

final class QMISession: @unchecked Sendable {
    // @unchecked: every mutable member below is touched only on GLibLoop.shared's thread (inside `loop.perform`,
    // `loop.run`, `loop.call` closures, or GLib signal handlers, which run there too).

    let path: String
    let timeout: Duration
    let logger: Logger
    /// Where Config Signal Info asks the modem to announce signal changes: the signal policy's bar boundaries.
    let signalThresholds: QMISignalThresholds
    private let loop = GLibLoop.shared
    private let calls = GLibCallGroup()
    private let device: GPtr<QmiDevice>
    private var nas: GPtr<QmiClientNas>?
    private var dms: GPtr<QmiClientDms>?
    private var uim: GPtr<QmiClientUim>?
    private var handlers: [(instance: gpointer, id: gulong)] = []
    /// The session keeps itself alive while GLib holds it as signal user data; released once disconnected.
    private var retainedForHandlers: Unmanaged<QMISession>?
    private var closed = false
    /// Where indications go once `subscribe` has run.
    private var sink: (@Sendable (QMIIndication) -> Void)?
    /// Learnt on the first read: whether the modem answers System Info / Signal Info.
    private(set) var hasSystemInfo = true
    private(set) var hasSignalInfo = true

    private init(
        path: String, timeout: Duration, logger: Logger, signalThresholds: QMISignalThresholds, device: GPtr<QmiDevice>
    ) {
        self.path = path
        self.timeout = timeout
        self.logger = logger
        self.signalThresholds = signalThresholds
        self.device = device
    }

    // MARK: Open and close

    /// Creates the QmiDevice, opens the port and allocates the NAS client (and DMS and UIM when the modem has them).
    /// `proxy`: go through qmi-proxy (as ModemManager does) instead of opening the port exclusively.
    static func open(
        path: String, timeout: Duration, proxy: Bool, logger: Logger, signalThresholds: QMISignalThresholds
    ) async throws -> QMISession {
        let loop = GLibLoop.shared
        let device: GPtr<QmiDevice> = try await loop.call(
            "qmi_device_new", timeout: timeout,
            start: { call in
                let file = g_file_new_for_path(path)
                // No file check: a pty or a symlink to one is a valid port; discovery checked the node already.
                let device = CGLibShims_qmi_device_new_uninitialised(file, 1, nil)
                g_object_unref(UnsafeMutableRawPointer(file))
                g_async_initable_init_async(
                    CGLibShims_G_ASYNC_INITABLE(device), G_PRIORITY_DEFAULT, call.cancellable, call.callback,
                    call.userData)
            },
            finish: { source, result in
                var error: UnsafeMutablePointer<GError>? = nil
                guard g_async_initable_init_finish(CGLibShims_G_ASYNC_INITABLE(source), result, &error) != 0 else {
                    g_object_unref(source)
                    throw GLibError(consuming: error, call: "qmi_device_new")
                }
                return GPtr(CGLibShims_QMI_DEVICE(source))
            },
            discard: { g_object_unref($0.p) })
        let session = QMISession(
            path: path, timeout: timeout, logger: logger, signalThresholds: signalThresholds, device: device)
        do {
            // Explicit QMI mode: no AUTO flag (it needs the sysfs transport), no NET_* flags (they write sysfs).
            let flags = proxy ? QMI_DEVICE_OPEN_FLAGS_PROXY : QMI_DEVICE_OPEN_FLAGS_NONE
            try await loop.call(
                "qmi_device_open", timeout: timeout, group: session.calls,
                start: { call in
                    qmi_device_open(device.p, flags, call.timeoutSeconds, call.cancellable, call.callback, call.userData)
                },
                finish: { _, result in
                    try checkGError("qmi_device_open") { qmi_device_open_finish(device.p, result, $0) }
                })
            await loop.run { session.watchRemoval() }
            let nas = try await session.allocate(QMI_SERVICE_NAS, "NAS")
            await loop.run { session.nas = GPtr(CGLibShims_QMI_CLIENT_NAS(nas.p)) }
            for (service, name) in [(QMI_SERVICE_DMS, "DMS"), (QMI_SERVICE_UIM, "UIM")] {
                do {
                    let client = try await session.allocate(service, name)
                    await loop.run {
                        if service == QMI_SERVICE_DMS {
                            session.dms = GPtr(CGLibShims_QMI_CLIENT_DMS(client.p))
                        } else {
                            session.uim = GPtr(CGLibShims_QMI_CLIENT_UIM(client.p))
                        }
                    }
                } catch let error as GLibError where error.isQMIProtocolError {
                    logger.debug("QMI service not available", metadata: ["qmi.service": "\(name)", "error": "\(error)"])
                }
            }
        } catch {
            await session.close()
            throw error
        }
        return session
    }

    /// Allocates a client of `service` (CTL Allocate CID); QMIDataObserver allocates its WDS clients through this.
    func allocate(_ service: QmiService, _ name: String) async throws -> GPtr<QmiClient> {
        let device = self.device
        return try await loop.call(
            "qmi_device_allocate_client(\(name))", timeout: timeout, group: calls,
            start: { call in
                qmi_device_allocate_client(
                    device.p, service, UInt8(QMI_CID_NONE), call.timeoutSeconds, call.cancellable, call.callback,
                    call.userData)
            },
            finish: { _, result in
                var error: UnsafeMutablePointer<GError>? = nil
                guard let client = qmi_device_allocate_client_finish(device.p, result, &error) else {
                    throw GLibError(consuming: error, call: "qmi_device_allocate_client(\(name))")
                }
                return GPtr(client)
            },
            discard: { g_object_unref($0.p) })
    }

    /// Connects QmiDevice's "device-removed": the port hung up. Loop thread.
    private func watchRemoval() {
        let me = retainForHandlers()
        let id = CGLibShims_qmi_device_connect_removed(device.p, { _, data in
            let session = Unmanaged<QMISession>.fromOpaque(data!).takeUnretainedValue()
            session.portRemoved()
        }, me)
        handlers.append((UnsafeMutableRawPointer(device.p), id))
    }

    /// Loop thread: fails everything in flight at once and tells the subscriber.
    /// The user data for signal handlers: this session, retained until `close` disconnects them (so a handler can
    /// never see a freed session). Loop thread.
    private func retainForHandlers() -> UnsafeMutableRawPointer {
        if retainedForHandlers == nil { retainedForHandlers = Unmanaged.passRetained(self) }
        return retainedForHandlers!.toOpaque()
    }

    private func portRemoved() {
        logger.debug("QMI port removed", metadata: ["modem.device": "\(path)"])
        calls.abortAll(GLibError(kind: .gError(domain: GLibError.domainName(g_io_error_quark), code: Int32(G_IO_ERROR_CLOSED.rawValue)),
                                 call: "qmi_device", message: "the port hung up"))
        sink?(.removed)
    }

    /// Whether the port hung up.
    var isRemoved: Bool {
        get async { await loop.run { self.calls.abortedWith != nil } }
    }

    /// Disconnects the indication handlers, releases every client id (CTL Release CID, so the modem frees them),
    /// closes the port and drops the device. Safe to call more than once.
    func close() async {
        let device = self.device
        let taken: (clients: [GPtr<QmiClient>], removed: Bool)? = await loop.run {
            guard !self.closed else { return nil }
            self.closed = true
            for h in self.handlers { g_signal_handler_disconnect(h.instance, h.id) }
            self.handlers = []
            self.retainedForHandlers?.release()
            self.retainedForHandlers = nil
            self.sink = nil
            var clients: [GPtr<QmiClient>] = []
            if let nas = self.nas { clients.append(GPtr(CGLibShims_QMI_CLIENT(nas.p))) }
            if let dms = self.dms { clients.append(GPtr(CGLibShims_QMI_CLIENT(dms.p))) }
            if let uim = self.uim { clients.append(GPtr(CGLibShims_QMI_CLIENT(uim.p))) }
            self.nas = nil
            self.dms = nil
            self.uim = nil
            return (clients, self.calls.abortedWith != nil || self.calls.sawUnansweredCall)
        }
        guard let taken else { return }
        for client in taken.clients { await release(client, sendRelease: !taken.removed) }
        do {
            try await loop.call(
                "qmi_device_close_async", timeout: timeout,
                start: { call in
                    qmi_device_close_async(device.p, call.timeoutSeconds, call.cancellable, call.callback, call.userData)
                },
                finish: { _, result in
                    try checkGError("qmi_device_close_async") { qmi_device_close_finish(device.p, result, $0) }
                })
        } catch {
            logger.debug("QMI close failed", metadata: ["error": "\(error)"])
        }
        await loop.run { g_object_unref(device.p) }
    }

    /// Releases a client id (CTL Release CID, so the modem frees it) unless the port is gone or owes answers, and
    /// drops the client object.
    func release(_ client: GPtr<QmiClient>, sendRelease: Bool? = nil) async {
        let device = self.device
        let polite = await loop.run { self.calls.abortedWith == nil && !self.calls.sawUnansweredCall }
        if sendRelease ?? polite {
            do {
                try await loop.call(
                    "qmi_device_release_client", timeout: timeout, group: calls,
                    start: { call in
                        qmi_device_release_client(
                            device.p, client.p, QMI_DEVICE_RELEASE_CLIENT_FLAGS_RELEASE_CID, call.timeoutSeconds,
                            call.cancellable, call.callback, call.userData)
                    },
                    finish: { _, result in
                        try checkGError("qmi_device_release_client") {
                            qmi_device_release_client_finish(device.p, result, $0)
                        }
                    })
            } catch {
                logger.debug("QMI client release failed", metadata: ["error": "\(error)"])
            }
        }
        await loop.run { g_object_unref(client.p) }
    }

    // MARK: Requests

    /// One request on a client of this session: start it, finish it, check the result TLV, copy the output, unref it.
    func request<T: Sendable>(
        _ name: String,
        start: @escaping @Sendable (GLibAsyncCall) -> Void,
        finish: @escaping @Sendable (OpaquePointer?, GErrorOut) -> OpaquePointer?,
        result: @escaping @Sendable (OpaquePointer?, GErrorOut) -> gboolean,
        unref: @escaping @Sendable (OpaquePointer?) -> Void,
        extract: @escaping @Sendable (OpaquePointer?) throws -> T
    ) async throws -> T {
        try await loop.call(
            name, timeout: timeout, group: calls, start: start,
            finish: { _, res in
                var error: UnsafeMutablePointer<GError>? = nil
                guard let output = finish(res, &error) else { throw GLibError(consuming: error, call: name) }
                defer { unref(output) }
                guard result(output, &error) != 0 else { throw GLibError(consuming: error, call: name) }
                return try extract(output)
            })
    }

    func requireNAS() async throws -> GPtr<QmiClientNas> {
        guard let nas = await loop.run({ self.nas }) else { throw ModemError("QMI NAS client is not allocated") }
        return nas
    }

    /// NAS Get System Info (0x004D).
    func systemInfo() async throws -> QMISystemInfo {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_system_info",
            start: { c in
                qmi_client_nas_get_system_info(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_system_info_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_system_info_output_get_result,
            unref: qmi_message_nas_get_system_info_output_unref,
            extract: { QMIReplies.systemInfo($0, .response) })
    }

    /// NAS Get Serving System (0x0024).
    func servingSystem() async throws -> QMIServingSystem {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_serving_system",
            start: { c in
                qmi_client_nas_get_serving_system(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_serving_system_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_serving_system_output_get_result,
            unref: qmi_message_nas_get_serving_system_output_unref,
            extract: {
                guard let s = QMIReplies.servingSystem($0, .response) else {
                    throw ModemError("qmi_client_nas_get_serving_system: reply lacks the Serving System TLV")
                }
                return s
            })
    }

    /// NAS Get Signal Info (0x004F).
    func signalInfo() async throws -> QMISignalInfo {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_signal_info",
            start: { c in
                qmi_client_nas_get_signal_info(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_signal_info_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_signal_info_output_get_result,
            unref: qmi_message_nas_get_signal_info_output_unref,
            extract: { QMIReplies.signalInfo($0, .response) })
    }

    /// NAS Get Signal Strength (0x0020), asking for every measurement ModemManager asks for.
    func signalStrength() async throws -> QMISignalStrength {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_signal_strength",
            start: { c in
                let input = qmi_message_nas_get_signal_strength_input_new()
                let mask = QMI_NAS_SIGNAL_STRENGTH_REQUEST_RSSI.rawValue | QMI_NAS_SIGNAL_STRENGTH_REQUEST_ECIO.rawValue
                    | QMI_NAS_SIGNAL_STRENGTH_REQUEST_IO.rawValue | QMI_NAS_SIGNAL_STRENGTH_REQUEST_SINR.rawValue
                    | QMI_NAS_SIGNAL_STRENGTH_REQUEST_RSRQ.rawValue | QMI_NAS_SIGNAL_STRENGTH_REQUEST_LTE_SNR.rawValue
                    | QMI_NAS_SIGNAL_STRENGTH_REQUEST_LTE_RSRP.rawValue
                qmi_message_nas_get_signal_strength_input_set_request_mask(
                    input, QmiNasSignalStrengthRequest(mask), nil)
                qmi_client_nas_get_signal_strength(nas.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_nas_get_signal_strength_input_unref(input)
            },
            finish: { qmi_client_nas_get_signal_strength_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_signal_strength_output_get_result,
            unref: qmi_message_nas_get_signal_strength_output_unref,
            extract: {
                guard let s = QMIReplies.signalStrength($0) else {
                    throw ModemError("qmi_client_nas_get_signal_strength: reply lacks the Signal Strength TLV")
                }
                return s
            })
    }

    /// NAS Get Operator Name (0x0039): the network's name string (ONS), else its NITZ long name when sent as
    /// text, else the SIM's service provider name.
    func operatorName() async throws -> String? {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_operator_name",
            start: { c in
                qmi_client_nas_get_operator_name(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_operator_name_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_operator_name_output_get_result,
            unref: qmi_message_nas_get_operator_name_output_unref,
            extract: { o in
                var name: UnsafePointer<CChar>? = nil
                if qmi_message_nas_get_operator_name_output_get_operator_string_name(o, &name, nil) != 0,
                    let text = cBytes(name).flatMap(OperatorName.decode)
                {
                    return text
                }
                var encoding = QmiNasPlmnEncodingScheme(0)
                var initials = QmiNasPlmnNameCountryInitials(0)
                var spare1 = QmiNasPlmnNameSpareBits(0), spare2 = QmiNasPlmnNameSpareBits(0)
                var long: UnsafeMutablePointer<GArray>? = nil, short: UnsafeMutablePointer<GArray>? = nil
                // The network's own name (NITZ), GSM 7-bit or UCS-2: while roaming it names the visited network,
                // where the SIM's service provider name below would name the home one.
                if qmi_message_nas_get_operator_name_output_get_nitz_information(
                    o, &encoding, &initials, &spare1, &spare2, &long, &short, nil) != 0, let long {
                    let bytes = integers(long).map { UInt8(truncatingIfNeeded: $0) }
                    let text = encoding == QMI_NAS_PLMN_ENCODING_SCHEME_UCS2LE
                        ? OperatorName.decodeUCS2LE(bytes) : OperatorName.decode(bytes)
                    if let text { return text }
                }
                var condition = QmiNasNetworkNameDisplayCondition(0)
                if qmi_message_nas_get_operator_name_output_get_service_provider_name(o, &condition, &name, nil) != 0 {
                    return cBytes(name).flatMap(OperatorName.decode)
                }
                return nil
            })
    }

    /// UIM Get Card Status: nil when the modem has no UIM service; .some(nil) when the reply names no SIM state.
    func cardStatus() async throws -> SIMState?? {
        guard let uim = await loop.run({ self.uim }) else { return nil }
        let state: SIMState? = try await request(
            "qmi_client_uim_get_card_status",
            start: { c in
                qmi_client_uim_get_card_status(uim.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_uim_get_card_status_finish(uim.p, $0, $1) },
            result: qmi_message_uim_get_card_status_output_get_result,
            unref: qmi_message_uim_get_card_status_output_unref,
            extract: { QMIReplies.cardStatus($0) })
        return .some(state)
    }

    /// DMS UIM Get PIN Status: nil when the modem has no DMS service. UIM_UNINITIALIZED, NO_SIM and
    /// SIM_FILE_NOT_FOUND are answers about the SIM, not refusals.
    func pinStatus() async throws -> SIMState?? {
        guard let dms = await loop.run({ self.dms }) else { return nil }
        do {
            let state: SIMState? = try await request(
                "qmi_client_dms_uim_get_pin_status",
                start: { c in
                    qmi_client_dms_uim_get_pin_status(dms.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                },
                finish: { qmi_client_dms_uim_get_pin_status_finish(dms.p, $0, $1) },
                result: qmi_message_dms_uim_get_pin_status_output_get_result,
                unref: qmi_message_dms_uim_get_pin_status_output_unref,
                extract: { QMIReplies.pinStatus($0) })
            return .some(state)
        } catch let e as GLibError
            where e.matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED.rawValue))
        {
            return .some(.notInitialized)
        } catch let e as GLibError
            where e.matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_NO_SIM.rawValue))
            || e.matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_SIM_FILE_NOT_FOUND.rawValue))
        {
            return .some(.absent)
        }
    }

    /// A DMS string request (IMEI, IMSI, ICCID, MSISDN, model…): nil when the modem has no DMS or does not know.
    private func dmsString(
        _ name: String,
        start: @escaping @Sendable (GPtr<QmiClientDms>, GLibAsyncCall) -> Void,
        finish: @escaping @Sendable (GPtr<QmiClientDms>, OpaquePointer?, GErrorOut) -> OpaquePointer?,
        result: @escaping @Sendable (OpaquePointer?, GErrorOut) -> gboolean,
        unref: @escaping @Sendable (OpaquePointer?) -> Void,
        value: @escaping @Sendable (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<CChar>?>) -> gboolean
    ) async throws -> String? {
        guard let dms = await loop.run({ self.dms }) else { return nil }
        do {
            return try await request(
                name, start: { start(dms, $0) }, finish: { finish(dms, $0, $1) }, result: result, unref: unref,
                extract: { o in
                    var p: UnsafePointer<CChar>? = nil
                    return value(o, &p) != 0 ? cText(p) : nil
                })
        } catch let e as GLibError where e.isQMIProtocolError {
            logger.debug("DMS request failed", metadata: ["qmi.request": "\(name)", "error": "\(e)"])
            return nil
        }
    }

    /// IMEI, IMSI, ICCID and MSISDN, as far as the modem gives them.
    func identifiers() async throws -> ModemIdentifiers {
        var ids = ModemIdentifiers()
        ids.imei = try await dmsString(
            "qmi_client_dms_get_ids",
            start: { d, c in qmi_client_dms_get_ids(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData) },
            finish: { qmi_client_dms_get_ids_finish($0.p, $1, $2) },
            result: qmi_message_dms_get_ids_output_get_result, unref: qmi_message_dms_get_ids_output_unref,
            value: { qmi_message_dms_get_ids_output_get_imei($0, $1, nil) })
        ids.imsi = try await dmsString(
            "qmi_client_dms_uim_get_imsi",
            start: { d, c in
                qmi_client_dms_uim_get_imsi(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_dms_uim_get_imsi_finish($0.p, $1, $2) },
            result: qmi_message_dms_uim_get_imsi_output_get_result, unref: qmi_message_dms_uim_get_imsi_output_unref,
            value: { qmi_message_dms_uim_get_imsi_output_get_imsi($0, $1, nil) })
        ids.iccid = try await dmsString(
            "qmi_client_dms_uim_get_iccid",
            start: { d, c in
                qmi_client_dms_uim_get_iccid(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_dms_uim_get_iccid_finish($0.p, $1, $2) },
            result: qmi_message_dms_uim_get_iccid_output_get_result, unref: qmi_message_dms_uim_get_iccid_output_unref,
            value: { qmi_message_dms_uim_get_iccid_output_get_iccid($0, $1, nil) })
        ids.msisdn = try await dmsString(
            "qmi_client_dms_get_msisdn",
            start: { d, c in
                qmi_client_dms_get_msisdn(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_dms_get_msisdn_finish($0.p, $1, $2) },
            result: qmi_message_dms_get_msisdn_output_get_result, unref: qmi_message_dms_get_msisdn_output_unref,
            value: { qmi_message_dms_get_msisdn_output_get_msisdn($0, $1, nil) })
        return ids
    }

    /// Model, manufacturer and firmware revision (DMS Get Model / Get Manufacturer / Get Revision).
    func deviceInfo() async throws -> (model: String?, manufacturer: String?, firmware: String?) {
        let model = try await dmsString(
            "qmi_client_dms_get_model",
            start: { d, c in qmi_client_dms_get_model(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData) },
            finish: { qmi_client_dms_get_model_finish($0.p, $1, $2) },
            result: qmi_message_dms_get_model_output_get_result, unref: qmi_message_dms_get_model_output_unref,
            value: { qmi_message_dms_get_model_output_get_model($0, $1, nil) })
        let manufacturer = try await dmsString(
            "qmi_client_dms_get_manufacturer",
            start: { d, c in
                qmi_client_dms_get_manufacturer(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_dms_get_manufacturer_finish($0.p, $1, $2) },
            result: qmi_message_dms_get_manufacturer_output_get_result,
            unref: qmi_message_dms_get_manufacturer_output_unref,
            value: { qmi_message_dms_get_manufacturer_output_get_manufacturer($0, $1, nil) })
        let firmware = try await dmsString(
            "qmi_client_dms_get_revision",
            start: { d, c in
                qmi_client_dms_get_revision(d.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_dms_get_revision_finish($0.p, $1, $2) },
            result: qmi_message_dms_get_revision_output_get_result, unref: qmi_message_dms_get_revision_output_unref,
            value: { qmi_message_dms_get_revision_output_get_revision($0, $1, nil) })
        return (model, manufacturer, firmware)
    }

    // MARK: Reading everything

    /// Registration: System Info, or Serving System when the modem does not know System Info (remembered).
    func readRegistration(_ readings: QMIModemReadings) async throws -> QMIModemReadings {
        var readings = readings
        if await loop.run({ self.hasSystemInfo }) {
            do {
                readings.systemInfo = try await systemInfo()
                return readings
            } catch let e as GLibError where e.isQMIUnsupported {
                logger.debug("NAS Get System Info unsupported, using Get Serving System", metadata: ["error": "\(e)"])
                await loop.run { self.hasSystemInfo = false }
            }
        }
        readings.servingSystem = try await servingSystem()
        return readings
    }

    /// Signal: Signal Info, or Signal Strength when the modem does not know Signal Info (remembered).
    func readSignal(_ readings: QMIModemReadings) async throws -> QMIModemReadings {
        var readings = readings
        if await loop.run({ self.hasSignalInfo }) {
            do {
                readings.signalInfo = try await signalInfo()
                return readings
            } catch let e as GLibError where e.isQMIUnsupported {
                logger.debug("NAS Get Signal Info unsupported, using Get Signal Strength", metadata: ["error": "\(e)"])
                await loop.run { self.hasSignalInfo = false }
            }
        }
        readings.signalStrength = try await signalStrength()
        return readings
    }

    // MARK: Indications

    /// Asks the modem to announce registration and signal changes, and connects the handlers that copy them into
    /// `sink`. Registration: Register Indications (System Info, or Serving System events). Signal: Config Signal
    /// Info with thresholds at the bar boundaries, then Register Indications (Signal Info); when the modem has
    /// neither, NAS Set Event Report with RSSI thresholds. Returns what will be announced.
    func subscribe(
        _ sink: @escaping @Sendable (QMIIndication) -> Void, signal reporting: SignalReporting = .barBoundaries
    ) async -> IndicationSupport {
        await loop.run {
            self.sink = sink
            // A hang-up between the read and now had nobody to tell; tell the new subscriber.
            if self.calls.abortedWith != nil { sink(.removed) }
            self.connectIndicationHandlers()
        }
        var support = IndicationSupport.none
        let useSystemInfo = await loop.run { self.hasSystemInfo }
        do {
            try await registerIndications(systemInfo: useSystemInfo, servingSystem: !useSystemInfo, signalInfo: false)
            support.registration = true
        } catch {
            logger.debug("QMI registration indications unavailable", metadata: ["error": "\(error)"])
        }
        if await loop.run({ self.hasSignalInfo }) {
            do {
                try await configureSignalReports(reporting)
            } catch {
                logger.debug("QMI Config Signal Info failed", metadata: ["error": "\(error)"])
            }
            do {
                try await registerIndications(systemInfo: false, servingSystem: false, signalInfo: true)
                support.signal = true
            } catch {
                logger.debug("QMI Signal Info indications unavailable", metadata: ["error": "\(error)"])
            }
        }
        if !support.signal {
            do {
                try await setEventReportSignal()
                support.signal = true
            } catch {
                logger.debug("QMI Event Report signal thresholds unavailable", metadata: ["error": "\(error)"])
            }
        }
        return support
    }

    /// Loop thread.
    private func connectIndicationHandlers() {
        guard let nas else { return }
        let me = retainForHandlers()
        handlers.append((UnsafeMutableRawPointer(nas.p), CGLibShims_qmi_nas_connect_system_info(nas.p, { _, output, data in
            let s = Unmanaged<QMISession>.fromOpaque(data!).takeUnretainedValue()
            s.sink?(.systemInfo(QMIReplies.systemInfo(output, .indication)))
        }, me)))
        handlers.append((UnsafeMutableRawPointer(nas.p), CGLibShims_qmi_nas_connect_serving_system(nas.p, { _, output, data in
            let s = Unmanaged<QMISession>.fromOpaque(data!).takeUnretainedValue()
            if let serving = QMIReplies.servingSystem(output, .indication) {
                s.sink?(.servingSystem(serving))
            }
        }, me)))
        handlers.append((UnsafeMutableRawPointer(nas.p), CGLibShims_qmi_nas_connect_signal_info(nas.p, { _, output, data in
            let s = Unmanaged<QMISession>.fromOpaque(data!).takeUnretainedValue()
            s.sink?(.signalInfo(QMIReplies.signalInfo(output, .indication)))
        }, me)))
        handlers.append((UnsafeMutableRawPointer(nas.p), CGLibShims_qmi_nas_connect_event_report(nas.p, { _, output, data in
            let s = Unmanaged<QMISession>.fromOpaque(data!).takeUnretainedValue()
            if let signal = QMIReplies.eventReportSignal(output) { s.sink?(.signalStrength(signal)) }
        }, me)))
    }

    private func registerIndications(systemInfo: Bool, servingSystem: Bool, signalInfo: Bool) async throws {
        let nas = try await requireNAS()
        try await request(
            "qmi_client_nas_register_indications",
            start: { c in
                let input = qmi_message_nas_register_indications_input_new()
                if systemInfo { qmi_message_nas_register_indications_input_set_system_info(input, 1, nil) }
                if servingSystem { qmi_message_nas_register_indications_input_set_serving_system_events(input, 1, nil) }
                if signalInfo { qmi_message_nas_register_indications_input_set_signal_info(input, 1, nil) }
                qmi_client_nas_register_indications(nas.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_nas_register_indications_input_unref(input)
            },
            finish: { qmi_client_nas_register_indications_finish(nas.p, $0, $1) },
            result: qmi_message_nas_register_indications_output_get_result,
            unref: qmi_message_nas_register_indications_output_unref,
            extract: { _ in () })
    }

    /// Config Signal Info (0x0050) with these thresholds (default: the signal policy's bar boundaries).
    func configSignalInfo(_ custom: QMISignalThresholds? = nil) async throws {
        let nas = try await requireNAS()
        let thresholds = custom ?? signalThresholds
        try await request(
            "qmi_client_nas_config_signal_info",
            start: { c in
                let input = qmi_message_nas_config_signal_info_input_new()
                func array<T>(_ values: [T]) -> UnsafeMutablePointer<GArray> {
                    let a = g_array_sized_new(0, 0, guint(MemoryLayout<T>.stride), guint(values.count))!
                    values.withUnsafeBufferPointer { _ = g_array_append_vals(a, $0.baseAddress, guint(values.count)) }
                    return a
                }
                // A measure the policy does not use gets no threshold list: the modem need not report on it.
                var arrays: [UnsafeMutablePointer<GArray>] = []
                func add<T>(_ values: [T], _ set: (UnsafeMutablePointer<GArray>) -> gboolean) {
                    guard !values.isEmpty else { return }
                    let a = array(values)
                    _ = set(a)
                    arrays.append(a)
                }
                add(thresholds.rssi) { qmi_message_nas_config_signal_info_input_set_rssi_threshold(input, $0, nil) }
                add(thresholds.rsrp) { qmi_message_nas_config_signal_info_input_set_rsrp_threshold(input, $0, nil) }
                add(thresholds.rsrq) { qmi_message_nas_config_signal_info_input_set_rsrq_threshold(input, $0, nil) }
                add(thresholds.lteSNR) { qmi_message_nas_config_signal_info_input_set_lte_snr_threshold(input, $0, nil) }
                for a in arrays { g_array_unref(a) }
                qmi_client_nas_config_signal_info(nas.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_nas_config_signal_info_input_unref(input)
            },
            finish: { qmi_client_nas_config_signal_info_finish(nas.p, $0, $1) },
            result: qmi_message_nas_config_signal_info_output_get_result,
            unref: qmi_message_nas_config_signal_info_output_unref,
            extract: { _ in () })
    }

    private func setEventReportSignal() async throws {
        let nas = try await requireNAS()
        try await request(
            "qmi_client_nas_set_event_report",
            start: { c in
                let input = qmi_message_nas_set_event_report_input_new()
                let values = QMISignalThresholds.eventReportRSSI
                let a = g_array_sized_new(0, 0, 1, guint(values.count))!
                values.withUnsafeBufferPointer { _ = g_array_append_vals(a, $0.baseAddress, guint(values.count)) }
                qmi_message_nas_set_event_report_input_set_signal_strength_indicator(input, 1, a, nil)
                g_array_unref(a)
                qmi_client_nas_set_event_report(nas.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_nas_set_event_report_input_unref(input)
            },
            finish: { qmi_client_nas_set_event_report_finish(nas.p, $0, $1) },
            result: qmi_message_nas_set_event_report_output_get_result,
            unref: qmi_message_nas_set_event_report_output_unref,
            extract: { _ in () })
    }
}
