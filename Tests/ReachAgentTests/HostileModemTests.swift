import Foundation
@testable import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// One hostile modem: the simulator's `--garbage` or `--mutate` with a seed, over a scenario.
struct HostileCase: Sendable, CustomTestStringConvertible {
    var proto: String
    var mode: String
    var seed: UInt64
    var scenario: String
    /// `modems.access`: `direct` puts our own worker in front of the garbage (what the fuzzing is for); `auto` goes
    /// through qmi-proxy/mbim-proxy, which then meets it first (a proxy that dies or refuses must not take reach along).
    var access: String
    var testDescription: String { "\(proto) \(mode) \(seed) (\(scenario)\(access == "direct" ? "" : ", " + access))" }

    init(_ proto: String, _ mode: String, _ seed: UInt64, scenario: String? = nil, access: String = "direct") {
        self.proto = proto
        self.mode = mode
        self.seed = seed
        self.scenario = scenario ?? "\(proto)-4g-lte"
        self.access = access
    }

    /// Seeds that once killed `reach` (before modem I/O ran in a worker process: measured with d680fe5's reach and
    /// this simulator, whose fuzzer turns a seed into the same bytes every time). Each runs in every unit run.
    static let regressions: [HostileCase] = [
        // libmbim 1.28 `mbim_message_device_services_response_parse` → g_malloc0 of a size from the wire → GLib
        // aborts (SIGTRAP) in the reader.
        HostileCase("mbim", "garbage", 15), HostileCase("mbim", "garbage", 32), HostileCase("mbim", "garbage", 37),
    ]

    /// The fuzz stage's seeds (`scripts/test fuzz`): REACH_FUZZ_SEEDS per protocol (default 0: none in the unit
    /// stage), from REACH_FUZZ_FIRST_SEED (default 1); garbage for both protocols, and mutations of every shipped
    /// scenario of that protocol in turn.
    static func random(_ mode: String) -> [HostileCase] {
        let env = ProcessInfo.processInfo.environment
        let count = env["REACH_FUZZ_SEEDS"].flatMap(Int.init) ?? 0
        let first = env["REACH_FUZZ_FIRST_SEED"].flatMap(UInt64.init) ?? 1
        guard count > 0 else { return [] }
        return ["qmi", "mbim"].flatMap { proto -> [HostileCase] in
            let shipped = (try? FileManager.default.contentsOfDirectory(atPath: TestPaths.scenarios))?
                .filter { $0.hasPrefix(proto + "-") && $0.hasSuffix(".json") }.sorted() ?? []
            return (0..<count).map { i -> HostileCase in
                let seed = first + UInt64(i)
                guard mode == "mutate", !shipped.isEmpty else { return HostileCase(proto, mode, seed) }
                return HostileCase(proto, mode, seed, scenario: String(shipped[i % shipped.count].dropLast(5)))
            }
        }
    }

    /// The regressions again, through the proxy (`auto`, the default access).
    static var throughTheProxy: [HostileCase] {
        regressions.map { HostileCase($0.proto, $0.mode, $0.seed, scenario: $0.scenario, access: "auto") }
    }

    static var statusCases: [HostileCase] { regressions + throughTheProxy + random("garbage") + random("mutate") }
    static var agentCases: [HostileCase] { regressions + throughTheProxy + random("garbage") }

    func startSimulator() async throws -> ModemSimulator {
        try await ModemSimulator.start(scenario: scenario, control: false, extra: ["--\(mode)", String(seed)])
    }
}

/// A modem that sends garbage, frames nothing, or loses its worker costs that modem's worker only: `reach status`
/// and `reach agent` keep answering with the route part intact (modem I/O runs in a supervised worker process).
@Suite struct HostileModemTests {
    /// A route answer in a namespace of the test's own: `route` is an object on veth0 and there is no route error.
    static func routeIntact(_ json: JSON) -> Bool {
        json["route"]?["interface"] == .string("veth0") && json["error"] == nil && json["status"] == .string("wifi")
    }

