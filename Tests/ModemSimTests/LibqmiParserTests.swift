// Every QMI message the simulator can send, in every scenario, read back by libqmi-glib 1.32.2's own parser
// (qmi_message_new_from_raw + qmi_message_get_printable_full). libqmi marks a TLV whose layout it cannot read
// with "ERROR" and leftover bytes with "Additional unexpected"; a TLV id it does not know for that message gets no
// "translated" line. qmicli would hide all three (it prints only what parses), so this is the strict check.

import CQMI
import ModemSim
import ReachTestSupport
import Testing

/// libqmi's decoded text of one frame, or why it could not read it.
func libqmiPrintable(_ frame: [UInt8]) -> Result<String, TestFailure> {
    let array = g_byte_array_new()
    defer { g_byte_array_unref(array) }
    frame.withUnsafeBufferPointer { _ = g_byte_array_append(array, $0.baseAddress, guint($0.count)) }
    var error: UnsafeMutablePointer<GError>?
    guard let message = qmi_message_new_from_raw(array, &error) else {
        let why = error.map { String(cString: $0.pointee.message) } ?? "unknown"
        if let error { g_error_free(error) }
        return .failure(TestFailure("libqmi rejected the frame: \(why)"))
    }
    defer { qmi_message_unref(message) }
    guard let text = qmi_message_get_printable_full(message, nil, "") else {
        return .failure(TestFailure("libqmi printed nothing"))
    }
    defer { g_free(text) }
    return .success(String(cString: text))
}

/// The scenario without its faults: layouts do not depend on them, and a silenced answer cannot be checked.
func withoutFaults(_ s: Scenario) -> Scenario {
    var s = s
    s.faults = []
    s.timeline = s.timeline.filter { $0.operation.faults.isEmpty }
    return s
}

/// Every request the simulator answers, with the inputs a client would send, and every indication it can send.
func allQMIMessages(_ scenario: Scenario) throws -> [QMIMessage] {
    let scenario = withoutFaults(scenario)
    var h = QMIHarness(scenario)
    var out: [QMIMessage] = []
    func collect(_ m: [QMIMessage]) { out += m }
    collect(try h.send(QMIService.ctl, cid: 0, QMIMessageID.ctlGetVersionInfo))
    let dms = try h.allocate(QMIService.dms)
    let nas = try h.allocate(QMIService.nas)
    let uim = try h.allocate(QMIService.uim)
    for (service, id, _) in QMIMessageNames.table where service != QMIService.ctl {
        if service == QMIService.wds && !scenario.qmi.wds { continue }
        // WDS: a fresh client for each message, so that a bind is its first.
        let cid = service == QMIService.wds
            ? try h.allocate(QMIService.wds) : service == QMIService.dms ? dms : service == QMIService.nas ? nas : uim
        var tlvs: [QMITLV] = []
        switch (service, id) {
        case (QMIService.wds, 0x0089): tlvs = [QMITLV(0x01, [0x04, 0x0E])]
        case (QMIService.wds, 0x004D): tlvs = [QMITLV(0x01, [6])]
        case (QMIService.wds, 0x00A2):
            tlvs = [QMITLV(0x10, [2, 0, 0, 0, 4, 0, 0, 0]), QMITLV(0x11, [1]), QMITLV(0x13, [1, 0, 0, 0])]
        default: break
        }
        switch id {
        case QMIMessageID.nasGetSignalStrength where service == QMIService.nas: tlvs = [QMITLV(0x10, [0xEF, 0x00])]
        case QMIMessageID.nasRegisterIndications where service == QMIService.nas:
            tlvs = [QMITLV(0x13, [1])]
            if scenario.qmi.getSystemInfo { tlvs.append(QMITLV(0x18, [1])) }
            if scenario.qmi.getSignalInfo { tlvs.append(QMITLV(0x19, [1])) }
        case QMIMessageID.nasSetEventReport where service == QMIService.nas:
            tlvs = [QMITLV(0x10, [1, 0]), QMITLV(0x12, [1]), QMITLV(0x13, [1, 3]), QMITLV(0x14, [1, 3]),
                    QMITLV(0x1B, [1, 5]), QMITLV(0x1C, [1, 5])]
        case QMIMessageID.uimRegisterEvents where service == QMIService.uim: tlvs = [QMITLV(0x01, [1, 0, 0, 0])]
        default: break
        }
        collect(try h.send(service, cid: cid, id, tlvs))
    }
    collect(try h.control(#"{"indicate":true}"#).messages)
    collect(try h.control(#"{"set":{"data_sessions":[{"state":"connected"}]}}"#).messages)
    collect(try h.control(#"{"set":{"data_sessions":[{"state":"disconnected"}]}}"#).messages)
    for step in scenario.timeline {
        collect(try h.advance(to: step.atMs).writes.map { try QMIMessage.decode($0) })
    }
    collect(try h.control(#"{"set":{"sim":"pin_required","registration":"idle","access_technologies":[],"operator":null}}"#).messages)
    collect(try h.send(QMIService.ctl, cid: 0, QMIMessageID.ctlReleaseCID, [QMITLV(0x01, [QMIService.nas, nas])]))
    return out
}

@Suite struct LibqmiParserTests {
    static let scenarios = Repo.files(Repo.scenarios).filter { $0.hasPrefix("qmi-") }

    @Test(arguments: scenarios)
    func libqmiReadsEveryMessage(file: String) throws {
        let messages = try allQMIMessages(try Repo.scenario(file))
        #expect(messages.count > 25)
        var indications = 0
        for m in messages {
            let text = try libqmiPrintable(m.encoded()).get()
            let what = "\(file): \(m.summary)\n\(text)"
            #expect(!text.contains("ERROR"), "\(what)")
            #expect(!text.contains("unexpected"), "\(what)")
            let tlvs = text.components(separatedBy: "type       =").count - 1
            let translated = text.components(separatedBy: "translated =").count - 1
            #expect(tlvs == m.tlvs.count && translated == tlvs, "\(what)")
            if m.kind == .indication { indications += 1 }
        }
        #expect(indications >= 2, "\(file): too few indications to check")
    }

    /// libqmi's names for the messages, so a wrong message id would show.
    @Test func libqmiNamesTheMessages() throws {
        var h = try QMIHarness(scenarioFile: "qmi-5g-nsa-endc")
        let nas = try h.allocate(QMIService.nas)
        let cases: [(UInt16, String)] = [
            (QMIMessageID.nasGetSystemInfo, "\"Get System Info\""), (QMIMessageID.nasGetSignalInfo, "\"Get Signal Info\""),
            (QMIMessageID.nasGetServingSystem, "\"Get Serving System\""), (QMIMessageID.nasGetHomeNetwork, "\"Get Home Network\""),
        ]
        for (id, name) in cases {
            let text = try libqmiPrintable(try h.request(QMIService.nas, cid: nas, id).encoded()).get()
            #expect(text.contains(name) && text.contains("translated = SUCCESS"), "\(text)")
        }
        _ = try h.request(QMIService.nas, cid: nas, QMIMessageID.nasRegisterIndications, [QMITLV(0x18, [1])])
        let ind = try #require(try h.control(#"{"indicate":true}"#).messages.first)
        let text = try libqmiPrintable(ind.encoded()).get()
        #expect(text.contains("\"indication\"") && text.contains("\"System Info\"") && text.contains("EUTRA with NR5G availability"))
    }
}
