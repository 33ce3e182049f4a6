/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf counting source on the fake system-call layer (fake-sys.h):
 * options, the host probe, the event mapping into perf_event_attr, the
 * overflow path through service(), multiplexing, pinned failures, reuse
 * and lazy release, and every failure at every call site.  Each test
 * ends with env_down(), which checks every fd was closed exactly once.
 */
#include "perf-env.h"

#include <unistd.h>

#define HOST_TID 4242

/* The probe: cycles first, then the 6 other generic events = 7 opens. */
#define HW_PROBES 7

START_TEST(test_opts_invalid)
{
    VpmuPerfSourceOpts o = { .multiplex = 7 };
    VpmuPerfSource *src = (void *)1;

    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), -EINVAL);
    ck_assert_ptr_null(src);
    o = (VpmuPerfSourceOpts) { .tsc_hz = 20000000000ull };
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), -EINVAL);
    o = (VpmuPerfSourceOpts) { .notify_signal = -1 };
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), -EINVAL);
    o = (VpmuPerfSourceOpts) { .guest_vendor = 9 };
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), -EINVAL);
    ck_assert_int_eq(vpmu_perf_source_new(NULL, NULL), -EINVAL);
    vpmu_perf_source_free(NULL);
}
END_TEST

START_TEST(test_probe_hw)
{
    VpmuPerfSourceOpts o = { .host_vendor = VPMU_VENDOR_INTEL,
                             .guest_vendor = VPMU_VENDOR_INTEL };

    env_up(true, &o);
    /* All 7 generic events open; Topdown Slots (bit 7) has none. */
    ck_assert_uint_eq(vpmu_perf_source_events(env.src), 0x7f);
    ck_assert(vpmu_perf_source_raw_events(env.src));
    ck_assert(perf_stats().hw_pmu);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES);
    ck_assert_uint_eq(fake_sys_open_fds(&env.fs), 0);
    ck_assert_uint_eq(env.logs, 0);
    env_down();
}
END_TEST

START_TEST(test_probe_fallback)
{
    env_up(false, NULL);
    /* cycles -> ENOENT, then the task clock opens: 2 calls, 1 log line. */
    ck_assert_uint_eq(vpmu_perf_source_events(env.src),
                      VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) |
                      VPMU_EVENT_BIT(VPMU_EVENT_REF_CYCLES));
    ck_assert(!vpmu_perf_source_raw_events(env.src));
    ck_assert(!perf_stats().hw_pmu);
    ck_assert_uint_eq(env.fs.open_calls, 2);
    ck_assert_uint_eq(env.logs, 1);
    ck_assert_ptr_nonnull(strstr(env.log, "no hardware PMU"));
    env_down();
}
END_TEST

/*
 * A hardware PMU whose cycles are refused (EACCES: vpmu-helper's policy
 * denies them) still offers the other 6 generic events that open: cycles
 * then 6 probes = 7 calls, one log line, no task-clock fallback.
 */
START_TEST(test_probe_cycles_refused)
{
    VpmuPerfSourceOpts o = { .host_vendor = VPMU_VENDOR_INTEL,
                             .guest_vendor = VPMU_VENDOR_INTEL };
    FakeSys fs;
    VpmuPerfSource *src;
    VpmuPerfStats st;

    fake_sys_init(&fs, true);
    fs.fail[FAKE_OPEN] = -EACCES;       /* the first open: cycles */
    o.sys = &fs.sys;
    o.log = NULL;
    ck_assert_int_eq(vpmu_perf_source_new(&o, &src), 0);
    ck_assert_uint_eq(vpmu_perf_source_events(src),
                      0x7f & ~VPMU_EVENT_BIT(VPMU_EVENT_CYCLES));
    vpmu_perf_source_stats(src, &st);
    ck_assert(st.hw_pmu);
    ck_assert_uint_eq(fs.open_calls, HW_PROBES);
    ck_assert_uint_eq(fake_sys_open_fds(&fs), 0);
    vpmu_perf_source_free(src);
    ck_assert(fake_sys_all_closed_once(&fs));
}
END_TEST

