// The report line: the `reach status --json` object plus an `event` member. docs/how-it-works.md ("Report lines") documents it.
//
//   {"schema":1,"time":…,"target":…,"status":…, …the status schema…, "event":{"type":"change","seq":12,
//    "changed":["status","medium","reachable"],"reason":"route via wlan1 lost carrier",
//    "from":{"status":"wifi","medium":"wifi","reachable":true}}}
//
// Bars inside `wwan[]` and `wifi[]` are the debounced bars the change detector reported (hysteresis and hold-down
// applied), so a line never contradicts the change lines before it; when the instantaneous bars differ they are given
// as `bars_raw`. The top-level status, medium, wwan_status and reachable are the snapshot's own (instantaneous)
// values: a periodic line written while a loss is being held down says so in `event.held`.

public enum ReportEventType: String, Sendable, CaseIterable {
    /// The first line of an agent run: the first determination.
    case start
    /// A change the detector reported.
    case change
    /// The line written every report interval.
    case periodic
    /// The last line, written on a graceful shutdown (SIGTERM, SIGINT).
    case stop
}

public enum ReportLine {
    /// The `event` object.
    /// - `seq` numbers the lines of one agent run from 1, so a gap shows a line that could not be written.
    /// - `held`: fields whose worse value is being held down at this moment (omitted when none).
    public static func event(
        _ type: ReportEventType, seq: UInt64, change: ChangeEvent? = nil, held: [ChangeField] = [],
        reason: String? = nil
    ) -> JSON {
        var m: [(String, JSON)] = [("type", .string(type.rawValue)), ("seq", .int(Int64(clamping: seq)))]
        if let change, !change.initial {
            m.append(("changed", .array(change.changed.map { .string($0.rawValue) })))
            m.append(("reason", .string(change.reason)))
            if let p = change.previous {
                var from: [(String, JSON)] = []
                for f in change.changed {
                    switch f {
                    case .status: from.append(("status", .string(p.status.rawValue)))
                    case .medium: from.append(("medium", .string(p.medium.rawValue)))
                    case .wwanStatus: from.append(("wwan_status", .string(p.wwanStatus.name)))
                    case .reachable: from.append(("reachable", .bool(p.reachable)))
                    case .underlay: from.append(("underlay", .optional(p.underlay)))
                    case .bars, .uplinks, .validation: break
                    }
                }
                m.append(("from", .object(from)))
            }
            if !change.bars.isEmpty {
                m.append(
                    (
                        "bars",
                        .array(
                            change.bars.map {
                                .object([
                                    ("link", .string($0.link.description)), ("from", .optional($0.from)),
                                    ("to", .optional($0.to)),
                                ])
                            })
                    ))
            }
            if !change.uplinks.isEmpty { m.append(("uplinks", .array(change.uplinks.map(\.json)))) }
            if !change.validation.isEmpty { m.append(("validation", .array(change.validation.map(\.json)))) }
        } else if let reason {
            m.append(("reason", .string(reason)))
        }
        if !held.isEmpty { m.append(("held", .array(held.map { .string($0.rawValue) }))) }
        return .object(m)
    }

    /// The whole line: the snapshot's schema-1 JSON with the debounced bars of `view`, then `event`.
    public static func json(snapshot: Snapshot, view: ReportedView?, event: JSON, showIdentifiers: Bool = false) -> JSON {
        guard case var .object(members) = snapshot.json(showIdentifiers: showIdentifiers) else {
            return snapshot.json(showIdentifiers: showIdentifiers)
        }
        if let view {
            for i in members.indices {
                switch members[i].0 {
                case "wwan": members[i].1 = withBars(members[i].1, view: view, kind: .wwan, nameKey: "device")
                case "wifi": members[i].1 = withBars(members[i].1, view: view, kind: .wifi, nameKey: "interface")
                case "uplinks": members[i].1 = uplinksWithBars(members[i].1, view: view)
                default: break
                }
            }
        }
        members.append(("event", event))
        return .object(members)
    }

    /// The debounced bars inside each uplink's `wwan` / `wifi` reading.
    private static func uplinksWithBars(_ array: JSON, view: ReportedView) -> JSON {
        guard case let .array(items) = array else { return array }
        return .array(
            items.map { item in
                guard case var .object(m) = item, let name = item["interface"]?.stringValue else { return item }
                for i in m.indices {
                    switch m[i].0 {
                    case "wwan":
                        if let device = m[i].1["device"]?.stringValue {
                            m[i].1 = debounced(m[i].1, view.bars[LinkKey(.wwan, device)])
                        }
                    case "wifi": m[i].1 = debounced(m[i].1, view.bars[LinkKey(.wifi, name)])
                    default: break
                    }
                }
                return .object(m)
            })
    }

    private static func withBars(_ array: JSON, view: ReportedView, kind: LinkKey.Kind, nameKey: String) -> JSON {
        guard case let .array(items) = array else { return array }
        return .array(
            items.map { item in
                guard let name = item[nameKey]?.stringValue else { return item }
                return debounced(item, view.bars[LinkKey(kind, name)])
            })
    }

    /// `bars` set to the reported value, with the instantaneous one as `bars_raw` when they differ.
    private static func debounced(_ item: JSON, _ reported: Int?) -> JSON {
        guard case var .object(m) = item, let reported, let i = m.firstIndex(where: { $0.0 == "bars" }) else { return item }
        let raw = m[i].1
        m[i].1 = .int(reported)
        if raw != .int(reported) { m.insert(("bars_raw", raw), at: i + 1) }
        return .object(m)
    }
}
