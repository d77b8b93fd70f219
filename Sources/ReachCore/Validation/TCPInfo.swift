// The few counters of Linux's `struct tcp_info` (include/uapi/linux/tcp.h) that a validation probe needs to count
// the IP bytes its TCP connection sent, read from the bytes getsockopt(TCP_INFO) filled in.
//
// `struct tcp_info` is a kernel struct copied to user space, not a wire format: its integers are in the host's byte
// order, big-endian on s390x (and on MIPS BE and PowerPC routers, which have no Swift toolchain). The offsets are
// fixed by the UAPI (the struct only grows at its end, and every u64 falls on an 8-byte boundary, so 32-bit ABIs
// lay it out the same way).

public struct TCPInfo: Sendable, Equatable {
    /// tcpi_state: TCP_ESTABLISHED 1, TCP_SYN_SENT 2, … TCP_CLOSE_WAIT 8 (include/net/tcp_states.h).
    public var state: UInt8
    /// tcpi_options & TCPI_OPT_TIMESTAMPS: both ends use the RFC 7323 timestamp option.
    public var timestamps: Bool
    /// tcpi_total_retrans.
    public var totalRetransmits: UInt32
    /// tcpi_segs_out: segments sent, retransmissions included.
    public var segmentsOut: UInt32
    /// tcpi_bytes_sent: payload bytes sent, retransmissions included (Linux ≥ 4.19).
    public var bytesSent: UInt64

    /// The struct up to and including tcpi_bytes_sent (offset 200, 8 bytes).
    public static let minimumLength = 208
}

extension TCPInfo {
    /// The counters in `bytes` (what the kernel wrote, its length as getsockopt returned it); nil when the kernel
    /// is too old to fill tcpi_bytes_sent. `bigEndian` is the byte order of the host that filled the struct: this
    /// host's by default; tests pass the other one.
    public init?(_ bytes: [UInt8], bigEndian: Bool = NativeInteger.isBigEndian) {
        guard bytes.count >= Self.minimumLength else { return nil }
        func integer<T: FixedWidthInteger>(_: T.Type, _ at: Int) -> T {
            var v: T = 0
            for i in 0..<(T.bitWidth / 8) { v = v << 8 | T(bytes[bigEndian ? at + i : at + T.bitWidth / 8 - 1 - i]) }
            return v
        }
        state = bytes[0]
        timestamps = bytes[5] & 1 != 0
        totalRetransmits = integer(UInt32.self, 100)
        segmentsOut = integer(UInt32.self, 136)
        bytesSent = integer(UInt64.self, 200)
    }

    /// The IP bytes the connection put on the link: the payload, per segment an IP header and a TCP header (with the
    /// timestamp option when it was negotiated), the SYN's larger options once per SYN sent, and the one segment
    /// close(2) will still send on an established connection (FIN, or RST when answer bytes were left unread).
    /// 0 when nothing was sent.
    public func ipBytesSent(ipHeaderBytes: Int) -> Int {
        guard segmentsOut > 0 else { return 0 }
        let tcpHeader: UInt64 = 20 + (timestamps ? 12 : 0)
        let perSegment = UInt64(ipHeaderBytes) + tcpHeader
        // Linux's SYN carries MSS, SACK-permitted, timestamp and window scale: 20 option bytes.
        let synExtra = 40 - tcpHeader
        let synRetransmits: UInt64 = state == 2 ? UInt64(totalRetransmits) : 0
        var total = bytesSent &+ UInt64(segmentsOut) &* perSegment &+ (1 + synRetransmits) &* synExtra
        if state == 1 || state == 8 { total &+= perSegment }
        return Int(clamping: total)
    }
}
