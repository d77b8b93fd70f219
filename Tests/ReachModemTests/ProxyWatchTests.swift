import Foundation
import ReachLog
import ReachTestSupport
import Testing
@testable import ReachModem

/// ProxyWatch's facts from /proc and the kernel's unix socket table, on processes of the test's own.
@Suite(.serialized) struct ProxyWatchTests {
    /// A process the launcher's mark names as this one's is reach's even after it was reparented (its parent gone);
    /// one with another pid in the mark, or none, is not.
    @Test(arguments: [true, false])
    func theLaunchersMarkSurvivesReparenting(marked: Bool) async throws {
        let mark = marked ? "\(getpid())" : "\(getpid() + 1)"
        // sh starts sleep in the background, says its pid and exits: sleep's parent is no longer this process.
        let sh = try await Spawned.start(
            ["/bin/sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!"], stdout: .pipe,
            environment: [ProxyWatch.markVariable: mark, "PATH": "/usr/bin:/bin"])
        let pid = try #require(Int32(try await sh.readLine(timeout: 10).trimmingCharacters(in: .whitespaces)))
        defer { kill(pid, SIGKILL) }
        #expect(await sh.wait(timeout: 10) == 0)
        // The pid is known from the fork; until sleep's exec is through, its environ can read empty (execve installs
        // the new memory before it lays out the environment), so wait for the new program's name.
        for _ in 0..<200 where ProcFacts.readSmallFile("/proc/\(pid)/comm", limit: 64) != "sleep\n" {
            try await Task.sleep(for: .milliseconds(50))
        }
        let parent = ProxyWatch.statFields(pid).flatMap { $0.count > 1 ? Int32($0[1]) : nil }
        #expect(parent != nil && parent != getpid())
        #expect(ProxyWatch.startedByReach(pid) == marked)
    }

    /// (Every socket close-on-exec, the suite serialized: a child another test starts would keep a copy open.)
    /// The socket table names a listener on an abstract socket, its accepted connection's peer (a socket this process
    /// holds, as /proc/self/fd shows it), and the bytes the listener's side never read; a closed client leaves its
    /// peer shut down both ways.
    @Test func theSocketTableShowsPeersAndUnreadBytes() throws {
        let name = "reach-pw-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = [UInt8(0)] + Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        func connectClient() -> Int32 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
            return rc == 0 ? fd : -1
        }
        let client = connectClient()
        try #require(client >= 0)
        let served = accept(listener, nil, nil)
        _ = fcntl(served, F_SETFD, FD_CLOEXEC)
        defer { close(served) }
        // A second client the listener never accepts: counted on the listener (connections waiting).
        let waiting = connectClient()
        try #require(served >= 0 && waiting >= 0)
        let waitingLink = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(waiting)")
        #expect(send(client, "hello", 5, 0) == 5)
        let clientLink = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(client)")

        let table = try #require(UnixSocketTable.dump())
        let mine = table.filter { $0.name == "@" + name }
        #expect(mine.filter(\.listening).count == 1)
        #expect(mine.first(where: \.listening)?.unread == 1, "one connection waits to be accepted: \(mine)")
        #expect(mine.first(where: \.listening)?.waiting.map { "socket:[\($0)]" } == waitingLink.map { [$0] })
        let accepted = mine.filter { !$0.listening }
        #expect(accepted.count == 1, "\(mine)")
        #expect(accepted.first.flatMap { $0.peer.map { "socket:[\($0)]" } } == clientLink)
        #expect(accepted.first?.unread == 5)
        #expect(accepted.first?.peerGone == false)

        close(client)
        close(waiting)
        // A child another test spawns at this moment holds a copy of our descriptors until its exec (posix_spawn's
        // child copies the table; CLOEXEC acts only at the exec), so the kernel may see the close a little later.
        var after = try #require(UnixSocketTable.dump()).filter { $0.name == "@" + name }
        for _ in 0..<100 where !(after.first { !$0.listening }?.peerGone == true && after.first(where: \.listening)?.waiting == [0]) {
            usleep(20_000)
            after = try #require(UnixSocketTable.dump()).filter { $0.name == "@" + name }
        }
        #expect(after.filter { !$0.listening }.count == 1 && after.first { !$0.listening }?.peerGone == true, "\(after)")
        // A closed waiting client is still queued, with no client inode (what ProxyWatch relies on to not count it).
        #expect(after.first(where: \.listening)?.waiting == [0], "\(after)")
    }

    /// A worker is untrusted: a silence naming anything but the two proxies (the launcher starts a program by that
    /// name), or an absurd wait, is not acted on.
    @Test(arguments: ["../../bin/sh", "sleep", "", "mbim-proxy/../../x"])
    func aWorkersSilenceForAnotherProgramIsIgnored(name: String) async {
        let note = await WorkerRun.answer(ProxySilence(name: name, waitedMs: 5000), logger: Logger(label: "test"))
        #expect(note == nil)
    }

    @Test func aWorkersSilenceWithAnAbsurdWaitIsIgnored() async {
        let note = await WorkerRun.answer(ProxySilence(name: "mbim-proxy", waitedMs: -1), logger: Logger(label: "test"))
        #expect(note == nil)
    }
}
