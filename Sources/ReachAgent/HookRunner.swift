// Event hooks, after NetworkManager's dispatcher (dispatcher.d) and ModemManager's connection.d: on every change line
// the executables in `api.hooks_directory` run one after the other in name order (run-parts(8)'s rule for names:
// letters, digits, "_" and "-"), each with the line on standard input and REACH_* variables (`HookEnvironment`) in an
// otherwise empty environment, started with posix_spawn (no shell) as the agent's own user.
//
// - A worker thread of its own while hooks run (`reach-hooks`, started by the first event and ended when no event
//   waits, so an idle agent keeps none): the hub hands over the line and returns; a hook that hangs delays only
//   later hooks.
//   The queue is one event deep: when hooks fall behind, waiting events collapse to the latest and the log says how
//   many were skipped (the hooks always see the newest state once the changes stop).
// - A hook that runs past `hook_timeout_seconds` gets SIGTERM, then SIGKILL two seconds later, sent to its process
//   group (each hook starts one), and the group is swept with SIGKILL once it is done, so nothing it started lingers.
// - Refused with a log line, as NetworkManager's dispatcher does (check_permissions): a file not owned by root or the
//   agent's user, group- or world-writable, or setuid/setgid; a directory with the same problems refuses them all.
// - Standard output goes to /dev/null; standard error is read as it comes and only its first `outputLimit` bytes are
//   kept (the rest is counted and dropped), so a flooding hook costs CPU until its timeout, never memory. A hook that
//   fails (exit status, signal or timeout) is logged with that stderr; nothing of it reaches the report.
// - On OpenWrt, when ubus(1) and hotplug-call exist, each change is also sent as `ubus send reach.change LINE` and
//   `hotplug-call reach` runs /etc/hotplug.d/reach/* with the hooks' environment (plus ACTION=change), through the
//   same runner.

import Glibc
import ReachCore
import ReachLog
import ReachSystem
import Synchronization

public final class HookRunner: Sendable {
    public struct Settings: Sendable {
        public var directory: String?
        public var timeoutSeconds: Double
        public var killGraceSeconds: Double = Defaults.hookKillGraceSeconds
        /// Bytes of a hook's standard error kept for the log.
        public var outputLimit = 4096
        /// ubus(1) and hotplug-call, when this system has them (OpenWrt).
        public var ubus: String?
        public var hotplugCall: String?

        public init(directory: String?, timeoutSeconds: Double, ubus: String? = nil, hotplugCall: String? = nil) {
            self.directory = directory
            self.timeoutSeconds = timeoutSeconds
            self.ubus = ubus
            self.hotplugCall = hotplugCall
        }

        /// The first executable of `names` found in the usual directories.
        public static func find(_ names: [String]) -> String? {
            names.first { access($0, X_OK) == 0 }
        }
    }

    public struct Stats: Sendable, Equatable {
        /// Events handed to the runner, and those skipped because a newer one came while they waited.
        public var events: UInt64 = 0
        public var skipped: UInt64 = 0
        public var runs: UInt64 = 0
        public var failures: UInt64 = 0
        public var timeouts: UInt64 = 0
        public var refused: UInt64 = 0
        public init() {}
    }

    struct Event: Sendable {
        var line: String
        var environment: [(String, String)]
        var seq: String
    }

    private struct Mailbox {
        var pending: Event?
        var skippedSinceRun = 0
        var stopping = false
        var busy = false
        /// The worker thread runs (from the first waiting event until none waits).
        var working = false
    }

    private let settings: Settings
    private let logger: Logger
    private let mailbox = Mutex(Mailbox())
    private let statsBox = Mutex(Stats())
    /// The process group of the program running now (0: none), for `stop`.
    private let running = Mutex<pid_t>(0)

    /// A runner (no thread until the first event). Optional for the callers that handle a runner that could not be
    /// made; this one always can.
    public static func start(_ settings: Settings, logger: Logger) -> HookRunner? {
        HookRunner(settings: settings, logger: logger)
    }

