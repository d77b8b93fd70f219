import Glibc
import Testing
@testable import ReachCore

/// The output examples of the README and the docs, produced here by the code that prints them (issue 31: the status example showed
/// `▂▄▆_ 3/4` where the same reading gave 4/4, and the signal scale -125…-75 where it was -138…-88). Each example is
/// rebuilt from the reading it describes and compared whole with the README's text: a change to the output, the
/// bars or the scales fails here until the README shows it too.
@Suite struct ReadmeExampleTests {
    /// A file of the repository (README.md, docs/…) as text; empty when it cannot be read.
    static func document(_ name: String) -> String {
        // Tests/ReachCoreTests/ReadmeExampleTests.swift → the repository.
        let repo = String(#filePath).split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        guard let file = fopen(repo + "/" + name, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The indented block (four spaces) that follows the first line containing `marker`, without its indent.
    static func example(after marker: String, in document: String) -> [String]? {
        let lines = Self.document(document).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.contains(marker) }) else { return nil }
        var block: [String] = []
        for line in lines[(start + 1)...] {
            if line.hasPrefix("    ") {
                block.append(String(line.dropFirst(4)))
            } else if line.isEmpty {
                if !block.isEmpty { block.append("") }
            } else if !block.isEmpty {
                break
            }
        }
        while block.last == "" { block.removeLast() }
        return block.isEmpty ? nil : block
    }

    /// "Text output, one glance": a gateway on Ethernet with a backup modem on LTE B3+B7 at RSRP -92 dBm.
    @Test func statusExample() throws {
        var modem = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
        modem.interface = "wwan0"
        modem.driver = "qmi_wwan"
        modem.registration = .home
        modem.accessTechnologies = [.lte]
        modem.operatorName = "Telekom.de"
        modem.plmn = PLMN(mcc: "262", mnc: "01")
        modem.signal = SignalMeasurement(rsrp: -92)
        modem.cells.carriers = [
            ComponentCarrier(role: .pcell, rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, bandwidthMHz: 20),
            ComponentCarrier(role: .scell, rat: .lte, band: RadioBand(.lte, 7), channel: 3050, physicalID: 77, bandwidthMHz: 20, state: .activated),
        ]
        let dead = DualWAN.link("wwan0", .wwan, carrier: false)
        var eth0 = DualWAN.route(DualWAN.eth0, gateway: "192.0.2.1", metric: 10)
        eth0.source = "192.0.2.2"
        let s = DualWAN.snapshot([eth0, DualWAN.route(dead, gateway: "198.18.0.1", metric: 20)], modems: [modem])
        let shown = try #require(
            Self.example(after: "Text output, one glance", in: "docs/how-it-works.md"), "no status example in docs/how-it-works.md")
        let text = SnapshotText.render(s).split(separator: "\n").map(String.init)
        #expect(shown == text, "docs/how-it-works.md's status example is not what reach prints now:\n\(text.joined(separator: "\n"))")
    }

    /// "A route over a CLAT": a cellular-only gateway behind 464XLAT, the route on clat riding on wwan0's modem.
    @Test func clatExample() throws {
        var modem = Chains.modem()
        modem.signal = SignalMeasurement(rsrp: -92)
        let s = Chains.snapshot(Chains.clat(), modems: [modem])
        let shown = try #require(
            Self.example(after: "A route over a CLAT", in: "docs/how-it-works.md"), "no CLAT example in docs/how-it-works.md")
        let text = SnapshotText.render(s).split(separator: "\n").map(String.init)
        #expect(shown == text, "docs/how-it-works.md's CLAT example is not what reach prints now:\n\(text.joined(separator: "\n"))")
    }

    /// "On site: aiming the antenna": 20 samples of a modem on LTE B3+B7 and a WiFi uplink, one a second.
    @Test func signalExample() throws {
        // 10:15:53 UTC.
        let t0 = Timestamp(seconds: 1_788_516_953)
        var model = LiveSignalModel(start: t0)
        let rsrp: [Double] = [-92, -92, -92, -95, -95, -95, -98, -98, -98, -95, -95, -95, -88, -89, -90, -90, -91, -91, -91, -91]
        let rsrq: [Double] = [-9, -9, -9, -9, -9, -9, -9, -9, -9, -9, -9, -9, -8, -8, -8, -9, -9, -9, -9, -9]
        let sinr: [Double] = [14, 14, 14, 10, 10, 10, 9, 9, 9, 12, 12, 12, 16, 15, 15, 14, 14, 14, 14, 14]
        let wifi: [Int] = [-63, -63, -62, -62, -61, -60, -60, -61, -61, -62, -62, -62, -62, -63, -63, -63, -63, -63, -63, -63]
        for i in 0..<20 {
            var m = ModemState(device: "/dev/cdc-wdm0", protocol: .qmi)
            m.registration = .home
            m.accessTechnologies = [.lte]
            m.signal = SignalMeasurement(rssi: -63, rsrp: rsrp[i], rsrq: rsrq[i], sinr: sinr[i])
            m.cells = CellReadings(
                cell: ServingCell(rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123),
                carriers: [
                    ComponentCarrier(role: .pcell, rat: .lte, band: RadioBand(.lte, 3), channel: 1300, physicalID: 123, bandwidthMHz: 20),
                    ComponentCarrier(role: .scell, rat: .lte, band: RadioBand(.lte, 7), channel: 3050, physicalID: 77, bandwidthMHz: 20, state: .activated),
                ])
            var w = WiFiLink(interface: "wlan0", mode: .station)
            w.associated = true
            w.ssid = "uplink"
            w.frequencyMHz = 5180
            w.beaconSignalAvgDBm = wifi[i]
            model.record(time: Timestamp(seconds: t0.seconds + Int64(i)), wwan: [m], wifi: [w])
        }
        let frame = LiveSignalText.frame(model, now: Timestamp(seconds: t0.seconds + 19), intervalSeconds: 1)
        let shown = try #require(
            Self.example(after: "cell is a neighbour's interference", in: "docs/field-guide.md"), "no signal example in docs/field-guide.md")
        #expect(shown == frame, "docs/field-guide.md's signal example is not what reach prints now:\n\(frame.joined(separator: "\n"))")
    }
}
