import Foundation
@testable import ReachSystem
import ReachTestSupport
import Testing

@Suite struct SafeWriteTests {
    let bytes = Array("the new contents\n".utf8)

    @Test func createsWithItsModeAndLeavesNoTemporaryFile() throws {
        let s = try Scratch("create")
        #expect(try SafeWrite.replace(s.path("reach.prom"), with: bytes, mode: 0o644).get() == .replaced)
        #expect(s.read("reach.prom") == "the new contents\n")
        #expect(s.mode("reach.prom") == 0o644, "created 0600, then fchmod before the data")
        #expect(s.names() == ["reach.prom"])
    }

    /// A rename, never a write into the old file: a hard link to the old file keeps the old contents.
    @Test func replacesARegularFileThroughRename() throws {
        let s = try Scratch("replace")
        try s.write("target", "old\n")
        #expect(link(s.path("target"), s.path("other-name")) == 0)
        #expect(try SafeWrite.replace(s.path("target"), with: bytes, mode: 0o600).get() == .replaced)
        #expect(s.read("target") == "the new contents\n")
        #expect(s.read("other-name") == "old\n")
        #expect(s.names() == ["other-name", "target"])
    }

    /// The hole of d680fe5: a link planted at the predictable `NAME.tmp` received the whole file. The temporary name
    /// is now unpredictable and created O_EXCL|O_NOFOLLOW; links at every name it could have had are left alone.
    @Test func aLinkAtTheOldTemporaryNameIsNeverWrittenThrough() throws {
        let s = try Scratch("tmp-link")
        try s.write("victim", "precious\n")
        try s.link("bundle.tar.gz.tmp", to: s.path("victim"))
        try s.link(".bundle.tar.gz.tmp", to: s.path("victim"))
        #expect(try SafeWrite.replace(s.path("bundle.tar.gz"), with: bytes, mode: 0o600).get() == .replaced)
        #expect(s.read("victim") == "precious\n")
        #expect(s.kind("bundle.tar.gz.tmp") == .symbolicLink)
        #expect(s.read("bundle.tar.gz") == "the new contents\n")
        #expect(s.names() == [".bundle.tar.gz.tmp", "bundle.tar.gz", "bundle.tar.gz.tmp", "victim"])
    }

    @Test func temporaryNamesAreHiddenUnpredictableAndNeverTheTargetsSuffix() {
        let names = (0..<64).map { _ in SafeWrite.temporaryName(for: "reach.prom") }
        #expect(Set(names).count == 64)
        for n in names {
            #expect(n.hasPrefix(".reach.prom.") && n.hasSuffix(".tmp") && n.utf8.count == ".reach.prom.".utf8.count + 16)
        }
        #expect(SafeWrite.temporaryName(for: String(repeating: "é", count: 127)).utf8.count <= 255)
    }

    /// A link at the file itself is refused, whoever owns it: the link and what it points to stay as they are.
    @Test func aLinkAtTheTargetIsRefused() throws {
        let s = try Scratch("target-link")
        try s.write("victim", "precious\n")
        try s.link("report.jsonl", to: s.path("victim"))
        let e = try #require(SafeWrite.replace(s.path("report.jsonl"), with: bytes, mode: 0o600).failure)
        #expect(e.errno == ELOOP)
        #expect(e.description.contains("symbolic link"), "\(e)")
        #expect(s.read("victim") == "precious\n")
        #expect(s.kind("report.jsonl") == .symbolicLink)
        #expect(SafeWrite.openAppend(s.path("report.jsonl"), mode: 0o640).failure?.errno == ELOOP)
        #expect(s.names() == ["report.jsonl", "victim"])
    }

    /// A directory on the way that is a link someone else planted (owned by nobody, or in a directory others can
    /// write) is not followed; one only root can have made is.
    @Test(.needsRoot) func aLinkAtTheDirectoryIsFollowedOnlyWhenOnlyRootCanHaveMadeIt() throws {
        let s = try Scratch("dir-link")
        try s.mkdir("elsewhere")
        try s.link("planted", to: s.path("elsewhere"), owner: nobody)
        let planted = try #require(SafeWrite.replace(s.path("planted/bundle.tar.gz"), with: bytes, mode: 0o600).failure)
        #expect(planted.errno == ELOOP)
        #expect(planted.description.contains("belongs to uid 65534"), "\(planted)")

        try s.mkdir("shared", mode: 0o777)
        #expect(symlink(s.path("elsewhere"), s.path("shared/logs")) == 0)  // root's link, but others can replace it
        let shared = try #require(SafeWrite.openAppend(s.path("shared/logs/reach.jsonl"), mode: 0o640).failure)
        #expect(shared.description.contains("writable by others"), "\(shared)")
        #expect(s.names("elsewhere").isEmpty)

        // A sticky shared directory (/tmp): others cannot replace root's link, so it is followed.
        try s.mkdir("sticky", mode: 0o1777)
        #expect(symlink(s.path("elsewhere"), s.path("sticky/logs")) == 0)
        // Root's own link in root's own directory (/var/run -> /run): followed, hop by hop.
        try s.link("mine", to: "sticky/logs")
        #expect(try SafeWrite.replace(s.path("mine/bundle.tar.gz"), with: bytes, mode: 0o600).get() == .replaced)
        #expect(s.read("elsewhere/bundle.tar.gz") == "the new contents\n")
    }