    /// `reach status` against one hostile modem: no death, no hang past the read budget, one JSON object with the
    /// route part intact and the modem reported (its error says what went wrong, if anything did).
    @Test(.needsRoot, arguments: HostileCase.statusCases)
    func statusSurvives(_ c: HostileCase) async throws {
        let ns = try EndToEndTests.namespace()
        let sim = try await c.startSimulator()
        let r = try await TestSupport.run(
            ["ip", "netns", "exec", ns.name, TestPaths.reach, "status", "--json", "--no-wifi",
             "--modem-access", c.access, "--modem", "\(sim.link):\(c.proto)", "--modem-timeout", "1"], timeout: 30)
        #expect(!r.timedOut)
        #expect(r.status == 0, "exit \(r.status); stderr: \(r.stderr)")
        let json = try #require(try? JSON.parse(r.stdout), "not JSON: \(r.stdout) \(r.stderr)")
        #expect(Self.routeIntact(json), "\(r.stdout)")
        let modem = try #require(json["wwan"]?.arrayValue?.first, "\(r.stdout)")
        #expect(modem["device"] == .string(sim.link))
        // The read budget is 3 s (three 1 s timeouts); a worker is killed at twice that plus a timeout and a second.
        #expect(r.seconds < 10, "reach status took \(r.seconds) s")
        if c.mode == "garbage" || modem["error"] != .null {
            print("\(c.testDescription): \(String(format: "%.2f", r.seconds)) s, \(modem["error"]?.stringValue ?? "no error")")
        }
    }

    /// `reach agent` with one hostile modem: it writes its start line and keeps writing lines, each with the route
    /// intact, and stops cleanly.
    @Test(.needsRoot, arguments: HostileCase.agentCases)
    func agentSurvives(_ c: HostileCase) async throws {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir("reach-hostile")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sim = try await c.startSimulator()
        let agent = try await EndToEndTests.AgentProcess.start(
            config: Self.agentConfig(dir: dir, port: sim.link, proto: c.proto, access: c.access), dir: dir, netns: ns.name)
        // The start line waits for the modem's first answer (at most three timeouts and a second), then a line
        // every 0.25 s.
        let enough = await EndToEndTests.waitFor("lines", timeout: 20) { agent.lines.count >= 8 }
        #expect(agent.isRunning, "the agent died")
        #expect(enough, "\(agent.lines.count) lines")
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let lines = agent.lines
        #expect(lines.allSatisfy(Self.routeIntact), "\(lines.map { $0.serialized() })")
        #expect(lines.allSatisfy { $0["wwan"]?.arrayValue?.count == 1 })
        #expect(lines.last?["event"]?["type"] == .string("stop"))
    }

    static func agentConfig(dir: String, port: String, proto: String, access: String = "direct") -> String {
        """
        {"report":{"path":"\(dir)/reach.jsonl","interval_seconds":0.25},
         "changes":{"hold_down_seconds":0},
         "modems":{"ports":[{"path":"\(port)","protocol":"\(proto)"}],"request_timeout_seconds":1,
                   "poll_interval_seconds":600,"access":"\(access)"},
         "wifi":{"enabled":false},"log_level":"warning","api":{"state_directory":null,"hooks_directory":null}}
        """
    }

