/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vpmu-helper client (include/vpmu/helper.h): one SOCK_SEQPACKET
 * connection, a hello, then one OPEN per host event the perf source makes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vpmu/helper.h>

#include "helper-proto.h"
#include "vpmu-log.h"

/* Events opened through the helper and not closed yet: fd -> thread. */
typedef struct HelperEvent {
    int fd;
    pid_t tid;
    uint32_t flags;             /* the OPEN's, for the RELEASE */
} HelperEvent;

struct VpmuHelper {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int sock;                   /* -1 while disconnected */
    uint32_t seq;
    VpmuHelperPolicy policy;
    VpmuHelperStats stats;
    HelperEvent *events;
    size_t nr_events, max_events;
};

static void set_error(VpmuHelper *h, int err, const char *msg)
{
    h->stats.last_error = err;
    snprintf(h->stats.last_message, sizeof(h->stats.last_message), "%s", msg);
}

static void hdr_init(VpmuHelper *h, VpmuHelperHdr *hdr, VpmuHelperType type,
                     size_t size)
{
    hdr->magic = VPMU_HELPER_MAGIC;
    hdr->version = VPMU_HELPER_VERSION;
    hdr->type = type;
    hdr->size = size;
    hdr->seq = ++h->seq;
}

/*
 * Receive the reply to @req: its type and seq, a refusal or at least @min
 * bytes, and the fd it carries if @fd is not NULL.
 * Return: 0 (the reply's status is in @buf), or -errno of the connection.
 */
static int recv_reply(VpmuHelper *h, const VpmuHelperHdr *req, void *buf,
                      size_t min, int *fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = buf, .iov_len = VPMU_HELPER_MSG_MAX };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
    };
    const VpmuHelperReply *r = buf;
    struct cmsghdr *c;
    ssize_t n;

    do {
        n = recvmsg(h->sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return n == 0 ? -ECONNRESET : -errno;
    }
    c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int))) {
        int got;

        memcpy(&got, CMSG_DATA(c), sizeof(got));
        if (fd && *fd < 0) {
            *fd = got;
        } else {
            close(got);
        }
    }
    /* A refusal is a bare reply; only a success has the rest (@min). */
    if ((size_t)n < sizeof(*r) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        r->hdr.magic != VPMU_HELPER_MAGIC ||
        r->hdr.version != VPMU_HELPER_VERSION ||
        r->hdr.type != req->type || r->hdr.seq != req->seq ||
        r->hdr.size != (size_t)n || (r->status == 0 && (size_t)n < min)) {
        return -EPROTO;
    }
    ((VpmuHelperReply *)buf)->message[sizeof(r->message) - 1] = '\0';
    return 0;
}

