import Testing
@testable import ReachCore

/// Rounds of the example configuration (dns 9.9.9.9, icmp gateway, http generate_204) as the prober would
/// report them.
enum Rounds {
    static let dnsOK = ProbeOutcome(probe: "dns 9.9.9.9", result: .ok, detail: "answered NOERROR", bytesSent: 57)
    static let dnsDead = ProbeOutcome(probe: "dns 9.9.9.9", result: .failed, detail: "timed out", bytesSent: 57)
    static let icmpOK = ProbeOutcome(probe: "icmp 192.0.2.1", result: .ok, detail: "echo reply in 1 ms", bytesSent: 44, local: true)
    static let icmpSkipped = ProbeOutcome(probe: "icmp gateway", result: .skipped, detail: "no gateway (wwan0 is on-link)")
    static let http204 = ProbeOutcome(probe: "http connectivity.example", result: .ok, detail: "answered 204", bytesSent: 420)
    static let httpDead = ProbeOutcome(probe: "http connectivity.example", result: .failed, detail: "timed out", bytesSent: 120)
    static let http302 = ProbeOutcome(
        probe: "http connectivity.example", result: .portal, detail: "redirected (302) to http://portal.example/", bytesSent: 420)

    static let good = ValidationRound([dnsOK, icmpOK, http204])
    /// A dead upstream behind a live link: the gateway answers, nothing beyond it does.
    static let deadUpstream = ValidationRound([dnsDead, icmpOK, httpDead])
    static let allDead = ValidationRound([
        dnsDead, ProbeOutcome(probe: "icmp 192.0.2.1", result: .failed, detail: "no echo reply", local: true), httpDead,
    ])
    static let portal = ValidationRound([dnsOK, icmpOK, http302])
}

private func at(_ s: Double) -> Duration { .milliseconds(Int64(s * 1000)) }
private let wall = Timestamp(seconds: 1_795_305_600)

/// No jitter: random 0.5 is the middle of the ±10 % spread.
private let noJitter = 0.5

@Suite struct ValidationVerdictTests {
    /// Android's three outcomes and NetworkManager's NONE, from one round's probes.
    @Test(arguments: [
        (Rounds.good, ValidationState.validated),
        (Rounds.deadUpstream, .failed),  // the gateway answers, nothing beyond it does: a dead upstream
        (ValidationRound([Rounds.icmpOK]), .validated),  // only the gateway probed
        (ValidationRound([Rounds.dnsOK, ProbeOutcome(probe: "icmp 192.0.2.1", result: .failed, detail: "no echo reply", local: true)]),
         .partial),  // a gateway that drops pings while the internet answers
        (Rounds.allDead, .failed),
        (Rounds.portal, .captivePortal),  // a redirect wins over everything else
        (ValidationRound([Rounds.dnsOK, Rounds.httpDead]), .partial),  // DNS fine, HTTP failing
        (ValidationRound([Rounds.dnsDead, Rounds.httpDead]), .failed),
        (ValidationRound([Rounds.dnsOK, Rounds.icmpSkipped, Rounds.http204]), .validated),  // skipped is not failed
    ])
    func roundVerdict(round: ValidationRound, expected: ValidationState) {
        #expect(round.verdict == expected)
    }

    @Test func everyProbeSkippedIsNoVerdict() {
        #expect(ValidationRound([Rounds.icmpSkipped]).verdict == nil)
        #expect(ValidationRound([]).verdict == nil)
    }

    @Test func bytesAreSummed() {
        #expect(Rounds.good.bytesSent == 57 + 44 + 420)
    }
}

@Suite struct UplinkValidationTests {
    let policy = ValidationPolicy()  // the defaults: 30 s, retry 5 s, max 120 s, down 3, up 2

