// Issue 25: a modem that refuses a request must never make `reach status` lie. Every request reach sends is
// refused in turn (QMI NotSupported, MBIM NoDeviceSupport), the optional ones all at once (with every way of
// refusing), and the ones that can tell a definite down left unanswered one at a time, behind a wwan0 that carries
// the default route, against three modems: the session up, the session down, and registration searching; through
// the proxy (the default access), and a subset with `--modem-access direct`. The rule each row is held to:
//
//   - reachable only when no definite "down" was answered;
//   - not reachable only when one was.
//
// A definite down is answered when the scenario is searching and a registration request was answered, the
// session is down and the data-session request (QMI WDS Get Packet Service Status, MBIM Connect query) was
// answered, or the modem is PS-detached and a packet-service request was answered. Refusing QMI Set IP Family
// leaves the client observing IPv4 (its default family), so the data-session answer still counts. "Answered" is
// what the modem did during the run (the simulator's counts): asked, and not refused. So that reach cannot pass by
// asking less, a row that refuses with an answer (NotSupported, NoDeviceSupport) must still see every evidence
// request that was not refused asked, and so must a row that leaves one request unanswered: one silent request is
// that request's, not the modem's. Two silent requests in a row are the modem's (it stopped answering): what was
// read before is then not trusted, so such a row may say reachable (the route's answer stands, as for any modem that
// cannot be read), but never not reachable without a definite down. Each row prints
// a table line (refused × modem → what reach said, what the rule says) and is checked on its own.
//
// The list of requests is not written here: a run with nothing refused tells, through the simulator's
// `{"query": "stats"}`, which requests reach sent; a request that appears only when another is refused (a
// fallback, such as DMS UIM Get PIN Status behind UIM Get Card Status) gets a row refusing both. A request reach
// starts sending joins the sweep by itself. Not swept: what opens the conversation at all (QMI CTL Allocate and
// Release CID, and Internal Proxy Open, which qmi-proxy answers itself; MBIM OPEN and CLOSE): no modem refuses them
// and a host can do nothing without them.

import Foundation
import ReachCore
import ReachTestSupport
import Testing

/// The three modems each refusal meets.
enum SweepModem: String, CaseIterable, Sendable {
    case sessionUp = "session up"
    case sessionDown = "session down"
    case searching = "searching"

    func start(_ proto: String) async throws -> WWANLab {
        switch self {
        case .sessionUp: return try await WWANLab.start(proto)
        case .sessionDown: return try await WWANLab.start(proto, sessions: #"[{"state":"disconnected"}]"#)
        case .searching: return try await WWANLab.start(proto, registration: "searching")
        }
    }
}

/// What each protocol's requests answer, for the rule.
struct SweepProtocol: Sendable {
    let name: String
    /// Requests that report registration (any one answering is enough).
    let registration: Set<String>
    /// Requests that report PS attach.
    let packetService: Set<String>
    /// Requests that report the data session of the link's channel.
    let dataSession: Set<String>
    /// The conversation itself: never refused (see the file comment).
    let protocolLevel: Set<String>
    /// The ways a modem refuses: the first is used for the one-at-a-time rows.
    let refusals: [String]

    static let qmi = SweepProtocol(
        name: "qmi", registration: ["nas:get_system_info", "nas:get_serving_system"],
        packetService: ["nas:get_system_info", "nas:get_serving_system"], dataSession: ["wds:get_packet_service_status"],
        protocolLevel: ["ctl:allocate_cid", "ctl:release_cid", "ctl:internal_proxy_open"],
        refusals: ["NotSupported", "InvalidQmiCommand", "no_answer"])

    static let mbim = SweepProtocol(
        name: "mbim", registration: ["basic_connect:register_state"], packetService: ["basic_connect:packet_service"],
        dataSession: ["basic_connect:connect"], protocolLevel: ["open", "close"],
        refusals: ["NoDeviceSupport", "no_answer"])

    var essential: Set<String> { registration.union(packetService).union(dataSession) }

    /// The evidence requests reach asks first, fallbacks aside: the registration's and the data session's.
    var firstAsked: Set<String> {
        name == "qmi" ? ["nas:get_system_info", "wds:get_packet_service_status"]
            : ["basic_connect:register_state", "basic_connect:connect"]
    }

