import Testing
import ReachCore

/// The one restart schedule (modem ports, supervised sources): Backoff(initial:maximum:multiplier:jitter:).
@Suite struct BackoffTests {
    @Test func doublesUpToTheCap() {
        let b = Backoff(initial: .seconds(1), maximum: .seconds(30), multiplier: 2, jitter: 0)
        #expect((0..<7).map { b.delay(attempt: $0, unit: 0.5) } == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
    }

    @Test func jitterSpreadsWithinBounds() {
        let b = Backoff(initial: .seconds(4), maximum: .seconds(60), multiplier: 2, jitter: 0.25)
        #expect(b.delay(attempt: 0, unit: 0) == .seconds(3))
        #expect(b.delay(attempt: 0, unit: 0.5) == .seconds(4))
        #expect(b.delay(attempt: 0.bitWidth, unit: 0.999_999) <= .seconds(60))  // never above the cap
        for _ in 0..<100 {
            let d = b.delay(attempt: 1)
            #expect(d >= .seconds(6) && d <= .seconds(10))
        }
    }
}