START_TEST(test_no_perf_at_all)
{
    env_up(HOST_NO_PERF, NULL);
    /*
     * Every open refused with EACCES, which does not say "no hardware
     * PMU": the 7 generic events are probed, then the task clock: 8 calls.
     */
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 1);
    ck_assert_uint_eq(vpmu_perf_source_events(env.src), 0);
    ck_assert_uint_eq(env.logs, 1);
    ck_assert_ptr_nonnull(strstr(env.log, "unavailable"));
    /* Not an error for the guest: its counters count nothing. */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_UNSUPPORTED);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 1);
    env_down();
}
END_TEST

/* The attr of a guest counter, opened straight through the ops. */
static FakeFd *open_direct(VpmuArchEvent e, uint64_t raw, bool usr, bool os,
                           uint64_t period, VpmuSourceHandle **h, int *r)
{
    VpmuSourceAttr a = {
        .event = e, .raw_config = raw, .count_user = usr, .count_kernel = os,
        .count_host = true, .count_guest = true, .sample_period = period,
    };
    unsigned before = env.fs.nfds;

    *r = vpmu_perf_source_ops()->open(env.src, &a, h);
    return env.fs.nfds > before ? fake_sys_last(&env.fs) : NULL;
}

START_TEST(test_mapping_hw)
{
    static const uint64_t generic[] = {
        PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS,
        PERF_COUNT_HW_REF_CPU_CYCLES, PERF_COUNT_HW_CACHE_REFERENCES,
        PERF_COUNT_HW_CACHE_MISSES, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
        PERF_COUNT_HW_BRANCH_MISSES,
    };
    VpmuPerfSourceOpts o = {
        .host_vendor = VPMU_VENDOR_INTEL, .guest_vendor = VPMU_VENDOR_INTEL,
        .exclude_host = true, .pinned = true, .tid = HOST_TID,
        .notify_signal = 40,
    };
    const VpmuSourceOps *ops;
    VpmuSourceHandle *h;
    FakeFd *e;
    int r;

    env_up(true, &o);
    ops = vpmu_perf_source_ops();
    for (unsigned i = 0; i < VPMU_ARRAY_SIZE(generic); i++) {
        e = open_direct(i, 0, true, false, 1000 + i, &h, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_uint_eq(e->attr.type, PERF_TYPE_HARDWARE);
        ck_assert_uint_eq(e->attr.config, generic[i]);
        /* USR only: the guest's kernel is excluded, the host as well. */
        ck_assert(!e->attr.exclude_user && e->attr.exclude_kernel);
        ck_assert(e->attr.exclude_host && e->attr.pinned);
        ck_assert(e->attr.disabled && !e->enabled);
        ck_assert_uint_eq(e->attr.sample_period, 1000 + i);
        ck_assert_uint_eq(e->attr.read_format,
                          PERF_FORMAT_TOTAL_TIME_ENABLED |
                          PERF_FORMAT_TOTAL_TIME_RUNNING);
        ck_assert_int_eq(e->sig, 40);
        ck_assert_int_eq(e->owner, HOST_TID);
        ck_assert(e->async);
        ops->close(env.src, h);
    }
    /* Topdown Slots has no generic event. */
    ck_assert_ptr_null(open_direct(VPMU_EVENT_TOPDOWN_SLOTS, 0, 1, 1, 5, &h,
                                   &r));
    ck_assert_int_eq(r, -EOPNOTSUPP);
    /* A generic event with CMASK cannot be expressed. */
    ck_assert_ptr_null(open_direct(VPMU_EVENT_CYCLES, 0x3c | CMASK(2), 1, 1,
                                   5, &h, &r));
    ck_assert_int_eq(r, -EOPNOTSUPP);
    /* Same vendor: a raw event passes, CMASK included; OS only. */
    e = open_direct(VPMU_EVENT_RAW, 0x01d1 | CMASK(1), false, true, 77, &h,
                    &r);
    ck_assert_int_eq(r, 0);
    ck_assert_uint_eq(e->attr.type, PERF_TYPE_RAW);
    ck_assert_uint_eq(e->attr.config, 0x01d1 | CMASK(1));
    ck_assert(e->attr.exclude_user && !e->attr.exclude_kernel);
    ops->close(env.src, h);
    env_down();
}
END_TEST

/*
 * A guest hypervisor's HostOnly/GuestOnly split has no perf_event_attr
 * field (exclude_host speaks of this host): refused, nothing opened.
 */
START_TEST(test_mapping_host_guest_split)
{
    VpmuPerfSourceOpts o = {
        .host_vendor = VPMU_VENDOR_AMD, .guest_vendor = VPMU_VENDOR_AMD,
        .exclude_host = true, .tid = HOST_TID, .notify_signal = 40,
    };
    VpmuSourceAttr a = {
        .event = VPMU_EVENT_INSTRUCTIONS, .count_user = true,
        .count_kernel = true, .count_host = true, .count_guest = false,
        .sample_period = 100,
    };
    VpmuSourceHandle *h = NULL;
    unsigned calls;

    env_up(true, &o);
    calls = env.fs.open_calls;
    ck_assert_int_eq(vpmu_perf_source_ops()->open(env.src, &a, &h),
                     -EOPNOTSUPP);
    a.count_host = false;
    a.count_guest = true;
    ck_assert_int_eq(vpmu_perf_source_ops()->open(env.src, &a, &h),
                     -EOPNOTSUPP);
    ck_assert_uint_eq(env.fs.open_calls, calls);
    env_down();
}
END_TEST

START_TEST(test_mapping_raw_other_vendor)
{
    VpmuPerfSourceOpts o = { .host_vendor = VPMU_VENDOR_AMD,
                             .guest_vendor = VPMU_VENDOR_INTEL };
    VpmuSourceHandle *h;
    int r;

    env_up(true, &o);
    ck_assert(!vpmu_perf_source_raw_events(env.src));
    ck_assert_ptr_null(open_direct(VPMU_EVENT_RAW, 0x01d1, 1, 1, 5, &h, &r));
    ck_assert_int_eq(r, -EOPNOTSUPP);
    /* Through the PMU, the core sees raw_events = false: UNSUPPORTED. */
    wr(EVTSEL(0), 0x01d1 | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_UNSUPPORTED);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES);
    env_down();
}
END_TEST

