// The QMI cell answers of the simulated modem: NAS Get RF Band Information (0x0031), Get Cell Location Info (0x0043)
// and Get LTE CPHY CA Info (0x00AC), laid out as libqmi 1.32.2's data/qmi-service-nas.json defines them.
//
// Units on the wire: LTE and NR5G measures in 0.1 dB (signed 16 bits), UMTS Info v2 RSCP and Ec/Io in whole dB, a
// GERAN RX level as the TS 45.008 code; PLMNs as 3 BCD octets (TS 24.008 §10.5.1.3); bands as QmiNasActiveBand;
// bandwidths as QmiNasDLBandwidth. A modem whose scenario gives no cells answers all three "not supported"; one that
// is not registered answers INFORMATION_UNAVAILABLE; Get LTE CPHY CA Info off LTE answers the same.

import ReachCore

extension QMIMessageID {
    public static let nasGetRFBandInformation: UInt16 = 0x0031
    public static let nasGetCellLocationInfo: UInt16 = 0x0043
    public static let nasGetLTECphyCAInfo: UInt16 = 0x00AC
}

extension QMIDevice {
    /// The answer to a cell request, or nil when `r` is none of them.
    func cellRequest(_ r: QMIMessage, _ state: SimulatedState) -> QMIMessage? {
        let ids = [QMIMessageID.nasGetRFBandInformation, QMIMessageID.nasGetCellLocationInfo, QMIMessageID.nasGetLTECphyCAInfo]
        guard r.service == QMIService.nas, ids.contains(r.messageID) else { return nil }
        guard scenario.hasCellReporting else { return QMIMessage.response(to: r, error: scenario.qmi.unsupportedError) }
        guard state.reportsCells else { return QMIMessage.response(to: r, error: QMIError.informationUnavailable) }
        switch r.messageID {
        case QMIMessageID.nasGetRFBandInformation:
            return QMIMessage.response(to: r, QMICellEncoding.rfBandInformation(state))
        case QMIMessageID.nasGetCellLocationInfo:
            return QMIMessage.response(to: r, QMICellEncoding.cellLocationInfo(state))
        default:
            guard let tlvs = QMICellEncoding.carrierAggregation(state) else {
                return QMIMessage.response(to: r, error: QMIError.informationUnavailable)
            }
            return QMIMessage.response(to: r, tlvs)
        }
    }
}

enum QMICellEncoding {
    /// The carriers in use as (radio, carrier): the serving cell, and the NR cell under EN-DC.
    static func radios(_ state: SimulatedState) -> [(CellRAT, SimulatedCarrier)] {
        guard let rat = state.servingCellRAT, let serving = state.cells.serving else { return [] }
        var out = [(rat, serving)]
        if rat == .lte, state.accessTechnologies.isNonStandalone5G, let nr = state.cells.nr { out.append((.nr, nr)) }
        return out
    }

    static func activeBand(_ c: SimulatedCarrier, _ rat: CellRAT, _ state: SimulatedState) -> UInt16 {
        c.band(rat, region: state.bandRegion).flatMap(BandPlan.qmiActiveBand).map { UInt16($0) } ?? 0xFFFF
    }

    static func bandwidth(_ c: SimulatedCarrier, nr: Bool) -> UInt32 {
        c.bandwidthMHz.flatMap { QMIBandwidth.code(megahertz: $0, nr: nr) }.map(UInt32.init) ?? 0xFF
    }

    /// 0.1 dB units, signed 16 bits.
    static func tenths(_ v: Double?) -> Int16 { Int16(clamping: Int(((v ?? -3276.8) * 10).rounded())) }

    /// TS 24.008 §10.5.1.3: MCC digits 2|1, MNC digit 3 (0xF for a 2-digit MNC)|MCC digit 3, MNC digits 2|1.
    static func bcdPLMN(_ op: NetworkOperator?) -> [UInt8] {
        guard let op else { return [0xFF, 0xFF, 0xFF] }
        let mcc = op.mcc.utf8.map { $0 - 0x30 }, mnc = op.mnc.utf8.map { $0 - 0x30 }
        let mnc3: UInt8 = mnc.count == 3 ? mnc[2] : 0xF
        return [mcc[1] << 4 | mcc[0], mnc3 << 4 | mcc[2], mnc[1] << 4 | mnc[0]]
    }

    // MARK: RF Band Information (0x0031)

