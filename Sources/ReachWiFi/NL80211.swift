// nl80211 messages decoded from bytes into plain values: interfaces, scan results (BSS), stations, events.
//
// Numbers are the kernel UAPI's (`linux/nl80211.h`, a stable ABI). Each decoder takes the payload
// libnl hands over (generic netlink header + attributes) and returns nil only when the message is not what it
// claims to be (too short, or a required attribute such as the interface index is missing).
import ReachCore

public enum NL80211 {
    /// The generic netlink family name the kernel registers when cfg80211 is loaded.
    public static let familyName = "nl80211"

    /// `enum nl80211_commands` (the subset used here).
    public enum Command {
        public static let getInterface: UInt8 = 5
        public static let setInterface: UInt8 = 6
        public static let newInterface: UInt8 = 7
        public static let delInterface: UInt8 = 8
        public static let startAP: UInt8 = 15
        public static let stopAP: UInt8 = 16
        public static let getStation: UInt8 = 17
        public static let newStation: UInt8 = 19
        public static let delStation: UInt8 = 20
        public static let getScan: UInt8 = 32
        public static let triggerScan: UInt8 = 33
        public static let newScanResults: UInt8 = 34
        public static let scanAborted: UInt8 = 35
        public static let authenticate: UInt8 = 37
        public static let associate: UInt8 = 38
        public static let deauthenticate: UInt8 = 39
        public static let disassociate: UInt8 = 40
        public static let connect: UInt8 = 46
        public static let getSurvey: UInt8 = 50
        public static let newSurveyResults: UInt8 = 51
        public static let roam: UInt8 = 47
        public static let disconnect: UInt8 = 48
        public static let setCQM: UInt8 = 63
        public static let notifyCQM: UInt8 = 64
        public static let channelSwitchNotify: UInt8 = 88
    }

    /// `enum nl80211_attrs` (the subset used here).
    public enum Attribute {
        public static let wiphy: UInt16 = 1
        public static let ifindex: UInt16 = 3
        public static let ifname: UInt16 = 4
        public static let iftype: UInt16 = 5
        public static let mac: UInt16 = 6
        public static let stationInfo: UInt16 = 21
        public static let wiphyFrequency: UInt16 = 38
        public static let generation: UInt16 = 46
        public static let bss: UInt16 = 47
        public static let ssid: UInt16 = 52
        public static let reasonCode: UInt16 = 54
        public static let disconnectedByAP: UInt16 = 71
        public static let statusCode: UInt16 = 72
        public static let cqm: UInt16 = 94
        public static let surveyInfo: UInt16 = 84
        public static let wiphyTxPowerLevel: UInt16 = 98
        public static let wdev: UInt16 = 153
        public static let channelWidth: UInt16 = 159
        public static let centerFrequency1: UInt16 = 160
        public static let extendedFeatures: UInt16 = 217
    }

    /// `enum nl80211_sta_info`.
    public enum StationInfoAttribute {
        public static let inactiveTime: UInt16 = 1
        public static let rxBytes: UInt16 = 2
        public static let txBytes: UInt16 = 3
        public static let signal: UInt16 = 7
        public static let txBitrate: UInt16 = 8
        public static let signalAverage: UInt16 = 13
        public static let rxBitrate: UInt16 = 14
        public static let connectedTime: UInt16 = 16
        public static let beaconSignalAverage: UInt16 = 30
    }

    /// `enum nl80211_rate_info`.
    public enum RateInfoAttribute {
        public static let bitrate: UInt16 = 1
        public static let bitrate32: UInt16 = 5
    }

    /// `enum nl80211_bss`.
    public enum BSSAttribute {
        public static let bssid: UInt16 = 1
        public static let frequency: UInt16 = 2
        public static let informationElements: UInt16 = 6
        public static let signalMBm: UInt16 = 7
        public static let status: UInt16 = 9
        public static let beaconIEs: UInt16 = 11
    }

    /// `enum nl80211_survey_info`.
    public enum SurveyAttribute {
        public static let frequency: UInt16 = 1
        public static let noise: UInt16 = 2
        public static let inUse: UInt16 = 3
    }

