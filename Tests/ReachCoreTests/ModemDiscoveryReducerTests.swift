import Testing

@testable import ReachCore

/// `ModemDiscoveryReducer`: a Sierra Wireless EM7455 (qmi_wwan, /dev/cdc-wdm0) whose firmware crashes and comes back
/// as /dev/cdc-wdm1 (a USB re-enumeration), beside a Fibocom L850-GL (cdc_mbim, /dev/cdc-wdm2) plugged in later.
@Suite struct ModemDiscoveryReducerTests {
    static let em7455 = ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0")
    static let em7455Again = ModemPortSpec(path: "/dev/cdc-wdm1", protocol: .qmi, interface: "wwan1")
    static let l850 = ModemPortSpec(path: "/dev/cdc-wdm2", protocol: .mbim, interface: "wwan2")

    static func state(_ spec: ModemPortSpec, present: Bool = true) -> ModemState {
        var m = ModemState(device: spec.path, protocol: spec.protocol!)
        m.interface = spec.interface
        m.present = present
        m.registration = present ? .home : .unknown
        m.accessTechnologies = present ? [.lte] : .none
        return m
    }

    @Test func followsAModemThatReenumerates() {
        var r = ModemDiscoveryReducer()
        let a = Self.state(Self.em7455)
        // Found: watched, but nothing is published until it has answered once.
        #expect(r.receive(.found(.ok, [Self.em7455])) == [.watch(Self.em7455)])
        #expect(r.receive(.update(path: a.device, a)) == [.publish(.ok, [a])])
        // The same discovery again, the same state again: nothing.
        #expect(r.receive(.found(.ok, [Self.em7455])).isEmpty)
        #expect(r.receive(.update(path: a.device, a)).isEmpty)

        // A second modem: watched at once; the published list keeps the modems that have answered.
        #expect(r.receive(.found(.ok, [Self.em7455, Self.l850])) == [.watch(Self.l850)])
        let b = Self.state(Self.l850)
        #expect(r.receive(.update(path: b.device, b)) == [.publish(.ok, [a, b])])

        // The EM7455's port goes away: published as lost, and a quick rediscovery is asked for, once.
        let lost = Self.state(Self.em7455, present: false)
        #expect(r.receive(.update(path: lost.device, lost)) == [.publish(.ok, [lost, b]), .rediscoverSoon])
        #expect(r.receive(.update(path: lost.device, lost)).isEmpty)

        // The rediscovery finds it under its new name: the old port is dropped, the new one watched.
        let effects = r.receive(.found(.ok, [Self.em7455Again, Self.l850]))
        #expect(effects == [.unwatch(path: "/dev/cdc-wdm0"), .watch(Self.em7455Again), .publish(.ok, [b])])
        #expect(Set(r.watched.keys) == ["/dev/cdc-wdm1", "/dev/cdc-wdm2"])
        // A late update from the dropped port changes nothing.
        #expect(r.receive(.update(path: a.device, a)).isEmpty)
        let c = Self.state(Self.em7455Again)
        #expect(r.receive(.update(path: c.device, c)) == [.publish(.ok, [c, b])])
    }

    @Test func sysfsThatCannotBeReadIsPublishedAsTheSourcesHealth() {
        var r = ModemDiscoveryReducer()
        let noSysfs = SourceHealth(available: false, reason: "/sys/class cannot be read")
        #expect(r.receive(.found(noSysfs, [])) == [.publish(noSysfs, [])])
        #expect(r.receive(.found(noSysfs, [])).isEmpty)
        #expect(r.receive(.found(.ok, [])) == [.publish(.ok, [])])
    }
}
