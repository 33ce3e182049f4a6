/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scaled multiplexing policy of the perf source (opts.multiplex =
 * VPMU_PERF_MULTIPLEX_SCALED, vpmu/perf/perf-event.c).  What the guest
 * reads must be perf's own estimate of the whole count: the count times
 * time_enabled / time_running, both summed over the time the guest
 * counter was on, and never less than it read before.
 *
 * The host's multiplexing is a timeline of 0.1 ms grains (GRAIN): in each
 * the host runs the event or not (a rotation of perf_event_mux_interval_ms
 * = 4: on 4 ms, off 4 ms) and the vCPU thread is in guest mode or in host
 * mode (an exit: an exclude_host event runs and counts nothing, its times
 * go on).  The fake host counts one event per ns the event runs in guest
 * mode (fake-sys.h), so a guest that executes all the time has executed
 * exactly as many events as ns went by in guest mode: the count every
 * check below compares with.
 */
#include "perf-env.h"

#define INS     PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS
#define MS      1000000ull
#define GRAIN   (MS / 10)
#define ROT     (4 * MS)        /* on ROT, off ROT */
#define SPAN    (96 * MS)       /* 12 rotations of 2 * ROT */

typedef struct Plan {
    uint64_t on_at;         /* the host runs it in [on_at, on_at + ROT)
                               + k * 2 * ROT */
    uint64_t exit_every;    /* the last grain of each is host mode; 0: none */
    uint64_t read_every;    /* the guest reads; 0: only at the end */
} Plan;

static bool runs(const Plan *p, uint64_t t)
{
    return (t + 2 * ROT - p->on_at) % (2 * ROT) < ROT;
}

static bool in_host(const Plan *p, uint64_t t)
{
    return p->exit_every && t % p->exit_every >= p->exit_every - GRAIN;
}

/* What a read at @t must return: @got is what it returned. */
typedef void CheckFn(uint64_t t, uint64_t got);

/*
 * Counter 0 counts instructions from t = 0 to SPAN on the host event
 * @p plans; the guest reads it where @p says and each read goes to
 * @check after the counter was found never to go back.  USR only: the
 * core counts the WRMSR it serves at CPL 0 itself, one more event.
 */
static void run_plan(VpmuPerfMultiplex mode, const Plan *p, CheckFn *check)
{
    VpmuPerfSourceOpts o = { .multiplex = mode, .exclude_host = true };
    uint64_t prev = 0;

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    for (uint64_t t = 0; t < SPAN; t += GRAIN) {
        uint64_t end = t + GRAIN, got;

        env.fs.run_num = runs(p, t);
        env.fs.host_mode = in_host(p, t);
        fake_sys_run(&env.fs, INS, GRAIN);
        if (end != SPAN && (!p->read_every || end % p->read_every)) {
            continue;
        }
        got = rd(A_PMC(0));
        ck_assert_msg(got >= prev, "t = %llu ns: %llu after %llu",
                      (unsigned long long)end, (unsigned long long)got,
                      (unsigned long long)prev);
        check(end, got);
        prev = got;
    }
    ck_assert(perf_stats().multiplexed_reads > 0);
    env_down();
}

/*
 * Always in guest mode: after t ns the host ran the event R ns and
 * counted V = R; the guest counter has been on E = t ns.  perf's estimate
 * V * E / R = E = t, exactly, at every read once it ran at all (R > 0:
 * on_at = 0, from the first grain).
 */
static void check_all_guest(uint64_t t, uint64_t got)
{
    ck_assert_msg(got == t, "t = %llu ns: read %llu, executed %llu",
                  (unsigned long long)t, (unsigned long long)got,
                  (unsigned long long)t);
}

/*
 * Reads on the rotation's grid (every 1 ms, every 0.1 ms): each read's
 * interval ran wholly or not at all.  Scaling each interval by its own
 * enabled / running adds nothing for the ones that did not run, and the
 * guest would read the raw count (half of it here); carrying their time
 * to the next interval that ran, 4 ms less than ran at the end (0.958).
 */
START_TEST(test_every_ms)
{
    Plan p = { .read_every = MS };

    run_plan(VPMU_PERF_MULTIPLEX_SCALED, &p, check_all_guest);
}
END_TEST

START_TEST(test_every_tenth_ms)
{
    Plan p = { .read_every = GRAIN };

    run_plan(VPMU_PERF_MULTIPLEX_SCALED, &p, check_all_guest);
}
END_TEST

START_TEST(test_at_the_end)
{
    Plan p = { .read_every = 0 };

    run_plan(VPMU_PERF_MULTIPLEX_SCALED, &p, check_all_guest);
}
END_TEST

/*
 * Raw: the count as it ran, 4 ms of every 8: at a read at t = 8k + m ms
 * (m = 1..8), 4k ms and min(m, 4) ms more.
 */
