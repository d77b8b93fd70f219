// The validation source: one round of the configured probes per uplink when its turn comes (`ValidationBook` decides),
// each round on a thread of its own, the readings handed to the hub as the validation part, as the modem and WiFi
// sources hand theirs. Runs only when `validation.enabled`.

import GatewayReach
import Logging
import ServiceLifecycle
import Synchronization

/// Runs one round of `probes` through `uplink`, each probe within `timeout`. Production: `ValidationProber.round`.
public typealias ValidationRoundRunner =
    @Sendable (_ probes: [ProbeSpec], _ uplink: ValidationSubject, _ timeout: Duration) async -> ValidationRound

public struct ValidationService: Service {
    let hub: StatusHub
    let settings: AgentConfig.Validation
    let clock: any AgentClock
    let wall: @Sendable () -> Timestamp
    let random: @Sendable () -> Double
    let runner: ValidationRoundRunner
    let logger: Logger

    /// - Parameters:
    ///   - random: numbers in 0..<1 for the jitter (tests pass a constant).
    ///   - runner: nil: the real probes.
    public init(
        hub: StatusHub, settings: AgentConfig.Validation, clock: any AgentClock,
        wall: @escaping @Sendable () -> Timestamp = { .now() }, random: @escaping @Sendable () -> Double = { .random(in: 0..<1) },
        runner: ValidationRoundRunner? = nil, logger: Logger
    ) {
        self.hub = hub
        self.settings = settings
        self.clock = clock
        self.wall = wall
        self.random = random
        self.runner = runner ?? { probes, uplink, timeout in await ValidationProber.round(probes, uplink: uplink, timeout: timeout) }
        self.logger = logger
    }

    /// Rounds that ended, waiting for the loop: (uplink, round, when it ended).
    private final class Inbox: Sendable {
        private let items = Mutex<[(String, ValidationRound, Duration)]>([])
        func put(_ item: (String, ValidationRound, Duration)) { items.withLock { $0.append(item) } }
        func take() -> [(String, ValidationRound, Duration)] { items.withLock { s in defer { s = [] }; return s } }
    }

    public func run() async {
        let (hub, clock, runner, probes) = (hub, clock, runner, settings.probes)
        let timeout = settings.policy.timeout
        let wakeup = hub.validationWakeup
        let inbox = Inbox()
        var book = ValidationBook(policy: settings.policy)
        var published: ValidationPart?
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                for (name, round, at) in inbox.take() {
                    book.record(name, round, at: at, wall: wall(), random: random())
                    if let r = book.uplinks[name], r.rounds == 1 || round.verdict != .validated {
                        logger.debug(
                            "Validation round", metadata: ["uplink": "\(name)", "verdict": "\(round.verdict?.rawValue ?? "none")",
                                                           "probes": "\(round.outcomes.map(\.text).joined(separator: "; "))"])
                    }
                }
                // The hub knows the uplinks once the route is read; until then there is nothing to probe.
                if let uplinks = await hub.validationUplinks() {
                    let now = clock.now()
                    book.sync(Dictionary(uplinks.map { ($0.interface, $0.reachable) }, uniquingKeysWith: { a, _ in a }), at: now)
                    for name in book.due(at: now) {
                        guard let uplink = uplinks.first(where: { $0.interface == name }), book.begin(name) else { continue }
                        let subject = ValidationSubject(uplink)
                        Task {
                            let round = await runner(probes, subject, timeout)
                            inbox.put((name, round, clock.now()))
                            wakeup.signal()
                        }
                    }
                    // The first part goes out once every reachable uplink has had its first round: the start line
                    // waits for it (within the start-up grace), so it does not open with "validation pending".
                    let part = book.part
                    if (published != nil || book.settled) && part != published {
                        published = part
                        await hub.setValidation(part)
                    }
                }
                await clock.sleep(until: book.nextDeadline, orUntil: wakeup)
            }
        } onGracefulShutdown: {
            wakeup.signal()
        }
    }
}
