import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// Living beside a modem manager: the agent follows a session that drops and returns (with and without
/// indications), shares the modem with proxied qmicli/mbimcli without either side losing an answer, and reaches a
/// proxy ModemManager started as root, running as root without capabilities (the shipped unit), while a proxy that
/// refuses us is named with its cause.
@Suite(
    .serialized, .needsRoot, .needs(TestPaths.isBuilt(TestPaths.simulator), "reach-modem-sim built"),
    .needs(TestSupport.find("qmicli") != nil && TestSupport.find("mbimcli") != nil,
           "qmicli and mbimcli (libqmi-utils, libmbim-utils)"))
struct ModemSharingTests {
    static func shortReason(_ line: JSON) -> String { line["event"]?["reason"]?.stringValue ?? "" }

    // MARK: The agent follows the session

    /// The simulator's timeline drops the session 3 s after the agent opens the port and brings it back 3 s later,
    /// announcing both, or announcing neither (then the 1 s re-query finds them). Exactly one change line each, in
    /// order, naming the modem and why, and nothing else.
    @Test(arguments: [("qmi", true), ("qmi", false), ("mbim", true), ("mbim", false)])
    func agentFollowsADropAndAReturn(proto: String, indications: Bool) async throws {
        let quiet = indications ? "" : #","quiet":true"#
        let lab = try await WWANLab.start(
            proto,
            timeline: """
                [{"at_ms":3000,"set":{"data_sessions":[{"state":"disconnected"}]}\(quiet)},
                 {"at_ms":6000,"set":{"data_sessions":[{"state":"connected"}]}\(quiet)}]
                """,
            config: WWANLab.agentKeys, simArgs: ["--clock-on-open"])
        defer { lab.stop() }
        let (config, report) = try lab.agentConfig(requerySeconds: 1)
        try FileManager.default.createDirectory(atPath: lab.dir + "/agent", withIntermediateDirectories: true)
        let agent = try await EndToEndTests.AgentProcess.start(
            config: config, dir: lab.dir + "/agent", report: report, netns: lab.ns.name)
        #expect(await EndToEndTests.waitFor("three lines", timeout: 20) { agent.lines.count >= 3 }, "\(agent.lines)")
        try await Task.sleep(for: .seconds(1.5))  // anything more would show now
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let lines = agent.lines
        #expect(lines.map { $0["event"]?["type"]?.stringValue ?? "?" } == ["start", "change", "change", "stop"],
                "\(lines.map { $0.serialized() })")
        guard lines.count == 4 else { return }
        #expect(lines[0]["reachable"] == .bool(true) && lines[0].modem?["data_session"] == .string("connected"))
        #expect(lines[1]["reachable"] == .bool(false) && lines[1]["status"] == .string("none"))
        #expect(lines[1].modem?["data_session"] == .string("disconnected"))
        let drop = Self.shortReason(lines[1])
        #expect(drop.contains("\(lab.sim.link) data session connected→disconnected"), "\(drop)")
        #expect(drop.contains("wwan0: the modem has no data session"), "\(drop)")
        #expect(lines[2]["reachable"] == .bool(true) && lines[2]["status"] == .string("wwan"))
        #expect(Self.shortReason(lines[2]).contains("data session disconnected→connected"), "\(Self.shortReason(lines[2]))")
        // With indications the simulator announced both changes; without, it announced nothing and the re-query
        // found them.
        let announcement = proto == "qmi" ? "wds:packet_service_status indication" : "indicateStatus tid=0 basic_connect:connect"
        let announced = lab.sim.log.components(separatedBy: announcement).count - 1
        if indications { #expect(announced >= 2, "\(lab.sim.log.suffix(3000))") } else { #expect(announced == 0) }
    }

    // MARK: Coexistence

    /// A shell loop of `rounds` proxied client calls, printing "ok N" or "bad N: output" per round to `file`. Loops
    /// run inside one shell (one child program), so that the rounds follow each other without waiting for the test
    /// runner's child slots.
    static func clientLoop(_ command: String, expect: String, rounds: Int, file: String) -> String {
        """
        for i in $(seq \(rounds)); do
          out=$(\(command) 2>&1)
          case "$out" in *"\(expect)"*) echo "ok $i";; *) printf 'bad %s: %s\\n' "$i" "$(echo "$out" | tr '\\n' ' ')";; esac
        done > \(file)
        """
    }

