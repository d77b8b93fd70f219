import Foundation
import ReachAgent
import ReachCore
import Testing

/// The files under config/ and scripts/install, checked with the tools that will read them.
@Suite struct PackagingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func defaultConfigFileIsValidAndEqualsTheBuiltInDefaults() throws {
        let text = try String(contentsOfFile: Self.root + "/config/reach.json", encoding: .utf8)
        #expect(try AgentConfig.parse(text) == AgentConfig())
    }

    @Test func systemdUnitVerifies() throws {
        guard requirement(FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "systemd-analyze")
        else { return }
        let dir = try makeTempDir("reach-unit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // verify checks that ExecStart exists: point it at the binary this build made.
        let unit = try String(contentsOfFile: Self.root + "/config/reach.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/bin/reach", with: reachBinary())
        try unit.write(toFile: dir + "/reach.service", atomically: true, encoding: .utf8)
        let r = try run(["systemd-analyze", "verify", dir + "/reach.service"])
        #expect(r.status == 0, "\(r.err)")
        #expect(!r.err.contains("reach.service"), "\(r.err)")
        for key in ["NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/log/reach",
                    "RestrictAddressFamilies=AF_NETLINK AF_UNIX AF_INET AF_INET6", "CapabilityBoundingSet=CAP_NET_ADMIN",
                    "User=reach", "RestartPreventExitStatus=78"] {
            #expect(unit.contains(key), "unit lacks \(key)")
        }
    }

    @Test func procdScriptParsesAndUdevRuleNamesTheGroup() throws {
        let r = try run(["sh", "-n", Self.root + "/config/reach.init"])
        #expect(r.status == 0, "\(r.err)")
        let initScript = try String(contentsOfFile: Self.root + "/config/reach.init", encoding: .utf8)
        #expect(initScript.contains("USE_PROCD=1") && initScript.contains("procd_send_signal reach '*' HUP"))
        let rules = try String(contentsOfFile: Self.root + "/config/70-reach.rules", encoding: .utf8)
        #expect(rules.contains(#"KERNEL=="cdc-wdm[0-9]*", GROUP="reach", MODE="0660""#))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/udevadm") {
            let dir = try makeTempDir("reach-udev")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let v = try run(["udevadm", "verify", Self.root + "/config/70-reach.rules"])
            // udevadm verify exists from systemd 254; older udevadm has no such verb and is not a failure here.
            if !v.err.contains("Unknown command") && !v.err.contains("unknown command") {
                #expect(v.status == 0, "\(v.err)")
            }
        }
    }

    @Test func installScriptStagesEverythingUnderDestdir() throws {
        let dir = try makeTempDir("reach-install")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try run([
            Self.root + "/scripts/install", "--destdir", dir, "--prefix", "/usr", "--init", "systemd", "--binary", reachBinary(),
        ])
        #expect(r.status == 0, "\(r.err)")
        for f in ["/usr/bin/reach", "/etc/reach/reach.json", "/lib/systemd/system/reach.service", "/lib/sysusers.d/reach.conf",
                  "/lib/udev/rules.d/70-reach.rules"] {
            #expect(FileManager.default.fileExists(atPath: dir + f), "missing \(f)")
        }
        let p = try run([Self.root + "/scripts/install", "--destdir", dir, "--prefix", "/opt/reach", "--init", "procd", "--binary", reachBinary()])
        #expect(p.status == 0, "\(p.err)")
        #expect(p.out.contains("keeping the existing"))
        let initScript = try String(contentsOfFile: dir + "/etc/init.d/reach", encoding: .utf8)
        #expect(initScript.contains("PROG=/opt/reach/bin/reach"))
        let bad = try run([Self.root + "/scripts/install", "--init", "upstart"])
        #expect(bad.status == 64)
    }
}

/// The `reach` binary built next to this test bundle (REACH_BIN overrides).
func reachBinary() -> String {
    if let p = ProcessInfo.processInfo.environment["REACH_BIN"] { return p }
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [dir.appendingPathComponent("reach").path, dir.deletingLastPathComponent().appendingPathComponent("reach").path,
                      PackagingTests.root + "/.build/debug/reach"] where FileManager.default.isExecutableFile(atPath: candidate) {
        return candidate
    }
    return PackagingTests.root + "/.build/debug/reach"
}
