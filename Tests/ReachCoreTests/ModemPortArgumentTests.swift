import ReachCore
import Testing

/// `--modem PATH[:qmi|:mbim][:NETDEV]` as the command line gives it: what each form names, and the words of every
/// refusal (which follow "--modem 'TEXT': " in the usage error).
@Suite struct ModemPortArgumentTests {
    @Test(arguments: [
        ("/dev/cdc-wdm0", ModemPortSpec(path: "/dev/cdc-wdm0")),
        ("/dev/cdc-wdm0:qmi", ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi)),
        ("/dev/wwan0mbim0:mbim", ModemPortSpec(path: "/dev/wwan0mbim0", protocol: .mbim)),
        ("/dev/cdc-wdm0:wwan0", ModemPortSpec(path: "/dev/cdc-wdm0", interface: "wwan0")),
        ("/dev/cdc-wdm0:qmi:wwan0", ModemPortSpec(path: "/dev/cdc-wdm0", protocol: .qmi, interface: "wwan0")),
        ("/tmp/sim/pty:mbim:wwp0s20f0u2i12", ModemPortSpec(path: "/tmp/sim/pty", protocol: .mbim, interface: "wwp0s20f0u2i12")),
        // A netdev may be called anything the kernel takes, "qmimux0" or "at" alike; only qmi/mbim are protocols.
        ("/dev/cdc-wdm1:qmimux0", ModemPortSpec(path: "/dev/cdc-wdm1", interface: "qmimux0")),
    ] as [(String, ModemPortSpec)])
    func accepted(text: String, spec: ModemPortSpec) {
        #expect(ModemPortArgument.spec(text) == .success(spec))
    }

    @Test(arguments: [
        ("cdc-wdm0", "expected an absolute device path (not an absolute path)"),
        ("", "expected an absolute device path (an empty path)"),
        ("/dev/", "expected an absolute device path (names a directory, not a file)"),
        (":qmi", "expected an absolute device path (an empty path)"),
        ("/dev/cdc-wdm0:", "'' is neither a protocol ('qmi' or 'mbim') nor an interface name (an empty name); expected PATH[:qmi|:mbim][:NETDEV]"),
        ("/dev/cdc-wdm0:a/b", "'a/b' is neither a protocol ('qmi' or 'mbim') nor an interface name (contains '/'); expected PATH[:qmi|:mbim][:NETDEV]"),
        ("/dev/cdc-wdm0:QMI:wwan0", "the protocol must be 'qmi' or 'mbim', got 'QMI'"),
        ("/dev/cdc-wdm0:wwan0:qmi", "the protocol must be 'qmi' or 'mbim', got 'wwan0'"),
        ("/dev/cdc-wdm0:qmi:", "'' is not an interface name (an empty name)"),
        ("/dev/cdc-wdm0:qmi:a-name-of-16-byte", "'a-name-of-16-byte' is not an interface name (longer than 15 bytes)"),
        ("/dev/cdc-wdm0:qmi:wwan0:x", "too many ':' (expected PATH[:qmi|:mbim][:NETDEV])"),
    ] as [(String, String)])
    func refused(text: String, problem: String) {
        #expect(ModemPortArgument.spec(text) == .failure(ModemPortArgument.Problem(problem)))
    }
}
