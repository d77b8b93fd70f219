// The model behind `reach signal`: per link (modem or WiFi uplink) and per measure, the last 60 samples, the value at
// the start, and the best value seen with its time. State as a value, time as a parameter (like `ChangeDetector`):
// the caller records one sample per interval; nothing here reads a clock or a modem.

/// A measure the live view follows.
public enum LiveMeasure: String, Sendable, CaseIterable, Hashable {
    case rsrp, rsrq, sinr, rssi, rscp, ecio
    /// The NR leg under 5G NSA (reported apart from the LTE anchor).
    case nrRSRP = "nr_rsrp", nrRSRQ = "nr_rsrq", nrSINR = "nr_sinr"
    /// A WiFi station's signal (the beacon average the bars use).
    case wifiSignal = "signal"

    public var label: String {
        switch self {
        case .rsrp: return "RSRP"
        case .rsrq: return "RSRQ"
        case .sinr: return "SINR"
        case .rssi: return "RSSI"
        case .rscp: return "RSCP"
        case .ecio: return "Ec/Io"
        case .nrRSRP: return "NR RSRP"
        case .nrRSRQ: return "NR RSRQ"
        case .nrSINR: return "NR SINR"
        case .wifiSignal: return "Signal"
        }
    }

    public var unit: String {
        switch self {
        case .rsrp, .rssi, .rscp, .nrRSRP, .wifiSignal: return "dBm"
        case .rsrq, .sinr, .ecio, .nrRSRQ, .nrSINR: return "dB"
        }
    }

    /// The measure's value in a modem measurement (the serving cell's, or the NR leg's for the NR measures).
    public func value(serving: SignalMeasurement, nr: SignalMeasurement?) -> Double? {
        switch self {
        case .rsrp: return serving.rsrp
        case .rsrq: return serving.rsrq
        case .sinr: return serving.sinr
        case .rssi: return serving.rssi
        case .rscp: return serving.rscp
        case .ecio: return serving.ecio
        case .nrRSRP: return nr?.rsrp
        case .nrRSRQ: return nr?.rsrq
        case .nrSINR: return nr?.sinr
        case .wifiSignal: return nil
        }
    }

    /// The threshold table of this measure on a family of radios under a signal policy: the policy's own table where
    /// the policy grades this measure, so that a measure's bars and the link's bars agree; else the `strict` profile's
    /// (Android's built-in defaults: an installer still sees RSRQ or SINR graded when the bars use RSRP alone). nil
    /// where bars are not defined (Ec/Io).
    public func thresholds(_ family: SignalFamily, policy: SignalPolicy) -> BarThresholds? {
        if self == .wifiSignal { return .wifiRSSI }
        let graded: (SignalFamily, SignalMeasure?)
        switch self {
        case .nrRSRP: graded = (.nr, .rsrp)
        case .nrRSRQ: graded = (.nr, .rsrq)
        case .nrSINR: graded = (.nr, .sinr)
        default: graded = (family, SignalMeasure(rawValue: rawValue))
        }
        if let measure = graded.1, let barFamily = BarFamily.allCases.first(where: { $0.signalFamily == graded.0 }) {
            for p in [policy, SignalPolicy.strict] {
                if let t = p.rule(barFamily).measures.first(where: { $0.measure == measure }) { return t.table }
            }
        }
        return fallbackThresholds(family)
    }

    /// The tables of `Signal.swift` for a measure no profile grades on this family.
    func fallbackThresholds(_ family: SignalFamily) -> BarThresholds? {
        switch (self, family) {
        case (.rsrp, .lte): return .lteRSRP
        case (.rsrq, .lte): return .lteRSRQ
        case (.sinr, .lte): return .lteRSSNR
        case (.rssi, .lte): return .lteRSSI
        case (.rsrp, .nr), (.nrRSRP, _): return .nrRSRP
        case (.rsrq, .nr), (.nrRSRQ, _): return .nrRSRQ
        case (.sinr, .nr), (.nrSINR, _): return .nrSINR
        case (.rssi, .gsm): return .gsmRSSI
        case (.rssi, .wcdma): return .wcdmaRSSI
        case (.rscp, .wcdma): return .wcdmaRSCP
        case (.rssi, .cdma): return .cdmaRSSI
        case (.wifiSignal, _): return .wifiRSSI
        default: return nil
        }
    }

    /// The range a sparkline spans: 10 dB beyond the outer bar boundaries, so the boundaries fall inside it.
    public func scale(_ family: SignalFamily, policy: SignalPolicy) -> ClosedRange<Double> {
        if let t = thresholds(family, policy: policy) { return (t.thresholds[0] - 10)...(t.thresholds[3] + 10) }
        return -24...0  // Ec/Io
    }
}

extension SignalBars {
    /// The bars one measure alone reaches on a family of radios, from the same tables as `level(_:_:)`; nil when the
    /// value is absent, out of range or the measure has no bars.
    public static func level(_ measure: LiveMeasure, _ value: Double?, family: SignalFamily, policy: SignalPolicy) -> Int? {
        measure.thresholds(family, policy: policy)?.level(value)
    }
}

/// One measure of one link over time.
public struct MeasureTrack: Sendable, Equatable {
    public let measure: LiveMeasure
    /// The last `LiveSignalModel.history` samples, oldest first; nil where there was no value.
    public private(set) var samples: [Double?] = []
    /// The first value seen.
    public private(set) var first: Double?
    /// The best (highest) value seen, and when. Every measure here is better when higher.
    public private(set) var best: Double?
    public private(set) var bestAt: Timestamp?

