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
                var changed = change.changed.map(\.rawValue)
                if change.changed.contains(.bars) {
                    changed.removeAll { $0 == "bars" }
                    changed += change.bars.map { b in
                        "bars \(b.link.name) \(b.from.map(String.init) ?? "-")→\(b.to.map(String.init) ?? "gone")"
                    }
                }
                if change.changed.contains(.uplinks) {
                    changed.removeAll { $0 == "uplinks" }
                    changed += change.uplinks.map { u in
                        "uplink \(u.interface) \(u.from.map(uplinkState) ?? "-")→\(u.to.map(uplinkState) ?? "gone")"
                    }
                }
                if change.changed.contains(.validation) {
                    changed.removeAll { $0 == "validation" }
                    changed += change.validation.map { v in "validation \(v.interface) \(v.from?.rawValue ?? "-")→\(v.to.rawValue)" }
                }
                text += "  [\(changed.joined(separator: ", "))] \(change.reason)"
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
