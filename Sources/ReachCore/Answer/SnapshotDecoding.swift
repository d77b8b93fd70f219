// The way back from the schema-1 JSON to the readings: a program that asks the running agent (`reach status`,
// `reach diag`) gets modems and WiFi as JSON and must merge them with a route it resolved itself, through the same
// `Snapshot.derive()` as a direct read. Only what `ModemState.json` and `WiFiLink.json` write is read back; derived
// members (generation, bars, band, channel, quality for WiFi) are recomputed, so they cannot disagree.

extension ModemState {
    /// A modem from its `wwan[]` entry, or nil when the entry lacks `device` or `protocol`. Unknown or missing
    /// members keep their defaults (a newer agent may add keys).
    public init?(json: JSON) {
        guard let device = json["device"]?.stringValue,
              let proto = json["protocol"]?.stringValue.flatMap(ModemProtocol.init(rawValue:))
        else { return nil }
        self.init(device: device, protocol: proto)
        interface = json["interface"]?.stringValue
        driver = json["driver"]?.stringValue
        present = json["present"]?.boolValue ?? true
        accessTechnologies = AccessTechnologies(
            (json["access_technologies"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(RadioAccessTechnology.init(rawValue:)) })
        registration = json["registration"]?.stringValue.flatMap(RegistrationState.init(rawValue:)) ?? .unknown
        if let op = json["operator"] {
            if let mcc = op["mcc"]?.stringValue, let mnc = op["mnc"]?.stringValue { plmn = PLMN(mcc: mcc, mnc: mnc) }
            operatorName = op["name"]?.stringValue
        }
        if let s = json["signal"] {
            signal = SignalMeasurement(json: s)
            if let nr = s["nr"] { nrSignal = SignalMeasurement(json: nr) }
        }
        qualityPercent = json["quality_percent"]?.intValue.map { Int($0) }
        sim = json["sim"]?.stringValue.flatMap(SIMState.init(rawValue:)) ?? .unknown
        packetService = json["packet_service"]?.stringValue.flatMap(PacketServiceState.init(rawValue:))
        rejectCause = json["reject_cause"]?.intValue.map { Int($0) }
        error = json["error"]?.stringValue
        fault = json["fault"].flatMap(ModemFault.init(json:))
        unread = (json["unread"]?.arrayValue ?? []).compactMap { u in
            guard let r = u["reading"]?.stringValue.flatMap(UnreadReading.Reading.init(rawValue:)) else { return nil }
            return UnreadReading(r, reason: u["reason"]?.stringValue ?? "")
        }
        dataChannels = (json["data_channels"]?.arrayValue ?? []).map(DataChannel.init(json:))
        access = json["access"]?.stringValue.flatMap(ModemAccessPath.init(rawValue:))
        accessReason = json["access_reason"]?.stringValue
        sharedWith = (json["shared_with"]?.arrayValue ?? []).compactMap(\.stringValue)
        manufacturer = json["manufacturer"]?.stringValue
        model = json["model"]?.stringValue
        firmware = json["firmware"]?.stringValue
        cells = CellReadings(
            cell: json["cell"].flatMap(ServingCell.init(json:)),
            carriers: json["carriers"]?.arrayValue.map { $0.compactMap(ComponentCarrier.init(json:)) },
            neighbours: json["neighbours"]?.arrayValue.map { $0.compactMap(NeighbourCell.init(json:)) })
        if let ids = json["identifiers"] {
            identifiers = ModemIdentifiers(
                imei: ids["imei"]?.stringValue, imsi: ids["imsi"]?.stringValue, iccid: ids["iccid"]?.stringValue,
                msisdn: ids["msisdn"]?.stringValue)
        }
    }
}

extension SignalMeasurement {
    /// From a `signal` object (`rssi_dbm`, `rsrp_dbm`, `rsrq_db`, `sinr_db`, `rscp_dbm`, `ecio_db`).
    public init(json: JSON) {
        self.init(
            rssi: json["rssi_dbm"]?.doubleValue, rsrp: json["rsrp_dbm"]?.doubleValue, rsrq: json["rsrq_db"]?.doubleValue,
            sinr: json["sinr_db"]?.doubleValue, rscp: json["rscp_dbm"]?.doubleValue, ecio: json["ecio_db"]?.doubleValue)
    }
}

extension WiFiLink {
    /// A WiFi interface from its `wifi[]` entry, or nil without `interface` and `mode`.
    public init?(json: JSON) {
        guard let name = json["interface"]?.stringValue,
              let mode = json["mode"]?.stringValue.flatMap(WiFiMode.init(rawValue:))
        else { return nil }
        self.init(interface: name, mode: mode, associated: json["associated"]?.boolValue ?? false)
        func int(_ k: String) -> Int? { json[k]?.intValue.map { Int(clamping: $0) } }
        ssid = json["ssid"]?.stringValue
        bssid = json["bssid"]?.stringValue
        frequencyMHz = int("frequency_mhz")
        signalDBm = int("signal_dbm")
        signalAvgDBm = int("signal_avg_dbm")
        beaconSignalAvgDBm = int("beacon_signal_avg_dbm")
        noiseDBm = int("noise_dbm")
        txBitrateMbps = json["tx_bitrate_mbps"]?.doubleValue
        rxBitrateMbps = json["rx_bitrate_mbps"]?.doubleValue
        connectedSeconds = int("connected_seconds")
        inactiveMilliseconds = int("inactive_ms")
        channelWidthMHz = int("channel_width_mhz")
        txPowerDBm = json["tx_power_dbm"]?.doubleValue
        clients = int("clients")
        error = json["error"]?.stringValue
    }
}

extension SourceHealth {
    /// From a `sources.wwan` / `sources.wifi` object.
    public init?(json: JSON) {
        guard let available = json["available"]?.boolValue else { return nil }
        self.init(available: available, reason: json["reason"]?.stringValue)
    }
}

extension Timestamp {
    /// Parses the form `rfc3339` writes ("2026-11-22T10:15:30.123Z": UTC, 0-9 fraction digits). Other offsets
    /// than Z are refused: every timestamp reach writes is UTC.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        guard b.count >= 20, b.last == UInt8(ascii: "Z") else { return nil }
        func number(_ r: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in r {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"),
              b[16] == UInt8(ascii: ":"),
              let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
              let mi = number(14..<16), let s = number(17..<19),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        var nanos: Int64 = 0
        if b[19] == UInt8(ascii: ".") {
            let digits = b.count - 1 - 20
            guard (1...9).contains(digits), let f = number(20..<(b.count - 1)) else { return nil }
            nanos = f
            for _ in digits..<9 { nanos *= 10 }
        } else if b.count != 20 {
            return nil
        }
        // Howard Hinnant's days_from_civil, the inverse of `civil(fromDays:)`.
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        self.init(seconds: days * 86_400 + h * 3600 + mi * 60 + s, nanoseconds: Int32(nanos))
    }

    /// Seconds from `self` to `later` (negative when `later` is earlier).
    public func seconds(until later: Timestamp) -> Double {
        Double(later.seconds - seconds) + Double(Int64(later.nanoseconds) - Int64(nanoseconds)) / 1e9
    }
}

extension DataChannel {
    /// From a `data_channels[]` entry. The channel's state is derived from its clients', so it is not read back.
    public init(json: JSON) {
        self.init(
            interface: json["interface"]?.stringValue, muxID: json["mux_id"]?.intValue.map { Int(clamping: $0) },
            sessionID: json["session_id"]?.intValue.map { Int(clamping: $0) },
            clients: (json["clients"]?.arrayValue ?? []).compactMap { c in
                guard let state = c["state"]?.stringValue.flatMap(DataSessionState.init(rawValue:)) else { return nil }
                return DataClientReading(
                    family: c["family"]?.stringValue.flatMap(AddressFamily.init(rawValue:)), state: state,
                    error: c["error"]?.stringValue, observing: c["observing"]?.boolValue ?? true)
            },
            error: json["error"]?.stringValue)
    }
}

/// The members a serving cell, a carrier and a neighbour share (`radioMembers` in Cells.swift): nil without a known
/// `rat`.
private func radio(_ json: JSON) -> (rat: CellRAT, band: RadioBand?, channel: Int?, physicalID: Int?)? {
    guard let rat = json["rat"]?.stringValue.flatMap(CellRAT.init(rawValue:)) else { return nil }
    func int(_ k: String) -> Int? { json[k]?.intValue.map { Int(clamping: $0) } }
    return (rat, json["band"]?.stringValue.flatMap { RadioBand(name: $0, rat: rat) }, int("channel"), int(rat.physicalIDKey))
}

extension ServingCell {
    /// From a `cell` object; nil without a known `rat`.
    public init?(json: JSON) {
        guard let r = radio(json) else { return nil }
        func int(_ k: String) -> Int? { json[k]?.intValue.map { Int(clamping: $0) } }
        self.init(
            rat: r.rat, band: r.band, bandFromChannel: json["band_from_channel"]?.boolValue ?? false, channel: r.channel,
            physicalID: r.physicalID, tac: int("tac"), lac: int("lac"),
            cellID: json["cell_id"]?.intValue.flatMap { UInt64(exactly: $0) }, bandwidthMHz: json["bandwidth_mhz"]?.doubleValue)
    }
}

extension ComponentCarrier {
    /// From a `carriers[]` entry; nil without a known `role` and `rat`.
    public init?(json: JSON) {
        guard let role = json["role"]?.stringValue.flatMap(Role.init(rawValue:)), let r = radio(json) else { return nil }
        self.init(
            role: role, rat: r.rat, band: r.band, bandFromChannel: json["band_from_channel"]?.boolValue ?? false,
            channel: r.channel, physicalID: r.physicalID, bandwidthMHz: json["bandwidth_mhz"]?.doubleValue,
            state: json["state"]?.stringValue.flatMap(State.init(rawValue:)))
    }
}

extension NeighbourCell {
    /// From a `neighbours[]` entry (its measures are the entry's own `*_dbm`/`*_db` members); nil without a known
    /// `rat`.
    public init?(json: JSON) {
        guard let r = radio(json) else { return nil }
        self.init(
            rat: r.rat, channel: r.channel, band: r.band, physicalID: r.physicalID, signal: SignalMeasurement(json: json),
            lac: json["lac"]?.intValue.map { Int(clamping: $0) }, cellID: json["cell_id"]?.intValue.flatMap { UInt64(exactly: $0) })
    }
}
