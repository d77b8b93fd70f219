// A detached thread of our own, for work that must stay off Swift concurrency's pool (the event loop, the modem
// worker's GLib loop, the state writer's fsync, a name lookup). Every such thread is named
// `reach-<role>` (pthread_setname_np), so `ps -T -p PID` and `top -H` show who is who.

import Glibc

/// Runs `body` on a detached thread of its own named `reach-<role>` (the kernel keeps 15 bytes of a thread's name:
/// a role of up to 9). False when no thread could be had (the body is then not run).
@discardableResult
public func startThread(_ role: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable {  // handed to the new thread once, through pthread_create's void *
        let name: [CChar]
        let body: @Sendable () -> Void
        init(_ name: [CChar], _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let name = threadName(role)
    let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { arg in
        let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
        nameThisThread(box.name)
        box.body()
        return nil
    }, box)
    if rc != 0 {
        Unmanaged<Box>.fromOpaque(box).release()
        return false
    }
    pthread_detach(thread)
    return true
}

/// Names the calling thread: pthread_setname_np(3) is a GNU extension Glibc's module does not show (and prctl is
/// variadic), so the name is written where glibc itself writes another thread's, the thread's `comm` in /proc (Linux
/// 3.17's /proc/thread-self). Without /proc the thread keeps the process's name.
func nameThisThread(_ name: [CChar]) {
    let path = "/proc/thread-self/comm"
    guard case let .success(fd) = Sys.openat(AT_FDCWD, path, O_WRONLY, path: path) else { return }
    _ = name.dropLast().withUnsafeBytes { Sys.write(fd, $0, path: path) }
    Sys.close(fd)
}

/// `reach-<role>` as a C string the kernel accepts: at most 15 bytes before the NUL (TASK_COMM_LEN is 16).
public func threadName(_ role: String) -> [CChar] {
    Array(("reach-" + role).utf8.prefix(15)).map { CChar(bitPattern: $0) } + [0]
}
