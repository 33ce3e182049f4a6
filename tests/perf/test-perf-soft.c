/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Soft toggles of the perf source (vpmu/perf/perf.c): a guest that turns
 * a counter off and on again (around every PMI, on every multiplexing
 * rotation) does not make the host disable and re-enable its event,
 * which reschedules the host's whole perf context.  The host event runs
 * on and what it counts while the guest counter is off is dropped.
 *
 * The fake host (fake-sys.h) counts only while an fd is enabled and
 * never signals by itself: a test calls vpmu_perf_source_service() where
 * the kernel would have signalled, i.e. when the host event has counted
 * its programmed period (FakeFd.attr.sample_period) since it was armed.
 * Every count below is derived from the runs the test makes.
 */
#include "perf-env.h"

#define CYC     PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES
#define SIG     { .host_vendor = VPMU_VENDOR_INTEL, .notify_signal = 40 }

static void run(uint64_t n)
{
    fake_sys_run(&env.fs, CYC, n);
}

static void tick(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        vpmu_perf_source_ops()->tick(env.src);
    }
}

/* Off and on by the selector and by the global enable: counts exact. */
START_TEST(test_toggle_exact)
{
    VpmuPerfSourceOpts o = SIG;
    FakeFd *e;

    env_up(HOST_HW, &o);
    wr(GLOBAL_CTRL, 1);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e = fake_sys_last(&env.fs);
    ck_assert_uint_eq(e->enables, 1);
    run(100);
    ck_assert_uint_eq(rd(A_PMC(0)), 100);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);        /* EN clear */
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_OFF);
    ck_assert(e->enabled);                      /* the host runs on */
    run(50);                                    /* not the guest's */
    ck_assert_uint_eq(rd(A_PMC(0)), 100);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    run(30);
    ck_assert_uint_eq(rd(A_PMC(0)), 130);
    wr(GLOBAL_CTRL, 0);
    run(20);
    ck_assert_uint_eq(rd(A_PMC(0)), 130);
    wr(GLOBAL_CTRL, 1);
    run(7);
    ck_assert_uint_eq(rd(A_PMC(0)), 137);
    ck_assert_uint_eq(e->enables, 1);
    ck_assert_uint_eq(e->disables, 0);
    ck_assert_uint_eq(perf_stats().soft_enables, 2);
    ck_assert_uint_eq(perf_stats().soft_releases, 0);
    ck_assert_uint_eq(perf_stats().opens, 1);
    env_down();
}
END_TEST

/*
 * 1000 cycles to the overflow; 400 counted, 300 dropped while off: the
 * host's countdown (1000) ends 300 before the guest's.  The enable does
 * not re-arm it: the core's new period (600) is only what was counted,
 * the overflow point is the same.  That early signal
 * makes no callback and re-arms the host with exactly what is left (300),
 * so the guest overflow comes neither early nor a period late.
 */
START_TEST(test_skew_rearm)
{
    VpmuPerfSourceOpts o = SIG;
    FakeFd *e;

    env_up(HOST_HW, &o);
    wr(A_PMC(0), MASK48 - 999);
    wr(EVTSEL(0), EV_CYCLES | EOU | INT);
    e = fake_sys_last(&env.fs);
    ck_assert_uint_eq(e->attr.sample_period, 1000);
    run(400);
    wr(EVTSEL(0), EV_CYCLES | USR | OS | INT);
    run(300);
    wr(EVTSEL(0), EV_CYCLES | EOU | INT);
    run(300);                                   /* host: 1000 */
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    ck_assert_uint_eq(env.pmis, 0);
    ck_assert_uint_eq(e->attr.sample_period, 300);
    ck_assert_uint_eq(rd(A_PMC(0)), MASK48 - 299);
    run(300);                                   /* guest: 1000 */
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(env.pmis, 1);
    ck_assert_uint_eq(rd(A_PMC(0)), 0);
    /* The wrap's new period (2^48) re-arms it whole: not skewed now. */
    ck_assert_uint_eq(e->attr.sample_period, 1ull << 48);
    ck_assert_uint_eq(e->enables, 1);
    env_down();
}
END_TEST

/*
 * A Linux PMI handler (intel_pmu_handle_irq): global disable, the new
 * period into the PMC, the status cleared, global enable.  The period
 * reaches the host once, at the enable (PERF_EVENT_IOC_PERIOD), counted
 * from there: what the handler itself ran while off (25) is dropped.
 */