    /// `enum nl80211_attr_cqm` and `enum nl80211_cqm_rssi_threshold_event`.
    public enum CQMAttribute {
        public static let rssiThreshold: UInt16 = 1
        public static let rssiHysteresis: UInt16 = 2
        public static let rssiThresholdEvent: UInt16 = 3
        public static let packetLossEvent: UInt16 = 4
        public static let beaconLossEvent: UInt16 = 8
        public static let rssiLevel: UInt16 = 9
    }

    /// `NL80211_EXT_FEATURE_CQM_RSSI_LIST`: the wiphy accepts several RSSI thresholds at once.
    public static let extendedFeatureCQMRSSIList = 13

    /// `enum nl80211_iftype`.
    public enum InterfaceType: UInt32, Sendable {
        case unspecified = 0, adhoc, station, ap, apVLAN, wds, monitor, meshPoint, p2pClient, p2pGO, p2pDevice, ocb,
            nan

        /// Stations (and P2P clients) follow an access point; access points (and P2P group owners) serve clients.
        public var mode: WiFiMode {
            switch self {
            case .station, .p2pClient: return .station
            case .ap, .p2pGO: return .ap
            default: return .other
            }
        }
    }

    /// `enum nl80211_bss_status`.
    public enum BSSStatus: UInt32, Sendable {
        case authenticated = 0, associated = 1, ibssJoined = 2
    }

    /// `enum nl80211_chan_width` → MHz.
    public static func channelWidthMHz(_ code: UInt32) -> Int? {
        switch code {
        case 0, 1: return 20
        case 2: return 40
        case 3: return 80
        case 4, 5: return 160
        case 6: return 5
        case 7: return 10
        case 8: return 1
        case 9: return 2
        case 10: return 4
        case 11: return 8
        case 12: return 16
        case 13: return 320
        default: return nil
        }
    }
}

// MARK: - Messages

extension NL80211 {
    /// One generic netlink message: `struct genlmsghdr` (cmd u8, version u8, reserved u16) and its attributes.
    public struct Message: Sendable, Equatable {
        public var command: UInt8
        public var version: UInt8
        public var attributes: NetlinkAttributes

        /// `payload` is what follows the nlmsghdr. Nil when it is shorter than the genl header.
        public init?(payload: [UInt8]) {
            guard payload.count >= 4 else { return nil }
            command = payload[0]
            version = payload[1]
            attributes = NetlinkAttributes(payload[4...])
        }

        /// From a whole netlink message (nlmsghdr included), as captures store them. Nil when the header's length
        /// is impossible.
        public init?(netlinkMessage bytes: [UInt8]) {
            guard bytes.count >= 20, let length = NativeInteger.read(UInt32.self, bytes), length >= 20,
                Int(length) <= bytes.count
            else { return nil }
            self.init(payload: Array(bytes[16..<Int(length)]))
        }

        public var ifindex: Int? { attributes.u32(Attribute.ifindex).map(Int.init) }
    }

    /// A network interface as NEW_INTERFACE (the reply to GET_INTERFACE) describes it.
    public struct Interface: Sendable, Equatable {
        public var ifindex: Int
        public var name: String
        public var type: InterfaceType?
        public var rawType: UInt32?
        public var wiphy: Int?
        public var mac: String?
        /// The SSID of the BSS a station is connected to, or an AP's SSID (kernels ≥ 4.x send it).
        public var ssid: [UInt8]?
        public var frequencyMHz: Int?
        public var channelWidthMHz: Int?
        public var centerFrequency1MHz: Int?
        /// Transmit power in mBm (1/100 dBm).
        public var txPowerMBm: Int?

