// The pure nl80211 layer on captured kernel messages (hw/captures/nl80211) and on malformed variants of them.
import ReachCore
import Testing

@testable import ReachWiFi

@Suite struct InterfaceDecoding {
    @Test func pyroute2RealHardwareInterface() throws {
        let m = try #require(Captures.named("pyroute2.nlmsgs", "get-interface-reply").decoded)
        #expect(m.command == NL80211.Command.newInterface)
        let i = try #require(NL80211.Interface(m))
        #expect(i.name == "wlo1")
        #expect(i.ifindex == 3)
        #expect(i.type == .station)
        #expect(i.mode == .station)
        #expect(i.wiphy == 0)
        #expect(i.mac == "a4:4e:31:43:1c:7d")
    }

    @Test func labInterfaceDump() throws {
        let parts = Captures.load("lab-hwsim.nlmsgs").filter { $0.name.hasPrefix("get-interface") }
        #expect(parts.count == 3)
        let interfaces = parts.compactMap { $0.decoded.flatMap(NL80211.Interface.init) }
        // The first part is hwsim's P2P device: a wdev without a netdev (no ifindex, no name), so not a link.
        #expect(interfaces.map(\.name) == ["wlan1", "wlan0"])
        let wlan1 = try #require(interfaces.first)
        #expect(wlan1.type == .station)
        // 6.1 does not put a station's SSID into NEW_INTERFACE; the reader takes it from the BSS's IEs then.
        #expect(wlan1.ssid == nil)
        #expect(wlan1.frequencyMHz == 2437)
        #expect(wlan1.channelWidthMHz == 20)
        let wlan0 = try #require(interfaces.last)
        #expect(wlan0.type == .ap)
        #expect(wlan0.mode == .ap)
        #expect(wlan0.ssid == Array("lab-ap".utf8))
    }
}

@Suite struct ScanDecoding {
    /// pyroute2 PR #182 (real hardware, 5 GHz): BSSIDs, SSIDs and signals as pyroute2's own parse lists them.
    @Test(arguments: [
        (1, "14:22:db:00:b6:65", "Rowan's Desk", -43),
        (2, "14:22:db:00:06:a7", "", -33),
        (3, "14:22:db:00:da:05", "Hook 'em Horns", -19),
        (4, "14:22:db:00:d7:25", "Hook 'em Horns", -28),
    ])
    func pyroute2ScanParts(part: Int, bssid: String, ssid: String, signal: Int) throws {
        let m = try #require(Captures.named("pyroute2.nlmsgs", "scan-dump-part-\(part)").decoded)
        #expect(m.command == NL80211.Command.newScanResults)
        let bss = try #require(NL80211.BSS(m))
        #expect(bss.bssid == bssid)
        #expect(bss.ssid.map { String(decoding: $0, as: UTF8.self) } == ssid)
        #expect(bss.signalDBm == signal)
        #expect(bss.frequencyMHz == 5180)
        #expect(bss.ifindex == 11)
        #expect(WiFiChannel.channel(frequencyMHz: 5180) == 36)
    }

    @Test func labAssociatedBSS() throws {
        let m = try #require(Captures.named("lab-hwsim.nlmsgs", "scan-dump-part-1").decoded)
        let bss = try #require(NL80211.BSS(m))
        #expect(bss.status == .associated)
        #expect(bss.bssid == "02:00:00:00:00:00")
        #expect(bss.frequencyMHz == 2437)
        #expect(bss.signalDBm == -30)
        #expect(bss.ssid == Array("lab-ap".utf8))
    }

    @Test func pureSwiftUSBDongleScanPart() throws {
        let m = try #require(Captures.named("pureswift-wlan.nlmsgs", "scan-dump-part").decoded)
        let bss = try #require(NL80211.BSS(m))
        #expect(bss.bssid.count == 17)
        #expect(bss.frequencyMHz.map { WiFiChannel.band(frequencyMHz: $0) != nil } == true)
    }

    @Test func wlNl80211GenlOnlyScanReply() throws {
        let m = try #require(Captures.named("wl-nl80211.nlmsgs", "scan-dump-reply").decoded)
        let bss = try #require(NL80211.BSS(m))
        #expect(bss.frequencyMHz == 2412)
        #expect(bss.ssid == Array("Test-WIFI".utf8))
    }
}