    private init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    public var stats: Stats { statsBox.withLock { $0 } }

    /// Whether nothing waits and nothing runs.
    public var isIdle: Bool { mailbox.withLock { $0.pending == nil && !$0.busy } }

    /// Hands a change line to the hooks. Never blocks: an event still waiting is replaced (and counted as skipped).
    public func post(line: JSON) {
        let event = Event(
            line: line.serialized(), environment: HookEnvironment.variables(line: line),
            seq: line["event"]?["seq"]?.intValue.map { String($0) } ?? "?")
        let start = mailbox.withLock { m -> Bool in
            if m.pending != nil { m.skippedSinceRun += 1 }
            m.pending = event
            if m.working || m.stopping { return false }
            m.working = true
            return true
        }
        statsBox.withLock { $0.events += 1 }
        guard start else { return }
        if !startThread("hooks", { [self] in run() }) {
            // No thread to be had now: the event waits, and the next one tries again.
            mailbox.withLock { $0.working = false }
            logger.warning("Hooks delayed: no thread could be started for them", metadata: ["errno": "\(EAGAIN)"])
        }
    }

    /// Runs nothing more; a program still running gets SIGTERM (its process group), then SIGKILL when it has not
    /// ended within `timeoutMS`, so the agent leaves no hook behind when it stops.
    public func stop(timeoutMS: Int64 = 1000) {
        mailbox.withLock { $0.stopping = true }
        let group = running.withLock { $0 }
        if group > 0 { Sys.kill(-group, SIGTERM) }
        let deadline = monotonicMilliseconds() + timeoutMS
        while mailbox.withLock({ $0.working }) && monotonicMilliseconds() < deadline { Sys.nanosleep(.milliseconds(2)) }
        let left = running.withLock { $0 }
        if left > 0 { Sys.kill(-left, SIGKILL) }
    }

    /// The worker thread: runs the hooks for the waiting event until none waits (or the runner stops), then ends.
    private func run() {
        while true {
            let (event, skipped) = mailbox.withLock { m -> (Event?, Int) in
                let taken = m.stopping ? (nil, 0) : (m.pending, m.skippedSinceRun)
                m.pending = nil
                m.skippedSinceRun = 0
                m.busy = taken.0 != nil
                if taken.0 == nil { m.working = false }
                return taken
            }
            guard let event else { return }
            if skipped > 0 {
                statsBox.withLock { $0.skipped += UInt64(skipped) }
                logger.notice(
                    "Hooks fell behind; earlier change events were skipped, running the latest",
                    metadata: ["hooks.skipped": "\(skipped)", "event.seq": "\(event.seq)"])
            }
            runAll(event)
            mailbox.withLock { $0.busy = false }
        }
    }

    private func runAll(_ event: Event) {
        let stdin = Array((event.line + "\n").utf8)
        let environment = event.environment.map { "\($0.0)=\($0.1)" } + ["PATH=\(HookEnvironment.path)"]
        for hook in hooks() {
            _ = execute(hook, argv: [hook], environment: environment, stdin: stdin, seq: event.seq)
        }
        if let ubus = settings.ubus {
            _ = execute(ubus, argv: [ubus, "send", "reach.change", event.line], environment: ["PATH=\(HookEnvironment.path)"],
                        stdin: [], seq: event.seq)
        }
        if let hotplug = settings.hotplugCall {
            _ = execute(hotplug, argv: [hotplug, "reach"], environment: environment + ["ACTION=change"], stdin: stdin,
                        seq: event.seq)
        }
    }