START_TEST(test_pmi_handler)
{
    VpmuPerfSourceOpts o = SIG;
    unsigned periods;
    FakeFd *e;

    env_up(HOST_HW, &o);
    wr(GLOBAL_CTRL, 1);
    wr(A_PMC(0), MASK48 - 999);
    wr(EVTSEL(0), EV_CYCLES | EOU | INT);
    e = fake_sys_last(&env.fs);
    run(1000);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(env.pmis, 1);
    ck_assert_uint_eq(rd(GLOBAL_STATUS), 1);
    periods = e->periods;
    wr(GLOBAL_CTRL, 0);
    run(25);
    wr(A_PMC(0), MASK48 - 499);
    wr(GLOBAL_OVF_CTRL, 1);
    wr(GLOBAL_CTRL, 1);
    ck_assert_uint_eq(e->periods, periods + 1);
    ck_assert_uint_eq(e->attr.sample_period, 500);
    ck_assert_uint_eq(rd(GLOBAL_STATUS), 0);
    ck_assert_uint_eq(rd(A_PMC(0)), MASK48 - 499);
    run(499);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    run(1);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(env.pmis, 2);
    ck_assert_uint_eq(e->enables, 1);
    ck_assert_uint_eq(e->disables, 0);
    env_down();
}
END_TEST

/*
 * A counter the guest leaves off gives its host counter back after
 * VPMU_PERF_OFF_TICKS returns to the guest; what the host counted before
 * that (3) is dropped all the same.
 */
START_TEST(test_tick_release)
{
    VpmuPerfSourceOpts o = SIG;
    FakeFd *e;

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e = fake_sys_last(&env.fs);
    run(10);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);
    run(3);
    tick(VPMU_PERF_OFF_TICKS - 1);
    ck_assert(e->enabled);
    ck_assert_uint_eq(perf_stats().soft_releases, 0);
    tick(1);
    ck_assert(!e->enabled);
    ck_assert_uint_eq(e->disables, 1);
    ck_assert_uint_eq(perf_stats().soft_releases, 1);
    run(40);                                    /* disabled: nothing */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_uint_eq(e->enables, 2);
    ck_assert_uint_eq(perf_stats().soft_enables, 0);
    run(5);
    ck_assert_uint_eq(rd(A_PMC(0)), 15);
    env_down();
}
END_TEST

/* A signal (here GP1's overflow) disables the soft-off events too. */
START_TEST(test_signal_release)
{
    VpmuPerfSourceOpts o = SIG;
    FakeFd *e0;

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e0 = fake_sys_last(&env.fs);
    wr(A_PMC(1), MASK48 - 99);
    wr(EVTSEL(1), EV_CYCLES | EOU | INT);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);
    run(100);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(env.pmis, 1);
    ck_assert(!e0->enabled);
    ck_assert_uint_eq(perf_stats().soft_releases, 1);
    ck_assert_uint_eq(rd(A_PMC(0)), 0);
    env_down();
}
END_TEST

/* Another event for the counter: the soft-off one is parked disabled. */
START_TEST(test_park_soft_off)
{
    VpmuPerfSourceOpts o = SIG;
    FakeFd *e;

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e = fake_sys_last(&env.fs);
    run(8);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EOU);
    ck_assert(!e->enabled);
    ck_assert_uint_eq(e->disables, 1);
    ck_assert_uint_eq(perf_stats().parked, 1);
    wr(EVTSEL(0), EV_CYCLES | EOU);             /* back from the park */
    wr(A_PMC(0), 0);
    ck_assert_uint_eq(e->enables, 2);
    ck_assert_uint_eq(e->resets, 1);
    run(6);
    ck_assert_uint_eq(rd(A_PMC(0)), 6);
    env_down();
}
END_TEST

/*
 * Under KVM (exclude_host) an event counts nothing while the vCPU thread
 * serves an exit: one read per exit is enough.  A tick() marks the return
 * to the guest; without exclude_host every read goes to the host.
 */
START_TEST(test_one_read_per_exit)
{
    VpmuPerfSourceOpts o = SIG;
    unsigned reads;
    FakeFd *e;

    o.exclude_host = true;
    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e = fake_sys_last(&env.fs);
    tick(1);
    run(10);
    ck_assert_uint_eq(rd(A_PMC(0)), 10);
    reads = e->reads;
    ck_assert_uint_eq(rd(A_PMC(0)), 10);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);        /* fold, disable */
    wr(EVTSEL(0), EV_CYCLES | EOU);             /* update, enable */
    ck_assert_uint_eq(e->reads, reads);
    tick(1);
    run(5);
    ck_assert_uint_eq(rd(A_PMC(0)), 15);
    ck_assert_uint_eq(e->reads, reads + 1);
    env_down();

    o.exclude_host = false;
    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    e = fake_sys_last(&env.fs);
    tick(1);
    run(10);
    reads = e->reads;
    ck_assert_uint_eq(rd(A_PMC(0)), 10);
    ck_assert_uint_eq(rd(A_PMC(0)), 10);
    ck_assert_uint_eq(e->reads, reads + 2);
    env_down();
}
END_TEST

