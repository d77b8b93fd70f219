import Foundation
import ReachTestSupport
import Testing
@testable import ReachModem
import ReachCore

@Suite struct HardwareDatabaseTests {
    @Test func repositoryFileParses() throws {
        let text = try String(contentsOfFile: TestPaths.repo + "/hw/modems.json", encoding: .utf8)
        let db = try HardwareDatabase.parse(text, file: "hw/modems.json")
        #expect(db.drivers["qmi_wwan"] == .modem(.qmi))
        #expect(db.drivers["cdc_mbim"] == .modem(.mbim))
        #expect(db.drivers["huawei_cdc_ncm"] == PortProtocol.none)
        #expect(db.wwanPortTypes["MBIM"] == .modem(.mbim))
        #expect(db.entry(usbVendor: "2C7C", product: "0125")?.protocol == .modem(.qmi))
        #expect(db.entry(usbVendor: "1bc7", product: "1071")?.quirks.customDataClass == "5G/TDS")
        #expect(db.entries.values.allSatisfy { !$0.source.isEmpty })
    }

    @Test func explicitPathIsLoaded() throws {
        let db = try HardwareDatabase.load(explicit: TestPaths.repo + "/hw/modems.json")
        #expect(db.origin.hasSuffix("hw/modems.json"))
        #expect(db.entries.count >= 10)
        #expect(throws: HardwareDatabaseError.self) { try HardwareDatabase.load(explicit: "/nonexistent/modems.json") }
    }

    /// Every kind of mistake names the key it is about.
    @Test(arguments: [
        ("[]", "", "expected an object"),
        ("{}", "schema", "missing"),
        (#"{"schema": 2}"#, "schema", "expected 1"),
        (#"{"schema": 1, "drivers": {"qmi_wwan": "qmix"}}"#, "drivers.qmi_wwan", "expected \"qmi\""),
        (#"{"schema": 1, "drivers": []}"#, "drivers", "expected an object"),
        (#"{"schema": 1, "modems": {}}"#, "modems", "expected an array"),
        (#"{"schema": 1, "modems": [{"name": "x", "source": "y"}]}"#, "modems[0].id", "missing"),
        (#"{"schema": 1, "modems": [{"id": "usb:2C7C:0125", "name": "x", "source": "y"}]}"#, "modems[0].id", "lower-case hex"),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c-0125", "name": "x", "source": "y"}]}"#, "modems[0].id", "usb:vvvv:pppp"),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c:0125", "name": 5, "source": "y"}]}"#, "modems[0].name", "expected a string"),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c:0125", "name": "x"}]}"#, "modems[0].source", "missing"),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c:0125", "name": "x", "source": "y", "protocol": "at"}]}"#,
         "modems[0].protocol", "expected \"qmi\""),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c:0125", "name": "x", "source": "y", "quirks": {"mbimex": "v4"}}]}"#,
         "modems[0].quirks.mbimex", "expected \"v3\""),
        (#"{"schema": 1, "modems": [{"id": "usb:2c7c:0125", "name": "x", "source": "y", "quirks": {"fast": true}}]}"#,
         "modems[0].quirks.fast", "unknown quirk"),
        (#"{"schema": 1, "modems": [{"id": "pci:17cb:0306", "name": "x", "source": "y"}, {"id": "pci:17cb:0306", "name": "x", "source": "y"}]}"#,
         "modems[1].id", "appears twice"),
        (#"{"schema": 1, "modems": [{"id": "pci:17cb:0306""#, "", "not valid JSON"),
    ] as [(String, String, String)])
    func errorsNameTheKey(text: String, key: String, message: String) {
        do {
            _ = try HardwareDatabase.parse(text, file: "modems.json")
            Issue.record("expected an error for \(text)")
        } catch {
            #expect(error.key == key)
            #expect(error.message.contains(message), "\(error.message)")
            #expect(error.description.hasPrefix(key.isEmpty ? "modems.json: " : "modems.json: \(key): "))
        }
    }

    @Test func searchOrder() {
        let paths = HardwareDatabase.searchPaths(explicit: "/etc/x.json", environment: ["REACH_HW_DIR": "/opt/hw"])
        #expect(paths.first == "/etc/x.json")
        #expect(paths[1] == "/opt/hw/modems.json")
        #expect(paths.last == "/usr/share/gatewayreach/hw/modems.json")
    }
}
