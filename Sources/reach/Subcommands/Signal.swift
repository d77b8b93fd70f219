// `reach signal`: the live view for aiming an antenna. Every interval (1 s by default, no hold-down) one sample of
// every modem and WiFi uplink: on a terminal a screen redrawn in place, else one plain line per sample, or one JSON
// object per sample with --json. The model and the drawing are ReachCore's (LiveSignalModel, LiveSignalText), the
// sources and the cadence ReachAgent's (LiveSignalFeed, LiveSignalSampler); this file holds the terminal.

import GatewayReach
import Glibc
import ReachAgent
import ReachCommandLine
import ReachLog
import Synchronization

extension Reach {
    struct Signal: Subcommand {
        static let spec = CommandSpec(
            name: "signal",
            abstract: "Show the signal live, for aiming an antenna: band, cell, each measure with bars, trend and peak.",
            discussion: """
                One sample per interval of every modem (RAT, band, channel, PCI, carrier aggregation; RSRP, RSRQ, \
                SINR, RSSI or the RAT's own measures) and WiFi uplink. On a terminal the view is redrawn in place: \
                each measure with its bars, a 60-sample sparkline, the best value since start and when, and the \
                change since start. Otherwise (or with --plain) one line per sample; --json one object per sample. \
                Modems are asked for signal reports of about 1 dB where they can give them (QMI Config Signal Info, \
                MBIM Signal State) and polled otherwise, through qmi-proxy/mbim-proxy so that ModemManager keeps the \
                port. A modem that goes away is shown gone until it returns.
                On a terminal q quits (as Ctrl-C does); the screen says at once which ports it opens, and where it \
                looked when it finds no modem or WiFi uplink.
                Exit status: 0 after q, Ctrl-C or --count samples, 64 bad usage, 78 bad configuration.
                """,
            options: [
                OptionSpec("interval", .value("SECONDS"), help: "Seconds between samples (0.1 to 3600, default 1)."),
                OptionSpec("count", .value("N"), help: "Stop after N samples (default: until interrupted)."),
                OptionSpec("json", help: "Print one JSON object per sample: time, wwan and wifi as in 'reach status --json'."),
                OptionSpec("plain", help: "Print one line per sample even on a terminal."),
            ] + SourceOptions.specs + [
                OptionSpec("show-identifiers", help: "With --json: show IMEI, IMSI, ICCID, phone numbers, TAC/LAC and cell ids."),
            ])

        var interval: Double
        var count: Int?
        var json: Bool
        var plain: Bool
        var sources: SourceOptions
        var showIdentifiers: Bool

        init(_ p: ParsedArguments) throws(UsageError) {
            interval = try CommandLineParser.seconds(p, "interval", default: 1, max: 3600)
            guard interval >= 0.1 else {
                throw UsageError("'--interval' must be a number of seconds from 0.1 to 3600, got '\(p.value("interval") ?? "")'")
            }
            if let text = p.value("count") {
                guard let n = Int(text), n >= 1, n <= 100_000_000 else {
                    throw UsageError("'--count' must be a whole number of samples from 1 to 100000000, got '\(text)'")
                }
                count = n
            }
            json = p.flag("json")
            plain = p.flag("plain")
            if json && plain { throw UsageError("--json and --plain are mutually exclusive") }
            sources = try SourceOptions(p)
            showIdentifiers = p.flag("show-identifiers")
        }

