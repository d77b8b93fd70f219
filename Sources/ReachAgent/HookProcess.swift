// One program a hook runner started, followed on the event loop instead of a thread of its own: its standard error is
// a read registration, its exit a `ChildExit` (a pidfd, readable once it has exited; without pidfd_open, a 20 ms look
// with waitpid(WNOHANG)), and its time limits one timer that moves from the SIGTERM deadline to the SIGKILL one. It is
// finished once it has been reaped and its standard error has closed, or 100 ms after the exit when a child it left
// holds that open. Every callback runs on the loop's thread; the state sits in a Mutex only so the object is
// Sendable.

import Glibc
import ReachSystem
import Synchronization

final class HookProcess: Sendable {
    /// Why a program did not start.
    enum Failure: Error, Sendable, CustomStringConvertible {
        case system(SystemError)
        case loop(EventLoopError)

        var description: String {
            switch self {
            case let .system(e): "\(e)"
            case let .loop(e): "\(e)"
            }
        }
    }

    typealias Finished = @Sendable (Result<HookRunner.Outcome, Failure>) -> Void

    private struct State {
        var kept: [UInt8] = []
        var dropped = 0
        var readOpen = true
        var status: Int32?
        var exitedAt: Int64 = 0
        /// 0 none, 1 SIGTERM, 2 SIGKILL.
        var signalled = 0
        var done = false
        var output: EventLoop.Registration?
        var exit: ChildExit?
    }

    /// ETXTBSY (the program still open for writing somewhere: being installed, or its writer's descriptor inherited
    /// by a child another thread started before it was closed) passes within milliseconds, or within a second on a
    /// loaded machine: the start is tried again, on a timer, for this long.
    static let busyRetry: Int64 = 1_100_000_000
    private static let outputGrace: Int64 = 100_000_000

    let pid: pid_t
    private let errorFD: Int32
    private let startedAt: Int64
    private let timeout: Int64
    private let grace: Int64
    private let outputLimit: Int
    private let loop: EventLoop
    private let finished: Finished
    private let state = Mutex(State())
    /// The next moment something is due: a time limit, or the end of the output's grace.
    private let timer: LoopTimer

    private init(
        pid: pid_t, errorFD: Int32, settings: HookRunner.Settings, loop: EventLoop, finished: @escaping Finished
    ) {
        self.pid = pid
        self.errorFD = errorFD
        startedAt = EventLoop.now()
        timeout = Int64(settings.timeoutSeconds * 1e9)
        grace = Int64(settings.killGraceSeconds * 1e9)
        outputLimit = settings.outputLimit
        self.loop = loop
        self.finished = finished
        timer = LoopTimer(loop: loop)
    }

    /// Starts `path` in a process group of its own with an empty signal mask and default dispositions, stdin from a
    /// pipe holding `stdin`, stdout to /dev/null and stderr to a pipe read on `loop`; every other descriptor closed.
    /// `finished` runs on the loop once (also when it could not start; then perhaps before this returns).
    static func start(
        _ path: String, argv: [String], environment: [String], stdin: [UInt8], settings: HookRunner.Settings,
        loop: EventLoop, started: @escaping @Sendable (pid_t) -> Void = { _ in }, finished: @escaping Finished,
        firstTry: Int64 = EventLoop.now()
    ) {
        let spawned = spawn(path, argv: argv, environment: environment, stdin: stdin)
        let pid: pid_t
        let errorFD: Int32
        switch spawned {
        case let .success((p, fd)):
            pid = p
            errorFD = fd
        case let .failure(e) where e.errno == ETXTBSY && EventLoop.now() - firstTry < busyRetry:
            let pause = min(EventLoop.now() - firstTry + 20_000_000, 200_000_000)
            do {
                try loop.schedule(at: EventLoop.now() + pause) {
                    start(
                        path, argv: argv, environment: environment, stdin: stdin, settings: settings, loop: loop,
                        started: started, finished: finished, firstTry: firstTry)
                }
            } catch {
                finished(.failure(.loop(error)))
            }
            return
        case let .failure(e):
            finished(.failure(.system(e)))
            return
        }
        started(pid)
        let process = HookProcess(
            pid: pid, errorFD: errorFD, settings: settings, loop: loop, finished: finished)
        if let e = process.arm() {
            // No loop to follow it on: it must not run unwatched.
            Sys.kill(-pid, SIGKILL)
            _ = Sys.waitpid(pid, block: true)
            process.closeDescriptors()
            finished(.failure(.loop(e)))
        }
    }

