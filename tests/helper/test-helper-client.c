/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vpmu-helper client in libvpmu (include/vpmu/helper.h) against the
 * helper's server code in a child process on a real socket (made-up
 * /proc, fake perf_event_open handing out /dev/null): connect and hello,
 * opens through the perf source's VpmuPerfSys, a refusal and its reason,
 * a helper that is down (only that open fails) and one that comes back
 * (the next open connects again), the release a close sends, and a perf
 * source whose events the helper cannot open for KVM's mediated vPMU.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vpmu/helper.h>
#include <vpmu/host.h>

#include "helper-server.h"
#include "helper-test.h"
#include "source-attr.h"
#include "sysroot.h"

static char dir[] = "/tmp/vpmu-cli-XXXXXX";
static char sock[128], proc[160];
static pid_t server = -1;
/* The next server's host: KVM's mediated vPMU, a mediated VM running. */
static bool server_mediated;
static const char *server_sysroot;

static int fake_open(void *ctx, struct perf_event_attr *attr, pid_t tid)
{
    /* perf refuses what counts guests; the task clock is not perf's PMU's. */
    if (server_mediated && attr->type != PERF_TYPE_SOFTWARE &&
        !attr->exclude_guest) {
        return -EOPNOTSUPP;
    }
    return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The helper: serve one client after another until killed. */
static void serve(int lfd)
{
    HelperServerOpts o = { .policy_dir = dir, .proc = proc, .rate = 100,
                           .burst = 100, .open = fake_open,
                           .sysroot = server_sysroot };

    for (;;) {
        HelperConn c;
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0 || helper_conn_init(&c, fd, &o) < 0) {
            _exit(1);
        }
        while (helper_conn_serve(&c, &o) == 0) {
        }
        helper_conn_close(&c);
    }
}

static void start_server(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

    strcpy(sa.sun_path, sock);
    unlink(sock);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(lfd, 4), 0);
    server = fork();
    if (server == 0) {
        /* Dies with the test, whatever way the test ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        serve(lfd);             /* no ck_assert here: Check's channel */
    }
    ck_assert_int_gt(server, 0);
    close(lfd);
}

static void stop_server(void)
{
    if (server > 0) {
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
    }
    server = -1;
    unlink(sock);
}

static void setup(void)
{
    char sub[200], status[64];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/helper.sock", dir);
    snprintf(proc, sizeof(proc), "%s/proc", dir);
    snprintf(sub, sizeof(sub), "%s/%d", proc, (int)getpid());
    ck_assert_int_eq(mkdir(proc, 0700), 0);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    write_file(sub, "cgroup", "0::/machine.slice/machine-qemu\\x2d1\\x2d"
               "web.scope\n");
    write_file(sub, "cmdline", "");
    snprintf(status, sizeof(status), "Tgid:\t%d\n", (int)getpid());
    write_file(sub, "status", status);
    write_file(dir, "web.conf", "events = allow 0xc0\ncounters = 3\n"
               "raw = yes\n");
    start_server();
}

static void teardown(void)
{
    stop_server();
    remove_tree(dir);
    strcpy(dir, "/tmp/vpmu-cli-XXXXXX");
}

/* Instructions, both CPLs, under KVM, as the perf source builds them. */
static struct perf_event_attr insn(void)
{
    return source_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000,
                       true, true);
}

START_TEST(test_connect)
{
    VpmuHelperPolicy p;
    VpmuHelperStats st;
    VpmuHelper *h;
    char err[200] = "";

    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_policy(h, &p);
    ck_assert_str_eq(p.vm, "web");
    ck_assert_str_eq(p.events, "allow 0xc0");
    ck_assert_uint_eq(p.counters, 3);
    ck_assert(p.raw && !p.pinned && p.cgroup);
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.connects, 1);
    vpmu_helper_free(h);
}
END_TEST

START_TEST(test_connect_fails)
{
    VpmuHelper *h = (VpmuHelper *)1;
    char err[200] = "", want[240];

    stop_server();
    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)),
                     -ENOENT);
    ck_assert_ptr_null(h);
    snprintf(want, sizeof(want), "vpmu-helper %s: No such file or directory",
             sock);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(vpmu_helper_connect("", &h, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "vpmu-helper: socket path '' is empty or too long");
}
END_TEST

