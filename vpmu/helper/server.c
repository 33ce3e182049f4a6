/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One vpmu-helper client connection: who the peer is (SO_PEERCRED, then
 * its VM and that VM's policy), and the answer to each message
 * (helper-proto.h).  Every request that is not granted is refused with
 * its reason, and the connection stays up; only a socket error ends it.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <vpmu/host.h>
#include <vpmu/perf.h>

#include <vpmu/operator.h>

#include "helper-server.h"
#include "vpmu-log.h"

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void logf_conn(const HelperServerOpts *o, const HelperConn *c,
                      const char *what)
{
    char msg[320];

    if (o->log) {
        snprintf(msg, sizeof(msg), "vpmu-helper: pid %d (VM '%s'): %s",
                 (int)c->pid, c->vm, what);
        o->log(o->opaque, msg);
    }
}

int helper_conn_init(HelperConn *c, int fd, const HelperServerOpts *o)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    char why[sizeof(c->no_policy)];
    int r;

    memset(c, 0, sizeof(*c));
    c->fd = fd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        return -errno;
    }
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->tokens = o->burst;
    c->refill_ns = now_ns();
    r = helper_vm_identity(o->proc, c->pid, c->vm, sizeof(c->vm),
                           &c->cgroup);
    if (r < 0) {
        c->vm[0] = '\0';
    }
    r = helper_policy_load(o->policy_dir, c->vm, &c->policy, why,
                           sizeof(why));
    if (r < 0) {
        snprintf(c->no_policy, sizeof(c->no_policy), "%s", why);
        logf_conn(o, c, why);
    }
    c->have_policy = r == 0;
    return 0;
}

void helper_conn_close(HelperConn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
    helper_policy_clear(&c->policy);
}

/* Send @reply (its status and message filled), with @fd if >= 0. */
static int send_reply(HelperConn *c, VpmuHelperReply *reply, size_t size,
                      int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = reply, .iov_len = size };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    ssize_t n;

    reply->hdr.magic = VPMU_HELPER_MAGIC;
    reply->hdr.version = VPMU_HELPER_VERSION;
    reply->hdr.size = size;
    if (fd >= 0) {
        struct cmsghdr *cm;

        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    /* A client that does not read its replies is not waited for. */
    do {
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : 0;
}

__attribute__((format(printf, 5, 6)))
static int refuse(HelperConn *c, const HelperServerOpts *o,
                  const VpmuHelperHdr *req, int status, const char *fmt, ...)
{
    VpmuHelperReply reply = { .hdr = *req, .status = status };
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reply.message, sizeof(reply.message), fmt, ap);
    va_end(ap);
    /* A client that floods refusals must not flood the log too. */
    if (++c->stats.refusals <= HELPER_LOG_REFUSALS) {
        logf_conn(o, c, reply.message);
    } else if (c->stats.refusals == HELPER_LOG_REFUSALS + 1) {
        logf_conn(o, c, "further refusals are only counted");
    }
    return send_reply(c, &reply, sizeof(reply), -1);
}

static HelperThread *thread_of(HelperConn *c, pid_t tid, bool add)
{
    for (unsigned i = 0; i < c->nr_threads; i++) {
        if (c->threads[i].tid == tid) {
            return &c->threads[i];
        }
    }
    if (!add || c->nr_threads == HELPER_MAX_THREADS) {
        return NULL;
    }
    c->threads[c->nr_threads] = (HelperThread){ .tid = tid };
    return &c->threads[c->nr_threads++];
}

/* Is @tid a thread of the peer process (/proc/TID/status Tgid)? */
static bool peer_thread(const HelperConn *c, const HelperServerOpts *o,
                        pid_t tid)
{
    char path[PATH_MAX], buf[1024];
    const char *tgid;
    int n;

    if (tid <= 0) {
        return false;
    }
    snprintf(path, sizeof(path), "%s/%d/status", o->proc, (int)tid);
    /* Tgid is on the first lines: the start of a long file will do. */
    n = helper_read_file(path, buf, sizeof(buf));
    if (n < 0 && n != -EFBIG) {
        return false;
    }
    /* "Tgid:" starts a line; /proc has "Name:" before it. */
    tgid = strncmp(buf, "Tgid:", 5) == 0 ? buf : strstr(buf, "\nTgid:");
    if (tgid && *tgid == '\n') {
        tgid++;
    }
    return tgid && strtol(tgid + 5, NULL, 10) == c->pid;
}