@Suite struct StationDecoding {
    /// Captured in this project's lab with nlmon; the expected values are iw's own printout of the same entry,
    /// kept in the capture file's header.
    @Test func labGetStationReplyAgreesWithIw() throws {
        let iw = Captures.iwView("lab-hwsim.nlmsgs")
        #expect(iw.count > 10, "the capture header lost iw's view")
        let m = try #require(Captures.named("lab-hwsim.nlmsgs", "get-station-reply-1").decoded)
        #expect(m.command == NL80211.Command.newStation)
        let s = try #require(NL80211.Station(m))
        #expect(s.mac == "02:00:00:00:00:00")
        #expect(s.ifindex == 3)
        #expect(s.signalDBm.map(Double.init) == Captures.number(iw["signal"]))
        #expect(s.signalAverageDBm.map(Double.init) == Captures.number(iw["signal avg"]))
        #expect(s.beaconSignalAverageDBm.map(Double.init) == Captures.number(iw["beacon signal avg"]))
        #expect(s.signalDBm == -30)
        #expect(s.txBitrateMbps == Captures.number(iw["tx bitrate"]))
        #expect(s.connectedSeconds.map(Double.init) == Captures.number(iw["connected time"]))
        #expect(s.inactiveMilliseconds.map(Double.init) == Captures.number(iw["inactive time"]))
        #expect(s.rxBytes.map(Double.init) == Captures.number(iw["rx bytes"]))
    }

    @Test func labSurveyNoise() throws {
        let parts = Captures.load("lab-hwsim.nlmsgs").filter { $0.name.hasPrefix("survey") }
        let surveys = parts.compactMap { $0.decoded.flatMap(NL80211.Survey.init) }
        #expect(surveys.count == parts.count)
        #expect(surveys.first?.frequencyMHz == 2437)
        #expect(surveys.first?.noiseDBm == -92)  // iw printed "noise: -92 dBm"
        // hwsim marks no channel IN_USE, so the link's frequency picks the entry.
        #expect(WiFiLinkAssembly.noise(in: surveys, frequencyMHz: 2437) == -92)
        #expect(WiFiLinkAssembly.noise(in: surveys, frequencyMHz: 5180) == nil)
    }

    @Test func bitratePrefersBitrate32() {
        var w = NetlinkAttributeWriter()
        w.put(NL80211.RateInfoAttribute.bitrate, integer: UInt16(65))
        w.put(NL80211.RateInfoAttribute.bitrate32, integer: UInt32(8667))  // 866.7 Mbit/s (VHT80 2SS)
        #expect(NL80211.Station.bitrate(NetlinkAttributes(w.bytes)) == 866.7)
        var legacy = NetlinkAttributeWriter()
        legacy.put(NL80211.RateInfoAttribute.bitrate, integer: UInt16(540))
        #expect(NL80211.Station.bitrate(NetlinkAttributes(legacy.bytes)) == 54.0)
        var unknown = NetlinkAttributeWriter()
        unknown.put(NL80211.RateInfoAttribute.bitrate32, integer: UInt32(0))
        #expect(NL80211.Station.bitrate(NetlinkAttributes(unknown.bytes)) == nil)
    }
}

