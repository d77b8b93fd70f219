// WiFi link state as plain values, and the pure derivations on it (band, channel, bars, quality).

public enum WiFiMode: String, Sendable {
    case station, ap, other
}

public enum WiFiBand: String, Sendable {
    case ghz2_4 = "2.4GHz"
    case ghz5 = "5GHz"
    case ghz6 = "6GHz"
    case ghz60 = "60GHz"
}

/// Channel numbering of IEEE 802.11 (the same rules as the kernel's `ieee80211_freq_khz_to_channel`).
public enum WiFiChannel {
    /// The band of a centre frequency in MHz, or nil if it is not a WiFi frequency.
    public static func band(frequencyMHz f: Int) -> WiFiBand? {
        switch f {
        case 2412...2484: return .ghz2_4
        case 4910...5895: return .ghz5
        case 5925...7125: return .ghz6
        case 58320...70200: return .ghz60
        default: return nil
        }
    }

    /// The channel number of a centre frequency in MHz, or nil if it is not a WiFi channel centre.
    public static func channel(frequencyMHz f: Int) -> Int? {
        switch f {
        case 2484: return 14
        case 2412...2472 where (f - 2407) % 5 == 0: return (f - 2407) / 5
        case 5935: return 2  // 6 GHz channel 2 is the one exception to the 6 GHz rule
        case 5955...7115 where (f - 5950) % 5 == 0: return (f - 5950) / 5
        case 4910...4980 where f % 5 == 0: return (f - 4000) / 5
        case 5000...5895 where f % 5 == 0: return (f - 5000) / 5
        case 58320...70200 where (f - 56160) % 2160 == 0: return (f - 56160) / 2160
        default: return nil
        }
    }
}

/// One WiFi interface and, for a station, the access point it is associated with.
public struct WiFiLink: Sendable, Equatable {
    public var interface: String
    public var ifindex: Int?
    public var mode: WiFiMode
    public var associated: Bool
    public var ssid: String?
    public var bssid: String?
    public var frequencyMHz: Int?
    /// Last received frame's signal (NL80211_STA_INFO_SIGNAL) or the BSS signal.
    public var signalDBm: Int?
    /// The kernel's running average (NL80211_STA_INFO_SIGNAL_AVG).
    public var signalAvgDBm: Int?
    /// The average over the AP's beacons (NL80211_STA_INFO_BEACON_SIGNAL_AVG): in mac80211 the same average its
    /// connection quality monitor (CQM) compares with the RSSI thresholds.
    public var beaconSignalAvgDBm: Int?
    public var txBitrateMbps: Double?
    public var rxBitrateMbps: Double?
    public var connectedSeconds: Int?
    public var inactiveMilliseconds: Int?
    /// Associated stations, for an access point.
    public var clients: Int?
    /// The operating channel's width (NL80211_ATTR_CHANNEL_WIDTH), when the interface is on a channel.
    public var channelWidthMHz: Int?
    /// The noise floor of the channel in use (NL80211_SURVEY_INFO_NOISE), when the driver reports it.
    public var noiseDBm: Int?
    /// The interface's transmit power (NL80211_ATTR_WIPHY_TX_POWER_LEVEL, mBm / 100).
    public var txPowerDBm: Double?
    public var error: String?

    public init(interface: String, mode: WiFiMode, associated: Bool = false) {
        self.interface = interface
        self.mode = mode
        self.associated = associated
    }

    public var band: WiFiBand? { frequencyMHz.flatMap { WiFiChannel.band(frequencyMHz: $0) } }
    public var channel: Int? { frequencyMHz.flatMap { WiFiChannel.channel(frequencyMHz: $0) } }

    /// The signal the bars use: the beacon average when present (the one the kernel's CQM thresholds watch, so a
    /// pushed threshold event and the bars agree), else the kernel's average over all frames, else the last frame's.
    public var barSignalDBm: Int? { beaconSignalAvgDBm ?? signalAvgDBm ?? signalDBm }

    /// Bars (0-4) of an associated station; 0 when not associated or nothing was measured.
    public var bars: Int {
        guard associated, let s = barSignalDBm else { return 0 }
        return SignalBars.wifi(rssi: Double(s))
    }

    public var qualityPercent: Int? {
        guard associated, let s = barSignalDBm else { return nil }
        return SignalQuality.percentWiFi(rssi: Double(s))
    }
}
