// The reach-modem-sim process itself: its exit statuses, clean shutdown, the control socket, and a pty that is
// 8-bit clean in both directions and carries indications when the control socket changes the state.

import CQMI
import Foundation
import ModemSim
import ReachTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A bare client on the pty: raw bytes in and out, no library in between.
final class RawPort: @unchecked Sendable {
    let fd: Int32

    init(_ path: String) throws {
        fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
    }

    deinit { close(fd) }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// Bytes until `enough` says so or `timeout` seconds pass (waiting off the cooperative pool).
    func read(timeout: Double, until enough: @escaping @Sendable ([UInt8]) -> Bool) async throws -> [UInt8] {
        try await offPool { self.readBlocking(timeout: timeout, until: enough) }
    }

    func readBlocking(timeout: Double, until enough: ([UInt8]) -> Bool) -> [UInt8] {
        var got: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while !enough(got), deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = Glibc.read(fd, &buf, buf.count)
            if n > 0 { got += buf[0..<n] }
        }
        return got
    }

    /// The QMI messages in a byte stream.
    static func qmiMessages(_ bytes: [UInt8]) -> [QMIMessage] {
        var framer = QMUXFramer()
        return framer.feed(bytes).compactMap { if case let .frame(f) = $0 { return try? QMIMessage.decode(f) } else { return nil } }
    }

    /// Allocates a client of `service` with CTL Allocate CID; its client id.
    func allocate(_ service: UInt8, transactionID: UInt16 = 1) async throws -> UInt8 {
        let alloc = try await qmi(QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: transactionID,
                                             messageID: QMIMessageID.ctlAllocateCID, tlvs: [QMITLV(0x01, [service])]))
        guard let reply = alloc.first, reply.transactionID == transactionID, reply.tlv(0x01)?.first == service,
            let cid = reply.tlv(0x01)?.last
        else { throw TestFailure("allocating a client of service \(service): \(alloc.map(\.summary))") }
        return cid
    }

    /// Sends a request; returns what came back by the time a response arrived.
    func qmi(_ m: QMIMessage, timeout: Double = 3) async throws -> [QMIMessage] {
        write(m.encoded())
        let bytes = try await read(timeout: timeout) { RawPort.qmiMessages($0).contains { $0.kind == .response } }
        return RawPort.qmiMessages(bytes)
    }
}

@Suite(.enabled(if: Tools.simulator != nil || Tools.required, "needs a built reach-modem-sim (swift build --build-tests)"))
struct SimulatorProcessTests {
    func simulator(_ args: [String]) async throws -> RunResult {
        guard let sim = Tools.simulator else { throw TestFailure("reach-modem-sim is not built") }
        return try await TestSupport.run([sim] + args, timeout: 5)
    }

