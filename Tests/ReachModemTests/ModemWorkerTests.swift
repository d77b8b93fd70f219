import Foundation
import Glibc
import ReachCore
import ReachTestSupport
import Testing

@testable import ReachModem

/// The worker supervisor against stand-in workers (/bin/sh scripts writing to fd 3) that crash, hang, lie about
/// frame lengths or send bytes that are no message; and the real worker (`reach modem-worker`) on a simulator.
@Suite struct ModemWorkerTests {
    static let spec = ModemPortSpec(path: "/dev/cdc-wdm-test", protocol: .mbim)

    /// `bytes` as a printf(1) format that writes them.
    static func printf(_ bytes: [UInt8]) -> String {
        "printf '" + bytes.map { String(format: "\\%03o", $0) }.joined() + "' >&3"
    }

    static func frame(_ m: WorkerMessage) throws -> [UInt8] { try WireFrame.encode(m) }

    /// Runs `script` as the worker of a read job; how it ended, what it delivered, how long it took.
    static func supervise(_ script: String, timing: WorkerTiming) async -> (WorkerEnd, String?, [WorkerMessage], Duration) {
        let launch = ModemWorkerLaunch(executable: "/bin/sh", arguments: ["-c", script])
        let started = ContinuousClock.now
        var messages: [WorkerMessage] = []
        var end: (WorkerEnd, String?) = (.exited(-99), nil)
        for await event in WorkerRun.events(launch, job: .read(spec, ModemReadOptions()), timing: timing, label: "test") {
            switch event {
            case let .message(m): messages.append(m)
            case let .ended(e, log): end = (e, log)
            }
        }
        return (end.0, end.1, messages, ContinuousClock.now - started)
    }

    /// The bound on how long a supervised run took from here: under the 30 s the scripts would sleep (or forever), so
    /// it shows the worker was cut. When it was cut is the supervisor's own verdict (`.hung(500 ms)`,
    /// `.lingered(2 s)`, `.overran(3.5 s)`), decided on the event loop's clock; the elapsed time also holds this
    /// task's turns on the pool the whole suite shares, which took 3-7 s more than the verdicts in clean-clone runs
    /// of the unit and shipped stages on 2 cores (the same tests alone: 0.02-3.5 s).
    static let cut: Duration = .seconds(20 * TestSupport.timingSlack)

    static var fast: WorkerTiming {
        var t = WorkerTiming(requestTimeout: .milliseconds(500), readTimeout: .seconds(1))
        t.startup = .milliseconds(500)
        return t
    }

