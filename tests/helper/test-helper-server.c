/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu-helper's protocol, served in-process on one end of a socket pair
 * (vpmu/helper/server.c), with a made-up /proc and a fake
 * perf_event_open that hands out /dev/null: the hello, a granted open
 * (the fd arrives), and every refusal: another process's thread, an attr
 * the perf source never builds, the policy's events, raw and pinned
 * rules, exclude_host, the per-thread event limit, the rate limit, a
 * perf_event_open refused by KVM's mediated vPMU (named, with the
 * choice), and malformed, short, oversized and truncated messages.  The connection
 * survives each, and no fd leaks: not when the peer hangs up before its
 * answer, nor when it sends fds along.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vpmu/perf.h>

#include "helper-server.h"
#include "helper-test.h"
#include "source-attr.h"
#include "sysroot.h"

static char proc[] = "/tmp/vpmu-proc-XXXXXX";
static char pol[] = "/tmp/vpmu-pol-XXXXXX";
static HelperServerOpts opts;
static HelperConn conn;
static int cli = -1;
static unsigned fake_opens;
static struct perf_event_attr last_attr;
static pid_t last_tid;

static int fake_open(void *ctx, struct perf_event_attr *attr, pid_t tid)
{
    fake_opens++;
    last_attr = *attr;
    last_tid = tid;
    return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* KVM's mediated vPMU with a mediated VM: perf refuses what counts guests. */
static int refusing_open(void *ctx, struct perf_event_attr *attr, pid_t tid)
{
    fake_opens++;
    return -EOPNOTSUPP;
}

/* A process in /proc: its cgroup names VM "test-vm"; @tid is its thread. */
static void fake_process(pid_t pid, pid_t tid)
{
    char dir[128], status[64];

    snprintf(dir, sizeof(dir), "%s/%d", proc, (int)pid);
    mkdir(dir, 0700);
    write_file(dir, "cgroup", "0::/machine/qemu-7-test-vm.libvirt-qemu\n");
    write_file(dir, "cmdline", "");
    snprintf(dir, sizeof(dir), "%s/%d", proc, (int)tid);
    mkdir(dir, 0700);
    snprintf(status, sizeof(status), "Name:\tqemu\nTgid:\t%d\n", (int)pid);
    write_file(dir, "status", status);
}

/* A connection from this process, with the policy files as they are. */
static void setup_policy_none(void)
{
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                                sv), 0);
    ck_assert_int_eq(helper_conn_init(&conn, sv[0], &opts), 0);
    cli = sv[1];
}

static void setup_policy(const char *text)
{
    write_file(pol, "test-vm.conf", text);
    setup_policy_none();
}

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(proc));
    ck_assert_ptr_nonnull(mkdtemp(pol));
    fake_process(getpid(), getpid());
    fake_process(1, 2);         /* someone else's process and thread */
    opts = (HelperServerOpts){ .policy_dir = pol, .proc = proc, .rate = 1,
                               .burst = 8, .open = fake_open };
    fake_opens = 0;
    /* Cycles (Intel 0x3c, AMD 0x76) and instructions (0xc0 on both). */
    setup_policy("events = allow 0x3c, 0x76, 0xc0\ncounters = 2\n");
}

static void teardown(void)
{
    helper_conn_close(&conn);
    if (cli >= 0) {
        close(cli);
    }
    cli = -1;
    remove_tree(proc);
    remove_tree(pol);
    strcpy(proc, "/tmp/vpmu-proc-XXXXXX");
    strcpy(pol, "/tmp/vpmu-pol-XXXXXX");
}

static void hdr(VpmuHelperHdr *h, VpmuHelperType type, size_t size)
{
    *h = (VpmuHelperHdr){ VPMU_HELPER_MAGIC, VPMU_HELPER_VERSION, type,
                          size, 42 };
}

/* Cycles, both CPLs, under KVM: what the perf source builds. */
static VpmuHelperOpen open_req(pid_t tid)
{
    VpmuHelperOpen r = { .tid = tid };

    hdr(&r.hdr, VPMU_HELPER_OPEN, sizeof(r));
    r.attr = source_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
                         1ull << 20, true, true);
    return r;
}