    /// The "ok" rounds and the bad ones of a loop's file.
    static func tally(_ file: String) -> (ok: Int, bad: [String]) {
        let lines = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        return (lines.filter { $0.hasPrefix("ok ") }.count, lines.filter { !$0.hasPrefix("ok ") })
    }

    /// Two modems (QMI on wwan0, MBIM on wwan1) behind their proxies in one namespace, each carrying one target.
    final class TwoModems: @unchecked Sendable {
        let qmi: WWANLab
        let mbim: ModemSimulator
        let config: String

        init() async throws {
            qmi = try await WWANLab.start("qmi")
            do {
                mbim = try await ModemSimulator.start(scenario: "mbim-4g-lte")
            } catch {
                qmi.stop()
                throw error
            }
            try qmi.ns.attachedTun("wwan1")
            try qmi.ns.ip("addr", "add", "10.30.0.2", "peer", "10.30.0.1", "dev", "wwan1")
            try qmi.ns.ip("link", "set", "wwan1", "up")
            try qmi.ns.ip("route", "add", "198.51.100.0/24", "dev", "wwan0")
            try qmi.ns.ip("route", "add", "203.0.113.0/24", "dev", "wwan1")
            config = qmi.dir + "/two.json"
        }

        func writeConfig(report: String, holdDown: Double = 0) throws {
            try """
                {"targets":[{"kind":"address","value":"198.51.100.1"},{"kind":"address","value":"203.0.113.1"}],
                 "report":{"path":"\(report)","interval_seconds":3600},"changes":{"hold_down_seconds":\(holdDown)},
                 "modems":{"ports":[{"path":"\(qmi.sim.link)","protocol":"qmi","interface":"wwan0"},
                                    {"path":"\(mbim.link)","protocol":"mbim","interface":"wwan1"}],
                           "request_timeout_seconds":3,"session_requery_seconds":10},
                 "wifi":{"enabled":false},"api":{"state_directory":null,"hooks_directory":null}}
                """.write(toFile: config, atomically: true, encoding: .utf8)
        }

        var qmicli: String { "qmicli -p -d \(qmi.sim.pty) --device-open-qmi --nas-get-serving-system" }
        var mbimcli: String { "mbimcli -p -d \(mbim.pty) --query-registration-state" }

        func stop() {
            mbim.stop()
            qmi.stop()
        }
    }

    static let qmiRight = "Registration state: 'registered'"
    static let mbimRight = "Register state: 'home'"

    /// 50 rounds of a proxied qmicli and a proxied mbimcli beside 50 rounds of `reach status` reading both modems, all
    /// at once: every answer right on both sides (measured before this existed: a direct opener beside a proxied
    /// client loses replies on both sides, MBIM up to 85 %).
    @Test func proxiedClientsBesideReachStatus() async throws {
        let two = try await TwoModems()
        defer { two.stop() }
        try two.writeConfig(report: two.qmi.dir + "/unused.jsonl")
        let rounds = 50
        let d = two.qmi.dir
        let script = """
            ( \(Self.clientLoop(two.qmicli, expect: Self.qmiRight, rounds: rounds, file: d + "/qmicli.txt")) ) &
            ( \(Self.clientLoop(two.mbimcli, expect: Self.mbimRight, rounds: rounds, file: d + "/mbimcli.txt")) ) &
            ( for i in $(seq \(rounds)); do \(TestPaths.reach) status --json --config \(two.config); echo; done > \(d)/status.txt ) &
            wait
            """
        let r = try await two.qmi.ns.exec(["sh", "-c", script], timeout: 900)
        #expect(r.status == 0, "\(r.stderr)")
        let (qmi, mbim) = (Self.tally(d + "/qmicli.txt"), Self.tally(d + "/mbimcli.txt"))
        // A round of reach is right when both modems were read without error, on 4G, connected, through the proxy.
        let answers = ((try? String(contentsOfFile: d + "/status.txt", encoding: .utf8)) ?? "").split(separator: "\n")
        var reachOK = 0
        var reachBad: [String] = []
        for line in answers {
            let modems = (try? JSON.parse(String(line)))?["wwan"]?.arrayValue ?? []
            let right = modems.count == 2 && modems.allSatisfy {
                $0["error"] == .null && $0["generation"] == .string("4g") && $0["data_session"] == .string("connected")
                    && $0["access"] == .string("proxy")
            }
            if right { reachOK += 1 } else { reachBad.append(String(line.prefix(600))) }
        }
        print("coexistence beside reach status: qmicli \(qmi.ok)/\(rounds), mbimcli \(mbim.ok)/\(rounds), reach status \(reachOK)/\(rounds)")
        #expect(qmi.ok == rounds, "\(qmi.bad.prefix(3))")
        #expect(mbim.ok == rounds, "\(mbim.bad.prefix(3))")
        #expect(reachOK == rounds && answers.count == rounds, "\(reachBad.prefix(3))")
    }

