// The MBIM cell answer of the simulated modem: MS Basic Connect Extensions Base Stations Info (CID 11), in the
// MBIMEx 1.0 layout, or the 3.0 one (system subtype, NR serving and neighbour cells) once 3.0 was negotiated, as
// libmbim 1.28.2's data/mbim-service-ms-basic-connect-extensions{,-v3}.json lays them out.
//
// A serving cell is an "ms-struct" (offset/size pair to a struct whose string offsets count from the struct's start);
// a neighbour list an "ms-struct-array" (offset/size pair to a count followed by fixed-size structs). Unknown values
// are 0xFFFFFFFF; NR RSRP/RSRQ/SINR are coded from -156 dBm, -43 dB and -23 dB, LTE RSRP/RSRQ are plain dBm/dB.
// MBIM has no band field and no carrier-aggregation report, so the reader derives bands from the channels.

import ReachCore

extension MBIMDevice {
    /// The answer to Base Stations Info: the cells, or NoDeviceSupport for a scenario without cells.
    func baseStationsInfo(_ m: MBIMMessage, _ state: SimulatedState) -> (UInt32, [UInt8]) {
        guard scenario.hasCellReporting else { return (MBIMStatus.noDeviceSupport, []) }
        guard !m.isSet else { return (MBIMStatus.invalidDeviceServiceOperation, []) }
        return (MBIMStatus.success, MBIMCellEncoding.baseStations(state, v3: negotiated >= .v3, options: scenario.mbim))
    }
}

enum MBIMCellEncoding {
    static let unknown: UInt32 = 0xFFFF_FFFF

    static func signed(_ v: Double?) -> UInt32 { v.map { UInt32(bitPattern: Int32(clamping: Int($0.rounded()))) } ?? unknown }
    static func offset(_ v: Double?, _ by: Double) -> UInt32 { v.map { UInt32(clamping: Int(($0 - by).rounded())) } ?? unknown }

    /// A struct with a leading provider-id string; `rest` are the fixed fields after it.
    static func structWithProvider(_ provider: String?, _ rest: (inout MBIMBufferBuilder) -> Void) -> [UInt8] {
        var b = MBIMBufferBuilder()
        b.string(provider)
        rest(&b)
        return b.build()
    }

    /// An ms-struct-array block: a count, then the fixed-size structs; strings are not used in neighbours here.
    static func array(_ items: [[UInt8]]) -> [UInt8] {
        var w = ByteWriter()
        w.u32(UInt32(items.count))
        items.forEach { w.append($0) }
        return w.bytes
    }

