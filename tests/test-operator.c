/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * VpmuOperator (include/vpmu/operator.h) on the fake source: the event
 * list an operator writes, what each event asks of the source, exact
 * counts, the guest first (turns on what its counters leave, with perf's
 * time enabled and running), a guest PMU on the same source that sees
 * nothing of it, and sources that fail.
 */
#include <errno.h>
#include <string.h>

#include <vpmu/vpmu.h>

#include "check-main.h"

#define ALL_NAMED ((1u << VPMU_EVENT__NAMED) - 1)

/* ---------------------------------------------------------------- parse */

typedef struct ParseCase {
    const char *text;
    uint32_t events;
    unsigned max;
    int ret;
    unsigned n;
    VpmuOperatorEvent want[3];
    const char *msg;            /* in the error message */
} ParseCase;

#define EV(e, u, k) { VPMU_EVENT_##e, u, k }

static const ParseCase parse_cases[] = {
    { "instructions", VPMU_EVENTS_ALL, 8, 0, 1,
      { EV(INSTRUCTIONS, true, true) }, NULL },
    { "instructions:u,cycles:k,branch-misses", VPMU_EVENTS_ALL, 8, 0, 3,
      { EV(INSTRUCTIONS, true, false), EV(CYCLES, false, true),
        EV(BRANCH_MISSES, true, true) }, NULL },
    /* the same event at other CPLs is another event */
    { "instructions:u,instructions:k", VPMU_EVENTS_ALL, 8, 0, 2,
      { EV(INSTRUCTIONS, true, false), EV(INSTRUCTIONS, false, true) }, NULL },
    /* a catalogue event on a source that backs it (TCG) */
    { "conditional-branches", ALL_NAMED, 8, 0, 1,
      { EV(BR_COND, true, true) }, NULL },
    { "conditional-branches", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } },
      "'conditional-branches' is not counted on this host" },
    { "instructions,cache-misses", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } },
      "unknown event 'cache-misses'" },
    { "instructions:x", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } },
      "'instructions:x': the modifier is :u or :k" },
    { "instructions:uk", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } },
      "the modifier" },
    { "cycles,cycles", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } },
      "'cycles' twice" },
    { "", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } }, "the list is empty" },
    { "cycles,", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } }, "empty" },
    { ",cycles", VPMU_EVENTS_ALL, 8, -EINVAL, 0, { { 0 } }, "empty" },
    { "cycles,instructions,branches", VPMU_EVENTS_ALL, 2, -EINVAL, 0,
      { { 0 } }, "more than 2" },
};

START_TEST(test_parse)
{
    const ParseCase *c = &parse_cases[_i];
    VpmuOperatorEvent out[8], sentinel = EV(TOPDOWN_SLOTS, false, false);
    unsigned n = 99;
    char err[160] = "";
    int r;

    for (unsigned i = 0; i < 8; i++) {
        out[i] = sentinel;
    }
    r = vpmu_operator_parse(c->text, c->events, out, c->max, &n, err,
                            sizeof(err));
    ck_assert_msg(r == c->ret, "'%s': %d, want %d (%s)", c->text, r, c->ret,
                  err);
    if (r < 0) {
        ck_assert_msg(strstr(err, c->msg), "'%s': message '%s' lacks '%s'",
                      c->text, err, c->msg);
        ck_assert_uint_eq(n, 99);       /* nothing changed */
        ck_assert_int_eq(out[0].event, sentinel.event);
        return;
    }
    ck_assert_uint_eq(n, c->n);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_msg(out[i].event == c->want[i].event &&
                      out[i].user == c->want[i].user &&
                      out[i].kernel == c->want[i].kernel,
                      "'%s' item %u: %d %d %d", c->text, i, out[i].event,
                      out[i].user, out[i].kernel);
    }
}
END_TEST

