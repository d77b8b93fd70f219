// The monitor's logic (MonitorCore) and its event socket, driven through the replayed kernel.
import CNetlinkShims
import ReachCore
import Testing

@testable import ReachWiFi

@Suite struct MonitorLogic {
    func core(_ k: ReplayKernel, options: WiFiMonitor.Options = .init()) -> MonitorCore {
        MonitorCore(options: options) { () throws(NL80211Error) in try open(k) }
    }

    func cqmRequests(_ k: ReplayKernel) -> [(ifindex: UInt32?, thresholds: [Int32], hysteresis: UInt32?)] {
        k.requests.filter { $0.command == NL80211.Command.setCQM }.map { r in
            let cqm = r.attributes.nested(NL80211.Attribute.cqm)
            let raw = cqm?.bytes(NL80211.CQMAttribute.rssiThreshold) ?? []
            let thresholds = stride(from: 0, to: raw.count - 3, by: 4).map { i in
                raw[i..<(i + 4)].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
            }
            return (
                r.attributes.u32(NL80211.Attribute.ifindex), thresholds, cqm?.u32(NL80211.CQMAttribute.rssiHysteresis)
            )
        }
    }

    @Test func initialReadProgramsTheBarBoundariesOnce() throws {
        let k = labKernel()
        let c = core(k)
        let first = try #require(c.refresh(cause: .initial, now: 1))
        #expect(first.cause == .initial)
        #expect(first.links.last?.bars == 4)
        let cqm = cqmRequests(k)
        #expect(cqm.count == 1)
        #expect(cqm.first?.ifindex == 3)
        #expect(cqm.first?.thresholds == [-88, -77, -66, -55])
        #expect(cqm.first?.hysteresis == 2)
        // Nothing changed: a poll publishes nothing and CQM is not programmed again.
        #expect(c.refresh(cause: .poll, now: 2) == nil)
        #expect(cqmRequests(k).count == 1)
    }

    @Test func aWiphyWithoutThresholdListsGetsOneThresholdNearTheSignal() throws {
        let k = labKernel()
        k.answers[NL80211.Command.setCQM] = [.error(-95), .ack]  // EOPNOTSUPP for the list
        let c = core(k)
        _ = c.refresh(cause: .initial, now: 1)
        let cqm = cqmRequests(k)
        #expect(cqm.map(\.thresholds) == [[-88, -77, -66, -55], [-55]])
        #expect(c.singleThresholdOnly == [3])
        #expect(c.cqmError == nil)
    }

    @Test func disconnectEventPublishesTheNewState() throws {
        let k = labKernel()
        let c = core(k)
        _ = c.refresh(cause: .initial, now: 1)
        k.answers[NL80211.Command.getScan] = [.dump([])]
        let disconnect = try #require(Captures.named("wl-nl80211.nlmsgs", "disconnect-event").decoded)
        var event = NL80211.Event(disconnect)
        if case .disconnected(_, let reason, let byAP) = event {
            event = .disconnected(ifindex: 3, reason: reason, byAP: byAP)
        }
        let update = try #require(c.refresh(cause: .event, events: [event], now: 2))
        #expect(update.cause == .event)
        #expect(update.links.last?.associated == false)
        #expect(update.links.last?.bars == 0)
        #expect(update.events == [event])
    }

    @Test func eventsAboutOtherInterfacesWithoutChangePublishNothing() throws {
        let k = labKernel()
        let c = core(k)
        _ = c.refresh(cause: .initial, now: 1)
        #expect(c.refresh(cause: .event, events: [.stationAdded(ifindex: 42, mac: nil)], now: 2) == nil)
    }

    @Test func aVanishedInterfaceIsReportedGone() throws {
        let k = labKernel()
        let c = core(k, options: .init())
        _ = c.refresh(cause: .initial, now: 1)
        let onlyAP = Captures.load("lab-hwsim.nlmsgs").filter { $0.name == "get-interface-dump-part-3" }.map(\.message)
        k.answers[NL80211.Command.getInterface] = [.dump(onlyAP)]
        let update = try #require(c.refresh(cause: .event, events: [.interfaceRemoved(ifindex: 3)], now: 2))
        #expect(update.gone == ["wlan1"])
        #expect(update.links.map(\.interface) == ["wlan0"])
    }

    @Test func overrunAlwaysPublishesAFullRead() throws {
        let k = labKernel()
        let c = core(k)
        _ = c.refresh(cause: .initial, now: 1)
        let update = try #require(c.refresh(cause: .overrun, now: 2))
        #expect(update.cause == .overrun)
        #expect(update.links.count == 2)
    }

    @Test func noNl80211MeansUnavailableAndNoCQM() throws {
        let k = ReplayKernel()
        k.familyAbsent = true
        let c = core(k)
        let update = try #require(c.refresh(cause: .initial, now: 1))
        #expect(update.health.available == false)
        #expect(update.health.reason?.contains("no nl80211") == true)
        #expect(k.requests.isEmpty)
    }
}

@Suite struct EventSocketReplay {
    @Test func eventsOverrunAndQuiet() throws {
        let k = ReplayKernel()
        let socket = try NL80211EventSocket(adopting: k.socket())
        let disconnect = Captures.named("shill.nlmsgs", "disconnect-event").message
        let cqm = Captures.named("wl-nl80211.nlmsgs", "notify-cqm-rssi-event").message
        k.events = [disconnect + cqm, nil, disconnect]
        guard case .messages(let first) = socket.receive() else {
            Issue.record("expected messages")
            return
        }
        #expect(first.map(NL80211.Event.init).map(\.changesState) == [true, true])
        guard case .overrun = socket.receive() else {
            Issue.record("expected an overrun")
            return
        }
        #expect(socket.bufferSize == 512 * 1024)  // grown after the overrun
        guard case .messages(let after) = socket.receive() else {
            Issue.record("expected messages after the overrun")
            return
        }
        #expect(after.count == 1)
        guard case .empty = socket.receive() else {
            Issue.record("expected nothing more")
            return
        }
    }

    @Test func theMonitorStopsAndFinishesItsStream() async throws {
        // On this machine (no cfg80211) the monitor reports unavailable, then ends when stopped.
        let monitor = WiFiMonitor(options: .init(pollInterval: .seconds(60), fallbackPollInterval: .seconds(60)))
        var iterator = monitor.updates.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.cause == .initial)
        #expect(monitor.current().0 == first.health)
        monitor.stop()
        let start = ContinuousClock.now
        while await iterator.next() != nil {}
        // Ended by stop(), not by the next 60 s poll; the bound leaves room for a loaded machine (4 s seen with two
        // CPU hogs beside the whole suite).
        #expect(ContinuousClock.now - start < .seconds(20))
    }
}
