import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// The running agent's answer for other programs, end to end: `reach agent` in a network namespace of the test's
/// own, its state file read while a route flips, its Varlink socket asked by the reference client from PyPI (which
/// nobody here wrote) and attacked by clients that misbehave, `reach status` beside it against the modem simulator,
/// hooks that hang, and the OpenWrt rpcd plugin run the way rpcd runs it.
@Suite(.serialized) struct AgentAPITests {
    /// The PyPI `varlink` package in the venv scripts/setup makes.
    static let python = TestPaths.repo + "/.build-venv/varlink/bin/python3"

    static func config(_ dir: String, hooks: String? = nil, timeout: Double = 30, extra: String = "") -> String {
        """
        {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},"changes":{"hold_down_seconds":0},
         "targets":[{"kind":"default"},{"kind":"address","value":"198.51.100.7"}],
         "modems":{"enabled":false},"wifi":{"enabled":false},\(extra)
         "api":{"state_directory":"\(dir)/run","hooks_directory":\(hooks.map { "\"\($0)\"" } ?? "null"),"hook_timeout_seconds":\(timeout)}}
        """
    }

    /// Subscribes with the PyPI client to the socket argv[1]: prints "first LAST_SEQ", then "line TYPE SEQ" per reply.
    static let subscribe = """
        import json, sys, varlink
        with varlink.Client(address="unix:" + sys.argv[1]) as c, c.open("org.gatewayreach.Reach") as r:
            replies = r.Subscribe(_more=True)
            print("first", next(replies)["status"]["agent"]["last_seq"], flush=True)
            for m in replies:
                print("line", m["status"]["event"]["type"], m["status"]["event"]["seq"], flush=True)
        """

    static func state(_ dir: String) -> JSON? {
        guard let data = FileManager.default.contents(atPath: dir + "/run/state.json") else { return nil }
        return try? JSON.parse(bytes: [UInt8](data))
    }

    /// A Unix stream connection of the test's own (blocking, with a receive timeout).
    final class Connection {
        let fd: Int32
        init?(_ path: String) {
            // Close-on-exec: a child another test spawns meanwhile must not inherit it, or closing it here would not
            // close the connection (the server would keep counting it).
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let ok = ListeningSocket.withAddress(path) { connect(fd, $0, $1) } == 0
            if !ok {
                close(fd)
                return nil
            }
        }
        deinit { close(fd) }

