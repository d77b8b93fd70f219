// What the state writer, the agent's one output that must block (fsync), is built on: a thread of its own, so that a
// slow disk blocks only that thread, never the hub that writes the report line; and a self-pipe the hub's side pokes
// after it left something in the writer's mailbox. (The Varlink server and the hook runner are registrations on the
// event loop.) Posting never blocks: the mailbox is a slot behind a mutex held
// for a few assignments, and the poke is a non-blocking one-byte write (a full pipe means a wake-up is already
// pending).

import Glibc
import ReachSystem
import Synchronization

/// A self-pipe: `poke()` from any thread, `readFD` in the worker's poll set, `drain()` after it was readable.
final class SelfPipe: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init?() {
        guard case let .success(fds) = Sys.pipe(nonBlocking: true) else { return nil }
        readFD = fds.read
        writeFD = fds.write
    }

    deinit {
        Sys.close(readFD)
        Sys.close(writeFD)
    }

    func poke() {
        _ = withUnsafeBytes(of: UInt8(1)) { Sys.write(writeFD, $0, path: nil) }
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while case let .success(n) = buffer.withUnsafeMutableBytes({ Sys.read(readFD, into: $0, path: nil) }), n > 0 {}
    }

    /// Waits until poked or `milliseconds` passed (-1: no limit).
    func wait(milliseconds: Int32) {
        _ = Sys.poll(readFD, Int16(POLLIN), timeoutMs: milliseconds)
        drain()
    }
}

/// A worker thread's end: the thread calls `done()` as it leaves; `await(timeoutMS:)` waits for that, boundedly.
final class WorkerEnd: Sendable {
    private let flag = Mutex(false)

    func done() { flag.withLock { $0 = true } }

    var isDone: Bool { flag.withLock { $0 } }

    func await(timeoutMS: Int64) {
        let deadline = Sys.monotonicMilliseconds() + timeoutMS
        while !isDone && Sys.monotonicMilliseconds() < deadline { Sys.nanosleep(.milliseconds(2)) }
    }
}
