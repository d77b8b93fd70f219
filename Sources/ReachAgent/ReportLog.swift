// The JSON-lines report log: one object per line, each line written whole with one write(2) on an O_APPEND fd,
// size-based rotation keeping N files, and a full or read-only disk that never stops the agent.
//
// - A short write (the disk filled mid-line, or a signal) leaves a fragment; it is cut off again with ftruncate and
//   the whole line is tried once more, so the file never holds half a line of ours.
// - A line that cannot be written (ENOSPC, EDQUOT, EROFS, EACCES, EIO, …) is counted, never queued: memory stays
//   bounded however long the disk stays full. The first line that can be written again carries
//   `"dropped_lines": N, "dropped_since": "<time of the first lost line>"`.
// - After an error other than a full disk the file is closed and reopened before the next line (a remount, a removed
//   directory or file comes back without a restart).
// - A file that does not end in a newline when opened (a crash mid-line in an older version, an editor) gets one
//   first, so our next line starts on a line of its own.
// - The file is opened through ReachSystem (`SafeWrite.openAppend`): a link at the path is refused, never followed. A
//   character device, a FIFO with a reader or our own standard output (`/dev/stdout` under a supervisor) is a
//   stream: written in place, never rotated or truncated; a reader that stops reading costs dropped lines (EAGAIN),
//   never a blocked agent. Rotation renames regular files only.

import Glibc
import ReachCore
import ReachLog

public final class ReportLog: @unchecked Sendable {
    // @unchecked: used only under the lock of the sink that owns it (ReportSink), or by one test task.

    public struct Settings: Sendable, Equatable {
        public var path: String
        /// Rotate before a line would take the file past this size; 0: never.
        public var rotateBytes: Int
        /// Rotated files kept (path.1 … path.N); 0: none.
        public var rotateKeep: Int

        public init(path: String, rotateBytes: Int, rotateKeep: Int) {
            self.path = path
            self.rotateBytes = rotateBytes
            self.rotateKeep = rotateKeep
        }

        public init(_ r: AgentConfig.Report) {
            self.init(path: r.path, rotateBytes: r.rotateBytes, rotateKeep: r.rotateKeep)
        }
    }

    public struct Stats: Sendable, Equatable {
        public var linesWritten: UInt64 = 0
        /// Lines lost since the agent started (a counter; never reset).
        public var linesDropped: UInt64 = 0
        /// Failed writes, opens and rotations.
        public var errors: UInt64 = 0
        public var rotations: UInt64 = 0
        public init() {}
    }

    public private(set) var settings: Settings
    public private(set) var stats = Stats()
    private let fs: any FileSystem
    private let logger: Logger
    private var fd: Int32?
    /// Our view of the file's size, from fstat at open plus what we wrote.
    private var size = 0
    /// Lines lost in the current streak and when the first of them was due.
    private var dropped: UInt64 = 0
    private var droppedSince: Timestamp?
    /// After a failed rotation, don't try again until the file grew this much (no retry per line).
    private var rotateRetryAt = 0

    public init(settings: Settings, fileSystem: any FileSystem = PosixFileSystem(), logger: Logger) {
        self.settings = settings
        self.fs = fileSystem
        self.logger = logger
    }

    deinit { if let fd { fs.close(fd) } }

    /// Lines waiting to be reported as dropped.
    public var pendingDropped: UInt64 { dropped }

    /// New settings (config reload): a new path is opened at the next line; the old file is closed.
    public func update(_ new: Settings) {
        if new.path != settings.path { closeFile() }
        settings = new
        rotateRetryAt = 0
    }

    /// Closes the file so the next line reopens it (SIGHUP, after an external rotation).
    public func reopen() { closeFile() }

    /// Appends one line. `line` must be a JSON object; the dropped-lines fields are added when some were lost.
    /// Returns whether the line reached the file.
    @discardableResult
    public func append(_ line: JSON, time: Timestamp) -> Bool {
        var object = line
        if dropped > 0, case var .object(members) = line {
            members.append(("dropped_lines", .int(Int64(clamping: dropped))))
            members.append(("dropped_since", .string((droppedSince ?? time).rfc3339)))
            object = .object(members)
        }
        var text = object.serialized()
        text.append("\n")
        guard openIfNeeded() != nil else { return drop(time) }
        rotateIfNeeded(adding: text.utf8.count)
        guard let fd = self.fd else { return drop(time) }
        var bytes = Array(text.utf8)
        if needsNewline { bytes.insert(UInt8(ascii: "\n"), at: 0) }
        switch writeWhole(fd, bytes) {
        case .success:
            size += bytes.count
            needsNewline = false
            stats.linesWritten += 1
            if dropped > 0 {
                logger.info(
                    "Report log writable again",
                    metadata: ["report.path": "\(settings.path)", "report.dropped_lines": "\(dropped)"])
                dropped = 0
                droppedSince = nil
            }
            return true
        case let .failure(e):
            stats.errors += 1
            if dropped == 0 {
                logger.warning(
                    "Report line could not be written; counting lost lines until the log is writable",
                    metadata: ["report.path": "\(settings.path)", "error": "\(e)"])
            }
            if e.errno != ENOSPC && e.errno != EDQUOT { closeFile() }
            return drop(time)
        }
    }

