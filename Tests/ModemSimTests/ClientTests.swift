// The built reach-modem-sim on a real pty, read by Debian's qmicli and mbimcli (libqmi 1.32.2, libmbim 1.28.2):
// what they print must agree with the scenario. Every client run has a time limit, so a broken simulator fails a
// test instead of hanging the run.

import Foundation
import ModemSim
import ReachCore
import ReachTestSupport
import Testing

/// qmicli's names for what the scenario says.
enum QMICLINames {
    static func family(_ f: RadioFamily) -> (section: String, radio: String) {
        switch f {
        case .gsm: return ("GSM service", "gsm")
        case .wcdma: return ("WCDMA service", "umts")
        case .tdscdma: return ("TD-SCDMA service", "td-scdma")
        case .lte: return ("LTE service", "lte")
        case .nr: return ("5G SA service", "5gnr")
        case .cdma: return ("CDMA service", "cdma-1x")
        case .hdr: return ("HDR service", "cdma-1xevdo")
        }
    }

    static func registration(_ r: RegistrationState) -> String {
        switch r {
        case .home, .roaming: return "registered"
        case .searching: return "not-registered-searching"
        case .denied: return "registration-denied"
        default: return "not-registered"
        }
    }

    static func dB(_ v: Double) -> String { String(format: "%.1f", v) }
}

/// mbimcli's names for MbimDataClass bits, in bit order (libmbim's mbim_data_class_build_string_from_mask).
let mbimDataClassNames: [(UInt32, String)] = [
    (1 << 0, "gprs"), (1 << 1, "edge"), (1 << 2, "umts"), (1 << 3, "hsdpa"), (1 << 4, "hsupa"), (1 << 5, "lte"),
    (1 << 6, "5g-nsa"), (1 << 7, "5g-sa"), (1 << 16, "1xrtt"), (1 << 17, "1xevdo"), (1 << 31, "custom"),
]

func mbimDataClass(fromNames text: String) -> UInt32 {
    text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.reduce(0) { bits, name in
        bits | (mbimDataClassNames.first { $0.1 == name }?.0 ?? 0)
    }
}

@Suite(.enabled(if: Tools.clientTestsEnabled, "needs qmicli, mbimcli (scripts/setup) and a built reach-modem-sim"))
struct QMIClientTests {
    static let generationScenarios = [
        "qmi-2g-edge", "qmi-3g-hspa-plus", "qmi-4g-lte", "qmi-5g-sa", "qmi-5g-nsa-endc", "qmi-roaming", "qmi-searching",
        "qmi-denied-reject-cause", "qmi-sim-pin-required", "qmi-sim-absent",
    ]

    func qmicli(_ sim: ModemSimulator, _ args: String..., seconds: Double = 10) async throws -> RunResult {
        try await TestSupport.run(["qmicli", "-d", sim.pty, "--device-open-qmi"] + args, timeout: seconds)
    }

