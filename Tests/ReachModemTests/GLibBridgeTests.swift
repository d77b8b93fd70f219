import CGLibShims
import Glibc
import ReachTestSupport
import Testing
@testable import ReachGLib

/// The bridge between GIO async calls and Swift concurrency, driven by a real GIO operation that only finishes
/// when asked to: reading a pipe nobody writes to (or writes to on cue).
@Suite struct GLibBridgeTests {
    /// A pipe whose read end is a GUnixInputStream owned by the loop thread.
    final class PipeStream: @unchecked Sendable {
        /// The GInputStream's address (an integer, so that closures may carry it across threads).
        let stream: UInt
        let writeFD: CInt

        init() async {
            var fds: [CInt] = [0, 0]
            precondition(pipe(&fds) == 0)
            writeFD = fds[1]
            let readFD = fds[0]
            stream = await GLibLoop.shared.run { UInt(bitPattern: g_unix_input_stream_new(readFD, 1)) }
        }

        func write(_ byte: UInt8) {
            var b = byte
            _ = Glibc.write(writeFD, &b, 1)
        }

        /// `g_input_stream_read_async` for one byte.
        func readByte(timeout: Duration, group: GLibCallGroup? = nil) async throws -> UInt8 {
            let stream = self.stream
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
            let address = UInt(bitPattern: buffer)
            defer { buffer.deallocate() }
            return try await GLibLoop.shared.call(
                "g_input_stream_read_async", timeout: timeout, group: group,
                start: { call in
                    g_input_stream_read_async(
                        UnsafeMutablePointer<GInputStream>(bitPattern: stream), UnsafeMutableRawPointer(bitPattern: address), 1,
                        G_PRIORITY_DEFAULT, call.cancellable, call.callback, call.userData)
                },
                finish: { _, result in
                    var error: UnsafeMutablePointer<GError>? = nil
                    let n = g_input_stream_read_finish(UnsafeMutablePointer<GInputStream>(bitPattern: stream), result, &error)
                    guard n == 1 else { throw GLibError(consuming: error, call: "g_input_stream_read_async") }
                    return UnsafeMutablePointer<UInt8>(bitPattern: address)!.pointee
                })
        }

        deinit {
            close(writeFD)
            let address = stream
            GLibLoop.shared.perform { g_object_unref(UnsafeMutableRawPointer(bitPattern: address)) }
        }
    }

    @Test func completesWithTheValue() async throws {
        let p = await PipeStream()
        p.write(42)
        #expect(try await p.readByte(timeout: .seconds(5)) == 42)
    }

    @Test func deadlineFailsTheCallOnTime() async throws {
        let p = await PipeStream()
        let start = ContinuousClock.now
        do {
            _ = try await p.readByte(timeout: .milliseconds(150))
            Issue.record("a read of a silent pipe returned")
        } catch let e as GLibError {
            #expect(e.kind == .timedOut)
            #expect(e.call == "g_input_stream_read_async")
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(150) && elapsed < .seconds(2 * TestSupport.timingSlack), "\(elapsed)")
        // The stream is usable again once the cancelled read has come back.
        try await Task.sleep(for: .milliseconds(50))
        p.write(7)
        #expect(try await p.readByte(timeout: .seconds(5)) == 7)
    }

    @Test func taskCancellationCancelsTheCall() async throws {
        let p = await PipeStream()
        let task = Task { try await p.readByte(timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled read returned")
        } catch let e as GLibError {
            #expect(e.kind == .cancelled)
        }
        // Far under the read's 30 s: the cancellation ended it (1.04 s was seen under AddressSanitizer on 2 cores).
        #expect(ContinuousClock.now - start < .seconds(2 * TestSupport.timingSlack))
    }

    @Test func groupAbortFailsEveryCallNowAndLater() async throws {
        let p = await PipeStream()
        let q = await PipeStream()
        let group = GLibCallGroup()
        async let a = Result { try await p.readByte(timeout: .seconds(30), group: group) }
        async let b = Result { try await q.readByte(timeout: .seconds(30), group: group) }
        try await Task.sleep(for: .milliseconds(50))
        let gone = GLibError(kind: .gError(domain: "test", code: 1), call: "device", message: "port removed")
        await GLibLoop.shared.run { group.abortAll(gone) }
        for r in await [a, b] {
            guard case let .failure(e as GLibError) = r else {
                Issue.record("expected a failure, got \(r)")
                continue
            }
            #expect(e.message == "port removed")
            #expect(e.call == "g_input_stream_read_async")
        }
        await #expect(throws: GLibError.self) { try await p.readByte(timeout: .seconds(30), group: group) }
    }

    @Test func gErrorIsCopiedWithItsDomain() {
        let error = g_error_new_literal(g_io_error_quark(), Int32(G_IO_ERROR_CLOSED.rawValue), "gone")
        let e = GLibError(consuming: error, call: "test_call")
        #expect(e.isGIOClosed)
        #expect(e.description == "test_call: gone")
        #expect(e.isDomain(g_io_error_quark))
    }
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
