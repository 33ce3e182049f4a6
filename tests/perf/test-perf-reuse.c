/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How many guest counter programmings the perf source serves without
 * perf_event_open, driving an Intel v2 VpmuPmu (8 GP + 3 fixed) with the
 * MSR writes a Linux guest makes, on a fake host with a hardware PMU
 * (fake-sys.h counts every perf_event_open).
 *
 * Share = 1 - perf_event_open calls / programmings, where programmings =
 * VpmuStats.source_opens + source_reuses (every time the core asked the
 * source to back a counter with an event and period): KVM's figure for
 * the same ratio is 82.5% for a GP sampling event and 99.9% for fixed
 * counters (a6da0d77e98e); the target here is 99% for both.  The number
 * of perf_event_open calls is derived by hand and asserted exactly.
 */
#include "perf-env.h"

#define HW_PROBES       7
#define ROTATIONS       1000
#define OVERFLOWS       1000
#define TOGGLES         1000
#define SAMPLE_PERIOD   10000ull
#define GLOBAL_ALL      0x7000000ffull  /* 8 GP + 3 fixed enables */

/* 7 architectural events and 5 raw ones (host and guest both Intel). */
static const uint64_t events[12] = {
    0x003c, 0x00c0, 0x013c, 0x4f2e, 0x412e, 0x00c4, 0x00c5,
    0x01d1, 0x02d1, 0x04d1, 0x010e, 0x01c2,
};

static double share(unsigned opens)
{
    VpmuStats s = pmu_stats();
    double programmings = (double)(s.source_opens + s.source_reuses);

    return 1.0 - opens / programmings;
}

static void report(const char *what, unsigned opens)
{
    VpmuStats s = pmu_stats();

    printf("# %-34s programmings %6llu  perf_event_open %3u  share %.2f%%\n",
           what, (unsigned long long)(s.source_opens + s.source_reuses),
           opens, 100.0 * share(opens));
}

static void up(void)
{
    VpmuPerfSourceOpts o = { .host_vendor = VPMU_VENDOR_INTEL,
                             .guest_vendor = VPMU_VENDOR_INTEL,
                             .notify_signal = 40 };

    env_up(HOST_HW, &o);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES);
}

/*
 * Linux multiplexing 12 events on 8 counters: every rotation (perf's
 * hrtimer, 4 ms by default) it disables the PMU, stops the event that
 * leaves (EVTSEL without EN), gives its counter to the event that
 * enters (PMC = -period, EVTSEL with EN), and enables the PMU again
 * (x86_pmu_enable, intel_pmu_{disable,enable}_all).
 *
 * perf_event_open calls: the first 8 events, then the 4 events that
 * enter in rotations 1-4 (8, 9, 10, 11), each parking one that left
 * (0, 1, 2, 3).  From rotation 5 on, every entering event is one that
 * left 4 rotations (4 service passes < idle_passes 64) before: parked.
 * Total 8 + 4 = 12.
 */
START_TEST(test_reuse_multiplexing)
{
    unsigned slot[8];

    up();
    wr(GLOBAL_CTRL, 0);
    for (unsigned k = 0; k < 8; k++) {
        slot[k] = k;
        wr(A_PMC(k), (0 - SAMPLE_PERIOD) & MASK48);
        wr(EVTSEL(k), events[k] | EOU | INT);
    }
    wr(GLOBAL_CTRL, GLOBAL_ALL);
    for (unsigned r = 1; r <= ROTATIONS; r++) {
        unsigned leave = (r - 1) % 12, enter = (r + 7) % 12, k = 0;

        while (slot[k] != leave) {
            k++;
        }
        fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
                     1000);
        vpmu_perf_source_service(env.src);
        wr(GLOBAL_CTRL, 0);
        wr(EVTSEL(k), events[leave] | USR | OS | INT);
        wr(A_PMC(k), (0 - SAMPLE_PERIOD) & MASK48);
        wr(EVTSEL(k), events[enter] | EOU | INT);
        slot[k] = enter;
        wr(GLOBAL_CTRL, GLOBAL_ALL);
    }
    ck_assert_uint_eq(env.fs.open_calls - HW_PROBES, 12);
    ck_assert_uint_eq(perf_stats().opens, 12);
    report("GP multiplexing, 12 events on 8", 12);
    ck_assert(share(12) >= 0.99);
    env_down();
}
END_TEST

/*
 * perf record on GP0: each overflow reaches the guest's PMI handler,
 * which disables the PMU, reads and acks GLOBAL_STATUS, writes the next
 * period (PMC = -period), rewrites EVTSEL0 and enables the PMU.  The one
 * host event is opened once and updated in place ever after: 1 open.
 */
