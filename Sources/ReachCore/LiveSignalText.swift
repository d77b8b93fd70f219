// What `reach signal` prints: the full-screen frame for a terminal (redrawn in place, 80 columns), one plain line per
// sample for a pipe, and one JSON object per sample. Pure string building: the terminal I/O lives in the command.

public enum LiveSignalText {
    /// Sparkline levels, lowest first (U+2581…U+2588).
    static let levels: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    /// One character per sample, newest at the right, right-aligned in `width` columns: a level of `scale` (values
    /// outside it are drawn at its ends), a space where there was no value.
    public static func sparkline(_ samples: [Double?], scale: ClosedRange<Double>, width: Int = LiveSignalModel.history) -> String {
        let shown = samples.suffix(width)
        var out = String(repeating: " ", count: width - shown.count)
        let span = scale.upperBound - scale.lowerBound
        for v in shown {
            guard let v else {
                out.append(" ")
                continue
            }
            let x = span > 0 ? (v - scale.lowerBound) / span : 0
            out.append(levels[min(levels.count - 1, max(0, Int(x * Double(levels.count))))])
        }
        return out
    }

    /// "10:15:30" (UTC).
    public static func clock(_ t: Timestamp) -> String {
        let s = t.rfc3339
        return String(s.dropFirst(11).prefix(8))
    }

    static func number(_ v: Double) -> String { JSON.format((v * 10).rounded() / 10) }

    static func signed(_ v: Double) -> String {
        let r = (v * 10).rounded() / 10
        if r == 0 { return "±0" }
        return (r > 0 ? "+" : "") + JSON.format(r)
    }