    /// The first validated round validates at once (mwan3track's initial_state online): the answer is not held back
    /// for `up_after` rounds at start.
    @Test func firstGoodRoundValidatesAtOnce() {
        var v = UplinkValidation(at: at(0))
        #expect(v.state == nil)
        do { let started = v.begin(); #expect(started) }
        do { let started = v.begin(); #expect(!started) }  // one round in flight at a time
        v.record(Rounds.good, policy: policy, at: at(0.5), wall: wall, random: noJitter)
        #expect(v.state == .validated)
        #expect(v.lastOK == wall)
        #expect(v.failures == 0)
        #expect(v.reason == nil)
        #expect(v.due == at(30.5))
        #expect(v.bytesSent == 521)
    }

    /// The example: a dead upstream behind a live link is reported after down_after (3) rounds, the first
    /// failure confirmed after retry_interval, and the reason counts the rounds: "dns 9.9.9.9 timed out ×3".
    @Test func deadUpstreamFailsAfterDownAfterRounds() {
        var v = UplinkValidation(at: at(0))
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(1), wall: wall, random: noJitter)
        let steps: [(Double, ValidationState, Int, Double)] = [
            // (round ends at, state after, failures, next round due)
            (31, .validated, 1, 36),  // suspect: confirmed 5 s later
            (36, .validated, 2, 41),
            (41, .failed, 3, 71),  // down: the interval again, then backing off
            (71, .failed, 4, 131),  // 60 s
            (131, .failed, 5, 251),  // 120 s: the cap
            (251, .failed, 6, 371),
        ]
        for (end, state, failures, due) in steps {
            do { let started = v.begin(); #expect(started) }
            v.record(Rounds.deadUpstream, policy: policy, at: at(end), wall: wall, random: noJitter)
            #expect(v.state == state, "at \(end)")
            #expect(v.failures == failures, "at \(end)")
            #expect(v.due == at(due), "at \(end)")
        }
        #expect(v.reason == "dns 9.9.9.9 timed out ×6; http connectivity.example timed out ×6")
        #expect(v.lastOK == wall)
    }

    /// Recovery needs up_after (2) validated rounds, the second confirmed after retry_interval; then the normal interval.
    @Test func recoveryNeedsUpAfterRounds() {
        var v = UplinkValidation(at: at(0))
        for t in [1.0, 2, 3] {
            _ = v.begin()
            v.record(Rounds.allDead, policy: policy, at: at(t), wall: wall, random: noJitter)
        }
        #expect(v.state == .failed)
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(40), wall: wall, random: noJitter)
        #expect(v.state == .failed)
        #expect(v.successes == 1)
        #expect(v.due == at(45))
        #expect(v.reason == nil)
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(45), wall: wall, random: noJitter)
        #expect(v.state == .validated)
        #expect(v.due == at(75))
    }

