// Validated uplinks: whether a path that exists also carries traffic.
//
// The route, the carrier and the modem say a packet can leave; only traffic says it arrives. Opt-in probes (DNS, ICMP,
// HTTP, `ValidationProbes.swift`) go out of each uplink; this file judges their outcomes, the way Android's
// NetworkMonitor (AOSP `packages/modules/NetworkStack/.../NetworkMonitor.java`) marks a network validated, partial or
// captive portal, and debounces the verdicts the way OpenWrt's mwan3track scores its WANs (`down` failed rounds take a
// WAN offline, `up` good rounds bring it back).
//
// - A **round** runs every configured probe once through one uplink. Its verdict: every probe answered → validated;
//   a captive portal answered the HTTP probe → captive_portal; some answered, some did not → partial; none → failed.
//   Probes that do not apply to the uplink (no gateway to ping, no resolver known) are skipped, not failed.
// - The **reported state** moves away from validated only after `downAfter` consecutive rounds that were not validated,
//   and back only after `upAfter` validated ones. The first verdict after start needs no `upAfter`: an uplink starts
//   unknown and the first validated round validates it (mwan3track's `initial_state online`, Android's first success),
//   while a failing start still waits for `downAfter` rounds, so a boot-time hiccup is never reported.
// - **Schedule**: one round per `interval` (±10 % jitter, so uplinks and boxes do not probe in step) while the verdict
//   agrees with the state; a round that disagrees (a failure while validated, a success while down) is confirmed after
//   `retryInterval`; while an uplink stays down the interval doubles up to `maxInterval` (Android re-evaluates an
//   unvalidated network at 1 s doubling to 10 min, INITIAL/MAX_REEVALUATE_DELAY_MS), which bounds the bytes a dead
//   metered link costs. A round starts only after the previous one of the same uplink ended: at most one in flight.
//
// Pure: time is a `Duration` on a monotonic clock, the wall time and the jitter's random number are parameters.

/// What validation concluded about an uplink (Android's validated / partial connectivity / captive portal, and
/// NetworkManager's NONE/LIMITED folded into failed).
public enum ValidationState: String, Sendable, Equatable, CaseIterable {
    case validated, partial
    case captivePortal = "captive_portal"
    case failed

    /// "validated", "partial connectivity", "behind a captive portal", "validation failed".
    public var phrase: String {
        switch self {
        case .validated: return "validated"
        case .partial: return "partial connectivity"
        case .captivePortal: return "behind a captive portal"
        case .failed: return "validation failed"
        }
    }
}

/// One probe's outcome in one round.
public struct ProbeOutcome: Sendable, Equatable {
    public enum Result: String, Sendable, Equatable {
        /// The probe got the answer it expects.
        case ok
        /// No answer, or a wrong one.
        case failed
        /// An HTTP probe was answered by a captive portal (a redirect, or a page instead of the expected 204).
        case portal
        /// The probe does not apply to this uplink (no gateway, no resolver known, no route of the address's family).
        case skipped
    }

    /// The probe and where it went: "dns 9.9.9.9", "icmp 192.0.2.1", "http 192.0.2.80".
    public var probe: String
    public var result: Result
    /// A few words: "timed out", "answered NOERROR", "redirected to http://portal.example/", "no gateway".
    public var detail: String
    /// IP bytes this probe sent (headers included), the figure a metered link bills.
    public var bytesSent: Int
    /// How long it took, when it was sent.
    public var milliseconds: Int?
    /// The probe asked the uplink's own next hop (an ICMP echo to the gateway): its answer proves the first hop, not
    /// the way beyond it.
    public var local = false

    public init(
        probe: String, result: Result, detail: String, bytesSent: Int = 0, milliseconds: Int? = nil, local: Bool = false
    ) {
        self.probe = probe
        self.result = result
        self.detail = detail
        self.bytesSent = bytesSent
        self.milliseconds = milliseconds
        self.local = local
    }

    /// "dns 9.9.9.9 timed out".
    public var text: String { probe + " " + detail }
}

/// Every probe of one uplink, once.
public struct ValidationRound: Sendable, Equatable {
    public var outcomes: [ProbeOutcome]

    public init(_ outcomes: [ProbeOutcome]) { self.outcomes = outcomes }

    /// The verdict of the round, nil when every probe was skipped. A gateway that answers while nothing beyond it
    /// does is a dead upstream (failed), not partial connectivity: only probes past the first hop can make a round
    /// partial, unless the gateway is all that is probed.
    public var verdict: ValidationState? {
        let judged = outcomes.filter { $0.result != .skipped }
        if judged.isEmpty { return nil }
        if judged.contains(where: { $0.result == .portal }) { return .captivePortal }
        if judged.allSatisfy({ $0.result == .ok }) { return .validated }
        let remote = judged.filter { !$0.local }
        return (remote.isEmpty ? judged : remote).contains(where: { $0.result == .ok }) ? .partial : .failed
    }

    public var bytesSent: Int { outcomes.reduce(0) { $0 + $1.bytesSent } }
}

