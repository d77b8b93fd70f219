import Testing
@testable import ReachCore

@Suite struct IPAddressTests {
    /// RFC 5952 §4 canonical text.
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("2001:db8::1", "2001:db8::1"), ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("::", "::"), ("::1", "::1"), ("2001:DB8::A", "2001:db8::a"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  // first of two equal runs (§4.2.3)
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  // one zero group is not compressed (§4.2.2)
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"), ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
        ("fe80::1:2", "fe80::1:2"),
    ] as [(String, String)])
    func canonicalText(input: String, output: String) {
        #expect(IPAddress(input)?.description == output)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "a.b.c.d", "1:2:3:4:5:6:7:8:9", ":::",
        "1::2::3", "fe80::1%eth0", "12345::", "::g", "1:2:3:4:5:6:7::8:9", "192.0.2.1 ",
    ])
    func rejects(input: String) {
        #expect(IPAddress(input) == nil)
    }

    @Test func linkLocal() {
        #expect(IPAddress("169.254.7.1")!.isLinkLocal)
        #expect(IPAddress("fe80::1")!.isLinkLocal)
        #expect(!IPAddress("192.0.2.1")!.isLinkLocal)
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        (Int64(0), Int32(0), "1970-01-01T00:00:00.000Z"),
        (951_782_400, 0, "2000-02-29T00:00:00.000Z"),  // leap day of a leap century
        (1_700_000_000, 123_999_999, "2023-11-14T22:13:20.123Z"),
        (-1, 0, "1969-12-31T23:59:59.000Z"),
        (4_102_444_800, 0, "2100-01-01T00:00:00.000Z"),
    ] as [(Int64, Int32, String)])
    func rfc3339(seconds: Int64, nanos: Int32, text: String) {
        #expect(Timestamp(seconds: seconds, nanoseconds: nanos).rfc3339 == text)
    }
}

@Suite struct WiFiChannelTests {
    /// IEEE 802.11 channel numbering (the kernel's ieee80211_freq_khz_to_channel).
    @Test(arguments: [
        (2412, 1, WiFiBand.ghz2_4), (2437, 6, .ghz2_4), (2472, 13, .ghz2_4), (2484, 14, .ghz2_4),
        (5180, 36, .ghz5), (5825, 165, .ghz5), (4920, 184, .ghz5),
        (5955, 1, .ghz6), (5935, 2, .ghz6), (6415, 93, .ghz6), (7115, 233, .ghz6),
        (58320, 1, .ghz60), (60480, 2, .ghz60),
    ] as [(Int, Int, WiFiBand)])
    func channelAndBand(mhz: Int, channel: Int, band: WiFiBand) {
        #expect(WiFiChannel.channel(frequencyMHz: mhz) == channel)
        #expect(WiFiChannel.band(frequencyMHz: mhz) == band)
    }

    @Test func notWiFi() {
        #expect(WiFiChannel.channel(frequencyMHz: 2400) == nil)
        #expect(WiFiChannel.band(frequencyMHz: 900) == nil)
        #expect(WiFiChannel.channel(frequencyMHz: 2413) == nil)
    }

    @Test func barsNeedAnAssociation() {
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.signalDBm = -30
        #expect(w.bars == 4)
        w.signalAvgDBm = -70  // the kernel's average is steadier and wins
        #expect(w.bars == 2)
        w.associated = false
        #expect(w.bars == 0)
    }
}

@Suite struct InterfaceClassifierTests {
    typealias C = InterfaceClassifier

    @Test(arguments: [
        ("NIC", LinkFacts(name: "eth0", arpType: C.arphrdEther, driver: "e1000e"), InterfaceKind.ethernet),
        ("OpenWrt bridge", LinkFacts(name: "br-lan", arpType: C.arphrdEther, devType: "bridge", linkKind: "bridge"), .ethernet),
        ("WiFi station", LinkFacts(name: "wlan0", arpType: C.arphrdEther, driver: "mac80211_hwsim", devType: "wlan", hasPhy80211: true), .wifi),
        ("qmi_wwan raw-ip", LinkFacts(name: "wwan0", arpType: C.arphrdRawIP, driver: "qmi_wwan"), .wwan),
        ("qmi_wwan 802.3 mode", LinkFacts(name: "usb0", arpType: C.arphrdEther, driver: "qmi_wwan", devType: "wwan"), .wwan),
        ("cdc_mbim", LinkFacts(name: "wwp0s20u4i6", arpType: C.arphrdNone, driver: "cdc_mbim"), .wwan),
        ("PCIe MHI", LinkFacts(name: "mhi_hwip0", arpType: C.arphrdRawIP, driver: "mhi_net"), .wwan),
        ("wwan framework link", LinkFacts(name: "wwan0", arpType: C.arphrdNone, wwanClassParent: true, linkKind: "wwan"), .wwan),
        ("rmnet by name", LinkFacts(name: "rmnet_data0", arpType: C.arphrdRawIP), .wwan),
        ("qmi_wwan QMAP mux link by name", LinkFacts(name: "qmimux0", arpType: C.arphrdNone), .wwan),
        ("tun named wwan0", LinkFacts(name: "wwan0", arpType: C.arphrdNone, pointToPoint: true, linkKind: "tun"), .wwan),
        ("pppd", LinkFacts(name: "ppp0", arpType: C.arphrdPPP, pointToPoint: true), .ppp),
        ("point-to-point named ppp", LinkFacts(name: "ppp1", arpType: C.arphrdNone, pointToPoint: true, linkKind: "tun"), .ppp),
        ("VPN tun", LinkFacts(name: "tun0", arpType: C.arphrdNone, pointToPoint: true, linkKind: "tun"), .other),
        ("WireGuard", LinkFacts(name: "wg0", arpType: C.arphrdNone, pointToPoint: true, linkKind: "wireguard"), .other),
        ("loopback", LinkFacts(name: "lo", arpType: C.arphrdLoopback, loopback: true), .loopback),
    ] as [(String, LinkFacts, InterfaceKind)])
    func classify(_ name: String, facts: LinkFacts, kind: InterfaceKind) {
        #expect(C.classify(facts) == kind, "\(name)")
    }

    @Test func configurationOverridesWin() {
        let ppp = LinkFacts(name: "ppp0", arpType: C.arphrdPPP, pointToPoint: true)
        #expect(C.classify(ppp, overrides: ["ppp0": .wwan]) == .wwan)
        #expect(C.classify(ppp, overrides: ["ppp1": .wwan]) == .ppp)
    }
}
