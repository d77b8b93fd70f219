import Foundation
import Glibc
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// Faults are normal: every one ends in a report (bounded time), never a crash or a hang: a modem that stops answering
/// or goes away has its `error`, a request it refuses is a reading in `unread` and the rest of the modem stands.
struct FaultCase: CustomTestStringConvertible, Sendable {
    var name: String
    var proto: String
    /// The scenario's "faults" array (JSON).
    var faults: String
    /// What must hold of the modem afterwards.
    var present: Bool = true
    var errorContains: [String]
    /// Whether registration must still have been read (the fault hit a later request only).
    var registrationRead: Bool = false
    /// The fault is a refusal: no `error`, and `errorContains` is found in the refused reading's reason instead.
    var refused: UnreadReading.Reading? = nil
    var testDescription: String { "\(proto) \(name)" }
}

/// What a read reported of a fault: for a refusal (or one silent request) the refused reading's reason, with no
/// modem error; else the readings that went unread and the error that ended the read.
func reportedFailure(_ state: ModemState, refused: UnreadReading.Reading?) -> String? {
    guard let refused else {
        let all = state.unread.map(\.reason) + [state.error].compactMap { $0 }
        return all.isEmpty ? nil : all.joined(separator: "; ")
    }
    #expect(state.error == nil, "a refusal is not an unreadable modem: \(state.error ?? "")")
    return state.unread.first { $0.reading == refused }?.reason
}

@Suite struct FaultTests {
    static let timeout = Duration.seconds(1)

