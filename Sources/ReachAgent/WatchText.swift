// The human lines of `reach watch`: the full status once, then one line per change. Pure string building.

import ReachCore

public enum WatchText {
    public static func line(_ type: ReportEventType, _ s: Snapshot, _ change: ChangeEvent?) -> String {
        switch type {
        case .start:
            return s.time.rfc3339 + "  " + SnapshotText.render(s)
        case .change:
            var text = s.time.rfc3339 + "  " + SnapshotText.headline(s)
            if s.wwanStatus != .none { text += " · wwan \(s.wwanStatus.name)" }
            if let change {
                // The fields in brackets, the details once, in the reason ("/dev/x 3→2 bars").
                text += "  [\(change.changed.map(\.rawValue).joined(separator: ", "))] \(change.reason)"
            }
            return text
        case .periodic, .stop:
            return s.time.rfc3339 + "  " + SnapshotText.headline(s)
        }
    }

    /// "reachable", "unreachable", with " primary" when it carries the default route.
    static func uplinkState(_ v: UplinkView) -> String {
        (v.reachable ? "reachable" : "unreachable") + (v.primary ? " primary" : "")
    }
}
