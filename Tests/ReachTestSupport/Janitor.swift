// Cleans up after a test process that could not clean up itself. A crash (a trap in one test ends the whole run),
// SIGKILL from `timeout`, or Ctrl-C skip every deinit: the simulators and agents of the tests that were running
// would go on without a parent, their namespaces and temporary files would stay. So the first child program a test
// process starts comes with a janitor: a small shell in a process group of its own that blocks reading a pipe whose
// only write end this process holds (close-on-exec, so no child inherits it). When this process is gone, for
// whatever reason, the kernel closes that end, the read returns, and the janitor
// - kills every process whose environment carries REACH_TEST_OWNER=<owner> (Spawned puts it in every child's, and
//   it is inherited by whatever those start: `ip netns exec`, the agent, qmicli);
// - deletes the namespaces named gr-*-<owner>-* (ReachTestSupport.Namespace) and their /etc/netns directories;
// - unmounts what is mounted under, and removes, $TMPDIR/reach-*-<owner>-* and $TMPDIR/gr-*-<owner>[-.]*.
// After a run that cleaned up after itself it finds nothing and exits.

import Foundation
import ReachSystem

#if canImport(Glibc)
import Glibc
#endif

public final class Janitor: Sendable {
    /// The janitor of this test process (owner: its pid), started on first use; nil if it could not be started
    /// (then nothing changes but the cleanup after a crash).
    public static let shared: Janitor? = try? Janitor(owner: "\(getpid())")

    /// The environment variable that marks the processes the janitor ends.
    public static let variable = "REACH_TEST_OWNER"

    public let owner: String
    private let writeEnd: Int32
    public let pid: pid_t

    private static let script = #"""
        owner=$1 tmp=$2
        read -r _ || :
        for round in 1 2 3; do
          for f in $(grep -lzxF "REACH_TEST_OWNER=$owner" /proc/[0-9]*/environ 2>/dev/null); do
            p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null
          done
          sleep 0.2
        done
        for ns in $(ip netns list 2>/dev/null | cut -d' ' -f1); do
          case $ns in gr-*-"$owner"-*) ip netns delete "$ns" 2>/dev/null; rm -rf "/etc/netns/$ns" ;; esac
        done
        grep -o " $tmp/reach-[^ ]*-$owner-[^ ]*" /proc/mounts | while read -r m; do umount -l "$m"; done
        rm -rf "$tmp"/reach-*-"$owner"-* "$tmp"/gr-*-"$owner" "$tmp"/gr-*-"$owner"[-.]*
        """#

    /// Starts a janitor for the processes, namespaces and files marked with `owner`.
    public init(owner: String) throws {
        self.owner = owner
        var fds: [Int32] = [-1, -1]
        var tmp = NSTemporaryDirectory()
        while tmp.count > 1 && tmp.hasSuffix("/") { tmp.removeLast() }
        let argv = ["/bin/sh", "-c", Self.script, "reach-test-janitor", owner, tmp]
        let env = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"]

        Spawned.spawnLock.lock()
        defer { Spawned.spawnLock.unlock() }
        switch Sys.pipe() {
        case let .success(p): fds = [p.read, p.write]
        case let .failure(e): throw TestFailure("janitor \(e)")
        }
        // A group of its own (spawnClean): Ctrl-C on the test run must not end the janitor before it has done its
        // work.
        defer { Sys.close(fds[0]) }
        do {
            pid = try Spawned.spawnClean(
                "/bin/sh", argv: argv, environment: env, actions: [.dup2(from: fds[0], to: 0), .null(1), .null(2)])
        } catch {
            Sys.close(fds[1])
            throw error
        }
        writeEnd = fds[1]
    }

    /// Lets the janitor do its work now, as if this process had ended (for the janitor's own test).
    public func dismiss() { Sys.close(writeEnd) }

    /// After `dismiss()`: whether the janitor finished within `timeout` seconds (and is reaped).
    public func finished(timeout: Double) async -> Bool {
        await TestSupport.eventually(timeout: timeout, every: 0.05) {
            if case .success(.some) = Sys.waitpid(pid, block: false) { return true }
            return false
        }
    }
}
