import GatewayReach
import Glibc
import ReachTestSupport
import Synchronization
import Testing

/// `Reachability` against sources the test drives and a manual clock: properties, `notify`, `updates`, the
/// lifecycle, per-instance change rules, reconfiguration, and subscribers that cannot slow one another. No test here
/// waits for a hold-down in real time.
@Suite struct ReachabilityTests {
    final class Rig: Sendable {
        let clock = ManualClock()
        let route = FakeRouteSource()
        let wifi = FakeWiFiSource()

        var sources: ReachabilitySources {
            let (route, wifi) = (route, wifi)
            return ReachabilitySources(route: { _ in route }, modems: { _, _, _ in [] }, wifi: { _ in wifi })
        }

        func make(_ target: Target = .defaultRoute, holdDown: Duration = .seconds(5), _ edit: (inout ReachabilityOptions) -> Void = { _ in })
            -> Reachability
        {
            var o = ReachabilityOptions()
            o.modems.enabled = false
            o.holdDown = holdDown
            edit(&o)
            return Reachability(target: target, options: o, sources: sources, clock: clock, wall: wallClock(clock))
        }

        func link(_ dBm: Int, _ name: String = "wlan1") -> WiFiLink {
            var w = WiFiLink(interface: name, mode: .station, associated: true)
            w.signalDBm = dBm
            return w
        }

        /// Route via wlan1 and WiFi at 3 bars: the first determination.
        func answer() {
            route.set(Routes.via("wlan1", kind: .wifi))
            wifi.set([link(-60)])
        }
    }

    /// Records notify calls: how many, how many at once at most, and the status each one read.
    final class NotifyLog: Sendable {
        private let state = Mutex<(calls: Int, inFlight: Int, most: Int, seen: [ReachabilityStatus])>((0, 0, 0, []))
        var calls: Int { state.withLock { $0.calls } }
        var most: Int { state.withLock { $0.most } }
        var seen: [ReachabilityStatus] { state.withLock { $0.seen } }

        func block(pause: Duration = .zero, gate: Gate? = nil) -> @Sendable (Reachability) -> Void {
            { r in
                self.state.withLock {
                    $0.inFlight += 1
                    $0.most = max($0.most, $0.inFlight)
                }
                gate?.pass()
                if pause > .zero { usleep(UInt32(pause.components.attoseconds / 1_000_000_000_000)) }
                self.state.withLock {
                    $0.inFlight -= 1
                    $0.calls += 1
                    $0.seen.append(r.status)
                }
            }
        }
    }

    /// A gate a blocking notify block waits at until the test opens it.
    final class Gate: Sendable {
        private let open = Atomic<Bool>(false)
        func pass() { while !open.load(ordering: .acquiring) { usleep(1000) } }
        func release() { open.store(true, ordering: .releasing) }
    }

    @Test func beforeTheFirstDeterminationTheStatusIsUnknown() async {
        let rig = Rig()
        let r = rig.make()
        #expect(r.status == .unknown && !r.isReachable && !r.isRunning)
        r.start()
        defer { r.stop() }
        #expect(r.isRunning)
        #expect(r.status == .unknown)
        rig.answer()
        // The properties follow every source as it answers: the route alone already says `wifi`, and the WiFi
        // reading (the bars) may come a moment later. The first determination waits for both.
        #expect(await eventually { r.state.reported != nil })
        #expect(r.status == .wifi)
        #expect(r.isReachable && r.isReachableViaWiFi && !r.isReachableViaWWAN && !r.connectionRequired)
        #expect(r.medium == .wifi && r.wwanStatus == .none && r.flags.contains(.reachable))
        #expect(r.snapshot.wifi.first?.bars == 3)
    }