        public init?(_ message: Message) {
            let a = message.attributes
            guard let index = a.u32(Attribute.ifindex), let name = a.string(Attribute.ifname), !name.isEmpty else {
                return nil
            }
            ifindex = Int(index)
            self.name = name
            rawType = a.u32(Attribute.iftype)
            type = rawType.flatMap(InterfaceType.init(rawValue:))
            wiphy = a.u32(Attribute.wiphy).map(Int.init)
            mac = a.bytes(Attribute.mac).flatMap(MACAddress.format)
            ssid = a.bytes(Attribute.ssid).flatMap { $0.count <= 32 ? $0 : nil }
            frequencyMHz = a.u32(Attribute.wiphyFrequency).map(Int.init)
            channelWidthMHz = a.u32(Attribute.channelWidth).flatMap(NL80211.channelWidthMHz)
            centerFrequency1MHz = a.u32(Attribute.centerFrequency1).map(Int.init)
            txPowerMBm = a.s32(Attribute.wiphyTxPowerLevel).map(Int.init)
        }

        public var mode: WiFiMode { type?.mode ?? .other }
    }

    /// One scan result (NEW_SCAN_RESULTS, the parts of a GET_SCAN dump).
    public struct BSS: Sendable, Equatable {
        public var ifindex: Int?
        public var bssid: String
        public var frequencyMHz: Int?
        /// Signal in mBm (1/100 dBm), for hardware that reports dBm.
        public var signalMBm: Int?
        public var status: BSSStatus?
        /// The SSID element (IE 0) of the probe response or beacon.
        public var ssid: [UInt8]?

        public init?(_ message: Message) {
            guard let bss = message.attributes.nested(Attribute.bss),
                let bssid = bss.bytes(BSSAttribute.bssid).flatMap(MACAddress.format)
            else { return nil }
            ifindex = message.ifindex
            self.bssid = bssid
            frequencyMHz = bss.u32(BSSAttribute.frequency).map(Int.init)
            signalMBm = bss.s32(BSSAttribute.signalMBm).map(Int.init)
            status = bss.u32(BSSAttribute.status).flatMap(BSSStatus.init(rawValue:))
            ssid =
                (bss.bytes(BSSAttribute.informationElements)).flatMap { InformationElements.ssid(in: $0) }
                ?? bss.bytes(BSSAttribute.beaconIEs).flatMap { InformationElements.ssid(in: $0) }
        }

        /// mBm → dBm, truncating toward zero as iw prints it.
        public var signalDBm: Int? { signalMBm.map { $0 / 100 } }
    }

    /// A station entry (NEW_STATION: the reply to GET_STATION, or the event when a peer is added).
    public struct Station: Sendable, Equatable {
        public var ifindex: Int?
        public var mac: String
        public var signalDBm: Int?
        public var signalAverageDBm: Int?
        public var beaconSignalAverageDBm: Int?
        public var txBitrateMbps: Double?
        public var rxBitrateMbps: Double?
        public var connectedSeconds: Int?
        public var inactiveMilliseconds: Int?
        public var rxBytes: Int?
        public var txBytes: Int?

        public init?(_ message: Message) {
            guard let mac = message.attributes.bytes(Attribute.mac).flatMap(MACAddress.format) else { return nil }
            ifindex = message.ifindex
            self.mac = mac
            guard let info = message.attributes.nested(Attribute.stationInfo) else { return }
            signalDBm = info.s8(StationInfoAttribute.signal).map(Int.init)
            signalAverageDBm = info.s8(StationInfoAttribute.signalAverage).map(Int.init)
            beaconSignalAverageDBm = info.s8(StationInfoAttribute.beaconSignalAverage).map(Int.init)
            txBitrateMbps = info.nested(StationInfoAttribute.txBitrate).flatMap(Station.bitrate)
            rxBitrateMbps = info.nested(StationInfoAttribute.rxBitrate).flatMap(Station.bitrate)
            connectedSeconds = info.u32(StationInfoAttribute.connectedTime).map(Int.init)
            inactiveMilliseconds = info.u32(StationInfoAttribute.inactiveTime).map(Int.init)
            rxBytes = info.u32(StationInfoAttribute.rxBytes).map(Int.init)
            txBytes = info.u32(StationInfoAttribute.txBytes).map(Int.init)
        }

