import Glibc
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

@Suite struct ReportLogTests {
    let path = "/var/log/reach/reach.jsonl"

    func line(_ n: Int) -> JSON { .object([("n", .int(n)), ("pad", .string(String(repeating: "x", count: 50)))]) }
    func t(_ s: Int64) -> Timestamp { Timestamp(seconds: 1_795_305_600 + s) }

    @Test func eachLineIsWholeAndParses() throws {
        let fs = ScriptedFileSystem()
        let log = ReportLog(settings: .init(path: path, rotateBytes: 0, rotateKeep: 0), fileSystem: fs, logger: testLogger())
        for i in 1...5 { #expect(log.append(line(i), time: t(Int64(i)))) }
        let lines = fs.lines(path)
        #expect(lines.count == 5)
        for (i, l) in lines.enumerated() { #expect(try JSON.parse(l)["n"] == .int(i + 1)) }
        #expect(fs.writes == 5)  // one write(2) per line
        #expect(log.stats.linesWritten == 5)
    }

    /// The disk fills mid-line: the fragment is cut off, the line counted as dropped, and the first line written
    /// afterwards says how many were lost and since when.
    @Test func shortWriteLeavesNoFragmentAndDroppedLinesAreReported() throws {
        let fs = ScriptedFileSystem()
        let log = ReportLog(settings: .init(path: path, rotateBytes: 0, rotateKeep: 0), fileSystem: fs, logger: testLogger())
        #expect(log.append(line(1), time: t(1)))
        fs.script = [.writeShort(7), .fail(ENOSPC), .fail(ENOSPC), .fail(ENOSPC)]
        #expect(!log.append(line(2), time: t(2)))
        #expect(!log.append(line(3), time: t(3)))
        #expect(!log.append(line(4), time: t(4)))
        #expect(fs.lines(path).count == 1)  // no half line left behind
        #expect(log.pendingDropped == 3)
        #expect(log.append(line(5), time: t(5)))
        let lines = fs.lines(path)
        #expect(lines.count == 2)
        let back = try JSON.parse(lines[1])
        #expect(back["n"] == .int(5))
        #expect(back["dropped_lines"] == .int(3))
        #expect(back["dropped_since"] == .string(t(2).rfc3339))
        #expect(log.stats.linesDropped == 3)
        // Reported once: the next line is plain again.
        #expect(log.append(line(6), time: t(6)))
        #expect(try JSON.parse(fs.lines(path)[2])["dropped_lines"] == nil)
    }

    @Test func shortWriteFromASignalIsRetriedWhole() throws {
        let fs = ScriptedFileSystem()
        let log = ReportLog(settings: .init(path: path, rotateBytes: 0, rotateKeep: 0), fileSystem: fs, logger: testLogger())
        fs.script = [.interrupted, .writeShort(3), .writeAll]
        #expect(log.append(line(1), time: t(1)))
        let lines = fs.lines(path)
        #expect(lines.count == 1)
        #expect(try JSON.parse(lines[0])["n"] == .int(1))
    }

    @Test func readOnlyDiskReopensAndRecovers() throws {
        let fs = ScriptedFileSystem()
        let log = ReportLog(settings: .init(path: path, rotateBytes: 0, rotateKeep: 0), fileSystem: fs, logger: testLogger())
        #expect(log.append(line(1), time: t(1)))
        fs.script = [.fail(EROFS)]
        fs.openFailures = [EROFS, EACCES]
        #expect(!log.append(line(2), time: t(2)))  // write fails: file closed
        #expect(!log.append(line(3), time: t(3)))  // reopen fails (EROFS)
        #expect(!log.append(line(4), time: t(4)))  // reopen fails (EACCES)
        #expect(log.append(line(5), time: t(5)))
        #expect(try JSON.parse(fs.lines(path).last!)["dropped_lines"] == .int(3))
    }

    @Test func rotationKeepsNFilesAndNeverSplitsALine() throws {
        let fs = ScriptedFileSystem()
        let log = ReportLog(settings: .init(path: path, rotateBytes: 200, rotateKeep: 2), fileSystem: fs, logger: testLogger())
        for i in 1...12 { #expect(log.append(line(i), time: t(Int64(i)))) }
        #expect(fs.files[path + ".3"] == nil)
        var all: [Int64] = []
        for p in [path + ".2", path + ".1", path] {
            let data = fs.files[p] ?? []
            #expect(data.count <= 200)
            for l in fs.lines(p) { all.append(try JSON.parse(l)["n"]!.intValue!) }
        }
        // Oldest lines fall off the end; what is kept is contiguous and in order.
        #expect(all == Array(all.first!...12))
        #expect(log.stats.rotations >= 3)
    }

    @Test func fileWithoutFinalNewlineGetsOneFirst() throws {
        let fs = ScriptedFileSystem()
        fs.files[path] = Array("{\"partial\":".utf8)
        let log = ReportLog(settings: .init(path: path, rotateBytes: 0, rotateKeep: 0), fileSystem: fs, logger: testLogger())
        #expect(log.append(line(1), time: t(1)))
        let lines = fs.lines(path)
        #expect(lines.count == 2)
        #expect(try JSON.parse(lines[1])["n"] == .int(1))
    }

    @Test func realFileRoundTrip() throws {
        var template = Array("/tmp/reach-log-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer { _ = system("rm -rf '\(dir)'") }
        let p = dir + "/sub/reach.jsonl"
        let log = ReportLog(settings: .init(path: p, rotateBytes: 300, rotateKeep: 1), logger: testLogger())
        for i in 1...10 { #expect(log.append(line(i), time: t(Int64(i)))) }
        let text = try readTextFile(p, limit: 1 << 20).get()
        #expect(text.hasSuffix("\n"))
        #expect(access(p + ".1", F_OK) == 0)
        #expect(access(p + ".2", F_OK) != 0)
    }

    /// A stream (device, FIFO, our standard output) is never rotated, whatever its size.
    @Test func aStreamIsNeverRotated() throws {
        let fs = ScriptedFileSystem()
        fs.streams = [path]
        let log = ReportLog(settings: .init(path: path, rotateBytes: 200, rotateKeep: 2), fileSystem: fs, logger: testLogger())
        for i in 1...12 { #expect(log.append(line(i), time: t(Int64(i)))) }
        #expect(fs.lines(path).count == 12)
        #expect(fs.files[path + ".1"] == nil)
        #expect(log.stats.rotations == 0)
    }

    /// d680fe5 renamed a report log on a copy of /dev/null to .1/.2 and made a regular file in its place. Now the
    /// device is written in place, lines count as written, and no rotated file ever appears.
    @Test(.needsRoot) func aDeviceAsTheReportLogIsWrittenInPlaceAndNeverRotated() throws {
        let s = try Scratch("log-dev")
        try s.device("reach.jsonl", major: 1, minor: 3)
        let log = ReportLog(settings: .init(path: s.path("reach.jsonl"), rotateBytes: 4096, rotateKeep: 2), logger: testLogger())
        for i in 1...200 { #expect(log.append(line(i), time: t(Int64(i)))) }
        #expect(log.stats.linesWritten == 200 && log.stats.rotations == 0)
        #expect(s.names() == ["reach.jsonl"])
        #expect(s.kind("reach.jsonl") == .characterDevice && s.rdev("reach.jsonl") == UInt(devNumber(1, 3)))
    }

    /// A copy of /dev/full: every line is counted as dropped, never as written, and the device stays.
    @Test(.needsRoot) func aFullDeviceDropsLinesAndStaysADevice() throws {
        let s = try Scratch("log-full")
        try s.device("reach.jsonl", major: 1, minor: 7)
        let log = ReportLog(settings: .init(path: s.path("reach.jsonl"), rotateBytes: 4096, rotateKeep: 2), logger: testLogger())
        for i in 1...5 { #expect(!log.append(line(i), time: t(Int64(i)))) }
        #expect(log.stats.linesWritten == 0 && log.stats.linesDropped == 5)
        #expect(s.names() == ["reach.jsonl"] && s.kind("reach.jsonl") == .characterDevice)
    }

    /// A link at the report path is never written through: lines are dropped (and counted) until it is gone.
    @Test func aLinkAtTheReportPathIsRefused() throws {
        let s = try Scratch("log-link")
        try s.write("victim", "precious\n")
        try s.link("reach.jsonl", to: s.path("victim"))
        let log = ReportLog(settings: .init(path: s.path("reach.jsonl"), rotateBytes: 0, rotateKeep: 0), logger: testLogger())
        #expect(!log.append(line(1), time: t(1)))
        #expect(s.read("victim") == "precious\n" && s.kind("reach.jsonl") == .symbolicLink)
        #expect(unlink(s.path("reach.jsonl")) == 0)
        #expect(log.append(line(2), time: t(2)))
        #expect(try JSON.parse(s.read("reach.jsonl")!.split(separator: "\n")[0].description)["dropped_lines"] == .int(1))
    }

    /// A FIFO planted at a rotated name: rotation is refused (counted as an error, tried again later), the FIFO stays,
    /// and the lines keep going to the current file.
    @Test func rotationLeavesAFIFOAtARotatedNameAlone() throws {
        let s = try Scratch("log-rot-fifo")
        try s.fifo("reach.jsonl.1")
        let log = ReportLog(settings: .init(path: s.path("reach.jsonl"), rotateBytes: 4096, rotateKeep: 2), logger: testLogger())
        for i in 1...100 { #expect(log.append(line(i), time: t(Int64(i)))) }
        #expect(log.stats.rotations == 0 && log.stats.errors > 0)
        #expect(s.kind("reach.jsonl.1") == .fifo)
        #expect(s.names() == ["reach.jsonl", "reach.jsonl.1"])
        #expect(s.read("reach.jsonl")?.split(separator: "\n").count == 100)
    }
}