START_TEST(test_name)
{
    VpmuOperatorEvent u = EV(INSTRUCTIONS, true, false);
    VpmuOperatorEvent k = EV(LLC_MISSES, false, true);
    VpmuOperatorEvent b = EV(REF_CYCLES, true, true);
    char buf[40];

    ck_assert_str_eq(vpmu_operator_name(&u, buf, sizeof(buf)),
                     "instructions:u");
    ck_assert_str_eq(vpmu_operator_name(&k, buf, sizeof(buf)), "llc-misses:k");
    ck_assert_str_eq(vpmu_operator_name(&b, buf, sizeof(buf)), "ref-cycles");
}
END_TEST

/* ------------------------------------------------------------ counting */

typedef struct Op {
    VpmuFakeSource *fake;
    VpmuOperator *op;
} Op;

static void op_new(Op *o, const char *list, unsigned host_counters)
{
    VpmuOperatorEvent ev[VPMU_OPERATOR_MAX_EVENTS];
    VpmuOperatorOpts opts = { 0 };
    unsigned n;
    char err[160];

    ck_assert_int_eq(vpmu_fake_source_new(&o->fake), 0);
    ck_assert_int_eq(vpmu_operator_parse(list, ALL_NAMED, ev,
                                         VPMU_OPERATOR_MAX_EVENTS, &n, err,
                                         sizeof(err)), 0);
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = o->fake;
    opts.host_counters = host_counters;
    ck_assert_int_eq(vpmu_operator_new(&opts, ev, n, 1000, &o->op, err,
                                       sizeof(err)), 0);
}

static void op_free(Op *o)
{
    VpmuFakeStats st;

    vpmu_operator_free(o->op);
    vpmu_fake_source_stats(o->fake, &st);
    ck_assert_uint_eq(st.open_handles, 0);      /* every event closed */
    vpmu_fake_source_free(o->fake);
}

static VpmuOperatorCount read_one(Op *o, uint64_t now, unsigned i)
{
    VpmuOperatorCount c[VPMU_OPERATOR_MAX_EVENTS];

    ck_assert_uint_gt(vpmu_operator_read(o->op, now, c,
                                         VPMU_OPERATOR_MAX_EVENTS), i);
    return c[i];
}

/* Exact counts per CPL; both guest modes; no overflow callback. */
START_TEST(test_counts)
{
    VpmuOperatorCount c;
    Op o;

    op_new(&o, "instructions:u,instructions,branches:k", 0);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1000);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 0, 250);
    vpmu_fake_source_set_guest_mode(o.fake, true);     /* SVM guest mode */
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 7);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_BRANCHES, 0, 0, 40);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_BRANCHES, 0, 3, 5);
    /* served by the front end: counted where CPL and event match */
    vpmu_operator_instruction_retired(o.op, 3, false);
    vpmu_operator_instruction_retired(o.op, 0, true);
    c = read_one(&o, 1500, 0);
    ck_assert_uint_eq(c.count, 1008);
    ck_assert_uint_eq(c.enabled_ns, 500);
    ck_assert_uint_eq(c.running_ns, 500);
    ck_assert_int_eq(c.error, 0);
    ck_assert_uint_eq(read_one(&o, 1500, 1).count, 1259);
    ck_assert_uint_eq(read_one(&o, 1500, 2).count, 41);
    op_free(&o);
}
END_TEST

/*
 * Four host counters, three operator events: the guest's counters come
 * first, the operator's take turns on the rest.  Derived by hand: each
 * update accounts the time since the last under the choice then in
 * force, then picks `left` events from `next` on.
 */
