import Testing

@testable import ReachCore

/// `modems.worker`: each modem's I/O in a worker process of its own unless set false.
@Suite struct ModemWorkerConfigTests {
    @Test func workerIsOnByDefaultAndCanBeTurnedOff() throws {
        #expect(try AgentConfig.parse("{}").modems.worker)
        let off = try AgentConfig.parse(#"{"modems": {"worker": false}}"#)
        #expect(!off.modems.worker)
        #expect(off.json["modems"]?["worker"] == .bool(false))
        #expect(try AgentConfig.parse(off.json.serialized()) == off)
    }

    @Test func workerMustBeABoolean() {
        do {
            _ = try AgentConfig.parse(#"{"modems": {"worker": "yes"}}"#)
            Issue.record("accepted a string")
        } catch {
            #expect(error.problems.map(\.key) == ["modems.worker"], "\(error)")
        }
    }
}