    static let cases: [FaultCase] = [
        .init(name: "silence", proto: "qmi", faults: #"["silence"]"#, errorContains: ["no answer"]),
        .init(name: "silence", proto: "mbim", faults: #"["silence"]"#, errorContains: ["no answer"]),
        // A signal reply later than the request timeout: registration was read, the read stopped at the signal.
        .init(name: "slow-signal", proto: "qmi", faults: #"[{"delay": {"ms": 3000, "messages": ["nas:get_signal_info"]}}]"#,
              errorContains: ["qmi_client_nas_get_signal_info", "no answer"], registrationRead: true, refused: .signal),
        .init(name: "slow-signal", proto: "mbim", faults: #"[{"delay": {"ms": 3000, "messages": ["basic_connect:signal_state"]}}]"#,
              errorContains: ["signal_state", "no answer"], registrationRead: true, refused: .signal),
        // Error statuses: the failed request is named; the others are still read.
        .init(name: "error-status", proto: "qmi", faults: #"[{"error": {"status": "INTERNAL", "messages": ["nas:get_signal_info"]}}]"#,
              errorContains: ["qmi_client_nas_get_signal_info"], registrationRead: true, refused: .signal),
        .init(name: "error-status", proto: "mbim", faults: #"[{"error": {"status": "FAILURE", "messages": ["basic_connect:signal_state"]}}]"#,
              errorContains: ["signal_state"], registrationRead: true, refused: .signal),
        // A reply cut short never completes a frame: the request times out and says which one.
        .init(name: "truncated", proto: "qmi", faults: #"[{"truncate": {"keep_bytes": 9, "messages": ["nas:get_signal_info"]}}]"#,
              errorContains: ["qmi_client_nas_get_signal_info"], registrationRead: true),
        .init(name: "truncated", proto: "mbim", faults: #"[{"truncate": {"keep_bytes": 20, "messages": ["basic_connect:signal_state"]}}]"#,
              errorContains: ["signal_state"], registrationRead: true),
        // Garbage instead of the reply: libmbim skips it and the request times out; libqmi declares a framing error
        // and hangs the port up (the node is still there, so the modem is present, with the error).
        .init(name: "garbage", proto: "qmi", faults: #"[{"garbage": {"length": 40, "replace": true, "messages": ["nas:get_signal_info"]}}]"#,
              errorContains: ["qmi_client_nas_get_signal_info"], registrationRead: true),
        .init(name: "garbage", proto: "mbim", faults: #"[{"garbage": {"length": 40, "replace": true, "messages": ["basic_connect:signal_state"]}}]"#,
              errorContains: ["signal_state"], registrationRead: true),
        // The port closes under the reader (the pty goes away, as a cdc-wdm node on USB unplug): absent.
        .init(name: "close", proto: "qmi", faults: #"[{"close": {"after_requests": 4}}]"#, present: false,
              errorContains: ["hung up"]),
        .init(name: "close", proto: "mbim", faults: #"[{"close": {"after_requests": 3}}]"#, present: false,
              errorContains: ["hung up"]),
    ]

    @Test(arguments: cases)
    func faultEndsInAReport(_ c: FaultCase) async throws {
        let scenario = ScenarioFile.registered(c.proto, rats: ["lte"], signal: #""rssi_dbm": -70, "rsrp_dbm": -95"#,
                                           extra: #""faults": \#(c.faults),"#)
        let sim = try await ModemSimulator.start(json: scenario)
        // The per-request deadline is the subject here; the whole-read budget is set out of the way (it has its
        // own test through reach, a process of its own, where the test runner's load cannot stretch the clock).
        let options = ModemReadOptions(requestTimeout: Self.timeout, readTimeout: .seconds(30), access: .direct)
        let start = ContinuousClock.now
        let (health, states) = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: c.proto == "qmi" ? .qmi : .mbim)],
                                                      options: options)
        let elapsed = ContinuousClock.now - start
        #expect(health.available)
        let state = try #require(states.first)
        let error = try #require(reportedFailure(state, refused: c.refused), "no failure reported: \(state)")
        for part in c.errorContains { #expect(error.contains(part), "\(error)") }
        #expect(state.present == c.present, "\(error); after \(elapsed); frame log:\n\(sim.log)")
        if c.registrationRead { #expect(state.registration == .home) }
        // No hang: the request deadline ended it (the error says so); this only guards against waiting forever.
        #expect(elapsed < .seconds(25), "\(elapsed)")
    }

    /// A modem that does not answer at all must not hold up the rest of `reach status`: the route part is there,
    /// the modem has its error, within the modem timeout and a margin.
    @Test(arguments: ["qmi", "mbim"])
    func silentModemDoesNotHoldUpStatus(proto: String) async throws {
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -70"#, extra: #""faults": ["silence"],"#))
        let r = try await runReach(["status", "--json", "--no-wifi", "--modem-access", "direct", "--modem", "\(sim.link):\(proto)", "--modem-timeout", "1"])
        let elapsed = r.seconds
        let status = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(status["route"] != nil)
        #expect(status["wwan_status"] as? String == "none")
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect((modem["error"] as? String)?.contains("no answer") == true)
        #expect(elapsed < 5, "reach status took \(elapsed) s with a silent modem")
    }

    /// A modem that answers, but every NAS and DMS answer 0.8 s late, is cut at the read budget (three request
    /// timeouts) with what it said so far: reach status returns in about 3 s, not the ten requests' 8 s.
    @Test func slowModemIsCutAtTheReadBudget() async throws {
        let slow = #"[{"delay": {"ms": 800, "messages": ["nas", "dms"]}}]"#
        let sim = try await ModemSimulator.start(
            json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -70"#, extra: #""faults": \#(slow),"#))
        let r = try await runReach(["status", "--json", "--no-wifi", "--modem-access", "direct", "--modem", "\(sim.link):qmi", "--modem-timeout", "1"])
        let status = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let modem = try #require((status["wwan"] as? [[String: Any]])?.first)
        #expect((modem["error"] as? String)?.hasPrefix("read incomplete after 3000 ms") == true, "\(modem["error"] ?? "")")
        #expect(modem["generation"] as? String == "4g")  // registration came in before the budget ran out
        #expect(r.seconds > 2.9 && r.seconds < 6, "reach status took \(r.seconds) s")
    }

    /// A port that is not there is reported absent, at once.
    @Test func missingPortIsAbsent() async {
        let (_, states) = await ModemReader.read([ModemPortSpec(path: "/dev/cdc-wdm-none", protocol: .qmi)], options: ModemReadOptions(access: .direct))
        #expect(states.first?.present == false)
        #expect(states.first?.error == "no such device node")
    }

    /// A regular file is not a control port.
    @Test func regularFileIsRefused() async throws {
        let path = NSTemporaryDirectory() + "reach-not-a-port"
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (_, states) = await ModemReader.read([ModemPortSpec(path: path, protocol: .mbim)], options: ModemReadOptions(access: .direct))
        #expect(states.first?.error == "not a character device")
    }

    /// A port named without a protocol, which sysfs cannot tell either (a pty), is an error that says what to do.
    @Test func unknownProtocolSaysHowToName() async throws {
        let sim = try await ModemSimulator.start(json: ScenarioFile.registered("qmi", rats: ["lte"], signal: #""rssi_dbm": -70"#))
        let (_, states) = await ModemReader.read([ModemPortSpec(path: sim.link)], options: ModemReadOptions(access: .direct))
        #expect(states.first?.error?.contains("PATH:qmi or PATH:mbim") == true)
    }
}

/// A locked SIM needs a person: `sim` says which code, and the snapshot sets intervention_required when the
/// locked modem is the one that matters (here: no route at all, in a network namespace of its own).
@Suite struct SIMTests {
    @Test(arguments: [("qmi", "pin_required"), ("qmi", "puk_required"), ("mbim", "pin_required"), ("mbim", "puk_required"),
                      ("qmi", "absent"), ("mbim", "absent")])
    func simState(proto: String, sim simState: String) async throws {
        let scenario = ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -70"#, registration: "searching",
                                               sim: simState)
        let sim = try await ModemSimulator.start(json: scenario)
        let (_, states) = await ModemReader.read([ModemPortSpec(path: sim.link, protocol: proto == "qmi" ? .qmi : .mbim)],
                                                 options: ModemReadOptions(access: .direct))
        let state = try #require(states.first)
        #expect(state.sim.rawValue == simState)
        #expect(state.sim.needsIntervention == (simState != "absent"))
        var snapshot = Snapshot(time: Timestamp(seconds: 0, nanoseconds: 0), target: .defaultRoute)
        snapshot.wwan = [state]
        snapshot.derive()
        #expect(snapshot.flags.contains(.interventionRequired) == (simState != "absent"))
    }

    /// The same through `reach status --json` in a network namespace with no routes (unshare -n; root or a user
    /// namespace): flags carry "intervention_required".
    @Test(arguments: ["qmi", "mbim"])
    func interventionRequiredInStatus(proto: String) async throws {
        guard let unshare = await Namespaces.unshareCommand() else {
            _ = TestSupport.requirement(false, "unshare -n (a network namespace) is not available")
            return
        }
        let scenario = ScenarioFile.registered(proto, rats: ["lte"], signal: #""rssi_dbm": -70"#, registration: "searching",
                                               sim: "pin_required")
        let sim = try await ModemSimulator.start(json: scenario)
        let r = try await TestSupport.run(
            unshare + [TestPaths.reach, "status", "--json", "--no-wifi", "--modem-access", "direct", "--modem", "\(sim.link):\(proto)"])
        let status = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
        #expect((status["flags"] as? [String])?.contains("intervention_required") == true, "\(status["flags"] ?? "")")
        #expect(((status["wwan"] as? [[String: Any]])?.first?["sim"] as? String) == "pin_required")
    }
}

enum Namespaces {
    /// `unshare -n` as root, else `unshare -rn` (a user namespace), when that works here.
    static func unshareCommand() async -> [String]? {
        for args in [["-n"], ["-rn"]] {
            if (try? await TestSupport.run(["/usr/bin/unshare"] + args + ["true"], timeout: 10))?.status == 0 {
                return ["/usr/bin/unshare"] + args
            }
        }
        return nil
    }
}

/// The fault scenarios the simulator ships (hw/scenarios/*-fault-*.json), each with what its description says it
/// proves.
struct ShippedFault: CustomTestStringConvertible, Sendable {
    var file: String
    var timeout: Duration
    /// Parts of the modem's error (nil: no error).
    var error: [String]?
    /// nil: either (the port closes right after an answer; whether that answer is read before the hang-up is a
    /// race real hardware has too).
    var generation: Generation?
    var present: Bool = true
    /// Whether a second read (a new session, after the fault's one-shot or reopen) must be whole.
    var recovers: Bool = false
    /// The fault is a refusal of this reading (`error` parts are then in its `unread` reason).
    var refused: UnreadReading.Reading? = nil
    var testDescription: String { file }
}

@Suite struct ShippedFaultScenarioTests {
    static let cases: [ShippedFault] = [
        .init(file: "qmi-fault-silent-signal", timeout: .seconds(1), error: ["qmi_client_nas_get_signal_info", "no answer"],
              generation: .g4, refused: .signal),
        .init(file: "qmi-fault-slow-replies", timeout: .seconds(5), error: nil, generation: .g4),
        .init(file: "qmi-fault-error-status", timeout: .seconds(1), error: ["qmi_client_nas_get_system_info", "DeviceNotReady"],
              generation: Generation.none, refused: .registration),
        .init(file: "qmi-fault-garbage", timeout: .seconds(1), error: ["hung up"], generation: Generation.none),
        .init(file: "qmi-fault-truncated-once", timeout: .seconds(1), error: ["qmi_client_nas_get_system_info", "no answer"],
              generation: Generation.none, recovers: true),
        .init(file: "qmi-fault-close-after-requests", timeout: .seconds(1), error: ["hung up"], generation: nil,
              present: false, recovers: true),
        .init(file: "mbim-fault-silent-signal", timeout: .seconds(1), error: ["signal_state", "no answer"], generation: .g4,
              refused: .signal),
        .init(file: "mbim-fault-slow-replies", timeout: .seconds(5), error: nil, generation: .g4),
        .init(file: "mbim-fault-error-status", timeout: .seconds(1), error: ["register_state"], generation: Generation.none,
              refused: .registration),
        .init(file: "mbim-fault-garbage", timeout: .seconds(1), error: ["register_state", "no answer"], generation: Generation.none,
              recovers: true),
        .init(file: "mbim-fault-truncated", timeout: .seconds(1), error: ["packet_service", "no answer"], generation: .g4),
    ]

    @Test(arguments: cases)
    func endsInTheReportItsDescriptionPromises(_ c: ShippedFault) async throws {
        let sim = try await ModemSimulator.start(scenario: TestPaths.scenarios + "/" + c.file + ".json")
        let port = ModemPortSpec(path: sim.link, protocol: c.file.hasPrefix("qmi") ? .qmi : .mbim)
        let options = ModemReadOptions(requestTimeout: c.timeout, readTimeout: .seconds(30), access: .direct)
        let start = ContinuousClock.now
        let (_, states) = await ModemReader.read([port], options: options)
        let elapsed = ContinuousClock.now - start
        let state = try #require(states.first)
        if let parts = c.error {
            let error = try #require(reportedFailure(state, refused: c.refused), "no failure reported: \(state)")
            for part in parts { #expect(error.contains(part), "\(error)") }
        } else {
            #expect(state.error == nil, "\(state.error ?? "")")
        }
        if let generation = c.generation { #expect(state.generation == generation) }
        #expect(state.present == c.present)
        #expect(elapsed < .seconds(25), "\(elapsed)")  // no hang; the request deadlines are checked via the errors
        if c.recovers {
            // A new session (after a reopened port, or past a one-shot fault) reads the modem whole.
            var again: ModemState?
            for _ in 0..<30 {
                let (_, s) = await ModemReader.read([port], options: options)
                again = s.first
                if again?.error == nil { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(again?.error == nil, "\(again?.error ?? "")")
            #expect(again?.generation == .g4)
        }
    }

    /// The shipped "port vanishes" scenario through a ModemMonitor: the port closes 1.5 s after the monitor first
    /// opens it (`--clock-on-open`; counted from the simulator's start, a monitor that arrived late on a loaded
    /// machine met the reopened port and never saw a loss) and comes back 1.5 s later; the consumer sees it go
    /// (present false) and come back whole (reopened). The first read may still be running when the port closes;
    /// the loss is then seen by that read, so the test waits for the sequence, not for a first 4G update. On a slow
    /// run (the sanitizer stages) the port can be back before the monitor looks for its node: the loss is then a
    /// hang-up with the modem still present, which is the truth at that moment.
    @Test func mbimPortVanishesAndComesBack() async throws {
        let sim = try await ModemSimulator.start(
            scenario: TestPaths.scenarios + "/mbim-fault-port-vanishes.json", extra: ["--clock-on-open"])
        let updates = MonitorTests.Collector(MonitorTests.monitor(sim, .mbim).updates())
        defer { Task { await updates.stop() } }
        let lost = try await updates.next {
            !$0.state.present || $0.cause == .portLost || $0.state.error?.contains(text: "hung up") == true
        }
        #expect([.initialRead, .portLost, .openFailed].contains(lost.cause))
        #expect(lost.state.error != nil)
        let back = try await updates.next { $0.state.present && $0.state.error == nil }
        #expect(back.cause == .reopened)
        #expect(back.state.generation == .g4)
    }
}