START_TEST(test_guest_first)
{
    VpmuOperatorCount c[3];
    Op o;

    op_new(&o, "instructions,cycles,branches", 4);     /* all 3 run */
    /* t 1000-1100: all ran; 2 left: 0 and 1 run, next 2; turns */
    ck_assert(vpmu_operator_update(o.op, 2, 1100));
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_BRANCHES, 0, 3, 10);
    ck_assert(vpmu_operator_update(o.op, 2, 1200));  /* 2, 0 run; next 1 */
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 5);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_CYCLES, 0, 3, 5);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_BRANCHES, 0, 3, 5);
    /* The guest takes all four: no turns, nothing to turn. */
    ck_assert(!vpmu_operator_update(o.op, 4, 1300));
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 100);
    vpmu_operator_instruction_retired(o.op, 3, true);  /* none running */
    ck_assert(!vpmu_operator_update(o.op, 0, 1400));    /* all three */
    vpmu_fake_source_run(o.fake, VPMU_EVENT_CYCLES, 0, 3, 1);
    ck_assert_uint_eq(vpmu_operator_read(o.op, 1500, c, 3), 3);
    /* instructions: ran 1000-1300 and 1400-1500 */
    ck_assert_uint_eq(c[0].count, 15);
    ck_assert_uint_eq(c[0].enabled_ns, 500);
    ck_assert_uint_eq(c[0].running_ns, 400);
    /* cycles: ran 1000-1200 and 1400-1500 */
    ck_assert_uint_eq(c[1].count, 1);
    ck_assert_uint_eq(c[1].running_ns, 300);
    /* branches: ran 1000-1100, 1200-1300, 1400-1500 */
    ck_assert_uint_eq(c[2].count, 5);
    ck_assert_uint_eq(c[2].running_ns, 300);
    ck_assert_uint_eq(c[2].enabled_ns, 500);
    op_free(&o);
}
END_TEST

/*
 * A source that counts its enabled handles: at no instant do the
 * operator's events hold more than the guest left them, neither when
 * they are made (opts.guest_counting) nor when they change turns (every
 * stop comes before the starts).
 */
static unsigned live_now, live_max;

static int count_enable(void *src, VpmuSourceHandle *h)
{
    int r = vpmu_fake_source_ops()->enable(src, h);

    if (r == 0 && ++live_now > live_max) {
        live_max = live_now;
    }
    return r;
}

static int count_disable(void *src, VpmuSourceHandle *h)
{
    int r = vpmu_fake_source_ops()->disable(src, h);

    live_now -= r == 0;
    return r;
}

START_TEST(test_yield_first)
{
    VpmuOperatorEvent ev[3];
    VpmuSourceOps ops = *vpmu_fake_source_ops();
    VpmuOperatorOpts opts = { .source_ops = &ops, .host_counters = 4,
                              .guest_counting = 2 };
    VpmuFakeSource *fake;
    VpmuOperator *op;
    unsigned n;
    char err[160];

    ops.enable = count_enable;
    ops.disable = count_disable;
    live_now = live_max = 0;
    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    ck_assert_int_eq(vpmu_operator_parse("instructions,cycles,branches",
                                         ALL_NAMED, ev, 3, &n, err,
                                         sizeof(err)), 0);
    ck_assert_int_eq(vpmu_operator_new(&opts, ev, n, 0, &op, err,
                                       sizeof(err)), 0);
    ck_assert_uint_eq(live_now, 2);
    ck_assert_uint_eq(vpmu_operator_running(op), 2);
    for (uint64_t t = 1; t <= 6; t++) {
        ck_assert(vpmu_operator_update(op, 2, t));
        ck_assert_uint_eq(live_now, 2);
    }
    ck_assert(vpmu_operator_update(op, 3, 7));      /* one at a time */
    ck_assert_uint_eq(live_now, 1);
    ck_assert(!vpmu_operator_update(op, 4, 8));     /* none: no turns */
    ck_assert_uint_eq(live_now, 0);
    ck_assert_uint_eq(live_max, 2);
    vpmu_operator_free(op);
    vpmu_fake_source_free(fake);
}
END_TEST

/* The guest's PMU on the same source sees nothing of the operator's. */
START_TEST(test_guest_unchanged)
{
    VpmuPmu *pmu;
    VpmuPmuOpts opts = { 0 };
    VpmuConfig cfg;
    VpmuStats st;
    uint64_t v;
    char err[160];
    Op o;

    op_new(&o, "instructions,instructions:u", 0);
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = o.fake;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err)), 0);
    /* PERFEVTSEL0 = instructions, USR, EN; PMC0 = -10: overflows at 10 */
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, 0x4C1, 0xFFFFFFFFFFF6ull), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, 0x186, 0x4100C0), 0);
    vpmu_fake_source_run(o.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 25);
    ck_assert_int_eq(vpmu_pmu_rdmsr(pmu, 0x4C1, &v), 0);
    ck_assert_uint_eq(v, 15);               /* -10 + 25, wrapped */
    vpmu_pmu_stats(pmu, &st);
    ck_assert_uint_eq(st.overflows, 1);
    ck_assert_uint_eq(read_one(&o, 2000, 0).count, 25);
    ck_assert_uint_eq(read_one(&o, 2000, 1).count, 25);
    vpmu_pmu_free(pmu);
    op_free(&o);
}
END_TEST

