// `reach status`: one answer, now. Text for people, JSON (schema 1) for machines.

import ArgumentParser
import GatewayReach
import Glibc

/// Exit codes shared by the subcommands (sysexits.h where one fits).
enum ReachExit {
    static let notReachable = ExitCode(1)
    static let usage = ExitCode(64)
    static let unavailable = ExitCode(69)
    static let config = ExitCode(78)
}

struct TargetOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Ask about a host name (resolved asynchronously, bounded by --resolve-timeout).", valueName: "NAME"))
    var host: String?

    @Option(name: .long, help: ArgumentHelp("Ask about an IPv4 or IPv6 address.", valueName: "IP"))
    var address: String?

    @Flag(name: .long, help: "Ask about the IPv4 link-local network 169.254.0.0/16 (YYReachability's local WiFi).")
    var linkLocal = false

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for a host name to resolve.", valueName: "SECONDS"))
    var resolveTimeout: Double = 3

    mutating func validate() throws {
        if [host != nil, address != nil, linkLocal].filter({ $0 }).count > 1 {
            throw ValidationError("--host, --address and --link-local are mutually exclusive")
        }
        if let address, IPAddress(address) == nil {
            throw ValidationError("--address '\(address)' is not an IPv4 or IPv6 address")
        }
        if let host, host.isEmpty || host.utf8.count > 253 {
            throw ValidationError("--host '\(host)' is not a valid host name")
        }
        if !(resolveTimeout > 0 && resolveTimeout <= 60) {
            throw ValidationError("--resolve-timeout must be a number of seconds in (0, 60], got \(resolveTimeout)")
        }
    }

    var target: Target {
        if let host { return IPAddress(host) != nil ? .address(host) : .host(host) }
        if let address { return .address(address) }
        if linkLocal { return .linkLocal }
        return .defaultRoute
    }
}

struct SourceOptions: ParsableArguments {
    @Option(
        name: .customLong("modem"),
        help: ArgumentHelp("A modem control port, optionally with its protocol (repeatable; default: discover).",
                           valueName: "PATH[:qmi|:mbim]"))
    var modems: [String] = []

    @Flag(name: .long, help: "Do not ask any modem.")
    var noModems = false

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each modem request.", valueName: "SECONDS"))
    var modemTimeout: Double = 5

    @Option(name: .long, help: ArgumentHelp("Read only this WiFi interface.", valueName: "IFACE"))
    var wifi: String?

    @Flag(name: .long, help: "Do not read WiFi state.")
    var noWifi = false

    @Flag(name: .long, help: "Show IMEI, IMSI, ICCID and phone numbers (hidden by default).")
    var showIdentifiers = false

    mutating func validate() throws {
        if noModems && !modems.isEmpty { throw ValidationError("--modem and --no-modems are mutually exclusive") }
        if noWifi && wifi != nil { throw ValidationError("--wifi and --no-wifi are mutually exclusive") }
        if !(modemTimeout > 0 && modemTimeout <= 120) {
            throw ValidationError("--modem-timeout must be a number of seconds in (0, 120], got \(modemTimeout)")
        }
        _ = try modemSpecs()
    }

    /// `PATH[:qmi|:mbim]` → specs; nil when none were named (discovery).
    func modemSpecs() throws -> [ModemPortSpec]? {
        guard !modems.isEmpty else { return nil }
        return try modems.map { arg in
            var path = Substring(arg)
            var proto: ModemProtocol?
            if let colon = arg.lastIndex(of: ":") {
                let suffix = arg[arg.index(after: colon)...]
                guard let p = ModemProtocol(rawValue: String(suffix)) else {
                    throw ValidationError("--modem '\(arg)': protocol must be 'qmi' or 'mbim', got '\(suffix)'")
                }
                proto = p
                path = arg[..<colon]
            }
            guard path.hasPrefix("/") else { throw ValidationError("--modem '\(arg)': expected an absolute device path") }
            return ModemPortSpec(path: String(path), protocol: proto)
        }
    }
}

extension Reach {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print whether, and over what, packets can leave now.",
            discussion: "Exit status: 0 reachable, 1 not reachable, 64 bad usage, 69 the route could not be determined.")

        @Flag(name: .long, help: "Print one JSON object (schema 1) instead of text.")
        var json = false

        @OptionGroup var targetOptions: TargetOptions
        @OptionGroup var sourceOptions: SourceOptions

        func run() async throws {
            let request = StatusRequest(
                target: targetOptions.target,
                modems: try sourceOptions.modemSpecs(),
                readModems: !sourceOptions.noModems,
                wifiInterface: sourceOptions.wifi,
                readWiFi: !sourceOptions.noWifi,
                modemOptions: ModemReadOptions(requestTimeout: .seconds(sourceOptions.modemTimeout)),
                resolveTimeout: .seconds(targetOptions.resolveTimeout))
            let snapshot = await GatewayReach.status(request)
            if json {
                print(snapshot.json(showIdentifiers: sourceOptions.showIdentifiers).serialized())
            } else {
                print(SnapshotText.render(snapshot))
            }
            if snapshot.status == .unknown { throw ReachExit.unavailable }
            if !snapshot.reachable { throw ReachExit.notReachable }
        }
    }
}
