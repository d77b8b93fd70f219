// Who may hold a connection to the agent's Varlink socket. The socket is mode 0666 (any local user may read the
// agent's answer), so a count of connections alone lets one unprivileged process take every slot and keep it: a
// subscriber is never closed for being idle. The count is kept per uid instead, the peer's uid as the kernel gives it
// with SO_PEERCRED (socket(7), unix(7)), the way systemd's sd-varlink limits connections per uid
// (src/libsystemd/sd-varlink/sd-varlink.c: VARLINK_DEFAULT_CONNECTIONS_PER_UID_MAX, a quarter of
// VARLINK_DEFAULT_CONNECTIONS_MAX). Pure: the server asks with the peer's credentials and the connections it holds.
//
// The rule, with N = max_clients and P = max_clients_per_uid:
// - at most N connections in all;
// - every uid but root holds at most P of them (a subscription is a connection: the same P bounds a uid's
//   subscriptions; a plain connection is no cheaper to hold, a call a minute keeps it from the idle close);
// - root and the group `reach` (config/reach.sysusers; the unit's Group=) are each promised P slots: a connection
//   is refused when, after it, the free slots would not cover what the *other* of the two has been promised and does
//   not hold. So everyone else together holds at most N - 2P, and neither root nor the group can be locked out by
//   any other uid (root cannot take the group's promised slots either: a runaway root script must not silence the
//   group's readers). A system without the group keeps no slots for it.

public struct APIAdmission: Sendable, Equatable {
    /// The most `api.max_clients` may be: each client is a file descriptor, and the soft RLIMIT_NOFILE a service
    /// gets is 1024 (systemd.exec(5) LimitNOFILE=); the agent keeps some for itself.
    public static let maxClientsLimit = 768

    public var maxClients: Int
    public var maxClientsPerUID: Int
    /// Whether the group exists on this system (OpenWrt's procd runs reach as root with no such group): without it
    /// no slot is kept for it.
    public var groupExists = true

    public init(maxClients: Int = Defaults.maxClients, maxClientsPerUID: Int = Defaults.maxClientsPerUID) {
        self.maxClients = maxClients
        self.maxClientsPerUID = maxClientsPerUID
    }

    /// The slots promised to root, and to the group, each.
    public var reserve: Int { maxClientsPerUID }

    /// Why `max_clients_per_uid` does not fit `max_clients`, or nil: an unprivileged uid must be able to hold its
    /// whole share while root's and the group's promised slots are kept (N - 2P >= P).
    public var problem: String? {
        guard 3 * maxClientsPerUID > maxClients else { return nil }
        return "expected an integer from 1 to \(maxClients / 3) (a third of api.max_clients, \(maxClients): as many "
            + "slots again are kept for root and for the group reach each), found \(maxClientsPerUID)"
    }

    public enum PeerClass: String, Sendable, Equatable {
        case root
        /// A member of the group `reach` (primary or supplementary group), not root.
        case group
        case other
    }

    /// The peer's class from its credentials: uid 0 is root; a uid with `group` among its gids is the group's.
    public static func peerClass(uid: UInt32, gids: [UInt32], group: UInt32?) -> PeerClass {
        if uid == 0 { return .root }
        if let group, gids.contains(group) { return .group }
        return .other
    }

    /// The connections held, by class and by uid.
    public struct Held: Sendable, Equatable {
        public private(set) var root = 0
        public private(set) var group = 0
        public private(set) var other = 0
        public private(set) var byUID: [UInt32: Int] = [:]

        public init() {}

        public var total: Int { root + group + other }

        public mutating func add(uid: UInt32, _ c: PeerClass) {
            byUID[uid, default: 0] += 1
            self[c] += 1
        }

        public mutating func remove(uid: UInt32, _ c: PeerClass) {
            guard let n = byUID[uid], self[c] > 0 else { return }
            byUID[uid] = n > 1 ? n - 1 : nil
            self[c] -= 1
        }

        subscript(_ c: PeerClass) -> Int {
            get {
                switch c {
                case .root: return root
                case .group: return group
                case .other: return other
                }
            }
            set {
                switch c {
                case .root: root = newValue
                case .group: group = newValue
                case .other: other = newValue
                }
            }
        }
    }

    public enum Refusal: Sendable, Equatable {
        /// All `max_clients` slots are held.
        case full
        /// This uid holds its `max_clients_per_uid`.
        case uidLimit
        /// The free slots are the ones promised to root or to the group.
        case reserved

        public var text: String {
            switch self {
            case .full: return "all connections are held"
            case .uidLimit: return "the uid holds its share"
            case .reserved: return "the free connections are kept for root and the group reach"
            }
        }
    }

    /// Admit (nil) or refuse the next connection of a peer of class `c` and uid `uid`.
    public func judge(_ c: PeerClass, uid: UInt32, held: Held) -> Refusal? {
        if held.total >= maxClients { return .full }
        if c != .root && held.byUID[uid, default: 0] >= maxClientsPerUID { return .uidLimit }
        let rootOwed = c == .root ? 0 : max(0, reserve - held.root)
        let groupOwed = c == .group || !groupExists ? 0 : max(0, reserve - held.group)
        if maxClients - held.total - 1 < rootOwed + groupOwed { return .reserved }
        return nil
    }

    /// The limit a refusal names: the uid's share, or all connections.
    public func limit(_ r: Refusal) -> Int { r == .uidLimit ? maxClientsPerUID : maxClients }
}
