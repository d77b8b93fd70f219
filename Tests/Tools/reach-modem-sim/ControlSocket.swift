// The control socket: a unix stream socket; each line a JSON operation, each answered with one JSON line.

#if canImport(Glibc)
import Glibc
#endif

final class ControlSocket {
    let path: String
    let listener: Int32
    private(set) var clients: [Int32: [UInt8]] = [:]

    /// Binds and listens on `path` (replacing a stale socket file, never any other file).
    /// The corresponding C functions are `socket`, `bind` and `listen`.
    init(path: String) throws(SystemError) {
        var addr = try Self.address(path, for: "bind")
        if Sys.isSocket(path) { unlink(path) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path) }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let e = SystemError("bind", path)
            close(fd)
            throw e
        }
        guard listen(fd, 8) == 0 else {
            let e = SystemError("listen", path)
            close(fd)
            throw e
        }
        Sys.setNonBlocking(fd)
        self.path = path
        self.listener = fd
    }

    /// The socket address of `path`; a path too long for it is an error of `call`.
    static func address(_ path: String, for call: String) throws(SystemError) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw SystemError(call, path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return addr
    }

    /// The client side (`reach-modem-sim ctl`): sends one line to the simulator listening at `path` and returns its
    /// one-line answer, waiting at most `timeoutMs` for it. The corresponding C functions are `socket`, `connect`,
    /// `write`, `poll` and `read`.
    static func exchange(_ path: String, _ line: String, timeoutMs: Int32 = 10_000) throws(SystemError) -> String {
        var addr = try address(path, for: "connect")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path) }
        defer { close(fd) }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw SystemError("connect", path) }
        var out = ArraySlice(Array((line + "\n").utf8))
        while !out.isEmpty {
            let n = try Sys.writeSome(fd, out)
            out = out.dropFirst(n)
        }
        Sys.setNonBlocking(fd)
        let deadline = Sys.monotonicMs() + UInt64(timeoutMs)
        var reply: [UInt8] = []
        while true {
            if let nl = reply.firstIndex(of: UInt8(ascii: "\n")) { return String(decoding: reply[..<nl], as: UTF8.self) }
            let now = Sys.monotonicMs()
            guard now < deadline else { throw SystemError("no answer within \(timeoutMs) ms from", path, errno: ETIMEDOUT) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(deadline - now)) < 0 && errno != EINTR { throw SystemError("poll", path) }
            guard let chunk = try Sys.readAvailable(fd) else {
                throw SystemError("read", path + " (closed before answering)", errno: ECONNRESET)
            }
            reply += chunk
        }
    }

    func acceptClients() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            Sys.setNonBlocking(fd)
            clients[fd] = []
        }
    }

    /// Complete lines a client sent; the client is dropped at end of file or on an error.
    func readLines(_ fd: Int32) -> [String] {
        // nil: end of file or an error; either way the client is gone.
        guard let chunk = try? Sys.readAvailable(fd) else {
            drop(fd)
            return []
        }
        var buffer = clients[fd, default: []] + chunk
        var lines: [String] = []
        while let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: buffer[..<nl], as: UTF8.self)
            buffer.removeFirst(nl + 1)
            if !line.allSatisfy({ $0 == " " || $0 == "\r" }) { lines.append(line) }
        }
        if buffer.count > 1 << 20 {
            drop(fd)
            return []
        }
        clients[fd] = buffer
        return lines
    }

    func reply(_ fd: Int32, _ line: String) {
        var bytes = ArraySlice(Array((line + "\n").utf8))
        // Replies are short; a client that does not read them is dropped rather than waited for.
        for _ in 0..<100 where !bytes.isEmpty {
            guard let n = try? Sys.writeSome(fd, bytes) else { break }
            bytes = bytes.dropFirst(n)
            if n == 0 { usleep(1000) }
        }
        if !bytes.isEmpty { drop(fd) }
    }

    func drop(_ fd: Int32) {
        close(fd)
        clients[fd] = nil
    }

    func shutdown() {
        for fd in clients.keys { close(fd) }
        clients = [:]
        close(listener)
        unlink(path)
    }
}
