// `reach watch`: the current status, then one line per change as it happens, until interrupted. The agent's hub
// without its files: one `Reachability` per target, the same sources and change detection; lines go to stdout.

import GatewayReach
import Glibc
import ReachAgent
import ReachCommandLine

extension Reach {
    struct Watch: Subcommand {
        static let spec = CommandSpec(
            name: "watch",
            abstract: "Print the status now, then one line per change, until interrupted.",
            discussion: """
                Hold-down and hysteresis come from the configuration (--config), as in the agent; --hold-down \
                overrides the hold-down. A target option replaces the configured targets; --modem, --wifi and the \
                other source options override the configuration's modems and wifi sections.
                Exit status: 0 interrupted, 64 bad usage, 78 bad configuration.
                """,
            options: [
                OptionSpec("json", help: "Print report lines (JSON, one object per line) instead of text."),
                OptionSpec("hold-down", .value("SECONDS"), help: "Seconds a loss must last before it is printed (overrides the config)."),
            ] + TargetOptions.specs + SourceOptions.specs)

        var json: Bool
        var sources: SourceOptions
        var holdDown: Double?
        var targetOptions: TargetOptions

        init(_ p: ParsedArguments) throws(UsageError) {
            json = p.flag("json")
            sources = try SourceOptions(p)
            targetOptions = try TargetOptions(p)
            if let text = p.value("hold-down") {
                guard let v = Double(text), v >= 0, v <= 3600 else {
                    throw UsageError("--hold-down must be a number of seconds from 0 to 3600, got '\(text)'")
                }
                holdDown = v
            }
        }

        func run() async -> Int32 {
            guard var cfg = sources.configuration() else { return ExitStatus.config }
            if let target = targetOptions.target { cfg.targets = [target] }
            if let holdDown { cfg.changes.holdDownSeconds = holdDown }
            // Watch prints changes only; the periodic line is not needed.
            cfg.report.intervalSeconds = 86_400
            let (logger, _) = bootstrapLogging(.warning)
            let json = self.json
            let agent = AgentAssembly(
                config: cfg, configPath: sources.config, log: nil, prometheus: nil,
                onLine: { type, line, snapshot, change in
                    switch type {
                    case .periodic, .stop: return
                    case .start, .change:
                        print(json ? line.serialized() : WatchText.line(type, snapshot, change))
                        fflush(nil)
                    }
                },
                // --resolve-timeout bounds each lookup of a host target, as in `reach status`.
                clock: ContinuousAgentClock(), modemWorker: Reach.modemWorker,
                resolveTimeout: .seconds(targetOptions.resolveTimeout), reloadOnSIGHUP: false, logger: logger)
            await agent.run()
            return ExitStatus.ok
        }
    }
}
