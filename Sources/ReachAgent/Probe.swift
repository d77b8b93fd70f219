// The optional active probe of `reach diag`: a TCP connect, or one DNS query over UDP, to an endpoint the operator
// configured, with a short timeout (ReachProbe's `EndpointProbe`, validation's exchanges). Never run unless configured.

import GatewayReach

public enum Probe {
    public static func run(_ p: AgentConfig.Probe) async -> ProbeResult {
        let timeout = Defaults.duration(p.timeoutSeconds)
        let addresses: [IPAddress]
        switch await HostResolver.resolve(p.host, timeout: timeout) {
        case let .success(a) where !a.isEmpty: addresses = a
        case .success: return ProbeResult(ok: false, detail: "\(p.host) resolved to no address")
        case let .failure(e): return ProbeResult(ok: false, detail: e.message)
        }
        let address = addresses[0]
        let answer: EndpointProbe.Answer
        switch p.kind {
        case .tcp: answer = await EndpointProbe.tcp(address: address, port: p.port, timeout: timeout)
        case .dns: answer = await EndpointProbe.dns(server: address, port: p.port, name: p.query, timeout: timeout)
        }
        if answer.ok {
            return ProbeResult(ok: true, detail: "\(address) port \(p.port): \(answer.detail) in \(answer.milliseconds) ms")
        }
        return ProbeResult(ok: false, detail: "\(address) port \(p.port): \(answer.detail)")
    }
}