    public init(_ measure: LiveMeasure) { self.measure = measure }

    public var latest: Double? { samples.last ?? nil }

    /// The change from the first value to the latest one.
    public var change: Double? {
        guard let first, let latest else { return nil }
        return latest - first
    }

    mutating func record(_ value: Double?, at time: Timestamp, capacity: Int) {
        samples.append(value)
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        guard let value else { return }
        if first == nil { first = value }
        if best == nil || value > best! {
            best = value
            bestAt = time
        }
    }
}

/// One modem or WiFi uplink in the live view.
public struct LinkTrack: Sendable, Equatable {
    public enum Kind: String, Sendable { case wwan, wifi }

    public let kind: Kind
    /// The control port or the interface name.
    public let name: String
    /// The latest state (nil for the other kind).
    public private(set) var modem: ModemState?
    public private(set) var wifi: WiFiLink?
    /// Since when the link is gone (port lost, unplugged, interface removed); nil while present.
    public private(set) var goneSince: Timestamp?
    /// When it last came back after being gone.
    public private(set) var backSince: Timestamp?
    public private(set) var tracks: [MeasureTrack] = []

    init(kind: Kind, name: String, signalPolicy: SignalPolicy) {
        self.kind = kind
        self.name = name
        self.signalPolicy = signalPolicy
    }

    /// The radio family whose thresholds grade the measures.
    public var family: SignalFamily {
        guard let m = modem else { return .lte }
        let anchor = m.accessTechnologies.members.filter { $0 != .nr }.max() ?? m.accessTechnologies.primary
        return anchor?.signalFamily ?? .lte
    }

    /// How the modem's bars are graded: the policy status and the agent use.
    public private(set) var signalPolicy: SignalPolicy = .android

    /// The link's bars: `ModemState.bars(_:)` / `WiFiLink.bars`, the same answer status and the agent give.
    public var bars: Int { modem?.bars(signalPolicy) ?? wifi?.bars ?? 0 }

    var isGone: Bool { goneSince != nil }

    mutating func record(modem state: ModemState?, wifi link: WiFiLink?, at time: Timestamp, capacity: Int) {
        let present: Bool
        var values: [LiveMeasure: Double] = [:]
        if let state {
            modem = state
            present = state.present
            if present && state.registration.isRegistered {
                for m in LiveMeasure.allCases {
                    if let v = m.value(serving: state.signal, nr: state.nrSignal) { values[m] = v }
                }
            }
        } else if let link {
            wifi = link
            present = true
            if link.associated, let s = link.barSignalDBm { values[.wifiSignal] = Double(s) }
        } else {
            present = false
        }
        if present {
            if goneSince != nil { backSince = time }
            goneSince = nil
        } else if goneSince == nil {
            goneSince = time
            backSince = nil
        }
        for m in LiveMeasure.allCases where values[m] != nil && !tracks.contains(where: { $0.measure == m }) {
            // A measure that appears later has fewer samples; sparklines are drawn right-aligned (newest at the
            // right edge), so every sparkline on screen lines up in time.
            tracks.append(MeasureTrack(m))
            tracks.sort { LiveMeasure.allCases.firstIndex(of: $0.measure)! < LiveMeasure.allCases.firstIndex(of: $1.measure)! }
        }
        for i in tracks.indices { tracks[i].record(values[tracks[i].measure], at: time, capacity: capacity) }
    }
}

/// Every link's tracks since the view started.
public struct LiveSignalModel: Sendable, Equatable {
    /// Samples kept per measure (one sparkline's width).
    public static let history = 60

    public let start: Timestamp
    /// How bars are graded (the configuration's `signal`).
    public let signalPolicy: SignalPolicy
    public private(set) var samples = 0
    public private(set) var last: Timestamp?
    public private(set) var links: [LinkTrack] = []

    public init(start: Timestamp, signalPolicy: SignalPolicy = .android) {
        self.start = start
        self.signalPolicy = signalPolicy
    }

    /// One sample: every modem and WiFi uplink as read now. A link missing from a sample counts as gone (a modem
    /// that vanished entirely, a WiFi interface removed); it returns when it appears again. WiFi interfaces that
    /// are not stations (access points) are not uplinks and are left out.
    public mutating func record(time: Timestamp, wwan: [ModemState], wifi: [WiFiLink]) {
        samples += 1
        last = time
        var seen = Set<String>()
        for m in wwan {
            let key = "wwan:" + m.device
            seen.insert(key)
            update(.wwan, m.device) { $0.record(modem: m, wifi: nil, at: time, capacity: Self.history) }
        }
        for w in wifi where w.mode == .station {
            let key = "wifi:" + w.interface
            seen.insert(key)
            update(.wifi, w.interface) { $0.record(modem: nil, wifi: w, at: time, capacity: Self.history) }
        }
        for i in links.indices where !seen.contains(links[i].kind.rawValue + ":" + links[i].name) {
            links[i].record(modem: nil, wifi: nil, at: time, capacity: Self.history)
        }
    }

    private mutating func update(_ kind: LinkTrack.Kind, _ name: String, _ body: (inout LinkTrack) -> Void) {
        if let i = links.firstIndex(where: { $0.kind == kind && $0.name == name }) {
            body(&links[i])
        } else {
            var link = LinkTrack(kind: kind, name: name, signalPolicy: signalPolicy)
            body(&link)
            links.append(link)
        }
    }
}
