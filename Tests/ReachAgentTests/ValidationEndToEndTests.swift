import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// Validation in network namespaces made here: a gateway ("gw") with eth0 (metric 10) towards "isp1" and, in the
/// two-uplink lab, eth1 (metric 20) towards "isp2". The DNS responder (203.0.113.53) and the HTTP server
/// (203.0.113.80) run in isp1 on isp1's own loopback addresses; isp2 has no route to them, so only a probe that really
/// leaves by eth0 can reach them. IPv6 is off on every link so the interface counters hold only our packets (and ARP).
/// Nothing leaves the namespaces.
@Suite(.serialized) struct ValidationEndToEndTests {
    final class Lab: @unchecked Sendable {
        let gw: Namespace
        let isp1: Namespace
        let isp2: Namespace?
        /// The servers in isp1 (the test may stop and replace them) and a directory for the configuration and logs.
        var dns: ValidationServer?
        var http: ValidationServer?
        let dir: String

        /// The lab with a DNS responder answering probe.test with the HTTP server's address and an HTTP server, each
        /// as given (nil: none).
        static func start(
            twoUplinks: Bool = false, dns: ValidationServer.DNSMode? = .answer("203.0.113.80"),
            http: ValidationServer.HTTPMode? = .status(204)
        ) async throws -> Lab {
            let lab = try Lab(twoUplinks: twoUplinks)
            if let dns { lab.dns = try await ValidationServer.dns(in: lab.isp1, address: "203.0.113.53", dns) }
            if let http { lab.http = try await ValidationServer.http(in: lab.isp1, address: "203.0.113.80", http) }
            return lab
        }

        func close() async {
            await dns?.stop()
            await http?.stop()
            try? FileManager.default.removeItem(atPath: dir)
        }

        private init(twoUplinks: Bool) throws {
            dir = try makeTempDir("reach-validation")
            gw = try Namespace("vgw")
            isp1 = try Namespace("visp1")
            isp2 = twoUplinks ? try Namespace("visp2") : nil
            for ns in [gw, isp1] + (isp2.map { [$0] } ?? []) {
                try TestSupport.sh(["ip", "netns", "exec", ns.name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1",
                                    "net.ipv6.conf.all.disable_ipv6=1"])
            }
            var links = [("eth0", isp1, "up0", "192.0.2.2", "192.0.2.1")]
            if let isp2 { links.append(("eth1", isp2, "up1", "198.18.0.2", "198.18.0.1")) }
            for (dev, peer, peerDev, local, remote) in links {
                try gw.veth(dev, peer: peer, peerDev)
                try gw.ip("addr", "add", local + "/24", "dev", dev)
                try peer.ip("addr", "add", remote + "/24", "dev", peerDev)
                try peer.ip("link", "set", peerDev, "up")
                try gw.ip("link", "set", dev, "up")
            }
            try isp1.ip("addr", "add", "203.0.113.53/32", "dev", "lo")
            try isp1.ip("addr", "add", "203.0.113.80/32", "dev", "lo")
            try gw.ip("route", "add", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "10")
            if isp2 != nil { try gw.ip("route", "add", "default", "via", "198.18.0.1", "dev", "eth1", "metric", "20") }
        }

        deinit {
            gw.delete()
            isp1.delete()
            isp2?.delete()
        }

        /// IP bytes and packets isp1 received from the gateway so far: up0's counters, less 14 bytes of Ethernet header
        /// a frame.
        func fromGateway() throws -> (bytes: Int, packets: Int) {
            let r = try TestSupport.sh(["ip", "netns", "exec", isp1.name, "cat", "/sys/class/net/up0/statistics/rx_bytes",
                                        "/sys/class/net/up0/statistics/rx_packets"])
            let n = r.split(separator: "\n").compactMap { Int($0) }
            return (n[0] - 14 * n[1], n[1])
        }

        func bytesFromGateway() throws -> Int { try fromGateway().bytes }
    }

    static let dnsProbe = #"{"kind": "dns", "server": "203.0.113.53", "name": "probe.test"}"#
    static let httpByName = #"{"kind": "http", "url": "http://probe.test/generate_204"}"#

    static func config(_ probes: [String], extra: String = "", validation: String = "") -> String {
        """
        {"modems": {"enabled": false}, "wifi": {"enabled": false} \(extra),
         "validation": {"enabled": true, "timeout_seconds": 1 \(validation), "probes": [\(probes.joined(separator: ", "))]}}
        """
    }

