// `reach`: the GatewayReach command line. Thin: one file per subcommand under Subcommands/, work delegated to the
// GatewayReach library and the agent. Arguments are parsed by ReachCommandLine (see its header for why not
// swift-argument-parser).

import GatewayReach
import Glibc
import ReachCommandLine

/// A `reach` subcommand: its options, how parsed arguments become a command (usage errors exit 64), and its run,
/// which returns the exit status.
protocol Subcommand: Sendable {
    static var spec: CommandSpec { get }
    init(_ arguments: ParsedArguments) throws(UsageError)
    func run() async -> Int32
}

/// Exit statuses shared by the subcommands (sysexits.h where one fits).
enum ExitStatus {
    static let ok: Int32 = 0
    static let notReachable: Int32 = 1
    static let usage: Int32 = 64
    static let unavailable: Int32 = 69
    static let cannotCreate: Int32 = 73
    static let config: Int32 = 78
}

@main
enum Reach {
    static let subcommands: [any Subcommand.Type] = [Status.self, Agent.self, Watch.self, Signal.self, Diag.self]

    static let spec = CommandSpec(
        name: "reach",
        abstract: "Can packets leave this gateway, over what, and how good is the link?",
        discussion: """
            Without a command, 'reach' runs 'reach status'. 'reach COMMAND --help' describes a command.
            Exit status: 0 reachable, 1 not reachable, 64 bad usage, 69 the route could not be determined, \
            78 bad configuration (diag and agent document theirs).
            """,
        options: [OptionSpec("version", help: "Print the version and exit.")])

    static func main() async {
        exit(await run(Array(CommandLine.arguments.dropFirst())))
    }

    static func run(_ arguments: [String]) async -> Int32 {
        var arguments = arguments
        var command: any Subcommand.Type = Status.self
        switch arguments.first {
        case "--version":
            print(GatewayReachVersion.string)
            return ExitStatus.ok
        case "--help", "-h", "help":
            print(CommandLineParser.help(spec, program: "reach", subcommands: subcommands.map { $0.spec }))
            return ExitStatus.ok
        case let name? where !name.hasPrefix("-"):
            guard let found = subcommands.first(where: { $0.spec.name == name }) else {
                let names = subcommands.map { $0.spec.name }
                var message = "unknown command '\(name)' (commands: \(names.joined(separator: ", ")))"
                if let near = names.first(where: { CommandLineParser.isClose(name, $0) }) {
                    message += "; did you mean '\(near)'?"
                }
                return usageError(message, command: nil)
            }
            command = found
            arguments.removeFirst()
        default:
            break  // options only: `reach status`
        }
        do {
            let parsed = try CommandLineParser.parse(arguments, command.spec)
            if parsed.flag("help") {
                print(CommandLineParser.help(command.spec, program: "reach \(command.spec.name)"))
                return ExitStatus.ok
            }
            return try await command.init(parsed).run()
        } catch {
            return usageError(error.message, command: command.spec.name)
        }
    }

    /// Prints "reach COMMAND: error: MESSAGE" and where to find help; exit status 64.
    static func usageError(_ message: String, command: String?) -> Int32 {
        let prefix = command.map { "reach \($0)" } ?? "reach"
        printError("\(prefix): error: \(message)\nSee '\(prefix) --help'.")
        return ExitStatus.usage
    }
}

/// Writes a line to standard error, whole (retrying EINTR and short writes).
func printError(_ text: String) {
    var bytes = Array((text + "\n").utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        bytes = bytes.dropFirst(n)
    }
}
