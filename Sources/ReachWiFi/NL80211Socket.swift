// The I/O half of the nl80211 adapter: a generic netlink socket (libnl-genl-3) that sends nl80211 requests and
// returns the replies as decoded messages. libnl does the socket, sequence numbers and framing; the receive loop
// is CNetlinkShims_genl_transact (iw's VALID/FINISH/ACK/ERROR discipline, bounded in time and message count).
import CNetlinkShims
import Glibc
import ReachCore

/// Why an nl80211 exchange failed. Every case names the call that failed.
public enum NL80211Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kernel has no "nl80211" generic netlink family (cfg80211 is not loaded or not built).
    case familyAbsent
    /// A libnl call failed (`code` is libnl's positive NLE_* number).
    case libnl(call: String, code: Int32)
    /// The kernel answered a request with an error (`errno`, positive).
    case kernel(call: String, errno: Int32)
    /// The reply did not complete within the time or message bound.
    case bounded(call: String, detail: String)

    public var description: String {
        switch self {
        case .familyAbsent:
            return "the kernel has no nl80211 (cfg80211 is not loaded): genl_ctrl_resolve(\"nl80211\") found no family"
        case .libnl(let call, let code):
            return "\(call) failed: \(String(cString: CNetlinkShims_nl_geterror(code)))"
        case .kernel(let call, let errno):
            return "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .bounded(let call, let detail):
            return "\(call) did not complete: \(detail)"
        }
    }

    /// The request named an interface or station that does not exist (any more).
    public var isNoSuchDevice: Bool {
        if case .kernel(_, let e) = self { return e == ENODEV || e == ENOENT || e == ENXIO }
        return false
    }
}

/// One nl80211 request socket. Not thread-safe: one owner at a time.
final class NL80211Socket {
    /// Every blocking receive ends after this long (SO_RCVTIMEO), and so does a whole exchange.
    static let defaultTimeoutMilliseconds: Int32 = 2000
    /// A dump longer than this is treated as runaway (a busy 5 GHz scan has a few hundred entries).
    static let defaultMaxMessages = 8192

    let sk: OpaquePointer
    let family: Int32
    var timeoutMilliseconds: Int32
    var maxMessages: Int

