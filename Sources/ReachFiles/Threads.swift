// A detached thread of our own, for blocking work that must stay off Swift concurrency's pool (the modem worker's
// GLib loop, the agent's output workers, the hook runner, the Varlink server).

import Glibc

/// Runs `body` on a detached thread of its own. False when no thread could be had (the body is then not run).
@discardableResult
public func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { arg in
        Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
        return nil
    }, box)
    if rc != 0 {
        Unmanaged<Box>.fromOpaque(box).release()
        return false
    }
    pthread_detach(thread)
    return true
}
