// The QMI side of the engine on an injected clock: client ids, answers, indications only to registered clients,
// fallbacks, faults and the timeline.

import ModemSim
import ReachCore
import Testing

typealias QID = QMIMessageID

@Suite struct QMIEngineTests {
    @Test func allocatesAndReleasesClientIDs() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let a = try h.allocate(QMIService.nas)
        let b = try h.allocate(QMIService.nas)
        let d = try h.allocate(QMIService.dms)
        #expect(a == 1 && b == 2 && d == 1)
        let released = try h.request(QMIService.ctl, cid: 0, QID.ctlReleaseCID, [QMITLV(0x01, [QMIService.nas, a])])
        #expect(released.result?.status == 0 && released.tlv(0x01) == [QMIService.nas, a])
        let again = try h.request(QMIService.ctl, cid: 0, QID.ctlReleaseCID, [QMITLV(0x01, [QMIService.nas, a])])
        #expect(again.result?.error == QMIError.invalidClientID)
        // A released (or never allocated) client gets INVALID_CLIENT_ID.
        let stale = try h.request(QMIService.nas, cid: a, QID.nasGetSystemInfo)
        #expect(stale.result?.error == QMIError.invalidClientID)
        // No client for services the modem does not have (0x09 voice).
        let voice = try h.request(QMIService.ctl, cid: 0, QID.ctlAllocateCID, [QMITLV(0x01, [0x09])])
        #expect(voice.result?.error == QMIError.invalidServiceType)
    }

    @Test func versionInfoSyncAndUnknownControlMessages() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let v = try h.request(QMIService.ctl, cid: 0, QID.ctlGetVersionInfo)
        let list = try #require(v.tlv(0x01))
        #expect(Int(list[0]) == QMIService.supported.count && list.count == 1 + 5 * QMIService.supported.count)
        let nas = try h.allocate(QMIService.nas)
        #expect(try h.request(QMIService.ctl, cid: 0, QID.ctlSync).result?.status == 0)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.error == QMIError.invalidClientID)
        #expect(try h.request(QMIService.ctl, cid: 0, 0x0099).result?.error == QMIError.notSupported)
        #expect(try h.request(QMIService.ctl, cid: 0, QID.ctlInternalProxyOpen, [QMITLV(0x01, Array("/dev/x".utf8))]).result?.status == 0)
        let n2 = try h.allocate(QMIService.nas)
        #expect(try h.request(QMIService.nas, cid: n2, 0x0777).result?.error == QMIError.notSupported)
    }

    @Test func lteAnswersCarryTheScenario() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let nas = try h.allocate(QMIService.nas)
        let si = try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo)
        #expect(si.tlv(0x14) == [2, 2, 0] && si.tlv(0x4E) == [0])
        let lte = try #require(si.tlv(0x19))
        #expect(Array(lte[20..<26]) == Array("262".utf8) + [0x30, 0x31, 0xFF])
        let sig = try #require(try h.request(QMIService.nas, cid: nas, QID.nasGetSignalInfo).tlv(0x14))
        // RSSI -65, RSRQ -10, RSRP -95, SNR 12.5 dB in 0.1 dB.
        #expect(Int8(bitPattern: sig[0]) == -65 && Int8(bitPattern: sig[1]) == -10)
        #expect(Int16(bitPattern: UInt16(u16(sig, 2))) == -95 && u16(sig, 4) == 125)
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        #expect(ss.tlv(0x01) == [1, 1, 1, 2, 1, 8] && ss.tlv(0x10) == [1] && ss.tlv(0x11) == [1, 11])
    }

    @Test func nsaIsLTEWithNR5GAvailableAndBothSignals() throws {
        var h = try QMIHarness(scenarioFile: "qmi-5g-nsa-endc")
        let nas = try h.allocate(QMIService.nas)
        let si = try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo)
        #expect(si.tlv(0x14) == [2, 2, 0] && si.tlv(0x4E) == [1] && si.tlv(0x4A) == [0, 0, 0] && si.tlv(0x4B) == nil)
        let reading = QMISystemInfo(
            lte: .init(serviceStatus: .available, domain: .csPS, roaming: false, forbidden: false),
            nr5g: .init(serviceStatus: .none), eutraWithNR5GAvailable: si.tlv(0x4E) == [1])
        #expect(reading.accessTechnologies == [.lte, .nr] && reading.accessTechnologies.generation == .g5)
        let sig = try h.request(QMIService.nas, cid: nas, QID.nasGetSignalInfo)
        let nr = try #require(sig.tlv(0x17))
        #expect(Int16(bitPattern: UInt16(u16(nr))) == -88 && u16(nr, 2) == 180)
        #expect(sig.tlv(0x14) != nil && sig.tlv(0x18) == [0xF5, 0xFF])  // NR RSRQ -11
        // Serving System shows the LTE anchor only.
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        #expect(ss.tlv(0x01) == [1, 1, 1, 2, 1, 8])
    }

    @Test func saReportsNR5GServiceAndSystemInfo() throws {
        var h = try QMIHarness(scenarioFile: "qmi-5g-sa")
        let nas = try h.allocate(QMIService.nas)
        let si = try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo)
        #expect(si.tlv(0x4A) == [2, 2, 0] && si.tlv(0x14) == nil && si.tlv(0x4E) == nil)
        let nr = try #require(si.tlv(0x4B))
        #expect(nr[1] == 2 && Array(nr[20..<26]) == Array("310260".utf8))
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        #expect(ss.tlv(0x01) == [1, 2, 1, 2, 1, 12] && ss.tlv(0x11) == nil)  // no CS domain on SA
        #expect(ss.tlv(0x27) == [0x36, 0x01, 0x04, 0x01, 1])  // MCC 310, MNC 260, 3-digit MNC
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSignalStrength).result?.error == QMIError.informationUnavailable)
    }

    @Test(arguments: [
        ("qmi-2g-edge", RadioFamily.gsm, [UInt8(1), 2], Generation.g2),
        ("qmi-3g-hspa-plus", .wcdma, [12], .g3),
        ("qmi-4g-lte", .lte, [11], .g4),
    ])
    func servingSystemGivesTheGeneration(file: String, family: RadioFamily, caps: [UInt8], generation: Generation) throws {
        var h = try QMIHarness(scenarioFile: file)
        let nas = try h.allocate(QMIService.nas)
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        let head = try #require(ss.tlv(0x01))
        let dataCaps = try #require(ss.tlv(0x11))
        #expect(Array(dataCaps.dropFirst()) == caps)
        let reading = QMIServingSystem(
            registrationState: Int(head[0]), radioInterfaces: head.dropFirst(5).map { Int(Int8(bitPattern: $0)) },
            dataCapabilities: caps.map(Int.init), roamingIndicator: Int(try #require(ss.tlv(0x10))[0]))
        #expect(reading.registration == .home && reading.accessTechnologies.generation == generation)
    }

    @Test(arguments: ["qmi-fallback-invalid-qmi-command", "qmi-fallback-not-supported"])
    func fallbackFirmwareRefusesSystemAndSignalInfo(file: String) throws {
        let scenario = try Repo.scenario(file)
        var h = QMIHarness(scenario)
        let nas = try h.allocate(QMIService.nas)
        let code = scenario.qmi.unsupportedError
        #expect([QMIError.invalidQMICommand, QMIError.notSupported].contains(code))
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.error == code)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSignalInfo).result?.error == code)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasConfigSignalInfo).result?.error == code)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasRegisterIndications, [QMITLV(0x18, [1])]).result?.error == code)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem).result?.status == 0)
        let strength = try h.request(QMIService.nas, cid: nas, QID.nasGetSignalStrength, [QMITLV(0x10, [0xEF, 0x00])])
        #expect(strength.result?.status == 0 && strength.tlv(0x01) != nil && strength.tlv(0x11) != nil)
    }

    @Test func indicationsGoOnlyToRegisteredClients() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let listener = try h.allocate(QMIService.nas)
        let quiet = try h.allocate(QMIService.nas)
        _ = quiet
        #expect(try h.request(QMIService.nas, cid: listener, QID.nasRegisterIndications,
                              [QMITLV(0x18, [1]), QMITLV(0x19, [1])]).result?.status == 0)
        let (reply, messages) = try h.control(#"{"set":{"access_technologies":["lte","5gnr"],"signal":{"rssi_dbm":-60,"rsrp_dbm":-90,"rsrq_db":-9,"sinr_db":15,"nr":{"rsrp_dbm":-85,"sinr_db":20}}}}"#)
        #expect(reply == #"{"ok":true}"#)
        #expect(messages.allSatisfy { $0.kind == .indication && $0.clientID == listener && $0.transactionID == 0 })
        #expect(messages.map(\.messageID) == [QID.nasSystemInfoIndication, QID.nasSignalInfoIndication])
        let si = messages[0]
        #expect(si.tlv(0x50) == [1] && si.tlv(0x4E) == nil)  // the indication's EUTRA-with-NR5G id
        let bytes = messages[0].encoded()
        #expect(bytes[3] == 0x80 && bytes[6] == 0x04)  // QMUX from the modem; SDU flags: indication
        // Serving System indications only for a client that asked; a signal-only change sends no System Info.
        #expect(try h.request(QMIService.nas, cid: quiet, QID.nasRegisterIndications, [QMITLV(0x13, [1])]).result?.status == 0)
        let (_, more) = try h.control(#"{"set":{"registration":"roaming"}}"#)
        #expect(more.map { "\($0.clientID):\($0.messageID)" } == ["\(listener):78", "\(quiet):36"])
        let ind = try #require(more.last)
        #expect(ind.tlv(0x10) == [0] && ind.tlv(0x29) != nil && ind.tlv(0x27) == nil)  // roaming; ind MNC-PCS id
        let (_, signalOnly) = try h.control(#"{"set":{"signal":{"rssi_dbm":-70,"rsrp_dbm":-100,"rsrq_db":-12,"sinr_db":5}}}"#)
        #expect(signalOnly.map(\.messageID) == [QID.nasSignalInfoIndication])
    }

    @Test func eventReportAndCardStatusIndications() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let nas = try h.allocate(QMIService.nas)
        let uim = try h.allocate(QMIService.uim)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasSetEventReport,
                              [QMITLV(0x10, [1, 0]), QMITLV(0x13, [1, 3]), QMITLV(0x1C, [1, 5])]).result?.status == 0)
        let reg = try h.request(QMIService.uim, cid: uim, QID.uimRegisterEvents, [QMITLV(0x01, [1, 0, 0, 0])])
        #expect(reg.tlv(0x10) == [1, 0, 0, 0])
        let (_, signal) = try h.control(#"{"set":{"signal":{"rssi_dbm":-80,"rsrp_dbm":-110,"rsrq_db":-14,"sinr_db":2}}}"#)
        let report = try #require(signal.first)
        #expect(report.messageID == QID.nasSetEventReport && report.kind == .indication)
        #expect(report.tlv(0x10) == [0xB0, 8] && report.tlv(0x13) == [80, 8])  // -80 dBm LTE; RSSI 80
        #expect(report.tlv(0x1A).map { Int16(bitPattern: UInt16(u16($0))) } == -110)
        let (_, sim) = try h.control(#"{"set":{"sim":"absent","registration":"idle","access_technologies":[]}}"#)
        let card = try #require(sim.first(where: { $0.service == QMIService.uim }))
        #expect(card.messageID == QID.uimCardStatusIndication && card.clientID == uim)
        #expect(try #require(card.tlv(0x10))[9] == 0)  // card state ABSENT
    }

    @Test(arguments: [
        ("qmi-sim-pin-required", [UInt8(1), 3, 10], UInt8(1), UInt8(2)),
        ("qmi-sim-absent", nil, 2, nil),
        ("qmi-4g-lte", [3, 3, 10], 0, 7),
    ] as [(String, [UInt8]?, UInt8, UInt8?)])
    func simStateInDMSAndUIM(file: String, pin1: [UInt8]?, uimState: UInt8, appState: UInt8?) throws {
        var h = try QMIHarness(scenarioFile: file)
        let dms = try h.allocate(QMIService.dms)
        let uim = try h.allocate(QMIService.uim)
        let pin = try h.request(QMIService.dms, cid: dms, QID.dmsUIMGetPINStatus)
        #expect(pin.tlv(0x11) == pin1)
        if pin1 == nil { #expect(pin.result?.error == QMIError.uimUninitialized) }
        #expect(try h.request(QMIService.dms, cid: dms, QID.dmsUIMGetState).tlv(0x01) == [uimState])
        let card = try #require(try h.request(QMIService.uim, cid: uim, QID.uimGetCardStatus).tlv(0x10))
        if let appState {
            #expect(card[9] == 1 && card[15] == 2 && card[16] == appState)  // present, USIM, state
        } else {
            #expect(card[9] == 0 && card[14] == 0)  // absent, no applications
        }
        let imsi = try h.request(QMIService.dms, cid: dms, QID.dmsUIMGetIMSI)
        #expect((imsi.result?.status == 0) == (file == "qmi-4g-lte"))
    }

    /// What ModemManager asks before it enables a QMI modem: the operating mode (online) and power-state reports.
    @Test func operatingModeAndPowerReports() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let dms = try h.allocate(QMIService.dms)
        let mode = try h.request(QMIService.dms, cid: dms, QID.dmsGetOperatingMode)
        #expect(mode.result?.status == 0 && mode.tlv(0x01) == [0x00])
        let report = try h.request(QMIService.dms, cid: dms, QID.dmsSetEventReport, [QMITLV(0x14, [1])])
        #expect(report.result?.status == 0)
        #expect(try h.request(QMIService.dms, cid: dms, 0x002E).result?.error == QMIError.notSupported)
    }

    @Test func deniedCarriesTheRejectCause() throws {
        var h = try QMIHarness(scenarioFile: "qmi-denied-reject-cause")
        let nas = try h.allocate(QMIService.nas)
        let si = try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo)
        #expect(si.tlv(0x14) == [1, 1, 0])  // LIMITED
        let lte = try #require(si.tlv(0x19))
        #expect(lte[6] == 1 && lte[7] == 1 && lte[16] == 1 && lte[18] == 11)  // forbidden, reject cause 11
        let reading = QMISystemInfo(lte: .init(serviceStatus: .limited, forbidden: true, rejectCause: Int(lte[18])))
        #expect(reading.registration == .denied && reading.rejectCause == 11)
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        #expect(ss.tlv(0x01)?.first == 3)
    }

    // MARK: Faults

    @Test func silenceDelayAndErrorFaults() throws {
        var s = try Repo.scenario("qmi-4g-lte")
        s.faults = [
            FaultRule(.silence, messages: [.qmi(service: QMIService.nas, message: QID.nasGetSignalInfo)]),
            FaultRule(.delay(ms: 1500), messages: [.qmi(service: QMIService.nas, message: QID.nasGetServingSystem)]),
            FaultRule(.error(code: 52), messages: [.qmi(service: QMIService.nas, message: QID.nasGetSystemInfo)], count: 1),
        ]
        var h = QMIHarness(s)
        let nas = try h.allocate(QMIService.nas)
        #expect(try h.send(QMIService.nas, cid: nas, QID.nasGetSignalInfo).isEmpty)
        #expect(try h.send(QMIService.nas, cid: nas, QID.nasGetServingSystem).isEmpty)
        #expect(h.engine.nextDeadline == 1500)
        #expect(h.advance(to: 1499).writes.isEmpty)
        let late = try h.advance(to: 1500).writes.map { try QMIMessage.decode($0) }
        #expect(late.map(\.messageID) == [QID.nasGetServingSystem])
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.error == 52)  // DEVICE_NOT_READY
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.status == 0)  // count 1: used up
        #expect(h.engine.requestCounts["nas:get_signal_info"] == 1)
    }

    @Test func garbageComesBeforeTheAnswerAndHasNoMarker() throws {
        var h = try QMIHarness(scenarioFile: "qmi-fault-garbage")
        let nas = try h.allocate(QMIService.nas)
        let request = QMIMessage(service: QMIService.nas, clientID: nas, kind: .request, transactionID: 9, messageID: QID.nasGetSystemInfo, tlvs: [])
        let writes = h.raw(request.encoded()).writes
        #expect(writes.count == 2 && writes[0].count == 48 && !writes[0].contains(0x01))
        var framer = QMUXFramer()
        let items = framer.feed(writes.joined().map { $0 })
        #expect(items.first == .skipped(48))
        guard case let .frame(f)? = items.last else {
            Issue.record("no frame after the garbage")
            return
        }
        #expect(try QMIMessage.decode(f).messageID == QID.nasGetSystemInfo)
        // Same seed, same bytes: the scenario is deterministic.
        var again = try QMIHarness(scenarioFile: "qmi-fault-garbage")
        _ = try again.allocate(QMIService.nas)
        #expect(again.raw(request.encoded()).writes.first == writes[0])
    }

    @Test func truncationCutsTheFirstAnswerOnce() throws {
        var h = try QMIHarness(scenarioFile: "qmi-fault-truncated-once")
        let nas = try h.allocate(QMIService.nas)
        let request = QMIMessage(service: QMIService.nas, clientID: nas, kind: .request, transactionID: 3, messageID: QID.nasGetSystemInfo, tlvs: [])
        let cut = h.raw(request.encoded()).writes
        #expect(cut.count == 1 && cut[0].count == 20 && cut[0][0] == 0x01)
        #expect(throws: DecodeError.self) { try QMIMessage.decode(cut[0]) }
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.status == 0)
    }

    @Test func closeAfterRequestsThenReopen() throws {
        var h = try QMIHarness(scenarioFile: "qmi-fault-close-after-requests")
        var actions: [EngineAction] = []
        for _ in 0..<4 {
            let m = QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: 1, messageID: QID.ctlGetVersionInfo, tlvs: [])
            actions = h.raw(m.encoded())
            #expect(actions.writes.count == 1)  // each answered, the fourth too
        }
        #expect(actions.contains(.close) && !h.engine.portOpen)
        #expect(h.engine.nextDeadline == 1000)
        #expect(h.raw(QMIMessage(service: 0, clientID: 0, kind: .request, transactionID: 2, messageID: QID.ctlSync, tlvs: []).encoded()).isEmpty)
        #expect(h.advance(to: 1000).contains(.reopen) && h.engine.portOpen)
    }

    @Test func malformedRequestIsAnsweredMalformed() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        // NAS Get System Info whose TLV length (5) exceeds what follows.
        let bad: [UInt8] = [0x01, 0x0F, 0x00, 0x00, 0x03, 0x01, 0x00, 0x07, 0x00, 0x4D, 0x00, 0x03, 0x00, 0x10, 0x05, 0x00]
        let writes = h.raw(bad).writes
        let reply = try QMIMessage.decode(try #require(writes.first))
        #expect(reply.result?.error == QMIError.malformedMessage && reply.transactionID == 7 && reply.messageID == 0x004D)
    }

    // MARK: Timeline, control, replay

    @Test func timelineStepsFireAtTheirTimes() throws {
        var h = try QMIHarness(scenarioFile: "qmi-timeline-lte-nsa-searching")
        let nas = try h.allocate(QMIService.nas)
        _ = try h.request(QMIService.nas, cid: nas, QID.nasRegisterIndications, [QMITLV(0x13, [1]), QMITLV(0x18, [1]), QMITLV(0x19, [1])])
        #expect(h.engine.nextDeadline == 1000)
        let step1 = try h.advance(to: 1000).writes.map { try QMIMessage.decode($0) }
        #expect(step1.first?.tlv(0x50) == [1])  // NSA
        #expect(h.engine.state.accessTechnologies == [.lte, .nr])
        _ = h.advance(to: 2000)
        let step3 = try h.advance(to: 3000).writes.map { try QMIMessage.decode($0) }
        let ss = try #require(step3.first(where: { $0.messageID == QID.nasGetServingSystem }))
        #expect(ss.tlv(0x01)?.first == 2)  // searching
        #expect(h.engine.nextDeadline == 4000)
        _ = h.advance(to: 4000)
        #expect(h.engine.nextDeadline == nil && h.engine.state.registration == .home)
    }

    @Test func controlLinesReportErrorsAndAnswerQueries() throws {
        var h = try QMIHarness(scenarioFile: "qmi-4g-lte")
        let (bad, none) = try h.control(#"{"set":{"signal":{"rsrp_dbm":"low"}}}"#)
        #expect(bad == #"{"ok":false,"error":"control.set.signal.rsrp_dbm: expected a number, found a string"}"#)
        #expect(none.isEmpty)
        let (inconsistent, _) = try h.control(#"{"set":{"operator":null}}"#)
        #expect(inconsistent.contains("control.set.operator: a registered modem needs an operator"))
        let (state, _) = try h.control(#"{"query":"state"}"#)
        let json = try JSON.parse(state)
        #expect(json["state"]?["registration"]?.stringValue == "home")
        #expect(json["state"]?["signal"]?["rsrp_dbm"]?.doubleValue == -95)
        _ = try h.control(#"{"fault":{"silence":{"messages":["dms"]}}}"#)
        let (stats, _) = try h.control(#"{"query":"stats"}"#)
        #expect(try JSON.parse(stats)["stats"]?["faults_armed"]?.intValue == 1)
        _ = try h.control(#"{"fault":"clear"}"#)
        #expect(h.engine.faults.isEmpty)
    }

    @Test func replayOnlyAnswersFromTheCaptureAndRefusesTheRest() throws {
        var h = QMIHarness(replayOnly: try Repo.capture("qmi-nas-get-serving-system-umts-iliad"))
        let nas = try h.allocate(QMIService.nas)
        let ss = try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem)
        #expect(ss.tlv(0x12)?.count == 10 && ss.clientID == nas)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).result?.error == QMIError.notSupported)
    }

    @Test func replayWithAScenarioFallsBackToTheScenario() throws {
        var h = QMIHarness(try Repo.scenario("qmi-4g-lte"), capture: try Repo.capture("qmi-nas-get-serving-system-umts-iliad"))
        let nas = try h.allocate(QMIService.nas)
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetServingSystem).tlv(0x01)?.last == 5)  // UMTS, recorded
        #expect(try h.request(QMIService.nas, cid: nas, QID.nasGetSystemInfo).tlv(0x14) == [2, 2, 0])  // LTE, scenario
    }
}

/// Bad input of every kind must end in an error answer or silence, never a trap: random bytes, and real
/// requests with bytes flipped, cut or repeated, fed in random-sized pieces.
@Suite struct HostileInputTests {
    static func mutations(of valid: [[UInt8]], seed: UInt64, count: Int) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        var out: [[UInt8]] = []
        for i in 0..<count {
            var b = valid[Int(rng.next() % UInt64(valid.count))]
            switch i % 4 {
            case 0: b = rng.bytes(Int(rng.next() % 80) + 1)
            case 1: b[Int(rng.next() % UInt64(b.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
            case 2: b = Array(b.prefix(Int(rng.next() % UInt64(b.count))))
            default: b += b.prefix(Int(rng.next() % UInt64(b.count)))
            }
            out.append(b)
        }
        return out
    }

    @Test func qmiNeverTraps() throws {
        var h = try QMIHarness(scenarioFile: "qmi-5g-nsa-endc")
        let nas = try h.allocate(QMIService.nas)
        let valid = [
            QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: 1, messageID: QID.ctlAllocateCID, tlvs: [QMITLV(1, [3])]),
            QMIMessage(service: QMIService.nas, clientID: nas, kind: .request, transactionID: 2, messageID: QID.nasSetEventReport, tlvs: [QMITLV(0x10, [1, 0]), QMITLV(0x13, [1, 1])]),
            QMIMessage(service: QMIService.nas, clientID: nas, kind: .request, transactionID: 3, messageID: QID.nasGetSignalStrength, tlvs: [QMITLV(0x10, [0xFF, 0xFF])]),
            QMIMessage(service: QMIService.uim, clientID: 1, kind: .request, transactionID: 4, messageID: QID.uimRegisterEvents, tlvs: [QMITLV(1, [1])]),
            QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: 5, messageID: QID.ctlReleaseCID, tlvs: [QMITLV(1, [3, 9])]),
        ].map { $0.encoded() }
        var written = 0
        for bytes in Self.mutations(of: valid, seed: 42, count: 4000) {
            for w in h.raw(bytes).writes {
                #expect(try QMIMessage.decode(w).kind != .request)
                written += 1
            }
        }
        #expect(written > 100)
    }

    @Test func mbimNeverTraps() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-5g-nsa-mbimex3")
        try h.open()
        var version = MBIMBufferBuilder()
        version.u16(0x0100)
        version.u16(0x0300)
        let valid = [
            MBIMMessage.command(tid: 1, service: MBIMServices.basicConnect, cid: 19, set: true, buffer: [1, 0, 0, 0, 8, 0, 0, 0, 24, 0, 0, 0]),
            MBIMMessage.command(tid: 2, service: MBIMServices.msBasicConnectExtensions, cid: 15, buffer: version.build()),
            MBIMMessage.command(tid: 3, service: MBIMServices.basicConnect, cid: 11, set: true, buffer: [5, 0, 0, 0]),
            MBIMMessage.command(tid: 4, service: MBIMServices.basicConnect, cid: 3, set: true, buffer: []),
            MBIMMessage(type: .open, transactionID: 5, code: 0),
        ].map { $0.encoded() }
        var written = 0
        // OPEN with MaxControlTransfer 0 (one of the inputs) makes later replies fragment at 64 bytes.
        var assembler = MBIMAssembler()
        for bytes in Self.mutations(of: valid, seed: 7, count: 4000) {
            for w in h.raw(bytes).writes {
                for item in assembler.feed(w) {
                    switch item {
                    case let .message(m): #expect(m.type.rawValue & 0x8000_0000 != 0)
                    case .incomplete: break
                    case let .malformed(_, _, why): Issue.record("the simulator wrote a malformed message: \(why)")
                    }
                }
                written += 1
            }
        }
        #expect(written > 100)
    }
}