    /// Opens a generic netlink socket and resolves the nl80211 family.
    /// Throws `.familyAbsent` when the kernel has no nl80211. The wrapped calls are `nl_socket_alloc`,
    /// `genl_connect` and `genl_ctrl_resolve`.
    static func open(timeoutMilliseconds: Int32 = defaultTimeoutMilliseconds) throws(NL80211Error) -> NL80211Socket {
        guard let sk = nl_socket_alloc() else { throw .libnl(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let err = genl_connect(sk)
        if err < 0 {
            nl_socket_free(sk)
            throw .libnl(call: "genl_connect", code: -err)
        }
        return try NL80211Socket(adopting: sk, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Takes ownership of a connected socket (tests install send/receive overrides on it first) and resolves the
    /// family through it. The socket is freed when this object goes, or here if resolution fails.
    init(adopting sk: OpaquePointer, timeoutMilliseconds: Int32 = defaultTimeoutMilliseconds) throws(NL80211Error) {
        _ = CNetlinkShims_genl_set_timeout(sk, timeoutMilliseconds)
        let id = genl_ctrl_resolve(sk, NL80211.familyName)
        if id < 0 {
            nl_socket_free(sk)
            if -id == NLE_OBJ_NOTFOUND { throw .familyAbsent }
            throw .libnl(call: "genl_ctrl_resolve(\"nl80211\")", code: -id)
        }
        self.sk = sk
        self.family = id
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxMessages = Self.defaultMaxMessages
    }

    deinit { nl_socket_free(sk) }

    /// The id of one of the family's multicast groups ("config", "scan", "mlme", …). Wraps `genl_ctrl_resolve_grp`.
    func multicastGroup(_ name: String) throws(NL80211Error) -> Int32 {
        let id = genl_ctrl_resolve_grp(sk, NL80211.familyName, name)
        if id < 0 { throw .libnl(call: "genl_ctrl_resolve_grp(\"nl80211\", \"\(name)\")", code: -id) }
        return id
    }

    /// Sends one request and returns every message of the reply, decoded. `build` adds the attributes.
    /// The exchange is `nl_send_auto` + `nl_recvmsgs_report` until ACK/DONE/ERROR (CNetlinkShims_genl_transact).
    func request(
        _ command: UInt8, dump: Bool, name: String, build: (OpaquePointer) throws(NL80211Error) -> Void = { _ in }
    ) throws(NL80211Error) -> [NL80211.Message] {
        for attempt in 0..<3 {
            guard let msg = nlmsg_alloc() else { throw .libnl(call: "nlmsg_alloc", code: NLE_NOMEM) }
            defer { nlmsg_free(msg) }
            guard
                genlmsg_put(
                    msg, UInt32(NL_AUTO_PORT), UInt32(NL_AUTO_SEQ), family, 0, dump ? NLM_F_DUMP : 0, command, 0)
                    != nil
            else { throw .libnl(call: "genlmsg_put(\(name))", code: NLE_NOMEM) }
            try build(msg)

            var out = CNetlinkShims_genl_messages()
            var status = CNetlinkShims_genl_status()
            defer { CNetlinkShims_genl_messages_free(&out) }
            let err = CNetlinkShims_genl_transact(sk, msg, maxMessages, timeoutMilliseconds, &out, &status)
            if status.kernel_error < 0 { throw .kernel(call: name, errno: -status.kernel_error) }
            if status.bounded_out != 0 {
                throw .bounded(
                    call: name,
                    detail: "no end of reply after \(out.count) messages within \(timeoutMilliseconds) ms")
            }
            if err < 0 {
                if -err == NLE_AGAIN {
                    throw .bounded(call: name, detail: "no reply within \(timeoutMilliseconds) ms")
                }
                if -err == NLE_DUMP_INTR && attempt < 2 { continue }
                throw .libnl(call: name, code: -err)
            }
            // The kernel changed the list while dumping it: the parts may be inconsistent, so dump again.
            if status.dump_interrupted != 0 && attempt < 2 { continue }
            return Self.records(out).compactMap(NL80211.Message.init(payload:))
        }
        throw .libnl(call: name, code: NLE_DUMP_INTR)
    }

    /// The payloads packed by the C shim: u32 length (host order), bytes, padding to 4.
    static func records(_ out: CNetlinkShims_genl_messages) -> [[UInt8]] {
        guard let base = out.data, out.length > 0 else { return [] }
        return NetlinkRecords.split(UnsafeRawBufferPointer(start: base, count: out.length), count: out.count)
    }

    // MARK: Requests

    /// GET_INTERFACE dump: every nl80211 interface (all wiphys).
    func interfaces() throws(NL80211Error) -> [NL80211.Interface] {
        try request(NL80211.Command.getInterface, dump: true, name: "NL80211_CMD_GET_INTERFACE")
            .filter { $0.command == NL80211.Command.newInterface }
            .compactMap(NL80211.Interface.init)
    }

    /// GET_SCAN dump of one interface: the kernel's BSS table (no new scan is started).
    func scanResults(ifindex: Int) throws(NL80211Error) -> [NL80211.BSS] {
        try request(NL80211.Command.getScan, dump: true, name: "NL80211_CMD_GET_SCAN") { msg throws(NL80211Error) in
            try Self.put(msg, u32: UInt32(ifindex), NL80211.Attribute.ifindex)
        }
        .compactMap(NL80211.BSS.init)
    }

    /// GET_STATION for one peer (`mac`) of an interface.
    func station(ifindex: Int, mac: [UInt8]) throws(NL80211Error) -> NL80211.Station? {
        try request(NL80211.Command.getStation, dump: false, name: "NL80211_CMD_GET_STATION") {
            msg throws(NL80211Error) in
            try Self.put(msg, u32: UInt32(ifindex), NL80211.Attribute.ifindex)
            try Self.put(msg, bytes: mac, NL80211.Attribute.mac)
        }
        .compactMap(NL80211.Station.init).first
    }

    /// GET_STATION dump: every peer of an interface (an AP's clients).
    func stations(ifindex: Int) throws(NL80211Error) -> [NL80211.Station] {
        try request(NL80211.Command.getStation, dump: true, name: "NL80211_CMD_GET_STATION dump") {
            msg throws(NL80211Error) in
            try Self.put(msg, u32: UInt32(ifindex), NL80211.Attribute.ifindex)
        }
        .compactMap(NL80211.Station.init)
    }

    /// GET_SURVEY dump of one interface: per-channel noise (and, for the channel in use, IN_USE).
    func survey(ifindex: Int) throws(NL80211Error) -> [NL80211.Survey] {
        try request(NL80211.Command.getSurvey, dump: true, name: "NL80211_CMD_GET_SURVEY") {
            msg throws(NL80211Error) in
            try Self.put(msg, u32: UInt32(ifindex), NL80211.Attribute.ifindex)
        }
        .compactMap(NL80211.Survey.init)
    }

    /// SET_CQM with RSSI thresholds (dBm, ascending) and a hysteresis (dB). Several thresholds need the wiphy's
    /// CQM_RSSI_LIST feature; the kernel refuses them with EOPNOTSUPP otherwise. An empty list turns CQM off.
    func setSignalThresholds(ifindex: Int, thresholds: [Int32], hysteresis: UInt32) throws(NL80211Error) {
        _ = try request(NL80211.Command.setCQM, dump: false, name: "NL80211_CMD_SET_CQM") { msg throws(NL80211Error) in
            try Self.put(msg, u32: UInt32(ifindex), NL80211.Attribute.ifindex)
            guard let nest = nla_nest_start(msg, Int32(NL80211.Attribute.cqm)) else {
                throw .libnl(call: "nla_nest_start(NL80211_ATTR_CQM)", code: NLE_NOMEM)
            }
            let values = thresholds.isEmpty ? [Int32(0)] : thresholds
            let err = values.withUnsafeBytes {
                nla_put(msg, Int32(NL80211.CQMAttribute.rssiThreshold), Int32($0.count), $0.baseAddress)
            }
            if err < 0 { throw .libnl(call: "nla_put(NL80211_ATTR_CQM_RSSI_THOLD)", code: -err) }
            try Self.put(msg, u32: hysteresis, NL80211.CQMAttribute.rssiHysteresis)
            nla_nest_end(msg, nest)
        }
    }

    static func put(_ msg: OpaquePointer, u32 value: UInt32, _ type: UInt16) throws(NL80211Error) {
        let err = nla_put_u32(msg, Int32(type), value)
        if err < 0 { throw .libnl(call: "nla_put_u32(\(type))", code: -err) }
    }

    static func put(_ msg: OpaquePointer, bytes: [UInt8], _ type: UInt16) throws(NL80211Error) {
        let err = bytes.withUnsafeBytes { nla_put(msg, Int32(type), Int32($0.count), $0.baseAddress) }
        if err < 0 { throw .libnl(call: "nla_put(\(type))", code: -err) }
    }
}