    static func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
        let n = s.count
        guard n < width else { return s }
        let fill = String(repeating: " ", count: width - n)
        return right ? fill + s : s + fill
    }

    /// Cuts a line to `width` columns (every character here is one column wide).
    static func fit(_ s: String, _ width: Int) -> String { s.count <= width ? s : String(s.prefix(width)) }

    // MARK: The terminal frame

    /// The whole screen: a title line, then a block per link. Every line fits `width` columns.
    public static func frame(_ model: LiveSignalModel, now: Timestamp, intervalSeconds: Double, width: Int = 80) -> [String] {
        var lines: [String] = []
        var title = "reach signal  \(clock(now)) UTC  every \(JSON.format(intervalSeconds)) s  \(model.samples) sample"
        title += model.samples == 1 ? "" : "s"
        title += " since \(clock(model.start))  Ctrl-C stops"
        lines.append(title)
        if model.links.isEmpty {
            lines.append("")
            lines.append("no modem or WiFi uplink found yet")
        }
        for link in model.links {
            lines.append("")
            lines += block(link, now: now)
        }
        return lines.map { fit($0, width) }
    }

    /// "LTE B3 + NR n78  EARFCN 1300  PCI 123": technology and band, the serving cell's channel and identity.
    public static func radioSummary(_ m: ModemState, separator: String = "  ") -> String {
        var parts: [String] = []
        if let bands = CellSummary.bands(m) {
            parts.append(bands)
        } else if !m.accessTechnologies.isEmpty {
            parts.append(m.accessTechnologies.names.joined(separator: "+"))
        }
        if let cell = m.cells.cell, let ch = CellSummary.channel(cell, separator: separator) { parts.append(ch) }
        return parts.joined(separator: separator)
    }

    static func block(_ link: LinkTrack, now: Timestamp) -> [String] {
        var lines: [String] = []
        var head = link.name
        if let m = link.modem {
            head += " (\(m.protocol.rawValue))"
            if let gone = link.goneSince {
                lines.append(head + "  GONE since \(clock(gone))" + (m.error.map { " (\($0))" } ?? "") + ", waiting for it")
            } else if let e = m.error {
                // A modem that did not answer says so: its registration is unknown, not "not registered".
                lines.append(head + "  " + (m.fault?.words(protocol: m.protocol) ?? e))
            } else if !m.registration.isRegistered {
                lines.append(head + "  not registered (\(m.registration.rawValue))")
            } else {
                head += "  " + radioSummary(m)
                head += "  \(SnapshotText.barGlyphs(link.bars)) \(link.bars)/4"
                lines.append(head)
            }
        } else {
            let w = link.wifi
            head += "  WiFi"
            if let gone = link.goneSince {
                lines.append(head + "  GONE since \(clock(gone)), waiting for it")
            } else if let w, w.associated {
                head += " \"\(w.ssid ?? "?")\""
                if let ch = w.channel { head += "  ch \(ch)" + (w.band.map { " \($0.rawValue)" } ?? "") }
                head += "  \(SnapshotText.barGlyphs(link.bars)) \(link.bars)/4"
                lines.append(head)
            } else {
                lines.append(head + "  not associated")
            }
        }
        if let back = link.backSince, link.goneSince == nil, now.seconds - back.seconds < 60 {
            lines.append("  back since \(clock(back))")
        }
        for t in link.tracks {
            let scale = t.measure.scale(link.family, policy: link.signalPolicy)
            lines.append(measureLine(t, family: link.family, policy: link.signalPolicy))
            lines.append("    " + sparkline(t.samples, scale: scale) + "  " + scaleLabel(scale))
        }
        return lines
    }

    static func scaleLabel(_ r: ClosedRange<Double>) -> String { "\(JSON.format(r.lowerBound))…\(JSON.format(r.upperBound))" }

    /// "  RSRP     -95 dBm ▂▄▆_  best  -85 dBm at 10:15:41  Δ -10 dB".
    public static func measureLine(_ t: MeasureTrack, family: SignalFamily, policy: SignalPolicy = .android) -> String {
        let m = t.measure
        var line = "  " + pad(m.label, 7) + " " + pad(t.latest.map(number) ?? "—", 6, right: true) + " " + pad(m.unit, 3)
        if m.thresholds(family, policy: policy) != nil {
            let bars = SignalBars.level(m, t.latest, family: family, policy: policy)
            line += " " + (bars.map(SnapshotText.barGlyphs) ?? "    ")
        } else {
            line += "     "
        }
        if let best = t.best, let at = t.bestAt {
            line += "  best " + pad(number(best), 6, right: true) + " " + m.unit + " at " + clock(at)
        }
        if let change = t.change { line += "  Δ " + signed(change) + " " + (m.unit == "dBm" ? "dB" : m.unit) }
        return line
    }

    // MARK: One plain line per sample (not a terminal)

    /// "2026-…Z  /dev/cdc-wdm0 LTE B3 EARFCN 1300 PCI 123 bars 3 rsrp -95 rsrq -10 sinr 12.5 rssi -65 | wlan0 …"
    public static func plainLine(
        time: Timestamp, wwan: [ModemState], wifi: [WiFiLink], signalPolicy: SignalPolicy = .android
    ) -> String {
        var links: [String] = []
        for m in wwan {
            var parts = [m.device]
            if !m.present {
                parts.append("gone")
            } else if m.error != nil {
                parts.append(m.fault?.words(protocol: m.protocol) ?? "error")
            } else if !m.registration.isRegistered {
                parts.append(m.registration.rawValue)
            } else {
                let summary = radioSummary(m, separator: " ")
                if !summary.isEmpty { parts.append(summary) }
                parts.append("bars \(m.bars(signalPolicy))")
                for measure in LiveMeasure.allCases {
                    if let v = measure.value(serving: m.signal, nr: m.nrSignal) { parts.append("\(measure.rawValue) \(number(v))") }
                }
            }
            if let e = m.error { parts.append("(\(e))") }
            links.append(parts.joined(separator: " "))
        }
        for w in wifi where w.mode == .station {
            var parts = [w.interface]
            if w.associated {
                parts.append("bars \(w.bars)")
                if let s = w.barSignalDBm { parts.append("signal \(s)") }
            } else {
                parts.append("not associated")
            }
            links.append(parts.joined(separator: " "))
        }
        return time.rfc3339 + "  " + (links.isEmpty ? "no modem or WiFi uplink" : links.joined(separator: " | "))
    }

    // MARK: One JSON object per sample

    /// `{"time": …, "wwan": […], "wifi": […]}`, the entries shaped as in `reach status --json`.
    public static func json(
        time: Timestamp, wwan: [ModemState], wifi: [WiFiLink], showIdentifiers: Bool = false,
        signalPolicy: SignalPolicy = .android
    ) -> JSON {
        .object([
            ("time", .string(time.rfc3339)),
            ("wwan", .array(wwan.map { $0.json(showIdentifiers: showIdentifiers, signalPolicy: signalPolicy) })),
            ("wifi", .array(wifi.map(\.json))),
        ])
    }
}
