// Host-name resolution that never blocks the caller past a deadline.
//
// getaddrinfo(3) blocks, and a dead DNS server stalls it for the resolver's full retry budget (Apple's Reachability
// sample, Reachability.m, warns of ~30 s). It runs here on a detached thread of its own; the caller waits for the
// answer or the deadline, whichever comes first. A late answer is dropped when it arrives.

import Glibc
import ReachCore
import ReachSystem
import ReachTime
import Synchronization

public struct ResolutionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

public enum HostResolver {
    /// The addresses `name` resolves to (getaddrinfo order, which follows RFC 6724), or why not, within `timeout`.
    /// An IP literal is returned as is without asking anyone.
    public static func resolve(_ name: String, timeout: Duration) async -> Result<[IPAddress], ResolutionError> {
        if let literal = IPAddress(name) { return .success([literal]) }
        guard !name.isEmpty, name.utf8.count <= 253, !name.contains(where: { $0 == " " || $0 == "\0" }) else {
            return .failure(ResolutionError(message: "'\(name)' is not a valid host name"))
        }
        let box = Pending()
        return await withCheckedContinuation { (continuation: CheckedContinuation<Result<[IPAddress], ResolutionError>, Never>) in
            box.state.withLock { $0.continuation = continuation }
            guard startThread("resolve", { box.finish(HostResolver.lookup(name)) }) else {
                box.finish(.failure(ResolutionError(message: "cannot start the resolver thread")))
                return
            }
            box.setTimer(
                Task {
                    try? await Timers.shared.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    box.finish(.failure(ResolutionError(message: "resolving '\(name)' timed out after \(timeout)")))
                })
        }
    }

    /// The blocking lookup, on the resolver thread.
    static func lookup(_ name: String) -> Result<[IPAddress], ResolutionError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(name, nil, &hints, &res)
        guard rc == 0 else {
            return .failure(ResolutionError(message: "cannot resolve '\(name)': \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(res) }
        var out: [IPAddress] = []
        var p = res
        while let ai = p {
            if ai.pointee.ai_family == AF_INET, let sa = ai.pointee.ai_addr {
                let bytes = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafeBytes(of: sin.pointee.sin_addr) { Array($0) }
                }
                IPAddress(bytes: bytes).map { out.append($0) }
            } else if ai.pointee.ai_family == AF_INET6, let sa = ai.pointee.ai_addr {
                let bytes = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) }
                }
                IPAddress(bytes: bytes).map { out.append($0) }
            }
            p = ai.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        out = out.filter { seen.insert($0).inserted }
        return out.isEmpty ? .failure(ResolutionError(message: "'\(name)' has no IPv4 or IPv6 address")) : .success(out)
    }

    /// One waiting caller: resumed exactly once, by the answer or by the deadline; the loser is cancelled or dropped.
    final class Pending: Sendable {
        struct State {
            var continuation: CheckedContinuation<Result<[IPAddress], ResolutionError>, Never>?
            var timer: Task<Void, Never>?
            var finished = false
        }
        let state = Mutex(State())

        func setTimer(_ t: Task<Void, Never>) {
            let cancelNow = state.withLock { s -> Bool in
                if s.finished { return true }
                s.timer = t
                return false
            }
            if cancelNow { t.cancel() }
        }

        func finish(_ result: Result<[IPAddress], ResolutionError>) {
            let (c, timer) = state.withLock { s -> (CheckedContinuation<Result<[IPAddress], ResolutionError>, Never>?, Task<Void, Never>?) in
                defer { s.continuation = nil; s.timer = nil; s.finished = true }
                return (s.continuation, s.timer)
            }
            c?.resume(returning: result)
            timer?.cancel()
        }
    }
}
