import Foundation
import GatewayReach
import ReachAgent
import ReachTestSupport
import Testing

@Suite struct DiagTests {
    static func snapshot(route: RouteLookup?, modems: [ModemState] = [], wifi: [WiFiLink] = []) -> Snapshot {
        var s = Snapshot(time: Timestamp(seconds: 1_795_305_600), target: .defaultRoute)
        s.route = route
        s.wwan = modems
        s.wifi = wifi
        s.derive()
        return s
    }

    static func modem(sim: SIMState = .ready, registration: RegistrationState = .home, rsrp: Double = -95,
                      attached: PacketServiceState? = .attached, error: String? = nil) -> ModemState {
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        m.interface = "wwan0"
        m.sim = sim
        m.registration = registration
        m.accessTechnologies = [.lte]
        m.signal = SignalMeasurement(rsrp: rsrp)
        m.packetService = attached
        m.error = error
        return m
    }

    static func facts(_ s: Snapshot, neighbour: NeighbourState? = NeighbourState(nud: 0x02), dns: [String] = ["192.0.2.53"]) -> DiagFacts {
        var f = DiagFacts(snapshot: s)
        f.interfaces = ["wwan0": InterfaceFacts(up: true, running: true, addresses: ["100.64.0.2"])]
        f.gatewayNeighbour = .success(neighbour)
        f.dnsServers = dns
        f.dnsSources = ["/etc/resolv.conf"]
        return f
    }

    static func status(_ checks: [DiagCheck], _ id: String) -> CheckStatus? { checks.first { $0.id == id }?.status }

    /// Field situations an installer meets, with the check that must flag them and the verdict.
    @Test(arguments: [
        ("healthy LTE uplink", modem(), "modem[/dev/cdc-wdm0].radio", CheckStatus.ok, Verdict.ok),
        ("SIM PIN locked (standby modem)", modem(sim: .pinRequired), "modem[/dev/cdc-wdm0].sim", .fail, .degraded),
        ("no SIM", modem(sim: .absent), "modem[/dev/cdc-wdm0].sim", .fail, .degraded),
        ("registration denied", modem(registration: .denied), "modem[/dev/cdc-wdm0].registration", .fail, .degraded),
        ("roaming", modem(registration: .roaming), "modem[/dev/cdc-wdm0].registration", .warn, .degraded),
        ("one bar", modem(rsrp: -120), "modem[/dev/cdc-wdm0].radio", .warn, .degraded),  // ≥ -128, < -118 (android)
        ("not attached", modem(attached: .detached), "modem[/dev/cdc-wdm0].data", .fail, .degraded),
        ("modem times out", modem(error: "NAS Get System Info: timed out after 5 s"), "modem[/dev/cdc-wdm0].present", .fail, .degraded),
    ])
    func modemSituations(name: String, modem: ModemState, id: String, expected: CheckStatus, verdict: Verdict) {
        let s = Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [modem])
        let checks = DiagChecks.evaluate(Self.facts(s))
        #expect(Self.status(checks, id) == expected, "\(name): \(checks.map { "\($0.id)=\($0.status)" })")
        #expect(DiagChecks.verdict(checks) == verdict, "\(name)")
        for c in checks where c.status == .fail || c.status == .warn { #expect(c.hint != nil, "\(c.id) has no hint") }
    }

    /// The agent check warns of a refusing or stale agent by the kind of trouble AgentClient found, never by words in
    /// the detail: a detail that mentions "stale" or "TooManyClients" without the trouble is no warning.
    @Test(arguments: [
        (Readings.AgentTrouble?.some(.tooManyClients), "the agent refused: too many connections", CheckStatus.warn),
        (.stale, "the agent's state is 400 s old", .warn),
        (nil, "no agent answers on /run/reach/api: No such file or directory", .skip),
        (nil, "the agent on /run/stale/api answered TooManyClients", .skip),
    ])
    func agentCheckGoesByTheTrouble(trouble: Readings.AgentTrouble?, detail: String, status: CheckStatus) {
        let check = Diagnostics.agentCheck(Readings(origin: .direct, detail: detail, trouble: trouble), nil)
        #expect(check.status == status)
        #expect((check.hint != nil) == (status == .warn))
    }