/* Send @len bytes, let the server serve them, read its reply. */
static int ask(const void *msg, size_t len, VpmuHelperReply *rep, int *fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    char buf[VPMU_HELPER_MSG_MAX];
    struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c;
    ssize_t n;

    ck_assert_int_eq(send(cli, msg, len, 0), (ssize_t)len);
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), 0);
    n = recvmsg(cli, &m, MSG_CMSG_CLOEXEC);
    ck_assert_int_ge(n, (ssize_t)sizeof(*rep));
    memcpy(rep, buf, sizeof(*rep));
    *fd = -1;
    c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_type == SCM_RIGHTS) {
        memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    return rep->status;
}

/* A refusal: @status, @message, no fd, the connection still answers. */
static void refused(const void *msg, size_t len, int status,
                    const char *message)
{
    VpmuHelperReply rep;
    int fd;

    ck_assert_int_eq(ask(msg, len, &rep, &fd), status);
    ck_assert_str_eq(rep.message, message);
    ck_assert_int_eq(fd, -1);
}

static unsigned open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    unsigned n = 0;

    ck_assert_ptr_nonnull(d);
    while (readdir(d)) {
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(test_hello_policy)
{
    VpmuHelperHdr h;
    VpmuHelperHello rep;

    hdr(&h, VPMU_HELPER_HELLO, sizeof(h));
    ck_assert_int_eq(send(cli, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), 0);
    ck_assert_int_eq(recv(cli, &rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
    ck_assert_int_eq(rep.r.status, 0);
    ck_assert_uint_eq(rep.r.hdr.seq, 42);
    ck_assert_str_eq(rep.vm, "test-vm");
    ck_assert_str_eq(rep.events, "allow 0x3c, 0x76, 0xc0");
    ck_assert_uint_eq(rep.counters, 2);
    ck_assert_uint_eq(rep.flags, VPMU_HELPER_POLICY_CGROUP);
}
END_TEST

START_TEST(test_open)
{
    VpmuHelperOpen req = open_req(getpid());
    VpmuHelperReply rep;
    struct stat st;
    int fd;

    ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
    ck_assert_str_eq(rep.message, "");
    ck_assert_int_ge(fd, 0);
    /* The fake's /dev/null, opened for the asking thread. */
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
    ck_assert_int_eq(last_tid, getpid());
    ck_assert_int_eq(memcmp(&last_attr, &req.attr, sizeof(req.attr)), 0);
    ck_assert_uint_eq(conn.stats.opens, 1);
    close(fd);
}
END_TEST

START_TEST(test_policy_refusals)
{
    VpmuHelperOpen req = open_req(2);
    char want[160];

    snprintf(want, sizeof(want), "thread 2 is not one of process %d",
             (int)getpid());
    refused(&req, sizeof(req), -EPERM, want);
    req = open_req(getpid());
    req.attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
    /* This host's encoding of branches: Intel 0xc4, AMD 0xc2. */
    snprintf(want, sizeof(want), "event 0x%s denied by the policy of VM "
             "'test-vm'", vpmu_perf_host_vendor() == VPMU_VENDOR_AMD ? "c2"
                                                                 : "c4");
    refused(&req, sizeof(req), -EACCES, want);
    req = open_req(getpid());
    req.attr.type = PERF_TYPE_RAW;
    req.attr.config = 0x3c;
    refused(&req, sizeof(req), -EACCES, "raw event 0x3c: the policy of VM "
            "'test-vm' allows no raw events");
    req = open_req(getpid());
    req.attr.pinned = 1;
    refused(&req, sizeof(req), -EPERM, "the policy of VM 'test-vm' wants "
            "multiplexed (not pinned) events");
    req = open_req(getpid());
    req.attr.exclude_host = 0;
    refused(&req, sizeof(req), -EPERM, "exclude_host is required (the "
            "event would count the host too)");
    req = open_req(getpid());
    req.attr.inherit = 1;
    refused(&req, sizeof(req), -EINVAL, "not an event vpmu's perf source "
            "makes (type 0, config 0x0)");
    ck_assert_uint_eq(fake_opens, 0);
    ck_assert_uint_eq(conn.stats.refusals, 6);
}
END_TEST

/* counters = 2: 2 GP + 4 fixed + the probe = 7 events per thread. */
START_TEST(test_event_limit)
{
    VpmuHelperOpen req = open_req(getpid()), rel = { .tid = getpid() };
    VpmuHelperReply rep;
    char want[160];
    int fd;

    opts.burst = 100;           /* not the rate limit's test */
    conn.tokens = 100;
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
        close(fd);
    }
    snprintf(want, sizeof(want), "thread %d holds 7 guest events, the most "
             "the policy of VM 'test-vm' allows", (int)getpid());
    refused(&req, sizeof(req), -EBUSY, want);
    hdr(&rel.hdr, VPMU_HELPER_RELEASE, sizeof(rel));
    ck_assert_int_eq(ask(&rel, sizeof(rel), &rep, &fd), 0);
    ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
    close(fd);
    rel.tid = 2;
    refused(&rel, sizeof(rel), -ENOENT, "thread 2 holds no guest event of "
            "this connection");
}
END_TEST

/* A new connection under @policy, its hello answered into *@hello. */
static void reconnect(const char *policy, VpmuHelperHello *hello)
{
    VpmuHelperHdr h;

    helper_conn_close(&conn);
    close(cli);
    setup_policy(policy);
    hdr(&h, VPMU_HELPER_HELLO, sizeof(h));
    ck_assert_int_eq(send(cli, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), 0);
    ck_assert_int_eq(recv(cli, hello, sizeof(*hello), 0),
                     (ssize_t)sizeof(*hello));
}

/*
 * An operator's or a profile's event (@flag) is refused raw, without
 * exclude_host, or pinned; @kind is how the refusal names it.
 */
static void host_event_refusals(uint32_t flag, const char *kind)
{
    VpmuHelperOpen req = open_req(getpid());
    char want[160];

    req.flags = flag;
    req.attr.type = PERF_TYPE_RAW;
    req.attr.config = 0x3c;
    snprintf(want, sizeof(want), "raw event 0x3c: %s events are named "
             "events", kind);
    refused(&req, sizeof(req), -EACCES, want);
    req = open_req(getpid());
    req.flags = flag;
    req.attr.exclude_host = 0;
    refused(&req, sizeof(req), -EPERM, "exclude_host is required (the "
            "event would count the host too)");
    req = open_req(getpid());
    req.flags = flag;
    req.attr.pinned = 1;
    snprintf(want, sizeof(want), "%s events are never pinned (the guest's "
             "events come first)", kind);
    refused(&req, sizeof(req), -EPERM, want);
}

/*
 * The operator's events need the tenant's consent: refused, and nothing
 * opened, under a policy without "operator = yes".
 */
START_TEST(test_operator_denied)
{
    VpmuHelperOpen req = open_req(getpid());
    VpmuHelperOpen rel = { .tid = getpid() };
    char want[160];

    req.flags = VPMU_HELPER_OPEN_OPERATOR;
    refused(&req, sizeof(req), -EACCES, "operator events: the policy of VM "
            "'test-vm' does not allow them (operator = no)");
    ck_assert_uint_eq(fake_opens, 0);
    hdr(&rel.hdr, VPMU_HELPER_RELEASE, sizeof(rel));
    rel.flags = VPMU_HELPER_OPEN_OPERATOR;
    snprintf(want, sizeof(want), "thread %d holds no operator event of "
             "this connection", (int)getpid());
    refused(&rel, sizeof(rel), -ENOENT, want);
}
END_TEST

/*
 * With "operator = yes": named events only, outside the guest's filter
 * (branches is not in it) and beside its limit (7 guest events), at most
 * 8 per thread; a release says whose event it was.
 */
START_TEST(test_operator_allowed)
{
    VpmuHelperOpen req = open_req(getpid()), rel = { .tid = getpid() };
    VpmuHelperReply rep;
    VpmuHelperHello hello;
    char want[160];
    int fd;

    reconnect("events = allow 0x3c, 0x76, 0xc0\ncounters = 2\n"
              "operator = yes\n", &hello);
    ck_assert_uint_eq(hello.flags, VPMU_HELPER_POLICY_CGROUP |
                                   VPMU_HELPER_POLICY_OPERATOR);
    opts.burst = 100;
    conn.tokens = 100;
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
        close(fd);
    }
    req.flags = VPMU_HELPER_OPEN_OPERATOR;
    req.attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
        close(fd);
    }
    snprintf(want, sizeof(want), "thread %d holds 8 operator events, the "
             "most the policy of VM 'test-vm' allows", (int)getpid());
    refused(&req, sizeof(req), -EBUSY, want);
    ck_assert_uint_eq(conn.stats.opens, 15);
    ck_assert_uint_eq(conn.stats.operator_opens, 8);
    hdr(&rel.hdr, VPMU_HELPER_RELEASE, sizeof(rel));
    rel.flags = VPMU_HELPER_OPEN_OPERATOR;
    ck_assert_int_eq(ask(&rel, sizeof(rel), &rep, &fd), 0);
    ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
    close(fd);
    /* The guest's limit did not move: still 7 of 7. */
    req = open_req(getpid());
    snprintf(want, sizeof(want), "thread %d holds 7 guest events, the most "
             "the policy of VM 'test-vm' allows", (int)getpid());
    refused(&req, sizeof(req), -EBUSY, want);
    host_event_refusals(VPMU_HELPER_OPEN_OPERATOR, "operator");
}
END_TEST

