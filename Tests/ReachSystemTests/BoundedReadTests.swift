import Foundation
import ReachSystem
import ReachTestSupport
import Testing

@Suite struct BoundedReadTests {
    @Test func readsARegularFileWithinItsLimit() throws {
        let s = try Scratch("read")
        try s.write("reach.json", "{}\n")
        #expect(try BoundedRead.bytes(s.path("reach.json"), limit: 3).get() == Array("{}\n".utf8))
        let e = try #require(BoundedRead.bytes(s.path("reach.json"), limit: 2).failure)
        #expect(e.errno == EFBIG && e.description.contains("larger than the 2 bytes allowed"), "\(e)")
    }

    /// d680fe5: `reach status --config FIFO` blocked in open(2) for ever. A FIFO is refused before it is opened.
    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let s = try Scratch("read-fifo")
        try s.fifo("reach.json")
        for links in [BoundedRead.Links.follow, .refuse] {
            let e = try #require(BoundedRead.bytes(s.path("reach.json"), limit: 1 << 20, links: links).failure)
            #expect(e.description == "open \(s.path("reach.json")): a FIFO, not a regular file")
        }
    }

    @Test(.needsRoot) func devicesSocketsAndDirectoriesAreRefused() throws {
        let s = try Scratch("read-dev")
        try s.device("zero", major: 1, minor: 5)
        try s.socket("sock")
        try s.mkdir("dir")
        #expect(BoundedRead.bytes(s.path("zero"), limit: 1 << 20).failure?.detail == "a character device, not a regular file")
        #expect(BoundedRead.bytes(s.path("sock"), limit: 1 << 20).failure?.detail == "a socket, not a regular file")
        #expect(BoundedRead.bytes(s.path("dir"), limit: 1 << 20).failure?.errno == EISDIR)
        #expect(BoundedRead.bytes("/dev/zero", limit: 1 << 20).failure != nil)
    }

    /// sysfs attributes claim 4096 bytes and procfs files 0: a limit of a page fits both, and the read finds the end.
    @Test func sysfsAndProcfsFitTheirLimits() throws {
        let mtu = try BoundedRead.bytes("/sys/class/net/lo/mtu", limit: 4096).get()
        #expect(Int(String(decoding: mtu, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) != nil)
        let forwarding = try BoundedRead.bytes("/proc/sys/net/ipv4/conf/all/forwarding", limit: 4096).get()
        #expect(forwarding == Array("0\n".utf8) || forwarding == Array("1\n".utf8))
        // /proc/self/status says 0 bytes in st_size and holds more than 64: the limit is enforced by the read.
        #expect(BoundedRead.bytes("/proc/self/status", limit: 64).failure?.errno == EFBIG)
    }

    @Test func linksAreFollowedOnlyWhereAsked() throws {
        let s = try Scratch("read-link")
        try s.write("real.json", "{}")
        try s.link("reach.json", to: s.path("real.json"))
        #expect(try BoundedRead.bytes(s.path("reach.json"), limit: 16, links: .follow).get() == Array("{}".utf8))
        let e = try #require(BoundedRead.bytes(s.path("reach.json"), limit: 16, links: .refuse).failure)
        #expect(e.errno == ELOOP && e.detail == "a symbolic link, not a regular file", "\(e)")
        #expect(BoundedRead.tail(s.path("reach.json"), bytes: 16).failure?.errno == ELOOP)
    }

    @Test func tailReadsTheLastBytes() throws {
        let s = try Scratch("tail")
        try s.write("r.jsonl", "one\ntwo\nthree\n")
        let (last, cut) = try BoundedRead.tail(s.path("r.jsonl"), bytes: 6).get()
        #expect(String(decoding: last, as: UTF8.self) == "three\n" && cut)
        let (all, whole) = try BoundedRead.tail(s.path("r.jsonl"), bytes: 100).get()
        #expect(all.count == 14 && !whole)
    }
}
