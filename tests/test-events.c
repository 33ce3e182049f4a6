/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event catalogue: the model-specific events a source may back by
 * name (docs/events.md).  Their encodings per vendor, and how the core
 * decodes them: by name for a source whose VpmuConfig.events has their
 * bit, raw (or not at all) for any other source.  And cycles counted as
 * instructions (VpmuConfig.insn_cycles).
 */
#include "vectors.h"

/* IA32_PERFEVTSELx / PERF_CTLx fields (SDM Vol. 3B Figure 20-6). */
#define EVTSEL_USR          (1ull << 16)
#define EVTSEL_OS           (1ull << 17)
#define EVTSEL_EN           (1ull << 22)

/* Intel MSRs (SDM Vol. 4 Table 2-2). */
#define IA32_PMC0           0x0c1
#define IA32_PERFEVTSEL0    0x186
#define IA32_PERF_GLOBAL_CTRL 0x38f
#define IA32_FIXED_CTR1     0x30a
#define IA32_FIXED_CTR2     0x30b
#define IA32_FIXED_CTR_CTRL 0x38d
/* AMD PERF_CTL0 / PERF_CTR0 (APM Vol. 2 13.2.1). */
#define AMD_PERF_CTL0       0xc0010200
#define AMD_PERF_CTR0       0xc0010201

/* Each named event's encoding, as vpmu_arch_event_encoding() gives it. */
typedef struct EncVector {
    int line;
    VpmuVendor vendor;
    VpmuArchEvent event;
    int ret;
    uint64_t evtsel;
} EncVector;

static const EncVector enc_vectors[] = {
    /* Skylake (Intel's event list; SDM Vol. 3B 20.3.8). */
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_COND, 0, 0x01c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_NTAKEN, 0, 0x10c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_TAKEN, 0, 0x20c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_CALL, 0, 0x02c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_RET, 0, 0x08c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BR_FAR, 0, 0x40c4 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_LOADS, 0, 0x81d0 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_STORES, 0, 0x82d0 },
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_HW_INTERRUPTS, 0, 0x01cb },
    /* The architectural ones are unchanged. */
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT_BRANCHES, 0, 0x00c4 },
    /* Zen (PPR for family 17h). */
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_COND, 0, 0x00d1 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_NTAKEN, -ENOENT, 0 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_TAKEN, 0, 0x00c4 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_CALL, -ENOENT, 0 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_RET, 0, 0x00c8 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BR_FAR, 0, 0x00c6 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_LOADS, 0, 0x0529 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_STORES, 0, 0x0629 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_HW_INTERRUPTS, 0, 0x002c },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_BRANCHES, 0, 0x00c2 },
    /* Past the catalogue. */
    { SRC_LINE, VPMU_VENDOR_INTEL, VPMU_EVENT__NAMED, -ENOENT, 0 },
    { SRC_LINE, VPMU_VENDOR_AMD, VPMU_EVENT_RAW, -ENOENT, 0 },
};

START_TEST(test_encodings)
{
    const EncVector *v = &enc_vectors[_i];
    uint64_t evtsel = 0;
    int r = vpmu_arch_event_encoding(v->vendor, v->event, &evtsel);

    ck_assert_msg(r == v->ret, "line %d: ret %d want %d", v->line, r, v->ret);
    ck_assert_msg(r || evtsel == v->evtsel, "line %d: 0x%" PRIx64
                  " want 0x%" PRIx64, v->line, evtsel, v->evtsel);
}
END_TEST

/* An Intel v4 PMU whose source backs @events, raw events if @raw. */
static void intel_pmu(TestPmu *t, uint32_t events, bool raw)
{
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.intel_version = 4;
    cfg.events = events;
    cfg.raw_events = raw;
    test_pmu_init(t, &cfg);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t->pmu, IA32_PERF_GLOBAL_CTRL, 1), 0);
}

/* An AMD PerfCtrExtCore PMU (no global control). */
static void amd_pmu(TestPmu *t, uint32_t events, bool raw)
{
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    cfg.amd_level = VPMU_AMD_PERFCTR_CORE;
    cfg.nr_gp = 6;
    cfg.events = events;
    cfg.raw_events = raw;
    test_pmu_init(t, &cfg);
}

static VpmuCounterInfo gp0(TestPmu *t)
{
    VpmuCounterInfo info;

    ck_assert_int_eq(vpmu_pmu_counter_info(t->pmu, VPMU_COUNTER_GP(0),
                                           &info), 0);
    return info;
}

