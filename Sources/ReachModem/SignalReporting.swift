// How finely a modem is asked to report its signal. The agent wants an indication whenever the bars may change (the
// bar boundaries); `reach signal` wants every change of about a decibel, so that the view moves as the antenna turns.
//
// QMI: NAS Config Signal Info v2 (0x006C) takes a delta per measure in 0.1 dB units and a report rate and averaging
// period for LTE and NR5G (libqmi `data/qmi-service-nas.json`; ModemManager's `mmcli --signal-setup-thresholds`
// programs the same deltas). Firmware without v2 gets Config Signal Info (0x0050) with thresholds every 2 dB across
// each measure's range instead. MBIM: Signal State set with RssiThreshold 1 (2 dB, the finest coded step) and
// SignalStrengthInterval, the seconds between reports (MBIM 1.0 §10.5.10).

import CGLibShims
import ReachCore
import ReachGLib

public enum SignalReporting: Sendable, Equatable, Codable {
    /// An indication when a measure crosses a bar boundary.
    case barBoundaries
    /// An indication on every change of about 1 dB, at most about once per `interval`.
    case live(interval: Duration)

    /// MBIM SignalStrengthInterval: 0 keeps the device's own; the live interval in whole seconds, at least 1.
    var mbimSignalStrengthInterval: UInt32 {
        guard case let .live(interval) = self else { return 0 }
        return UInt32(max(1, min(3600, interval.components.seconds)))
    }

    /// QMI LTE/NR5G report rate and averaging period (1-5 s; 0 would keep the firmware default).
    var qmiReportSeconds: UInt8 {
        guard case let .live(interval) = self else { return 0 }
        return UInt8(max(1, min(5, interval.components.seconds)))
    }
}

/// Thresholds every 2 dB for firmware without Config Signal Info v2 (at most 32 per measure).
enum LiveSignalThresholds {
    static func every2dB(_ range: ClosedRange<Double>) -> [Int] {
        Array(stride(from: Int(range.lowerBound), through: Int(range.upperBound), by: 2).prefix(32))
    }

    static var rssi: [Int8] { every2dB(-113 ... -51).map { Int8(clamping: $0) } }
    static var rsrp: [Int16] { every2dB(-140 ... -78).map { Int16(clamping: $0) } }
    static var rsrq: [Int8] { every2dB(-25 ... -3).map { Int8(clamping: $0) } }
    /// LTE SNR in 0.1 dB.
    static var lteSNR: [Int16] { every2dB(-10 ... 30).map { Int16(clamping: $0 * 10) } }
}

extension QMISession {
    /// Config Signal Info at the bar boundaries, or, for `.live`, v2 with 1 dB deltas (falling back to 2 dB
    /// thresholds on firmware that does not know v2).
    func configureSignalReports(_ reporting: SignalReporting) async throws {
        guard case .live = reporting else {
            try await configSignalInfo()
            return
        }
        do {
            try await configSignalInfoV2Deltas(reportSeconds: reporting.qmiReportSeconds)
        } catch let e as GLibError where e.isQMIUnsupported {
            logger.debug("QMI Config Signal Info v2 unsupported, using 2 dB thresholds", metadata: ["error": "\(e)"])
            try await configSignalInfoDenseThresholds()
        }
    }

    private func configSignalInfoV2Deltas(reportSeconds: UInt8) async throws {
        let nas = try await requireNAS()
        try await request(
            "qmi_client_nas_config_signal_info_v2",
            start: { c in
                let input = qmi_message_nas_config_signal_info_v2_input_new()
                let tenths: UInt16 = 10  // 1 dB in the deltas' 0.1 dB units
                qmi_message_nas_config_signal_info_v2_input_set_gsm_rssi_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_wcdma_rssi_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_wcdma_ecio_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_wcdma_rscp_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_lte_rssi_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_lte_rsrp_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_lte_rsrq_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_lte_snr_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_lte_report(input, reportSeconds, reportSeconds, nil)
                qmi_message_nas_config_signal_info_v2_input_set_nr5g_rsrp_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_nr5g_rsrq_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_nr5g_snr_delta(input, tenths, nil)
                qmi_message_nas_config_signal_info_v2_input_set_nr5g_report(input, reportSeconds, reportSeconds, nil)
                qmi_client_nas_config_signal_info_v2(nas.p, input, c.timeoutSeconds, c.cancellable, c.callback, c.userData)
                qmi_message_nas_config_signal_info_v2_input_unref(input)
            },
            finish: { qmi_client_nas_config_signal_info_v2_finish(nas.p, $0, $1) },
            result: qmi_message_nas_config_signal_info_v2_output_get_result,
            unref: qmi_message_nas_config_signal_info_v2_output_unref,
            extract: { _ in () })
    }

    private func configSignalInfoDenseThresholds() async throws {
        try await configSignalInfo(
            QMISignalThresholds(
                rssi: LiveSignalThresholds.rssi, rsrp: LiveSignalThresholds.rsrp, rsrq: LiveSignalThresholds.rsrq,
                lteSNR: LiveSignalThresholds.lteSNR))
    }
}
