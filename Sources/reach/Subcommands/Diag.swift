// `reach diag`: field diagnostics in one run, for the installer. One line per check with a hint for each failure,
// then one verdict line; the exit status is the verdict.

import GatewayReach
import Glibc
import ReachAgent
import ReachCommandLine

extension Reach {
    struct Diag: Subcommand {
        static let spec = CommandSpec(
            name: "diag",
            abstract: "Check modem, SIM, registration, signal, data, WiFi, route, gateway, DNS and the optional probe.",
            discussion: """
                Checks: modem present and answering, SIM ready, registration (with the reject cause when denied), \
                radio technology and bars, data attached with the WWAN interface up and addressed, WiFi uplink \
                associated, default route, the gateway's neighbour (ARP/NDP) state, DNS servers, and the active \
                probe when the configuration names one (never otherwise). When an agent runs, its modem and WiFi \
                readings are used (no modem is opened) and its state goes into the bundle; --direct reads here, and \
                so do --modem, --wifi and --modem-access. Every check is listed, a check not made as [skip] with \
                why. On a terminal the tags are coloured (not with NO_COLOR set).
                Exit status: 0 ok, 1 not reachable (no usable default route, or the probe failed), 2 reachable \
                with problems (a check failed or warned), 64 bad usage, 73 the bundle could not be written, \
                78 bad configuration.
                """,
            options: [
                OptionSpec("json", help: "Print one JSON object (checks, verdict, snapshot) instead of text."),
                OptionSpec("bundle", .value("FILE"), help: "Also write a support bundle (.tar.gz: snapshot, checks, the last report lines, versions, config); '-' or /dev/stdout streams it to standard output (the checks then go to standard error)."),
                OptionSpec("direct", help: "Read modems and WiFi here even when an agent runs (default: take the running agent's readings)."),
                OptionSpec("show-identifiers", help: "Show IMEI, IMSI, ICCID, phone numbers and full BSSIDs (redacted by default)."),
            ] + SourceOptions.specs)

        var json: Bool
        var sources: SourceOptions
        var bundle: String?
        var showIdentifiers: Bool
        var direct: Bool

        init(_ p: ParsedArguments) throws(UsageError) {
            json = p.flag("json")
            direct = p.flag("direct")
            showIdentifiers = p.flag("show-identifiers")
            sources = try SourceOptions(p)
            if let b = p.value("bundle") {
                bundle = b == "-" || SafeWrite.ownDescriptor(b) != nil ? b : try outputPath(b, option: "bundle")
            }
        }

        func run() async -> Int32 {
            guard let cfg = sources.configuration() else { return ExitStatus.config }
            let report = await Diagnostics.run(
                config: cfg, showIdentifiers: showIdentifiers, modemWorker: Reach.modemWorker(cfg),
                direct: direct ? "--direct" : sources.agentCannotAnswer)
            // The bundle on standard output: the checks go to standard error, so the archive stays whole.
            let bundleToStdout = bundle.map(SupportBundle.isStandardOutput) ?? false
            let fd: Int32 = bundleToStdout ? 2 : 1
            let colour = DiagReport.colour(
                terminal: Sys.isatty(fd), noColor: getenv("NO_COLOR").map { String(cString: $0) },
                term: getenv("TERM").map { String(cString: $0) })
            let out = json ? report.json(showIdentifiers: showIdentifiers).serialized() : report.text(colour: colour)
            if bundleToStdout { printError(out) } else { print(out) }
            if let bundle {
                let bytes = SupportBundle.build(report: report, config: cfg, showIdentifiers: showIdentifiers)
                if case let .failure(e) = SupportBundle.write(bytes, to: bundle) {
                    printError("reach: cannot write the bundle: \(e)")
                    return ExitStatus.cannotCreate
                }
                if !json && !bundleToStdout { print("bundle: \(bundle) (\(bytes.count) bytes)") }
            }
            return Int32(report.verdict.exitCode)
        }
    }
}
