import Testing
@testable import ReachCore

/// The dual-WAN snapshot of UplinkTests with a validation part: the answer's fields, its text, and the change lines.
private enum V {
    static let ok = ValidationReading(state: .validated, lastOK: Timestamp(seconds: 1_700_000_000), bytesSent: 521)
    static let dead = ValidationReading(
        state: .failed, lastOK: Timestamp(seconds: 1_700_000_000), failures: 3, reason: "dns 9.9.9.9 timed out ×3", bytesSent: 1563)

    static func snapshot(_ part: ValidationPart?, routes: [RouteLookup] = DualWAN.both) -> Snapshot {
        var s = DualWAN.snapshot(routes)
        s.validation = part
        s.derive()
        return s
    }

    static let wwan0Dead = DualWAN.route(DualWAN.link("wwan0", .wwan, carrier: false), gateway: "198.18.0.1", metric: 20)
}

private func at(_ s: Int) -> Duration { .seconds(s) }

@Suite struct ValidationAnswerTests {
    /// Off: null fields, usable is reachable, nothing in the text.
    @Test func offLeavesTheAnswerAlone() {
        let s = V.snapshot(nil)
        #expect(s.validated == nil)
        #expect(s.usable)
        #expect(s.json()["validated"] == .null)
        #expect(s.json()["validation"] == .null)
        #expect(s.json()["usable"] == .bool(true))
        #expect(s.uplinks.allSatisfy { $0.validated == nil && $0.usable })
        #expect(SnapshotText.headline(s) == "reachable over ethernet via eth0 (gateway 192.0.2.1)")
    }

    /// The text: a dead upstream behind a live primary. `reachable` and the status keep the path truth.
    @Test func deadUpstreamIsReachableButNotUsable() throws {
        let s = V.snapshot(ValidationPart(uplinks: ["eth0": V.dead, "wwan0": V.ok]))
        #expect(s.reachable)
        #expect(s.status == .wifi)
        #expect(s.flags == [.reachable])
        #expect(s.validated == false)
        #expect(!s.usable)
        #expect(SnapshotText.headline(s)
            == "reachable over ethernet via eth0 (gateway 192.0.2.1) · validation failed: dns 9.9.9.9 timed out ×3")
        let j = s.json()
        #expect(j["reachable"] == .bool(true))
        #expect(j["validated"] == .bool(false))
        #expect(j["usable"] == .bool(false))
        #expect(j["validation"] == .object([
            ("state", .string("failed")), ("last_ok", .string("2023-11-14T22:13:20.000Z")), ("failures", .int(3)),
            ("reason", .string("dns 9.9.9.9 timed out ×3")), ("bytes_sent", .int(1563)),
        ]))
        let wwan0 = try #require(j["uplinks"]?.arrayValue?.first { $0["interface"] == .string("wwan0") })
        #expect(wwan0["validated"] == .bool(true))
        #expect(wwan0["usable"] == .bool(true))
        let text = SnapshotText.render(s)
        #expect(text.contains("  uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10 · validation failed: dns 9.9.9.9 timed out ×3\n"))
        #expect(text.contains("  uplink wwan0: reachable over wwan (gateway 198.18.0.1) · metric 20 · validated"))
    }

    /// On but no round yet: unknown, not usable; the text says so.
    @Test func pendingIsUnknownAndNotUsable() {
        let s = V.snapshot(ValidationPart())
        #expect(s.validated == nil)
        #expect(!s.usable)
        #expect(s.json()["validation"]?["state"] == .null)
        #expect(s.json()["validation"]?["reason"] == .string("first round pending"))
        #expect(SnapshotText.headline(s).hasSuffix(" · validation pending"))
    }

    /// An unreachable uplink is not judged: null whatever was concluded before, and not usable.
    @Test func unreachableUplinkHasNoVerdict() throws {
        let s = V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok]), routes: [DualWAN.both[0], V.wwan0Dead])
        let wwan0 = try #require(s.uplinks.first { $0.interface == "wwan0" })
        #expect(wwan0.validated == nil)
        #expect(!wwan0.usable)
        #expect(wwan0.validationJSON["state"] == .null)
        #expect(wwan0.validationJSON["reason"] == .string("not probed while not reachable"))
        #expect(wwan0.validationJSON["bytes_sent"] == .int(521))
        #expect(s.usable)
    }

    /// A target whose route leaves by no uplink (a LAN address): validation does not apply.
    @Test func lanTargetIsNotJudged() {
        var s = DualWAN.snapshot(DualWAN.both, target: .address("192.168.1.10"))
        s.route = DualWAN.route(DualWAN.link("br-lan", .ethernet), gateway: nil, metric: 0)
        s.validation = ValidationPart(uplinks: ["eth0": V.dead])
        s.derive()
        #expect(s.validated == nil)
        #expect(s.usable)
    }
}

@Suite struct ValidationChangeTests {
    /// The upstream behind the primary dies: one change line naming eth0, at once (the rounds were the hysteresis);
    /// then back: one line. Nothing else of the answer changes.
    @Test func validationLossAndReturnArePerUplinkLines() {
        var d = ChangeDetector(policy: .standard)
        let start = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok])), at: at(0))
        #expect(start?.initial == true)
        #expect(d.view?.validation == ["eth0": .validated, "wwan0": .validated])
        let lost = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.dead, "wwan0": V.ok])), at: at(90))
        #expect(lost?.changed == [.validation])
        #expect(lost?.validation == [ValidationChange(interface: "eth0", from: .validated, to: .failed, reason: "dns 9.9.9.9 timed out ×3")])
        #expect(lost?.reason == "uplink eth0 validation failed: dns 9.9.9.9 timed out ×3")
        #expect(d.held.isEmpty)
        #expect(d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.dead, "wwan0": V.ok])), at: at(91)) == nil)
        let back = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok])), at: at(200))
        #expect(back?.reason == "uplink eth0 validated again")
        let event = ReportLine.event(.change, seq: 3, change: lost)
        #expect(event["changed"] == .array([.string("validation")]))
        #expect(event["validation"] == .array([.object([
            ("interface", .string("eth0")), ("from", .string("validated")), ("to", .string("failed")),
            ("reason", .string("dns 9.9.9.9 timed out ×3")),
        ])]))
    }

    /// The path of wwan0 blinks: its validation is neither reported nor lost, so its return gives no line either.
    @Test func pathLossIsTheUplinkLineNotAValidationLine() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok])), at: at(0))
        let down = V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok]), routes: [DualWAN.both[0], V.wwan0Dead])
        #expect(d.observe(down, at: at(1)) == nil)  // held down (the uplink's loss)
        #expect(d.view?.validation["wwan0"] == .validated)
        #expect(d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok, "wwan0": V.ok])), at: at(3)) == nil)
        #expect(d.tick(at: at(10)) == nil)
    }

    /// The first verdict after start-up (the start line went out while pending) is one line.
    @Test func firstVerdictAfterStart() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(V.snapshot(ValidationPart()), at: at(0))
        #expect(d.view?.validation == [:])
        let e = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok])), at: at(2))
        #expect(e?.validation == [ValidationChange(interface: "eth0", from: nil, to: .validated)])
        #expect(e?.reason == "uplink eth0 validated")
    }

    /// A detector that does not report uplinks (a second target) reports no validation either.
    @Test func onlyTheUplinkReportingDetector() {
        var d = ChangeDetector(policy: .standard, tracksUplinks: false)
        _ = d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.ok])), at: at(0))
        #expect(d.observe(V.snapshot(ValidationPart(uplinks: ["eth0": V.dead])), at: at(1)) == nil)
    }
}
