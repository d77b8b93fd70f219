import Foundation
import ReachSystem
import Testing

/// Spawn's promises, seen from inside the child: /bin/sh reports its signal mask and ignored set (/proc/self/status),
/// its process group (/proc/self/stat) and the descriptors it has, on a pipe read here.
@Suite struct SpawnTests {
    /// Runs `script` under /bin/sh with its standard output on a pipe; what it printed and how it ended.
    func run(_ script: String, closeFrom: Int32? = 3, flags: Spawn.Flags = .cleanSignals) throws -> (String, WaitStatus?) {
        try run(["/bin/sh", "-c", script], closeFrom: closeFrom, flags: flags)
    }

    func run(_ argv: [String], closeFrom: Int32? = 3, flags: Spawn.Flags = .cleanSignals) throws -> (String, WaitStatus?) {
        let pipe = try Sys.pipe().get()
        defer { Sys.close(pipe.read) }
        let spawned = Spawn.posix_spawn(
            argv[0], argv: argv, environment: ["PATH=/usr/bin:/bin"],
            actions: [.null(0), .dup2(from: pipe.write, to: 1), .null(2)], closeFrom: closeFrom, flags: flags)
        Sys.close(pipe.write)
        let pid = try spawned.get()
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let .success(n) = buffer.withUnsafeMutableBytes({ Sys.read(pipe.read, into: $0, path: nil) }), n > 0 {
            out += buffer[0..<n]
        }
        return (String(decoding: out, as: UTF8.self), try Sys.waitpid(pid, timeout: .seconds(10)).get())
    }

    /// What a child of a thread that blocks SIGTERM (as Swift's pool threads do) and of a process that ignores SIGPWR
    /// starts with: nothing blocked and nothing ignored, unless the flags leave the signal state alone. (SIGPWR: a
    /// disposition is the whole process's, and no other test uses that signal.)
    @Test func theChildStartsWithNoSignalBlockedOrIgnored() throws {
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        var before = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &before)
        let previous = signal(SIGPWR, SIG_IGN)
        defer {
            signal(SIGPWR, previous)
            pthread_sigmask(SIG_SETMASK, &before, nil)
        }
        // Not a shell: dash and bash clear their signal mask as they start.
        let argv = ["/bin/grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"]
        /// The set's bit for `signal` (proc(5): bit N-1 for signal N).
        func has(_ text: String, _ field: String, _ signal: Int32) -> Bool? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
                  let bits = UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
            else { return nil }
            return bits & (1 << UInt64(signal - 1)) != 0
        }
        let (clean, status) = try run(argv)
        #expect(status == .exited(0))
        #expect(has(clean, "SigBlk", SIGTERM) == false && has(clean, "SigIgn", SIGPWR) == false, "\(clean)")
        // Without the flags the child inherits both: the check above can fail.
        let (inherited, _) = try run(argv, flags: [])
        #expect(has(inherited, "SigBlk", SIGTERM) == true && has(inherited, "SigIgn", SIGPWR) == true, "\(inherited)")
    }

    /// A descriptor of ours without close-on-exec reaches the child only when nothing closes it.
    @Test func descriptorsBeyondTheActionsAreClosed() throws {
        // No O_CLOEXEC: a leak waiting to happen. F_DUPFD takes the lowest free number from 400 up, so no descriptor
        // of a test running beside this one is replaced.
        let null = open("/dev/null", O_RDONLY)
        let leaked = fcntl(null, F_DUPFD, 400)
        close(null)
        defer { close(leaked) }
        #expect(leaked >= 400)
        let script = "ls /proc/$$/fd"
        let (closed, status) = try run(script)
        #expect(status == .exited(0))
        #expect(closed.split(separator: "\n").sorted() == ["0", "1", "2"], "\(closed)")
        let (open, _) = try run(script, closeFrom: nil)
        #expect(open.split(separator: "\n").contains("\(leaked)"), "\(open)")
    }

    /// `newProcessGroup`: the child leads a group of its own (kill(-pid) reaches it and what it starts).
    @Test func aProcessGroupOfItsOwn() throws {
        let script = "echo $$ $(cut -d' ' -f5 /proc/$$/stat)"
        let (own, _) = try run(script, flags: [.cleanSignals, .newProcessGroup])
        let ids = own.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(ids.count == 2 && ids[0] == ids[1], "\(own)")
        let (shared, _) = try run(script)
        let ours = shared.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(ours.count == 2 && ours[1] == String(getpgrp()), "\(shared)")
    }

    @Test func aProgramThatIsNotThereIsAnErrorNamingIt() {
        let e = Spawn.posix_spawn("/nonexistent/reach-hook", argv: ["x"], environment: []).failure
        #expect(e?.errno == ENOENT && e?.path == "/nonexistent/reach-hook" && e?.call == "posix_spawn", "\(String(describing: e))")
    }

    @Test func waitpidWithATimeLimit() throws {
        let pid = try Spawn.posix_spawn("/bin/sh", argv: ["sh", "-c", "sleep 0.3; exit 7"], environment: []).get()
        #expect(try Sys.waitpid(pid, timeout: .milliseconds(20)).get() == nil)
        #expect(try Sys.waitpid(pid, timeout: .seconds(10)).get() == .exited(7))
        let sleeper = try Spawn.posix_spawn("/bin/sleep", argv: ["sleep", "30"], environment: []).get()
        #expect(try Sys.waitpid(sleeper, block: false).get() == nil)
        try Sys.kill(sleeper, SIGTERM).get()
        let ended = try Sys.waitpid(sleeper, timeout: .seconds(10)).get()
        #expect(ended == .signalled(SIGTERM) && ended?.shellStatus == 128 + SIGTERM)
        #expect(Sys.waitpid(sleeper, block: false).failure?.errno == ECHILD)
    }

    @Test(arguments: [
        (Int32(0), WaitStatus.exited(0)), (0x0700, .exited(7)), (0xff00, .exited(255)), (9, .signalled(9)),
        (0x8f, .signalled(15)),  // 0x80: a core was dumped, the signal is the low 7 bits
    ])
    func waitStatusFromTheStatusWord(raw: Int32, status: WaitStatus) {
        #expect(WaitStatus(raw: raw) == status)
    }
}