/*
 * A profile's sampling event needs operator-profile ip or stack: refused
 * under deny; then one per thread, beside the guest's and the operator's
 * (not under "operator = yes"), named, never pinned; a release says whose
 * event it was.
 */
START_TEST(test_profile_event)
{
    VpmuHelperOpen req = open_req(getpid()), rel = { .tid = getpid() };
    VpmuHelperReply rep;
    VpmuHelperHello hello;
    char want[160];
    int fd;

    req.flags = VPMU_HELPER_OPEN_PROFILE;
    refused(&req, sizeof(req), -EACCES, "profiles: the policy of VM "
            "'test-vm' does not allow them (operator-profile = deny)");
    ck_assert_uint_eq(fake_opens, 0);
    reconnect("events = allow 0x3c, 0x76, 0xc0\ncounters = 2\n"
              "operator-profile = ip\n", &hello);
    req.flags = VPMU_HELPER_OPEN_OPERATOR;
    refused(&req, sizeof(req), -EACCES, "operator events: the policy of VM "
            "'test-vm' does not allow them (operator = no)");
    req.flags = VPMU_HELPER_OPEN_OPERATOR | VPMU_HELPER_OPEN_PROFILE;
    refused(&req, sizeof(req), -EINVAL, "an event is an operator event or "
            "a profile's, not both");
    /* Branches: outside the guest's filter, the profile's to sample. */
    req.flags = VPMU_HELPER_OPEN_PROFILE;
    req.attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
    req.attr.sample_period = 10007;
    ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
    close(fd);
    snprintf(want, sizeof(want), "thread %d holds 1 profile event, the "
             "most the policy of VM 'test-vm' allows", (int)getpid());
    refused(&req, sizeof(req), -EBUSY, want);
    ck_assert_uint_eq(conn.stats.profile_opens, 1);
    ck_assert_uint_eq(conn.stats.operator_opens, 0);
    /* A guest event is released as the guest's: none is open. */
    hdr(&rel.hdr, VPMU_HELPER_RELEASE, sizeof(rel));
    snprintf(want, sizeof(want), "thread %d holds no guest event of this "
             "connection", (int)getpid());
    refused(&rel, sizeof(rel), -ENOENT, want);
    rel.flags = VPMU_HELPER_OPEN_PROFILE;
    ck_assert_int_eq(ask(&rel, sizeof(rel), &rep, &fd), 0);
    ck_assert_int_eq(ask(&req, sizeof(req), &rep, &fd), 0);
    close(fd);
    ck_assert_uint_eq(conn.stats.profile_opens, 2);
    host_event_refusals(VPMU_HELPER_OPEN_PROFILE, "profile");
}
END_TEST

