// A small command-line parser for `reach`: GNU-style long options, subcommands, generated help, and errors that
// name the argument at fault. It replaces swift-argument-parser, which pulls FoundationEssentials into the binary
// (about 7.5 MB stripped and 2 MB of RSS with --static-swift-stdlib, measured here) for features `reach` does not
// use. Pure: arguments in, values or a usage error out.

/// One option a command accepts.
public struct OptionSpec: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `--name`: present or not.
        case flag
        /// `--name VALUE` or `--name=VALUE`, at most once.
        case value(String)
        /// `--name VALUE`, any number of times, in order.
        case repeating(String)
    }

    /// The long name without dashes, e.g. "json".
    public var name: String
    /// One-letter alias without the dash, e.g. "v".
    public var short: Character?
    public var kind: Kind
    public var help: String

    public init(_ name: String, short: Character? = nil, _ kind: Kind = .flag, help: String) {
        self.name = name
        self.short = short
        self.kind = kind
        self.help = help
    }

    var valueName: String? {
        switch kind {
        case .flag: return nil
        case let .value(v), let .repeating(v): return v
        }
    }
}

/// A command: its options and, for the root, its subcommands.
public struct CommandSpec: Sendable {
    public var name: String
    public var abstract: String
    public var discussion: String
    public var options: [OptionSpec]

    public init(name: String, abstract: String, discussion: String = "", options: [OptionSpec]) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
    }
}

/// What the user asked for.
public struct ParsedArguments: Sendable, Equatable {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    public var positionals: [String] = []

    public init() {}

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func value(_ name: String) -> String? { values[name]?.last }
    public func values(_ name: String) -> [String] { values[name] ?? [] }
}

