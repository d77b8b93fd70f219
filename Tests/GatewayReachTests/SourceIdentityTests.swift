import GatewayReach
import ReachLog
import ReachTestSupport
import Testing

/// A modem source's `id` is what instances share a session by, and what a reconfiguration compares: every option that
/// changes how the modem is asked makes a new id (so a reload opens a new session with it), and nothing else does.
@Suite struct SourceIdentityTests {
    static let port = ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0")

    static func options(_ edit: (inout ReachabilityOptions) -> Void = { _ in }) -> ModemMonitorOptions {
        var o = ReachabilityOptions()
        edit(&o)
        return o.modemMonitorOptions
    }

    /// Each option that changes the asking, by name. (A list of its own: Swift 6.0's compiler crashes on closures
    /// inside `@Test(arguments:)`.)
    static let changes: [(String, ModemMonitorOptions)] = [
        ("access direct", options { $0.modems.access = .direct }),
        ("access proxy", options { $0.modems.access = .proxy }),
        ("in a worker", options { $0.modems.worker = ModemWorkerLaunch(executable: "/usr/bin/reach", arguments: ["modem-worker"]) }),
        ("strict bars", options { $0.signalPolicy = .strict }),
        ("session re-query 30 s", options { $0.modems.sessionRequery = .seconds(30) }),
        ("request timeout 2 s", options { $0.modems.requestTimeout = .seconds(2) }),
        ("poll 10 s", options { $0.modems.pollInterval = .seconds(10) }),
    ]

    @Test(arguments: changes)
    func whatChangesTheAskingChangesTheSession(_ what: String, _ changed: ModemMonitorOptions) {
        let base = IndicationModemSource(spec: Self.port, options: Self.options())
        #expect(IndicationModemSource(spec: Self.port, options: changed).id != base.id, "\(what)")
        let clock = ManualClock()
        #expect(
            DiscoveredModemSource(options: changed, interval: .seconds(60), clock: clock).id
                != DiscoveredModemSource(options: Self.options(), interval: .seconds(60), clock: clock).id, "\(what)")
    }

    @Test func equalOptionsShareOneSession() {
        var logged = Self.options()
        logged.read.logger = Logger.discarding(label: "another")
        logged.read.logger.logLevel = .debug
        #expect(IndicationModemSource(spec: Self.port, options: logged).id
            == IndicationModemSource(spec: Self.port, options: Self.options()).id, "where records go is not how it asks")
        var other = Self.port
        other.muxID = 1
        #expect(IndicationModemSource(spec: other, options: Self.options()).id
            != IndicationModemSource(spec: Self.port, options: Self.options()).id)
    }
}