    static func status(_ lab: Lab, _ config: String, dir: String) async throws -> JSON {
        try config.write(toFile: dir + "/reach.json", atomically: true, encoding: .utf8)
        let r = try await lab.gw.exec([TestPaths.reach, "status", "--validate", "--json", "--config", dir + "/reach.json"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")  // validation never changes the exit status
        return try JSON.parse(r.stdout)
    }

    static func uplink(_ j: JSON, _ name: String) -> JSON? {
        j["uplinks"]?.arrayValue?.first { $0["interface"] == .string(name) }
    }

    /// Two uplinks, one probe address only the first can reach: eth0 validated, eth1 failed, and the DNS server saw
    /// exactly one query per run: eth1's query left by eth1 (where it got nowhere), never by the primary's route. The
    /// `gateway` of each uplink is its own next hop.
    @Test(.needsRoot) func eachUplinksProbesLeaveByThatUplink() async throws {
        let lab = try await Lab.start(twoUplinks: true)
        defer { Task { await lab.close() } }
        let (dir, dns, http) = (lab.dir, lab.dns!, lab.http!)

        let j = try await Self.status(lab, Self.config([Self.dnsProbe, Self.httpByName]), dir: dir)
        let eth0 = try #require(Self.uplink(j, "eth0"))
        let eth1 = try #require(Self.uplink(j, "eth1"))
        #expect(eth0["validated"] == .bool(true))
        #expect(eth0["validation"]?["state"] == .string("validated"))
        #expect(eth1["reachable"] == .bool(true))  // the path exists…
        #expect(eth1["validated"] == .bool(false))  // …and carries nothing to these addresses
        #expect(eth1["usable"] == .bool(false))
        #expect(eth1["validation"]?["state"] == .string("failed"))
        let reason = eth1["validation"]?["reason"]?.stringValue ?? ""
        #expect(reason.hasPrefix("dns 203.0.113.53 "), "\(reason)")
        #expect(j["validated"] == .bool(true))  // the answer's route is eth0's
        #expect(j["usable"] == .bool(true))
        #expect(dns.received == 1, "\(dns.process.stdout?.text ?? "")")
        #expect(http.received == 1)

        // `gateway`: each uplink pings its own next hop; `reach diag` runs the same probes and names them.
        try Self.config([#"{"kind": "icmp", "address": "gateway"}"#]).write(toFile: dir + "/icmp.json", atomically: true, encoding: .utf8)
        let diag = try await lab.gw.exec([TestPaths.reach, "diag", "--config", dir + "/icmp.json"], timeout: 30)
        print("reach diag:\n\(diag.stdout)")
        #expect(diag.stdout.contains("[ ok ] Validation eth0: validated: icmp 192.0.2.1 echo reply in "), "\(diag.stdout)")
        #expect(diag.stdout.contains("[ ok ] Validation eth1: validated: icmp 198.18.0.1 echo reply in "), "\(diag.stdout)")
    }

    /// Android's HTTP probe outcomes through a real server: a redirect or a page instead of 204 is a captive portal;
    /// DNS answering while HTTP fails is partial connectivity; 204 validates.
    @Test(.needsRoot, arguments: [
        (ValidationServer.HTTPMode.status(302), "captive_portal", String?("http probe.test redirected (302) to http://portal.test/login")),
        (.status(200), "captive_portal", "http probe.test answered 200 with a 33-byte page instead of 204"),
        (.status(503), "partial", "http probe.test answered 503"),
        (.garbage, "partial", "http probe.test not an HTTP response"),
        (.status(204), "validated", nil),
    ])
    func httpOutcomes(mode: ValidationServer.HTTPMode, state: String, reason: String?) async throws {
        let lab = try await Lab.start(http: mode)
        defer { Task { await lab.close() } }
        let dir = lab.dir
        let j = try await Self.status(lab, Self.config([Self.dnsProbe, Self.httpByName]), dir: dir)
        #expect(j["reachable"] == .bool(true))
        #expect(j["validation"]?["state"] == .string(state), "\(j["validation"]?.serialized() ?? "")")
        #expect(j["validation"]?["reason"] == .optional(reason))
        #expect(j["validated"] == .bool(state == "validated"))
    }

    /// No HTTP server at all (nothing listens: the connection is refused) while DNS answers: partial.
    @Test(.needsRoot) func dnsFineHTTPGoneIsPartial() async throws {
        let lab = try await Lab.start(http: nil)
        defer { Task { await lab.close() } }
        let dir = lab.dir
        let j = try await Self.status(lab, Self.config([Self.dnsProbe, Self.httpByName]), dir: dir)
        #expect(j["validation"]?["state"] == .string("partial"))
        #expect(j["validation"]?["reason"] == .string("http probe.test connection refused"))
        let text = try await lab.gw.exec([TestPaths.reach, "status", "--validate", "--config", dir + "/reach.json"], timeout: 30)
        #expect(text.stdout.hasPrefix(
            "reachable over ethernet via eth0 (gateway 192.0.2.1) · partial connectivity: http probe.test connection refused\n"),
            "\(text.stdout)")
    }

    /// `--validate` with no probes configured is a usage error (reach has no default target); a bad probe is a
    /// configuration error naming its key. Neither sends anything.
    @Test func validateNeedsConfiguredProbesAndBadOnesNameTheirKey() async throws {
        let dir = try makeTempDir("reach-validation-usage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "{}".write(toFile: dir + "/empty.json", atomically: true, encoding: .utf8)
        let none = try await TestSupport.run([TestPaths.reach, "status", "--validate", "--no-modems", "--no-wifi", "--config", dir + "/empty.json"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("--validate needs probes in the configuration's validation.probes"), "\(none.stderr)")
        #expect(none.stdout.isEmpty)
        try #"{"validation": {"enabled": true, "probes": [{"kind": "http", "url": "https://connectivity.test/"}]}}"#
            .write(toFile: dir + "/bad.json", atomically: true, encoding: .utf8)
        let bad = try await TestSupport.run([TestPaths.reach, "status", "--validate", "--config", dir + "/bad.json"])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("validation.probes[0].url: https is not supported"), "\(bad.stderr)")
        let agent = try await TestSupport.run([TestPaths.reach, "agent", "--check-config", "--config", dir + "/bad.json"])
        #expect(agent.status == 78)
    }

    /// The privilege the probes need: none. SO_BINDTODEVICE on a socket not yet bound needs no capability since
    /// Linux 5.7, and ICMP goes through a ping socket where net.ipv4.ping_group_range admits the group. Run as nobody
    /// with every capability dropped (what the hardened unit's user has, and less): DNS and HTTP validate through the
    /// bound sockets; ICMP fails with the sysctl named until the range admits nobody's group, then validates.
    @Test(.needsRoot) func probesNeedNoPrivilege() async throws {
        let lab = try await Lab.start()
        defer { Task { await lab.close() } }
        // A copy of reach that nobody may run (the build tree may sit under a directory only root can enter), made by
        // install(1): a copy written by this process could leave a writable descriptor to it in a child another test
        // spawns meanwhile, and exec would then fail with ETXTBSY.
        let bin = lab.dir + "/reach"
        try await TestSupport.sh(["install", "-m", "755", TestPaths.reach, bin])
        try Self.config([Self.dnsProbe, Self.httpByName, #"{"kind": "icmp", "address": "gateway"}"#])
            .write(toFile: lab.dir + "/reach.json", atomically: true, encoding: .utf8)
        for (path, mode) in [(lab.dir, 0o755), (lab.dir + "/reach.json", 0o644)] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        }
        func validate() async throws -> JSON {
            let r = try await lab.gw.exec(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                 bin, "status", "--validate", "--json", "--config", lab.dir + "/reach.json"], timeout: 30)
            #expect(r.status == 0, "\(r.stderr)")
            return try JSON.parse(r.stdout)
        }
        try await TestSupport.sh(["ip", "netns", "exec", lab.gw.name, "sysctl", "-qw", "net.ipv4.ping_group_range=1 0"])
        var j = try await validate()
        #expect(j["validation"]?["state"] == .string("partial"))
        #expect(j["validation"]?["reason"] == .string(
            "icmp 192.0.2.1 no ICMP socket (socket: Permission denied): net.ipv4.ping_group_range must include group 65534, or reach needs CAP_NET_RAW"))
        try await TestSupport.sh(["ip", "netns", "exec", lab.gw.name, "sysctl", "-qw", "net.ipv4.ping_group_range=65534 65534"])
        j = try await validate()
        #expect(j["validation"]?["state"] == .string("validated"), "\(j["validation"]?.serialized() ?? "")")
    }

    /// The agent and `reach watch`: validated at start; the DNS server stopped → one change line "validation failed"
    /// after down_after rounds while `reachable` stays true; restarted → one line "validated again". The Prometheus
    /// textfile follows.
    @Test(.needsRoot) func agentReportsValidationLossAndReturnOnce() async throws {
        let lab = try await Lab.start()
        defer { Task { await lab.close() } }
        let dir = lab.dir
        let prom = dir + "/reach.prom"
        let config = Self.config(
            [Self.dnsProbe, Self.httpByName],
            extra: #", "report": {"path": "\#(dir)/reach.jsonl"}, "prometheus": {"textfile": "\#(prom)"}"#,
            validation: #", "interval_seconds": 2, "retry_interval_seconds": 1, "down_after": 2, "up_after": 2, "max_interval_seconds": 4"#)
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir, netns: lab.gw.name)
        try config.write(toFile: dir + "/watch.json", atomically: true, encoding: .utf8)
        let watch = try await Spawned.start(
            ["ip", "netns", "exec", lab.gw.name, TestPaths.reach, "watch", "--config", dir + "/watch.json"],
            stdout: .pipe, stderr: .capture)
        defer { _ = watch.stop(grace: 5) }

        #expect(await EndToEndTests.waitFor("start line", timeout: 20) { agent.events("start").count == 1 })
        let start = try #require(agent.events("start").first)
        #expect(start["validated"] == .bool(true), "\(start.serialized())")
        #expect(start["usable"] == .bool(true))
        // The watch's own first round too, before the server goes.
        _ = try await watch.stdout!.line(timeout: 20) { $0.contains("uplink eth0 (primary): reachable over ethernet (gateway 192.0.2.1) · metric 10 · validated") }

        await lab.dns!.stop()
        #expect(await EndToEndTests.waitFor("validation lost", timeout: 30) { agent.events("change").count == 1 }, "\(agent.lines)")
        let lost = agent.events("change")[0]
        #expect(lost["event"]?["changed"] == .array([.string("validation")]))
        #expect(lost["event"]?["validation"]?.arrayValue?.first?["to"] == .string("failed"))
        #expect(lost["event"]?["reason"]?.stringValue?.hasPrefix("uplink eth0 validation failed: dns 203.0.113.53 ") == true,
                "\(lost["event"]?.serialized() ?? "")")
        #expect(lost["reachable"] == .bool(true))  // the path truth stands
        #expect(lost["status"] == .string("wifi"))
        #expect(lost["validated"] == .bool(false))
        #expect(lost["usable"] == .bool(false))
        #expect((lost["validation"]?["failures"]?.intValue ?? 0) >= 2)
        #expect(await EndToEndTests.waitFor("textfile", timeout: 10) {
            (try? String(contentsOfFile: prom, encoding: .utf8))?.contains(#"reach_uplink_validated{interface="eth0",kind="ethernet"} 0"#) == true
        })

