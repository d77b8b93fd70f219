// Names and numbers of the QMI services, messages and errors the simulator speaks, as libqmi 1.32.2 defines them
// (data/qmi-service-{ctl,dms,nas,uim}.json, src/libqmi-glib/qmi-errors.h). The names are the snake_case form of
// libqmi's message names; scenario files use them in fault selectors ("nas:get_signal_info").

public enum QMIService {
    public static let ctl: UInt8 = 0x00
    public static let wds: UInt8 = 0x01
    public static let dms: UInt8 = 0x02
    public static let nas: UInt8 = 0x03
    public static let uim: UInt8 = 0x0B

    /// Services the simulator allocates clients for, with the version Get Version Info reports (those of a
    /// Qualcomm SDX55 era firmware).
    public static let supported: [(service: UInt8, major: UInt16, minor: UInt16)] = [
        (ctl, 1, 5), (wds, 1, 67), (dms, 1, 14), (nas, 1, 25), (uim, 1, 46),
    ]

    public static let names: [UInt8: String] = [ctl: "ctl", wds: "wds", dms: "dms", nas: "nas", uim: "uim"]

    public static func name(_ service: UInt8) -> String { names[service] ?? "0x" + String(service, radix: 16) }

    public static func number(_ name: String) -> UInt8? { names.first(where: { $0.value == name })?.key }
}

/// Message ids of the requests and indications the simulator implements.
public enum QMIMessageID {
    // CTL
    public static let ctlGetVersionInfo: UInt16 = 0x0021
    public static let ctlAllocateCID: UInt16 = 0x0022
    public static let ctlReleaseCID: UInt16 = 0x0023
    public static let ctlSync: UInt16 = 0x0027
    public static let ctlInternalProxyOpen: UInt16 = 0xFF00
    // DMS
    public static let dmsSetEventReport: UInt16 = 0x0001
    public static let dmsGetCapabilities: UInt16 = 0x0020
    public static let dmsGetManufacturer: UInt16 = 0x0021
    public static let dmsGetModel: UInt16 = 0x0022
    public static let dmsGetRevision: UInt16 = 0x0023
    public static let dmsGetMSISDN: UInt16 = 0x0024
    public static let dmsGetIDs: UInt16 = 0x0025
    public static let dmsUIMGetPINStatus: UInt16 = 0x002B
    public static let dmsGetOperatingMode: UInt16 = 0x002D
    public static let dmsUIMGetICCID: UInt16 = 0x003C
    public static let dmsUIMGetIMSI: UInt16 = 0x0043
    public static let dmsUIMGetState: UInt16 = 0x0044
    // NAS
    public static let nasSetEventReport: UInt16 = 0x0002  // also the Event Report indication
    public static let nasRegisterIndications: UInt16 = 0x0003
    public static let nasGetSignalStrength: UInt16 = 0x0020
    public static let nasGetServingSystem: UInt16 = 0x0024  // also the Serving System indication
    public static let nasGetHomeNetwork: UInt16 = 0x0025
    public static let nasGetOperatorName: UInt16 = 0x0039
    public static let nasGetSystemInfo: UInt16 = 0x004D
    public static let nasSystemInfoIndication: UInt16 = 0x004E
    public static let nasGetSignalInfo: UInt16 = 0x004F
    public static let nasConfigSignalInfo: UInt16 = 0x0050
    public static let nasSignalInfoIndication: UInt16 = 0x0051
    public static let nasConfigSignalInfoV2: UInt16 = 0x006C
    // UIM
    public static let uimRegisterEvents: UInt16 = 0x002E
    public static let uimGetCardStatus: UInt16 = 0x002F
    public static let uimCardStatusIndication: UInt16 = 0x0032
}

