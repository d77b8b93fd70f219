import CGLibShims
import Foundation
import Glibc
import ReachCore
import ReachGLib
import Testing
@testable import ReachModem

/// The case of a modem failure, decided from the error's type, its GError domain and code, and whether the node is
/// still there: never from the words of its message (the message rows say the opposite of their case).
@Suite struct ModemFaultDecisionTests {
    static func gio(_ code: GIOErrorEnum, _ message: String = "") -> GLibError {
        GLibError(kind: .gError(domain: GLibError.domainName(g_io_error_quark), code: Int32(code.rawValue)), call: "read", message: message)
    }

    static func qmiCore(_ code: QmiCoreError, _ message: String) -> GLibError {
        GLibError(kind: .gError(domain: GLibError.domainName(qmi_core_error_quark), code: Int32(code.rawValue)), call: "qmi_device_open", message: message)
    }

    static let missing = "/dev/reach-fault-test-no-such-node"

    @Test(arguments: [
        ("our deadline", GLibError.timedOut("qmi_device_allocate_client(NAS)", after: .seconds(5)) as Error, "/dev/null",
         ModemFault(.notAnswering, waitedMs: 5000)),
        ("libqmi's own timeout", qmiCore(QMI_CORE_ERROR_TIMEOUT, "Transaction timed out"), "/dev/null", ModemFault(.notAnswering)),
        ("GIO closed", gio(G_IO_ERROR_CLOSED), "/dev/null", ModemFault(.gone)),
        ("GIO not found (ENOENT)", gio(G_IO_ERROR_NOT_FOUND), "/dev/null", ModemFault(.gone)),
        ("errno only in the words, node there", qmiCore(QMI_CORE_ERROR_FAILED, "Cannot open device file: No such device"),
         "/dev/null", ModemFault(.failed)),
        ("errno only in the words, node gone", qmiCore(QMI_CORE_ERROR_FAILED, "Cannot open device file: Input/output error"),
         missing, ModemFault(.gone)),
        ("words of a hang-up, node there", gio(G_IO_ERROR_FAILED, "hang-up"), "/dev/null", ModemFault(.failed)),
        ("no node before opening", ModemChannel.PortGone(message: "no such device node"), "/dev/null", ModemFault(.gone)),
        ("a refusal the opener decided", ModemError("refused", ModemFault(.proxyRefused)), "/dev/null", ModemFault(.proxyRefused)),
        ("words of a refusal, no case", ModemError("qmi-proxy (pid 1) refused us"), "/dev/null", ModemFault(.failed)),
    ] as [(String, Error, String, ModemFault)])
    func decided(_ name: String, error: Error, path: String, fault: ModemFault) {
        #expect(ModemChannel.fault(of: error, path: path) == fault, "\(name)")
    }

    /// A port that could not be opened: its state carries the case; a vanished one is absent; one that did not
    /// answer while another process holds it is `portHeld`, naming that process.
    @Test func failedStateCarriesTheCase() throws {
        let gone = ModemChannel.failedState(ModemPortSpec(path: Self.missing, protocol: .qmi), Self.gio(G_IO_ERROR_CLOSED))
        #expect(gone.fault == ModemFault(.gone) && !gone.present)

        let port = NSTemporaryDirectory() + "reach-fault-port-" + UUID().uuidString
        FileManager.default.createFile(atPath: port, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: port) }
        let timeout = GLibError.timedOut("mbim_device_open_full", after: .seconds(2))
        let silent = ModemChannel.failedState(ModemPortSpec(path: port, protocol: .mbim), timeout)
        #expect(silent.fault == ModemFault(.notAnswering, waitedMs: 2000) && silent.present)
        #expect(silent.error == "mbim_device_open_full: no answer within 2000 ms")

        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sleep")
        holder.arguments = ["30"]
        holder.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: port))
        try holder.run()
        defer {
            // (SIGKILL: the test process's threads block SIGTERM, and the child inherits that mask.)
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        // Until the child has become sleep (its name is what the holder is called by).
        let comm = "/proc/\(holder.processIdentifier)/comm"
        for _ in 0..<200 where (try? String(contentsOfFile: comm, encoding: .utf8)) != "sleep\n" { usleep(10_000) }
        let held = ModemChannel.failedState(ModemPortSpec(path: port, protocol: .mbim), timeout)
        // (Another test's child spawned meanwhile may hold a copy of the descriptor until its exec: only ours is certain.)
        let sleeper = "sleep (pid \(holder.processIdentifier))"
        #expect(held.fault?.kind == .portHeld && held.fault?.waitedMs == 2000)
        #expect(held.fault?.holders.contains(sleeper) == true, "\(String(describing: held.fault))")
        #expect(held.error?.hasPrefix("mbim_device_open_full: no answer within 2000 ms; the port is also open in ") == true)
        #expect(held.error?.contains(sleeper) == true)
    }
}