    @Test(arguments: generationScenarios)
    func qmicliAgreesWithTheScenario(file: String) async throws {
        let scenario = try Repo.scenario(file)
        let st = scenario.state
        let sim = try await ModemSimulator.start(scenario: file)
        defer { sim.stop() }

        // NAS Get System Info: the family in use, its status, PLMN and roaming.
        let si = try await qmicli(sim, "--nas-get-system-info")
        #expect(si.status == 0 && si.stdout.contains("Successfully got system info"), "\(si.stderr)")
        let nsa = st.accessTechnologies.isNonStandalone5G
        for family in st.accessTechnologies.families {
            let section = QMICLINames.family(family).section
            let expected = family == .nr && nsa ? "none" : st.isRegistered ? "available" : st.registration == .denied ? "limited" : "none"
            #expect(si.value("Status", after: section) == expected, "\(file) \(section)\n\(si.stdout)")
            if let op = st.networkOperator, expected != "none" {
                #expect(si.value("MCC", after: section) == op.mcc && si.value("MNC", after: section) == op.mnc, "\(si.stdout)")
                #expect(si.value("Roaming status", after: section) == (st.registration == .roaming ? "on" : "off"))
            }
        }
        if st.accessTechnologies.contains(.lte) {
            #expect(si.value("5G NSA Available") == (nsa ? "yes" : "no"), "\(si.stdout)")
        }
        if st.registration == .denied {
            #expect(si.value("Forbidden") == "yes" && si.stdout.contains("(plmn-not-allowed)"), "\(si.stdout)")
        }
        if !st.isRegistered && st.registration != .denied {
            #expect(!si.stdout.contains("MCC:"), "\(si.stdout)")
        }

        // NAS Get Serving System: registration, radio interface, operator.
        let ss = try await qmicli(sim, "--nas-get-serving-system")
        #expect(ss.value("Registration state") == QMICLINames.registration(st.registration), "\(ss.stdout)")
        if st.isRegistered, let op = st.networkOperator {
            let radio = nsa ? "lte" : QMICLINames.family(st.accessTechnologies.families.last!).radio
            #expect(ss.value("[0]") == radio, "\(ss.stdout)")
            #expect(ss.value("MCC") == op.mcc && ss.value("MNC") == String(Int(op.mnc)!), "\(ss.stdout)")
            #expect(ss.value("Description") == op.name)
            #expect(ss.value("Roaming status") == (st.registration == .roaming ? "on" : "off"))
            #expect(ss.value("MNC with PCS digit") == (op.mnc.count == 3 ? "yes" : "no"))
        }

        // NAS Get Signal Info: the scenario's values, per family.
        let sig = try await qmicli(sim, "--nas-get-signal-info")
        #expect(sig.status == 0, "\(sig.stderr)")
        let s = st.signal
        let families = st.accessTechnologies.families
        if families.contains(.gsm), let rssi = s.rssi { #expect(sig.value("RSSI", after: "GSM:") == "\(Int(rssi)) dBm") }
        if families.contains(.wcdma), let rssi = s.rssi, let ecio = s.ecio {
            #expect(sig.value("RSSI", after: "WCDMA:") == "\(Int(rssi)) dBm")
            #expect(sig.value("ECIO", after: "WCDMA:") == "\(QMICLINames.dB(ecio)) dBm")
        }
        if families.contains(.lte), let rsrp = s.rsrp, let rsrq = s.rsrq, let snr = s.sinr, let rssi = s.rssi {
            #expect(sig.value("RSRP", after: "LTE:") == "\(Int(rsrp)) dBm", "\(sig.stdout)")
            #expect(sig.value("RSRQ", after: "LTE:") == "\(Int(rsrq)) dB")
            #expect(sig.value("RSSI", after: "LTE:") == "\(Int(rssi)) dBm")
            #expect(sig.value("SNR", after: "LTE:") == "\(QMICLINames.dB(snr)) dB")
        }
        if let nr = st.nrMeasurement, let rsrp = nr.rsrp, let snr = nr.sinr {
            #expect(sig.value("RSRP", after: "5G:") == "\(Int(rsrp)) dBm", "\(sig.stdout)")
            #expect(sig.value("SNR", after: "5G:") == "\(QMICLINames.dB(snr)) dB")
            if let rsrq = nr.rsrq { #expect(sig.value("RSRQ", after: "5G:") == "\(Int(rsrq)) dB") }
        }
        if families.isEmpty { #expect(!sig.stdout.contains("dBm"), "\(sig.stdout)") }

        // NAS Get Signal Strength (the fallback path): the serving RSSI.
        let strength = try await qmicli(sim, "--nas-get-signal-strength")
        if let family = families.last, let rssi = s.rssi, family != .nr || nsa {
            let radio = nsa ? "lte" : QMICLINames.family(family).radio
            #expect(strength.value("Network '\(radio)'", after: "Current:") == "\(Int(rssi)) dBm", "\(strength.stdout)")
        } else {
            #expect(strength.stderr.contains("InformationUnavailable"), "\(strength.stderr)")
        }

        // DMS and UIM: identity and SIM state.
        let ids = try await qmicli(sim, "--dms-get-ids")
        #expect(ids.value("IMEI") == scenario.device.imei)
        let card = try await qmicli(sim, "--uim-get-card-status")
        let pin = try await qmicli(sim, "--dms-uim-get-pin-status")
        switch st.sim {
        case .absent:
            #expect(card.value("Card state") == "absent")
            #expect(pin.stderr.contains("UimUninitialized"), "\(pin.stderr)")
        case .pinRequired:
            #expect(card.value("Application state") == "pin1-or-upin-pin-required" && card.value("PIN1 state") == "enabled-not-verified")
            #expect(pin.stdout.contains("Status: enabled-not-verified"), "\(pin.stdout)")
        default:
            #expect(card.value("Card state") == "present" && card.value("Application state") == "ready")
            #expect(pin.stdout.contains("Status: disabled"), "\(pin.stdout)")
        }
        #expect(sim.stop() == 0)
    }

    @Test(arguments: ["qmi-fallback-invalid-qmi-command", "qmi-fallback-not-supported"])
    func fallbackFirmwareRefusesNewMessagesAndAnswersOldOnes(file: String) async throws {
        let scenario = try Repo.scenario(file)
        let sim = try await ModemSimulator.start(scenario: file)
        defer { sim.stop() }
        let name = scenario.qmi.unsupportedError == QMIError.invalidQMICommand ? "(71): 'InvalidQmiCommand'" : "(94): 'NotSupported'"
        #expect(try await qmicli(sim, "--nas-get-system-info").stderr.contains(name))
        #expect(try await qmicli(sim, "--nas-get-signal-info").stderr.contains(name))
        let ss = try await qmicli(sim, "--nas-get-serving-system")
        #expect(ss.value("Registration state") == "registered" && ss.value("Description") == scenario.state.networkOperator?.name)
        let strength = try await qmicli(sim, "--nas-get-signal-strength")
        #expect(strength.stdout.contains("'\(Int(scenario.state.signal.rssi!)) dBm'"), "\(strength.stdout)")
    }

    @Test func dmsAnswersCarryTheDevice() async throws {
        let scenario = try Repo.scenario("qmi-4g-lte")
        let sim = try await ModemSimulator.start(scenario: "qmi-4g-lte")
        defer { sim.stop() }
        #expect(try await qmicli(sim, "--dms-get-manufacturer").value("Manufacturer") == scenario.device.manufacturer)
        #expect(try await qmicli(sim, "--dms-get-model").value("Model") == scenario.device.model)
        #expect(try await qmicli(sim, "--dms-get-revision").value("Revision") == scenario.device.revision)
        #expect(try await qmicli(sim, "--dms-get-msisdn").value("MSISDN") == scenario.identifiers.msisdn)
        #expect(try await qmicli(sim, "--dms-uim-get-iccid").value("ICCID") == scenario.identifiers.iccid)
        #expect(try await qmicli(sim, "--dms-uim-get-imsi").value("IMSI") == scenario.identifiers.imsi)
        #expect(try await qmicli(sim, "--nas-get-home-network").value("Description") == "Telekom.de")
        let caps = try await qmicli(sim, "--dms-get-capabilities")
        #expect(caps.value("Networks") == "gsm, umts, lte")
        // Version info and sync at open, as ModemManager opens (VERSION_INFO) and a restarted host does (SYNC).
        let opened = try await qmicli(sim, "--device-open-version-info", "--device-open-sync", "--nas-get-system-info")
        #expect(opened.status == 0 && opened.stdout.contains("LTE service"), "\(opened.stderr)")
        let versions = try await qmicli(sim, "--get-service-version-info")
        #expect(versions.stdout.contains("nas (1.25)") && versions.stdout.contains("uim (1.46)"))
    }

    @Test(arguments: [
        ("qmi-nas-get-serving-system-umts-iliad", "--nas-get-serving-system", ["[0]": "umts", "MCC": "222", "MNC": "50", "Description": "Iliad", "3GPP location area code": "24500"]),
        ("qmi-nas-get-system-info-lte-530-24", "--nas-get-system-info", ["MCC": "530", "MNC": "24", "Tracking Area Code": "63001", "Cell ID": "1616133"]),
        ("qmi-nas-get-signal-strength-umts-101", "--nas-get-signal-strength", ["Network 'umts'": "-101 dBm"]),
        ("qmi-dms-get-ids", "--dms-get-ids", ["IMEI": "359225050039973", "ESN": "80997874"]),
        ("qmi-nas-get-cell-location-info-lte-b42", "--nas-get-cell-location-info",
         ["EUTRA Absolute RF Channel Number": "'43390' (E-UTRA band 42: TD 3500)", "Serving Cell ID": "0", "Tracking Area Code": "153"]),
        ("qmi-nas-get-cell-location-info-gsm-21403", "--nas-get-cell-location-info",
         ["PLMN": "21403", "Location Area Code": "1142", "GERAN Absolute RF Channel Number": "989", "Cell ID": "2306"]),
    ])
    func replayedCapturesReadAsRecorded(capture: String, command: String, values: [String: String]) async throws {
        let sim = try await ModemSimulator.start(replay: capture)
        defer { sim.stop() }
        let r = try await qmicli(sim, command)
        #expect(r.status == 0, "\(r.stderr)")
        for (label, value) in values { #expect(r.value(label) == value, "\(label) in\n\(r.stdout)") }
        if capture.contains("signal-strength") { #expect(r.value("Network 'umts'", after: "ECIO:") == "-8.5 dBm") }
        // Anything the capture does not hold: NOT_SUPPORTED, so a client falls back.
        let other = try await qmicli(sim, command == "--nas-get-system-info" ? "--nas-get-serving-system" : "--nas-get-system-info")
        #expect(other.stderr.contains("'NotSupported'"), "\(other.stderr)")
    }

    // MARK: Faults, as a client sees them

    @Test func silenceTimesOutWhileOtherRequestsWork() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-silent-signal")
        defer { sim.stop() }
        let silent = try await qmicli(sim, "--nas-get-signal-info", seconds: 2)
        #expect(silent.timedOut && !silent.stdout.contains("Successfully"))
        #expect(try await qmicli(sim, "--nas-get-system-info").status == 0)
    }

    @Test func slowRepliesArriveLate() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-slow-replies")
        defer { sim.stop() }
        let r = try await qmicli(sim, "--nas-get-serving-system")
        #expect(r.status == 0 && r.value("Registration state") == "registered")
        #expect(r.seconds >= 1.5 && r.seconds < 5, "took \(r.seconds) s")
        let quick = try await qmicli(sim, "--dms-get-ids")
        #expect(quick.status == 0 && quick.seconds < 1.4, "took \(quick.seconds) s")
    }

    @Test func errorStatusesReachTheClient() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-error-status")
        defer { sim.stop() }
        #expect(try await qmicli(sim, "--nas-get-system-info").stderr.contains("QMI protocol error (52): 'DeviceNotReady'"))
        #expect(try await qmicli(sim, "--nas-get-signal-info").stderr.contains("(74): 'InformationUnavailable'"))
        #expect(try await qmicli(sim, "--nas-get-signal-strength").status == 0)
    }

    @Test func garbageBreaksLibqmiFramingAndDMSStillWorks() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-garbage")
        defer { sim.stop() }
        let broken = try await qmicli(sim, "--nas-get-system-info")
        #expect(broken.stderr.contains("endpoint hangup"), "\(broken.stderr)")
        #expect(try await qmicli(sim, "--dms-get-ids").value("IMEI") != nil)
        #expect(sim.log.contains("garbage (48 bytes)"))
    }

    @Test func truncatedFrameTimesOutOnceThenWorks() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-truncated-once")
        defer { sim.stop() }
        let cut = try await qmicli(sim, "--nas-get-system-info", seconds: 2)
        #expect(cut.timedOut && !cut.stdout.contains("Successfully"))
        let whole = try await qmicli(sim, "--nas-get-system-info")
        #expect(whole.status == 0 && whole.stdout.contains("LTE service"), "\(whole.stderr)")
    }