    @Test func updatesGivesTheCurrentSnapshotFirstThenOnePerReportedChange() async throws {
        let rig = Rig()
        let r = rig.make(holdDown: .zero)
        let early = r.updates  // subscribed before the start: begins with the first determination
        r.start()
        rig.answer()
        var it = early.makeAsyncIterator()
        #expect(await it.next()?.status == .wifi)
        // A late subscriber gets the current snapshot at once.
        var late = r.updates.makeAsyncIterator()
        #expect(await late.next()?.status == .wifi)
        rig.route.set(nil)
        #expect(await it.next()?.status == Optional(ReachabilityStatus.none))
        #expect(await late.next()?.status == Optional(ReachabilityStatus.none))
        // The same state again is no change; the next real one is.
        rig.route.set(nil)
        rig.route.set(Routes.via("eth0", kind: .ethernet))
        #expect(await it.next()?.medium == .ethernet)
        #expect(await late.next()?.medium == .ethernet)
        r.stop()
        #expect(await it.next() == nil, "updates end at stop()")
        #expect(await late.next() == nil)
    }

    /// A subscriber that arrives while a loss is held down starts from what was reported, not from the loss: should
    /// the loss end within the hold-down, nothing would ever tell it so.
    @Test func aLateSubscriberStartsFromTheLastReportedChange() async {
        let rig = Rig()
        let r = rig.make(holdDown: .seconds(5))
        r.start()
        defer { r.stop() }
        rig.answer()
        #expect(await eventually { r.status == .wifi })
        rig.route.set(nil)
        #expect(await eventually { r.status == ReachabilityStatus.none })  // the property shows the loss at once
        var late = r.updates.makeAsyncIterator()
        #expect(await late.next()?.status == .wifi)
        rig.clock.advance(by: .seconds(5))
        #expect(await late.next()?.status == ReachabilityStatus.none)
    }

    @Test func notifyIsCalledOncePerChangeInOrderNeverTwiceAtOnce() async {
        let rig = Rig()
        let r = rig.make(holdDown: .zero)
        let log = NotifyLog()
        r.notify = log.block(pause: .milliseconds(1))
        var stream = r.updates.makeAsyncIterator()
        r.start()
        rig.answer()
        _ = await stream.next()
        // 20 changes, each waited for on `updates` (so none is coalesced), while notify takes 1 ms a call.
        for i in 0..<20 {
            rig.route.set(i % 2 == 0 ? nil : Routes.via("wlan1", kind: .wifi))
            _ = await stream.next()
        }
        #expect(await eventually { log.calls == 21 })
        #expect(log.most == 1, "two notify calls ran at once")
        // A call reads the properties as they are when it runs; the last one sees the final state.
        #expect(log.seen.last == .wifi)
        r.stop()
        try? await Task.sleep(for: .milliseconds(50))
        #expect(log.calls == 21, "no call for the stop event")
    }

    /// A notify block that blocks, and an `updates` subscriber that never reads, cost only themselves: the sources,
    /// the properties and the other subscriber go on; the blocked ones keep the newest changes (the buffer), and
    /// notify resumes in order once its block returns.
    @Test func aStuckSubscriberSlowsNoOneElse() async {
        let rig = Rig()
        let r = rig.make(holdDown: .zero) { $0.subscriberBuffer = 8 }
        let log = NotifyLog()
        let gate = Gate()
        r.notify = log.block(gate: gate)
        let stalled = r.updates  // never read until the end
        var reader = r.updates.makeAsyncIterator()
        r.start()
        rig.answer()
        _ = await reader.next()
        for i in 0..<100 {
            rig.route.set(i % 2 == 0 ? nil : Routes.via("wlan1", kind: .wifi))
            let s = await reader.next()
            #expect(s?.reachable == (i % 2 == 1))
            #expect(r.isReachable == (i % 2 == 1), "a property read waited for no one")
        }
        #expect(log.calls == 0, "notify is still blocked in its first call")
        gate.release()
        // The first call, then at most the 8 newest it held: not the 100 it missed.
        #expect(await eventually { log.calls >= 2 })
        try? await Task.sleep(for: .milliseconds(100))
        #expect(log.calls <= 1 + 8)
        #expect(log.most == 1)
        r.stop()
        var count = 0
        for await _ in stalled { count += 1 }
        #expect(count == 8, "the stalled subscriber kept its 8 newest")
    }

