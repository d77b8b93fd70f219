// reach-modem-sim: a QMUX or MBIM modem on a pseudo-terminal, driven by a scenario file.
// The protocol work is in the ModemSim library; this file is the command line and the I/O loop.

#if canImport(Glibc)
import Glibc
#endif
import ModemSim
import ReachCore

let usage = """
    usage: reach-modem-sim --scenario FILE [--link PATH] [--control PATH] [--replay FILE] [--log FILE] [--verbose]
                           [--clock-on-open] [--garbage SEED | --mutate SEED]
           reach-modem-sim --replay FILE [--link PATH] [--control PATH] [--log FILE] [--verbose]
           reach-modem-sim ctl SOCKET KEY=VALUE...

    A QMI (QMUX) or MBIM modem on a pseudo-terminal, for testing modem clients without hardware.

      --scenario FILE   what the modem is and does (hw/scenarios/*.json; format in hw/scenarios/README.md)
      --replay FILE     answer from recorded exchanges (hw/captures/*.json), rewriting transaction and client
                        ids; requests the capture lacks get NOT_SUPPORTED (QMI) / NoDeviceSupport (MBIM) unless a
                        scenario is given too, which then answers them
      --link PATH       also make PATH a symbolic link to the pty (replaced if it is a symlink, removed at exit)
      --control PATH    unix stream socket; each line a JSON object {"set": {...}}, {"fault": ...},
                        {"indicate": true} or {"query": "state"|"stats"}, answered with one JSON line
      --log FILE        one line per frame in and out (hex and a decoded summary) and per event
      --verbose         the same lines on standard error
      --clock-on-open   the scenario clock (timeline at_ms) starts when a client first opens the port, not at
                        start, so a timed fault cannot pass before a slow client has arrived
      --garbage SEED    a hostile modem: each request is answered with 1-3 random frames (the real answer, the
                        right header with status success around a random body, a random header, or noise)
      --mutate SEED     a damaged modem: the scenario's answers with bits flipped, cut short or extended
                        (SEED: 0-18446744073709551615; the same seed sends the same bytes)
      --check           only validate the scenario / capture and exit (0 when usable, 65 when not)
      --help            this text

    ctl SOCKET KEY=VALUE...: one control line to a running simulator's --control socket; prints its answer.
      KEY is a dotted path into the state (signal.rsrp_dbm, registration, operator.name), or fault, refuse,
      indicate, quiet or query; VALUE is JSON (-110, null, true, [], {...}) or else a plain string. A partial
      state merges into the current one. For example:
        reach-modem-sim ctl /tmp/sim.sock signal.rsrp_dbm=-110
        reach-modem-sim ctl /tmp/sim.sock registration=searching access_technologies=[] operator=null
        reach-modem-sim ctl /tmp/sim.sock query=state
      Exit status: 0 when the simulator took it; 64 bad usage; 65 the simulator refused it (its error is
      printed); 71 no simulator answers at SOCKET.

    Prints "pty: /dev/pts/N" (and "link: PATH") on standard output at once; clients open that path, e.g.
      qmicli -d /dev/pts/N --device-open-qmi --nas-get-system-info
      mbimcli -d /dev/pts/N --query-registration-state

    Exit status: 0 after SIGTERM or SIGINT; 64 bad usage; 65 bad scenario or capture (the message names the key
    path); 66 a file cannot be read; 71 the pty or socket cannot be opened; 73 --link names a non-symlink.
    """

/// Writes text to a descriptor (1 standard output, 2 standard error) unbuffered, so tests see it at once.
func emit(_ fd: Int32, _ text: String) {
    var bytes = ArraySlice(Array(text.utf8))
    while !bytes.isEmpty, let n = try? Sys.writeSome(fd, bytes), n > 0 { bytes = bytes.dropFirst(n) }
}

let shortUsage = usage.split(separator: "\n").prefix(2).joined(separator: "\n") + "\n(--help for more)"

func fail(_ code: Int32, _ message: String) -> Never {
    emit(2, "reach-modem-sim: \(message)\n")
    exit(code)
}