    @Test func deniedNamesTheRejectCause() {
        var m = Self.modem(registration: .denied)
        m.rejectCause = 3
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: nil, modems: [m])))
        #expect(checks.first { $0.id.hasSuffix(".registration") }?.detail.contains("reject cause 3") == true)
    }

    /// Issue 31: while registration is denied every modem check is still listed (the radio one as skip, with why),
    /// and data is not "attached" when the modem does not say so.
    @Test(arguments: [PacketServiceState?.none, .unknown, .detached, .attached])
    func deniedListsEveryCheck(packetService: PacketServiceState?) {
        var m = Self.modem(registration: .denied, attached: packetService)
        m.rejectCause = 15
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [m])))
        let id = "modem[/dev/cdc-wdm0]"
        let healthy = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [Self.modem()])))
        #expect(checks.map(\.id) == healthy.map(\.id), "the same checks as on a healthy modem")
        let radio = checks.first { $0.id == id + ".radio" }
        #expect(radio?.status == .skip && radio?.detail.contains("not registered (denied)") == true, "\(String(describing: radio))")
        let data = checks.first { $0.id == id + ".data" }
        if packetService == .attached {
            #expect(data?.status == .ok && data?.detail.contains("packet service attached") == true)
        } else {
            #expect(data?.status == .fail, "\(String(describing: data))")
            #expect(data?.detail.contains("attached") == false || data?.detail.contains("not attached") == true)
        }
        let registration = checks.first { $0.id == id + ".registration" }
        #expect(registration?.detail.contains("reject cause 15 (no suitable cells in location/tracking area)") == true)
        #expect(registration?.hint == RejectCause.hint(15))
    }

    /// Modems on and none found: the skip says where discovery looked, as `reach status` does.
    @Test func noModemSaysWhereItLooked() {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet))))
        let modem = checks.first { $0.id == "modem" }
        #expect(modem?.status == .skip)
        #expect(modem?.detail == "no modem found (looked at /sys/class/usbmisc/cdc-wdm*, /sys/class/wwan)", "\(String(describing: modem))")
    }

    /// A modem that never reports packet service is not taken as attached, however well its interface looks.
    @Test func unreportedPacketServiceIsNoAttach() {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [Self.modem(attached: nil)])))
        let data = checks.first { $0.id == "modem[/dev/cdc-wdm0].data" }
        #expect(data?.status == .warn && data?.detail.contains("packet service not reported") == true, "\(String(describing: data))")
    }

    /// Every reject cause ModemManager names (MMNetworkError in ModemManager-enums.h, 2…113) has words and a hint
    /// of its own; the registration check gives that hint.
    @Test func everyRejectCauseHasWordsAndAHint() {
        let modemManager = [
            2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 25, 26, 27, 28, 29, 30, 31,
            32, 33, 34, 35, 38, 39, 40, 41, 42, 43, 44, 45, 46, 48, 49, 50, 51, 62, 65, 66, 67, 69, 71, 72, 73, 74, 75,
            76, 77, 90, 91, 92, 95, 96, 97, 98, 99, 100, 101, 111, 112, 113,
        ]
        for cause in modemManager {
            #expect(RejectCause.words(cause) != nil, "cause \(cause) has no words")
            #expect(RejectCause.hint(cause) != nil, "cause \(cause) has no hint")
            var m = Self.modem(registration: .denied)
            m.rejectCause = cause
            let check = DiagChecks.evaluate(Self.facts(Self.snapshot(route: nil, modems: [m]))).first { $0.id.hasSuffix(".registration") }
            #expect(check?.hint == RejectCause.hint(cause), "cause \(cause)")
        }
        // Cause 15 (the issue's) and a cause outside the list (the general advice).
        #expect(RejectCause.hint(15)?.contains("no cell of this area suits the SIM") == true)
        #expect(RejectCause.hint(1) == nil)
        var unknown = Self.modem(registration: .denied)
        unknown.rejectCause = 1
        let check = DiagChecks.evaluate(Self.facts(Self.snapshot(route: nil, modems: [unknown]))).first { $0.id.hasSuffix(".registration") }
        #expect(check?.hint?.contains("subscription is active") == true)
    }

    /// An idle uplink whose gateway has no neighbour entry yet is not a problem: skip, and the verdict stays OK.
    @Test func idleGatewayWithoutNeighbourEntryIsNoWarning() {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet)), neighbour: nil))
        #expect(Self.status(checks, "route.gateway") == .skip)
        #expect(DiagChecks.verdict(checks) == .ok, "\(checks.map { "\($0.id)=\($0.status)" })")
    }

    /// The PLMN as `reach status` writes it (262/01), and the SIM check without "SIM ready: ready".
    @Test func operatorAndSIMWording() {
        var m = Self.modem()
        m.operatorName = "Telekom.de"
        m.plmn = PLMN(mcc: "262", mnc: "01")
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [m])))
        #expect(checks.first { $0.id.hasSuffix(".registration") }?.detail == "home (Telekom.de 262/01)")
        let sim = checks.first { $0.id.hasSuffix(".sim") }
        #expect(sim.map { "\($0.title): \($0.detail)" } == "SIM: ready (unlocked)")
    }

    /// Colour only on a terminal, never with NO_COLOR set (to anything but "") or TERM=dumb; the words are the same.
    @Test(arguments: [
        (true, String?.none, String?("xterm-256color"), true), (true, "1", "xterm", false), (true, "", "xterm", true),
        (false, nil, "xterm", false), (true, nil, "dumb", false), (true, nil, nil, true),
    ])
    func colourDecision(terminal: Bool, noColor: String?, term: String?, expected: Bool) {
        #expect(DiagReport.colour(terminal: terminal, noColor: noColor, term: term) == expected)
    }

    @Test func colouredTextHasTheSameWords() {
        var m = Self.modem(registration: .roaming)
        m.operatorName = "Vodafone UK"
        let report = DiagReport(facts: Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet), modems: [m])), showIdentifiers: false)
        let plain = report.text()
        let coloured = report.text(colour: true)
        #expect(!plain.contains("\u{1B}"))
        #expect(coloured.contains("\u{1B}[32m[ ok ]\u{1B}[0m") && coloured.contains("\u{1B}[33m[warn]\u{1B}[0m"))
        #expect(coloured.contains("\u{1B}[1;33mverdict: REACHABLE WITH PROBLEMS"))
        var stripped = coloured
        for sgr in ["32", "33", "1;31", "2", "0", "1;32", "1;33"] { stripped = stripped.replacingOccurrences(of: "\u{1B}[\(sgr)m", with: "") }
        #expect(stripped == plain)
    }

    @Test func noRouteIsNotReachableAndExits1() {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: nil)))
        #expect(Self.status(checks, "route.default") == .fail)
        #expect(DiagChecks.verdict(checks) == .notReachable)
        #expect(DiagChecks.verdict(checks).exitCode == 1)
        #expect(DiagChecks.verdictLine(.notReachable, checks, Self.snapshot(route: nil)).hasPrefix("verdict: NOT REACHABLE"))
    }

    @Test(arguments: [
        (UInt16(0x02), CheckStatus.ok), (0x04, .ok), (0x80, .ok), (0x20, .fail), (0x01, .fail),
    ])
    func gatewayNeighbourStates(nud: UInt16, expected: CheckStatus) {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet)), neighbour: NeighbourState(nud: nud)))
        #expect(Self.status(checks, "route.gateway") == expected)
    }

    @Test func noDNSFails() {
        let checks = DiagChecks.evaluate(Self.facts(Self.snapshot(route: Routes.via("eth0", kind: .ethernet)), dns: []))
        #expect(Self.status(checks, "dns") == .fail)
        #expect(DiagChecks.verdict(checks) == .degraded)
    }

    @Test func bssidIsRedactedUnlessAsked() {
        var w = WiFiLink(interface: "wlan1", mode: .station, associated: true)
        w.bssid = "02:00:00:00:01:00"
        w.signalDBm = -50
        let f = Self.facts(Self.snapshot(route: Routes.via("wlan1", kind: .wifi), wifi: [w]))
        #expect(DiagChecks.evaluate(f).first { $0.id == "wifi[wlan1]" }?.detail.contains("02:00:00:xx:xx:xx") == true)
        #expect(DiagChecks.evaluate(f, showIdentifiers: true).first { $0.id == "wifi[wlan1]" }?.detail.contains("02:00:00:00:01:00") == true)
        var m = ModemState(device: "/dev/cdc-wdm0", protocol: .mbim)
        m.identifiers = ModemIdentifiers(imei: "356938035643809", imsi: "001010123456789")
        let json = Redact.json(Self.snapshot(route: nil, modems: [m], wifi: [w]).json(showIdentifiers: true)).serialized()
        #expect(!json.contains("356938035643809") && !json.contains("00:01:00"))
    }

    @Test(arguments: [
        ("nameserver 192.0.2.53\nnameserver 2001:db8::53 # v6\n# nameserver 10.0.0.1\noptions edns0\n", ["192.0.2.53", "2001:db8::53"]),
        ("search lan\n", []),
        ("nameserver\t198.51.100.1\n;comment\n", ["198.51.100.1"]),
    ])
    func resolvConf(text: String, servers: [String]) {
        #expect(ResolvConf.parse(text) == servers)
    }

    @Test func resolvedStubIsFollowedToItsUpstreams() throws {
        let dir = try makeTempDir("reach-dns")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "nameserver 127.0.0.53\noptions edns0 trust-ad\n".write(toFile: dir + "/resolv.conf", atomically: true, encoding: .utf8)
        try "nameserver 192.0.2.53\n".write(toFile: dir + "/resolved.conf", atomically: true, encoding: .utf8)
        let r = ResolvConf.servers(main: dir + "/resolv.conf", resolved: dir + "/resolved.conf")
        #expect(r.servers == ["127.0.0.53 (systemd-resolved)", "192.0.2.53"])
        #expect(r.sources.count == 2)
    }

    // MARK: Probe, on loopback only

    @Test func tcpProbeConnectsAndReportsRefusal() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &len) == 0 }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        let ok = await Probe.run(AgentConfig.Probe(kind: .tcp, host: "127.0.0.1", port: port, timeoutSeconds: 1))
        #expect(ok.ok, "\(ok.detail)")
        let closedPort = try freeLoopbackPort()
        let refused = await Probe.run(AgentConfig.Probe(kind: .tcp, host: "127.0.0.1", port: closedPort, timeoutSeconds: 1))
        #expect(!refused.ok)
        #expect(refused.detail.contains("refused"), "\(refused.detail)")
    }

    @Test func dnsProbeGetsAnAnswerFromALoopbackResponder() async throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        // A one-shot responder: the query back as a NOERROR response, changed by `edit` first.
        func respondOnce(_ edit: @escaping @Sendable (inout [UInt8]) -> Void) {
            Thread {
                var buf = [UInt8](repeating: 0, count: 512)
                var peer = sockaddr_storage()
                var plen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let n = withUnsafeMutablePointer(to: &peer) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buf, buf.count, 0, $0, &plen) }
                }
                guard n >= 12 + 13 else { return }
                buf[2] |= 0x80
                buf[3] = 0
                edit(&buf)
                _ = withUnsafePointer(to: &peer) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buf, n, 0, $0, plen) }
                }
            }.start()
        }
        respondOnce { _ in }
        let r = await Probe.run(AgentConfig.Probe(kind: .dns, host: "127.0.0.1", port: port, timeoutSeconds: 2, query: "example.net"))
        #expect(r.ok, "\(r.detail)")
        #expect(r.detail.contains("NOERROR"))
        // A reply with our id to another question (the last byte of the name changed) is not an answer: diag's probe
        // is validation's, which checks the question too (RFC 5452 §9.1).
        respondOnce { $0[12 + 11] ^= 0x01 }  // "example.net": the 't' of "net" becomes 'u'
        let other = await Probe.run(AgentConfig.Probe(kind: .dns, host: "127.0.0.1", port: port, timeoutSeconds: 0.5, query: "example.net"))
        #expect(!other.ok, "\(other.detail)")
        #expect(other.detail.contains("timed out"), "\(other.detail)")
        // Nobody answers: a timeout, reported as a failure.
        let silent = await Probe.run(AgentConfig.Probe(kind: .dns, host: "127.0.0.1", port: port, timeoutSeconds: 0.3))
        #expect(!silent.ok)
    }

    @Test func dnsMessageBytes() {
        let q = DNSMessage.query(id: 0x1234, name: "example.net")
        #expect(q.prefix(4) == [0x12, 0x34, 0x01, 0x00])
        // The name apart: Swift 6.0's type checker gives up on the whole chain in one expression.
        let name: [UInt8] = [7] + Array("example".utf8) + [3] + Array("net".utf8)
        #expect(Array(q[12...]) == name + [0, 0, 1, 0, 1])
        #expect(DNSMessage.query(id: 1, name: ".").suffix(5) == [0, 0, 2, 0, 1])
        #expect(DNSMessage.responseCode([0x12, 0x34, 0x81, 0x83] + [UInt8](repeating: 0, count: 8), id: 0x1234) == 3)
        #expect(DNSMessage.responseCode([0x12, 0x34, 0x01, 0x00] + [UInt8](repeating: 0, count: 8), id: 0x1234) == nil)
    }

    // MARK: Bundle

    @Test func bundleIsATarGzThatTarAndGzipRead() async throws {
        let entries = [
            TarGz.Entry(name: "d/a.txt", text: "hello\n"),
            TarGz.Entry(name: "d/big.jsonl", text: String(repeating: "{\"n\":1}\n", count: 20_000)),
        ]
        let bytes = TarGz.gzip(TarGz.tar(entries, mtime: 1_795_305_600), mtime: 1_795_305_600)
        let dir = try makeTempDir("reach-bundle")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        if case let .failure(e) = SupportBundle.write(bytes, to: dir + "/b.tar.gz") { Issue.record("\(e)") }
        #expect(try await TestSupport.run(["gzip", "-t", dir + "/b.tar.gz"]).status == 0)
        let list = try await TestSupport.run(["tar", "-tzf", dir + "/b.tar.gz"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.split(separator: "\n") == ["d/a.txt", "d/big.jsonl"])
        let big = try await TestSupport.run(["tar", "-xzOf", dir + "/b.tar.gz", "d/big.jsonl"])
        #expect(big.stdout.count == 160_000)
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)  // the standard check value
    }

    @Test(.needsRoot) func diagCommandInANamespaceWithAGatewayThatAnswers() async throws {
        let ns = try EndToEndTests.namespace()
        // The gateway 192.0.2.1 is veth1 moved into a second namespace of ours; a ping fills the neighbour table.
        let gw = try Namespace("gw")
        try ns.ip("link", "set", "veth1", "netns", gw.name)
        try gw.ip("addr", "add", "192.0.2.1/24", "dev", "veth1")
        try gw.ip("link", "set", "veth1", "up")
        // One UDP datagram makes the kernel resolve the gateway (ARP); the gateway's namespace answers.
        var neigh = ""
        for _ in 0..<100 where !neigh.contains("REACHABLE") {
            _ = try await ns.exec(["bash", "-c", "echo x > /dev/udp/192.0.2.1/9"])
            try await Task.sleep(for: .milliseconds(20))
            neigh = try ns.ip("neigh", "show", "192.0.2.1")
        }
        #expect(neigh.contains("REACHABLE"), "\(neigh)")
        let dir = try makeTempDir("reach-diag")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"modems":{"enabled":false},"wifi":{"enabled":false}}"#.write(toFile: dir + "/c.json", atomically: true, encoding: .utf8)
        let r = try await ns.exec(
            [TestPaths.reach, "diag", "--json", "--config", dir + "/c.json", "--bundle", dir + "/b.tgz"], timeout: 60)
        let j = try JSON.parse(r.stdout)
        let checks = j["checks"]?.arrayValue ?? []
        func st(_ id: String) -> String? { checks.first { $0["id"]?.stringValue == id }?["status"]?.stringValue }
        #expect(st("route.default") == "ok")
        #expect(st("route.gateway") == "ok", "\(r.stdout)")
        #expect([0, 2].contains(r.status))  // DNS depends on the host's resolv.conf
        #expect(try await TestSupport.run(["tar", "-tzf", dir + "/b.tgz"]).stdout.contains("versions.txt"))
        // No default route: verdict not reachable, exit 1, and the text ends in the verdict line.
        try ns.ip("route", "del", "default")
        let down = try await ns.exec([TestPaths.reach, "diag", "--config", dir + "/c.json"], timeout: 60)
        #expect(down.status == 1)
        #expect(down.stdout.split(separator: "\n").last?.hasPrefix("verdict: NOT REACHABLE") == true)
        #expect(down.stdout.contains("hint:"))
    }
}