/* No policy for the VM: the hello is refused, with the helper's reason. */
START_TEST(test_hello_refused)
{
    VpmuHelper *h = (VpmuHelper *)1;
    char err[400] = "", path[200], want[400];

    snprintf(path, sizeof(path), "%s/web.conf", dir);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)),
                     -EACCES);
    ck_assert_ptr_null(h);
    snprintf(want, sizeof(want), "vpmu-helper %s refused: no policy for VM "
             "'web' in %s (neither web.conf nor default.conf)", sock, dir);
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_open_and_refusal)
{
    struct perf_event_attr a = insn();
    VpmuHelperStats st;
    VpmuPerfSys sys;
    VpmuHelper *h;
    char err[200];
    int fd;

    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_perf_sys(h, &sys);
    fd = sys.open(sys.ctx, &a, getpid(), -1, -1, 0);
    vpmu_helper_stats(h, &st);
    ck_assert_msg(fd >= 0, "%d: %s", fd, st.last_message);
    ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ck_assert_int_eq(sys.close(sys.ctx, fd), 0);
    a.config = PERF_COUNT_HW_CACHE_MISSES;
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1, 0), -EACCES);
    /* Only per thread, on every CPU, with no group: refused at home. */
    a = insn();
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), 0, -1, 0), -EINVAL);
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.opens, 1);
    ck_assert_uint_eq(st.refusals, 1);
    ck_assert_int_eq(st.last_error, -EACCES);
    ck_assert(strncmp(st.last_message, "event 0x", 8) == 0);
    ck_assert(strstr(st.last_message, "denied by the policy of VM 'web'"));
    vpmu_helper_free(h);
}
END_TEST

/*
 * The operator's events: the helper hears which they are (refused under
 * "operator = no", the policy says so), and a close releases them as the
 * operator's: with 8 open, closing one makes room for another.
 */
START_TEST(test_operator)
{
    unsigned long op = VPMU_PERF_OPEN_OPERATOR;
    struct perf_event_attr a = insn();
    VpmuHelperPolicy pol;
    VpmuHelperStats st;
    VpmuPerfSys sys;
    VpmuHelper *h;
    char err[200];
    int fd[8];

    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_policy(h, &pol);
    ck_assert(!pol.operator_metrics);
    ck_assert_int_eq(pol.operator_profile, VPMU_PROFILE_DENY);
    vpmu_helper_perf_sys(h, &sys);
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1, op), -EACCES);
    vpmu_helper_stats(h, &st);
    ck_assert_str_eq(st.last_message, "operator events: the policy of VM "
                     "'web' does not allow them (operator = no)");
    vpmu_helper_free(h);

    write_file(dir, "web.conf", "events = allow 0xc0\noperator = yes\n"
               "operator-profile = stack\n");
    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_policy(h, &pol);
    ck_assert(pol.operator_metrics);
    /* The hello carries the profile policy too (bits 4-5). */
    ck_assert_int_eq(pol.operator_profile, VPMU_PROFILE_STACK);
    vpmu_helper_perf_sys(h, &sys);
    /* Cache misses: outside the guest's filter, the operator's to count. */
    a.config = PERF_COUNT_HW_CACHE_MISSES;
    for (int i = 0; i < 8; i++) {
        fd[i] = sys.open(sys.ctx, &a, getpid(), -1, -1, op);
        ck_assert_int_ge(fd[i], 0);
    }
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1, op), -EBUSY);
    ck_assert_int_eq(sys.close(sys.ctx, fd[0]), 0);
    fd[0] = sys.open(sys.ctx, &a, getpid(), -1, -1, op);
    ck_assert_int_ge(fd[0], 0);
    /* ... and it was never the guest's to open. */
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1, 0), -EACCES);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(sys.close(sys.ctx, fd[i]), 0);
    }
    /* A profile's event: one, released as a profile's on close. */
    fd[0] = sys.open(sys.ctx, &a, getpid(), -1, -1, VPMU_PERF_OPEN_PROFILE);
    ck_assert_int_ge(fd[0], 0);
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1,
                              VPMU_PERF_OPEN_PROFILE), -EBUSY);
    ck_assert_int_eq(sys.close(sys.ctx, fd[0]), 0);
    fd[0] = sys.open(sys.ctx, &a, getpid(), -1, -1, VPMU_PERF_OPEN_PROFILE);
    ck_assert_int_ge(fd[0], 0);
    ck_assert_int_eq(sys.close(sys.ctx, fd[0]), 0);
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.opens, 11);
    ck_assert_uint_eq(st.refusals, 3);
    vpmu_helper_free(h);
}
END_TEST