public enum QMIMessageNames {
    typealias ID = QMIMessageID
    /// (service, message id, name) of every message the simulator knows by name.
    public static let table: [(UInt8, UInt16, String)] = [
        (QMIService.ctl, ID.ctlGetVersionInfo, "get_version_info"),
        (QMIService.ctl, ID.ctlAllocateCID, "allocate_cid"),
        (QMIService.ctl, ID.ctlReleaseCID, "release_cid"),
        (QMIService.ctl, ID.ctlSync, "sync"),
        (QMIService.ctl, ID.ctlInternalProxyOpen, "internal_proxy_open"),
        (QMIService.dms, ID.dmsSetEventReport, "set_event_report"),
        (QMIService.dms, ID.dmsGetCapabilities, "get_capabilities"),
        (QMIService.dms, ID.dmsGetManufacturer, "get_manufacturer"),
        (QMIService.dms, ID.dmsGetModel, "get_model"),
        (QMIService.dms, ID.dmsGetRevision, "get_revision"),
        (QMIService.dms, ID.dmsGetMSISDN, "get_msisdn"),
        (QMIService.dms, ID.dmsGetIDs, "get_ids"),
        (QMIService.dms, ID.dmsUIMGetPINStatus, "uim_get_pin_status"),
        (QMIService.dms, ID.dmsGetOperatingMode, "get_operating_mode"),
        (QMIService.dms, ID.dmsUIMGetICCID, "uim_get_iccid"),
        (QMIService.dms, ID.dmsUIMGetIMSI, "uim_get_imsi"),
        (QMIService.dms, ID.dmsUIMGetState, "uim_get_state"),
        (QMIService.nas, ID.nasSetEventReport, "set_event_report"),
        (QMIService.nas, ID.nasRegisterIndications, "register_indications"),
        (QMIService.nas, ID.nasGetSignalStrength, "get_signal_strength"),
        (QMIService.nas, ID.nasGetServingSystem, "get_serving_system"),
        (QMIService.nas, ID.nasGetHomeNetwork, "get_home_network"),
        (QMIService.nas, ID.nasGetOperatorName, "get_operator_name"),
        (QMIService.nas, ID.nasGetSystemInfo, "get_system_info"),
        (QMIService.nas, ID.nasGetSignalInfo, "get_signal_info"),
        (QMIService.nas, ID.nasConfigSignalInfo, "config_signal_info"),
        (QMIService.nas, ID.nasConfigSignalInfoV2, "config_signal_info_v2"),
        (QMIService.nas, ID.nasGetRFBandInformation, "get_rf_band_information"),
        (QMIService.nas, ID.nasGetCellLocationInfo, "get_cell_location_info"),
        (QMIService.nas, ID.nasGetLTECphyCAInfo, "get_lte_cphy_ca_info"),
        (QMIService.uim, ID.uimRegisterEvents, "register_events"),
        (QMIService.uim, ID.uimGetCardStatus, "get_card_status"),
        (QMIService.wds, WDSClients.setEventReport, "set_event_report"),
        (QMIService.wds, WDSClients.indicationRegister, "indication_register"),
        (QMIService.wds, WDSClients.startNetwork, "start_network"),
        (QMIService.wds, WDSClients.stopNetwork, "stop_network"),
        (QMIService.wds, WDSClients.getPacketServiceStatus, "get_packet_service_status"),
        (QMIService.wds, WDSClients.getCurrentSettings, "get_current_settings"),
        (QMIService.wds, WDSClients.bindDataPort, "bind_data_port"),
        (QMIService.wds, WDSClients.setIPFamily, "set_ip_family"),
        (QMIService.wds, WDSClients.bindMuxDataPort, "bind_mux_data_port"),
    ]

    static let indicationNames: [UInt8: [UInt16: String]] = [
        QMIService.nas: [
            ID.nasSetEventReport: "event_report", ID.nasGetServingSystem: "serving_system",
            ID.nasSystemInfoIndication: "system_info", ID.nasSignalInfoIndication: "signal_info",
        ],
        QMIService.uim: [ID.uimCardStatusIndication: "card_status"],
        QMIService.wds: [WDSClients.getPacketServiceStatus: "packet_service_status"],
    ]

    public static func name(service: UInt8, message: UInt16, kind: QMIMessage.Kind = .request) -> String? {
        if kind == .indication, let n = indicationNames[service]?[message] { return n }
        return table.first(where: { $0.0 == service && $0.1 == message })?.2
    }

    public static func id(service: UInt8, name: String) -> UInt16? {
        table.first(where: { $0.0 == service && $0.2 == name })?.1
    }
}

/// QmiProtocolError values (libqmi qmi-errors.h), for scenario files and logs.
public enum QMIError {
    public static let malformedMessage: UInt16 = 1
    public static let internalError: UInt16 = 3
    public static let invalidClientID: UInt16 = 7
    public static let notProvisioned: UInt16 = 16
    public static let missingArgument: UInt16 = 17
    public static let invalidServiceType: UInt16 = 31
    public static let uimUninitialized: UInt16 = 37
    public static let invalidArgument: UInt16 = 48
    public static let informationUnavailable: UInt16 = 74
    public static let invalidQMICommand: UInt16 = 71
    public static let notSupported: UInt16 = 94

