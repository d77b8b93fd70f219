import Foundation
import ReachCore
import ReachSystem
import ReachTestSupport
import Testing

/// The modem libraries (libqmi-glib, libmbim-glib, GIO, GObject, GLib) are opened with the first modem, in the process
/// that reads it (Sources/C/CGLibShims/lazy.S): an agent whose modems run in workers never maps them, and a board
/// without one of them reads the other protocol's modems.
@Suite(.serialized) struct ModemLibrariesTests {
    static let libraries = ["libqmi-glib", "libmbim-glib", "libgio-2.0", "libgobject-2.0", "libglib-2.0"]

    /// The libraries of `libraries` that `pid` has mapped.
    static func mapped(_ pid: pid_t) throws -> Set<String> {
        let maps = String(decoding: try BoundedRead.bytes("/proc/\(pid)/maps", limit: 1 << 20).get(), as: UTF8.self)
        return Set(libraries.filter { library in maps.contains("/\(library).so") })
    }

    @Test(.needsRoot) func onlyTheWorkerMapsThem() async throws {
        let rig = try await ModemAgentRig.start("qmi", label: "reach-libs")
        defer { rig.removeDirectory() }
        let agent = rig.agent
        let worker = try #require(
            HostileModemTests.children(of: agent.child.pid).first { $0.command.contains("modem-worker") },
            "no modem worker under \(agent.child.pid)")
        let inAgent = try Self.mapped(agent.child.pid)
        #expect(inAgent.isEmpty, "the agent maps \(inAgent.sorted())")
        let inWorker = try Self.mapped(worker.pid)
        // libqmi-glib brings libmbim-glib along where it was built with QMI-over-MBIM (Debian's is).
        #expect(inWorker.isSuperset(of: ["libqmi-glib", "libgio-2.0", "libgobject-2.0", "libglib-2.0"]), "the worker (\(worker.command)) maps \(inWorker.sorted())")
        let (status, log) = await agent.stop()
        #expect(status == 0, "\(log)")
    }

    /// libqmi-glib replaced by an empty file (a bind mount in a mount namespace of the test's own): `reach status`
    /// still starts, reads the MBIM modem, and names the library for the QMI one.
    @Test(.needsRoot) func aMissingLibraryIsNamedAndTheOtherProtocolIsRead() async throws {
        let library = try #require(
            ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]
                .map { $0 + "/libqmi-glib.so.5" }.first { FileManager.default.fileExists(atPath: $0) },
            "no libqmi-glib.so.5")
        let qmi = try await ModemSimulator.start(scenario: "qmi-4g-lte", control: false)
        let mbim = try await ModemSimulator.start(scenario: "mbim-4g-lte", control: false)
        let command = [TestPaths.reach, "status", "--json", "--no-wifi", "--modem-access", "direct",
                       "--modem", "\(qmi.link):qmi", "--modem", "\(mbim.link):mbim", "--modem-timeout", "2"]
        let script = "mount --bind /dev/null \"$1\" && shift && exec \"$@\""
        let r = try await TestSupport.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", library] + command, timeout: 30)
        let json = try #require(try? JSON.parse(r.stdout), "not JSON (exit \(r.status)): \(r.stdout) \(r.stderr)")
        let modems = try #require(json["wwan"]?.arrayValue, "\(r.stdout)")
        let qmiState = try #require(modems.first { $0["protocol"] == .string("qmi") }, "\(r.stdout)")
        let mbimState = try #require(modems.first { $0["protocol"] == .string("mbim") }, "\(r.stdout)")
        let error = qmiState["error"]?.stringValue ?? ""
        #expect(error.hasPrefix("libqmi-glib cannot be loaded: ") && error.contains("libqmi-glib.so.5"), "\(error)")
        #expect(mbimState["error"] == .null && mbimState["generation"] == .string("4g"), "\(mbimState.serialized())")
        print("libqmi-glib missing: \(error)")
    }
}