    /// Whether a definite down was answered on `modem`: some request of a set was asked (`asked`) and not refused.
    func definiteDown(_ modem: SweepModem, asked: Set<String>, refused: Set<String>) -> Bool {
        let answers = { (requests: Set<String>) in !requests.intersection(asked).isSubset(of: refused) }
        switch modem {
        case .sessionUp: return false
        case .sessionDown: return answers(dataSession)
        case .searching: return answers(registration) || answers(packetService) || answers(dataSession)
        }
    }
}

/// One row: the requests refused, how, and through which access.
struct SweepRow: Sendable {
    var label: String
    var refused: [String]
    var answer: String
    var access: String = "proxy"
}

/// One `reach status` against one modem with some requests refused.
struct SweepRun: Sendable {
    var reachable: Bool?
    var exit: Int32
    /// Requests the modem received during the run, and those it refused.
    var asked: [String: Int]
    var refusedCounts: [String: Int]
    var check: String
    var unread: String
}

@Suite(.serialized, .needsRoot, .needsSimulator) struct RefusalSweepTests {
    /// A table line, at once (the run is long; a buffered table says nothing until the end).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The simulator's per-message request and refusal counts.
    static func counts(_ lab: WWANLab) async throws -> (asked: [String: Int], refused: [String: Int]) {
        let reply = try JSON.parse(try await lab.sim.control(#"{"query":"stats"}"#))
        func map(_ key: String) -> [String: Int] {
            var out: [String: Int] = [:]
            for (k, v) in reply["stats"]?[key]?.objectValue ?? [] { out[k] = Int(v.intValue ?? 0) }
            return out
        }
        return (map("requests"), map("refused"))
    }

    static func difference(_ after: [String: Int], _ before: [String: Int]) -> [String: Int] {
        after.filter { $0.value > before[$0.key, default: 0] }
            .reduce(into: [:]) { $0[$1.key] = $1.value - before[$1.key, default: 0] }
    }

    /// Refuses `row.refused` with `row.answer`, runs `reach status --json` in the lab's namespace, and reads what
    /// the modem was asked meanwhile.
    static func run(_ lab: WWANLab, _ row: SweepRow) async throws -> SweepRun {
        let refuse = JSON.object(row.refused.map { ($0, JSON.string(row.answer)) }).serialized()
        let set = try await lab.sim.control(#"{"refuse":"# + refuse + "}")
        guard set == #"{"ok":true}"# else { throw TestFailure("the simulator refused the refusal \(refuse): \(set)") }
        let before = try await counts(lab)
        var args = [TestPaths.reach, "status", "--json", "--config", lab.configPath]
        if row.access != "proxy" { args += ["--modem-access", row.access] }
        let r = try await lab.ns.exec(args, timeout: 120)
        let after = try await counts(lab)
        let json = try? JSON.parse(r.stdout)
        let modem = json?.modem
        let check = json?["modem_check"].map { c in
            [c["result"]?.stringValue, c["reason"]?.stringValue].compactMap { $0 }.joined(separator: ": ")
        } ?? "-"
        let unread = [modem?["unread"], json?["modem_check"]?["not_read"]].compactMap { $0 }
            .filter { $0 != .null }.map { $0.serialized() }.joined(separator: " ")
        return SweepRun(
            reachable: json?["reachable"]?.boolValue, exit: r.status, asked: difference(after.asked, before.asked),
            refusedCounts: difference(after.refused, before.refused), check: check,
            unread: unread.isEmpty ? (r.stdout.isEmpty ? "no JSON: " + r.stderr.suffix(200) : "") : unread)
    }

    static func verdict(_ reachable: Bool?) -> String {
        switch reachable {
        case true?: return "reachable"
        case false?: return "not reachable"
        case nil: return "no answer"
        }
    }

    /// Runs a row against every modem in turn (one after the other: the test's task holds the child slots its
    /// simulators took, so its own `reach` runs start at once), prints its table lines and holds each to the rule.
    static func sweep(_ p: SweepProtocol, _ labs: [(SweepModem, WWANLab)], _ row: SweepRow) async throws -> [SweepRun] {
        var runs: [SweepRun] = []
        for (modem, lab) in labs {
            let start = Date()
            let run = try await Self.run(lab, row)
            let seconds = Date().timeIntervalSince(start)
            let refusedNow = run.refusedCounts.keys.sorted()
            let expected = !p.definiteDown(modem, asked: Set(run.asked.keys), refused: Set(refusedNow))
            // reach gives up on no evidence request because of one refusal or one silent request.
            let unasked = p.firstAsked.subtracting(row.refused).filter { run.asked[$0] == nil }
            let mustAsk = row.answer != "no_answer" || !Set(row.refused).isDisjoint(with: p.essential)
            let stoppedAnswering = row.answer == "no_answer" && run.refusedCounts.count > 1 && run.check.contains("modem not answering")
            let verdictOK = run.reachable == expected || (stoppedAnswering && run.reachable == true)
            let ok = verdictOK && run.exit == (run.reachable == true ? 0 : 1) && (!mustAsk || unasked.isEmpty)
            say("| \(p.name) | \(row.access) | \(row.label) | \(row.answer) | \(modem.rawValue) | \(verdict(run.reachable))"
                  + " | \(verdict(expected)) | \(ok ? "ok" : "FAIL") | refused \(refusedNow.isEmpty ? "nothing asked" : refusedNow.joined(separator: ", "))"
                  + " | \(run.check) | \(run.unread) | \(String(format: "%.1f", seconds)) s |")
            // One issue per failing row: the verdict, and the exit status that goes with it.
            #expect(ok, "\(p.name) \(row.access) refusing \(row.label) (\(row.answer)) on \(modem.rawValue): \(verdict(run.reachable)), exit \(run.exit), want \(verdict(expected)); \(run.check); evidence not asked: \(unasked.sorted())")
            runs.append(run)
        }
        return runs
    }

    @Test func noQMIRefusalMakesReachLie() async throws { try await Self.sweepAll(.qmi) }

    @Test func noMBIMRefusalMakesReachLie() async throws { try await Self.sweepAll(.mbim) }

    static func sweepAll(_ p: SweepProtocol) async throws {
        let proto = p.name
        let started = Date()
        var labs: [(SweepModem, WWANLab)] = []
        defer { for (_, lab) in labs { lab.stop() } }
        for modem in SweepModem.allCases { labs.append((modem, try await modem.start(proto))) }
        say("| protocol | access | refused | answer | modem | reach says | rule says | | what the modem refused | modem_check | unread | time |")
        say("|---|---|---|---|---|---|---|---|---|---|---|---|")

        // Nothing refused: what reach asks, and the answers the rule expects.
        let baseline = try await Self.sweep(p, labs, SweepRow(label: "nothing", refused: [], answer: "-"))
        var seen = Set(baseline.flatMap(\.asked.keys)).subtracting(p.protocolLevel)
        #expect(!seen.isEmpty, "the modem was asked nothing")
        for name in seen.sorted() {
            // The simulator knows every request reach sends by name (an unknown one shows as a number).
            let message = name.split(separator: ":").last ?? ""
            #expect(!message.hasPrefix("0x") && !message.allSatisfy(\.isNumber), "\(proto): reach sends \(name), unknown to the simulator")
        }
        for requests in [p.registration, p.packetService, p.dataSession] {
            #expect(!requests.isDisjoint(with: seen), "\(proto): reach asked none of \(requests.sorted()); the rule's sets are stale")
        }

        // One at a time; a request first asked under a refusal (a fallback) is refused together with it.
        var queue: [[String]] = seen.sorted().map { [$0] }
        var done: [[String]] = []
        var asked: Set<String> = []
        while !queue.isEmpty {
            let refused = queue.removeFirst()
            guard !done.contains(refused) else { continue }
            done.append(refused)
            let runs = try await Self.sweep(p, labs, SweepRow(label: refused.joined(separator: " + "), refused: refused, answer: p.refusals[0]))
            let newly = Set(runs.flatMap(\.asked.keys)).subtracting(p.protocolLevel)
            asked.formUnion(runs.flatMap(\.refusedCounts.keys))
            for name in newly.subtracting(seen).sorted() {
                seen.insert(name)
                queue.append(refused + [name])
            }
        }
        // Each refused request was asked (and refused) on at least one modem: no row was empty.
        for name in seen.sorted() { #expect(asked.contains(name), "\(proto): \(name) was never asked in its own row") }

        // The optional ones all at once, every way a modem refuses.
        let optional = seen.subtracting(p.essential).sorted()
        say("\(proto): optional requests: \(optional.joined(separator: ", "))")
        for answer in p.refusals {
            _ = try await Self.sweep(p, labs, SweepRow(label: "all optional", refused: optional, answer: answer))
        }

        // The rows above that refuse a request able to answer a definite down, now unanswered (each costs reach a
        // request timeout).
        for refused in done where !Set(refused).isDisjoint(with: p.essential) {
            _ = try await Self.sweep(p, labs, SweepRow(label: refused.joined(separator: " + "), refused: refused, answer: "no_answer"))
        }

        // Direct access (no proxy) for a subset: nothing, each essential request, and all the optional ones.
        for (_, lab) in labs { lab.ns.endProxies() }
        let direct = [SweepRow(label: "nothing", refused: [], answer: "-", access: "direct")]
            + p.dataSession.sorted().map { SweepRow(label: $0, refused: [$0], answer: p.refusals[0], access: "direct") }
            + [SweepRow(label: "all optional", refused: optional, answer: p.refusals[0], access: "direct")]
        for row in direct { _ = try await Self.sweep(p, labs, row) }

        say("\(proto): swept \(seen.count) requests (\(seen.sorted().joined(separator: ", "))) in \(Int(Date().timeIntervalSince(started))) s")
    }
}
