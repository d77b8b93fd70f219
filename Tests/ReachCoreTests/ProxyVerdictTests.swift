import ReachCore
import Testing

/// What reach does about a proxy that let a proxied open time out: end and restart only a wedged proxy it started
/// that serves nobody else; name every other.
@Suite struct ProxyVerdictTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var label: String
        var facts: ProxyFacts
        var verdict: ProxyVerdict
        var testDescription: String { label }
    }

    static let rows: [Row] = [
        Row(label: "no proxy found", facts: ProxyFacts(pid: nil, startedByReach: true, unread: true), verdict: .unknown),
        Row(label: "ours, reads, idle", facts: ProxyFacts(pid: 7, startedByReach: true, unread: false, cpuShare: 0),
            verdict: .reading),
        Row(label: "ours, reads, unmeasured", facts: ProxyFacts(pid: 7, startedByReach: true, unread: false),
            verdict: .reading),
        Row(label: "ours, unread, alone", facts: ProxyFacts(pid: 7, startedByReach: true, unread: true), verdict: .restart),
        Row(label: "ours, spinning, alone", facts: ProxyFacts(pid: 7, startedByReach: true, unread: false, cpuShare: 0.6),
            verdict: .restart),
        Row(label: "ours, just below busy", facts: ProxyFacts(pid: 7, startedByReach: true, unread: false, cpuShare: 0.19),
            verdict: .reading),
        Row(label: "ours, unread, ModemManager connected",
            facts: ProxyFacts(pid: 7, startedByReach: true, otherClients: [900], unread: true), verdict: .wedgedInUse),
        Row(label: "ours, unread, an unnamed client",
            facts: ProxyFacts(pid: 7, startedByReach: true, unnamedClients: 1, unread: true), verdict: .wedgedInUse),
        Row(label: "not ours, unread, alone", facts: ProxyFacts(pid: 7, startedByReach: false, unread: true),
            verdict: .wedgedNotOurs),
        Row(label: "not ours, spinning, in use",
            facts: ProxyFacts(pid: 7, startedByReach: false, otherClients: [900], unread: false, cpuShare: 0.9),
            verdict: .wedgedNotOurs),
    ]

    @Test(arguments: rows)
    func decides(_ row: Row) {
        #expect(ProxyVerdict.decide(row.facts) == row.verdict)
        // Only a restart and an unknown proxy go without a reason for leaving it running.
        let restartOrUnknown = row.verdict == .restart || row.verdict == .unknown
        #expect((row.verdict.leftAlone(row.facts) == nil) == restartOrUnknown)
    }

    @Test func namesTheOtherClients() {
        let f = ProxyFacts(pid: 7, startedByReach: true, otherClients: [900, 901], unnamedClients: 2, unread: true)
        #expect(ProxyVerdict.decide(f).leftAlone(f)
            == "it also serves pid 900, pid 901, 2 connections of unknown processes: left running")
    }

    @Test func cpuTime() {
        #expect(cpuTimeText(0) == "0.0 s of CPU")
        #expect(cpuTimeText(0.36) == "0.4 s of CPU")
        #expect(cpuTimeText(9.94) == "9.9 s of CPU")
        #expect(cpuTimeText(41.4) == "41 s of CPU")
        #expect(cpuTimeText(3600) == "3600 s of CPU")
    }
}