    static func baseStations(_ state: SimulatedState, v3: Bool, options: MBIMOptions) -> [UInt8] {
        let rat = state.reportsCells ? state.servingCellRAT : nil
        let serving = state.cells.serving
        let provider = state.networkOperator?.providerID
        let neighbours = state.reportsCells ? state.cells.neighbours : []
        var b = MBIMBufferBuilder()
        if v3 {
            let (cls, sub) = state.accessTechnologies.mbimDataClassV3
            b.u32(options.dataClass ?? cls)
            b.u32(options.dataSubclass ?? sub)
        } else {
            b.u32(options.dataClass ?? state.accessTechnologies.mbimDataClass)
        }
        // GSM, UMTS, TD-SCDMA, LTE serving cells.
        if rat == .gsm, let c = serving {
            b.reference(structWithProvider(provider) { s in
                s.u32(UInt32(state.cell.lac))
                s.u32(state.cell.cellID)
                s.u32(unknown)  // timing advance
                s.u32(UInt32(c.channel))
                s.u32(UInt32(c.pci))
                s.u32(UInt32(GSMRxLevel.code(dBm: state.signal.rssi ?? -111)))
            })
        } else {
            b.reference([])
        }
        if rat == .umts, let c = serving {
            b.reference(structWithProvider(provider) { s in
                s.u32(UInt32(state.cell.lac))
                s.u32(state.cell.cellID)
                s.u32(unknown)  // frequency info UL
                s.u32(unknown)  // frequency info DL
                s.u32(unknown)  // frequency info NT
                s.u32(UInt32(c.channel))
                s.u32(UInt32(c.pci))
                s.u32(state.signal.rscp.map { signed($0) } ?? 0)  // 0: unknown
                s.u32(state.signal.ecio.map { signed($0) } ?? 1)  // 1: unknown
                s.u32(unknown)  // path loss
            })
        } else {
            b.reference([])
        }
        b.reference([])  // TD-SCDMA serving cell
        if rat == .lte, let c = serving {
            b.reference(structWithProvider(provider) { s in
                s.u32(state.cell.cellID)
                s.u32(UInt32(c.channel))
                s.u32(UInt32(c.pci))
                s.u32(state.cell.tac)
                s.u32(signed(state.signal.rsrp))
                s.u32(signed(state.signal.rsrq))
                s.u32(unknown)  // timing advance
            })
        } else {
            b.reference([])
        }
        // Neighbours: GSM, UMTS, TD-SCDMA, LTE, then CDMA.
        let gsm = neighbours.filter { $0.rat == .gsm }.map { n in
            structWithProvider(nil) { s in
                s.u32(unknown)  // LAC
                s.u32(unknown)  // cell id
                s.u32(UInt32(n.channel))
                s.u32(UInt32(n.pci))
                s.u32(UInt32(GSMRxLevel.code(dBm: n.signal.rssi ?? -111)))
            }
        }
        let umts = neighbours.filter { $0.rat == .umts }.map { n in
            structWithProvider(nil) { s in
                s.u32(unknown)
                s.u32(unknown)
                s.u32(UInt32(n.channel))
                s.u32(UInt32(n.pci))
                s.u32(n.signal.rscp.map { signed($0) } ?? 0)
                s.u32(n.signal.ecio.map { signed($0) } ?? 1)
                s.u32(unknown)
            }
        }
        let lte = neighbours.filter { $0.rat == .lte }.map { n in
            structWithProvider(nil) { s in
                s.u32(unknown)
                s.u32(UInt32(n.channel))
                s.u32(UInt32(n.pci))
                s.u32(unknown)
                s.u32(signed(n.signal.rsrp))
                s.u32(signed(n.signal.rsrq))
            }
        }
        for list in [gsm, umts, [], lte] { b.reference(list.isEmpty ? [] : array(list)) }
        b.reference([])  // CDMA cells
        guard v3 else { return b.build() }
        // MBIMEx 3.0: NR serving cells (the SA cell, or the NR cell under EN-DC), then NR neighbours.
        var nrServing: [[UInt8]] = []
        let nrCell: (SimulatedCarrier, SignalMeasurement?, UInt64, UInt32)? =
            rat == .nr ? serving.map { ($0, state.nrMeasurement, UInt64(state.cell.cellID), state.cell.tac) }
            : rat == .lte && state.accessTechnologies.isNonStandalone5G ? state.cells.nr.map { ($0, state.nrSignal, UInt64.max, unknown) } : nil
        if let (c, m, nci, tac) = nrCell {
            nrServing.append(structWithProvider(provider) { s in
                s.u64(nci)
                s.u32(UInt32(c.pci))
                s.u32(UInt32(c.channel))
                s.u32(tac)
                s.u32(offset(m?.rsrp, -156))
                s.u32(offset(m?.rsrq, -43))
                s.u32(offset(m?.sinr, -23))
                s.u64(UInt64.max)  // timing advance unknown
            })
        }
        let nrNeighbours = neighbours.filter { $0.rat == .nr }.map { n in
            var s = MBIMBufferBuilder()
            s.u32(state.accessTechnologies.isNonStandalone5G ? 1 : 2)  // MbimDataSubclass 5G ENDC / NR
            s.string(nil)  // provider id
            s.string(nil)  // cell id
            s.u32(UInt32(n.pci))
            s.u32(unknown)  // TAC
            s.u32(offset(n.signal.rsrp, -156))
            s.u32(offset(n.signal.rsrq, -43))
            s.u32(offset(n.signal.sinr, -23))
            return s.build()
        }
        b.reference(nrServing.isEmpty ? [] : array(nrServing))
        b.reference(nrNeighbours.isEmpty ? [] : array(nrNeighbours))
        return b.build()
    }
}