@Suite struct EventDecoding {
    @Test func shillRealHardwareEvents() throws {
        func event(_ name: String) throws -> NL80211.Event {
            NL80211.Event(try #require(Captures.named("shill.nlmsgs", name).decoded))
        }
        #expect(try event("new-station-event") == .stationAdded(ifindex: 4, mac: "c0:3f:0e:77:e8:7f"))
        #expect(try event("connect-event") == .connected(ifindex: 4, bssid: "c0:3f:0e:77:e8:7f", status: 0))
        #expect(try event("disconnect-event") == .disconnected(ifindex: 4, reason: 2, byAP: true))
        #expect(try event("notify-cqm-event") == .packetLoss(ifindex: 4, packets: 50))
        #expect(try event("trigger-scan-event") == .ignored(command: NL80211.Command.triggerScan))
        #expect(try event("new-scan-results-event") == .ignored(command: NL80211.Command.newScanResults))
        #expect(try event("authenticate-event").changesState == false)
    }

    @Test func hwsimCapturedEvents() throws {
        func event(_ name: String) throws -> NL80211.Event {
            NL80211.Event(try #require(Captures.named("wl-nl80211.nlmsgs", name).decoded))
        }
        guard case .connected(_, let bssid, let status) = try event("connect-event") else {
            Issue.record("connect-event is not a connect")
            return
        }
        #expect(bssid == "02:00:00:00:01:00")  // their AP ran on hwsim's second radio
        #expect(status == 0)
        guard case .disconnected = try event("disconnect-event") else {
            Issue.record("disconnect-event is not a disconnect")
            return
        }
        guard case .signalThreshold(_, let rising, let rssi) = try event("notify-cqm-rssi-event") else {
            Issue.record("notify-cqm-rssi-event is not a threshold event")
            return
        }
        #expect(rising == false)
        #expect(rssi != nil)
        #expect(try event("unknown-event").changesState == false)
    }

    @Test func setCQMRequestAsCapturedMatchesWhatWeSend() throws {
        // wl-nl80211's captured SET_CQM request: the same layout NL80211Socket.setSignalThresholds writes.
        let m = try #require(Captures.named("wl-nl80211.nlmsgs", "set-cqm-request").decoded)
        #expect(m.command == NL80211.Command.setCQM)
        let cqm = try #require(m.attributes.nested(NL80211.Attribute.cqm))
        #expect(cqm.s32(NL80211.CQMAttribute.rssiThreshold) != nil)
        #expect(cqm.u32(NL80211.CQMAttribute.rssiHysteresis) != nil)
    }
}

@Suite struct MalformedInput {
    @Test func attributeLongerThanItsContainerEndsTheWalk() {
        // IFINDEX ok, then an attribute claiming 200 bytes with 8 present.
        let bytes: [UInt8] = [8, 0, 3, 0, 7, 0, 0, 0, 200, 0, 4, 0, 0x77, 0x6c, 0x61, 0x6e]
        let a = NetlinkAttributes(bytes)
        #expect(a.u32(NL80211.Attribute.ifindex) == 7)
        #expect(a.contains(NL80211.Attribute.ifname) == false)
        #expect(a.malformed)
    }

    @Test func attributeShorterThanItsHeaderEndsTheWalk() {
        let a = NetlinkAttributes([2, 0, 3, 0, 8, 0, 4, 0, 0x41, 0, 0, 0])
        #expect(a.isEmpty)
        #expect(a.malformed)
    }

    @Test func truncatedHeaderAtTheEnd() {
        let a = NetlinkAttributes([8, 0, 3, 0, 9, 0, 0, 0, 8, 0])
        #expect(a.u32(NL80211.Attribute.ifindex) == 9)
        #expect(a.malformed)
    }

    @Test func unknownAttributesAreSkipped() throws {
        let m = ReplayKernel.message(NL80211.Command.newInterface) { w in
            w.put(999, [1, 2, 3])  // unknown to us
            w.put(NL80211.Attribute.ifindex, integer: UInt32(5))
            w.put(0x3FFE, [UInt8](repeating: 0xAA, count: 40))
            w.put(NL80211.Attribute.ifname, string: "wlan9")
            w.put(NL80211.Attribute.iftype, integer: UInt32(77))  // an interface type from the future
        }
        let i = try #require(NL80211.Message(netlinkMessage: m).flatMap(NL80211.Interface.init))
        #expect(i.name == "wlan9")
        #expect(i.ifindex == 5)
        #expect(i.type == nil)
        #expect(i.rawType == 77)
        #expect(i.mode == .other)
    }

    @Test func valuesOfTheWrongSizeReadAsAbsent() throws {
        let m = ReplayKernel.message(NL80211.Command.newStation) { w in
            w.put(NL80211.Attribute.ifindex, [1, 0])  // u32 with 2 bytes
            w.put(NL80211.Attribute.mac, [1, 2, 3, 4, 5, 6])
            w.nest(NL80211.Attribute.stationInfo) { info in
                info.put(NL80211.StationInfoAttribute.signal, [])  // s8 with no byte
                info.put(NL80211.StationInfoAttribute.connectedTime, [1, 2, 3])  // u32 with 3 bytes
            }
        }
        let s = try #require(NL80211.Message(netlinkMessage: m).flatMap(NL80211.Station.init))
        #expect(s.ifindex == nil)
        #expect(s.signalDBm == nil)
        #expect(s.connectedSeconds == nil)
    }

    @Test func messagesShorterThanTheirHeaders() {
        #expect(NL80211.Message(payload: [7, 1]) == nil)
        #expect(NL80211.Message(netlinkMessage: [16, 0, 0, 0]) == nil)
        // nlmsg_len claims more than the buffer holds.
        #expect(NL80211.Message(netlinkMessage: [200, 0, 0, 0] + [UInt8](repeating: 0, count: 20)) == nil)
    }

    @Test func brokenSSIDElementIsIgnored() {
        #expect(InformationElements.ssid(in: [0, 10, 0x41]) == nil)  // claims 10 bytes, has 1
        #expect(InformationElements.ssid(in: [0, 33] + [UInt8](repeating: 0x41, count: 33)) == nil)  // > 32
        #expect(InformationElements.ssid(in: [1, 1, 0x82, 0, 3, 0x61, 0x62, 0x63]) == Array("abc".utf8))
        #expect(InformationElements.ssid(in: [0, 0]) == [])  // hidden network
    }

    /// Every prefix of every captured message, and deterministic byte corruptions of each, decode without a trap.
    @Test func everyTruncationAndCorruptionOfEveryCaptureIsSurvived() {
        let files = [
            "pyroute2.nlmsgs", "shill.nlmsgs", "wl-nl80211.nlmsgs", "pureswift-wlan.nlmsgs", "lab-hwsim.nlmsgs",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        var decoded = 0
        for file in files {
            let captures = Captures.load(file)
            #expect(!captures.isEmpty, "\(file) has no messages")
            for capture in captures {
                let payload = capture.payload
                for cut in 0...payload.count {
                    decoded += exercise(Array(payload[0..<cut]))
                }
                for _ in 0..<200 {
                    var corrupt = payload
                    for _ in 0..<(1 + Int(next() % 4)) where !corrupt.isEmpty {
                        corrupt[Int(next() % UInt64(corrupt.count))] = UInt8(truncatingIfNeeded: next())
                    }
                    decoded += exercise(corrupt)
                }
            }
        }
        #expect(decoded > 1000)
    }

    private func exercise(_ payload: [UInt8]) -> Int {
        guard let m = NL80211.Message(payload: payload) else { return 0 }
        _ = NL80211.Interface(m)
        _ = NL80211.BSS(m).map { $0.ssid.map(SSIDText.render) }
        _ = NL80211.Station(m)
        _ = NL80211.Event(m)
        return 1
    }
}

@Suite struct SSIDRendering {
    @Test(arguments: [
        (Array("lab-ap".utf8), "lab-ap"),
        (Array("Rowan's Desk".utf8), "Rowan's Desk"),
        (Array("Café Wi-Fi".utf8), "Café Wi-Fi"),  // valid UTF-8 stays readable
        ([0x61, 0x00, 0x62], "a\\x00b"),  // NUL
        ([0x61, 0xFF, 0x62], "a\\xffb"),  // not UTF-8
        ([0xC3], "\\xc3"),  // a truncated UTF-8 sequence
        ([0xE2, 0x82], "\\xe2\\x82"),
        ([0x20, 0x61, 0x20], "\\x20a\\x20"),  // leading and trailing spaces made visible
        ([0x61, 0x20, 0x62], "a b"),
        (Array("a\\b".utf8), "a\\x5cb"),  // the escape character itself
        ([0x0A, 0x09], "\\x0a\\x09"),  // control characters
        ([0xC2, 0x85], "\\xc2\\x85"),  // a C1 control character in valid UTF-8
        ([], ""),
    ])
    func rendersLikeIwButKeepsUTF8(bytes: [UInt8], text: String) {
        #expect(SSIDText.render(bytes) == text)
    }

    @Test func renderedSSIDsStayValidJSON() throws {
        var link = WiFiLink(interface: "wlan0", mode: .station, associated: true)
        link.ssid = SSIDText.render([0x22, 0x5C, 0xFF, 0x00])
        let text = link.json.serialized()
        let back = try JSON.parse(text)
        #expect(back.objectValue?.first { $0.0 == "ssid" }?.1.stringValue == "\"\\x5c\\xff\\x00")
    }
}

@Suite struct ChannelsAndBars {
    @Test(arguments: [
        (2412, 1, WiFiBand.ghz2_4), (2437, 6, .ghz2_4), (2484, 14, .ghz2_4), (5180, 36, .ghz5), (5825, 165, .ghz5),
        (5955, 1, .ghz6), (6115, 33, .ghz6), (58320, 1, .ghz60),
    ])
    func frequencyToChannel(mhz: Int, channel: Int, band: WiFiBand) {
        #expect(WiFiChannel.channel(frequencyMHz: mhz) == channel)
        #expect(WiFiChannel.band(frequencyMHz: mhz) == band)
    }

    @Test func barsFollowTheBeaconAverageFirst() {
        var link = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        link.signalDBm = -50
        link.signalAvgDBm = -60
        #expect(link.bars == 3)
        link.beaconSignalAvgDBm = -80
        #expect(link.bars == 1)
        link.associated = false
        #expect(link.bars == 0)
    }

    @Test(arguments: [(-30, Int32(-55)), (-60, -55), (-62, -66), (-90, -88), (-200, -88), (0, -55)])
    func singleThresholdSitsOnTheNearestBoundary(signal: Int, threshold: Int32) {
        #expect(SignalThresholdPlan.single(signal: signal) == .single(threshold: threshold, hysteresis: 2))
    }

    @Test func thresholdListIsTheBarBoundaries() {
        #expect(SignalThresholdPlan.list() == .list(thresholds: [-88, -77, -66, -55], hysteresis: 2))
        #expect(SignalThresholdPlan.list([-55, -88]).thresholds == [-88, -55])
    }
}