        // The watch runs rounds of its own, in its own phase: its line too before the server comes back.
        let watchedLoss = try? await watch.stdout!.line(timeout: 20) { $0.contains("[validation] uplink eth0 validation failed: dns 203.0.113.53 ") }
        #expect(watchedLoss != nil, "\(watch.stdout!.text)")

        lab.dns = try await ValidationServer.dns(in: lab.isp1, address: "203.0.113.53", .answer("203.0.113.80"))
        #expect(await EndToEndTests.waitFor("validation back", timeout: 30) { agent.events("change").count == 2 }, "\(agent.lines)")
        let back = agent.events("change")[1]
        #expect(back["event"]?["reason"] == .string("uplink eth0 validated again"))
        #expect(back["usable"] == .bool(true))
        #expect(await EndToEndTests.waitFor("textfile", timeout: 10) {
            (try? String(contentsOfFile: prom, encoding: .utf8))?.contains(#"reach_uplink_validated{interface="eth0",kind="ethernet"} 1"#) == true
        })
        #expect(((try? String(contentsOfFile: prom, encoding: .utf8)) ?? "").contains(#"reach_validation_probe_bytes_total{interface="eth0"} "#))

        let watched = try? await watch.stdout!.line(timeout: 20) { $0.contains("[validation] uplink eth0 validated again") }
        print("reach watch:\n\(watch.stdout!.text)")
        #expect(watched != nil, "running: \(watch.isRunning), stderr: \(watch.errorText)")
        try await Task.sleep(for: .seconds(1))
        #expect(agent.events("change").count == 2)  // nothing more: no duplicates
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
    }

    /// Servers that are there but never answer (DNS and HTTP silent): rounds never overlap and never come closer
    /// than the schedule allows (retry_interval while confirming, the interval and its backoff once down), and the
    /// bytes reach reports are the bytes that left (the peer's interface counter, less the ARP frames and the round
    /// cut short by the stop).
    @Test(.needsRoot) func probeRateAndBytesStayBoundedWhenTheServerIsSilent() async throws {
        let lab = try await Lab.start(dns: .silent, http: .silent)
        defer { Task { await lab.close() } }
        let (dir, dns, http) = (lab.dir, lab.dns!, lab.http!)
        let before = try lab.bytesFromGateway()
        let config = Self.config(
            [Self.dnsProbe, #"{"kind": "http", "url": "http://203.0.113.80/generate_204"}"#],
            extra: #", "report": {"path": "\#(dir)/reach.jsonl"}"#,
            validation: #", "interval_seconds": 2, "retry_interval_seconds": 1, "down_after": 3, "max_interval_seconds": 4"#)
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: dir, netns: lab.gw.name)
        try await Task.sleep(for: .seconds(20))
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        try await Task.sleep(for: .milliseconds(300))

        // One DNS query and one HTTP request per round; each round lasts at least the 1 s timeout of each probe.
        let queries = dns.arrivals
        let requests = http.arrivals
        print("dns queries at \(queries), http requests at \(requests)")
        #expect(queries.count >= 3, "\(queries)")
        #expect(abs(queries.count - requests.count) <= 1)
        let gaps = zip(queries.dropFirst(), queries).map { $0 - $1 }
        // A round is dns (1 s) + http (1 s); the next starts at least retry_interval (1 s, -10 %) after it ended while
        // the first failures are confirmed, then (down after the third) the interval (2 s), then the backoff's cap
        // (max_interval 4 s). A loaded machine only makes the gaps longer.
        for (i, gap) in gaps.enumerated() {
            let least = 2.0 + (i < 2 ? 0.9 : i == 2 ? 1.8 : 3.6) - 0.05
            #expect(gap >= least, "round \(i + 2) started \(gap) s after round \(i + 1) (at least \(least))")
        }

        let stop = try #require(agent.events("stop").last)
        let reported = Int(try #require(stop["validation"]?["bytes_sent"]?.intValue))
        let measured = try lab.bytesFromGateway() - before
        print("validation bytes: reported \(reported), measured \(measured) (IP bytes isp1 received from the gateway)")
        #expect(stop["validation"]?["state"] == .string("failed"))
        #expect(reported > 0)
        // Each round sends about 240 bytes here; a round cut short by the stop and the ARP frames (28 bytes each) are
        // the only bytes reach did not count.
        #expect(reported <= measured + 8, "reported \(reported) > measured \(measured)")
        #expect(measured - reported <= 300 + 4 * 28, "reported \(reported), measured \(measured)")
    }

    /// Nothing listens at all (every probe fails at once: port unreachable, connection refused): failing fast must not
    /// mean probing fast. Over 12 s at interval 2 s, retry 1 s, down_after 3, max 4 s the schedule allows about six
    /// rounds of two packets (a DNS query, a SYN); the peer's counter must show no more than that bound, and reach's
    /// byte count must match it.
    @Test(.needsRoot) func probeRateStaysBoundedWhenNothingListens() async throws {
        let lab = try await Lab.start(dns: nil, http: nil)
        defer { Task { await lab.close() } }
        let before = try lab.fromGateway()
        let config = Self.config(
            [Self.dnsProbe, #"{"kind": "http", "url": "http://203.0.113.80/generate_204"}"#],
            extra: #", "report": {"path": "\#(lab.dir)/reach.jsonl"}"#,
            validation: #", "interval_seconds": 2, "retry_interval_seconds": 1, "down_after": 3, "max_interval_seconds": 4"#)
        let agent = try await EndToEndTests.AgentProcess.start(config: config, dir: lab.dir, netns: lab.gw.name)
        try await Task.sleep(for: .seconds(12))
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
        let after = try lab.fromGateway()
        let packets = after.packets - before.packets
        let bytes = after.bytes - before.bytes
        // Rounds at 0, 1, 2 (down), 4, 8 and 12 s at most (start-up takes some of the 12 s): 6 rounds × 2 packets, with
        // a round of slack and a few ARP frames.
        #expect(packets <= 2 * 7 + 4, "\(packets) packets in 12 s")
        let stop = try #require(agent.events("stop").last)
        let reported = Int(try #require(stop["validation"]?["bytes_sent"]?.intValue))
        print("nothing listening: \(packets) packets, \(bytes) IP bytes from the gateway in 12 s; reach counted \(reported)")
        #expect(stop["validation"]?["state"] == .string("failed"))
        #expect(stop["validation"]?["reason"]?.stringValue?.contains("dns 203.0.113.53 port 53 unreachable") == true)
        #expect(reported <= bytes + 8 && bytes - reported <= 120 + 4 * 28, "reported \(reported), measured \(bytes)")
    }
}