    @Test(.needsRoot) func aCopyOfDevNullIsWrittenInPlaceAndStaysADevice() throws {
        let s = try Scratch("null")
        try s.device("null", major: 1, minor: 3)
        #expect(try SafeWrite.replace(s.path("null"), with: bytes, mode: 0o600).get() == .inPlace(.characterDevice))
        #expect(s.kind("null") == .characterDevice)
        #expect(s.rdev("null") == UInt(devNumber(1, 3)))
        #expect(s.names() == ["null"])
    }

    /// d680fe5 replaced a copy of /dev/full with a regular file and reported success; now the write fails (ENOSPC)
    /// and the device stays.
    @Test(.needsRoot) func aCopyOfDevFullFailsAndStaysADevice() throws {
        let s = try Scratch("full")
        try s.device("full", major: 1, minor: 7)
        let e = try #require(SafeWrite.replace(s.path("full"), with: bytes, mode: 0o600).failure)
        #expect(e.errno == ENOSPC)
        #expect(e.description == "write \(s.path("full")): No space left on device")
        #expect(s.kind("full") == .characterDevice && s.rdev("full") == UInt(devNumber(1, 7)))
        #expect(s.names() == ["full"])
    }

    @Test(.needsRoot) func aBlockDeviceASocketAndADirectoryAreRefusedUntouched() throws {
        let s = try Scratch("refused")
        try s.device("disk", major: 7, minor: 0, block: true)
        try s.socket("sock")
        try s.mkdir("dir")
        for (name, kind, words) in [("disk", FileKind.blockDevice, "block device"), ("sock", .socket, "socket"),
                                    ("dir", .directory, "directory")] {
            let e = try #require(SafeWrite.replace(s.path(name), with: bytes, mode: 0o600).failure, "\(name)")
            #expect(e.description.contains(words), "\(e)")
            #expect(SafeWrite.openAppend(s.path(name), mode: 0o640).failure != nil, "\(name)")
            #expect(s.kind(name) == kind)
        }
        #expect(s.names() == ["dir", "disk", "sock"])
    }

    @Test func aFIFOWithNoReaderIsRefusedAtOnce() throws {
        let s = try Scratch("fifo")
        try s.fifo("fifo")
        let e = try #require(SafeWrite.replace(s.path("fifo"), with: bytes, mode: 0o600).failure)
        #expect(e.errno == ENXIO && e.description.hasSuffix("a FIFO with no reader"), "\(e)")
        #expect(SafeWrite.openAppend(s.path("fifo"), mode: 0o640).failure?.errno == ENXIO)
        #expect(s.kind("fifo") == .fifo)
        #expect(s.names() == ["fifo"])
    }