/// A usage error: exit status 64 (EX_USAGE), the message names the argument.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum CommandLineParser {
    /// Parses `arguments` (without the program and subcommand names) against `spec`. `--help`/`-h` is reported as
    /// the flag "help". Positional arguments are refused unless `allowPositionals`.
    public static func parse(
        _ arguments: [String], _ spec: CommandSpec, allowPositionals: Bool = false
    ) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        func option(named name: String) throws(UsageError) -> OptionSpec {
            if let o = spec.options.first(where: { $0.name == name }) { return o }
            var message = "unknown option '--\(name)'"
            if let near = closest(name, among: spec.options.map(\.name)) { message += "; did you mean '--\(near)'?" }
            throw UsageError(message)
        }
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                guard allowPositionals else { throw UsageError("unexpected argument '\(arg)'") }
                result.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "--help" || arg == "-h" {
                result.flags.insert("help")
                continue
            }
            let opt: OptionSpec
            var inline: String?
            if arg.hasPrefix("--") {
                let body = arg.dropFirst(2)
                if let eq = body.firstIndex(of: "=") {
                    opt = try option(named: String(body[..<eq]))
                    inline = String(body[body.index(after: eq)...])
                } else {
                    opt = try option(named: String(body))
                }
            } else {
                guard arg.count == 2, let c = arg.last, let o = spec.options.first(where: { $0.short == c }) else {
                    throw UsageError("unknown option '\(arg)'")
                }
                opt = o
            }
            switch opt.kind {
            case .flag:
                if inline != nil { throw UsageError("'--\(opt.name)' takes no value") }
                if result.flags.contains(opt.name) { throw UsageError("'--\(opt.name)' was given twice") }
                result.flags.insert(opt.name)
            case .value, .repeating:
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard i < arguments.count else {
                        throw UsageError("'--\(opt.name)' needs a value (\(opt.valueName!))")
                    }
                    value = arguments[i]
                    i += 1
                }
                if case .value = opt.kind, result.values[opt.name] != nil {
                    throw UsageError("'--\(opt.name)' was given twice")
                }
                result.values[opt.name, default: []].append(value)
            }
        }
        return result
    }

    /// A number of seconds in (0, max], or a usage error naming the option.
    public static func seconds(_ parsed: ParsedArguments, _ name: String, default d: Double, max: Double) throws(UsageError) -> Double {
        guard let text = parsed.value(name) else { return d }
        guard let v = Double(text), v > 0, v <= max else {
            throw UsageError("'--\(name)' must be a number of seconds in (0, \(JSONNumber.text(max))], got '\(text)'")
        }
        return v
    }

    /// The value of `--name` when its text passes `problem` (which returns nil for good text, else what is wrong),
    /// nil when the option was not given; otherwise a usage error naming the option, what it expects and the problem.
    public static func checked(
        _ parsed: ParsedArguments, _ name: String, expected: String, _ problem: (String) -> String?
    ) throws(UsageError) -> String? {
        guard let text = parsed.value(name) else { return nil }
        if let why = problem(text) { throw UsageError("'--\(name)' expects \(expected), got '\(text)': \(why)") }
        return text
    }

    /// The command-line arguments as the kernel passed them (`argv[1...]`), each required to be valid UTF-8: Swift's
    /// `CommandLine.arguments` would replace bad bytes with U+FFFD and so name a different file than the one typed.
    public static func arguments(
        count: Int32 = CommandLine.argc, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = CommandLine.unsafeArgv
    ) -> Result<[String], UsageError> {
        var out: [String] = []
        for i in 1..<max(1, Int(count)) {
            guard let p = argv[i] else { continue }
            guard let s = String(validatingCString: p) else {
                let bytes = UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self)
                var shown = ""
                var j = 0
                while bytes[j] != 0 {
                    let b = bytes[j]
                    shown += b >= 0x20 && b < 0x7F ? String(Unicode.Scalar(b)) : "\\x" + String(b, radix: 16, uppercase: true)
                    j += 1
                }
                return .failure(UsageError("argument \(i) is not valid UTF-8: '\(shown)'"))
            }
            out.append(s)
        }
        return .success(out)
    }

    /// The help text of a command: usage line, abstract, options with their help, discussion.
    public static func help(_ spec: CommandSpec, program: String, subcommands: [CommandSpec] = []) -> String {
        var lines: [String] = []
        var usage = "usage: \(program)"
        if !subcommands.isEmpty { usage += " <command>" }
        usage += spec.options.isEmpty ? "" : " [options]"
        lines.append(usage)
        lines.append("")
        lines.append(spec.abstract)
        if !subcommands.isEmpty {
            lines.append("")
            lines.append("commands:")
            let width = subcommands.map(\.name.count).max() ?? 0
            for c in subcommands {
                lines.append("  " + c.name.padding(width) + "  " + c.abstract)
            }
        }
        if !spec.options.isEmpty {
            lines.append("")
            lines.append("options:")
            let labels = spec.options.map { o -> String in
                var l = (o.short.map { "-\($0), " } ?? "") + "--" + o.name
                if let v = o.valueName { l += " " + v }
                if case .repeating = o.kind { l += " ..." }
                return l
            }
            let width = min((labels + ["-h, --help"]).map(\.count).max() ?? 0, 30)
            for (o, l) in zip(spec.options, labels) {
                lines.append("  " + l.padding(width) + "  " + o.help)
            }
            lines.append("  " + "-h, --help".padding(width) + "  Show this help.")
        }
        if !spec.discussion.isEmpty {
            lines.append("")
            lines.append(spec.discussion)
        }
        return lines.joined(separator: "\n")
    }

    /// Whether two words are within edit distance 2 (for "did you mean").
    public static func isClose(_ a: String, _ b: String) -> Bool { distance(a, b) <= 2 }

    /// The candidate within edit distance 2, for "did you mean".
    static func closest(_ word: String, among candidates: [String]) -> String? {
        candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }?.0
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        var prev = Array(0...b.count)
        for i in 1...a.count {
            var cur = [i] + [Int](repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
}

enum JSONNumber {
    static func text(_ d: Double) -> String { d.rounded() == d ? String(Int(d)) : String(d) }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