    @Test func portVanishesAndComesBackBehindTheLink() async throws {
        let sim = try await ModemSimulator.start(scenario: "qmi-fault-close-after-requests")
        defer { sim.stop() }
        // Allocate, Get IDs, Release: three answered requests.
        #expect(try await qmicli(sim, "--dms-get-ids").status == 0)
        // The fourth (this run's Allocate CID) is answered, then the port closes under the client.
        let lost = try await qmicli(sim, "--dms-get-ids", seconds: 5)
        #expect(lost.status != 0 && !lost.stdout.contains("IMEI"), "\(lost.stdout)")
        let again = try await sim.readLine(timeout: 5)
        #expect(again.hasPrefix("pty: /dev/pts/"))  // the kernel may hand out the same number again
        _ = try await sim.readLine(timeout: 2)  // link line
        let viaLink = try await TestSupport.run(["qmicli", "-d", sim.link, "--device-open-qmi", "--dms-get-ids"], timeout: 10)
        #expect(viaLink.status == 0 && viaLink.value("IMEI") != nil, "\(viaLink.stderr)")
    }
}

@Suite(.enabled(if: Tools.clientTestsEnabled, "needs qmicli, mbimcli (scripts/setup) and a built reach-modem-sim"))
struct MBIMClientTests {
    static let generationScenarios = [
        "mbim-2g-edge", "mbim-3g-hspa", "mbim-4g-lte", "mbim-4g-rssi-unknown-mbimex2", "mbim-5g-sa-mbimex2", "mbim-5g-sa-mbimex3",
        "mbim-5g-nsa-mbimex2", "mbim-5g-nsa-mbimex3", "mbim-roaming", "mbim-searching", "mbim-denied-reject-cause",
        "mbim-sim-pin-required", "mbim-sim-absent",
    ]