/// How validation probes are paced and debounced (config `validation`).
public struct ValidationPolicy: Sendable, Equatable {
    /// The period of rounds while the verdict agrees with the reported state.
    public var interval: Duration
    /// The gap before a round that confirms a disagreeing one (mwan3track's failure_interval / recovery_interval).
    public var retryInterval: Duration
    /// The longest gap while an uplink stays not validated (the backoff's cap).
    public var maxInterval: Duration
    /// Each probe's own bound.
    public var timeout: Duration
    /// Consecutive rounds not validated before a validated uplink is reported otherwise.
    public var downAfter: Int
    /// Consecutive validated rounds before an uplink that was not validated is reported validated.
    public var upAfter: Int
    /// The spread of each gap: ±`jitter` of it.
    public var jitter: Double

    public init(
        interval: Duration = Defaults.duration(Defaults.validationIntervalSeconds),
        retryInterval: Duration = Defaults.duration(Defaults.validationRetryIntervalSeconds),
        maxInterval: Duration = Defaults.duration(Defaults.validationMaxIntervalSeconds),
        timeout: Duration = Defaults.duration(Defaults.validationTimeoutSeconds), downAfter: Int = Defaults.validationDownAfter,
        upAfter: Int = Defaults.validationUpAfter, jitter: Double = 0.1
    ) {
        self.interval = interval
        self.retryInterval = retryInterval
        self.maxInterval = maxInterval
        self.timeout = timeout
        self.downAfter = downAfter
        self.upAfter = upAfter
        self.jitter = jitter
    }

    /// One round, no hysteresis: `reach status --validate`.
    public static func once(timeout: Duration) -> ValidationPolicy {
        ValidationPolicy(timeout: timeout, downAfter: 1, upAfter: 1, jitter: 0)
    }

    /// `gap` spread by ±jitter; `random` in 0..<1.
    func jittered(_ gap: Duration, _ random: Double) -> Duration {
        let factor = 1 + jitter * (2 * min(max(random, 0), 1) - 1)
        return gap * factor
    }
}

/// One uplink's validation: the reported state with its hysteresis, the schedule of its rounds, and its counters.
public struct UplinkValidation: Sendable, Equatable {
    /// The reported state; nil until the first verdict.
    public private(set) var state: ValidationState?
    /// Consecutive rounds that were not validated (the `×3` of the text), and validated ones.
    public private(set) var failures = 0
    public private(set) var successes = 0
    /// Wall time of the last validated round.
    public private(set) var lastOK: Timestamp?
    /// What the last round found wrong, each with the number of consecutive rounds it has been so:
    /// "dns 9.9.9.9 timed out ×3". Nil when the last round was fine.
    public private(set) var reason: String?
    /// The last round's outcomes.
    public private(set) var lastRound: [ProbeOutcome] = []
    /// IP bytes every round of this uplink has sent, and the number of rounds.
    public private(set) var bytesSent: UInt64 = 0
    public private(set) var rounds: UInt64 = 0
    /// When the next round is due (monotonic).
    public private(set) var due: Duration
    /// A round is running now.
    public private(set) var inFlight = false
    /// The uplink is not reachable: no rounds until it is again. The state is kept, so a short loss of the path
    /// (a DHCP renew, a roam) neither resets nor reports validation.
    public private(set) var paused = false
    /// The end of the last round: the next never starts before `retryInterval` after it.
    private var lastEnd: Duration?
    /// The current gap while not validated (doubles up to `maxInterval`); nil while validated.
    private var backoff: Duration?
    /// Consecutive rounds each failing probe has failed with the same words.
    private var repeats: [String: Repeat] = [:]

    private struct Repeat: Sendable, Equatable {
        var detail: String
        var count: Int
    }

    /// A new uplink; its first round is due at `now`.
    public init(at now: Duration) { due = now }

    /// Starts a round if none is running and the uplink is not paused; false otherwise.
    public mutating func begin() -> Bool {
        guard !inFlight, !paused else { return false }
        inFlight = true
        return true
    }

    /// The uplink stopped being reachable: no rounds. A round in flight is still recorded when it ends.
    public mutating func pause() { paused = true }

    /// The uplink is reachable again: a round soon, but never sooner than `retryInterval` after the last one, so a
    /// flapping link cannot make the probes flap too.
    public mutating func resume(policy: ValidationPolicy, at now: Duration) {
        guard paused else { return }
        paused = false
        due = max(now, lastEnd.map { $0 + policy.retryInterval } ?? now)
    }

