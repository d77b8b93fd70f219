import Foundation
import GatewayReach
import ReachTestSupport
import Synchronization
import Testing

/// `DiscoveredModemSource` against simulated modems, with a discovery the test controls (the simulators' ptys are
/// not in sysfs) and the manual clock for its intervals: a modem that appears later is picked up at the next
/// discovery, and a lost port whose modem comes back under another name is followed to it soon after the loss,
/// not at the next interval.
@Suite struct DiscoveredModemTests {
    final class Ports: Sendable {
        private let specs = Mutex<[ModemPortSpec]>([])
        func set(_ new: [ModemPortSpec]) { specs.withLock { $0 = new } }
        var now: [ModemPortSpec] { specs.withLock { $0 } }
    }

    final class Latest: Sendable {
        private let value = Mutex<[ModemState]?>(nil)
        func set(_ states: [ModemState]) { value.withLock { $0 = states } }
        var devices: Set<String>? { value.withLock { $0.map { Set($0.map(\.device)) } } }
        var states: [ModemState] { value.withLock { $0 ?? [] } }
    }

    @Test func followsModemsThatComeGoAndReenumerate() async throws {
        let a = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        let b = try await ModemSimulator.start(scenario: "mbim-3g-hspa")
        let c = try await ModemSimulator.start(scenario: "qmi-4g-lte")  // modem A after re-enumeration
        defer {
            a.stop()
            b.stop()
            c.stop()
        }
        let specA = ModemPortSpec(path: a.link, protocol: .qmi)
        let specB = ModemPortSpec(path: b.link, protocol: .mbim)
        let specC = ModemPortSpec(path: c.link, protocol: .qmi)
        let ports = Ports()
        ports.set([specA])
        let clock = ManualClock()
        let source = DiscoveredModemSource(
            options: ModemMonitorOptions(read: ModemReadOptions(requestTimeout: .seconds(2), access: .direct), pollInterval: nil),
            interval: .seconds(60), clock: clock, discover: { (.ok, ports.now) })
        let latest = Latest()
        let consumer = Task {
            for await (_, states) in source.updates() { latest.set(states) }
        }
        defer { consumer.cancel() }

        #expect(await eventually("modem A read", timeout: .seconds(20)) { latest.devices == [a.link] })
        #expect(latest.states.first?.generation == .g4)

        // A second modem is plugged in: seen at the next discovery, not before.
        ports.set([specA, specB])
        #expect(await eventually("the discovery loop asleep") { clock.sleepers == 1 })
        #expect(latest.devices == [a.link])
        clock.advance(by: .seconds(60))
        #expect(await eventually("modem B read", timeout: .seconds(20)) { latest.devices == [a.link, b.link] })
        #expect(latest.states.first { $0.device == b.link }?.generation == .g3)

        // Modem A's port goes away and the modem re-enumerates as C: the loss starts a quick rediscovery (1 s
        // after it), which drops A and watches C, long before the 60 s interval.
        ports.set([specB, specC])
        _ = a.stop()
        #expect(await eventually("A reported lost", timeout: .seconds(20)) {
            latest.states.contains { $0.device == a.link && !$0.present }
        })
        #expect(await eventually("rediscovery asleep") { clock.sleepers == 2 })
        clock.advance(by: .seconds(1))
        #expect(await eventually("followed to C", timeout: .seconds(20)) { latest.devices == [b.link, c.link] })
        #expect(latest.states.first { $0.device == c.link }?.generation == .g4)
    }
}
