import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// Issue 29: no local user can lock the others out of the agent's Varlink API. `reach agent` (default `api` limits:
/// 32 connections, 4 per uid) in a network namespace of the test's own; crowds of clients as uid 65534 (nobody) and
/// five more unprivileged uids (scripts/lib/varlink-crowd.py: subscribers that never read, read slowly, or read all)
/// take what they can, while root and a member of the group `reach` call GetStatus every 100 ms with the PyPI client
/// and a root subscriber follows the change lines of a route that flips.
@Suite(.serialized) struct APIAbuseTests {
    static let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    /// The gid the agent knows as `reach` when the machine has no such group: /etc/group with it added is bound over
    /// /etc/group in a mount namespace of the agent's own.
    static let testGroup = 64990
    /// The agent's memory may grow by at most this while crowds hold its connections (KiB): 32 connections of at
    /// most 64 KiB + 16 KiB of request (one read beyond the limit), 64 KiB of queued replies plus the one that
    /// passed the limit (a few KiB of state), about 150 KiB each, 4.7 MiB, and 1.3 MiB for the allocator's slack.
    static let memoryBoundKiB = 6 << 10

    /// Calls GetStatus with the PyPI client every 100 ms until the file argv[2] exists, then prints one JSON line:
    /// the calls, the slowest and the median (connect to reply, ms) and the errors.
    static let prober = """
        import json, os, sys, time, varlink
        client = varlink.Client(address="unix:" + sys.argv[1])
        times, errors = [], []
        while not os.path.exists(sys.argv[2]):
            t = time.monotonic()
            try:
                with client.open("org.gatewayreach.Reach") as r:
                    r.GetStatus()
                times.append((time.monotonic() - t) * 1000)
            except Exception as e:
                errors.append(repr(e))
            time.sleep(0.1)
        times.sort()
        print(json.dumps({"calls": len(times), "max_ms": times[-1] if times else -1,
                          "median_ms": times[len(times) // 2] if times else -1, "errors": errors[:5],
                          "error_count": len(errors)}), flush=True)
        """

    static func rssKiB(_ pid: Int64) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// A crowd of `count` clients as `user`, once it has printed its summary line (admitted, refused, …).
    static func startCrowd(_ user: [String], _ socketPath: String, _ count: Int) async throws -> (Spawned, JSON) {
        let child = try await Spawned.start(user + ["/usr/bin/python3", VarlinkServerTests.crowd, socketPath, String(count)], stdout: .capture, stderr: .capture)
        let line = try await child.readLine(timeout: 120)
        return (child, try JSON.parse(line))
    }

