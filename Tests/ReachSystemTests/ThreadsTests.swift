import Foundation
import ReachSystem
import Synchronization
import Testing

@Suite struct ThreadsTests {
    /// What the thread's body reads back from the kernel as its own name.
    static func nameSeenInside(_ role: String) async throws -> String {
        let seen = Mutex<String?>(nil)
        #expect(startThread(role) {
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "unreadable"
            seen.withLock { $0 = comm.trimmingCharacters(in: .newlines) }
        })
        for _ in 0..<200 {
            if let s = seen.withLock({ $0 }) { return s }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CancellationError()
    }

    @Test(arguments: [
        ("timers", "reach-timers"),
        ("varlink", "reach-varlink"),
        // The kernel keeps 15 bytes: a longer role is cut, never refused.
        ("a-very-long-role", "reach-a-very-lo"),
    ])
    func threadsAreNamedAfterTheirRole(role: String, name: String) async throws {
        #expect(try await Self.nameSeenInside(role) == name)
    }

    @Test func theNameFitsTheKernelsBuffer() {
        #expect(threadName("x").count == 8)
        #expect(threadName(String(repeating: "r", count: 40)).count == 16)
        #expect(threadName("x").last == 0)
    }
}
