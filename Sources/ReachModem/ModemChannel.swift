// One modem behind one control port, whichever its protocol: open, read everything, take indications, poll what
// the modem does not announce, close. Both `ModemReader` (one read for `reach status`) and `ModemMonitor` (a stream
// for the agent) drive modems through this.

import CGLibShims
import ReachCore
import ReachGLib
import ReachLog

/// Something that happened to a channel after it was opened.
enum ChannelEvent: Sendable {
    case qmi(QMIIndication)
    case mbim(MBIMIndication)
    /// A data-session indication from an observer client (QMI WDS).
    case dataSession(DataSessionIndication)
    /// Time to poll what the modem does not announce.
    case poll
    /// Time to read the cells again (band, channel, carriers and neighbours are never announced).
    case refreshCells
    /// Time to poll the signal alone (a live view over a modem that cannot announce it).
    case pollSignal
    /// Time to ask the data sessions again (indications can be late or missing; after a registration change).
    case requery
}

actor ModemChannel {
    private enum Session {
        case qmi(QMISession)
        case mbim(MBIMSession)
    }

    let spec: ModemPortSpec
    private let session: Session
    let logger: Logger
    private let quirks: ModemQuirks
    private(set) var state: ModemState
    private var qmi = QMIModemReadings()
    private var mbim = MBIMModemReadings()
    private var readStaticInfo = false
    /// Cell readings (ModemChannelCells.swift).
    var qmiCells = QMICellSources()
    var mbimCells: MBIMBaseStations?
    /// Optional requests the modem answered "not supported" to, with that answer: not sent again on this channel
    /// (ModemManager remembers the same, e.g. `dms_uim_deprecated` in mm-broadband-modem-qmi.c).
    var unsupportedRequests: [String: String] = [:]
    /// Whether the last reading's request went unanswered: one silent request is that request's (firmware that
    /// never answers one message), two in a row are the modem's.
    /// Reset by `step`: each read starts with the modem taken as answering.
    private var lastReadingTimedOut = false
    /// The data-session observers (QMIDataSession.swift, MBIMDataSession.swift) and what they read.
    private var qmiData: QMIDataObserver?
    private var mbimData: MBIMDataObserver?
    private var dataChannels: [DataChannel] = []
    /// Set when an indication changed the registration: the caller should ask the data sessions again.
    private var requeryWanted = false

    private init(
        spec: ModemPortSpec, protocol p: ModemProtocol, session: Session, logger: Logger, quirks: ModemQuirks,
        links: [DataLink]
    ) {
        self.spec = spec
        self.session = session
        self.logger = logger
        self.quirks = quirks
        var state = ModemState(device: spec.path, protocol: p)
        state.interface = spec.interface
        state.driver = spec.driver
        self.state = state
        switch session {
        case let .qmi(q): qmiData = QMIDataObserver(session: q, links: links, logger: logger)
        case let .mbim(m): mbimData = MBIMDataObserver(session: m, links: links)
        }
    }

    /// A state for a port that could not be opened or read at all; what else holds the port is named.
    static func failedState(_ spec: ModemPortSpec, _ error: Error, present: Bool? = nil) -> ModemState {
        var state = ModemState(device: spec.path, protocol: spec.protocol ?? .qmi)
        state.interface = spec.interface
        state.driver = spec.driver
        let fault = ModemChannel.fault(of: error, path: spec.path)
        state.fail(ModemChannel.describe(error), fault)
        state.present = present ?? (fault.kind != .gone)
        PortHolders.noteInError(&state, path: spec.path)
        return state
    }

    /// Opens the port named by `spec` (its protocol must be known). When the open fails and sysfs says the port's
    /// driver speaks the other protocol, the failure is that (`wrongProtocol`), whatever the library said.
    static func open(_ spec: ModemPortSpec, options: ModemReadOptions, quirks: ModemQuirks) async throws -> ModemChannel {
        do {
            return try await openAsNamed(spec, options: options, quirks: quirks)
        } catch {
            let byDriver = ModemDiscovery(sysfsRoot: options.sysfsRoot).lookUp(ModemPortSpec(path: spec.path)).spec.protocol
            guard let p = spec.protocol, let byDriver, byDriver != p, !Task.isCancelled else { throw error }
            throw ModemError(
                "\(describe(error)) (the port's driver speaks \(byDriver.rawValue.uppercased()), not \(p.rawValue.uppercased()))",
                ModemFault(.wrongProtocol))
        }
    }

    private static func openAsNamed(
        _ spec: ModemPortSpec, options: ModemReadOptions, quirks: ModemQuirks
    ) async throws -> ModemChannel {
        // The node first: a port that is gone is gone whether or not its protocol was known (a port named without
        // one, unplugged, reads as absent rather than as a port of unknown kind).
        switch DeviceNode.check(spec.path) {
        case .missing: throw PortGone(message: "no such device node")
        case .notCharacterDevice: throw ModemError("not a character device")
        case .characterDevice: break
        }
        guard let p = spec.protocol else {
            throw ModemError("protocol unknown (name the port as PATH:qmi or PATH:mbim)")
        }
        // The libraries are opened with the first modem of their protocol (GLibLibraries), so a board without one of
        // them runs and says which; the port is checked first, so a missing modem reads as gone either way.
        if let why = GLibLibraries.open(p == .qmi ? .qmi : .mbim) {
            throw ModemError("\(p == .qmi ? "libqmi-glib" : "libmbim-glib") cannot be loaded: \(why)")
        }
        var logger = options.logger
        logger[metadataKey: "modem.device"] = "\(spec.path)"
        let links = DataLinkMap.links(for: spec, protocol: p, sysfsRoot: options.sysfsRoot)
        let proxyName = p == .qmi ? "qmi-proxy" : "mbim-proxy"
        var plan = AccessPlan.decide(
            options.access, proxyName: proxyName, euid: geteuid(), listening: ProcFacts.listening(proxyName),
            installed: ProcFacts.proxyInstalled(proxyName))
        func session(proxy: Bool) async throws -> Session {
            switch p {
            case .qmi:
                return .qmi(try await QMISession.open(
                    path: spec.path, timeout: options.requestTimeout, proxy: proxy, logger: logger,
                    signalThresholds: QMISignalThresholds(options.signalPolicy)))
            case .mbim:
                return .mbim(try await MBIMSession.open(
                    path: spec.path, timeout: options.requestTimeout, proxy: proxy, mbimex: quirks.mbimex != .none,
                    logger: logger))
            }
        }
        if plan.proxy, let why = await ProxyLauncher.ensure(proxyName) {
            logger.debug("Proxy not started", metadata: ["proxy": "\(proxyName)", "why": "\(why)"])
            if options.access == .auto {
                plan = AccessPlan(proxy: false, reason: "\(why); opened directly")
            }
        }
        let opened: Session
        do {
            opened = try await session(proxy: plan.proxy)
        } catch let error where !plan.proxy && plan.reason != nil {
            // Say why the port was opened directly: that is often why it failed (a user the proxy would refuse).
            throw ModemError("\(describe(error)) (\(plan.reason!))", fault(of: error, path: spec.path))
        } catch let error where plan.proxy && !Task.isCancelled && ProxyWatch.isTimeout(error) && geteuid() == 0
            && ProcFacts.listening(proxyName)
        {
            // A proxy that accepted us and let the open time out: named, and replaced when it is ours alone. (As
            // another user, a root mbim-proxy's silence is its refusal, which `proxyFailure` explains.)
            let silence = ProxySilence(name: proxyName, waitedMs: Int(options.requestTimeout.milliseconds))
            opened = try await afterSilence(silence, logger: logger) { try await session(proxy: true) }
        } catch let error where plan.proxy && !Task.isCancelled && DeviceNode.check(spec.path) != .missing {
            // (A proxy that hangs up on us looks like a port that went away; the node is still there.)
            // `auto` falls back to direct only when no proxy could be started; a proxy that runs and fails us is
            // someone else's (ModemManager's), and opening the port beside it would steal its replies.
            guard options.access == .auto, !ProcFacts.listening(proxyName) else {
                // As another user than the proxy serves, its failing us is its refusal; as root, it is what it is.
                throw ModemError(
                    proxyFailure(error, proxyName: proxyName),
                    geteuid() != 0 ? ModemFault(.proxyRefused) : fault(of: error, path: spec.path))
            }
            logger.debug("No proxy could be started; opening the port directly", metadata: ["error": "\(error)"])
            plan = AccessPlan(proxy: false, reason: "\(proxyName) could not be started (\(describe(error))); opened directly")
            do {
                opened = try await session(proxy: false)
            } catch {
                throw ModemError("\(describe(error)) (\(plan.reason!))", fault(of: error, path: spec.path))
            }
        }
        let channel = ModemChannel(spec: spec, protocol: p, session: opened, logger: logger, quirks: quirks, links: links)
        await channel.noteAccess(plan, protocol: p)
        return channel
    }

    /// After a proxied open got no answer in time: the proxy named with its pid and CPU time, and, when reach started
    /// it and nobody else is connected to it, ended and started again, then the open tried once more. A modem worker
    /// cannot look into other processes: it passes the silence to its parent, which does the same
    /// (`WorkerRun.withProxyNote`), and this open fails with the plain text.
    private static func afterSilence(
        _ silence: ProxySilence, logger: Logger, retry: () async throws -> Session
    ) async throws -> Session {
        guard PortHolders.scanHere else {
            ProxyWatch.reportToParent?(silence)
            throw ModemError(silence.text(subject: silence.name), silence.fault)
        }
        let outcome = await ProxyWatch.answer(silence)
        logger.warning("Proxy did not answer", metadata: ["proxy": "\(silence.name)", "outcome": "\(outcome.note)"])
        guard outcome.restarted else { throw ModemError(outcome.note, outcome.fault(after: silence)) }
        do {
            return try await retry()
        } catch {
            throw ModemError("\(describe(error)) (\(outcome.note))", silence.fault)
        }
    }

    /// Why a proxied open failed, with the cause when the proxy serves only root and we are not root.
    static func proxyFailure(_ error: Error, proxyName: String) -> String {
        var text = describe(error)
        let euid = geteuid()
        if euid != 0 {
            text += "; \(ProcFacts.describeProxy(proxyName)) refused us: the proxy serves only root (or the user"
                + " libqmi/libmbim were built for) and reach runs as uid \(euid)"
        }
        return text
    }

    /// Records how the port was opened, and who else holds it when that matters: a direct opener beside anything,
    /// or another direct opener beside the proxy.
    private func noteAccess(_ plan: AccessPlan, protocol p: ModemProtocol) {
        state.access = plan.proxy ? .proxy : .direct
        state.accessReason = plan.reason
        PortHolders.noteInAccess(&state, path: spec.path, protocol: p)
    }

    // MARK: Reading

    /// Reads everything: registration, signal, SIM, then (once) operator name, identifiers and device info.
    /// A request the modem refuses (or answers unusably) makes unknown only its own reading, listed in
    /// `state.unread`, and the others are still read; a transport failure (no answer, port gone) stops the read and
    /// is `state.error`. `state` holds whatever was learnt either way.
    @discardableResult
    func readAll() async -> Bool {
        state.clearFailure()
        state.unread = []
        return await step { s in
            switch s {
            case let .qmi(q):
                try await self.guarded(.registration) { self.qmi = try await q.readRegistration(self.qmi) }
                try await self.guarded(.signal) { self.qmi = try await q.readSignal(self.qmi) }
                try await self.guarded(.sim) { try await self.readQMISIM(q) }
                try await self.readQMICells(q)
                try await self.readQMIStatic(q)
            case let .mbim(m):
                if !self.readStaticInfo { try await self.readMBIMCaps(m) }
                try await self.readMBIMNetwork(m)
                try await self.guarded(.signal) { self.mbim.signal = try await m.signalState() }
                try await self.guarded(.sim) { try await self.readMBIMSIM(m) }
                try await self.readMBIMCells(m)
                self.readStaticInfo = true
            }
            try await self.readDataSessions()
        }
    }

    /// Asks the data sessions again (the re-query timer, a registration change). False when the modem stopped
    /// answering or went away.
    @discardableResult
    func requery() async -> Bool {
        await step { _ in try await self.readDataSessions() }
    }

    /// Whether an indication since the last call changed the registration (so the sessions should be asked again).
    func takeRequeryRequest() -> Bool {
        defer { requeryWanted = false }
        return requeryWanted
    }

    /// Whether the modem has data sessions to ask.
    var observesDataSessions: Bool { qmiData != nil || mbimData != nil }

    /// The observers' reading: each failure is that observer's unknown, never the modem's error; a transport failure
    /// is thrown.
    private func readDataSessions() async throws {
        if let qmiData { dataChannels = try await qmiData.read() }
        if let mbimData { dataChannels = try await mbimData.read() }
    }

    /// Re-reads only what the modem does not announce (and the cells when `cells`). False when the modem stopped
    /// answering or went away.
    @discardableResult
    func poll(_ support: IndicationSupport, cells: Bool = false) async -> Bool {
        await step { s in
            switch s {
            case let .qmi(q):
                if !support.registration {
                    try await self.guarded(.registration) { self.qmi = try await q.readRegistration(self.qmi) }
                }
                if !support.signal { try await self.guarded(.signal) { self.qmi = try await q.readSignal(self.qmi) } }
                if !support.sim { try await self.guarded(.sim) { try await self.readQMISIM(q) } }
                if cells { try await self.readQMICells(q) }
            case let .mbim(m):
                if !support.registration { try await self.readMBIMNetwork(m) }
                if !support.signal { try await self.guarded(.signal) { self.mbim.signal = try await m.signalState() } }
                if !support.sim { try await self.guarded(.sim) { try await self.readMBIMSIM(m) } }
                if cells { try await self.readMBIMCells(m) }
            }
        }
    }

    private func readQMIStatic(_ q: QMISession) async throws {
        if qmi.systemInfo != nil && qmi.servingSystem?.operatorName == nil {
            try await guarded(.operatorName) {
                // Operator name is a nicety: a modem that does not know the request is not an error.
                do {
                    self.qmi.operatorName = try await q.operatorName()
                } catch let e as GLibError where e.isQMIProtocolError {
                    self.logger.debug("QMI operator name unavailable", metadata: ["error": "\(e)"])
                }
            }
        }
        guard !readStaticInfo else { return }
        try await guarded(.identifiers) { self.state.identifiers = try await q.identifiers() }
        try await guarded(.deviceInfo) {
            let info = try await q.deviceInfo()
            self.state.model = info.model
            self.state.manufacturer = info.manufacturer
            self.state.firmware = info.firmware
        }
        readStaticInfo = true
    }

    private func readMBIMCaps(_ m: MBIMSession) async throws {
        do {
            let caps = try await m.deviceCaps()
            state.identifiers.imei = caps.deviceID
            state.firmware = caps.firmware
            state.model = caps.hardware
            if caps.customDataClass == nil, let quirk = quirks.customDataClass {
                await m.useCustomDataClass(quirk, capsDataClass: caps.dataClass)
            }
        } catch let e as GLibError where e.isMBIMStatusError {
            logger.debug("MBIM Device Caps unavailable", metadata: ["error": "\(e)"])
            if let quirk = quirks.customDataClass {
                await m.useCustomDataClass(quirk, capsDataClass: MBIMDataClass.custom.rawValue)
            }
        }
        mbim.network?.customDataClass = await m.customDataClass
    }

    /// Register State, then Packet Service, each kept as soon as it is read (a Packet Service that never comes
    /// still leaves the registration known). A device that refuses Packet Service (some do while detached) leaves
    /// it unread: Register State's data classes decide then.
    private func readMBIMNetwork(_ m: MBIMSession) async throws {
        try await guarded(.registration) { self.mbim.network = try await m.registration() }
        guard mbim.network != nil else { return }
        try await guarded(.packetService) {
            let packet = try await m.packetService()
            self.mbim.network?.apply(packet)
        }
    }

    /// The SIM from Subscriber Ready Status; a modem that does not implement it (NoDeviceSupport) is not asked
    /// again, and its SIM stays unknown.
    private func readMBIMSIM(_ m: MBIMSession) async throws {
        let (sim, subscriber) = try await unlessUnsupported("basic_connect:subscriber_ready_status") { try await m.sim() }
        mbim.sim = sim
        state.identifiers.imsi = subscriber.imsi ?? state.identifiers.imsi
        state.identifiers.iccid = subscriber.iccid ?? state.identifiers.iccid
        state.identifiers.msisdn = subscriber.numbers.first ?? state.identifiers.msisdn
    }

    /// The SIM, from UIM Get Card Status where the modem has a UIM service, else (or when that is refused) DMS UIM
    /// Get PIN Status. ModemManager asks in the other order and turns to UIM for good once DMS refuses
    /// (mm-broadband-modem-qmi.c, load_unlock_required); UIM first suits current modules, whose DMS UIM requests are
    /// deprecated, and either way a refused request is not sent again. Neither answering is a refusal of the
    /// reading: the SIM is unknown, and nothing else is.
    private func readQMISIM(_ q: QMISession) async throws {
        var refusal: Error?
        let requests: [(String, () async throws -> SIMState??)] = [
            ("uim:get_card_status", { try await q.cardStatus() }), ("dms:uim_get_pin_status", { try await q.pinStatus() }),
        ]
        for (name, ask) in requests {
            do {
                // nil: the modem has no such service; .some(nil): a reply without a SIM state in it.
                guard let answer = try await unlessUnsupported(name, ask) else { continue }
                qmi.sim = answer
                return
            } catch let e as GLibError where e.isQMIProtocolError {
                refusal = e
            } catch let e as ModemError {
                refusal = e
            }
        }
        if let refusal { throw refusal }
        qmi.sim = nil
    }

    /// Runs an optional request, unless the modem said before that it does not support it (then throws that
    /// answer again without asking); a "not supported" answer is remembered.
    func unlessUnsupported<T: Sendable>(_ name: String, _ body: () async throws -> T) async throws -> T {
        if let earlier = unsupportedRequests[name] { throw ModemError("\(earlier) (remembered; not asked again)") }
        do {
            return try await body()
        } catch let e as GLibError where e.isQMIUnsupported || e.isMBIMUnsupported {
            unsupportedRequests[name] = ModemChannel.describe(e)
            logger.debug("Modem does not support the request", metadata: ["request": "\(name)", "error": "\(e)"])
            throw e
        }
    }

    /// Runs the request(s) behind one reading. A refusal, an unusable answer or one unanswered request makes that
    /// reading unknown and is listed in `state.unread` (the first reason kept); anything else (a second silent
    /// request in a row, cancellation, port gone) is rethrown to end the read.
    private func guarded(_ reading: UnreadReading.Reading, _ body: () async throws -> Void) async throws {
        state.unread.removeAll { $0.reading == reading }
        let silentBefore = lastReadingTimedOut
        lastReadingTimedOut = false
        do {
            try await body()
        } catch let e as GLibError where e.kind == .timedOut && !silentBefore {
            logger.debug("Modem request unanswered", metadata: ["modem.reading": "\(reading.rawValue)", "error": "\(e)"])
            lastReadingTimedOut = true
            forget(reading)
            state.noteUnread(reading, ModemChannel.describe(e))
        } catch let e as GLibError where e.isQMIProtocolError || e.isMBIMStatusError || isParseError(e) {
            logger.debug("Modem request failed", metadata: ["modem.reading": "\(reading.rawValue)", "error": "\(e)"])
            forget(reading)
            state.noteUnread(reading, ModemChannel.describe(e))
        } catch let e as ModemError {
            logger.debug("Modem reply unusable", metadata: ["modem.reading": "\(reading.rawValue)", "error": "\(e)"])
            forget(reading)
            state.noteUnread(reading, e.description)
        }
    }

    /// Drops what an earlier read said that the request just refused would have told again: a refused reading is
    /// unknown, not its old value.
    private func forget(_ reading: UnreadReading.Reading) {
        switch reading {
        case .registration:
            qmi.systemInfo = nil
            qmi.servingSystem = nil
            mbim.network = nil
        case .signal:
            qmi.signalInfo = nil
            qmi.signalStrength = nil
            mbim.signal = nil
        case .sim:
            qmi.sim = nil
            mbim.sim = nil
        case .operatorName:
            qmi.operatorName = nil
        case .packetService, .cells, .identifiers, .deviceInfo:
            break
        }
    }

    private func isParseError(_ e: GLibError) -> Bool {
        e.isDomain(qmi_core_error_quark) || e.isDomain(mbim_core_error_quark)
    }

    /// Runs a read, then derives the state from the readings; a transport failure ends up in `state` and makes
    /// the result false.
    private func step(_ body: (Session) async throws -> Void) async -> Bool {
        lastReadingTimedOut = false
        var ok = true
        do {
            try await body(session)
        } catch {
            logger.debug("Modem read stopped", metadata: ["error": "\(error)"])
            let fault = ModemChannel.fault(of: error, path: spec.path)
            state.fail(ModemChannel.describe(error), fault)
            if fault.kind == .gone { state.present = nodeExists }
            ok = false
        }
        deriveState()
        return ok
    }

    private func deriveState() {
        switch session {
        case .qmi:
            qmi.apply(to: &state)
            state.cells = qmiCells.readings(rats: state.accessTechnologies, plmn: state.plmn)
        case .mbim:
            mbim.apply(to: &state)
            state.cells = mbimCells?.readings(rats: state.accessTechnologies, plmn: state.plmn) ?? CellReadings()
        }
        state.dataChannels = dataChannels
    }

    // MARK: Indications

    /// Asks the modem to announce changes; they arrive through `sink` as `ChannelEvent`s.
    func subscribe(
        _ sink: @escaping @Sendable (ChannelEvent) -> Void, signal reporting: SignalReporting = .barBoundaries
    ) async -> IndicationSupport {
        await qmiData?.subscribe { sink(.dataSession($0)) }
        switch session {
        case let .qmi(q): return await q.subscribe({ sink(.qmi($0)) }, signal: reporting)
        case let .mbim(m): return await m.subscribe({ sink(.mbim($0)) }, signal: reporting)
        }
    }

    /// Applies an indication (asking for the PIN type when an MBIM notification says the SIM is locked).
    /// Returns false when the port went away.
    func handle(_ event: ChannelEvent) async -> Bool {
        let alive = apply(event)
        if alive, case .mbim(.subscriber) = event { await refineLockedSIM() }
        return alive
    }

    private func apply(_ event: ChannelEvent) -> Bool {
        let registrationBefore = state.registration
        defer { if state.registration != registrationBefore { requeryWanted = true } }
        switch event {
        case let .qmi(i):
            switch i {
            case let .systemInfo(v): qmi.systemInfo = v
            case let .servingSystem(v): qmi.servingSystem = v
            case let .signalInfo(v): qmi.signalInfo = v
            case let .signalStrength(v): qmi.signalStrength = v
            case .removed: return portGone()
            }
        case let .mbim(i):
            switch i {
            case let .registerState(r):
                if mbim.network == nil {
                    mbim.network = MBIMNetworkReading(registerState: r.registerState)
                }
                mbim.network?.apply(r)
            case let .packetService(p):
                if mbim.network == nil { mbim.network = MBIMNetworkReading(registerState: 0) }
                mbim.network?.apply(p)
            case let .signalState(s): mbim.signal = s
            case let .subscriber(s):
                mbim.sim = SIMState(mbimSubscriberReadyState: s.readyState, pinType: nil)
            case let .connect(c):
                MBIMDataObserver.apply(c, to: &dataChannels)
            case let .malformed(text):
                logger.debug("MBIM message not understood", metadata: ["error": "\(text)"])
                state.fail(text, ModemFault(.failed))
                return true
            case .removed: return portGone()
            }
        case let .dataSession(.qmi(channel, family, status)):
            QMIDataObserver.apply(channel, family, status, to: &dataChannels)
        case let .dataSession(.mbim(id, activation)):
            MBIMDataObserver.apply(MBIMConnectState(sessionID: UInt32(id), activation: activation), to: &dataChannels)
        case .poll, .requery, .refreshCells, .pollSignal:
            return true
        }
        state.clearFailure()
        deriveState()
        return true
    }

    private func portGone() -> Bool {
        state.present = nodeExists
        state.fail("the port hung up", ModemFault(.gone))
        return false
    }

    /// After a hang-up: is the device node still there? A USB unplug removes it (absent); libqmi also hangs up on
    /// a byte stream it cannot frame, and then the modem is present but unusable until it is opened again.
    private var nodeExists: Bool { DeviceNode.check(spec.path) != .missing }

    /// A subscriber PIN notification says "locked" without the PIN type; ask for it.
    private func refineLockedSIM() async {
        guard case let .mbim(m) = session, mbim.sim == .pinRequired else { return }
        _ = await step { _ in try await self.guarded(.sim) { try await self.readMBIMSIM(m) } }
    }

    func close() async {
        await qmiData?.close()
        switch session {
        case let .qmi(q): await q.close()
        case let .mbim(m): await m.close()
        }
    }

    // MARK: Errors

    /// The port is not there (ENOENT) or went away (HUP, EOF, EIO).
    struct PortGone: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// The case of a failure, from what is known for certain: its type, its GError domain and code, and whether
    /// the device node is still there (stat's ENOENT). A library that puts the errno only into its message (libqmi's
    /// "Cannot open device file": ENODEV, EIO under G_IO_ERROR_FAILED) is `failed` while the node stands and `gone`
    /// once the kernel removed it.
    static func fault(of error: Error, path: String) -> ModemFault {
        switch error {
        case is PortGone:
            return ModemFault(.gone)
        case let e as ModemError:
            return e.fault
        case let e as GLibError:
            if ProxyWatch.isTimeout(e) { return ModemFault(.notAnswering, waitedMs: e.waitedMs) }
            if e.isGIOClosed { return ModemFault(.gone) }
        default:
            break
        }
        return DeviceNode.check(path) == .missing ? ModemFault(.gone) : ModemFault(.failed)
    }

    static func describe(_ error: Error) -> String {
        switch error {
        case let e as GLibError: return e.description
        case let e as ModemError: return e.description
        case let e as PortGone: return e.message
        default: return "\(error)"
        }
    }
}

extension MBIMSession {
    /// Uses a quirk's custom data class string when Device Caps gave none.
    func useCustomDataClass(_ name: String, capsDataClass: UInt32) async {
        let custom = MBIMDataClass(customDataClass: name, capsDataClass: capsDataClass | MBIMDataClass.custom.rawValue)
        await setCustomDataClass(custom.rawValue)
    }
}
