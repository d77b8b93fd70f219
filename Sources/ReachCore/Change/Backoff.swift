// Restarting what failed: exponential backoff, bounded, with jitter (so that several gateways that lost their
// modems together, or several modems on one gateway, do not retry in lockstep). One schedule for every restart in
// the product: a modem port reopened, a source whose stream ended, the rtnetlink monitor started again.

/// Delays between reopening attempts: `initial × multiplier^attempt`, capped at `maximum`, each spread by up to
/// ±`jitter` (a fraction) of itself. Pure: the random source is a parameter.
public struct Backoff: Sendable, Equatable, Codable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    /// 0 ... 1: the fraction of each delay that is randomised.
    public var jitter: Double

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60), multiplier: Double = 2, jitter: Double = 0.2) {
        precondition(initial > .zero && maximum >= initial, "backoff: 0 < initial <= maximum")
        precondition(multiplier >= 1, "backoff: multiplier >= 1")
        precondition((0...1).contains(jitter), "backoff: jitter in 0...1")
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// The delay before attempt `attempt` (0 for the first retry). `unit` is a random value in [0, 1).
    public func delay(attempt: Int, unit: Double) -> Duration {
        let base = min(seconds(initial) * pow(multiplier, Double(max(0, attempt))), seconds(maximum))
        let spread = base * jitter * (2 * unit - 1)
        let value = min(max(base + spread, 0), seconds(maximum))
        // A maximum beyond Int64 nanoseconds (292 years) is clamped, never trapped on.
        let nanoseconds = value * 1e9
        return .nanoseconds(nanoseconds < 9.2e18 ? Int64(nanoseconds) : Int64.max)
    }

    /// `delay(attempt:unit:)` with a random unit from the system generator.
    public func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, unit: Double.random(in: 0..<1))
    }

    private func seconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        return Double(s) + Double(a) / 1e18
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var n = Int(exponent)
        while n > 0 && result < 1e12 {
            result *= base
            n -= 1
        }
        return result
    }
}
