import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// ModemMonitor: changes reach the consumer when the modem announces them. Polling is switched off
/// (`pollInterval: nil`) wherever a test claims an indication did it, and the simulator's frame log shows the
/// modem was not asked again.
@Suite struct MonitorTests {
    /// Consumes a monitor's stream in the background and hands out updates in order.
    actor Collector {
        private var updates: [ModemUpdate] = []
        private var taken = 0
        private var task: Task<Void, Never>?

        init(_ stream: AsyncStream<ModemUpdate>) {
            task = nil
            Task { await self.start(stream) }
        }

        private func start(_ stream: AsyncStream<ModemUpdate>) {
            task = Task { for await u in stream { self.append(u) } }
        }

        private func append(_ u: ModemUpdate) { updates.append(u) }

        /// The next update (after those already handed out) that satisfies `condition`, within `timeout`.
        func next(timeout: Duration = .seconds(30), where condition: @Sendable (ModemUpdate) -> Bool = { _ in true })
            async throws -> ModemUpdate
        {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                while taken < updates.count {
                    let u = updates[taken]
                    taken += 1
                    if condition(u) { return u }
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw TestFailure("no matching update within \(timeout); seen: \(updates.map { "\($0.cause) \($0.state.generation) bars \($0.state.bars(.android)) present \($0.state.present) \($0.state.error ?? "")" })")
        }

        /// Ends the stream, which closes the port.
        func stop() { task?.cancel() }
    }

    static func monitor(_ sim: ModemSimulator, _ proto: ModemProtocol, poll: Duration? = nil) -> ModemMonitor {
        ModemMonitor(
            ModemPortSpec(path: sim.link, protocol: proto),
            options: ModemMonitorOptions(
                read: ModemReadOptions(requestTimeout: .seconds(2), access: .direct), pollInterval: poll,
                reopen: Backoff(initial: .milliseconds(100), maximum: .seconds(1), jitter: 0.1)))
    }

    static func count(_ log: String, _ needle: String) -> Int { log.components(separatedBy: needle).count - 1 }

    /// Waits until the monitor has asked the modem for its indications (the simulator sends indications only to
    /// clients that registered): QMI Register Indications twice (registration, then signal); MBIM needs no
    /// registration, but the Signal State set comes last.
    static func subscribed(_ sim: ModemSimulator, _ proto: String, timeout: Duration = .seconds(10)) async throws {
        let (needle, times) = proto == "qmi" ? ("nas:register_indications response", 2) : ("signal_state set", 1)
        let deadline = ContinuousClock.now + timeout
        while count(sim.log, needle) < times {
            guard ContinuousClock.now < deadline else { throw TestFailure("no '\(needle)' in the frame log") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(50))  // the response is logged before the client has read it
    }

    @Test(arguments: [("qmi", "nas:get_system_info request"), ("mbim", "basic_connect:register_state query")])
    func ratFlipArrivesAsAnIndication(proto: String, registrationRequest: String) async throws {
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#,
                                          mbimex: proto == "mbim" ? "3.0" : nil),
            control: true)
        let updates = Collector(Self.monitor(sim, proto == "qmi" ? .qmi : .mbim).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        #expect(first.cause == .initialRead)
        #expect(first.state.generation == .g4)
        try await Self.subscribed(sim, proto)

        let reply = try await sim.control(#"{"set": {"access_technologies": ["lte", "5gnr"], "signal": {"rssi_dbm": -63, "rsrp_dbm": -92, "sinr_db": 14, "nr": {"rsrp_dbm": -88, "sinr_db": 18}}}}"#)
        #expect(!reply.contains("error"), "\(reply)")
        let nsa = try await updates.next { $0.state.generation == .g5 }
        #expect(nsa.cause == .indication)
        #expect(nsa.state.nrMode == "nsa")

        try await sim.control(#"{"set": {"access_technologies": ["umts", "hsdpa"], "signal": {"rssi_dbm": -85}}}"#)
        let umts = try await updates.next { $0.state.generation == .g3 }
        #expect(umts.cause == .indication)
        // Asked once, at the start: everything after came from the modem on its own.
        #expect(Self.count(sim.log, registrationRequest) == 1, "\(registrationRequest) asked more than once")
    }

    /// Bars follow a signal change through Signal Info indications (QMI, after Config Signal Info at the bar
    /// boundaries) or Signal State notifications (MBIM).
    @Test(arguments: ["qmi", "mbim"])
    func signalChangeMovesTheBars(proto: String) async throws {
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered(
                proto, rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -84, "rsrq_db": -8, "sinr_db": 20"#,
                mbimex: proto == "mbim" ? "2.0" : nil),
            control: true)
        let updates = Collector(Self.monitor(sim, proto == "qmi" ? .qmi : .mbim).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        // The default (android) profile: LTE bars from RSRP alone, CarrierConfigManager's -128/-118/-108/-98.
        #expect(first.state.bars(.android) == 4)  // RSRP -84 ≥ -98
        #expect(first.state.bars(.strict) == 4)  // RSRP -84 ≥ -85, RSRQ -8 ≥ -12, SNR 20 ≥ 13
        try await Self.subscribed(sim, proto)
        try await sim.control(#"{"set": {"signal": {"rssi_dbm": -99, "rsrp_dbm": -112, "rsrq_db": -18, "sinr_db": 0}}}"#)
        let weak = try await updates.next { $0.state.bars(.android) != 4 }
        #expect(weak.cause == .indication)
        #expect(weak.state.bars(.android) == 2)  // RSRP -112 ≥ -118
        #expect(weak.state.bars(.strict) == 1)  // RSRP -112 → 1, RSRQ -18 → 1, SNR 0 → 1
    }

    /// The port vanishes (pty closed, as a USB unplug removes cdc-wdm0) and comes back: present false, then a
    /// reopened, complete state.
    @Test(arguments: ["qmi", "mbim"])
    func portLossAndReopen(proto: String) async throws {
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#), control: true)
        let updates = Collector(Self.monitor(sim, proto == "qmi" ? .qmi : .mbim).updates())
        defer { Task { await updates.stop() } }
        _ = try await updates.next { $0.cause == .initialRead }
        // The monitor decides "present" by looking for the node when it handles the hang-up. The port stays away
        // 3 s, but a loaded machine may handle the hang-up after the node is back: the loss is then reported as
        // .portLost with present true (a hang-up with the node in place, as libqmi's own hang-up on bytes it cannot
        // frame), which is just as much a loss.
        try await sim.control(#"{"fault": {"close": {"reopen_after_ms": 3000}}}"#)
        let lost = try await updates.next { !$0.state.present || $0.cause == .portLost }
        #expect([.portLost, .openFailed].contains(lost.cause))
        #expect(lost.state.error != nil)
        let back = try await updates.next { $0.state.present && $0.state.error == nil }
        #expect(back.cause == .reopened)
        #expect(back.state.generation == .g4)
    }

    /// A port named without its protocol while the modem is unplugged (`reach watch --modem /dev/cdc-wdm0`): absent at
    /// first, then, once the node is back, its protocol and driver are asked of sysfs again and the modem is read.
    @Test func aPortNamedWithoutProtocolIsAskedAgainWhenItComesBack() async throws {
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#))
        let fs = try FakeSysfs()
        try fs.dir("/class/usbmisc")  // unplugged: neither the node nor its sysfs entry
        let node = fs.root + "/cdc-wdm7"
        let monitor = ModemMonitor(
            ModemPortSpec(path: node),
            options: ModemMonitorOptions(
                read: ModemReadOptions(requestTimeout: .seconds(2), access: .direct, sysfsRoot: fs.root),
                reopen: Backoff(initial: .milliseconds(100), maximum: .milliseconds(300), jitter: 0.1)))
        let updates = Collector(monitor.updates())
        defer { Task { await updates.stop() } }
        let absent = try await updates.next()
        #expect(!absent.state.present && absent.state.fault?.kind == .gone, "\(absent.state)")
        try fs.usbModem(usbPath: DiscoveryTests.ec25USB, vendor: "2c7c", product: "0125", interface: "1.4",
                        driver: "qmi_wwan", wdm: "cdc-wdm7", netdev: nil)
        try FileManager.default.createSymbolicLink(atPath: node, withDestinationPath: sim.link)
        let back = try await updates.next { $0.state.present && $0.state.error == nil }
        #expect(back.state.protocol == .qmi && back.state.driver == "qmi_wwan")
        #expect(back.state.generation == .g4)
    }

    /// A QMI modem that takes none of the indication requests is polled: the change arrives through the poll.
    @Test func pollIsTheFallbackWithoutIndications() async throws {
        let refuse = #"[{"error": {"status": "NOT_SUPPORTED", "messages": ["nas:register_indications", "nas:config_signal_info", "nas:set_event_report"]}}]"#
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#,
                                          extra: #""faults": \#(refuse),"#),
            control: true)
        let updates = Collector(Self.monitor(sim, .qmi, poll: .milliseconds(300)).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        #expect(first.state.generation == .g4)
        try await sim.control(#"{"set": {"access_technologies": ["umts"], "signal": {"rssi_dbm": -85}}}"#)
        let polled = try await updates.next { $0.state.generation == .g3 }
        #expect(polled.cause == .poll)
    }

    /// A monitor whose consumer goes away (a `Reachability` stopped) still releases every client id it allocated:
    /// the close must not be cancelled with the task, or each stop leaves ids allocated in the modem until it runs
    /// out (the simulator, like firmware, has a bounded id space per service).
    @Test func stoppingReleasesTheClientIDs() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -70"#))
        try await Self.stopAndCountReleases(sim, Self.monitor(sim, .qmi).updates())
    }

    /// The same through a worker process (`modems.worker`, the agent's default): the parent stops it by closing its
    /// socket, and the worker ends its monitor as politely as an in-process consumer would, within the 2 s the parent
    /// gives it before SIGKILL.
    @Test(.needs(TestPaths.isBuilt(TestPaths.reach), "reach built")) func stoppingAWorkerReleasesTheClientIDs() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -70"#))
        var options = Self.monitor(sim, .qmi).options
        options.read.worker = ModemWorkerLaunch(executable: TestPaths.reach, arguments: ["modem-worker"])
        try await Self.stopAndCountReleases(
            sim, IsolatedModemMonitor(ModemPortSpec(path: sim.link, protocol: .qmi), options: options).updates())
    }

    /// Reads, waits until the monitor watches the modem's indications, stops it, and expects every client id it
    /// allocated (NAS, DMS, UIM, and WDS for each IP family) released.
    static func stopAndCountReleases(_ sim: ModemSimulator, _ stream: AsyncStream<ModemUpdate>) async throws {
        let updates = Collector(stream)
        _ = try await updates.next { $0.cause == .initialRead }
        try await Self.subscribed(sim, "qmi")  // in the watch loop, where a stop comes
        await updates.stop()
        #expect(await TestSupport.eventually(timeout: 10) {
            Self.count(sim.log, "ctl:release_cid response") == Self.count(sim.log, "ctl:allocate_cid response")
        }, "\(sim.log.split(separator: "\n").filter { $0.contains("ctl:") })")
        #expect(Self.count(sim.log, "ctl:allocate_cid response") == 5, "\(sim.log.split(separator: "\n").filter { $0.contains("ctl:") })")
    }
}

/// The data session through ModemMonitor: a drop announced by the modem arrives as an indication; a drop the modem
/// does not announce is found by the re-query timer; a registration change asks the sessions again at once.
@Suite struct SessionMonitorTests {
    static func monitor(_ sim: ModemSimulator, _ proto: ModemProtocol, requery: Duration?) -> ModemMonitor {
        ModemMonitor(
            ModemPortSpec(path: sim.link, protocol: proto),
            options: ModemMonitorOptions(
                read: ModemReadOptions(requestTimeout: .seconds(2), access: .direct), pollInterval: nil,
                sessionRequery: requery))
    }

    static func scenario(_ proto: String, extra: String = "") -> String {
        ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -65, "rsrp_dbm": -95"#, extra: extra)
    }

    @Test(arguments: ["qmi", "mbim"])
    func announcedDropIsAnIndication(proto: String) async throws {
        let sim = try await ModemSimulator.start(json: Self.scenario(proto), control: true)
        let updates = MonitorTests.Collector(Self.monitor(sim, proto == "qmi" ? .qmi : .mbim, requery: nil).updates())
        defer { Task { await updates.stop() } }
        let first = try await updates.next()
        #expect(first.state.dataSession == .connected)
        try await MonitorTests.subscribed(sim, proto)
        try await sim.control(#"{"set":{"data_sessions":[{"state":"disconnected"}]}}"#)
        let drop = try await updates.next { $0.state.dataSession == .disconnected }
        #expect(drop.cause == .indication)
        try await sim.control(#"{"set":{"data_sessions":[{"state":"connected"}]}}"#)
        let back = try await updates.next { $0.state.dataSession == .connected }
        #expect(back.cause == .indication)
    }

    /// Firmware that never announces the session (qmi.wds_indications false, mbim.connect_notifications false):
    /// the 1 s re-query finds the drop.
    @Test(arguments: [("qmi", #""qmi":{"wds_indications":false},"#), ("mbim", #""mbim":{"connect_notifications":false},"#)])
    func silentFirmwareIsRequeried(proto: String, extra: String) async throws {
        let sim = try await ModemSimulator.start(json: Self.scenario(proto, extra: extra), control: true)
        let updates = MonitorTests.Collector(
            Self.monitor(sim, proto == "qmi" ? .qmi : .mbim, requery: .seconds(1)).updates())
        defer { Task { await updates.stop() } }
        #expect(try await updates.next().state.dataSession == .connected)
        try await MonitorTests.subscribed(sim, proto)
        let sent = try await sim.control(#"{"query":"stats"}"#)
        try await sim.control(#"{"set":{"data_sessions":[{"state":"disconnected"}]}}"#)
        let started = ContinuousClock.now
        let drop = try await updates.next(timeout: .seconds(10)) { $0.state.dataSession == .disconnected }
        #expect(drop.cause == .poll)
        #expect(ContinuousClock.now - started < .seconds(3), "found within the re-query interval (and a read)")
        // The simulator sent no indication for it.
        let stats = try await sim.control(#"{"query":"stats"}"#)
        #expect(try JSON.parse(stats)["indications"] == JSON.parse(sent)["indications"], "\(stats)")
    }

    /// A deregistration, announced, makes the monitor ask the sessions again at once (without a timer).
    @Test func registrationChangeRequeries() async throws {
        let sim = try await ModemSimulator.start(json: Self.scenario("qmi", extra: #""qmi":{"wds_indications":false},"#), control: true)
        let updates = MonitorTests.Collector(Self.monitor(sim, .qmi, requery: nil).updates())
        defer { Task { await updates.stop() } }
        #expect(try await updates.next().state.dataSession == .connected)
        try await MonitorTests.subscribed(sim, "qmi")
        let before = MonitorTests.count(sim.log, "wds:get_packet_service_status request")
        try await sim.control(#"{"set":{"registration":"searching","access_technologies":[],"packet_service":"detached"}}"#)
        let drop = try await updates.next { $0.state.dataSession == .disconnected }
        #expect(drop.state.registration == .searching)
        #expect(MonitorTests.count(sim.log, "wds:get_packet_service_status request") == before + 2)
    }
}