    /// A port that never frames a reply (a copy of /dev/zero) ends at the timeout: the worker's GLib loop is stuck
    /// inside libmbim's reader, its heartbeat stops, and it is killed one request timeout later.
    @Test(.needsRoot, arguments: ["mbim", "qmi"])
    func devZeroEndsAtTheTimeout(_ proto: String) async throws {
        let dir = try makeTempDir("reach-zero")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await TestSupport.sh(["mknod", dir + "/zero", "c", "1", "5"])
        let r = try await TestSupport.run(
            // Directly: the worker's own libmbim reads the zeros (through mbim-proxy it would be the proxy's problem).
            [TestPaths.reach, "status", "--json", "--no-wifi", "--modem-access", "direct", "--modem", "\(dir)/zero:\(proto)",
             "--modem-timeout", "1"],
            timeout: 30)
        let json = try #require(try? JSON.parse(r.stdout), "not JSON: \(r.stdout) \(r.stderr)")
        let error = try #require(json["wwan"]?.arrayValue?.first?["error"]?.stringValue, "\(r.stdout)")
        if proto == "mbim" { #expect(error.hasPrefix("modem worker hung: no heartbeat for 1000 ms (libmbim)"), "\(error)") }
        print("/dev/zero as \(proto): \(String(format: "%.2f", r.seconds)) s, \(error)")
        // One request timeout plus start-up (measured ~1.05 s; the in-process read never ended).
        #expect(r.seconds < 3, "reach status took \(r.seconds) s")
    }

    /// The agent whose modem worker is SIGKILLed writes the modem's error, keeps writing route lines, and starts a
    /// new worker that reads the modem again; directly, and through qmi-proxy (where the proxy the worker started
    /// must not keep the dead worker's socket open, or the parent would not see it end).
    @Test(.needsRoot, arguments: ["direct", "auto"])
    func agentOutlivesAKilledWorker(access: String) async throws {
        let rig = try await ModemAgentRig.start("qmi", access: access, label: "reach-kill")
        defer { rig.removeDirectory() }
        let agent = rig.agent
        let modem = ModemAgentRig.modem
        let workers = Self.children(of: agent.child.pid).filter { $0.command.contains("modem-worker") }
        let worker = try #require(workers.first, "no modem worker under \(agent.child.pid)")
        #expect(workers.count == 1)
        #expect(kill(worker.pid, SIGKILL) == 0)
        let killedAt = agent.lines.count

        let reported = await EndToEndTests.waitFor("error", timeout: 10) {
            agent.lines.dropFirst(killedAt).contains {
                modem($0)?["error"]?.stringValue?.hasPrefix("modem worker died: SIGKILL (libqmi)") == true
            }
        }
        #expect(reported, "\(agent.lines.dropFirst(killedAt).map { $0.serialized() })")
        // Route lines go on (every 0.25 s), and a new worker reads the modem after the backoff (about 1 s).
        let back = await EndToEndTests.waitFor("back", timeout: 15) {
            agent.lines.dropFirst(killedAt).contains { modem($0)?["generation"] == .string("4g") && modem($0)?["error"] == .null }
                && agent.lines.count > killedAt + 8
        }
        #expect(back, "\(agent.lines.dropFirst(killedAt).map { $0.serialized() })")
        #expect(agent.isRunning)
        let running = Self.children(of: agent.child.pid).map(\.pid)
        #expect(running.count == 1)
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        #expect(agent.lines.allSatisfy(Self.routeIntact))
        // The SIGTERM went to the whole process group, as systemd's stop does: the worker ignores it and is ended by
        // the agent, so the stop line still has the modem as read.
        let last = try #require(agent.lines.last)
        #expect(last["event"]?["type"] == .string("stop"))
        #expect(modem(last)?["error"] == .null && modem(last)?["generation"] == .string("4g"), "\(last.serialized())")
        // Stopping the agent stops its workers (end of file on their sockets, else SIGKILL).
        #expect(await EndToEndTests.waitFor("workers gone", timeout: 5) { running.allSatisfy { kill($0, 0) != 0 } })
    }

    /// Processes whose parent is `pid`, with their command lines.
    static func children(of pid: pid_t) -> [(pid: pid_t, command: String)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name -> (pid_t, String)? in
            guard let child = pid_t(name),
                let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, pid_t(fields[1]) == pid else { return nil }
            let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(name)/cmdline"))) ?? Data()
            return (child, String(decoding: cmdline.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self))
        }
    }
}

/// A measure from a modem worker may be any finite double: printing it never traps.
@Test func diagMeasureTextNeverTraps() {
    #expect(DiagChecks.fmt(-95) == "-95")
    #expect(DiagChecks.fmt(-92.5) == "-92.5")
    #expect(DiagChecks.fmt(1e300) == "1e+300")
    #expect(DiagChecks.fmt(-Double.greatestFiniteMagnitude).hasPrefix("-1.79"))
}

/// An agent in a network namespace of its own reading one simulated modem (the shipped `PROTO-4g-lte` scenario) with
/// `HostileModemTests.agentConfig`, started and waited for until a report line has the modem on 4G.
struct ModemAgentRig {
    let namespace: Namespace
    let directory: String
    let simulator: ModemSimulator
    let agent: EndToEndTests.AgentProcess

    static func start(_ proto: String, access: String = "direct", label: String) async throws -> ModemAgentRig {
        let ns = try EndToEndTests.namespace()
        let dir = try makeTempDir(label)
        do {
            let sim = try await ModemSimulator.start(scenario: "\(proto)-4g-lte", control: false)
            let agent = try await EndToEndTests.AgentProcess.start(
                config: HostileModemTests.agentConfig(dir: dir, port: sim.link, proto: proto, access: access), dir: dir,
                netns: ns.name)
            try #require(await EndToEndTests.waitFor("4g", timeout: 15) {
                agent.lines.contains { modem($0)?["generation"] == .string("4g") }
            }, "\(agent.lines.map { $0.serialized() })")
            return ModemAgentRig(namespace: ns, directory: dir, simulator: sim, agent: agent)
        } catch {
            try? FileManager.default.removeItem(atPath: dir)
            throw error
        }
    }

    /// The line's first modem.
    static func modem(_ line: JSON) -> JSON? { line["wwan"]?.arrayValue?.first }

    /// The last line with the modem on 4G.
    var lastRead: JSON? { agent.lines.last { Self.modem($0)?["generation"] == .string("4g") } }

    /// For a defer: the agent's directory (config, report) goes.
    func removeDirectory() { try? FileManager.default.removeItem(atPath: directory) }
}