// MARK: Arguments

struct Options {
    var scenario: String?
    var replay: String?
    var link: String?
    var control: String?
    var log: String?
    var verbose = false
    var check = false
    var clockOnOpen = false
    var fuzz: FuzzMode?
}

func parseArguments(_ args: [String]) -> Options {
    var o = Options()
    var i = 0
    func value(_ flag: String) -> String {
        i += 1
        guard i < args.count, !args[i].hasPrefix("--") else { fail(64, "\(flag) needs a value\n\(shortUsage)") }
        return args[i]
    }
    while i < args.count {
        let a = args[i]
        switch a {
        case "--scenario": o.scenario = value(a)
        case "--replay": o.replay = value(a)
        case "--link": o.link = value(a)
        case "--control": o.control = value(a)
        case "--log": o.log = value(a)
        case "--verbose": o.verbose = true
        case "--clock-on-open": o.clockOnOpen = true
        case "--garbage", "--mutate":
            let text = value(a)
            guard o.fuzz == nil else { fail(64, "--garbage and --mutate are mutually exclusive\n\(shortUsage)") }
            guard let seed = UInt64(text) else { fail(64, "\(a) needs a seed from 0 to \(UInt64.max), got '\(text)'") }
            o.fuzz = a == "--garbage" ? .garbage(seed: seed) : .mutate(seed: seed)
        case "--check": o.check = true
        case "--help", "-h":
            emit(1, usage + "\n")
            exit(0)
        default: fail(64, "unknown argument '\(a)'\n\(shortUsage)")
        }
        i += 1
    }
    guard o.scenario != nil || o.replay != nil else { fail(64, "--scenario or --replay is required\n\(shortUsage)") }
    return o
}

/// `reach-modem-sim ctl SOCKET KEY=VALUE...`: a client of the control socket, so no socat is needed.
func runControlClient(_ args: [String]) -> Never {
    let ctlUsage = "usage: reach-modem-sim ctl SOCKET KEY=VALUE...\n(--help for more)"
    guard let socketPath = args.first else { fail(64, "ctl needs a SOCKET and at least one KEY=VALUE\n\(ctlUsage)") }
    if socketPath == "--help" || socketPath == "-h" {
        emit(1, usage + "\n")
        exit(0)
    }
    let line: String
    do {
        line = try ControlCommand.line(Array(args.dropFirst()))
    } catch {
        fail(64, "\(error)\n\(ctlUsage)")
    }
    let reply: String
    do {
        reply = try ControlSocket.exchange(socketPath, line)
    } catch {
        fail(71, "ctl: \(error) (is reach-modem-sim running with --control \(socketPath)?)")
    }
    let answer = try? JSON.parse(reply)
    guard answer?["ok"]?.boolValue == true else {
        fail(65, "ctl: the simulator refused \(line): \(answer?["error"]?.stringValue ?? reply)")
    }
    emit(1, reply + "\n")
    exit(0)
}

if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "ctl" {
    runControlClient(Array(CommandLine.arguments.dropFirst(2)))
}

let options = parseArguments(Array(CommandLine.arguments.dropFirst()))

func readText(_ path: String) -> String {
    do {
        return String(decoding: try Sys.readFile(path), as: UTF8.self)
    } catch {
        fail(66, "cannot read \(path): \(error)")
    }
}

let scenario: Scenario? = options.scenario.map { path in
    do {
        return try ScenarioParser.parse(readText(path))
    } catch {
        fail(65, "\(path): \(error)")
    }
}
let capture: Capture? = options.replay.map { path in
    do {
        let c = try Capture.parse(readText(path))
        if let s = scenario, s.modemProtocol != c.modemProtocol {
            fail(65, "\(path): the capture is \(c.modemProtocol.rawValue), the scenario \(s.modemProtocol.rawValue)")
        }
        return c
    } catch {
        fail(65, "\(path): \(error)")
    }
}

if options.check {
    emit(1, "ok: " + [options.scenario, options.replay].compactMap { $0 }.joined(separator: ", ") + "\n")
    exit(0)
}

