import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// The built `reach` against what a hostile local user (or a careless configuration) puts where it writes and reads,
/// and against every flag and key given a bad value: each case ends with its documented exit status and a message
/// naming the problem, never a redirected write, a replaced device, a hang or a quiet success.
@Suite struct HostileInputTests {
    /// A diag that asks nothing slow (no modems, no WiFi; no probe), its report log in the scratch directory.
    static func diagConfig(_ s: Scratch) throws -> String {
        let path = s.path("reach.json")
        try #"{"modems":{"enabled":false},"wifi":{"enabled":false},"report":{"path":"\#(s.path("reach.jsonl"))"}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func diag(_ s: Scratch, bundle: String, timeout: Double = 60) async throws -> RunResult {
        try await TestSupport.run([TestPaths.reach, "diag", "--config", diagConfig(s), "--bundle", bundle], timeout: timeout)
    }

    /// diag's own verdicts (0 ok, 1 not reachable, 2 degraded) depend on the machine; the bundle's part is that it
    /// is none of 73 (could not write), 64 or 78.
    static func wroteBundle(_ r: RunResult) -> Bool { [0, 1, 2].contains(r.status) && !r.timedOut }

    static func isGzip(_ bytes: [UInt8]) -> Bool { bytes.count > 18 && bytes[0] == 0x1F && bytes[1] == 0x8B }

    static func bytes(_ path: String) -> [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }

    // MARK: - Writes

    @Test func aLinkAtTheOldTemporaryNameRedirectsNothing() async throws {
        let s = try Scratch("hostile-tmp")
        try s.write("victim", "precious\n")
        try s.link("bundle.tar.gz.tmp", to: s.path("victim"))
        let r = try await Self.diag(s, bundle: s.path("bundle.tar.gz"))
        #expect(Self.wroteBundle(r), "\(r.status) \(r.stderr)")
        #expect(s.read("victim") == "precious\n")
        #expect(Self.isGzip(Self.bytes(s.path("bundle.tar.gz"))))
        #expect(s.mode("bundle.tar.gz") == 0o600)
        #expect(s.names() == ["bundle.tar.gz", "bundle.tar.gz.tmp", "reach.json", "victim"])
    }

    @Test func aLinkAtTheBundleIsRefusedWith73() async throws {
        let s = try Scratch("hostile-target")
        try s.write("victim", "precious\n")
        try s.link("bundle.tar.gz", to: s.path("victim"))
        let r = try await Self.diag(s, bundle: s.path("bundle.tar.gz"))
        #expect(r.status == 73)
        #expect(r.stderr.contains("cannot write the bundle: open \(s.path("bundle.tar.gz")): a symbolic link"), "\(r.stderr)")
        #expect(s.read("victim") == "precious\n" && s.kind("bundle.tar.gz") == .symbolicLink)
    }

    @Test(.needsRoot) func aPlantedLinkAtTheDirectoryIsRefusedWith73() async throws {
        let s = try Scratch("hostile-dir")
        try s.mkdir("elsewhere")
        try s.link("support", to: s.path("elsewhere"), owner: nobody)
        let r = try await Self.diag(s, bundle: s.path("support/bundle.tar.gz"))
        #expect(r.status == 73)
        #expect(r.stderr.contains("a symbolic link reach does not follow: it belongs to uid 65534"), "\(r.stderr)")
        #expect(s.names("elsewhere").isEmpty)
    }

    @Test(.needsRoot) func aCopyOfDevNullIsWrittenInPlace() async throws {
        let s = try Scratch("hostile-null")
        try s.device("null", major: 1, minor: 3)
        let r = try await Self.diag(s, bundle: s.path("null"))
        #expect(Self.wroteBundle(r), "\(r.status) \(r.stderr)")
        #expect(s.kind("null") == .characterDevice && s.rdev("null") == UInt(devNumber(1, 3)))
    }

