// Observing a QMI modem's data sessions without owning them: WDS clients of our own, one per IP family for every data
// channel a watched link carries, each bound to the link's channel before anything else.
//
// The session belongs to the modem's data channel (Qualcomm's WDS header: Stop Network ends it only when no other
// control point uses it; ModemManager mm-bearer-qmi.c), and only clients bound to that channel and family see it:
// a fresh client sits on mux id 0 and IPv4, so an IPv6-only session or a QMAP mux link would read "disconnected" to
// it. So, per channel and family, as ModemManager's connect sequence does for its own clients: Bind Mux Data Port
// (or Bind Data Port on BAM-DMUX) as the client's first message, Set IP Family, then Get Packet Service Status and
// its indication. Errors, timeouts and refusals say nothing about the session: that client reads unknown.
//
// Set IP Family refused (old Gobi firmware answers NotSupported or InvalidQmiCommand): a WDS client is IPv4 until
// it is told otherwise, so the IPv4 client keeps observing, as ModemManager's bearer goes on after logging the error
// (mm-bearer-qmi.c, set_ip_family_ready). The IPv6 client cannot become one: it is shown as unable to observe, is
// not asked again, and is left out of the channel's verdict (`DataClientReading.observing`).

import CGLibShims
import ReachCore
import ReachGLib
import ReachLog

/// A data-session change a modem announced.
enum DataSessionIndication: Sendable {
    /// WDS Packet Service Status on one observer client: channel index, family, QmiWdsConnectionStatus.
    case qmi(channel: Int, family: AddressFamily, status: Int)
    /// MBIM Connect notification: session id and MBIM_ACTIVATION_STATE.
    case mbim(sessionID: Int, activation: UInt32)
}

/// The WDS observer clients of one QMI session.
final class QMIDataObserver: @unchecked Sendable {
    // @unchecked: `clients`, `sink` and `gone` are touched only on GLibLoop.shared's thread.

    /// Handler user data: which client an indication came for. Retained while its handler is connected.
    final class HandlerContext {
        weak var observer: QMIDataObserver?
        let channel: Int
        let family: AddressFamily
        init(_ observer: QMIDataObserver, channel: Int, family: AddressFamily) {
            self.observer = observer
            self.channel = channel
            self.family = family
        }
    }

    struct Client {
        let channel: Int
        let family: AddressFamily
        var wds: GPtr<QmiClientWds>?
        var handler: (id: gulong, context: Unmanaged<HandlerContext>)?
        /// Why this client cannot observe at all (the modem refused its IP family); it is not set up again.
        var cannotObserve: String?
    }

    /// The modem refused what makes a client an observer of its family.
    struct CannotObserve: Error {
        var reason: String
    }

    let session: QMISession
    let links: [DataLink]
    private let loop = GLibLoop.shared
    private let logger: Logger
    private var clients: [Client] = []
    private var sink: (@Sendable (DataSessionIndication) -> Void)?
    /// The modem has no WDS service: there is no data service to ask.
    private var noWDS = false
    private var closed = false

    init(session: QMISession, links: [DataLink], logger: Logger) {
        self.session = session
        self.links = links
        self.logger = logger
        for (i, link) in links.enumerated() where link.error == nil {
            for family in [AddressFamily.ipv4, .ipv6] { clients.append(Client(channel: i, family: family)) }
        }
    }

    /// Sets up the clients not set up yet, then asks each for its session. Per-client failures become unknown
    /// readings; the port going away (or cancellation) is thrown. Empty when the modem has no WDS service.
    func read() async throws -> [DataChannel] {
        if await loop.run({ self.noWDS }) { return [] }
        var readings: [Int: DataClientReading] = [:]
        var silent: String?
        let count = await loop.run { self.clients.count }
        for i in 0..<count {
            let (family, existing, cannot) = await loop.run {
                (self.clients[i].family, self.clients[i].wds, self.clients[i].cannotObserve)
            }
            if let cannot {
                readings[i] = DataClientReading(family: family, state: .unknown, error: cannot, observing: false)
                continue
            }
            if let silent {
                readings[i] = DataClientReading(family: family, state: .unknown, error: "not asked: \(silent)")
                continue
            }
            do {
                var wds = existing
                if wds == nil { wds = try await setUp(i) }
                let status = try await packetServiceStatus(wds!)
                readings[i] = DataClientReading(family: family, state: DataSessionState(qmiConnectionStatus: status))
            } catch let e as CannotObserve {
                await loop.run { self.clients[i].cannotObserve = e.reason }
                readings[i] = DataClientReading(family: family, state: .unknown, error: e.reason, observing: false)
            } catch let e as GLibError where Self.meansNoWDS(e) {
                logger.debug("QMI modem has no WDS service", metadata: ["error": "\(e)"])
                await loop.run { self.noWDS = true }
                return []
            } catch let e as GLibError where e.kind == .cancelled || e.isGIOClosed {
                throw e
            } catch let e as GLibError where e.kind == .timedOut {
                readings[i] = DataClientReading(family: family, state: .unknown, error: e.description)
                silent = "WDS did not answer (\(e.call))"
            } catch {
                readings[i] = DataClientReading(family: family, state: .unknown, error: ModemChannel.describe(error))
            }
        }
        return channels(readings)
    }

