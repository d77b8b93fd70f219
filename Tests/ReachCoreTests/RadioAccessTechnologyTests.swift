import Testing
@testable import ReachCore

/// Generations follow Android's network classes (TelephonyManager NETWORK_CLASS_BITMASK_2G/3G/4G/5G,
/// AOSP TelephonyManager.java); where YYReachability differs, the test says so.
@Suite struct RadioAccessTechnologyTests {
    @Test(arguments: [
        // 2G: GSM|GPRS|EDGE|CDMA|1xRTT (NETWORK_CLASS_BITMASK_2G = 32843)
        (RadioAccessTechnology.gsm, Generation.g2), (.gprs, .g2), (.edge, .g2),
        (.cdma1x, .g2),  // YYReachability: 3G ("2.5G" in its comment); Android: 2G
        // 3G: UMTS|EVDO_0|EVDO_A|HSDPA|HSUPA|HSPA|EVDO_B|EHRPD|HSPAP|TD_SCDMA (= 93108)
        (.umts, .g3), (.hsdpa, .g3), (.hsupa, .g3), (.hspa, .g3), (.hspaPlus, .g3), (.tdScdma, .g3),
        (.evdo0, .g3), (.evdoA, .g3), (.evdoB, .g3),
        (.eHRPD, .g3),  // YYReachability's header calls it 4G, its code 3G; Android: 3G
        // 4G: LTE (= 397312); LTE-M and NB-IoT are E-UTRA UE categories (3GPP Rel-13)
        (.lte, .g4), (.lteCatM, .g4), (.lteNBIoT, .g4),
        // 5G: NR (= 524288); YYReachability has no 5G and returns None
        (.nr, .g5),
    ] as [(RadioAccessTechnology, Generation)])
    func generationFollowsAndroidClasses(rat: RadioAccessTechnology, generation: Generation) {
        #expect(rat.generation == generation)
    }

    @Test func everyTechnologyHasAGeneration() {
        for rat in RadioAccessTechnology.allCases { #expect(rat.generation != .none, "\(rat)") }
    }

    @Test(arguments: [
        ([RadioAccessTechnology](), Generation.none),
        ([.gsm, .gprs], .g2),
        ([.umts, .hsdpa, .hsupa], .g3),
        ([.lte, .nr], .g5),  // 5G NSA (EN-DC): the highest member wins
        ([.edge, .lte], .g4),
        ([.nr], .g5),  // 5G SA
    ] as [([RadioAccessTechnology], Generation)])
    func aSetHasItsHighestGeneration(rats: [RadioAccessTechnology], generation: Generation) {
        #expect(AccessTechnologies(rats).generation == generation)
    }

    @Test func nonStandaloneIsLTEPlusNR() {
        #expect(AccessTechnologies([.lte, .nr]).isNonStandalone5G)
        #expect(!AccessTechnologies([.nr]).isNonStandalone5G)
        #expect(!AccessTechnologies([.lte]).isNonStandalone5G)
    }

    /// The names match ModemManager's access-technology strings (mmcli), so tools agree.
    @Test func namesMatchModemManager() {
        #expect(AccessTechnologies([.nr, .lte]).names == ["lte", "5gnr"])
        #expect(RadioAccessTechnology.hspaPlus.rawValue == "hspa-plus")
        #expect(RadioAccessTechnology.cdma1x.rawValue == "1xrtt")
        #expect(RadioAccessTechnology.lteCatM.rawValue == "lte-cat-m")
        #expect(RadioAccessTechnology.lteNBIoT.rawValue == "lte-nb-iot")
        #expect(Generation.allCases.map(\.name) == ["none", "2g", "3g", "4g", "5g"])
    }
}
