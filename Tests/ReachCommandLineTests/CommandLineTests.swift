import Testing
@testable import ReachCommandLine

@Suite struct CommandLineTests {
    static let spec = CommandSpec(
        name: "status", abstract: "Print the status.",
        options: [
            OptionSpec("json", help: "JSON."),
            OptionSpec("address", .value("IP"), help: "An address."),
            OptionSpec("modem", .repeating("PATH"), help: "A modem."),
            OptionSpec("verbose", short: "v", help: "More."),
        ])

    @Test func parsesFlagsValuesAndRepeats() throws {
        let p = try CommandLineParser.parse(
            ["--json", "--address", "192.0.2.1", "--modem=/dev/a", "--modem", "/dev/b", "-v"], Self.spec)
        #expect(p.flag("json") && p.flag("verbose"))
        #expect(p.value("address") == "192.0.2.1")
        #expect(p.values("modem") == ["/dev/a", "/dev/b"])
        #expect(!p.flag("help"))
    }

    @Test func valuesMayStartWithADash() throws {
        // A value is taken as is, even when it looks like an option: "--address -1" is an address, later validated.
        #expect(try CommandLineParser.parse(["--address", "-1"], Self.spec).value("address") == "-1")
    }

    @Test(arguments: [
        (["--jsn"], "unknown option '--jsn'; did you mean '--json'?"),
        (["--bogus"], "unknown option '--bogus'"),
        (["-x"], "unknown option '-x'"),
        (["--address"], "'--address' needs a value (IP)"),
        (["--address", "a", "--address", "b"], "'--address' was given twice"),
        (["--json", "--json"], "'--json' was given twice"),
        (["--json=yes"], "'--json' takes no value"),
        (["extra"], "unexpected argument 'extra'"),
        (["--", "--json"], "unexpected argument '--json'"),
    ] as [([String], String)])
    func usageErrorsNameTheArgument(args: [String], message: String) {
        #expect(throws: UsageError(message)) { try CommandLineParser.parse(args, Self.spec) }
    }

    @Test func helpIsAFlag() throws {
        #expect(try CommandLineParser.parse(["-h"], Self.spec).flag("help"))
        #expect(try CommandLineParser.parse(["--address", "x", "--help"], Self.spec).flag("help"))
    }

    @Test func positionalsWhenAllowed() throws {
        let p = try CommandLineParser.parse(["a", "--json", "--", "--b"], Self.spec, allowPositionals: true)
        #expect(p.positionals == ["a", "--b"])
        #expect(p.flag("json"))
    }

    @Test func seconds() throws {
        let p = try CommandLineParser.parse(["--address", "2.5"], Self.spec)
        #expect(try CommandLineParser.seconds(p, "address", default: 3, max: 60) == 2.5)
        #expect(try CommandLineParser.seconds(ParsedArguments(), "address", default: 3, max: 60) == 3)
        for bad in ["0", "-1", "61", "x", "nan"] {
            let q = try CommandLineParser.parse(["--address", bad], Self.spec)
            #expect(throws: UsageError.self) { try CommandLineParser.seconds(q, "address", default: 3, max: 60) }
        }
    }

    @Test func helpListsEveryOption() {
        let text = CommandLineParser.help(Self.spec, program: "reach status")
        for needle in ["usage: reach status [options]", "--json", "--address IP", "--modem PATH ...", "-v, --verbose",
                       "-h, --help"] {
            #expect(text.contains(needle), "\(needle)")
        }
    }

    @Test func checkedValuesNameTheOptionAndTheProblem() throws {
        let p = try CommandLineParser.parse(["--address", ""], Self.spec)
        #expect(try CommandLineParser.checked(ParsedArguments(), "address", expected: "x") { _ in "never" } == nil)
        #expect(throws: UsageError("'--address' expects an address, got '': empty")) {
            try CommandLineParser.checked(p, "address", expected: "an address") { $0.isEmpty ? "empty" : nil }
        }
        let q = try CommandLineParser.parse(["--address", "192.0.2.1"], Self.spec)
        #expect(try CommandLineParser.checked(q, "address", expected: "an address") { _ in nil } == "192.0.2.1")
    }

    /// argv as the kernel hands it over: bytes that are not UTF-8 are refused, never turned into U+FFFD.
    @Test func argumentsMustBeUTF8() throws {
        func run(_ args: [[UInt8]]) -> Result<[String], UsageError> {
            let cStrings = args.map { bytes -> UnsafeMutablePointer<CChar>? in
                let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
                for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
                p[bytes.count] = 0
                return p
            }
            defer { cStrings.forEach { $0?.deallocate() } }
            var argv = cStrings + [nil]
            return argv.withUnsafeMutableBufferPointer {
                CommandLineParser.arguments(count: Int32(args.count), argv: $0.baseAddress!)
            }
        }
        #expect(try run([Array("reach".utf8), Array("--wifi".utf8), Array("wlän0".utf8)]).get() == ["--wifi", "wlän0"])
        #expect(try run([Array("reach".utf8)]).get() == [])
        let bad = run([Array("reach".utf8), Array("diag".utf8), Array("/tmp/b".utf8) + [0xFF, 0x41]])
        #expect(throws: UsageError("argument 2 is not valid UTF-8: '/tmp/b\\xFFA'")) { try bad.get() }
        // An overlong '/' (C0 AF) is not UTF-8 either.
        #expect(throws: UsageError.self) { try run([Array("reach".utf8), [0x2E, 0xC0, 0xAF]]).get() }
    }
}
