// The embeddable API, one-shot half: ask once (`GatewayReach.status`) or recompute one part (`RouteView.compute`).
// The continuous half is `Reachability` (Reachability.swift); both assemble snapshots with `Snapshot.assemble`.

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
            target: request.target, resolved: resolved, interfaceOverrides: request.interfaceOverrides)
        let (modemHealth, modemStates) = await modems
        let (wifiHealth, wifiLinks) = await wifi
        return Snapshot.assemble(
            target: request.target, time: .now(), route: routePart,
            modems: request.readModems ? .read(modemHealth, modemStates) : .disabled,
            wifi: request.readWiFi ? .read(wifiHealth, wifiLinks) : .disabled)
    }
}

extension RouteView {
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
