import Testing
@testable import ReachCore

/// The substring search the shipped code uses instead of _StringProcessing's (which the shipped build does not
/// link): each case states the answer, and the test target, which still imports _StringProcessing implicitly,
/// checks it against the library's own `contains`, `firstRange(of:)` and `split(separator:)` too.
@Suite struct TextSearchTests {
    static let cases: [(String, String, Int?)] = [
        // (haystack, needle, character offset of the first match or nil)
        ("5GSA", "5G", 0),
        ("5G/TDS", "5GSA", nil),
        ("HSPA+", "HSPA+", 0),
        ("aaab", "aab", 1),  // a partial match that fails must not skip the real one
        ("abababc", "ababc", 2),
        ("short", "longer than it", nil),
        ("", "x", nil),
        ("no such device or address", "no such device", 0),
        ("GDBus.Error: input/output error", "input/output error", 13),
        ("wwan 4g→5g, status wifi→wwan", "4g→5g", 5),
        // Character comparison, as String's ==: a precomposed é matches e + U+0301, and a needle ending in "e"
        // does not match the first half of "é" written as two scalars.
        ("caf\u{E9} au lait", "cafe\u{301}", 0),
        ("cafe\u{301}", "cafe", nil),
        ("🇩🇪🇫🇷", "🇫🇷", 1),
    ]

    @Test(arguments: cases) func firstRangeAndContains(_ haystack: String, _ needle: String, _ offset: Int?) {
        let range = haystack.firstRange(ofText: needle)
        #expect(range.map { haystack.distance(from: haystack.startIndex, to: $0.lowerBound) } == offset)
        if let range { #expect(haystack[range] == needle) }
        #expect(haystack.contains(text: needle) == (offset != nil))
        #expect(range == haystack.firstRange(of: needle))
        #expect(haystack.contains(text: needle) == haystack.contains(needle))
        // The same on a Substring, whose indices are the base string's.
        let sub = ("<" + haystack + ">").dropFirst().dropLast()
        #expect(sub.firstRange(ofText: needle).map { sub.distance(from: sub.startIndex, to: $0.lowerBound) } == offset)
    }

    @Test func emptyNeedle() {
        #expect("abc".contains(text: ""))
        #expect("".contains(text: ""))
        #expect("abc".firstRange(ofText: "") == nil)
        #expect("abc".pieces(separatedBy: "") == ["abc"])
    }

    @Test(arguments: [
        ("fe80::1", ["fe80", "1"]),
        ("::", ["", ""]),
        ("::1", ["", "1"]),
        ("1::", ["1", ""]),
        (":::", ["", ":"]),
        ("1::2::3", ["1", "2", "3"]),
        ("2001:db8:0:0:0:0:0:1", ["2001:db8:0:0:0:0:0:1"]),
        ("", [""]),
    ])
    func piecesSeparatedBy(_ text: String, _ expected: [String]) {
        let pieces = Substring(text).pieces(separatedBy: "::")
        #expect(pieces.map(String.init) == expected)
        #expect(pieces == text.split(separator: "::", omittingEmptySubsequences: false))
    }
}
