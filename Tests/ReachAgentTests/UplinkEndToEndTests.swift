import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// `reach agent` and `reach watch` as processes in a dual-WAN namespace made here: eth0 (metric 10) and wwan0
/// (metric 20) are veth pairs to an "isp" namespace whose ends the test takes down and up. Nothing leaves them.
@Suite(.serialized) struct UplinkEndToEndTests {
    final class DualWAN {
        let gw: Namespace
        let isp: Namespace

        init() throws {
            gw = try Namespace("gw")
            isp = try Namespace("isp")
            for (dev, peer, local, remote) in [("eth0", "up0", "192.0.2.2", "192.0.2.1"), ("wwan0", "up1", "198.18.0.2", "198.18.0.1")] {
                try gw.veth(dev, peer: isp, peer)
                try gw.ip("addr", "add", local + "/24", "dev", dev)
                try isp.ip("addr", "add", remote + "/24", "dev", peer)
                try isp.ip("link", "set", peer, "up")
                try gw.ip("link", "set", dev, "up")
            }
            try gw.ip("route", "add", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "10")
            try gw.ip("route", "add", "default", "via", "198.18.0.1", "dev", "wwan0", "metric", "20")
        }

        deinit {
            gw.delete()
            isp.delete()
        }
    }

    static func uplinkNames(_ line: JSON) -> [String] {
        line["event"]?["uplinks"]?.arrayValue?.compactMap { $0["interface"]?.stringValue } ?? []
    }

    /// The issue's "Done when": one change line per uplink change, each naming its uplink; the answer's own fields
    /// change only when the answer does.
    @Test(.needsRoot) func agentWritesOneChangeLinePerUplinkChange() async throws {
        let t = try DualWAN()
        let dir = try makeTempDir("reach-uplinks")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agent = try await EndToEndTests.AgentProcess.start(
            config: EndToEndTests.config(report: dir + "/reach.jsonl"), dir: dir, netns: t.gw.name)
        // `reach watch` beside it, for the text of each step.
        try EndToEndTests.config(report: dir + "/unused.jsonl").write(toFile: dir + "/watch.json", atomically: true, encoding: .utf8)
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", t.gw.name, TestPaths.reach, "watch", "--config", dir + "/watch.json", "--hold-down", "0.3"],
            stdout: .pipe, stderr: .capture)
        defer { _ = watch.stop(grace: 5) }

        #expect(await EndToEndTests.waitFor("start line") { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        #expect(start["uplinks"]?.arrayValue?.map { $0["interface"] } == [.string("eth0"), .string("wwan0")])
        #expect(start["uplinks"]?.arrayValue?.map { $0["reachable"] } == [.bool(true), .bool(true)])
        #expect(start["uplinks"]?.arrayValue?.map { $0["primary"] } == [.bool(true), .bool(false)])
        _ = try await watch.stdout!.line(timeout: 10) { $0.contains("uplink wwan0: reachable") }

        // wwan0's peer goes down: one line naming wwan0, the answer still reachable over eth0.
        try t.isp.ip("link", "set", "up1", "down")
        try #require(await EndToEndTests.waitFor("wwan0 lost") { agent.events("change").count == 1 }, "\(agent.lines)")
        var change = agent.events("change")[0]
        #expect(change["event"]?["changed"] == .array([.string("uplinks")]))
        #expect(Self.uplinkNames(change) == ["wwan0"])
        #expect(change["event"]?["reason"] == .string("uplink wwan0 not reachable: wwan0 has no carrier (connection required)"))
        #expect(change["reachable"] == .bool(true))
        #expect(change["route"]?["interface"] == .string("eth0"))
        let wwan0 = change["uplinks"]?.arrayValue?.first { $0["interface"] == .string("wwan0") }
        #expect(wwan0?["reachable"] == .bool(false))
        // `reach watch` holds the loss down for as long as the agent does, but it saw the link go a little later or
        // sooner: bringing the link back before watch has reported would make a flap it rightly never reports.
        _ = try await watch.stdout!.line(timeout: 10 * TestSupport.timingSlack) {
            $0.contains("[uplinks] uplink wwan0 not reachable")
        }

        // Back: one line.
        try t.isp.ip("link", "set", "up1", "up")
        try #require(await EndToEndTests.waitFor("wwan0 back") { agent.events("change").count == 2 }, "\(agent.lines)")
        #expect(agent.events("change")[1]["event"]?["reason"] == .string("uplink wwan0 reachable again"))
        _ = try await watch.stdout!.line(timeout: 10 * TestSupport.timingSlack) {
            $0.contains("[uplinks] uplink wwan0 reachable again")
        }