    static func rfBandInformation(_ state: SimulatedState) -> [QMITLV] {
        let radios = radios(state)
        var tlvs = [
            QMITLV(0x01) { w in
                w.u8(UInt8(radios.count))
                for (rat, c) in radios {
                    w.i8(Int8(rat.qmiRadioInterface))
                    w.u16(activeBand(c, rat, state))
                    w.u16(UInt16(clamping: c.channel))  // 16 bits: an NR-ARFCN fits only the extended list
                }
            },
            QMITLV(0x11) { w in
                w.u8(UInt8(radios.count))
                for (rat, c) in radios {
                    w.i8(Int8(rat.qmiRadioInterface))
                    w.u16(activeBand(c, rat, state))
                    w.u32(UInt32(c.channel))
                }
            },
        ]
        let widths = radios.filter { $0.1.bandwidthMHz != nil }
        if !widths.isEmpty {
            tlvs.append(QMITLV(0x12) { w in
                w.u8(UInt8(widths.count))
                for (rat, c) in widths {
                    w.i8(Int8(rat.qmiRadioInterface))
                    w.u32(bandwidth(c, nr: rat == .nr))
                }
            })
        }
        return tlvs
    }

    // MARK: LTE CPHY CA Info (0x00AC)

    static func carrierAggregation(_ state: SimulatedState) -> [QMITLV]? {
        guard state.servingCellRAT == .lte, let p = state.cells.serving else { return nil }
        func carrier(_ w: inout ByteWriter, _ c: SimulatedCarrier) {
            w.u16(UInt16(c.pci))
            w.u16(UInt16(clamping: c.channel))
            w.u32(bandwidth(c, nr: false))
            w.u16(activeBand(c, .lte, state))
        }
        var tlvs = [
            QMITLV(0x11) { $0.u32(bandwidth(p, nr: false)) },
            QMITLV(0x13) { carrier(&$0, p) },
        ]
        let scells = state.cells.scells
        if let first = scells.first {
            tlvs.append(QMITLV(0x12) { w in
                carrier(&w, first)
                w.u32(first.state.qmiValue)
            })
            tlvs.append(QMITLV(0x14, [1]))
        }
        tlvs.append(QMITLV(0x15) { w in
            w.u8(UInt8(scells.count))
            for (i, c) in scells.enumerated() {
                carrier(&w, c)
                w.u32(c.state.qmiValue)
                w.u8(UInt8(i + 1))
            }
        })
        return tlvs
    }

    // MARK: Cell Location Info (0x0043)

    static func cellLocationInfo(_ state: SimulatedState) -> [QMITLV] {
        guard let rat = state.servingCellRAT, let serving = state.cells.serving else { return [] }
        let plmn = bcdPLMN(state.networkOperator)
        let idle: UInt8 = state.packetService == .attached ? 0 : 1
        let neighbours = state.cells.neighbours
        var tlvs: [QMITLV] = []
        switch rat {
        case .gsm:
            tlvs.append(QMITLV(0x10) { w in
                w.u32(state.cell.cellID)
                w.append(plmn)
                w.u16(state.cell.lac)
                w.u16(UInt16(serving.channel))
                w.u8(UInt8(clamping: serving.pci))
                w.u32(0xFFFF_FFFF)  // timing advance unavailable
                w.u16(UInt16(GSMRxLevel.code(dBm: state.signal.rssi ?? -111)))
                let gsm = neighbours.filter { $0.rat == .gsm }
                w.u8(UInt8(gsm.count))
                for n in gsm {
                    w.u32(0xFFFF_FFFF)  // neighbour not identified
                    w.append([0xFF, 0xFF, 0xFF])
                    w.u16(0)
                    w.u16(UInt16(n.channel))
                    w.u8(UInt8(clamping: n.pci))
                    w.u16(UInt16(GSMRxLevel.code(dBm: n.signal.rssi ?? -111)))
                }
            })
        case .umts, .tdscdma:
            tlvs.append(QMITLV(0x11) { w in
                w.u16(UInt16(truncatingIfNeeded: state.cell.cellID))
                w.append(plmn)
                w.u16(state.cell.lac)
                w.u16(UInt16(serving.channel))
                w.u16(UInt16(serving.pci))
                w.i16(Int16(clamping: Int((state.signal.rscp ?? -120).rounded())))
                w.i16(Int16(clamping: Int((state.signal.ecio ?? -24).rounded())))
                let umts = neighbours.filter { $0.rat == .umts }
                w.u8(UInt8(umts.count))
                for n in umts {
                    w.u16(UInt16(n.channel))
                    w.u16(UInt16(n.pci))
                    w.i16(Int16(clamping: Int((n.signal.rscp ?? -120).rounded())))
                    w.i16(Int16(clamping: Int((n.signal.ecio ?? -24).rounded())))
                }
                let gsm = neighbours.filter { $0.rat == .gsm }
                w.u8(UInt8(gsm.count))
                for n in gsm {
                    w.u16(UInt16(n.channel))
                    w.u8(0xFF)  // network colour code unavailable
                    w.u8(0xFF)  // base station colour code unavailable
                    w.i16(Int16(clamping: Int((n.signal.rssi ?? -111).rounded())))
                }
            })
            tlvs.append(QMITLV(0x17) { $0.u32(state.cell.cellID) })
        case .lte:
            tlvs += lteInfo(state, serving: serving, plmn: plmn, idle: idle)
            if state.accessTechnologies.isNonStandalone5G, let nr = state.cells.nr {
                tlvs += nr5g(state, nr, plmn: plmn, tac: 0, cellID: 0, signal: state.nrSignal)
            }
        case .nr:
            tlvs += nr5g(state, serving, plmn: plmn, tac: state.cell.tac, cellID: UInt64(state.cell.cellID), signal: state.nrMeasurement)
        }
        return tlvs
    }

