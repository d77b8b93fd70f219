// `reach-modem-sim ctl`: the arguments → control line table, partial signal updates merging into the state, and the
// control example of hw/scenarios/README.md run as written against the built simulator.

import Foundation
import ModemSim
import ReachCore
import ReachTestSupport
import Testing

@Suite struct ControlClientTests {
    @Test(arguments: [
        (["signal.rsrp_dbm=-110"], #"{"set":{"signal":{"rsrp_dbm":-110}}}"#),
        (["registration=searching", "access_technologies=[]", "operator=null"],
         #"{"set":{"registration":"searching","access_technologies":[],"operator":null}}"#),
        (["signal.nr.sinr_db=3.5", "signal.rsrq_db=null", "quiet=true"],
         #"{"set":{"signal":{"nr":{"sinr_db":3.5},"rsrq_db":null}},"quiet":true}"#),
        (["operator={\"mcc\":\"262\",\"mnc\":\"01\"}", "operator.name=Telekom.de"],
         #"{"set":{"operator":{"mcc":"262","mnc":"01","name":"Telekom.de"}}}"#),
        (["query=state"], #"{"query":"state"}"#),
        (["fault=clear", "indicate=true"], #"{"fault":"clear","indicate":true}"#),
        (["operator.name=\"a b\""], #"{"set":{"operator":{"name":"a b"}}}"#),
    ])
    func argumentsBecomeOneLine(arguments: [String], line: String) throws {
        #expect(try ControlCommand.line(arguments) == line)
    }

    @Test(arguments: [
        ([String](), "at least one KEY=VALUE"),
        (["signal.rsrp_dbm"], "'signal.rsrp_dbm': expected KEY=VALUE"),
        (["=5"], "'=5': expected KEY=VALUE"),
        (["signal..rsrp_dbm=1"], "'signal..rsrp_dbm': an empty name"),
        (["registration=home", "registration=roaming"], "'registration' is given twice"),
        (["signal=-5", "signal.rsrp_dbm=-110"], "'signal.rsrp_dbm': 'signal' is given a value of its own"),
    ])
    func badArgumentsAreNamed(arguments: [String], message: String) {
        #expect {
            try ControlCommand.line(arguments)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// A partial signal keeps the measures it does not name; null clears one; `"nr": null` drops the NR leg.
    @Test func partialSignalMergesIntoTheReading() throws {
        var h = try QMIHarness(scenarioFile: "qmi-5g-nsa-endc")
        let before = h.engine.state
        let nrBefore = try #require(before.nrSignal)
        #expect(before.signal.rssi != nil && before.signal.rsrq != nil && before.signal.sinr != nil)

        let (reply, messages) = try h.control(#"{"set":{"signal":{"rsrp_dbm":-110}}}"#)
        #expect(reply == #"{"ok":true}"#)
        var expected = before.signal
        expected.rsrp = -110
        #expect(h.engine.state.signal == expected)
        #expect(h.engine.state.nrSignal == nrBefore)
        #expect(messages.isEmpty || messages.allSatisfy { $0.kind == .indication })

        _ = try h.control(#"{"set":{"signal":{"sinr_db":null,"nr":{"rsrp_dbm":-101}}}}"#)
        expected.sinr = nil
        var nr = nrBefore
        nr.rsrp = -101
        #expect(h.engine.state.signal == expected)
        #expect(h.engine.state.nrSignal == nr)

        _ = try h.control(#"{"set":{"signal":{"nr":null}}}"#)
        #expect(h.engine.state.nrSignal == nil && h.engine.state.signal == expected)
    }

    /// The control example of hw/scenarios/README.md, taken from the document: the simulator line is started as
    /// written (in a directory whose `hw` is the repository's), each `ctl` line runs through `sh` as written, and
    /// the state the last one prints is the scenario's reading with only the measures the example names changed.
    @Test func documentedExampleRunsAsWritten() async throws {
        let readme = try String(contentsOfFile: TestPaths.scenarios + "/README.md", encoding: .utf8)
        let lines = try Self.block(containing: "reach-modem-sim ctl", in: readme)
        try #require(lines.count >= 3, "\(lines)")
        let start = lines[0]
        try #require(start.hasPrefix("reach-modem-sim --scenario ") && start.hasSuffix(" &"), "\(start)")
        let scratch = try Scratch("ctl-example")
        try FileManager.default.createSymbolicLink(atPath: scratch.path("hw"), withDestinationPath: TestPaths.repo + "/hw")
        let env = ["PATH": TestPaths.products + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let sim = try await Spawned.start(
            ["sh", "-c", "cd '\(scratch.dir)' && exec \(start.dropLast(2))"], stdout: .pipe, stderr: .capture,
            environment: env)
        defer { sim.stop() }
        let pty = try await sim.readLine(timeout: 10)
        try #require(pty.hasPrefix("pty: "), "\(pty) \(sim.errorText)")

        var last = ""
        var changed: [String: Double] = [:]
        for line in lines.dropFirst() {
            try #require(line.hasPrefix("reach-modem-sim ctl "), "\(line)")
            let r = try await TestSupport.run(["sh", "-c", "cd '\(scratch.dir)' && \(line)"], environment: env)
            #expect(r.status == 0, "\(line): \(r.stderr)")
            last = r.stdout
            for word in line.split(separator: " ") where word.hasPrefix("signal.") {
                let parts = word.dropFirst("signal.".count).split(separator: "=")
                changed[String(parts[0])] = Double(String(parts[1]))
            }
        }
        try #require(!changed.isEmpty, "the example changes no signal measure")
        let scenarioPath = scratch.dir + "/" + String(start.split(separator: " ")[2])
        let scenario = try JSON.parse(try String(contentsOfFile: scenarioPath, encoding: .utf8))
        var expected: [String: Double] = [:]
        for (key, value) in scenario["state"]?["signal"]?.objectValue ?? [] { expected[key] = value.doubleValue }
        let original = expected
        expected.merge(changed) { $1 }
        #expect(expected != original)
        let state = try JSON.parse(last)
        #expect(state["ok"]?.boolValue == true)
        var got: [String: Double] = [:]
        for (key, value) in state["state"]?["signal"]?.objectValue ?? [] { got[key] = value.doubleValue }
        #expect(got == expected, "\(last)")
    }

    /// Usage errors, a refused line and a socket nobody listens on: each its own exit status and message.
    @Test func failuresExitWithTheirStatus() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        let socket = try #require(sim.controlPath)
        let cases: [([String], Int32, String)] = [
            ([], 64, "needs a SOCKET"),
            ([socket], 64, "at least one KEY=VALUE"),
            ([socket, "signal.rsrp_dbm"], 64, "expected KEY=VALUE"),
            ([socket, "signal.rsrp_dbm=low"], 65, "control.set.signal.rsrp_dbm: expected a number"),
            ([socket, "registration=flying"], 65, "control.set.registration"),
            ([sim.directory + "/nothing.sock", "query=state"], 71, "nothing.sock"),
        ]
        for (args, status, message) in cases {
            let r = try await TestSupport.run([TestPaths.simulator, "ctl"] + args)
            #expect(r.status == status && r.stderr.contains(message), "\(args): \(r.status) \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(args): \(r.stdout)")
        }
        let before = try JSON.parse(try await sim.control(#"{"query":"state"}"#))["state"]?["signal"]
        let ok = try await TestSupport.run([TestPaths.simulator, "ctl", socket, "signal.rsrp_dbm=-101"])
        #expect(ok.status == 0 && ok.stdout == "{\"ok\":true}\n", "\(ok.stdout) \(ok.stderr)")
        let after = try JSON.parse(try await sim.control(#"{"query":"state"}"#))["state"]?["signal"]
        #expect(before?["rsrp_dbm"]?.doubleValue != -101 && after?["rsrp_dbm"]?.doubleValue == -101)
        for key in ["rssi_dbm", "rsrq_db", "sinr_db"] {
            #expect(after?[key] != nil && after?[key] == before?[key], "\(key)")
        }
    }

    /// The lines of the fenced block that contains `marker`.
    static func block(containing marker: String, in text: String) throws -> [String] {
        var blocks: [[String]] = []
        var current: [String]?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("```") {
                if let c = current { blocks.append(c) }
                current = current == nil ? [] : nil
            } else if current != nil, !line.isEmpty {
                current?.append(line)
            }
        }
        guard let found = blocks.first(where: { $0.contains { $0.contains(marker) } }) else {
            throw TestFailure("no block with '\(marker)'")
        }
        return found
    }
}
