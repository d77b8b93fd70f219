// The reader through the real libnl, with the kernel's side replayed from captures (Replay.swift).
import CNetlinkShims
import Foundation
import ReachCore
import ReachTestSupport
import Testing

@testable import ReachWiFi

/// The lab's captures as a kernel: wlan1 a station associated to lab-ap, wlan0 the AP with one client.
func labKernel() -> ReplayKernel {
    let k = ReplayKernel()
    let lab = Captures.load("lab-hwsim.nlmsgs")
    let interfaces = lab.filter { $0.name.hasPrefix("get-interface") }.map(\.message)
    let scan = Captures.named("lab-hwsim.nlmsgs", "scan-dump-part-1").message
    let station = Captures.named("lab-hwsim.nlmsgs", "get-station-reply-1").message
    k.answers[NL80211.Command.getInterface] = Array(repeating: .dump(interfaces), count: 8)
    k.answers[NL80211.Command.getScan] = Array(repeating: .dump([scan]), count: 8)
    // GET_STATION: wlan0's client dump, then wlan1's AP entry (the reader asks in ifindex order: wlan0 is 2).
    k.answers[NL80211.Command.getStation] = Array(repeating: [.dump([station]), .reply(station)], count: 4).flatMap {
        $0
    }
    k.answers[NL80211.Command.setCQM] = Array(repeating: .ack, count: 8)
    let survey = lab.filter { $0.name.hasPrefix("survey") }.map(\.message)
    k.answers[NL80211.Command.getSurvey] = Array(repeating: .dump(survey), count: 8)
    return k
}

func open(_ kernel: ReplayKernel, timeout: Int32 = 300) throws(NL80211Error) -> NL80211Socket {
    try NL80211Socket(adopting: kernel.socket(), timeoutMilliseconds: timeout)
}

@Suite struct ReplayThroughLibnl {
    @Test func familyResolvesFromTheCapturedControllerReply() throws {
        let socket = try open(ReplayKernel())
        #expect(socket.family == 28)
    }

    @Test func familyAbsentIsUnavailableNotAnError() {
        let k = ReplayKernel()
        k.familyAbsent = true
        #expect(throws: NL80211Error.familyAbsent) { try open(k) }
    }

    /// This machine's kernel has no cfg80211: the real socket says so and the source is unavailable, with why.
    @Test func realKernelWithoutCfg80211() {
        let (health, links) = WiFiReader.readNow(interface: nil)
        if FileManager.default.fileExists(atPath: "/sys/module/cfg80211") {
            #expect(health.available)
        } else {
            #expect(health.available == false)
            #expect(health.reason?.contains("no nl80211") == true)
            #expect(links.isEmpty)
        }
    }

    @Test func labStationAndAccessPointFromReplayedReplies() throws {
        let k = labKernel()
        let (health, links) = WiFiReader.read(using: try open(k), interface: nil)
        #expect(health.available)
        #expect(links.map(\.interface) == ["wlan0", "wlan1"])
        let ap = try #require(links.first)
        #expect(ap.mode == .ap)
        #expect(ap.clients == 1)
        #expect(ap.ssid == "lab-ap")
        #expect(ap.channel == 6)
        let sta = try #require(links.last)
        #expect(sta.mode == .station)
        #expect(sta.associated)
        #expect(sta.ssid == "lab-ap")
        #expect(sta.bssid == "02:00:00:00:00:00")
        #expect(sta.frequencyMHz == 2437)
        #expect(sta.channel == 6)
        #expect(sta.band == .ghz2_4)
        #expect(sta.signalDBm == -30)
        #expect(sta.bars == 4)
        let iw = Captures.iwView("lab-hwsim.nlmsgs")
        #expect(sta.txBitrateMbps == Captures.number(iw["tx bitrate"]))
        #expect(sta.connectedSeconds.map(Double.init) == Captures.number(iw["connected time"]))
        #expect(sta.noiseDBm == -92)
        #expect(ap.noiseDBm == -92)
        #expect(sta.error == nil)
        // What went out: GET_STATION for wlan1 named the BSSID found in the scan dump.
        let get = try #require(k.requests.last { $0.command == NL80211.Command.getStation && $0.flags & 0x300 == 0 })
        #expect(get.attributes.bytes(NL80211.Attribute.mac) == [2, 0, 0, 0, 0, 0])
        #expect(get.attributes.u32(NL80211.Attribute.ifindex) == 3)
    }

    @Test func onlyTheNamedInterface() throws {
        let k = labKernel()
        let (_, links) = WiFiReader.read(using: try open(k), interface: "wlan1")
        #expect(links.map(\.interface) == ["wlan1"])
        let (_, missing) = WiFiReader.read(using: try open(labKernel()), interface: "wlan7")
        #expect(missing.count == 1)
        #expect(missing.first?.error == "no nl80211 interface named wlan7")
    }