static void check_raw(uint64_t t, uint64_t got)
{
    uint64_t k = (t - 1) / (2 * ROT), m = t - k * 2 * ROT;

    ck_assert_uint_eq(got, k * ROT + (m < ROT ? m : ROT));
}

START_TEST(test_raw_every_ms)
{
    Plan p = { .read_every = MS };

    run_plan(VPMU_PERF_MULTIPLEX_RAW, &p, check_raw);
}
END_TEST

/*
 * With exits: the last 0.1 ms of every ms is host mode, the first 0.9
 * guest mode (rate 1: 0.9 ms of events a ms).  The host's rotation runs
 * in its timer interrupt, which is an exit: the event goes on at 0.9 ms
 * (the start of a host grain) and off 4 ms later, at 4.9, and so on every
 * 8 ms.  The guest reads at the end of each exit (each ms), as it does in
 * its PMU MSR exits.
 *
 * Truth: at t ms the guest executed 0.9 t ms of events.
 * perf's estimate, from t = 0: the running time R holds, for each
 * [8j + 0.9, 8j + 4.9) ms that passed, 4 ms of which 0.4 host (one grain
 * at 8j + 0.9, 1.9, 2.9, 3.9) and 3.6 counted; one partly passed, up to
 * t = 8k + m (m = 1..4), holds m grains of host mode and (m - 1) * 0.9 ms
 * counted.  So V / R <= 0.9 at every read, with equality once the last
 * on-stretch is whole (m = 5..8): the estimate V * E / R is at most
 * 0.9 t and exactly 0.9 t at t = 8k + 5 .. 8k + 8 ms, all integers in
 * ns.  The counter reads the largest estimate so far, which is then
 * the last one (each earlier one was below its own 0.9 t).
 *
 * Scaling each ms by its own times instead: the ms ending at 8k + 1 ran
 * only its host grain (V 0: nothing, also with the time of the 3 ms
 * off before it carried over), 8k + 2..4 ran whole (0.9 each), 8k + 5 ran
 * 0.9 of its 1 ms, all guest (0.9 scaled to 1.0): 3.7 ms of events per
 * 7.2 executed, 0.51 of the truth, where the raw count is 0.50.
 */
static void check_exits(uint64_t t, uint64_t got)
{
    uint64_t m = t % (2 * ROT);

    ck_assert_msg(got <= t / 10 * 9, "t = %llu ns: read %llu, executed %llu",
                  (unsigned long long)t, (unsigned long long)got,
                  (unsigned long long)(t / 10 * 9));
    if (m == 0 || m > ROT) {
        ck_assert_msg(got == t / 10 * 9, "t = %llu ns: read %llu, "
                      "executed %llu", (unsigned long long)t,
                      (unsigned long long)got,
                      (unsigned long long)(t / 10 * 9));
    }
}

START_TEST(test_exits_every_ms)
{
    Plan p = { .on_at = 9 * GRAIN, .exit_every = MS, .read_every = MS };

    run_plan(VPMU_PERF_MULTIPLEX_SCALED, &p, check_exits);
}
END_TEST

START_TEST(test_exits_at_the_end)
{
    Plan p = { .on_at = 9 * GRAIN, .exit_every = MS, .read_every = 0 };

    run_plan(VPMU_PERF_MULTIPLEX_SCALED, &p, check_exits);
}
END_TEST

/*
 * Monotonic and counted once.  Enabled 400, running 100, counting 100:
 * 100 * 400 / 100 = 400.  Then 100 running wholly in host mode (0
 * events): the estimate falls to 100 * 500 / 200 = 250, the counter stays
 * at 400.  Then 300 running wholly in guest mode: 400 * 800 / 500 = 640,
 * the estimate, not 400 + 300 nor 400 + 640.  Raw: 100, 100, 400.
 * scaled_reads counts the reads whose credit is not what the host
 * counted (400 for 100, 240 for 300; not the 0 for 0); the first read
 * alone found its interval multiplexed.
 */
static void hold_case(VpmuPerfMultiplex mode, const uint64_t *want,
                      uint64_t scaled_reads)
{
    VpmuPerfSourceOpts o = { .multiplex = mode, .exclude_host = true };

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    env.fs.run_den = 4;
    fake_sys_run(&env.fs, INS, 400);
    ck_assert_uint_eq(rd(A_PMC(0)), want[0]);
    env.fs.run_den = 1;
    env.fs.host_mode = true;
    fake_sys_run(&env.fs, INS, 100);
    ck_assert_uint_eq(rd(A_PMC(0)), want[1]);
    env.fs.host_mode = false;
    fake_sys_run(&env.fs, INS, 300);
    ck_assert_uint_eq(rd(A_PMC(0)), want[2]);
    ck_assert_uint_eq(perf_stats().multiplexed_reads, 1);
    ck_assert_uint_eq(perf_stats().lost_ns, 300);
    ck_assert_uint_eq(perf_stats().scaled_reads, scaled_reads);
    env_down();
}

