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
    /// How the modems' bars are computed (the configuration's `signal`).
    public var signalPolicy: SignalPolicy
    /// `interface_underlays` and `clat.plat_prefix`: how the route's underlay is followed.
    public var underlays: UnderlayConfig

    public init(
        target: Target = .defaultRoute, modems: [ModemPortSpec]? = nil, readModems: Bool = true,
        wifiInterface: String? = nil, readWiFi: Bool = true, modemOptions: ModemReadOptions = ModemReadOptions(),
        resolveTimeout: Duration = .seconds(3), interfaceOverrides: [String: InterfaceKind] = [:],
        signalPolicy: SignalPolicy = .android, underlays: UnderlayConfig = .standard
    ) {
        self.target = target
        self.modems = modems
        self.readModems = readModems
        self.wifiInterface = wifiInterface
        self.readWiFi = readWiFi
        self.modemOptions = modemOptions
        self.resolveTimeout = resolveTimeout
        self.interfaceOverrides = interfaceOverrides
        self.signalPolicy = signalPolicy
        self.underlays = underlays
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
            target: request.target, resolved: resolved, interfaceOverrides: request.interfaceOverrides,
            underlays: request.underlays)

        var snapshot = Snapshot(time: .now(), target: request.target, signalPolicy: request.signalPolicy)
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
    /// What the kernel said about the links below the routes (their chains are on the routes themselves).
    public var underlayFacts: UnderlayFacts?

    public init() {}

    public func apply(to s: inout Snapshot) {
        s.route = route
        s.resolvedAddresses = resolvedAddresses
        s.resolutionError = resolutionError
        s.supportsIPv4 = supportsIPv4
        s.supportsIPv6 = supportsIPv6
        s.error = error
        s.underlayFacts = underlayFacts
    }

    /// Asks the kernel. For a host target pass the resolution result; nil there means "not resolved yet". Every
    /// route found carries its underlay chain (`RouteLookup.underlay`), followed with `underlays`.
    public static func compute(
        target: Target, resolved: Result<[IPAddress], ResolutionError>?, interfaceOverrides: [String: InterfaceKind] = [:],
        underlays: UnderlayConfig = .standard
    ) -> RouteView {
        var view = RouteView()
        do {
            let resolver = try RouteResolver(interfaceOverrides: interfaceOverrides)
            let walk = KernelUnderlaySource(resolver: resolver, config: underlays)
            defer { view.underlayFacts = walk.facts }
            func chained(_ route: RouteLookup?, _ destination: UnderlayDestination) -> RouteLookup? {
                guard var r = route else { return nil }
                walk.attach(to: &r, destination: destination)
                return r
            }
            switch target {
            case .defaultRoute:
                let v4 = chained(try resolver.defaultRoute(.ipv4), .defaultRoute(.ipv4))
                let v6 = chained(try resolver.defaultRoute(.ipv6), .defaultRoute(.ipv6))
                let usable = { (r: RouteLookup?) in ReachabilityFlags.derive(from: r).isReachable }
                view.supportsIPv4 = usable(v4)
                view.supportsIPv6 = usable(v6)
                view.route = [v4, v6].first(where: usable) ?? v4 ?? v6
            case let .address(text):
                guard let address = IPAddress(text) else {
                    view.error = "'\(text)' is not an IPv4 or IPv6 address"
                    return view
                }
                view.route = chained(try resolver.lookup(address), .address(address))
            case .linkLocal:
                view.route = chained(try resolver.lookup(.ipv4LinkLocalNetwork), .address(.ipv4LinkLocalNetwork))
            case .host:
                switch resolved {
                case nil:
                    view.error = "host name not resolved"
                case let .failure(e):
                    view.resolutionError = e.message
                case let .success(addresses):
                    view.resolvedAddresses = addresses.map(\.description)
                    var routes: [RouteLookup] = []
                    for a in addresses { if let r = chained(try resolver.lookup(a), .address(a)) { routes.append(r) } }
                    view.route = routes.first(where: { ReachabilityFlags.derive(from: $0).isReachable }) ?? routes.first
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
