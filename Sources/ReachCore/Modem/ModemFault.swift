// Why a modem could not be read, as a value with cases. The adapter decides the case where it knows the errno or the
// library's GError domain and code (ReachModem's `ModemChannel.fault(of:path:)`), never from the words of a message;
// `ModemState.error` keeps the library's own words beside it for people who want the detail. Readers (the text,
// diag's hints, the modem check) switch on the case.

public struct ModemFault: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Equatable, Codable, CaseIterable {
        /// No answer within the request timeout (the modem, or the library on its behalf).
        case notAnswering = "not_answering"
        /// The control port vanished: no device node (ENOENT), or the stream closed under us.
        case gone
        /// qmi-proxy / mbim-proxy would not serve us (it serves only root or the user the library was built for).
        case proxyRefused = "proxy_refused"
        /// The proxy accepted the connection and never answered.
        case proxySilent = "proxy_silent"
        /// Another process holds the port and takes replies meant for reach (`holders`).
        case portHeld = "port_held"
        /// The port is not a port of the protocol it was opened as.
        case wrongProtocol = "wrong_protocol"
        /// Anything else: a library that cannot be loaded, a node that is no character device, an unusable answer.
        case failed
    }

    public var kind: Kind
    /// How long an answer was waited for (not answering, proxy silent), in milliseconds.
    public var waitedMs: Int?
    /// Who else holds the port ("uqmi (pid 4242)"), for `portHeld`.
    public var holders: [String]

    public init(_ kind: Kind, waitedMs: Int? = nil, holders: [String] = []) {
        self.kind = kind
        self.waitedMs = waitedMs
        self.holders = holders
    }

    /// The fault in a few words, for a status line: "modem not answering (5 s)", "qmi-proxy refused reach". Nil for
    /// `failed`, which only the error's own words can describe.
    public func words(protocol p: ModemProtocol) -> String? {
        let proxy = p == .qmi ? "qmi-proxy" : "mbim-proxy"
        let waited = waitedMs.map { " (\(Self.seconds($0)))" } ?? ""
        switch kind {
        case .notAnswering: return "modem not answering\(waited)"
        case .gone: return "modem port gone"
        case .proxyRefused: return "\(proxy) refused reach"
        case .proxySilent: return "\(proxy) not answering\(waited)"
        case .portHeld:
            let who = holders.isEmpty ? "another program" : holders.joined(separator: ", ")
            return "port held by \(who)" + (waitedMs == nil ? "" : "; modem not answering\(waited)")
        case .wrongProtocol: return "not a \(p.rawValue.uppercased()) port"
        case .failed: return nil
        }
    }

    /// "5 s", "1.5 s", "250 ms".
    static func seconds(_ ms: Int) -> String {
        if ms < 1000 { return "\(ms) ms" }
        return ms % 1000 == 0 ? "\(ms / 1000) s" : JSON.format(Double(ms) / 1000) + " s"
    }

    /// `wwan[].fault` in the JSON: `{"kind": …, "waited_ms": …, "holders": […]}`.
    public var json: JSON {
        var m: [(String, JSON)] = [("kind", .string(kind.rawValue))]
        if let waitedMs { m.append(("waited_ms", .int(Int64(waitedMs)))) }
        if !holders.isEmpty { m.append(("holders", .array(holders.map(JSON.string)))) }
        return .object(m)
    }

    public init?(json: JSON) {
        guard let kind = json["kind"]?.stringValue.flatMap(Kind.init(rawValue:)) else { return nil }
        self.init(
            kind, waitedMs: json["waited_ms"]?.intValue.map { Int(clamping: $0) },
            holders: (json["holders"]?.arrayValue ?? []).compactMap(\.stringValue))
    }
}
