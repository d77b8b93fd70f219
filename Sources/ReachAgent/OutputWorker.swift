// What the state writer, the agent's one output that must block (fsync), is built on: a thread of its own, so that a
// slow disk blocks only that thread, never the hub that writes the report line; and a self-pipe the hub's side pokes
// after it left something in the writer's mailbox. (The Varlink server is a registration on the event loop, and the
// hook runner's thread lives only while hooks run.) Posting never blocks: the mailbox is a slot behind a mutex held
// for a few assignments, and the poke is a non-blocking one-byte write (a full pipe means a wake-up is already
// pending).

import Glibc
import Synchronization

/// A self-pipe: `poke()` from any thread, `readFD` in the worker's poll set, `drain()` after it was readable.
final class SelfPipe: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    func poke() {
        var b: UInt8 = 1
        _ = write(writeFD, &b, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buffer, buffer.count) > 0 {}
    }

    /// Waits until poked or `milliseconds` passed (-1: no limit).
    func wait(milliseconds: Int32) {
        var p = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, milliseconds)
        drain()
    }
}

/// A worker thread's end: the thread calls `done()` as it leaves; `await(timeoutMS:)` waits for that, boundedly.
final class WorkerEnd: Sendable {
    private let flag = Mutex(false)

    func done() { flag.withLock { $0 = true } }

    var isDone: Bool { flag.withLock { $0 } }

    func await(timeoutMS: Int64) {
        let deadline = monotonicMilliseconds() + timeoutMS
        while !isDone && monotonicMilliseconds() < deadline { usleep(2000) }
    }
}

/// The monotonic clock in milliseconds, for the workers' own deadlines.
func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
