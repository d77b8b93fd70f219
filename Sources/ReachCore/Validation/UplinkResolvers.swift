// The DNS servers an uplink was given, where a network manager writes them down per interface: what a dns probe with
// `"server": "uplink"` asks. Pure parsers; the probe module reads the files (a page each, through the bounded reader).
//
// - systemd-networkd: `/run/systemd/netif/links/IFINDEX`, a `DNS=` line (networkd's `link_save`): addresses separated
//   by spaces, each possibly with a port, an interface (`%eth0`) or a server name (`#dns.example`).
// - ISC dhclient (Debian's ifupdown): `/var/lib/dhcp/dhclient.IFACE.leases`, the last `lease { … }` block naming the
//   interface, its `option domain-name-servers a, b;`.
// OpenWrt's netifd writes its servers per logical interface (`# Interface wan` in resolv.conf.auto) whose device only
// ubus knows; there, name the server (`"server": "192.0.2.53"` or `"gateway"`).

public enum UplinkResolvers {
    /// systemd-networkd's state file of the link with this index.
    public static func networkdPath(ifindex: Int) -> String { "/run/systemd/netif/links/\(ifindex)" }

    /// ifupdown's dhclient lease files for an interface: its own, then the shared one.
    public static func dhclientPaths(interface: String) -> [String] {
        ["/var/lib/dhcp/dhclient.\(interface).leases", "/var/lib/dhcp/dhclient.leases"]
    }

    /// The `DNS=` servers of a networkd link state file. Entries on another port than 53 are left out (the probe asks
    /// port 53), as are names and anything that does not parse.
    public static func networkd(_ text: String) -> [IPAddress] {
        var out: [IPAddress] = []
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("DNS=") {
            for token in line.dropFirst(4).split(separator: " ") {
                var t = token
                if let hash = t.firstIndex(of: "#") { t = t[..<hash] }
                var port: Substring?
                if t.hasPrefix("["), let close = t.firstIndex(of: "]") {
                    let after = t[t.index(after: close)...]
                    if after.hasPrefix(":") { port = after.dropFirst() }
                    t = t[t.index(after: t.startIndex)..<close]
                } else if t.filter({ $0 == ":" }).count == 1, let colon = t.firstIndex(of: ":") {
                    port = t[t.index(after: colon)...]  // IPv4 with a port
                    t = t[..<colon]
                }
                if let percent = t.firstIndex(of: "%") { t = t[..<percent] }
                if let port, port != "53" { continue }
                if let a = IPAddress(String(t)), !out.contains(a) { out.append(a) }
            }
        }
        return out
    }

    /// The `domain-name-servers` of the last lease for `interface` in a dhclient lease file.
    public static func dhclient(_ text: String, interface: String) -> [IPAddress] {
        var servers: [IPAddress] = []
        var inLease = false
        var leaseInterface: String?
        var leaseServers: [IPAddress] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingSpaces
            if line.hasPrefix("lease") && line.hasSuffix("{") {
                inLease = true
                leaseInterface = nil
                leaseServers = []
            } else if line == "}" {
                if inLease && leaseInterface == interface { servers = leaseServers }
                inLease = false
            } else if inLease && line.hasPrefix("interface ") {
                leaseInterface = line.dropFirst(10).filter { $0 != "\"" && $0 != ";" }.description
            } else if inLease && line.hasPrefix("option domain-name-servers ") {
                let list = line.dropFirst(27).filter { $0 != ";" }
                leaseServers = list.split(separator: ",").compactMap { IPAddress(String($0.trimmingSpaces)) }
            }
        }
        return servers
    }
}
