// `reach watch`: the current status, then one line per change as it happens, until interrupted. The same sources,
// hub and change detection as the agent; lines go to stdout instead of the log.

import ArgumentParser
import GatewayReach
import Glibc
import Logging
import ReachAgent

extension Reach {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the status now, then one line per change, until interrupted.",
            discussion: """
                Hold-down and hysteresis come from the configuration (--config), as in the agent; \
                --hold-down overrides the hold-down. Exit status: 0 interrupted, 64 bad usage, 78 bad configuration.
                """)

        @Flag(name: .long, help: "Print report lines (JSON, one object per line) instead of text.")
        var json = false

        @Option(name: .long, help: ArgumentHelp("The configuration file (default: \(AgentConfig.defaultPath) when it exists).", valueName: "FILE"))
        var config: String?

        @Option(name: .long, help: ArgumentHelp("Seconds a loss must last before it is printed (overrides the config).", valueName: "SECONDS"))
        var holdDown: Double?

        @OptionGroup var targetOptions: TargetOptions

        mutating func validate() throws {
            if let holdDown, !(holdDown >= 0 && holdDown <= 3600) {
                throw ValidationError("--hold-down must be a number of seconds from 0 to 3600, got \(holdDown)")
            }
        }

        func run() async throws {
            var cfg = try loadConfigOrExit(config)
            if targetOptions.host != nil || targetOptions.address != nil || targetOptions.linkLocal {
                cfg.targets = [targetOptions.target]
            }
            if let holdDown { cfg.changes.holdDownSeconds = holdDown }
            // Watch prints changes only; the periodic line is not needed.
            cfg.report.intervalSeconds = 86_400
            let logger = bootstrapLogging(.warning)
            let json = self.json
            let agent = AgentAssembly(
                config: cfg, configPath: config, log: nil, prometheus: nil,
                onLine: { type, line, snapshot, change in
                    switch type {
                    case .periodic, .stop: return
                    case .start, .change:
                        if json {
                            print(line.serialized())
                        } else {
                            print(WatchText.line(type, snapshot, change))
                        }
                        fflush(nil)
                    }
                },
                clock: ContinuousAgentClock(), reloadOnSIGHUP: false, logger: logger)
            try await agent.run(logger: logger)
        }
    }
}
