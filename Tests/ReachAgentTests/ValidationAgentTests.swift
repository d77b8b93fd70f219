import Foundation
import GatewayReach
import ReachAgent
import ReachTestSupport
import Synchronization
import Testing

/// Rounds the test scripts per uplink, in place of the probes: what each uplink's next round returns, how many ran,
/// and how many of one uplink ran at once. `hold()` makes rounds wait until `release()` (a slow or silent server).
final class FakeProber: Sendable {
    private struct State {
        var rounds: [String: ValidationRound] = [:]
        var calls: [String: Int] = [:]
        var running: [String: Int] = [:]
        var mostAtOnce = 0
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var subjects: [String: ValidationSubject] = [:]
    }
    private let state = Mutex(State())

    static let good = ValidationRound([
        ProbeOutcome(probe: "dns 203.0.113.53", result: .ok, detail: "answered NOERROR", bytesSent: 59),
        ProbeOutcome(probe: "http probe.example", result: .ok, detail: "answered 204", bytesSent: 400),
    ])
    static let dnsDead = ValidationRound([
        ProbeOutcome(probe: "dns 203.0.113.53", result: .failed, detail: "timed out", bytesSent: 59),
        ProbeOutcome(probe: "http probe.example", result: .failed, detail: "cannot resolve the host: dns timed out", bytesSent: 59),
    ])

    func set(_ name: String, _ round: ValidationRound) { state.withLock { $0.rounds[name] = round } }
    func calls(_ name: String) -> Int { state.withLock { $0.calls[name] ?? 0 } }
    var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }
    func subject(_ name: String) -> ValidationSubject? { state.withLock { $0.subjects[name] } }
    func hold() { state.withLock { $0.held = true } }
    func release() {
        let waiting = state.withLock { s in
            s.held = false
            defer { s.waiting = [] }
            return s.waiting
        }
        waiting.forEach { $0.resume() }
    }

    var runner: ValidationRoundRunner {
        { _, uplink, _ in
            let name = uplink.interface
            let (mustWait, _) = self.state.withLock { s -> (Bool, Void) in
                s.calls[name, default: 0] += 1
                s.running[name, default: 0] += 1
                s.mostAtOnce = max(s.mostAtOnce, s.running[name]!)
                s.subjects[name] = uplink
                return (s.held, ())
            }
            if mustWait {
                await withCheckedContinuation { c in
                    let now = self.state.withLock { s -> Bool in
                        if !s.held { return true }
                        s.waiting.append(c)
                        return false
                    }
                    if now { c.resume() }
                }
            }
            return self.state.withLock { s in
                s.running[name]! -= 1
                return s.rounds[name] ?? FakeProber.good
            }
        }
    }
}