    /// 50 rounds each of proxied qmicli and mbimcli beside `reach agent` (run as root with no capabilities, as the
    /// shipped unit runs it) while each modem's session drops and returns 50 times: every client answer right, and
    /// every flip one change line with the right state on the target its modem carries.
    @Test(.needs(TestSupport.find("setpriv") != nil, "setpriv (util-linux)")) func proxiedClientsBesideTheAgent() async throws {
        let two = try await TwoModems()
        defer { two.stop() }
        let report = two.qmi.dir + "/agent.jsonl"
        try two.writeConfig(report: report)
        let rounds = 50
        let d = two.qmi.dir
        let agent = try await Spawned.start(
            ["ip", "netns", "exec", two.qmi.ns.name, "setpriv", "--inh-caps=-all", "--ambient-caps=-all",
             "--bounding-set=-all", TestPaths.reach, "agent", "--config", two.config], stderr: .capture)
        func lines() -> [JSON] {
            guard let text = try? String(contentsOfFile: report, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map { (try? JSON.parse(String($0))) ?? .null }
        }
        let started = await EndToEndTests.waitFor("start lines", timeout: 20) {
            lines().filter { $0["event"]?["type"] == .string("start") }.count == 2
        }
        #expect(started, "\(agent.errorText)")
        #expect(lines().allSatisfy { $0["reachable"] == .bool(true) }, "\(lines().map { $0.serialized() })")

        // The client loops, in one child, while the test flips the sessions.
        let clients = try await Spawned.start(
            ["ip", "netns", "exec", two.qmi.ns.name, "sh", "-c", """
                ( \(Self.clientLoop(two.qmicli, expect: Self.qmiRight, rounds: rounds, file: d + "/qmicli.txt")) ) &
                ( \(Self.clientLoop(two.mbimcli, expect: Self.mbimRight, rounds: rounds, file: d + "/mbimcli.txt")) ) &
                wait
                """], stderr: .capture)
        // Round i drops (odd pairs) or returns (even pairs) one modem's session; its target's line must say so.
        var agentRight = 0
        var agentWrong: [String] = []
        for i in 1...(2 * rounds) {
            let useQMI = i % 2 == 1
            let drop = ((i + 1) / 2) % 2 == 1
            let sim = useQMI ? two.qmi.sim : two.mbim
            let target = useQMI ? "198.51.100.1" : "203.0.113.1"
            let before = lines().count
            try await sim.control(#"{"set":{"data_sessions":[{"state":"\#(drop ? "disconnected" : "connected")"}]}}"#)
            let arrived = await EndToEndTests.waitFor("flip \(i)", timeout: 10) { lines().count > before }
            try await Task.sleep(for: .milliseconds(30))  // a second line, had there been one, would show by now
            let new = Array(lines().dropFirst(before))
            let right = arrived && new.count == 1 && new[0]["event"]?["type"] == .string("change")
                && new[0]["target"]?["value"] == .string(target) && new[0]["reachable"] == .bool(!drop)
            if right { agentRight += 1 } else { agentWrong.append("flip \(i): \(new.map { $0.serialized().prefix(300) })") }
        }
        let clientStatus = await clients.wait(timeout: 600)
        let status = await agent.stop(grace: 10)
        let (qmi, mbim) = (Self.tally(d + "/qmicli.txt"), Self.tally(d + "/mbimcli.txt"))
        print("coexistence beside reach agent: qmicli \(qmi.ok)/\(rounds), mbimcli \(mbim.ok)/\(rounds), agent flips \(agentRight)/\(2 * rounds)")
        #expect(clientStatus == 0, "\(clients.errorText)")
        #expect(status == 0, "\(agent.errorText)")
        #expect(qmi.ok == rounds, "\(qmi.bad.prefix(3))")
        #expect(mbim.ok == rounds, "\(mbim.bad.prefix(3))")
        #expect(agentRight == 2 * rounds, "\(agentWrong.prefix(3))")
        #expect(!lines().contains { $0["wwan"]?.arrayValue?.contains { $0["error"] != .null } == true },
                "no modem error was ever reported")
    }

    // MARK: Privileges

    /// The shipped unit runs the agent as root with no capability but CAP_NET_ADMIN: it reaches the proxy a
    /// root ModemManager started. As another user the proxy refuses us, and `reach status` and `reach diag` say why.
    @Test(.needs(TestSupport.find("setpriv") != nil, "setpriv (util-linux)"), arguments: ["qmi", "mbim"])
    func proxyServesRootWithoutCapabilitiesAndRefusesOthers(proto: String) async throws {
        let lab = try await WWANLab.start(proto)
        defer { lab.stop() }
        // ModemManager's proxy: started by a root client, as MM's first open does.
        let client = proto == "qmi"
            ? ["qmicli", "-p", "-d", lab.sim.pty, "--device-open-qmi", "--nas-get-serving-system"]
            : ["mbimcli", "-p", "-d", lab.sim.pty, "--query-registration-state"]
        let mm = try await lab.ns.exec(client, timeout: 30)
        #expect(mm.status == 0, "\(mm.stderr)")
        let proxyName = proto == "qmi" ? "qmi-proxy" : "mbim-proxy"
        let proxies = lab.ns.processes(named: [proxyName])
        #expect(proxies.count == 1)

        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: lab.dir)
        let noCaps = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
        let root = try await lab.ns.exec(noCaps + [TestPaths.reach, "status", "--json", "--config", lab.configPath], timeout: 60)
        let rj = try JSON.parse(root.stdout)
        #expect(root.status == 0, "\(root.stdout) \(root.stderr)")
        #expect(rj.modem?["access"] == .string("proxy") && rj.modem?["error"] == .null && rj.modem?["data_session"] == .string("connected"),
                "\(root.stdout)")
        #expect(lab.ns.processes(named: [proxyName]) == proxies, "the running proxy was used, no second one")

