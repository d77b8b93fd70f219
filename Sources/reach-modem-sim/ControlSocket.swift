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
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw SystemError("bind", path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
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