    @Test func aFIFOWithAReaderIsStreamedTo() throws {
        let s = try Scratch("fifo-reader")
        try s.fifo("fifo")
        let reader = open(s.path("fifo"), O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        #expect(try SafeWrite.replace(s.path("fifo"), with: bytes, mode: 0o600).get() == .inPlace(.fifo))
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(reader, &buffer, buffer.count)
        #expect(Array(buffer[0..<max(0, n)]) == bytes)
        #expect(s.kind("fifo") == .fifo)
    }

    /// Appending to a FIFO whose reader stopped reading: EAGAIN once the pipe is full, never a blocked writer.
    @Test func appendingToAStalledFIFOFailsInsteadOfBlocking() throws {
        let s = try Scratch("fifo-stall")
        try s.fifo("fifo")
        let reader = open(s.path("fifo"), O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        let file = try SafeWrite.openAppend(s.path("fifo"), mode: 0o640).get()
        defer { close(file.fd) }
        #expect(file.kind == .fifo)
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        var last: Result<Int, SystemError> = .success(0)
        for _ in 0..<1024 {  // 4 MiB: far more than a pipe holds
            last = line.withUnsafeBytes { Sys.write(file.fd, $0, path: s.path("fifo")) }
            if case .failure = last { break }
        }
        #expect(last.failure?.errno == EAGAIN)
    }

    @Test func ownDescriptorsAreWrittenThroughTheDescriptor() throws {
        #expect(SafeWrite.ownDescriptor("/dev/stdout") == 1)
        #expect(SafeWrite.ownDescriptor("/dev/stderr") == 2)
        #expect(SafeWrite.ownDescriptor("/dev/fd/7") == 7)
        #expect(SafeWrite.ownDescriptor("/proc/self/fd/12") == 12)
        for other in ["/dev/fd/", "/dev/fd/x", "/dev/fd/1/x", "/dev/stdin2", "/dev/null", "/proc/1/fd/1"] {
            #expect(SafeWrite.ownDescriptor(other) == nil, "\(other)")
        }
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        #expect(try SafeWrite.replace("/dev/fd/\(fds[1])", with: bytes, mode: 0o600).get() == .inPlace(.fifo))
        var buffer = [UInt8](repeating: 0, count: 256)
        #expect(Array(buffer[0..<read(fds[0], &buffer, buffer.count)]) == bytes)
        let appended = try SafeWrite.openAppend("/dev/fd/\(fds[1])", mode: 0o640).get()
        #expect(appended.fd != fds[1] && appended.kind == .fifo && appended.isStream)
        close(appended.fd)
        // Our standard output is a stream even when it is a regular file (the supervisor's): never rotated.
        let file = try Scratch("own-fd")
        let regular = open(file.path("out"), O_WRONLY | O_CREAT, 0o600)
        defer { close(regular) }
        let own = try SafeWrite.openAppend("/proc/self/fd/\(regular)", mode: 0o640).get()
        #expect(own.kind == .regular && own.isStream)
        close(own.fd)
        // journald's stdout stream is a socket, which no open(2) of /proc/self/fd/N can reach; the descriptor can.
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let journal = try SafeWrite.openAppend("/dev/fd/\(pair[1])", mode: 0o640).get()
        #expect(journal.kind == .socket && journal.isStream)
        _ = bytes.withUnsafeBytes { Sys.write(journal.fd, $0, path: nil) }
        close(journal.fd)
        #expect(Array(buffer[0..<read(pair[0], &buffer, buffer.count)]) == bytes)
    }

    @Test func appendCreatesTheFileAndItsDirectoryWithTheirModes() throws {
        let s = try Scratch("append")
        let file = try SafeWrite.openAppend(s.path("reach/reach.jsonl"), mode: 0o640, createDirectory: 0o750).get()
        #expect(file.kind == .regular)
        _ = Array("line\n".utf8).withUnsafeBytes { Sys.write(file.fd, $0, path: nil) }
        close(file.fd)
        #expect(s.read("reach/reach.jsonl") == "line\n")
        #expect(s.mode("reach/reach.jsonl") == 0o640)
        #expect(s.kind("reach") == .directory)
        // Only the last level is made.
        #expect(SafeWrite.openAppend(s.path("a/b/reach.jsonl"), mode: 0o640, createDirectory: 0o750).failure?.errno == ENOENT)
        // An existing file is appended to, its mode kept.
        #expect(chmod(s.path("reach/reach.jsonl"), 0o600) == 0)
        let again = try SafeWrite.openAppend(s.path("reach/reach.jsonl"), mode: 0o640).get()
        _ = Array("more\n".utf8).withUnsafeBytes { Sys.write(again.fd, $0, path: nil) }
        close(again.fd)
        #expect(s.read("reach/reach.jsonl") == "line\nmore\n")
        #expect(s.mode("reach/reach.jsonl") == 0o600)
    }

    @Test func rotationRenamesRegularFilesOnly() throws {
        let s = try Scratch("rotate")
        for (name, text) in [("r.jsonl", "0\n"), ("r.jsonl.1", "1\n"), ("r.jsonl.2", "2\n")] { try s.write(name, text) }
        try SafeWrite.rotate(s.path("r.jsonl"), keep: 2).get()
        #expect(s.names() == ["r.jsonl.1", "r.jsonl.2"])
        #expect(s.read("r.jsonl.1") == "0\n" && s.read("r.jsonl.2") == "1\n")

        // A FIFO at .1: never replaced; the current file is not moved and the rotation says why.
        try s.write("r.jsonl", "new\n")
        #expect(unlink(s.path("r.jsonl.1")) == 0)
        try s.fifo("r.jsonl.1")
        let e = try #require(SafeWrite.rotate(s.path("r.jsonl"), keep: 2).failure)
        #expect(e.description.contains("r.jsonl.1: a FIFO; not"), "\(e)")
        #expect(s.kind("r.jsonl.1") == .fifo && s.read("r.jsonl") == "new\n")

        // A link as the oldest: not removed (what it points to neither); the others still shift.
        let t = try Scratch("rotate-link")
        try t.write("victim", "precious\n")
        try t.write("r", "0\n")
        try t.link("r.1", to: t.path("victim"))
        #expect(SafeWrite.rotate(t.path("r"), keep: 1).failure != nil)
        #expect(t.kind("r.1") == .symbolicLink && t.read("victim") == "precious\n" && t.read("r") == "0\n")
        try SafeWrite.rotate(t.path("r"), keep: 0).get()
        #expect(t.names() == ["r.1", "victim"])
    }

    @Test(.needsRoot) func rotationNeverMovesOrRemovesADevice() throws {
        let s = try Scratch("rotate-dev")
        try s.device("r.jsonl", major: 1, minor: 3)
        #expect(SafeWrite.rotate(s.path("r.jsonl"), keep: 2).failure != nil)
        #expect(SafeWrite.rotate(s.path("r.jsonl"), keep: 0).failure != nil)
        #expect(s.names() == ["r.jsonl"])
        #expect(s.kind("r.jsonl") == .characterDevice)
    }
}

extension Result {
    var failure: Failure? { if case let .failure(e) = self { return e } else { return nil } }
}