    /// d680fe5: the device was replaced by a regular file and diag said it had written the bundle.
    @Test(.needsRoot) func aCopyOfDevFullIs73AndStaysADevice() async throws {
        let s = try Scratch("hostile-full")
        try s.device("full", major: 1, minor: 7)
        let r = try await Self.diag(s, bundle: s.path("full"))
        #expect(r.status == 73)
        #expect(r.stderr.contains("write \(s.path("full")): No space left on device"), "\(r.stderr)")
        #expect(!r.stdout.contains("bundle:"))
        #expect(s.kind("full") == .characterDevice && s.rdev("full") == UInt(devNumber(1, 7)))
        #expect(s.names() == ["full", "reach.json"])
    }

    @Test func aFIFOWithNoReaderIs73AtOnce() async throws {
        let s = try Scratch("hostile-fifo")
        try s.fifo("fifo")
        let r = try await Self.diag(s, bundle: s.path("fifo"), timeout: 30)
        #expect(r.status == 73 && !r.timedOut)
        #expect(r.stderr.contains("a FIFO with no reader"), "\(r.stderr)")
        #expect(s.kind("fifo") == .fifo)
    }

    @Test func aFIFOWithAReaderGetsTheBundle() async throws {
        let s = try Scratch("hostile-fifo-reader")
        try s.fifo("fifo")
        let reader = open(s.path("fifo"), O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        // Room for the whole bundle, so reach never waits for this test to read (F_SETPIPE_SZ, fcntl(2)).
        #expect(fcntl(reader, 1031, 1 << 20) >= 1 << 20)
        let r = try await Self.diag(s, bundle: s.path("fifo"))
        #expect(Self.wroteBundle(r), "\(r.status) \(r.stderr)")
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(reader, &buffer, buffer.count)
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        #expect(Self.isGzip(got), "\(got.count) bytes")
        #expect(s.kind("fifo") == .fifo)
    }

    @Test func aSocketIsRefusedWith73() async throws {
        let s = try Scratch("hostile-socket")
        try s.socket("sock")
        let r = try await Self.diag(s, bundle: s.path("sock"))
        #expect(r.status == 73)
        #expect(r.stderr.contains("a socket; reach writes only files, character devices and FIFOs"), "\(r.stderr)")
        #expect(s.kind("sock") == .socket)
    }

    /// `--bundle -` and `--bundle /dev/stdout` stream the archive to standard output; the checks go to standard error.
    @Test(arguments: ["-", "/dev/stdout"])
    func theBundleStreamsToStandardOutput(bundle: String) async throws {
        let s = try Scratch("hostile-stdout")
        let out = s.path("out.tar.gz")
        let p = try await Spawned.start(
            [TestPaths.reach, "diag", "--config", Self.diagConfig(s), "--bundle", bundle], stdout: .file(out), stderr: .capture)
        let status = await p.wait(timeout: 60)
        #expect(status.map { [0, 1, 2].contains($0) } == true, "\(String(describing: status)) \(p.errorText)")
        #expect(Self.isGzip(Self.bytes(out)))
        #expect(p.errorText.contains("verdict:"))
        let list = try await TestSupport.run(["tar", "-tzf", out])
        #expect(list.status == 0 && list.stdout.contains("/diag.json"), "\(list.stderr)")
    }

    /// A relative --bundle is the working directory's, and the messages name it whole.
    @Test func aRelativeBundleIsMadeAbsolute() async throws {
        let s = try Scratch("hostile-relative")
        let config = try Self.diagConfig(s)
        let r = try await TestSupport.run(
            ["/bin/sh", "-c", "cd \"$1\" && exec \"$2\" diag --config \"$3\" --bundle b.tar.gz", "sh", s.dir, TestPaths.reach, config])
        #expect(Self.wroteBundle(r), "\(r.status) \(r.stderr)")
        #expect(r.stdout.contains("bundle: \(s.path("b.tar.gz")) ("), "\(r.stdout)")
    }

    /// The system calls in order (strace): the temporary file created O_EXCL|O_NOFOLLOW, fchmod before the data,
    /// fsync, rename, then fsync of the directory.
    @Test(.needs(TestSupport.find("strace") != nil, "strace installed")) func theBundleIsWrittenInTheSafeOrder() async throws {
        let s = try Scratch("hostile-strace")
        let trace = s.path("trace")
        let r = try await TestSupport.run(
            ["strace", "-f", "-qq", "-o", trace, "-e", "trace=openat,fchmod,write,fsync,rename,renameat,renameat2",
             TestPaths.reach, "diag", "--config", Self.diagConfig(s), "--bundle", s.path("b.tar.gz")], timeout: 120)
        #expect(Self.wroteBundle(r), "\(r.status) \(r.stderr)")
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        let open = try #require(lines.firstIndex { $0.contains("openat(") && $0.contains("/.b.tar.gz.") || $0.contains("\".b.tar.gz.") })
        for flag in ["O_WRONLY", "O_CREAT", "O_EXCL", "O_NOFOLLOW", "O_CLOEXEC"] { #expect(lines[open].contains(flag), "\(lines[open])") }
        let fd = try #require(lines[open].split(separator: "=").last?.trimmingCharacters(in: .whitespaces))
        func index(_ prefix: String, after i: Int) -> Int? { lines[(i + 1)...].firstIndex { $0.contains(prefix) } }
        let chmod = try #require(index("fchmod(\(fd), 0600)", after: open), "\(lines)")
        let write = try #require(index("write(\(fd),", after: open))
        let sync = try #require(index("fsync(\(fd))", after: open))
        let rename = try #require(lines.firstIndex { $0.contains("rename") && $0.contains("\"b.tar.gz\"") })
        let dirSync = try #require(index("fsync(", after: rename))
        #expect(chmod < write && write < sync && sync < rename && rename < dirSync, "\(lines[open...dirSync])")
    }

    // MARK: - Reads

    /// d680fe5 blocked for ever in open(2) on a FIFO config.
    @Test(arguments: [["status", "--no-modems", "--no-wifi"], ["agent", "--check-config"], ["diag"], ["watch"]])
    func aFIFOConfigIs78AtOnce(command: [String]) async throws {
        let s = try Scratch("hostile-config-fifo")
        try s.fifo("reach.json")
        let r = try await TestSupport.run([TestPaths.reach] + command + ["--config", s.path("reach.json")], timeout: 20)
        #expect(r.status == 78 && !r.timedOut, "\(r.stderr)")
        #expect(r.stderr.contains("reach: \(s.path("reach.json")): cannot read: open: a FIFO, not a regular file"), "\(r.stderr)")
    }

    @Test func aDeviceOrDirectoryConfigIs78() async throws {
        let s = try Scratch("hostile-config-dev")
        for path in ["/dev/zero", s.dir] {
            let r = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", path], timeout: 20)
            #expect(r.status == 78 && r.stderr.contains("cannot read"), "\(path): \(r.stderr)")
        }
    }

    /// Keys whose bad values d680fe5 accepted, and the message each now gets; all exit 78.
    @Test(arguments: [
        (#"{"report":{"path":"reach.jsonl"}}"#, "report.path: expected an absolute file path, found \"reach.jsonl\": not an absolute path"),
        (#"{"report":{"path":"/var/log/reach/\u0000x"}}"#, "report.path: expected an absolute file path, found \"/var/log/reach/\\u0000x\": contains U+0000 (NUL)"),
        (#"{"prometheus":{"textfile":"node/reach.prom"}}"#, "prometheus.textfile: expected an absolute file path ending in .prom"),
        (#"{"prometheus":{"textfile":"/x/\u0000.prom"}}"#, "contains U+0000 (NUL)"),
        (#"{"wifi":{"interfaces":[""]}}"#, "wifi.interfaces[0]: expected an interface name"),
        (#"{"probe":{"kind":"tcp","host":"192.0.2.1","query":"x"}}"#, "probe.query: only for kind dns"),
    ])
    func badKeysAre78(config: String, message: String) async throws {
        let s = try Scratch("hostile-keys")
        try s.write("reach.json", config)
        let r = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", s.path("reach.json")])
        #expect(r.status == 78)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    /// d680fe5 read report.path with U+FFFD for the bad byte and wrote to that other name.
    @Test func invalidUTF8InTheConfigIs78WithLineAndColumn() async throws {
        let s = try Scratch("hostile-utf8")
        let bytes = Array("{\"report\":\n {\"path\": \"/var/log/\"".utf8)
        var text = bytes
        text.insert(0xFE, at: bytes.count - 1)
        text += Array("}}".utf8)
        try Data(text).write(to: URL(fileURLWithPath: s.path("reach.json")))
        let r = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", s.path("reach.json")])
        #expect(r.status == 78)
        #expect(r.stderr.contains("not valid JSON: line 2, column 21: invalid UTF-8 (byte 0xFE) in a string"), "\(r.stderr)")
    }

    // MARK: - Flags

    /// Each bad command line exits 64 with a message naming the argument (d680fe5 took the first five).
    @Test(arguments: [
        (["--version", "--bogus"], "unknown option '--bogus'"),
        (["--help", "--bogus"], "unknown option '--bogus'"),
        (["-h", "status"], "unexpected argument 'status'"),
        (["--version", "--version"], "'--version' was given twice"),
        (["status", "--wifi", ""], "'--wifi' expects an interface name (1-15 bytes, no '/', ':' or white space), got '': an empty name"),
        (["status", "--help", "--wifi", ""], "an empty name"),
        (["status", "--wifi", "eth0:1"], "contains ':'"),
        (["status", "--wifi", "wlan0123456789ab"], "longer than 15 bytes"),
        (["status", "--host", "bad host"], "--host 'bad host' is not a valid host name"),
        (["status", "--config", ""], "'--config' expects a configuration file, got '': an empty name"),
        (["status", "--modem", "/dev/"], "--modem '/dev/': expected an absolute device path (names a directory, not a file)"),
        (["watch", "--config", ""], "an empty name"),
        (["watch", "--resolve-timeout", "0"], "'--resolve-timeout' must be a number of seconds in (0, 60]"),
        (["agent", "--config", ""], "an empty name"),
        (["diag", "--bundle", ""], "'--bundle' expects a file name, got '': an empty path"),
        (["diag", "--bundle", "/tmp/"], "names a directory"),
        (["help", "nope"], "'help' takes one command name"),
    ] as [([String], String)])
    func badFlagsAre64(arguments: [String], message: String) async throws {
        let r = try await TestSupport.run([TestPaths.reach] + arguments, timeout: 20)
        #expect(r.status == 64, "\(arguments): \(r.status) \(r.stdout)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty, "nothing printed as if it had worked")
    }

    /// d680fe5 parsed `--modem` and `--wifi` and then dropped them when the configuration turned the source off.
    @Test func namedModemsAndWiFiAreReadEvenWhenTheConfigTurnsThemOff() async throws {
        let s = try Scratch("hostile-override")
        try s.write("reach.json", #"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#)
        let r = try await TestSupport.run(
            [TestPaths.reach, "status", "--json", "--address", "127.0.0.1", "--modem-access", "direct",
             "--modem", s.path("no-such-port") + ":qmi",
             "--wifi", "wlan-reach9", "--config", s.path("reach.json")], timeout: 30)
        let json = try JSON.parse(r.stdout)
        #expect(json["wwan"]?.arrayValue?.first?["device"] == .string(s.path("no-such-port")), "\(r.stdout)")
        #expect(json["sources"]?["wifi"]?["reason"] != .string("not asked"), "\(r.stdout)")
        #expect(json["sources"]?["wwan"]?["reason"] != .string("not asked"), "\(r.stdout)")
    }

    @Test(arguments: [["--version"], ["--help"], ["help"], ["help", "status"], ["status", "--help"], ["diag", "-h"]])
    func goodHelpAndVersionAre0(arguments: [String]) async throws {
        let r = try await TestSupport.run([TestPaths.reach] + arguments, timeout: 20)
        #expect(r.status == 0 && !r.stdout.isEmpty, "\(arguments): \(r.stderr)")
    }

    /// Swift would turn a byte that is not UTF-8 into U+FFFD, naming another file than the one typed.
    @Test func anArgumentThatIsNotUTF8Is64() async throws {
        let r = try await TestSupport.run(
            ["/bin/sh", "-c", "exec \"$1\" diag --bundle \"$(printf '/tmp/b\\377.tar.gz')\"", "sh", TestPaths.reach], timeout: 20)
        #expect(r.status == 64)
        #expect(r.stderr.contains("argument 3 is not valid UTF-8: '/tmp/b\\xFF.tar.gz'"), "\(r.stderr)")
    }
}
