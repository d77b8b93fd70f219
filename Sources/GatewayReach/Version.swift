public enum GatewayReachVersion {
    /// The release this build belongs to.
    public static let string = "0.1.0"
}
