/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's one MSR map, as front ends see it: vpmu_pmu_msr_info()
 * (what an MSR is, the counters it concerns, a control's enable bits and
 * value), vpmu_config_msr_spans() (the MSRs a config answers, without
 * a PMU) and vpmu_pmu_counter_msrs() (a counter's MSRs, for a mirror), for
 * the defaults of both vendors and the older AMD levels.  Every value is derived by
 * hand from the vendor tables (SDM Vol. 4 Table 2-2; APM Vol. 2 13.2).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include <vpmu/pmu.h>
#include <vpmu/source.h>

#include "check-main.h"

static VpmuFakeSource *fake;
static VpmuPmu *pmu;

static void up_cfg(const VpmuConfig *cfg)
{
    VpmuPmuOpts opts = { .source_ops = vpmu_fake_source_ops() };
    char err[128];

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    ck_assert_int_eq(vpmu_pmu_new(cfg, &opts, &pmu, err, sizeof(err)), 0);
}

static void up(VpmuVendor vendor)
{
    VpmuConfig cfg;

    vpmu_config_init(&cfg, vendor);
    up_cfg(&cfg);
}

static void down(void)
{
    vpmu_pmu_free(pmu);
    vpmu_fake_source_free(fake);
    pmu = NULL;
    fake = NULL;
}

static void wr(uint32_t msr, uint64_t val)
{
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, msr, val), 0);
}

/* @msr is of class @cls, concerns @counters; a control: @enables, @value. */
static void expect(uint32_t msr, VpmuMsrClass cls, uint64_t counters,
                   uint64_t enables, uint64_t value)
{
    VpmuMsrInfo info;

    ck_assert_int_eq(vpmu_pmu_msr_info(pmu, msr, &info), 0);
    ck_assert_int_eq(info.cls, cls);
    ck_assert_uint_eq(info.counters, counters);
    ck_assert_uint_eq(info.enables, enables);
    ck_assert_uint_eq(info.value, value);
}

static void absent(uint32_t msr)
{
    VpmuMsrInfo info;

    ck_assert_int_eq(vpmu_pmu_msr_info(pmu, msr, &info), -ENOENT);
}

/*
 * Intel v2, 8 GP + 3 fixed.  Mirror bits: GP i = bit i, fixed j = bit
 * 8 + j (all 11: 0x7ff).  Enables: EVTSEL EN is bit 22 (SDM Figure 20-6),
 * FIXED_CTR_CTRL EN is bits 1:0 of each 4-bit field (0x333 for three),
 * GLOBAL_CTRL bits 0-7 and 32-34 (SDM 20.2.2: 0x7000000ff).
 */
START_TEST(test_intel)
{
    VpmuStats st;

    up(VPMU_VENDOR_INTEL);
    wr(0x188, 0x4300c0);                    /* EVTSEL2: instructions */
    wr(0x38d, 0xb0);                        /* FIXED_CTR_CTRL: fixed 1 */
    wr(0x38f, 0x700000003);
    expect(0x188, VPMU_MSR_CLASS_CONTROL, 1u << 2, 1u << 22, 0x4300c0);
    expect(0x0c2, VPMU_MSR_CLASS_COUNTER, 1u << 1, 0, 0);
    expect(0x4c8, VPMU_MSR_CLASS_COUNTER, 1u << 7, 0, 0);
    expect(0x30b, VPMU_MSR_CLASS_COUNTER, 1u << 10, 0, 0);
    expect(0x38d, VPMU_MSR_CLASS_CONTROL, 0x700, 0x333, 0xb0);
    expect(0x38f, VPMU_MSR_CLASS_CONTROL, 0x7ff, 0x7000000ffull,
           0x700000003ull);
    expect(0x38e, VPMU_MSR_CLASS_STATUS, 0x7ff, 0, 0);
    expect(0x390, VPMU_MSR_CLASS_OTHER, 0x7ff, 0, 0);
    expect(0x345, VPMU_MSR_CLASS_OTHER, 0x7ff, 0, 0);
    absent(0x18e);                          /* EVTSEL8: 8 GP only */
    absent(0x30c);                          /* FIXED_CTR3: 3 fixed */
    absent(0x391);                          /* STATUS_SET: v4 */
    absent(0x10);                           /* the TSC: not the PMU's */
    /* No access counted: 3 writes, no read. */
    vpmu_pmu_stats(pmu, &st);
    ck_assert_uint_eq(st.rdmsr, 0);
    ck_assert_uint_eq(st.wrmsr, 3);
    down();
}
END_TEST

