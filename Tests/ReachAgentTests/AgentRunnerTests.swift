import Glibc
import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

/// The agent's runner and its signals (what swift-service-lifecycle's ServiceGroup and UnixSignals did for us).
/// SIGUSR1/SIGUSR2 stand in for SIGTERM/SIGHUP: the test process must not trap those of the other suites.
@Suite(.serialized, .timeLimit(.minutes(1))) struct AgentRunnerTests {
    @Test func aSignalSentAfterTheWatchExistsArrivesInOrder() async {
        let watch = await SignalWatch([SIGUSR1, SIGUSR2])
        kill(getpid(), SIGUSR2)
        var seen: [Int32] = []
        for await number in watch {
            seen.append(number)
            if seen.count == 1 { kill(getpid(), SIGUSR1) }
            if seen.count == 2 { break }
        }
        #expect(seen == [SIGUSR2, SIGUSR1])
    }

    @Test func aWatchOfNoSignalsEndsAtOnce() async {
        var count = 0
        for await _ in await SignalWatch([]) { count += 1 }
        #expect(count == 0)
    }

    /// The stop signal ends `run()` gracefully: every target's stop line says so.
    @Test func theStopSignalWritesTheStopLines() async throws {
        let (agent, lines, route) = Self.agent(stopSignals: [SIGUSR1])
        route.set(Routes.via("eth0", kind: .ethernet))
        let runner = agent.runner
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await runner.run() }
            #expect(await eventually { !lines.of(.start).isEmpty })
            kill(getpid(), SIGUSR1)
            try await tasks.waitForAll()
        }
        let stops = lines.of(.stop)
        #expect(stops.count == 1)
        #expect(stops.first?["event"]?["reason"]?.stringValue == "graceful shutdown")
    }

    /// A cancelled run stops too, and says it was cancelled.
    @Test func aCancelledRunStopsWithReasonCancelled() async throws {
        let (agent, lines, route) = Self.agent(stopSignals: [])
        route.set(Routes.via("eth0", kind: .ethernet))
        let runner = agent.runner
        let run = Task { await runner.run() }
        #expect(await eventually { !lines.of(.start).isEmpty })
        run.cancel()
        await run.value
        #expect(lines.of(.stop).first?["event"]?["reason"]?.stringValue == "cancelled")
    }

    static func agent(stopSignals: [Int32]) -> (AgentAssembly, LineCollector, FakeRouteSource) {
        var config = AgentConfig()
        config.modems.enabled = false
        config.wifi.enabled = false
        let lines = LineCollector()
        let route = FakeRouteSource()
        let clock = ManualClock()
        let agent = AgentAssembly(
            config: config, configPath: nil, log: nil, prometheus: nil, onLine: lines.handler, clock: clock,
            wall: wallClock(clock), route: route, modems: [], wifi: nil, reloadOnSIGHUP: false, stopSignals: stopSignals,
            logger: testLogger())
        return (agent, lines, route)
    }
}