/* A token of the client's rate: refilled at o->rate per second. */
static bool take_token(HelperConn *c, const HelperServerOpts *o)
{
    uint64_t t = now_ns();

    c->tokens += (double)(t - c->refill_ns) * o->rate / 1e9;
    if (c->tokens > o->burst) {
        c->tokens = o->burst;
    }
    c->refill_ns = t;
    if (c->tokens < 1) {
        return false;
    }
    c->tokens -= 1;
    return true;
}

static int sys_open(const HelperServerOpts *o, struct perf_event_attr *attr,
                    pid_t tid)
{
    long fd;

    if (o->open) {
        return o->open(o->ctx, attr, tid);
    }
    fd = syscall(SYS_perf_event_open, attr, tid, -1, -1,
                 PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

/* Whose event an OPEN or RELEASE is. */
static HelperKind kind_of(const VpmuHelperOpen *req)
{
    return req->flags & VPMU_HELPER_OPEN_OPERATOR ? HELPER_KIND_OPERATOR :
           req->flags & VPMU_HELPER_OPEN_PROFILE ? HELPER_KIND_PROFILE :
           HELPER_KIND_GUEST;
}

static const char *event_kind(const VpmuHelperOpen *req)
{
    static const char *const names[] = { "guest", "operator", "profile" };

    return names[kind_of(req)];
}

/*
 * The tenant's consent to the host operator's events ("operator = yes")
 * and to a profile's sampling event (operator-profile ip or stack).
 */
static int check_consent(HelperConn *c, const HelperServerOpts *o,
                         const VpmuHelperOpen *req)
{
    const HelperPolicy *p = &c->policy;

    if ((req->flags & VPMU_HELPER_OPEN_FLAGS) == VPMU_HELPER_OPEN_FLAGS) {
        return refuse(c, o, &req->hdr, -EINVAL, "an event is an operator "
                      "event or a profile's, not both");
    }
    if ((req->flags & VPMU_HELPER_OPEN_OPERATOR) && !p->operator_metrics) {
        return refuse(c, o, &req->hdr, -EACCES, "operator events: the "
                      "policy of VM '%s' does not allow them (operator = "
                      "no)", c->vm);
    }
    if ((req->flags & VPMU_HELPER_OPEN_PROFILE) &&
        p->operator_profile == VPMU_PROFILE_DENY) {
        return refuse(c, o, &req->hdr, -EACCES, "profiles: the policy of "
                      "VM '%s' does not allow them (operator-profile = "
                      "deny)", c->vm);
    }
    return 1;
}

/*
 * The policy's verdict on an event the perf source builds: 1, or refused.
 * The operator's events (VPMU_HELPER_OPEN_OPERATOR) and a profile's
 * (VPMU_HELPER_OPEN_PROFILE) need the tenant's consent and are named
 * events; the guest's filter bounds what the guest programs, not what the
 * host's operator counts or samples.
 */
static int check_policy(HelperConn *c, const HelperServerOpts *o,
                        const VpmuHelperOpen *req, const VpmuPerfAttrInfo *ev)
{
    const HelperPolicy *p = &c->policy;
    bool op = req->flags & VPMU_HELPER_OPEN_FLAGS;
    uint64_t code = ev->raw_config;
    int r = check_consent(c, o, req);

    if (r <= 0) {
        return r;
    }
    if (!ev->clock && !ev->exclude_host) {
        return refuse(c, o, &req->hdr, -EPERM, "exclude_host is required "
                      "(the event would count the host too)");
    }
    if (op && ev->pinned) {
        return refuse(c, o, &req->hdr, -EPERM, "%s events are never "
                      "pinned (the guest's events come first)",
                      event_kind(req));
    }
    if (!op && ev->pinned != p->pinned) {
        return refuse(c, o, &req->hdr, -EPERM, "the policy of VM '%s' "
                      "wants %s events", c->vm,
                      p->pinned ? "pinned" : "multiplexed (not pinned)");
    }
    if (ev->event == VPMU_EVENT_RAW && op) {
        return refuse(c, o, &req->hdr, -EACCES, "raw event 0x%llx: "
                      "%s events are named events",
                      (unsigned long long)code, event_kind(req));
    }
    if (ev->event == VPMU_EVENT_RAW && !p->raw) {
        return refuse(c, o, &req->hdr, -EACCES, "raw event 0x%llx: the "
                      "policy of VM '%s' allows no raw events",
                      (unsigned long long)code, c->vm);
    }
    if (ev->event != VPMU_EVENT_RAW &&
        vpmu_arch_event_encoding(vpmu_perf_host_vendor(), ev->event,
                                 &code) < 0) {
        return refuse(c, o, &req->hdr, -EACCES, "architectural event %d has "
                      "no encoding on this host", (int)ev->event);
    }
    if (!op && p->filter && !vpmu_filter_allows_event(p->filter, code)) {
        return refuse(c, o, &req->hdr, -EACCES, "event 0x%llx denied by "
                      "the policy of VM '%s'", (unsigned long long)code,
                      c->vm);
    }
    return 1;
}

/*
 * perf_event_open failed.  Where KVM's mediated vPMU is on, perf refuses
 * every event that counts guests while a VM with it exists: the client
 * gets that, and the choice, instead of a bare "Operation not supported"
 * (docs/kvm.md, "Mediated hosts").  The message must fit 160 bytes.
 */
static int refuse_open_failed(HelperConn *c, const HelperServerOpts *o,
                              const VpmuHelperOpen *req,
                              const struct perf_event_attr *attr, int err)
{
    VpmuHostCheck h;

    if (err != -EOPNOTSUPP ||
        vpmu_host_check(o->sysroot, attr, err, &h) < 0 ||
        h.mode != VPMU_HOST_MODE_MEDIATED) {
        return refuse(c, o, &req->hdr, err, "perf_event_open: %s",
                      strerror(-err));
    }
    return refuse(c, o, &req->hdr, err, "KVM's mediated vPMU is on%s%s%s: "
                  "perf refuses events that count guests; run VMs without "
                  "vpmu, or load %s with enable_mediated_pmu=0",
                  h.module[0] ? " (" : "", h.module, h.module[0] ? ")" : "",
                  h.module[0] ? h.module : "kvm_amd/kvm_intel");
}

/*
 * The most events of @kind a thread holds: the guest's GP and fixed
 * counters and the source's probe; the operator's events apart,
 * VPMU_OPERATOR_MAX_EVENTS of them, and one profile's.
 */
static unsigned thread_limit(const HelperPolicy *p, HelperKind kind)
{
    return kind == HELPER_KIND_OPERATOR ? VPMU_OPERATOR_MAX_EVENTS :
           kind == HELPER_KIND_PROFILE ? 1 :
           p->counters + VPMU_INTEL_V5_MAX_FIXED + 1;
}

static int serve_open(HelperConn *c, const HelperServerOpts *o,
                      const VpmuHelperOpen *req)
{
    VpmuHelperReply reply = { .hdr = req->hdr };
    struct perf_event_attr attr = req->attr;
    HelperKind kind = kind_of(req);
    VpmuPerfAttrInfo ev;
    HelperThread *t;
    int fd, r;

    if (!c->have_policy) {
        return refuse(c, o, &req->hdr, -EACCES, "%s", c->no_policy);
    }
    if (!take_token(c, o)) {
        return refuse(c, o, &req->hdr, -EAGAIN, "too many requests: at "
                      "most %u a second", o->rate);
    }
    if (!peer_thread(c, o, req->tid)) {
        return refuse(c, o, &req->hdr, -EPERM, "thread %d is not one of "
                      "process %d", (int)req->tid, (int)c->pid);
    }
    if (vpmu_perf_attr_parse(&attr, &ev) < 0) {
        return refuse(c, o, &req->hdr, -EINVAL, "not an event vpmu's perf "
                      "source makes (type %u, config 0x%llx)", attr.type,
                      (unsigned long long)attr.config);
    }
    r = check_policy(c, o, req, &ev);
    if (r <= 0) {
        return r;
    }
    t = thread_of(c, req->tid, true);
    if (!t || t->held[kind] >= thread_limit(&c->policy, kind)) {
        unsigned n = t ? t->held[kind] : 0;

        return refuse(c, o, &req->hdr, -EBUSY, "thread %d holds %u %s "
                      "event%s, the most the policy of VM '%s' allows",
                      (int)req->tid, n, event_kind(req), n == 1 ? "" : "s",
                      c->vm);
    }
    fd = sys_open(o, &attr, req->tid);
    if (fd < 0) {
        return refuse_open_failed(c, o, req, &attr, fd);
    }
    /* The thread may have exited and its id gone to another process. */
    if (!peer_thread(c, o, req->tid)) {
        close(fd);
        return refuse(c, o, &req->hdr, -EPERM, "thread %d is not one of "
                      "process %d", (int)req->tid, (int)c->pid);
    }
    r = send_reply(c, &reply, sizeof(reply), fd);
    close(fd);
    if (r == 0) {
        t->held[kind]++;
        c->stats.opens++;
        c->stats.operator_opens += kind == HELPER_KIND_OPERATOR;
        c->stats.profile_opens += kind == HELPER_KIND_PROFILE;
    }
    return r;
}

static int serve_release(HelperConn *c, const HelperServerOpts *o,
                         const VpmuHelperOpen *req)
{
    VpmuHelperReply reply = { .hdr = req->hdr };
    HelperThread *t = thread_of(c, req->tid, false);
    HelperKind kind = kind_of(req);

    if (!t || !t->held[kind]) {
        return refuse(c, o, &req->hdr, -ENOENT, "thread %d holds no %s "
                      "event of this connection", (int)req->tid,
                      event_kind(req));
    }
    t->held[kind]--;
    c->stats.releases++;
    return send_reply(c, &reply, sizeof(reply), -1);
}

static int serve_hello(HelperConn *c, const HelperServerOpts *o,
                       const VpmuHelperHdr *req)
{
    VpmuHelperHello hello = { .r.hdr = *req };

    if (!c->have_policy) {
        return refuse(c, o, req, -EACCES, "%s", c->no_policy);
    }
    snprintf(hello.vm, sizeof(hello.vm), "%s", c->vm);
    snprintf(hello.events, sizeof(hello.events), "%s", c->policy.events);
    hello.counters = c->policy.counters;
    hello.flags = (c->policy.pinned ? VPMU_HELPER_POLICY_PINNED : 0) |
                  (c->policy.raw ? VPMU_HELPER_POLICY_RAW : 0) |
                  (c->cgroup ? VPMU_HELPER_POLICY_CGROUP : 0) |
                  (c->policy.operator_metrics ? VPMU_HELPER_POLICY_OPERATOR
                                              : 0) |
                  (uint32_t)c->policy.operator_profile
                      << VPMU_HELPER_POLICY_PROFILE_SHIFT;
    return send_reply(c, &hello.r, sizeof(hello), -1);
}

/* The header's verdict: 0, or the refusal already sent (> 0 is never). */
static int check_header(HelperConn *c, const HelperServerOpts *o,
                        const VpmuHelperHdr *h, size_t n, bool trunc)
{
    VpmuHelperHdr none = { 0 };
    size_t want;

    if (n < sizeof(*h)) {
        refuse(c, o, &none, -EPROTO, "short message (%zu bytes)", n);
        return -EPROTO;
    }
    if (h->magic != VPMU_HELPER_MAGIC) {
        refuse(c, o, &none, -EPROTO, "not a vpmu-helper message");
        return -EPROTO;
    }
    if (h->version != VPMU_HELPER_VERSION) {
        refuse(c, o, h, -EPROTONOSUPPORT, "protocol version %u; this "
               "helper speaks %u", h->version, VPMU_HELPER_VERSION);
        return -EPROTO;
    }
    want = h->type == VPMU_HELPER_HELLO ? sizeof(VpmuHelperHdr)
         : h->type == VPMU_HELPER_OPEN || h->type == VPMU_HELPER_RELEASE
           ? sizeof(VpmuHelperOpen) : 0;
    if (!want) {
        refuse(c, o, h, -EPROTO, "unknown message type %u", h->type);
        return -EPROTO;
    }
    if (trunc || h->size != n || n != want) {
        refuse(c, o, h, -EMSGSIZE, "message of %zu bytes%s, type %u takes "
               "%zu", n, trunc ? " or more" : "", h->type, want);
        return -EPROTO;
    }
    return 0;
}

int helper_conn_serve(HelperConn *c, const HelperServerOpts *o)
{
    union {
        VpmuHelperHdr hdr;
        VpmuHelperOpen open;
        char buf[VPMU_HELPER_MSG_MAX];
    } m;
    ssize_t n;

    /* No control buffer: fds a client sends along are dropped (closed). */
    do {
        n = recv(c->fd, &m, sizeof(m), MSG_TRUNC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return n == 0 ? -ECONNRESET : -errno;
    }
    c->stats.requests++;
    if (check_header(c, o, &m.hdr, (size_t)n < sizeof(m) ? (size_t)n
                                                         : sizeof(m),
                     (size_t)n > sizeof(m)) < 0) {
        return 0;
    }
    if (m.hdr.type != VPMU_HELPER_HELLO &&
        (m.open.flags & ~VPMU_HELPER_OPEN_FLAGS)) {
        return refuse(c, o, &m.hdr, -EPROTO, "unknown flags 0x%x",
                      m.open.flags & ~VPMU_HELPER_OPEN_FLAGS);
    }
    switch (m.hdr.type) {
    case VPMU_HELPER_HELLO:
        return serve_hello(c, o, &m.hdr);
    case VPMU_HELPER_OPEN:
        return serve_open(c, o, &m.open);
    default:
        return serve_release(c, o, &m.open);
    }
}