/*
 * AMD PerfMonV2, 6 counters (bits 0x3f): PERF_CTLi at 0xC0010200 + 2i,
 * PERF_CTRi right after (APM 13.2.1), the K7 aliases of counters 0-3, and
 * PerfCntrGlobalCtl's bits 0-5 (APM 13.2.2).
 */
START_TEST(test_amd)
{
    up(VPMU_VENDOR_AMD);
    wr(0xc0010204, 0x5300c4);               /* PERF_CTL2: branches */
    wr(0xc0000301, 0x5);
    expect(0xc0010204, VPMU_MSR_CLASS_CONTROL, 1u << 2, 1u << 22, 0x5300c4);
    expect(0xc0010002, VPMU_MSR_CLASS_CONTROL, 1u << 2, 1u << 22, 0x5300c4);
    expect(0xc001020b, VPMU_MSR_CLASS_COUNTER, 1u << 5, 0, 0);
    expect(0xc0010005, VPMU_MSR_CLASS_COUNTER, 1u << 1, 0, 0);
    expect(0xc0000301, VPMU_MSR_CLASS_CONTROL, 0x3f, 0x3f, 0x5);
    expect(0xc0000300, VPMU_MSR_CLASS_STATUS, 0x3f, 0, 0);
    expect(0xc0000302, VPMU_MSR_CLASS_OTHER, 0x3f, 0, 0);
    absent(0xc001020c);                     /* PERF_CTL6 */
    absent(0x186);                          /* an Intel MSR */
    down();
}
END_TEST

/* Spans from a config alone, as the PMU's own. */
START_TEST(test_spans)
{
    static const VpmuMsrSpan intel[] = {
        { 0xc1, 8 }, { 0x186, 8 }, { 0x1d9, 1 }, { 0x309, 3 },
        { 0x345, 1 }, { 0x38d, 4 }, { 0x4c1, 8 },
    };
    static const VpmuMsrSpan amd[] = {
        { 0xc0000300, 4 }, { 0xc0010000, 8 }, { 0xc0010200, 12 },
    };
    VpmuMsrSpan out[8];
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    ck_assert_int_eq(vpmu_config_msr_spans(&cfg, out, 8), 7);
    for (unsigned i = 0; i < 7; i++) {
        ck_assert_uint_eq(out[i].base, intel[i].base);
        ck_assert_uint_eq(out[i].count, intel[i].count);
    }
    /* Fewer slots: the count all the same, the first ones filled. */
    ck_assert_int_eq(vpmu_config_msr_spans(&cfg, out, 2), 7);
    ck_assert_uint_eq(out[1].base, 0x186);
    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    ck_assert_int_eq(vpmu_config_msr_spans(&cfg, out, 8), 3);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(out[i].base, amd[i].base);
        ck_assert_uint_eq(out[i].count, amd[i].count);
    }
    up(VPMU_VENDOR_AMD);
    ck_assert_uint_eq(vpmu_pmu_msr_spans(pmu, out, 8), 3);
    ck_assert_uint_eq(out[2].count, 12);
    down();
    cfg.nr_gp = 7;                          /* PerfMonV2: at most 6 */
    ck_assert_int_eq(vpmu_config_msr_spans(&cfg, out, 8), -EINVAL);
    ck_assert_int_eq(vpmu_config_msr_spans(NULL, out, 8), -EINVAL);
}
END_TEST

