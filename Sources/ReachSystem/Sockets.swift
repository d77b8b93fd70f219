// The socket calls, one wrapper each (as Syscalls.swift does for files): every socket is made close-on-exec, every
// send carries MSG_NOSIGNAL (a peer gone is EPIPE, never a SIGPIPE that ends the process), EINTR is retried here and
// nowhere else, and an error is a `SystemError` naming the call and what the socket was for (`path`: a socket path,
// an interface, a peer).

import Glibc

extension Sys {
    /// A close-on-exec socket (non-blocking too with `nonBlocking`). The corresponding C function is `socket`.
    public static func socket(_ domain: Int32, _ type: Int32, _ proto: Int32 = 0, nonBlocking: Bool = false, path: String? = nil)
        -> Result<Int32, SystemError>
    {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return retrying("socket", path) { Glibc.socket(domain, type | flags, proto) }
    }

    /// Two connected close-on-exec sockets. The corresponding C function is `socketpair`.
    public static func socketpair(_ domain: Int32, _ type: Int32, path: String? = nil) -> Result<(Int32, Int32), SystemError> {
        var fds: [Int32] = [-1, -1]
        return retrying("socketpair", path) {
            fds.withUnsafeMutableBufferPointer { Glibc.socketpair(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress!) }
        }.map { _ in (fds[0], fds[1]) }
    }

    /// The corresponding C function is `connect`. Not retried on EINTR: the connection goes on in the kernel, and a
    /// second connect would fail with EALREADY; a non-blocking socket reports EINPROGRESS, which the caller waits out
    /// (`poll` for POLLOUT, then `socketError`).
    public static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, path: String?)
        -> Result<Void, SystemError>
    {
        Glibc.connect(fd, address, length) == 0 ? .success(()) : .failure(SystemError("connect", errno: errno, path: path))
    }

    /// The corresponding C function is `bind`.
    public static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, path: String?)
        -> Result<Void, SystemError>
    {
        retrying("bind", path) { Glibc.bind(fd, address, length) }.map { _ in () }
    }

    /// The corresponding C function is `listen`.
    public static func listen(_ fd: Int32, backlog: Int32, path: String?) -> Result<Void, SystemError> {
        retrying("listen", path) { Glibc.listen(fd, backlog) }.map { _ in () }
    }

    /// A connection from the queue, close-on-exec and non-blocking. The corresponding C function is `accept4` (a GNU
    /// extension Glibc's module hides, looked up at run time; `accept` and `fcntl` where it is missing).
    public static func accept(_ fd: Int32, path: String?) -> Result<Int32, SystemError> {
        if let accept4 = accept4Function {
            return retrying("accept", path) { accept4(fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)) }
        }
        return retrying("accept", path) { Glibc.accept(fd, nil, nil) }.flatMap { client in
            setCloseOnExec(client, path: path).flatMap { setNonBlocking(client, true, path: path) }
                .map { client }.mapError { e in close(client); return e }
        }
    }

    private static let accept4Function:
        (@convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32)? = symbol("accept4")

    /// One `send(2)` (MSG_NOSIGNAL added): the count sent, which may be short.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32 = 0, path: String?) -> Result<Int, SystemError> {
        retrying("send", path) { Glibc.send(fd, bytes.baseAddress, bytes.count, flags | Int32(MSG_NOSIGNAL)) }
    }

    /// One `sendto(2)` to `address` (MSG_NOSIGNAL added).
    public static func sendto(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: UnsafePointer<sockaddr>, _ length: socklen_t, path: String?
    ) -> Result<Int, SystemError> {
        retrying("sendto", path) { Glibc.sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), address, length) }
    }

    /// Sends all of `bytes` on a blocking socket, continuing after short sends.
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], path: String?) -> Result<Void, SystemError> {
        var offset = 0
        while offset < bytes.count {
            switch bytes.withUnsafeBytes({ send(fd, UnsafeRawBufferPointer(rebasing: $0[offset...]), path: path) }) {
            case let .success(n): offset += n
            case let .failure(e): return .failure(e)
            }
        }
        return .success(())
    }

    /// One `recv(2)` into `buffer`: the count received, 0 at the peer's end of stream.
    public static func recv(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0, path: String?)
        -> Result<Int, SystemError>
    {
        retrying("recv", path) { Glibc.recv(fd, buffer.baseAddress, buffer.count, flags) }
    }

    /// Sets a socket option to `value` (an Int32, a timeval, the bytes of an interface name). The corresponding C
    /// function is `setsockopt`.
    public static func setsockopt(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: UnsafeRawBufferPointer, path: String?)
        -> Result<Void, SystemError>
    {
        retrying("setsockopt", path) { Glibc.setsockopt(fd, level, name, value.baseAddress, socklen_t(value.count)) }.map { _ in () }
    }

    /// Sets a socket option from a value of a fixed layout (Int32, timeval).
    public static func setsockopt<T>(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: T, path: String?) -> Result<Void, SystemError> {
        withUnsafeBytes(of: value) { setsockopt(fd, level, name, $0, path: path) }
    }

    /// A receive timeout (SO_RCVTIMEO): a blocking recv fails with EAGAIN once it passes.
    public static func setReceiveTimeout(_ fd: Int32, _ timeout: Duration, path: String?) -> Result<Void, SystemError> {
        let (seconds, attoseconds) = timeout.components
        let value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, value, path: path)
    }

    /// Reads a socket option into `buffer`: the length the kernel filled. The corresponding C function is
    /// `getsockopt`.
    public static func getsockopt(_ fd: Int32, _ level: Int32, _ name: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String?)
        -> Result<Int, SystemError>
    {
        var length = socklen_t(buffer.count)
        return retrying("getsockopt", path) { Glibc.getsockopt(fd, level, name, buffer.baseAddress, &length) }.map { _ in Int(length) }
    }

    /// The error a non-blocking connect ended with (SO_ERROR; 0 when it succeeded).
    public static func socketError(_ fd: Int32, path: String?) -> Result<Int32, SystemError> {
        var value: Int32 = 0
        return withUnsafeMutableBytes(of: &value) { getsockopt(fd, SOL_SOCKET, SO_ERROR, into: $0, path: path) }.map { _ in value }
    }

    /// The corresponding C function is `shutdown`.
    public static func shutdown(_ fd: Int32, _ how: Int32, path: String?) -> Result<Void, SystemError> {
        retrying("shutdown", path) { Glibc.shutdown(fd, how) }.map { _ in () }
    }
}
