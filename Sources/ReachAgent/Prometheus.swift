// An optional Prometheus textfile for node_exporter's textfile collector (`--collector.textfile.directory`): the
// fleet's existing scraper carries our figures, and we run no server. Written through ReachSystem' safe write: a hidden
// temporary name beside the target (node_exporter reads only *.prom), fsync'ed, then renamed over it, so a scrape
// never sees half a file and a link planted in the textfile directory is never written through.

import Glibc
import ReachCore
import ReachLog

/// What one textfile shows: each target's latest snapshot with its debounced view, and the writer's counters.
public struct MetricsInput: Sendable {
    public struct TargetMetrics: Sendable {
        public var snapshot: Snapshot
        public var view: ReportedView?
        public var changes: UInt64
        public var lastChange: Timestamp?

        public init(snapshot: Snapshot, view: ReportedView?, changes: UInt64, lastChange: Timestamp?) {
            self.snapshot = snapshot
            self.view = view
            self.changes = changes
            self.lastChange = lastChange
        }
    }

    public var targets: [TargetMetrics]
    public var log: ReportLog.Stats

    public init(targets: [TargetMetrics], log: ReportLog.Stats) {
        self.targets = targets
        self.log = log
    }
}

/// The text exposition format (version 0.0.4), rendered without I/O.
public enum PrometheusText {
    public static func render(_ input: MetricsInput) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
            out += name
            if !labels.isEmpty {
                out += "{" + labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
            }
            out += " " + number(value) + "\n"
        }
        let targets = input.targets
        func targetLabel(_ t: TargetMetrics) -> [(String, String)] {
            switch t.snapshot.target {
            case .defaultRoute, .linkLocal: return [("target", t.snapshot.target.kind)]
            case .address, .host: return [("target", t.snapshot.target.kind + ":" + t.snapshot.target.value)]
            }
        }
        typealias TargetMetrics = MetricsInput.TargetMetrics

        family("reach_reachable", "gauge", "1 when the target is reachable now, else 0.")
        for t in targets { sample("reach_reachable", targetLabel(t), t.snapshot.reachable ? 1 : 0) }
        family("reach_status", "gauge", "YYReachability status of the target (one series per status, 1 for the current one).")
        for t in targets {
            for s in ["unknown", "none", "wwan", "wifi"] {
                sample("reach_status", targetLabel(t) + [("status", s)], t.snapshot.status.rawValue == s ? 1 : 0)
            }
        }
        family("reach_medium", "gauge", "Over what packets leave (one series per medium, 1 for the current one).")
        for t in targets {
            for m in Medium.allCases {
                sample("reach_medium", targetLabel(t) + [("medium", m.rawValue)], t.snapshot.medium == m ? 1 : 0)
            }
        }
        family(
            "reach_route_underlay", "gauge",
            "1 for the link the target's route rides on (the bottom of its underlay: a CLAT's, a tunnel's, a VLAN's).")
        for t in targets {
            guard let r = t.snapshot.route, let link = r.link, let bottom = r.underlay?.underlay else { continue }
            sample(
                "reach_route_underlay",
                targetLabel(t) + [
                    ("interface", link.name), ("underlay", bottom.link.name), ("kind", bottom.link.kind.rawValue),
                    ("via", bottom.via?.rawValue ?? ""),
                ], 1)
        }
        family("reach_wwan_generation", "gauge", "WWAN status as a number: 0 none, 2 to 5 for 2G to 5G.")
        for t in targets { sample("reach_wwan_generation", targetLabel(t), Double(t.snapshot.wwanStatus.rawValue)) }
        family("reach_changes_total", "counter", "Changes reported since the agent started.")
        for t in targets { sample("reach_changes_total", targetLabel(t), Double(t.changes)) }
        family("reach_last_change_timestamp_seconds", "gauge", "Unix time of the last reported change (or the start).")
        for t in targets {
            if let c = t.lastChange {
                sample("reach_last_change_timestamp_seconds", targetLabel(t), Double(c.seconds) + Double(c.nanoseconds) / 1e9)
            }
        }

        // Links: from the first target's snapshot (modems and WiFi are the same for every target).
        if let first = targets.first {
            let view = first.view
            let modems = first.snapshot.wwan
            family("reach_modem_present", "gauge", "1 while the modem's control port answers.")
            for m in modems { sample("reach_modem_present", modemLabels(m), m.present ? 1 : 0) }
            family("reach_modem_generation", "gauge", "The modem's generation: 0 none, 2 to 5.")
            for m in modems { sample("reach_modem_generation", modemLabels(m), Double(m.generation.rawValue)) }
            family("reach_modem_info", "gauge", "1 per modem; the labels say what it is on (band: the active carriers').")
            for m in modems { sample("reach_modem_info", modemLabels(m) + infoLabels(m), 1) }
            family("reach_wwan_carriers", "gauge", "Component carriers in use (PCell, activated SCells, NR PSCell); absent when the modem does not say.")
            for m in modems {
                if let carriers = m.cells.carriers {
                    sample("reach_wwan_carriers", modemLabels(m), Double(carriers.filter(\.isActive).count))
                }
            }
            let policy = first.snapshot.signalPolicy
            family("reach_modem_bars", "gauge", "Signal bars 0-4 as reported (hysteresis applied).")
            for m in modems {
                sample("reach_modem_bars", modemLabels(m), Double(view?.bars[LinkKey(.wwan, m.device)] ?? m.bars(policy)))
            }
            family("reach_modem_bars_profile", "gauge", "1 for the signal profile the bars are computed with.")
            if !modems.isEmpty {
                let custom = policy.overridden.isEmpty ? "false" : "true"
                sample("reach_modem_bars_profile", [("profile", policy.name), ("custom_thresholds", custom)], 1)
            }
            family("reach_modem_signal_dbm", "gauge", "Serving-cell signal power in dBm, by measure.")
            for m in modems {
                for (name, v) in [("rssi", m.signal.rssi), ("rsrp", m.signal.rsrp), ("rscp", m.signal.rscp)] {
                    if let v { sample("reach_modem_signal_dbm", modemLabels(m) + [("measure", name)], v) }
                }
                if let nr = m.nrSignal?.rsrp { sample("reach_modem_signal_dbm", modemLabels(m) + [("measure", "nr_rsrp")], nr) }
            }
            family("reach_modem_signal_db", "gauge", "Serving-cell signal quality in dB, by measure.")
            for m in modems {
                for (name, v) in [("rsrq", m.signal.rsrq), ("sinr", m.signal.sinr), ("ecio", m.signal.ecio)] {
                    if let v { sample("reach_modem_signal_db", modemLabels(m) + [("measure", name)], v) }
                }
            }
            let wifi = first.snapshot.wifi
            family("reach_wifi_associated", "gauge", "1 while the station interface is associated.")
            for w in wifi { sample("reach_wifi_associated", [("interface", w.interface)], w.associated ? 1 : 0) }
            family("reach_wifi_bars", "gauge", "WiFi bars 0-4 as reported (hysteresis applied).")
            for w in wifi {
                sample("reach_wifi_bars", [("interface", w.interface)], Double(view?.bars[LinkKey(.wifi, w.interface)] ?? w.bars))
            }
            family("reach_wifi_signal_dbm", "gauge", "WiFi signal in dBm (the kernel's average when present).")
            for w in wifi {
                if let s = w.barSignalDBm { sample("reach_wifi_signal_dbm", [("interface", w.interface)], Double(s)) }
            }
            uplinks(first.snapshot.uplinks, view: view, family: family, sample: sample)
        }

        family("reach_report_lines_total", "counter", "Report lines written to the log.")
        sample("reach_report_lines_total", [], Double(input.log.linesWritten))
        family("reach_report_dropped_lines_total", "counter", "Report lines that could not be written (full or read-only disk).")
        sample("reach_report_dropped_lines_total", [], Double(input.log.linesDropped))
        family("reach_report_errors_total", "counter", "Failed report log opens, writes and rotations.")
        sample("reach_report_errors_total", [], Double(input.log.errors))
        return out
    }

    /// The uplinks' gauges, by interface and kind.
    static func uplinks(
        _ uplinks: [Uplink], view: ReportedView?, family: (String, String, String) -> Void,
        sample: (String, [(String, String)], Double) -> Void
    ) {
        func labels(_ u: Uplink) -> [(String, String)] { [("interface", u.interface), ("kind", u.kind?.rawValue ?? "")] }
        family("reach_uplink_reachable", "gauge", "1 when the uplink could carry packets now, as if it were the only way out.")
        for u in uplinks { sample("reach_uplink_reachable", labels(u), u.reachable ? 1 : 0) }
        family("reach_uplink_primary", "gauge", "1 for the uplink the default route uses now.")
        for u in uplinks { sample("reach_uplink_primary", labels(u), u.primary ? 1 : 0) }
        family("reach_uplink_bars", "gauge", "Signal bars 0-4 of the uplink's modem or WiFi link (hysteresis applied).")
        for u in uplinks {
            if let m = u.modem {
                sample("reach_uplink_bars", labels(u), Double(view?.bars[LinkKey(.wwan, m.device)] ?? m.bars(u.signalPolicy)))
            } else if let w = u.wifi {
                sample("reach_uplink_bars", labels(u), Double(view?.bars[LinkKey(.wifi, w.interface)] ?? w.bars))
            }
        }
        validation(uplinks, labels: labels, family: family, sample: sample)
    }

    /// Validation's gauges (only with validation on): validated 1/0 (no sample while unknown), usable, and the bytes
    /// the probes sent through each uplink.
    static func validation(
        _ uplinks: [Uplink], labels: (Uplink) -> [(String, String)], family: (String, String, String) -> Void,
        sample: (String, [(String, String)], Double) -> Void
    ) {
        let judged = uplinks.filter(\.validationEnabled)
        guard !judged.isEmpty else { return }
        family("reach_uplink_validated", "gauge", "1 when the uplink's probes validated it, 0 when they did not (no sample while unknown).")
        for u in judged { if let v = u.validated { sample("reach_uplink_validated", labels(u), v ? 1 : 0) } }
        family("reach_uplink_usable", "gauge", "1 when the uplink is reachable and validated.")
        for u in judged { sample("reach_uplink_usable", labels(u), u.usable ? 1 : 0) }
        family("reach_validation_probe_bytes_total", "counter", "IP bytes the validation probes sent through the uplink.")
        for u in judged {
            sample("reach_validation_probe_bytes_total", [("interface", u.interface)], Double(u.validation?.bytesSent ?? 0))
        }
    }

    /// Integral values without a fraction ("3", not "3.0"); others in Swift's shortest round-trip form.
    static func number(_ d: Double) -> String {
        guard d.isFinite else { return d.isNaN ? "NaN" : (d > 0 ? "+Inf" : "-Inf") }
        if d.rounded() == d && abs(d) < 1e15 { return String(Int64(d)) }
        return d.description
    }

    static func modemLabels(_ m: ModemState) -> [(String, String)] {
        [("device", m.device), ("interface", m.interface ?? "")]
    }

    /// The info series' own labels: protocol, technologies ("lte+5gnr"), band ("B3+B7+n78", empty when unknown),
    /// operator ("262-01"). No cell identity: the textfile may leave the box.
    static func infoLabels(_ m: ModemState) -> [(String, String)] {
        [
            ("protocol", m.protocol.rawValue), ("access_technologies", m.accessTechnologies.names.joined(separator: "+")),
            ("band", CellSummary.bandList(m) ?? ""), ("operator", m.plmn.map { "\($0.mcc)-\($0.mnc)" } ?? ""),
        ]
    }

    /// Label values escape backslash, double quote and newline.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

/// Writes the textfile: temporary file, fchmod 0644, write, fsync, rename, fsync of the directory (`SafeWrite.replace`).
public final class PrometheusTextfile: @unchecked Sendable {
    // @unchecked: used only under the lock of the sink that owns it (PrometheusSink).
    public private(set) var path: String
    public private(set) var errors: UInt64 = 0
    private let fs: any FileSystem
    private let logger: Logger
    private var failing = false

    public init(path: String, fileSystem: any FileSystem = PosixFileSystem(), logger: Logger) {
        self.path = path
        self.fs = fileSystem
        self.logger = logger
    }

    public func update(path: String) { self.path = path }

    @discardableResult
    public func write(_ text: String) -> Bool {
        let result = fs.replace(path, with: Array(text.utf8), mode: 0o644)
        switch result {
        case .success:
            if failing { logger.info("Prometheus textfile writable again", metadata: ["prometheus.path": "\(path)"]) }
            failing = false
            return true
        case let .failure(e):
            errors += 1
            if !failing {
                logger.warning("Prometheus textfile could not be written", metadata: ["prometheus.path": "\(path)", "error": "\(e)"])
            }
            failing = true
            return false
        }
    }
}
