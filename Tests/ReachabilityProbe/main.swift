// reachability-probe: GatewayReach's `Reachability` in a process of its own, counting what it holds — file
// descriptors by kind, threads, resident memory — so that sharing (one rtnetlink socket, one modem session, one
// nl80211 monitor however many instances) and releasing (nothing left after stop) are measured in a process no
// other test shares. A test tool: the unit tests run `sharing` briefly, scripts/bench runs `cycles` and `changes`
// at length. Output: one JSON object per line.
//
//   reachability-probe sharing [--instances N] [--modem PATH:qmi|mbim] [--no-wifi]
//   reachability-probe cycles COUNT [--instances N] [--modem PATH:PROTO] [--no-wifi] [--pause MS]
//   reachability-probe changes COUNT [--gateway IP] [--interface NAME]   (in a namespace of its own: it flips the
//                                                                          default route over rtnetlink)

import GatewayReach
import Glibc
import Synchronization

// MARK: What the process holds

struct Holdings: CustomStringConvertible {
    var fds = 0
    /// Netlink sockets by protocol (0 NETLINK_ROUTE, 16 NETLINK_GENERIC), and of those the ones subscribed to
    /// multicast groups (monitors).
    var routeSockets = 0
    var routeMonitors = 0
    var genericSockets = 0
    var genericMonitors = 0
    var ptys = 0
    /// The other fds: pipes, other sockets, anon inodes (eventfd, epoll, timerfd) and files.
    var pipes = 0
    var otherSockets = 0
    var anon = 0
    var files = 0
    var threads = 0
    var rssKiB = 0

    static func now() -> Holdings {
        var h = Holdings()
        var netlink: [String: (protocol: Int, groups: Bool)] = [:]
        for line in readLines("/proc/self/net/netlink").dropFirst() {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, let proto = Int(f[1]) else { continue }
            netlink[String(f[9])] = (proto, f[3] != "00000000")
        }
        for fd in listDirectory("/proc/self/fd") {
            guard let target = readLink("/proc/self/fd/" + fd) else { continue }  // the directory's own fd is gone
            h.fds += 1
            if target.hasPrefix("/dev/pts/") {
                h.ptys += 1
            } else if target.hasPrefix("socket:[") {
                let s = netlink[String(target.dropFirst(8).dropLast())]
                if s?.protocol == 0 {
                    h.routeSockets += 1
                    if s!.groups { h.routeMonitors += 1 }
                } else if s?.protocol == 16 {
                    h.genericSockets += 1
                    if s!.groups { h.genericMonitors += 1 }
                } else {
                    h.otherSockets += 1
                }
            } else if target.hasPrefix("pipe:[") {
                h.pipes += 1
            } else if target.hasPrefix("anon_inode:") {
                h.anon += 1
            } else {
                h.files += 1
            }
        }
        h.threads = listDirectory("/proc/self/task").count
        for line in readLines("/proc/self/status") where line.hasPrefix("VmRSS:") {
            h.rssKiB = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
        }
        return h
    }

    var description: String {
        "{\"fds\":\(fds),\"route_sockets\":\(routeSockets),\"route_monitors\":\(routeMonitors),"
            + "\"generic_sockets\":\(genericSockets),\"generic_monitors\":\(genericMonitors),\"ptys\":\(ptys),"
            + "\"pipes\":\(pipes),\"other_sockets\":\(otherSockets),\"anon\":\(anon),\"files\":\(files),"
            + "\"threads\":\(threads),\"rss_kib\":\(rssKiB)}"
    }
}

func readLines(_ path: String) -> [Substring] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16384)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
}