START_TEST(test_hold)
{
    static const uint64_t scaled[] = { 400, 400, 640 };
    static const uint64_t raw[] = { 100, 100, 400 };

    hold_case(VPMU_PERF_MULTIPLEX_SCALED, scaled, 2);
    hold_case(VPMU_PERF_MULTIPLEX_RAW, raw, 0);
}
END_TEST

/*
 * The span is one stretch of the guest counter being on: the guest
 * measures across its enables (Linux turns a counter off at every context
 * switch and ends each perf event with it off), so a span's estimate must
 * not reach into the next.  Each case: a first span, the guest turns the
 * counter off (the host event runs on, soft: 1000 enabled, 500 run and
 * counted, none of it the guest's), then on for a second span.
 * - Full contention first (the nested suite's "contended" loop): 400
 *   enabled, never run: 0.  Then 100 running and counted: 100 more.  One
 *   span since the open would scale the 100 by 500 / 100: 500.
 * - A rate that changes: 400 enabled, 100 run and counted: 400.  Then 100
 *   running, 50 of them in host mode: 50 counted, 450.  One span since
 *   the open: 150 * 500 / 200 = 375, and the counter would stay at 400.
 */
static void span_case(uint64_t first_run_num, uint64_t first, uint64_t host,
                      uint64_t second)
{
    VpmuPerfSourceOpts o = { .multiplex = VPMU_PERF_MULTIPLEX_SCALED,
                             .exclude_host = true };

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    env.fs.run_num = first_run_num;
    env.fs.run_den = 4;
    fake_sys_run(&env.fs, INS, 400);
    ck_assert_uint_eq(rd(A_PMC(0)), first);
    wr(EVTSEL(0), EV_INSTRUCTIONS | USR);
    env.fs.run_num = 1;
    env.fs.run_den = 2;
    fake_sys_run(&env.fs, INS, 1000);
    ck_assert_uint_eq(rd(A_PMC(0)), first);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    env.fs.run_den = 1;
    env.fs.host_mode = true;
    fake_sys_run(&env.fs, INS, host);
    env.fs.host_mode = false;
    fake_sys_run(&env.fs, INS, 100 - host);
    ck_assert_uint_eq(rd(A_PMC(0)), second);
    ck_assert_uint_eq(perf_stats().opens, 1);
    env_down();
}

START_TEST(test_span_per_enable)
{
    span_case(0, 0, 0, 100);
    span_case(1, 400, 50, 450);
}
END_TEST

/*
 * A host event taken back from the parked ones starts a new span.  400
 * enabled, 100 counted: 400; then 400 running in host mode: 100 * 800 /
 * 500 = 160, the counter holds 400.  Counter 0 moves to cycles and back
 * (instructions parked, then reused: RESET).  100 running and counted:
 * 100 more, 500.  The old span would give 200 * 900 / 600 = 300, below
 * the 400 held: nothing.
 */
START_TEST(test_span_reuse)
{
    VpmuPerfSourceOpts o = { .multiplex = VPMU_PERF_MULTIPLEX_SCALED,
                             .exclude_host = true };

    env_up(HOST_HW, &o);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    env.fs.run_den = 4;
    fake_sys_run(&env.fs, INS, 400);
    ck_assert_uint_eq(rd(A_PMC(0)), 400);
    env.fs.run_den = 1;
    env.fs.host_mode = true;
    fake_sys_run(&env.fs, INS, 400);
    ck_assert_uint_eq(rd(A_PMC(0)), 400);
    env.fs.host_mode = false;
    wr(EVTSEL(0), EV_CYCLES | EOU);
    wr(EVTSEL(0), EV_INSTRUCTIONS | EN | USR);
    ck_assert_uint_eq(perf_stats().reuses, 1);
    fake_sys_run(&env.fs, INS, 100);
    ck_assert_uint_eq(rd(A_PMC(0)), 500);
    env_down();
}
END_TEST

static Suite *scaled_suite(void)
{
    Suite *s = suite_create("perf-scaled");
    TCase *tc = tcase_create("fake-sys");

    tcase_add_test(tc, test_every_ms);
    tcase_add_test(tc, test_every_tenth_ms);
    tcase_add_test(tc, test_at_the_end);
    tcase_add_test(tc, test_raw_every_ms);
    tcase_add_test(tc, test_exits_every_ms);
    tcase_add_test(tc, test_exits_at_the_end);
    tcase_add_test(tc, test_hold);
    tcase_add_test(tc, test_span_per_enable);
    tcase_add_test(tc, test_span_reuse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(scaled_suite());
}