/* Write @ctl to the event select @msr of GP counter 0; its info after. */
static VpmuCounterInfo program(TestPmu *t, uint32_t msr, uint64_t ctl)
{
    ck_assert_int_eq(vpmu_pmu_wrmsr(t->pmu, msr, ctl), 0);
    return gp0(t);
}

static uint64_t rd(TestPmu *t, uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_int_eq(vpmu_pmu_rdmsr(t->pmu, msr, &v), 0);
    return v;
}

/*
 * rr's ticks on Skylake: EVTSEL 0x01c4 with USR only.  A source that
 * backs BR_COND gets it by name and counts what it retires at CPL 3.
 */
START_TEST(test_intel_by_name)
{
    TestPmu t;
    VpmuCounterInfo info;

    intel_pmu(&t, VPMU_EVENTS_ALL | VPMU_EVENTS_MODEL, false);
    info = program(&t, IA32_PERFEVTSEL0, 0x01c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_BR_COND);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_BR_COND, 0, 3, 7);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_BR_COND, 0, 0, 5);   /* OS */
    vpmu_fake_source_run(t.fake, VPMU_EVENT_BRANCHES, 0, 3, 11);
    /* The enabling WRMSR is an instruction, not a conditional branch. */
    ck_assert_uint_eq(rd(&t, IA32_PMC0), 7);

    /* Every other catalogue event of Skylake, by name too. */
    for (VpmuArchEvent e = VPMU_EVENT__COUNT; e < VPMU_EVENT__NAMED; e++) {
        uint64_t sel;

        ck_assert_int_eq(vpmu_arch_event_encoding(VPMU_VENDOR_INTEL, e, &sel),
                         0);
        info = program(&t, IA32_PERFEVTSEL0, sel | EVTSEL_OS | EVTSEL_EN);
        ck_assert_msg(info.event == e, "0x%" PRIx64 ": event %d want %d",
                      sel, info.event, e);
        ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    }
    test_pmu_fini(&t);
}
END_TEST

/*
 * A source that does not back the catalogue (the host perf source) gets
 * the same encoding raw, as before there was a catalogue, or refuses it.
 */
START_TEST(test_intel_not_backed)
{
    TestPmu t;
    VpmuCounterInfo info;

    intel_pmu(&t, VPMU_EVENTS_ALL, true);
    info = program(&t, IA32_PERFEVTSEL0, 0x01c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_RAW, 0x01c4, 3, 4);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_BR_COND, 0, 3, 9);
    ck_assert_uint_eq(rd(&t, IA32_PMC0), 4);
    test_pmu_fini(&t);

    intel_pmu(&t, VPMU_EVENTS_ALL, false);
    info = program(&t, IA32_PERFEVTSEL0, 0x01c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    ck_assert_int_eq(info.state, VPMU_COUNTER_UNSUPPORTED);
    test_pmu_fini(&t);
}
END_TEST

