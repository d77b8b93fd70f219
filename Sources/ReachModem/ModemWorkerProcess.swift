// The modem worker's side: a process that runs libqmi/libmbim and their GLib loop for one modem and reports to its
// parent over fd 3 (ModemWorkerProtocol.swift). If a modem's bytes make a library abort (libmbim 1.28's
// `mbim_message_device_services_response_parse` asks g_malloc0 for a size read from the wire, and GLib aborts when it
// cannot have it), this process dies and its parent says so; nothing else does.
//
// `reach modem-worker` calls `ModemWorkerProcess.main()`; another program embedding GatewayReach can do the same
// from its own main and point `ModemReadOptions.worker` at itself.

import CGLibShims
import ReachCore
import ReachSystem
import ReachGLib
import ReachLog
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public enum ModemWorkerProcess {
    /// The descriptor a worker talks to its parent on.
    static let channel: Int32 = 3

    /// Runs the worker: reads its one request from fd 3, drops every capability, does the job, and returns the exit
    /// status (0 when the job ended as asked; 64 when fd 3 is not a worker socket, as when run by hand; 65 when the
    /// request is not understood). A lost parent ends it too (SIGKILL through PR_SET_PDEATHSIG, or end of file).
    public static func main() async -> Int32 {
        guard case .success(let st) = Sys.fstat(channel, path: nil), st.kind == .socket else {
            printError("reach modem-worker: this command is started by reach itself (fd 3 must be its socket)")
            return 64
        }
        // Close-on-exec from here on: a program this worker starts (the qmi-proxy/mbim-proxy it launches for `auto`
        // access outlives it) must not hold the parent's socket open, or the parent would never see it close.
        _ = Sys.setCloseOnExec(channel, path: nil)
        // Without capabilities this process cannot read other processes' /proc/PID/fd: its parent names the port's
        // other holders on the states it receives (`WorkerRun.bounded`).
        PortHolders.scanHere = false
        // Ctrl-C in a terminal, a terminal hang-up and systemd's stop reach the whole process group; the parent
        // decides when its workers end (end of file on the socket), or dies and takes them along (PR_SET_PDEATHSIG).
        // A worker killed by them first would be reported as failed in the parent's last line.
        for s in [SIGHUP, SIGINT, SIGTERM] { Sys.signal(s, .ignore) }
        let link = WorkerLink(fd: channel)
        ProxyWatch.reportToParent = { link.send(.proxySilent($0)) }
        let request: WorkerRequest
        switch link.readRequest(timeoutMs: 10_000) {
        case let .success(r): request = r
        case let .failure(e):
            link.send(.refused("\(e)"))
            return 65
        }
        guard request.version == WorkerRequest.version else {
            link.send(.refused("request version \(request.version), this worker speaks \(WorkerRequest.version)"))
            return 65
        }

        var step = CGLibShims_confine_ok
        let rc = CGLibShims_worker_confine(&step)
        if rc != 0 {
            // Not fatal: a sandbox that forbids prctl/capset must not leave a modem unread. The parent logs what is left.
            printError("reach modem-worker: confining failed at step \(step.rawValue): \(String(cString: strerror(rc)))")
        }
        link.send(.ready(capabilities: UInt64(CGLibShims_worker_effective_capabilities())))

        // A GLib error is fatal (abort); say what it was while we still can.
        GLibLog.onSevere { domain, message in link.send(.fatalLog(domain: domain, message: message)) }
        let heartbeat = Task.detached {
            while !Task.isCancelled {
                do { try await Task.sleep(for: request.heartbeat) } catch { return }
                // A callback that ran on the GLib loop thread: libqmi/libmbim are not stuck inside one. Before the job
                // opened GLib (or when it could not) nothing runs there, and the loop is not started for this.
                if GLibLibraries.glibIsOpen { await GLibLoop.shared.run {} }
                link.send(.heartbeat)
            }
        }
        // A monitor ends when the parent closes its end (or dies) as it ends in-process when its consumer goes away:
        // the request in flight finishes, then the port is closed and every client id released. A read is cancelled.
        let stop = StopSignal()
        let job = Task {
            switch request.job {
            case let .read(spec, options):
                var options = options
                options.worker = nil
                let (health, states) = await ModemReader.read([spec], options: options)
                link.send(.result(health, states))
            case let .monitor(spec, options):
                var options = options
                options.read.worker = nil
                await ModemMonitor(spec, options: options).run(stop: stop) { link.send(.update($0)) }
            }
        }
        link.watchForEnd {
            stop.fire()
            if case .read = request.job { job.cancel() }
            // The parent kills a worker that has not gone 2 s after it closed the socket. A polite end that would take
            // longer (a request in flight to a slow modem) is cut short first, so that this process still ends by
            // itself: the job is cancelled at 1.5 s (the close is still attempted), and the process exits at 1.8 s.
            startThread("wind-down") {
                Sys.nanosleep(.milliseconds(1500))
                job.cancel()
                Sys.nanosleep(.milliseconds(300))
                _exit(0)
            }
        }
        await job.value
        heartbeat.cancel()
        return 0
    }
}

/// The worker's end of the socket: frames out under a lock (the job, the heartbeat and GLib's log writer all send),
/// and a thread that notices the parent closing its end.
final class WorkerLink: Sendable {
    let fd: Int32
    private let lock = Mutex(())

    init(fd: Int32) { self.fd = fd }

    /// The parent's request frame, within `timeoutMs`.
    func readRequest(timeoutMs: Int32) -> Result<WorkerRequest, WireError> {
        var buffer = WireFrameBuffer(maxPayload: WorkerLimits.maxPayload)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            do {
                if let payload = try buffer.next() {
                    return .success(try WireCodec.decode(WorkerRequest.self, from: payload))
                }
            } catch {
                return .failure(error)
            }
            switch Sys.poll(fd, Int16(POLLIN), timeoutMs: timeoutMs) {
            case .success(0): return .failure(WireError("no request within \(timeoutMs) ms"))
            case .success: break
            case let .failure(e): return .failure(WireError("\(e)"))
            }
            let received = chunk.withUnsafeMutableBytes { Sys.recv(fd, into: $0, path: nil) }
            guard case let .success(n) = received, n > 0 else {
                return .failure(WireError("the parent closed the socket before its request"))
            }
            buffer.append(chunk[0..<n])
        }
    }

    /// Sends one message; a parent that is gone ends the process.
    func send(_ message: WorkerMessage) {
        guard let frame = try? WireFrame.encode(message) else { return }
        let sent = lock.withLock { _ in Sys.sendAll(fd, frame, path: nil) }
        if case .failure = sent { _exit(0) }
    }

    /// Calls `onEnd` (once, on a thread of its own) when the parent closes its end of the socket or goes away.
    func watchForEnd(_ onEnd: @escaping @Sendable () -> Void) {
        let fd = self.fd
        startThread("parent") {
            var byte: UInt8 = 0
            // The parent sends nothing after its request; anything more is ignored.
            while case .success(1) = withUnsafeMutableBytes(of: &byte, { Sys.recv(fd, into: $0, path: nil) }) {}
            onEnd()
        }
    }
}

/// A line on standard error, whole.
func printError(_ text: String) {
    _ = Sys.writeAll(2, Array((text + "\n").utf8), path: nil)
}