START_TEST(test_reuse_sampling)
{
    up();
    wr(A_PMC(0), (0 - SAMPLE_PERIOD) & MASK48);
    wr(EVTSEL(0), EV_CYCLES | EOU | INT);
    for (unsigned n = 1; n <= OVERFLOWS; n++) {
        fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
                     SAMPLE_PERIOD);
        ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
        ck_assert_uint_eq(env.pmis, n);
        wr(GLOBAL_CTRL, 0);
        ck_assert_uint_eq(rd(GLOBAL_STATUS), 1);
        wr(A_PMC(0), (0 - SAMPLE_PERIOD) & MASK48);
        wr(EVTSEL(0), EV_CYCLES | EOU | INT);
        wr(GLOBAL_OVF_CTRL, 1);
        wr(GLOBAL_CTRL, GLOBAL_ALL);
    }
    ck_assert_uint_eq(env.fs.open_calls - HW_PROBES, 1);
    report("GP sampling, 1000 overflows", 1);
    ck_assert(share(1) >= 0.99);
    env_down();
}
END_TEST

/*
 * The fixed counters switched off and on through FIXED_CTR_CTRL (as the
 * NMI watchdog and perf stat do): 3 opens, then disable/update/enable.
 */
START_TEST(test_reuse_fixed)
{
    up();
    wr(GLOBAL_CTRL, GLOBAL_ALL);
    wr(FIXED_CTR_CTRL, 0x333);
    for (unsigned n = 0; n < TOGGLES; n++) {
        fake_sys_run(&env.fs, PERF_TYPE_HARDWARE,
                     PERF_COUNT_HW_INSTRUCTIONS, 500);
        fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
                     700);
        wr(FIXED_CTR_CTRL, 0);
        wr(FIXED_CTR_CTRL, 0x333);
    }
    ck_assert_uint_eq(env.fs.open_calls - HW_PROBES, 3);
    report("fixed counters toggled", 3);
    ck_assert(share(3) >= 0.99);
    env_down();
}
END_TEST

/*
 * The host operator's events (operator.h) are opened with
 * VPMU_PERF_OPEN_OPERATOR, so that vpmu-helper counts them apart; they
 * are never parked, nor taken from the guest's parked events, and get no
 * overflow signal (they never overflow).
 */
START_TEST(test_operator_never_parked)
{
    const VpmuSourceOps *ops = vpmu_perf_source_ops();
    VpmuSourceAttr a = operator_cycles();
    VpmuSourceHandle *h;
    uint64_t reuses;
    FakeFd *fd;

    up();
    /* The guest's cycles event, parked when its counter moves on. */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EOU);
    ck_assert_uint_eq(perf_stats().parked, 1);
    ck_assert_int_eq(ops->open(env.src, &a, &h), 0);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 3);
    fd = fake_sys_last(&env.fs);
    ck_assert_uint_eq(fd->open_flags,
                      PERF_FLAG_FD_CLOEXEC | VPMU_PERF_OPEN_OPERATOR);
    ck_assert(fd->sig == 0 && !fd->async);
    ck_assert_uint_eq(perf_stats().parked, 1);
    ops->close(env.src, h);
    ck_assert(!fd->open);
    ck_assert_uint_eq(perf_stats().parked, 1);
    /* A guest's fixed counter is no operator's (its id has bit 30). */
    wr(GLOBAL_CTRL, GLOBAL_ALL);
    wr(FIXED_CTR_CTRL, 0x3);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 4);
    ck_assert_uint_eq(fake_sys_last(&env.fs)->open_flags,
                      PERF_FLAG_FD_CLOEXEC);
    wr(FIXED_CTR_CTRL, 0);
    /* The guest's next cycles takes its own parked event back. */
    reuses = perf_stats().reuses;
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 4);
    ck_assert_uint_eq(env.fs.fds[HW_PROBES].open_flags, PERF_FLAG_FD_CLOEXEC);
    ck_assert(env.fs.fds[HW_PROBES].enabled);
    ck_assert_uint_eq(perf_stats().reuses, reuses + 1);
    env_down();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("perf-reuse");
    TCase *tc = tcase_create("reuse");

    tcase_add_test(tc, test_reuse_multiplexing);
    tcase_add_test(tc, test_reuse_sampling);
    tcase_add_test(tc, test_reuse_fixed);
    tcase_add_test(tc, test_operator_never_parked);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
