// `reach`: the GatewayReach command line. Thin: one file per subcommand under Subcommands/, work delegated to the
// GatewayReach library and the agent. Arguments are parsed by ReachCommandLine (see its header for why not
// swift-argument-parser).

import GatewayReach
import Glibc
import ReachCommandLine
import ReachSystem

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

    /// The hidden command a modem worker runs as (ReachModem's ModemWorkerProcess): every modem is read in a process
    /// of its own, so that a modem library that aborts or hangs on a hostile modem costs that modem's worker only.
    static let modemWorkerCommand = "modem-worker"
    static let modemWorker = ModemWorkerLaunch.currentExecutable([modemWorkerCommand])

    /// The worker launch for a configuration: `modems.worker` false reads modems in this process.
    static func modemWorker(_ config: AgentConfig) -> ModemWorkerLaunch? { config.modems.worker ? modemWorker : nil }

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
        switch CommandLineParser.arguments() {
        case let .success(arguments): exit(await run(arguments))
        case let .failure(e): exit(usageError(e.message, command: nil))
        }
    }

    static func run(_ arguments: [String]) async -> Int32 {
        var arguments = arguments
        var command: any Subcommand.Type = Status.self
        switch arguments.first {
        case modemWorkerCommand?:
            // Started by reach itself with its socket on fd 3; one optional argument, the port, for `ps` only.
            guard arguments.count <= 2 else { return usageError("modem-worker takes at most one argument", command: nil) }
            return await ModemWorkerProcess.main()
        case "--version", "--help", "-h":
            // Whatever follows must be valid too: `reach --version --bogus` is a usage error, not a version.
            do {
                let parsed = try CommandLineParser.parse(arguments, spec)
                print(parsed.flag("help")
                      ? CommandLineParser.help(spec, program: "reach", subcommands: subcommands.map { $0.spec })
                      : GatewayReachVersion.string)
                return ExitStatus.ok
            } catch {
                return usageError(error.message, command: nil)
            }
        case "help":
            // `reach help` or `reach help COMMAND`.
            guard arguments.count > 1 else {
                print(CommandLineParser.help(spec, program: "reach", subcommands: subcommands.map { $0.spec }))
                return ExitStatus.ok
            }
            guard arguments.count == 2, let found = subcommands.first(where: { $0.spec.name == arguments[1] }) else {
                return usageError("'help' takes one command name (commands: \(subcommands.map { $0.spec.name }.joined(separator: ", ")))", command: nil)
            }
            print(CommandLineParser.help(found.spec, program: "reach \(found.spec.name)"))
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
            // Every option is checked before --help is answered: `reach status --help --wifi ''` is a usage error.
            let instance = try command.init(parsed)
            if parsed.flag("help") {
                print(CommandLineParser.help(command.spec, program: "reach \(command.spec.name)"))
                return ExitStatus.ok
            }
            return await instance.run()
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

/// `--config FILE`, shared by every subcommand: a file name (relative names are the working directory's).
func configOption(_ p: ParsedArguments) throws(UsageError) -> String? {
    try CommandLineParser.checked(p, "config", expected: "a configuration file") { $0.isEmpty ? "an empty name" : nil }
}

/// An output path from the command line, made absolute against the working directory (so the messages name the
/// file that is written) and checked as the config's paths are (`FilePathText`).
func outputPath(_ text: String, option: String) throws(UsageError) -> String {
    var path = text
    if !text.hasPrefix("/") && !text.isEmpty {
        guard let cwd = getcwd(nil, 0) else {
            throw UsageError("'--\(option)' '\(text)': the working directory has no name (\(String(cString: strerror(errno)))); give an absolute path")
        }
        defer { free(cwd) }
        let dir = String(cString: cwd)
        path = (dir == "/" ? "" : dir) + "/" + text
    }
    if let why = FilePathText.problem(path) { throw UsageError("'--\(option)' expects a file name, got '\(text)': \(why)") }
    return path
}

/// Writes a line to standard error, whole (short writes continued).
func printError(_ text: String) {
    _ = Sys.writeAll(2, Array((text + "\n").utf8), path: nil)
}
