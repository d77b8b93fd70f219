// Every MBIM message the simulator can send, in every scenario and every MBIMEx version it offers, read back by
// libmbim-glib 1.28.2 (mbim_message_validate + mbim_message_get_printable_full at the negotiated version).
// libmbim prints "n/a: <why>" for a field it cannot read; the v2/v3 field names show the layout it expected.

import CMBIM
import ModemSim
import ReachTestSupport
import Testing

func libmbimPrintable(_ bytes: [UInt8], mbimex: MBIMExVersion) -> Result<String, TestFailure> {
    guard let message = bytes.withUnsafeBufferPointer({ mbim_message_new($0.baseAddress, guint32($0.count)) }) else {
        return .failure(TestFailure("mbim_message_new failed"))
    }
    defer { mbim_message_unref(message) }
    var error: UnsafeMutablePointer<GError>?
    guard mbim_message_validate(message, &error) != 0 else {
        let why = error.map { String(cString: $0.pointee.message) } ?? "unknown"
        if let error { g_error_free(error) }
        return .failure(TestFailure("libmbim: invalid message: \(why)"))
    }
    let major = guint8(mbimex.bcd >> 8)
    guard let text = mbim_message_get_printable_full(message, major, 0, "", 0, &error) else {
        let why = error.map { String(cString: $0.pointee.message) } ?? "unknown"
        if let error { g_error_free(error) }
        return .failure(TestFailure("libmbim could not print it: \(why)"))
    }
    defer { g_free(text) }
    return .success(String(cString: text))
}

/// Every answer and notification of a scenario after opening at `version` (1.0: no negotiation).
/// A Connect query for one session id, shaped as mbimcli --query-connection-state sends it.
func connectQuery(_ session: UInt32) -> [UInt8] {
    var b = MBIMBufferBuilder()
    b.u32(session)
    b.u32(0)  // ActivationState
    b.u32(0)  // VoiceCallState
    b.u32(0)  // IpType
    b.raw([UInt8](repeating: 0, count: 16))
    b.u32(0)  // NwError
    return b.build()
}

func allMBIMMessages(_ scenario: Scenario, version: MBIMExVersion) throws -> [MBIMMessage] {
    var h = MBIMHarness(withoutFaults(scenario))
    var out: [MBIMMessage] = [try h.open()]
    if version > .v1 {
        var b = MBIMBufferBuilder()
        b.u16(0x0100)
        b.u16(version.bcd)
        out += try h.send(.command(tid: 900, service: MBIMServices.msBasicConnectExtensions, cid: 15, buffer: b.build()))
    }
    for cid in [UInt32(1), 2, 3, 4, 6, 9, 10, 11, 16] { out.append(try h.command(cid)) }
    for session in [UInt32(0), 1] { out.append(try h.command(MBIMServices.BasicConnect.connect, connectQuery(session))) }
    var e = ByteWriter()
    e.append(MBIMServices.basicConnect.bytes)
    e.u32(0)
    var list = MBIMBufferBuilder()
    list.u32(1)
    list.reference(e.bytes)
    out.append(try h.command(19, set: true, list.build()))
    out += try h.control(#"{"indicate":true}"#).messages
    for step in scenario.timeline where step.operation.faults.isEmpty {
        h.now = step.atMs
        var a = MBIMAssembler()
        for w in h.engine.advance(now: step.atMs).writes {
            for case let .message(m) in a.feed(w) { out.append(m) }
        }
    }
    out += try h.control(#"{"set":{"sim":"absent","registration":"idle","access_technologies":[],"operator":null}}"#).messages
    out.append(try h.send(MBIMMessage(type: .close, transactionID: 999))[0])
    return out
}

@Suite struct LibmbimParserTests {
    static var cases: [(String, MBIMExVersion)] {
        var out: [(String, MBIMExVersion)] = []
        for file in Repo.files(Repo.scenarios) where file.hasPrefix("mbim-") {
            guard let s = try? Repo.scenario(file) else { continue }
            for v in MBIMExVersion.allCases where v <= s.mbimex { out.append((file, v)) }
        }
        return out
    }

    @Test(arguments: cases)
    func libmbimReadsEveryMessage(file: String, version: MBIMExVersion) throws {
        let scenario = try Repo.scenario(file)
        let messages = try allMBIMMessages(scenario, version: version)
        // Without a usable SIM, PIN and Home Provider fail with the SIM's status, as on real devices.
        let allowed: Set<UInt32> = scenario.state.sim == .ready ? [0] : [0, MBIMStatus.simNotInserted, MBIMStatus.badSIM, MBIMStatus.pinRequired]
        #expect(messages.count >= 14)
        for m in messages {
            let text = try libmbimPrintable(m.encoded(), mbimex: version).get()
            #expect(!text.contains("n/a:"), "\(file) @\(version.rawValue): \(m.summary)\n\(text)")
            if m.type == .commandDone {
                #expect(allowed.contains(m.code), "\(file) @\(version.rawValue): \(m.summary)")
            }
            guard m.type == .commandDone || m.type == .indicateStatus, m.service == MBIMServices.basicConnect else { continue }
            switch m.cid {
            case MBIMServices.BasicConnect.registerState:
                #expect(text.contains("PreferredDataClasses") == (version >= .v2), "\(text)")
            case MBIMServices.BasicConnect.packetService:
                #expect(text.contains("FrequencyRange") == (version >= .v2), "\(text)")
                #expect(text.contains("DataSubclass") == (version >= .v3), "\(text)")
            case MBIMServices.BasicConnect.signalState:
                #expect(text.contains("RsrpSnr") == (version >= .v2), "\(text)")
            case MBIMServices.BasicConnect.subscriberReadyStatus:
                #expect(text.contains("Flags") == (version >= .v3), "\(text)")
            default: break
            }
        }
    }

    /// libmbim's own words for the 5G layouts: what mbimcli and ModemManager will see.
    @Test func libmbimReadsTheFiveGDataClasses() throws {
        let nsa3 = try allMBIMMessages(try Repo.scenario("mbim-5g-nsa-mbimex3"), version: .v3)
        let ps3 = try #require(nsa3.first { $0.type == .commandDone && $0.cid == 10 })
        let t3 = try libmbimPrintable(ps3.encoded(), mbimex: .v3).get()
        #expect(t3.contains("HighestAvailableDataClass = 'lte, 5g'") && t3.contains("DataSubclass = '5g-endc'"), "\(t3)")
        let nsa2 = try allMBIMMessages(try Repo.scenario("mbim-5g-nsa-mbimex2"), version: .v2)
        let ps2 = try #require(nsa2.first { $0.type == .commandDone && $0.cid == 10 })
        let t2 = try libmbimPrintable(ps2.encoded(), mbimex: .v2).get()
        #expect(t2.contains("CurrentDataClass = 'lte, 5g-nsa'"), "\(t2)")
        let sa3 = try allMBIMMessages(try Repo.scenario("mbim-5g-sa-mbimex3"), version: .v3)
        let sig = try #require(sa3.first { $0.type == .commandDone && $0.cid == 11 })
        let ts = try libmbimPrintable(sig.encoded(), mbimex: .v3).get()
        #expect(ts.contains("SystemType = '5g-sa'") && ts.contains("Rsrp = '72'"), "\(ts)")
    }
}