START_TEST(test_fallback_units)
{
    VpmuPerfSourceOpts o = { .tsc_hz = 3000000000ull, .exclude_host = true };
    FakeFd *e;

    env_up(false, &o);
    /*
     * GP0 at 2^48 - 10: a 10-tick period at 3 GHz is 10/3 ns = 3.33 ns,
     * rounded up to 4 ns so that the overflow is never early.
     */
    wr(A_PMC(0), MASK48 - 9);
    wr(EVTSEL(0), EV_CYCLES | USR | EN);
    e = fake_sys_last(&env.fs);
    ck_assert_uint_eq(e->attr.type, PERF_TYPE_SOFTWARE);
    ck_assert_uint_eq(e->attr.config, PERF_COUNT_SW_TASK_CLOCK);
    ck_assert_uint_eq(e->attr.sample_period, 4);
    /* Guest modes cannot be told apart by the task clock: no excludes. */
    ck_assert(!e->attr.exclude_user && !e->attr.exclude_kernel &&
              !e->attr.exclude_host);
    /* 3 ns = 9 ticks: one short of the overflow. */
    fake_sys_run(&env.fs, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 3);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    ck_assert_uint_eq(rd(A_PMC(0)), MASK48);
    /* 4 ns = 12 ticks: 2^48 - 10 + 12 wraps to 2. */
    fake_sys_run(&env.fs, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    ck_assert_uint_eq(rd(A_PMC(0)), 2);
    ck_assert_uint_eq(rd(GLOBAL_STATUS), 1);
    /*
     * The next period is 2^48 - 2 ticks = ceil((2^48 - 2) / 3) ns:
     * 2^48 = 281474976710656, minus 2 = 281474976710654, / 3 =
     * 93824992236884.67 -> 93824992236885.
     */
    ck_assert_uint_eq(e->attr.sample_period, 93824992236885ull);
    env_down();
}
END_TEST

START_TEST(test_conversions)
{
    /* floor(ns * hz / 1e9) and ceil(ticks * 1e9 / hz), at 2.5 GHz. */
    ck_assert_uint_eq(vpmu_perf_ns_to_ticks(1, 2500000000ull), 2);
    ck_assert_uint_eq(vpmu_perf_ns_to_ticks(1000000001ull, 2500000000ull),
                      2500000002ull);
    ck_assert_uint_eq(vpmu_perf_ticks_to_ns(5, 2500000000ull), 2);
    ck_assert_uint_eq(vpmu_perf_ticks_to_ns(6, 2500000000ull), 3);
    /* 2^48 ticks at 3 GHz: 93824 s + 2976710656 ticks = ...886 ns. */
    ck_assert_uint_eq(vpmu_perf_ticks_to_ns(1ull << 48, 3000000000ull),
                      93824992236886ull);
    /* The largest rate: (1e9 - 1) * 1e10 fits 64 bits. */
    ck_assert_uint_eq(vpmu_perf_ns_to_ticks(999999999ull, 10000000000ull),
                      9999999990ull);
}
END_TEST

START_TEST(test_overflow_hw)
{
    VpmuPerfSourceOpts o = { .notify_signal = 40 };
    FakeFd *e;

    env_up(true, &o);
    wr(A_PMC(0), MASK48 - 99);          /* 100 cycles to the overflow */
    wr(EVTSEL(0), EV_CYCLES | EOU | INT);
    e = fake_sys_last(&env.fs);
    ck_assert(e->enabled);
    ck_assert_uint_eq(e->attr.sample_period, 100);
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 99);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    ck_assert_uint_eq(env.pmis, 0);
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 1);
    /* GLOBAL_STATUS bit 0, the PMI, and the counter wrapped to 0. */
    ck_assert_uint_eq(rd(GLOBAL_STATUS), 1);
    ck_assert_uint_eq(env.pmis, 1);
    ck_assert_uint_eq(rd(A_PMC(0)), 0);
    /* A counter at 0 wraps after 2^48: updated in place, no reopen. */
    ck_assert_uint_eq(e->attr.sample_period, 1ull << 48);
    ck_assert_uint_eq(perf_stats().overflows, 1);
    ck_assert_uint_eq(perf_stats().opens, 1);
    env_down();
}
END_TEST

