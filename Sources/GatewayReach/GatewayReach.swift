// The embeddable API: ask once (`GatewayReach.status`) or recompute one part (`RouteView`), the way apps embed
// YYReachability. The agent builds its continuous monitoring on the same pieces.

import Glibc
@_exported import ReachModem
@_exported import ReachRoutes
@_exported import ReachWiFi

@_exported import ReachCore

/// What to ask.
public struct StatusRequest: Sendable {
    public var target: Target
    /// Modem ports to ask; nil means discovery.
    public var modems: [ModemPortSpec]?
    public var readModems: Bool
    /// Limit the WiFi read to one interface.
    public var wifiInterface: String?
    public var readWiFi: Bool
    public var modemOptions: ModemReadOptions
    public var resolveTimeout: Duration
    /// Configured interface kinds by name, e.g. `["ppp0": .wwan]`.
    public var interfaceOverrides: [String: InterfaceKind]

    public init(
        target: Target = .defaultRoute, modems: [ModemPortSpec]? = nil, readModems: Bool = true,
        wifiInterface: String? = nil, readWiFi: Bool = true, modemOptions: ModemReadOptions = ModemReadOptions(),
        resolveTimeout: Duration = .seconds(3), interfaceOverrides: [String: InterfaceKind] = [:]
    ) {
        self.target = target
        self.modems = modems
        self.readModems = readModems
        self.wifiInterface = wifiInterface
        self.readWiFi = readWiFi
        self.modemOptions = modemOptions
        self.resolveTimeout = resolveTimeout
        self.interfaceOverrides = interfaceOverrides
    }
}

public enum GatewayReach {
    /// One complete answer: route, modems and WiFi asked concurrently, merged and derived. Never throws; what could
    /// not be read is said in the snapshot (`error`, `sources`, a modem's `error`). Bounded in time by the modem
    /// request timeout and the resolve timeout.
    public static func status(_ request: StatusRequest) async -> Snapshot {
        async let modems: (SourceHealth, [ModemState]) =
            request.readModems
            ? ModemReader.read(request.modems, options: request.modemOptions)
            : (SourceHealth(available: false, reason: "not asked"), [])
        async let wifi: (SourceHealth, [WiFiLink]) =
            request.readWiFi
            ? WiFiReader.read(interface: request.wifiInterface)
            : (SourceHealth(available: false, reason: "not asked"), [])

        var resolved: Result<[IPAddress], ResolutionError>?
        if case let .host(name) = request.target {
            resolved = await HostResolver.resolve(name, timeout: request.resolveTimeout)
        }
        let routePart = RouteView.compute(
            target: request.target, resolved: resolved, interfaceOverrides: request.interfaceOverrides)

        var snapshot = Snapshot(time: .now(), target: request.target)
        routePart.apply(to: &snapshot)
        (snapshot.wwanSource, snapshot.wwan) = await modems
        (snapshot.wifiSource, snapshot.wifi) = await wifi
        snapshot.time = .now()
        snapshot.derive()
        return snapshot
    }
}

/// The route part of a snapshot: which way the target goes, per-family support for the default target, and why
/// it could not be determined.
public struct RouteView: Sendable, Equatable {
    public var route: RouteLookup?
    public var resolvedAddresses: [String] = []
    public var resolutionError: String?
    public var supportsIPv4: Bool?
    public var supportsIPv6: Bool?
    public var error: String?
    /// The routes `route` was chosen from (IPv4 and IPv6 defaults; one per address of a host), so that the merge with
    /// the modems can pick another when a modem blocks the chosen one (`Snapshot.derive`).
    public var candidates: [RouteLookup] = []

    public init() {}

    public func apply(to s: inout Snapshot) {
        s.route = route
        s.routeCandidates = candidates
        s.resolvedAddresses = resolvedAddresses
        s.resolutionError = resolutionError
        s.supportsIPv4 = supportsIPv4
        s.supportsIPv6 = supportsIPv6
        s.error = error
    }

    /// Asks the kernel. For a host target pass the resolution result; nil there means "not resolved yet".
    public static func compute(
        target: Target, resolved: Result<[IPAddress], ResolutionError>?, interfaceOverrides: [String: InterfaceKind] = [:]
    ) -> RouteView {
        var view = RouteView()
        do {
            let resolver = try RouteResolver(interfaceOverrides: interfaceOverrides)
            switch target {
            case .defaultRoute:
                let v4 = try resolver.defaultRoute(.ipv4)
                let v6 = try resolver.defaultRoute(.ipv6)
                let usable = { (r: RouteLookup?) in ReachabilityFlags.derive(from: r).isReachable }
                view.supportsIPv4 = usable(v4)
                view.supportsIPv6 = usable(v6)
                view.route = [v4, v6].first(where: usable) ?? v4 ?? v6
                view.candidates = [v4, v6].compactMap { $0 }
            case let .address(text):
                guard let address = IPAddress(text) else {
                    view.error = "'\(text)' is not an IPv4 or IPv6 address"
                    return view
                }
                view.route = try resolver.lookup(address)
            case .linkLocal:
                view.route = try resolver.lookup(.ipv4LinkLocalNetwork)
            case .host:
                switch resolved {
                case nil:
                    view.error = "host name not resolved"
                case let .failure(e):
                    view.resolutionError = e.message
                case let .success(addresses):
                    view.resolvedAddresses = addresses.map(\.description)
                    var routes: [RouteLookup] = []
                    for a in addresses { if let r = try resolver.lookup(a) { routes.append(r) } }
                    view.route = routes.first(where: { ReachabilityFlags.derive(from: $0).isReachable }) ?? routes.first
                    view.candidates = routes
                }
            }
        } catch {
            view.error = error.description
        }
        return view
    }
}

extension Timestamp {
    /// The wall clock now (CLOCK_REALTIME).
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(seconds: Int64(ts.tv_sec), nanoseconds: Int32(ts.tv_nsec))
    }
}
