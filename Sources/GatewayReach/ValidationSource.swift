// Validation as one more source of a `Reachability`: one round of the configured probes per uplink when its turn
// comes (`ValidationBook` decides: interval, retry, backoff, down_after/up_after), each round on a task of its own,
// the readings published as the validation part. The uplinks are the gateway's, the same in every target's snapshot:
// every instance with the same validation settings shares one source (one set of probes per uplink in the process),
// and the instances hand it the uplinks they derive (`UplinkBoard`), the newest of which it probes.

import ReachCore
import ReachLog
import ReachProbe
import Synchronization

/// Runs one round of `probes` through `uplink`, each probe within `timeout`. Production: `ValidationProber.round`.
public typealias ValidationRoundRunner =
    @Sendable (_ probes: [ProbeSpec], _ uplink: ValidationSubject, _ timeout: Duration) async -> ValidationRound

/// The uplinks a validation source probes: the newest set an instance derived (reachable or not), and a wake-up.
public final class UplinkBoard: Sendable {
    private let latest = Mutex<[Uplink]?>(nil)
    /// Signalled when the uplinks may have changed (and when a round ended).
    public let wakeup = Wakeup()

    public init() {}

    /// Hands over the uplinks as an instance derived them now.
    public func offer(_ uplinks: [Uplink]) {
        latest.withLock { $0 = uplinks }
        wakeup.signal()
    }

    /// nil until an instance has read its route.
    public var uplinks: [Uplink]? { latest.withLock { $0 } }
}

/// Validates the uplinks of a board.
public protocol ValidationSource: Sendable {
    /// Instances whose validation sources have the same id share one (one round per uplink at a time, whoever asks).
    var id: String { get }
    /// Validates what `board` holds until the task is cancelled; `publish` gets the part whenever it changes, the first
    /// one once every reachable uplink has had its first round.
    func run(board: UplinkBoard, publish: @escaping @Sendable (ValidationPart) -> Void) async
}

/// The configured probes through sockets bound to each uplink (`ValidationProber`), or a runner a test scripts.
public struct ProbeValidationSource: ValidationSource {
    public var settings: AgentConfig.Validation
    public var clock: any MonitorClock
    public var wall: @Sendable () -> Timestamp
    public var logger: Logger
    private let runner: ValidationRoundRunner
    /// Numbers in 0..<1 for the schedule's jitter.
    private let random: @Sendable () -> Double
    /// Tells apart sources whose rounds a test scripts (production has none).
    private let injected: String?

    /// - Parameters:
    ///   - runner: nil: the real probes.
    ///   - random: nil: the system generator.
    ///   - scope: with a runner or random of the caller's: what tells its sources apart from others' (sources of one
    ///     scope with equal settings are one source; nil: this source shares with none).
    public init(
        settings: AgentConfig.Validation, clock: any MonitorClock, wall: @escaping @Sendable () -> Timestamp = { .now() },
        runner: ValidationRoundRunner? = nil, random: (@Sendable () -> Double)? = nil, scope: String? = nil,
        logger: Logger = Logger.discarding(label: "gatewayreach")
    ) {
        self.settings = settings
        self.clock = clock
        self.wall = wall
        self.logger = logger
        self.runner = runner ?? { probes, uplink, timeout in await ValidationProber.round(probes, uplink: uplink, timeout: timeout) }
        self.random = random ?? { .random(in: 0..<1) }
        self.injected = runner == nil && random == nil ? nil : "injected:" + (scope ?? "\(UInt64.random(in: 0...UInt64.max))")
    }

    public var id: String { (injected.map { $0 + "|" } ?? "") + settings.json.serialized() }

    /// Rounds that ended, waiting for the loop: (uplink, round, when it ended).
    private final class Inbox: Sendable {
        private let items = Mutex<[(String, ValidationRound, Duration)]>([])
        func put(_ item: (String, ValidationRound, Duration)) { items.withLock { $0.append(item) } }
        func take() -> [(String, ValidationRound, Duration)] { items.withLock { s in defer { s = [] }; return s } }
    }

    public func run(board: UplinkBoard, publish: @escaping @Sendable (ValidationPart) -> Void) async {
        let (clock, runner, probes, wakeup) = (clock, runner, settings.probes, board.wakeup)
        let timeout = settings.policy.timeout
        let inbox = Inbox()
        var book = ValidationBook(policy: settings.policy)
        var published: ValidationPart?
        while !Task.isCancelled {
            for (name, round, at) in inbox.take() {
                book.record(name, round, at: at, wall: wall(), random: random())
                if let r = book.uplinks[name], r.rounds == 1 || round.verdict != .validated {
                    logger.debug(
                        "Validation round",
                        metadata: [
                            "uplink": "\(name)", "verdict": "\(round.verdict?.rawValue ?? "none")",
                            "probes": "\(round.outcomes.map(\.text).joined(separator: "; "))",
                        ])
                }
            }
            // The uplinks are known once an instance has read its route; until then there is nothing to probe.
            if let uplinks = board.uplinks {
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
                // The first part goes out once every reachable uplink has had its first round: the start event waits
                // for it (within the start-up grace), so it does not open with "validation pending".
                let part = book.part
                if (published != nil || book.settled) && part != published {
                    published = part
                    publish(part)
                }
            }
            await clock.sleep(until: book.nextDeadline, orUntil: wakeup)
        }
    }
}

extension ValidationSource {
    /// The parts, through the process's one source per id: its board is the one every subscriber offers uplinks to.
    func sharedUpdates(board: UplinkBoard) -> AsyncStream<ValidationPart> {
        let (id, source) = (id, self)
        return SourceRegistry.shared.subscribe(id: "validation:" + id, keepLatest: true) { publish in
            await source.run(board: board, publish: publish)
        }
    }

    /// The board of this source's id in the process (made by the first to ask, kept while any instance runs it).
    func board() -> UplinkBoard { UplinkBoards.shared.board(id) }
}

/// One board per validation source id, counted by the instances that use it.
final class UplinkBoards: Sendable {
    static let shared = UplinkBoards()
    private let boards = Mutex<[String: (UplinkBoard, Int)]>([:])

    func board(_ id: String) -> UplinkBoard {
        boards.withLock { b in
            let entry = b[id] ?? (UplinkBoard(), 0)
            b[id] = (entry.0, entry.1 + 1)
            return entry.0
        }
    }

    /// An instance no longer uses the board of `id`.
    func release(_ id: String) {
        boards.withLock { b in
            guard let (board, users) = b[id] else { return }
            b[id] = users > 1 ? (board, users - 1) : nil
        }
    }
}
