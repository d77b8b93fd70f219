// The support bundle of `reach diag --bundle FILE`: a .tar.gz written here without Foundation or a `tar` process.
// ustar archive (POSIX.1-1988 headers), gzip (RFC 1952) around deflate stored blocks (RFC 1951 §3.2.4): the files are
// small text, and a stored block needs no compressor in the binary. `tar -xzf` and `gzip -t` read it.

import Glibc
import ReachCore

public enum TarGz {
    public struct Entry: Sendable {
        public var name: String
        public var data: [UInt8]
        public var mode: Int

        public init(name: String, text: String, mode: Int = 0o644) {
            self.name = name
            self.data = Array(text.utf8)
            self.mode = mode
        }
    }

    /// A ustar archive of regular files, all owned by root, stamped with `mtime`.
    public static func tar(_ entries: [Entry], mtime: Int64) -> [UInt8] {
        var out: [UInt8] = []
        for e in entries {
            var h = [UInt8](repeating: 0, count: 512)
            func put(_ s: String, _ at: Int, _ len: Int) {
                for (i, b) in s.utf8.prefix(len).enumerated() { h[at + i] = b }
            }
            func octal(_ v: Int64, _ at: Int, _ len: Int) {
                let s = String(v, radix: 8)
                put(String(repeating: "0", count: max(0, len - 1 - s.count)) + s, at, len - 1)
            }
            put(e.name, 0, 100)
            octal(Int64(e.mode), 100, 8)
            octal(0, 108, 8)
            octal(0, 116, 8)
            octal(Int64(e.data.count), 124, 12)
            octal(mtime, 136, 12)
            for i in 148..<156 { h[i] = 0x20 }  // checksum field counts as spaces
            h[156] = UInt8(ascii: "0")
            put("ustar", 257, 6)
            put("00", 263, 2)
            put("root", 265, 32)
            put("root", 297, 32)
            let sum = h.reduce(0) { $0 + Int($1) }
            let s = String(sum, radix: 8)
            put(String(repeating: "0", count: max(0, 6 - s.count)) + s, 148, 6)
            h[154] = 0
            h[155] = 0x20
            out += h
            out += e.data
            out += [UInt8](repeating: 0, count: (512 - e.data.count % 512) % 512)
        }
        out += [UInt8](repeating: 0, count: 1024)
        return out
    }

    /// gzip with deflate stored blocks (at most 65535 bytes each).
    public static func gzip(_ data: [UInt8], mtime: Int64) -> [UInt8] {
        var out: [UInt8] = [0x1F, 0x8B, 8, 0]
        out += le32(UInt32(truncatingIfNeeded: mtime))
        out += [0, 0xFF]  // XFL, OS unknown
        var i = 0
        repeat {
            let n = min(65535, data.count - i)
            let final: UInt8 = i + n == data.count ? 1 : 0
            out.append(final)  // BFINAL, BTYPE 00 (stored), padded to the byte
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[i..<i + n]
            i += n
        } while i < data.count
        out += le32(CRC32.checksum(data))
        out += le32(UInt32(truncatingIfNeeded: data.count))
        return out
    }

    static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
}

/// CRC-32 (IEEE 802.3, reflected 0xEDB88320), as gzip needs it.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ data: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in data { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

public enum SupportBundle {
    /// The last `count` lines of the report log (only the file's tail is read: at most 1 MiB).
    public static func tail(_ path: String, lines count: Int) -> [String] { reportTail(path, lines: count).lines }

    /// The last `count` report lines and, when something was left out or could not be read, a note saying what.
    /// The log is read as ReachSystem reads files other users may change (`BoundedRead.tail`, links refused: a root
    /// `reach diag` must not copy whatever a link in the agent's log directory points at), and only lines that are
    /// JSON objects, as every report line is, are carried.
    static func reportTail(_ path: String, lines count: Int) -> (lines: [String], note: String?) {
        guard count > 0 else { return ([], nil) }
        let bytes: [UInt8]
        let cut: Bool
        switch BoundedRead.tail(path, bytes: 1 << 20, links: .refuse) {
        case let .success(t): (bytes, cut) = t
        case let .failure(e) where e.errno == ENOENT: return ([], "\(path): no report log yet\n")
        case let .failure(e): return ([], "the report log could not be read: \(e)\n")
        }
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        if cut, !lines.isEmpty { lines.removeFirst() }  // a partial first line
        lines = Array(lines.suffix(count))
        let reportLines = lines.filter { (try? JSON.parse($0))?.objectValue != nil }
        let left = lines.count - reportLines.count
        return (reportLines, left > 0 ? "\(left) line(s) of \(path) that are not report lines were left out\n" : nil)
    }

    /// Builds the bundle's bytes: snapshot, checks, the last report lines, versions and the config, redacted unless
    /// `showIdentifiers`.
    public static func build(report: DiagReport, config: AgentConfig, showIdentifiers: Bool) -> [UInt8] {
        let now = report.facts.snapshot.time
        var (reportLines, note) = reportTail(config.report.path, lines: config.diagReportLines)
        if !showIdentifiers {
            reportLines = reportLines.compactMap { line in (try? JSON.parse(line)).map { Redact.json($0).serialized() } }
        }
        var snapshot = report.facts.snapshot.json(showIdentifiers: showIdentifiers)
        if !showIdentifiers { snapshot = Redact.json(snapshot) }
        let versions = Diagnostics.versions().map { "\($0.0): \($0.1)" }.joined(separator: "\n") + "\n"
        let dir = "reach-diag-\(now.seconds)"
        var entries = [
            TarGz.Entry(name: "\(dir)/snapshot.json", text: snapshot.prettySerialized() + "\n"),
            TarGz.Entry(name: "\(dir)/diag.json", text: report.json(showIdentifiers: showIdentifiers).prettySerialized() + "\n"),
            TarGz.Entry(name: "\(dir)/diag.txt", text: report.text() + "\n"),
            TarGz.Entry(name: "\(dir)/report-tail.jsonl", text: reportLines.map { $0 + "\n" }.joined()),
            TarGz.Entry(name: "\(dir)/versions.txt", text: versions),
            TarGz.Entry(name: "\(dir)/config.json", text: config.json.prettySerialized() + "\n"),
        ]
        if let note { entries.insert(TarGz.Entry(name: "\(dir)/report-tail.txt", text: note), at: 4) }
        // The running agent's own answer (state.json's object; it carries no identifiers), when it answered.
        if let state = report.agentState {
            entries.append(TarGz.Entry(name: "\(dir)/agent-state.json", text: (showIdentifiers ? state : Redact.json(state)).prettySerialized() + "\n"))
        }
        return TarGz.gzip(TarGz.tar(entries, mtime: now.seconds), mtime: now.seconds)
    }

    /// Writes the bundle, mode 0600 (it describes the site), through ReachSystem' safe write: a regular file (or none)
    /// is replaced through a temporary file and rename; a character device, a FIFO with a reader or our standard
    /// output (`-`, `/dev/stdout`) is written in place; anything else is refused. A failed write is an error.
    public static func write(_ bytes: [UInt8], to path: String) -> Result<Void, SystemError> {
        SafeWrite.replace(path == "-" ? "/dev/stdout" : path, with: bytes, mode: 0o600).map { _ in () }
    }

    /// Whether `path` is our standard output (the diagnostics text then goes to standard error).
    public static func isStandardOutput(_ path: String) -> Bool {
        path == "-" || SafeWrite.ownDescriptor(path) == 1
    }
}
