// `reach signal` as a user runs it: its flags, its JSON and plain lines against the simulator, and the live view in
// a real terminal: tmux runs it, capture-pane reads the screen back. Modems are opened through qmi-proxy, which
// binds an abstract socket per network namespace, so every run that uses the proxy runs in a namespace of its own.

import Foundation
import ReachTestSupport
import Testing

@Suite struct SignalFlagTests {
    /// Every bad flag: exit 64, and the message names the flag.
    @Test(arguments: [
        (["--interval", "0"], "--interval"), (["--interval", "0.05"], "--interval"), (["--interval", "x"], "--interval"),
        (["--interval", "3601"], "--interval"), (["--count", "0"], "--count"), (["--count", "-2"], "--count"),
        (["--count", "1.5"], "--count"), (["--count", "many"], "--count"), (["--json", "--plain"], "--plain"),
        (["--modem", "cdc-wdm0"], "--modem"), (["--modem", "/dev/cdc-wdm0:at"], "--modem"),
        (["--no-modems", "--modem", "/dev/cdc-wdm0:qmi"], "--no-modems"), (["--no-wifi", "--wifi", "wlan0"], "--wifi"),
        (["--wifi", "a/b"], "--wifi"), (["--modem-timeout", "0"], "--modem-timeout"), (["--bogus"], "--bogus"),
        (["--count"], "--count"),
    ] as [([String], String)])
    func badFlags(args: [String], flag: String) async throws {
        let r = try await runReach(["signal"] + args)
        #expect(r.status == 64, "\(args): \(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(flag), "\(args): \(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func helpNamesEveryOption() async throws {
        let r = try await runReach(["signal", "--help"])
        #expect(r.status == 0)
        for option in ["--interval", "--count", "--json", "--plain", "--modem", "--modem-access", "--show-identifiers"] {
            #expect(r.stdout.contains(option), "\(option)")
        }
    }
}

@Suite struct SignalCommandTests {
    /// `signal --json --count 3` through qmi-proxy: three samples one second apart, each shaped like status's
    /// `wwan` entries (cell and carriers included), identifiers absent.
    @Test(.needsRoot) func jsonCountThreeThroughTheProxy() async throws {
        let ns = try Namespace("sig")
        defer { ns.delete() }
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        let r = try await ns.exec([TestPaths.reach, "signal", "--json", "--count", "3", "--no-wifi", "--modem", "\(sim.link):qmi"], timeout: 40)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3, "\(r.stdout)")
        var times: [Date] = []
        let parse = ISO8601DateFormatter()
        parse.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["time", "wwan", "wifi"])
            let time = try #require(object["time"] as? String)
            times.append(try #require(parse.date(from: time)))
            let modem = try #require((object["wwan"] as? [[String: Any]])?.first)
            #expect(modem["generation"] as? String == "4g" && modem["bars"] as? Int == 4)  // RSRP -92: android's 4 bars
            let cell = try #require(modem["cell"] as? [String: Any])
            #expect(cell["band"] as? String == "B3" && cell["pci"] as? Int == 123 && cell["tac"] == nil)
            #expect((modem["carriers"] as? [Any])?.count == 3)
            #expect(modem["identifiers"] == nil)
        }
        for i in 1..<times.count {
            let gap = times[i].timeIntervalSince(times[i - 1])
            #expect(gap > 0.8 && gap < 1.5, "samples \(i - 1)→\(i) \(gap) s apart")
        }
        // The live view asked for 1 dB signal reports (Config Signal Info v2), through the proxy.
        #expect(sim.log.contains("config_signal_info_v2"), "\(sim.log)")
    }

    /// Not a terminal: one plain line per sample; the walk's drop shows at the next sample (no hold-down).
    @Test func plainLinesFollowTheSignal() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte-ca")
        let reach = try await Spawned.start(
            [TestPaths.reach, "signal", "--interval", "0.3", "--count", "8", "--no-wifi", "--modem-access", "direct", "--modem", "\(sim.link):qmi"],
            stdout: .capture, stderr: .capture)
        #expect(try await TestSupport.eventually(timeout: 15) { reach.stdout?.text.contains("rsrp -92") == true })
        try await sim.control(#"{"set":{"signal":{"rssi_dbm":-80,"rsrp_dbm":-118,"rsrq_db":-16,"sinr_db":-2}}}"#)
        let status = await reach.wait(timeout: 20)
        let out = reach.stdout?.text ?? ""
        #expect(status == 0, "\(reach.errorText)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 8, "\(out)")
        #expect(lines.allSatisfy { $0.contains("LTE B3 + B7, 40 MHz EARFCN 1300 PCI 123") }, "\(out)")
        // android: -118 is 2 bars; every value with its unit.
        #expect(lines.last?.contains("bars 2 rsrp -118 dBm rsrq -16 dB sinr -2 dB rssi -80 dBm") == true, "\(out)")
    }
}

