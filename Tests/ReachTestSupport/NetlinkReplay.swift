// The receiving half of a scripted netlink kernel, shared by the nl80211 and rtnetlink replays: libnl's receive
// override (nl_cb_overwrite_recv, include/netlink/handlers.h) hands back one datagram per call in a buffer libnl
// frees, or a libnl error code. libnl itself is not linked here: the callers pass its codes.
import Glibc

public enum NetlinkReplay {
    /// What a receive override returns for `next`: nil (nothing queued) is `again` (libnl's -NLE_AGAIN, a receive
    /// timeout); `.some(nil)` is `overrun` (-NLE_NOMEM, what libnl makes of ENOBUFS); a datagram is copied into a
    /// malloc'd buffer at `buffer` (libnl free()s it after parsing) and its length returned. (The sender's address
    /// is the caller's to fill: `struct sockaddr_nl` comes from libnl's headers.)
    public static func deliver(
        _ next: [UInt8]??, buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        credentials: UnsafeMutablePointer<OpaquePointer?>?, again: Int32, overrun: Int32
    ) -> Int32 {
        guard let next else { return again }
        guard let datagram = next else { return overrun }
        let memory = malloc(max(datagram.count, 1))!.assumingMemoryBound(to: UInt8.self)
        datagram.withUnsafeBufferPointer { memory.update(from: $0.baseAddress!, count: datagram.count) }
        buffer.pointee = memory
        credentials?.pointee = nil
        return Int32(datagram.count)
    }
}
