/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf source with the real system calls on this host, which has no
 * hardware PMU: cycles come from the vCPU thread's task clock at
 * tsc_hz.  A host with a hardware PMU (or without perf) skips
 * ("1..0 # SKIP <why>").
 *
 * Bounds: the task clock counts the thread's on-CPU time while the event
 * is enabled.  It is compared with CLOCK_THREAD_CPUTIME_ID around the
 * busy loop (inside the enabled window: a lower bound) and with
 * CLOCK_MONOTONIC around the whole window (a thread runs no longer than
 * the wall clock: an upper bound).  The two kernel clocks are not the
 * same clock (perf_clock() vs the scheduler's rq clock) and were measured
 * to disagree by up to 0.3% on this paravirtual host, so both bounds get
 * 1% slack.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "pmu-priv.h"
#include <vpmu/perf.h>

#include "check-main.h"

#define A_PMC0          0x4C1u      /* IA32_A_PMC0 (SDM Vol. 4 Table 2-2) */
#define EVTSEL0         0x186u      /* IA32_PERFEVTSEL0 */
#define GLOBAL_STATUS   0x38Eu
/* IA32_PERFEVTSELx (SDM Vol. 3B Figure 20-6): USR, OS, INT, EN */
#define EOU             ((1ull << 16) | (1ull << 17) | (1ull << 22))
#define INT             (1ull << 20)
#define EV_CYCLES       0x3Cull
#define MASK48          ((1ull << 48) - 1)
#define TSC_HZ          2500000000ull
#define SLACK_PCT       1

static VpmuPerfSource *src;
static VpmuPmu *pmu;
static unsigned pmis, logs;
static volatile sig_atomic_t signals;

static void on_pmi(void *opaque)
{
    pmis++;
}

static void on_log(void *opaque, const char *msg)
{
    logs++;
}

static void on_signal(int sig)
{
    signals++;
}

static uint64_t now_ns(clockid_t clk)
{
    struct timespec ts;

    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void burn(uint64_t cpu_ns)
{
    uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
    volatile uint64_t x = 0;

    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end && !signals) {
        for (unsigned i = 0; i < 10000; i++) {
            x += i;
        }
    }
    (void)x;    /* clang: "set but not used", volatile or not */
}

static void up(const VpmuPerfSys *sys, int sig)
{
    VpmuPerfSourceOpts o = { .tsc_hz = TSC_HZ, .exclude_host = true,
                             .notify_signal = sig, .sys = sys,
                             .log = on_log };
    VpmuPmuOpts po = { .source_ops = vpmu_perf_source_ops(), .pmi = on_pmi };
    VpmuConfig cfg;

    pmis = logs = 0;
    signals = 0;
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), 0);
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.events = vpmu_perf_source_events(src);
    po.source = src;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &po, &pmu, NULL, 0), 0);
}

static void down(void)
{
    vpmu_pmu_free(pmu);
    vpmu_perf_source_free(src);
}

static uint64_t rd(uint32_t msr)
{
    uint64_t v;

    ck_assert_int_eq(vpmu_pmu_rdmsr(pmu, msr, &v), 0);
    return v;
}

START_TEST(test_fallback_detected)
{
    VpmuPerfStats s;

    up(NULL, 0);
    ck_assert_uint_eq(vpmu_perf_source_events(src),
                      VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) |
                      VPMU_EVENT_BIT(VPMU_EVENT_REF_CYCLES));
    ck_assert(!vpmu_perf_source_raw_events(src));
    vpmu_perf_source_stats(src, &s);
    ck_assert(!s.hw_pmu);
    ck_assert_uint_eq(logs, 1);
    down();
}
END_TEST

START_TEST(test_cycles_count)
{
    uint64_t w0, w1, b0, b1, v, lo, hi;

    up(NULL, 0);
    w0 = now_ns(CLOCK_MONOTONIC);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, EVTSEL0, EV_CYCLES | EOU), 0);
    b0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    burn(50000000);                     /* 50 ms of CPU */
    b1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    v = rd(A_PMC0);
    w1 = now_ns(CLOCK_MONOTONIC);
    /* ticks = ns * 2.5 GHz: 2.5 per ns. */
    lo = (b1 - b0) * 5 / 2 * (100 - SLACK_PCT) / 100;
    hi = (w1 - w0) * 5 / 2 * (100 + SLACK_PCT) / 100;
    printf("# cycles %llu, thread cpu %llu ns, wall %llu ns\n",
           (unsigned long long)v, (unsigned long long)(b1 - b0),
           (unsigned long long)(w1 - w0));
    ck_assert_uint_ge(v, lo);
    ck_assert_uint_le(v, hi);
    down();
}
END_TEST

