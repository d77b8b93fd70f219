// Scenario files: JSON → `Scenario`, strictly. Every problem names its key path and what was expected,
// e.g. `scenario.state.signal.rsrp_dbm: expected a number, found a string`. Unknown keys are errors too, so a
// typo never silently falls back to a default.

import ReachCore

/// A scenario (or capture) file that cannot be used, with the key path of the problem.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// A JSON value with the path that leads to it, and typed accessors that fail with that path.
struct Node {
    let value: JSON
    let path: String

    func fail(_ message: String) -> ScenarioError { ScenarioError(path, message) }

    func expected(_ what: String) -> ScenarioError { fail("expected \(what), found \(value.typeName)") }

    func object(_ allowed: [String]) throws(ScenarioError) -> ObjectNode {
        guard let members = value.objectValue else { throw expected("an object") }
        for (key, _) in members where !allowed.contains(key) {
            throw ScenarioError(path + "." + key, "unknown key (expected one of: \(allowed.joined(separator: ", ")))")
        }
        return ObjectNode(members: members, path: path)
    }

    func string() throws(ScenarioError) -> String {
        guard let s = value.stringValue else { throw expected("a string") }
        return s
    }

    func bool() throws(ScenarioError) -> Bool {
        guard let b = value.boolValue else { throw expected("true or false") }
        return b
    }

    func number(in range: ClosedRange<Double>? = nil, unit: String = "") throws(ScenarioError) -> Double {
        guard let d = value.doubleValue else { throw expected("a number") }
        if let range, !range.contains(d) {
            throw fail("\(JSON.double(d).serialized()) is out of range (expected \(JSON.double(range.lowerBound).serialized())"
                + " to \(JSON.double(range.upperBound).serialized())\(unit))")
        }
        return d
    }

    func integer(in range: ClosedRange<Int64>) throws(ScenarioError) -> Int64 {
        guard let i = value.intValue else {
            if value.doubleValue != nil { throw fail("expected a whole number, found \(value.serialized())") }
            throw expected("a whole number")
        }
        guard range.contains(i) else { throw fail("\(i) is out of range (expected \(range.lowerBound) to \(range.upperBound))") }
        return i
    }

    func array() throws(ScenarioError) -> [Node] {
        guard let items = value.arrayValue else { throw expected("an array") }
        return items.enumerated().map { Node(value: $1, path: "\(path)[\($0)]") }
    }

    func oneOf<T>(_ choices: [(String, T)]) throws(ScenarioError) -> T {
        let s = try string()
        guard let hit = choices.first(where: { $0.0 == s }) else {
            throw fail("\"\(s)\" is not one of: \(choices.map(\.0).joined(separator: ", "))")
        }
        return hit.1
    }

    func digits(_ counts: ClosedRange<Int>, what: String) throws(ScenarioError) -> String {
        let s = try string()
        guard counts.contains(s.count), isDigits(s) else {
            let n = counts.lowerBound == counts.upperBound ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)"
            throw fail("expected \(what) of \(n) digits, found \"\(s)\"")
        }
        return s
    }
}

func isDigits(_ s: String) -> Bool { s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }

struct ObjectNode {
    let members: [(String, JSON)]
    let path: String

    func optional(_ key: String) -> Node? {
        guard let v = members.first(where: { $0.0 == key })?.1 else { return nil }
        return Node(value: v, path: path + "." + key)
    }

    /// A member that may be given as null to mean "none" (distinct from absent).
    func nullable(_ key: String) -> Node?? {
        guard let node = optional(key) else { return nil }
        return node.value.isNull ? .some(nil) : .some(node)
    }

    func required(_ key: String) throws(ScenarioError) -> Node {
        guard let node = optional(key) else { throw ScenarioError(path + "." + key, "missing (required)") }
        return node
    }
}

