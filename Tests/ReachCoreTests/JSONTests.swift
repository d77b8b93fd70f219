import Testing
@testable import ReachCore

@Suite struct JSONTests {
    @Test func roundTrip() throws {
        let text = #"{"a":1,"b":[true,false,null],"c":"x\ny","d":-2.5,"e":{}}"#
        let v = try JSON.parse(text)
        #expect(v.serialized() == text)
        #expect(v["a"]?.intValue == 1)
        #expect(v["d"]?.doubleValue == -2.5)
    }
}
