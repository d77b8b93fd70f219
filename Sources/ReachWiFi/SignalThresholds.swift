// Which RSSI thresholds to hand the kernel's connection quality monitor (CQM) so that it, not a poll, says when the
// bars change. Pure: the monitor applies the plan with NL80211_CMD_SET_CQM.
import ReachCore

public enum SignalThresholdPlan: Sendable, Equatable {
    /// All bar boundaries at once (the wiphy has NL80211_EXT_FEATURE_CQM_RSSI_LIST; cfg80211 then watches the
    /// range around the current signal and moves it itself).
    case list(thresholds: [Int32], hysteresis: UInt32)
    /// One threshold, moved by the monitor whenever the bar changes (older drivers: one threshold only).
    case single(threshold: Int32, hysteresis: UInt32)

    /// The bar boundaries of `BarThresholds.wifiRSSI` (-88/-77/-66/-55 dBm), ascending.
    public static let barBoundaries: [Int32] = [-88, -77, -66, -55]

    public static func list(_ boundaries: [Int32] = barBoundaries, hysteresis: UInt32 = 2) -> SignalThresholdPlan {
        .list(thresholds: boundaries.sorted(), hysteresis: hysteresis)
    }

    /// A single threshold for a station now at `signal` dBm: the boundary nearest to it, so the next crossing that
    /// changes the bar is the one reported. The kernel reports LOW/HIGH relative to that threshold (and again each
    /// time the signal moves by more than the hysteresis), and the monitor moves it after every bar change.
    public static func single(
        signal: Int?, boundaries: [Int32] = barBoundaries, hysteresis: UInt32 = 2
    ) -> SignalThresholdPlan {
        let sorted = boundaries.sorted()
        guard let first = sorted.first else { return .single(threshold: 0, hysteresis: hysteresis) }
        guard let signal else { return .single(threshold: first, hysteresis: hysteresis) }
        let nearest = sorted.min { abs(Int($0) - signal) < abs(Int($1) - signal) } ?? first
        return .single(threshold: nearest, hysteresis: hysteresis)
    }

    public var thresholds: [Int32] {
        switch self {
        case .list(let t, _): return t
        case .single(let t, _): return [t]
        }
    }

    public var hysteresis: UInt32 {
        switch self {
        case .list(_, let h), .single(_, let h): return h
        }
    }
}
