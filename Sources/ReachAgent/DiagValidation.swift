// `reach diag`: the validation probes, once through each reachable uplink (the same probes as the agent's), one check
// per uplink with every probe's outcome.

import GatewayReach

extension DiagChecks {
    static func validation(_ f: DiagFacts) -> [DiagCheck] {
        guard let rounds = f.validation else {
            return [DiagCheck("validation", "Validation", .skip, "not enabled (validation sends nothing unless configured)")]
        }
        var checks: [DiagCheck] = []
        for u in f.snapshot.uplinks {
            let id = "validation.\(u.interface)"
            let title = "Validation \(u.label)"
            guard let round = rounds[u.interface] else {
                checks.append(DiagCheck(id, title, .skip, "not probed: \(u.reason ?? "not reachable")"))
                continue
            }
            let detail = round.outcomes.map { o in
                o.text + (o.milliseconds.map { o.result == .skipped || o.detail.hasSuffix(" ms") ? "" : " (\($0) ms)" } ?? "")
            }.joined(separator: "; ") + " · \(round.bytesSent) bytes sent"
            switch round.verdict {
            case nil:
                checks.append(DiagCheck(id, title, .skip, detail))
            case .validated?:
                checks.append(DiagCheck(id, title, .ok, "validated: " + detail))
            case .partial?:
                checks.append(DiagCheck(id, title, .warn, "partial connectivity: " + detail,
                    hint: "some probes are answered and some are not: check the failing probe's server, and any filter upstream"))
            case .captivePortal?:
                checks.append(DiagCheck(id, title, .warn, "captive portal: " + detail,
                    hint: "the uplink's network wants a sign-in (a hotel or operator portal) before it carries traffic"))
            case .failed?:
                checks.append(DiagCheck(id, title, .fail, "validation failed: " + detail,
                    hint: "the path exists but nothing answers through it: an outage upstream, a SIM without credit, or a "
                        + "firewall dropping the probes"))
            }
        }
        if checks.isEmpty { checks.append(DiagCheck("validation", "Validation", .skip, "no uplink")) }
        return checks
    }
}
