// The MBIM cell request: MS Basic Connect Extensions Base Stations Info (CID 11), in the MBIMEx 3.0 layout when the
// session negotiated 3.0 (it adds NR serving and neighbour cells) and the MBIMEx 1.0/2.0 layout otherwise, as
// ModemManager asks it (`base_stations_info_query_ready` in mm-broadband-modem-mbim.c).
//
// libmbim sends the query and checks COMMAND_DONE's status; the information buffer is read by ReachCore's
// `MBIMBaseStationsDecoder`, because libmbim 1.28's parser repeats the first cell of every neighbour list (see there).

import CGLibShims
import ReachCore
import ReachGLib

extension MBIMSession {
    /// How many cells of each kind the device may report (ModemManager asks the same 15).
    static let baseStationsMaxCount: UInt32 = 15

    func baseStations() async throws -> MBIMBaseStations {
        let v3 = await negotiatedMBIMEx >= 3
        let n = Self.baseStationsMaxCount
        return try await command(
            v3 ? "mbim_message_ms_basic_connect_extensions_v3_base_stations_info_query"
                : "mbim_message_ms_basic_connect_extensions_base_stations_info_query",
            build: {
                v3 ? mbim_message_ms_basic_connect_extensions_v3_base_stations_info_query_new(n, n, n, n, n, n, nil)
                    : mbim_message_ms_basic_connect_extensions_base_stations_info_query_new(n, n, n, n, n, nil)
            },
            parse: { m, _ in
                var length: UInt32 = 0
                let buffer = mbim_message_command_done_get_raw_information_buffer(m, &length)
                let bytes = buffer.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
                do {
                    return try MBIMBaseStationsDecoder.decode(bytes, v3: v3)
                } catch let e as MBIMBaseStationsDecoder.Malformed {
                    throw ModemError(e.description)
                }
            })
    }
}
