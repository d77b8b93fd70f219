import Foundation
@testable import ReachAgent
import ReachFiles
import ReachLog
import ReachTestSupport
import Testing

/// The Varlink server's thread sleeps while nobody is connected: an idle agent must not wake every second for it
/// (it polled with a 1 s timeout and woke once a second for nothing). With a client connected it still keeps the
/// idle deadline.
@Suite struct VarlinkServerTests {
    @Test func withoutClientsItWakesOnlyForPosts() async throws {
        let dir = try makeTempDir("reach-varlink")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var limits = VarlinkServer.Limits()
        limits.idleSeconds = 1
        let server = try VarlinkServer.start(path: dir + "/api.sock", limits: limits, logger: Logger(label: "test")).get()
        defer { server.stop() }
        try await Task.sleep(for: .milliseconds(2500))
        #expect(server.stats.wakeups == 0, "woke \(server.stats.wakeups) times with nothing to do")

        server.post(state: "{}")
        #expect(await eventually { server.stats.wakeups == 1 })

        // A client that says nothing is closed after the idle limit: the deadline still has a clock.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(ListeningSocket.withAddress(server.path) { connect(fd, $0, $1) } == 0)
        let started = Date()
        let n = await Self.receiveOne(fd)
        #expect(n == 0, "the idle client was not closed (recv returned \(n))")
        #expect(Date().timeIntervalSince(started) < 4)
    }

    /// recv(2) of one byte, off Swift's pool, within 5 s: 0 when the server closed the connection.
    static func receiveOne(_ fd: Int32) async -> Int {
        let result = try? await offPool { () -> Int in
            var b: UInt8 = 0
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            return recv(fd, &b, 1, 0)
        }
        return result ?? -1
    }
}
