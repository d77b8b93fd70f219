// Cells in a scenario: the serving cell's radio (channel, physical id, band, bandwidth), the NR cell under 5G NSA,
// LTE secondary carriers and neighbours, which the QMI cell requests (Get Cell Location Info, RF Band Information,
// LTE CPHY CA Info) and MBIM Base Stations Info report; and `signal_walk`, a timeline that walks the signal for
// `reach signal`'s tests. `hw/scenarios/README.md` documents the keys.
//
// A scenario without `state.cell.channel` is a modem that lacks the cell requests: it answers them "not supported",
// as older firmware does, so the reader's "null, never an error" is exercised by every other scenario.

import ReachCore

/// One carrier as the modem reports it.
public struct SimulatedCarrier: Sendable, Equatable {
    /// EARFCN, NR-ARFCN, UARFCN or ARFCN.
    public var channel: Int
    /// PCI (LTE, NR), PSC (UMTS), BSIC (GSM).
    public var pci: Int
    /// As named in the scenario ("B3", "n78", "GSM900"); nil: the band of the channel (`BandPlan`).
    public var bandName: String?
    public var bandwidthMHz: Double?
    /// SCells only.
    public var state: ComponentCarrier.State

    public init(channel: Int, pci: Int, bandName: String? = nil, bandwidthMHz: Double? = nil, state: ComponentCarrier.State = .activated) {
        self.channel = channel
        self.pci = pci
        self.bandName = bandName
        self.bandwidthMHz = bandwidthMHz
        self.state = state
    }

    /// The band on a radio: the named one, else the channel's (in `region`).
    public func band(_ rat: CellRAT, region: BandRegion) -> RadioBand? {
        if let bandName { return RadioBand(name: bandName, rat: rat) }
        return BandPlan.band(rat, channel: channel, region: region)
    }
}

public struct SimulatedNeighbour: Sendable, Equatable {
    public var rat: CellRAT
    public var channel: Int
    public var pci: Int
    public var signal: SignalMeasurement

    public init(rat: CellRAT, channel: Int, pci: Int, signal: SignalMeasurement) {
        self.rat = rat
        self.channel = channel
        self.pci = pci
        self.signal = signal
    }
}

public struct SimulatedCells: Sendable, Equatable {
    /// The serving cell's radio (its RAT follows the technologies in use); nil: no cell reporting at all.
    public var serving: SimulatedCarrier?
    /// The NR secondary cell under 5G NSA.
    public var nr: SimulatedCarrier?
    /// LTE secondary cells (carrier aggregation).
    public var scells: [SimulatedCarrier]
    public var neighbours: [SimulatedNeighbour]

    public init(
        serving: SimulatedCarrier? = nil, nr: SimulatedCarrier? = nil, scells: [SimulatedCarrier] = [],
        neighbours: [SimulatedNeighbour] = []
    ) {
        self.serving = serving
        self.nr = nr
        self.scells = scells
        self.neighbours = neighbours
    }
}

/// What a `set` changes in the cells; nil members are left alone.
public struct SimulatedCellsPatch: Sendable, Equatable {
    public var serving: SimulatedCarrier??
    public var nr: SimulatedCarrier??
    public var scells: [SimulatedCarrier]?
    public var neighbours: [SimulatedNeighbour]?

    public init() {}

    public func apply(to cells: inout SimulatedCells) {
        if let v = serving { cells.serving = v }
        if let v = nr { cells.nr = v }
        if let v = scells { cells.scells = v }
        if let v = neighbours { cells.neighbours = v }
    }
}

extension SimulatedState {
    /// The RAT of the serving cell, by the technologies in use.
    public var servingCellRAT: CellRAT? { CellRAT.serving(accessTechnologies) }

    /// Whether this state has cells to report on its serving radio.
    public var reportsCells: Bool { cells.serving != nil && isRegistered && servingCellRAT != nil }

    public var bandRegion: BandRegion { BandRegion(mcc: networkOperator?.mcc) }
}

extension Scenario {
    /// Whether the modem knows the cell requests: cells are given now or anywhere in the timeline.
    public var hasCellReporting: Bool {
        state.cells.serving != nil || timeline.contains { $0.operation.set?.cells?.serving != nil }
    }
}

// MARK: - Parsing

extension ScenarioParser {
    static let cellKeys = ["lac", "tac", "cell_id", "channel", "pci", "band", "bandwidth_mhz"]
    static let carrierKeys = ["channel", "pci", "band", "bandwidth_mhz", "state"]