    /// The modem has no WDS service: CTL Allocate CID refused the service type, or libqmi found no WDS in the
    /// modem's version list.
    static func meansNoWDS(_ e: GLibError) -> Bool {
        e.matches(qmi_protocol_error_quark, Int32(QMI_PROTOCOL_ERROR_INVALID_SERVICE_TYPE.rawValue))
            || (e.call.hasPrefix("qmi_device_allocate_client") && e.matches(qmi_core_error_quark, Int32(QMI_CORE_ERROR_UNSUPPORTED.rawValue)))
    }

    /// The readings as channels, one per link (a link that cannot be observed says why).
    private func channels(_ readings: [Int: DataClientReading]) -> [DataChannel] {
        let all = clients
        return links.enumerated().map { i, link in
            DataChannel(
                interface: link.interface, muxID: link.muxID,
                clients: all.indices.filter { all[$0].channel == i }.compactMap { readings[$0] }, error: link.error)
        }
    }

    /// One client: allocate, bind to the link's channel (the first message), set the family, connect the indication.
    private func setUp(_ i: Int) async throws -> GPtr<QmiClientWds> {
        let (channel, family) = await loop.run { (self.clients[i].channel, self.clients[i].family) }
        let link = links[channel]
        let client = try await session.allocate(QMI_SERVICE_WDS, "WDS")
        let wds = GPtr(CGLibShims_QMI_CLIENT_WDS(client.p))
        do {
            if let sio = link.sioPort {
                try await bindDataPort(wds, sio)
            } else if let mux = link.muxID {
                try await bindMuxDataPort(wds, mux: mux, endpoint: link.endpoint)
            }
            do {
                try await setIPFamily(wds, family)
            } catch let e as GLibError where e.isQMIProtocolError {
                guard family == .ipv4 else {
                    throw CannotObserve(reason: "cannot observe \(family.rawValue): the modem refused its IP family (\(e))")
                }
                logger.debug("Set IP Family refused; the client stays IPv4", metadata: ["error": "\(e)"])
            }
        } catch {
            await session.release(client)
            throw error
        }
        await loop.run {
            self.clients[i].wds = wds
            if self.sink != nil { self.connectHandler(i) }
        }
        return wds
    }

