// The terminal calls of the live views (`reach signal`): whether a descriptor is a terminal, its size, its modes.

import Glibc

extension Sys {
    /// Whether `fd` is a terminal. The corresponding C function is `isatty`.
    public static func isatty(_ fd: Int32) -> Bool { Glibc.isatty(fd) == 1 }

    /// The terminal's rows and columns, or nil when `fd` is not a terminal or reports no size. The corresponding C
    /// function is `ioctl` (TIOCGWINSZ).
    public static func windowSize(_ fd: Int32) -> (rows: Int, columns: Int)? {
        var w = winsize()
        guard Glibc.ioctl(fd, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0, w.ws_row > 0 else { return nil }
        return (Int(w.ws_row), Int(w.ws_col))
    }

    /// The terminal's modes. The corresponding C function is `tcgetattr`.
    public static func tcgetattr(_ fd: Int32) -> Result<termios, SystemError> {
        var settings = termios()
        return retrying("tcgetattr", nil) { Glibc.tcgetattr(fd, &settings) }.map { _ in settings }
    }

    /// Sets the terminal's modes at once (TCSANOW). The corresponding C function is `tcsetattr`.
    @discardableResult
    public static func tcsetattr(_ fd: Int32, _ settings: termios) -> Result<Void, SystemError> {
        var settings = settings
        return retrying("tcsetattr", nil) { Glibc.tcsetattr(fd, TCSANOW, &settings) }.map { _ in () }
    }
}