/* A refused event reports its error and counts nothing; the rest count. */
START_TEST(test_source_errors)
{
    VpmuOperatorEvent ev[2] = { EV(CYCLES, true, true),
                                EV(INSTRUCTIONS, true, true) };
    VpmuOperatorOpts opts = { 0 };
    VpmuOperatorCount c[2];
    VpmuFakeSource *fake;
    VpmuOperator *op;
    char err[160] = "";

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = fake;
    vpmu_fake_source_fail(fake, VPMU_FAKE_OPEN, -ENOENT);  /* the first */
    ck_assert_int_eq(vpmu_operator_new(&opts, ev, 2, 0, &op, err,
                                       sizeof(err)), 0);
    vpmu_fake_source_run(fake, VPMU_EVENT_CYCLES, 0, 3, 9);
    vpmu_fake_source_run(fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 9);
    vpmu_fake_source_fail(fake, VPMU_FAKE_READ, -EIO);     /* next read */
    ck_assert_uint_eq(vpmu_operator_read(op, 10, c, 2), 2);
    ck_assert_int_eq(c[0].error, -ENOENT);
    ck_assert_uint_eq(c[0].count, 0);
    ck_assert_uint_eq(c[0].running_ns, 0);
    ck_assert_uint_eq(c[0].enabled_ns, 10);
    ck_assert_int_eq(c[1].error, -EIO);     /* kept its last count, 0 */
    ck_assert_uint_eq(vpmu_operator_read(op, 20, c, 2), 2);
    ck_assert_uint_eq(c[1].count, 9);
    vpmu_operator_free(op);
    vpmu_fake_source_free(fake);
}
END_TEST

START_TEST(test_new_errors)
{
    VpmuOperatorEvent ev[1] = { EV(CYCLES, true, true) };
    VpmuOperatorEvent none[1] = { EV(CYCLES, false, false) };
    VpmuOperatorEvent raw[1] = { { VPMU_EVENT_RAW, true, true } };
    VpmuOperatorOpts opts = { 0 };
    VpmuOperator *op = (VpmuOperator *)&opts;
    char err[160];

    ck_assert_int_eq(vpmu_operator_new(&opts, ev, 1, 0, &op, err,
                                       sizeof(err)), -EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_ptr_nonnull(strstr(err, "counting source"));
    opts.source_ops = vpmu_fake_source_ops();
    ck_assert_int_eq(vpmu_operator_new(&opts, ev, 0, 0, &op, err,
                                       sizeof(err)), -EINVAL);
    ck_assert_int_eq(vpmu_operator_new(&opts, ev, VPMU_OPERATOR_MAX_EVENTS + 1,
                                       0, &op, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(vpmu_operator_new(&opts, none, 1, 0, &op, err,
                                       sizeof(err)), -EINVAL);
    ck_assert_int_eq(vpmu_operator_new(&opts, raw, 1, 0, &op, err,
                                       sizeof(err)), -EINVAL);
    ck_assert_ptr_null(op);
    vpmu_operator_free(NULL);
}
END_TEST

static Suite *operator_suite(void)
{
    Suite *s = suite_create("operator");
    TCase *tc = tcase_create("parse");

    tcase_add_loop_test(tc, test_parse, 0,
                        (int)(sizeof(parse_cases) / sizeof(parse_cases[0])));
    tcase_add_test(tc, test_name);
    suite_add_tcase(s, tc);
    tc = tcase_create("count");
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_guest_first);
    tcase_add_test(tc, test_yield_first);
    tcase_add_test(tc, test_guest_unchanged);
    tcase_add_test(tc, test_source_errors);
    tcase_add_test(tc, test_new_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(operator_suite());
}
