import Testing
@testable import ReachCore

/// The dual-WAN gateway of UplinkTests (eth0 metric 10, wwan0 metric 20) through a `ChangeDetector` with the default
/// 5 s hold-down: what each uplink change gives.
private enum Steps {
    static let eth0 = DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10)
    static let wwan0 = DualWAN.route(DualWAN.wwan0, gateway: "198.18.0.1", metric: 20)
    static let wwan0Dead = DualWAN.route(DualWAN.link("wwan0", .wwan, carrier: false), gateway: "198.18.0.1", metric: 20)
    static let eth0Dead = DualWAN.route(DualWAN.link("eth0", .ethernet, carrier: false), gateway: "192.0.2.1", metric: 10)

    static let both = DualWAN.snapshot([eth0, wwan0])
    static let backupDead = DualWAN.snapshot([eth0, wwan0Dead])
    static let primaryGone = DualWAN.snapshot([wwan0])
    static let primaryDead = DualWAN.snapshot([eth0Dead, wwan0])
}

private func at(_ s: Int) -> Duration { .seconds(s) }

@Suite struct UplinkChangeTests {
    @Test func initialEventListsEveryUplink() {
        var d = ChangeDetector(policy: .standard)
        let e = d.observe(Steps.both, at: at(0))
        #expect(e?.initial == true)
        #expect(e?.changed.contains(.uplinks) == true)
        #expect(e?.uplinks.map(\.interface) == ["eth0", "wwan0"])
        #expect(e?.uplinks.allSatisfy { $0.from == nil } == true)
        #expect(d.view?.uplinks["eth0"] == UplinkView(reachable: true, primary: true))
        #expect(d.view?.uplinks["wwan0"] == UplinkView(reachable: true, primary: false))
    }

