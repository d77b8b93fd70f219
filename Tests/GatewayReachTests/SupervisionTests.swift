import GatewayReach
import ReachTestSupport
import Synchronization
import Testing

/// `superviseSource`, behind every shared source: a source whose stream ends on its own is reported unavailable and
/// started again after a backoff that doubles while it keeps failing and drops back to 1 s once it delivers. Time is
/// the manual clock's and the jitter's random unit is fixed at the middle (no spread); nothing here waits for a
/// backoff in real time.
@Suite struct SupervisionTests {
    final class Shared<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func with<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    @Test func anEndedSourceIsRestartedWithBackoff() async throws {
        let clock = ManualClock()
        let starts = Shared(0)
        let published = Shared<[(available: Bool, values: [Int])]>([])
        // Starts 1 and 3 deliver one value and end; start 2 ends at once; start 4 delivers and stays open.
        let (open, keep) = AsyncStream.makeStream(of: (SourceHealth, [Int]).self)
        let task = Task {
            await superviseSource(
                "Test", name: "t", clock: clock, logger: testLogger(), unit: { 0.5 },
                stopped: (SourceHealth(available: false, reason: "restarting"), []),
                updates: {
                    let n = starts.with { $0 += 1; return $0 }
                    if n == 4 {
                        keep.yield((.ok, [4]))
                        return open
                    }
                    return AsyncStream { c in
                        if n != 2 { c.yield((.ok, [n])) }
                        c.finish()
                    }
                },
                publish: { (value: (SourceHealth, [Int])) in published.with { $0.append((value.0.available, value.1)) } })
        }
        defer { task.cancel() }
        func settled(starts n: Int) async -> Bool {
            await eventually("start \(n) ended and its backoff began") {
                starts.with { $0 } == n && clock.sleepers == 1
            }
        }

        #expect(await settled(starts: 1))
        clock.advance(by: .milliseconds(999))
        #expect(starts.with { $0 } == 1, "restarted before the 1 s backoff")
        clock.advance(by: .milliseconds(1))
        #expect(await settled(starts: 2))
        // Start 2 delivered nothing: the next wait is 2 s.
        clock.advance(by: .milliseconds(1999))
        #expect(starts.with { $0 } == 2, "restarted before the doubled 2 s backoff")
        clock.advance(by: .milliseconds(1))
        #expect(await settled(starts: 3))
        // Start 3 delivered: back to 1 s.
        clock.advance(by: .seconds(1))
        #expect(await eventually("start 4 delivered") { published.with { $0.last?.values } == [4] })

        let seen = published.with { $0 }
        #expect(seen.map(\.available) == [true, false, false, true, false, true])
        #expect(seen.map(\.values) == [[1], [], [], [3], [], [4]])
        keep.finish()
    }
}