    @Test func pyroute2HardwareScanWithoutAssociation() throws {
        let k = ReplayKernel()
        k.answer(
            NL80211.Command.getInterface, .dump([Captures.named("pyroute2.nlmsgs", "get-interface-reply").message]))
        k.answer(
            NL80211.Command.getScan,
            .dump(Captures.load("pyroute2.nlmsgs").filter { $0.name.hasPrefix("scan") }.map(\.message)))
        let (_, links) = WiFiReader.read(using: try open(k), interface: nil)
        let wlo1 = try #require(links.first)
        #expect(wlo1.interface == "wlo1")
        #expect(wlo1.associated == false)  // no BSS in the dump has BSS_STATUS
        #expect(wlo1.bars == 0)
        #expect(k.requests.contains { $0.command == NL80211.Command.getStation } == false)
    }

    @Test func aDumpThatNeverFinishesIsABoundedError() throws {
        let k = ReplayKernel()
        k.answer(
            NL80211.Command.getInterface, .unfinishedDump(Captures.load("lab-hwsim.nlmsgs").prefix(2).map(\.message)))
        let start = ContinuousClock.now
        let (health, links) = WiFiReader.read(using: try open(k, timeout: 200), interface: nil)
        #expect(ContinuousClock.now - start < .seconds(2 * TestSupport.timingSlack))
        #expect(health.available == false)
        #expect(health.reason?.contains("NL80211_CMD_GET_INTERFACE did not complete") == true)
        #expect(links.isEmpty)
    }

    @Test func anEndlessDumpIsCutAtTheMessageBound() throws {
        let k = ReplayKernel()
        k.answer(
            NL80211.Command.getInterface, .endlessDump(Captures.named("pyroute2.nlmsgs", "get-interface-reply").message)
        )
        let socket = try open(k, timeout: 5000)
        socket.maxMessages = 500
        do {
            _ = try socket.interfaces()
            Issue.record("an endless dump returned")
        } catch {
            #expect(
                error
                    == .bounded(
                        call: "NL80211_CMD_GET_INTERFACE", detail: "no end of reply after 500 messages within 5000 ms"))
        }
    }

    @Test func anInterruptedDumpIsDumpedAgain() throws {
        let k = ReplayKernel()
        let reply = Captures.named("pyroute2.nlmsgs", "get-interface-reply").message
        k.answer(NL80211.Command.getInterface, .interruptedDump([reply]), .dump([reply]))
        let interfaces = try open(k).interfaces()
        #expect(interfaces.map(\.name) == ["wlo1"])
        #expect(k.requests.filter { $0.command == NL80211.Command.getInterface }.count == 2)
    }

    @Test func stationEntryGoneMidReadLeavesTheLinkAssociatedWithoutError() throws {
        let k = labKernel()
        k.answers[NL80211.Command.getStation] = [.dump([]), .error(-2)]  // ENOENT for wlan1's AP entry
        let (_, links) = WiFiReader.read(using: try open(k), interface: nil)
        let sta = try #require(links.last)
        #expect(sta.associated)
        #expect(sta.signalDBm == -30)  // the BSS's own signal
        #expect(sta.error == nil)
    }

    @Test func interfaceVanishedMidReadIsLeftOut() throws {
        let k = labKernel()
        k.answers[NL80211.Command.getScan] = [.error(-19)]  // ENODEV: wlan1 went away after the interface dump
        let (health, links) = WiFiReader.read(using: try open(k), interface: nil)
        #expect(health.available)
        #expect(links.map(\.interface) == ["wlan0"])
    }

    @Test func otherKernelErrorsAreReportedOnTheLink() throws {
        let k = labKernel()
        k.answers[NL80211.Command.getScan] = [.error(-16)]  // EBUSY
        let (_, links) = WiFiReader.read(using: try open(k), interface: nil)
        let sta = try #require(links.last)
        #expect(sta.interface == "wlan1")
        #expect(sta.error?.contains("NL80211_CMD_GET_SCAN failed") == true)
    }

    @Test func malformedMessagesInsideADumpAreSkipped() throws {
        let k = ReplayKernel()
        var truncated = Captures.named("pyroute2.nlmsgs", "get-interface-reply").message
        truncated[16 + 4] = 0xF0  // the first attribute now claims 240 bytes
        let garbage = Captures.header(length: 18) + [7, 1]  // shorter than a genl header
        let good = Captures.named("pyroute2.nlmsgs", "get-interface-reply").message
        k.answer(NL80211.Command.getInterface, .dump([truncated, garbage, good]))
        k.answer(NL80211.Command.getScan, .dump([]))
        let (health, links) = WiFiReader.read(using: try open(k), interface: nil)
        #expect(health.available)
        #expect(links.map(\.interface) == ["wlo1"])
    }
}