/* burst 8, 1 a second: the 9th open at once is refused. */
START_TEST(test_rate)
{
    VpmuHelperOpen req = open_req(2);
    char want[160];

    snprintf(want, sizeof(want), "thread 2 is not one of process %d",
             (int)getpid());
    for (int i = 0; i < 8; i++) {
        refused(&req, sizeof(req), -EPERM, want);
    }
    refused(&req, sizeof(req), -EAGAIN, "too many requests: at most 1 a "
            "second");
}
END_TEST

START_TEST(test_malformed)
{
    VpmuHelperOpen req = open_req(getpid());
    char big[VPMU_HELPER_MSG_MAX + 64], want[160];

    refused("abc", 3, -EPROTO, "short message (3 bytes)");
    req.hdr.magic = 0x12345678;
    refused(&req, sizeof(req), -EPROTO, "not a vpmu-helper message");
    req = open_req(getpid());
    req.hdr.version = 2;
    refused(&req, sizeof(req), -EPROTONOSUPPORT, "protocol version 2; this "
            "helper speaks 1");
    req = open_req(getpid());
    req.hdr.type = 9;
    refused(&req, sizeof(req), -EPROTO, "unknown message type 9");
    req = open_req(getpid());
    /* Truncated: the header says more than came. */
    snprintf(want, sizeof(want), "message of %zu bytes, type 2 takes %zu",
             sizeof(req) - 8, sizeof(req));
    refused(&req, sizeof(req) - 8, -EMSGSIZE, want);
    memset(big, 0, sizeof(big));
    memcpy(big, &req, sizeof(req));
    snprintf(want, sizeof(want), "message of 512 bytes or more, type 2 "
             "takes %zu", sizeof(req));
    refused(big, sizeof(big), -EMSGSIZE, want);
    req = open_req(getpid());
    req.flags = 0xc;
    refused(&req, sizeof(req), -EPROTO, "unknown flags 0xc");
    ck_assert_uint_eq(fake_opens, 0);
}
END_TEST

