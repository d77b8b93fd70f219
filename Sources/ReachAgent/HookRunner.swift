// Event hooks, after NetworkManager's dispatcher (dispatcher.d) and ModemManager's connection.d: on every change line
// the executables in `api.hooks_directory` run one after the other in name order (run-parts(8)'s rule for names:
// letters, digits, "_" and "-"), each with the line on standard input and REACH_* variables (`HookEnvironment`) in an
// otherwise empty environment, started with posix_spawn (no shell) as the agent's own user.
//
// - Hooks run on the agent's event loop (`EventLoop.shared`), no thread of their own: the hub hands over the line
//   and returns; the program's standard error, its exit (a pidfd) and its time limits are registrations on the loop,
//   so a hook that hangs delays only later hooks, never the routes or the API the loop also serves.
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
        /// Programs are started for the events, from the first waiting event until none waits.
        var working = false
    }

    /// One program to run for an event.
    private struct Job: Sendable {
        var path: String
        var argv: [String]
        var environment: [String]
        var stdin: [UInt8]
        var seq: String
    }

    private let settings: Settings
    private let logger: Logger
    private let loop: EventLoop
    private let mailbox = Mutex(Mailbox())
    private let statsBox = Mutex(Stats())
    /// The process group of the program running now (0: none), for `stop`.
    private let running = Mutex<pid_t>(0)

    /// A runner on `loop` (nothing registered until the first event). Optional for the callers that handle a runner
    /// that could not be made; this one always can.
    public static func start(_ settings: Settings, logger: Logger, loop: EventLoop = .shared) -> HookRunner? {
        HookRunner(settings: settings, logger: logger, loop: loop)
    }

    private init(settings: Settings, logger: Logger, loop: EventLoop) {
        self.settings = settings
        self.logger = logger
        self.loop = loop
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
        do {
            try loop.post { [self] in next() }
        } catch {
            // No loop to be had now (no thread): the event waits, and the next one tries again.
            mailbox.withLock { $0.working = false }
            logger.warning("Hooks delayed: the event loop could not take them", metadata: ["error": "\(error)"])
        }
    }

    /// Runs nothing more; a program still running gets SIGTERM (its process group), then SIGKILL when it has not
    /// ended within `timeoutMS`, so the agent leaves no hook behind when it stops.
    public func stop(timeoutMS: Int64 = 1000) {
        mailbox.withLock { $0.stopping = true }
        let group = running.withLock { $0 }
        if group > 0 { Sys.kill(-group, SIGTERM) }
        // The loop ends the program's run once it exits; on the loop's own thread nothing can, so no wait there.
        let deadline = Sys.monotonicMilliseconds() + timeoutMS
        while !loop.isLoopThread && mailbox.withLock({ $0.working }) && Sys.monotonicMilliseconds() < deadline {
            Sys.nanosleep(.milliseconds(2))
        }
        let left = running.withLock { $0 }
        if left > 0 { Sys.kill(-left, SIGKILL) }
    }

    /// On the loop: starts the programs for the waiting event, or ends the work when none waits (or the runner
    /// stops).
    private func next() {
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
        runJobs(jobs(for: event)[...])
    }

    private func jobs(for event: Event) -> [Job] {
        let stdin = Array((event.line + "\n").utf8)
        let environment = event.environment.map { "\($0.0)=\($0.1)" } + ["PATH=\(HookEnvironment.path)"]
        var jobs = hooks().map { Job(path: $0, argv: [$0], environment: environment, stdin: stdin, seq: event.seq) }
        if let ubus = settings.ubus {
            jobs.append(Job(
                path: ubus, argv: [ubus, "send", "reach.change", event.line],
                environment: ["PATH=\(HookEnvironment.path)"], stdin: [], seq: event.seq))
        }
        if let hotplug = settings.hotplugCall {
            jobs.append(Job(
                path: hotplug, argv: [hotplug, "reach"], environment: environment + ["ACTION=change"], stdin: stdin,
                seq: event.seq))
        }
        return jobs
    }

    /// On the loop: starts the first of `jobs`; when it has ended, the rest; after the last, the next event (a post,
    /// so the stack does not grow with the events).
    private func runJobs(_ jobs: ArraySlice<Job>) {
        guard let job = jobs.first, !mailbox.withLock({ $0.stopping }) else {
            mailbox.withLock { $0.busy = false }
            do { try loop.post { [self] in next() } } catch { mailbox.withLock { $0.working = false } }
            return
        }
        statsBox.withLock { $0.runs += 1 }
        HookProcess.start(
            job.path, argv: job.argv, environment: job.environment, stdin: job.stdin, settings: settings, loop: loop,
            started: { [self] pid in running.withLock { $0 = pid } },
            finished: { [self] result in
                running.withLock { $0 = 0 }
                report(result, path: job.path, seq: job.seq)
                runJobs(jobs.dropFirst())
            })
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

    struct Outcome: Sendable {
        var status: Int32
        var timedOut: Bool
        var output: [UInt8]
        var droppedBytes: Int
    }

    /// Logs a program that could not start or failed (exit status, signal or timeout) and counts it.
    private func report(_ result: Result<Outcome, HookProcess.Failure>, path: String, seq: String) {
        let outcome: Outcome
        switch result {
        case let .success(o): outcome = o
        case let .failure(e):
            statsBox.withLock { $0.failures += 1 }
            logger.warning("Hook could not be started", metadata: ["hook": "\(path)", "event.seq": "\(seq)", "error": "\(e)"])
            return
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
    }

    /// Runs one program to its end (or its timeout) on `loop`, for callers outside the runner (tests).
    static func spawnAndWait(
        _ path: String, argv: [String], environment: [String], stdin: [UInt8], settings: Settings,
        loop: EventLoop = .shared
    ) async -> Result<Outcome, HookProcess.Failure> {
        await withCheckedContinuation { continuation in
            HookProcess.start(
                path, argv: argv, environment: environment, stdin: stdin, settings: settings, loop: loop,
                finished: { continuation.resume(returning: $0) })
        }
    }
}
