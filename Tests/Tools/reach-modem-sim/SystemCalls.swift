// The few system calls the simulator makes, each wrapped once with its errno, and the pseudo-terminal.

#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, on what, and errno's text.
struct SystemError: Error, CustomStringConvertible {
    var call: String
    var subject: String
    var errno: Int32

    init(_ call: String, _ subject: String = "", errno: Int32 = Glibc.errno) {
        self.call = call
        self.subject = subject
        self.errno = errno
    }

    var description: String {
        let what = subject.isEmpty ? call : "\(call) \(subject)"
        return "\(what): \(String(cString: strerror(errno)))"
    }
}

enum Sys {
    /// Milliseconds on the monotonic clock. The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    static func monotonicMs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    /// Reads a whole file. The corresponding C functions are `open` and `read`.
    static func readFile(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path)
            }
            if n == 0 { return out }
            out += chunk[0..<n]
            if out.count > 16 << 20 { throw SystemError("read", path, errno: EFBIG) }
        }
    }

    /// Non-blocking read into a fresh array: nil at end of file, [] when nothing is there yet.
    /// The corresponding C function is `read`.
    static func readAvailable(_ fd: Int32, max: Int = 4096) throws(SystemError) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: max)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { return Array(buf[0..<n]) }
            if n == 0 { return nil }
            switch errno {
            case EINTR: continue
            case EAGAIN: return []
            default: throw SystemError("read")
            }
        }
    }

    /// Writes as much as the descriptor takes now; returns the count written. The corresponding C function is `write`.
    static func writeSome(_ fd: Int32, _ bytes: ArraySlice<UInt8>) throws(SystemError) -> Int {
        while true {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EAGAIN: return 0
            default: throw SystemError("write")
            }
        }
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// Whether `path` is a symbolic link (so it may be replaced). The corresponding C function is `lstat`.
    static func isSymlink(_ path: String) -> Bool? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (st.st_mode & S_IFMT) == S_IFLNK
    }

    static func isSocket(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
    }
}

/// The master side of a pseudo-terminal in raw mode; the slave path is what clients open.
struct PseudoTerminal {
    let master: Int32
    let slavePath: String
    /// inotify watching the slave for IN_OPEN, so a client that opens the port is noticed at once rather than on
    /// the next look (-1 if inotify is unavailable; the loop then looks every 10 ms).
    let opens: Int32

    /// Opens a pty, puts it in raw mode (8-bit clean, no echo, no line editing) and closes our slave descriptor,
    /// so the master sees a hang-up whenever no client has the slave open.
    /// The corresponding C functions are `openpty`, `cfmakeraw` and `tcsetattr`.
    static func open() throws(SystemError) -> PseudoTerminal {
        var master: Int32 = -1
        var slave: Int32 = -1
        var name = [CChar](repeating: 0, count: 128)
        guard openpty(&master, &slave, &name, nil, nil) == 0 else { throw SystemError("openpty") }
        var tio = termios()
        guard tcgetattr(slave, &tio) == 0 else {
            let e = SystemError("tcgetattr")
            Glibc.close(master)
            Glibc.close(slave)
            throw e
        }
        cfmakeraw(&tio)
        guard tcsetattr(slave, TCSANOW, &tio) == 0 else {
            let e = SystemError("tcsetattr")
            Glibc.close(master)
            Glibc.close(slave)
            throw e
        }
        Glibc.close(slave)
        Sys.setNonBlocking(master)
        let path = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var opens = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if opens >= 0 && inotify_add_watch(opens, path, UInt32(IN_OPEN)) < 0 {
            Glibc.close(opens)
            opens = -1
        }
        return PseudoTerminal(master: master, slavePath: path, opens: opens)
    }

    /// Discards queued open events (the loop then asks `isHungUp` whether a client is there).
    func drainOpens() {
        guard opens >= 0 else { return }
        var buf = [UInt8](repeating: 0, count: 1024)
        while read(opens, &buf, buf.count) > 0 {}
    }

    func close() {
        Glibc.close(master)
        if opens >= 0 { Glibc.close(opens) }
    }

    /// True while no client holds the slave open: poll reports POLLHUP on the master then.
    func isHungUp() -> Bool {
        var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 0) >= 0 else { return true }
        return p.revents & Int16(POLLHUP) != 0
    }
}