static void multiplex_case(VpmuPerfMultiplex mode, uint64_t expect)
{
    VpmuPerfSourceOpts o = { .multiplex = mode };

    env_up(true, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    /* The host runs the event a quarter of the time it is enabled. */
    env.fs.run_num = 1;
    env.fs.run_den = 4;
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 400);
    ck_assert_uint_eq(rd(A_PMC(0)), expect);
    ck_assert_uint_eq(perf_stats().multiplexed_reads, 1);
    /* Enabled 400, running 100: 300 lost, whatever the policy. */
    ck_assert_uint_eq(perf_stats().lost_ns, 300);
    /* Running the whole time again: that interval is not multiplexed. */
    env.fs.run_den = 1;
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 8);
    ck_assert_uint_eq(rd(A_PMC(0)), expect + 8);
    ck_assert_uint_eq(perf_stats().multiplexed_reads, 1);
    ck_assert_uint_eq(perf_stats().lost_ns, 300);
    env_down();
}

START_TEST(test_multiplex_raw)
{
    /* Raw (KVM): 400 * 1/4 = 100 events really counted. */
    multiplex_case(VPMU_PERF_MULTIPLEX_RAW, 100);
}
END_TEST

START_TEST(test_multiplex_scaled)
{
    /* Scaled: 100 * enabled 400 / running 100 = 400. */
    multiplex_case(VPMU_PERF_MULTIPLEX_SCALED, 400);
}
END_TEST