public enum ScenarioParser {
    /// Parses a scenario file's text. `path` is the root of key paths in messages ("scenario").
    public static func parse(_ text: String, root: String = "scenario") throws(ScenarioError) -> Scenario {
        let json: JSON
        do {
            json = try JSON.parse(text)
        } catch {
            throw ScenarioError(root, "not valid JSON: \(error)")
        }
        return try scenario(Node(value: json, path: root))
    }

    static let topKeys = [
        "protocol", "description", "device", "sim", "identifiers", "home_operator", "state", "mbimex", "qmi",
        "mbim", "timeline", "faults", "refuse", "seed", "signal_walk",
    ]

    static func scenario(_ node: Node) throws(ScenarioError) -> Scenario {
        let o = try node.object(topKeys)
        let proto: ModemProtocol = try o.required("protocol").oneOf([("qmi", .qmi), ("mbim", .mbim)])
        var s = Scenario(modemProtocol: proto)
        if let n = o.optional("description") { s.description = try n.string() }
        if let n = o.optional("device") { s.device = try device(n) }
        if let n = o.optional("identifiers") { s.identifiers = try identifiers(n) }
        if let n = o.optional("home_operator") { s.homeOperator = try networkOperator(n) }
        let stateNode = try o.required("state")
        let patch = try statePatch(stateNode, allowSIM: false, proto)
        guard patch.registration != nil else { throw ScenarioError(stateNode.path + ".registration", "missing (required)") }
        _ = s.state.apply(patch)
        if let n = o.optional("sim") { s.state.sim = try sim(n) }
        try checkConsistency(s.state, path: stateNode.path, protocol: proto)
        if let n = o.optional("mbimex") {
            guard proto == .mbim else { throw n.fail("applies only to \"protocol\": \"mbim\"") }
            s.mbimex = try n.oneOf(MBIMExVersion.allCases.map { ($0.rawValue, $0) })
        }
        if let n = o.optional("qmi") {
            guard proto == .qmi else { throw n.fail("applies only to \"protocol\": \"qmi\"") }
            s.qmi = try qmiOptions(n)
        }
        if let n = o.optional("mbim") {
            guard proto == .mbim else { throw n.fail("applies only to \"protocol\": \"mbim\"") }
            s.mbim = try mbimOptions(n)
        }
        if let n = o.optional("seed") { s.seed = UInt64(try n.integer(in: 0...Int64.max)) }
        if let n = o.optional("faults") {
            s.faults = try n.array().map { (f) throws(ScenarioError) in try fault(f, proto) }
        }
        if let n = o.optional("refuse") { s.refusals = try refusals(n, proto) }
        if let n = o.optional("timeline") {
            var last: UInt64 = 0
            var probe = s.state
            for item in try n.array() {
                let step = try timelineStep(item, proto)
                guard step.atMs >= last else {
                    throw ScenarioError(item.path + ".at_ms", "steps must be in time order (\(step.atMs) < \(last))")
                }
                last = step.atMs
                if let p = step.operation.set {
                    _ = probe.apply(p)
                    try checkConsistency(probe, path: item.path + ".set", protocol: proto)
                }
                s.timeline.append(step)
            }
        }
        if let n = o.optional("signal_walk") {
            // Merged into the timeline in time order; a walk step at the same time as a timeline step comes after it.
            let walk = try signalWalk(n, initial: s.state)
            s.timeline = (s.timeline + walk).enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }
                .map(\.element)
        }
        return s
    }

    /// A registered modem needs a technology and an operator; say so rather than emit messages no modem sends.
    static func checkConsistency(_ state: SimulatedState, path: String, protocol proto: ModemProtocol) throws(ScenarioError) {
        try checkCells(state, protocol: proto, path: path)
        if state.isRegistered {
            guard !state.accessTechnologies.isEmpty else {
                throw ScenarioError(path + ".access_technologies", "a registered modem needs at least one technology")
            }
            guard state.networkOperator != nil else {
                throw ScenarioError(path + ".operator", "a registered modem needs an operator")
            }
            guard state.sim == .ready else {
                throw ScenarioError(path + ".registration", "cannot be registered while the SIM is \(state.sim.rawValue)")
            }
        }
    }

    static func device(_ node: Node) throws(ScenarioError) -> DeviceInfo {
        let o = try node.object(["manufacturer", "model", "revision", "imei"])
        var d = DeviceInfo()
        if let n = o.optional("manufacturer") { d.manufacturer = try n.string() }
        if let n = o.optional("model") { d.model = try n.string() }
        if let n = o.optional("revision") { d.revision = try n.string() }
        if let n = o.optional("imei") { d.imei = try n.digits(14...16, what: "an IMEI") }
        return d
    }

    static func identifiers(_ node: Node) throws(ScenarioError) -> Identifiers {
        let o = try node.object(["imsi", "iccid", "msisdn"])
        var i = Identifiers()
        if let n = o.optional("imsi") { i.imsi = try n.digits(6...15, what: "an IMSI") }
        if let n = o.optional("iccid") { i.iccid = try n.digits(18...20, what: "an ICCID") }
        if let n = o.optional("msisdn") {
            let s = try n.string()
            let body = s.hasPrefix("+") ? String(s.dropFirst()) : s
            guard (3...15).contains(body.count), isDigits(body) else {
                throw n.fail("expected a phone number (optional '+', 3 to 15 digits), found \"\(s)\"")
            }
            i.msisdn = s
        }
        return i
    }

    static func sim(_ node: Node) throws(ScenarioError) -> SIMState {
        try node.oneOf([
            ("ready", .ready), ("pin_required", .pinRequired), ("puk_required", .pukRequired), ("absent", .absent),
            ("error", .error),
        ])
    }

    static func networkOperator(_ node: Node) throws(ScenarioError) -> NetworkOperator {
        let o = try node.object(["mcc", "mnc", "name"])
        let mcc = try o.required("mcc").digits(3...3, what: "an MCC")
        let mnc = try o.required("mnc").digits(2...3, what: "an MNC")
        let name = try o.optional("name")?.string() ?? ""
        return NetworkOperator(mcc: mcc, mnc: mnc, name: name)
    }

    static let stateKeys = [
        "registration", "access_technologies", "operator", "signal", "packet_service", "reject_cause", "cell",
        "nr_cell", "carriers", "neighbours", "data_sessions",
    ]

    /// The `state` object, or a timeline/control `set` (which may also change `sim`).
    static func statePatch(_ node: Node, allowSIM: Bool, _ proto: ModemProtocol) throws(ScenarioError) -> StatePatch {
        let o = try node.object(allowSIM ? stateKeys + ["sim"] : stateKeys)
        var p = StatePatch()
        if let n = o.optional("sim") { p.sim = try sim(n) }
        if let n = o.optional("registration") {
            p.registration = try n.oneOf([
                ("home", RegistrationState.home), ("roaming", .roaming), ("searching", .searching),
                ("denied", .denied), ("idle", .idle),
            ])
        }
        if let n = o.optional("access_technologies") {
            var rats = AccessTechnologies.none
            for item in try n.array() {
                let name = try item.string()
                guard let rat = RadioAccessTechnology(rawValue: name) else {
                    throw item.fail(
                        "\"\(name)\" is not a technology (expected one of: "
                            + RadioAccessTechnology.allCases.map(\.rawValue).joined(separator: ", ") + ")")
                }
                rats.insert(rat)
            }
            p.accessTechnologies = rats
        }
        if let n = o.nullable("operator") { p.networkOperator = .some(try n.map { (x) throws(ScenarioError) in try networkOperator(x) }) }
        if let n = o.optional("signal") {
            let (serving, nr) = try signal(n)
            p.signal = serving
            p.nrSignal = nr
        }
        if let n = o.optional("packet_service") {
            p.packetService = try n.oneOf([("attached", PacketServiceState.attached), ("detached", .detached)])
        }
        if let n = o.nullable("reject_cause") {
            p.rejectCause = .some(try n.map { (x) throws(ScenarioError) in Int(try x.integer(in: 0...255)) })
        }
        if let n = o.optional("cell") {
            let c = try n.object(cellKeys)
            var cell = Cell()
            if let x = c.optional("lac") { cell.lac = UInt16(try x.integer(in: 0...0xFFFF)) }
            if let x = c.optional("tac") { cell.tac = UInt32(try x.integer(in: 0...0xFF_FFFF)) }
            if let x = c.optional("cell_id") { cell.cellID = UInt32(try x.integer(in: 0...0xFFFF_FFFF)) }
            p.cell = cell
            if let radio = try cellRadio(c) {
                var cells = p.cells ?? SimulatedCellsPatch()
                cells.serving = .some(radio)
                p.cells = cells
            }
        }
        try cellsPatch(o, into: &p)
        if let n = o.nullable("data_sessions") {
            p.dataSessions = .some(try n.map { (x) throws(ScenarioError) in try dataSessions(x, proto) })
        }
        return p
    }

    /// `[{"mux_id": 1, "ip_types": ["ipv6"], "state": "connected"}]` (QMI; MBIM names the channel `session_id`).
    /// The channel defaults to 0, the IP types to both.
    static func dataSessions(_ node: Node, _ proto: ModemProtocol) throws(ScenarioError) -> [SimulatedSession] {
        let channelKey = proto == .qmi ? "mux_id" : "session_id"
        let otherKey = proto == .qmi ? "session_id" : "mux_id"
        var sessions: [SimulatedSession] = []
        for item in try node.array() {
            let o = try item.object([channelKey, otherKey, "ip_types", "state"])
            if let wrong = o.optional(otherKey) {
                throw wrong.fail("\(proto == .qmi ? "QMI" : "MBIM") names the channel \"\(channelKey)\"")
            }
            var session = SimulatedSession(state: try o.required("state").oneOf(
                SimulatedSessionState.allCases.map { ($0.rawValue, $0) }))
            if proto == .mbim && session.state == .suspended {
                throw ScenarioError(o.path + ".state", "\"suspended\" exists only in QMI")
            }
            if let c = o.optional(channelKey) { session.channel = Int(try c.integer(in: 0...255)) }
            if let ips = o.optional("ip_types") {
                let names = try ips.array().map { (x) throws(ScenarioError) in
                    try x.oneOf([("ipv4", "ipv4"), ("ipv6", "ipv6")])
                }
                guard !names.isEmpty else { throw ips.fail("expected at least one of ipv4, ipv6") }
                session.ipv4 = names.contains("ipv4")
                session.ipv6 = names.contains("ipv6")
            }
            guard !sessions.contains(where: { $0.channel == session.channel }) else {
                throw ScenarioError(o.path + "." + channelKey, "channel \(session.channel) has a session already")
            }
            sessions.append(session)
        }
        return sessions
    }

    /// Physical ranges wide enough for any real report and narrow enough to fit every protocol field.
    static let ranges: [(key: String, range: ClosedRange<Double>, unit: String)] = [
        ("rssi_dbm", -130 ... -20, " dBm"), ("rsrp_dbm", -156 ... -31, " dBm"), ("rsrq_db", -43 ... 20, " dB"),
        ("sinr_db", -23 ... 40, " dB"), ("rscp_dbm", -120 ... -24, " dBm"), ("ecio_db", -31 ... 0, " dB"),
    ]

    static func measurement(_ node: Node, allowNR: Bool) throws(ScenarioError) -> (SignalMeasurement, Node?) {
        let o = try node.object(ranges.map(\.key) + (allowNR ? ["nr"] : []))
        var values: [String: Double] = [:]
        for (key, range, unit) in ranges {
            if let n = o.optional(key) { values[key] = try n.number(in: range, unit: unit) }
        }
        let m = SignalMeasurement(
            rssi: values["rssi_dbm"], rsrp: values["rsrp_dbm"], rsrq: values["rsrq_db"], sinr: values["sinr_db"],
            rscp: values["rscp_dbm"], ecio: values["ecio_db"])
        return (m, allowNR ? o.optional("nr") : nil)
    }

    /// A `signal` object as a patch: each measure a number (set) or null (cleared); `nr` absent (left), null
    /// (removed) or an object of the same measures.
    static func signal(_ node: Node) throws(ScenarioError) -> (MeasurementPatch, MeasurementPatch??) {
        let o = try node.object(ranges.map(\.key) + ["nr"])
        let serving = try measurementPatch(o)
        guard let nr = o.nullable("nr") else { return (serving, nil) }
        guard let nr else { return (serving, .some(nil)) }
        return (serving, .some(try measurementPatch(try nr.object(ranges.map(\.key)))))
    }

    static func measurementPatch(_ o: ObjectNode) throws(ScenarioError) -> MeasurementPatch {
        var patch = MeasurementPatch()
        for (key, range, unit) in ranges {
            if let n = o.nullable(key) { patch.values[key] = .some(try n.map { (x) throws(ScenarioError) in try x.number(in: range, unit: unit) }) }
        }
        return patch
    }

    static func qmiOptions(_ node: Node) throws(ScenarioError) -> QMIOptions {
        let o = try node.object([
            "get_system_info", "get_signal_info", "unsupported_error", "data_capabilities", "radio_interfaces",
            "signal_strength", "wds", "wds_indications",
        ])
        var q = QMIOptions()
        if let n = o.optional("wds") { q.wds = try n.bool() }
        if let n = o.optional("wds_indications") { q.wdsIndications = try n.bool() }
        if let n = o.optional("get_system_info") { q.getSystemInfo = try n.bool() }
        if let n = o.optional("get_signal_info") { q.getSignalInfo = try n.bool() }
        if let n = o.optional("unsupported_error") { q.unsupportedError = try qmiError(n) }
        if let n = o.optional("data_capabilities") {
            q.dataCapabilities = try n.array().map { (x) throws(ScenarioError) in UInt8(try x.integer(in: 0...255)) }
        }
        if let n = o.optional("radio_interfaces") {
            q.radioInterfaces = try n.array().map { (x) throws(ScenarioError) in Int8(try x.integer(in: -1...127)) }
        }
        if let n = o.optional("signal_strength") { q.signalStrength = try signalStrengthOverride(n) }
        return q
    }

    /// `{"strength_dbm": i8, "radio_interface": QmiNasRadioInterface, "list": [{"strength_dbm", "radio_interface"}]}`.
    static func signalStrengthOverride(_ node: Node) throws(ScenarioError) -> SignalStrengthOverride {
        let o = try node.object(["strength_dbm", "radio_interface", "list"])
        var v = SignalStrengthOverride(dBm: Int8(try o.required("strength_dbm").integer(in: -128...127)))
        if let n = o.optional("radio_interface") { v.radioInterface = Int8(try n.integer(in: -1...127)) }
        if let n = o.optional("list") {
            v.list = try n.array().map { (x) throws(ScenarioError) in
                let e = try x.object(["strength_dbm", "radio_interface"])
                return SignalStrengthOverride.Entry(
                    dBm: Int8(try e.required("strength_dbm").integer(in: -128...127)),
                    radioInterface: Int8(try e.required("radio_interface").integer(in: -1...127)))
            }
        }
        return v
    }

    static func mbimOptions(_ node: Node) throws(ScenarioError) -> MBIMOptions {
        let o = try node.object(["data_class", "data_subclass", "custom_data_class", "connect", "connect_notifications"])
        var m = MBIMOptions()
        if let n = o.optional("connect") { m.connect = try n.bool() }
        if let n = o.optional("connect_notifications") { m.connectNotifications = try n.bool() }
        if let n = o.optional("data_class") { m.dataClass = UInt32(try n.integer(in: 0...0xFFFF_FFFF)) }
        if let n = o.optional("data_subclass") { m.dataSubclass = UInt32(try n.integer(in: 0...0xFFFF_FFFF)) }
        if let n = o.optional("custom_data_class") {
            let s = try n.string()
            guard s.utf16.count <= 11 else { throw n.fail("at most 11 characters (MBIM gives it 22 bytes)") }
            m.customDataClass = s
        }
        return m
    }

    static func qmiError(_ node: Node) throws(ScenarioError) -> UInt16 {
        if node.value.intValue != nil { return UInt16(try node.integer(in: 0...0xFFFF)) }
        let name = try node.string()
        guard let code = QMIError.code(name) else {
            throw node.fail("\"\(name)\" is not a QMI error name (e.g. INVALID_QMI_COMMAND, NOT_SUPPORTED)")
        }
        return code
    }

    static func mbimStatus(_ node: Node) throws(ScenarioError) -> UInt32 {
        if node.value.intValue != nil { return UInt32(try node.integer(in: 0...0xFFFF_FFFF)) }
        let name = try node.string()
        guard let code = MBIMStatus.code(name) else {
            throw node.fail("\"\(name)\" is not an MBIM status name (e.g. NO_DEVICE_SUPPORT, FAILURE)")
        }
        return code
    }

    static func timelineStep(_ node: Node, _ proto: ModemProtocol) throws(ScenarioError) -> TimelineStep {
        let o = try node.object(["at_ms", "set", "fault", "refuse", "indicate", "quiet"])
        let at = UInt64(try o.required("at_ms").integer(in: 0...(7 * 24 * 3_600_000)))
        let op = try operation(o, proto, control: false)
        guard op != Operation() else { throw node.fail("a step needs \"set\", \"fault\", \"refuse\" or \"indicate\"") }
        return TimelineStep(atMs: at, operation: op)
    }

    /// A control-socket line: the same operations as a timeline step, or a query.
    public static func controlLine(_ text: String, _ proto: ModemProtocol) throws(ScenarioError) -> Operation {
        let json: JSON
        do {
            json = try JSON.parse(text)
        } catch {
            throw ScenarioError("control", "not valid JSON: \(error)")
        }
        let node = Node(value: json, path: "control")
        let o = try node.object(["set", "fault", "refuse", "indicate", "quiet", "query"])
        var op = try operation(o, proto, control: true)
        if let q = o.optional("query") { op.query = try q.oneOf([("state", "state"), ("stats", "stats")]) }
        guard op != Operation() else {
            throw node.fail("expected \"set\", \"fault\", \"refuse\", \"indicate\" or \"query\"")
        }
        return op
    }

    static func operation(_ o: ObjectNode, _ proto: ModemProtocol, control: Bool) throws(ScenarioError) -> Operation {
        var op = Operation()
        if let n = o.optional("set") {
            let p = try statePatch(n, allowSIM: true, proto)
            guard !p.isEmpty else { throw n.fail("changes nothing") }
            op.set = p
        }
        if let n = o.optional("fault") {
            if n.value.stringValue == "clear" {
                op.clearFaults = true
            } else if n.value.arrayValue != nil {
                op.faults = try n.array().map { (f) throws(ScenarioError) in try fault(f, proto) }
            } else {
                op.faults = [try fault(n, proto)]
            }
        }
        if let n = o.optional("refuse") { op.refuse = try refusals(n, proto) }
        if let n = o.optional("indicate") { op.indicate = try n.bool() }
        if let n = o.optional("quiet") {
            op.quiet = try n.bool()
            guard op.set != nil, !op.indicate else { throw n.fail("applies to a \"set\" without \"indicate\"") }
        }
        return op
    }

    /// How a modem refuses a request. QMI: the QmiProtocolError a firmware without the message answers (libqmi
    /// qmi-errors.h: NOT_SUPPORTED 94; INVALID_QMI_COMMAND 71 on older Qualcomm firmware). MBIM: the status of a CID
    /// the function does not implement (MBIM 1.0 §9.4.5, MBIM_STATUS_NO_DEVICE_SUPPORT 9). Both: no answer at all.
    /// The names are the ones qmicli and mbimcli print.
    static func refusalAnswers(_ proto: ModemProtocol) -> [(String, FaultRule.Action)] {
        switch proto {
        case .qmi:
            return [("NotSupported", .error(code: UInt32(QMIError.notSupported))),
                    ("InvalidQmiCommand", .error(code: UInt32(QMIError.invalidQMICommand))), ("no_answer", .silence)]
        case .mbim:
            return [("NoDeviceSupport", .error(code: MBIMStatus.noDeviceSupport)), ("no_answer", .silence)]
        }
    }

    /// `{"dms:uim_get_pin_status": "NotSupported", "nas:get_cell_location_info": "no_answer"}`: each key one message
    /// (a selector with a message part), each value how it is refused.
    static func refusals(_ node: Node, _ proto: ModemProtocol) throws(ScenarioError) -> [Refusal] {
        guard let members = node.value.objectValue else { throw node.expected("an object") }
        var out: [Refusal] = []
        for (key, value) in members {
            let item = Node(value: .string(key), path: node.path + "." + key)
            let message = try selector(item, proto)
            switch message {
            case .qmi(_, nil), .mbim(_, nil):
                throw item.fail("names a whole service; refuse one message (\"service:message\")")
            case .mbimOpen, .mbimClose:
                throw item.fail("OPEN and CLOSE are the session itself, not a request a modem refuses")
            default: break
            }
            guard !out.contains(where: { $0.message == message }) else {
                throw item.fail("names \(message) a second time")
            }
            out.append(Refusal(message, try Node(value: value, path: item.path).oneOf(refusalAnswers(proto))))
        }
        return out
    }

    static let faultKinds = ["silence", "delay", "error", "garbage", "truncate", "close"]

    /// `{"<kind>": {options}}`; `"silence"` alone (a string) is shorthand for silence on every request.
    static func fault(_ node: Node, _ proto: ModemProtocol) throws(ScenarioError) -> FaultRule {
        if let s = node.value.stringValue {
            switch s {
            case "silence": return FaultRule(.silence)
            case "close": return FaultRule(.close(reopenAfterMs: nil), trigger: .now)
            default: throw node.fail("\"\(s)\" is not a fault (expected an object with one of: \(faultKinds.joined(separator: ", ")))")
            }
        }
        let outer = try node.object(faultKinds)
        guard outer.members.count == 1, let (kind, _) = outer.members.first, let body = outer.optional(kind) else {
            throw node.fail("expected exactly one fault kind (\(faultKinds.joined(separator: ", ")))")
        }
        let common = ["messages", "count"]
        func parseCommon(_ o: ObjectNode, into rule: inout FaultRule) throws(ScenarioError) {
            if let m = o.optional("messages") {
                rule.messages = try m.array().map { (x) throws(ScenarioError) in try selector(x, proto) }
            }
            if let c = o.optional("count") { rule.count = Int(try c.integer(in: 1...1_000_000)) }
        }
        let o = body.value.isNull ? ObjectNode(members: [], path: body.path) : try body.object(allowedKeys(kind, common))
        var rule: FaultRule
        switch kind {
        case "silence":
            rule = FaultRule(.silence)
        case "delay":
            rule = FaultRule(.delay(ms: UInt64(try o.required("ms").integer(in: 0...600_000))))
        case "error":
            let n = try o.required("status")
            let code: UInt32 = proto == .qmi ? UInt32(try qmiError(n)) : try mbimStatus(n)
            guard code != 0 else { throw n.fail("an error fault needs a non-success status") }
            rule = FaultRule(.error(code: code))
        case "garbage":
            let length = Int(try o.optional("length")?.integer(in: 1...4096) ?? 32)
            let replace = try o.optional("replace")?.bool() ?? false
            rule = FaultRule(.garbage(length: length, replace: replace))
            if let w = o.optional("when") {
                rule.trigger = try w.oneOf([("request", FaultRule.Trigger.request), ("now", .now)])
            }
        case "truncate":
            let keep = try o.optional("keep_bytes").map { (x) throws(ScenarioError) in Int(try x.integer(in: 1...4096)) }
            rule = FaultRule(.truncate(keep: keep))
        default:  // close
            let reopen = try o.optional("reopen_after_ms").map { (x) throws(ScenarioError) in UInt64(try x.integer(in: 0...600_000)) }
            rule = FaultRule(.close(reopenAfterMs: reopen), trigger: .now)
            if let a = o.optional("after_requests") { rule.trigger = .afterRequests(Int(try a.integer(in: 1...1_000_000))) }
        }
        try parseCommon(o, into: &rule)
        if case .close = rule.action, rule.messages != nil {
            throw ScenarioError(o.path + ".messages", "a close fault is not per message; use after_requests")
        }
        return rule
    }

    static func allowedKeys(_ kind: String, _ common: [String]) -> [String] {
        switch kind {
        case "delay": return common + ["ms"]
        case "error": return common + ["status"]
        case "garbage": return common + ["length", "replace", "when"]
        case "truncate": return common + ["keep_bytes"]
        case "close": return ["after_requests", "reopen_after_ms"]
        default: return common
        }
    }

    /// "nas:get_signal_info", "nas:0x004f", "nas" (QMI); "basic_connect:signal_state", "basic_connect:11",
    /// "basic_connect", "open", "close" (MBIM).
    static func selector(_ node: Node, _ proto: ModemProtocol) throws(ScenarioError) -> MessageSelector {
        let text = try node.string()
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        func number(_ s: String) -> UInt32? {
            s.hasPrefix("0x") ? UInt32(s.dropFirst(2), radix: 16) : UInt32(s)
        }
        switch proto {
        case .qmi:
            guard let service = QMIService.number(parts[0]) ?? number(parts[0]).flatMap({ UInt8(exactly: $0) }) else {
                throw node.fail("\"\(parts[0])\" is not a QMI service (expected ctl, wds, dms, nas, uim or a number)")
            }
            guard parts.count == 2 else { return .qmi(service: service, message: nil) }
            guard let id = QMIMessageNames.id(service: service, name: parts[1]) ?? number(parts[1]).flatMap({ UInt16(exactly: $0) }) else {
                let known = QMIMessageNames.table.filter { $0.0 == service }.map(\.2)
                throw node.fail("\"\(parts[1])\" is not a \(parts[0]) message (known: \(known.joined(separator: ", ")); or a number like 0x004f)")
            }
            return .qmi(service: service, message: id)
        case .mbim:
            if parts.count == 1 && text == "open" { return .mbimOpen }
            if parts.count == 1 && text == "close" { return .mbimClose }
            guard let service = MBIMServices.uuid(named: parts[0]) else {
                throw node.fail("\"\(parts[0])\" is not an MBIM service (expected basic_connect, ms_basic_connect_extensions, a UUID, open or close)")
            }
            guard parts.count == 2 else { return .mbim(service: service, cid: nil) }
            guard let cid = MBIMServices.cid(service: service, name: parts[1]) ?? number(parts[1]) else {
                throw node.fail("\"\(parts[1])\" is not a CID of \(parts[0])")
            }
            return .mbim(service: service, cid: cid)
        }
    }
}