/* Down: that open fails, with why.  Back: the next one connects again. */
START_TEST(test_restart)
{
    struct perf_event_attr a = insn();
    VpmuHelperStats st;
    VpmuPerfSys sys;
    VpmuHelper *h;
    char err[200], want[240];
    int fd;

    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_perf_sys(h, &sys);
    stop_server();
    ck_assert_int_eq(sys.open(sys.ctx, &a, getpid(), -1, -1, 0),
                     -ENOTCONN);
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.failures, 1);
    ck_assert_int_eq(st.last_error, -ENOTCONN);
    snprintf(want, sizeof(want), "vpmu-helper %s: No such file or directory",
             sock);
    ck_assert_str_eq(st.last_message, want);
    start_server();
    fd = sys.open(sys.ctx, &a, getpid(), -1, -1, 0);
    ck_assert_int_ge(fd, 0);
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.connects, 2);
    ck_assert_uint_eq(st.opens, 1);
    ck_assert_int_eq(sys.close(sys.ctx, fd), 0);
    vpmu_helper_free(h);
}
END_TEST

static unsigned logs;
static char last_log[600];

static void count_log(void *opaque, const char *msg)
{
    logs++;
    snprintf(last_log, sizeof(last_log), "%s", msg);
}

/*
 * QEMU's path on a host with KVM's mediated vPMU: the perf source's
 * cycles probe goes to the helper, whose perf_event_open is refused.  The
 * helper's reply names the cause (query-vpmu's helper last-error), the
 * source's own check finds it too (its query-vpmu reason, its line), and
 * the guest keeps the task clock, which the helper opens.
 */
START_TEST(test_mediated)
{
    char root[] = SYSROOT_TEMPLATE;
    SysrootSpec host = { .kvm_amd = "Y\n", .osrelease = "7.0.0\n" };
    VpmuPerfSourceOpts o = { .exclude_host = true, .sysroot = root,
                             .log = count_log };
    VpmuPerfSource *src;
    VpmuHelperStats st;
    VpmuHostCheck hc;
    VpmuPerfSys sys;
    VpmuHelper *h;
    char err[200];

    sysroot_make(root, &host);
    stop_server();
    server_mediated = true;
    server_sysroot = root;
    start_server();
    write_file(dir, "web.conf", "counters = 3\n");   /* every event */
    ck_assert_int_eq(vpmu_helper_connect(sock, &h, err, sizeof(err)), 0);
    vpmu_helper_perf_sys(h, &sys);
    o.sys = &sys;
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), 0);
    ck_assert_uint_eq(vpmu_perf_source_events(src),
                      VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) |
                      VPMU_EVENT_BIT(VPMU_EVENT_REF_CYCLES));
    vpmu_helper_stats(h, &st);
    ck_assert_uint_eq(st.refusals, 1);
    ck_assert_uint_eq(st.opens, 1);             /* the task-clock probe */
    ck_assert_int_eq(st.last_error, -EOPNOTSUPP);
    ck_assert_str_eq(st.last_message, "KVM's mediated vPMU is on (kvm_amd): "
                     "perf refuses events that count guests; run VMs "
                     "without vpmu, or load kvm_amd with "
                     "enable_mediated_pmu=0");
    vpmu_perf_source_host(src, &hc);
    ck_assert_int_eq(hc.mode, VPMU_HOST_MODE_MEDIATED);
    ck_assert_str_eq(hc.module, "kvm_amd");
    ck_assert_uint_eq(logs, 1);
    ck_assert_ptr_nonnull(strstr(last_log, "vpmu-perf: KVM's mediated vPMU "
                                 "is on (kvm_amd.enable_mediated_pmu=Y) and "
                                 "perf refused one (EOPNOTSUPP)"));
    vpmu_perf_source_free(src);
    vpmu_helper_free(h);
    server_mediated = false;
    server_sysroot = NULL;
    sysroot_remove(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("helper-client");
    TCase *tc = tcase_create("client");

    signal(SIGPIPE, SIG_IGN);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_connect);
    tcase_add_test(tc, test_connect_fails);
    tcase_add_test(tc, test_hello_refused);
    tcase_add_test(tc, test_open_and_refusal);
    tcase_add_test(tc, test_operator);
    tcase_add_test(tc, test_restart);
    tcase_add_test(tc, test_mediated);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