/* Send @req and receive its reply into @reply; -errno of the exchange. */
static int exchange(VpmuHelper *h, const VpmuHelperHdr *req, void *reply,
                    size_t min, int *fd)
{
    ssize_t n;

    do {
        n = send(h->sock, req, req->size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    return recv_reply(h, req, reply, min, fd);
}

static void disconnect(VpmuHelper *h)
{
    if (h->sock >= 0) {
        close(h->sock);
    }
    h->sock = -1;
}

static void policy_from_hello(VpmuHelperPolicy *p, const VpmuHelperHello *m)
{
    memset(p, 0, sizeof(*p));
    memcpy(p->vm, m->vm, sizeof(p->vm) - 1);
    memcpy(p->events, m->events, sizeof(p->events) - 1);
    p->counters = m->counters;
    p->pinned = m->flags & VPMU_HELPER_POLICY_PINNED;
    p->raw = m->flags & VPMU_HELPER_POLICY_RAW;
    p->cgroup = m->flags & VPMU_HELPER_POLICY_CGROUP;
    p->operator_metrics = m->flags & VPMU_HELPER_POLICY_OPERATOR;
    /* An older helper sends 0: deny.  A value past stack is not ours. */
    switch ((m->flags & VPMU_HELPER_POLICY_PROFILE_MASK) >>
            VPMU_HELPER_POLICY_PROFILE_SHIFT) {
    case VPMU_PROFILE_IP:
        p->operator_profile = VPMU_PROFILE_IP;
        break;
    case VPMU_PROFILE_STACK:
        p->operator_profile = VPMU_PROFILE_STACK;
        break;
    default:
        p->operator_profile = VPMU_PROFILE_DENY;
    }
}

/* Connect and say hello; 0 or -errno with the reason in @err. */
static int helper_connect(VpmuHelper *h, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    union {
        VpmuHelperHello hello;
        char buf[VPMU_HELPER_MSG_MAX];
    } rep;
    VpmuHelperHdr req;
    int r;

    disconnect(h);
    memcpy(sa.sun_path, h->path, sizeof(sa.sun_path));
    h->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (h->sock < 0 || connect(h->sock, (struct sockaddr *)&sa,
                               sizeof(sa)) < 0) {
        r = -errno;
        disconnect(h);
        return vpmu_errorf(err, errlen, r, "vpmu-helper %s: %s", h->path,
                           strerror(-r));
    }
    hdr_init(h, &req, VPMU_HELPER_HELLO, sizeof(req));
    r = exchange(h, &req, &rep, sizeof(rep.hello), NULL);
    if (r == 0 && rep.hello.r.status < 0) {
        r = rep.hello.r.status;
        vpmu_errorf(err, errlen, r, "vpmu-helper %s refused: %s", h->path,
                    rep.hello.r.message);
    } else if (r < 0) {
        vpmu_errorf(err, errlen, r, "vpmu-helper %s: no hello (%s)",
                    h->path, strerror(-r));
    }
    if (r < 0) {
        disconnect(h);
        return r;
    }
    policy_from_hello(&h->policy, &rep.hello);
    h->stats.connects++;
    return 0;
}

int vpmu_helper_connect(const char *path, VpmuHelper **out, char *err,
                        size_t errlen)
{
    VpmuHelper *h;
    int r;

    *out = NULL;
    if (!path || !*path ||
        strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        return vpmu_err(err, errlen, "vpmu-helper: socket path '%s' is "
                        "empty or too long", path ? path : "");
    }
    h = calloc(1, sizeof(*h));
    if (!h) {
        return -ENOMEM;
    }
    strcpy(h->path, path);
    h->sock = -1;
    r = helper_connect(h, err, errlen);
    if (r < 0) {
        free(h);
        return r;
    }
    *out = h;
    return 0;
}

void vpmu_helper_free(VpmuHelper *h)
{
    if (!h) {
        return;
    }
    disconnect(h);
    free(h->events);
    free(h);
}

void vpmu_helper_policy(const VpmuHelper *h, VpmuHelperPolicy *out)
{
    *out = h->policy;
}

void vpmu_helper_stats(const VpmuHelper *h, VpmuHelperStats *out)
{
    *out = h->stats;
}

static int track(VpmuHelper *h, int fd, pid_t tid, uint32_t flags)
{
    if (h->nr_events == h->max_events) {
        size_t n = h->max_events ? 2 * h->max_events : 16;
        HelperEvent *e = realloc(h->events, n * sizeof(*e));

        if (!e) {
            return -ENOMEM;
        }
        h->events = e;
        h->max_events = n;
    }
    h->events[h->nr_events++] = (HelperEvent){ fd, tid, flags };
    return 0;
}

/* One OPEN; a lost connection is made again once (a restarted helper). */
static int helper_open(void *ctx, struct perf_event_attr *attr, pid_t pid,
                       int cpu, int group_fd, unsigned long flags)
{
    VpmuHelper *h = ctx;
    VpmuHelperOpen req = {
        .tid = pid,
        .flags = flags & VPMU_PERF_OPEN_OPERATOR ? VPMU_HELPER_OPEN_OPERATOR :
                 flags & VPMU_PERF_OPEN_PROFILE ? VPMU_HELPER_OPEN_PROFILE : 0,
        .attr = *attr,
    };
    union {
        VpmuHelperReply r;
        char buf[VPMU_HELPER_MSG_MAX];
    } rep;
    int fd = -1, r = -ENOTCONN;
    char why[160];

    /* The helper opens for one thread, on every CPU, alone. */
    if (cpu != -1 || group_fd != -1 || pid <= 0) {
        return -EINVAL;
    }
    hdr_init(h, &req.hdr, VPMU_HELPER_OPEN, sizeof(req));
    for (int attempt = 0; attempt < 2 && r < 0 && r != -EPROTO; attempt++) {
        if (h->sock < 0 && helper_connect(h, why, sizeof(why)) < 0) {
            r = -ENOTCONN;
            continue;
        }
        r = exchange(h, &req.hdr, &rep, sizeof(rep.r), &fd);
        if (r < 0) {
            disconnect(h);
            snprintf(why, sizeof(why), "vpmu-helper %s: %s", h->path,
                     strerror(-r));
        }
    }
    if (r < 0) {
        h->stats.failures++;
        set_error(h, r, why);
        return r;
    }
    if (rep.r.status < 0 || fd < 0) {
        r = rep.r.status < 0 ? rep.r.status : -EPROTO;
        if (fd >= 0) {
            close(fd);
        }
        h->stats.refusals++;
        set_error(h, r, rep.r.message);
        return r;
    }
    /* MSG_CMSG_CLOEXEC made it close-on-exec, as vpmu's flags ask. */
    if (track(h, fd, pid, req.flags) < 0) {
        close(fd);
        return -ENOMEM;
    }
    h->stats.opens++;
    return fd;
}

/* Close an event; one the helper opened is reported to it as released. */
static int helper_close(void *ctx, int fd)
{
    VpmuHelper *h = ctx;
    VpmuHelperOpen req = { 0 };
    union {
        VpmuHelperReply r;
        char buf[VPMU_HELPER_MSG_MAX];
    } rep;

    for (size_t i = 0; i < h->nr_events; i++) {
        if (h->events[i].fd != fd) {
            continue;
        }
        req.tid = h->events[i].tid;
        req.flags = h->events[i].flags;
        h->events[i] = h->events[--h->nr_events];
        if (h->sock >= 0) {
            hdr_init(h, &req.hdr, VPMU_HELPER_RELEASE, sizeof(req));
            if (exchange(h, &req.hdr, &rep, sizeof(rep.r), NULL) < 0) {
                disconnect(h);
            }
        }
        break;
    }
    return close(fd) < 0 ? -errno : 0;
}

void vpmu_helper_perf_sys(VpmuHelper *h, VpmuPerfSys *out)
{
    memset(out, 0, sizeof(*out));
    out->open = helper_open;
    out->close = helper_close;
    out->ctx = h;
}