        /// `nl80211_rate_info`: BITRATE32 (u32) when present, else BITRATE (u16), both in 100 kbit/s.
        /// 0 means the rate is unknown (legacy rates the driver could not express), so it reads as absent.
        static func bitrate(_ rate: NetlinkAttributes) -> Double? {
            let units =
                rate.u32(RateInfoAttribute.bitrate32).map(Int.init)
                ?? rate.u16(RateInfoAttribute.bitrate).map(Int.init)
            guard let units, units > 0 else { return nil }
            return Double(units) / 10
        }
    }
}

extension NL80211 {
    /// One channel's survey (NEW_SURVEY_RESULTS, the parts of a GET_SURVEY dump): its noise floor.
    public struct Survey: Sendable, Equatable {
        public var frequencyMHz: Int
        public var noiseDBm: Int?
        /// The channel the interface is operating on.
        public var inUse: Bool

        public init?(_ message: Message) {
            guard let info = message.attributes.nested(Attribute.surveyInfo),
                let frequency = info.u32(SurveyAttribute.frequency)
            else { return nil }
            frequencyMHz = Int(frequency)
            noiseDBm = info.s8(SurveyAttribute.noise).map(Int.init)
            inUse = info.flag(SurveyAttribute.inUse)
        }
    }
}

// MARK: - Events

extension NL80211 {
    /// What a multicast notification says, reduced to what changes the link state.
    public enum Event: Sendable, Equatable {
        case interfaceAdded(ifindex: Int)
        case interfaceRemoved(ifindex: Int)
        case interfaceChanged(ifindex: Int)
        /// CONNECT: `status` is the IEEE 802.11 status code (0 = success).
        case connected(ifindex: Int, bssid: String?, status: Int?)
        case roamed(ifindex: Int, bssid: String?)
        case disconnected(ifindex: Int, reason: Int?, byAP: Bool)
        case stationAdded(ifindex: Int, mac: String?)
        case stationRemoved(ifindex: Int, mac: String?)
        /// NOTIFY_CQM: the signal went below (`rising: false`) or above a threshold; `rssiDBm` when the kernel said.
        case signalThreshold(ifindex: Int, rising: Bool, rssiDBm: Int?)
        case beaconLoss(ifindex: Int)
        case packetLoss(ifindex: Int, packets: Int?)
        case channelSwitched(ifindex: Int, frequencyMHz: Int?)
        case apStarted(ifindex: Int)
        case apStopped(ifindex: Int)
        /// A message that does not change the link state (scan results, frames, unknown commands).
        case ignored(command: UInt8)

        public init(_ message: Message) {
            guard let ifindex = message.ifindex else {
                self = .ignored(command: message.command)
                return
            }
            let a = message.attributes
            let mac = a.bytes(Attribute.mac).flatMap(MACAddress.format)
            switch message.command {
            case Command.newInterface: self = .interfaceAdded(ifindex: ifindex)
            case Command.delInterface: self = .interfaceRemoved(ifindex: ifindex)
            case Command.setInterface: self = .interfaceChanged(ifindex: ifindex)
            case Command.connect:
                self = .connected(ifindex: ifindex, bssid: mac, status: a.u16(Attribute.statusCode).map(Int.init))
            case Command.roam: self = .roamed(ifindex: ifindex, bssid: mac)
            case Command.disconnect:
                self = .disconnected(
                    ifindex: ifindex, reason: a.u16(Attribute.reasonCode).map(Int.init),
                    byAP: a.flag(Attribute.disconnectedByAP))
            case Command.newStation: self = .stationAdded(ifindex: ifindex, mac: mac)
            case Command.delStation: self = .stationRemoved(ifindex: ifindex, mac: mac)
            case Command.notifyCQM:
                let cqm = a.nested(Attribute.cqm)
                if let direction = cqm?.u32(CQMAttribute.rssiThresholdEvent) {
                    self = .signalThreshold(
                        ifindex: ifindex, rising: direction == 1,
                        rssiDBm: cqm?.s32(CQMAttribute.rssiLevel).map(Int.init))
                } else if cqm?.flag(CQMAttribute.beaconLossEvent) == true {
                    self = .beaconLoss(ifindex: ifindex)
                } else if let lost = cqm?.u32(CQMAttribute.packetLossEvent) {
                    self = .packetLoss(ifindex: ifindex, packets: Int(lost))
                } else {
                    self = .ignored(command: message.command)
                }
            case Command.channelSwitchNotify:
                self = .channelSwitched(ifindex: ifindex, frequencyMHz: a.u32(Attribute.wiphyFrequency).map(Int.init))
            case Command.startAP: self = .apStarted(ifindex: ifindex)
            case Command.stopAP: self = .apStopped(ifindex: ifindex)
            default: self = .ignored(command: message.command)
            }
        }

