import ReachTestSupport
import Testing

/// The lab's MBIM USB modem (hw/usb-modem/mbim-device, Python) checks its pure parts itself: the descriptors
/// cdc_mbim parses, GET_NTB_PARAMETERS, NTB16 encoding and decoding (bad blocks refused), the cutting of the pty's
/// byte stream into MBIM messages and which simulator sessions carry packets. Its kernel side is proven in the lab VM.
@Suite struct USBModemDeviceTests {
    @Test func mbimDeviceSelfTest() async throws {
        let r = try await TestSupport.run(["python3", TestPaths.repo + "/hw/usb-modem/mbim-device", "--self-test"])
        #expect(!r.timedOut)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("mbim-device self-test: 0 failed"), "\(r.stdout)")
    }
}