    /// The spawn itself: the pid and our end of its standard error (non-blocking; the hook's end stays blocking).
    private static func spawn(
        _ path: String, argv: [String], environment: [String], stdin: [UInt8]
    ) -> Result<(pid_t, Int32), SystemError> {
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
        // The line goes into the pipe before the hook starts (grown past the default 64 KiB when the line needs it);
        // the hook reads it, then end of file.
        if stdin.count > 65536 { _ = Sys.setPipeSize(input.write, min(stdin.count, 1 << 20), path: nil) }
        _ = Sys.setNonBlocking(input.write, true, path: nil)
        _ = stdin.withUnsafeBytes { Sys.write(input.write, $0, path: nil) }
        Sys.close(input.write)
        let spawned = Spawn.posix_spawn(
            path, argv: argv, environment: environment,
            actions: [.dup2(from: input.read, to: 0), .null(1), .dup2(from: errors.write, to: 2)],
            flags: [.cleanSignals, .newProcessGroup])
        Sys.close(input.read)
        Sys.close(errors.write)
        switch spawned {
        case let .success(pid):
            _ = Sys.setNonBlocking(errors.read, true, path: nil)
            return .success((pid, errors.read))
        case let .failure(e):
            Sys.close(errors.read)
            return .failure(e)
        }
    }

    /// Registers the standard error, the exit and the first deadline; the loop's error when it cannot take them.
    private func arm() -> EventLoopError? {
        do {
            let output = try loop.register(fd: errorFD, interest: .read) { [self] _ in
                drain()
                settle()
            }
            state.withLock { $0.output = output }
            let exit = try ChildExit.watch(pid, on: loop, look: .milliseconds(20)) { [self] status in
                exited(status)
                settle()
            }
            state.withLock { $0.exit = exit }
            // The first timer is set on the loop's thread, as every later one.
            try loop.post { [self] in settle() }
        } catch {
            let (output, exit) = state.withLock { ($0.output, $0.exit) }
            if let output { loop.cancel(output) }
            exit?.cancel()
            return error
        }
        return nil
    }

    /// Reads what the program wrote to its standard error, keeping the first `outputLimit` bytes. At most 256 KiB
    /// per call: a program that writes as fast as we read must not keep the loop's other callbacks (its own deadlines
    /// among them) waiting; poll(2) brings us back for the rest.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var closed = false
        state.withLock { s in
            for _ in 0..<16 where s.readOpen {
                switch buffer.withUnsafeMutableBytes({ Sys.read(errorFD, into: $0, path: nil) }) {
                case let .success(n) where n > 0:
                    let room = max(0, outputLimit - s.kept.count)
                    s.kept += buffer[0..<min(n, room)]
                    s.dropped += n - min(n, room)
                case .success:
                    s.readOpen = false
                    closed = true
                case .failure: return  // EAGAIN: nothing more for now (EINTR is retried by Sys.read)
                }
            }
        }
        if closed, let r = state.withLock({ s -> EventLoop.Registration? in defer { s.output = nil }; return s.output }) {
            loop.cancel(r)
        }
    }

    /// The program has exited and been reaped (nil: it could not be waited for).
    private func exited(_ ended: WaitStatus?) {
        state.withLock { s in
            guard s.status == nil else { return }
            s.status = ended?.shellStatus ?? -1
            s.exitedAt = EventLoop.now()
            s.exit = nil
        }
    }

    /// Sends the signals the deadlines call for, finishes the run when it is over, else sets the timer to the next
    /// moment something is due.
    private func settle() {
        let now = EventLoop.now()
        var signal: Int32?
        let (over, wake) = state.withLock { s -> (Bool, Int64?) in
            if s.done { return (false, nil) }
            if s.status == nil {
                if s.signalled == 0 && now - startedAt >= timeout {
                    signal = SIGTERM
                    s.signalled = 1
                } else if s.signalled == 1 && now - startedAt >= timeout + grace {
                    signal = SIGKILL
                    s.signalled = 2
                }
                let wake: Int64? = s.signalled == 0 ? startedAt + timeout : s.signalled == 1 ? startedAt + timeout + grace : nil
                return (false, wake)
            }
            // Done: whatever it started in its group goes too when it timed out; its stderr is read a little longer
            // (a child still holding it open must not keep us here).
            if s.signalled > 0 { signal = SIGKILL }
            if !s.readOpen || now - s.exitedAt >= Self.outputGrace {
                s.done = true
                return (true, nil)
            }
            return (false, s.exitedAt + Self.outputGrace)
        }
        if let signal { Sys.kill(-pid, signal) }
        if over {
            finish()
            return
        }
        setTimer(wake)
    }

    private func setTimer(_ at: Int64?) {
        timer.set(at: at) { [self] in
            drain()
            settle()
        }
    }

    private func finish() {
        timer.set(at: nil)
        let (output, exit, outcome) = state.withLock { s in
            defer {
                s.output = nil
                s.exit = nil
            }
            return (
                s.output, s.exit,
                HookRunner.Outcome(
                    status: s.status ?? -1, timedOut: s.signalled > 0, output: s.kept, droppedBytes: s.dropped))
        }
        if let output { loop.cancel(output) }
        exit?.cancel()
        closeDescriptors()
        finished(.success(outcome))
    }

    private func closeDescriptors() {
        Sys.close(errorFD)
    }
}
