import ReachTestSupport
import Testing

/// The lab's USB modems (hw/usb-modem/qmi-device over FunctionFS, hw/usb-modem/mbim-device over GadgetFS; Python)
/// check their pure parts themselves. qmi-device: the FunctionFS descriptor and string blobs, the cutting of the pty's
/// byte stream into QMUX frames, QMAP unwrapping and wrapping (padding, command frames, the mux id an answer goes back
/// on). mbim-device: the descriptors cdc_mbim parses, GET_NTB_PARAMETERS, NTB16 encoding and decoding (bad blocks
/// refused), the cutting of the stream into MBIM messages. Both: which sessions carry packets. Their kernel side
/// (qmi_wwan, cdc_mbim and cdc-wdm binding them) is proven in the lab VM (scripts/lab-usb-modem).
@Suite struct USBModemDeviceTests {
    static func device(_ name: String) -> String { TestPaths.repo + "/hw/usb-modem/" + name }

    @Test(arguments: ["qmi-device", "mbim-device"])
    func selfTest(_ name: String) async throws {
        let r = try await TestSupport.run(["python3", Self.device(name), "--self-test"])
        #expect(!r.timedOut)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("\(name) self-test: 0 failed"), "\(r.stdout)")
    }

    /// Bad command lines are refused with the option named, before anything touches configfs.
    @Test(arguments: [
        (["--udc", "dummy_udc.0", "--tun", "t"], "--pty is required"),
        (["--pty", "/nonexistent/pty", "--udc", "dummy_udc.0", "--tun", "t"], "--pty /nonexistent/pty does not exist"),
        (["--pty", "/dev/null", "--udc", "dummy_udc.0", "--tun", "t", "--vid-pid", "2c7c"], "--vid-pid '2c7c'"),
    ])
    func badArguments(_ args: [String], _ message: String) async throws {
        let r = try await TestSupport.run(["python3", Self.device("qmi-device")] + args)
        #expect(!r.timedOut)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }
}
