// One validation round of one uplink: its probes made concrete (`ValidationPlan`), run one after the other (never two
// of one uplink at once) on a thread of the round's own, each bounded by the probe timeout, so a round lasts at most
// (probes + name lookups) × timeout. Swift concurrency's threads never block on a socket.

import Glibc
import ReachCore
import ReachSystem

public enum ValidationProber {
    /// The DNS servers `interface` was given, where a network manager wrote them down per interface
    /// (`UplinkResolvers`): systemd-networkd's link state file, else ifupdown's dhclient lease file.
    public static func resolvers(interface: String, ifindex: Int) -> [IPAddress] {
        let limit = 1 << 16
        if ifindex > 0, case let .success(b) = BoundedRead.bytes(UplinkResolvers.networkdPath(ifindex: ifindex), limit: limit) {
            let found = UplinkResolvers.networkd(String(decoding: b, as: UTF8.self))
            if !found.isEmpty { return found }
        }
        for path in UplinkResolvers.dhclientPaths(interface: interface) {
            if case let .success(b) = BoundedRead.bytes(path, limit: 1 << 20) {
                let found = UplinkResolvers.dhclient(String(decoding: b, as: UTF8.self), interface: interface)
                if !found.isEmpty { return found }
            }
        }
        return []
    }

    /// One round for `uplink` (its resolvers are read here when a probe asks for them), on a thread of its own.
    public static func round(_ probes: [ProbeSpec], uplink: ValidationSubject, timeout: Duration) async -> ValidationRound {
        await onThread {
            var subject = uplink
            if probes.contains(where: { if case .dns(.uplink, _, _) = $0 { return true } else { return false } }) {
                subject.resolvers = resolvers(interface: uplink.interface, ifindex: uplink.ifindex)
            }
            let plan = ValidationPlan.make(probes, for: subject)
            return run(plan, ProbeContext(interface: uplink.interface, ifindex: uplink.ifindex, timeout: timeout))
        }
    }

    /// Runs a plan in order, blocking (call it off Swift concurrency's pool).
    static func run(_ plan: [PlannedProbe], _ c: ProbeContext) -> ValidationRound {
        var outcomes: [ProbeOutcome] = []
        /// Each dns probe's answer (addresses) or failure (its words), by position, for an http probe of the same name.
        var answers: [Int: Result<[IPAddress], ProbeFailure>] = [:]
        for (i, p) in plan.enumerated() {
            let start = ContinuousClock.now
            let report: ProbeReport
            switch p {
            case let .skipped(o):
                outcomes.append(o)
                continue
            case let .dns(_, server, port, name, family):
                report = DNSProbe.run(
                    server: server, port: port, name: name,
                    type: family == .ipv4 ? DNSMessage.typeA : DNSMessage.typeAAAA, c)
                answers[i] = report.result == .ok ? .success(report.addresses) : .failure(ProbeFailure(report.detail))
            case let .icmp(_, address, _):
                report = ICMPProbe.run(address: address, c)
            case let .http(_, url, resolver, resolverPort, reuse, family, expect):
                report = http(url, resolver: resolver, port: resolverPort, reused: reuse.flatMap { answers[$0] }, family, expect, c)
            }
            let ms = (ContinuousClock.now - start).milliseconds
            var outcome = ProbeOutcome(
                probe: p.label, result: report.result, detail: report.detail, bytesSent: report.bytesSent, milliseconds: ms)
            if case .icmp(_, _, true) = p { outcome.local = true }
            outcomes.append(outcome)
        }
        return ValidationRound(outcomes)
    }

    /// An HTTP probe, its host name resolved first when it is one (by the dns probe's answer when that asked for
    /// the same name, else by a query of its own to the same server over the same uplink).
    private static func http(
        _ url: HTTPURL, resolver: IPAddress?, port: Int, reused: Result<[IPAddress], ProbeFailure>?, _ family: AddressFamily,
        _ expect: Int, _ c: ProbeContext
    ) -> ProbeReport {
        var address = url.address
        var lookupBytes = 0
        if address == nil, let resolver {
            switch reused {
            case let .success(addresses)?:
                address = addresses.first
            case let .failure(f)?:
                // The dns probe asked for this very name and got no answer: asking again would only cost bytes.
                return ProbeReport(result: .failed, detail: "cannot resolve the host: dns \(f.words)", bytesSent: 0)
            case nil:
                let type = family == .ipv4 ? DNSMessage.typeA : DNSMessage.typeAAAA
                let r = DNSProbe.run(server: resolver, port: port, name: url.host, type: type, c)
                lookupBytes = r.bytesSent
                guard r.result == .ok else {
                    return ProbeReport(result: .failed, detail: "cannot resolve the host: dns \(r.detail)", bytesSent: lookupBytes)
                }
                address = r.addresses.first
            }
            if address == nil {
                return ProbeReport(
                    result: .failed, detail: "\(url.host) has no \(family == .ipv4 ? "IPv4" : "IPv6") address",
                    bytesSent: lookupBytes)
            }
        }
        guard let address else { return ProbeReport(result: .failed, detail: "no address", bytesSent: 0) }
        var report = HTTPProbe.run(url: url, address: address, expect: expect, c)
        report.bytesSent += lookupBytes
        return report
    }

    /// Runs `body` on a new thread and suspends until it returns. `body` must end by itself (every probe ends at its
    /// deadline), so nothing here waits forever.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            // No thread to be had (a process at its limit): run here rather than never.
            if !startThread("probe", { continuation.resume(returning: body()) }) { continuation.resume(returning: body()) }
        }
    }
}
