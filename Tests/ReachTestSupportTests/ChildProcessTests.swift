// The child-process layer every other test target stands on: signals reach the child although the test runner's
// threads block them, deadlines hold, whole process groups go, output never blocks the child, and the slot rules
// (reentrant for a holder, no waiting on the pool, a patience limit) behave as ChildSlots.swift says.

import Foundation
import ReachTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether process `pid` is gone (or only a zombie nobody has reaped yet).
func isGone(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
    // "PID (comm) STATE ...": the state follows the last ')'.
    return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
}

/// A flag one task or thread sets and another reads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}

@Suite struct SpawnedTests {
    /// Swift Testing's threads block SIGTERM and more; a child must start with nothing blocked (Foundation's Process
    /// passed the mask on, and such children ran on after SIGTERM until SIGKILL). grep shows the mask it inherited.
    @Test func theChildStartsWithNoSignalBlocked() async throws {
        let direct = try await Spawned.start(["grep", "SigBlk", "/proc/self/status"], stdout: .pipe)
        #expect(try await direct.readLine(timeout: 10) == "SigBlk:\t0000000000000000")
        let viaThread = try await TestSupport.run(["grep", "SigBlk", "/proc/self/status"])
        #expect(viaThread.stdout == "SigBlk:\t0000000000000000\n")
    }

    /// A shell that exits 0 on SIGTERM: stop() sees 0 when SIGTERM was delivered and handled.
    @Test func sigtermReachesTheChild() async throws {
        let child = try await Spawned.start(
            ["sh", "-c", "trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done"], stdout: .pipe)
        #expect(try await child.readLine(timeout: 10) == "ready")
        #expect(await child.stop(grace: 5) == 0)
        #expect(!child.isRunning)
    }

    @Test func runPassesInputAndCollectsMoreThanAPipeHolds() async throws {
        let text = (0..<20_000).map { "line \($0)\n" }.joined()  // ~200 KB, three times a pipe's buffer
        let r = try await TestSupport.run(["cat"], input: text)
        #expect(r.status == 0 && !r.timedOut)
        #expect(r.stdout == text)
        let err = try await TestSupport.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        #expect(err.status == 3 && err.stdout == "out\n" && err.stderr == "err\n")
    }

    /// The deadline ends the program and what it started in the background.
    @Test func timeoutStopsTheWholeGroup() async throws {
        let pidFile = NSTemporaryDirectory() + "gr-bg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(pidFile) }
        let r = try await TestSupport.run(["sh", "-c", "sleep 30 & echo $! > \(pidFile); wait"], timeout: 0.5)
        #expect(r.timedOut)
        #expect(r.status == 128 + SIGTERM)
        #expect(r.seconds < 5, "took \(r.seconds) s")
        let written = try String(contentsOfFile: pidFile, encoding: .utf8)
        let background = try #require(pid_t(written.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await TestSupport.eventually(timeout: 5) { isGone(background) }, "sleep \(background) outlived its group")
    }

