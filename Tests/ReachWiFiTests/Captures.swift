// Loads the captured nl80211 messages under hw/captures/nl80211 (see transcribe.py there for the format and each
// file's header for its origin and licence).
import Foundation
import ReachWiFi

struct Capture {
    let name: String
    /// The whole netlink message (nlmsghdr + genl header + attributes); a header is made for `genl` records.
    let message: [UInt8]

    var payload: [UInt8] { Array(message[16...]) }
    var nlmsgType: UInt16 { UInt16(message[4]) | UInt16(message[5]) << 8 }
    var decoded: NL80211.Message? { NL80211.Message(netlinkMessage: message) }
}

enum Captures {
    static let directory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/ReachWiFiTests/Captures.swift
        return parts.joined(separator: "/") + "/hw/captures/nl80211"
    }()

    static func load(_ file: String) -> [Capture] {
        guard let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else { return [] }
        var out: [Capture] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let bytes = hex(fields[2]) else { continue }
            if fields[1] == "genl" {
                out.append(Capture(name: String(fields[0]), message: header(length: 16 + bytes.count) + bytes))
            } else {
                out.append(Capture(name: String(fields[0]), message: bytes))
            }
        }
        return out
    }

    /// The `#   key:\tvalue` lines a lab capture keeps from iw's printout of the same station (the expected values).
    static func iwView(_ file: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else { return [:] }
        var view: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("#   \t") {
            let body = line.dropFirst(5)
            guard let colon = body.firstIndex(of: ":") else { continue }
            let key = body[..<colon].trimmingCharacters(in: .whitespaces)
            view[key] = body[body.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return view
    }

    /// The leading number of an iw value ("2108 ms" → 2108, "-30 dBm" → -30, "9.0 MBit/s" → 9.0).
    static func number(_ value: String?) -> Double? {
        value.flatMap { Double($0.split(separator: " ").first ?? "") }
    }

    static func named(_ file: String, _ name: String) -> Capture {
        guard let c = load(file).first(where: { $0.name == name }) else {
            fatalError("capture \(file)/\(name) is missing")
        }
        return c
    }

    static func header(length: Int, type: UInt16 = 0x1c, flags: UInt16 = 0) -> [UInt8] {
        var h: [UInt8] = []
        h += withUnsafeBytes(of: UInt32(length)) { Array($0) }
        h += withUnsafeBytes(of: type) { Array($0) }
        h += withUnsafeBytes(of: flags) { Array($0) }
        h += [UInt8](repeating: 0, count: 8)
        return h
    }

    static func hex<S: StringProtocol>(_ s: S) -> [UInt8]? {
        let chars = Array(s.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }
}
