// RouteMonitor against a real kernel: the monitor's socket is opened on a thread that has entered a test
// namespace with setns(2), so it hears only that namespace's notices.

import Foundation
import Glibc
@testable import ReachRoutes
import ReachCore
import ReachTestSupport
import Testing

/// setns(2), looked up at run time: Glibc's Swift module does not declare it (it needs _GNU_SOURCE).
let setnsFunction: @convention(c) (Int32, Int32) -> Int32 = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns")!, to: (@convention(c) (Int32, Int32) -> Int32).self)
let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET

/// Runs `body` on a fresh thread (off the cooperative pool) that has joined `ns`'s network namespace, and returns the
/// thread to its own namespace before it hands the result back. Sockets made there stay in `ns`.
///
/// Nothing started inside `body` may outlive it on a thread: a thread inherits its creator's namespace, and so do the
/// processes it spawns. Resuming a task from a thread can make Dispatch grow the cooperative pool with a thread
/// created right there (`_dispatch_root_queue_poke_slow`); a pool thread born in `ns` would then spawn other tests'
/// children in it, and the namespace's teardown kills everything in it. So the thread goes back before it resumes
/// anyone, and monitors are made with `startReading: false` and started outside.
func inNamespace<T: Sendable>(_ ns: Namespace, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await offPool {
        let home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        guard home >= 0 else { throw TestFailure("open /proc/thread-self/ns/net: \(String(cString: strerror(errno)))") }
        defer { close(home) }
        let fd = open("/run/netns/\(ns.name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0, setnsFunction(fd, cloneNewNet) == 0 else {
            if fd >= 0 { close(fd) }
            throw TestFailure("setns \(ns.name): \(String(cString: strerror(errno)))")
        }
        close(fd)
        let result = Result { try body() }
        // Not back home, this thread must not resume anyone: trap rather than poison the pool.
        precondition(setnsFunction(home, cloneNewNet) == 0, "setns back: \(String(cString: strerror(errno)))")
        return try result.get()
    }
}

/// How many threads of this process are in `ns`'s network namespace.
func threadsIn(_ ns: Namespace) -> Int {
    var target = stat()
    guard stat("/run/netns/\(ns.name)", &target) == 0 else { return -1 }
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { tid in
        var st = stat()
        return stat("/proc/self/task/\(tid)/ns/net", &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino
    }.count
}

/// A monitor subscribed inside `ns`, reading on a thread started outside it.
func startedMonitor(in ns: Namespace, bufferBytes: Int = 1 << 20) async throws -> RouteMonitor {
    let monitor = try await inNamespace(ns) { try RouteMonitor(bufferBytes: bufferBytes, startReading: false) }
    try monitor.start()
    return monitor
}

/// Collects events until `until` holds for the collected list or `timeout` passes.
func collect(_ stream: AsyncStream<RouteEvent>, timeout: Double, until: @escaping @Sendable ([RouteEvent]) -> Bool) async -> [RouteEvent] {
    await withTaskGroup(of: [RouteEvent]?.self) { group in
        group.addTask {
            var seen: [RouteEvent] = []
            for await e in stream {
                seen.append(e)
                if until(seen) { break }
            }
            return seen
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(timeout))
            return nil
        }
        let first = await group.next()!
        group.cancelAll()
        return first ?? []
    }
}