START_TEST(test_pinned_failure)
{
    VpmuPerfSourceOpts o = { .pinned = true };
    unsigned logs;

    env_up(true, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    wr(EVTSEL(1), EV_INSTRUCTIONS | EOU);
    logs = env.logs;
    ck_assert(fake_sys_fd(&env.fs, FAKE_FD_BASE + HW_PROBES)->attr.pinned);
    /* The host lost GP0's pinned event: read() returns 0 bytes. */
    fake_sys_fd(&env.fs, FAKE_FD_BASE + HW_PROBES)->error_state = true;
    rd(A_PMC(0));
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_SOURCE_ERROR);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(1)), VPMU_COUNTER_COUNTING);
    ck_assert_uint_eq(perf_stats().pinned_failures, 1);
    ck_assert_uint_eq(pmu_stats().source_errors, 1);
    ck_assert_uint_eq(env.logs, logs + 1);
    ck_assert_ptr_nonnull(strstr(env.log, "pinned"));
    /* Not parked: an event in error state is of no use. */
    ck_assert_uint_eq(perf_stats().parked, 0);
    ck_assert(!fake_sys_last(&env.fs)[-1].open);
    /* A second one is counted, not logged again. */
    fake_sys_last(&env.fs)->error_state = true;
    rd(A_PMC(1));
    ck_assert_uint_eq(perf_stats().pinned_failures, 2);
    ck_assert_uint_eq(env.logs, logs + 1);
    env_down();
}
END_TEST

/* Pinned guest events, and the host operator's never: the guest's win. */
START_TEST(test_operator_not_pinned)
{
    VpmuPerfSourceOpts o = { .pinned = true };
    VpmuSourceAttr a = operator_cycles();
    VpmuSourceHandle *h;

    env_up(true, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert(fake_sys_last(&env.fs)->attr.pinned);
    ck_assert_int_eq(vpmu_perf_source_ops()->open(env.src, &a, &h), 0);
    ck_assert(!fake_sys_last(&env.fs)->attr.pinned);
    vpmu_perf_source_ops()->close(env.src, h);
    env_down();
}
END_TEST

START_TEST(test_reuse_and_idle_release)
{
    VpmuPerfSourceOpts o = { .idle_passes = 2 };
    FakeFd *cycles;

    env_up(true, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    cycles = fake_sys_last(&env.fs);
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 50);
    ck_assert_uint_eq(rd(A_PMC(0)), 50);
    /* instructions: a new event; cycles is parked, disabled. */
    wr(EVTSEL(0), EV_INSTRUCTIONS | EOU);
    ck_assert(cycles->open && !cycles->enabled);
    ck_assert_uint_eq(perf_stats().parked, 1);
    /* cycles again: the parked event, RESET, no perf_event_open. */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 2);
    ck_assert(cycles->enabled);
    ck_assert_uint_eq(cycles->resets, 1);
    /*
     * 1 reuse: this one.  The instructions event was opened once, with
     * the period after vpmu counted the WRMSR that enabled it (+1
     * instruction at CPL 0: 2^48 - 1): vpmu_pmu_wrmsr() programs the
     * source at its end, not before and again after the count.
     */
    ck_assert_uint_eq(perf_stats().reuses, 1);
    /*
     * The reused event counts from 0 (RESET): 50 cycles before, +1 for
     * the WRMSR counted while GP0 counted instructions, + 7 now = 58.
     */
    fake_sys_run(&env.fs, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 7);
    ck_assert_uint_eq(rd(A_PMC(0)), 58);
    /* instructions is parked now: kept one pass, released at the 2nd. */
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    ck_assert_uint_eq(perf_stats().parked, 1);
    ck_assert_int_eq(vpmu_perf_source_service(env.src), 0);
    ck_assert_uint_eq(perf_stats().parked, 0);
    ck_assert_uint_eq(perf_stats().releases, 1);
    ck_assert(!fake_sys_last(&env.fs)->open);
    env_down();
}
END_TEST

START_TEST(test_no_reuse_option)
{
    VpmuPerfSourceOpts o = { .no_reuse = true };

    env_up(true, &o);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EOU);
    wr(EVTSEL(0), EV_CYCLES | EOU);
    /* Period change: reopened too (update says -EOPNOTSUPP). */
    wr(A_PMC(0), 5);
    /*
     * 4 opens: cycles; instructions (once: the WRMSR that enabled it is
     * counted before the source is programmed); cycles; the PMC write.
     */
    ck_assert_uint_eq(env.fs.open_calls, HW_PROBES + 4);
    ck_assert_uint_eq(fake_sys_open_fds(&env.fs), 1);
    ck_assert_uint_eq(perf_stats().reuses, 0);
    env_down();
}
END_TEST

