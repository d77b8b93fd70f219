// Validation for programs embedding GatewayReach: the configured probes run once through every reachable uplink of an
// answer (`reach status --validate`, `reach diag`). Off unless asked: nothing here runs by itself.

import ReachCore
import ReachProbe

extension GatewayReach {
    /// `snapshot` with every reachable uplink validated by one round of `probes` (`rounds`): `validated`,
    /// `validation` and `usable` filled. One round decides (no `down_after` / `up_after`: there is no history to
    /// debounce).
    public static func validate(_ snapshot: Snapshot, probes: [ProbeSpec], timeout: Duration) async -> Snapshot {
        var s = snapshot
        s.applyValidation(part(await rounds(snapshot, probes: probes, timeout: timeout)))
        return s
    }

    /// One round of `probes` through each reachable uplink of `snapshot`, by interface: the uplinks in parallel, each
    /// uplink's probes one after the other, each probe within `timeout`.
    public static func rounds(_ snapshot: Snapshot, probes: [ProbeSpec], timeout: Duration) async -> [String: ValidationRound] {
        let subjects = snapshot.uplinks.filter(\.reachable).map { ValidationSubject($0) }
        return await withTaskGroup(of: (String, ValidationRound).self) { group in
            for s in subjects {
                group.addTask { (s.interface, await ValidationProber.round(probes, uplink: s, timeout: timeout)) }
            }
            var out: [String: ValidationRound] = [:]
            for await (name, round) in group { out[name] = round }
            return out
        }
    }

    /// The validation part of single rounds: each round's verdict is the uplink's state.
    public static func part(_ rounds: [String: ValidationRound]) -> ValidationPart {
        var part = ValidationPart()
        for (name, round) in rounds {
            var v = UplinkValidation(at: .zero)
            _ = v.begin()
            v.record(round, policy: .once(timeout: .seconds(1)), at: .zero, wall: .now(), random: 0.5)
            part.uplinks[name] = v.reading
        }
        return part
    }
}