/// The validation source in the agent, on the manual clock with scripted rounds: the lines it gives.
@Suite struct ValidationAgentTests {
    static let settings = try! AgentConfig.parse(#"""
        {"validation": {"enabled": true, "probes": [{"kind": "dns", "server": "203.0.113.53", "name": "probe.example"},
                                                  {"kind": "http", "url": "http://probe.example/generate_204"}]}}
        """#).validation

    /// The agent rig with validation on and its rounds scripted; the WiFi source answers "no WiFi" at once.
    static func rig() -> (AgentTests.Rig, FakeProber) {
        let prober = FakeProber()
        return (AgentTests.Rig(validation: settings, prober: prober), prober)
    }

    /// The issue's sequence on one uplink: validated at start; the DNS server stops → one line "validation failed"
    /// after down_after (3) rounds, `reachable` staying true; it comes back → one line "validated again" after
    /// up_after (2) rounds. The other uplink says nothing throughout.
    @Test func failedAfterDownAfterThenValidatedAgain() async throws {
        let (rig, prober) = Self.rig()
        try await rig.run { r in
            r.wifi.set([])
            r.route.set(DualWANParts.part())
            #expect(await eventually { r.lines.of(.start).count == 1 })
            let start = try #require(r.lines.of(.start).first)
            #expect(start["validated"] == .bool(true))
            #expect(start["usable"] == .bool(true))
            #expect(start["uplinks"]?.arrayValue?.map { $0["validated"] } == [.bool(true), .bool(true)])
            #expect(prober.calls("eth0") == 1)
            #expect(prober.subject("eth0")?.ipv4?.gateway == IPAddress("192.0.2.1"))

            prober.set("eth0", FakeProber.dnsDead)
            await r.advance(seconds: 30)  // the next round (30 s): the first failure, confirmed 5 s later…
            #expect(prober.calls("eth0") == 2)
            #expect(r.lines.of(.change).isEmpty)
            await r.advance(seconds: 10)  // …and 5 s after that: the third failure
            #expect(await eventually { r.lines.of(.change).count == 1 }, "\(r.lines.all)")
            #expect(prober.calls("eth0") == 4)
            let lost = r.lines.of(.change)[0]
            #expect(lost["event"]?["changed"] == .array([.string("validation")]))
            #expect(lost["event"]?["reason"] == .string(
                "uplink eth0 validation failed: dns 203.0.113.53 timed out ×3; http probe.example cannot resolve the host: dns timed out ×3"))
            #expect(lost["reachable"] == .bool(true))
            #expect(lost["status"] == .string("wifi"))
            #expect(lost["validated"] == .bool(false))
            #expect(lost["usable"] == .bool(false))
            #expect(lost["validation"]?["failures"] == .int(3))

            // Down: the interval again, then doubling (30 s, 60 s, …): bytes bounded while it stays dead.
            let callsDown = prober.calls("eth0")
            await r.advance(seconds: 89)
            #expect(prober.calls("eth0") == callsDown + 1)
            await r.advance(seconds: 1)
            #expect(prober.calls("eth0") == callsDown + 2)

            prober.set("eth0", FakeProber.good)
            await r.advance(seconds: 125)  // the next backed-off round (at 250 s) succeeds, confirmed 5 s later
            #expect(await eventually { r.lines.of(.change).count == 2 }, "\(r.lines.all)")
            let back = r.lines.of(.change)[1]
            #expect(back["event"]?["reason"] == .string("uplink eth0 validated again"))
            #expect(back["usable"] == .bool(true))
            #expect(r.lines.of(.change).allSatisfy { $0["event"]?["validation"]?.arrayValue?.count == 1 })
        }
    }

    /// A server that never answers: the round runs until it ends, and no second round of that uplink starts meanwhile,
    /// however much time passes. An uplink that is not reachable is not probed at all.
    @Test func oneRoundInFlightPerUplinkAndNoneOnADeadPath() async throws {
        let (rig, prober) = Self.rig()
        try await rig.run { r in
            r.wifi.set([])
            r.route.set(DualWANParts.part(wwan0Carrier: false))
            #expect(await eventually { r.lines.of(.start).count == 1 })
            #expect(prober.calls("eth0") == 1)
            #expect(prober.calls("wwan0") == 0)
            prober.hold()
            r.clock.advance(by: .seconds(30))
            #expect(await eventually { prober.calls("eth0") == 2 })
            for _ in 0..<300 { r.clock.advance(by: .seconds(1)) }
            try await Task.sleep(for: .milliseconds(50))
            #expect(prober.calls("eth0") == 2)
            prober.release()
            #expect(await eventually { await r.agent.hub.nextDeadline() != nil })
            #expect(prober.mostAtOnce == 1)
            #expect(prober.calls("wwan0") == 0)
            // wwan0 comes up: probed at once.
            r.route.set(DualWANParts.part())
            #expect(await eventually { prober.calls("wwan0") == 1 })
        }
    }
}

/// Two targets, one validation: one source for the process (one round per uplink per turn, not one per target), its
/// part in every target's lines, its changes told once, by the target that reports the uplinks.
@Suite struct ValidationSharedTests {
    @Test func twoTargetsShareOneSourceAndOneTellsTheChange() async throws {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let wifi = FakeWiFiSource()
        let lines = LineCollector()
        let prober = FakeProber()
        var config = AgentConfig()
        config.targets = [.address("192.0.2.10"), .defaultRoute]
        config.modems.enabled = false
        config.validation = ValidationAgentTests.settings
        config.validation.downAfter = 1
        let (_, group) = testAgent(config, clock: clock, route: route, lines: lines, wifi: wifi, validationRunner: prober.runner)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await group.run() }
            wifi.set([])
            route.set(DualWANParts.part())
            #expect(await eventually { lines.of(.start).count == 2 })
            #expect(lines.of(.start).allSatisfy { $0["validated"] == .bool(true) }, "\(lines.of(.start))")
            #expect(prober.calls("eth0") == 1 && prober.calls("wwan0") == 1, "one round per uplink, not one per target")

            prober.set("eth0", FakeProber.dnsDead)
            for _ in 0..<30 {
                clock.advance(by: .seconds(1))
                _ = await eventually { clock.sleepers >= 3 }  // two targets' timers and the validation source
            }
            #expect(await eventually { lines.of(.change).count == 1 }, "\(lines.all)")
            #expect(prober.calls("eth0") == 2)
            try await Task.sleep(for: .milliseconds(50))
            group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let changes = lines.of(.change)
        #expect(changes.count == 1)
        #expect(changes.first?["target"]?["kind"] == .string("default"))
        #expect(changes.first?["event"]?["changed"] == .array([.string("validation")]))
        // Both targets' last lines show the failed uplink.
        #expect(lines.of(.stop).allSatisfy { $0["uplinks"]?.arrayValue?.first?["validated"] == .bool(false) }, "\(lines.of(.stop))")
    }
}

/// SIGHUP turns validation on (its rounds start, the answer carries it) and off again (the answer drops it).
@Suite struct ValidationReloadTests {
    @Test func aReloadTurnsValidationOnAndOff() async throws {
        let prober = FakeProber()
        let rig = AgentTests.Rig(holdDown: 0, validation: nil, prober: prober)
        try await rig.run { r in
            r.wifi.set([])
            r.route.set(DualWANParts.part())
            try #require(await eventually { r.lines.of(.start).count == 1 })
            #expect(r.lines.of(.start)[0]["validated"] == .null)
            var on = await r.agent.hub.configuration
            on.validation = ValidationAgentTests.settings
            #expect(await r.agent.hub.apply(on) == ["validation"])
            // The first rounds: each uplink validated, told in one line.
            try #require(await eventually { r.lines.of(.change).count == 1 }, "\(r.lines.all)")
            let first = r.lines.of(.change)[0]
            #expect(first["event"]?["changed"] == .array([.string("validation")]))
            #expect(first["validated"] == .bool(true))
            #expect(prober.calls("eth0") == 1 && prober.calls("wwan0") == 1)

            var off = on
            off.validation.enabled = false
            #expect(await r.agent.hub.apply(off) == ["validation"])
            r.route.set(DualWANParts.part(wwan0Carrier: false))
            try #require(await eventually { r.lines.of(.change).count == 2 }, "\(r.lines.all)")
            let after = r.lines.of(.change)[1]
            #expect(after["event"]?["changed"] == .array([.string("uplinks")]), "switching validation off is no line")
            #expect(after["validated"] == .null)
            #expect(after["uplinks"]?.arrayValue?.first?["validated"] == .null)
        }
    }
}

extension AgentTests.Rig {
    /// Moves the clock in steps of a second, so every round due on the way starts and ends in its turn: after each
    /// step it waits until both the reporter and the validation service sleep on the clock again (the service sleeps
    /// on the clock only while no round is in flight).
    func advance(seconds: Int) async {
        for _ in 0..<seconds {
            clock.advance(by: .seconds(1))
            _ = await eventually { clock.sleepers >= 2 }
        }
    }
}

/// Validation's gauges in the textfile: only with validation on; validated 1/0 with no sample while unknown.
@Suite struct ValidationPrometheusTests {
    static func input(_ part: ValidationPart?) -> MetricsInput {
        var s = DualWANParts.snapshot(DualWANParts.part(), modems: [])
        s.applyValidation(part)
        return MetricsInput(targets: [.init(snapshot: s, view: nil, changes: 0, lastChange: nil)], log: ReportLog.Stats())
    }

    @Test func gaugesPerUplink() {
        let text = PrometheusText.render(Self.input(ValidationPart(uplinks: [
            "eth0": ValidationReading(state: .failed, failures: 3, reason: "dns 9.9.9.9 timed out ×3", bytesSent: 1650),
            "wwan0": ValidationReading(state: nil, failures: 1, bytesSent: 550),
        ])))
        #expect(text.contains("# TYPE reach_uplink_validated gauge\n"))
        #expect(text.contains("reach_uplink_validated{interface=\"eth0\",kind=\"ethernet\"} 0\n"))
        #expect(!text.contains("reach_uplink_validated{interface=\"wwan0\""))  // unknown: no sample
        #expect(text.contains("reach_uplink_usable{interface=\"eth0\",kind=\"ethernet\"} 0\n"))
        #expect(text.contains("reach_uplink_usable{interface=\"wwan0\",kind=\"wwan\"} 0\n"))
        #expect(text.contains("# TYPE reach_validation_probe_bytes_total counter\n"))
        #expect(text.contains("reach_validation_probe_bytes_total{interface=\"eth0\"} 1650\n"))
        #expect(text.contains("reach_validation_probe_bytes_total{interface=\"wwan0\"} 550\n"))
    }

    @Test func nothingWhenOff() {
        let text = PrometheusText.render(Self.input(nil))
        #expect(!text.contains("validat"))
        #expect(!text.contains("reach_uplink_usable"))
    }
}
