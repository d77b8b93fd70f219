// Generic netlink (nl80211) request/reply and event reception for ReachWiFi.
//
// libnl owns the socket, the sequence numbers and the message framing; these shims only run libnl's receive loop
// the way iw does (VALID/FINISH/ACK/ERROR callbacks, `while (status > 0) nl_recvmsgs`) and hand every valid
// message's payload (genl header + attributes) back to Swift as plain bytes, where all attribute decoding happens.
#ifndef CNETLINKSHIMS_GENL_H
#define CNETLINKSHIMS_GENL_H
#include <stddef.h>
#include <stdint.h>
#include <netlink/netlink.h>

/// The messages one exchange (or one event read) delivered, copied out of libnl's buffers.
///
/// `data` holds `count` records, each a native-endian uint32 length followed by that many bytes (the message
/// payload after the nlmsghdr: genlmsghdr + attributes), padded to 4 bytes. Free with
/// `CNetlinkShims_genl_messages_free`.
typedef struct {
    unsigned char *data;
    size_t length;
    size_t capacity;
    size_t count;
    /// Set when a record could not be stored (allocation failure); the exchange then fails with -NLE_NOMEM.
    int truncated;
} CNetlinkShims_genl_messages;

/// The outcome of one exchange.
typedef struct {
    /// 0, or a negative libnl error code (NLE_*) from the transport: send, receive, timeout, sequence mismatch.
    int transport_error;
    /// 0, or the negative errno the kernel answered with (NLMSG_ERROR, or an error carried by NLMSG_DONE).
    int kernel_error;
    /// 1 when the exchange stopped because `max_messages` or the deadline was reached.
    int bounded_out;
    /// 1 when the kernel flagged the dump as interrupted (NLM_F_DUMP_INTR): the caller should dump again.
    int dump_interrupted;
} CNetlinkShims_genl_status;

/// Sends `msg` with `nl_send_auto` and receives until the kernel's ACK, NLMSG_DONE or NLMSG_ERROR, collecting
/// every valid message into `out`. Stops (bounded_out = 1) after `max_messages` messages or `timeout_ms` of wall
/// time; each receive is also bounded by the socket's SO_RCVTIMEO (see `CNetlinkShims_genl_set_timeout`).
/// Wraps `nl_send_auto` and `nl_recvmsgs_report` on a clone of the socket's callbacks, so send/receive overrides
/// installed on the socket (`nl_cb_overwrite_send/recv`, used by replay tests) apply.
/// Returns 0 when the exchange completed (ACK or DONE), else a negative libnl error code (kernel errors are
/// returned as -NLE_* too; `status` has the errno).
int CNetlinkShims_genl_transact(struct nl_sock *sk, struct nl_msg *msg, size_t max_messages, int timeout_ms,
                                CNetlinkShims_genl_messages *out, CNetlinkShims_genl_status *status);

/// Reads whatever one `nl_recvmsgs_report` call delivers on an event socket (multicast notifications) into `out`.
/// Returns the number of messages read (>= 0) or a negative libnl error code: -NLE_NOMEM when the kernel dropped
/// notifications (ENOBUFS: the receive buffer overran) and -NLE_AGAIN when nothing arrived within SO_RCVTIMEO.
int CNetlinkShims_genl_receive_events(struct nl_sock *sk, size_t max_messages, CNetlinkShims_genl_messages *out);

/// Sets SO_RCVTIMEO on the socket's file descriptor (`setsockopt`), bounding every blocking receive.
int CNetlinkShims_genl_set_timeout(struct nl_sock *sk, int timeout_ms);

/// Frees the records of `messages` and resets it to empty.
void CNetlinkShims_genl_messages_free(CNetlinkShims_genl_messages *messages);

/// `nl_geterror`: libnl's description of a (negative or positive) NLE_* code.
const char *CNetlinkShims_nl_geterror(int error);

#endif