    @Test(arguments: [
        (["--scenario"], Int32(64), "--scenario needs a value"),
        (["--frobnicate"], 64, "unknown argument '--frobnicate'"),
        ([], 64, "--scenario or --replay is required"),
        (["--scenario", "/nonexistent/scenario.json"], 66, "cannot read /nonexistent/scenario.json"),
        (["--replay", "/nonexistent/capture.json"], 66, "cannot read"),
    ])
    func usageErrorsExitWithTheirStatus(args: [String], status: Int32, message: String) async throws {
        let r = try await simulator(args)
        #expect(r.status == status && r.stderr.contains(message), "\(r.status) \(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func aBadScenarioExits65NamingTheKeyPath() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reach-sim-bad-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("bad.json")
        let text = try Repo.text(Repo.scenarios.appendingPathComponent("qmi-4g-lte.json"))
            .replacingOccurrences(of: "\"rsrp_dbm\": -95", with: "\"rsrp_dbm\": \"-95\"")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let r = try await simulator(["--scenario", file.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("scenario.state.signal.rsrp_dbm: expected a number, found a string"), "\(r.stderr)")
        let mixed = try await simulator(["--scenario", Repo.scenarios.appendingPathComponent("qmi-4g-lte.json").path,
                                   "--replay", Repo.captures.appendingPathComponent("mbim-register-state-umts-26006.json").path])
        #expect(mixed.status == 65 && mixed.stderr.contains("the capture is mbim, the scenario qmi"))
    }

    @Test func everyShippedFileChecksAndHelpExplains() async throws {
        for name in Repo.files(Repo.scenarios) {
            let r = try await simulator(["--check", "--scenario", Repo.scenarios.appendingPathComponent(name + ".json").path])
            #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        for name in Repo.files(Repo.captures) {
            let r = try await simulator(["--check", "--replay", Repo.captures.appendingPathComponent(name + ".json").path])
            #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        let help = try await simulator(["--help"])
        #expect(help.status == 0 && help.stdout.contains("--control PATH") && help.stdout.contains("Exit status"))
    }

    @Test func sigtermExitsZeroAndCleansUp() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        let control = try #require(sim.controlPath)
        #expect(FileManager.default.fileExists(atPath: control))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: sim.link)) == sim.pty)
        let link = sim.link
        #expect(sim.stop() == 0)
        // The simulator removed them itself (its directory stays until the handle is released).
        #expect(!FileManager.default.fileExists(atPath: link) && !FileManager.default.fileExists(atPath: control))
    }

    @Test func thePtyIsEightBitCleanBothWays() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        let port = try RawPort(sim.pty)
        // CR, LF, XON, XOFF, ^C, ^D and 0xFF in the request and in its echo: a cooked tty would eat or change them.
        let nasty: [UInt8] = [0x0D, 0x0A, 0x11, 0x13, 0x03, 0x04, 0xFF, 0x7F]
        let r = try await port.qmi(QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: 0x0D,
                                        messageID: QMIMessageID.ctlInternalProxyOpen, tlvs: [QMITLV(0x01, nasty)]))
        let reply = try #require(r.first)
        #expect(reply.transactionID == 0x0D && reply.result?.status == 0)
        let alloc = try await port.qmi(QMIMessage(service: QMIService.ctl, clientID: 0, kind: .request, transactionID: 0x11,
                                            messageID: QMIMessageID.ctlAllocateCID, tlvs: [QMITLV(0x01, [QMIService.nas])]))
        #expect(alloc.first?.transactionID == 0x11 && alloc.first?.tlv(0x01)?.first == QMIService.nas)
        #expect(sim.log.contains("0d 0a 11 13 03 04 ff 7f"))
    }

    @Test func controlSocketDrivesQMIIndications() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        let port = try RawPort(sim.pty)
        let cid = try await port.allocate(QMIService.nas)
        let reg = try await port.qmi(QMIMessage(service: QMIService.nas, clientID: cid, kind: .request, transactionID: 2,
                                          messageID: QMIMessageID.nasRegisterIndications, tlvs: [QMITLV(0x18, [1]), QMITLV(0x19, [1])]))
        #expect(reg.first?.result?.status == 0)
        let reply = try await sim.control(#"{"set":{"access_technologies":["lte","5gnr"],"signal":{"rssi_dbm":-60,"rsrp_dbm":-90,"rsrq_db":-9,"sinr_db":15,"nr":{"rsrp_dbm":-80,"rsrq_db":-10,"sinr_db":22}}}}"#)
        #expect(reply == #"{"ok":true}"#)
        let bytes = try await port.read(timeout: 3) { RawPort.qmiMessages($0).count >= 2 }
        let indications = RawPort.qmiMessages(bytes)
        #expect(indications.map(\.messageID) == [QMIMessageID.nasSystemInfoIndication, QMIMessageID.nasSignalInfoIndication])
        #expect(indications.allSatisfy { $0.kind == .indication && $0.clientID == cid })
        let text = try libqmiPrintable(try #require(indications.first).encoded()).get()
        #expect(text.contains("EUTRA with NR5G availability") && text.contains("translated = yes"), "\(text)")
        let bad = try await sim.control(#"{"set":{"registration":"flying"}}"#)
        #expect(bad.contains(#""ok":false"#) && bad.contains("control.set.registration"))
        let stats = try await sim.control(#"{"query":"stats"}"#)
        #expect(stats.contains(#""nas:register_indications":1"#) && stats.contains(#""indications":2"#), "\(stats)")
    }

    @Test func controlSocketDrivesMBIMNotifications() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-5g-nsa-mbimex3")
        defer { sim.stop() }
        let port = try RawPort(sim.pty)
        port.write(MBIMMessage(type: .open, transactionID: 1, code: 4096).encoded())
        // One whole MBIM message: at least a header, then as long as its MessageLength says.
        let whole: @Sendable ([UInt8]) -> Bool = { $0.count >= 12 && $0.count >= u32($0, 4) }
        let opened = try await port.read(timeout: 3, until: whole)
        #expect(try MBIMMessage.decode(opened).type == .openDone)
        _ = try await sim.control(#"{"set":{"signal":{"rssi_dbm":-75,"rsrp_dbm":-104,"rsrq_db":-13,"sinr_db":3}}}"#)
        let note = try MBIMMessage.decode(try await port.read(timeout: 3, until: whole))
        #expect(note.type == .indicateStatus && note.cid == MBIMServices.BasicConnect.signalState)
        var r = MBIMBufferReader(note.buffer)
        #expect(try r.u32("rssi") == 19)  // (-75 + 113) / 2
    }
}