@Suite(.serialized) struct RouteMonitorTests {
    @Test(.needsRoot) func hearsLinksAddressesAndRoutes() async throws {
        let ns = try Namespace("mon")
        let monitor = try await startedMonitor(in: ns)
        // Its socket is in the namespace, and no thread of ours is.
        #expect(threadsIn(ns) == 0)

        try ns.ip("link", "add", "a0", "type", "veth", "peer", "name", "b0")
        try ns.ip("addr", "add", "10.9.0.1/24", "dev", "a0")
        try ns.ip("-6", "addr", "add", "fd00:9::1/64", "dev", "a0", "nodad")
        try ns.ip("link", "set", "a0", "up")
        try ns.ip("link", "set", "b0", "up")
        try ns.ip("route", "add", "10.99.0.0/24", "via", "10.9.0.2")
        try ns.ip("-6", "route", "add", "2001:db8:99::/48", "via", "fd00:9::2")
        try ns.ip("route", "del", "10.99.0.0/24")

        let events = await collect(monitor.events, timeout: 5) { seen in
            seen.contains(.route(.deleted, .ipv4)) && seen.contains(.route(.new, .ipv6))
        }
        #expect(events.contains { if case .link(.new, _) = $0 { return true } else { return false } })
        #expect(events.contains { if case .address(.new, .ipv4, _) = $0 { return true } else { return false } })
        #expect(events.contains { if case .address(.new, .ipv6, _) = $0 { return true } else { return false } })
        #expect(events.contains(.route(.new, .ipv4)))
        #expect(events.contains(.route(.new, .ipv6)))
        #expect(events.contains(.route(.deleted, .ipv4)))
        #expect(!events.contains(.resync))
        #expect(threadsIn(ns) == 0)

        // After stop() the stream delivers what it had buffered, then finishes (rather than hanging).
        monitor.stop()
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in monitor.events {}
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        #expect(finished)
    }

    /// A receive buffer far too small for 3000 route notices that arrive while the monitor is subscribed but not yet
    /// reading: the kernel drops some (ENOBUFS) and the monitor must say so with `.resync` instead of going on as if
    /// nothing was lost; one `.resync` for the whole overrun (the notices queued behind the loss are covered by the
    /// re-read it asks for, not passed on one by one), and the socket goes on: a route added afterwards is heard.
    @Test(.needsRoot) func overrunAsksForAResync() async throws {
        let ns = try Namespace("flood")
        // Nothing but the routes below may reach the subscribed socket: IPv6 off (no link-local addresses, DAD or
        // multicast routes) and the links' carrier settled (linkwatch has sent its notices, "state UP") before it
        // subscribes.
        _ = try await ns.exec(
            ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
        try ns.ip("link", "add", "a0", "type", "veth", "peer", "name", "b0")
        try ns.ip("addr", "add", "10.8.0.1/16", "dev", "a0")
        try ns.ip("link", "set", "a0", "up")
        try ns.ip("link", "set", "b0", "up")
        #expect(try await TestSupport.eventually {
            try ["a0", "b0"].allSatisfy { try ns.ip("link", "show", $0).contains("state UP") }
        })
        let monitor = try await inNamespace(ns) { try RouteMonitor(bufferBytes: 2048, startReading: false) }
        let batch = FileManager.default.temporaryDirectory.path + "/gr-routes-\(getpid())"
        let lines = (0..<3000).map { "route add 172.\(16 + $0 / 250).\($0 % 250).0/24 via 10.8.0.2" }
        try lines.joined(separator: "\n").write(toFile: batch, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: batch) }
        try await TestSupport.sh(["ip", "-n", ns.name, "-batch", batch])
        try monitor.start()
        // The `.resync` comes once the queue behind the loss is read; then one more route, which must be heard.
        var events = await collect(monitor.events, timeout: 10) { $0.contains(.resync) }
        #expect(events.filter { $0 == .resync }.count == 1, "\(events.count) events")
        // Some notices were dropped: fewer route events than routes added (none at all once the loss is reported
        // first, as Linux does: the error is read before the queue).
        #expect(events.filter { $0 == .route(.new, .ipv4) }.count < 3000)
        try ns.ip("route", "add", "172.31.0.0/24", "via", "10.8.0.2")
        events = await collect(monitor.events, timeout: 10) { $0.contains(.route(.new, .ipv4)) }
        #expect(events.contains(.route(.new, .ipv4)))
        // Had the queued notices been passed on after the `.resync`, they would be here.
        #expect(events.filter { $0 == .route(.new, .ipv4) }.count == 1, "\(events)")
        #expect(!events.contains(.resync))
        monitor.stop()
    }
}