/* --- every failure at every call site ----------------------------------- */

static const int errnos[] = { EMFILE, EACCES, ENOENT, EBUSY, EINVAL };

/* Bring the guest to the call at @site with its failure armed. */
static void drive_to(FakeSite site, int err)
{
    if (site == FAKE_OPEN || site == FAKE_FCNTL || site == FAKE_ENABLE) {
        env.fs.fail[site] = -err;
        wr(EVTSEL(0), EV_CYCLES | EOU);
        return;
    }
    wr(EVTSEL(0), EV_CYCLES | EOU);
    if (site == FAKE_RESET) {
        wr(EVTSEL(0), EV_INSTRUCTIONS | EOU);   /* parks cycles */
        env.fs.fail[site] = -err;
        wr(EVTSEL(0), EV_CYCLES | EOU);         /* takes it: RESET */
        return;
    }
    env.fs.fail[site] = -err;
    if (site == FAKE_READ) {
        rd(A_PMC(0));
    } else if (site == FAKE_PERIOD) {
        wr(A_PMC(0), 5);                        /* update: read, PERIOD */
    } else {
        /*
         * EN clear leaves the host event running until the guest has run
         * VPMU_PERF_OFF_TICKS times (test-perf-soft.c); then DISABLE.
         * EN set again meets the error.
         */
        wr(EVTSEL(0), EV_CYCLES | USR | OS);
        for (unsigned i = 0; i < VPMU_PERF_OFF_TICKS; i++) {
            vpmu_perf_source_ops()->tick(env.src);
        }
        wr(EVTSEL(0), EV_CYCLES | EOU);
    }
}

START_TEST(test_failures)
{
    VpmuPerfSourceOpts o = { .notify_signal = 40 };
    int err = errnos[_i % VPMU_ARRAY_SIZE(errnos)];
    FakeSite site = _i / VPMU_ARRAY_SIZE(errnos);
    VpmuPerfStats ps;

    env_up(true, &o);
    drive_to(site, err);
    ck_assert_int_eq(env.fs.fail[site], 0);     /* the call was made */
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_SOURCE_ERROR);
    ck_assert_uint_eq(pmu_stats().source_errors, 1);
    ps = perf_stats();
    ck_assert_uint_eq(ps.open_errors, site == FAKE_OPEN);
    ck_assert_uint_eq(ps.ioctl_errors, site != FAKE_OPEN);
    ck_assert_int_eq(ps.last_error, -err);
    ck_assert_uint_eq(ps.active, 0);
    /* The guest goes on: GP1 still works. */
    wr(EVTSEL(1), EV_INSTRUCTIONS | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(1)), VPMU_COUNTER_COUNTING);
    env_down();
}
END_TEST

static Suite *perf_suite(void)
{
    Suite *s = suite_create("perf");
    TCase *tc = tcase_create("fake-sys");

    tcase_add_test(tc, test_opts_invalid);
    tcase_add_test(tc, test_probe_hw);
    tcase_add_test(tc, test_probe_fallback);
    tcase_add_test(tc, test_probe_cycles_refused);
    tcase_add_test(tc, test_no_perf_at_all);
    tcase_add_test(tc, test_mapping_hw);
    tcase_add_test(tc, test_mapping_host_guest_split);
    tcase_add_test(tc, test_mapping_raw_other_vendor);
    tcase_add_test(tc, test_fallback_units);
    tcase_add_test(tc, test_conversions);
    tcase_add_test(tc, test_overflow_hw);
    tcase_add_test(tc, test_multiplex_raw);
    tcase_add_test(tc, test_multiplex_scaled);
    tcase_add_test(tc, test_pinned_failure);
    tcase_add_test(tc, test_operator_not_pinned);
    tcase_add_test(tc, test_reuse_and_idle_release);
    tcase_add_test(tc, test_no_reuse_option);
    tcase_add_loop_test(tc, test_failures, 0,
                        FAKE_SITE__COUNT * VPMU_ARRAY_SIZE(errnos));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(perf_suite());
}