/* Counter @id's MSRs are these (control_os/pmi: GP or fixed layout). */
static void expect_msrs(uint32_t id, uint32_t counter, uint32_t control,
                        unsigned shift, uint32_t global, uint64_t enable)
{
    bool fixed = id & VPMU_COUNTER_FIXED;
    VpmuCounterMsrs m;

    ck_assert_int_eq(vpmu_pmu_counter_msrs(pmu, id, &m), 0);
    ck_assert_uint_eq(m.counter, counter);
    ck_assert_uint_eq(m.control, control);
    ck_assert_uint_eq(m.control_shift, shift);
    /* EVTSEL OS bit 17, INT bit 20 (SDM Figure 20-6, APM Figure 13-7);
     * a FIXED_CTR_CTRL field: OS bit 0, PMI bit 3 (SDM Figure 20-2). */
    ck_assert_uint_eq(m.control_os, fixed ? 0x1 : 1u << 17);
    ck_assert_uint_eq(m.control_pmi, fixed ? 0x8 : 1u << 20);
    ck_assert_uint_eq(m.global, global);
    ck_assert_uint_eq(m.global_enable, enable);
}

/*
 * What a mirror writes: Intel GP i at PMC i (0xC1 + i, not the A_PMC
 * alias) with PERFEVTSEL i, fixed j at 0x309 + j in field j of
 * FIXED_CTR_CTRL (0x38D), enables in GLOBAL_CTRL (0x38F) bits i / 32 + j;
 * Intel v1 has no global control.  AMD: the PERF_CTL/CTR pairs when they
 * exist, else the K7 MSRs; PerfCntrGlobalCtl (0xC0000301) only with v2.
 */
START_TEST(test_counter_msrs)
{
    VpmuCounterMsrs m;
    VpmuConfig cfg;

    up(VPMU_VENDOR_INTEL);
    expect_msrs(VPMU_COUNTER_GP(0), 0xc1, 0x186, 0, 0x38f, 1);
    expect_msrs(VPMU_COUNTER_GP(7), 0xc8, 0x18d, 0, 0x38f, 1u << 7);
    expect_msrs(VPMU_COUNTER_FIXED_ID(2), 0x30b, 0x38d, 8, 0x38f,
                1ull << 34);
    ck_assert_int_eq(vpmu_pmu_counter_msrs(pmu, VPMU_COUNTER_GP(8), &m),
                     -ENOENT);
    ck_assert_int_eq(vpmu_pmu_counter_msrs(pmu, VPMU_COUNTER_FIXED_ID(3),
                                           &m), -ENOENT);
    down();
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.intel_version = 1;
    cfg.nr_fixed = 0;
    cfg.fixed_width = 0;
    up_cfg(&cfg);
    expect_msrs(VPMU_COUNTER_GP(3), 0xc4, 0x189, 0, 0, 0);
    down();
    up(VPMU_VENDOR_AMD);
    expect_msrs(VPMU_COUNTER_GP(0), 0xc0010201, 0xc0010200, 0, 0xc0000301, 1);
    expect_msrs(VPMU_COUNTER_GP(5), 0xc001020b, 0xc001020a, 0, 0xc0000301,
                1u << 5);
    ck_assert_int_eq(vpmu_pmu_counter_msrs(pmu, VPMU_COUNTER_GP(6), &m),
                     -ENOENT);
    down();
    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    cfg.amd_level = VPMU_AMD_PERFCTR_CORE;
    up_cfg(&cfg);
    expect_msrs(VPMU_COUNTER_GP(2), 0xc0010205, 0xc0010204, 0, 0, 0);
    down();
    cfg.amd_level = VPMU_AMD_K7;
    cfg.nr_gp = 4;
    up_cfg(&cfg);
    expect_msrs(VPMU_COUNTER_GP(3), 0xc0010007, 0xc0010003, 0, 0, 0);
    ck_assert_int_eq(vpmu_pmu_counter_msrs(pmu, VPMU_COUNTER_GP(4), &m),
                     -ENOENT);
    down();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("msr-info");
    TCase *tc = tcase_create("map");

    tcase_add_test(tc, test_intel);
    tcase_add_test(tc, test_amd);
    tcase_add_test(tc, test_spans);
    tcase_add_test(tc, test_counter_msrs);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