    static func openFlag(_ v: MBIMExVersion) -> [String] {
        switch v {
        case .v1: return []
        case .v2: return ["--device-open-ms-mbimex-v2"]
        case .v3: return ["--device-open-ms-mbimex-v3"]
        }
    }

    func mbimcli(_ sim: ModemSimulator, _ version: MBIMExVersion, _ command: String, seconds: Double = 10)
        async throws -> RunResult
    {
        try await TestSupport.run(["mbimcli", "-d", sim.pty] + Self.openFlag(version) + [command], timeout: seconds)
    }

    static var cases: [(String, MBIMExVersion)] {
        generationScenarios.flatMap { file -> [(String, MBIMExVersion)] in
            let v = (try? Repo.scenario(file))?.mbimex ?? .v1
            return v == .v1 ? [(file, .v1)] : [(file, .v1), (file, v)]
        }
    }

    @Test(arguments: cases)
    func mbimcliAgreesWithTheScenario(file: String, version: MBIMExVersion) async throws {
        let scenario = try Repo.scenario(file)
        let st = scenario.state
        let sim = try await ModemSimulator.start(scenario: file)
        defer { sim.stop() }

        let reg = try await mbimcli(sim, version, "--query-registration-state")
        #expect(reg.status == 0, "\(reg.stderr)")
        let states: [RegistrationState: String] = [.home: "home", .roaming: "roaming", .searching: "searching", .denied: "denied", .idle: "deregistered"]
        #expect(reg.value("Register state") == states[st.registration], "\(reg.stdout)")
        let available = mbimDataClass(fromNames: reg.value("Available data classes") ?? "")
        let generation = st.isRegistered ? st.accessTechnologies.generation : .none
        #expect(AccessTechnologies(mbimDataClass: available).generation == generation, "\(reg.stdout)")
        if st.isRegistered, let op = st.networkOperator {
            #expect(reg.value("Provider ID") == op.providerID && reg.value("Provider name") == op.name)
        }
        if st.registration == .denied { #expect(reg.value("Network error") == "plmn-not-allowed", "\(reg.stdout)") }
        #expect((reg.value("Preferred data classes") != nil) == (version >= .v2))

        let ps = try await mbimcli(sim, version, "--query-packet-service-state")
        let attached = st.packetService == .attached && st.isRegistered
        #expect(ps.value("Packet service state") == (attached ? "attached" : "detached"), "\(ps.stdout)")
        if attached {
            let classes = ps.value("Available data classes") ?? ""
            if version >= .v3 {
                let subclass = ps.value("Data sub class")
                let v3 = st.accessTechnologies.contains(.nr)
                    ? (st.accessTechnologies.isNonStandalone5G ? "5g-endc" : "5g-nr") : "none"
                #expect(subclass == v3, "\(ps.stdout)")
                if st.accessTechnologies.contains(.nr) { #expect(classes.contains("5g") && !classes.contains("5g-")) }
                if let op = st.networkOperator {
                    #expect(ps.value("TAI PLMN MCC") == op.mcc && ps.value("TAI PLMN MNC") == op.mnc, "\(ps.stdout)")
                }
            } else {
                #expect(AccessTechnologies(mbimDataClass: mbimDataClass(fromNames: classes)).generation == st.accessTechnologies.generation)
            }
            #expect((ps.value("Frequency range") != nil) == (version >= .v2))
        }

        let sig = try await mbimcli(sim, version, "--query-signal-state")
        let saOnly = st.accessTechnologies == [.nr]
        let coded = saOnly || st.signal.rssi == nil ? 99 : Int(((st.signal.rssi! + 113) / 2).rounded(.down))
        #expect(sig.value("RSSI [0-31,99]") == String(coded), "\(sig.stdout)")
        if version >= .v2 {
            if st.accessTechnologies.contains(.lte), let rsrp = st.signal.rsrp, let snr = st.signal.sinr {
                #expect(sig.value("RSRP", after: "RSRP/SNR info: 'lte'") == "\(Int(rsrp)) dBm", "\(sig.stdout)")
                // mbimcli prints the lower edge of SNR_n, -23.5 + n/2, as ReachCore's MBIMCoding reads it back.
                #expect(sig.value("SNR", after: "RSRP/SNR info: 'lte'") == "\(QMICLINames.dB(snr)) dB")
            }
            if let nr = st.nrMeasurement, let rsrp = nr.rsrp {
                let system = st.accessTechnologies.isNonStandalone5G ? "5g-nsa" : "5g-sa"
                #expect(sig.value("RSRP", after: "RSRP/SNR info: '\(system)'") == "\(Int(rsrp)) dBm", "\(sig.stdout)")
            }
            if !st.accessTechnologies.contains(.lte) && !st.accessTechnologies.contains(.nr) {
                #expect(sig.stdout.contains("RSRP/SNR info: 'n/a'"), "\(sig.stdout)")
            }
        }

        let sub = try await mbimcli(sim, version, "--query-subscriber-ready-status")
        let ready: [SIMState: String] = [.ready: "initialized", .pinRequired: "device-locked", .absent: "sim-not-inserted"]
        #expect(sub.value("Ready state") == ready[st.sim], "\(sub.stdout)")
        if st.sim == .ready { #expect(sub.value("Subscriber ID") == scenario.identifiers.imsi) }
        #expect((sub.value("Flags") != nil) == (version >= .v3))

        let caps = try await mbimcli(sim, version, "--query-device-caps")
        #expect(caps.value("Firmware info") == scenario.device.revision && caps.value("Hardware info") == scenario.device.model)
        #expect(caps.value("Device ID") == scenario.device.imei)
        #expect(caps.value("Data class")?.contains("5g-sa") == scenario.supports5G)

        let pin = try await mbimcli(sim, version, "--query-pin-state")
        switch st.sim {
        case .absent: #expect(pin.stderr.contains("SimNotInserted"), "\(pin.stderr)")
        case .pinRequired: #expect(pin.value("PIN state") == "locked" && pin.value("PIN type") == "pin1", "\(pin.stdout)")
        default: #expect(pin.value("PIN state") == "unlocked", "\(pin.stdout)")
        }
        #expect(sim.stop() == 0)
    }

    @Test func olderHostsGetTheOlderLayouts() async throws {
        // A v3 device opened with v2 answers v2 (5g-nsa); opened with no MBIMEx, v1.
        let sim = try await ModemSimulator.start(scenario: "mbim-5g-nsa-mbimex3")
        defer { sim.stop() }
        let v2 = try await mbimcli(sim, .v2, "--query-packet-service-state")
        #expect(v2.value("Available data classes") == "lte, 5g-nsa" && v2.value("Data sub class") == nil, "\(v2.stdout)")
        let v3 = try await mbimcli(sim, .v3, "--query-packet-service-state")
        #expect(v3.value("Available data classes") == "lte, 5g" && v3.value("Data sub class") == "5g-endc", "\(v3.stdout)")
        let v1 = try await mbimcli(sim, .v1, "--query-packet-service-state")
        #expect(v1.value("Frequency range") == nil)
        // An MBIM 1.0 device asked for MBIMEx just stays at 1.0 (no Version CID listed).
        let plain = try await ModemSimulator.start(scenario: "mbim-4g-lte")
        defer { plain.stop() }
        let asked = try await mbimcli(plain, .v3, "--query-registration-state")
        #expect(asked.status == 0 && asked.value("Preferred data classes") == nil)
    }

    @Test(arguments: [
        ("mbim-register-state-umts-26006", "--query-registration-state", ["Provider ID": "26006", "Available data classes": "umts, hsdpa, hsupa", "Register state": "home"]),
        ("mbim-device-caps-huawei-e367", "--query-device-caps", ["Hardware info": "CP1E367UM", "Firmware info": "11.810.09.00.00", "Custom data class": "HSPA+"]),
        ("mbim-base-stations-info-lte-21407", "--ms-query-base-stations-info",
         ["Provider id": "21407", "EARFCN": "6400", "Physical cell id": "310", "TAC": "28670", "RSRP": "-103 dBm"]),
    ])
    func replayedCapturesReadAsRecorded(capture: String, command: String, values: [String: String]) async throws {
        let sim = try await ModemSimulator.start(replay: capture)
        defer { sim.stop() }
        let r = try await mbimcli(sim, .v1, command)
        #expect(r.status == 0, "\(r.stderr)")
        for (label, value) in values { #expect(r.value(label) == value, "\(label) in\n\(r.stdout)") }
        let other = try await mbimcli(sim, .v1, "--query-signal-state")
        #expect(other.stderr.contains("NoDeviceSupport"), "\(other.stderr)")
    }

    // MARK: Faults

    @Test func silenceTimesOut() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-silent-signal")
        defer { sim.stop() }
        let silent = try await mbimcli(sim, .v1, "--query-signal-state", seconds: 2)
        #expect(silent.timedOut && !silent.stdout.contains("Signal state"))
        #expect(try await mbimcli(sim, .v1, "--query-registration-state").status == 0)
    }

    @Test func slowRepliesArriveLate() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-slow-replies")
        defer { sim.stop() }
        let r = try await mbimcli(sim, .v1, "--query-registration-state")
        #expect(r.status == 0 && r.value("Register state") == "home")
        #expect(r.seconds >= 1.5 && r.seconds < 5, "took \(r.seconds) s")
    }

    @Test func errorStatusesReachTheClient() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-error-status")
        defer { sim.stop() }
        #expect(try await mbimcli(sim, .v1, "--query-registration-state").stderr.contains("operation failed: Failure"))
        #expect(try await mbimcli(sim, .v1, "--query-signal-state").stderr.contains("operation failed: NoDeviceSupport"))
        #expect(try await mbimcli(sim, .v1, "--query-packet-service-state").status == 0)
    }

    @Test func garbageInsteadOfAnAnswerTimesOutOnce() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-garbage")
        defer { sim.stop() }
        let lost = try await mbimcli(sim, .v1, "--query-registration-state", seconds: 2)
        #expect(lost.timedOut && !lost.stdout.contains("Registration status"))
        let next = try await mbimcli(sim, .v1, "--query-registration-state")
        #expect(next.status == 0 && next.value("Register state") == "home", "\(next.stderr)")
    }

