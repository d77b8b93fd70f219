// Cell readings of a `ModemChannel`: the three QMI requests or MBIM Base Stations Info, read with the rest and again
// whenever the monitor asks (bands, channels, carriers and neighbours are never announced by an indication).
//
// A modem that lacks a request gives no reading for it, never an error: "not supported" answers (QMI NOT_SUPPORTED
// or INVALID_QMI_COMMAND, MBIM NO_DEVICE_SUPPORT) are remembered so the request is not sent again; other protocol
// errors (INFORMATION_UNAVAILABLE while not camped) and replies the library cannot read leave that reading empty
// this time. A transport failure (no answer, port gone) ends the read as for any request.

import CGLibShims
import ReachCore
import ReachGLib

extension GLibError {
    /// MBIM_STATUS_NO_DEVICE_SUPPORT: the function does not implement the command.
    var isMBIMUnsupported: Bool {
        matches(mbim_status_error_quark, Int32(MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT.rawValue))
    }
}

extension ModemChannel {
    func optionalCellRequest<T: Sendable>(_ name: String, _ body: () async throws -> T) async throws -> T? {
        guard unsupportedRequests[name] == nil else { return nil }
        do {
            return try await unlessUnsupported(name, body)
        } catch let e as GLibError where e.isQMIUnsupported || e.isMBIMUnsupported {
            // Remembered by unlessUnsupported; a modem without the request gives no reading for it.
        } catch let e as GLibError
            where e.isQMIProtocolError || e.isMBIMStatusError || e.isDomain(qmi_core_error_quark)
            || e.isDomain(mbim_core_error_quark)
        {
            logger.debug("Cell request gave no reading", metadata: ["request": "\(name)", "error": "\(e)"])
        } catch let e as ModemError {
            logger.debug("Cell reply unusable", metadata: ["request": "\(name)", "error": "\(e)"])
        }
        return nil
    }

    func readQMICells(_ q: QMISession) async throws {
        qmiCells.location = try await optionalCellRequest("nas:get_cell_location_info") { try await q.cellLocationInfo() }
        qmiCells.rfBands = try await optionalCellRequest("nas:get_rf_band_information") { try await q.rfBandInfo() }
        qmiCells.carrierAggregation = try await optionalCellRequest("nas:get_lte_cphy_ca_info") {
            try await q.carrierAggregation()
        }
    }

    func readMBIMCells(_ m: MBIMSession) async throws {
        mbimCells = try await optionalCellRequest("ms_basic_connect_extensions:base_stations_info") {
            try await m.baseStations()
        }
    }
}