    private func packetServiceStatus(_ wds: GPtr<QmiClientWds>) async throws -> Int {
        try await session.request(
            "qmi_client_wds_get_packet_service_status",
            start: { c in
                qmi_client_wds_get_packet_service_status(wds.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_wds_get_packet_service_status_finish(wds.p, $0, $1) },
            result: qmi_message_wds_get_packet_service_status_output_get_result,
            unref: qmi_message_wds_get_packet_service_status_output_unref,
            extract: { o in
                var status = QmiWdsConnectionStatus(0)
                guard qmi_message_wds_get_packet_service_status_output_get_connection_status(o, &status, nil) != 0 else {
                    throw ModemError("qmi_client_wds_get_packet_service_status: reply lacks the Connection Status TLV")
                }
                return Int(status.rawValue)
            })
    }

    private func setIPFamily(_ wds: GPtr<QmiClientWds>, _ family: AddressFamily) async throws {
        let value = family == .ipv4 ? QMI_WDS_IP_FAMILY_IPV4 : QMI_WDS_IP_FAMILY_IPV6
        try await session.request(
            "qmi_client_wds_set_ip_family",
            start: { c in
                let input = qmi_message_wds_set_ip_family_input_new()
                qmi_message_wds_set_ip_family_input_set_preference(input, value, nil)
                qmi_client_wds_set_ip_family(wds.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_wds_set_ip_family_input_unref(input)
            },
            finish: { qmi_client_wds_set_ip_family_finish(wds.p, $0, $1) },
            result: qmi_message_wds_set_ip_family_output_get_result,
            unref: qmi_message_wds_set_ip_family_output_unref,
            extract: { _ in () })
    }

    private func bindMuxDataPort(_ wds: GPtr<QmiClientWds>, mux: Int, endpoint: DataEndpoint?) async throws {
        try await session.request(
            "qmi_client_wds_bind_mux_data_port",
            start: { c in
                let input = qmi_message_wds_bind_mux_data_port_input_new()
                if let endpoint {
                    qmi_message_wds_bind_mux_data_port_input_set_endpoint_info(
                        input, QmiDataEndpointType(endpoint.type), endpoint.interfaceNumber, nil)
                }
                qmi_message_wds_bind_mux_data_port_input_set_mux_id(input, UInt8(clamping: mux), nil)
                qmi_client_wds_bind_mux_data_port(wds.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_wds_bind_mux_data_port_input_unref(input)
            },
            finish: { qmi_client_wds_bind_mux_data_port_finish(wds.p, $0, $1) },
            result: qmi_message_wds_bind_mux_data_port_output_get_result,
            unref: qmi_message_wds_bind_mux_data_port_output_unref,
            extract: { _ in () })
    }

    private func bindDataPort(_ wds: GPtr<QmiClientWds>, _ sio: UInt16) async throws {
        try await session.request(
            "qmi_client_wds_bind_data_port",
            start: { c in
                let input = qmi_message_wds_bind_data_port_input_new()
                qmi_message_wds_bind_data_port_input_set_data_port(input, QmiSioPort(UInt32(sio)), nil)
                qmi_client_wds_bind_data_port(wds.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_wds_bind_data_port_input_unref(input)
            },
            finish: { qmi_client_wds_bind_data_port_finish(wds.p, $0, $1) },
            result: qmi_message_wds_bind_data_port_output_get_result,
            unref: qmi_message_wds_bind_data_port_output_unref,
            extract: { _ in () })
    }

    // MARK: Indications

    /// Connects the Packet Service Status handler of every client set up (and of those set up later).
    func subscribe(_ sink: @escaping @Sendable (DataSessionIndication) -> Void) async {
        await loop.run {
            self.sink = sink
            for i in self.clients.indices where self.clients[i].wds != nil { self.connectHandler(i) }
        }
    }

    /// Loop thread.
    private func connectHandler(_ i: Int) {
        guard let wds = clients[i].wds, clients[i].handler == nil else { return }
        let context = Unmanaged.passRetained(HandlerContext(self, channel: clients[i].channel, family: clients[i].family))
        let id = CGLibShims_qmi_wds_connect_packet_service_status(wds.p, { _, output, data in
            let ctx = Unmanaged<HandlerContext>.fromOpaque(data!).takeUnretainedValue()
            var status = QmiWdsConnectionStatus(0)
            var reconfigure: gboolean = 0
            guard let observer = ctx.observer,
                qmi_indication_wds_packet_service_status_output_get_connection_status(output, &status, &reconfigure, nil) != 0
            else { return }
            observer.sink?(.qmi(channel: ctx.channel, family: ctx.family, status: Int(status.rawValue)))
        }, context.toOpaque())
        clients[i].handler = (id, context)
    }

    /// Applies an indication to the readings of its channel.
    static func apply(_ channel: Int, _ family: AddressFamily, _ status: Int, to channels: inout [DataChannel]) {
        guard channels.indices.contains(channel) else { return }
        let reading = DataClientReading(family: family, state: DataSessionState(qmiConnectionStatus: status))
        if let j = channels[channel].clients.firstIndex(where: { $0.family == family }) {
            channels[channel].clients[j] = reading
        } else {
            channels[channel].clients.append(reading)
        }
    }

    /// Disconnects the handlers and releases every client id. Safe to call more than once.
    func close() async {
        let taken: [GPtr<QmiClientWds>]? = await loop.run {
            guard !self.closed else { return nil }
            self.closed = true
            self.sink = nil
            var out: [GPtr<QmiClientWds>] = []
            for i in self.clients.indices {
                if let wds = self.clients[i].wds {
                    if let h = self.clients[i].handler {
                        g_signal_handler_disconnect(UnsafeMutableRawPointer(wds.p), h.id)
                        h.context.release()
                    }
                    out.append(wds)
                }
                self.clients[i].wds = nil
                self.clients[i].handler = nil
            }
            return out
        }
        for wds in taken ?? [] { await session.release(GPtr(CGLibShims_QMI_CLIENT(wds.p))) }
    }
}
