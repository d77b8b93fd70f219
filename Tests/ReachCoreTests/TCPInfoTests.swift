// `struct tcp_info` (include/uapi/linux/tcp.h) as getsockopt(TCP_INFO) fills it on a little-endian host (x86_64,
// aarch64) and on a big-endian one (MIPS BE, PowerPC): the same counters, the byte order of the host.

import Testing
@testable import ReachCore

@Suite struct TCPInfoTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var info: TCPInfo
        var ipHeader: Int
        var ipBytes: Int
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        // 92-byte GET, 4 segments (SYN, ACK, request, ACK of the answer), timestamps on, still established:
        // 92 + 4 × (20 + 32) + 8 SYN option bytes + the FIN close(2) sends (52).
        Row(name: "IPv4 GET, established, timestamps",
            info: TCPInfo(state: 1, timestamps: true, totalRetransmits: 0, segmentsOut: 4, bytesSent: 92),
            ipHeader: 20, ipBytes: 360),
        // A SYN sent three times and never answered: 3 × (40 + 20) + 3 × 20 SYN option bytes.
        Row(name: "IPv6 SYN unanswered, two retransmits",
            info: TCPInfo(state: 2, timestamps: false, totalRetransmits: 2, segmentsOut: 3, bytesSent: 0),
            ipHeader: 40, ipBytes: 240),
        // Closed by the server's FIN and ours already sent (TCP_CLOSE 7): nothing more to add.
        Row(name: "IPv4 closed",
            info: TCPInfo(state: 7, timestamps: true, totalRetransmits: 0, segmentsOut: 6, bytesSent: 92),
            ipHeader: 20, ipBytes: 412),
        // Counters above 2^32 in the u64 and a u32 with all four bytes set: a swapped read cannot pass.
        Row(name: "IPv4 long upload",
            info: TCPInfo(state: 8, timestamps: false, totalRetransmits: 0x0102_0304, segmentsOut: 0x0001_0203,
                          bytesSent: 0x0000_0001_0203_0405),
            ipHeader: 20, ipBytes: 0x0000_0001_0203_0405 + 0x0001_0203 * 40 + 20 + 40),
        Row(name: "nothing sent",
            info: TCPInfo(state: 2, timestamps: false, totalRetransmits: 0, segmentsOut: 0, bytesSent: 0),
            ipHeader: 20, ipBytes: 0),
    ]

    /// The struct's bytes as a host of that byte order writes them (232 bytes, Linux 6.1's size).
    static func bytes(_ i: TCPInfo, bigEndian: Bool) -> [UInt8] {
        var b = [UInt8](repeating: 0xEE, count: 232)  // fields we do not read hold noise
        b[0] = i.state
        b[5] = i.timestamps ? 0x07 : 0x06  // TCPI_OPT_TIMESTAMPS | SACK | WSCALE
        func put<T: FixedWidthInteger>(_ v: T, at: Int) {
            let le = (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
            for (k, byte) in (bigEndian ? le.reversed() : le).enumerated() { b[at + k] = byte }
        }
        put(i.totalRetransmits, at: 100)
        put(i.segmentsOut, at: 136)
        put(i.bytesSent, at: 200)
        return b
    }

    @Test(arguments: rows, [false, true])
    func readsEitherHostsByteOrder(row: Row, bigEndian: Bool) {
        let read = TCPInfo(Self.bytes(row.info, bigEndian: bigEndian), bigEndian: bigEndian)
        #expect(read == row.info)
        #expect(read?.ipBytesSent(ipHeaderBytes: row.ipHeader) == row.ipBytes)
    }

    /// What this host's kernel writes (host order, through NativeInteger) reads back with the default order.
    @Test func defaultIsThisHostsOrder() {
        var b = [UInt8](repeating: 0, count: 232)
        b[0] = 1
        b.replaceSubrange(136..<140, with: NativeInteger.bytes(UInt32(0x0A0B_0C0D)))
        b.replaceSubrange(200..<208, with: NativeInteger.bytes(UInt64(0x0102_0304_0506_0708)))
        let read = TCPInfo(b)
        #expect(read?.segmentsOut == 0x0A0B_0C0D && read?.bytesSent == 0x0102_0304_0506_0708)
    }

    @Test func aKernelWithoutBytesSentGivesNothing() {
        #expect(TCPInfo([UInt8](repeating: 0, count: TCPInfo.minimumLength - 1)) == nil)
        #expect(TCPInfo([UInt8](repeating: 0, count: TCPInfo.minimumLength)) != nil)
    }
}