        // eth0's default is deleted: the answer and `primary` move to wwan0 at once (one line naming wwan0), and
        // eth0's own loss follows after the hold-down (one line naming eth0).
        try t.gw.ip("route", "del", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "10")
        try #require(await EndToEndTests.waitFor("primary moved") { agent.events("change").count == 4 }, "\(agent.lines)")
        change = agent.events("change")[2]
        #expect(change["route"]?["interface"] == .string("wwan0"))
        #expect(change["status"] == .string("wwan"))
        #expect(Self.uplinkNames(change) == ["wwan0"])
        #expect(change["event"]?["uplinks"]?.arrayValue?.first?["to"]?["primary"] == .bool(true))
        #expect(change["uplinks"]?.arrayValue?.first?["interface"] == .string("wwan0"))
        #expect(change["uplinks"]?.arrayValue?.first?["primary"] == .bool(true))
        change = agent.events("change")[3]
        #expect(Self.uplinkNames(change) == ["eth0"])
        #expect(change["event"]?["reason"] == .string("uplink eth0 gone (no default route)"))

        // Nothing more: no duplicates.
        try await Task.sleep(for: .seconds(1))
        #expect(agent.events("change").count == 4)
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let types = agent.lines.map { $0["event"]?["type"]?.stringValue ?? "?" }
        #expect(types == ["start", "change", "change", "change", "change", "stop"])
        for (i, c) in agent.events("change").enumerated() {
            print("agent change \(i + 1): changed=\(c["event"]?["changed"]?.serialized() ?? "") "
                + "uplinks=\(Self.uplinkNames(c)) reason=\(c["event"]?["reason"]?.stringValue ?? "")")
        }

        _ = try await watch.stdout!.line(timeout: 10) { $0.contains("[uplinks] uplink eth0 gone (no default route)") }
        print("reach watch:\n\(watch.stdout!.text)")
        let watched = watch.stdout!.text.split(separator: "\n").filter { $0.contains("  [") }
        #expect(watched.count == 4, "\(watch.stdout!.text)")
    }

    /// The modem's reading belongs to its uplink: the simulator (QMI over a pty) is wwan0's modem. A healthy LTE modem
    /// shows its generation and bars on wwan0 only; a locked SIM makes wwan0 need a person while the answer stays on
    /// eth0, and `reach diag` names the backup.
    @Test(.needsRoot, arguments: [("qmi-4g-lte", true), ("qmi-sim-pin-required", false)])
    func modemReadingBelongsToItsUplink(scenario: String, healthy: Bool) async throws {
        let t = try DualWAN()
        let sim = try await ModemSimulator.start(scenario: scenario)
        defer { _ = sim.stop() }
        let dir = try makeTempDir("reach-uplink-modem")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + "/reach.json"
        try """
            {"modems":{"ports":[{"path":"\(sim.link)","protocol":"qmi","interface":"wwan0"}],"request_timeout_seconds":2},
             "wifi":{"enabled":false},"uplinks":[{"interface":"wwan0","role":"backup"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let r = try await t.gw.exec([TestPaths.reach, "status", "--json", "--config", config], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let j = try JSON.parse(r.stdout)
        #expect(j["reachable"] == .bool(true))
        #expect(j["route"]?["interface"] == .string("eth0"))
        let all = j["uplinks"]?.arrayValue ?? []
        let eth0 = all.first { $0["interface"] == .string("eth0") }
        let wwan0 = all.first { $0["interface"] == .string("wwan0") }
        #expect(eth0?["wwan"] == .null)
        #expect(wwan0?["wwan"]?["device"] == .string(sim.link))
        #expect(wwan0?["role"] == .string("backup"))
        let text = try await t.gw.exec([TestPaths.reach, "status", "--config", config], timeout: 30)
        let diag = try await t.gw.exec([TestPaths.reach, "diag", "--config", config], timeout: 30)
        print("\(scenario): reach status\n\(text.stdout)reach diag (exit \(diag.status))\n\(diag.stdout)")
        if healthy {
            #expect(wwan0?["reachable"] == .bool(true))
            #expect(wwan0?["wwan"]?["generation"] == .string("4g"))
            #expect(wwan0?["wwan"]?["bars"] == .int(4))  // RSRP -95 dBm: 4 bars on Android's -98 dBm threshold
            #expect(wwan0?["wwan"]?["registration"] == .string("home"))
            #expect(text.stdout.contains("  uplink wwan0 (role backup): reachable over wwan (gateway 198.18.0.1) · metric 20 · 4G ▂▄▆█ 4/4\n"))
            #expect(diag.stdout.contains("[ ok ] Uplink wwan0: backup wwan0: reachable over wwan via 198.18.0.1, metric 20\n"))
        } else {
            #expect(wwan0?["reachable"] == .bool(false))
            #expect(wwan0?["reason"] == .string("a SIM needs its PIN/PUK (intervention required)"))
            #expect(wwan0?["flags"]?.arrayValue?.contains(.string("intervention_required")) == true)
            #expect(wwan0?["wwan"]?["generation"] == .string("none"))
            #expect(j["flags"] == .array([.string("reachable")]))  // the answer over eth0 is untouched
            #expect(diag.status == 2)  // reachable with problems
            #expect(diag.stdout.contains(
                "[FAIL] Uplink wwan0: backup wwan0: a SIM needs its PIN/PUK (intervention required)\n"
                    + "       hint: unlock the SIM of the modem behind wwan0\n"))
        }
    }
}
