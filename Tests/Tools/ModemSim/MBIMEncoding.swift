// The simulated state as MBIM information buffers, laid out as libmbim 1.28.2's data/mbim-service-*.json defines
// them: MBIM 1.0 Basic Connect, the MBIMEx 2.0 forms (Register State adds PreferredDataClasses, Packet Service
// adds FrequencyRange, Signal State adds an RSRP/SNR list) and the MBIMEx 3.0 forms (Subscriber Ready Status adds
// Flags, Packet Service uses MbimDataClassV3 with a subclass and a tracking area).

import ReachCore

enum MBIMEncoding {
    // MARK: Coding of physical values

    /// MBIM 1.0 RSSI: 0 = -113 dBm or less, n = -113 + 2n, 31 = -51 dBm or more, 99 = unknown.
    static func codedRSSI(_ dbm: Double?) -> UInt32 {
        guard let dbm else { return MBIMCoding.unknownRSSI }
        return UInt32(min(31, max(0, Int(((dbm + 113) / 2).rounded(.down)))))
    }

    /// MBIMEx 2.0 RSRP: n covers [-157 + n, -156 + n) dBm (0 below -156, 126 at -31 and above); unknown 0xFFFFFFFF.
    static func codedRSRP(_ dbm: Double?) -> UInt32 {
        guard let dbm else { return 0xFFFF_FFFF }
        return UInt32(min(126, max(0, Int((dbm + 157).rounded(.down)))))
    }

    /// MBIMEx 2.0 SNR in 0.5 dB steps (the TS 38.133 SS-SINR mapping): n covers [-23.5 + n/2, -23 + n/2) dB,
    /// 0 below -23 dB, 127 at 40 dB and above; unknown 0xFFFFFFFF. libmbim's mbimcli and ReachCore's MBIMCoding read
    /// back the lower edge, -23.5 + n/2, so they print the scenario's value (ModemManager prints n/2 - 23).
    static func codedSNR(_ db: Double?) -> UInt32 {
        guard let db else { return 0xFFFF_FFFF }
        return UInt32(min(127, max(0, Int(((db + 23.5) * 2).rounded(.down)))))
    }

    /// Three or two decimal digits as BCD nibbles ("262" → 0x0262); a 2-digit MNC sets the top bit, as
    /// MBIMEx 3.0's MBIM_TAI wants it.
    static func bcd(_ digits: String, twoDigitFlag: Bool = false) -> UInt16 {
        var v: UInt16 = 0
        for c in digits.utf8 { v = v << 4 | UInt16(c - 0x30) }
        if twoDigitFlag && digits.count == 2 { v |= 0x8000 }
        return v
    }

    // MARK: Data classes

    static func dataClass(_ state: SimulatedState, options: MBIMOptions) -> UInt32 {
        var bits = options.dataClass ?? state.accessTechnologies.mbimDataClass
        if options.customDataClass != nil { bits |= MBIMDataClass.custom.rawValue }
        return bits
    }

    /// What the device can do: every 3GPP class, plus 5G_NSA | 5G_SA on a 5G device.
    static func supportedDataClasses(supports5G: Bool, options: MBIMOptions) -> UInt32 {
        var bits: MBIMDataClass = [.gprs, .edge, .umts, .hsdpa, .hsupa, .lte]
        if supports5G { bits.formUnion([.nr5gNSA, .nr5gSA]) }
        if options.customDataClass != nil { bits.insert(.custom) }
        return bits.rawValue
    }

    // MARK: Basic Connect