/*
 * perf_event_open says EOPNOTSUPP.  Where KVM's mediated vPMU is on (its
 * parameter, or Linux 7.0 with none visible) the client learns that and
 * how to choose (160 bytes at most); elsewhere, the bare error.
 */
START_TEST(test_mediated_refusal)
{
    static const struct {
        SysrootSpec host;
        const char *message;
    } t[] = {
        { { .kvm_amd = "Y\n", .osrelease = "7.0.0-1-amd64\n" },
          "KVM's mediated vPMU is on (kvm_amd): perf refuses events that "
          "count guests; run VMs without vpmu, or load kvm_amd with "
          "enable_mediated_pmu=0" },
        { { .kvm_intel = "Y\n", .osrelease = "7.0.0\n" },
          "KVM's mediated vPMU is on (kvm_intel): perf refuses events that "
          "count guests; run VMs without vpmu, or load kvm_intel with "
          "enable_mediated_pmu=0" },
        { { .no_sys = 1, .osrelease = "7.1.0\n" },
          "KVM's mediated vPMU is on: perf refuses events that count "
          "guests; run VMs without vpmu, or load kvm_amd/kvm_intel with "
          "enable_mediated_pmu=0" },
        { { .kvm_amd = "N\n", .osrelease = "7.0.0\n" },
          "perf_event_open: Operation not supported" },
        { { .kvm_amd = "garbage\n", .osrelease = "6.12.0\n" },
          "perf_event_open: Operation not supported" },
    };
    char root[] = SYSROOT_TEMPLATE;
    VpmuHelperOpen req = open_req(getpid());

    opts.open = refusing_open;
    for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        sysroot_make(root, &t[i].host);
        opts.sysroot = root;
        refused(&req, sizeof(req), -EOPNOTSUPP, t[i].message);
        sysroot_remove(root);
    }
    ck_assert_uint_eq(fake_opens, 5);
    ck_assert_uint_eq(conn.stats.refusals, 5);
}
END_TEST

