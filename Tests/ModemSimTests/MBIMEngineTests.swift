// The MBIM side of the engine: the session, MBIMEx negotiation and the v1/v2/v3 layouts, subscriptions,
// fragmentation, errors and faults.

import ModemSim
import ReachCore
import Testing

typealias BC = MBIMServices.BasicConnect

@Suite struct MBIMEngineTests {
    @Test func commandBeforeOpenIsAFunctionError() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-lte")
        let r = try h.command(BC.registerState)
        #expect(r.type == .functionError && r.code == MBIMProtocolError.notOpened)
        try h.open()
        #expect(try h.command(BC.registerState).type == .commandDone)
        let closed = try h.send(MBIMMessage(type: .close, transactionID: 40))
        #expect(closed.map(\.type) == [.closeDone])
        #expect(try h.command(BC.registerState).code == MBIMProtocolError.notOpened)
    }

    @Test func unknownCIDsAndServicesAreNoDeviceSupport() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-lte")
        try h.open()
        #expect(try h.command(BC.deviceCaps).code == MBIMStatus.success)
        #expect(try h.command(13).code == MBIMStatus.noDeviceSupport)  // Provisioned Contexts
        #expect(try h.command(MBIMUUID("533fbeeb-14fe-4467-9f90-33a223e56c3f")!, 1).code == MBIMStatus.noDeviceSupport)  // SMS
        // An MBIM 1.0 device has no MS Basic Connect Extensions Version.
        #expect(try h.negotiate(host: 0x0300) == nil)
        #expect(try h.command(BC.deviceCaps, set: true).code == MBIMStatus.invalidDeviceServiceOperation)
        let done = try h.command(12)
        #expect(done.buffer.isEmpty)
    }

    @Test(arguments: [
        (MBIMExVersion.v3, UInt16(0x0300), UInt16(0x0300)), (.v3, 0x0200, 0x0200), (.v2, 0x0300, 0x0200),
        (.v2, 0x0200, 0x0200),
    ])
    func versionIsTheLowerOfHostAndDevice(device: MBIMExVersion, host: UInt16, agreed: UInt16) throws {
        var s = try Repo.scenario("mbim-5g-nsa-mbimex3")
        s.mbimex = device
        var h = MBIMHarness(s)
        try h.open()
        let services = try h.command(BC.deviceServices)
        var r = MBIMBufferReader(services.buffer)
        #expect(try r.u32("count") == 2)
        #expect(try h.negotiate(host: host) == agreed)
        #expect(h.engine.modemProtocol == .mbim)
        // v2 and later: Register State grows by PreferredDataClasses (48 + 4 fixed, then "26201" and the name).
        #expect(try h.command(BC.registerState).buffer.count == 52 + 12 + 20)
        let packet = try h.command(BC.packetService).buffer
        #expect(packet.count == (agreed >= 0x0300 ? 44 : 32))
        // A new OPEN starts over at MBIM 1.0.
        try h.open()
        #expect(try h.command(BC.packetService).buffer.count == 28)
    }

    @Test func deviceServicesListVersionOnlyWithMBIMEx() throws {
        for (file, count) in [("mbim-4g-lte", UInt32(1)), ("mbim-5g-sa-mbimex2", 2)] {
            var h = try MBIMHarness(scenarioFile: file)
            try h.open()
            var r = MBIMBufferReader(try h.command(BC.deviceServices).buffer)
            #expect(try r.u32("count") == count, "\(file)")
        }
    }

    /// Packet Service across layouts: v1 LTE|5G_NSA, v2 adds FR1, v3 uses the V3 5G bit with subclass ENDC.
    @Test func nsaPacketServiceInEachLayout() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-5g-nsa-mbimex3")
        try h.open()
        var r = MBIMBufferReader(try h.command(BC.packetService).buffer)
        _ = try r.u32("nw error")
        #expect(try r.u32("state") == 2)
        let v1 = try r.u32("data class")
        #expect(v1 == 0x60 && AccessTechnologies(mbimDataClass: v1) == [.lte, .nr])
        #expect(try h.negotiate(host: 0x0300) == 0x0300)
        var v3 = MBIMBufferReader(try h.command(BC.packetService).buffer)
        _ = try v3.u32("nw error")
        _ = try v3.u32("state")
        let dataClass = try v3.u32("data class v3")
        _ = try v3.u32("up")
        _ = try v3.u32("up")
        _ = try v3.u32("down")
        _ = try v3.u32("down")
        #expect(try v3.u32("frequency range") == 1)
        let subclass = try v3.u32("subclass")
        #expect(dataClass == 0x60 && subclass == 1)
        #expect(AccessTechnologies(mbimDataClassV3: dataClass, subclass: subclass) == [.lte, .nr])
        #expect(try v3.u16("mcc") == 0x0262 && (try v3.u16("mnc")) == 0x8001 && (try v3.u32("tac")) == 41002)
    }

    @Test func saIsFiveGSAInV2AndFiveGNRInV3() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-5g-sa-mbimex3")
        try h.open()
        #expect(try h.negotiate(host: 0x0300) == 0x0300)
        var reg = MBIMBufferReader(try h.command(BC.registerState).buffer)
        _ = try reg.u32("nw")
        #expect(try reg.u32("state") == 3)
        _ = try reg.u32("mode")
        #expect(try reg.u32("classes") == 0x80)
        var ps = MBIMBufferReader(try h.command(BC.packetService).buffer)
        for _ in 0..<2 { _ = try ps.u32("x") }
        let v3 = try ps.u32("class")
        for _ in 0..<5 { _ = try ps.u32("x") }
        let sub = try ps.u32("subclass")
        #expect(v3 == 0x40 && sub == 2 && AccessTechnologies(mbimDataClassV3: v3, subclass: sub) == [.nr])
        // Signal: RSSI unknown, one 5G-SA RSRP/SNR entry.
        let signal = try h.command(BC.signalState).buffer
        var s = MBIMBufferReader(signal)
        #expect(try s.u32("rssi") == 99)
        for _ in 0..<4 { _ = try s.u32("x") }
        let list = try s.reference("rsrp snr")
        var l = ByteReader(list)
        #expect(try l.u32() == 1)
        let rsrp = try l.u32()
        let snr = try l.u32()
        _ = try l.u32()
        _ = try l.u32()
        #expect(try l.u32() == 0x80)
        #expect(MBIMCoding.rsrpDBm(coded: rsrp) == -85 && MBIMCoding.snrDB(coded: snr) == 18)
    }

    @Test(arguments: [
        ("mbim-2g-edge", UInt32(0x03), Generation.g2), ("mbim-3g-hspa", 0x1C, .g3), ("mbim-4g-lte", 0x20, .g4),
        ("mbim-5g-nsa-mbimex2", 0x60, .g5), ("mbim-5g-sa-mbimex2", 0x80, .g5),
    ])
    func registerStateGivesTheGeneration(file: String, classes: UInt32, generation: Generation) throws {
        var h = try MBIMHarness(scenarioFile: file)
        try h.open()
        var r = MBIMBufferReader(try h.command(BC.registerState).buffer)
        _ = try r.u32("nw error")
        #expect(RegistrationState(mbimRegisterState: try r.u32("state")) == .home)
        _ = try r.u32("mode")
        let available = try r.u32("classes")
        #expect(available == classes)
        #expect(AccessTechnologies(mbimDataClass: available).generation == generation)
    }

    @Test func signalStateCodesRSSIAndV2Entries() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-rssi-unknown-mbimex2")
        try h.open()
        var v1 = MBIMBufferReader(try h.command(BC.signalState).buffer)
        #expect(try v1.u32("rssi") == 99)
        #expect(try h.negotiate(host: 0x0200) == 0x0200)
        let buffer = try h.command(BC.signalState).buffer
        var r = MBIMBufferReader(buffer)
        for _ in 0..<5 { _ = try r.u32("x") }
        var l = ByteReader(try r.reference("rsrp snr"))
        #expect(try l.u32() == 1)
        let rsrp = try l.u32()
        let snr = try l.u32()
        #expect(MBIMCoding.rsrpDBm(coded: rsrp) == -101 && MBIMCoding.snrDB(coded: snr) == 6)
        #expect(SignalQuality.percentMBIM(codedRSSI: 99, codedRSRP: [rsrp]) == SignalQuality.percent(rsrp: -101))
        // MBIM 1.0 RSSI coding: -67 dBm → 23 (and back: -113 + 2·23 = -67).
        var lte = try MBIMHarness(scenarioFile: "mbim-4g-lte")
        try lte.open()
        var s = MBIMBufferReader(try lte.command(BC.signalState).buffer)
        let coded = try s.u32("rssi")
        #expect(coded == 23 && MBIMCoding.rssiDBm(coded: coded) == -67)
    }

    @Test func subscriberReadyStatusAndPINFollowTheSIM() throws {
        for (file, ready, pinType) in [("mbim-4g-lte", UInt32(1), UInt32(0)), ("mbim-sim-pin-required", 6, 2), ("mbim-sim-absent", 2, 99)] {
            var h = try MBIMHarness(scenarioFile: file)
            try h.open()
            var r = MBIMBufferReader(try h.command(BC.subscriberReadyStatus).buffer)
            let state = try r.u32("ready state")
            #expect(state == ready, "\(file)")
            let imsi = try r.string("subscriber id")
            #expect(imsi.isEmpty == (ready != 1), "\(file)")
            let pin = try h.command(BC.pin)
            if pinType == 99 {
                #expect(pin.code == MBIMStatus.simNotInserted)
            } else {
                var p = MBIMBufferReader(pin.buffer)
                #expect(try p.u32("pin type") == pinType, "\(file)")
                let sim = SIMState(mbimSubscriberReadyState: state, pinType: pinType)
                #expect(sim == (ready == 1 ? .ready : .pinRequired))
            }
        }
    }

    @Test func notificationsRespectTheSubscribeList() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-lte")
        // Closed: nothing.
        #expect(try h.control(#"{"indicate":true}"#).messages.isEmpty)
        try h.open()
        // Open, no list: everything.
        let all = try h.control(#"{"indicate":true}"#).messages
        #expect(all.map(\.cid) == [BC.subscriberReadyStatus, BC.registerState, BC.packetService, BC.signalState, BC.connect])
        #expect(all.allSatisfy { $0.type == .indicateStatus && $0.transactionID == 0 })
        // Subscribe to Signal State only.
        var e = ByteWriter()
        e.append(MBIMServices.basicConnect.bytes)
        e.u32(1)
        e.u32(BC.signalState)
        var b = MBIMBufferBuilder()
        b.u32(1)
        b.reference(e.bytes)
        let set = try h.command(BC.deviceServiceSubscribeList, set: true, b.build())
        #expect(set.code == MBIMStatus.success)
        #expect(try h.control(#"{"set":{"registration":"roaming"}}"#).messages.isEmpty)
        let signal = try h.control(#"{"set":{"signal":{"rssi_dbm":-90}}}"#).messages
        #expect(signal.map(\.cid) == [BC.signalState])
        // An empty CID list subscribes the whole service.
        var all2 = ByteWriter()
        all2.append(MBIMServices.basicConnect.bytes)
        all2.u32(0)
        var b2 = MBIMBufferBuilder()
        b2.u32(1)
        b2.reference(all2.bytes)
        _ = try h.command(BC.deviceServiceSubscribeList, set: true, b2.build())
        #expect(try h.control(#"{"set":{"registration":"home"}}"#).messages.map(\.cid) == [BC.registerState])
    }

    @Test func smallMaxTransferFragmentsReplies() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-5g-nsa-mbimex3")
        try h.open(maxTransfer: 64)
        let writes = h.raw(MBIMMessage.command(tid: 77, service: MBIMServices.basicConnect, cid: BC.deviceCaps).encoded()).writes
        #expect(writes.count > 1 && writes.allSatisfy { $0.count <= 64 })
        var a = MBIMAssembler()
        let items = writes.flatMap { a.feed($0) }
        guard case let .message(m)? = items.last else {
            Issue.record("fragments did not reassemble")
            return
        }
        #expect(m.transactionID == 77 && m.cid == BC.deviceCaps && m.buffer.count > 64)
    }

    @Test func malformedInputIsAnsweredWithFunctionError() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-4g-lte")
        let writes = h.raw([0x03, 0, 0, 0, 0x08, 0, 0, 0, 0x2A, 0, 0, 0]).writes
        let m = try MBIMMessage.decode(try #require(writes.first))
        #expect(m.type == .functionError && m.transactionID == 42 && m.code == MBIMProtocolError.lengthMismatch)
    }

    @Test func faultsShapeMBIMAnswers() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-fault-error-status")
        try h.open()
        #expect(try h.command(BC.registerState).code == MBIMStatus.failure)
        #expect(try h.command(BC.signalState).code == MBIMStatus.noDeviceSupport)
        #expect(try h.command(BC.packetService).code == MBIMStatus.success)
        var g = try MBIMHarness(scenarioFile: "mbim-fault-garbage")
        try g.open()
        let garbage = g.raw(MBIMMessage.command(tid: 5, service: MBIMServices.basicConnect, cid: BC.registerState).encoded()).writes
        #expect(garbage.count == 1 && garbage[0].count == 40)  // replaced, once
        #expect(try g.command(BC.registerState).code == MBIMStatus.success)
        var t = try MBIMHarness(scenarioFile: "mbim-fault-truncated")
        try t.open()
        let cut = t.raw(MBIMMessage.command(tid: 6, service: MBIMServices.basicConnect, cid: BC.packetService).encoded()).writes
        #expect(cut.count == 1 && cut[0].count == 30)
        var s = try MBIMHarness(scenarioFile: "mbim-fault-silent-signal")
        try s.open()
        #expect(s.raw(MBIMMessage.command(tid: 7, service: MBIMServices.basicConnect, cid: BC.signalState).encoded()).writes.isEmpty)
    }

    @Test func portVanishesOnTheTimeline() throws {
        var h = try MBIMHarness(scenarioFile: "mbim-fault-port-vanishes")
        #expect(h.engine.nextDeadline == 1500)
        h.now = 1500
        #expect(h.engine.advance(now: 1500).contains(.close))
        #expect(h.engine.nextDeadline == 3000)
        #expect(h.engine.advance(now: 3000).contains(.reopen))
    }

    @Test func replayOnlyAnswersFromTheCapture() throws {
        var h = MBIMHarness(replayOnly: try Repo.capture("mbim-register-state-umts-26006"))
        try h.open()
        let r = try h.command(BC.registerState)
        #expect(r.code == MBIMStatus.success && r.buffer.count == 60)
        #expect(try h.command(BC.signalState).code == MBIMStatus.noDeviceSupport)
    }
}