    /// The backup dies while the primary carries on: held down, then one change naming wwan0, the main answer's
    /// fields untouched.
    @Test func backupLossIsOneHeldChangeNamingTheUplink() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Steps.both, at: at(0))
        #expect(d.observe(Steps.backupDead, at: at(10)) == nil)
        #expect(d.held == [.uplinks])
        #expect(d.nextDeadline == at(15))
        #expect(d.tick(at: at(14)) == nil)
        let e = d.tick(at: at(15))
        #expect(e?.changed == [.uplinks])
        #expect(e?.uplinks == [UplinkChange(
            interface: "wwan0", from: UplinkView(reachable: true, primary: false), to: UplinkView(reachable: false, primary: false))])
        #expect(e?.reason == "uplink wwan0 not reachable: wwan0 has no carrier (connection required)")
        #expect(d.held.isEmpty)
        // It comes back: at once.
        let back = d.observe(Steps.both, at: at(20))
        #expect(back?.changed == [.uplinks])
        #expect(back?.reason == "uplink wwan0 reachable again")
        // Repeats are nothing.
        #expect(d.observe(Steps.both, at: at(21)) == nil)
    }

    /// A backup that blinks for less than the hold-down is never reported (Alamofire #2707's pair, per uplink).
    @Test func backupBlipIsNeverReported() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Steps.both, at: at(0))
        #expect(d.observe(Steps.backupDead, at: at(1)) == nil)
        #expect(d.observe(Steps.both, at: at(3)) == nil)
        #expect(d.tick(at: at(10)) == nil)
        #expect(d.nextDeadline == nil)
    }

    /// The primary's route goes: the answer and `primary` move to wwan0 at once (a sideways failover); eth0's own
    /// loss, with its primary flag, comes after the hold-down. Each uplink's change is one line.
    @Test func primaryRouteRemovedMovesPrimaryAtOnceAndReportsTheLossAfterTheHold() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Steps.both, at: at(0))
        let moved = d.observe(Steps.primaryGone, at: at(10))
        #expect(moved?.changed == [.status, .medium, .uplinks])
        #expect(moved?.uplinks == [UplinkChange(
            interface: "wwan0", from: UplinkView(reachable: true, primary: false), to: UplinkView(reachable: true, primary: true))])
        #expect(moved?.reason == "route moved from eth0 to wwan0; primary uplink now wwan0")
        #expect(d.held == [.uplinks])
        let gone = d.tick(at: at(15))
        #expect(gone?.changed == [.uplinks])
        #expect(gone?.uplinks == [UplinkChange(interface: "eth0", from: UplinkView(reachable: true, primary: true), to: nil)])
        #expect(gone?.reason == "uplink eth0 gone (no default route)")
    }

    /// The primary's route comes back within the hold-down: the failover and the failback are reported (both are
    /// sideways), eth0 itself never.
    @Test func primaryBlipReportsFailoverAndFailbackOnly() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Steps.both, at: at(0))
        #expect(d.observe(Steps.primaryGone, at: at(10))?.uplinks.map(\.interface) == ["wwan0"])
        let back = d.observe(Steps.both, at: at(12))
        #expect(back?.uplinks == [UplinkChange(
            interface: "wwan0", from: UplinkView(reachable: true, primary: true), to: UplinkView(reachable: true, primary: false))])
        #expect(d.tick(at: at(20)) == nil)
        #expect(d.view?.uplinks["eth0"] == UplinkView(reachable: true, primary: true))
    }

    /// The primary loses carrier while the kernel keeps its route (no ignore_routes_with_linkdown): the answer and
    /// the uplink are lost together, in one line after the hold-down.
    @Test func primaryCarrierLossIsOneLineWithTheAnswer() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(Steps.both, at: at(0))
        #expect(d.observe(Steps.primaryDead, at: at(1)) == nil)
        let e = d.tick(at: at(6))
        #expect(e?.changed == [.status, .medium, .reachable, .uplinks])
        #expect(e?.uplinks.map(\.interface) == ["eth0"])
        #expect(e?.reason == "route via eth0 lost carrier; uplink eth0 not reachable: eth0 has no carrier (connection required)")
    }

    /// A backup appearing (the modem connected, netifd added its route) is reported at once.
    @Test func newBackupIsReportedAtOnce() {
        var d = ChangeDetector(policy: .standard)
        _ = d.observe(DualWAN.snapshot([Steps.eth0]), at: at(0))
        let e = d.observe(Steps.both, at: at(1))
        #expect(e?.changed == [.uplinks])
        #expect(e?.uplinks == [UplinkChange(interface: "wwan0", from: nil, to: UplinkView(reachable: true, primary: false))])
        #expect(e?.reason == "uplink wwan0 appeared")
    }

    @Test func zeroHoldDownReportsEveryUplinkChangeAtOnce() {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Steps.both, at: at(0))
        let e = d.observe(Steps.primaryGone, at: at(1))
        #expect(e?.uplinks.map(\.interface) == ["eth0", "wwan0"])
        #expect(e?.uplinks[0].to == nil)
        #expect(e?.uplinks[1].to?.primary == true)
    }

    /// The report line: `event.changed` says "uplinks", `event.uplinks` names each with its sides.
    @Test func reportLineNamesTheUplink() {
        var d = ChangeDetector(policy: .immediate)
        _ = d.observe(Steps.both, at: at(0))
        let e = d.observe(Steps.backupDead, at: at(1))!
        let event = ReportLine.event(.change, seq: 2, change: e)
        #expect(event["changed"] == .array([.string("uplinks")]))
        #expect(event["from"] == .object([]))
        let u = event["uplinks"]?.arrayValue?.first
        #expect(u?["interface"] == .string("wwan0"))
        #expect(u?["from"] == .object([("reachable", .bool(true)), ("primary", .bool(false))]))
        #expect(u?["to"] == .object([("reachable", .bool(false)), ("primary", .bool(false))]))
    }

    /// Bars inside an uplink's reading are the debounced ones, as in `wwan[]`.
    @Test func reportLineUplinkBarsAreDebounced() {
        var d = ChangeDetector(policy: ChangePolicy(holdDown: .seconds(5), barHysteresisDB: 3))
        var modem = DualWAN.modem()
        let first = DualWAN.snapshot([Steps.eth0, Steps.wwan0], modems: [modem])
        _ = d.observe(first, at: at(0))
        modem.signal = SignalMeasurement(rsrp: -97)  // 4 bars raw (-98), not 3 dB past the boundary
        let s = DualWAN.snapshot([Steps.eth0, Steps.wwan0], modems: [modem])
        _ = d.observe(s, at: at(1))
        let line = ReportLine.json(snapshot: s, view: d.view, event: .object([]))
        let reading = line["uplinks"]?.arrayValue?[1]["wwan"]
        #expect(reading?["bars"] == .int(3))
        #expect(reading?["bars_raw"] == .int(4))
        #expect(line["wwan"]?.arrayValue?[0]["bars"] == .int(3))
    }

    /// Several targets carry the same uplinks: one detector reports them, so a backup's change is one line, not one
    /// per target.
    @Test func oneDetectorOfSeveralReportsUplinks() {
        #expect(UplinkChangeTracker.reportingTarget([.address("192.0.2.9"), .defaultRoute, .linkLocal]) == 1)
        #expect(UplinkChangeTracker.reportingTarget([.host("example.net"), .linkLocal]) == 0)
        #expect(UplinkChangeTracker.reportingTarget([]) == nil)
        var quiet = ChangeDetector(policy: .immediate, tracksUplinks: false)
        let first = quiet.observe(Steps.both, at: at(0))
        #expect(first?.uplinks == [])
        #expect(quiet.view?.uplinks == [:])
        #expect(quiet.observe(Steps.backupDead, at: at(1)) == nil)
    }
}
