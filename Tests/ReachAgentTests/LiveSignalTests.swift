// `reach signal`'s feed and sampler, with sources the test drives and a manual clock: the cadence, the wait for the
// first answers, and a modem that goes and comes back, without sleeping.

import GatewayReach
import ReachAgent
import ReachCore
import ReachTestSupport
import Synchronization
import Testing

func lteModem(_ device: String, rsrp: Double, present: Bool = true) -> ModemState {
    var m = ModemState(device: device, protocol: .qmi)
    m.present = present
    if present {
        m.registration = .home
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: rsrp)
    }
    return m
}

/// What the sampler emitted, in order.
final class Emitted: Sendable {
    private let items = Mutex<[(Timestamp, LiveSignalSnapshot, LiveSignalModel)]>([])
    func add(_ t: Timestamp, _ s: LiveSignalSnapshot, _ m: LiveSignalModel) { items.withLock { $0.append((t, s, m)) } }
    var all: [(Timestamp, LiveSignalSnapshot, LiveSignalModel)] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}

@Suite struct LiveSignalFeedTests {
    @Test func feedKeepsTheLatestOfEverySource() async throws {
        let a = FakeModemSource("/dev/cdc-wdm0"), b = FakeModemSource("/dev/cdc-wdm1"), w = FakeWiFiSource()
        let feed = MonitorLiveSignalFeed(modems: [a, b], wifi: w)
        await feed.start()
        #expect(await feed.latest().complete == false)
        a.set(lteModem("/dev/cdc-wdm0", rsrp: -95))
        w.set([WiFiLink(interface: "wlan0", mode: .station, associated: true)])
        #expect(await eventually { await feed.latest().wwan.count == 1 })
        #expect(await feed.latest().complete == false)  // cdc-wdm1 has not answered yet
        b.set(lteModem("/dev/cdc-wdm1", rsrp: -100))
        a.set(lteModem("/dev/cdc-wdm0", rsrp: -90))
        #expect(await eventually {
            let s = await feed.latest()
            return s.complete && s.wwan.first?.signal.rsrp == -90
        })
        let s = await feed.latest()
        #expect(s.wwan.map(\.device) == ["/dev/cdc-wdm0", "/dev/cdc-wdm1"])
        #expect(s.wifi.map(\.interface) == ["wlan0"])
        await feed.stop()
    }

    /// Three samples one interval apart, the first as soon as every source answered, each carrying the state of
    /// its moment (no hold-down: a drop shows at the next sample).
    @Test func samplesFollowTheClock() async throws {
        let clock = ManualClock()
        let modem = FakeModemSource("/dev/cdc-wdm0")
        let feed = MonitorLiveSignalFeed(modems: [modem], wifi: nil)
        await feed.start()
        let sampler = LiveSignalSampler(
            interval: .seconds(1), count: 3, firstSampleWait: .seconds(16), clock: clock, wall: wallClock(clock))
        let emitted = Emitted()
        let run = Task { await sampler.run(feed) { t, s, m in emitted.add(t, s, m) } }
        // Nothing before the modem's first answer, even when time passes.
        #expect(await eventually { clock.sleepers == 1 })
        clock.advance(by: .seconds(2))
        #expect(await eventually { clock.sleepers == 1 })
        #expect(emitted.count == 0)
        modem.set(lteModem("/dev/cdc-wdm0", rsrp: -95))
        #expect(await eventually { await feed.latest().complete })
        clock.advance(by: .milliseconds(50))
        #expect(await eventually { emitted.count == 1 })
        modem.set(lteModem("/dev/cdc-wdm0", rsrp: -120))
        #expect(await eventually { await feed.latest().wwan.first?.signal.rsrp == -120 })
        clock.advance(by: .seconds(1))
        #expect(await eventually { emitted.count == 2 })
        modem.set(lteModem("/dev/cdc-wdm0", rsrp: 0, present: false))
        #expect(await eventually { await feed.latest().wwan.first?.present == false })
        clock.advance(by: .seconds(1))
        await run.value
        let all = emitted.all
        #expect(all.count == 3)
        #expect(all.map { $0.0.seconds - all[0].0.seconds } == [0, 1, 2])
        #expect(all.map { $0.1.wwan.first?.signal.rsrp } == [-95, -120, nil])
        let model = all[2].2
        #expect(model.samples == 3)
        let track = try #require(model.links.first?.tracks.first)
        #expect(track.samples == [-95, -120, nil])
        #expect(track.best == -95)
        #expect(model.links.first?.goneSince == all[2].0)
        await feed.stop()
    }

    /// A modem that never answers does not hold the view up past the first-sample wait.
    @Test func firstSampleWaitIsBounded() async throws {
        let clock = ManualClock()
        let silent = FakeModemSource("/dev/cdc-wdm9")
        let feed = MonitorLiveSignalFeed(modems: [silent], wifi: nil)
        await feed.start()
        let sampler = LiveSignalSampler(interval: .seconds(1), count: 1, firstSampleWait: .seconds(3), clock: clock, wall: wallClock(clock))
        let emitted = Emitted()
        let run = Task { await sampler.run(feed) { t, s, m in emitted.add(t, s, m) } }
        for _ in 0..<80 {
            #expect(await eventually { clock.sleepers == 1 || emitted.count == 1 })
            if emitted.count == 1 { break }
            clock.advance(by: .milliseconds(50))
        }
        await run.value
        #expect(emitted.count == 1)
        #expect(emitted.all[0].1.wwan.isEmpty && !emitted.all[0].1.complete)
        #expect(clock.now() >= .seconds(3))
        await feed.stop()
    }
}