    /// The radio members of `state.cell` (nil when it gives no channel: identity only).
    static func cellRadio(_ o: ObjectNode) throws(ScenarioError) -> SimulatedCarrier? {
        guard let ch = o.optional("channel") else {
            for key in ["pci", "band", "bandwidth_mhz"] where o.optional(key) != nil {
                throw ScenarioError(o.path + "." + key, "needs \"channel\" in the same object")
            }
            return nil
        }
        return try carrier(o, channel: ch)
    }

    static func carrier(_ o: ObjectNode, channel ch: Node) throws(ScenarioError) -> SimulatedCarrier {
        var c = SimulatedCarrier(
            channel: Int(try ch.integer(in: 0...Int64(BandPlan.nrARFCNMax))),
            pci: Int(try o.required("pci").integer(in: 0...1007)))
        if let n = o.optional("band") {
            let name = try n.string()
            guard CellRAT.allCases.contains(where: { RadioBand(name: name, rat: $0) != nil }) else {
                throw n.fail("\"\(name)\" is not a band (expected B3, n78, GSM900 or TD-A style)")
            }
            c.bandName = name
        }
        if let n = o.optional("bandwidth_mhz") {
            let allowed: [Double] = [0.2, 1.4, 1.6, 3, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 200, 400]
            let v = try n.number(in: 0.2...400, unit: " MHz")
            guard allowed.contains(v) else {
                let list = allowed.map { JSON.double($0).serialized() }.joined(separator: ", ")
                throw n.fail("\(JSON.double(v).serialized()) MHz is not a channel bandwidth (expected one of \(list))")
            }
            c.bandwidthMHz = v
        }
        if let n = o.optional("state") {
            c.state = try n.oneOf([
                ("activated", ComponentCarrier.State.activated), ("deactivated", .deactivated),
                ("deconfigured", .deconfigured),
            ])
        }
        return c
    }

    /// `nr_cell`, `carriers` and `neighbours` of a `state` or `set` object.
    static func cellsPatch(_ o: ObjectNode, into p: inout StatePatch) throws(ScenarioError) {
        var cells = p.cells ?? SimulatedCellsPatch()
        if let n = o.nullable("nr_cell") {
            cells.nr = .some(try n.map { (x) throws(ScenarioError) in
                let c = try x.object(["channel", "pci", "band", "bandwidth_mhz"])
                return try carrier(c, channel: try c.required("channel"))
            })
        }
        if let n = o.optional("carriers") {
            cells.scells = try n.array().map { (x) throws(ScenarioError) in
                let c = try x.object(carrierKeys)
                return try carrier(c, channel: try c.required("channel"))
            }
        }
        if let n = o.optional("neighbours") {
            cells.neighbours = try n.array().map { (x) throws(ScenarioError) in try neighbour(x) }
        }
        if cells != SimulatedCellsPatch() { p.cells = cells }
    }

    static func neighbour(_ node: Node) throws(ScenarioError) -> SimulatedNeighbour {
        let o = try node.object(["rat", "channel", "pci"] + ranges.map(\.key))
        let rat: CellRAT = try o.required("rat").oneOf(CellRAT.allCases.filter { $0 != .tdscdma }.map { ($0.rawValue, $0) })
        let channel = Int(try o.required("channel").integer(in: 0...Int64(BandPlan.nrARFCNMax)))
        let pci = Int(try o.required("pci").integer(in: 0...1007))
        // The signal keys of state.signal, without "nr".
        let (signal, _) = try measurement(Node(value: .object(o.members.filter { !["rat", "channel", "pci"].contains($0.0) }), path: node.path), allowNR: false)
        return SimulatedNeighbour(rat: rat, channel: channel, pci: pci, signal: signal)
    }