        /// Sends all of `bytes` (false when the peer closed first).
        @discardableResult
        func send(_ bytes: [UInt8]) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return false }
                sent += n
            }
            return true
        }

        /// The next NUL-terminated message, nil at end of file or after 5 s.
        func message() -> String? {
            var out: [UInt8] = []
            var b: UInt8 = 0
            while recv(fd, &b, 1, 0) == 1 {
                if b == 0 { return String(decoding: out, as: UTF8.self) }
                out.append(b)
            }
            return nil
        }

        /// Whether the server closed the connection within 5 s: end of file, or ECONNRESET when it closed with bytes of
        /// ours still unread (AF_UNIX reports that to the peer, unix_release_sock in net/unix/af_unix.c).
        func closedByPeer() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n == 0 { return true }
                if n < 0 { return errno == ECONNRESET }
            }
        }
    }

    /// A route flipping 50 times (del + add: 100 changes per target, two targets) while four readers loop on
    /// state.json, the PyPI client subscribes, and 40 connections at once, a 1 MiB request without a NUL, random
    /// bytes and a subscriber that never reads hit the socket. Every change line is written, in time by the agent's
    /// own clock; no reader sees a torn file; the subscriber gets each change line once, in order; a good client is
    /// still answered; the final state agrees with `reach status --json --direct`.
    @Test(
        .needsRoot, .needs(FileManager.default.isExecutableFile(atPath: Self.python), "the PyPI varlink venv (scripts/setup)")) func stateFileAndVarlinkUnderAFlippingRouteAndHostileClients() async throws {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-api")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socketPath = dir + "/run/org.gatewayreach.Reach"
        let agent = try await EndToEndTests.AgentProcess.start(config: Self.config(dir), dir: dir, netns: ns.name)
        try #require(await EndToEndTests.waitFor("start") { agent.events("start").count == 2 && Self.state(dir) != nil }, "\(agent.child.errorText)")
        let file = dir + "/run/state.json"
        var st = stat()
        #expect(lstat(file, &st) == 0 && st.st_mode & 0o777 == 0o644)
        #expect(lstat(socketPath, &st) == 0 && st.st_mode & 0o777 == 0o666 && FileKind(mode: st.st_mode) == .socket)

        // The reference client: GetInfo, GetInterfaceDescription (the client parses it to call anything), GetStatus.
        let cli = try await TestSupport.run([Self.python, "-m", "varlink.cli", "call", "unix:\(socketPath)/org.varlink.service.GetInfo", "{}"])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(try JSON.parse(cli.stdout)["interfaces"] == .array([.string("org.varlink.service"), .string("org.gatewayreach.Reach")]))
        let getStatus = """
            import json, sys, varlink
            with varlink.Client(address="unix:" + sys.argv[1]) as c, c.open("org.gatewayreach.Reach") as r:
                print(json.dumps(r.GetStatus()["status"]))
            """
        let gs = try await TestSupport.run([Self.python, "-c", getStatus, socketPath])
        #expect(gs.status == 0, "\(gs.stderr)")
        let status = try JSON.parse(gs.stdout)
        #expect(status["agent"]?["pid"]?.intValue != nil)
        #expect(status["targets"]?.arrayValue?.count == 2)

        // A subscriber with the PyPI client, printing each reply's seq.
        let subscriber = try await Spawned.start([Self.python, "-c", Self.subscribe, socketPath], stdout: .capture, stderr: .capture)
        defer { subscriber.stop(grace: 1) }
        let first = try await subscriber.stdout!.readLine(timeout: 10)
        #expect(first.hasPrefix("first "))

        // A subscriber that never reads.
        let sleeper = try #require(Connection(socketPath))
        sleeper.send(Array(#"{"method":"org.gatewayreach.Reach.Subscribe","more":true}"#.utf8) + [0])

        // Four readers on the state file, each parse must succeed.
        let stop = ManagedAtomicFlag()
        // (On threads of their own: four busy loops on Swift concurrency's pool would starve the test itself.)
        let readers = (0..<4).map { _ in
            Task {
                try await offPool { () -> (Int, Int) in
                    var reads = 0, torn = 0
                    while !stop.isSet {
                        if let data = FileManager.default.contents(atPath: file) {
                            reads += 1
                            if (try? JSON.parse(bytes: [UInt8](data)))?["agent"] == nil { torn += 1 }
                        }
                        usleep(500)
                    }
                    return (reads, torn)
                }
            }
        }

        // 40 connections at once from root: the first ones are served, the rest refused with TooManyClients (root
        // holds 28 of the 32 slots at most where the group reach exists, its 4 are kept; APIAbuseTests has the other
        // uids).
        var crowd: [Connection] = []
        for _ in 0..<40 { if let c = Connection(socketPath) { crowd.append(c) } }
        try await Task.sleep(for: .seconds(1))
        let refused = crowd.filter { c in
            var p = pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) == 1 && (c.message()?.contains("org.gatewayreach.Reach.TooManyClients") ?? false)
        }.count
        let rootSlots = VarlinkServer.groupID(named: "reach") == nil ? 32 : 28
        #expect(refused == 40 - (rootSlots - 2), "\(rootSlots) root clients at most: the subscriber, the sleeper and the crowd")
        crowd = []
        try await Task.sleep(for: .milliseconds(300))

        // The flips, with the hostile clients between them.
        // Each step waits for its two change lines (one per target), so that no flip falls between two reads of
        // the agent and the count is exact.
        var expected = 0
        for i in 0..<50 {
            for add in [false, true] {
                if add { try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0") } else { try ns.ip("route", "del", "default") }
                expected += 2
                let want = expected
                try #require(await EndToEndTests.waitFor("flip") { agent.events("change").count >= want }, "flip \(i)")
            }
            if i == 10 {
                let big = try #require(Connection(socketPath))
                big.send([UInt8](repeating: UInt8(ascii: "{"), count: 1 << 20))
                #expect(big.message()?.contains("org.gatewayreach.Reach.RequestTooLarge") == true)
                #expect(big.closedByPeer())
            }
            if i == 20 {
                let noise = try #require(Connection(socketPath))
                noise.send((0..<4096).map { _ in UInt8.random(in: 1...255) } + [0])
                #expect(noise.message()?.contains("org.gatewayreach.Reach.InvalidRequest") == true)
                #expect(noise.closedByPeer())
            }
            if i == 40 {
                // A client that shuts its sending side after the call (as socat or a shell tool may) is answered.
                let halfClosed = try #require(Connection(socketPath))
                halfClosed.send(Array(#"{"method":"org.varlink.service.GetInfo"}"#.utf8) + [0])
                shutdown(halfClosed.fd, Int32(SHUT_WR))
                #expect(halfClosed.message()?.contains("\"product\":\"reach\"") == true)
                #expect(halfClosed.closedByPeer())
            }
            if i == 30 {
                let unknown = try #require(Connection(socketPath))
                unknown.send(Array(#"{"method":"org.gatewayreach.Reach.Reboot"}"#.utf8) + [0])
                #expect(unknown.message()?.contains("org.varlink.service.MethodNotFound") == true)
                #expect(unknown.closedByPeer())
            }
        }

        // Every change line is in the log (two targets, 100 changes each) and reached the subscriber in order.
        try #require(await EndToEndTests.waitFor("lines", timeout: 30) { agent.events("change").count == 200 }, "\(agent.events("change").count)")
        let changeSeqs = agent.events("change").compactMap { $0["event"]?["seq"]?.intValue }
        #expect(await TestSupport.eventually(timeout: 20) {
            (subscriber.stdout?.text ?? "").split(separator: "\n").count >= 201
        })
        let got = (subscriber.stdout?.text ?? "").split(separator: "\n").dropFirst().map { line -> Int64 in
            let words = line.split(separator: " ")
            return words.count == 3 && words[1] == "change" ? Int64(words[2]) ?? -1 : -1
        }
        #expect(got == changeSeqs, "each change line once, in order")

        // A well-behaved client is still answered; the state settles on the last seq.
        #expect(await TestSupport.eventually(timeout: 10) { Self.state(dir)?["agent"]?["last_seq"]?.intValue == changeSeqs.last })
        let again = try await TestSupport.run([Self.python, "-c", getStatus, socketPath])
        #expect(again.status == 0, "\(again.stderr)")
        stop.set()
        var reads = 0, torn = 0
        for r in readers {
            let (n, t) = try await r.value
            reads += n
            torn += t
        }
        #expect(torn == 0, "\(torn) of \(reads) reads saw a torn or unparsable file")
        #expect(reads > 100)

        let final = try #require(Self.state(dir))
        let outputs = try #require(final["agent"]?["outputs"])
        #expect(outputs["varlink"]?["refused"]?.intValue == Int64(40 - (rootSlots - 2)))
        #expect(outputs["varlink"]?["dropped"]?.intValue == 1, "the subscriber that never read: \(outputs.serialized())")
        #expect((outputs["varlink"]?["bad_requests"]?.intValue ?? 0) >= 3)
        // "On time", by the agent's own clocks: the CPU time the report sink's thread spent handing lines to the API
        // outputs (all that 40 clients can cost it), and the wall time from a change's snapshot to its line in the log. Four
        // busy readers and the clients share this 2-core machine with the agent, so that wall time includes being
        // scheduled; a client that could block the agent would show here in seconds, or as missing lines above.
        #expect((outputs["line_handoff_cpu_max_ms"]?.doubleValue ?? 1e9) < 5, "\(outputs.serialized())")
        #expect((outputs["change_line_delay_max_ms"]?.doubleValue ?? 1e9) < 1000, "\(outputs.serialized())")
        print("agent API stress: \(reads) state reads by 4 readers, 0 torn; 200 change lines; Varlink \(outputs["varlink"]!.serialized()); "
              + "change line delay max \(outputs["change_line_delay_max_ms"]?.doubleValue ?? -1) ms, hand-over CPU max \(outputs["line_handoff_cpu_max_ms"]?.doubleValue ?? -1) ms")

        // The final state agrees with a direct read in the same namespace.
        try Self.config(dir).write(toFile: dir + "/status.json", atomically: true, encoding: .utf8)
        let direct = try await ns.exec([TestPaths.reach, "status", "--json", "--direct", "--config", dir + "/status.json"])
        let d = try JSON.parse(direct.stdout)
        let t = try #require(final["targets"]?.arrayValue?.first)
        for key in ["status", "medium", "wwan_status", "reachable", "flags", "route", "target", "supports_ipv4", "supports_ipv6"] {
            #expect(t[key] == d[key], "\(key): state \(t[key]?.serialized() ?? "-") direct \(d[key]?.serialized() ?? "-")")
        }
        #expect(d["readings"]?["from"] == .string("direct"))

        let (exit, log) = await agent.stop()
        #expect(exit == 0, "\(log)")
        #expect(!FileManager.default.fileExists(atPath: socketPath), "the socket goes with the agent")
        #expect(Self.state(dir)?["agent"]?["state"] == .string("stopped"))
    }

    /// The agent reads the simulated modem; `reach status` beside it takes the modem from the agent and opens no
    /// port of its own: the simulator's frame log does not grow. `--direct` does open it (so the check can fail).
    @Test(.needs(TestPaths.isBuilt(TestPaths.simulator), "reach-modem-sim built")) func statusBesideTheAgentOpensNoModem() async throws {
        let dir = try makeTempDir("reach-api-sim")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        let config = """
            {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},
             "modems":{"ports":[{"path":"\(sim.link)","protocol":"qmi"}],"request_timeout_seconds":2,"poll_interval_seconds":600},
             "wifi":{"enabled":false},"api":{"state_directory":"\(dir)/run","hooks_directory":null}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir)
        try #require(await EndToEndTests.waitFor("start", timeout: 20) { agent.events("start").count == 1 && Self.state(dir) != nil })
        // Quiet: the agent has read the modem and subscribed to its indications.
        try await Task.sleep(for: .seconds(1))
        let before = sim.log
        let r = try await TestSupport.run([TestPaths.reach, "status", "--json", "--config", dir + "/reach.json"])
        let s = try JSON.parse(r.stdout)
        #expect(s["readings"]?["from"] == .string("agent"), "\(r.stdout)")
        #expect(s["wwan"]?.arrayValue?.first?["generation"] == .string("4g"))
        #expect(s["wwan_status"] == .string("4g"))
        #expect(s["sources"]?["wwan"]?["reason"]?.stringValue?.hasPrefix("from the running agent (age ") == true)
        #expect(sim.log == before, "reach status opened the modem: \(sim.log.dropFirst(before.count).prefix(600))")
        let text = try await TestSupport.run([TestPaths.reach, "status", "--config", dir + "/reach.json"])
        #expect(text.stdout.contains("readings: from the running agent"))
        let diag = try await TestSupport.run([TestPaths.reach, "diag", "--json", "--config", dir + "/reach.json"])
        let checks = try JSON.parse(diag.stdout)["checks"]?.arrayValue ?? []
        #expect(checks.first?["id"] == .string("agent") && checks.first?["status"] == .string("ok"), "\(diag.stdout)")
        #expect(sim.log == before, "reach diag opened the modem")
        let bundle = try await TestSupport.run([TestPaths.reach, "diag", "--config", dir + "/reach.json", "--bundle", dir + "/b.tar.gz"])
        #expect([0, 2].contains(bundle.status), "\(bundle.stderr)")
        let listing = try await TestSupport.run(["tar", "-xOzf", dir + "/b.tar.gz", "--wildcards", "*/agent-state.json"])
        #expect(try JSON.parse(listing.stdout)["agent"]?["state"] == .string("running"), "\(listing.stderr)")
        #expect(sim.log == before, "reach diag --bundle opened the modem")

        let direct = try await TestSupport.run([TestPaths.reach, "status", "--json", "--direct", "--config", dir + "/reach.json"])
        #expect(try JSON.parse(direct.stdout)["readings"]?["from"] == .string("direct"))
        #expect(sim.log.count > before.count, "--direct reads the modem itself")

        // A dead agent: read directly, and said so.
        _ = await agent.stop()
        let after = try await TestSupport.run([TestPaths.reach, "status", "--json", "--config", dir + "/reach.json"])
        let readings = try JSON.parse(after.stdout)["readings"]
        #expect(readings?["from"] == .string("direct"))
        #expect(readings?["detail"]?.stringValue?.contains("no agent answers") == true, "\(after.stdout)")
    }

    /// A hook that sleeps 600 s (timeout 1 s) beside one that records each event, and a world-writable one: change
    /// lines keep coming in time by the agent's own clock, the hanging hook leaves nothing behind, the recorder
    /// catches up with the last change, the world-writable hook never runs.
    @Test(.needsRoot) func aHangingHookDelaysNoLineAndLeavesNothingBehind() async throws {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-api-hooks")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hooks = dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        try HookRunnerTests.script(hooks, "10-record", "echo $REACH_SEQ $REACH_EVENT $REACH_STATUS $REACH_PREVIOUS_STATUS $REACH_INTERFACE >> \(dir)/seqs")
        try HookRunnerTests.script(hooks, "20-hang", "echo $$ >> \(dir)/pids; sleep 600 & echo $! >> \(dir)/pids; sleep 600")
        try HookRunnerTests.script(hooks, "30-open", "touch \(dir)/open-ran", mode: 0o777)
        let agent = try await EndToEndTests.AgentProcess.start(
            config: Self.config(dir, hooks: hooks, timeout: 1).replacingOccurrences(of: #"{"kind":"address","value":"198.51.100.7"}"#, with: #"{"kind":"link_local"}"#),
            dir: dir, netns: ns.name)
        try #require(await EndToEndTests.waitFor("start") { agent.events("start").count == 2 })
        for _ in 0..<6 {
            try ns.ip("route", "del", "default")
            try await Task.sleep(for: .milliseconds(150))
            try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0")
            try await Task.sleep(for: .milliseconds(150))
        }
        try #require(await EndToEndTests.waitFor("lines") { agent.events("change").count == 12 }, "\(agent.events("change").count)")
        let last = try #require(agent.events("change").last)
        let lastSeq = try #require(last["event"]?["seq"]?.intValue)
        // The hooks catch up with the latest event (each round: the recorder, then 1 s + up to 2 s for the hang).
        #expect(await TestSupport.eventually(timeout: 30) {
            ((try? String(contentsOfFile: dir + "/seqs", encoding: .utf8)) ?? "").split(separator: "\n").last?.hasPrefix("\(lastSeq) ") == true
        }, "\((try? String(contentsOfFile: dir + "/seqs", encoding: .utf8)) ?? "")")
        let recorded = try String(contentsOfFile: dir + "/seqs", encoding: .utf8).split(separator: "\n")
        #expect(recorded.allSatisfy { $0.contains(" change ") }, "\(recorded)")
        #expect(recorded.last == "\(lastSeq) change wifi none veth0", "\(recorded)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/open-ran"))
        // Nothing the hanging hook started is left once its runs are over.
        try await Task.sleep(for: .seconds(4))
        let pids = try String(contentsOfFile: dir + "/pids", encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(!pids.isEmpty)
        for pid in pids { #expect(kill(pid, 0) != 0 && errno == ESRCH, "pid \(pid) of the hanging hook still runs") }

        let state = try #require(Self.state(dir))
        let outputs = try #require(state["agent"]?["outputs"])
        #expect((outputs["change_line_delay_max_ms"]?.doubleValue ?? 1e9) <= 50, "\(outputs.serialized())")
        #expect((outputs["line_handoff_cpu_max_ms"]?.doubleValue ?? 1e9) <= 50, "\(outputs.serialized())")
        let h = try #require(outputs["hooks"])
        #expect((h["timeouts"]?.intValue ?? 0) >= 1 && (h["refused"]?.intValue ?? 0) >= 1, "\(h.serialized())")
        #expect(h["events"]?.intValue == 12)
        print("hooks under a hanging hook: \(h.serialized()); change line delay max \(outputs["change_line_delay_max_ms"]?.doubleValue ?? -1) ms")
        let (exit, log) = await agent.stop()
        #expect(exit == 0)
        #expect(log.contains("Hook failed") && log.contains("timed out"))
        #expect(log.contains("Hook refused") && log.contains("30-open") && log.contains("writable by"))
    }

    /// rpcd runs an exec plugin as `PLUGIN list` and `PLUGIN call METHOD` with the arguments on stdin, with a bare
    /// environment, under OpenWrt's busybox ash: done here the same way with Debian's busybox.
    @Test(.needs(TestSupport.find("busybox") != nil, "busybox (scripts/setup)")) func rpcdPluginListsAndServesTheStateFile() async throws {
        let dir = try makeTempDir("reach-rpcd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try await EndToEndTests.AgentProcess.start(config: Self.config(dir), dir: dir)
        // Both targets in the file (on a slow run the first write can hold the first target's answer alone).
        try #require(await EndToEndTests.waitFor("state") { Self.state(dir)?["targets"]?.arrayValue?.count == 2 })
        let plugin = PackagingTests.root + "/config/openwrt/rpcd-reach"
        let env = ["env", "-i", "REACH_STATE_FILE=\(dir)/run/state.json", try TestSupport.which("busybox"), "sh", plugin]
        let list = try await TestSupport.run(env + ["list"])
        #expect(list.status == 0)
        #expect(try JSON.parse(list.stdout) == .object([("status", .object([]))]))
        // The agent rewrites the file as its state changes: the comparison counts when the file stayed the same
        // from before the call to after it (a slow run, the sanitizer stages, can see a write in between).
        var served = JSON.null
        var compared = false
        for _ in 0..<5 where !compared {
            let before = Self.state(dir)
            let call = try await TestSupport.run(env + ["call", "status"], input: "{}")
            #expect(call.status == 0, "\(call.stderr)")
            served = try JSON.parse(call.stdout)
            guard before == Self.state(dir) else { continue }
            #expect(served == before, "the plugin serves state.json as it is")
            compared = true
        }
        #expect(compared, "state.json changed during each of 5 calls")
        _ = await agent.stop()
        #expect(served["targets"]?.arrayValue?.count == 2)
        let acl = try JSON.parse(String(contentsOfFile: PackagingTests.root + "/config/openwrt/reach-acl.json", encoding: .utf8))
        #expect(acl["luci-app-reach"]?["read"]?["ubus"]?["reach"] == .array([.string("status")]))
        let missing = try await TestSupport.run(["env", "-i", "REACH_STATE_FILE=\(dir)/none", try TestSupport.which("busybox"), "sh", plugin, "call", "status"], input: "{}")
        #expect(try JSON.parse(missing.stdout)["error"] != nil)
        let unknown = try await TestSupport.run(env + ["call", "restart"], input: "{}")
        #expect(unknown.status != 0)
        // scripts/install --init procd puts both where rpcd and LuCI look.
        let staged = dir + "/staged"
        let install = try await TestSupport.run([
            PackagingTests.root + "/scripts/install", "--destdir", staged, "--init", "procd", "--binary", TestPaths.reach,
        ])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(FileManager.default.isExecutableFile(atPath: staged + "/usr/libexec/rpcd/reach"))
        #expect(FileManager.default.fileExists(atPath: staged + "/usr/share/rpcd/acl.d/reach.json"))
        #expect(try String(contentsOfFile: staged + "/etc/init.d/reach", encoding: .utf8).contains("mkdir -p /var/run/reach"))
    }
}

/// A flag set once, read from other tasks.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