    static func deviceCaps(_ scenario: Scenario) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.u32(1)  // device type: embedded
        b.u32(1)  // cellular class: GSM
        b.u32(1)  // voice class: no voice
        b.u32(2)  // SIM class: removable
        b.u32(supportedDataClasses(supports5G: scenario.supports5G, options: scenario.mbim))
        b.u32(3)  // SMS caps: PDU receive and send
        b.u32(1)  // control caps: manual registration
        b.u32(8)  // max sessions
        b.string(scenario.mbim.customDataClass)
        b.string(scenario.device.imei)
        b.string(scenario.device.revision)
        b.string(scenario.device.model)
        return b.build()
    }

    /// MbimSubscriberReadyState: INITIALIZED 1, SIM_NOT_INSERTED 2, BAD_SIM 3, DEVICE_LOCKED 6.
    static func readyState(_ sim: SIMState) -> UInt32 {
        switch sim {
        case .ready: return 1
        case .absent: return 2
        case .error: return 3
        case .pinRequired, .pukRequired: return 6
        case .notInitialized: return 0
        case .unknown: return 4
        }
    }

    static func subscriberReadyStatus(_ state: SimulatedState, _ ids: Identifiers, v3: Bool) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.u32(readyState(state.sim))
        if v3 { b.u32(0b110) }  // flags: SIM removability known, removable
        let ready = state.sim == .ready
        let present = state.sim != .absent && state.sim != .error
        b.string(ready ? ids.imsi : nil)
        b.string(present ? ids.iccid : nil)
        b.u32(0)  // ready info
        let numbers = ready ? [ids.msisdn].compactMap { $0 } : []
        b.u32(UInt32(numbers.count))
        for n in numbers { b.string(n) }
        return b.build()
    }

    static func radioState(on: Bool) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.u32(1)  // hardware switch on
        b.u32(on ? 1 : 0)
        return b.build()
    }

    /// PIN query: (status, buffer). PIN1 locked (PinType PIN1 2, PUK1 11; PinState LOCKED 1); a ready SIM answers
    /// PinType NONE, UNLOCKED. Without a card there is no PIN: SIM_NOT_INSERTED / BAD_SIM.
    static func pin(_ sim: SIMState) -> (status: UInt32, buffer: [UInt8]) {
        var b = MBIMBufferBuilder()
        switch sim {
        case .absent: return (MBIMStatus.simNotInserted, [])
        case .error: return (MBIMStatus.badSIM, [])
        case .pinRequired:
            b.u32(2)
            b.u32(1)
            b.u32(3)
        case .pukRequired:
            b.u32(11)
            b.u32(1)
            b.u32(10)
        default:
            b.u32(0)
            b.u32(0)
            b.u32(3)
        }
        return (MBIMStatus.success, b.build())
    }

    /// MbimProvider struct of Home Provider.
    static func homeProvider(_ home: NetworkOperator) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.string(home.providerID)
        b.u32(1)  // provider state: home
        b.string(home.name)
        b.u32(1)  // cellular class GSM
        b.u32(MBIMCoding.unknownRSSI)
        b.u32(99)  // error rate unknown
        return b.build()
    }

    /// MbimRegisterState: DEREGISTERED 1, SEARCHING 2, HOME 3, ROAMING 4, DENIED 6.
    static func registerStateValue(_ r: RegistrationState) -> UInt32 {
        switch r {
        case .idle: return 1
        case .searching: return 2
        case .home: return 3
        case .roaming: return 4
        case .denied: return 6
        default: return 0
        }
    }

    static func registerState(_ state: SimulatedState, _ scenario: Scenario, v2: Bool) -> [UInt8] {
        let visible = state.isRegistered || state.registration == .denied
        var b = MBIMBufferBuilder()
        b.u32(state.registration == .denied ? UInt32(state.rejectCause ?? 0) : 0)  // NwError (3GPP cause)
        b.u32(registerStateValue(state.registration))
        b.u32(1)  // register mode automatic
        b.u32(state.isRegistered ? dataClass(state, options: scenario.mbim) : 0)
        b.u32(1)  // current cellular class GSM
        b.string(visible ? state.networkOperator?.providerID : nil)
        b.string(visible ? state.networkOperator?.name : nil)
        b.string(state.registration == .roaming ? "Roaming" : nil)
        b.u32(2)  // registration flag: packet service automatic attach
        if v2 { b.u32(supportedDataClasses(supports5G: scenario.supports5G, options: scenario.mbim)) }
        return b.build()
    }

    /// Nominal peak rates of the newest technology in use (uplink, downlink), for Packet Service.
    static func speeds(_ rats: AccessTechnologies) -> (up: UInt64, down: UInt64) {
        if rats.contains(.nr) { return (200_000_000, 1_000_000_000) }
        switch rats.primary {
        case .lte?, .lteCatM?, .lteNBIoT?: return (50_000_000, 150_000_000)
        case .hspaPlus?: return (5_760_000, 42_200_000)
        case .hsdpa?, .hsupa?, .hspa?: return (5_760_000, 14_400_000)
        case .umts?, .tdScdma?: return (384_000, 384_000)
        case .edge?: return (118_400, 236_800)
        case .gsm?, .gprs?: return (42_800, 85_600)
        case nil: return (0, 0)
        default: return (153_600, 3_100_000)
        }
    }

    static func packetService(_ state: SimulatedState, _ scenario: Scenario, version: MBIMExVersion) -> [UInt8] {
        let attached = state.packetService == .attached && state.isRegistered
        let rats = attached ? state.accessTechnologies : .none
        var b = MBIMBufferBuilder()
        b.u32(0)  // NwError
        b.u32(attached ? 2 : 4)  // ATTACHED 2, DETACHED 4
        let (v3Class, v3Subclass) = rats.mbimDataClassV3
        if version >= .v3 {
            var bits = scenario.mbim.dataClass ?? v3Class
            if scenario.mbim.customDataClass != nil && attached { bits |= MBIMDataClass.custom.rawValue }
            b.u32(bits)
        } else {
            b.u32(attached ? dataClass(state, options: scenario.mbim) : 0)
        }
        let s = speeds(rats)
        b.u64(s.up)
        b.u64(s.down)
        if version >= .v2 { b.u32(rats.contains(.nr) ? 1 : 0) }  // frequency range: FR1 for NR, else unknown
        if version >= .v3 {
            b.u32(scenario.mbim.dataSubclass ?? v3Subclass)
            // MBIM_TAI: PLMN in BCD and the tracking area code.
            let op = attached ? state.networkOperator : nil
            b.u16(op.map { bcd($0.mcc) } ?? 0)
            b.u16(op.map { bcd($0.mnc, twoDigitFlag: true) } ?? 0)
            b.u32(op == nil ? 0 : state.cell.tac)
        }
        return b.build()
    }

    /// What the host set with Signal State set (interval s, RSSI threshold in coded steps, error-rate threshold).
    struct SignalConfig: Equatable {
        var interval: UInt32 = 5
        var rssiThreshold: UInt32 = 2
        var errorRateThreshold: UInt32 = 0xFFFF_FFFF
    }

    /// The RSRP/SNR entries of Signal State v2: the LTE cell and the NR leg (5G_NSA) or the NR cell (5G_SA).
    static func rsrpSNREntries(_ state: SimulatedState) -> [(rsrp: UInt32, snr: UInt32, system: UInt32)] {
        var entries: [(UInt32, UInt32, UInt32)] = []
        let rats = state.accessTechnologies
        if rats.members.contains(where: { $0.family == .lte }) {
            entries.append((codedRSRP(state.signal.rsrp), codedSNR(state.signal.sinr), MBIMDataClass.lte.rawValue))
        }
        if rats.contains(.nr), let nr = state.nrMeasurement {
            let system = rats.isNonStandalone5G ? MBIMDataClass.nr5gNSA.rawValue : MBIMDataClass.nr5gSA.rawValue
            entries.append((codedRSRP(nr.rsrp), codedSNR(nr.sinr), system))
        }
        return entries
    }

    static func signalState(_ state: SimulatedState, config: SignalConfig, v2: Bool) -> [UInt8] {
        var b = MBIMBufferBuilder()
        // RSSI of the serving cell; a 5G SA cell has no RSSI in MBIM terms (its RSRP/SNR entry says it all).
        let saOnly = state.accessTechnologies.contains(.nr) && !state.accessTechnologies.isNonStandalone5G
        b.u32(saOnly ? MBIMCoding.unknownRSSI : codedRSSI(state.signal.rssi))
        b.u32(99)  // error rate unknown
        b.u32(config.interval)
        b.u32(config.rssiThreshold)
        b.u32(config.errorRateThreshold)
        if v2 {
            let entries = rsrpSNREntries(state)
            if entries.isEmpty {
                b.u32(0)
                b.u32(0)
            } else {
                var list = ByteWriter()
                list.u32(UInt32(entries.count))
                for e in entries {
                    list.u32(e.rsrp)
                    list.u32(e.snr)
                    list.u32(0xFFFF_FFFF)  // RSRP threshold unspecified
                    list.u32(0xFFFF_FFFF)  // SNR threshold unspecified
                    list.u32(e.system)
                }
                b.reference(list.bytes)
            }
        }
        return b.build()
    }

    /// The CIDs each service offers; MS Basic Connect Extensions (with Version) only with MBIMEx 2.0 or later.
    static let basicConnectCIDs: [UInt32] = [1, 2, 3, 4, 6, 9, 10, 11, 12, 16, 19]

    /// `baseStations`: MS Basic Connect Extensions Base Stations Info (11) too, for a scenario with cells; `connect`:
    /// Basic Connect Connect (12), for a scenario that answers it.
    static func deviceServices(mbimex: MBIMExVersion, baseStations: Bool = false, connect: Bool = true) -> [UInt8] {
        let basic = basicConnectCIDs.filter { connect || $0 != MBIMServices.BasicConnect.connect }
        var services: [(MBIMUUID, [UInt32])] = [(MBIMServices.basicConnect, basic)]
        var extensions: [UInt32] = baseStations ? [MBIMServices.MSBasicConnectExtensions.baseStationsInfo] : []
        if mbimex >= .v2 { extensions.append(MBIMServices.MSBasicConnectExtensions.version) }
        if !extensions.isEmpty { services.append((MBIMServices.msBasicConnectExtensions, extensions)) }
        var b = MBIMBufferBuilder()
        b.u32(UInt32(services.count))
        b.u32(0)  // max DSS sessions
        for (uuid, cids) in services {
            var e = ByteWriter()
            e.append(uuid.bytes)
            e.u32(0)  // DSS payload
            e.u32(0)  // max DSS instances
            e.u32(UInt32(cids.count))
            cids.forEach { e.u32($0) }
            b.reference(e.bytes)
        }
        return b.build()
    }

    static func subscribeList(_ events: [(MBIMUUID, [UInt32])]) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.u32(UInt32(events.count))
        for (uuid, cids) in events {
            var e = ByteWriter()
            e.append(uuid.bytes)
            e.u32(UInt32(cids.count))
            cids.forEach { e.u32($0) }
            b.reference(e.bytes)
        }
        return b.build()
    }

    static func parseSubscribeList(_ buffer: [UInt8]) throws(DecodeError) -> [(MBIMUUID, [UInt32])] {
        var r = MBIMBufferReader(buffer)
        let count = Int(try r.u32("EventsCount"))
        guard count <= 64 else { throw DecodeError("EventsCount \(count) is implausible") }
        var events: [(MBIMUUID, [UInt32])] = []
        for i in 0..<count {
            let entry = try r.reference("Events[\(i)]")
            var e = ByteReader(entry)
            let uuid = MBIMUUID(try e.take(16, "Events[\(i)] service"))
            let n = Int(try e.u32("Events[\(i)] CidsCount"))
            guard n <= 256 else { throw DecodeError("Events[\(i)] CidsCount \(n) is implausible") }
            var cids: [UInt32] = []
            for _ in 0..<n { cids.append(try e.u32("Events[\(i)] Cids")) }
            events.append((uuid, cids))
        }
        return events
    }
}
