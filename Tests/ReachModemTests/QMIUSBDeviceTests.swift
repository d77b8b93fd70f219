import ReachTestSupport
import Testing

/// The lab's QMI USB modem (hw/usb-modem/qmi-device, Python) checks its pure parts itself: the FunctionFS descriptor
/// and string blobs, the cutting of the pty's byte stream into QMUX frames, QMAP unwrapping and wrapping (padding,
/// command frames, the mux id an answer goes back on) and which channels carry packets while a session is down.
/// Its kernel side (qmi_wwan and cdc-wdm binding it) is proven in the lab VM (scripts/lab-usb-modem).
@Suite struct QMIUSBDeviceTests {
    @Test func qmiDeviceSelfTest() async throws {
        let r = try await TestSupport.run(["python3", TestPaths.repo + "/hw/usb-modem/qmi-device", "--self-test"])
        #expect(!r.timedOut)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("qmi-device self-test: 0 failed"), "\(r.stdout)")
    }

    /// Bad command lines are refused with the option named, before anything touches configfs.
    @Test(arguments: [
        (["--udc", "dummy_udc.0", "--tun", "t"], "--pty is required"),
        (["--pty", "/nonexistent/pty", "--udc", "dummy_udc.0", "--tun", "t"], "--pty /nonexistent/pty does not exist"),
        (["--pty", "/dev/null", "--udc", "dummy_udc.0", "--tun", "t", "--vid-pid", "2c7c"], "--vid-pid '2c7c'"),
    ])
    func badArguments(_ args: [String], _ message: String) async throws {
        let r = try await TestSupport.run(["python3", TestPaths.repo + "/hw/usb-modem/qmi-device"] + args)
        #expect(!r.timedOut)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }
}