        func run() async -> Int32 {
            guard let cfg = sources.configuration() else { return ExitStatus.config }
            let live = !json && !plain && Sys.isatty(1)
            // Log records would scribble over the screen: on a terminal the view itself shows each modem's error.
            let logger = live ? Logger.discarding(label: "reach") : bootstrapLogging(.error).0
            let period = Duration.seconds(interval)
            // The agent's modem options from the configuration (its one mapping), then what a live view needs: the
            // signal every interval (reported, or polled where the modem cannot report it), the cells every 5 s, a
            // lost port tried again within 5 s; the rest a modem cannot announce (the SIM) as the agent does.
            var monitor = ReachabilityOptions(config: cfg, worker: Reach.modemWorker).modemMonitorOptions
            monitor.read.logger = logger
            monitor.reopen = Backoff(initial: .milliseconds(500), maximum: .seconds(5))
            monitor.signalReporting = .live(interval: period)
            monitor.cellInterval = max(.seconds(5), period)
            monitor.signalPollInterval = period
            let clock = ContinuousAgentClock()
            var modemSources: [any ModemSource] = []
            if cfg.modems.enabled {
                let ports = cfg.modems.ports
                modemSources = ports.isEmpty
                    ? [DiscoveredModemSource(options: monitor, interval: .seconds(5), clock: clock)]
                    : ports.map { IndicationModemSource(spec: $0, options: monitor) }
            }
            let search = LiveSignalText.Search(
                modemPorts: cfg.modems.enabled ? cfg.modems.ports.map(\.path) : nil,
                wifiInterfaces: cfg.wifi.enabled ? cfg.wifi.interfaces : nil)
            let wifiSource: (any WiFiSource)? = cfg.wifi.enabled ? NL80211WiFiSource(pollInterval: period) : nil
            let feed = MonitorLiveSignalFeed(modems: modemSources, wifi: wifiSource, wifiInterfaces: cfg.wifi.interfaces)
            await feed.start()

            let sampler = LiveSignalSampler(
                interval: period, count: count, firstSampleWait: monitor.read.readTimeout + .seconds(1), clock: clock,
                signalPolicy: cfg.signalPolicy)
            let terminal = live ? LiveTerminal() : nil
            let lastModel = LastModel()
            let (json, showIdentifiers, interval) = (json, showIdentifiers, interval)
            terminal?.enter()
            // Something on screen at once: a modem's first answer can take seconds (the first sample waits for it).
            terminal?.draw(LiveSignalText.opening(search, now: .now(), intervalSeconds: interval, width: terminal?.width ?? 80))
            let signals = await SignalWatch([SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGCONT])
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await sampler.run(feed) { time, snapshot, model in
                        if let terminal {
                            lastModel.withLock { $0 = model }
                            terminal.draw(LiveSignalText.frame(
                                model, now: time, intervalSeconds: interval, width: terminal.width, search: search))
                        } else if json {
                            writeLine(LiveSignalText.json(
                                time: time, wwan: snapshot.wwan, wifi: snapshot.wifi, showIdentifiers: showIdentifiers,
                                signalPolicy: cfg.signalPolicy
                            ).serialized())
                        } else {
                            writeLine(LiveSignalText.plainLine(
                                time: time, wwan: snapshot.wwan, wifi: snapshot.wifi, signalPolicy: cfg.signalPolicy))
                        }
                    }
                }
                group.addTask {
                    for await signal in signals {
                        switch signal {
                        case SIGWINCH, SIGCONT:
                            // Resized, or back from Ctrl-Z: enter the screen again and draw what there is.
                            guard let terminal, let model = lastModel.withLock({ $0 }) else { continue }
                            if signal == SIGCONT { terminal.enter() }
                            terminal.draw(LiveSignalText.frame(
                                model, now: model.last ?? model.start, intervalSeconds: interval, width: terminal.width,
                                search: search))
                        default:
                            return
                        }
                    }
                }
                if let terminal, terminal.readsKeys {
                    group.addTask { await terminal.waitForQuitKey() }
                }
                await group.next()
                group.cancelAll()
            }
            if let terminal {
                terminal.leave()
                // The last screen stays in the scrollback: the peaks and changes of the session.
                if let model = lastModel.withLock({ $0 }) {
                    writeLine(LiveSignalText.frame(
                        model, now: model.last ?? model.start, intervalSeconds: interval, width: terminal.width, search: search
                    ).joined(separator: "\n"))
                }
            }
            await feed.stop()
            return ExitStatus.ok
        }
    }
}

/// The model of the last sample, for redrawing on SIGWINCH/SIGCONT and for the final screen.
final class LastModel: Sendable {
    private let model = Mutex<LiveSignalModel?>(nil)
    func withLock<T>(_ body: (inout LiveSignalModel?) -> T) -> T { model.withLock { body(&$0) } }
}

/// Writes a line to standard output, whole (one write(2) where it fits).
func writeLine(_ text: String) {
    _ = Sys.writeAll(1, Array((text + "\n").utf8), path: nil)
}