        /// The interface the event is about (nil for ignored messages).
        public var ifindex: Int? {
            switch self {
            case .interfaceAdded(let i), .interfaceRemoved(let i), .interfaceChanged(let i), .beaconLoss(let i),
                .apStarted(let i), .apStopped(let i):
                return i
            case .connected(let i, _, _), .disconnected(let i, _, _), .signalThreshold(let i, _, _): return i
            case .roamed(let i, _), .stationAdded(let i, _), .stationRemoved(let i, _), .packetLoss(let i, _),
                .channelSwitched(let i, _):
                return i
            case .ignored: return nil
            }
        }

        /// Whether the link state should be read again because of this event.
        public var changesState: Bool {
            if case .ignored = self { return false }
            return true
        }
    }
}

// MARK: - Bytes → text

/// 802.11 information elements (id u8, length u8, data).
public enum InformationElements {
    /// The SSID element (id 0), or nil when absent or truncated. A hidden network's empty SSID is `[]`.
    public static func ssid(in ies: [UInt8]) -> [UInt8]? {
        var i = 0
        while i + 2 <= ies.count {
            let id = ies[i]
            let length = Int(ies[i + 1])
            guard i + 2 + length <= ies.count else { return nil }
            if id == 0 { return length <= 32 ? Array(ies[(i + 2)..<(i + 2 + length)]) : nil }
            i += 2 + length
        }
        return nil
    }
}

public enum MACAddress {
    /// "aa:bb:cc:dd:ee:ff" from 6 bytes; nil for any other length.
    public static func format(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 6 else { return nil }
        return bytes.map { hex2($0) }.joined(separator: ":")
    }

    /// 6 bytes from "aa:bb:cc:dd:ee:ff".
    public static func parse(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }

    static func hex2(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
    }
}

/// SSIDs are up to 32 arbitrary octets. They are shown as text where they are text: printable ASCII and valid
/// UTF-8 pass through; control characters, bytes that are not valid UTF-8, and the backslash itself become `\xNN`
/// (iw's `print_ssid_escaped` convention, extended to keep UTF-8 names readable), as do a leading or trailing
/// space, which would otherwise be invisible. The result is always valid UTF-8, so JSON stays valid.
public enum SSIDText {
    public static func render(_ bytes: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b >= 0x21 && b <= 0x7E && b != 0x5C {
                out.unicodeScalars.append(Unicode.Scalar(b))
                i += 1
                continue
            }
            if b == 0x20 && i != 0 && i != bytes.count - 1 {
                out.append(" ")
                i += 1
                continue
            }
            if b >= 0xC2, let (scalar, length) = decodeUTF8(bytes, at: i), !isControl(scalar) {
                out.unicodeScalars.append(scalar)
                i += length
                continue
            }
            out += "\\x" + MACAddress.hex2(b)
            i += 1
        }
        return out
    }

    private static func isControl(_ s: Unicode.Scalar) -> Bool {
        (0x80...0x9F).contains(s.value) || s.properties.generalCategory == .control
    }

    /// One multi-byte UTF-8 sequence starting at `i` (strict: no overlongs, no surrogates).
    private static func decodeUTF8(_ b: [UInt8], at i: Int) -> (Unicode.Scalar, Int)? {
        let lead = b[i]
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return nil
        }
        guard i + length <= b.count else { return nil }
        var decoder = UTF8()
        var iterator = b[i..<(i + length)].makeIterator()
        guard case .scalarValue(let scalar) = decoder.decode(&iterator), scalar.utf8.count == length else {
            return nil
        }
        return (scalar, length)
    }
}
