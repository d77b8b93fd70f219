// The entry point the rest of GatewayReach uses to read WiFi state once (issue #4), and the pure assembly of a
// `WiFiLink` from what nl80211 said about an interface, its BSS and its station entry.
import ReachCore

public enum WiFiReader {
    /// Reads every WiFi interface (or only `interface`) once. When the kernel has no nl80211 the source is
    /// unavailable with that reason; that is not an error. A named interface that nl80211 does not know comes back
    /// as one entry carrying an error.
    public static func read(interface: String?) async -> (SourceHealth, [WiFiLink]) {
        readNow(interface: interface)
    }

    /// The same, synchronously (bounded: each exchange ends within the socket timeout).
    public static func readNow(interface: String?) -> (SourceHealth, [WiFiLink]) {
        let socket: NL80211Socket
        do {
            socket = try NL80211Socket.open()
        } catch {
            return (SourceHealth(available: false, reason: error.description), [])
        }
        return read(using: socket, interface: interface)
    }

    /// Reads through an open socket (the monitor keeps one; replay tests build one over captured replies).
    static func read(using socket: NL80211Socket, interface name: String?) -> (SourceHealth, [WiFiLink]) {
        let interfaces: [NL80211.Interface]
        do {
            interfaces = try socket.interfaces()
        } catch {
            return (SourceHealth(available: false, reason: error.description), [])
        }
        var chosen = interfaces.filter { name == nil || $0.name == name }
        chosen.sort { $0.ifindex < $1.ifindex }
        if let name, chosen.isEmpty {
            var missing = WiFiLink(interface: name, mode: .other)
            missing.error = "no nl80211 interface named \(name)"
            return (.ok, [missing])
        }
        var links: [WiFiLink] = []
        for iface in chosen {
            if let link = read(iface, using: socket) { links.append(link) }
        }
        return (.ok, links)
    }

    /// One interface's link. Nil when the interface vanished while it was being read.
    static func read(_ iface: NL80211.Interface, using socket: NL80211Socket) -> WiFiLink? {
        do {
            switch iface.mode {
            case .station:
                let table = try socket.scanResults(ifindex: iface.ifindex)
                let bss = WiFiLinkAssembly.currentBSS(in: table, type: iface.type)
                var station: NL80211.Station?
                var stationError: String?
                if let bss, let mac = MACAddress.parse(bss.bssid) {
                    do {
                        station = try socket.station(ifindex: iface.ifindex, mac: mac)
                    } catch let error where error.isNoSuchDevice {
                        // The AP's entry went between the scan dump and this request: a disconnect is under way.
                        stationError = nil
                    } catch {
                        stationError = error.description
                    }
                }
                var link = WiFiLinkAssembly.station(iface, bss: bss, station: station)
                if link.associated { link.noiseDBm = noise(iface, frequencyMHz: link.frequencyMHz, using: socket) }
                link.error = stationError
                return link
            case .ap:
                let clients = try socket.stations(ifindex: iface.ifindex)
                var link = WiFiLinkAssembly.accessPoint(iface, clients: clients.count)
                link.noiseDBm = noise(iface, frequencyMHz: link.frequencyMHz, using: socket)
                return link
            case .other:
                return WiFiLinkAssembly.other(iface)
            }
        } catch let error where error.isNoSuchDevice {
            return nil
        } catch {
            var link = WiFiLinkAssembly.other(iface)
            link.mode = iface.mode
            link.error = error.description
            return link
        }
    }
}

extension WiFiReader {
    /// The noise floor of the channel in use, from GET_SURVEY. Drivers without survey support (EOPNOTSUPP) and any
    /// other failure simply leave it unknown: noise is a diagnostic, never a reason to fail the read.
    static func noise(_ iface: NL80211.Interface, frequencyMHz: Int?, using socket: NL80211Socket) -> Int? {
        guard let surveys = try? socket.survey(ifindex: iface.ifindex) else { return nil }
        return WiFiLinkAssembly.noise(in: surveys, frequencyMHz: frequencyMHz)
    }
}

/// Pure: nl80211 values → `WiFiLink`.
public enum WiFiLinkAssembly {
    /// The BSS the interface is joined to: BSS_STATUS associated (or IBSS joined for ad-hoc), as `iw dev link` picks.
    public static func currentBSS(in table: [NL80211.BSS], type: NL80211.InterfaceType?) -> NL80211.BSS? {
        table.first { $0.status == .associated } ?? table.first { $0.status == .ibssJoined && type == .adhoc }
    }

    public static func station(_ iface: NL80211.Interface, bss: NL80211.BSS?, station: NL80211.Station?) -> WiFiLink {
        var link = base(iface, mode: .station)
        guard let bss else { return link }
        link.associated = true
        link.bssid = bss.bssid
        if let ssid = iface.ssid ?? bss.ssid { link.ssid = SSIDText.render(ssid) }
        link.frequencyMHz = bss.frequencyMHz ?? iface.frequencyMHz
        link.signalDBm = station?.signalDBm ?? bss.signalDBm
        link.signalAvgDBm = station?.signalAverageDBm
        link.beaconSignalAvgDBm = station?.beaconSignalAverageDBm
        link.txBitrateMbps = station?.txBitrateMbps
        link.rxBitrateMbps = station?.rxBitrateMbps
        link.connectedSeconds = station?.connectedSeconds
        link.inactiveMilliseconds = station?.inactiveMilliseconds
        return link
    }

    /// The channel marked IN_USE, else the one on the link's frequency.
    public static func noise(in surveys: [NL80211.Survey], frequencyMHz: Int?) -> Int? {
        (surveys.first { $0.inUse } ?? surveys.first { $0.frequencyMHz == frequencyMHz })?.noiseDBm
    }

    public static func accessPoint(_ iface: NL80211.Interface, clients: Int) -> WiFiLink {
        var link = base(iface, mode: .ap)
        link.ssid = iface.ssid.map(SSIDText.render)
        link.frequencyMHz = iface.frequencyMHz
        link.clients = clients
        return link
    }

    public static func other(_ iface: NL80211.Interface) -> WiFiLink {
        var link = base(iface, mode: .other)
        link.frequencyMHz = iface.frequencyMHz
        return link
    }

    static func base(_ iface: NL80211.Interface, mode: WiFiMode) -> WiFiLink {
        var link = WiFiLink(interface: iface.name, mode: mode)
        link.ifindex = iface.ifindex
        link.channelWidthMHz = iface.channelWidthMHz
        link.txPowerDBm = iface.txPowerMBm.map { Double($0) / 100 }
        return link
    }
}