func listDirectory(_ path: String) -> [String] {
    guard let d = opendir(path) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

func readLink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 512)
    let n = readlink(path, &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func emit(_ json: String) {
    print(json)
    fflush(nil)
}

func fail(_ message: String) -> Never {
    let text = Array("reachability-probe: \(message)\n".utf8)
    _ = write(2, text, text.count)
    exit(64)
}

// What a parent left open (a test process's own sockets and ptys, opened without close-on-exec by the libraries it
// ran) is not this process's to count: closed before anything is measured.
for fd in listDirectory("/proc/self/fd").compactMap(Int32.init) where fd > 2 { close(fd) }

// MARK: Arguments

var arguments = Array(CommandLine.arguments.dropFirst())
guard !arguments.isEmpty else { fail("usage: reachability-probe sharing|cycles COUNT|changes COUNT [options]") }
let mode = arguments.removeFirst()
var count = 0
if mode == "cycles" || mode == "changes" {
    guard let first = arguments.first, let n = Int(first), n > 0 else { fail("\(mode): expected a count") }
    count = n
    arguments.removeFirst()
}
var instances = 1
var options = ReachabilityOptions()
options.holdDown = .zero
options.modems.enabled = false
options.modems.requestTimeout = .seconds(2)
// The port opened by this process itself, so that its fds count the session (through qmi-proxy, the proxy would
// hold the port).
options.modems.access = .direct
var pause = Duration.zero
var gateway = "10.77.0.1"
var interface = "eth0"
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    func value() -> String {
        guard !arguments.isEmpty else { fail("\(flag) needs a value") }
        return arguments.removeFirst()
    }
    switch flag {
    case "--instances":
        guard let n = Int(value()), n > 0 else { fail("--instances: expected a positive number") }
        instances = n
    case "--modem":
        let v = value()
        guard let colon = v.lastIndex(of: ":"), let p = ModemProtocol(rawValue: String(v[v.index(after: colon)...])) else {
            fail("--modem: expected PATH:qmi or PATH:mbim")
        }
        options.modems.enabled = true
        options.modems.ports.append(ModemPortSpec(path: String(v[..<colon]), protocol: p))
    case "--no-wifi": options.wifi.enabled = false
    case "--pause":
        guard let ms = Int(value()), ms >= 0 else { fail("--pause: expected milliseconds") }
        pause = .milliseconds(ms)
    case "--gateway": gateway = value()
    case "--interface": interface = value()
    default: fail("unknown option \(flag)")
    }
}

let configured = options

// MARK: Helpers

