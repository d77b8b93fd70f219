// The entry point the rest of GatewayReach uses to read WiFi state. Implemented by the WiFi issue (#4).
import ReachCore

public enum WiFiReader {
    /// Reads every WiFi interface (or only `interface`) once. When the kernel has no nl80211 the source is
    /// unavailable with that reason; that is not an error.
    public static func read(interface: String?) async -> (SourceHealth, [WiFiLink]) {
        (SourceHealth(available: false, reason: "WiFi support is not built yet"), [])
    }
}
