import Foundation
import ReachCore
import ReachTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 25: an mbim-proxy (or qmi-proxy) that accepts the connection and never answers. A stand-in (a small Python
/// program) takes the proxy's place: reach itself starts it, because the test binds it over /usr/libexec/mbim-proxy in
/// a mount namespace of reach's own (`unshare -m`), inside the lab's network namespace (abstract sockets are per
/// network namespace). The stand-in accepts on "@mbim-proxy", never reads, ignores SIGTERM, and runs the real proxy
/// (a copy) when started a second time. reach names it by pid and CPU time, ends it and starts the proxy again when
/// nobody else uses it, and leaves it running when another process is connected to it.
@Suite(.serialized, .needsRoot, .needsSimulator,
    .needs(FileManager.default.isExecutableFile(atPath: "/usr/libexec/mbim-proxy"), "/usr/libexec/mbim-proxy (libmbim-utils)"),
    .needs(FileManager.default.isExecutableFile(atPath: "/usr/libexec/qmi-proxy"), "/usr/libexec/qmi-proxy (libqmi-utils)"))
struct ProxyWedgeTests {
    /// The stand-in for `proxy` ("mbim-proxy", "qmi-proxy") and a copy of the real proxy in `dir`; returns the
    /// stand-in's path.
    static func writeStandIn(_ dir: String, proxy: String = "mbim-proxy") throws -> String {
        try FileManager.default.createDirectory(atPath: dir + "/real", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "/usr/libexec/" + proxy, toPath: dir + "/real/" + proxy)
        let path = dir + "/" + proxy
        let script = """
            #!/usr/bin/python3
            # Stands in for \(proxy): accepts on @\(proxy) and never reads or answers. The second start runs the
            # real proxy (a copy), as a restarted proxy would be the real one.
            import os, signal, socket, time
            d = "\(dir)"
            if os.path.exists(d + "/standin.pid"):
                os.execv(d + "/real/\(proxy)", ["\(proxy)"])
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            start = time.process_time()
            while time.process_time() - start < 0.25:
                pass
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind("\\0\(proxy)")
            s.listen(8)
            with open(d + "/standin.pid.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(d + "/standin.pid.tmp", d + "/standin.pid")
            held = []
            while True:
                c, _ = s.accept()
                held.append(c)
            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    /// `reach ARGS` in the lab's network namespace, in a mount namespace where the proxy `standIn` stands in for
    /// (its file name) is `standIn`.
    static func reach(_ lab: WWANLab, standIn: String, _ args: [String]) async throws -> RunResult {
        let command = ([TestPaths.reach] + args).joined(separator: " ")
        let proxy = "/usr/libexec/" + (standIn.split(separator: "/").last.map(String.init) ?? "")
        return try await lab.ns.exec(
            ["unshare", "-m", "sh", "-c", "mount --bind \(standIn) \(proxy) && exec \(command)"], timeout: 60)
    }

    static func standInPid(_ dir: String) -> pid_t? {
        (try? String(contentsOfFile: dir + "/standin.pid", encoding: .utf8)).flatMap { pid_t($0) }
    }

    /// The CPU seconds the error gives for `pid` ("(pid N, 0.3 s of CPU)"), or nil.
    static func cpuSeconds(in text: String, pid: pid_t) -> Double? {
        guard let r = text.range(of: "(pid \(pid), ") else { return nil }
        let rest = text[r.upperBound...]
        guard let end = rest.range(of: " s of CPU)") else { return nil }
        return Double(rest[..<end.lowerBound])
    }

    /// (a) and (b): the error names the stand-in's pid and CPU time; reach ends it (SIGTERM is ignored, so SIGKILL)
    /// and starts the proxy again, and the next read answers through the real proxy.
    @Test(arguments: ["mbim", "qmi"])
    func wedgedProxyOfOurOwnIsNamedAndReplaced(proto: String) async throws {
        let lab = try await WWANLab.start(proto)
        defer { lab.stop() }
        let proxy = proto + "-proxy"
        let standIn = try Self.writeStandIn(lab.dir, proxy: proxy)
        let started = ContinuousClock.now
        let first = try await Self.reach(lab, standIn: standIn, ["status", "--json", "--config", lab.configPath])
        let took = ContinuousClock.now - started
        let json = try JSON.parse(first.stdout)
        let error = json.modem?["error"]?.stringValue ?? ""
        let pid = try #require(Self.standInPid(lab.dir), "the stand-in never listened: \(first.stderr)")
        print("wedged proxy named and replaced in \(took): \(error)")
        #expect(error.contains(text: "\(proxy) (pid \(pid), "), "\(error)")
        #expect(error.contains(text: "accepted the connection but did not answer within 2000 ms"), "\(error)")
        #expect((Self.cpuSeconds(in: error, pid: pid) ?? -1) >= 0.2, "the stand-in spent 0.25 s of CPU: \(error)")
        #expect(error.contains(text: "reach ended it (SIGKILL"), "\(error)")
        #expect(error.contains(text: "and started it again (pid "), "\(error)")
        #expect(!Namespace.alive(pid), "the stand-in still runs")
        // The proxy listening now is the real one (the stand-in's second start), started by that reach.
        let proxies = lab.ns.processes(named: [proxy])
        #expect(proxies.count == 1 && !proxies.contains(pid), "\(proxies)")

        let second = try await Self.reach(lab, standIn: standIn, ["status", "--json", "--config", lab.configPath])
        let modem = try JSON.parse(second.stdout).modem
        #expect(modem?["error"] == .null, "\(second.stdout)")
        #expect(modem?["access"] == .string("proxy"), "\(second.stdout)")
        #expect(modem?["registration"] != nil && modem?["generation"] == .string("4g"), "\(second.stdout)")
    }

    /// (b) without modem workers (modems.worker false, as a program embedding GatewayReach reads): the open is tried
    /// again after the replacement, so the first read already answers, through the real proxy.
    @Test func inProcessReadAnswersAfterTheReplacement() async throws {
        let lab = try await WWANLab.start("mbim")
        defer { lab.stop() }
        let config = try String(contentsOfFile: lab.configPath, encoding: .utf8)
            .replacingOccurrences(of: #""request_timeout_seconds":2"#, with: #""request_timeout_seconds":2,"worker":false"#)
        try config.write(toFile: lab.configPath, atomically: true, encoding: .utf8)
        let standIn = try Self.writeStandIn(lab.dir)
        let started = ContinuousClock.now
        let r = try await Self.reach(lab, standIn: standIn, ["status", "--json", "--config", lab.configPath])
        let took = ContinuousClock.now - started
        let pid = try #require(Self.standInPid(lab.dir), "the stand-in never listened: \(r.stderr)")
        let modem = try JSON.parse(r.stdout).modem
        print("in process: read answered after the replacement in \(took)")
        #expect(modem?["error"] == .null, "\(r.stdout)")
        #expect(modem?["access"] == .string("proxy"), "\(r.stdout)")
        #expect(modem?["generation"] == .string("4g"), "\(r.stdout)")
        #expect(!Namespace.alive(pid), "the stand-in still runs")
        #expect(lab.ns.processes(named: ["mbim-proxy"]).count == 1)
    }

    /// (a) and (b) for `reach agent`, whose modem worker watches the port: the parent names and replaces the proxy
    /// the worker found silent, and the worker's next open, after its backoff, answers through the real proxy.
    @Test func agentReplacesTheProxyAndItsModemAnswersAgain() async throws {
        let lab = try await WWANLab.start("mbim")
        defer { lab.stop() }
        let standIn = try Self.writeStandIn(lab.dir)
        let report = lab.dir + "/agent.jsonl"
        let config = try String(contentsOfFile: lab.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: #""wifi":"#, with: #""report":{"path":"\#(report)","interval_seconds":0.5},"log_level":"info","wifi":"#)
        try FileManager.default.createDirectory(atPath: lab.dir + "/agent", withIntermediateDirectories: true)
        let bind = "mount --bind \(standIn) /usr/libexec/mbim-proxy && exec \"$0\" \"$@\""
        let agent = try await EndToEndTests.AgentProcess.start(
            config: config, dir: lab.dir + "/agent", report: report, netns: lab.ns.name,
            wrapper: ["unshare", "-m", "sh", "-c", bind])
        func errors() -> [String] { agent.lines.compactMap { $0.modem?["error"]?.stringValue } }
        let started = ContinuousClock.now
        let named = await EndToEndTests.waitFor("the proxy named", timeout: 30) {
            errors().contains { $0.contains(text: "started it again") }
        }
        let namedAfter = ContinuousClock.now - started
        let answered = await EndToEndTests.waitFor("the modem answering", timeout: 30) {
            agent.lines.last?.modem.map { $0["error"] == .null && $0["generation"] == .string("4g") } ?? false
        }
        let answeredAfter = ContinuousClock.now - started
        let (status, log) = await agent.stop()
        print("agent: proxy named and replaced after \(namedAfter), modem answering after \(answeredAfter)")
        let pid = try #require(Self.standInPid(lab.dir), "the stand-in never listened: \(log)")
        #expect(named, "\(errors()) \(log)")
        #expect(errors().contains { $0.contains(text: "mbim-proxy (pid \(pid), ") }, "\(errors())")
        #expect(answered, "\(agent.lines.suffix(2).map { $0.serialized() })")
        #expect(agent.lines.last?.modem?["access"] == .string("proxy"))
        #expect(!Namespace.alive(pid), "the stand-in still runs")
        #expect(status == 0, "\(log)")
    }

    /// Two modems read at once through the one wedged proxy: one look and one restart serve both. With workers
    /// both errors name the same stand-in and its replacement; in process both opens are retried and answer.
    @Test(arguments: [true, false])
    func twoModemsShareOneReplacement(worker: Bool) async throws {
        let lab = try await WWANLab.start("mbim")
        defer { lab.stop() }
        let second = try await ModemSimulator.start(scenario: "mbim-4g-lte")
        defer { _ = second.stop() }
        try """
            {"modems":{"ports":[{"path":"\(lab.sim.link)","protocol":"mbim"},{"path":"\(second.link)","protocol":"mbim"}],
                       "request_timeout_seconds":2,"worker":\(worker)},
             "wifi":{"enabled":false},"api":{"state_directory":null,"hooks_directory":null}}
            """.write(toFile: lab.configPath, atomically: true, encoding: .utf8)
        let standIn = try Self.writeStandIn(lab.dir)
        let r = try await Self.reach(lab, standIn: standIn, ["status", "--json", "--config", lab.configPath])
        let pid = try #require(Self.standInPid(lab.dir), "the stand-in never listened: \(r.stderr)")
        let modems = try JSON.parse(r.stdout)["wwan"]?.arrayValue ?? []
        #expect(modems.count == 2, "\(r.stdout)")
        let errors = modems.map { $0["error"]?.stringValue }
        if worker {
            for e in errors {
                #expect(e?.contains(text: "mbim-proxy (pid \(pid), ") == true, "\(errors)")
                #expect(e?.contains(text: "and started it again (pid ") == true, "\(errors)")
            }
            #expect(Set(errors).count == 1, "both modems got the one answer: \(errors)")
        } else {
            #expect(errors == [nil, nil], "\(r.stdout)")
            #expect(modems.allSatisfy { $0["access"] == .string("proxy") }, "\(r.stdout)")
        }
        #expect(!Namespace.alive(pid), "the stand-in still runs")
        #expect(lab.ns.processes(named: ["mbim-proxy"]).count == 1)
    }

    /// (c): the same stand-in with another process connected to it is named in `reach diag`, with the other
    /// client, and left running.
    @Test func wedgedProxyInUseIsNamedAndLeftRunning() async throws {
        let lab = try await WWANLab.start("mbim")
        defer { lab.stop() }
        let standIn = try Self.writeStandIn(lab.dir)
        // Another program's connection: it connects as soon as the stand-in listens, and holds it.
        let other = try await Spawned.start(
            ["ip", "netns", "exec", lab.ns.name, "/usr/bin/python3", "-c", """
                import socket, time
                while True:
                    try:
                        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                        s.connect("\\0mbim-proxy")
                        break
                    except OSError:
                        time.sleep(0.02)
                print("connected", flush=True)
                time.sleep(600)
                """], stdout: .pipe, stderr: .capture)
        defer { _ = other.stop(grace: 1) }
        let diag = try await Self.reach(lab, standIn: standIn, ["diag", "--config", lab.configPath])
        let pid = try #require(Self.standInPid(lab.dir), "the stand-in never listened: \(diag.stderr)")
        let otherPid = other.pid
        print("reach diag beside another client:\n\(diag.stdout)")
        #expect(diag.stdout.contains(text: "mbim-proxy (pid \(pid), "), "\(diag.stdout)")
        #expect(Self.cpuSeconds(in: diag.stdout, pid: pid) != nil, "\(diag.stdout)")
        #expect(diag.stdout.contains(text: "accepted the connection but did not answer"), "\(diag.stdout)")
        #expect(diag.stdout.contains(text: "it also serves pid \(otherPid): left running"), "\(diag.stdout)")
        #expect(!diag.stdout.contains(text: "reach ended it"), "\(diag.stdout)")
        #expect(Namespace.alive(pid), "the stand-in another process uses was ended")
    }
}