    @Test func truncatedAnswersTimeOut() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-truncated")
        defer { sim.stop() }
        let cut = try await mbimcli(sim, .v1, "--query-packet-service-state", seconds: 2)
        #expect(cut.timedOut && !cut.stdout.contains("Packet service status"))
        #expect(try await mbimcli(sim, .v1, "--query-registration-state").status == 0)
    }

    @Test func portVanishesAndComesBack() async throws {
        let sim = try await ModemSimulator.start(scenario: "mbim-fault-port-vanishes")
        defer { sim.stop() }
        let again = try await sim.readLine(timeout: 6)  // closed at 1.5 s, reopened at 3 s
        #expect(again.hasPrefix("pty: /dev/pts/"))
        _ = try await sim.readLine(timeout: 2)
        #expect(sim.log.contains("port closed"))
        let back = try await TestSupport.run(["mbimcli", "-d", sim.link, "--query-registration-state"], timeout: 10)
        #expect(back.status == 0 && back.value("Register state") == "home", "\(back.stderr)")
    }
}

/// CI must not skip the client tests silently: with REACH_REQUIRE_PRIVILEGED=1 a missing tool is a failure.
@Test(.enabled(if: Tools.required, "runs when REACH_REQUIRE_PRIVILEGED=1"))
func clientToolsArePresentWhenRequired() {
    #expect(Tools.path("qmicli") != nil, "qmicli missing: scripts/setup installs libqmi-utils")
    #expect(Tools.path("mbimcli") != nil, "mbimcli missing: scripts/setup installs libmbim-utils")
    #expect(Tools.simulator != nil, "reach-modem-sim is not built next to the tests")
}