START_TEST(test_overflow_signal)
{
    const uint64_t n = TSC_HZ / 200;    /* 5 ms of CPU = 12,500,000 ticks */
    int sig = SIGRTMIN + 5;
    uint64_t v, w0, hi;

    ck_assert_ptr_ne(signal(sig, on_signal), SIG_ERR);
    up(NULL, sig);
    w0 = now_ns(CLOCK_MONOTONIC);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, A_PMC0, (0 - n) & MASK48), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, EVTSEL0, EV_CYCLES | EOU | INT), 0);
    burn(2000000000ull);                /* until the signal; at most 2 s */
    ck_assert_int_ge(signals, 1);
    ck_assert_int_eq(vpmu_perf_source_service(src), 1);
    ck_assert_uint_eq(rd(GLOBAL_STATUS), 1);
    ck_assert_uint_eq(pmis, 1);
    /*
     * Wrapped, not early: the counter now holds what was counted past
     * 2^48, i.e. all ticks since the enable minus n, and all ticks are
     * at most the wall time at 2.5 per ns (+1% slack, see the top).
     */
    v = rd(A_PMC0);
    hi = (now_ns(CLOCK_MONOTONIC) - w0) * 5 / 2 * (100 + SLACK_PCT) / 100;
    ck_assert_uint_le(v, hi - n);
    down();
}
END_TEST

/* --- an fd opened elsewhere (a privileged helper, here the test) -------- */

static int live[1024];
static unsigned helper_opens, helper_closes, bad_closes;

static int helper_open(void *ctx, struct perf_event_attr *attr, pid_t pid,
                       int cpu, int group_fd, unsigned long flags)
{
    long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
    int moved;

    if (fd < 0) {
        return -errno;
    }
    /* As if received over SCM_RIGHTS: another number, same event. */
    moved = fcntl((int)fd, F_DUPFD_CLOEXEC, 500);
    close((int)fd);
    if (moved < 0 || moved >= 1024) {
        return -EMFILE;
    }
    live[moved]++;
    helper_opens++;
    return moved;
}

static int helper_close(void *ctx, int fd)
{
    if (fd < 0 || fd >= 1024 || live[fd] != 1) {
        bad_closes++;
        return -EBADF;
    }
    live[fd]--;
    helper_closes++;
    return close(fd);
}

START_TEST(test_fd_from_elsewhere)
{
    VpmuPerfSys sys = { .open = helper_open, .close = helper_close };
    int fd;

    up(&sys, 0);
    /* The probes went through the helper too: cycles (ENOENT), clock. */
    ck_assert_uint_eq(helper_opens, 1);
    ck_assert_uint_eq(helper_closes, 1);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, EVTSEL0, EV_CYCLES | EOU), 0);
    ck_assert_uint_eq(helper_opens, 2);
    for (fd = 500; fd < 1024 && !live[fd]; fd++) {
    }
    ck_assert_int_lt(fd, 1024);
    burn(10000000);
    /* Counted through that fd: 10 ms of CPU is about 25,000,000 ticks. */
    ck_assert_uint_gt(rd(A_PMC0), 0);
    down();
    ck_assert_uint_eq(helper_closes, 2);
    ck_assert_uint_eq(bad_closes, 0);
    ck_assert_int_eq(live[fd], 0);
    ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
    ck_assert_int_eq(errno, EBADF);
}
END_TEST

/* The tests need a host without a hardware PMU but with perf. */
static const char *skip_reason(void)
{
    VpmuPerfSource *probe;
    VpmuPerfStats s;
    uint32_t events;

    if (vpmu_perf_source_new(NULL, &probe) < 0) {
        return "cannot create a perf source";
    }
    vpmu_perf_source_stats(probe, &s);
    events = vpmu_perf_source_events(probe);
    vpmu_perf_source_free(probe);
    if (s.hw_pmu) {
        return "the host has a hardware PMU; these tests are for the "
               "task-clock fallback (test-perf covers the hardware path)";
    }
    return events ? NULL : "perf_event_open is not available here";
}

int main(void)
{
    const char *why = skip_reason();
    Suite *s;
    TCase *tc;

    if (why) {
        return skip_suite(why);
    }
    s = suite_create("perf-host");
    tc = tcase_create("task-clock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_fallback_detected);
    tcase_add_test(tc, test_cycles_count);
    tcase_add_test(tc, test_overflow_signal);
    tcase_add_test(tc, test_fd_from_elsewhere);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