    @Test func aChildThatIgnoresSIGTERMIsKilled() async throws {
        let child = try await Spawned.start(
            ["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], stdout: .pipe)
        #expect(try await child.readLine(timeout: 10) == "ready")
        let status = await child.stop(grace: 0.3)
        #expect(status == 128 + SIGKILL)
    }

    @Test(arguments: [Spawned.Output.pipe, .capture])
    func linesArriveInOrderWithDeadlines(output: Spawned.Output) async throws {
        let child = try await Spawned.start(
            ["sh", "-c", "echo one; sleep 0.2; echo noise; echo two; sleep 30"], stdout: output, stderr: .capture)
        defer { child.stop() }
        #expect(try await child.readLine(timeout: 10) == "one")
        #expect(try await child.stdout?.line(timeout: 10) { $0 == "two" } == "two")
        await #expect(throws: TestFailure.self) { try await child.readLine(timeout: 0.2) }
        #expect(child.stdout?.text == "one\nnoise\ntwo\n")
    }

    @Test func theEndOfOutputIsAnErrorNotAWait() async throws {
        let child = try await Spawned.start(["sh", "-c", "echo last; echo why >&2"], stdout: .pipe, stderr: .capture)
        #expect(try await child.readLine(timeout: 10) == "last")
        let start = ContinuousClock.now
        await #expect(throws: TestFailure.self) { try await child.readLine(timeout: 30) }
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(await child.wait(timeout: 10) == 0)
        #expect(child.errorText == "why\n")
    }

    @Test func aMissingProgramThrowsAndGivesItsSlotBack() async throws {
        let slots = ChildSlots(limit: 1)
        let lease = await slots.acquire()
        #expect(throws: TestFailure.self) { try Spawned(["reach-no-such-program"], lease: lease) }
        #expect(slots.running == 0)
    }
}

@Suite struct ChildSlotsTests {
    /// A task holding a slot gets its next one at once, even with the cap reached; another task waits until both
    /// are given back.
    @Test func aHolderGetsMoreAndOthersWait() async throws {
        let slots = ChildSlots(limit: 1)
        let first = await slots.acquire()
        let second = await slots.acquire()  // same task: at once, over the cap
        #expect(slots.running == 2)
        let granted = Flag()
        let other = Task {
            let lease = await slots.acquire()
            granted.set()
            return lease
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!granted.isSet)
        first.release()
        try await Task.sleep(for: .milliseconds(200))
        #expect(!granted.isSet, "granted while the cap was still reached")
        second.release()
        let lease = await other.value
        #expect(granted.isSet)
        #expect(slots.running == 1)
        lease.release()
        lease.release()  // once only
        #expect(slots.running == 0)
    }

    /// Synchronous code on a task (a pool thread) never waits: it runs over the cap.
    @Test func synchronousCallersOnThePoolDoNotWait() async throws {
        let slots = ChildSlots(limit: 1)
        let held = Task.detached { await slots.acquire() }
        let lease = await held.value
        let start = ContinuousClock.now
        let over = slots.acquireBlocking()
        #expect(ContinuousClock.now - start < .seconds(TestSupport.timingSlack))
        #expect(slots.running == 2)
        over.release()
        lease.release()
    }

    /// A plain thread blocks until a slot is free.
    @Test func plainThreadsBlockUntilASlotIsFree() async throws {
        let slots = ChildSlots(limit: 1)
        let lease = await slots.acquire()
        let done = Flag()
        let thread = Thread {
            slots.acquireBlocking().release()
            done.set()
        }
        thread.start()
        try await Task.sleep(for: .milliseconds(200))
        #expect(!done.isSet)
        lease.release()
        #expect(await TestSupport.eventually(timeout: 5) { done.isSet })
    }

    /// Whatever happens, a waiter runs after `patience` seconds.
    @Test func patienceEndsEveryWait() async throws {
        let slots = ChildSlots(limit: 1, patience: 1)
        let stuck = Task.detached { await slots.acquire() }
        let lease = await stuck.value
        let start = ContinuousClock.now
        let late = await slots.acquire()
        let waited = ContinuousClock.now - start
        #expect(waited >= .seconds(1) && waited < .seconds(5), "\(waited)")
        late.release()
        lease.release()
    }
}

@Suite struct JanitorTests {
    /// What a crashed test run leaves (a running child, its temporary directory, a namespace) is gone once the
    /// janitor's owner is: here a made-up owner whose janitor is dismissed by hand.
    @Test func aJanitorCleansUpAfterItsOwner() async throws {
        let owner = "\(UInt64.random(in: 10_000_000...4_000_000_000))"  // above pid_max: no real process's
        let janitor = try Janitor(owner: owner)
        let child = try await Spawned.start(["sleep", "60"], environment: [Janitor.variable: owner])
        let dir = NSTemporaryDirectory() + "reach-sim-\(owner)-left"
        try FileManager.default.createDirectory(atPath: dir + "/inside", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let namespace = "gr-janitor-\(owner)-1"
        let privileged = TestSupport.isRoot
        if privileged { try await TestSupport.sh(["ip", "netns", "add", namespace]) }
        janitor.dismiss()
        #expect(await janitor.finished(timeout: 20))
        #expect(await child.wait(timeout: 5) == 128 + SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: dir))
        if privileged {
            let left = try await TestSupport.sh(["ip", "netns", "list"])
            #expect(!left.contains(namespace), "\(left)")
            if left.contains(namespace) { _ = try? await TestSupport.run(["ip", "netns", "delete", namespace]) }
        }
    }

    @Test func childrenCarryTheOwnerMark() async throws {
        let owner = try #require(Janitor.shared?.owner)
        #expect(owner == "\(getpid())")
        let r = try await TestSupport.run(["sh", "-c", "echo $\(Janitor.variable)"])
        #expect(r.stdout == owner + "\n")
    }
}
