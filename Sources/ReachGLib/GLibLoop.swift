// The one GLib main context of the process and the thread that iterates it.
//
// libqmi-glib and libmbim-glib attach their I/O watches and timeouts to the thread-default main context of the
// thread that calls them, and call back on it. GatewayReach therefore runs exactly one GLib thread per process,
// started on first use, and every libqmi/libmbim call hops onto it (`perform`). Nothing else in the process
// iterates this context.

import CGLibShims
import ReachLog
import Synchronization

/// The process-wide GLib main loop thread. All GLib objects that ReachGLib users create (devices, clients, sources)
/// belong to it: create them, call them and unref them only from inside `perform` (or a callback, which already
/// runs there).
public final class GLibLoop: @unchecked Sendable {
    // @unchecked: `context` and `loop` are set once in init and never change; GLib's own locking makes
    // g_main_context_invoke_full and g_source_attach safe from any thread.

    /// The loop every GatewayReach GLib call runs on. Started the first time it is used; runs until exit.
    public static let shared = GLibLoop()

    /// See `perform`.
    private static let handoff = Atomic<Int>(0)

    /// The GMainContext the loop thread iterates (thread-default on that thread).
    public let context: OpaquePointer
    private let loop: OpaquePointer

    private init() {
        GLibLog.installWriter()
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        let started = UnsafeMutablePointer<GLibLoopStart>.allocate(capacity: 1)
        started.initialize(to: GLibLoopStart(context: context, loop: loop))
        // g_thread_new keeps a reference of its own on the thread; we never join it, so drop ours.
        let thread = g_thread_new("reach-glib", { data in
            let start = data!.assumingMemoryBound(to: GLibLoopStart.self)
            let (context, loop) = (start.pointee.context, start.pointee.loop)
            start.deinitialize(count: 1)
            start.deallocate()
            g_main_context_push_thread_default(context)
            g_main_loop_run(loop)
            g_main_context_pop_thread_default(context)
            return nil
        }, started)
        g_thread_unref(thread)
    }

    /// Whether the caller is running on the loop thread.
    public var isLoopThread: Bool { g_main_context_is_owner(context) != 0 }

    /// Runs `body` on the loop thread: at once when already there, otherwise as soon as the loop is free.
    /// The corresponding C function is `g_main_context_invoke_full`.
    ///
    /// The box crosses threads inside GLib, whose GMutex locks with futex(2) directly; a release/acquire pair on
    /// `handoff` states the same ordering where ThreadSanitizer can see it (it reported the box's fields as racing).
    public func perform(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(GLibClosureBox(body)).toOpaque()
        GLibLoop.handoff.wrappingAdd(1, ordering: .releasing)
        g_main_context_invoke_full(context, G_PRIORITY_DEFAULT, { data in
            _ = GLibLoop.handoff.load(ordering: .acquiring)
            let box = Unmanaged<GLibClosureBox>.fromOpaque(data!).takeRetainedValue()
            box.body()
            return 0  // G_SOURCE_REMOVE
        }, box, nil)
    }

    /// Runs `body` on the loop thread and returns its result to the awaiting task.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            perform { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the loop thread and returns its result to the awaiting task.
    public func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            perform { continuation.resume(returning: body()) }
        }
    }

    /// Calls `body` on the loop thread once `delay` has passed, unless the returned timer is cancelled first.
    /// Call only on the loop thread. The corresponding C functions are `g_timeout_source_new` and `g_source_attach`.
    public func schedule(after delay: Duration, _ body: @escaping () -> Void) -> GLibTimer {
        precondition(isLoopThread, "GLibLoop.schedule must be called on the loop thread")
        let ms = max(0, delay.milliseconds)
        let source = g_timeout_source_new(UInt32(clamping: ms))!
        let timer = GLibTimer(source: source)
        let box = Unmanaged.passRetained(GLibTimerBox(timer: timer, body: body)).toOpaque()
        g_source_set_callback(source, { data in
            let box = Unmanaged<GLibTimerBox>.fromOpaque(data!).takeUnretainedValue()
            box.timer.fired = true
            box.body()
            return 0  // G_SOURCE_REMOVE: the destroy notify below releases the box
        }, box, { data in
            Unmanaged<GLibTimerBox>.fromOpaque(data!).release()
        })
        g_source_attach(source, context)
        return timer
    }
}

/// A pending `GLibLoop.schedule` timer. Use it on the loop thread only.
public final class GLibTimer {
    fileprivate let source: UnsafeMutablePointer<GSource>
    fileprivate var fired = false
    private var cancelled = false

    fileprivate init(source: UnsafeMutablePointer<GSource>) { self.source = source }

    /// Stops the timer if it has not fired yet. The corresponding C function is `g_source_destroy`.
    public func cancel() {
        guard !cancelled else { return }
        cancelled = true
        if !fired { g_source_destroy(source) }
    }

    deinit { g_source_unref(source) }
}

private struct GLibLoopStart {
    var context: OpaquePointer
    var loop: OpaquePointer
}

private final class GLibClosureBox {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

private final class GLibTimerBox {
    let timer: GLibTimer
    let body: () -> Void
    init(timer: GLibTimer, body: @escaping () -> Void) {
        self.timer = timer
        self.body = body
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so that a short positive timeout never becomes zero.
    public var milliseconds: Int64 {
        let (s, attos) = components
        let ms = attos / 1_000_000_000_000_000 + (attos % 1_000_000_000_000_000 > 0 ? 1 : 0)
        return s * 1000 + ms
    }

    /// Whole seconds for C APIs that take a `guint` timeout in seconds, rounded up, at least 1.
    public var wholeSecondsRoundedUp: UInt32 {
        UInt32(clamping: max(1, (milliseconds + 999) / 1000))
    }
}
