// The simulator's data sessions on an injected clock: per-client WDS state (IP family, bound mux id), indications
// only to the clients whose answer changed, MBIM Connect per session id, quiet steps, and the scenario keys.

import ModemSim
import ReachCore
import Testing

@Suite struct DataSessionSimTests {
    typealias WDS = (status: UInt16, bind: UInt16, family: UInt16, mux: UInt16)
    static let wds: WDS = (0x0022, 0x0089, 0x004D, 0x00A2)

    static func qmi(_ sessions: String) throws -> Scenario {
        try ScenarioParser.parse("""
            {"protocol":"qmi","sim":"ready","state":{"registration":"home","access_technologies":["lte"],
             "operator":{"mcc":"262","mnc":"01","name":"Telekom.de"},"packet_service":"attached",
             "data_sessions":\(sessions)}}
            """)
    }

    static func mbim(_ sessions: String, mbimex: String = "1.0") throws -> Scenario {
        try ScenarioParser.parse("""
            {"protocol":"mbim","mbimex":"\(mbimex)","sim":"ready","state":{"registration":"home",
             "access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01","name":"Telekom.de"},
             "packet_service":"attached","data_sessions":\(sessions)}}
            """)
    }

    static func status(_ h: inout QMIHarness, _ cid: UInt8) throws -> UInt8? {
        let r = try h.request(QMIService.wds, cid: cid, Self.wds.status)
        #expect(r.result?.status == 0, "\(r.summary)")
        return r.tlv(0x01)?.first
    }

