import Testing
@testable import ReachCore

/// Who may hold a connection to the agent's Varlink socket (`APIAdmission`), as tables: the connections held by class
/// and uid, the peer, and the verdict. N = 32 and P = 4 (the defaults) unless a case says otherwise.
@Suite struct APIAdmissionTests {
    static let nobody: UInt32 = 65534
    static let reachGroup: UInt32 = 990

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var admission = APIAdmission()
        var held: APIAdmission.Held
        var peerClass: APIAdmission.PeerClass
        var uid: UInt32
        var expected: APIAdmission.Refusal?
        var testDescription: String { name }

        /// `others`: connections by uid of peers neither root nor in the group; `group`: by uid of the group's members.
        init(_ name: String, root: Int = 0, group: [UInt32: Int] = [:], others: [UInt32: Int] = [:],
             _ peerClass: APIAdmission.PeerClass, uid: UInt32, _ expected: APIAdmission.Refusal?,
             admission: APIAdmission = APIAdmission())
        {
            var held = APIAdmission.Held()
            for _ in 0..<root { held.add(uid: 0, .root) }
            for (uid, n) in group { for _ in 0..<n { held.add(uid: uid, .group) } }
            for (uid, n) in others { for _ in 0..<n { held.add(uid: uid, .other) } }
            self.name = name
            self.admission = admission
            self.held = held
            self.peerClass = peerClass
            self.uid = uid
            self.expected = expected
        }
    }

    /// The defaults on a system without the group reach: only root's slots are kept.
    static let noGroup: APIAdmission = {
        var a = APIAdmission()
        a.groupExists = false
        return a
    }()

    /// Six unprivileged uids holding 4 each: the 24 slots everyone but root and the group may hold together.
    static let sixUIDs: [UInt32: Int] = [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 65534: 4]

    static let cases: [Case] = [
        Case("the first connection", .other, uid: nobody, nil),
        Case("an unprivileged uid's fourth", others: [65534: 3], .other, uid: nobody, nil),
        Case("an unprivileged uid's fifth", others: [65534: 4], .other, uid: nobody, .uidLimit),
        Case("another uid beside a full one", others: [65534: 4], .other, uid: 1000, nil),
        Case("a seventh uid when six hold 24", others: sixUIDs, .other, uid: 1005, .reserved),
        Case("23 held by others: the 24th is theirs", others: [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 65534: 3],
             .other, uid: 1005, nil),
        Case("root beside 24 of others", others: sixUIDs, .root, uid: 0, nil),
        Case("the group beside 24 of others", others: sixUIDs, .group, uid: 1100, nil),
        Case("others beside root's 2: still 24 for them", root: 2, others: [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 65534: 3],
             .other, uid: 1005, nil),
        Case("others beside root's 2: not 25", root: 2, others: sixUIDs, .other, uid: 1005, .reserved),
        Case("others once root and the group hold their 4", root: 4, group: [1100: 4],
             others: [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 65534: 3], .other, uid: 1005, nil),
        Case("all 32 held: root too is refused", root: 4, group: [1100: 4], others: sixUIDs, .root, uid: 0, .full),
        Case("root holds more than 4 (no share per uid)", root: 20, .root, uid: 0, nil),
        Case("root's 28th leaves the group its 4", root: 27, .root, uid: 0, nil),
        Case("root's 29th would take the group's", root: 28, .root, uid: 0, .reserved),
        Case("the group beside 28 of root's", root: 28, .group, uid: 1100, nil),
        Case("a group member's fifth", group: [1100: 4], .group, uid: 1100, .uidLimit),
        Case("another group member", group: [1100: 4], .group, uid: 1101, nil),
        Case("group members cannot take root's 4", group: [1100: 4, 1101: 4, 1102: 4, 1103: 4, 1104: 4, 1105: 4, 1106: 4],
             .group, uid: 1107, .reserved),
        Case("root beside 28 of the group's", group: [1100: 4, 1101: 4, 1102: 4, 1103: 4, 1104: 4, 1105: 4, 1106: 4],
             .root, uid: 0, nil),
        Case("no group: root's 29th", root: 28, .root, uid: 0, nil, admission: noGroup),
        Case("no group: all 32 root's", root: 31, .root, uid: 0, nil, admission: noGroup),
        Case("no group: others hold 28", others: [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 1005: 4, 65534: 3],
             .other, uid: 1006, nil, admission: noGroup),
        Case("no group: not 29", others: [1000: 4, 1001: 4, 1002: 4, 1003: 4, 1004: 4, 1005: 4, 65534: 4],
             .other, uid: 1006, .reserved, admission: noGroup),
        Case("N 3, P 1: one unprivileged connection", .other, uid: nobody, nil,
             admission: APIAdmission(maxClients: 3, maxClientsPerUID: 1)),
        Case("N 3, P 1: a second uid finds the rest kept", others: [65534: 1], .other, uid: 1000, .reserved,
             admission: APIAdmission(maxClients: 3, maxClientsPerUID: 1)),
        Case("N 3, P 1: root's slot", others: [65534: 1], .root, uid: 0, nil,
             admission: APIAdmission(maxClients: 3, maxClientsPerUID: 1)),
    ]

    @Test(arguments: cases)
    func verdict(_ c: Case) {
        #expect(c.admission.judge(c.peerClass, uid: c.uid, held: c.held) == c.expected)
    }

    /// Whatever unprivileged uids do, connecting one by one as long as they are admitted: root and the group still
    /// get their 4 each, and the unprivileged ones hold N - 2P.
    @Test(arguments: [APIAdmission(), APIAdmission(maxClients: 3, maxClientsPerUID: 1),
                      APIAdmission(maxClients: 768, maxClientsPerUID: 256), APIAdmission(maxClients: 100, maxClientsPerUID: 7)])
    func unprivilegedUIDsCannotTakeTheReserve(_ a: APIAdmission) {
        var held = APIAdmission.Held()
        for uid in UInt32(1000)..<UInt32(1000 + a.maxClients) {
            while a.judge(.other, uid: uid, held: held) == nil { held.add(uid: uid, .other) }
        }
        #expect(held.other == a.maxClients - 2 * a.reserve)
        #expect(held.byUID.values.allSatisfy { $0 <= a.maxClientsPerUID })
        for _ in 0..<a.reserve {
            #expect(a.judge(.root, uid: 0, held: held) == nil)
            held.add(uid: 0, .root)
        }
        for _ in 0..<a.reserve {
            #expect(a.judge(.group, uid: 990, held: held) == nil)
            held.add(uid: 990, .group)
        }
        #expect(held.total == a.maxClients)
        #expect(a.judge(.root, uid: 0, held: held) == .full)
    }

    struct PeerCase: Sendable, CustomTestStringConvertible {
        var uid: UInt32
        var gids: [UInt32]
        var group: UInt32?
        var expected: APIAdmission.PeerClass
        var testDescription: String { "uid \(uid) gids \(gids) group \(group.map { String($0) } ?? "none")" }
    }

    @Test(arguments: [
        PeerCase(uid: 0, gids: [0], group: reachGroup, expected: .root),
        PeerCase(uid: 0, gids: [reachGroup], group: reachGroup, expected: .root),
        PeerCase(uid: 1000, gids: [1000, reachGroup], group: reachGroup, expected: .group),
        PeerCase(uid: 1000, gids: [reachGroup], group: reachGroup, expected: .group),
        PeerCase(uid: 1000, gids: [reachGroup], group: nil, expected: .other),
        PeerCase(uid: 1000, gids: [1000, 27], group: reachGroup, expected: .other),
        PeerCase(uid: reachGroup, gids: [1000], group: reachGroup, expected: .other),
        PeerCase(uid: nobody, gids: [nobody], group: reachGroup, expected: .other),
    ])
    func peerClass(_ c: PeerCase) {
        #expect(APIAdmission.peerClass(uid: c.uid, gids: c.gids, group: c.group) == c.expected)
    }

    @Test func heldCountsComeBackToNothing() {
        var held = APIAdmission.Held()
        held.add(uid: 65534, .other)
        held.add(uid: 65534, .other)
        held.add(uid: 0, .root)
        #expect(held.total == 3 && held.byUID[65534] == 2 && held.other == 2 && held.root == 1)
        held.remove(uid: 65534, .other)
        held.remove(uid: 0, .root)
        held.remove(uid: 0, .root)  // one more than it held: no count goes below zero
        held.remove(uid: 42, .group)
        #expect(held.total == 1 && held.byUID == [65534: 1] && held.root == 0 && held.group == 0)
        held.remove(uid: 65534, .other)
        #expect(held == APIAdmission.Held())
    }

    @Test(arguments: [(32, 4, true), (32, 10, true), (32, 11, false), (3, 1, true), (12, 5, false), (768, 256, true)])
    func aShareMustLeaveRoomForBothReserves(n: Int, p: Int, fits: Bool) {
        #expect((APIAdmission(maxClients: n, maxClientsPerUID: p).problem == nil) == fits)
    }
}