    public static let names: [(String, UInt16)] = [
        ("NONE", 0), ("MALFORMED_MESSAGE", 1), ("NO_MEMORY", 2), ("INTERNAL", 3), ("ABORTED", 4),
        ("CLIENT_IDS_EXHAUSTED", 5), ("UNABORTABLE_TRANSACTION", 6), ("INVALID_CLIENT_ID", 7),
        ("NO_THRESHOLDS_PROVIDED", 8), ("INVALID_HANDLE", 9), ("INVALID_PROFILE", 10), ("INVALID_PIN_ID", 11),
        ("INCORRECT_PIN", 12), ("NO_NETWORK_FOUND", 13), ("CALL_FAILED", 14), ("OUT_OF_CALL", 15),
        ("NOT_PROVISIONED", 16), ("MISSING_ARGUMENT", 17), ("ARGUMENT_TOO_LONG", 19),
        ("INVALID_TRANSACTION_ID", 22), ("DEVICE_IN_USE", 23), ("NETWORK_UNSUPPORTED", 24),
        ("DEVICE_UNSUPPORTED", 25), ("NO_EFFECT", 26), ("NO_FREE_PROFILE", 27), ("INVALID_PDP_TYPE", 28),
        ("INVALID_TECHNOLOGY_PREFERENCE", 29), ("INVALID_PROFILE_TYPE", 30), ("INVALID_SERVICE_TYPE", 31),
        ("INVALID_REGISTER_ACTION", 32), ("INVALID_PS_ATTACH_ACTION", 33), ("AUTHENTICATION_FAILED", 34),
        ("PIN_BLOCKED", 35), ("PIN_ALWAYS_BLOCKED", 36), ("UIM_UNINITIALIZED", 37),
        ("MAXIMUM_QOS_REQUESTS_IN_USE", 38), ("INCORRECT_FLOW_FILTER", 39), ("NETWORK_QOS_UNAWARE", 40),
        ("INVALID_QOS_ID", 41), ("REQUESTED_NUMBER_UNSUPPORTED", 42), ("INTERFACE_NOT_FOUND", 43),
        ("FLOW_SUSPENDED", 44), ("INVALID_DATA_FORMAT", 45), ("GENERAL_ERROR", 46), ("UNKNOWN_ERROR", 47),
        ("INVALID_ARGUMENT", 48), ("INVALID_INDEX", 49), ("NO_ENTRY", 50), ("DEVICE_STORAGE_FULL", 51),
        ("DEVICE_NOT_READY", 52), ("NETWORK_NOT_READY", 53), ("WMS_CAUSE_CODE", 54),
        ("WMS_MESSAGE_NOT_SENT", 55), ("WMS_MESSAGE_DELIVERY_FAILURE", 56), ("WMS_INVALID_MESSAGE_ID", 57),
        ("WMS_ENCODING", 58), ("AUTHENTICATION_LOCK", 59), ("INVALID_TRANSITION", 60),
        ("NOT_MCAST_INTERFACE", 61), ("MAXIMUM_MCAST_REQUESTS_IN_USE", 62), ("INVALID_MCAST_HANDLE", 63),
        ("INVALID_IP_FAMILY_PREFERENCE", 64), ("SESSION_INACTIVE", 65), ("SESSION_INVALID", 66),
        ("SESSION_OWNERSHIP", 67), ("INSUFFICIENT_RESOURCES", 68), ("DISABLED", 69), ("INVALID_OPERATION", 70),
        ("INVALID_QMI_COMMAND", 71), ("WMS_T_PDU_TYPE", 72), ("WMS_SMSC_ADDRESS", 73),
        ("INFORMATION_UNAVAILABLE", 74), ("SEGMENT_TOO_LONG", 75), ("SEGMENT_ORDER", 76),
        ("BUNDLING_NOT_SUPPORTED", 77), ("OPERATION_PARTIAL_FAILURE", 78), ("POLICY_MISMATCH", 79),
        ("SIM_FILE_NOT_FOUND", 80), ("EXTENDED_INTERNAL", 81), ("ACCESS_DENIED", 82),
        ("HARDWARE_RESTRICTED", 83), ("ACK_NOT_SENT", 84), ("INJECT_TIMEOUT", 85), ("INCOMPATIBLE_STATE", 90),
        ("FDN_RESTRICT", 91), ("SUPS_FAILURE_CASE", 92), ("NO_RADIO", 93), ("NOT_SUPPORTED", 94),
        ("NO_SUBSCRIPTION", 95), ("CARD_CALL_CONTROL_FAILED", 96), ("NETWORK_ABORTED", 97),
        ("MSG_BLOCKED", 98), ("INVALID_SESSION_TYPE", 100), ("INVALID_PB_TYPE", 101), ("NO_SIM", 102),
        ("PB_NOT_READY", 103), ("PIN_RESTRICTION", 104), ("PIN2_RESTRICTION", 105), ("PUK_RESTRICTION", 106),
        ("PUK2_RESTRICTION", 107), ("PB_ACCESS_RESTRICTED", 108), ("PB_DELETE_IN_PROGRESS", 109),
        ("PB_TEXT_TOO_LONG", 110), ("PB_NUMBER_TOO_LONG", 111), ("PB_HIDDEN_KEY_RESTRICTION", 112),
        ("PB_NOT_AVAILABLE", 113), ("DEVICE_MEMORY_ERROR", 114), ("NO_PERMISSION", 115), ("TOO_SOON", 116),
        ("TIME_NOT_ACQUIRED", 117), ("OPERATION_IN_PROGRESS", 118),
    ]

    public static func code(_ name: String) -> UInt16? { names.first(where: { $0.0 == name })?.1 }
    public static func name(_ code: UInt16) -> String { names.first(where: { $0.1 == code })?.0 ?? String(code) }
}