    /// A fresh client sits on mux 0 and IPv4 (Qualcomm's default): it reads disconnected on a modem whose only
    /// session is IPv6 on mux 1; Set IP Family 6 is not enough; Bind Mux Data Port 1 first, then it is connected.
    @Test func aClientSeesOnlyItsChannelAndFamily() throws {
        var h = QMIHarness(try Self.qmi(#"[{"mux_id":1,"ip_types":["ipv6"],"state":"connected"}]"#))
        let fresh = try h.allocate(QMIService.wds)
        #expect(try Self.status(&h, fresh) == 1)
        let v6 = try h.allocate(QMIService.wds)
        #expect(try h.request(QMIService.wds, cid: v6, Self.wds.family, [QMITLV(0x01, [6])]).result?.status == 0)
        #expect(try Self.status(&h, v6) == 1)
        // A bind that is not the client's first message is refused: the channel is fixed by then.
        let late = try h.request(QMIService.wds, cid: v6, Self.wds.mux, [QMITLV(0x11, [1])])
        #expect(late.result?.error == QMIError.code("INVALID_OPERATION"))
        let bound = try h.allocate(QMIService.wds)
        let bind = try h.request(QMIService.wds, cid: bound, Self.wds.mux, [
            QMITLV(0x10, [2, 0, 0, 0, 4, 0, 0, 0]), QMITLV(0x11, [1]), QMITLV(0x13, [1, 0, 0, 0]),
        ])
        #expect(bind.result?.status == 0)
        #expect(try Self.status(&h, bound) == 1)  // bound, but still IPv4
        #expect(try h.request(QMIService.wds, cid: bound, Self.wds.family, [QMITLV(0x01, [6])]).result?.status == 0)
        #expect(try Self.status(&h, bound) == 2)
        // Bind Data Port (BAM-DMUX): SIO port A2 MUX RMNET1 is channel 1.
        let sio = try h.allocate(QMIService.wds)
        #expect(try h.request(QMIService.wds, cid: sio, Self.wds.bind, [QMITLV(0x01, [0x05, 0x0E])]).result?.status == 0)
        #expect(try h.request(QMIService.wds, cid: sio, Self.wds.family, [QMITLV(0x01, [6])]).result?.status == 0)
        #expect(try Self.status(&h, sio) == 2)
        // Bad arguments are named errors, never a crash.
        let other = try h.allocate(QMIService.wds)
        #expect(try h.request(QMIService.wds, cid: other, Self.wds.family, [QMITLV(0x01, [5])]).result?.error
            == QMIError.code("INVALID_IP_FAMILY_PREFERENCE"))
        let noMux = try h.allocate(QMIService.wds)
        #expect(try h.request(QMIService.wds, cid: noMux, Self.wds.mux).result?.error == QMIError.missingArgument)
    }

    /// The indication goes to the clients whose own answer changed, with the two-byte status TLV and the family.
    @Test func indicationsGoOnlyToClientsWhoseAnswerChanged() throws {
        var h = QMIHarness(try Self.qmi(#"[{"ip_types":["ipv4","ipv6"],"state":"connected"}]"#))
        let v4 = try h.allocate(QMIService.wds)
        #expect(try Self.status(&h, v4) == 2)
        let v6 = try h.allocate(QMIService.wds)
        _ = try h.request(QMIService.wds, cid: v6, Self.wds.family, [QMITLV(0x01, [6])])
        let mux1 = try h.allocate(QMIService.wds)
        _ = try h.request(QMIService.wds, cid: mux1, Self.wds.mux, [QMITLV(0x11, [1])])
        #expect(try Self.status(&h, mux1) == 1)

        // IPv6 drops: only the IPv6 client hears of it.
        var (reply, out) = try h.control(#"{"set":{"data_sessions":[{"ip_types":["ipv4"],"state":"connected"}]}}"#)
        #expect(reply.contains("true"))
        #expect(out.map(\.clientID) == [v6])
        let ind = try #require(out.first)
        #expect(ind.kind == .indication && ind.service == QMIService.wds && ind.messageID == 0x0022)
        #expect(ind.tlv(0x01) == [1, 0] && ind.tlv(0x12) == [6])

        // Quiet: the state changes, nobody is told; the next query says so.
        (reply, out) = try h.control(#"{"set":{"data_sessions":[]},"quiet":true}"#)
        #expect(reply.contains("true") && out.isEmpty)
        #expect(try Self.status(&h, v4) == 1)
        // The default session again (registered and attached: connected): v4 and v6 hear of it, mux 1 does not.
        (_, out) = try h.control(#"{"set":{"data_sessions":null}}"#)
        #expect(Set(out.map(\.clientID)) == [v4, v6])
        #expect(out.allSatisfy { $0.tlv(0x01) == [2, 0] })
        // A deregistration drops the default session: indications on WDS as well as NAS.
        (_, out) = try h.control(#"{"set":{"registration":"searching","access_technologies":[],"packet_service":"detached"}}"#)
        #expect(Set(out.filter { $0.service == QMIService.wds }.map(\.clientID)) == [v4, v6])
        // A released client hears nothing and is gone.
        _ = try h.request(QMIService.ctl, cid: 0, QID.ctlReleaseCID, [QMITLV(0x01, [QMIService.wds, v4])])
        (_, out) = try h.control(#"{"indicate":true}"#)
        #expect(!out.filter { $0.service == QMIService.wds }.map(\.clientID).contains(v4))
        #expect(try h.request(QMIService.wds, cid: v4, Self.wds.status).result?.error == QMIError.invalidClientID)
    }

    /// libqmi's own parser names the WDS answer and the indication and reads their TLVs.
    @Test func libqmiReadsTheWDSMessages() throws {
        var h = QMIHarness(try Self.qmi(#"[{"ip_types":["ipv6"],"state":"connected"}]"#))
        let c = try h.allocate(QMIService.wds)
        _ = try h.request(QMIService.wds, cid: c, Self.wds.family, [QMITLV(0x01, [6])])
        let answer = try libqmiPrintable(try h.request(QMIService.wds, cid: c, Self.wds.status).encoded()).get()
        #expect(answer.contains("\"Get Packet Service Status\"") && answer.contains("connected"), "\(answer)")
        let ind = try #require(try h.control(#"{"set":{"data_sessions":[]}}"#).messages.first)
        let text = try libqmiPrintable(ind.encoded()).get()
        #expect(text.contains("\"indication\"") && text.contains("disconnected") && text.contains("ipv6"), "\(text)")
    }

    /// Start and Stop Network as ModemManager's QMI bearer sends them, on a modem whose session starts down: each
    /// row is (the client's family, its mux id, whether the Start carries an IP family TLV).
    @Test(arguments: [(UInt8(4), UInt8(0), false), (4, 0, true), (6, 0, true), (4, 1, false), (6, 2, true)])
    func startAndStopNetwork(family: UInt8, mux: UInt8, familyTLV: Bool) throws {
        typealias ID = (start: UInt16, stop: UInt16, settings: UInt16, events: UInt16, register: UInt16)
        let id: ID = (0x0020, 0x0021, 0x002D, 0x0001, 0x0003)
        var h = QMIHarness(try Self.qmi(#"[{"mux_id":\#(mux),"state":"disconnected"}]"#))
        let c = try h.allocate(QMIService.wds)
        if mux != 0 {
            #expect(try h.request(QMIService.wds, cid: c, Self.wds.mux, [QMITLV(0x11, [mux])]).result?.status == 0)
        }
        if !familyTLV {
            #expect(try h.request(QMIService.wds, cid: c, Self.wds.family, [QMITLV(0x01, [family])]).result?.status == 0)
        }
        // A watcher on the same channel and family, as reach beside ModemManager.
        let watcher = try h.allocate(QMIService.wds)
        if mux != 0 { _ = try h.request(QMIService.wds, cid: watcher, Self.wds.mux, [QMITLV(0x11, [mux])]) }
        _ = try h.request(QMIService.wds, cid: watcher, Self.wds.family, [QMITLV(0x01, [family])])
        #expect(try Self.status(&h, watcher) == 1)
        #expect(try h.request(QMIService.wds, cid: c, id.events, [QMITLV(0x17, [1])]).result?.status == 0)
        #expect(try h.request(QMIService.wds, cid: c, id.register, [QMITLV(0x12, [1])]).result?.status == 0)
        #expect(try h.request(QMIService.wds, cid: c, id.settings).result?.error == QMIError.code("OUT_OF_CALL"))

        var tlvs = [QMITLV(0x14, Array("internet".utf8)), QMITLV(0x16, [0])]
        if familyTLV { tlvs.append(QMITLV(0x19, [family])) }
        let out = try h.send(QMIService.wds, cid: c, id.start, tlvs)
        let start = try #require(out.first)
        #expect(start.kind == .response && start.result?.status == 0, "\(start.summary)")
        let handle = try #require(start.tlv(0x01))
        #expect(handle.count == 4 && handle != [0, 0, 0, 0] && handle != [0xFF, 0xFF, 0xFF, 0xFF])
        // After the answer, both clients hear the session come up on their channel and family.
        let up = out.dropFirst()
        #expect(Set(up.map(\.clientID)) == [c, watcher])
        #expect(up.allSatisfy { $0.kind == .indication && $0.tlv(0x01) == [2, 0] && $0.tlv(0x12) == [family] })
        #expect(try Self.status(&h, watcher) == 2)
        let state = try h.control(#"{"query":"state"}"#).reply
        #expect(state.contains(#""mux_id":\#(mux)"#) && state.contains(#""connected""#), "\(state)")

        // A second start: NO_EFFECT, which ModemManager takes as connected.
        #expect(try h.request(QMIService.wds, cid: c, id.start, tlvs).result?.error == QMIError.code("NO_EFFECT"))
        let settings = try h.request(QMIService.wds, cid: c, id.settings, [QMITLV(0x10, [0x00, 0x23, 0x00, 0x00])])
        #expect(settings.result?.status == 0)
        #expect(settings.tlv(0x2B) == [family])
        #expect(settings.tlv(0x29) == [0xDC, 0x05, 0, 0])
        if family == 4 {
            #expect(settings.tlv(0x1E) == [2 + mux, 2, 0, 192])
            #expect(settings.tlv(0x20) == [1, 2, 0, 192] && settings.tlv(0x21) == [0, 255, 255, 255])
            #expect(settings.tlv(0x25) == nil)
        } else {
            #expect(settings.tlv(0x25)?.suffix(2) == [2 + mux, 64] && settings.tlv(0x25)?.prefix(2) == [0x20, 0x01])
            #expect(settings.tlv(0x1E) == nil)
        }

        // Stop: a handle that is not the client's is refused; its own (or the global one) brings the session down.
        #expect(try h.request(QMIService.wds, cid: c, id.stop).result?.error == QMIError.missingArgument)
        #expect(try h.request(QMIService.wds, cid: c, id.stop, [QMITLV(0x01, [1, 2, 3, 4])]).result?.error
            == QMIError.code("INVALID_HANDLE"))
        let down = try h.send(QMIService.wds, cid: c, id.stop, [QMITLV(0x01, handle)])
        #expect(down.first?.result?.status == 0)
        #expect(Set(down.dropFirst().map(\.clientID)) == [c, watcher])
        #expect(down.dropFirst().allSatisfy { $0.tlv(0x01) == [1, 0] })
        #expect(try Self.status(&h, watcher) == 1)
        #expect(try h.request(QMIService.wds, cid: c, id.stop, [QMITLV(0x01, handle)]).result?.error
            == QMIError.code("INVALID_HANDLE"))
        #expect(try h.request(QMIService.wds, cid: c, id.stop, [QMITLV(0x01, [0xFF, 0xFF, 0xFF, 0xFF])]).result?.error
            == QMIError.code("NO_EFFECT"))
    }

    /// Off the network a start fails with the call end reason; a bad family is named; an error fault in the scenario
    /// (a network that rejects the call) answers its error and leaves the session down.
    @Test func startNetworkFailures() throws {
        var searching = QMIHarness(try ScenarioParser.parse("""
            {"protocol":"qmi","sim":"ready","state":{"registration":"searching"}}
            """))
        let c = try searching.allocate(QMIService.wds)
        let failed = try searching.request(QMIService.wds, cid: c, 0x0020)
        #expect(failed.result?.error == QMIError.code("CALL_FAILED"))
        #expect(failed.tlv(0x10) == [3, 0])
        #expect(try searching.request(QMIService.wds, cid: c, 0x0020, [QMITLV(0x19, [5])]).result?.error
            == QMIError.code("INVALID_IP_FAMILY_PREFERENCE"))
        #expect(try searching.request(QMIService.wds, cid: c, 0x0020, [QMITLV(0x14, [0xFF, 0xFE])]).result?.error
            == QMIError.invalidArgument)

        var refusing = QMIHarness(try ScenarioParser.parse("""
            {"protocol":"qmi","sim":"ready","state":{"registration":"home","access_technologies":["lte"],
             "operator":{"mcc":"262","mnc":"01"},"packet_service":"attached","data_sessions":[{"state":"disconnected"}]},
             "faults":[{"error":{"messages":["wds:start_network"],"status":"CALL_FAILED"}}]}
            """))
        let r = try refusing.allocate(QMIService.wds)
        #expect(try refusing.request(QMIService.wds, cid: r, 0x0020).result?.error == QMIError.code("CALL_FAILED"))
        #expect(try Self.status(&refusing, r) == 1)
    }

    /// Firmware without WDS, and firmware that never announces the session.
    @Test func wdsOptions() throws {
        var none = QMIHarness(try ScenarioParser.parse("""
            {"protocol":"qmi","qmi":{"wds":false},"state":{"registration":"searching"}}
            """))
        let r = try none.request(QMIService.ctl, cid: 0, QID.ctlAllocateCID, [QMITLV(0x01, [QMIService.wds])])
        #expect(r.result?.error == QMIError.invalidServiceType)
        var silent = QMIHarness(try ScenarioParser.parse("""
            {"protocol":"qmi","qmi":{"wds_indications":false},"sim":"ready","state":{"registration":"home",
             "access_technologies":["lte"],"operator":{"mcc":"262","mnc":"01"},"packet_service":"attached"}}
            """))
        let c = try silent.allocate(QMIService.wds)
        #expect(try Self.status(&silent, c) == 2)
        let (_, out) = try silent.control(#"{"set":{"data_sessions":[{"state":"disconnected"}]}}"#)
        #expect(out.isEmpty)
        #expect(try Self.status(&silent, c) == 1)
    }

    /// Timeline: a drop at t with an indication, a return at t2 without one.
    @Test func timelineDropAndQuietReturn() throws {
        var h = QMIHarness(try ScenarioParser.parse("""
            {"protocol":"qmi","sim":"ready","state":{"registration":"home","access_technologies":["lte"],
             "operator":{"mcc":"262","mnc":"01"},"packet_service":"attached"},
             "timeline":[{"at_ms":1000,"set":{"data_sessions":[{"state":"disconnected"}]}},
                         {"at_ms":2000,"set":{"data_sessions":[{"state":"connected"}]},"quiet":true}]}
            """))
        let c = try h.allocate(QMIService.wds)
        #expect(try Self.status(&h, c) == 2)
        let drop = try h.advance(to: 1000).writes.map { try QMIMessage.decode($0) }
        #expect(drop.map(\.clientID) == [c] && drop.first?.tlv(0x01) == [1, 0])
        #expect(try h.advance(to: 2000).writes.isEmpty)
        #expect(try Self.status(&h, c) == 2)
    }

    /// MBIM Connect is device-global per session id; notifications say each change once; MBIMEx 3.0 adds the
    /// media preference and access string.
    @Test func mbimConnectQueryAndNotifications() throws {
        var h = MBIMHarness(try Self.mbim(#"[{"session_id":0,"state":"connected"},{"session_id":1,"ip_types":["ipv6"],"state":"disconnected"}]"#))
        try h.open()
        for (session, activation, ip) in [(UInt32(0), UInt32(1), UInt32(3)), (1, 3, 2), (7, 3, 0)] {
            let r = try h.command(MBIMServices.BasicConnect.connect, connectQuery(session))
            #expect(r.code == MBIMStatus.success)
            var reader = MBIMBufferReader(r.buffer)
            #expect(try reader.u32("SessionId") == session)
            #expect(try reader.u32("ActivationState") == activation)
            #expect(try reader.u32("VoiceCallState") == 0)
            #expect(try reader.u32("IpType") == ip)
            #expect(r.buffer.count == 36)
        }
        // A set is not simulated; a short query is a parameter error.
        #expect(try h.command(MBIMServices.BasicConnect.connect, set: true, connectQuery(0)).code
            == MBIMStatus.invalidDeviceServiceOperation)
        #expect(try h.command(MBIMServices.BasicConnect.connect, [1, 0]).code == MBIMStatus.invalidParameters)

        var (_, out) = try h.control(#"{"set":{"data_sessions":[{"session_id":0,"state":"disconnected"},{"session_id":1,"ip_types":["ipv6"],"state":"connected"}]}}"#)
        let connects = out.filter { $0.cid == MBIMServices.BasicConnect.connect }
        #expect(connects.count == 2)
        var first = MBIMBufferReader(connects[0].buffer)
        #expect(try first.u32("SessionId") == 0 && first.u32("ActivationState") == 3)
        (_, out) = try h.control(#"{"set":{"data_sessions":[{"session_id":0,"state":"disconnected"},{"session_id":1,"ip_types":["ipv6"],"state":"connected"}]},"quiet":true}"#)
        #expect(out.isEmpty)

        var v3 = MBIMHarness(try Self.mbim(#"[{"state":"connected"}]"#, mbimex: "3.0"))
        try v3.open()
        #expect(try v3.negotiate(host: 0x0300) == 0x0300)
        let r = try v3.command(MBIMServices.BasicConnect.connect, connectQuery(0))
        // 36 bytes, MediaPreference, an AccessString TLV ("internet": 16 bytes of UTF-16LE after an 8-byte header).
        #expect(r.buffer.count == 36 + 4 + 8 + 16)
    }

    /// Scenario keys are checked and named.
    @Test(arguments: [
        (#"{"protocol":"qmi","state":{"registration":"idle","data_sessions":[{"session_id":0,"state":"connected"}]}}"#,
         "scenario.state.data_sessions[0].session_id: QMI names the channel \"mux_id\""),
        (#"{"protocol":"mbim","state":{"registration":"idle","data_sessions":[{"state":"suspended"}]}}"#,
         "scenario.state.data_sessions[0].state: \"suspended\" exists only in QMI"),
        (#"{"protocol":"qmi","state":{"registration":"idle","data_sessions":[{"state":"up"}]}}"#,
         "scenario.state.data_sessions[0].state: \"up\" is not one of"),
        (#"{"protocol":"qmi","state":{"registration":"idle","data_sessions":[{"state":"connected"},{"mux_id":0,"state":"connected"}]}}"#,
         "scenario.state.data_sessions[1].mux_id: channel 0 has a session already"),
        (#"{"protocol":"qmi","state":{"registration":"idle","data_sessions":[{"ip_types":[],"state":"connected"}]}}"#,
         "scenario.state.data_sessions[0].ip_types: expected at least one of ipv4, ipv6"),
        (#"{"protocol":"qmi","state":{"registration":"idle","data_sessions":[{"mux_id":256,"state":"connected"}]}}"#,
         "scenario.state.data_sessions[0].mux_id: 256 is out of range"),
        (#"{"protocol":"qmi","state":{"registration":"idle"},"timeline":[{"at_ms":1,"indicate":true,"quiet":true}]}"#,
         "scenario.timeline[0].quiet: applies to a \"set\" without \"indicate\""),
        (#"{"protocol":"qmi","qmi":{"wds":"no"},"state":{"registration":"idle"}}"#, "scenario.qmi.wds: expected true or false"),
        (#"{"protocol":"mbim","mbim":{"connect_notifications":1},"state":{"registration":"idle"}}"#,
         "scenario.mbim.connect_notifications: expected true or false"),
    ])
    func badKeysAreNamed(text: String, message: String) {
        do {
            _ = try ScenarioParser.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error)")
        }
    }
}
