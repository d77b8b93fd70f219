import ReachLog
import Synchronization
import Testing

/// Records a handler got, in order.
final class Collected: Sendable {
    private let records = Mutex<[LogRecord]>([])
    var handler: LogHandler { { record in self.records.withLock { $0.append(record) } } }
    var all: [LogRecord] { records.withLock { $0 } }
}

@Suite struct LoggerTests {
    /// The line swift-log 1.16's StreamLogHandler wrote for the same record, so the agent's stderr reads as before.
    @Test func theLineIsStreamLogHandlers() {
        let record = LogRecord(
            level: .warning, label: "reach", message: "Modem worker failed",
            metadata: ["modem.device": "/dev/cdc-wdm0", "error": "exit 1"], file: "ReachModem/ModemWorker.swift",
            function: "f()", line: 1)
        #expect(
            record.formatted(time: "2026-11-27T18:22:09+0000")
                == "2026-11-27T18:22:09+0000 warning reach: error=exit 1 modem.device=/dev/cdc-wdm0 [ReachModem] Modem worker failed\n")
        let bare = LogRecord(level: .info, label: "", message: "m", file: "NoSlash", function: "f()", line: 1)
        #expect(bare.formatted(time: "T") == "T info: [n/a] m\n")
    }

    @Test func recordsBelowTheLevelAreNotMade() {
        let got = Collected()
        let logger = Logger(label: "x", level: .notice, handler: got.handler)
        let made = Atomic<Int>(0)
        func message(_ text: String) -> String {
            made.add(1, ordering: .relaxed)
            return text
        }
        logger.debug("\(message("debug"))")
        logger.info("\(message("info"))")
        logger.notice("\(message("notice"))", metadata: ["k": "v"])
        logger.critical("\(message("critical"))")
        #expect(made.load(ordering: .relaxed) == 2)
        #expect(got.all.map(\.message) == ["notice", "critical"])
        #expect(got.all.map(\.level) == [.notice, .critical])
        #expect(got.all.first?.metadata == ["k": "v"])
        #expect(got.all.first?.module == "ReachLogTests")
        #expect(got.all.first?.label == "x")
    }

    /// A reload sets one switch; every logger made with it, copies included, logs at the new level.
    @Test func aSharedLevelReachesEveryCopy() {
        let got = Collected()
        let level = LogLevelSwitch(level: .info)
        let a = Logger(label: "a", level: level, handler: got.handler)
        var b = a
        b.debug("hidden")
        level.level = .debug
        a.debug("shown a")
        b.debug("shown b")
        b.logLevel = .error  // through the switch, for a too
        #expect(a.logLevel == .error)
        a.warning("hidden")
        #expect(got.all.map(\.message) == ["shown a", "shown b"])
    }

    @Test func theLoggersMetadataGoesWithEveryRecordAndARecordsOwnWins() {
        let got = Collected()
        var logger = Logger(label: "a", handler: got.handler)
        logger[metadataKey: "modem.device"] = "/dev/cdc-wdm0"
        logger[metadataKey: "error"] = "none"
        logger.info("one")
        logger.info("two", metadata: ["error": "timeout"])
        #expect(got.all.map(\.metadata) == [
            ["modem.device": "/dev/cdc-wdm0", "error": "none"], ["modem.device": "/dev/cdc-wdm0", "error": "timeout"],
        ])
    }

    @Test func aFixedLevelBelongsToItsCopy() {
        let got = Collected()
        let a = Logger(label: "a", level: .info, handler: got.handler)
        var b = a
        b.logLevel = .trace
        a.trace("hidden")
        b.trace("shown")
        #expect(got.all.map(\.message) == ["shown"])
    }

    @Test func aDiscardingLoggerMakesNothing() {
        var logger = Logger.discarding(label: "x")
        #expect(logger.logLevel == .critical)
        logger.logLevel = .trace
        var made = false
        logger.critical("\({ made = true; return "m" }())")
        #expect(!made)
    }

    @Test func levelsOrderAndPriorities() {
        #expect(Logger.Level.allCases.sorted() == [.trace, .debug, .info, .notice, .warning, .error, .critical])
        #expect(Logger.Level.allCases.map(\.syslogPriority) == [7, 7, 6, 5, 4, 3, 2])
        #expect(Logger.Level(rawValue: "notice") == .notice)
    }

    /// systemd.exec(5): JOURNAL_STREAM is "device:inode" of the stream, in decimal.
    @Test func journalStreamMatchesOnlyItsOwnDescriptor() {
        #expect(StandardError.isJournalStream("8:123456", device: 8, inode: 123456))
        #expect(!StandardError.isJournalStream("8:123456", device: 8, inode: 123457))
        #expect(!StandardError.isJournalStream("9:123456", device: 8, inode: 123456))
        #expect(!StandardError.isJournalStream("8:123456:1", device: 8, inode: 123456))
        #expect(!StandardError.isJournalStream(":123456", device: 0, inode: 123456))
        #expect(!StandardError.isJournalStream("", device: 0, inode: 0))
    }
}
