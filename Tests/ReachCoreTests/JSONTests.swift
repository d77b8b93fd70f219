import Testing
@testable import ReachCore

@Suite struct JSONTests {
    @Test func roundTrip() throws {
        let text = #"{"a":1,"b":[true,false,null],"c":"x\ny","d":-2.5,"e":{},"f":[]}"#
        let v = try JSON.parse(text)
        #expect(v.serialized() == text)
        #expect(v["a"]?.intValue == 1)
        #expect(v["d"]?.doubleValue == -2.5)
        #expect(try JSON.parse(v.prettySerialized()) == v)
    }

    @Test(arguments: [
        ("{\"a\": 1,\n \"a\": 2}", "line 2, column 2: duplicate key \"a\""),
        ("[1, 2", "line 1, column 6: unexpected end of input in an array"),
        ("{\"a\" 1}", "line 1, column 6: expected ':' after key"),
        ("01", "line 1, column 1: leading zero in a number"),
        ("-", "line 1, column 1: invalid number"),
        ("1.", "line 1, column 3: expected digits after '.'"),
        ("1e400", "line 1, column 1: number out of range"),
        ("\"\\ud800\"", "line 1, column 8: lone high surrogate in \\u escape"),
        ("\"a\u{01}\"", "line 1, column 3: unescaped control character in a string"),
        ("[1] 2", "line 1, column 5: unexpected data after the JSON value"),
        ("{\"x\": tru}", "line 1, column 7: invalid literal, expected 'true'"),
        ("", "line 1, column 1: unexpected end of input, expected a value"),
        ("'a'", "line 1, column 1: unexpected character ''', expected a value"),
    ] as [(String, String)])
    func errorsNameTheirPlace(text: String, message: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
        do { _ = try JSON.parse(text) } catch { #expect(error.description == message) }
    }

    @Test func depthIsBounded() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try JSON.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSON.parse(ok) }
    }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONParseError.self) { try JSON.parse(bytes: [0x22, 0xFF, 0x22]) }
    }

    @Test func numbersAndStrings() throws {
        #expect(try JSON.parse("9223372036854775807") == .int(Int64.max))
        #expect(try JSON.parse("1.5e2") == .double(150))
        #expect(JSON.double(150).serialized() == "150")
        #expect(JSON.double(-0.5).serialized() == "-0.5")
        #expect(JSON.double(.nan).serialized() == "null")
        #expect(try JSON.parse(#""\ud83d\ude00\u00e9""#) == .string("😀é"))
        #expect(JSON.string("a\u{01}\u{7F}\u{2028}\"\\").serialized() == #""a\u0001\u007f\u2028\"\\""#)
        #expect(JSON.string("lab-ap ünï").serialized() == "\"lab-ap ünï\"")
    }
}
