import Glibc
@testable import ReachSystem
import Synchronization
import Testing

/// ChildExit, the one way the agent follows the programs it starts: through a pidfd, and through the looks a kernel
/// without pidfd_open needs; the status given once; a cancelled watch that neither reaps nor calls back.
@Suite struct ChildExitTests {
    final class Calls: Sendable {
        let statuses = Mutex<[WaitStatus?]>([])
    }

    @Test(arguments: [true, false])
    func theStatusArrivesOnceAndTheChildIsReaped(pidfd: Bool) async throws {
        try await EventLoopTests.withLoop { loop in
            let pid = try Spawn.posix_spawn("/bin/sh", argv: ["sh", "-c", "sleep 0.1; exit 3"], environment: []).get()
            let calls = Calls()
            let watch = try ChildExit.watch(pid, on: loop, look: .milliseconds(10), pidfd: pidfd) { status in
                calls.statuses.withLock { $0.append(status) }
            }
            #expect(watch != nil)
            #expect(await EventLoopTests.eventually { calls.statuses.withLock { !$0.isEmpty } }, "no exit seen")
            #expect(calls.statuses.withLock { $0 } == [.exited(3)])
            // Reaped: the pid is gone, not a zombie waiting for us.
            #expect(kill(pid, 0) != 0 && errno == ESRCH)
            // Nothing left on the loop (the pidfd's registration or the look's timer), and no second call.
            #expect(await EventLoopTests.eventually { !loop.isRunning }, "the loop still holds a registration")
            try await Task.sleep(for: .milliseconds(50))
            #expect(calls.statuses.withLock { $0.count } == 1)
        }
    }

    @Test(arguments: [true, false])
    func aSignalledChildSaysWhichSignal(pidfd: Bool) async throws {
        try await EventLoopTests.withLoop { loop in
            let pid = try Spawn.posix_spawn("/bin/sleep", argv: ["sleep", "30"], environment: []).get()
            let calls = Calls()
            _ = try ChildExit.watch(pid, on: loop, look: .milliseconds(10), pidfd: pidfd) { status in
                calls.statuses.withLock { $0.append(status) }
            }
            kill(pid, SIGKILL)
            #expect(await EventLoopTests.eventually { calls.statuses.withLock { !$0.isEmpty } }, "no exit seen")
            #expect(calls.statuses.withLock { $0 } == [.signalled(SIGKILL)])
        }
    }

    @Test(arguments: [true, false])
    func aCancelledWatchNeitherReapsNorCalls(pidfd: Bool) async throws {
        try await EventLoopTests.withLoop { loop in
            let pid = try Spawn.posix_spawn("/bin/sleep", argv: ["sleep", "30"], environment: []).get()
            let calls = Calls()
            let watch = try ChildExit.watch(pid, on: loop, look: .milliseconds(10), pidfd: pidfd) { status in
                calls.statuses.withLock { $0.append(status) }
            }
            watch?.cancel()
            kill(pid, SIGKILL)
            // The child is still ours to reap.
            #expect(try Sys.waitpid(pid, block: true).get() == .signalled(SIGKILL))
            try await Task.sleep(for: .milliseconds(100))
            #expect(calls.statuses.withLock { $0.isEmpty })
            #expect(await EventLoopTests.eventually { !loop.isRunning }, "the loop still holds a registration")
        }
    }

    /// Without a pidfd and without looks wanted (a child that may live as long as we do), there is nothing to follow
    /// it with: nil, and the caller waits its own way (`reapWhenExited`'s thread).
    @Test func noPidfdAndNoLooksIsNil() async throws {
        try await EventLoopTests.withLoop { loop in
            let pid = try Spawn.posix_spawn("/bin/sleep", argv: ["sleep", "0.05"], environment: []).get()
            let watch = try ChildExit.watch(pid, on: loop, look: nil, pidfd: false) { _ in }
            #expect(watch == nil)
            #expect(try Sys.waitpid(pid, block: true).get() == .exited(0))
        }
    }
}
