import Testing
@testable import ReachCore

/// Band tables of 3GPP TS 36.101 (E-UTRA, Table 5.7.3-1), TS 38.101-1/-2 (NR, Table 5.2-1 with the raster of TS 38.104
/// §5.4.2.1), TS 25.101 (UTRA, Tables 5.2/5.2A) and TS 45.005 §2 (GSM); QmiNasActiveBand from libqmi qmi-enums-nas.h.
@Suite struct BandPlanTests {
    static let systems: [CellRAT] = [.gsm, .umts, .lte, .nr]

    /// Every band edge: the first and last channel of each range belong to the band, the channel just outside does
    /// not (it may belong to a neighbouring band, never to this one).
    @Test(arguments: systems)
    func everyBandEdge(rat: CellRAT) {
        let table = BandPlan.table(rat)
        #expect(!table.isEmpty)
        for entry in table {
            for range in entry.ranges {
                let inside = [range.lowerBound, range.upperBound]
                let outside = [range.lowerBound - 1, range.upperBound + 1].filter { ch in
                    !entry.ranges.contains { $0.contains(ch) } && !entry.extra.contains(ch)
                }
                for ch in inside {
                    #expect(BandPlan.candidates(rat, channel: ch).contains(entry.band), "\(entry.band) at \(ch)")
                }
                for ch in outside {
                    #expect(!BandPlan.candidates(rat, channel: ch).contains(entry.band), "\(entry.band) at \(ch)")
                }
            }
            for ch in entry.extra {
                #expect(BandPlan.candidates(rat, channel: ch).contains(entry.band), "\(entry.band) additional \(ch)")
            }
        }
    }

    /// E-UTRA channel numbers are unique per band (TS 36.101 §5.7.3), so every edge names exactly its own band.
    @Test func eutraChannelsNameOneBand() {
        for entry in BandPlan.eutra {
            let r = entry.ranges[0]
            #expect(BandPlan.candidates(.lte, channel: r.lowerBound) == [entry.band])
            #expect(BandPlan.candidates(.lte, channel: r.upperBound) == [entry.band])
            #expect(BandPlan.band(.lte, channel: r.lowerBound) == entry.band)
        }
        // Between band 54 and band 65 there is no band.
        #expect(BandPlan.band(.lte, channel: 60305) == nil)
        #expect(BandPlan.band(.lte, channel: 65535) == nil)
        #expect(BandPlan.band(.lte, channel: 70706) == nil)
    }

    /// Table 5.7.3-1 rows as published (F_DL_low, N_Offs-DL, range of N_DL) and the carrier frequency of §5.7.3.
    @Test(arguments: [
        (1, 0, 599, 2110.0), (3, 1200, 1949, 1805), (7, 2750, 3449, 2620), (8, 3450, 3799, 925), (20, 6150, 6449, 791),
        (28, 9210, 9659, 758), (32, 9920, 10359, 1452), (38, 37750, 38249, 2570), (40, 38650, 39649, 2300),
        (41, 39650, 41589, 2496), (42, 41590, 43589, 3400), (43, 43590, 45589, 3600), (46, 46790, 54539, 5150),
        (66, 66436, 67335, 2110), (71, 68586, 68935, 617), (88, 70596, 70645, 422),
    ] as [(Int, Int, Int, Double)])
    func eutraRows(band: Int, first: Int, last: Int, fLow: Double) {
        let entry = BandPlan.eutra.first { $0.band.number == band }
        #expect(entry?.ranges == [first...last])
        #expect(BandPlan.eutraFrequencyMHz(earfcn: first) == fLow)
    }

    /// Channels real modems report: qmicli prints "E-UTRA band 42: TD 3500" for the libqmi capture's 43390; the libmbim
    /// Base Stations capture's 6400 is band 20 (806 MHz); 1300 (1815 MHz) is band 3.
    @Test(arguments: [(43390, 42, 3580.0), (6400, 20, 816), (1300, 3, 1815), (3050, 7, 2650), (300, 1, 2140)] as [(Int, Int, Double)])
    func eutraChannels(earfcn: Int, band: Int, mhz: Double) {
        #expect(BandPlan.band(.lte, channel: earfcn) == RadioBand(.lte, band))
        #expect(BandPlan.eutraFrequencyMHz(earfcn: earfcn) == mhz)
    }

    /// NR-ARFCN ranges of TS 38.101-1/-2 Table 5.4.2.3-1 (raster step 1) that follow from the band edges and the
    /// global raster: the table above must give the same numbers.
    @Test(arguments: [
        (1, 422000, 434000), (3, 361000, 376000), (7, 524000, 538000), (20, 158200, 164200), (28, 151600, 160600),
        (48, 636667, 646666), (77, 620000, 680000), (78, 620000, 653333), (79, 693334, 733333),
        (257, 2054166, 2104165), (258, 2016667, 2070832), (261, 2070833, 2084999),
    ] as [(Int, Int, Int)])
    func nrRows(band: Int, first: Int, last: Int) {
        let entry = BandPlan.nr.first { $0.band.number == band }
        #expect(entry?.ranges == [first...last])
    }

    /// The global raster (TS 38.104 Table 5.4.2.1-1) at its three steps and their joins.
    @Test(arguments: [
        (0, 0.0), (422000, 2110), (599999, 2999.995), (600000, 3000), (620000, 3300), (633334, 3500.01),
        (2016667, 24250.08), (2054166, 26500.02), (3279165, 99999.96),
    ] as [(Int, Double)])
    func nrRaster(arfcn: Int, mhz: Double) throws {
        let f = try #require(BandPlan.nrFrequencyMHz(arfcn: arfcn))
        #expect(abs(f - mhz) < 0.0001)
        #expect(BandPlan.nrFrequencyMHz(arfcn: 3_279_166) == nil)
        #expect(BandPlan.nrFrequencyMHz(arfcn: -1) == nil)
    }