// MARK: Signals (self-pipe: the handler only writes a byte)

let signalPipe: (read: Int32, write: Int32) = {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { fail(71, "\(SystemError("pipe"))") }
    Sys.setNonBlocking(fds[0])
    Sys.setNonBlocking(fds[1])
    return (fds[0], fds[1])
}()
for sig in [SIGTERM, SIGINT] {
    signal(sig) { _ in
        var b: UInt8 = 1
        _ = write(signalPipe.write, &b, 1)
    }
}
signal(SIGPIPE, SIG_IGN)
// A parent may hand down a blocked mask (libdispatch worker threads block signals, and posix_spawn keeps the
// spawning thread's mask): unblock the two we handle, or SIGTERM would never arrive.
func unblockHandledSignals() {
    var handled = sigset_t()
    sigemptyset(&handled)
    sigaddset(&handled, SIGTERM)
    sigaddset(&handled, SIGINT)
    sigprocmask(SIG_UNBLOCK, &handled, nil)
}
unblockHandledSignals()

// MARK: The loop

/// The pty, the control socket and the engine, and the loop that connects them.
struct SimulatorLoop {
    let options: Options
    /// When the scenario clock started; nil while --clock-on-open waits for the first client (the clock reads 0).
    var clockStart: UInt64?
    var logFD: Int32 = -1
    var pty: PseudoTerminal?
    var control: ControlSocket?
    var engine: ModemEngine
    /// A client holds the slave open (the master is not hung up).
    var clientPresent = false
    var outbound: [UInt8] = []

    init(options: Options, engine: ModemEngine) {
        self.options = options
        self.engine = engine
        clockStart = options.clockOnOpen ? nil : Sys.monotonicMs()
        if let path = options.log {
            logFD = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
            guard logFD >= 0 else { fail(66, "cannot open the log: \(SystemError("open", path))") }
        }
        if let path = options.control {
            do {
                control = try ControlSocket(path: path)
            } catch {
                fail(71, "--control: \(error)")
            }
        }
        pty = openPort()
    }

    func now() -> UInt64 { clockStart.map { Sys.monotonicMs() - $0 } ?? 0 }

    func log(_ line: String) {
        guard logFD >= 0 || options.verbose else { return }
        let ms = now()
        let text = "\(ms / 1000).\(String(1000 + ms % 1000).dropFirst()) \(line)\n"
        if logFD >= 0 { _ = try? Sys.writeSome(logFD, ArraySlice(Array(text.utf8))) }
        if options.verbose { emit(2, text) }
    }

    func makeLink(_ target: String) {
        guard let link = options.link else { return }
        if let isLink = Sys.isSymlink(link) {
            guard isLink else { fail(73, "--link \(link): exists and is not a symbolic link") }
            unlink(link)
        }
        guard symlink(target, link) == 0 else { fail(73, "--link: \(SystemError("symlink", link))") }
    }

    func removeLink() {
        if let link = options.link, Sys.isSymlink(link) == true { unlink(link) }
    }

    func openPort() -> PseudoTerminal {
        do {
            let pty = try PseudoTerminal.open()
            makeLink(pty.slavePath)
            emit(1, "pty: \(pty.slavePath)\n" + (options.link.map { "link: \($0)\n" } ?? ""))
            return pty
        } catch {
            fail(71, "\(error)")
        }
    }

    func shutdownAndExit(_ code: Int32) -> Never {
        pty?.close()
        removeLink()
        control?.shutdown()
        if logFD >= 0 { close(logFD) }
        exit(code)
    }

    /// Carries out what the engine asked for.
    mutating func perform(_ actions: [EngineAction]) {
        for action in actions {
            switch action {
            case let .log(line):
                log(line)
            case let .write(bytes, note):
                guard pty != nil, clientPresent else {
                    log("out (no client, dropped): \(note)")
                    continue
                }
                log("out: \(Hex.string(bytes)) | \(note)")
                outbound += bytes
            case .close:
                if let p = pty {
                    p.close()
                    pty = nil
                    outbound = []
                    clientPresent = false
                    removeLink()
                    log("port closed")
                }
            case .reopen:
                let p = openPort()
                pty = p
                clientPresent = false
                log("port reopened at \(p.slavePath)")
            }
        }
    }

