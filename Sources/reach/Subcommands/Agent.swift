// `reach agent`: the long-running monitor. Reports go to the JSON-lines log (and optionally a Prometheus textfile);
// SIGTERM/SIGINT stop it gracefully (the last line is written), SIGHUP reloads the configuration.

import GatewayReach
import ReachAgent
import ReachCommandLine
import ReachLog

extension Reach {
    struct Agent: Subcommand {
        static let spec = CommandSpec(
            name: "agent",
            abstract: "Watch routes, modems and WiFi; write a report line at every change and every interval.",
            discussion: """
                Signals: SIGTERM or SIGINT stop gracefully (a last "stop" line is written); SIGHUP reloads the \
                configuration (a bad file is refused, the running one kept) and reopens the report log.
                Exit status: 0 stopped by a signal, 1 an unexpected failure (systemd/procd restart it), 64 bad \
                usage, 78 bad configuration.
                """,
            options: [
                OptionSpec("config", .value("FILE"), help: "The configuration file (default: \(AgentConfig.defaultPath) when it exists, else the built-in defaults)."),
                OptionSpec("check-config", help: "Check the configuration, print it with every default filled in, and exit (0 valid, 78 not)."),
            ])

        var config: String?
        var checkConfig: Bool

        init(_ p: ParsedArguments) throws(UsageError) {
            config = try configOption(p)
            checkConfig = p.flag("check-config")
        }

        func run() async -> Int32 {
            guard let cfg = loadConfig(config) else { return ExitStatus.config }
            if checkConfig {
                print(cfg.json.prettySerialized())
                return ExitStatus.ok
            }
            let (logger, level) = bootstrapLogging(cfg.logLevel)
            let log = ReportLog(settings: ReportLog.Settings(cfg.report), logger: logger)
            let prometheus = cfg.prometheusTextfile.map { PrometheusTextfile(path: $0, logger: logger) }
            // The state file, the Varlink socket and the hooks (`api`) are the hub's outputs too, each fed by a sink of
            // its own; modems are read in worker processes while `modems.worker` is true.
            let agent = AgentAssembly(
                config: cfg, configPath: config, log: log, prometheus: prometheus, onLine: nil, api: true,
                clock: ContinuousAgentClock(), modemWorker: Reach.modemWorker, reloadOnSIGHUP: true, logLevel: level,
                logger: logger)
            logger.info(
                "Agent started",
                metadata: [
                    "version": "\(GatewayReachVersion.string)", "report.path": "\(cfg.report.path)",
                    "report.interval_seconds": "\(cfg.report.intervalSeconds)",
                ])
            await agent.run()
            return ExitStatus.ok
        }
    }
}

/// Records to stderr (journald and procd's logd take it from there), for every logger of the process, at a level that
/// a reload can change (`log_level`).
func bootstrapLogging(_ level: AgentConfig.LogLevel) -> (Logger, LogLevelSwitch) {
    let levelSwitch = LogLevelSwitch(level)
    Logger.bootstrap(level: levelSwitch)
    return (Logger(label: "reach"), levelSwitch)
}