    /// Takes a finished round: the counters, the reported state, and when the next round is due.
    /// - Parameters:
    ///   - now: when it ended (monotonic); `wall`: the same moment on the wall clock (for `last_ok`).
    ///   - random: a number in 0..<1 for the jitter.
    public mutating func record(
        _ round: ValidationRound, policy: ValidationPolicy, at now: Duration, wall: Timestamp, random: Double
    ) {
        inFlight = false
        lastEnd = now
        rounds += 1
        bytesSent += UInt64(round.bytesSent)
        lastRound = round.outcomes
        guard let verdict = round.verdict else {
            // Nothing applies (a point-to-point uplink and only `icmp gateway` configured): no verdict either way.
            repeats = [:]
            reason = "no configured probe applies: "
                + round.outcomes.map(\.text).joined(separator: "; ")
            due = now + policy.jittered(policy.interval, random)
            return
        }
        noteProblems(round)
        if verdict == .validated {
            successes += 1
            failures = 0
            lastOK = wall
            if state == nil || state == .validated || successes >= policy.upAfter { state = .validated }
        } else {
            failures += 1
            successes = 0
            if state == nil || state == .validated {
                if failures >= policy.downAfter { state = verdict }
            } else {
                state = verdict  // already not validated: which way it fails follows at once
            }
        }
        let gap: Duration
        if let state, (verdict == .validated) == (state == .validated) {
            if state == .validated {
                backoff = nil
                gap = policy.interval
            } else {
                let next = backoff.map { $0 * 2 } ?? policy.interval
                backoff = min(max(next, policy.interval), max(policy.maxInterval, policy.interval))
                gap = backoff!
            }
        } else {
            gap = policy.retryInterval  // confirm the change (or a failing start) soon
        }
        due = now + policy.jittered(gap, random)
    }

    private mutating func noteProblems(_ round: ValidationRound) {
        var next: [String: Repeat] = [:]
        var parts: [String] = []
        for o in round.outcomes where o.result == .failed || o.result == .portal {
            let count = repeats[o.probe].map { $0.detail == o.detail ? $0.count + 1 : 1 } ?? 1
            next[o.probe] = Repeat(detail: o.detail, count: count)
            parts.append(o.text + (count > 1 ? " ×\(count)" : ""))
        }
        repeats = next
        reason = parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// What the snapshot shows of it.
    public var reading: ValidationReading {
        ValidationReading(state: state, lastOK: lastOK, failures: failures, reason: reason, bytesSent: bytesSent)
    }
}

/// Every uplink's validation, keyed by interface: which uplink is due, what it concluded. A value, driven by the
/// validation service (ReachAgent) with the clock's time.
public struct ValidationBook: Sendable, Equatable {
    public var policy: ValidationPolicy
    public private(set) var uplinks: [String: UplinkValidation] = [:]

    public init(policy: ValidationPolicy) { self.policy = policy }

    /// The uplinks as the routes show them now: a new one is due at once, a gone one is forgotten, an unreachable one
    /// is paused (its state kept), one reachable again resumes.
    public mutating func sync(_ reachable: [String: Bool], at now: Duration) {
        for name in uplinks.keys where reachable[name] == nil { uplinks[name] = nil }
        for (name, up) in reachable {
            var u = uplinks[name] ?? UplinkValidation(at: now)
            if up { u.resume(policy: policy, at: now) } else { u.pause() }
            uplinks[name] = u
        }
    }

    /// The uplinks whose round is due at `now`, by name.
    public func due(at now: Duration) -> [String] {
        uplinks.filter { !$0.value.inFlight && !$0.value.paused && $0.value.due <= now }.keys.sorted()
    }

    /// Marks a round of `name` as started; false when it cannot start (unknown, paused, or one in flight).
    public mutating func begin(_ name: String) -> Bool {
        uplinks[name]?.begin() ?? false
    }

    /// Takes the round of `name` that ended at `now`. A round of an uplink gone meanwhile is dropped.
    public mutating func record(_ name: String, _ round: ValidationRound, at now: Duration, wall: Timestamp, random: Double) {
        uplinks[name]?.record(round, policy: policy, at: now, wall: wall, random: random)
    }

    /// When the next round is due, if any uplink waits for one.
    public var nextDeadline: Duration? {
        uplinks.values.filter { !$0.inFlight && !$0.paused }.map(\.due).min()
    }

    /// Whether every uplink that is not paused has had a round (the first answer is complete).
    public var settled: Bool { uplinks.values.allSatisfy { $0.paused || $0.rounds > 0 } }

    public var part: ValidationPart { ValidationPart(uplinks: uplinks.mapValues(\.reading)) }
}

/// What one uplink's validation shows in a snapshot.
public struct ValidationReading: Sendable, Equatable {
    public var state: ValidationState?
    public var lastOK: Timestamp?
    public var failures: Int
    public var reason: String?
    public var bytesSent: UInt64

    public init(
        state: ValidationState?, lastOK: Timestamp? = nil, failures: Int = 0, reason: String? = nil, bytesSent: UInt64 = 0
    ) {
        self.state = state
        self.lastOK = lastOK
        self.failures = failures
        self.reason = reason
        self.bytesSent = bytesSent
    }
}

/// The validation source's part of a snapshot, as the modems and WiFi have theirs: each uplink's reading by interface.
/// A snapshot without one has validation off.
public struct ValidationPart: Sendable, Equatable {
    public var uplinks: [String: ValidationReading]

    public init(uplinks: [String: ValidationReading] = [:]) { self.uplinks = uplinks }
}
