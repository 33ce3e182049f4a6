/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_perf_attr_parse(): a privileged helper opens only the host events
 * the perf source itself builds.  Each accepted attr is written out here
 * by hand from perf_event_open(2) and the perf source's rules
 * (docs/perf-source.md): disabled, read_format TOTAL_TIME_ENABLED |
 * TOTAL_TIME_RUNNING, exclude_hv, exclude_user/kernel from the guest's
 * USR/OS, exclude_host and pinned as the source's options say; the
 * task-clock fallback sets no exclude bit.  Any other field refuses.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include <vpmu/perf.h>

#include "check-main.h"
#include "source-attr.h"


/* Guest instructions at CPL 3 only, under KVM, period 1000. */
static struct perf_event_attr insn_user(void)
{
    return source_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000,
                       true, false);
}

START_TEST(test_generic)
{
    struct perf_event_attr a = insn_user();
    VpmuPerfAttrInfo info;

    ck_assert_int_eq(vpmu_perf_attr_parse(&a, &info), 0);
    ck_assert_int_eq(info.event, VPMU_EVENT_INSTRUCTIONS);
    ck_assert(info.count_user && !info.count_kernel);
    ck_assert(info.exclude_host && !info.pinned && !info.clock);
    /* Branches, both CPLs, pinned: still one the source makes. */
    a.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
    a.exclude_kernel = 0;
    a.pinned = 1;
    ck_assert_int_eq(vpmu_perf_attr_parse(&a, &info), 0);
    ck_assert_int_eq(info.event, VPMU_EVENT_BRANCHES);
    ck_assert(info.count_user && info.count_kernel && info.pinned);
}
END_TEST

START_TEST(test_raw_and_clock)
{
    struct perf_event_attr a = insn_user();
    VpmuPerfAttrInfo info;

    /* A guest raw event: its encoding is the config (AMD 0x0C2 + CMASK 1). */
    a.type = PERF_TYPE_RAW;
    a.config = 0x10000c2;
    ck_assert_int_eq(vpmu_perf_attr_parse(&a, &info), 0);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    ck_assert_uint_eq(info.raw_config, 0x10000c2);
    /* The fallback: task-clock, no exclude bit at all. */
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                    PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.sample_period = 4294967296ull;
    ck_assert_int_eq(vpmu_perf_attr_parse(&a, &info), 0);
    ck_assert(info.clock);
    ck_assert_int_eq(info.event, VPMU_EVENT_CYCLES);
    ck_assert(!info.exclude_host);
}
END_TEST

/* One field the source never sets, each on its own: refused. */
static void set_inherit(struct perf_event_attr *a) { a->inherit = 1; }
static void set_exclude_guest(struct perf_event_attr *a) { a->exclude_guest = 1; }
static void clear_exclude_hv(struct perf_event_attr *a) { a->exclude_hv = 0; }
static void clear_disabled(struct perf_event_attr *a) { a->disabled = 0; }
static void set_freq(struct perf_event_attr *a) { a->freq = 1; }
static void set_sample_type(struct perf_event_attr *a) { a->sample_type = PERF_SAMPLE_IP; }
static void set_sigtrap(struct perf_event_attr *a) { a->sigtrap = 1; a->remove_on_exec = 1; }
static void set_read_group(struct perf_event_attr *a) { a->read_format |= PERF_FORMAT_GROUP; }
static void set_small_size(struct perf_event_attr *a) { a->size = PERF_ATTR_SIZE_VER0; }
static void set_tracepoint(struct perf_event_attr *a) { a->type = PERF_TYPE_TRACEPOINT; }
static void set_sw_other(struct perf_event_attr *a)
{
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_PAGE_FAULTS;
}
static void set_hw_unknown(struct perf_event_attr *a) { a->config = PERF_COUNT_HW_STALLED_CYCLES_FRONTEND; }
static void set_bp(struct perf_event_attr *a) { a->bp_type = 1; }

static void (*const mutations[])(struct perf_event_attr *) = {
    set_inherit, set_exclude_guest, clear_exclude_hv, clear_disabled,
    set_freq, set_sample_type, set_sigtrap, set_read_group, set_small_size,
    set_tracepoint, set_sw_other, set_hw_unknown, set_bp,
};

START_TEST(test_refused)
{
    struct perf_event_attr a = insn_user();
    VpmuPerfAttrInfo info;

    mutations[_i](&a);
    ck_assert_int_eq(vpmu_perf_attr_parse(&a, &info), -EINVAL);
}
END_TEST

START_TEST(test_null)
{
    VpmuPerfAttrInfo info;

    ck_assert_int_eq(vpmu_perf_attr_parse(NULL, &info), -EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("perf-attr");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_generic);
    tcase_add_test(tc, test_raw_and_clock);
    tcase_add_loop_test(tc, test_refused, 0,
                        (int)(sizeof(mutations) / sizeof(mutations[0])));
    tcase_add_test(tc, test_null);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
