// The HTTP probe's answer, judged as Android's NetworkMonitor judges its HTTP probe (AOSP NetworkStack,
// `NetworkMonitor.sendHttpProbe` and `CaptivePortalProbeResult`):
// - the expected status (204, `generate_204`) validates;
// - any other 2xx or a 3xx is a captive portal: a redirect to a login page, or a page served in place of the empty 204
//   (redirects are never followed);
// - except a 200 whose body is empty or at most 4 bytes: that is a broken transparent proxy, not a page anybody can
//   sign in on, so it counts as a failure (Android's "Content-length <= 4" rule);
// - 511 Network Authentication Required (RFC 6585 §6) is a portal too (Chromium's rule; Android reports it failed);
// - anything else, no answer or not HTTP, is a failure.
// Pure: the probe hands in the bytes it read.

public enum HTTPProbeResponse {
    /// The status line and the headers the judgement needs.
    public struct Head: Sendable, Equatable {
        public var status: Int
        public var contentLength: Int?
        public var location: String?
        /// Bytes of the head, blank line included: the body starts there.
        public var length: Int
    }

    public enum Parse: Sendable, Equatable {
        /// More bytes are needed.
        case incomplete
        case invalid(String)
        case head(Head)
    }

    /// The largest head read (a portal's redirect is a few hundred bytes).
    public static let headLimit = 8192

    /// Parses the head of the bytes received so far.
    public static func parse(_ bytes: [UInt8]) -> Parse {
        guard let end = headEnd(bytes) else {
            if bytes.count >= headLimit { return .invalid("response head longer than \(headLimit) bytes") }
            if bytes.count >= 5 && !bytes.starts(with: Array("HTTP/".utf8)) { return .invalid("not an HTTP response") }
            return .incomplete
        }
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" })
        guard !lines.isEmpty else { return .invalid("not an HTTP response") }
        let statusLine = lines.removeFirst()
        let words = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), words[1].count == 3, let status = Int(words[1]),
            (100...599).contains(status)
        else { return .invalid("not an HTTP status line: \"\(String(statusLine.prefix(40)))\"") }
        var head = Head(status: status, contentLength: nil, location: nil, length: end)
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            switch name {
            case "content-length":
                guard let n = Int(value), n >= 0, value.allSatisfy(\.isASCIIDigit) else {
                    return .invalid("bad Content-Length \"\(String(value.prefix(20)))\"")
                }
                if let old = head.contentLength, old != n { return .invalid("two different Content-Length headers") }
                head.contentLength = n
            case "location":
                head.location = String(value.prefix(200))
            default:
                break
            }
        }
        return .head(head)
    }

    /// Whether the judgement needs body bytes: only a 200 without Content-Length, to tell an empty body from a page.
    public static func needsBody(_ head: Head, expect: Int) -> Bool {
        head.status == 200 && expect != 200 && head.contentLength == nil
    }

    /// The probe's result from the head, the number of body bytes read after it and whether the body ended (the
    /// server closed the connection).
    public static func judge(_ head: Head, bodyBytes: Int, ended: Bool, expect: Int) -> (ProbeOutcome.Result, String) {
        let s = head.status
        if s == expect { return (.ok, "answered \(s)") }
        if s == 200 {
            if let n = head.contentLength {
                if n <= 4 { return (.failed, "answered 200 with \(n) bytes (a broken proxy, not a portal)") }
                return (.portal, "answered 200 with a \(n)-byte page instead of \(expect)")
            }
            if bodyBytes == 0 && ended { return (.failed, "answered 200 with an empty body (a broken proxy, not a portal)") }
            return (.portal, "answered 200 with a page instead of \(expect)")
        }
        if (300...399).contains(s) {
            return (.portal, head.location.map { "redirected (\(s)) to \($0)" } ?? "redirected (\(s))")
        }
        if (200...299).contains(s) { return (.portal, "answered \(s) instead of \(expect)") }
        if s == 511 { return (.portal, "answered 511 (network authentication required)") }
        return (.failed, "answered \(s)")
    }

    /// The index after the blank line that ends the head (CRLF CRLF, or LF LF as RFC 9112 §2.2 lets a recipient
    /// accept), if it is there.
    static func headEnd(_ b: [UInt8]) -> Int? {
        var i = 0
        let n = min(b.count, headLimit)
        while i < n {
            if b[i] == 0x0A {
                if i + 1 < b.count && b[i + 1] == 0x0A { return i + 2 }
                if i + 2 < b.count && b[i + 1] == 0x0D && b[i + 2] == 0x0A { return i + 3 }
            }
            i += 1
        }
        return nil
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
