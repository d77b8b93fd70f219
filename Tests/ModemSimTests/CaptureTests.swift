// The captured libqmi/libmbim vectors decode to the values hw/captures/README.md documents, and ReachCore's
// conversions read the generations a real modem meant; replay rewrites only the transaction and client ids.

import ModemSim
import ReachCore
import Testing

/// GSM 03.38 default alphabet, packed 7-bit (enough of it for operator names in ASCII range).
func unpackGSM7(_ bytes: [UInt8]) -> String {
    var out = ""
    var bits = 0
    var acc = 0
    for b in bytes {
        acc |= Int(b) << bits
        bits += 8
        while bits >= 7 {
            let septet = acc & 0x7F
            acc >>= 7
            bits -= 7
            out.append(Character(Unicode.Scalar(UInt8(septet))))
        }
    }
    return out
}

func u16(_ b: [UInt8], _ at: Int = 0) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
func u32(_ b: [UInt8], _ at: Int = 0) -> Int { u16(b, at) | u16(b, at + 2) << 16 }

@Suite struct CaptureTests {
    @Test func everyCaptureParsesAndNamesItsSource() throws {
        let names = Repo.files(Repo.captures)
        #expect(names.count >= 6)
        for name in names {
            let c = try Repo.capture(name)
            let source = Dictionary(uniqueKeysWithValues: c.source)
            #expect(source["licence"] == "GPL-2.0-or-later", "\(name)")
            #expect(source["tag"] == (c.modemProtocol == .qmi ? "1.32.2" : "1.28.2"), "\(name)")
            #expect(source["commit"]?.count == 40 && source["function"] != nil && source["file"] != nil, "\(name)")
            #expect(name.hasPrefix(c.modemProtocol.rawValue + "-"), "\(name)")
        }
    }

