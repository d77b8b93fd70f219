// Records on standard error, where journald (systemd) and procd's logd (OpenWrt) take them from: swift-log's
// StreamLogHandler line, written with one write(2) so that lines from threads and worker processes never interleave.
//
// When standard error is the journal, each line starts with the record's syslog priority as "<N>" (sd-daemon(3)):
// journald takes the prefix off and files the entry at that priority, so `journalctl -p warning` finds the agent's
// warnings and the text reads as before. systemd says that standard error is the journal by JOURNAL_STREAM, the
// device and inode of the stream it connected, "device:inode" in decimal (systemd.exec(5)); a descriptor that no
// longer matches (redirected by a shell, say) gets no prefix. procd sets no JOURNAL_STREAM.

#if canImport(Glibc)
import Glibc
#endif
import ReachSystem

public enum StandardError {
    /// The handler: every record it gets, one line on standard error.
    public static let handler: LogHandler = { write($0) }

    public static func write(_ record: LogRecord) {
        var text = record.formatted(time: timestamp())
        if toJournal { text = "<\(record.level.syslogPriority)>" + text }
        // A failure leaves nowhere to say it.
        _ = Sys.writeAll(2, Array(text.utf8), path: nil)
    }

    /// Whether standard error is the journal's stream, decided once.
    static let toJournal: Bool = {
        var st = stat()
        guard let value = getenv("JOURNAL_STREAM"), fstat(2, &st) == 0 else { return false }
        return isJournalStream(String(cString: value), device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }()

    /// JOURNAL_STREAM's "device:inode" against a descriptor's.
    public static func isJournalStream(_ value: String, device: UInt64, inode: UInt64) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let d = UInt64(parts[0]), let i = UInt64(parts[1]) else { return false }
        return d == device && i == inode
    }

    /// Local time as StreamLogHandler writes it: strftime's "%Y-%m-%dT%H:%M:%S%z".
    static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        guard strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local) > 0 else { return "<unknown>" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
