import Foundation
import ReachSystem
import Testing

/// The socket, pipe and poll wrappers: what they promise beyond the C call (close-on-exec, no SIGPIPE, EINTR kept
/// inside, timeouts rounded up).
@Suite struct SyscallsTests {
    @Test func pipesAreCloseOnExecAndNonBlockingWhenAsked() throws {
        let p = try Sys.pipe(nonBlocking: true).get()
        defer {
            Sys.close(p.read)
            Sys.close(p.write)
        }
        for fd in [p.read, p.write] {
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
            #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
        }
        var buffer = [UInt8](repeating: 0, count: 8)
        let empty = buffer.withUnsafeMutableBytes { Sys.read(p.read, into: $0, path: "pipe") }
        #expect(empty.failure?.errno == EAGAIN && empty.failure?.description.hasPrefix("read pipe: ") == true)
        let blocking = try Sys.pipe().get()
        defer {
            Sys.close(blocking.read)
            Sys.close(blocking.write)
        }
        #expect(fcntl(blocking.read, F_GETFL) & O_NONBLOCK == 0)
        #expect(fcntl(blocking.read, F_GETFD) & FD_CLOEXEC != 0)
    }

    /// A peer gone is EPIPE as a value: without MSG_NOSIGNAL the SIGPIPE would end the test process.
    @Test func sendingToAClosedPeerIsAnErrorNotASignal() throws {
        let (a, b) = try Sys.socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue)).get()
        defer { Sys.close(a) }
        #expect(fcntl(a, F_GETFD) & FD_CLOEXEC != 0 && fcntl(b, F_GETFD) & FD_CLOEXEC != 0)
        try Sys.sendAll(a, Array("hello".utf8), path: nil).get()
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { Sys.recv(b, into: $0, path: nil) }.get() == 5)
        #expect(Array(buffer[0..<5]) == Array("hello".utf8))
        Sys.close(b)
        #expect(Sys.sendAll(a, [1], path: "peer").failure?.errno == EPIPE)
    }

    @Test func pollSaysTimeoutAsZeroAndReadinessAsEvents() throws {
        let (a, b) = try Sys.socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue)).get()
        defer {
            Sys.close(a)
            Sys.close(b)
        }
        #expect(try Sys.poll(a, Int16(POLLIN), timeoutMs: 10).get() == 0)
        try Sys.sendAll(b, [1], path: nil).get()
        #expect(try Sys.poll(a, Int16(POLLIN), timeoutMs: 1000).get() & Int16(POLLIN) != 0)
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        #expect(try Sys.poll(&fds, timeoutMs: 0).get() == 1)
        #expect(fds[0].revents & Int16(POLLIN) != 0 && fds[1].revents == 0)
    }

    @Test func aNonBlockingConnectToNobodyIsRefused() throws {
        let fd = try Sys.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), nonBlocking: true).get()
        defer { Sys.close(fd) }
        let path = "/tmp/reach-syscalls-test-\(getpid())-nobody"
        let r = ListeningSocket.withAddress(path) { Sys.connect(fd, $0, $1, path: path) }
        #expect(r.failure?.errno == ENOENT && r.failure?.path == path)
    }

    @Test(arguments: [
        (Duration.zero, Int32(0)), (.seconds(-1), 0), (.microseconds(400), 1), (.milliseconds(1), 1),
        (.microseconds(1001), 2), (.seconds(2), 2000), (.seconds(1 << 40), Int32.max),
    ])
    func pollTimeoutsRoundUp(duration: Duration, ms: Int32) {
        #expect(Sys.milliseconds(duration) == ms)
    }

    /// The deadline clock reads CLOCK_BOOTTIME: a reading falls between two of that clock's own (CLOCK_REALTIME would
    /// not; CLOCK_MONOTONIC would not on a machine that was ever suspended).
    @Test func theDeadlineClockIsBootTime() {
        func boottime() -> Duration {
            var ts = timespec()
            clock_gettime(CLOCK_BOOTTIME, &ts)
            return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
        }
        let before = boottime()
        let now = Sys.monotonicNow()
        let after = boottime()
        #expect(before <= now && now <= after, "\(before) \(now) \(after)")
    }
}
