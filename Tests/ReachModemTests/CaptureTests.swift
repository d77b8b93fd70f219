import CGLibShims
import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

/// A capture file of hw/captures (libqmi/libmbim test vectors; see hw/captures/README.md for origin and licence).
struct Capture {
    var exchanges: [(request: [UInt8]?, response: [UInt8])]

    init(_ name: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestPaths.captures + "/" + name))
        let json = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        func bytes(_ lines: Any?) -> [UInt8]? {
            guard let lines = lines as? [String] else { return nil }
            return lines.joined(separator: " ").split(separator: " ").map { UInt8($0, radix: 16)! }
        }
        exchanges = (json["exchanges"] as! [[String: Any]]).map { (bytes($0["request"]), bytes($0["response"])!) }
    }
}

/// libmbim parses the captured bytes; our reader copies them out; ReachCore decides. No simulator in between.
@Suite struct MBIMCaptureTests {
    /// libmbim test-message-parser.c `test_basic_connect_register_state` (1.28.2): home, UMTS/HSDPA/HSUPA, "26006".
    @Test func registerStateUMTS() throws {
        let bytes = try Capture("mbim-register-state-umts-26006.json").exchanges[0].response
        let message = bytes.withUnsafeBufferPointer { mbim_message_new($0.baseAddress, UInt32($0.count)) }
        defer { mbim_message_unref(message) }
        let register = try MBIMReplies.registerState(message, .response, mbimex: 1)
        #expect(register.registerState == 3)
        #expect(register.availableDataClasses == 0x1C)
        #expect(register.providerID == "26006")
        var readings = MBIMModemReadings()
        readings.network = MBIMNetworkReading(registerState: register.registerState,
                                              availableDataClasses: register.availableDataClasses,
                                              providerID: register.providerID)
        var state = ModemState(device: "capture", protocol: .mbim)
        readings.apply(to: &state)
        #expect(state.generation == .g3)
        #expect(state.accessTechnologies == [.umts, .hsdpa, .hsupa])
        #expect(state.plmn == PLMN(mcc: "260", mnc: "06"))
    }

    /// The same bytes cut short: libmbim refuses them and the reader reports which parser failed.
    @Test func truncatedRegisterStateIsAnError() throws {
        var bytes = try Capture("mbim-register-state-umts-26006.json").exchanges[0].response
        bytes.removeLast(30)
        bytes[4] = UInt8(bytes.count)  // MessageLength says what is there, so only the information buffer is short
        let message = bytes.withUnsafeBufferPointer { mbim_message_new($0.baseAddress, UInt32($0.count)) }
        defer { mbim_message_unref(message) }
        #expect(throws: (any Error).self) { try MBIMReplies.registerState(message, .response, mbimex: 1) }
    }

    /// libmbim `test_basic_connect_device_caps`: Huawei E367 reports the custom data class "HSPA+".
    @Test func deviceCapsHuaweiE367() throws {
        let bytes = try Capture("mbim-device-caps-huawei-e367.json").exchanges[0].response
        let message = bytes.withUnsafeBufferPointer { mbim_message_new($0.baseAddress, UInt32($0.count)) }
        defer { mbim_message_unref(message) }
        let caps = try MBIMReplies.deviceCaps(message)
        #expect(caps.customDataClass == "HSPA+")
        #expect(caps.firmware == "11.810.09.00.00")
    }
}
