// Bridging GIO-style asynchronous calls (`foo (…, GCancellable *, GAsyncReadyCallback, gpointer user_data)` and
// `foo_finish (source, GAsyncResult *, GError **)`) to Swift `async throws`.
//
// The C callback is one top-level, non-capturing function (`glibAsyncReady`); the state travels through
// `user_data` as a retained `GLibPendingCall`. (A capturing closure cannot be a C function pointer, and in Swift 6
// mode swiftc 6.3.1 crashed trying.) Each call has its own GCancellable and a deadline on
// the loop: whichever comes first (the reply, the deadline, the task's cancellation) resumes the continuation,
// exactly once, on the loop thread. A late reply is still finished (so its output is freed) and dropped.

import CGLibShims

/// What `GLibLoop.call`'s `start` closure passes to the C function: the cancellable, the callback and its data.
public struct GLibAsyncCall {
    /// Pass as the `GCancellable *` argument.
    public let cancellable: UnsafeMutablePointer<GCancellable>
    /// Pass as the `GAsyncReadyCallback` argument.
    public let callback: GAsyncReadyCallback
    /// Pass as the `user_data` argument. Must be handed to exactly one asynchronous C call.
    public let userData: gpointer
    /// The deadline in whole seconds (rounded up), for C calls that take a `guint timeout` of their own; the
    /// bridge enforces the exact deadline itself.
    public let timeoutSeconds: UInt32
}

/// Lets the loop and the cancellation handler find a call that may not have started yet. Touched only on the loop
/// thread (both `start` and `onCancel` hop there), hence @unchecked.
private final class GLibCallHandle: @unchecked Sendable {
    var pending: GLibPendingCallBase?
    var cancelledBeforeStart = false
}

class GLibPendingCallBase {
    /// Set while the call is in flight, so that its group can abort it.
    var group: GLibCallGroup?
    /// The C function, for errors.
    let name: String
    init(name: String) { self.name = name }
    func ready(source: UnsafeMutablePointer<GObject>?, result: OpaquePointer?) {}
    func abort(_ error: GLibError) {}
}

/// The calls in flight on one device. When the device goes away (HUP, EOF) its owner aborts them all at once
/// instead of letting each wait for its deadline, and every later call fails at once with the same error.
/// Use on the loop thread only (hence @unchecked Sendable: it may be handed around, not touched elsewhere).
public final class GLibCallGroup: @unchecked Sendable {
    private var pending: [ObjectIdentifier: GLibPendingCallBase] = [:]
    /// The error the group was aborted with, if it was.
    public private(set) var abortedWith: GLibError?
    /// Whether a call of the group ran past its deadline or was cancelled: the device may still owe an answer,
    /// so its owner should not start polite exchanges (client releases) before closing.
    public private(set) var sawUnansweredCall = false

    public init() {}

    /// Aborts every call in flight with `error` (its `call` is replaced by each call's own name) and makes every
    /// later call fail the same way. Call on the loop thread.
    public func abortAll(_ error: GLibError) {
        guard abortedWith == nil else { return }
        abortedWith = error
        let calls = pending.values
        pending.removeAll()
        for call in calls {
            var own = error
            own.call = call.name
            call.abort(own)
        }
    }

    fileprivate func add(_ call: GLibPendingCallBase) {
        pending[ObjectIdentifier(call)] = call
        call.group = self
    }

    fileprivate func noteUnanswered() { sawUnansweredCall = true }

    fileprivate func remove(_ call: GLibPendingCallBase) {
        pending[ObjectIdentifier(call)] = nil
        call.group = nil
    }
}

private final class GLibPendingCall<T: Sendable>: GLibPendingCallBase {
    var continuation: CheckedContinuation<T, Error>?
    let finish: (UnsafeMutablePointer<GObject>?, OpaquePointer?) throws -> T
    let discard: ((T) -> Void)?
    let cancellable: UnsafeMutablePointer<GCancellable>
    var timer: GLibTimer?

