// GError (and the two ways a bridged call ends without one: its deadline or its task's cancellation) as a Swift
// error that names the call that failed.

import CGLibShims

public struct GLibError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A GError: its domain as a string (for example "qmi-protocol-error-quark") and code.
        case gError(domain: String, code: Int32)
        /// No answer within the request's deadline.
        case timedOut
        /// The awaiting task was cancelled.
        case cancelled
    }

    public var kind: Kind
    /// The C call (or step) that failed, for example "qmi_client_nas_get_system_info".
    public var call: String
    public var message: String
    /// For `timedOut`: how long the answer was waited for, in milliseconds.
    public var waitedMs: Int?

    public init(kind: Kind, call: String, message: String, waitedMs: Int? = nil) {
        self.kind = kind
        self.call = call
        self.message = message
        self.waitedMs = waitedMs
    }

    /// Copies a GError's domain, code and message, then frees it (`g_error_free`).
    public init(consuming error: UnsafeMutablePointer<GError>?, call: String) {
        guard let error else {
            self.init(kind: .gError(domain: "unknown", code: 0), call: call, message: "failed without an error")
            return
        }
        let domain = g_quark_to_string(error.pointee.domain).map { String(cString: $0) } ?? "unknown"
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        self.init(kind: .gError(domain: domain, code: error.pointee.code), call: call, message: message)
        g_error_free(error)
    }

    public static func timedOut(_ call: String, after: Duration) -> GLibError {
        GLibError(
            kind: .timedOut, call: call, message: "no answer within \(after.milliseconds) ms",
            waitedMs: Int(after.milliseconds))
    }

    public static func cancelled(_ call: String) -> GLibError {
        GLibError(kind: .cancelled, call: call, message: "cancelled")
    }

    /// Whether this is the GError `code` of the domain whose quark `domain` returns.
    public func matches(_ domain: () -> GQuark, _ code: Int32) -> Bool {
        guard case let .gError(_, c) = kind, c == code else { return false }
        return isDomain(domain)
    }

    /// Whether this is a GError of the domain whose quark `domain` returns (any code).
    public func isDomain(_ domain: () -> GQuark) -> Bool {
        guard case let .gError(d, _) = kind else { return false }
        return g_quark_to_string(domain()).map { String(cString: $0) } == d
    }

    /// The name of a GError domain, as `kind` carries it.
    public static func domainName(_ domain: () -> GQuark) -> String {
        g_quark_to_string(domain()).map { String(cString: $0) } ?? ""
    }

    /// An I/O error that means the port is gone (G_IO_ERROR_CLOSED, BROKEN_PIPE, NOT_CONNECTED, CONNECTION_CLOSED,
    /// or a "device removed" style failure reported as G_IO_ERROR_FAILED with errno text EIO/HUP).
    public var isGIOClosed: Bool {
        guard case let .gError(_, c) = kind, isDomain(g_io_error_quark) else { return false }
        return [G_IO_ERROR_CLOSED, G_IO_ERROR_BROKEN_PIPE, G_IO_ERROR_NOT_CONNECTED, G_IO_ERROR_CONNECTION_CLOSED,
                G_IO_ERROR_NOT_FOUND]
            .map { Int32($0.rawValue) }.contains(c)
    }

    public var description: String { "\(call): \(message)" }
}

/// Runs a C call that reports failure through a `GError **` and returns a gboolean; throws a `GLibError` naming
/// `call` when it fails.
@discardableResult
public func withGError<T>(
    _ call: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T,
    failed: (T) -> Bool
) throws(GLibError) -> T {
    var error: UnsafeMutablePointer<GError>? = nil
    let value = body(&error)
    if failed(value) || error != nil { throw GLibError(consuming: error, call: call) }
    return value
}

/// `withGError` for the common gboolean-returning call.
public func checkGError(
    _ call: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> gboolean
) throws(GLibError) {
    try withGError(call, body, failed: { $0 == 0 })
}