/*
 * The host operator's events are toggled for real (they stop to free the
 * host counter), and one that starts first makes the guest's events that
 * are off only for the guest give their counter back.
 */
START_TEST(test_operator_hard)
{
    VpmuPerfSourceOpts o = SIG;
    const VpmuSourceOps *ops = vpmu_perf_source_ops();
    VpmuSourceAttr a = operator_cycles();
    VpmuSourceHandle *h;
    FakeFd *g, *op;

    env_up(HOST_HW, &o);
    wr(GLOBAL_CTRL, 1);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    g = fake_sys_last(&env.fs);
    wr(EVTSEL(0), EV_CYCLES | USR | OS);        /* off for the guest */
    ck_assert(g->enabled);                      /* soft: the host runs on */
    ck_assert_int_eq(ops->open(env.src, &a, &h), 0);
    op = fake_sys_last(&env.fs);
    ck_assert_int_eq(ops->enable(env.src, h), 0);
    ck_assert(op->enabled && !g->enabled);
    ck_assert_uint_eq(g->disables, 1);
    ck_assert_uint_eq(perf_stats().soft_releases, 1);
    run(40);
    ck_assert_int_eq(ops->disable(env.src, h), 0);
    ck_assert(!op->enabled);
    ck_assert_uint_eq(op->disables, 1);
    run(60);                                    /* counted by no one */
    ck_assert_int_eq(ops->enable(env.src, h), 0);
    run(2);
    ck_assert_uint_eq(op->enables, 2);
    {
        uint64_t v;

        ck_assert_int_eq(ops->read(env.src, h, &v), 0);
        ck_assert_uint_eq(v, 42);               /* 40 + 2, not the 60 */
    }
    /* The guest's counter back on: its host event, enabled again. */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert(g->enabled);
    run(5);
    ck_assert_uint_eq(rd(A_PMC(0)), 5);
    ops->close(env.src, h);
    env_down();
}
END_TEST

static void count_call(void *ctx)
{
    (*(unsigned *)ctx)++;
}

/*
 * A host profile's sampling event (VPMU_PROFILE_COUNTER_ID): opened with
 * VPMU_PERF_OPEN_PROFILE for vpmu-helper, never pinned even where the
 * guest's are, with the overflow signal, toggled for real, never parked;
 * the service calls its overflow as a guest counter's, once per pass.
 */
START_TEST(test_profile_event)
{
    VpmuPerfSourceOpts o = SIG;
    const VpmuSourceOps *ops = vpmu_perf_source_ops();
    unsigned calls = 0;
    VpmuSourceAttr a = {
        .event = VPMU_EVENT_CYCLES, .count_user = true, .count_kernel = true,
        .count_host = true, .count_guest = true, .sample_period = 1000,
        .counter_id = VPMU_PROFILE_COUNTER_ID,
        .overflow = count_call, .overflow_ctx = &calls,
    };
    VpmuSourceHandle *h;
    uint64_t v;
    FakeFd *fd;

    o.pinned = true;
    env_up(HOST_HW, &o);
    ck_assert_int_eq(ops->open(env.src, &a, &h), 0);
    fd = fake_sys_last(&env.fs);
    ck_assert_uint_eq(fd->open_flags,
                      PERF_FLAG_FD_CLOEXEC | VPMU_PERF_OPEN_PROFILE);
    ck_assert(!fd->attr.pinned);
    ck_assert_uint_eq(fd->attr.sample_period, 1000);
    ck_assert(fd->sig == 40 && fd->async);
    ck_assert_int_eq(ops->enable(env.src, h), 0);
    run(1500);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(calls, 1);
    run(499);                                   /* 1999: no second period */
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    run(1);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(calls, 2);
    ck_assert_int_eq(ops->disable(env.src, h), 0);
    ck_assert(!fd->enabled);
    run(700);                                   /* off: counted by no one */
    ck_assert_int_eq(ops->read(env.src, h, &v), 0);
    ck_assert_uint_eq(v, 2000);
    ops->close(env.src, h);
    ck_assert(!fd->open);
    ck_assert_uint_eq(perf_stats().parked, 0);
    env_down();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("perf-soft");
    TCase *tc = tcase_create("soft-toggle");

    tcase_add_test(tc, test_toggle_exact);
    tcase_add_test(tc, test_operator_hard);
    tcase_add_test(tc, test_profile_event);
    tcase_add_test(tc, test_skew_rearm);
    tcase_add_test(tc, test_pmi_handler);
    tcase_add_test(tc, test_tick_release);
    tcase_add_test(tc, test_signal_release);
    tcase_add_test(tc, test_park_soft_off);
    tcase_add_test(tc, test_one_read_per_exit);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