/* No policy file for the VM, and no default: every request refused. */
START_TEST(test_no_policy)
{
    VpmuHelperOpen req = open_req(getpid());
    VpmuHelperHdr h;
    char want[200];

    helper_conn_close(&conn);
    close(cli);
    snprintf(want, sizeof(want), "%s/test-vm.conf", pol);
    ck_assert_int_eq(unlink(want), 0);
    setup_policy_none();
    snprintf(want, sizeof(want), "no policy for VM 'test-vm' in %s (neither "
             "test-vm.conf nor default.conf)", pol);
    hdr(&h, VPMU_HELPER_HELLO, sizeof(h));
    refused(&h, sizeof(h), -EACCES, want);
    refused(&req, sizeof(req), -EACCES, want);
}
END_TEST

/* The peer hangs up before its answer: the event's fd is not kept. */
START_TEST(test_hangup)
{
    VpmuHelperOpen req = open_req(getpid());
    unsigned before;

    before = open_fds();
    ck_assert_int_eq(send(cli, &req, sizeof(req), 0), (ssize_t)sizeof(req));
    close(cli);
    cli = -1;
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), -EPIPE);
    ck_assert_uint_eq(fake_opens, 1);
    ck_assert_uint_eq(open_fds(), before - 1);     /* only cli is gone */
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), -ECONNRESET);
}
END_TEST

static unsigned log_lines;
static char last_log[320];

static void count_log(void *opaque, const char *msg)
{
    log_lines++;
    snprintf(last_log, sizeof(last_log), "%s", msg);
}

/* 12 refusals: 8 logged, then one line saying the rest are only counted. */
START_TEST(test_log_limit)
{
    VpmuHelperOpen req = open_req(getpid());
    char want[320];

    opts.log = count_log;
    log_lines = 0;
    req.flags = 4;
    for (int i = 0; i < 12; i++) {
        refused(&req, sizeof(req), -EPROTO, "unknown flags 0x4");
    }
    ck_assert_uint_eq(log_lines, 9);
    snprintf(want, sizeof(want), "vpmu-helper: pid %d (VM 'test-vm'): "
             "further refusals are only counted", (int)getpid());
    ck_assert_str_eq(last_log, want);
    ck_assert_uint_eq(conn.stats.refusals, 12);
}
END_TEST

/* fds a client sends along are closed, never kept. */
START_TEST(test_fds_sent)
{
    VpmuHelperHdr h;
    union {
        char buf[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    int fds[3] = { 0, 1, 2 };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    VpmuHelperHello rep;
    unsigned before = open_fds();

    hdr(&h, VPMU_HELPER_HELLO, sizeof(h));
    memset(&ctl, 0, sizeof(ctl));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(c), fds, sizeof(fds));
    ck_assert_int_eq(sendmsg(cli, &m, 0), (ssize_t)sizeof(h));
    ck_assert_int_eq(helper_conn_serve(&conn, &opts), 0);
    ck_assert_int_eq(recv(cli, &rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
    ck_assert_int_eq(rep.r.status, 0);
    ck_assert_uint_eq(open_fds(), before);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("helper-server");
    TCase *tc = tcase_create("protocol");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_hello_policy);
    tcase_add_test(tc, test_open);
    tcase_add_test(tc, test_policy_refusals);
    tcase_add_test(tc, test_mediated_refusal);
    tcase_add_test(tc, test_event_limit);
    tcase_add_test(tc, test_operator_denied);
    tcase_add_test(tc, test_operator_allowed);
    tcase_add_test(tc, test_profile_event);
    tcase_add_test(tc, test_rate);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_no_policy);
    tcase_add_test(tc, test_hangup);
    tcase_add_test(tc, test_fds_sent);
    tcase_add_test(tc, test_log_limit);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