    @Test func startAndStopAreIdempotentAndRestartable() async {
        let rig = Rig()
        let r = rig.make()
        let log = NotifyLog()
        r.notify = log.block()
        let events = r.events()
        r.start()
        r.start()
        rig.answer()
        #expect(await eventually { log.calls == 1 })
        r.stop()
        r.stop()
        var kinds: [ReportEventType] = []
        for await e in events { kinds.append(e.kind) }
        #expect(kinds == [.start, .stop])
        #expect(!r.isRunning)
        #expect(r.status == .wifi, "the last determination stays readable after stop()")

        // Again: a fresh first determination, to a new subscription; notify stays set.
        var again = r.updates.makeAsyncIterator()
        r.start()
        rig.route.set(Routes.via("wlan1", kind: .wifi))
        #expect(await again.next()?.status == .wifi)
        #expect(await eventually { log.calls == 2 })
        r.stop()
        #expect(await again.next() == nil)
    }

    /// Two instances of one target, one with no hold-down, one with 5 s, over one shared route source: each has its
    /// own change rules, and the source is subscribed to once.
    @Test func changeRulesArePerInstanceAndTheSourceIsShared() async {
        let rig = Rig()
        let quick = rig.make(holdDown: .zero)
        let patient = rig.make(holdDown: .seconds(5))
        let quickLog = NotifyLog()
        let patientLog = NotifyLog()
        quick.notify = quickLog.block()
        patient.notify = patientLog.block()
        quick.start()
        patient.start()
        defer {
            quick.stop()
            patient.stop()
        }
        rig.answer()
        #expect(await eventually { quickLog.calls == 1 && patientLog.calls == 1 })
        #expect(rig.route.eventSubscriptions == 1)

        rig.route.set(nil)
        #expect(await eventually { quickLog.calls == 2 })
        #expect(await eventually { patient.nextDeadline == .seconds(5) })
        #expect(patientLog.calls == 1 && patient.status == .none)
        rig.clock.advance(by: .seconds(5))
        #expect(await eventually { patientLog.calls == 2 })
    }

    @Test func newOptionsApplyWhileRunningAndRebuildOnlyWhatChanged() async {
        let rig = Rig()
        let r = rig.make(holdDown: .seconds(5))
        let kinds = Mutex<[(ReportEventType, ReachabilityStatus)]>([])
        let events = r.events()
        let collector = Task { for await e in events { kinds.withLock { $0.append((e.kind, e.snapshot.status)) } } }
        r.start()
        rig.route.set(Routes.via("wlan1", kind: .wifi))
        rig.wifi.set([rig.link(-60, "wlan1"), rig.link(-70, "wlan2")])
        #expect(await eventually { r.snapshot.wifi.count == 2 })

        // Only wlan2 from now on: the WiFi feed is rebuilt over the same shared source; the route feed is untouched.
        let computations = rig.route.computations
        var o = r.options
        o.wifi.interfaces = ["wlan2"]
        o.holdDown = .seconds(1)
        r.options = o
        #expect(await eventually { r.snapshot.wifi.map(\.interface) == ["wlan2"] })
        #expect(rig.route.computations == computations)
        #expect(rig.wifi.subscriptions == 1, "the shared WiFi source was not reopened")
        // The shorter hold-down is in force at once (for wlan1 gone, and for the route lost now).
        rig.route.set(nil)
        #expect(await eventually { r.status == ReachabilityStatus.none })
        #expect(r.nextDeadline == .seconds(1))
        rig.clock.advance(by: .seconds(1))
        #expect(await eventually { kinds.withLock { $0.last?.0 == .change && $0.last?.1 == ReachabilityStatus.none } })
        r.stop()
        await collector.value
        #expect(kinds.withLock { $0.first?.0 } == .start)
    }

