// Servers for the validation probes, started in a namespace of the test's own and bound to that namespace's own
// addresses: a DNS responder of a few lines and an HTTP server whose answer the test chooses. Each prints "ready" once
// it listens, then one line per query or request, so the test can count what reached it.

import Foundation

public final class ValidationServer: @unchecked Sendable {
    public let process: Spawned

    private init(_ process: Spawned) { self.process = process }

    /// How the DNS responder answers: every A query with `answer` (other types: NOERROR, no records), or never.
    public enum DNSMode: Sendable { case answer(String), silent }

    /// How the HTTP server answers each request: with this status (302 carries a Location, 200 a login page), or never
    /// (it reads the request and keeps the connection open: a server that is there but silent).
    /// `garbage`: a few hundred bytes that are not HTTP.
    public enum HTTPMode: Sendable { case status(Int), silent, garbage }

    /// A DNS responder on UDP `address`:53 in `ns`.
    public static func dns(in ns: Namespace, address: String, _ mode: DNSMode) async throws -> ValidationServer {
        let arg: String
        switch mode {
        case let .answer(a): arg = a
        case .silent: arg = "silent"
        }
        return try await start(["dns", address, arg], in: ns)
    }

    /// An HTTP server on TCP `address`:80 in `ns`.
    public static func http(in ns: Namespace, address: String, _ mode: HTTPMode) async throws -> ValidationServer {
        let arg: String
        switch mode {
        case let .status(s): arg = String(s)
        case .silent: arg = "silent"
        case .garbage: arg = "garbage"
        }
        return try await start(["http", address, arg], in: ns)
    }

    private static func start(_ args: [String], in ns: Namespace) async throws -> ValidationServer {
        let p = try await Spawned.start(
            ["ip", "netns", "exec", ns.name, "python3", "-u", "-c", script] + args, stdout: .pipe, stderr: .capture)
        let ready = try? await p.readLine(timeout: 10)
        guard ready == "ready" else {
            await p.stop(grace: 0)
            throw TestFailure("probe server \(args) in \(ns.name) did not start: \(p.errorText)")
        }
        return ValidationServer(p)
    }

    /// When each query or request arrived (seconds on the server's monotonic clock), in order.
    public var arrivals: [Double] {
        (process.stdout?.text ?? "").split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "q" || words[0] == "r" else { return nil }
            return Double(words[2])
        }
    }

    /// Queries or requests received so far.
    public var received: Int { arrivals.count }

    public func stop() async { await process.stop(grace: 2) }

    static let script = #"""
        import socket, struct, sys, time
        kind, addr, mode = sys.argv[1], sys.argv[2], sys.argv[3]
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        if kind == "dns":
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.bind((addr, 53))
            print("ready")
            while True:
                q, peer = s.recvfrom(1500)
                print("q %d %.3f" % (len(q), time.monotonic()))
                if mode == "silent" or len(q) < 17:
                    continue
                i = 12
                while i < len(q) and q[i] != 0:
                    i += 1 + q[i]
                if i + 5 > len(q):
                    continue
                qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
                answer = b""
                if qtype == 1:
                    answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(mode)
                s.sendto(q[:2] + b"\x81\x80" + struct.pack("!HHHH", 1, 1 if answer else 0, 0, 0) + q[12:i + 5] + answer, peer)
        else:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, 80))
            s.listen(16)
            print("ready")
            held = []
            while True:
                c, _ = s.accept()
                c.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        d = c.recv(4096)
                        if not d:
                            break
                        data += d
                except OSError:
                    pass
                print("r %d %.3f" % (len(data), time.monotonic()))
                if mode == "silent":
                    held.append(c)
                    continue
                if mode == "garbage":
                    try:
                        c.sendall(bytes(range(256)) * 2)
                    except OSError:
                        pass
                    c.close()
                    continue
                body = b""
                head = "HTTP/1.1 %s\r\n" % {"204": "204 No Content", "302": "302 Found", "200": "200 OK"}.get(mode, mode + " Error")
                if mode == "302":
                    head += "Location: http://portal.test/login\r\n"
                if mode == "200":
                    body = b"<html><form>sign in</form></html>"
                head += "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
                try:
                    c.sendall(head.encode() + body)
                except OSError:
                    pass
                c.close()
        """#
}
