// `reach agent`: the long-running monitor. Reports go to the JSON-lines log (and optionally a Prometheus textfile);
// SIGTERM/SIGINT stop it gracefully (the last line is written), SIGHUP reloads the configuration.

import ArgumentParser
import GatewayReach
import Glibc
import Logging
import ReachAgent

extension Reach {
    struct Agent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Watch routes, modems and WiFi; write a report line at every change and every interval.",
            discussion: """
                Signals: SIGTERM or SIGINT stop gracefully (a last "stop" line is written); SIGHUP reloads the \
                configuration (a bad file is refused, the running one kept) and reopens the report log.
                Exit status: 0 stopped by a signal, 1 a service failed (e.g. the rtnetlink monitor), 64 bad usage, \
                78 bad configuration.
                """)

        @Option(name: .long, help: ArgumentHelp("The configuration file (default: \(AgentConfig.defaultPath) when it exists, else the built-in defaults).", valueName: "FILE"))
        var config: String?

        @Flag(name: .long, help: "Check the configuration, print it with every default filled in, and exit (0 valid, 78 not).")
        var checkConfig = false

        func run() async throws {
            let cfg = try loadConfigOrExit(config)
            if checkConfig {
                print(cfg.json.prettySerialized())
                return
            }
            let logger = bootstrapLogging(cfg.logLevel)
            let log = ReportLog(settings: ReportLog.Settings(cfg.report), logger: logger)
            let prometheus = cfg.prometheusTextfile.map { PrometheusTextfile(path: $0, logger: logger) }
            let agent = AgentAssembly(
                config: cfg, configPath: config, log: log, prometheus: prometheus, onLine: nil,
                clock: ContinuousAgentClock(), reloadOnSIGHUP: true, logger: logger)
            logger.info(
                "Agent started",
                metadata: [
                    "version": "\(GatewayReachVersion.string)", "report.path": "\(cfg.report.path)",
                    "report.interval_seconds": "\(cfg.report.intervalSeconds)", "services": "\(agent.services.count)",
                ])
            do {
                try await agent.run(logger: logger)
            } catch {
                logger.error("Agent stopped on a failure", metadata: ["error": "\(error)"])
                throw ExitCode.failure
            }
        }
    }
}

/// Loads the configuration; a bad one prints every problem (key path and what was expected) and exits 78.
func loadConfigOrExit(_ path: String?) throws -> AgentConfig {
    switch ConfigFile.load(path) {
    case let .success(c):
        return c
    case let .failure(e):
        var err = StandardError()
        let file = path ?? AgentConfig.defaultPath
        for p in e.problems { print("reach: \(file): \(p)", to: &err) }
        throw ReachExit.config
    }
}

/// swift-log to stderr (journald and procd's logd take it from there), bootstrapped once per process.
func bootstrapLogging(_ level: AgentConfig.LogLevel) -> Logger {
    LoggingSystem.bootstrap { label in
        var h = StreamLogHandler.standardError(label: label)
        h.logLevel = level.loggerLevel
        return h
    }
    var logger = Logger(label: "reach")
    logger.logLevel = level.loggerLevel
    return logger
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var bytes = Array(string.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