/// Waits (polling, in real time) until `condition` holds, at most `seconds`.
func wait(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// Starts `n` instances on the default route and waits for each one's first determination.
func startInstances(_ n: Int, _ options: ReachabilityOptions) async -> [Reachability] {
    let all = (0..<n).map { _ in Reachability(target: .defaultRoute, options: options) }
    for r in all { r.start() }
    for r in all {
        var first = r.updates.makeAsyncIterator()
        guard let s = await first.next() else { fail("an instance ended before its first determination") }
        for m in s.wwan where m.error == nil && m.generation != .none { modemsRead.add(1, ordering: .relaxed) }
        for m in s.wwan { if let e = m.error { modemErrors.withLock { $0[e, default: 0] += 1 } } }
    }
    return all
}

/// First determinations that carried a modem read without error (each instance counts: 3 per cycle when shared),
/// and the errors of the others.
let modemsRead = Atomic<Int>(0)
let modemErrors = Mutex<[String: Int]>([:])

/// Holdings once every instance is stopped and what they released has really gone: no monitor socket, no modem
/// port, and the same figures twice in a row (sockets are closed by the threads that used them, as they end). At most
/// a few seconds after the stop.
func quiescent() async -> Holdings {
    // Steady means the same figures for 200 ms: a thread that ends closes its fds one by one, slowly under emulation,
    // and a modem session that was stopped mid-request first finishes it (bounded by the request timeout), then
    // releases its client ids: on a loaded machine that takes seconds.
    var last = Holdings.now()
    var steadySince = ContinuousClock.now
    _ = await wait(30) {
        let now = Holdings.now()
        defer { last = now }
        guard now.routeMonitors == 0 && now.genericMonitors == 0 && now.ptys == 0 && now.fds == last.fds
            && now.threads == last.threads
        else {
            steadySince = ContinuousClock.now
            return false
        }
        return ContinuousClock.now - steadySince >= .milliseconds(200)
    }
    return last
}

func jsonEscaped(_ s: String) -> String {
    s.unicodeScalars.map { c -> String in
        switch c {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case _ where c.value < 0x20: return "?"
        default: return String(c)
        }
    }.joined()
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

// MARK: Modes

switch mode {
case "sharing":
    // One warm-up cycle first: what lives for the whole process (the GLib thread of the modem libraries, started on
    // first use) is then part of the baseline.
    for r in await startInstances(1, configured) { r.stop() }
    emit("{\"phase\":\"baseline\",\"holdings\":\(await quiescent())}")
    for n in Set([1, instances]).sorted() {
        let running = await startInstances(n, configured)
        try? await Task.sleep(for: .milliseconds(300))  // let every source settle (no half-opened socket counted)
        emit("{\"phase\":\"running\",\"instances\":\(n),\"holdings\":\(Holdings.now())}")
        for r in running { r.stop() }
        emit("{\"phase\":\"stopped\",\"instances\":\(n),\"holdings\":\(await quiescent())}")
    }

case "cycles":
    for r in await startInstances(instances, configured) { r.stop() }
    emit("{\"phase\":\"after 1 cycle\",\"holdings\":\(await quiescent())}")
    let clock = ContinuousClock()
    let started = clock.now
    for i in 2...max(2, count) {
        for r in await startInstances(instances, configured) { r.stop() }
        if pause > .zero { try? await Task.sleep(for: pause) }
        if i == 10 || i % 100 == 0 || i == count {
            emit("{\"phase\":\"after \(i) cycles\",\"holdings\":\(await quiescent())}")
        }
    }
    emit(
        "{\"phase\":\"done\",\"cycles\":\(count),\"seconds\":\(seconds(clock.now - started)),"
            + "\"modem_reads\":\(modemsRead.load(ordering: .relaxed)),\"modem_errors\":{"
            + modemErrors.withLock { $0.sorted { $0.key < $1.key }.map { "\"\(jsonEscaped($0.key))\":\($0.value)" } }
                .joined(separator: ",") + "}}")

case "changes":
    // The default route via `gateway` on `interface` is deleted and added again over rtnetlink, each time waiting
    // for the change to be reported through both `updates` and `notify`.
    let socket = RouteFlipper(gateway: gateway, interface: interface)
    var changeOptions = configured
    changeOptions.wifi.enabled = false
    let reach = Reachability(target: .defaultRoute, options: changeOptions)
    let notified = Atomic<Int>(0)
    let streamed = Atomic<Int>(0)
    reach.notify = { _ in notified.add(1, ordering: .relaxed) }
    reach.start()
    let consumer = Task {
        for await _ in reach.updates { streamed.add(1, ordering: .relaxed) }
    }
    guard await wait(10, { streamed.load(ordering: .relaxed) >= 1 && notified.load(ordering: .relaxed) >= 1 }) else {
        fail("no first determination")
    }
    let clock = ContinuousClock()
    let started = clock.now
    var measuredFrom: Holdings?
    for i in 1...count {
        socket.set(present: i % 2 == 0)
        let want = i + 1
        guard await wait(10, { streamed.load(ordering: .relaxed) >= want && notified.load(ordering: .relaxed) >= want }) else {
            fail("change \(i) was not reported (updates \(streamed.load(ordering: .relaxed)), notify \(notified.load(ordering: .relaxed)))")
        }
        if i == min(100, count) {
            measuredFrom = Holdings.now()
            emit("{\"phase\":\"after \(i) changes\",\"holdings\":\(measuredFrom!)}")
        } else if i % 1000 == 0 || i == count {
            emit("{\"phase\":\"after \(i) changes\",\"holdings\":\(Holdings.now())}")
        }
    }
    emit("{\"phase\":\"done\",\"changes\":\(count),\"seconds\":\(seconds(clock.now - started)),\"status\":\"\(reach.status.rawValue)\"}")
    reach.stop()
    _ = await consumer.value

default:
    fail("unknown mode \(mode)")
}

/// RTM_NEWROUTE / RTM_DELROUTE of the IPv4 default route, on a socket of its own (no `ip` process per flip).
final class RouteFlipper {
    let fd: Int32
    let gateway: [UInt8]
    let ifindex: UInt32
    var seq: UInt32 = 0

    init(gateway: String, interface: String) {
        guard let g = IPAddress(gateway), g.family == .ipv4 else { fail("--gateway: expected an IPv4 address") }
        self.gateway = g.bytes
        ifindex = if_nametoindex(interface)
        guard ifindex != 0 else { fail("no interface \(interface)") }
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { fail("socket(NETLINK_ROUTE): errno \(errno)") }
    }

    func set(present: Bool) {
        seq += 1
        var body: [UInt8] = [UInt8(AF_INET), 0, 0, 0, 254, present ? 3 : 0, 0, present ? 1 : 0, 0, 0, 0, 0]
        body += attribute(5, gateway)  // RTA_GATEWAY
        body += attribute(4, withUnsafeBytes(of: ifindex.littleEndian) { Array($0) })  // RTA_OIF
        let flags: UInt16 = 0x1 | 0x4 | (present ? 0x400 | 0x200 : 0)  // REQUEST | ACK | (CREATE | REPLACE)
        var message: [UInt8] = []
        message += le(UInt32(16 + body.count))
        message += le(UInt16(present ? 24 : 25))  // RTM_NEWROUTE, RTM_DELROUTE
        message += le(flags)
        message += le(seq)
        message += le(UInt32(0))
        message += body
        guard send(fd, message, message.count, 0) == message.count else { fail("send: errno \(errno)") }
        var reply = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &reply, reply.count, 0)
        // NLMSG_ERROR with error 0 is the ACK.
        guard n >= 20, reply[4] == 2, reply[16...19].allSatisfy({ $0 == 0 }) else { fail("route \(present ? "add" : "del") refused") }
    }

    private func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        le(UInt16(4 + payload.count)) + le(type) + payload + [UInt8](repeating: 0, count: (4 - payload.count % 4) % 4)
    }

    private func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
}
