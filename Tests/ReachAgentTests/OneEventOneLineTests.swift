// Issue 31 item 8: readings of one modem that arrive in pieces make one change line. A modem recovering from a
// denied registration announces the registration, then its data session, a few milliseconds apart; reported one by
// one that was three lines and three hook runs, one of them a transient "not reachable: wwan0: the modem has no data
// session".

import Foundation
import ReachCore
import ReachTestSupport
import Testing

@Suite(.serialized, .needsRoot, .needsSimulator) struct OneEventOneLineTests {
    @Test(arguments: ["qmi", "mbim"])
    func deniedToRegisteredWithItsSessionIsOneLineAndOneHookRun(proto: String) async throws {
        let lab = try await WWANLab.start(proto, registration: "denied")
        defer { lab.stop() }
        let hooks = lab.dir + "/events.d"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        chmod(hooks, 0o755)
        let calls = lab.dir + "/calls"
        try TestSupport.writeExecutable(
            hooks + "/10-record", "#!/bin/sh\necho \"$REACH_EVENT $REACH_SEQ $REACH_REACHABLE $REACH_REASON\" >> \(calls)\n",
            mode: 0o755)
        let holdDown = 2.0
        let config = """
            {"report":{"path":"\(lab.dir)/reach.jsonl","interval_seconds":3600},
             "changes":{"hold_down_seconds":\(holdDown),"bar_hysteresis_db":3},
             "modems":{"ports":[{"path":"\(lab.sim.link)","protocol":"\(proto)","interface":"wwan0"}],
                       "request_timeout_seconds":2},
             "wifi":{"enabled":false},"api":{"state_directory":null,"hooks_directory":"\(hooks)"}}
            """
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: lab.dir, netns: lab.ns.name)
        try #require(await EndToEndTests.waitFor("start", timeout: 20) { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        #expect(start["reachable"] == .bool(false), "\(start.serialized())")
        #expect(start["modem_check"]?["reason"]?.stringValue?.contains("registration denied") == true, "\(start.serialized())")

        // The network accepts the SIM: registration, technology, attach and (the simulator's default session follows
        // them) the data session change together, each announced by its own indication.
        let set = #"{"set":{"registration":"home","access_technologies":["lte"],"packet_service":"attached","reject_cause":null}}"#
        #expect(try await lab.sim.control(set).contains("true"))
        try #require(await EndToEndTests.waitFor("reachable", timeout: 20) {
            agent.events("change").contains { $0["reachable"] == .bool(true) }
        }, "\(agent.lines.map { $0.serialized() })")
        // A straggler (a piece reported apart, or a hold that ends) would be out by now.
        try await Task.sleep(for: .seconds(holdDown + 2))
        let changes = agent.events("change")
        #expect(changes.count == 1, "\(changes.map { $0.serialized() })")
        #expect(changes.first?["reachable"] == .bool(true))
        #expect(changes.first?["wwan_status"] == .string("4g"))
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let runs = (try? String(contentsOfFile: calls, encoding: .utf8))?.split(separator: "\n").filter { $0.hasPrefix("change ") } ?? []
        #expect(runs.count == 1, "\(runs)")
    }
}
