// The QMI cell requests: NAS Get Cell Location Info (0x0043), Get RF Band Information (0x0031) and Get LTE CPHY CA
// Info (0x00AC), copied into ReachCore's plain values (`QMICellLocationInfo`, `QMIRFBandInfo`,
// `QMICarrierAggregation`). ModemManager asks Get Cell Location Info for `mmcli --get-cell-info`
// (`get_cell_info_ready` in mm-broadband-modem-qmi.c); qmicli has `--nas-get-cell-location-info`,
// `--nas-get-rf-band-info` and `--nas-get-lte-cphy-ca-info` for all three.

import CGLibShims
import ReachCore
import ReachGLib

/// The elements of a libqmi GArray of C structs, copied out.
func elements<T>(_ a: UnsafeMutablePointer<GArray>?, _: T.Type) -> [T] {
    guard let a, let data = a.pointee.data, a.pointee.len > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: T.self), count: Int(a.pointee.len)))
}

extension QMISession {
    /// NAS Get Cell Location Info (0x0043).
    func cellLocationInfo() async throws -> QMICellLocationInfo {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_cell_location_info",
            start: { c in
                qmi_client_nas_get_cell_location_info(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_cell_location_info_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_cell_location_info_output_get_result,
            unref: qmi_message_nas_get_cell_location_info_output_unref,
            extract: { QMICellReplies.cellLocationInfo($0) })
    }

    /// NAS Get RF Band Information (0x0031).
    func rfBandInfo() async throws -> QMIRFBandInfo {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_rf_band_information",
            start: { c in
                qmi_client_nas_get_rf_band_information(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_rf_band_information_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_rf_band_information_output_get_result,
            unref: qmi_message_nas_get_rf_band_information_output_unref,
            extract: { QMICellReplies.rfBandInfo($0) })
    }

    /// NAS Get LTE CPHY CA Info (0x00AC).
    func carrierAggregation() async throws -> QMICarrierAggregation {
        let nas = try await requireNAS()
        return try await request(
            "qmi_client_nas_get_lte_cphy_ca_info",
            start: { c in
                qmi_client_nas_get_lte_cphy_ca_info(nas.p, nil, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
            },
            finish: { qmi_client_nas_get_lte_cphy_ca_info_finish(nas.p, $0, $1) },
            result: qmi_message_nas_get_lte_cphy_ca_info_output_get_result,
            unref: qmi_message_nas_get_lte_cphy_ca_info_output_unref,
            extract: { QMICellReplies.carrierAggregation($0) })
    }
}

/// Readers of the three outputs; loop thread, no pointer kept.
enum QMICellReplies {
    static func cellLocationInfo(_ o: OpaquePointer?) -> QMICellLocationInfo {
        var info = QMICellLocationInfo()
        do {
            var cellID: UInt32 = 0, lac: UInt16 = 0, arfcn: UInt16 = 0, bsic: UInt8 = 0, ta: UInt32 = 0, rx: UInt16 = 0
            var plmn: UnsafeMutablePointer<GArray>?, cells: UnsafeMutablePointer<GArray>?
            if qmi_message_nas_get_cell_location_info_output_get_geran_info_v2(
                o, &cellID, &plmn, &lac, &arfcn, &bsic, &ta, &rx, &cells, nil) != 0
            {
                let neighbours = elements(cells, QmiMessageNasGetCellLocationInfoOutputGeranInfoV2CellElement.self).map {
                    QMICellLocationInfo.GERANCell(
                        cellID: $0.cell_id, lac: $0.lac, arfcn: $0.geran_absolute_rf_channel_number,
                        bsic: $0.base_station_identity_code, rxLevel: $0.rx_level)
                }
                info.geran = QMICellLocationInfo.GERAN(
                    serving: QMICellLocationInfo.GERANCell(cellID: cellID, lac: lac, arfcn: arfcn, bsic: bsic, rxLevel: rx),
                    neighbours: neighbours)
            }
        }
        do {
            var cellID: UInt16 = 0, lac: UInt16 = 0, uarfcn: UInt16 = 0, psc: UInt16 = 0, rscp: Int16 = 0, ecio: Int16 = 0
            var plmn: UnsafeMutablePointer<GArray>?, cells: UnsafeMutablePointer<GArray>?
            var geran: UnsafeMutablePointer<GArray>?
            if qmi_message_nas_get_cell_location_info_output_get_umts_info_v2(
                o, &cellID, &plmn, &lac, &uarfcn, &psc, &rscp, &ecio, &cells, &geran, nil) != 0
            {
                info.umts = QMICellLocationInfo.UMTS(
                    cellID: cellID, lac: lac,
                    serving: QMICellLocationInfo.UMTSCell(uarfcn: uarfcn, psc: psc, rscp: rscp, ecio: ecio),
                    neighbours: elements(cells, QmiMessageNasGetCellLocationInfoOutputUmtsInfoV2CellElement.self).map {
                        QMICellLocationInfo.UMTSCell(
                            uarfcn: $0.utra_absolute_rf_channel_number, psc: $0.primary_scrambling_code, rscp: $0.rscp,
                            ecio: $0.ecio)
                    },
                    geranNeighbours: elements(geran, QmiMessageNasGetCellLocationInfoOutputUmtsInfoV2NeighboringGeranElement.self).map {
                        QMICellLocationInfo.GERANNeighbour(arfcn: $0.geran_absolute_rf_channel_number, rssi: $0.rssi)
                    })
            }
            var full: UInt32 = 0
            if qmi_message_nas_get_cell_location_info_output_get_umts_cell_id(o, &full, nil) != 0 { info.umtsCellID = full }
        }
        do {
            var idle: gboolean = 0, tac: UInt16 = 0, gci: UInt32 = 0, earfcn: UInt16 = 0, serving: UInt16 = 0
            var prio: UInt8 = 0, t1: UInt8 = 0, t2: UInt8 = 0, t3: UInt8 = 0
            var plmn: UnsafeMutablePointer<GArray>?, cells: UnsafeMutablePointer<GArray>?
            if qmi_message_nas_get_cell_location_info_output_get_intrafrequency_lte_info_v2(
                o, &idle, &plmn, &tac, &gci, &earfcn, &serving, &prio, &t1, &t2, &t3, &cells, nil) != 0
            {
                info.lteIntra = QMICellLocationInfo.LTEIntra(
                    ueIdle: idle != 0, tac: tac, globalCellID: gci, earfcn: earfcn, servingPCI: serving,
                    cells: elements(cells, QmiMessageNasGetCellLocationInfoOutputIntrafrequencyLteInfoV2CellElement.self).map {
                        QMICellLocationInfo.LTECell(pci: $0.physical_cell_id, rsrq: $0.rsrq, rsrp: $0.rsrp, rssi: $0.rssi)
                    })
            }
        }
        do {
            var idle: gboolean = 0
            var freqs: UnsafeMutablePointer<GArray>?
            if qmi_message_nas_get_cell_location_info_output_get_interfrequency_lte_info(o, &idle, &freqs, nil) != 0 {
                info.lteInter = elements(freqs, QmiMessageNasGetCellLocationInfoOutputInterfrequencyLteInfoFrequencyElement.self).map { f in
                    QMICellLocationInfo.LTEFrequency(
                        earfcn: f.eutra_absolute_rf_channel_number,
                        cells: elements(f.cell, QmiMessageNasGetCellLocationInfoOutputInterfrequencyLteInfoFrequencyElementCellElement.self).map {
                            QMICellLocationInfo.LTECell(pci: $0.physical_cell_id, rsrq: $0.rsrq, rsrp: $0.rsrp, rssi: $0.rssi)
                        })
                }
            }
            if qmi_message_nas_get_cell_location_info_output_get_lte_info_neighboring_gsm(o, &idle, &freqs, nil) != 0 {
                info.lteNeighbourGSM = elements(freqs, QmiMessageNasGetCellLocationInfoOutputLteInfoNeighboringGsmFrequencyElement.self).flatMap { f in
                    elements(f.cell, QmiMessageNasGetCellLocationInfoOutputLteInfoNeighboringGsmFrequencyElementCellElement.self).map {
                        QMICellLocationInfo.LTENeighbourGSM(
                            arfcn: $0.geran_absolute_rf_channel_number, band1900: $0.band_is_1900 != 0,
                            bsic: $0.cell_id_valid != 0 ? $0.base_station_identity_code : nil, rssi: $0.rssi)
                    }
                }
            }
            if qmi_message_nas_get_cell_location_info_output_get_lte_info_neighboring_wcdma(o, &idle, &freqs, nil) != 0 {
                info.lteNeighbourWCDMA = elements(freqs, QmiMessageNasGetCellLocationInfoOutputLteInfoNeighboringWcdmaFrequencyElement.self).flatMap { f in
                    elements(f.cell, QmiMessageNasGetCellLocationInfoOutputLteInfoNeighboringWcdmaFrequencyElementCellElement.self).map {
                        QMICellLocationInfo.LTENeighbourWCDMA(
                            uarfcn: f.utra_absolute_rf_channel_number, psc: $0.primary_scrambling_code, rscp: $0.cpich_rscp,
                            ecno: $0.cpich_ecno)
                    }
                }
            }
        }
        do {
            var arfcn: UInt32 = 0
            if qmi_message_nas_get_cell_location_info_output_get_nr5g_arfcn(o, &arfcn, nil) != 0 { info.nr5gARFCN = arfcn }
            var plmn: UnsafeMutablePointer<GArray>?, tac: UnsafeMutablePointer<GArray>?
            var gci: guint64 = 0, pci: UInt16 = 0, rsrq: Int16 = 0, rsrp: Int16 = 0, snr: Int16 = 0
            if qmi_message_nas_get_cell_location_info_output_get_nr5g_cell_information(
                o, &plmn, &tac, &gci, &pci, &rsrq, &rsrp, &snr, nil) != 0
            {
                info.nr5gCell = QMICellLocationInfo.NR5GCell(
                    tac: elements(tac, UInt8.self), globalCellID: UInt64(gci), pci: pci, rsrq: rsrq, rsrp: rsrp, snr: snr)
            }
        }
        return info
    }

    static func rfBandInfo(_ o: OpaquePointer?) -> QMIRFBandInfo {
        var info = QMIRFBandInfo()
        var list: UnsafeMutablePointer<GArray>?
        // The extended list carries 32-bit channels (NR-ARFCN); the plain list is kept for older firmware.
        if qmi_message_nas_get_rf_band_information_output_get_extended_list(o, &list, nil) != 0 {
            info.entries = elements(list, QmiMessageNasGetRfBandInformationOutputExtendedListElement.self).map {
                QMIRFBandInfo.Entry(
                    radioInterface: Int($0.radio_interface.rawValue), band: Int($0.active_band_class.rawValue),
                    channel: $0.active_channel)
            }
        } else if qmi_message_nas_get_rf_band_information_output_get_list(o, &list, nil) != 0 {
            info.entries = elements(list, QmiMessageNasGetRfBandInformationOutputListElement.self).map {
                QMIRFBandInfo.Entry(
                    radioInterface: Int($0.radio_interface.rawValue), band: Int($0.active_band_class.rawValue),
                    channel: UInt32($0.active_channel))
            }
        }
        if qmi_message_nas_get_rf_band_information_output_get_bandwidth_list(o, &list, nil) != 0 {
            for e in elements(list, QmiMessageNasGetRfBandInformationOutputBandwidthListElement.self) {
                info.bandwidths[Int(e.radio_interface.rawValue)] = Int(e.bandwidth.rawValue)
            }
        }
        return info
    }

    static func carrierAggregation(_ o: OpaquePointer?) -> QMICarrierAggregation {
        var ca = QMICarrierAggregation()
        var pci: UInt16 = 0, channel: UInt16 = 0
        var bandwidth = QmiNasDLBandwidth(0), band = QmiNasActiveBand(0), state = QmiNasScellState(0)
        if qmi_message_nas_get_lte_cphy_ca_info_output_get_phy_ca_agg_pcell_info(o, &pci, &channel, &bandwidth, &band, nil) != 0 {
            ca.pcell = QMICarrierAggregation.Carrier(
                pci: pci, channel: channel, bandwidth: UInt32(bandwidth.rawValue), band: UInt16(truncatingIfNeeded: band.rawValue))
        }
        var cells: UnsafeMutablePointer<GArray>?
        if qmi_message_nas_get_lte_cphy_ca_info_output_get_phy_ca_agg_secondary_cells(o, &cells, nil) != 0 {
            ca.scells = elements(cells, QmiMessageNasGetLteCphyCaInfoOutputPhyCaAggSecondaryCellsSsc.self).map {
                QMICarrierAggregation.Carrier(
                    pci: $0.physical_cell_id, channel: $0.rx_channel, bandwidth: UInt32($0.dl_bandwidth.rawValue),
                    band: UInt16(truncatingIfNeeded: $0.lte_band.rawValue), state: UInt32($0.state.rawValue))
            }
        } else if qmi_message_nas_get_lte_cphy_ca_info_output_get_phy_ca_agg_scell_info(
            o, &pci, &channel, &bandwidth, &band, &state, nil) != 0, channel != 0
        {
            ca.scells = [QMICarrierAggregation.Carrier(
                pci: pci, channel: channel, bandwidth: UInt32(bandwidth.rawValue),
                band: UInt16(truncatingIfNeeded: band.rawValue), state: UInt32(state.rawValue))]
        }
        return ca
    }
}
