// Cells as readings: the serving cell, the component carriers (carrier aggregation, and the NR leg of EN-DC), and
// the neighbours a modem measures. Plain values, filled by `QMICellReadings` / `MBIMCellReadings` and shown by
// status, diag, the report lines and `reach signal`.
//
// Privacy: TAC/LAC and the cell identity locate the gateway in public cell databases (OpenCelliD, Mozilla's
// location service, CellMapper), so the JSON carries them only when identifiers are asked for, like the IMEI.

/// The cell the modem is camped on (the LTE anchor under 5G NSA; the NR cell under 5G SA).
public struct ServingCell: Sendable, Equatable, Codable {
    public var rat: CellRAT
    public var band: RadioBand?
    /// True when `band` was derived from the channel (`BandPlan`) because the modem named none.
    public var bandFromChannel: Bool
    /// EARFCN, NR-ARFCN, UARFCN or ARFCN (downlink).
    public var channel: Int?
    /// LTE/NR physical cell id, UMTS primary scrambling code, GSM BSIC, TD-SCDMA cell parameter id.
    public var physicalID: Int?
    /// LTE/NR tracking area code (24 bits under NR).
    public var tac: Int?
    /// GSM/UMTS location area code.
    public var lac: Int?
    /// E-UTRAN cell identity (28 bits), NR cell identity (36 bits), GSM CI or UMTS UTRAN cell id.
    public var cellID: UInt64?
    public var bandwidthMHz: Double?

    public init(
        rat: CellRAT, band: RadioBand? = nil, bandFromChannel: Bool = false, channel: Int? = nil,
        physicalID: Int? = nil, tac: Int? = nil, lac: Int? = nil, cellID: UInt64? = nil, bandwidthMHz: Double? = nil
    ) {
        self.rat = rat
        self.band = band
        self.bandFromChannel = bandFromChannel
        self.channel = channel
        self.physicalID = physicalID
        self.tac = tac
        self.lac = lac
        self.cellID = cellID
        self.bandwidthMHz = bandwidthMHz
    }
}

/// One component carrier.
public struct ComponentCarrier: Sendable, Equatable, Codable {
    public enum Role: String, Sendable, Codable {
        /// The primary cell.
        case pcell
        /// A secondary cell (LTE carrier aggregation).
        case scell
        /// The primary cell of the secondary (NR) cell group under EN-DC (TS 37.340).
        case pscell
    }

    /// QmiNasScellState (deconfigured 0, deactivated 1, activated 2): an SCell carries data only when activated.
    public enum State: String, Sendable, Codable {
        case deconfigured, deactivated, activated
    }

    public var role: Role
    public var rat: CellRAT
    public var band: RadioBand?
    public var bandFromChannel: Bool
    public var channel: Int?
    public var physicalID: Int?
    public var bandwidthMHz: Double?
    /// SCells only.
    public var state: State?

    public init(
        role: Role, rat: CellRAT, band: RadioBand? = nil, bandFromChannel: Bool = false, channel: Int? = nil,
        physicalID: Int? = nil, bandwidthMHz: Double? = nil, state: State? = nil
    ) {
        self.role = role
        self.rat = rat
        self.band = band
        self.bandFromChannel = bandFromChannel
        self.channel = channel
        self.physicalID = physicalID
        self.bandwidthMHz = bandwidthMHz
        self.state = state
    }

    /// Whether the carrier carries data now (a PCell always; an SCell when activated or of unknown state).
    public var isActive: Bool { role != .scell || state == nil || state == .activated }
}

/// A cell the modem measures besides the serving one.
public struct NeighbourCell: Sendable, Equatable, Codable {
    public var rat: CellRAT
    public var channel: Int?
    public var band: RadioBand?
    public var physicalID: Int?
    /// In the RAT's own measures: RSRP/RSRQ (LTE, NR, plus SINR), RSCP/Ec/Io (UMTS), RSSI (GSM).
    public var signal: SignalMeasurement
    /// Only where the modem reports them (GSM neighbours); shown with identifiers only.
    public var lac: Int?
    public var cellID: UInt64?

    public init(
        rat: CellRAT, channel: Int? = nil, band: RadioBand? = nil, physicalID: Int? = nil,
        signal: SignalMeasurement = SignalMeasurement(), lac: Int? = nil, cellID: UInt64? = nil
    ) {
        self.rat = rat
        self.channel = channel
        self.band = band
        self.physicalID = physicalID
        self.signal = signal
        self.lac = lac
        self.cellID = cellID
    }
}

/// What a modem said about its cells. Each part is nil when the modem gave nothing for it (it lacks the request,
/// or answered without the TLV): "not known", which is not "none".
public struct CellReadings: Sendable, Equatable, Codable {
    public var cell: ServingCell?
    public var carriers: [ComponentCarrier]?
    public var neighbours: [NeighbourCell]?

    public init(cell: ServingCell? = nil, carriers: [ComponentCarrier]? = nil, neighbours: [NeighbourCell]? = nil) {
        self.cell = cell
        self.carriers = carriers
        self.neighbours = neighbours
    }

    public var isEmpty: Bool { cell == nil && carriers == nil && neighbours == nil }
}

// MARK: - Summaries

