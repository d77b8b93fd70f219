// GLib's log records (libqmi's and libmbim's g_debug/g_warning…) routed into ReachLog at debug level, so that a
// pty transport's harmless warnings do not reach stderr and a user who asks for debug output sees them with the
// rest of GatewayReach's log.

import CGLibShims
import ReachLog
import Synchronization

public enum GLibLog {
    private static let logger = Mutex<Logger?>(nil)
    private static let severe = Mutex<(@Sendable (_ domain: String, _ message: String) -> Void)?>(nil)

    /// Also hands every record at critical or error level to `handler` (domain, message), on the thread that logged
    /// it and before GLib acts on it: an error-level record is fatal, so a modem worker sends it to its parent first.
    public static func onSevere(_ handler: @escaping @Sendable (_ domain: String, _ message: String) -> Void) {
        severe.withLock { $0 = handler }
        installWriterIfOpen()
    }

    /// Sets the logger GLib records go to (at debug level, with `glib.domain` and `glib.level` metadata).
    /// Without one they are dropped.
    public static func route(to logger: Logger?) {
        self.logger.withLock { $0 = logger }
        installWriterIfOpen()
    }

    /// GLib is opened with the first modem (GLibLibraries): until then there is nothing to install the writer in, and
    /// installing it would open GLib in a process that may never read a modem. `GLibLoop` installs it when it starts,
    /// before any libqmi/libmbim call, and the handler and logger are read at every record.
    private static func installWriterIfOpen() {
        if GLibLibraries.glibIsOpen { installWriter() }
    }

    /// Installs the writer (once per process; GLib allows no second writer).
    static func installWriter() {
        _ = CGLibShims_install_log_writer { level, domain, message in
            GLibLog.emit(level: level, domain: domain, message: message)
        }
    }

    private static func emit(level: CInt, domain: UnsafePointer<CChar>?, message: UnsafePointer<CChar>?) {
        if Int32(level) & (G_LOG_LEVEL_ERROR.rawValue | G_LOG_LEVEL_CRITICAL.rawValue) != 0,
            let handler = severe.withLock({ $0 })
        {
            handler(domain.map { String(cString: $0) } ?? "GLib", message.map { String(cString: $0) } ?? "")
        }
        guard let logger = logger.withLock({ $0 }), logger.logLevel <= .debug else { return }
        let text = message.map { String(cString: $0) } ?? ""
        logger.debug(
            "\(text)",
            metadata: [
                "glib.domain": domain.map { String(cString: $0) } ?? "GLib",
                "glib.level": levelName(level),
            ])
    }

    static func levelName(_ level: CInt) -> String {
        let l = Int32(level)
        if l & G_LOG_LEVEL_ERROR.rawValue != 0 { return "error" }
        if l & G_LOG_LEVEL_CRITICAL.rawValue != 0 { return "critical" }
        if l & G_LOG_LEVEL_WARNING.rawValue != 0 { return "warning" }
        if l & G_LOG_LEVEL_MESSAGE.rawValue != 0 { return "message" }
        if l & G_LOG_LEVEL_INFO.rawValue != 0 { return "info" }
        return "debug"
    }
}
