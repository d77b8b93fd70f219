import Testing
@testable import ReachCore

/// `uplinks: [{"interface": "wwan0", "role": "backup"}]`: named and ordered. (Bad values: ConfigTests.badValueNamesItsKey.)
@Suite struct UplinkConfigTests {
    @Test func namedAndOrderedUplinksRoundTrip() throws {
        let c = try AgentConfig.parse(
            #"{"uplinks":[{"interface":"eth0","role":"primary"},{"interface":"wwan0","role":"backup"},{"interface":"wlan1"},{"interface":"wwan1","role":null}]}"#)
        #expect(c.uplinks == [
            UplinkSpec(interface: "eth0", role: .primary), UplinkSpec(interface: "wwan0", role: .backup),
            UplinkSpec(interface: "wlan1"), UplinkSpec(interface: "wwan1"),
        ])
        #expect(try AgentConfig.parse(c.json.prettySerialized()) == c)
        #expect(c.json["uplinks"]?.arrayValue?[1] == .object([("interface", .string("wwan0")), ("role", .string("backup"))]))
    }

    @Test func absentOrEmptyMeansRouteDerived() throws {
        #expect(try AgentConfig.parse("{}").uplinks.isEmpty)
        #expect(try AgentConfig.parse(#"{"uplinks":[]}"#).uplinks.isEmpty)
        #expect(try AgentConfig.parse(#"{"uplinks":null}"#).uplinks.isEmpty)
    }
}
