// `reach diag`: field diagnostics in one run, for the installer. One line per check with a hint for each failure,
// then one verdict line; the exit status is the verdict.

import ArgumentParser
import GatewayReach
import ReachAgent

extension Reach {
    struct Diag: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check modem, SIM, registration, signal, data, WiFi, route, gateway, DNS and the optional probe.",
            discussion: """
                Checks: modem present and answering, SIM ready, registration (with the reject cause when denied), \
                radio technology and bars, data attached with the WWAN interface up and addressed, WiFi uplink \
                associated, default route, the gateway's neighbour (ARP/NDP) state, DNS servers, and the active \
                probe when the configuration names one (never otherwise).
                Exit status: 0 ok, 1 not reachable (no usable default route, or the probe failed), 2 reachable \
                with problems (a check failed or warned), 64 bad usage, 73 the bundle could not be written, \
                78 bad configuration.
                """)

        @Flag(name: .long, help: "Print one JSON object (checks, verdict, snapshot) instead of text.")
        var json = false

        @Option(name: .long, help: ArgumentHelp("Also write a support bundle (.tar.gz: snapshot, checks, the last report lines, versions, config).", valueName: "FILE"))
        var bundle: String?

        @Flag(name: .long, help: "Show IMEI, IMSI, ICCID, phone numbers and full BSSIDs (redacted by default).")
        var showIdentifiers = false

        @Option(name: .long, help: ArgumentHelp("The configuration file (default: \(AgentConfig.defaultPath) when it exists).", valueName: "FILE"))
        var config: String?

        mutating func validate() throws {
            if let bundle, bundle.isEmpty || bundle.hasSuffix("/") {
                throw ValidationError("--bundle needs a file name, got '\(bundle)'")
            }
        }

        func run() async throws {
            let cfg = try loadConfigOrExit(config)
            let report = await Diagnostics.run(config: cfg, showIdentifiers: showIdentifiers)
            if json {
                print(report.json(showIdentifiers: showIdentifiers).serialized())
            } else {
                print(report.text())
            }
            if let bundle {
                let bytes = SupportBundle.build(report: report, config: cfg, showIdentifiers: showIdentifiers)
                if case let .failure(e) = SupportBundle.write(bytes, to: bundle) {
                    var err = StandardError()
                    print("reach: cannot write the bundle: \(e)", to: &err)
                    throw ExitCode(73)
                }
                if !json { print("bundle: \(bundle) (\(bytes.count) bytes)") }
            }
            if report.verdict.exitCode != 0 { throw ExitCode(report.verdict.exitCode) }
        }
    }
}
