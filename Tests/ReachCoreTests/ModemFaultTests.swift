import ReachCore
import Testing

/// `ModemFault`: the few words each case gets on a status line, and its JSON.
@Suite struct ModemFaultTests {
    @Test(arguments: [
        (ModemFault(.notAnswering, waitedMs: 5000), ModemProtocol.qmi, "modem not answering (5 s)" as String?),
        (ModemFault(.notAnswering, waitedMs: 1500), .mbim, "modem not answering (1.5 s)"),
        (ModemFault(.notAnswering, waitedMs: 250), .qmi, "modem not answering (250 ms)"),
        (ModemFault(.notAnswering), .qmi, "modem not answering"),
        (ModemFault(.gone), .qmi, "modem port gone"),
        (ModemFault(.proxyRefused), .qmi, "qmi-proxy refused reach"),
        (ModemFault(.proxySilent, waitedMs: 2000), .mbim, "mbim-proxy not answering (2 s)"),
        (ModemFault(.portHeld, holders: ["uqmi (pid 4242)", "minicom (pid 77)"]), .qmi,
         "port held by uqmi (pid 4242), minicom (pid 77)"),
        (ModemFault(.portHeld, waitedMs: 5000, holders: ["uqmi (pid 4242)"]), .qmi,
         "port held by uqmi (pid 4242); modem not answering (5 s)"),
        (ModemFault(.wrongProtocol), .qmi, "not a QMI port"),
        (ModemFault(.failed), .qmi, nil),
    ] as [(ModemFault, ModemProtocol, String?)])
    func words(fault: ModemFault, proto: ModemProtocol, words: String?) {
        #expect(fault.words(protocol: proto) == words)
    }

    @Test func jsonRoundTrip() throws {
        for kind in ModemFault.Kind.allCases {
            let fault = ModemFault(kind, waitedMs: kind == .notAnswering ? 5000 : nil, holders: kind == .portHeld ? ["uqmi (pid 1)"] : [])
            #expect(ModemFault(json: fault.json) == fault)
        }
        #expect(ModemFault(json: .object([("kind", .string("tired"))])) == nil)
        #expect(ModemFault(json: .object([("kind", .string("not_answering"))]))?.waitedMs == nil)
    }
}
