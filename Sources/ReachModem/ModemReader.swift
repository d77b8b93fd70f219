// The entry points the rest of GatewayReach uses to ask modems. Implemented by the WWAN issue (#3).
import ReachCore

/// A modem control port named by the user or found in sysfs: `/dev/cdc-wdm0`, `/dev/wwan0qmi0`, or a simulator pty.
public struct ModemPortSpec: Sendable, Equatable {
    public var path: String
    /// nil: decide from sysfs (driver qmi_wwan → QMI, cdc_mbim → MBIM, wwan port type).
    public var `protocol`: ModemProtocol?
    /// The network interface that carries this modem's data, when known.
    public var interface: String?

    public init(path: String, protocol: ModemProtocol? = nil, interface: String? = nil) {
        self.path = path
        self.protocol = `protocol`
        self.interface = interface
    }
}

public struct ModemReadOptions: Sendable {
    /// Per-request timeout.
    public var requestTimeout: Duration

    public init(requestTimeout: Duration = .seconds(5)) {
        self.requestTimeout = requestTimeout
    }
}

public enum ModemReader {
    /// Reads every modem once: `specs`, or the ports discovery finds when nil. Never throws: a modem that cannot be
    /// read is returned with its `error` set, and the source is unavailable only when it cannot be asked at all.
    public static func read(_ specs: [ModemPortSpec]?, options: ModemReadOptions) async -> (SourceHealth, [ModemState]) {
        (SourceHealth(available: false, reason: "WWAN support is not built yet"), [])
    }
}