    /// NR bands share the raster: the band is chosen by where the network is (MCC), then the narrowest band.
    @Test(arguments: [
        // 3.5 GHz: n78 inside n77; n77 is the band of the Americas and Japan.
        (633334, "262", "n78"), (633334, "310", "n77"), (633334, nil, "n78"), (633334, "440", "n77"),
        // 3.9 GHz exists only in n77.
        (660000, "262", "n77"),
        // 2.1 GHz: n1 inside n65/n66; n66 is the Americas' AWS band.
        (428000, "234", "n1"), (428000, "310", "n66"),
        // 2.65 GHz: n7 (FDD) or n41/n90 (TDD, the US and China).
        (530000, "262", "n7"), (530000, "310", "n41"), (530000, "460", "n41"),
        // 700 MHz: n28 (APT) and n14 (FirstNet) overlap at 758-768 MHz.
        (152000, "505", "n28"), (152000, "310", "n14"),
        // CBRS inside n77/n78.
        (640000, "311", "n48"),
    ] as [(Int, String?, String)])
    func nrChoice(arfcn: Int, mcc: String?, band: String) {
        #expect(BandPlan.band(.nr, channel: arfcn, region: BandRegion(mcc: mcc))?.name == band)
    }

    /// UTRA: band VI (Japan 800) lies inside band V; GSM: DCS 1800 and PCS 1900 share ARFCN 512-810.
    @Test(arguments: [
        (CellRAT.umts, 10700, "262", "B1"), (.umts, 4400, "262", "B5"), (.umts, 4400, "310", "B5"),
        (.umts, 4400, "440", "B6"), (.umts, 1037, "440", "B6"), (.umts, 1037, nil, "B5"), (.umts, 9800, "310", "B2"),
        (.umts, 612, "310", "B2"), (.umts, 3000, "222", "B8"), (.umts, 1887, "310", "B4"),
        (.gsm, 600, "262", "GSM1800"), (.gsm, 600, "310", "GSM1900"), (.gsm, 850, "310", "GSM1800"),
        (.gsm, 989, "214", "GSM900"), (.gsm, 62, "214", "GSM900"), (.gsm, 190, "310", "GSM850"),
    ] as [(CellRAT, Int, String?, String)])
    func sharedChannels(rat: CellRAT, channel: Int, mcc: String?, band: String) {
        #expect(BandPlan.band(rat, channel: channel, region: BandRegion(mcc: mcc))?.name == band)
    }

    @Test func noBandOutsideTheTables() {
        #expect(BandPlan.band(.gsm, channel: 126) == nil)
        #expect(BandPlan.band(.umts, channel: 0) == nil)
        #expect(BandPlan.band(.nr, channel: 3_279_166) == nil)
        #expect(BandPlan.band(.tdscdma, channel: 10054) == nil)
    }

    /// QmiNasActiveBand (libqmi qmi-enums-nas.h) as qmicli names the values.
    @Test(arguments: [
        (122, "B3"), (126, "B7"), (145, "B20"), (149, "B41"), (158, "B28"), (161, "B66"), (168, "B71"), (269, "n78"),
        (268, "n77"), (257, "n28"), (287, "n65"), (301, "n94"), (80, "B1"), (84, "B5"), (91, "B19"), (45, "GSM900"),
        (44, "GSM900"), (47, "GSM1800"), (48, "GSM1900"), (200, "TD-A"),
    ] as [(Int, String)])
    func qmiActiveBand(value: Int, name: String) {
        #expect(BandPlan.band(qmiActiveBand: value)?.name == name)
    }

    @Test func qmiActiveBandUnknowns() {
        #expect(BandPlan.band(qmiActiveBand: 0) == nil)  // CDMA band class 0
        #expect(BandPlan.band(qmiActiveBand: 155) == nil)  // E-UTRAN "band 125": no 3GPP band
        #expect(BandPlan.band(qmiActiveBand: 999) == nil)
        #expect(BandPlan.qmiActiveBand(RadioBand(.lte, 3)) == 122)
        #expect(BandPlan.qmiActiveBand(RadioBand(.nr, 78)) == 269)
        #expect(BandPlan.qmiActiveBand(RadioBand(.gsm, 900)) == 45)
        #expect(BandPlan.qmiActiveBand(RadioBand(.lte, 88)) == nil)
    }

    @Test(arguments: [
        (RadioBand(.lte, 3), "B3"), (RadioBand(.nr, 78), "n78"), (RadioBand(.umts, 1), "B1"),
        (RadioBand(.gsm, 900), "GSM900"), (RadioBand(.tdscdma, 6), "TD-F"),
    ] as [(RadioBand, String)])
    func names(band: RadioBand, name: String) {
        #expect(band.name == name)
        #expect(RadioBand(name: name, rat: band.rat) == band)
    }

    @Test func badNames() {
        #expect(RadioBand(name: "n78", rat: .lte) == nil)
        #expect(RadioBand(name: "B", rat: .lte) == nil)
        #expect(RadioBand(name: "B-3", rat: .lte) == nil)
        #expect(RadioBand(name: "TD-G", rat: .tdscdma) == nil)
    }

    @Test(arguments: [("262", BandRegion.other), ("310", .americas), ("724", .americas), ("440", .japan), ("460", .china)] as [(String, BandRegion)])
    func regions(mcc: String, region: BandRegion) {
        #expect(BandRegion(mcc: mcc) == region)
    }
}
