// Capture files (hw/captures/*.json): recorded request → response pairs in hex, replayed with the transaction id
// and QMI client id of the live request.
//
//     { "protocol": "qmi", "description": "…",
//       "source": { "project": "libqmi", "tag": "1.32.2", "commit": "…", "file": "…", "function": "…",
//                   "licence": "GPL-2.0-or-later" },
//       "exchanges": [ { "request": ["01 0c 00 …"], "response": ["01 6e 00 …", "…"] } ] }
//
// Hex is a string or an array of strings (scripts/extract-captures writes 16 bytes a line).
//
// A response is matched by QMI service + message id, or MBIM service UUID + CID. `request` is optional (some
// captures hold only the modem's side); when given it must be the same message as the response.

import ReachCore

public struct Capture: Sendable, Equatable {
    public enum Key: Sendable, Hashable, CustomStringConvertible {
        case qmi(service: UInt8, message: UInt16)
        case mbim(service: MBIMUUID, cid: UInt32)

        public var description: String {
            switch self {
            case let .qmi(s, m): return MessageSelector.qmi(service: s, message: m).description
            case let .mbim(s, c): return MessageSelector.mbim(service: s, cid: c).description
            }
        }
    }

    public struct Exchange: Sendable, Equatable {
        public var request: [UInt8]?
        public var response: [UInt8]
        public var key: Key
    }

    public var modemProtocol: ModemProtocol
    public var description: String
    public var source: [(String, String)]
    public var exchanges: [Exchange]

    public static func == (a: Capture, b: Capture) -> Bool {
        a.modemProtocol == b.modemProtocol && a.description == b.description && a.exchanges == b.exchanges
            && a.source.map(\.0) == b.source.map(\.0) && a.source.map(\.1) == b.source.map(\.1)
    }

    public static func parse(_ text: String, root: String = "capture") throws(ScenarioError) -> Capture {
        let json: JSON
        do {
            json = try JSON.parse(text)
        } catch {
            throw ScenarioError(root, "not valid JSON: \(error)")
        }
        let o = try Node(value: json, path: root).object(["protocol", "description", "source", "exchanges"])
        let proto: ModemProtocol = try o.required("protocol").oneOf([("qmi", .qmi), ("mbim", .mbim)])
        let description = try o.optional("description")?.string() ?? ""
        var source: [(String, String)] = []
        if let s = o.optional("source") {
            let so = try s.object(["project", "tag", "commit", "file", "function", "licence", "note"])
            for (key, _) in so.members { source.append((key, try so.required(key).string())) }
        }
        var exchanges: [Exchange] = []
        for item in try o.required("exchanges").array() {
            let e = try item.object(["request", "response", "note"])
            let responseNode = try e.required("response")
            let response = try hex(responseNode)
            let key = try Capture.key(response, proto, isResponse: true, node: responseNode)
            var request: [UInt8]?
            if let rn = e.optional("request") {
                let bytes = try hex(rn)
                let rkey = try Capture.key(bytes, proto, isResponse: false, node: rn)
                guard rkey == key else { throw rn.fail("request is \(rkey), but the response is \(key)") }
                request = bytes
            }
            exchanges.append(Exchange(request: request, response: response, key: key))
        }
        guard !exchanges.isEmpty else { throw ScenarioError(root + ".exchanges", "needs at least one exchange") }
        return Capture(modemProtocol: proto, description: description, source: source, exchanges: exchanges)
    }

    /// Hex as one string or as an array of strings (one line each, for people reading the file).
    static func hex(_ node: Node) throws(ScenarioError) -> [UInt8] {
        let text: String
        if node.value.arrayValue != nil {
            text = try node.array().map { (line) throws(ScenarioError) in try line.string() }.joined(separator: " ")
        } else {
            text = try node.string()
        }
        do {
            return try Hex.bytes(text)
        } catch {
            throw node.fail(error.message)
        }
    }

    static func key(_ bytes: [UInt8], _ proto: ModemProtocol, isResponse: Bool, node: Node) throws(ScenarioError) -> Key {
        switch proto {
        case .qmi:
            let m: QMIMessage
            do { m = try QMIMessage.decode(bytes) } catch { throw node.fail("not a QMUX frame: \(error)") }
            guard m.kind == (isResponse ? .response : .request) else {
                throw node.fail("expected a QMI \(isResponse ? "response" : "request"), found a \(m.kind)")
            }
            return .qmi(service: m.service, message: m.messageID)
        case .mbim:
            let m: MBIMMessage
            do { m = try MBIMMessage.decode(bytes) } catch { throw node.fail("not an MBIM message: \(error)") }
            guard m.type == (isResponse ? .commandDone : .command), let service = m.service else {
                throw node.fail("expected an MBIM \(isResponse ? "COMMAND_DONE" : "COMMAND"), found \(m.type)")
            }
            return .mbim(service: service, cid: m.cid)
        }
    }
}

/// Answers requests from a capture, in recorded order for each key (the last answer repeats).
public struct Replayer: Sendable {
    public let capture: Capture
    private var used: [Capture.Key: Int] = [:]

    public init(_ capture: Capture) { self.capture = capture }

    private mutating func next(_ key: Capture.Key) -> [UInt8]? {
        let matches = capture.exchanges.filter { $0.key == key }
        guard !matches.isEmpty else { return nil }
        let n = used[key, default: 0]
        used[key] = n + 1
        return matches[min(n, matches.count - 1)].response
    }

    /// The recorded response with the request's client id (QMUX byte 5) and transaction id (SDU bytes 7...)
    /// written in; everything else byte for byte as recorded.
    public mutating func answer(_ request: QMIMessage) -> [UInt8]? {
        guard var bytes = next(.qmi(service: request.service, message: request.messageID)) else { return nil }
        bytes[5] = request.clientID
        bytes[7] = UInt8(request.transactionID & 0xFF)
        if !request.isControl { bytes[8] = UInt8(request.transactionID >> 8) }
        return bytes
    }

    /// The recorded COMMAND_DONE with the request's transaction id (bytes 8-11).
    public mutating func answer(_ request: MBIMMessage) -> [UInt8]? {
        guard let service = request.service, var bytes = next(.mbim(service: service, cid: request.cid)) else {
            return nil
        }
        for i in 0..<4 { bytes[8 + i] = UInt8(request.transactionID >> (8 * UInt32(i)) & 0xFF) }
        return bytes
    }
}