    mutating func flushOutbound() {
        guard let p = pty, !outbound.isEmpty else { return }
        do {
            let n = try Sys.writeSome(p.master, outbound[...])
            outbound.removeFirst(n)
        } catch {
            log("write to the pty failed: \(error); dropping \(outbound.count) bytes")
            outbound = []
        }
    }

    mutating func clientGone() {
        clientPresent = false
        outbound = []
        log("client disconnected")
    }

    mutating func run() -> Never {
        perform(engine.start(now: now()))
        while true {
            // While no client holds the slave open the master reports POLLHUP without end, so it stays out of
            // the poll set; inotify's IN_OPEN on the slave says when to look again (or, without inotify, every
            // 10 ms).
            if let p = pty, !clientPresent {
                p.drainOpens()
                if !p.isHungUp() {
                    clientPresent = true
                    log("client connected")
                    if clockStart == nil {
                        clockStart = Sys.monotonicMs()
                        log("scenario clock started by the first client")
                    }
                }
            }
            var fds = [pollfd(fd: signalPipe.read, events: Int16(POLLIN), revents: 0)]
            var masterIndex = -1
            if let p = pty, clientPresent {
                masterIndex = fds.count
                let events = Int16(POLLIN) | (outbound.isEmpty ? 0 : Int16(POLLOUT))
                fds.append(pollfd(fd: p.master, events: events, revents: 0))
            } else if let p = pty, p.opens >= 0 {
                fds.append(pollfd(fd: p.opens, events: Int16(POLLIN), revents: 0))
            }
            var controlIndex = -1
            var clientFDs: [Int32] = []
            if let c = control {
                controlIndex = fds.count
                fds.append(pollfd(fd: c.listener, events: Int16(POLLIN), revents: 0))
                clientFDs = Array(c.clients.keys)
                for fd in clientFDs { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            }
            var timeout: Int32 = -1
            if let deadline = engine.nextDeadline {
                let t = now()
                timeout = deadline <= t ? 0 : Int32(min(deadline - t, 60_000))
            }
            if let p = pty, !clientPresent {
                // inotify wakes us on an open; the 250 ms look is a safety net, not the mechanism.
                let look: Int32 = p.opens >= 0 ? 250 : 10
                timeout = timeout < 0 ? look : min(timeout, look)
            }
            if poll(&fds, nfds_t(fds.count), timeout) < 0 && errno != EINTR { fail(71, "\(SystemError("poll"))") }

            if fds[0].revents != 0 {
                log("signal received, exiting")
                shutdownAndExit(0)
            }
            if masterIndex >= 0, let p = pty {
                let rev = fds[masterIndex].revents
                if rev & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    do {
                        if let bytes = try Sys.readAvailable(p.master), !bytes.isEmpty {
                            perform(engine.receive(bytes, now: now()))
                        } else if rev & Int16(POLLHUP) != 0 {
                            clientGone()
                        }
                    } catch {
                        clientGone()  // EIO: the last client closed the slave
                    }
                }
                if clientPresent { flushOutbound() }
            }
            if controlIndex >= 0, let c = control {
                if fds[controlIndex].revents != 0 { c.acceptClients() }
                for (i, fd) in clientFDs.enumerated() where fds[controlIndex + 1 + i].revents != 0 {
                    for line in c.readLines(fd) {
                        let (reply, actions) = engine.control(line, now: now())
                        perform(actions)
                        c.reply(fd, reply)
                    }
                }
            }
            perform(engine.advance(now: now()))
            if clientPresent { flushOutbound() }
        }
    }
}

func runSimulator() -> Never {
    var simulator = SimulatorLoop(
        options: options, engine: ModemEngine(scenario: scenario, capture: capture, fuzz: options.fuzz))
    simulator.run()
}
runSimulator()
