import Testing
@testable import ReachCore

/// RFC 1035 §4.1 messages, built byte by byte as a resolver sends them.
@Suite struct DNSMessageTests {
    /// A query for probe.example A (RD set) and the answer a recursive resolver gives: the question echoed, one A record
    /// whose owner is a compression pointer to the question (0xC00C, RFC 1035 §4.1.4).
    static let query = DNSMessage.query(id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA)
    /// (Header, question and record apart: Swift 6.0's type checker gives up on the chain as one expression.)
    static let answer: [UInt8] = {
        let header: [UInt8] = [0xBE, 0xEF, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]
        let question: [UInt8] = [5] + Array("probe".utf8) + [7] + Array("example".utf8) + [0, 0, 1, 0, 1]
        let record: [UInt8] = [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0x0E, 0x10, 0, 4, 203, 0, 113, 80]
        return header + question + record
    }()

    @Test func queryBytes() {
        #expect(Self.query.count == 12 + 15 + 4)
        #expect(Array(Self.query.prefix(4)) == [0xBE, 0xEF, 0x01, 0x00])  // id, RD
        #expect(Array(Self.query.suffix(4)) == [0, 1, 0, 1])  // A, IN
        #expect(DNSMessage.query(id: 1, name: ".").suffix(5) == [0, 0, 2, 0, 1])  // the root: NS
        #expect(DNSMessage.query(id: 1, name: "v6.example", type: DNSMessage.typeAAAA).suffix(4) == [0, 28, 0, 1])
    }

    @Test func answerIsParsed() throws {
        let r = try #require(DNSMessage.parse(Self.answer, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA))
        #expect(r.rcode == 0)
        #expect(r.rcodeName == "NOERROR")
        #expect(r.addresses == [IPAddress("203.0.113.80")!])
        #expect(!r.malformed)
        // Names compare without case (RFC 4343).
        #expect(DNSMessage.parse(Self.answer, id: 0xBEEF, name: "PROBE.Example", type: DNSMessage.typeA) != nil)
    }

    /// Not an answer to our query: another id, another question, a query, too short.
    @Test func otherMessagesAreNotOurs() {
        #expect(DNSMessage.parse(Self.answer, id: 0xBEEE, name: "probe.example", type: DNSMessage.typeA) == nil)
        #expect(DNSMessage.parse(Self.answer, id: 0xBEEF, name: "other.example", type: DNSMessage.typeA) == nil)
        #expect(DNSMessage.parse(Self.answer, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeAAAA) == nil)
        #expect(DNSMessage.parse(Self.query, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA) == nil)
        #expect(DNSMessage.parse(Array(Self.answer.prefix(11)), id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA) == nil)
    }

    /// Every truncation of the answer is either "not ours" or parsed without a crash, flagged malformed when the
    /// answer section is cut.
    @Test func everyTruncationIsSafe() {
        for n in 0..<Self.answer.count {
            let r = DNSMessage.parse(Array(Self.answer.prefix(n)), id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA)
            if let r { #expect(r.malformed && r.addresses.isEmpty, "cut at \(n)") }
        }
    }

    /// SERVFAIL (a resolver that cannot reach upstream) and NXDOMAIN, answer counts lying about the records.
    @Test func rcodesAndLyingCounts() throws {
        var servfail = Array(Self.answer.prefix(31))
        servfail[3] = 0x82
        servfail[7] = 0
        #expect(DNSMessage.parse(servfail, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA)?.rcodeName == "SERVFAIL")
        var lying = Self.answer
        lying[7] = 200  // ANCOUNT 200, one record there
        let r = try #require(DNSMessage.parse(lying, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA))
        #expect(r.addresses.count == 1)
        #expect(r.malformed)
        var loop = Self.answer
        loop[31] = 0x3F  // a label length running past the end
        #expect(DNSMessage.parse(loop, id: 0xBEEF, name: "probe.example", type: DNSMessage.typeA)?.malformed == true)
    }
}

/// Android's HTTP probe rules (AOSP NetworkStack `NetworkMonitor.sendHttpProbe`, `CaptivePortalProbeResult`), and what
/// real portals answer.
@Suite struct HTTPProbeResponseTests {
    static func judge(_ text: String, expect: Int = 204, ended: Bool = true) -> (ProbeOutcome.Result, String)? {
        let bytes = Array(text.utf8)
        guard case let .head(h) = HTTPProbeResponse.parse(bytes) else { return nil }
        return HTTPProbeResponse.judge(h, bodyBytes: bytes.count - h.length, ended: ended, expect: expect)
    }

    @Test(arguments: [
        // generate_204 answered: validated.
        ("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", ProbeOutcome.Result.ok, "answered 204"),
        // A portal's redirect to its login page (Android: 3xx is a portal; redirects are never followed).
        ("HTTP/1.1 302 Found\r\nLocation: http://login.portal.example/?orig=x\r\n\r\n", .portal,
         "redirected (302) to http://login.portal.example/?orig=x"),
        ("HTTP/1.0 307 Temporary Redirect\r\n\r\n", .portal, "redirected (307)"),
        // A portal that serves its login page in place of the 204.
        ("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n<html>", .portal, "answered 200 with a 1234-byte page instead of 204"),
        // Android's "Content-length <= 4" rule: a broken transparent proxy, not a portal.
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", .failed, "answered 200 with 0 bytes (a broken proxy, not a portal)"),
        ("HTTP/1.1 200 OK\r\n\r\n", .failed, "answered 200 with an empty body (a broken proxy, not a portal)"),
        ("HTTP/1.1 200 OK\r\n\r\n<html>login", .portal, "answered 200 with a page instead of 204"),
        // RFC 6585 §6.
        ("HTTP/1.1 511 Network Authentication Required\r\n\r\n", .portal, "answered 511 (network authentication required)"),
        ("HTTP/1.1 503 Service Unavailable\r\n\r\n", .failed, "answered 503"),
        ("HTTP/1.1 404 Not Found\r\n\r\n", .failed, "answered 404"),
        // Bare LF line ends (RFC 9112 §2.2 lets a recipient accept them).
        ("HTTP/1.1 204 No Content\n\n", .ok, "answered 204"),
    ])
    func androidRules(response: String, result: ProbeOutcome.Result, detail: String) throws {
        let j = try #require(Self.judge(response))
        #expect(j.0 == result)
        #expect(j.1 == detail)
    }

