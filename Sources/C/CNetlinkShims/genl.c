// Generic netlink exchanges for ReachWiFi: libnl's receive loop with iw's callback discipline, payloads copied out
// as bytes. See include/CNetlinkShims_genl.h.
#include "CNetlinkShims.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

static long long monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int append_record(CNetlinkShims_genl_messages *out, const void *payload, uint32_t length) {
    size_t need = out->length + 4 + ((length + 3u) & ~3u);
    if (need > out->capacity) {
        size_t cap = out->capacity ? out->capacity : 4096;
        while (cap < need) cap *= 2;
        unsigned char *grown = realloc(out->data, cap);
        if (!grown) {
            out->truncated = 1;
            return -1;
        }
        out->data = grown;
        out->capacity = cap;
    }
    memcpy(out->data + out->length, &length, 4);
    memcpy(out->data + out->length + 4, payload, length);
    memset(out->data + out->length + 4 + length, 0, ((length + 3u) & ~3u) - length);
    out->length = need;
    out->count += 1;
    return 0;
}

void CNetlinkShims_genl_messages_free(CNetlinkShims_genl_messages *messages) {
    free(messages->data);
    memset(messages, 0, sizeof(*messages));
}

struct exchange {
    CNetlinkShims_genl_messages *out;
    CNetlinkShims_genl_status *status;
    /// 1 while the exchange runs; 0 when ACK/DONE arrived; negative when an error ended it.
    int running;
    size_t max_messages;
    long long deadline_ms;
};

static int on_valid(struct nl_msg *msg, void *arg) {
    struct exchange *ex = arg;
    struct nlmsghdr *hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_flags & NLM_F_DUMP_INTR) ex->status->dump_interrupted = 1;
    if (ex->max_messages && ex->out->count >= ex->max_messages) {
        ex->status->bounded_out = 1;
        ex->running = -NLE_RANGE;
        return NL_STOP;
    }
    if (ex->deadline_ms && monotonic_ms() > ex->deadline_ms) {
        ex->status->bounded_out = 1;
        ex->running = -NLE_AGAIN;
        return NL_STOP;
    }
    int len = nlmsg_datalen(hdr);
    if (len < 0) len = 0;
    if (append_record(ex->out, nlmsg_data(hdr), (uint32_t)len) != 0) {
        ex->running = -NLE_NOMEM;
        return NL_STOP;
    }
    return NL_OK;
}

static int on_finish(struct nl_msg *msg, void *arg) {
    struct exchange *ex = arg;
    struct nlmsghdr *hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_flags & NLM_F_DUMP_INTR) ex->status->dump_interrupted = 1;
    // A dump that failed part-way carries the errno in NLMSG_DONE's payload.
    if (nlmsg_datalen(hdr) >= (int)sizeof(int)) {
        int error;
        memcpy(&error, nlmsg_data(hdr), sizeof(error));
        if (error < 0) {
            ex->status->kernel_error = error;
            ex->running = -nl_syserr2nlerr(-error);
            return NL_STOP;
        }
    }
    ex->running = 0;
    return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg) {
    (void)msg;
    struct exchange *ex = arg;
    ex->running = 0;
    return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg) {
    (void)nla;
    struct exchange *ex = arg;
    ex->status->kernel_error = err->error;
    ex->running = err->error ? -nl_syserr2nlerr(-err->error) : 0;
    return NL_STOP;
}

int CNetlinkShims_genl_set_timeout(struct nl_sock *sk, int timeout_ms) {
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int fd = nl_socket_get_fd(sk);
    if (fd < 0) return -NLE_BAD_SOCK;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) return -nl_syserr2nlerr(errno);
    return 0;
}

int CNetlinkShims_genl_transact(struct nl_sock *sk, struct nl_msg *msg, size_t max_messages, int timeout_ms,
                                CNetlinkShims_genl_messages *out, CNetlinkShims_genl_status *status) {
    memset(status, 0, sizeof(*status));
    struct nl_cb *sock_cb = nl_socket_get_cb(sk);
    struct nl_cb *cb = nl_cb_clone(sock_cb);
    nl_cb_put(sock_cb);
    if (!cb) {
        status->transport_error = -NLE_NOMEM;
        return -NLE_NOMEM;
    }
    struct exchange ex = {
        .out = out,
        .status = status,
        .running = 1,
        .max_messages = max_messages,
        .deadline_ms = timeout_ms > 0 ? monotonic_ms() + timeout_ms : 0,
    };
    nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &ex);
    nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &ex);
    nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &ex);
    nl_cb_err(cb, NL_CB_CUSTOM, on_error, &ex);

    int err = nl_send_auto(sk, msg);
    if (err < 0) {
        status->transport_error = err;
        nl_cb_put(cb);
        return err;
    }
    while (ex.running > 0) {
        err = nl_recvmsgs_report(sk, cb);
        if (ex.running <= 0) break;
        if (err < 0) {
            // A failing receive (timeout, overrun, sequence mismatch) ends the exchange: never spin on it.
            status->transport_error = err;
            ex.running = err;
            break;
        }
        if (err == 0) {
            // Nothing was read (a closed or empty source): the reply will not come.
            status->transport_error = -NLE_AGAIN;
            ex.running = -NLE_AGAIN;
            break;
        }
        if (ex.deadline_ms && monotonic_ms() > ex.deadline_ms) {
            status->bounded_out = 1;
            ex.running = -NLE_AGAIN;
            break;
        }
    }
    nl_cb_put(cb);
    if (out->truncated) return -NLE_NOMEM;
    return ex.running < 0 ? ex.running : 0;
}

static int accept_any_sequence(struct nl_msg *msg, void *arg) {
    (void)msg;
    (void)arg;
    return NL_OK;
}

struct event_read {
    CNetlinkShims_genl_messages *out;
    size_t max_messages;
};

static int on_event(struct nl_msg *msg, void *arg) {
    struct event_read *rd = arg;
    if (rd->max_messages && rd->out->count >= rd->max_messages) return NL_SKIP;
    struct nlmsghdr *hdr = nlmsg_hdr(msg);
    int len = nlmsg_datalen(hdr);
    if (len < 0) len = 0;
    if (append_record(rd->out, nlmsg_data(hdr), (uint32_t)len) != 0) return NL_STOP;
    return NL_OK;
}

int CNetlinkShims_genl_receive_events(struct nl_sock *sk, size_t max_messages, CNetlinkShims_genl_messages *out) {
    struct nl_cb *sock_cb = nl_socket_get_cb(sk);
    struct nl_cb *cb = nl_cb_clone(sock_cb);
    nl_cb_put(sock_cb);
    if (!cb) return -NLE_NOMEM;
    struct event_read rd = {.out = out, .max_messages = max_messages};
    nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_event, &rd);
    // Notifications are unsolicited: no sequence numbers to check.
    nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, accept_any_sequence, NULL);
    int err = nl_recvmsgs_report(sk, cb);
    nl_cb_put(cb);
    if (out->truncated) return -NLE_NOMEM;
    return err;
}

const char *CNetlinkShims_nl_geterror(int error) { return nl_geterror(error); }