/// A terminal to run a program in and read back: a tmux server of the test's own (its socket in a temporary
/// directory), one pane of `width`×50 (80 columns unless asked).
final class TmuxPane: @unchecked Sendable {
    let socket: String
    let tmux: String

    init(command: String, width: Int = 80) async throws {
        tmux = try TestSupport.which("tmux")
        socket = NSTemporaryDirectory() + "reach-tmux-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try await TestSupport.sh([tmux, "-S", socket, "new-session", "-d", "-x", "\(width)", "-y", "50", "-s", "live", command])
    }

    func screen() async throws -> String { try await TestSupport.sh([tmux, "-S", socket, "capture-pane", "-p", "-t", "live"]) }

    /// tmux's own view of the pane: whether the cursor shows and the alternate screen is on.
    func flags() async throws -> String {
        try await TestSupport.sh([tmux, "-S", socket, "display-message", "-p", "-t", "live", "#{cursor_flag} #{alternate_on}"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func keys(_ keys: String) async throws { try await TestSupport.sh([tmux, "-S", socket, "send-keys", "-t", "live", keys]) }

    func end() {
        _ = try? TestSupport.run([tmux, "-S", socket, "kill-server"])
        try? FileManager.default.removeItem(atPath: socket)
    }
}

@Suite(.serialized) struct LiveViewTests {
    /// The RSRP sparkline row of the screen: the line after the "RSRP" measure line.
    static func rsrpSparkline(_ screen: String) -> String? {
        let lines = screen.components(separatedBy: "\n")
        guard let i = lines.firstIndex(where: { $0.hasPrefix("  RSRP ") }), i + 1 < lines.count else { return nil }
        return lines[i + 1]
    }

    /// The sparkline's levels in order, repeats squeezed: "▇▅▇█▃▇" for the walk.
    static func levels(_ sparkline: String) -> String {
        var out = ""
        for c in sparkline where "▁▂▃▄▅▆▇█".contains(c) && out.last != c { out.append(c) }
        return out
    }

    /// The installer's walk (-95, -110, -100, -85, -120, -95 dBm, here every 2.5 s) in a real terminal, through
    /// qmi-proxy: the numbers, bars, peak hold and sparkline follow every step; the modem is pulled and comes back;
    /// Ctrl-C leaves the terminal as it was (cursor shown, main screen, line discipline untouched) with the last
    /// screen in the scrollback.
    @Test(.needsRoot, .needs(TestSupport.find("tmux") != nil, "tmux (scripts/setup installs it)")) func liveViewFollowsTheWalk() async throws {
        let ns = try Namespace("live")
        defer { ns.delete() }
        let scenario = try String(contentsOfFile: TestPaths.scenarios + "/qmi-timeline-signal-walk.json", encoding: .utf8)
            .replacingOccurrences(of: "\"every_ms\": 4000", with: "\"every_ms\": 2500")
            .replacingOccurrences(of: "\"start_ms\": 4000", with: "\"start_ms\": 2500")
        #expect(scenario.contains("\"every_ms\": 2500"))
        let sim = try await ModemSimulator.start(json: scenario, extra: ["--clock-on-open"])
        let command = "ip netns exec \(ns.name) \(TestPaths.reach) signal --interval 0.5 --no-wifi --modem \(sim.link):qmi;"
            + " echo EXIT=$?; stty -a; sleep 120"
        let pane = try await TmuxPane(command: command)
        defer { pane.end() }
        var screen = ""
        func until(_ what: String, timeout: Double = 20, _ condition: @escaping (String) -> Bool) async throws -> Bool {
            try await TestSupport.eventually(timeout: timeout, every: 0.1) {
                screen = try await pane.screen()
                return condition(screen)
            }
        }
        // The first frame: band, channel and PCI in the header; the cursor hidden on the alternate screen.
        #expect(try await until("first frame") { $0.contains("LTE B3  EARFCN 1300  PCI 123") && $0.contains("  RSRP ") }, "\(screen)")
        #expect(try await pane.flags() == "0 1")
        // Bars on the android profile (LTE RSRP -128/-118/-108/-98 dBm); the sparkline spans 10 dB beyond them.
        #expect(try await until("-110") { $0.contains("  RSRP      -110 dBm ▂▄__") }, "\(screen)")
        #expect(try await until("-85 held") { $0.contains("  RSRP       -85 dBm ▂▄▆█  best    -85 dBm at") }, "\(screen)")
        // At -120 dBm: one bar, the -85 dBm peak still held, the change from the start -25 dB.
        #expect(try await until("-120") { $0.contains("  RSRP      -120 dBm ▂___  best    -85 dBm at") && $0.contains("Δ -25 dB") }, "\(screen)")
        #expect(try await until("back to -95") { $0.contains("  RSRP       -95 dBm ▂▄▆█  best    -85 dBm at") && $0.contains("Δ ±0 dB") }, "\(screen)")
        let spark = try #require(Self.rsrpSparkline(screen))
        #expect(Self.levels(spark).hasSuffix("▇▅▇█▃▇"), "\(spark)")
        #expect(spark.hasSuffix("  -138…-88"))
        // The modem is pulled (the port closes, a new one appears after 3 s): gone, then back.
        try await sim.control(#"{"fault":{"close":{"reopen_after_ms":3000}}}"#)
        #expect(try await until("gone") { $0.contains("(qmi)  GONE since") }, "\(screen)")
        #expect(try await until("back", timeout: 30) { $0.contains("  back since") && $0.contains("PCI 123") }, "\(screen)")
        // Ctrl-C: the program ends with 0 and the terminal is as it was.
        try await pane.keys("C-c")
        // `stty -a` runs after the exit status is printed: wait for its last line (extproc) too.
        #expect(try await until("exit") { $0.contains("EXIT=0") && $0.contains("extproc") }, "\(screen)")
        #expect(try await pane.flags() == "1 0")
        #expect(screen.contains(" icanon ") || screen.contains(" icanon\n") || screen.contains("icanon"), "\(screen)")
        #expect(!screen.contains("-icanon") && !screen.contains("-echo "), "\(screen)")
        // The last screen stays in the scrollback, above the shell's output.
        #expect(screen.contains("best    -85 dBm at"), "\(screen)")
    }

    /// Issue 31: at 60 and 80 columns, in a real terminal, against the simulator: a rise of 11 dB shows whole ("Δ +11
    /// dB", which 60 columns cut to "Δ +1"), a gone modem's line ends in "waiting for it", no line is wider than
    /// the terminal, and `q` quits with 0, leaving the terminal as it was.
    @Test(.needs(TestSupport.find("tmux") != nil, "tmux (scripts/setup installs it)"), arguments: [60, 80])
    func narrowTerminalAndQuitKey(width: Int) async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")  // RSRP -95 dBm
        let command = "\(TestPaths.reach) signal --interval 0.3 --no-wifi --modem-access direct --modem \(sim.link):qmi;"
            + " echo EXIT=$?; stty -a; sleep 120"
        let pane = try await TmuxPane(command: command, width: width)
        defer { pane.end() }
        var screen = ""
        func until(_ timeout: Double = 20, _ condition: @escaping (String) -> Bool) async throws -> Bool {
            try await TestSupport.eventually(timeout: timeout, every: 0.1) {
                screen = try await pane.screen()
                return condition(screen)
            }
        }
        #expect(try await until { $0.contains("  RSRP ") && $0.contains("-95 dBm") }, "\(screen)")
        try await sim.control(#"{"set":{"signal":{"rssi_dbm":-60,"rsrp_dbm":-84,"rsrq_db":-10,"sinr_db":12.5}}}"#)
        #expect(try await until { $0.contains("Δ +11 dB") }, "\(screen)")
        func fits(_ screen: String) -> Bool { screen.split(separator: "\n").allSatisfy { $0.count <= width } }
        #expect(fits(screen), "\(screen)")
        #expect(screen.contains("q quits"), "\(screen)")
        // The port goes away for good: the gone line is whole.
        try await sim.control(#"{"fault":{"close":{"reopen_after_ms":600000}}}"#)
        #expect(try await until { $0.contains("GONE since") && $0.contains("waiting for it") }, "\(screen)")
        #expect(fits(screen), "\(screen)")
        try await pane.keys("q")
        #expect(try await until { $0.contains("EXIT=0") && $0.contains("extproc") }, "\(screen)")
        #expect(try await pane.flags() == "1 0")
        #expect(!screen.contains("-icanon") && !screen.contains("-echo "), "\(screen)")
    }

    /// A modem that does not answer (a pty nobody serves): the screen says at once which port is being opened.
    @Test(.needs(TestSupport.find("tmux") != nil, "tmux (scripts/setup installs it)")) func somethingOnScreenWhileAModemOpens() async throws {
        // A raw pty whose master nobody reads: requests go unanswered, as with a modem that hangs while it opens.
        var master: Int32 = -1
        var slave: Int32 = -1
        var name = [CChar](repeating: 0, count: 128)
        try #require(openpty(&master, &slave, &name, nil, nil) == 0)
        defer { close(master) }
        var tio = termios()
        tcgetattr(slave, &tio)
        cfmakeraw(&tio)
        tcsetattr(slave, TCSANOW, &tio)
        close(slave)
        let port = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let command = "\(TestPaths.reach) signal --no-wifi --modem-access direct --modem-timeout 10 --modem \(port):qmi; sleep 120"
        let pane = try await TmuxPane(command: command, width: 60)
        defer { pane.end() }
        var screen = ""
        let shown = try await TestSupport.eventually(timeout: 3, every: 0.1) {
            screen = try await pane.screen()
            return screen.contains("opening \(port) …")
        }
        #expect(shown, "\(screen)")
        #expect(!screen.contains("  RSRP "), "the first sample came before the modem answered: \(screen)")
        try await pane.keys("q")
    }
}
