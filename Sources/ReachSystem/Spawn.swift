// The one way reach starts a program: posix_spawn(3) with named flags, the child's descriptors set up by a list of
// file actions, every other descriptor closed, and the signal mask and dispositions reset. Reset matters: a thread of
// Swift's pool (or the GLib thread) blocks SIGTERM and SIGINT, a spawned child inherits the spawning thread's mask,
// and a child that blocks SIGTERM cannot be stopped politely. Used by the hook runner, the proxy launcher, the modem
// worker and the tests' children.

import Glibc

public enum Spawn {
    /// The posix_spawnattr flags, by name (spawn.h's POSIX_SPAWN_*).
    public struct Flags: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The child starts with no signal blocked (POSIX_SPAWN_SETSIGMASK with an empty set).
        public static let emptySignalMask = Flags(rawValue: Int32(POSIX_SPAWN_SETSIGMASK))
        /// Every signal at its default action in the child (POSIX_SPAWN_SETSIGDEF with the full set); an ignored
        /// SIGPIPE or SIGTERM of ours does not carry over.
        public static let defaultSignalActions = Flags(rawValue: Int32(POSIX_SPAWN_SETSIGDEF))
        /// A process group of its own, led by the child (POSIX_SPAWN_SETPGROUP with group 0): kill(-pid) reaches it
        /// and whatever it starts.
        public static let newProcessGroup = Flags(rawValue: Int32(POSIX_SPAWN_SETPGROUP))
        /// A session of its own (POSIX_SPAWN_SETSID, glibc 2.26), as a daemon: no controlling terminal.
        public static let newSession = Flags(rawValue: 0x80)

        /// The signal state every child of ours gets.
        public static let cleanSignals: Flags = [.emptySignalMask, .defaultSignalActions]
    }

    /// One step in setting up the child's descriptors, done in order before the program runs.
    public enum FileAction: Sendable, Equatable {
        /// Opens `path` as descriptor `fd`.
        case open(Int32, path: String, flags: Int32, mode: mode_t = 0)
        /// Makes descriptor `to` a copy of our `from` (which stays open in the child only if it is not close-on-exec).
        case dup2(from: Int32, to: Int32)

        /// Descriptor `fd` on /dev/null (read-only for 0, write-only otherwise).
        public static func null(_ fd: Int32) -> FileAction {
            .open(fd, path: "/dev/null", flags: fd == 0 ? O_RDONLY : O_WRONLY)
        }
    }

    /// The process's own environment as `NAME=value` strings.
    public static func currentEnvironment() -> [String] {
        var result: [String] = []
        var entry = environ
        while let e = entry.pointee {
            result.append(String(cString: e))
            entry += 1
        }
        return result
    }

    /// Starts `path` with `argv` (argv[0] included) and `environment`; its pid. The child gets the descriptors
    /// `actions` set up and, from `closeFrom` up, none of ours (posix_spawn_file_actions_addclosefrom_np, glibc 2.34;
    /// without it only close-on-exec descriptors close, which every descriptor ReachSystem opens is). ETXTBSY (the
    /// program still open for writing somewhere: being installed, or its writer's descriptor inherited by a child
    /// another thread started meanwhile) is retried with a growing pause for `busyRetry` in all. The corresponding C
    /// function is `posix_spawn`.
    public static func posix_spawn(
        _ path: String, argv: [String], environment: [String], actions: [FileAction] = [], closeFrom: Int32? = 3,
        flags: Flags = .cleanSignals, busyRetry: Duration = .zero
    ) -> Result<pid_t, SystemError> {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        for action in actions {
            let rc: Int32
            switch action {
            case let .open(fd, file, openFlags, mode):
                rc = posix_spawn_file_actions_addopen(&fileActions, fd, file, openFlags, mode)
            case let .dup2(from, to):
                rc = posix_spawn_file_actions_adddup2(&fileActions, from, to)
            }
            if rc != 0 { return .failure(SystemError("posix_spawn", errno: rc, path: path)) }
        }
        if let closeFrom, let addCloseFrom { _ = addCloseFrom(&fileActions, closeFrom) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if flags.contains(.emptySignalMask) {
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attributes, &none)
        }
        if flags.contains(.defaultSignalActions) {
            var all = sigset_t()
            sigfillset(&all)
            posix_spawnattr_setsigdefault(&attributes, &all)
        }
        if flags.contains(.newProcessGroup) { posix_spawnattr_setpgroup(&attributes, 0) }
        posix_spawnattr_setflags(&attributes, Int16(flags.rawValue))

        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        var rc = Glibc.posix_spawn(&pid, path, &fileActions, &attributes, cArgs, cEnv)
        let giveUp = Sys.monotonicNow() + busyRetry
        var pause = Duration.milliseconds(20)
        while rc == ETXTBSY && Sys.monotonicNow() < giveUp {
            Sys.nanosleep(pause)
            pause += .milliseconds(20)
            rc = Glibc.posix_spawn(&pid, path, &fileActions, &attributes, cArgs, cEnv)
        }
        return rc == 0 ? .success(pid) : .failure(SystemError("posix_spawn", errno: rc, path: path))
    }

    /// posix_spawn_file_actions_addclosefrom_np, looked up at run time (Swift's Glibc module does not declare it).
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        Sys.symbol("posix_spawn_file_actions_addclosefrom_np")
}