    @Test func expect200ValidatesA200() throws {
        #expect(try #require(Self.judge("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", expect: 200)).0 == .ok)
        #expect(try #require(Self.judge("HTTP/1.1 204 No Content\r\n\r\n", expect: 200)).0 == .portal)
    }

    @Test func incompleteAndInvalidHeads() {
        #expect(HTTPProbeResponse.parse(Array("HTTP/1.1 204 No".utf8)) == .incomplete)
        #expect(HTTPProbeResponse.parse(Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)) == .invalid("not an HTTP response"))
        #expect(HTTPProbeResponse.parse(Array("HTTP/1.1 abc x\r\n\r\n".utf8)) == .invalid("not an HTTP status line: \"HTTP/1.1 abc x\""))
        #expect(HTTPProbeResponse.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n".utf8))
            == .invalid("two different Content-Length headers"))
        #expect(HTTPProbeResponse.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".utf8)) == .invalid("bad Content-Length \"-1\""))
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + [UInt8](repeating: 0x41, count: HTTPProbeResponse.headLimit)
        #expect(HTTPProbeResponse.parse(endless) == .invalid("response head longer than 8192 bytes"))
    }

    @Test func onlyA200WithoutLengthNeedsTheBody() {
        guard case let .head(h) = HTTPProbeResponse.parse(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) else {
            Issue.record("no head")
            return
        }
        #expect(HTTPProbeResponse.needsBody(h, expect: 204))
        #expect(!HTTPProbeResponse.needsBody(h, expect: 200))
    }
}

@Suite struct HTTPURLTests {
    @Test(arguments: [
        ("http://connectivity.example/generate_204", "connectivity.example", 80, "/generate_204", "connectivity.example"),
        ("http://192.0.2.80/generate_204", "192.0.2.80", 80, "/generate_204", "192.0.2.80"),
        ("http://[2001:db8::80]:8080/g?x=1", "2001:db8::80", 8080, "/g?x=1", "[2001:db8::80]:8080"),
        ("HTTP://portal.example", "portal.example", 80, "/", "portal.example"),
        ("http://portal.example?x", "portal.example", 80, "/?x", "portal.example"),
    ])
    func parses(text: String, host: String, port: Int, path: String, hostHeader: String) throws {
        let u = try HTTPURL.parse(text).get()
        #expect(u.host == host)
        #expect(u.port == port)
        #expect(u.path == path)
        #expect(u.hostHeader == hostHeader)
        #expect(try HTTPURL.parse(u.description).get() == u)
    }

    @Test(arguments: [
        ("https://connectivity.example/", "https is not supported"),
        ("ftp://x/", "expected a URL starting with http://"),
        ("http://user@x/", "user information"),
        ("http://x/a b", "only printable ASCII"),
        ("http://x/\r\nHost: evil", "only printable ASCII"),
        ("http://x:0/", "expected a port from 1 to 65535"),
        ("http://x:99999/", "expected a port from 1 to 65535"),
        ("http:///path", "no host"),
        ("http://[::1/", "an unclosed ["),
        ("http://bad_host!/", "expected a host name or an address literal"),
        ("http://x/#frag", "a fragment"),
    ])
    func refuses(text: String, problem: String) {
        switch HTTPURL.parse(text) {
        case .success: Issue.record("accepted \(text)")
        case let .failure(e): #expect(e.description.contains(problem), "\(e)")
        }
    }
}

/// How network managers write an interface's DNS servers down.
@Suite struct UplinkResolversTests {
    /// systemd-networkd 252's /run/systemd/netif/links/N (networkd-state-file.c): DNS= with ports, names and zones.
    @Test func networkdLinkStateFile() {
        let text = """
            # This is private data. Do not parse.
            ADMIN_STATE=configured
            OPER_STATE=routable
            DNS=192.0.2.53 2001:db8::53 198.51.100.53:5353 [2001:db8::54]:53 203.0.113.53#dns.example fe80::1%eth0
            NTP=
            """
        #expect(UplinkResolvers.networkd(text) == ["192.0.2.53", "2001:db8::53", "2001:db8::54", "203.0.113.53", "fe80::1"].map { IPAddress($0)! })
        #expect(UplinkResolvers.networkd("ADMIN_STATE=configured\n").isEmpty)
    }

    /// ISC dhclient 4.4's lease file: the last lease of the interface wins.
    @Test func dhclientLeases() {
        let text = """
            lease {
              interface "eth0";
              fixed-address 192.0.2.2;
              option routers 192.0.2.1;
              option domain-name-servers 192.0.2.53,192.0.2.54;
              renew 2 2026/11/24 10:00:00;
            }
            lease {
              interface "eth1";
              option domain-name-servers 198.51.100.53;
            }
            lease {
              interface "eth0";
              option domain-name-servers 192.0.2.55;
            }
            """
        #expect(UplinkResolvers.dhclient(text, interface: "eth0") == [IPAddress("192.0.2.55")!])
        #expect(UplinkResolvers.dhclient(text, interface: "eth1") == [IPAddress("198.51.100.53")!])
        #expect(UplinkResolvers.dhclient(text, interface: "wwan0").isEmpty)
    }
}