    private var needsNewline = false
    /// The log is a character device, FIFO or our standard output: no rotation, no ftruncate, no pread.
    private var streaming = false

    /// Lines that were due but never reached `append` (their writer fell behind its queue): counted and reported
    /// like lines a failed write lost, on the next line that is written.
    public func countDropped(_ count: Int, time: Timestamp) {
        for _ in 0..<max(0, count) { _ = drop(time) }
    }

    private func drop(_ time: Timestamp) -> Bool {
        if dropped == 0 { droppedSince = time }
        dropped += 1
        stats.linesDropped += 1
        return false
    }

    private func openIfNeeded() -> Int32? {
        if let fd { return fd }
        switch fs.openAppend(settings.path) {
        case let .success(file):
            fd = file.fd
            streaming = file.isStream
            if streaming {
                size = 0
            } else {
                size = (try? fs.size(file.fd).get()) ?? 0
                needsNewline = size > 0 && fs.lastByte(file.fd, size: size) != UInt8(ascii: "\n")
            }
            return file.fd
        case let .failure(e):
            stats.errors += 1
            if dropped == 0 {
                logger.warning(
                    "Report log cannot be opened; counting lost lines until it can",
                    metadata: ["report.path": "\(settings.path)", "error": "\(e)"])
            }
            return nil
        }
    }

    private func closeFile() {
        if let fd { fs.close(fd) }
        fd = nil
    }

    /// Writes all of `bytes` with one write(2). On a short write the fragment is cut off and the line tried once more;
    /// on a stream, which cannot be cut, the rest of the line follows (and after a failure the next line starts on a
    /// line of its own).
    private func writeWhole(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, SystemError> {
        if streaming {
            var offset = 0
            while offset < bytes.count {
                let r = bytes.withUnsafeBytes { fs.write(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                switch r {
                case let .success(n) where n > 0: offset += n
                case .success: return .failure(SystemError("write (short)", errno: EIO, path: settings.path))
                case let .failure(e):
                    if offset > 0 { needsNewline = true }
                    return .failure(e)
                }
            }
            return .success(())
        }
        for attempt in 0..<2 {
            let r = bytes.withUnsafeBytes { fs.write(fd, $0) }
            switch r {
            case let .success(n) where n == bytes.count:
                return .success(())
            case let .success(n):
                // A fragment of n bytes is now at the end of the file: cut it off so no half line remains.
                let end = (try? fs.size(fd).get()) ?? (size + n)
                if case let .failure(e) = fs.truncate(fd, to: max(0, end - n)) {
                    logger.error(
                        "A partial report line could not be removed", metadata: ["report.path": "\(settings.path)", "error": "\(e)"])
                }
                if attempt == 1 { return .failure(SystemError("write (short)", errno: ENOSPC)) }
            case let .failure(e):
                return .failure(e)
            }
        }
        return .failure(SystemError("write (short)", errno: ENOSPC))
    }

    /// Rotates when the line would take the file past the limit: path.N-1 → path.N, …, path → path.1, then reopens.
    /// A failed or refused rename (a device or FIFO at one of the names) leaves the current file in use; a failed
    /// reopen leaves no fd (the line is then dropped). A stream is never rotated.
    private func rotateIfNeeded(adding count: Int) {
        guard !streaming, settings.rotateBytes > 0, size > 0, size + count > settings.rotateBytes, size >= rotateRetryAt
        else {
            return
        }
        let path = settings.path
        var failure: SystemError?
        if case let .failure(e) = fs.rotate(path, keep: settings.rotateKeep) { failure = e }
        if let failure {
            stats.errors += 1
            rotateRetryAt = size + max(settings.rotateBytes / 8, 4096)
            logger.warning("Report log rotation failed; writing on", metadata: ["report.path": "\(path)", "error": "\(failure)"])
            return
        }
        stats.rotations += 1
        closeFile()
        rotateRetryAt = 0
        _ = openIfNeeded()
    }
}
