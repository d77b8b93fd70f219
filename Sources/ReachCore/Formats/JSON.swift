// A small JSON value type, writer and strict parser (RFC 8259) without Foundation.
//
// Objects keep their key order so that reports print `schema`, `time`, ... in the documented order and diffs of
// report lines stay readable. Integers are kept exact (Int64) apart from floating-point numbers.

/// A JSON value. Object members keep insertion order; duplicate keys are rejected by the parser.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Double(a) == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    // MARK: Access

    /// The member named `key` of an object, or nil for a missing key or a non-object.
    public subscript(key: String) -> JSON? {
        guard case let .object(members) = self else { return nil }
        return members.first(where: { $0.0 == key })?.1
    }

    public var stringValue: String? { if case let .string(s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case let .bool(b) = self { return b } else { return nil } }
    public var arrayValue: [JSON]? { if case let .array(a) = self { return a } else { return nil } }
    public var objectValue: [(String, JSON)]? { if case let .object(o) = self { return o } else { return nil } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// An integer value; a double is accepted only when it has no fractional part and fits.
    public var intValue: Int64? {
        switch self {
        case let .int(i): return i
        case let .double(d) where d.rounded() == d && abs(d) < 9.0e18: return Int64(d)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }

    /// A short name of the value's type, for error messages ("expected a number, found a string").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

// MARK: - Convenience builders

extension JSON {
    /// `.string(s)` or `.null` when s is nil.
    public static func optional(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }
    public static func optional(_ i: Int?) -> JSON { i.map { .int(Int64($0)) } ?? .null }
    public static func optional(_ d: Double?) -> JSON { d.map(JSON.double) ?? .null }
    public static func optional(_ b: Bool?) -> JSON { b.map(JSON.bool) ?? .null }
    public static func int(_ i: Int) -> JSON { .int(Int64(i)) }
}

// MARK: - Writer

extension JSON {
    /// Serialises the value on one line (no insignificant white space), as JSON-lines reports need.
    public func serialized() -> String {
        var out = ""
        out.reserveCapacity(256)
        write(to: &out, indent: nil, level: 0)
        return out
    }

    /// Serialises the value with two-space indentation, for people.
    public func prettySerialized() -> String {
        var out = ""
        write(to: &out, indent: "  ", level: 0)
        return out
    }

    private func write(to out: inout String, indent: String?, level: Int) {
        switch self {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .int(i): out += String(i)
        case let .double(d): out += JSON.format(d)
        case let .string(s): JSON.writeString(s, to: &out)
        case let .array(items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (n, item) in items.enumerated() {
                if n > 0 { out += "," }
                JSON.newline(&out, indent, level + 1)
                item.write(to: &out, indent: indent, level: level + 1)
            }
            JSON.newline(&out, indent, level)
            out += "]"
        case let .object(members):
            if members.isEmpty { out += "{}"; return }
            out += "{"
            for (n, (key, value)) in members.enumerated() {
                if n > 0 { out += "," }
                JSON.newline(&out, indent, level + 1)
                JSON.writeString(key, to: &out)
                out += indent == nil ? ":" : ": "
                value.write(to: &out, indent: indent, level: level + 1)
            }
            JSON.newline(&out, indent, level)
            out += "}"
        }
    }

    private static func newline(_ out: inout String, _ indent: String?, _ level: Int) {
        guard let indent else { return }
        out += "\n"
        for _ in 0..<level { out += indent }
    }

    /// Shortest round-trip form; integral values print without a fraction ("-30", not "-30.0").
    /// NaN and infinities have no JSON form and print as null.
    static func format(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d.rounded() == d && abs(d) < 1e15 { return String(Int64(d)) }
        return d.description
    }

    private static let hexDigits: [Character] = Array("0123456789abcdef")

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case let c where c.value < 0x20 || c.value == 0x7F || (0x2028...0x2029).contains(c.value):
                // Control characters, DEL and the JS line separators are escaped so a line is always one line.
                out += "\\u"
                for shift in stride(from: 12, through: 0, by: -4) {
                    out.append(hexDigits[Int((c.value >> UInt32(shift)) & 0xF)])
                }
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: - Parser

/// Where and why a JSON text could not be parsed.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var line: Int
    public var column: Int
    public var description: String { "line \(line), column \(column): \(message)" }
}

extension JSON {
    /// Parses a complete JSON text. Rejects trailing data, duplicate object keys, nesting deeper than `maxDepth`,
    /// invalid UTF-8 and lone surrogates, naming the line and column of the problem.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSON {
        var parser = JSONParser(bytes: Array(text.utf8), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    public static func parse(bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSON {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var pos = 0
    var depth = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipSpace()
        let value = try parseValue()
        skipSpace()
        if pos < bytes.count { throw error("unexpected data after the JSON value") }
        return value
    }

    func error(_ message: String, at p: Int? = nil) -> JSONParseError {
        let at = min(p ?? pos, bytes.count)
        var line = 1
        var column = 1
        for i in 0..<at {
            if bytes[i] == UInt8(ascii: "\n") { line += 1; column = 1 } else if bytes[i] & 0xC0 != 0x80 { column += 1 }
        }
        return JSONParseError(message: message, line: line, column: column)
    }

    mutating func skipSpace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSON {
        guard pos < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character '\(printable(bytes[pos]))', expected a value")
        }
    }

    func printable(_ b: UInt8) -> String {
        b >= 0x20 && b < 0x7F ? String(UnicodeScalar(b)) : "\\x" + String(b, radix: 16)
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let w = word.withUTF8Buffer { Array($0) }
        guard pos + w.count <= bytes.count, Array(bytes[pos..<pos + w.count]) == w else {
            throw error("invalid literal, expected '\(word)'")
        }
        pos += w.count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw error("nesting deeper than \(maxDepth) levels") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSON {
        try enter()
        defer { depth -= 1 }
        pos += 1
        var members: [(String, JSON)] = []
        var seen = Set<String>()
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(members) }
        while true {
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyStart = pos
            let key = try parseString()
            if !seen.insert(key).inserted { throw error("duplicate key \"\(key)\"", at: keyStart) }
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw error("expected ':' after key") }
            pos += 1
            skipSpace()
            members.append((key, try parseValue()))
            skipSpace()
            guard pos < bytes.count else { throw error("unexpected end of input in an object") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(members) }
            throw error("expected ',' or '}' in an object")
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSON {
        try enter()
        defer { depth -= 1 }
        pos += 1
        var items: [JSON] = []
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try parseValue())
            skipSpace()
            guard pos < bytes.count else { throw error("unexpected end of input in an array") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
            throw error("expected ',' or ']' in an array")
        }
    }

    /// The index of the first byte that does not begin a well-formed UTF-8 sequence (RFC 3629 §4), nil when all do.
    static func firstInvalidUTF8(_ bytes: ArraySlice<UInt8>) -> Int? {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var index = bytes.startIndex
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded): index += encoded.count
            case .emptyInput: return nil
            case .error: return index
            }
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard pos + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = pos
        func flushRun(_ p: inout JSONParser, to end: Int, into s: inout String.UnicodeScalarView) throws(JSONParseError) {
            if end > runStart {
                guard let chunk = String(validating: p.bytes[runStart..<end], as: UTF8.self) else {
                    let bad = JSONParser.firstInvalidUTF8(p.bytes[runStart..<end]) ?? runStart
                    throw p.error("invalid UTF-8 (byte 0x\(String(p.bytes[bad], radix: 16, uppercase: true))) in a string", at: bad)
                }
                s.append(contentsOf: chunk.unicodeScalars)
            }
        }
        while true {
            guard pos < bytes.count else { throw error("unterminated string") }
            let c = bytes[pos]
            if c == UInt8(ascii: "\"") {
                try flushRun(&self, to: pos, into: &scalars)
                pos += 1
                return String(scalars)
            }
            if c < 0x20 { throw error("unescaped control character in a string") }
            if c != UInt8(ascii: "\\") { pos += 1; continue }
            try flushRun(&self, to: pos, into: &scalars)
            pos += 1
            guard pos < bytes.count else { throw error("unterminated escape") }
            let e = bytes[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var v = try parseHex4()
                if (0xD800...0xDBFF).contains(v) {
                    guard pos + 2 <= bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u")
                    else { throw error("lone high surrogate in \\u escape") }
                    pos += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid low surrogate in \\u escape") }
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(v) {
                    throw error("lone low surrogate in \\u escape")
                }
                guard let scalar = Unicode.Scalar(v) else { throw error("invalid \\u escape") }
                scalars.append(scalar)
            default: throw error("invalid escape '\\\(printable(e))'")
            }
            runStart = pos
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = pos
        var isInteger = true
        if bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("invalid number", at: start) }
        if bytes[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < bytes.count, isDigit(bytes[pos]) { throw error("leading zero in a number", at: start) }
        } else {
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("expected digits after '.'") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("expected digits in the exponent") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw error("number out of range", at: start) }
        return .double(d)
    }

    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
}
