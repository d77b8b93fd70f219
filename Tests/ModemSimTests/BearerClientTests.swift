// A data session brought up and down by Debian's qmicli (libqmi 1.32.2) on the simulator's pty, as ModemManager's
// QMI bearer does it beside reach: --wds-start-network keeps its client (--client-no-release-cid), whose id and
// packet data handle the later calls name.

import ModemSim
import ReachTestSupport
import Testing

@Suite(.enabled(if: Tools.clientTestsEnabled, "needs qmicli, mbimcli (scripts/setup) and a built reach-modem-sim"))
struct BearerClientTests {
    static let scenario = """
        {"protocol":"qmi","sim":"ready","state":{"registration":"home","access_technologies":["lte"],
         "operator":{"mcc":"262","mnc":"01","name":"Telekom.de"},"packet_service":"attached",
         "data_sessions":[{"state":"disconnected"}]}}
        """

    func qmicli(_ sim: ModemSimulator, _ args: String...) async throws -> RunResult {
        try await TestSupport.run(["qmicli", "-d", sim.pty, "--device-open-qmi"] + args, timeout: 10)
    }

    @Test func qmicliStartsAndStopsTheNetwork() async throws {
        let sim = try await ModemSimulator.start(json: Self.scenario)
        defer { sim.stop() }
        let start = try await qmicli(sim, "--wds-start-network=apn=internet", "--client-no-release-cid")
        #expect(start.status == 0 && start.stdout.contains("Network started"), "\(start.stdout)\(start.stderr)")
        let handle = try #require(start.value("Packet data handle"), "\(start.stdout)")
        let cid = try #require(start.value("CID"), "\(start.stdout)")
        #expect(try await sim.control(#"{"query":"state"}"#).contains("\"connected\""))

        let status = try await qmicli(sim, "--wds-get-packet-service-status", "--client-cid=\(cid)",
                                      "--client-no-release-cid")
        // qmicli prints this one on its device line: "[PATH] Connection status: 'connected'".
        #expect(status.stdout.contains("Connection status: 'connected'"), "\(status.stdout)\(status.stderr)")
        let settings = try await qmicli(sim, "--wds-get-current-settings", "--client-cid=\(cid)",
                                        "--client-no-release-cid")
        #expect(settings.status == 0, "\(settings.stderr)")
        #expect(settings.value("IPv4 address") == "192.0.2.2", "\(settings.stdout)")
        #expect(settings.value("IPv4 gateway address") == "192.0.2.1", "\(settings.stdout)")
        #expect(settings.value("MTU") == "1500", "\(settings.stdout)")

        // Starting again from another client: the session is up already.
        let again = try await qmicli(sim, "--wds-start-network=apn=internet")
        #expect(again.status != 0 && again.stderr.contains("NoEffect"), "\(again.stderr)")

        let stop = try await qmicli(sim, "--wds-stop-network=\(handle)", "--client-cid=\(cid)")
        #expect(stop.status == 0 && stop.stdout.contains("Network stopped"), "\(stop.stdout)\(stop.stderr)")
        let after = try await sim.control(#"{"query":"state"}"#)
        #expect(after.contains("\"disconnected\"") && !after.contains("\"connected\""), "\(after)")
    }
}