    @Test func exitAndSignalsAreNamed() async throws {
        var (end, _, _, _) = await Self.supervise("exit 3", timing: Self.fast)
        #expect(end == .exited(3))
        (end, _, _, _) = await Self.supervise("kill -TRAP $$", timing: Self.fast)
        #expect(end == .died(signal: SIGTRAP))
        #expect(end.message(protocol: .mbim, lastFatalLog: nil) == "modem worker died: SIGTRAP (libmbim)")
        // The GLib error sent just before the abort is named.
        let log = try Self.frame(.fatalLog(domain: "GLib", message: "gmem.c:169: failed to allocate 4294967296 bytes"))
        let (died, fatal, _, _) = await Self.supervise("sleep 0.2; " + Self.printf(log) + "; kill -TRAP $$", timing: Self.fast)
        #expect(died.message(protocol: .mbim, lastFatalLog: fatal)
            == "modem worker died: SIGTRAP (libmbim: GLib: gmem.c:169: failed to allocate 4294967296 bytes)")
    }

    @Test func silenceIsAHang() async throws {
        // Nothing at all: killed at the start-up limit.
        var (end, _, _, elapsed) = await Self.supervise("sleep 30", timing: Self.fast)
        #expect(end == .hung(.milliseconds(500)), "after \(elapsed)")
        #expect(elapsed < Self.cut, "\(elapsed)")
        // Heartbeats, then silence: killed one silence limit after the last.
        let beat = try Self.frame(.heartbeat)
        (end, _, _, elapsed) = await Self.supervise(
            "\(Self.printf(beat)); sleep 0.2; \(Self.printf(beat)); sleep 30", timing: Self.fast)
        #expect(end == .hung(.milliseconds(500)), "after \(elapsed)")
        #expect(elapsed >= .milliseconds(600) && elapsed < Self.cut, "\(elapsed)")
    }

    /// A worker that closes its socket and stays: killed 2 s later, and the end says so rather than naming the SIGKILL,
    /// which was the supervisor's own.
    @Test func closingTheSocketWithoutExitingIsNamed() async throws {
        let (end, _, _, elapsed) = await Self.supervise("exec 3>&-; sleep 30", timing: Self.fast)
        #expect(end == .lingered(.seconds(2)), "after \(elapsed)")
        #expect(end.message(protocol: .qmi, lastFatalLog: nil)
            == "modem worker closed its socket but did not exit within 2000 ms (libqmi); killed")
        #expect(elapsed >= .seconds(2) && elapsed < Self.cut, "\(elapsed)")
    }

    @Test func aReadThatBeatsForeverIsCutAtItsDeadline() async throws {
        let beat = try Self.frame(.heartbeat)
        let script = "while :; do \(Self.printf(beat)); sleep 0.1; done"
        let (end, _, _, elapsed) = await Self.supervise(script, timing: Self.fast)
        // Deadline: twice the 1 s read budget, a request timeout and a second.
        #expect(end == .overran(.milliseconds(3500)))
        #expect(elapsed < Self.cut, "\(elapsed)")
    }

    static let malformed: [(String, [UInt8], String)] = [
        ("a length past the bound", [0x7F, 0xFF, 0xFF, 0xFF], "more than the"),
        ("a payload that is no value", [0, 0, 0, 2, 0x09, 0x00], "unknown tag"),
        ("a value that is no message", [0, 0, 0, 1, 0x02], "cannot decode WorkerMessage"),
    ]

    @Test func malformedFramesKillTheWorker() async throws {
        for (name, bytes, expected) in Self.malformed {
            let (end, _, messages, elapsed) = await Self.supervise(Self.printf(bytes) + "; sleep 30", timing: Self.fast)
            guard case let .malformed(why) = end else {
                Issue.record("\(name): \(end)")
                continue
            }
            #expect(why.contains(expected), "\(name): \(why)")
            #expect(messages.isEmpty)
            #expect(elapsed < Self.cut)
        }
        // Two states in a read's one result: more than one port's worth.
        let state = ModemState(device: Self.spec.path, protocol: .mbim)
        let two = try Self.frame(.result(.ok, [state, state]))
        let (end, _, _, _) = await Self.supervise(Self.printf(two) + "; sleep 30", timing: Self.fast)
        #expect(end == .malformed("2 states in one result"))
    }

    @Test func messagesAreDeliveredAndStatesHeldToTheirPort() async throws {
        var state = ModemState(device: "/dev/someone-else", protocol: .qmi)
        state.registration = .home
        let frames = try Self.frame(.ready(capabilities: 0)) + Self.frame(.heartbeat) + Self.frame(.result(.ok, [state]))
        // (A worker reads its request first: the pause keeps this one from exiting before the request is sent.)
        let (end, _, messages, _) = await Self.supervise("sleep 0.2; " + Self.printf(frames), timing: Self.fast)
        #expect(end == .exited(0))
        #expect(messages.count == 2)  // heartbeats are not delivered
        guard case let .result(_, states)? = messages.last, let got = states.first else {
            Issue.record("no result: \(messages)")
            return
        }
        var holders: (ModemAccessPath, String?)?
        let held = WorkerRun.bounded(got, spec: Self.spec, holders: &holders)
        #expect(held.device == Self.spec.path && held.protocol == .mbim && held.registration == .home)
    }

    /// The real worker: reads a simulated modem, and as root drops every capability before touching it.
    @Test func realWorkerReadsAndDropsCapabilities() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-4g-lte", control: false)
        let launch = ModemWorkerLaunch(executable: TestPaths.reach, arguments: ["modem-worker"])
        let spec = ModemPortSpec(path: sim.link, protocol: .mbim)
        let timing = WorkerTiming(requestTimeout: .seconds(2), readTimeout: .seconds(6))
        var messages: [WorkerMessage] = []
        var ending: WorkerEnd?
        for await event in WorkerRun.events(launch, job: .read(spec, ModemReadOptions(requestTimeout: .seconds(2), access: .direct)),
                                            timing: timing, label: sim.link) {
            switch event {
            case let .message(m): messages.append(m)
            case let .ended(e, _): ending = e
            }
        }
        #expect(ending == .exited(0))
        guard case let .ready(capabilities)? = messages.first else {
            Issue.record("no ready message: \(messages)")
            return
        }
        if TestSupport.isRoot { #expect(capabilities == 0, "capabilities left: \(String(capabilities, radix: 16))") }
        guard case let .result(health, states)? = messages.last else {
            Issue.record("no result: \(messages)")
            return
        }
        #expect(health.available)
        #expect(states.first?.generation == .g4, "\(states)")
    }

    /// By hand, `reach modem-worker` refuses to run: fd 3 is not its socket.
    @Test func workerCommandByHandIsAUsageError() async throws {
        let r = try await runReach(["modem-worker"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("started by reach itself"))
    }
}