    /// A failing start is not reported for down_after rounds (a boot-time hiccup), confirmed every retry_interval.
    @Test func failingStartWaitsForDownAfter() {
        var v = UplinkValidation(at: at(0))
        _ = v.begin()
        v.record(Rounds.allDead, policy: policy, at: at(2), wall: wall, random: noJitter)
        #expect(v.state == nil)
        #expect(v.due == at(7))
        #expect(v.reading.reason == "dns 9.9.9.9 timed out; icmp 192.0.2.1 no echo reply; http connectivity.example timed out")
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(7), wall: wall, random: noJitter)
        #expect(v.state == .validated)  // a good round before down_after: validated, nothing ever reported as failed
    }

    /// While not validated, which way it fails follows at once (a portal appearing on a failed uplink).
    @Test func notValidatedKindFollowsAtOnce() {
        var v = UplinkValidation(at: at(0))
        for t in [1.0, 2, 3] {
            _ = v.begin()
            v.record(Rounds.allDead, policy: policy, at: at(t), wall: wall, random: noJitter)
        }
        _ = v.begin()
        v.record(Rounds.portal, policy: policy, at: at(40), wall: wall, random: noJitter)
        #expect(v.state == .captivePortal)
        #expect(v.reason == "http connectivity.example redirected (302) to http://portal.example/")
    }

    /// A repeat counts only while a probe fails with the same words.
    @Test func repeatCountRestartsWhenTheWordsChange() {
        var v = UplinkValidation(at: at(0))
        let refused = ProbeOutcome(probe: "dns 9.9.9.9", result: .failed, detail: "port 53 unreachable")
        for (t, r) in [(1.0, Rounds.dnsDead), (2, Rounds.dnsDead), (3, refused)] {
            _ = v.begin()
            v.record(ValidationRound([r]), policy: policy, at: at(t), wall: wall, random: noJitter)
        }
        #expect(v.reason == "dns 9.9.9.9 port 53 unreachable")
    }

    /// Jitter spreads each gap by ±10 %.
    @Test(arguments: [(0.0, 27.0), (0.5, 30.0), (0.999, 32.994)])
    func jitter(random: Double, gap: Double) {
        var v = UplinkValidation(at: at(0))
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(0), wall: wall, random: random)
        #expect(abs((v.due - at(gap)) / .milliseconds(1)) < 1)
    }

    /// An unreachable uplink is paused: no round; back, the next round comes at once but never within retry_interval of
    /// the last one, so a flapping link cannot make the probes flap.
    @Test func pauseAndResumeKeepStateAndRateBound() {
        var v = UplinkValidation(at: at(0))
        _ = v.begin()
        v.record(Rounds.good, policy: policy, at: at(1), wall: wall, random: noJitter)
        v.pause()
        do { let started = v.begin(); #expect(!started) }
        v.resume(policy: policy, at: at(2))
        #expect(v.due == at(6))  // 1 + retry 5
        #expect(v.state == .validated)  // kept: a short loss of the path reports nothing
        v.pause()
        v.resume(policy: policy, at: at(100))
        #expect(v.due == at(100))
    }

    /// A round where nothing applies leaves the state alone and says why.
    @Test func noVerdictKeepsStateAndSaysWhy() {
        var v = UplinkValidation(at: at(0))
        _ = v.begin()
        v.record(ValidationRound([Rounds.icmpSkipped]), policy: policy, at: at(1), wall: wall, random: noJitter)
        #expect(v.state == nil)
        #expect(v.reason == "no configured probe applies: icmp gateway no gateway (wwan0 is on-link)")
        #expect(v.due == at(31))
    }

    /// `reach status --validate`: one round decides, either way.
    @Test func onceDecidesInOneRound() {
        for (round, state) in [(Rounds.good, ValidationState.validated), (Rounds.allDead, .failed), (Rounds.portal, .captivePortal)] {
            var v = UplinkValidation(at: .zero)
            _ = v.begin()
            v.record(round, policy: .once(timeout: .seconds(2)), at: .zero, wall: wall, random: noJitter)
            #expect(v.state == state)
        }
    }
}

@Suite struct ValidationBookTests {
    /// Two uplinks: each due on its own; a round in flight is not due again; a gone uplink is forgotten.
    @Test func duesInFlightAndGoneUplinks() {
        var book = ValidationBook(policy: ValidationPolicy())
        book.sync(["eth0": true, "wwan0": true, "wlan1": false], at: at(0))
        #expect(book.due(at: at(0)) == ["eth0", "wwan0"])  // wlan1 is not reachable: paused
        #expect(!book.settled)
        do { let started = book.begin("eth0"); #expect(started) }
        #expect(book.due(at: at(0)) == ["wwan0"])
        do { let started = book.begin("wwan0"); #expect(started) }
        #expect(book.nextDeadline == nil)  // both in flight, wlan1 paused
        book.record("eth0", Rounds.good, at: at(1), wall: wall, random: noJitter)
        book.record("wwan0", Rounds.deadUpstream, at: at(2), wall: wall, random: noJitter)
        #expect(book.settled)
        #expect(book.nextDeadline == at(7))  // wwan0's confirmation
        #expect(book.part.uplinks["eth0"]?.state == .validated)
        #expect(book.part.uplinks["wwan0"]?.state == nil)
        #expect(book.part.uplinks["wwan0"]?.failures == 1)
        book.sync(["eth0": true], at: at(3))
        #expect(book.uplinks["wwan0"] == nil)
        book.record("wwan0", Rounds.good, at: at(4), wall: wall, random: noJitter)  // a late round of a gone uplink
        #expect(book.uplinks["wwan0"] == nil)
        do { let started = book.begin("wwan0"); #expect(!started) }
    }
}