    init(
        name: String, continuation: CheckedContinuation<T, Error>,
        finish: @escaping (UnsafeMutablePointer<GObject>?, OpaquePointer?) throws -> T, discard: ((T) -> Void)?
    ) {
        self.continuation = continuation
        self.finish = finish
        self.discard = discard
        self.cancellable = g_cancellable_new()
        super.init(name: name)
    }

    deinit { g_object_unref(cancellable) }

    override func ready(source: UnsafeMutablePointer<GObject>?, result: OpaquePointer?) {
        group?.remove(self)
        timer?.cancel()
        timer = nil
        // Always finish: it frees the operation's output even when nobody waits any more.
        let outcome = Result { try finish(source, result) }
        guard let continuation else {
            // Nobody waits (deadline or cancellation came first): hand a late success back to be released.
            if case let .success(value) = outcome { discard?(value) }
            return
        }
        self.continuation = nil
        continuation.resume(with: outcome)
    }

    override func abort(_ error: GLibError) {
        if error.kind == .timedOut || error.kind == .cancelled { group?.noteUnanswered() }
        group?.remove(self)
        timer?.cancel()
        timer = nil
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(throwing: error)
        g_cancellable_cancel(cancellable)
    }
}

/// The one `GAsyncReadyCallback` of the bridge.
private func glibAsyncReady(source: UnsafeMutablePointer<GObject>?, result: OpaquePointer?, data: gpointer?) {
    let pending = Unmanaged<GLibPendingCallBase>.fromOpaque(data!).takeRetainedValue()
    pending.ready(source: source, result: result)
}

extension GLibLoop {
    /// Starts a GIO-style asynchronous C call on the loop thread and awaits its completion.
    ///
    /// - Parameters:
    ///   - name: the C function, for errors ("qmi_client_nas_get_system_info").
    ///   - timeout: the deadline; the call fails with `.timedOut` when it passes.
    ///   - group: the device's group of calls, which can abort this one early (see `GLibCallGroup`).
    ///   - start: runs on the loop thread; must pass the given cancellable, callback and user data to exactly one
    ///     asynchronous C call.
    ///   - finish: runs on the loop thread with the source object and the GAsyncResult; calls the `_finish`
    ///     function and copies what it needs into Sendable Swift values (freeing the C output) before returning.
    ///   - discard: runs on the loop thread with a result that arrived after the call had already failed (deadline,
    ///     cancellation); releases what the result owns (a new object, a client) so nothing leaks.
    public func call<T: Sendable>(
        _ name: String, timeout: Duration, group: GLibCallGroup? = nil,
        start: @escaping @Sendable (GLibAsyncCall) -> Void,
        finish: @escaping @Sendable (UnsafeMutablePointer<GObject>?, OpaquePointer?) throws -> T,
        discard: (@Sendable (T) -> Void)? = nil
    ) async throws -> T {
        let handle = GLibCallHandle()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
                perform {
                    if handle.cancelledBeforeStart {
                        continuation.resume(throwing: GLibError.cancelled(name))
                        return
                    }
                    if var error = group?.abortedWith {
                        error.call = name
                        continuation.resume(throwing: error)
                        return
                    }
                    let pending = GLibPendingCall(name: name, continuation: continuation, finish: finish, discard: discard)
                    handle.pending = pending
                    group?.add(pending)
                    pending.timer = self.schedule(after: timeout) { [weak pending] in
                        pending?.abort(.timedOut(name, after: timeout))
                    }
                    let call = GLibAsyncCall(
                        cancellable: pending.cancellable,
                        callback: { glibAsyncReady(source: $0, result: $1, data: $2) },
                        userData: Unmanaged<GLibPendingCallBase>.passRetained(pending).toOpaque(),
                        timeoutSeconds: timeout.wholeSecondsRoundedUp + 1)
                    start(call)
                }
            }
        } onCancel: {
            self.perform {
                if let pending = handle.pending {
                    pending.abort(.cancelled(name))
                } else {
                    handle.cancelledBeforeStart = true
                }
            }
        }
    }
}
