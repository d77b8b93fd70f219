// What `reach signal` prints: the full-screen frame for a terminal (redrawn in place, 40 to 80 columns), one plain line per
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

    /// Cuts a line to `width` columns (every character here is one column wide). The last resort for a single word
    /// wider than the screen; everything else is laid out by `wrap`, which never cuts.
    static func fit(_ s: String, _ width: Int) -> String { s.count <= width ? s : String(s.prefix(width)) }

    /// Lays out pieces on lines of at most `width` columns: each piece carries its own leading separator ("  best
    /// -85 dBm …") and goes on the current line when it fits whole, else starts the next line after `indent` (its
    /// leading spaces dropped). A piece is never split, so a number is never cut; only a piece wider than a whole
    /// line is, by `fit`.
    static func wrap(_ pieces: [String], width: Int, indent: String = "    ") -> [String] {
        var lines: [String] = []
        var line = ""
        for piece in pieces where !piece.isEmpty {
            if line.isEmpty {
                line = piece
            } else if line.count + piece.count <= width {
                line += piece
            } else {
                lines.append(line)
                line = indent + String(piece.drop { $0 == " " })
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.map { fit($0, width) }
    }

    /// A text split into words, each a piece for `wrap` (a long error message wraps between words).
    static func words(_ text: String, first separator: String) -> [String] {
        text.split(separator: " ").enumerated().map { ($0.offset == 0 ? separator : " ") + $0.element }
    }

    // MARK: The terminal frame

    /// What `reach signal` looks at: the modem ports it opens (empty: the ones discovery finds; nil: modems off) and
    /// the WiFi interfaces it shows (empty: every station; nil: WiFi off). For the first screen and for "nothing
    /// found", which say where reach looked.
    public struct Search: Sendable, Equatable {
        public var modemPorts: [String]?
        public var wifiInterfaces: [String]?

        public init(modemPorts: [String]?, wifiInterfaces: [String]?) {
            self.modemPorts = modemPorts
            self.wifiInterfaces = wifiInterfaces
        }

        /// "modems at /dev/cdc-wdm0", "modems in /sys/class/usbmisc/cdc-wdm*, /sys/class/wwan".
        var modemPlaces: String? {
            guard let ports = modemPorts else { return nil }
            return ports.isEmpty ? SnapshotText.modemSearchPlaces : ports.joined(separator: ", ")
        }

        var wifiPlaces: String? {
            guard let names = wifiInterfaces else { return nil }
            return names.isEmpty ? "every WiFi station (nl80211)" : names.joined(separator: ", ") + " (nl80211)"
        }
    }

    static func title(_ now: Timestamp, intervalSeconds: Double, samples: Int, since start: Timestamp?, width: Int) -> [String] {
        var pieces = ["reach signal", "  \(clock(now)) UTC", "  every \(JSON.format(intervalSeconds)) s"]
        if let start { pieces.append("  \(samples) sample" + (samples == 1 ? "" : "s") + " since \(clock(start))") }
        pieces.append("  q quits")
        return wrap(pieces, width: width)
    }

    /// The screen before the first sample (a modem's first read can take a few request timeouts): what is being
    /// opened, so the screen is never blank.
    public static func opening(_ search: Search, now: Timestamp, intervalSeconds: Double, width: Int = 80) -> [String] {
        var lines = title(now, intervalSeconds: intervalSeconds, samples: 0, since: nil, width: width)
        lines.append("")
        switch search.modemPorts {
        case nil:
            break
        case let ports? where ports.isEmpty:
            lines += wrap(words("looking for modems in \(SnapshotText.modemSearchPlaces) …", first: ""), width: width)
        case let ports?:
            for port in ports { lines += wrap(words("opening \(port) …", first: ""), width: width) }
        }
        if let wifi = search.wifiPlaces { lines += wrap(words("reading \(wifi) …", first: ""), width: width) }
        return lines
    }

    /// The whole screen: a title line, then a block per link. Every line fits `width` columns, and no number or
    /// word is cut: what does not fit goes on the next line.
    public static func frame(
        _ model: LiveSignalModel, now: Timestamp, intervalSeconds: Double, width: Int = 80,
        search: Search = Search(modemPorts: [], wifiInterfaces: [])
    ) -> [String] {
        var lines = title(now, intervalSeconds: intervalSeconds, samples: model.samples, since: model.start, width: width)
        let modems = model.links.contains { $0.kind == .wwan }
        let wifi = model.links.contains { $0.kind == .wifi }
        var missing: [String] = []
        if !modems, let places = search.modemPlaces {
            missing += wrap(words("no modem found yet (looked at \(places))", first: ""), width: width)
        }
        if !wifi, let places = search.wifiPlaces {
            missing += wrap(words("no WiFi uplink found yet (looked at \(places))", first: ""), width: width)
        }
        if !missing.isEmpty { lines += [""] + missing }
        for link in model.links {
            lines.append("")
            lines += block(link, now: now, width: width)
        }
        return lines
    }

    /// "LTE B3 + NR n78  EARFCN 1300  PCI 123": technology and band, the serving cell's channel and identity.
    public static func radioSummary(_ m: ModemState, separator: String = "  ") -> String {
        radioParts(m, separator: separator).joined(separator: separator)
    }

    static func radioParts(_ m: ModemState, separator: String = "  ") -> [String] {
        var parts: [String] = []
        if let bands = CellSummary.bands(m) {
            parts.append(bands)
        } else if !m.accessTechnologies.isEmpty {
            parts.append(m.accessTechnologies.names.joined(separator: "+"))
        }
        if let cell = m.cells.cell, let ch = CellSummary.channel(cell, separator: separator) { parts.append(ch) }
        return parts
    }

    static func block(_ link: LinkTrack, now: Timestamp, width: Int = 80) -> [String] {
        var lines: [String] = []
        var head = [link.name]
        let bars = "  \(SnapshotText.barGlyphs(link.bars)) \(link.bars)/4"
        if let m = link.modem {
            head[0] += " (\(m.protocol.rawValue))"
            if let gone = link.goneSince {
                head.append("  GONE since \(clock(gone))")
                if let e = m.error { head += words("(\(e))", first: " ") }
                head[head.count - 1] += ","  // the comma stays with its word when the rest wraps
                head.append(" waiting for it")
            } else if let e = m.error {
                // A modem that did not answer says so: its registration is unknown, not "not registered".
                if let said = m.fault?.words(protocol: m.protocol) { head += words(said, first: "  ") } else { head += words(e, first: "  ") }
            } else if !m.registration.isRegistered {
                head.append("  not registered (\(m.registration.rawValue))")
            } else {
                // Each part of the radio summary is a piece of its own: "EARFCN 1300" moves whole.
                head += radioParts(m).map { "  " + $0 }
                head.append(bars)
            }
        } else {
            let w = link.wifi
            head[0] += "  WiFi"
            if let gone = link.goneSince {
                head += ["  GONE since \(clock(gone)),", " waiting for it"]
            } else if let w, w.associated {
                head.append(" \"\(w.ssid ?? "?")\"")
                if let ch = w.channel { head.append("  ch \(ch)" + (w.band.map { " \($0.rawValue)" } ?? "")) }
                head.append(bars)
            } else {
                head.append("  not associated")
            }
        }
        lines += wrap(head, width: width)
        if let back = link.backSince, link.goneSince == nil, now.seconds - back.seconds < 60 {
            lines.append("  back since \(clock(back))")
        }
        for t in link.tracks {
            let scale = t.measure.scale(link.family, policy: link.signalPolicy)
            lines += measureLines(t, family: link.family, policy: link.signalPolicy, width: width)
            lines.append(sparklineLine(t.samples, scale: scale, width: width))
        }
        return lines
    }

    /// "    ▆▆▆▅▅▅▄▄▄  -138…-88": the sparkline narrowed to leave room for its scale (at most 60 samples).
    static func sparklineLine(_ samples: [Double?], scale: ClosedRange<Double>, width: Int) -> String {
        let label = scaleLabel(scale)
        let room = max(1, min(LiveSignalModel.history, width - 4 - 2 - label.count))
        return fit("    " + sparkline(samples, scale: scale, width: room) + "  " + label, width)
    }

    static func scaleLabel(_ r: ClosedRange<Double>) -> String { "\(JSON.format(r.lowerBound))…\(JSON.format(r.upperBound))" }

    /// The pieces of a measure's line: the value with its bars, the best value (with its time, when `at`), the
    /// change since start.
    static func measurePieces(_ t: MeasureTrack, family: SignalFamily, policy: SignalPolicy, at: Bool) -> [String] {
        let m = t.measure
        var first = "  " + pad(m.label, 7) + " " + pad(t.latest.map(number) ?? "—", 6, right: true) + " " + pad(m.unit, 3)
        if m.thresholds(family, policy: policy) != nil {
            let bars = SignalBars.level(m, t.latest, family: family, policy: policy)
            first += " " + (bars.map(SnapshotText.barGlyphs) ?? "    ")
        } else {
            first += "     "
        }
        var pieces = [first]
        if let best = t.best, let bestAt = t.bestAt {
            pieces.append("  best " + pad(number(best), 6, right: true) + " " + m.unit + (at ? " at " + clock(bestAt) : ""))
        }
        if let change = t.change { pieces.append("  Δ " + signed(change) + " " + (m.unit == "dBm" ? "dB" : m.unit)) }
        return pieces
    }

    /// "  RSRP     -95 dBm ▂▄▆_  best  -85 dBm at 10:15:41  Δ -10 dB" on one line of any width.
    public static func measureLine(_ t: MeasureTrack, family: SignalFamily, policy: SignalPolicy = .android) -> String {
        measurePieces(t, family: family, policy: policy, at: true).joined()
    }

    /// A measure's line within `width` columns: whole when it fits; else without the time of the best value (the
    /// column an installer needs least); else wrapped, the change on a line of its own. Numbers are never cut.
    public static func measureLines(
        _ t: MeasureTrack, family: SignalFamily, policy: SignalPolicy = .android, width: Int
    ) -> [String] {
        let full = measurePieces(t, family: family, policy: policy, at: true)
        if full.joined().count <= width { return [full.joined()] }
        return wrap(measurePieces(t, family: family, policy: policy, at: false), width: width, indent: "          ")
    }

    // MARK: One plain line per sample (not a terminal)

    /// "2026-…Z  /dev/cdc-wdm0 LTE B3 EARFCN 1300 PCI 123 bars 3 rsrp -95 dBm rsrq -10 dB sinr 12.5 dB rssi -65 dBm |
    /// wlan0 …"
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
                    if let v = measure.value(serving: m.signal, nr: m.nrSignal) {
                        parts.append("\(measure.rawValue) \(number(v)) \(measure.unit)")
                    }
                }
            }
            if let e = m.error { parts.append("(\(e))") }
            links.append(parts.joined(separator: " "))
        }
        for w in wifi where w.mode == .station {
            var parts = [w.interface]
            if w.associated {
                parts.append("bars \(w.bars)")
                if let s = w.barSignalDBm { parts.append("signal \(s) dBm") }
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