/* A source that backs some catalogue events gets only those by name. */
START_TEST(test_partly_backed)
{
    TestPmu t;
    VpmuCounterInfo info;

    intel_pmu(&t, VPMU_EVENTS_ALL | VPMU_EVENT_BIT(VPMU_EVENT_BR_COND), false);
    info = program(&t, IA32_PERFEVTSEL0, 0x20c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    ck_assert_int_eq(info.state, VPMU_COUNTER_UNSUPPORTED);
    info = program(&t, IA32_PERFEVTSEL0, 0x01c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_BR_COND);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    test_pmu_fini(&t);
}
END_TEST

/*
 * Zen: rr's ticks are PERF_CTL 0xd1.  Intel's not-taken encoding (0x10c4)
 * means nothing on AMD: event 0xC4 with a unit mask is not in the
 * catalogue, so it stays raw; AMD's 0xc4 (taken branches) is named.
 */
START_TEST(test_amd_by_name)
{
    TestPmu t;
    VpmuCounterInfo info;

    amd_pmu(&t, VPMU_EVENTS_ALL | VPMU_EVENTS_MODEL, true);
    info = program(&t, AMD_PERF_CTL0, 0xd1 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_BR_COND);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_BR_COND, 0, 3, 13);
    ck_assert_uint_eq(rd(&t, AMD_PERF_CTR0), 13);

    info = program(&t, AMD_PERF_CTL0, 0x10c4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    info = program(&t, AMD_PERF_CTL0, 0xc4 | EVTSEL_USR | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_BR_TAKEN);
    info = program(&t, AMD_PERF_CTL0, 0x022c | EVTSEL_OS | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_RAW);
    info = program(&t, AMD_PERF_CTL0, 0x2c | EVTSEL_OS | EVTSEL_EN);
    ck_assert_int_eq(info.event, VPMU_EVENT_HW_INTERRUPTS);
    test_pmu_fini(&t);
}
END_TEST

/*
 * VpmuConfig.insn_cycles (QEMU's pmu-cycles=insns): the source counts a
 * cycle per retired instruction, so the instructions vpmu counts itself
 * count on cycles counters too, by CPL like instructions.  Step by step
 * (GP0: cycles OS+USR; GP1: cycles USR; fixed 1 and 2 OS+USR):
 *   EVTSEL0 (enables GP0)            GP0 1
 *   EVTSEL1 (GP1 not globally on)    GP0 2
 *   FIXED_CTR_CTRL 0x330             GP0 3
 *   GLOBAL_CTRL (all four on)        GP0 4, GP1 0 (CPL 0), fixed 1, 1
 *   retire at CPL 0, at CPL 3        GP0 6, GP1 1, fixed 3, 3
 * Without insn_cycles, cycles counters get none of them.
 */
START_TEST(test_insn_cycles)
{
    static const uint64_t want[2][4] = { { 0, 0, 0, 0 }, { 6, 1, 3, 3 } };
    const uint64_t *w = want[_i];
    VpmuConfig cfg;
    TestPmu t;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.intel_version = 4;
    cfg.insn_cycles = _i;
    test_pmu_init(&t, &cfg);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, IA32_PERF_GLOBAL_CTRL, 1), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, IA32_PERFEVTSEL0,
                                    0x3c | EVTSEL_USR | EVTSEL_OS |
                                    EVTSEL_EN), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, IA32_PERFEVTSEL0 + 1,
                                    0x3c | EVTSEL_USR | EVTSEL_EN), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, IA32_FIXED_CTR_CTRL, 0x330), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, IA32_PERF_GLOBAL_CTRL,
                                    0x600000003ull), 0);
    vpmu_pmu_instruction_retired(t.pmu, 0, false);
    vpmu_pmu_instruction_retired(t.pmu, 3, true);
    ck_assert_uint_eq(rd(&t, IA32_PMC0), w[0]);
    ck_assert_uint_eq(rd(&t, IA32_PMC0 + 1), w[1]);
    ck_assert_uint_eq(rd(&t, IA32_FIXED_CTR1), w[2]);
    ck_assert_uint_eq(rd(&t, IA32_FIXED_CTR2), w[3]);
    test_pmu_fini(&t);
}
END_TEST

/* Every named event has a name of its own; RAW and the rest have none. */
START_TEST(test_names)
{
    static const struct { VpmuArchEvent e; const char *name; } want[] = {
        { VPMU_EVENT_CYCLES, "cycles" },
        { VPMU_EVENT_REF_CYCLES, "ref-cycles" },
        { VPMU_EVENT_BR_COND, "conditional-branches" },
        { VPMU_EVENT_HW_INTERRUPTS, "hw-interrupts" },
    };

    for (VpmuArchEvent e = 0; e < VPMU_EVENT__NAMED; e++) {
        const char *n = vpmu_arch_event_name(e);

        ck_assert_msg(n && *n, "event %d has no name", e);
        for (VpmuArchEvent f = 0; f < e; f++) {
            ck_assert_msg(strcmp(n, vpmu_arch_event_name(f)),
                          "events %d and %d are both %s", f, e, n);
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        ck_assert_str_eq(vpmu_arch_event_name(want[i].e), want[i].name);
    }
    ck_assert_ptr_null(vpmu_arch_event_name(VPMU_EVENT__NAMED));
    ck_assert_ptr_null(vpmu_arch_event_name(VPMU_EVENT_RAW));
    ck_assert_ptr_null(vpmu_arch_event_name((VpmuArchEvent)-1));
}
END_TEST

static Suite *events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *tc = tcase_create("catalogue");

    tcase_add_loop_test(tc, test_encodings, 0, ARRAY_SIZE(enc_vectors));
    tcase_add_test(tc, test_intel_by_name);
    tcase_add_test(tc, test_intel_not_backed);
    tcase_add_test(tc, test_partly_backed);
    tcase_add_test(tc, test_amd_by_name);
    tcase_add_loop_test(tc, test_insn_cycles, 0, 2);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(events_suite());
}