    @Test(
        .needsRoot, .needs(FileManager.default.isExecutableFile(atPath: AgentAPITests.python), "the PyPI varlink venv (scripts/setup)"),
        .needs(TestSupport.find("setpriv") != nil && TestSupport.find("unshare") != nil, "setpriv and unshare (util-linux)")) func unprivilegedCrowdsLockNeitherRootNorTheGroupOut() async throws {
        let started = ContinuousClock.now
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-abuse")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // uid 65534 and the group member reach the socket (0666) through the test's directory.
        chmod(dir, 0o755)
        let socketPath = dir + "/run/org.gatewayreach.Reach"
        let existing = VarlinkServer.groupID(named: "reach")
        let gid = existing.map(Int.init) ?? Self.testGroup
        var wrapper: [String] = []
        if existing == nil {
            let groups = try String(contentsOfFile: "/etc/group", encoding: .utf8) + "reach:x:\(gid):\n"
            try groups.write(toFile: dir + "/group", atomically: true, encoding: .utf8)
            chmod(dir + "/group", 0o644)
            wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       #"mount --bind "$0" /etc/group && exec "$@""#, dir + "/group"]
        }
        let member = ["setpriv", "--reuid=64991", "--regid=64991", "--groups=\(gid)"]
        // WiFi on (the namespace has none): `reach status` asks the agent only for what the agent reads.
        let config = """
            {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":3600},"changes":{"hold_down_seconds":0},
             "modems":{"enabled":false},"wifi":{"enabled":true},
             "api":{"state_directory":"\(dir)/run","hooks_directory":null}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir, netns: ns.name, wrapper: wrapper)
        try #require(await EndToEndTests.waitFor("start") { agent.events("start").count == 1 && AgentAPITests.state(dir) != nil },
                     "\(agent.child.errorText)")
        let pid = try #require(AgentAPITests.state(dir)?["agent"]?["pid"]?.intValue)
        chmod(dir + "/reach.json", 0o644)

        // The readers that must stay answered: root and the group's member every 100 ms, a root subscriber.
        let stop = dir + "/stop"
        let rootProbe = try await Spawned.start([AgentAPITests.python, "-c", Self.prober, socketPath, stop], stdout: .capture, stderr: .capture)
        defer { rootProbe.stop(grace: 1) }
        let groupProbe = try await Spawned.start(
            member + [AgentAPITests.python, "-c", Self.prober, socketPath, stop], stdout: .capture, stderr: .capture)
        defer { groupProbe.stop(grace: 1) }
        let subscriber = try await Spawned.start(
            [AgentAPITests.python, "-c", AgentAPITests.subscribe, socketPath], stdout: .capture, stderr: .capture)
        defer { subscriber.stop(grace: 1) }
        #expect(try await subscriber.readLine(timeout: 10).hasPrefix("first "))
        try await Task.sleep(for: .seconds(1))
        let rssBefore = Self.rssKiB(pid)

        var flips = 0
        // Each step waits for its change line: a del and an add read together by a busy agent would be no change.
        func flip(_ times: Int) async throws {
            for _ in 0..<times {
                for add in [false, true] {
                    if add { try ns.ip("route", "add", "default", "via", "192.0.2.1", "dev", "veth0") } else { try ns.ip("route", "del", "default") }
                    flips += 1
                    let want = flips
                    try #require(await EndToEndTests.waitFor("flip") { agent.events("change").count >= want },
                                 "\(agent.events("change").count) change lines, \(want) expected")
                }
            }
        }

        // 32 connections from nobody, each subscribing: 4 admitted, 28 refused for uid 65534.
        let (crowd32, first) = try await Self.startCrowd(Self.nobody, socketPath, 32)
        defer { crowd32.stop(grace: 1) }
        #expect(first["admitted"] == .int(4) && first["refused"] == .int(28), "\(first.serialized())")
        #expect(first["refused_uids"] == .array([.int(65534)]) && first["limits"] == .array([.int(4)]), "\(first.serialized())")
        try await flip(5)

        // nobody's reach status and diag are refused, and say so; root's take the agent's readings.
        let refusedText = "readings: read directly (the agent refused: TooManyClients for uid 65534)"
        let theirs = try await TestSupport.run(Self.nobody + [TestPaths.reach, "status", "--config", dir + "/reach.json"])
        #expect(theirs.stdout.contains(refusedText), "\(theirs.stdout)\(theirs.stderr)")
        let theirDiag = try await TestSupport.run(Self.nobody + [TestPaths.reach, "diag", "--config", dir + "/reach.json"])
        #expect(theirDiag.stdout.contains(refusedText), "\(theirDiag.stdout)\(theirDiag.stderr)")
        let mine = try await ns.exec([TestPaths.reach, "status", "--json", "--config", dir + "/reach.json"])
        #expect(try JSON.parse(mine.stdout)["readings"]?["from"] == .string("agent"), "\(mine.stdout)")

        // 200 more from nobody (all refused: it holds its 4), then five more uids fill what is left to everyone
        // but root and the group (20: 4 each); a sixth uid finds the rest kept (limit 32).
        let (crowd200, second) = try await Self.startCrowd(Self.nobody, socketPath, 200)
        defer { crowd200.stop(grace: 1) }
        #expect(second["admitted"] == .int(0) && second["refused"] == .int(200), "\(second.serialized())")
        var fillers: [Spawned] = []
        defer { for f in fillers { f.stop(grace: 1) } }
        var filled: [Int64] = []
        var keptOut: [Int] = []
        for uid in 65528...65533 {
            let user = ["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
            let (f, summary) = try await Self.startCrowd(user, socketPath, 8)
            fillers.append(f)
            filled.append(summary["admitted"]?.intValue ?? -1)
            if summary["admitted"] == .int(0) {
                keptOut.append(uid)
                #expect(summary["limits"] == .array([.int(32)]) && summary["refused_uids"] == .array([.int(Int64(uid))]),
                        "\(summary.serialized())")
            }
        }
        #expect(filled.sorted() == [0, 4, 4, 4, 4, 4], "\(filled)")
        try await flip(5)
        try await Task.sleep(for: .seconds(2))
        let rssCrowded = Self.rssKiB(pid)
        // Root still gets in while everything unprivileged is held.
        let mineAgain = try await ns.exec([TestPaths.reach, "status", "--json", "--config", dir + "/reach.json"])
        #expect(try JSON.parse(mineAgain.stdout)["readings"]?["from"] == .string("agent"), "\(mineAgain.stdout)")

        // Close-then-connect, 100 times, as nobody at its limit: never refused.
        crowd32.signal(SIGUSR1)
        let churn = try JSON.parse(try await crowd32.readLine(timeout: 120))
        #expect(churn["churned"] == .int(100) && churn["refused"] == .int(0) && churn["errors"] == .array([]), "\(churn.serialized())")
        try await flip(5)

        // The readers' figures.
        try "".write(toFile: stop, atomically: true, encoding: .utf8)
        let rootCalls = try JSON.parse(try await rootProbe.readLine(timeout: 10))
        let groupCalls = try JSON.parse(try await groupProbe.readLine(timeout: 10))
        for (who, calls, probe) in [("root", rootCalls, rootProbe), ("group reach", groupCalls, groupProbe)] {
            #expect(calls["error_count"] == .int(0), "\(who): \(calls.serialized()) \(probe.errorText)")
            // A call every 100 ms from before the first crowd to after the churn.
            #expect((calls["calls"]?.intValue ?? 0) >= 20, "\(who): \(calls.serialized())")
            #expect((calls["max_ms"]?.doubleValue ?? 1e9) < 100, "\(who) waited: \(calls.serialized())")
        }
        // Every change line reached the root subscriber, in order, in time by the agent's own clocks.
        let changeSeqs = agent.events("change").compactMap { $0["event"]?["seq"]?.intValue }
        #expect(changeSeqs.count == flips)
        #expect(await TestSupport.eventually(timeout: 10) {
            (subscriber.stdout?.text ?? "").split(separator: "\n").count >= flips + 1
        })
        let got = (subscriber.stdout?.text ?? "").split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: " ").last ?? "") }
        #expect(got == changeSeqs, "each change line once, in order")
        let outputs = try #require(AgentAPITests.state(dir)?["agent"]?["outputs"])
        #expect((outputs["line_handoff_cpu_max_ms"]?.doubleValue ?? 1e9) < 5, "\(outputs.serialized())")
        #expect((outputs["change_line_delay_max_ms"]?.doubleValue ?? 1e9) < 1000, "\(outputs.serialized())")
        // Bounded memory: what the crowds cost the agent.
        #expect(rssBefore > 0, "no resident set read")
        if !TestSupport.sanitized {
            #expect(rssCrowded - rssBefore < Self.memoryBoundKiB, "RSS \(rssBefore) KiB, with the crowds \(rssCrowded) KiB")
        }
        print("API abuse: root GetStatus \(rootCalls.serialized()); group \(groupCalls.serialized()); agent RSS \(rssBefore) KiB, "
              + "with 280 connections tried by 6 uids (24 held) \(rssCrowded) KiB; Varlink \(outputs["varlink"]?.serialized() ?? "-"); "
              + "change line delay max \(outputs["change_line_delay_max_ms"]?.doubleValue ?? -1) ms")

        let (exit, log) = await agent.stop()
        #expect(exit == 0, "\(log)")
        // Each refused uid is logged, once a minute at most.
        let minutes = Int((ContinuousClock.now - started).components.seconds / 60)
        let refusals = log.split(separator: "\n").filter { $0.contains("TooManyClients") && $0.contains("uid=65534") }
        #expect(refusals.count >= 1 && refusals.count <= 1 + minutes, "\(refusals.count) lines in \(minutes + 1) minutes: \(refusals.prefix(3))")
        for uid in keptOut { #expect(log.contains("uid=\(uid)"), "the refusal of uid \(uid) is logged") }
    }
}
