// The option group `status`, `watch`, `signal` and `diag` share (Sources/reach/SourceOptions.swift): the same
// refusal in every command, and `--modem PATH:qmi:NETDEV` answering for a route over a modem without a config file.

import Foundation
import ReachCore
import ReachTestSupport
import Testing

@Suite struct SourceOptionsTests {
    static let commands = ["status", "watch", "signal", "diag"]

    /// Each bad source option, in each command: exit 64 and the same words.
    @Test(arguments: [
        // A node that exists but that no modem driver owns (a missing node is a modem unplugged: see below).
        (["--modem", "/dev/null"],
         "--modem '/dev/null': no protocol given and sysfs does not tell it (null is in neither /sys/class/usbmisc "
            + "nor /sys/class/wwan); name it as /dev/null:qmi or /dev/null:mbim"),
        (["--modem", "/dev/null:wwan0"],
         "--modem '/dev/null:wwan0': no protocol given and sysfs does not tell it (null is in neither "
            + "/sys/class/usbmisc nor /sys/class/wwan); name it as /dev/null:qmi or /dev/null:mbim"),
        // A missing node with a word after it: a netdev or a mistyped protocol, which nothing can tell apart.
        (["--modem", "/dev/reach-no-such-port:at"],
         "--modem '/dev/reach-no-such-port:at': no protocol given and sysfs does not tell it (reach-no-such-port is in "
            + "neither /sys/class/usbmisc nor /sys/class/wwan); name it as /dev/reach-no-such-port:qmi or "
            + "/dev/reach-no-such-port:mbim"),
        (["--modem", "cdc-wdm0:qmi"], "--modem 'cdc-wdm0:qmi': expected an absolute device path (not an absolute path)"),
        (["--modem", "/dev/cdc-wdm0:qmi:wwan0:x"], "--modem '/dev/cdc-wdm0:qmi:wwan0:x': too many ':'"),
        (["--modem", "/dev/cdc-wdm0:qmi:a b"], "--modem '/dev/cdc-wdm0:qmi:a b': 'a b' is not an interface name (contains white space)"),
        (["--no-modems", "--modem", "/dev/cdc-wdm0:qmi"], "--modem and --no-modems are mutually exclusive"),
        (["--no-modems", "--modem-access", "direct"], "--modem-access and --no-modems are mutually exclusive"),
        (["--modem-access", "shared"], "--modem-access must be auto, proxy or direct, got 'shared'"),
        (["--modem-timeout", "0"], "'--modem-timeout' must be a number of seconds in (0, 120], got '0'"),
        (["--wifi", "a/b"], "'--wifi' expects an interface name (1-15 bytes, no '/', ':' or white space), got 'a/b': contains '/'"),
        (["--no-wifi", "--wifi", "wlan0"], "--wifi and --no-wifi are mutually exclusive"),
        (["--config", ""], "'--config' expects a configuration file, got '': an empty name"),
    ] as [([String], String)])
    func everyCommandRefusesAlike(arguments: [String], message: String) async throws {
        for command in Self.commands {
            let r = try await TestSupport.run([TestPaths.reach, command] + arguments, timeout: 20)
            #expect(r.status == 64, "\(command) \(arguments): \(r.status) \(r.stdout) \(r.stderr)")
            #expect(r.stderr.hasPrefix("reach \(command): error: \(message)"), "\(command): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
    }

    /// A port named while its node does not exist (the modem unplugged) is read like any other and said absent, with
    /// or without a protocol: in a namespace without routes, exit 1 (not reachable), never 64.
    @Test(.needsRoot, arguments: [
        ("/dev/reach-no-such-port", nil),
        ("/dev/reach-no-such-port:mbim", "mbim"),
        ("/dev/reach-no-such-port:mbim:wwan0", "mbim"),
    ] as [(String, String?)])
    func aMissingNodeIsAnAbsentModem(modem: String, proto: String?) async throws {
        let ns = try Namespace("absent")
        defer { ns.delete() }
        let r = try await ns.exec(
            [TestPaths.reach, "status", "--json", "--no-wifi", "--modem-timeout", "2", "--modem", modem], timeout: 60)
        #expect(r.status == 1, "\(modem): \(r.status) \(r.stdout) \(r.stderr)")
        let j = try JSON.parse(r.stdout)
        let m = try #require(j.modem, "\(r.stdout)")
        #expect(m["device"] == .string("/dev/reach-no-such-port"))
        #expect(m["present"] == .bool(false), "\(m.serialized())")
        #expect(m["fault"]?["kind"] == .string("gone"), "\(m.serialized())")
        #expect(m["driver"] == .null)
        if let proto { #expect(m["protocol"] == .string(proto)) }
    }

    @Test func everyCommandDocumentsTheGroup() async throws {
        for command in Self.commands {
            let r = try await TestSupport.run([TestPaths.reach, command, "--help"], timeout: 20)
            #expect(r.status == 0)
            for option in ["--modem PATH[:qmi|:mbim][:NETDEV] ...", "--no-modems", "--modem-timeout", "--modem-access",
                           "--wifi IFACE", "--no-wifi", "--config FILE"]
            {
                #expect(r.stdout.contains(option), "\(command) --help lacks \(option)")
            }
        }
    }

    /// The case: with a route over wwan0 and no config file, `--modem PATH:qmi` alone cannot tie the route to
    /// the modem ("no modem is known to carry it"); `--modem PATH:qmi:wwan0` can, and the modem's data session
    /// decides.
    @Test(.needsRoot, .needsSimulator, arguments: ["qmi", "mbim"])
    func theNetdevOnTheCommandLineTiesTheRouteToTheModem(proto: String) async throws {
        let lab = try await WWANLab.start(proto)
        defer { lab.stop() }
        func status(_ modem: String) async throws -> (JSON, Int32) {
            let r = try await lab.ns.exec(
                [TestPaths.reach, "status", "--json", "--no-wifi", "--modem-timeout", "2", "--modem", modem], timeout: 60)
            return (try JSON.parse(r.stdout), r.status)
        }
        let (named, exit) = try await status("\(lab.sim.link):\(proto):wwan0")
        #expect(exit == 0)
        #expect(named["modem_check"]?["result"] == .string("ok"), "\(named.serialized())")
        #expect(named.modem?["interface"] == .string("wwan0"))
        #expect(named["status"] == .string("wwan") && named["reachable"] == .bool(true))

        let (unnamed, _) = try await status("\(lab.sim.link):\(proto)")
        #expect(unnamed["modem_check"]?["result"] == .string("unknown"))
        let reason = unnamed["modem_check"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("no modem is known to carry it"), "\(reason)")
    }
}