    /// libqmi test_generated_nas_get_serving_system: a real modem on UMTS in Italy, "Iliad" 222/50.
    @Test func servingSystemIsUMTSOnIliad() throws {
        let c = try Repo.capture("qmi-nas-get-serving-system-umts-iliad")
        let request = try QMIMessage.decode(try #require(c.exchanges[0].request))
        #expect(request.kind == .request && request.messageID == 0x0024 && request.tlvs.isEmpty)
        let m = try QMIMessage.decode(c.exchanges[0].response)
        let ss = try #require(m.tlv(0x01))
        #expect(Array(ss[0..<5]) == [1, 1, 1, 2, 1] && ss[5] == 5)  // registered, CS+PS attached, 3GPP, [UMTS]
        #expect(try #require(m.tlv(0x11)) == [3, 3, 4, 5])  // HSDPA, HSUPA, WCDMA
        let plmn = try #require(m.tlv(0x12))
        #expect(u16(plmn) == 222 && u16(plmn, 2) == 50)
        #expect(unpackGSM7(Array(plmn[5...])) == "Iliad" && Int(plmn[4]) == 5)
        let lac = try #require(m.tlv(0x1C))
        let cid = try #require(m.tlv(0x1D))
        #expect(u16(lac) == 24500 && u32(cid) == 18_045_647)
        let reading = QMIServingSystem(
            registrationState: Int(ss[0]), radioInterfaces: [Int(ss[5])], dataCapabilities: [3, 4, 5],
            roamingIndicator: Int(try #require(m.tlv(0x10))[0]),
            plmn: PLMN(qmiMCC: UInt16(u16(plmn)), qmiMNC: UInt16(u16(plmn, 2))))
        #expect(reading.registration == .home)
        #expect(reading.accessTechnologies.generation == .g3)
        #expect(reading.plmn == PLMN(mcc: "222", mnc: "50"))
    }

    /// libqmi test_generated_nas_get_system_info (libqmi#33): LTE, MCC "530", MNC "24" + 0xFF.
    @Test func systemInfoIsLTEWithPaddedMNC() throws {
        let m = try QMIMessage.decode(try Repo.capture("qmi-nas-get-system-info-lte-530-24").exchanges[0].response)
        #expect(m.tlv(0x14) == [2, 2, 0])  // LTE available
        #expect(m.tlv(0x12) == [0, 0, 0] && m.tlv(0x13) == [0, 0, 0])  // GSM, WCDMA: no service
        let lte = try #require(m.tlv(0x19))
        #expect(lte.count == 29)
        #expect(lte[1] == 3 && lte[5] == 0 && lte[7] == 0)  // domain CS+PS, roaming off, not forbidden
        // valid flags and values: domain 0-1, capability 2-3, roaming 4-5, forbidden 6-7, LAC 8-10, cell id
        // 11-15, reject info 16-18, network id 19-25 (MCC, MNC as 3 bytes each), TAC 26-28.
        #expect(lte[11] == 1 && u32(lte, 12) == 1_616_133)
        #expect(Array(lte[20..<23]) == Array("530".utf8) && Array(lte[23..<26]) == [0x32, 0x34, 0xFF])
        #expect(lte[26] == 1 && u16(lte, 27) == 63001)
        let plmn = PLMN(qmiMCC: Array(lte[20..<23]), qmiMNC: Array(lte[23..<26]))
        #expect(plmn == PLMN(mcc: "530", mnc: "24"))
        let info = QMISystemInfo(lte: .init(serviceStatus: .available, domain: .csPS, roaming: false, forbidden: false, plmn: plmn))
        #expect(info.accessTechnologies.generation == .g4 && info.registration == .home)
    }

    /// libqmi test_message_parse_complete: -101 dBm on UMTS, Ec/Io -8.5 dB.
    @Test func signalStrengthIsMinus101OnUMTS() throws {
        let c = try Repo.capture("qmi-nas-get-signal-strength-umts-101")
        #expect(c.exchanges[0].request == nil)
        let m = try QMIMessage.decode(c.exchanges[0].response)
        let s = try #require(m.tlv(0x01))
        #expect(Int8(bitPattern: s[0]) == -101 && s[1] == 5)
        #expect(try #require(m.tlv(0x11)) == [1, 0, 101, 5])
        let ecio = try #require(m.tlv(0x12))
        #expect(Double(ecio[2]) * -0.5 == -8.5)
    }

    @Test func dmsIDsCarryTheIMEI() throws {
        let m = try QMIMessage.decode(try Repo.capture("qmi-dms-get-ids").exchanges[0].response)
        #expect(String(decoding: try #require(m.tlv(0x11)), as: UTF8.self) == "359225050039973")
        #expect(String(decoding: try #require(m.tlv(0x10)), as: UTF8.self) == "80997874")
        #expect(m.transactionID == 0xFFFF)
    }

    /// libmbim test_basic_connect_register_state: home, UMTS/HSDPA/HSUPA, "26006".
    @Test func registerStateIsHomeOnUMTS() throws {
        let m = try MBIMMessage.decode(try Repo.capture("mbim-register-state-umts-26006").exchanges[0].response)
        #expect(m.type == .commandDone && m.transactionID == 0x12 && m.service == MBIMServices.basicConnect && m.cid == 9)
        var r = MBIMBufferReader(m.buffer)
        #expect(try r.u32("nw error") == 0)
        let state = try r.u32("register state")
        #expect(try r.u32("mode") == 1)
        let classes = try r.u32("data classes")
        #expect(try r.u32("cellular class") == 1)
        let provider = try r.string("provider id")
        #expect(try r.string("provider name") == "")
        #expect(try r.string("roaming text") == "")
        #expect(try r.u32("flags") == 2)
        #expect(RegistrationState(mbimRegisterState: state) == .home)
        #expect(classes == 0x1C && AccessTechnologies(mbimDataClass: classes) == [.umts, .hsdpa, .hsupa])
        #expect(AccessTechnologies(mbimDataClass: classes).generation == .g3)
        #expect(PLMN(providerID: provider) == PLMN(mcc: "260", mnc: "06"))
    }

    @Test func deviceCapsIsAHuaweiE367() throws {
        let m = try MBIMMessage.decode(try Repo.capture("mbim-device-caps-huawei-e367").exchanges[0].response)
        var r = MBIMBufferReader(m.buffer)
        for _ in 0..<8 { _ = try r.u32("field") }
        #expect(try r.string("custom data class") == "HSPA+")
        _ = try r.string("device id")
        #expect(try r.string("firmware") == "11.810.09.00.00")
        #expect(try r.string("hardware") == "CP1E367UM")
    }

    @Test func qmiReplayRewritesOnlyTheClientAndTransactionIDs() throws {
        let c = try Repo.capture("qmi-nas-get-serving-system-umts-iliad")
        var replayer = Replayer(c)
        let live = QMIMessage(service: QMIService.nas, clientID: 9, kind: .request, transactionID: 0x1234, messageID: 0x0024, tlvs: [])
        let replayed = replayer.answer(live)
        let answer = try #require(replayed)
        let recorded = c.exchanges[0].response
        #expect(answer.count == recorded.count)
        let changed = answer.indices.filter { answer[$0] != recorded[$0] }
        #expect(Set(changed).isSubset(of: [5, 7, 8]))
        let m = try QMIMessage.decode(answer)
        #expect(m.clientID == 9 && m.transactionID == 0x1234 && m.messageID == 0x0024)
        let other = QMIMessage(service: QMIService.nas, clientID: 9, kind: .request, transactionID: 2, messageID: 0x004D, tlvs: [])
        #expect(replayer.answer(other) == nil)
    }

    @Test func mbimReplayRewritesOnlyTheTransactionID() throws {
        let c = try Repo.capture("mbim-register-state-umts-26006")
        var replayer = Replayer(c)
        let live = MBIMMessage.command(tid: 0xA1B2C3, service: MBIMServices.basicConnect, cid: 9)
        let replayed = replayer.answer(live)
        let answer = try #require(replayed)
        let recorded = c.exchanges[0].response
        #expect(Array(answer[8..<12]) == [0xC3, 0xB2, 0xA1, 0x00])
        #expect(Array(answer[0..<8]) == Array(recorded[0..<8]) && Array(answer[12...]) == Array(recorded[12...]))
        #expect(replayer.answer(MBIMMessage.command(tid: 2, service: MBIMServices.basicConnect, cid: 11)) == nil)
    }

    @Test(arguments: [
        (#"{"protocol":"qmi","exchanges":[]}"#, "capture.exchanges: needs at least one exchange"),
        (#"{"protocol":"qmi","exchanges":[{"response":"01 02"}]}"#, "capture.exchanges[0].response: not a QMUX frame"),
        (#"{"protocol":"qmi","exchanges":[{"response":"zz"}]}"#, "capture.exchanges[0].response: 'z' in 'zz' is not a hex digit"),
        (#"{"protocol":"qmi","exchanges":[{"response":"01 0c 00 00 03 01 00 01 00 24 00 00 00"}]}"#,
         "capture.exchanges[0].response: expected a QMI response, found a request"),
        (#"{"protocol":"mbim","exchanges":[{"response":"01 0c 00"}]}"#, "capture.exchanges[0].response: not an MBIM message"),
        (#"{"protocol":"qmi","source":{"author":"x"},"exchanges":[]}"#, "capture.source.author: unknown key"),
    ])
    func badCapturesNameTheKeyPath(text: String, message: String) {
        #expect {
            _ = try Capture.parse(text)
        } throws: { error in
            (error as? ScenarioError)?.description.hasPrefix(message) == true
        }
    }
}
