// Every default a user can change, stated once. The configuration reader (`AgentConfig`'s members), the library's
// options (`ReachabilityOptions`, the monitors' own option types) and the commands' flags take their values from
// here; `documented` is the list the configuration reference's "default" column is checked against (DefaultsTests),
// so a default changed here and not in the docs fails a test rather than drifting (the modem poll was once 60 s in
// the configuration and 30 s in the modem monitor).

public enum Defaults {
    // report
    public static let reportPath = "/var/log/reach/reach.jsonl"
    public static let reportIntervalSeconds: Double = 60
    public static let reportRotateBytes = 1 << 20
    public static let reportRotateKeep = 5

    // changes
    /// How long a loss must last before it is reported (`ChangePolicy.holdDown`).
    public static let holdDownSeconds: Double = 5
    /// How far (dB) past a bar boundary a signal must go before the bars change.
    public static let barHysteresisDB: Double = 3

    // modems
    public static let modemRequestTimeoutSeconds: Double = 5
    /// What a modem cannot announce by itself is read this often, and discovery runs again.
    public static let modemPollIntervalSeconds: Double = 60
    /// The data sessions are asked again this often although indications announce them (late or missing
    /// indications on some firmware).
    public static let modemSessionRequerySeconds: Double = 10

    // wifi
    /// The safety-net read when no nl80211 event came.
    public static let wifiPollIntervalSeconds: Double = 30

    // name resolution (`--resolve-timeout`, host targets)
    public static let resolveTimeoutSeconds: Double = 3

    // validation
    public static let validationIntervalSeconds: Double = 30
    public static let validationTimeoutSeconds: Double = 2
    public static let validationDownAfter = 3
    public static let validationUpAfter = 2
    public static let validationRetryIntervalSeconds: Double = 5
    public static let validationMaxIntervalSeconds: Double = 120

    // diag, api
    public static let diagReportLines = 200
    public static let stateDirectory = "/run/reach"
    public static let hooksDirectory = "/etc/reach/events.d"
    public static let hookTimeoutSeconds: Double = 30
    /// A hook still running at its timeout gets SIGTERM, then SIGKILL this much later (not configurable).
    public static let hookKillGraceSeconds: Double = 2
    /// `api.max_clients` and `api.max_clients_per_uid` (`APIAdmission`): one reader needs one or two connections (a
    /// subscription, and `reach status` beside it); 4 leaves room for a few tools of one user, while root and the
    /// group keep 4 each and an unprivileged uid holds an eighth of the socket at most.
    public static let maxClients = 32
    public static let maxClientsPerUID = 4

    /// A count of seconds as a `Duration`, to the millisecond (what the configuration's numbers mean).
    public static func duration(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

    /// The configuration keys with a scalar default, as the reference shows each default.
    public static let documented: [(key: String, value: String)] = [
        ("report.path", "`\(reportPath)`"),
        ("report.interval_seconds", show(reportIntervalSeconds)),
        ("report.rotate_bytes", String(reportRotateBytes)),
        ("report.rotate_keep", String(reportRotateKeep)),
        ("changes.hold_down_seconds", show(holdDownSeconds)),
        ("changes.bar_hysteresis_db", show(barHysteresisDB)),
        ("modems.request_timeout_seconds", show(modemRequestTimeoutSeconds)),
        ("modems.poll_interval_seconds", show(modemPollIntervalSeconds)),
        ("modems.session_requery_seconds", show(modemSessionRequerySeconds)),
        ("wifi.poll_interval_seconds", show(wifiPollIntervalSeconds)),
        ("validation.interval_seconds", show(validationIntervalSeconds)),
        ("validation.timeout_seconds", show(validationTimeoutSeconds)),
        ("validation.retry_interval_seconds", show(validationRetryIntervalSeconds)),
        ("validation.max_interval_seconds", show(validationMaxIntervalSeconds)),
        ("diag.report_lines", String(diagReportLines)),
        ("api.state_directory", "`\(stateDirectory)`"),
        ("api.hooks_directory", "`\(hooksDirectory)`"),
        ("api.hook_timeout_seconds", show(hookTimeoutSeconds)),
        ("api.max_clients", String(maxClients)),
        ("api.max_clients_per_uid", String(maxClientsPerUID)),
    ]

    /// A number as the reference writes it: whole numbers without a fraction.
    static func show(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
}
