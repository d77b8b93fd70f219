// Following the modems discovery finds, as a value: which ports to watch, which to drop, when the combined answer
// changes, and when a lost port calls for an early look. The runner (GatewayReach's discovered-modem source) does
// what the effects say — open a watcher, close one, publish, schedule the quick rediscovery — and feeds back what
// happens; the decisions are here, table-tested without a modem or a clock.
//
// A modem that vanishes from sysfs is dropped. One that re-enumerates (a firmware crash or a USB reset turns
// /dev/cdc-wdm0 into /dev/cdc-wdm1) first reports its port lost, which asks for a rediscovery within seconds; that
// look finds the new name (watched from then on) and not the old one (dropped). ModemManager follows a modem the same
// way, from udev's remove and add of its ports (`mm-base-manager.c`, `device_removed` / `device_added`).

public struct ModemDiscoveryReducer: Sendable {
    public enum Input: Sendable, Equatable {
        /// A discovery ran: whether sysfs could be read, and the ports it shows.
        case found(SourceHealth, [ModemPortSpec])
        /// A watched port's monitor reported.
        case update(path: String, ModemState)
    }

    public enum Effect: Sendable, Equatable {
        /// Start watching this port.
        case watch(ModemPortSpec)
        /// Stop watching this port (gone from sysfs).
        case unwatch(path: String)
        /// The combined answer changed: every watched modem, by port path.
        case publish(SourceHealth, [ModemState])
        /// A port was lost: run discovery again soon (replacing any quick rediscovery already scheduled).
        case rediscoverSoon
    }

    /// The ports being watched, by path.
    public private(set) var watched: [String: ModemPortSpec] = [:]
    private var states: [String: ModemState] = [:]
    private var health = SourceHealth.ok
    private var published: (SourceHealth, [ModemState])?

    public init() {}

    public mutating func receive(_ input: Input) -> [Effect] {
        var effects: [Effect] = []
        switch input {
        case let .found(h, specs):
            health = h
            let paths = Set(specs.map(\.path))
            for path in watched.keys.sorted() where !paths.contains(path) {
                watched[path] = nil
                states[path] = nil
                effects.append(.unwatch(path: path))
            }
            for spec in specs where watched[spec.path] == nil {
                watched[spec.path] = spec
                effects.append(.watch(spec))
            }
        case let .update(path, state):
            guard watched[path] != nil else { return [] }  // dropped since: a late update
            let lost = !state.present && states[path]?.present != false
            states[path] = state
            if lost { effects.append(.rediscoverSoon) }
        }
        if let p = publish() { effects.insert(p, at: effects.firstIndex(of: .rediscoverSoon) ?? effects.endIndex) }
        return effects
    }

    /// The first answer waits until every port found has reported once; then only changes go out.
    private mutating func publish() -> Effect? {
        guard published != nil || watched.keys.allSatisfy({ states[$0] != nil }) else { return nil }
        let now = (health, watched.keys.sorted().compactMap { states[$0] })
        if let published, published.0 == now.0, published.1 == now.1 { return nil }
        published = now
        return .publish(now.0, now.1)
    }
}