/// The terminal while the live view runs: the alternate screen (so the shell's screen comes back untouched) with
/// the cursor hidden, every frame drawn from the top-left corner in one write, and standard input (when it is the
/// terminal) read key by key without echo so that `q` quits; ISIG stays on, so Ctrl-C and Ctrl-Z act as ever.
/// `leave` undoes all of it; so does Ctrl-Z (SIGTSTP), which stops the process only after restoring the terminal.
final class LiveTerminal: Sendable {
    static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    static let leaveSequence = "\u{1B}[?25h\u{1B}[?1049l"

    /// The view's width: the terminal's, at most 80 columns.
    var width: Int { min(80, size().columns) }

    func size() -> (rows: Int, columns: Int) { Sys.windowSize(1) ?? (24, 80) }

    /// Whether keys are read: standard input is a terminal.
    let readsKeys = Sys.isatty(0)

    func enter() {
        if readsKeys {
            // Non-canonical without echo: a key arrives as it is pressed (termios(3)); the settings before are kept
            // for `leave` and the SIGTSTP handler.
            if case var .success(settings) = Sys.tcgetattr(0) {
                savedTerminalSettings = settings
                settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
                withUnsafeMutableBytes(of: &settings.c_cc) { cc in
                    cc[Int(VMIN)] = 1
                    cc[Int(VTIME)] = 0
                }
                Sys.tcsetattr(0, settings)
            }
        }
        _ = Sys.writeAll(1, Array(Self.enterSequence.utf8), path: nil)
        Sys.signal(SIGTSTP, .handler(liveTerminalStop))
    }

    /// Returns when `q` (or `Q`) is pressed, or when cancelled. Standard input is polled without blocking between
    /// short sleeps, so no thread of the concurrency pool is held; at end of input it waits for cancellation.
    func waitForQuitKey() async {
        var ended = false
        while !Task.isCancelled {
            if !ended {
                if case let .success(events) = Sys.poll(0, Int16(POLLIN), timeoutMs: 0), events != 0 {
                    var buffer = [UInt8](repeating: 0, count: 64)
                    switch buffer.withUnsafeMutableBytes({ Sys.read(0, into: $0, path: nil) }) {
                    case let .success(n) where n > 0:
                        if buffer.prefix(n).contains(where: { $0 == UInt8(ascii: "q") || $0 == UInt8(ascii: "Q") }) { return }
                    case let .failure(e) where e.errno == EAGAIN: break
                    default: ended = true
                    }
                }
            }
            try? await Task.sleep(for: .milliseconds(ended ? 1000 : 50))
        }
    }

    /// The frame, cut to the screen's height so that nothing scrolls.
    func draw(_ lines: [String]) {
        let rows = size().rows
        let shown = lines.prefix(rows)
        let text = "\u{1B}[H" + shown.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J"
        _ = Sys.writeAll(1, Array(text.utf8), path: nil)
    }

    func leave() {
        Sys.signal(SIGTSTP, .default)
        if let settings = savedTerminalSettings { Sys.tcsetattr(0, settings) }
        _ = Sys.writeAll(1, Array(Self.leaveSequence.utf8), path: nil)
    }
}

/// The terminal's settings before the live view changed them; read by the SIGTSTP handler, which can reach only
/// globals. Written in `enter` before the handler is installed.
nonisolated(unsafe) private var savedTerminalSettings: termios?

/// SIGTSTP (Ctrl-Z): show the cursor, leave the alternate screen and give the shell its terminal settings back, then
/// stop as the default action would. Only async-signal-safe calls (write, tcsetattr, signal, raise), made directly:
/// ReachSystem's wrappers may build an error value, which a signal handler must not; SIGCONT brings the view back
/// (Signal.run).
private let liveTerminalStop: @convention(c) (Int32) -> Void = { _ in
    let restore: StaticString = "\u{1B}[?25h\u{1B}[?1049l"
    restore.withUTF8Buffer { _ = Glibc.write(1, $0.baseAddress, $0.count) }  // syscall-direct: in a signal handler
    if var settings = savedTerminalSettings { Glibc.tcsetattr(0, TCSANOW, &settings) }  // syscall-direct: in a signal handler
    Glibc.signal(SIGTSTP, SIG_DFL)  // syscall-direct: in a signal handler
    raise(SIGTSTP)
}