    /// The hooks to run now, in name order; refused ones are logged and counted.
    func hooks() -> [String] {
        guard let dir = settings.directory else { return [] }
        guard case let .success(st) = Sys.stat(dir) else { return [] }  // no directory: no hooks
        if let why = Self.distrust(st, isDirectory: true) {
            refuse(dir, why)
            return []
        }
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if HookEnvironment.isHookName(name) { names.append(name) }
        }
        var out: [String] = []
        for name in names.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let path = dir + "/" + name
            guard case let .success(f) = Sys.stat(path), f.kind == .regular else { continue }
            if let why = Self.distrust(f, isDirectory: false) {
                refuse(path, why)
                continue
            }
            guard access(path, X_OK) == 0 else { continue }  // not executable: skipped, as run-parts does
            out.append(path)
        }
        return out
    }

    private func refuse(_ path: String, _ why: String) {
        statsBox.withLock { $0.refused += 1 }
        logger.warning("Hook refused", metadata: ["hook": "\(path)", "reason": "\(why)"])
    }

    /// Why a hook (or the hooks directory) must not be run, or nil: NetworkManager's rule (owned by root, not
    /// writable by group or others, not setuid), with the agent's own user allowed as owner too.
    static func distrust(_ st: stat, isDirectory: Bool) -> String? {
        let me = geteuid()
        if st.st_uid != 0 && st.st_uid != me { return "owned by uid \(st.st_uid), neither root nor the agent's user" }
        if st.st_mode & 0o020 != 0 { return "writable by its group (mode \(String(st.st_mode & 0o7777, radix: 8)))" }
        if st.st_mode & 0o002 != 0 { return "writable by everyone (mode \(String(st.st_mode & 0o7777, radix: 8)))" }
        if !isDirectory && st.st_mode & (S_ISUID | S_ISGID) != 0 { return "setuid or setgid" }
        return nil
    }

    // MARK: - One program

    struct Outcome {
        var status: Int32
        var timedOut: Bool
        var output: [UInt8]
        var droppedBytes: Int
    }

    /// Runs one program to its end (or its timeout) and logs a failure. Nil when it could not be started.
    @discardableResult
    func execute(_ path: String, argv: [String], environment: [String], stdin: [UInt8], seq: String) -> Outcome? {
        statsBox.withLock { $0.runs += 1 }
        let outcome: Outcome
        let spawned = Self.spawnAndWait(
            path, argv: argv, environment: environment, stdin: stdin, settings: settings,
            started: { pid in self.running.withLock { $0 = pid } })
        running.withLock { $0 = 0 }
        switch spawned {
        case let .success(o): outcome = o
        case let .failure(e):
            statsBox.withLock { $0.failures += 1 }
            logger.warning("Hook could not be started", metadata: ["hook": "\(path)", "event.seq": "\(seq)", "error": "\(e)"])
            return nil
        }
        if outcome.timedOut { statsBox.withLock { $0.timeouts += 1 } }
        if outcome.status != 0 || outcome.timedOut {
            statsBox.withLock { $0.failures += 1 }
            var text = String(decoding: outcome.output, as: UTF8.self)
            if outcome.droppedBytes > 0 { text += "… (\(outcome.droppedBytes) more bytes dropped)" }
            let how = outcome.timedOut
                ? "timed out after \(settings.timeoutSeconds) s; its process group was killed"
                : outcome.status >= 128 ? "killed by signal \(outcome.status - 128)" : "exit status \(outcome.status)"
            logger.warning("Hook failed", metadata: ["hook": "\(path)", "event.seq": "\(seq)", "result": "\(how)", "stderr": "\(text)"])
        } else {
            logger.debug("Hook ran", metadata: ["hook": "\(path)", "event.seq": "\(seq)"])
        }
        return outcome
    }

    /// posix_spawn in a process group of its own with an empty signal mask and default dispositions, stdin from a
    /// pipe holding `stdin`, stdout to /dev/null, stderr to a pipe read here; every other descriptor closed.
    static func spawnAndWait(
        _ path: String, argv: [String], environment: [String], stdin: [UInt8], settings: Settings,
        started: (pid_t) -> Void = { _ in }
    ) -> Result<Outcome, SystemError> {
        let input: (read: Int32, write: Int32)
        let errors: (read: Int32, write: Int32)
        switch Sys.pipe() {
        case let .success(p): input = p
        case let .failure(e): return .failure(e)
        }
        switch Sys.pipe() {
        case let .success(p): errors = p
        case let .failure(e):
            Sys.close(input.read)
            Sys.close(input.write)
            return .failure(e)
        }
        defer { Sys.close(errors.read) }
        // The line goes into the pipe before the hook starts (grown past the default 64 KiB when the line needs it);
        // the hook reads it, then end of file.
        if stdin.count > 65536 { _ = Sys.setPipeSize(input.write, min(stdin.count, 1 << 20), path: nil) }
        _ = Sys.setNonBlocking(input.write, true, path: nil)
        _ = stdin.withUnsafeBytes { Sys.write(input.write, $0, path: nil) }
        Sys.close(input.write)

        // A process group of its own (a timeout kills the group), stdin from the pipe, stdout to /dev/null, stderr
        // to a pipe read here. ETXTBSY (the file still open for writing somewhere: being installed, or its writer's
        // descriptor inherited by a child another thread started before it was closed) passes within milliseconds,
        // or within a second on a loaded machine: retried for up to 1.1 s.
        let spawned = Spawn.posix_spawn(
            path, argv: argv, environment: environment,
            actions: [.dup2(from: input.read, to: 0), .null(1), .dup2(from: errors.write, to: 2)],
            flags: [.cleanSignals, .newProcessGroup], busyRetry: .milliseconds(1100))
        Sys.close(input.read)
        Sys.close(errors.write)
        let pid: pid_t
        switch spawned {
        case let .success(p): pid = p
        case let .failure(e): return .failure(e)
        }
        started(pid)

        // Our end only: the hook's stderr stays blocking for the hook.
        let readFD = errors.read
        _ = Sys.setNonBlocking(readFD, true, path: nil)
        var kept: [UInt8] = []
        var dropped = 0
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var readOpen = true
        func drain() {
            while readOpen {
                switch buffer.withUnsafeMutableBytes({ Sys.read(readFD, into: $0, path: nil) }) {
                case let .success(n) where n > 0:
                    let room = max(0, settings.outputLimit - kept.count)
                    kept += buffer[0..<min(n, room)]
                    dropped += n - min(n, room)
                case .success: readOpen = false
                case .failure: return  // EAGAIN: nothing more for now (EINTR is retried by Sys.read)
                }
            }
        }
        let start = monotonicMilliseconds()
        let timeout = Int64(settings.timeoutSeconds * 1000)
        let grace = Int64(settings.killGraceSeconds * 1000)
        var signalled = 0  // 0 none, 1 SIGTERM, 2 SIGKILL
        var status: Int32?
        var exitedAt: Int64 = 0
        while true {
            let now = monotonicMilliseconds()
            if status == nil {
                switch Sys.waitpid(pid, block: false) {
                case let .success(ended?):
                    status = ended.shellStatus
                    exitedAt = now
                case .success(nil): break
                case .failure:
                    status = -1
                    exitedAt = now
                }
            }
            if status == nil {
                if signalled == 0 && now - start >= timeout {
                    Sys.kill(-pid, SIGTERM)
                    signalled = 1
                } else if signalled == 1 && now - start >= timeout + grace {
                    Sys.kill(-pid, SIGKILL)
                    signalled = 2
                }
            } else {
                // Done: whatever it started in its group goes too when it timed out; its stderr is read a little longer
                // (a child still holding it open must not keep us here).
                if signalled > 0 { Sys.kill(-pid, SIGKILL) }
                if !readOpen || now - exitedAt > 100 { break }
            }
            // Wakes for the hook's output, else every 20 ms to look at its exit and the time limits; with its stderr
            // closed, only the 20 ms.
            if readOpen { _ = Sys.poll(readFD, Int16(POLLIN), timeoutMs: 20) } else { Sys.nanosleep(.milliseconds(20)) }
            drain()
        }
        return .success(Outcome(status: status ?? -1, timedOut: signalled > 0, output: kept, droppedBytes: dropped))
    }
}