    @Test func refreshAsksTheRouteAgainWithoutANotice() async {
        let rig = Rig()
        let r = rig.make(holdDown: .zero)
        r.start()
        defer { r.stop() }
        rig.answer()
        #expect(await eventually { r.status == .wifi })
        rig.route.setQuietly(Routes.via("eth0", kind: .ethernet))
        let s = await r.refresh()
        #expect(s.medium == .ethernet)
        #expect(r.medium == .ethernet)
    }

    @Test func anInstanceReleasedWithoutStopReleasesItsSources() async {
        let rig = Rig()
        var r: Reachability? = rig.make()
        r?.start()
        rig.answer()
        #expect(await eventually { r?.status == .wifi })
        #expect(SourceRegistry.shared.running.contains { $0.hasSuffix(rig.route.id) })
        r = nil
        #expect(await eventually { !SourceRegistry.shared.running.contains { $0.hasSuffix(rig.route.id) } })
    }

    /// `state` and an attached `Wakeup` follow every determination, not only the reported changes: a signal that moves
    /// within its bars is no change but is the state; the reported view and the sources' last-heard times come along.
    @Test func theStateFollowsEveryDetermination() async {
        let rig = Rig()
        let r = rig.make()
        let woken = Wakeup()
        r.attach(woken)
        r.start()
        defer { r.stop() }
        #expect(r.state.reported == nil && r.state.heard.isEmpty)
        rig.answer()
        #expect(await eventually { r.state.reported?.status == .wifi })
        #expect(Set(r.state.heard.keys) == ["route", "wifi"])
        let changes = r.events()
        await woken.wait()  // whatever came before
        rig.wifi.set([rig.link(-61)])
        await woken.wait()
        #expect(await eventually { r.state.snapshot.wifi.first?.signalDBm == -61 })
        #expect(r.state.reported?.bars[LinkKey(.wifi, "wlan1")] == 3)
        r.stop()
        var kinds: [ReportEventType] = []
        for await e in changes { kinds.append(e.kind) }
        #expect(kinds == [.stop], "no change was reported for -61 dBm")
    }

    @Test func targetsOfTheConvenienceInitializers() {

        #expect(Reachability().target == .defaultRoute)
        #expect(Reachability(hostname: "gateway.example").target == .host("gateway.example"))
        #expect(Reachability(hostname: "192.0.2.1").target == .address("192.0.2.1"))
        #expect(Reachability(address: IPAddress("2001:db8::1")!).target == .address("2001:db8::1"))
        let local = Reachability.localWiFi()
        #expect(local.target == .linkLocal && local.options.allowWWAN == false)
        #expect(Reachability.shared === Reachability.shared)
    }
}

/// `Mailbox`: bounded, newest kept, producers never wait, and the consumer learns what it missed.
@Suite struct MailboxTests {
    @Test func dropsTheOldestAndCountsThem() async {
        let m = Mailbox<Int>(capacity: 3)
        for i in 1...5 { #expect(m.post(i)) }
        #expect(m.count == 3 && m.droppedTotal == 2)
        let first = await m.receive()
        #expect(first?.element == 3 && first?.droppedBefore == 2)
        #expect(await m.receive()?.droppedBefore == 0)
        m.finish()
        #expect(!m.post(9))
        #expect(await m.receive()?.element == 5, "what was held is still delivered after finish()")
        #expect(await m.receive() == nil)
    }

    @Test func aWaitingConsumerIsWokenAndCancellationEndsItsWait() async {
        let m = Mailbox<Int>(capacity: 2)
        let got = Task { await m.receive()?.element }
        try? await Task.sleep(for: .milliseconds(20))
        m.post(7)
        #expect(await got.value == 7)
        let cancelled = Task { await m.receive() }
        try? await Task.sleep(for: .milliseconds(20))
        cancelled.cancel()
        #expect(await cancelled.value == nil)
        m.post(8)
        #expect(await m.receive()?.element == 8, "the mailbox stays open after a cancelled wait")
    }
}