        let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let refused = try await lab.ns.exec(nobody + [TestPaths.reach, "status", "--json", "--config", lab.configPath], timeout: 60)
        let fj = try JSON.parse(refused.stdout)
        let error = fj.modem?["error"]?.stringValue ?? ""
        // Another user may not read root's /proc/PID/ns/net, so the pid is named only when one proxy runs on the box.
        #expect(error.contains("\(proxyName) (pid \(proxies[0]), uid 0) refused us")
            || error.contains("\(proxyName) (run by uid 0) refused us"), "\(error)")
        #expect(error.contains("serves only root") && error.contains("uid 65534"), "\(error)")
        // The route's answer stands: a refused proxy is "unknown", never "down".
        #expect(fj["reachable"] == .bool(true) && fj["modem_check"]?["result"] == .string("unknown"))

        let diag = try await lab.ns.exec(nobody + [TestPaths.reach, "diag", "--config", lab.configPath], timeout: 60)
        #expect(diag.stdout.contains("refused us"), "\(diag.stdout)")
        #expect(diag.stdout.contains("hint: run reach as root"), "\(diag.stdout)")
    }

    /// A program that holds the port directly (here `sleep` with the pty as its standard input, as uqmi or a
    /// `qmicli` without -p would) is named from /proc/*/fd: in `sources` and `reach diag` when reach could read the
    /// modem beside it, in the modem's error when it could not.
    @Test func anotherHolderOfThePortIsNamed() async throws {
        let lab = try await WWANLab.start("qmi")
        defer { lab.stop() }
        let holder = try await Spawned.start(["sh", "-c", "exec sleep 120 < \(lab.sim.pty)"])
        defer { holder.stop(grace: 0) }
        #expect(await EndToEndTests.waitFor("holder", timeout: 5) {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(holder.pid)/fd/0")) == lab.sim.pty
        })
        let (j, _, _) = try await lab.status()
        let why = j["sources"]?["wwan"]?["access_reason"]?.stringValue ?? ""
        #expect(why.contains("the port is also open in sleep (pid \(holder.pid))"), "\(j.serialized())")
        let diag = try await lab.ns.exec([TestPaths.reach, "diag", "--config", lab.configPath], timeout: 60)
        #expect(diag.stdout.contains("[warn] Modem port shared safely: through qmi-proxy; the port is also open in sleep (pid \(holder.pid))"),
                "\(diag.stdout)")

        // A silent modem: the open fails, and the error names what else holds the port.
        let silent = try await WWANLab.start("qmi", faults: #"["silence"]"#)
        defer { silent.stop() }
        let other = try await Spawned.start(["sh", "-c", "exec sleep 120 < \(silent.sim.pty)"])
        defer { other.stop(grace: 0) }
        _ = await EndToEndTests.waitFor("holder", timeout: 5) {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(other.pid)/fd/0")) == silent.sim.pty
        }
        let r = try await silent.ns.exec(
            [TestPaths.reach, "status", "--json", "--modem-access", "direct", "--config", silent.configPath], timeout: 60)
        let error = (try JSON.parse(r.stdout)).modem?["error"]?.stringValue ?? ""
        #expect(error.contains("the port is also open in sleep (pid \(other.pid))"), "\(error)")
    }

    /// The modem worker watching the port holds it, and is not another reader: nothing is named when nothing else
    /// holds the port. (The agent scanned /proc for holders and named its own worker, as `exe` or `reach`; a one-shot
    /// `reach status` did not show it, its worker having closed the port before it answered.)
    @Test(arguments: ["qmi", "mbim"])
    func theWorkerIsNotNamedAsAnotherHolder(proto: String) async throws {
        let rig = try await ModemAgentRig.start(proto, label: "reach-holder")
        defer { rig.removeDirectory() }
        let read = try #require(rig.lastRead)
        #expect(read["sources"]?["wwan"]?["access"] == .string("direct"), "\(read.serialized())")
        let why = read["sources"]?["wwan"]?["access_reason"]?.stringValue ?? ""
        #expect(!why.contains("also open in"), "\(why)")
        let (status, log) = await rig.agent.stop()
        #expect(status == 0, "\(log)")
    }

    /// Without a proxy running, a user the proxies would refuse opens directly (a proxy it started would exit at
    /// once), and says so.
    @Test(.needs(TestSupport.find("setpriv") != nil, "setpriv (util-linux)")) func withoutAProxyAnotherUserOpensDirectlyAndSaysWhy() async throws {
        let lab = try await WWANLab.start("qmi")
        defer { lab.stop() }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: lab.dir)
        let r = try await lab.ns.exec(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", TestPaths.reach, "status", "--json", "--config",
             lab.configPath], timeout: 60)
        let j = try JSON.parse(r.stdout)
        let error = j.modem?["error"]?.stringValue ?? ""
        // The pty is root's, so the direct open fails too, and the error says why it was direct.
        #expect(error.contains("qmi-proxy serves only root and none is running; opened directly (uid 65534)"), "\(r.stdout)")
        #expect(lab.ns.processes(named: ["qmi-proxy"]).isEmpty, "no proxy was started")
    }
}