public enum CellSummary {
    /// "LTE B3 + B7, 40 MHz", "LTE B3 + NR n78", "NR n78", "UMTS B1": the technology, the band of each active carrier
    /// (the serving cell's when no carriers are known) and their total bandwidth when every carrier has one.
    public static func bands(_ m: ModemState) -> String? {
        var parts: [String] = []
        var rat: CellRAT?
        let carriers = (m.cells.carriers ?? []).filter(\.isActive)
        if !carriers.isEmpty {
            // The technology is named where it changes: "LTE B3 + B7 + NR n78".
            for c in carriers {
                guard let band = c.band?.name else { continue }
                parts.append(rat == c.rat ? band : c.rat.label + " " + band)
                rat = c.rat
            }
        } else if let cell = m.cells.cell {
            parts.append(cell.rat.label + (cell.band.map { " " + $0.name } ?? ""))
        }
        guard !parts.isEmpty else { return nil }
        var text = parts.joined(separator: " + ")
        let widths = carriers.map(\.bandwidthMHz)
        if carriers.count > 1, widths.allSatisfy({ $0 != nil }) {
            text += ", " + JSON.format(widths.reduce(0) { $0 + $1! }) + " MHz"
        }
        return text
    }

    /// "B3+B7+n78": the bands of the active carriers, else the serving cell's band.
    public static func bandList(_ m: ModemState) -> String? {
        let carriers = (m.cells.carriers ?? []).filter(\.isActive).compactMap(\.band)
        let bands = carriers.isEmpty ? [m.cells.cell?.band].compactMap { $0 } : carriers
        return bands.isEmpty ? nil : bands.map(\.name).joined(separator: "+")
    }

    /// "EARFCN 1300, PCI 123" for the serving cell.
    public static func channel(_ cell: ServingCell, separator: String = ", ") -> String? {
        var parts: [String] = []
        if let ch = cell.channel { parts.append("\(cell.rat.channelName) \(ch)") }
        if let id = cell.physicalID { parts.append("\(cell.rat.physicalIDKey.uppercased()) \(id)") }
        return parts.isEmpty ? nil : parts.joined(separator: separator)
    }
}

// MARK: - JSON

extension RadioBand {
    public var json: JSON { .string(name) }
}

/// The members a serving cell and a carrier share: `rat`, `band`, `band_from_channel` (when derived), `channel`, the
/// physical id under its RAT's key, `bandwidth_mhz`.
private func radioMembers(
    _ rat: CellRAT, _ band: RadioBand?, _ fromChannel: Bool, _ channel: Int?, _ physicalID: Int?, _ bandwidth: Double?
) -> [(String, JSON)] {
    var m: [(String, JSON)] = [("rat", .string(rat.rawValue)), ("band", .optional(band?.name))]
    if fromChannel { m.append(("band_from_channel", .bool(true))) }
    m.append(("channel", .optional(channel)))
    m.append((rat.physicalIDKey, .optional(physicalID)))
    m.append(("bandwidth_mhz", .optional(bandwidth)))
    return m
}

extension ServingCell {
    /// The radio members, then `tac`/`lac` and `cell_id` only with identifiers.
    public func json(showIdentifiers: Bool) -> JSON {
        var m = radioMembers(rat, band, bandFromChannel, channel, physicalID, bandwidthMHz)
        if showIdentifiers {
            switch rat {
            case .lte, .nr: m.append(("tac", .optional(tac)))
            case .gsm, .umts, .tdscdma: m.append(("lac", .optional(lac)))
            }
            m.append(("cell_id", cellID.map { JSON.int(Int64(clamping: $0)) } ?? .null))
        }
        return .object(m)
    }
}

extension ComponentCarrier {
    /// `role`, the radio members, and `state` for an SCell.
    public var json: JSON {
        var m: [(String, JSON)] = [("role", .string(role.rawValue))]
        m += radioMembers(rat, band, bandFromChannel, channel, physicalID, bandwidthMHz)
        if role == .scell { m.append(("state", .optional(state?.rawValue))) }
        return .object(m)
    }

    /// The primary cell as the serving cell describes it (when the modem gave no carrier list of its own).
    public init(pcell s: ServingCell) {
        self.init(
            role: .pcell, rat: s.rat, band: s.band, bandFromChannel: s.bandFromChannel, channel: s.channel,
            physicalID: s.physicalID, bandwidthMHz: s.bandwidthMHz)
    }
}

extension NeighbourCell {
    public func json(showIdentifiers: Bool) -> JSON {
        var m: [(String, JSON)] = [
            ("rat", .string(rat.rawValue)),
            ("band", .optional(band?.name)),
            ("channel", .optional(channel)),
            (rat.physicalIDKey, .optional(physicalID)),
        ]
        if case let .object(measures) = signal.json { m += measures }
        if showIdentifiers, lac != nil || cellID != nil {
            m.append(("lac", .optional(lac)))
            m.append(("cell_id", cellID.map { JSON.int(Int64(clamping: $0)) } ?? .null))
        }
        return .object(m)
    }
}

extension CellReadings {
    /// The `cell`, `carriers` and `neighbours` members of a `wwan` entry (null when not known).
    public func jsonMembers(showIdentifiers: Bool) -> [(String, JSON)] {
        [
            ("cell", cell?.json(showIdentifiers: showIdentifiers) ?? .null),
            ("carriers", carriers.map { .array($0.map(\.json)) } ?? .null),
            ("neighbours", neighbours.map { .array($0.map { $0.json(showIdentifiers: showIdentifiers) }) } ?? .null),
        ]
    }
}
