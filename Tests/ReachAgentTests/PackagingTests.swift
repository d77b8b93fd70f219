import Foundation
import ReachAgent
import ReachCore
import ReachTestSupport
import Testing

/// The files under config/ and scripts/install, checked with the tools that will read them.
@Suite struct PackagingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func defaultConfigFileIsValidAndEqualsTheBuiltInDefaults() throws {
        let text = try String(contentsOfFile: Self.root + "/config/reach.json", encoding: .utf8)
        #expect(try AgentConfig.parse(text) == AgentConfig())
    }

    @Test(.needs(FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "systemd-analyze")) func systemdUnitVerifies() async throws {
        let analyze = "/usr/bin/systemd-analyze"
        let dir = try makeTempDir("reach-unit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // verify checks that ExecStart exists: point it at the binary this build made.
        let unit = try String(contentsOfFile: Self.root + "/config/reach.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/bin/reach", with: TestPaths.reach)
        try unit.write(toFile: dir + "/reach.service", atomically: true, encoding: .utf8)
        let r = try await TestSupport.run(["systemd-analyze", "verify", dir + "/reach.service"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("reach.service"), "\(r.stderr)")
        for key in ["NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/log/reach",
                    "RestrictAddressFamilies=AF_NETLINK AF_UNIX AF_INET AF_INET6", "CapabilityBoundingSet=CAP_NET_ADMIN",
                    "Group=reach", "RestartPreventExitStatus=78", "After=network-pre.target systemd-udev-settle.service ModemManager.service"] {
            #expect(unit.contains(key), "unit lacks \(key)")
        }
        // Root without capabilities, so that qmi-proxy / mbim-proxy serve it (ModemSharingTests run the agent so).
        #expect(!unit.split(separator: "\n").contains { $0.hasPrefix("User=") }, "the proxies serve only root")
    }

    @Test func procdScriptParsesAndUdevRuleNamesTheGroup() async throws {
        let r = try await TestSupport.run(["sh", "-n", Self.root + "/config/reach.init"])
        #expect(r.status == 0, "\(r.stderr)")
        let initScript = try String(contentsOfFile: Self.root + "/config/reach.init", encoding: .utf8)
        #expect(initScript.contains("USE_PROCD=1") && initScript.contains("procd_send_signal reach '*' HUP"))
        let rules = try String(contentsOfFile: Self.root + "/config/70-reach.rules", encoding: .utf8)
        #expect(rules.contains(#"KERNEL=="cdc-wdm[0-9]*", GROUP="reach", MODE="0660""#))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/udevadm") {
            let dir = try makeTempDir("reach-udev")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let v = try await TestSupport.run(["udevadm", "verify", Self.root + "/config/70-reach.rules"])
            // udevadm verify exists from systemd 254; older udevadm has no such verb and is not a failure here.
            if !v.stderr.contains("Unknown command") && !v.stderr.contains("unknown command") {
                #expect(v.status == 0, "\(v.stderr)")
            }
        }
    }

    @Test func installScriptStagesEverythingUnderDestdir() async throws {
        let dir = try makeTempDir("reach-install")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try await TestSupport.run([
            Self.root + "/scripts/install", "--destdir", dir, "--prefix", "/usr", "--init", "systemd",
            "--binary", TestPaths.reach,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        for f in ["/usr/bin/reach", "/etc/reach/reach.json", "/lib/systemd/system/reach.service", "/lib/sysusers.d/reach.conf",
                  "/lib/udev/rules.d/70-reach.rules"] {
            #expect(FileManager.default.fileExists(atPath: dir + f), "missing \(f)")
        }
        let p = try await TestSupport.run([
            Self.root + "/scripts/install", "--destdir", dir, "--prefix", "/opt/reach", "--init", "procd",
            "--binary", TestPaths.reach,
        ])
        #expect(p.status == 0, "\(p.stderr)")
        #expect(p.stdout.contains("keeping the existing"))
        let initScript = try String(contentsOfFile: dir + "/etc/init.d/reach", encoding: .utf8)
        #expect(initScript.contains("PROG=/opt/reach/bin/reach"))
        let bad = try await TestSupport.run([Self.root + "/scripts/install", "--init", "upstart"])
        #expect(bad.status == 64)
    }
}