    static func lteCell(_ w: inout ByteWriter, pci: Int, _ m: SignalMeasurement) {
        w.u16(UInt16(pci))
        w.i16(tenths(m.rsrq))
        w.i16(tenths(m.rsrp))
        w.i16(tenths(m.rssi))
        w.i16(0)  // cell selection RX level
    }

    static func lteInfo(_ state: SimulatedState, serving: SimulatedCarrier, plmn: [UInt8], idle: UInt8) -> [QMITLV] {
        let neighbours = state.cells.neighbours
        let intra = neighbours.filter { $0.rat == .lte && $0.channel == serving.channel }
        let inter = neighbours.filter { $0.rat == .lte && $0.channel != serving.channel }
        var tlvs = [
            QMITLV(0x13) { w in
                w.u8(idle)
                w.append(plmn)
                w.u16(UInt16(truncatingIfNeeded: state.cell.tac))
                w.u32(state.cell.cellID)
                w.u16(UInt16(serving.channel))
                w.u16(UInt16(serving.pci))
                w.append([3, 62, 40, 62])  // reselection priority and search thresholds
                w.u8(UInt8(1 + intra.count))
                lteCell(&w, pci: serving.pci, state.signal)
                for n in intra { lteCell(&w, pci: n.pci, n.signal) }
            },
        ]
        let channels = inter.map(\.channel).reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        tlvs.append(QMITLV(0x14) { w in
            w.u8(idle)
            w.u8(UInt8(channels.count))
            for ch in channels {
                w.u16(UInt16(ch))
                w.append([0, 0, 2])  // selection RX level thresholds, reselection priority
                let cells = inter.filter { $0.channel == ch }
                w.u8(UInt8(cells.count))
                for n in cells { lteCell(&w, pci: n.pci, n.signal) }
            }
        })
        let gsm = neighbours.filter { $0.rat == .gsm }
        tlvs.append(QMITLV(0x15) { w in
            w.u8(idle)
            w.u8(gsm.isEmpty ? 0 : 1)
            guard !gsm.isEmpty else { return }
            w.append([1, 0, 0, 0xFF])  // priority, thresholds, NCC permitted
            w.u8(UInt8(gsm.count))
            for n in gsm {
                w.u16(UInt16(n.channel))
                let band = BandPlan.band(.gsm, channel: n.channel, region: state.bandRegion)
                w.u8(band == RadioBand(.gsm, 1900) ? 1 : 0)
                w.u8(1)  // cell id (BSIC) valid
                w.u8(UInt8(clamping: n.pci))
                w.i16(tenths(n.signal.rssi))
                w.i16(0)
            }
        })
        let wcdma = neighbours.filter { $0.rat == .umts }
        let uarfcns = wcdma.map(\.channel).reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        tlvs.append(QMITLV(0x16) { w in
            w.u8(idle)
            w.u8(UInt8(uarfcns.count))
            for ch in uarfcns {
                w.u16(UInt16(ch))
                w.u8(2)
                w.u16(0)
                w.u16(0)
                let cells = wcdma.filter { $0.channel == ch }
                w.u8(UInt8(cells.count))
                for n in cells {
                    w.u16(UInt16(n.pci))
                    w.i16(tenths(n.signal.rscp))
                    w.i16(tenths(n.signal.ecio))
                    w.i16(0)
                }
            }
        })
        return tlvs
    }

    static func nr5g(
        _ state: SimulatedState, _ c: SimulatedCarrier, plmn: [UInt8], tac: UInt32, cellID: UInt64, signal: SignalMeasurement?
    ) -> [QMITLV] {
        let m = signal ?? SignalMeasurement()
        return [
            QMITLV(0x2E) { $0.u32(UInt32(c.channel)) },
            QMITLV(0x2F) { w in
                w.append(plmn)
                w.append([UInt8(tac >> 16 & 0xFF), UInt8(tac >> 8 & 0xFF), UInt8(tac & 0xFF)])
                w.u64(cellID)
                w.u16(UInt16(c.pci))
                w.i16(tenths(m.rsrq))
                w.i16(tenths(m.rsrp))
                w.i16(tenths(m.sinr))
            },
        ]
    }
}
