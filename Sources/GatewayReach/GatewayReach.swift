// The embeddable API, one-shot half: ask once (`GatewayReach.status`) or recompute one part (`RouteView.compute`).
// The continuous half is `Reachability` (Reachability.swift); both assemble snapshots with `Snapshot.assemble`.

import Glibc
import ReachSystem
@_exported import ReachModem
@_exported import ReachProbe
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
    /// Configured uplinks: listed even without a default route, in this order after the primary.
    public var uplinks: [UplinkSpec]
    /// `interface_underlays` and `clat.plat_prefix`: how the route's underlay is followed.
    public var underlays: UnderlayConfig

    public init(
        target: Target = .defaultRoute, modems: [ModemPortSpec]? = nil, readModems: Bool = true,
        wifiInterface: String? = nil, readWiFi: Bool = true, modemOptions: ModemReadOptions = ModemReadOptions(),
        resolveTimeout: Duration = Defaults.duration(Defaults.resolveTimeoutSeconds), interfaceOverrides: [String: InterfaceKind] = [:],
        signalPolicy: SignalPolicy = .android, uplinks: [UplinkSpec] = [], underlays: UnderlayConfig = .standard
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
        self.uplinks = uplinks
        self.underlays = underlays
    }
}

public enum GatewayReach {
    /// One complete answer: route, modems and WiFi asked concurrently, merged and derived. Never throws; what could
    /// not be read is said in the snapshot (`error`, `sources`, a modem's `error`). Bounded in time by the modem
    /// request timeout and the resolve timeout. Modems are read in worker processes when
    /// `request.modemOptions.worker` is set (`IsolatedModemReader`), else in this process.
    public static func status(_ request: StatusRequest) async -> Snapshot {
        async let modems: (SourceHealth, [ModemState]) =
            request.readModems
            ? IsolatedModemReader.read(request.modems, options: request.modemOptions)
            : (.disabled, [])
        async let wifi: (SourceHealth, [WiFiLink]) =
            request.readWiFi
            ? WiFiReader.read(interface: request.wifiInterface)
            : (.disabled, [])

        var resolved: Result<[IPAddress], ResolutionError>?
        if case let .host(name) = request.target {
            resolved = await HostResolver.resolve(name, timeout: request.resolveTimeout)
        }
        let routePart = RouteView.compute(
            target: request.target, resolved: resolved, interfaceOverrides: request.interfaceOverrides,
            uplinks: request.uplinks, underlays: request.underlays)
        let (modemHealth, modemStates) = await modems
        let (wifiHealth, wifiLinks) = await wifi
        return Snapshot.assemble(
            target: request.target, time: .now(), route: routePart,
            modems: request.readModems ? .read(modemHealth, modemStates) : .disabled,
            wifi: request.readWiFi ? .read(wifiHealth, wifiLinks) : .disabled, signalPolicy: request.signalPolicy)
    }
}

extension RouteView {
    /// Asks the kernel. For a host target pass the resolution result; nil there means "not resolved yet". Every
    /// route found, the uplinks' included, carries its underlay chain (`RouteLookup.underlay`), followed with
    /// `underlays`.
    /// - Parameter uplinks: the configured uplinks (listed even without a route); every interface holding a default
    ///   route is an uplink either way.
    public static func compute(
        target: Target, resolved: Result<[IPAddress], ResolutionError>?, interfaceOverrides: [String: InterfaceKind] = [:],
        uplinks: [UplinkSpec] = [], underlays: UnderlayConfig = .standard
    ) -> RouteView {
        var view = RouteView()
        let resolver: RouteResolver
        do {
            resolver = try RouteResolver(interfaceOverrides: interfaceOverrides, oneAnswer: true)
        } catch {
            view.error = error.description
            return view
        }
        let walk = KernelUnderlaySource(resolver: resolver, config: underlays)
        do {
            try view.answer(target, resolved: resolved, resolver, walk)
        } catch {
            view.error = error.description
        }
        // The uplinks are the same for every target; the primary is the one the default route leaves by (the link it
        // rides on: a tunnel is not an uplink of its own).
        do {
            let primary =
                target == .defaultRoute
                ? view.route?.physicalLink?.name : try defaultRoute(resolver, walk).route?.physicalLink?.name
            view.uplinks = try resolver.uplinks(specs: uplinks, primaryInterface: primary, underlay: walk)
        } catch {
            view.uplinksError = error.description
        }
        view.underlayFacts = walk.facts
        return view
    }

    /// The default target's route: the IPv4 default when it is usable, else the IPv6 one, else whichever exists; each
    /// with its underlay, which decides whether it is usable too. `candidates`: both, for the merge with the modems.
    static func defaultRoute(
        _ resolver: RouteResolver, _ walk: KernelUnderlaySource
    ) throws(NetlinkError) -> (route: RouteLookup?, v4: Bool, v6: Bool, candidates: [RouteLookup]) {
        let v4 = chained(try resolver.defaultRoute(.ipv4), .defaultRoute(.ipv4), walk)
        let v6 = chained(try resolver.defaultRoute(.ipv6), .defaultRoute(.ipv6), walk)
        let usable = { (r: RouteLookup?) in ReachabilityFlags.derive(from: r).isReachable }
        return ([v4, v6].first(where: usable) ?? v4 ?? v6, usable(v4), usable(v6), [v4, v6].compactMap { $0 })
    }

    /// The route with its underlay chain attached.
    static func chained(_ route: RouteLookup?, _ destination: UnderlayDestination, _ walk: KernelUnderlaySource)
        -> RouteLookup?
    {
        guard var r = route else { return nil }
        walk.attach(to: &r, destination: destination)
        return r
    }

    private mutating func answer(
        _ target: Target, resolved: Result<[IPAddress], ResolutionError>?, _ resolver: RouteResolver,
        _ walk: KernelUnderlaySource
    ) throws(NetlinkError) {
        switch target {
        case .defaultRoute:
            (route, supportsIPv4, supportsIPv6, candidates) = try Self.defaultRoute(resolver, walk)
        case let .address(text):
            guard let address = IPAddress(text) else {
                error = "'\(text)' is not an IPv4 or IPv6 address"
                return
            }
            route = Self.chained(try resolver.lookup(address), .address(address), walk)
        case .linkLocal:
            route = Self.chained(try resolver.lookup(.ipv4LinkLocalNetwork), .address(.ipv4LinkLocalNetwork), walk)
        case .host:
            switch resolved {
            case nil:
                error = "host name not resolved"
            case let .failure(e):
                resolutionError = e.message
            case let .success(addresses):
                resolvedAddresses = addresses.map(\.description)
                var routes: [RouteLookup] = []
                for a in addresses { if let r = Self.chained(try resolver.lookup(a), .address(a), walk) { routes.append(r) } }
                route = routes.first(where: { ReachabilityFlags.derive(from: $0).isReachable }) ?? routes.first
                candidates = routes
            }
        }
    }
}

extension Timestamp {
    /// The wall clock now (CLOCK_REALTIME).
    public static func now() -> Timestamp {
        let ts = Sys.realtimeNow()
        return Timestamp(seconds: Int64(ts.tv_sec), nanoseconds: Int32(ts.tv_nsec))
    }
}