    /// Cells must fit the radio they are reported on; say so rather than emit messages no modem sends.
    static func checkCells(_ state: SimulatedState, protocol proto: ModemProtocol, path: String) throws(ScenarioError) {
        let cells = state.cells
        guard let serving = cells.serving else {
            if cells.nr != nil || !cells.scells.isEmpty || !cells.neighbours.isEmpty {
                throw ScenarioError(path + ".cell.channel", "nr_cell, carriers and neighbours need the serving cell's channel")
            }
            return
        }
        guard let rat = state.servingCellRAT else { return }
        func check(_ c: SimulatedCarrier, _ rat: CellRAT, _ key: String) throws(ScenarioError) {
            if let name = c.bandName {
                guard let band = RadioBand(name: name, rat: rat) else {
                    throw ScenarioError(path + key + ".band", "\"\(name)\" is not a \(rat.label) band")
                }
                if !BandPlan.table(rat).isEmpty, !BandPlan.candidates(rat, channel: c.channel).contains(band) {
                    throw ScenarioError(path + key + ".channel", "\(rat.channelName) \(c.channel) is not in band \(name)")
                }
            } else if rat != .tdscdma, BandPlan.band(rat, channel: c.channel) == nil {
                throw ScenarioError(path + key + ".channel", "\(rat.channelName) \(c.channel) is in no \(rat.label) band")
            }
            if proto == .qmi, rat != .nr, c.channel > 0xFFFF {
                throw ScenarioError(path + key + ".channel", "QMI carries \(rat.channelName)s in 16 bits (at most 65535)")
            }
            if rat == .lte || rat == .nr, c.pci > 1007 || (rat == .lte && c.pci > 503) {
                throw ScenarioError(path + key + ".pci", "a \(rat.label) PCI is 0 to \(rat == .lte ? 503 : 1007)")
            }
        }
        try check(serving, rat, ".cell")
        if let nr = cells.nr {
            guard state.accessTechnologies.isNonStandalone5G else {
                throw ScenarioError(path + ".nr_cell", "an NR secondary cell needs 5G NSA (access_technologies lte and 5gnr)")
            }
            try check(nr, .nr, ".nr_cell")
        }
        if !cells.scells.isEmpty && rat != .lte {
            throw ScenarioError(path + ".carriers", "secondary carriers need an LTE serving cell")
        }
        for (i, c) in cells.scells.enumerated() { try check(c, .lte, ".carriers[\(i)]") }
        for (i, n) in cells.neighbours.enumerated() {
            try check(SimulatedCarrier(channel: n.channel, pci: n.pci), n.rat, ".neighbours[\(i)]")
        }
    }

    // MARK: signal_walk

    /// `{"every_ms": N, "start_ms": N, "repeat": N, "steps": [{signal keys}, …]}`: timeline steps that set the signal
    /// to the scenario's `state.signal` with each step's keys replaced, one step every `every_ms`, the list
    /// `repeat` times.
    static func signalWalk(_ node: Node, initial: SimulatedState) throws(ScenarioError) -> [TimelineStep] {
        let o = try node.object(["every_ms", "start_ms", "repeat", "steps"])
        let every = UInt64(try o.required("every_ms").integer(in: 10...3_600_000))
        let start = UInt64(try o.optional("start_ms")?.integer(in: 0...(7 * 24 * 3_600_000)) ?? 0)
        let times = Int(try o.optional("repeat")?.integer(in: 1...10_000) ?? 1)
        let stepNodes = try o.required("steps").array()
        guard !stepNodes.isEmpty else { throw ScenarioError(o.path + ".steps", "needs at least one step") }
        guard stepNodes.count * times <= 100_000 else {
            throw ScenarioError(o.path + ".repeat", "at most 100000 steps in all (\(stepNodes.count) × \(times))")
        }
        var signals: [(SignalMeasurement, SignalMeasurement?)] = []
        for s in stepNodes {
            let (serving, nrPatch) = try signal(s)
            var nr = initial.nrSignal
            if let nrPatch { nr = nrPatch.map { $0.applied(to: initial.nrSignal ?? SignalMeasurement()) } }
            signals.append((serving.applied(to: initial.signal), nr))
        }
        var out: [TimelineStep] = []
        for r in 0..<times {
            for (i, s) in signals.enumerated() {
                var patch = StatePatch()
                patch.signal = MeasurementPatch(replacingWith: s.0)
                patch.nrSignal = .some(s.1.map(MeasurementPatch.init(replacingWith:)))
                out.append(TimelineStep(atMs: start + UInt64(r * signals.count + i) * every, operation: Operation(set: patch)))
            }
        }
        return out
    }
}

extension SignalMeasurement {
    /// Sets (or with nil clears) one measure, by its scenario key.
    mutating func set(_ key: String, _ value: Double?) {
        switch key {
        case "rssi_dbm": rssi = value
        case "rsrp_dbm": rsrp = value
        case "rsrq_db": rsrq = value
        case "sinr_db": sinr = value
        case "rscp_dbm": rscp = value
        case "ecio_db": ecio = value
        default: break
        }
    }
}
