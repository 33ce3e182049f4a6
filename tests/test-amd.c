/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD suite: every rule of docs/msrs.md "AMD" (AMD APM Vol. 2 §13.2) for
 * the three levels: K7 (4 counters), PERFCTR_CORE (6) and PerfMonV2 (1-6).
 *
 * Expected values are written out by hand, never computed with the rule
 * under test; every vector carries its source line (SRC_LINE).  Per-level
 * tables have one column per level, in the order of enum AmdLevelIdx, and
 * loop tests run once per column (Check prints the column as the loop
 * iteration of a failure).
 *
 * One deliberate deviation from docs/msrs.md: its "kept bits" formula for
 * PERF_CTL, 0x0000000F00FFFFFF & ~(1 << 19 | 1 << 21), drops CMASK [31:24],
 * which the same paragraph lists as a field.  APM PerfEvtSeln[31:24] CntMask
 * is a real field and KVM's AMD reserved mask is 0xfffffff000280000, so the
 * kept bits are 0x0000000FFFD7FFFF; test_ctl_cmask_kept checks that alone.
 */
#include "vectors.h"

/* APM Vol. 2 §13.2.1: legacy PerfEvtSel0-3 / PerfCtr0-3 */
#define K7_CTL(i)   (0xC0010000u + (i))
#define K7_CTR(i)   (0xC0010004u + (i))
/* APM Vol. 2 §13.2.1 (PerfCtrExtCore): PerfEvtSel0-5 / PerfCtr0-5 interleaved */
#define F15_CTL(i)  (0xC0010200u + 2u * (i))
#define F15_CTR(i)  (0xC0010201u + 2u * (i))
/* APM Vol. 2 §13.2.2 (PerfMonV2) global MSRs */
#define G_STATUS    0xC0000300u     /* PerfCntrGlobalStatus */
#define G_CTL       0xC0000301u     /* PerfCntrGlobalCtl */
#define G_CLR       0xC0000302u     /* PerfCntrGlobalStatusClr */
#define G_SET       0xC0000303u     /* PerfCntrGlobalStatusSet */

/* PerfEvtSeln fields */
#define CTL_USR         (1ull << 16)
#define CTL_OS          (1ull << 17)
#define CTL_EDGE        (1ull << 18)
#define CTL_INT         (1ull << 20)
#define CTL_EN          (1ull << 22)
#define CTL_INV         (1ull << 23)
#define CTL_CMASK(n)    ((uint64_t)(n) << 24)
#define CTL_GUEST_ONLY  (1ull << 40)
#define CTL_HOST_ONLY   (1ull << 41)

/* Instructions retired (0xC0/00) at every CPL: 0x4300C0 */
#define CTL_INSNS       (CTL_EN | CTL_OS | CTL_USR | 0xC0)

/* 2^48 - n: a counter n events before its wrap */
#define CTR_MINUS(n)    (0x1000000000000ull - (n))

/* Levels under test, also the column order of the per-level tables. */
enum AmdLevelIdx {
    L_K7, L_CORE, L_V2_1, L_V2_2, L_V2_3, L_V2_4, L_V2_5, L_V2_6, NR_L
};

static const struct {
    VpmuAmdLevel level;
    unsigned nr_gp;
    const char *name;
} levels[NR_L] = {
    [L_K7]   = { VPMU_AMD_K7, 4, "K7" },
    [L_CORE] = { VPMU_AMD_PERFCTR_CORE, 6, "PERFCTR_CORE" },
    [L_V2_1] = { VPMU_AMD_PERFMON_V2, 1, "PerfMonV2/1" },
    [L_V2_2] = { VPMU_AMD_PERFMON_V2, 2, "PerfMonV2/2" },
    [L_V2_3] = { VPMU_AMD_PERFMON_V2, 3, "PerfMonV2/3" },
    [L_V2_4] = { VPMU_AMD_PERFMON_V2, 4, "PerfMonV2/4" },
    [L_V2_5] = { VPMU_AMD_PERFMON_V2, 5, "PerfMonV2/5" },
    [L_V2_6] = { VPMU_AMD_PERFMON_V2, 6, "PerfMonV2/6" },
};

/* PerfCntrGlobalCtl enable bits per level, (1 << nr_gp) - 1 by hand */
static const uint64_t gctl_bits[NR_L] = {
    [L_K7] = 0, [L_CORE] = 0,
    [L_V2_1] = 0x1, [L_V2_2] = 0x3, [L_V2_3] = 0x7,
    [L_V2_4] = 0xF, [L_V2_5] = 0x1F, [L_V2_6] = 0x3F,
};

/* --- harness ----------------------------------------------------------- */

typedef struct AmdPmu {
    TestPmu t;          /* first: t is the PMI opaque, must not move */
    int l;
    unsigned n;         /* nr_gp */
    bool f15;           /* F15H MSRs exist (PERFCTR_CORE, PerfMonV2) */
    bool v2;            /* global MSRs exist (PerfMonV2) */
} AmdPmu;

static void amd_cfg(VpmuConfig *cfg, int l)
{
    vpmu_config_init(cfg, VPMU_VENDOR_AMD);
    cfg->amd_level = levels[l].level;
    cfg->nr_gp = levels[l].nr_gp;
}

static void amd_init_cfg(AmdPmu *a, int l, const VpmuConfig *cfg)
{
    test_pmu_init(&a->t, cfg);
    a->l = l;
    a->n = levels[l].nr_gp;
    a->f15 = levels[l].level != VPMU_AMD_K7;
    a->v2 = levels[l].level == VPMU_AMD_PERFMON_V2;
}

static void amd_init(AmdPmu *a, int l, bool raw_events)
{
    VpmuConfig cfg;

    amd_cfg(&cfg, l);
    cfg.raw_events = raw_events;
    amd_init_cfg(a, l, &cfg);
}

static void amd_fini(AmdPmu *a)
{
    test_pmu_fini(&a->t);
}

/* The natural MSR of counter i at this level (alias checks are separate). */
static uint32_t ctl(const AmdPmu *a, unsigned i)
{
    return a->f15 ? F15_CTL(i) : K7_CTL(i);
}

static uint32_t ctr(const AmdPmu *a, unsigned i)
{
    return a->f15 ? F15_CTR(i) : K7_CTR(i);
}

static uint64_t rd_at(AmdPmu *a, uint32_t msr, int line)
{
    uint64_t v = 0;
    int r = vpmu_pmu_rdmsr(a->t.pmu, msr, &v);

    ck_assert_msg(r == 0, "line %d [%s]: rdmsr 0x%x: ret %d want 0",
                  line, levels[a->l].name, msr, r);
    return v;
}

static void wr_at(AmdPmu *a, uint32_t msr, uint64_t val, int line)
{
    int r = vpmu_pmu_wrmsr(a->t.pmu, msr, val);

    ck_assert_msg(r == 0, "line %d [%s]: wrmsr 0x%x <- 0x%" PRIx64
                  ": ret %d want 0", line, levels[a->l].name, msr, val, r);
}

static void expect_at(AmdPmu *a, uint32_t msr, uint64_t want, int line)
{
    uint64_t got = rd_at(a, msr, line);

    ck_assert_msg(got == want, "line %d [%s]: rdmsr 0x%x = 0x%" PRIx64
                  " want 0x%" PRIx64, line, levels[a->l].name, msr, got, want);
}

static void info_at(AmdPmu *a, unsigned i, VpmuCounterInfo *out, int line)
{
    int r = vpmu_pmu_counter_info(a->t.pmu, VPMU_COUNTER_GP(i), out);

    ck_assert_msg(r == 0, "line %d [%s]: counter_info(%u): ret %d",
                  line, levels[a->l].name, i, r);
}

static void expect_state_at(AmdPmu *a, unsigned i, VpmuCounterState want,
                            int line)
{
    VpmuCounterInfo info;

    info_at(a, i, &info, line);
    ck_assert_msg(info.state == want, "line %d [%s]: counter %u state %d want %d",
                  line, levels[a->l].name, i, info.state, want);
}

#define RD(a, m)            rd_at((a), (m), __LINE__)
#define WR(a, m, v)         wr_at((a), (m), (v), __LINE__)
#define EXPECT(a, m, v)     expect_at((a), (m), (v), __LINE__)
#define EXPECT_CTR(a, i, v) expect_at((a), ctr((a), (i)), (v), __LINE__)
#define INFO(a, i, out)     info_at((a), (i), (out), __LINE__)
#define EXPECT_STATE(a, i, s) expect_state_at((a), (i), (s), __LINE__)
#define EXPECT_PMIS(a, want)                                               \
    ck_assert_msg((a)->t.pmis == (want), "line %d [%s]: %u PMIs want %u",  \
                  __LINE__, levels[(a)->l].name, (a)->t.pmis, (unsigned)(want))
#define RUN(a, ev, cpl, cnt) \
    vpmu_fake_source_run((a)->t.fake, (ev), 0, (cpl), (cnt))
#define RUN_RAW(a, cfg, cpl, cnt) \
    vpmu_fake_source_run((a)->t.fake, VPMU_EVENT_RAW, (cfg), (cpl), (cnt))
#define RETIRED(a, cpl, br) \
    vpmu_pmu_instruction_retired((a)->t.pmu, (cpl), (br))

/* --- the MSR map, one column per level --------------------------------- */

#define XG  (-1)    /* #GP: -EINVAL */

/* Reset value of each AMD PMU MSR, or XG where it does not exist. */
typedef struct MsrRow {
    int line;
    uint32_t msr;
    int64_t want[NR_L];
} MsrRow;

static const MsrRow msr_map[] = {
    /*                             K7  CORE  V2/1 V2/2 V2/3 V2/4 V2/5 V2/6 */
    { SRC_LINE, K7_CTL(0),      {  0,   0,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTL(1),      {  0,   0,   XG,   0,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTL(2),      {  0,   0,   XG,  XG,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTL(3),      {  0,   0,   XG,  XG,  XG,   0,   0,   0 } },
    { SRC_LINE, K7_CTR(0),      {  0,   0,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTR(1),      {  0,   0,   XG,   0,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTR(2),      {  0,   0,   XG,  XG,   0,   0,   0,   0 } },
    { SRC_LINE, K7_CTR(3),      {  0,   0,   XG,  XG,  XG,   0,   0,   0 } },
    { SRC_LINE, 0xC0010200,     { XG,   0,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010201,     { XG,   0,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010202,     { XG,   0,   XG,   0,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010203,     { XG,   0,   XG,   0,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010204,     { XG,   0,   XG,  XG,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010205,     { XG,   0,   XG,  XG,   0,   0,   0,   0 } },
    { SRC_LINE, 0xC0010206,     { XG,   0,   XG,  XG,  XG,   0,   0,   0 } },
    { SRC_LINE, 0xC0010207,     { XG,   0,   XG,  XG,  XG,   0,   0,   0 } },
    { SRC_LINE, 0xC0010208,     { XG,   0,   XG,  XG,  XG,  XG,   0,   0 } },
    { SRC_LINE, 0xC0010209,     { XG,   0,   XG,  XG,  XG,  XG,   0,   0 } },
    { SRC_LINE, 0xC001020A,     { XG,   0,   XG,  XG,  XG,  XG,  XG,   0 } },
    { SRC_LINE, 0xC001020B,     { XG,   0,   XG,  XG,  XG,  XG,  XG,   0 } },
    { SRC_LINE, G_STATUS,       { XG,  XG,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, G_CTL,          { XG,  XG,  0x1, 0x3, 0x7, 0xF, 0x1F, 0x3F } },
    { SRC_LINE, G_CLR,          { XG,  XG,    0,   0,   0,   0,   0,   0 } },
    { SRC_LINE, G_SET,          { XG,  XG,    0,   0,   0,   0,   0,   0 } },
};

/* Not AMD PMU MSRs at any level: -ENOENT, the front end's business. */
typedef struct MsrProbe {
    int line;
    uint32_t msr;
} MsrProbe;

static const MsrProbe noent_msrs[] = {
    { SRC_LINE, 0xC0010008 },   /* just past K7 PerfCtr3 */
    { SRC_LINE, 0xC001000F },
    { SRC_LINE, 0xC0010010 },   /* SYSCFG */
    { SRC_LINE, 0xC00101FF },   /* just below the F15H range */
    { SRC_LINE, 0xC001020C },   /* just past F15H PerfCtr5 */
    { SRC_LINE, 0xC001020F },
    { SRC_LINE, 0xC0010230 },   /* L3 PMC, not modelled */
    { SRC_LINE, 0xC0010240 },   /* DF PMC, not modelled */
    { SRC_LINE, 0xC00102FF },
    { SRC_LINE, 0xC00002FF },   /* just below the global range */
    { SRC_LINE, 0xC0000304 },   /* just past PerfCntrGlobalStatusSet */
    { SRC_LINE, 0xC0000080 },   /* EFER */
    { SRC_LINE, 0xC1 },         /* Intel IA32_PMC0 */
    { SRC_LINE, 0xC2 },
    { SRC_LINE, 0x186 },        /* Intel IA32_PERFEVTSEL0 */
    { SRC_LINE, 0x187 },
    { SRC_LINE, 0x309 },        /* Intel IA32_FIXED_CTR0 */
    { SRC_LINE, 0x345 },        /* Intel IA32_PERF_CAPABILITIES */
    { SRC_LINE, 0x38D },        /* Intel IA32_FIXED_CTR_CTRL */
    { SRC_LINE, 0x38E },        /* Intel IA32_PERF_GLOBAL_STATUS */
    { SRC_LINE, 0x38F },        /* Intel IA32_PERF_GLOBAL_CTRL */
    { SRC_LINE, 0x390 },
    { SRC_LINE, 0x391 },
    { SRC_LINE, 0x392 },
    { SRC_LINE, 0x4C1 },        /* Intel IA32_A_PMC0 */
    { SRC_LINE, 0x1D9 },        /* DEBUGCTL: not an AMD PMU MSR */
    { SRC_LINE, 0x0 },
    { SRC_LINE, 0xFFFFFFFF },
};

/* Every AMD MSR reads its reset value (or #GPs); every probe is -ENOENT. */
static void check_reset_values(AmdPmu *a)
{
    for (size_t r = 0; r < ARRAY_SIZE(msr_map); r++) {
        int64_t w = msr_map[r].want[a->l];
        MsrVector v = {
            .line = msr_map[r].line,
            .msr = msr_map[r].msr,
            .ret = w == XG ? -EINVAL : 0,
            .val = w == XG ? 0 : (uint64_t)w,
        };

        run_msr_vectors(a->t.pmu, &v, 1);
    }
    for (size_t r = 0; r < ARRAY_SIZE(noent_msrs); r++) {
        MsrVector v = {
            .line = noent_msrs[r].line,
            .msr = noent_msrs[r].msr,
            .ret = -ENOENT,
        };

        run_msr_vectors(a->t.pmu, &v, 1);
    }
}

START_TEST(test_reset_values)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    check_reset_values(&a);
    EXPECT_PMIS(&a, 0);
    amd_fini(&a);
}
END_TEST

/* Values no write may fault on (AMD drops reserved bits silently). */
static const uint64_t write_patterns[] = {
    0, ~0ull, 0x5555555555555555ull, 0xAAAAAAAAAAAAAAAAull,
    1ull << 63, CTL_HOST_ONLY | CTL_GUEST_ONLY, 0xFFFFFFFF00000000ull,
    CTL_INSNS,
};

/*
 * Writes to absent MSRs: #GP or -ENOENT, nothing changes, and the #GPs are
 * counted in stats.gp_faults.  Then every existing MSR takes every pattern.
 */
START_TEST(test_write_existence)
{
    AmdPmu a;
    VpmuStats before, after;
    uint64_t nr_gp_writes = 0;

    amd_init(&a, _i, false);
    vpmu_pmu_stats(a.t.pmu, &before);
    for (size_t p = 0; p < ARRAY_SIZE(write_patterns); p++) {
        for (size_t r = 0; r < ARRAY_SIZE(msr_map); r++) {
            MsrVector v = {
                .line = msr_map[r].line, .msr = msr_map[r].msr,
                .write = true, .val = write_patterns[p], .ret = -EINVAL,
            };

            if (msr_map[r].want[a.l] == XG) {
                run_msr_vectors(a.t.pmu, &v, 1);
                nr_gp_writes++;
            }
        }
        for (size_t r = 0; r < ARRAY_SIZE(noent_msrs); r++) {
            MsrVector v = {
                .line = noent_msrs[r].line, .msr = noent_msrs[r].msr,
                .write = true, .val = write_patterns[p], .ret = -ENOENT,
            };

            run_msr_vectors(a.t.pmu, &v, 1);
        }
    }
    vpmu_pmu_stats(a.t.pmu, &after);
    ck_assert_msg(after.gp_faults - before.gp_faults == nr_gp_writes,
                  "[%s] gp_faults +%" PRIu64 " want +%" PRIu64,
                  levels[a.l].name, after.gp_faults - before.gp_faults,
                  nr_gp_writes);
    /* Faulting writes changed nothing. */
    check_reset_values(&a);

    /* No write ever #GPs on an existing AMD MSR. */
    for (size_t p = 0; p < ARRAY_SIZE(write_patterns); p++) {
        for (size_t r = 0; r < ARRAY_SIZE(msr_map); r++) {
            MsrVector v = {
                .line = msr_map[r].line, .msr = msr_map[r].msr,
                .write = true, .val = write_patterns[p], .ret = 0,
            };

            if (msr_map[r].want[a.l] != XG) {
                run_msr_vectors(a.t.pmu, &v, 1);
            }
        }
    }
    amd_fini(&a);
}
END_TEST

/* --- silent masking ---------------------------------------------------- */

typedef struct MaskVec {
    int line;
    uint64_t val;
    uint64_t readback;
} MaskVec;

/* PERF_CTL: reserved 19, 21, 39:36, 63:42 and Host/GuestOnly 41:40 dropped. */
static const MaskVec ctl_masks[] = {
    { SRC_LINE, 0, 0 },
    { SRC_LINE, CTL_GUEST_ONLY, 0 },
    { SRC_LINE, CTL_HOST_ONLY, 0 },
    { SRC_LINE, CTL_HOST_ONLY | CTL_GUEST_ONLY | 0x130076, 0x130076 },
    { SRC_LINE, 1ull << 19, 0 },
    { SRC_LINE, 1ull << 21, 0 },
    { SRC_LINE, 0x0000000F00000000ull, 0x0000000F00000000ull },
    { SRC_LINE, 0x000000F000000000ull, 0 },     /* 39:36 */
    { SRC_LINE, 0xFFFFFFF000000000ull, 0 },
    { SRC_LINE, 0x0000000F00FFFFFFull, 0x0000000F00D7FFFFull },
    { SRC_LINE, 0x00000000002800FFull, 0xFF },
    { SRC_LINE, 0xFFFFFC0F00D7FFFFull, 0x0000000F00D7FFFFull },
    { SRC_LINE, 0x00000001001307C0ull, 0x00000001001307C0ull },
    { SRC_LINE, 0, 0 },
};

/* PERF_CTR: 48 bits, no sign extension (unlike Intel's legacy PMCs). */
static const MaskVec ctr_masks[] = {
    { SRC_LINE, ~0ull, 0xFFFFFFFFFFFFull },
    { SRC_LINE, 0x123456789ABCDEF0ull, 0x56789ABCDEF0ull },
    { SRC_LINE, 1ull << 48, 0 },
    { SRC_LINE, 0x800000000000ull, 0x800000000000ull },
    { SRC_LINE, 0x80000000ull, 0x80000000ull },
    { SRC_LINE, 0xFFFFFFFFull, 0xFFFFFFFFull },
    { SRC_LINE, 0xFFFF000000000001ull, 1 },
    { SRC_LINE, 0, 0 },
};

static void run_masks(AmdPmu *a, uint32_t msr, const MaskVec *m, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        MsrVector v = {
            .line = m[k].line, .msr = msr, .write = true, .val = m[k].val,
            .readback = m[k].readback, .check_readback = true,
        };

        run_msr_vectors(a->t.pmu, &v, 1);
    }
}

/* Every existing CTL/CTR MSR, K7 and F15H, drops reserved bits silently. */
START_TEST(test_ctl_ctr_masks)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        if (i < 4) {
            run_masks(&a, K7_CTL(i), ctl_masks, ARRAY_SIZE(ctl_masks));
            run_masks(&a, K7_CTR(i), ctr_masks, ARRAY_SIZE(ctr_masks));
        }
        if (a.f15) {
            run_masks(&a, F15_CTL(i), ctl_masks, ARRAY_SIZE(ctl_masks));
            run_masks(&a, F15_CTR(i), ctr_masks, ARRAY_SIZE(ctr_masks));
        }
    }
    amd_fini(&a);
}
END_TEST

/*
 * CMASK [31:24] is kept (APM PerfEvtSeln[31:24] CntMask; KVM's reserved mask
 * 0xfffffff000280000).  docs/msrs.md's 0x0000000F00FFFFFF formula would drop
 * it, contradicting its own layout line; see the file comment.
 */
static const MaskVec cmask_masks[] = {
    { SRC_LINE, ~0ull, 0x0000000FFFD7FFFFull },
    { SRC_LINE, 0xFF000000ull, 0xFF000000ull },
    { SRC_LINE, CTL_CMASK(2) | 0xC0, CTL_CMASK(2) | 0xC0 },
    { SRC_LINE, 0x123456789ABCDEF0ull, 0x000000089A94DEF0ull },
    { SRC_LINE, 0, 0 },
};

START_TEST(test_ctl_cmask_kept)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        if (i < 4) {
            run_masks(&a, K7_CTL(i), cmask_masks, ARRAY_SIZE(cmask_masks));
        }
        if (a.f15) {
            run_masks(&a, F15_CTL(i), cmask_masks, ARRAY_SIZE(cmask_masks));
        }
    }
    amd_fini(&a);
}
END_TEST

/* --- K7 / F15H aliasing ------------------------------------------------ */

#define V_WR(m, v, rb) \
    { SRC_LINE, .msr = (m), .write = true, .val = (v), .readback = (rb), \
      .check_readback = true }
#define V_RD(m, v)  { SRC_LINE, .msr = (m), .val = (v) }

/* Counters 0-3: K7 and F15H name the same registers, both ways. */
static const MsrVector alias_k7[4][8] = {
    {
        V_WR(K7_CTR(0), 0x0000100000000000ull, 0x100000000000ull),
        V_RD(0xC0010201, 0x100000000000ull),
        V_WR(0xC0010201, 0xFFFF100000000010ull, 0x100000000010ull),
        V_RD(K7_CTR(0), 0x100000000010ull),
        V_WR(K7_CTL(0), 0x0000000100130010ull, 0x100130010ull),
        V_RD(0xC0010200, 0x100130010ull),
        V_WR(0xC0010200, 0x0000030000130010ull, 0x130010ull),
        V_RD(K7_CTL(0), 0x130010ull),
    }, {
        V_WR(K7_CTR(1), 0x0000200000000000ull, 0x200000000000ull),
        V_RD(0xC0010203, 0x200000000000ull),
        V_WR(0xC0010203, 0xFFFF200000000020ull, 0x200000000020ull),
        V_RD(K7_CTR(1), 0x200000000020ull),
        V_WR(K7_CTL(1), 0x0000000200130020ull, 0x200130020ull),
        V_RD(0xC0010202, 0x200130020ull),
        V_WR(0xC0010202, 0x0000030000130020ull, 0x130020ull),
        V_RD(K7_CTL(1), 0x130020ull),
    }, {
        V_WR(K7_CTR(2), 0x0000300000000000ull, 0x300000000000ull),
        V_RD(0xC0010205, 0x300000000000ull),
        V_WR(0xC0010205, 0xFFFF300000000030ull, 0x300000000030ull),
        V_RD(K7_CTR(2), 0x300000000030ull),
        V_WR(K7_CTL(2), 0x0000000300130030ull, 0x300130030ull),
        V_RD(0xC0010204, 0x300130030ull),
        V_WR(0xC0010204, 0x0000030000130030ull, 0x130030ull),
        V_RD(K7_CTL(2), 0x130030ull),
    }, {
        V_WR(K7_CTR(3), 0x0000400000000000ull, 0x400000000000ull),
        V_RD(0xC0010207, 0x400000000000ull),
        V_WR(0xC0010207, 0xFFFF400000000040ull, 0x400000000040ull),
        V_RD(K7_CTR(3), 0x400000000040ull),
        V_WR(K7_CTL(3), 0x0000000400130040ull, 0x400130040ull),
        V_RD(0xC0010206, 0x400130040ull),
        V_WR(0xC0010206, 0x0000030000130040ull, 0x130040ull),
        V_RD(K7_CTL(3), 0x130040ull),
    },
};

/* Counters 4-5 have only F15H MSRs. */
static const MsrVector alias_f15_only[2][2] = {
    {
        V_WR(0xC0010209, 0xFFFF500000000050ull, 0x500000000050ull),
        V_WR(0xC0010208, 0x0000030000130050ull, 0x130050ull),
    }, {
        V_WR(0xC001020B, 0xFFFF600000000060ull, 0x600000000060ull),
        V_WR(0xC001020A, 0x0000030000130060ull, 0x130060ull),
    },
};

/* After all of the above: each register holds its own value, nothing else. */
static const MsrVector alias_final[6][4] = {
    {
        V_RD(0xC0010200, 0x130010ull), V_RD(0xC0010201, 0x100000000010ull),
        V_RD(K7_CTL(0), 0x130010ull), V_RD(K7_CTR(0), 0x100000000010ull),
    }, {
        V_RD(0xC0010202, 0x130020ull), V_RD(0xC0010203, 0x200000000020ull),
        V_RD(K7_CTL(1), 0x130020ull), V_RD(K7_CTR(1), 0x200000000020ull),
    }, {
        V_RD(0xC0010204, 0x130030ull), V_RD(0xC0010205, 0x300000000030ull),
        V_RD(K7_CTL(2), 0x130030ull), V_RD(K7_CTR(2), 0x300000000030ull),
    }, {
        V_RD(0xC0010206, 0x130040ull), V_RD(0xC0010207, 0x400000000040ull),
        V_RD(K7_CTL(3), 0x130040ull), V_RD(K7_CTR(3), 0x400000000040ull),
    }, {
        V_RD(0xC0010208, 0x130050ull), V_RD(0xC0010209, 0x500000000050ull),
    }, {
        V_RD(0xC001020A, 0x130060ull), V_RD(0xC001020B, 0x600000000060ull),
    },
};

/* PERFCTR_CORE and PerfMonV2 only: columns L_CORE.. */
START_TEST(test_k7_f15h_alias)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        if (i < 4) {
            run_msr_vectors(a.t.pmu, alias_k7[i], ARRAY_SIZE(alias_k7[i]));
        } else {
            run_msr_vectors(a.t.pmu, alias_f15_only[i - 4],
                            ARRAY_SIZE(alias_f15_only[i - 4]));
        }
    }
    for (unsigned i = 0; i < a.n; i++) {
        run_msr_vectors(a.t.pmu, alias_final[i], i < 4 ? 4 : 2);
    }
    amd_fini(&a);
}
END_TEST

/* --- PerfMonV2 global MSRs --------------------------------------------- */

/* For writes, want[] is the readback of the same MSR; columns nr_gp 1..6. */
typedef struct GlobalVec {
    int line;
    uint32_t msr;
    bool write;
    uint64_t val;
    uint64_t want[6];
} GlobalVec;

#define GW(m, v, ...) { SRC_LINE, (m), true, (v), { __VA_ARGS__ } }
#define GR(m, ...)    { SRC_LINE, (m), false, 0, { __VA_ARGS__ } }
#define ALL6(x)       x, x, x, x, x, x
#define MASK6         0x1, 0x3, 0x7, 0xF, 0x1F, 0x3F

static const GlobalVec global_vecs[] = {
    GR(G_CTL, MASK6),
    GW(G_CTL, ~0ull, MASK6),
    GW(G_CTL, 0, ALL6(0)),
    GW(G_CTL, 0xFFFFFFFFFFFFFFC0ull, ALL6(0)),
    GW(G_CTL, 0x2A, 0x0, 0x2, 0x2, 0xA, 0xA, 0x2A),
    GW(G_CTL, 0x15, 0x1, 0x1, 0x5, 0x5, 0x15, 0x15),
    GW(G_CTL, 0x0000000700000001ull, ALL6(0x1)),    /* Intel fixed bits */
    GW(G_CTL, 0x8000000000000003ull, 0x1, 0x3, 0x3, 0x3, 0x3, 0x3),
    GW(G_CTL, ~0ull, MASK6),
    GR(G_STATUS, ALL6(0)),
    GR(G_CLR, ALL6(0)),
    GR(G_SET, ALL6(0)),
    /* STATUS_SET: write-1-to-set counter bits, reads 0 */
    GW(G_SET, ~0ull, ALL6(0)),
    GR(G_STATUS, MASK6),
    /* GLOBAL_STATUS is read-only: the write is served and ignored */
    GW(G_STATUS, 0, MASK6),
    /* STATUS_CLR: write-1-to-clear counter bits, reads 0 */
    GW(G_CLR, 0x1, ALL6(0)),
    GR(G_STATUS, 0x0, 0x2, 0x6, 0xE, 0x1E, 0x3E),
    GW(G_CLR, 0xFFFFFFFFFFFFFFC0ull, ALL6(0)),
    GR(G_STATUS, 0x0, 0x2, 0x6, 0xE, 0x1E, 0x3E),
    GW(G_CLR, ~0ull, ALL6(0)),
    GR(G_STATUS, ALL6(0)),
    GW(G_SET, 0xFFFFFFFFFFFFFFC0ull, ALL6(0)),      /* others dropped */
    GR(G_STATUS, ALL6(0)),
    GW(G_STATUS, ~0ull, ALL6(0)),                   /* ignored */
    GW(G_SET, 0x20, ALL6(0)),
    GR(G_STATUS, 0x0, 0x0, 0x0, 0x0, 0x0, 0x20),
    GW(G_SET, 0x1, ALL6(0)),
    GR(G_STATUS, 0x1, 0x1, 0x1, 0x1, 0x1, 0x21),
    GW(G_CLR, 0x21, ALL6(0)),
    GR(G_STATUS, ALL6(0)),
    GR(G_CTL, MASK6),                               /* status ops left it */
};

/* PerfMonV2 columns only. */
START_TEST(test_global_msrs)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (size_t k = 0; k < ARRAY_SIZE(global_vecs); k++) {
        const GlobalVec *g = &global_vecs[k];
        MsrVector v = {
            .line = g->line, .msr = g->msr, .write = g->write,
            .val = g->write ? g->val : g->want[a.n - 1],
            .readback = g->want[a.n - 1], .check_readback = g->write,
        };

        run_msr_vectors(a.t.pmu, &v, 1);
    }
    /* STATUS_SET never raises a PMI. */
    EXPECT_PMIS(&a, 0);
    amd_fini(&a);
}
END_TEST

/* --- RDPMC ------------------------------------------------------------- */

/* Counter values the RDPMC test programs, as the write masks them. */
typedef struct RdpmcVec {
    int line;
    uint32_t ecx;
    int64_t want[NR_L];     /* value, or XG */
} RdpmcVec;

#define R0  0xFFFFFFFFFFFFll
#define R1  0x200000000001ll
#define R2  0x300000000002ll
#define R3  0x400000000003ll
#define R4  0x500000000004ll
#define R5  0x600000000005ll

static const uint64_t rdpmc_preset[6] = {
    ~0ull, 0xFFFF200000000001ull, 0x0001300000000002ull,
    0x400000000003ull, 0xABCD500000000004ull, 0xDEAD600000000005ull,
};

static const RdpmcVec rdpmc_vecs[] = {
    /*                       K7  CORE V2/1 V2/2 V2/3 V2/4 V2/5 V2/6 */
    { SRC_LINE, 0,          { R0,  R0,  R0,  R0,  R0,  R0,  R0,  R0 } },
    { SRC_LINE, 1,          { R1,  R1,  XG,  R1,  R1,  R1,  R1,  R1 } },
    { SRC_LINE, 2,          { R2,  R2,  XG,  XG,  R2,  R2,  R2,  R2 } },
    { SRC_LINE, 3,          { R3,  R3,  XG,  XG,  XG,  R3,  R3,  R3 } },
    { SRC_LINE, 4,          { XG,  R4,  XG,  XG,  XG,  XG,  R4,  R4 } },
    { SRC_LINE, 5,          { XG,  R5,  XG,  XG,  XG,  XG,  XG,  R5 } },
    { SRC_LINE, 6,          { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 7,          { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 8,          { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 15,         { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 16,         { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x100,      { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x10000,    { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x40000000, { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x40000001, { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x80000000, { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0x80000001, { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
    { SRC_LINE, 0xFFFFFFFF, { XG,  XG,  XG,  XG,  XG,  XG,  XG,  XG } },
};

START_TEST(test_rdpmc)
{
    AmdPmu a;
    VpmuStats before, after;
    uint64_t faults = 0;

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        WR(&a, ctr(&a, i), rdpmc_preset[i]);
    }
    vpmu_pmu_stats(a.t.pmu, &before);
    for (size_t k = 0; k < ARRAY_SIZE(rdpmc_vecs); k++) {
        const RdpmcVec *v = &rdpmc_vecs[k];
        int64_t w = v->want[a.l];
        uint64_t got = 0;
        int r = vpmu_pmu_rdpmc(a.t.pmu, v->ecx, &got);

        ck_assert_msg(r == (w == XG ? -EINVAL : 0),
                      "line %d [%s]: rdpmc 0x%x: ret %d", v->line,
                      levels[a.l].name, v->ecx, r);
        ck_assert_msg(w == XG || got == (uint64_t)w,
                      "line %d [%s]: rdpmc 0x%x = 0x%" PRIx64 " want 0x%"
                      PRIx64, v->line, levels[a.l].name, v->ecx, got,
                      (uint64_t)w);
        faults += w == XG;
    }
    vpmu_pmu_stats(a.t.pmu, &after);
    ck_assert_uint_eq(after.gp_faults - before.gp_faults, faults);
    amd_fini(&a);
}
END_TEST

/* --- CPUID ------------------------------------------------------------- */

#define C_K7        (1u << L_K7)
#define C_CORE      (1u << L_CORE)
#define C_V2(n)     (1u << (L_V2_1 + (n) - 1))
#define C_V2_ALL    (C_V2(1) | C_V2(2) | C_V2(3) | C_V2(4) | C_V2(5) | C_V2(6))
#define C_ALL       (C_K7 | C_CORE | C_V2_ALL)

typedef struct CpuidVec {
    int line;
    unsigned levels;    /* C_* columns the row applies to */
    uint32_t leaf, subleaf;
    uint32_t in[4];     /* EAX EBX ECX EDX as the front end has them */
    int ret;
    bool ret_either;    /* docs do not say whether the leaf is a PMU leaf */
    uint32_t out[4];
} CpuidVec;

#define AUTH    0x68747541, 0x444D4163, 0x69746E65  /* "AuthenticAMD" */
#define JUNK    0xDEADBEEF, 0xCAFEF00D, 0x12345678, 0x9ABCDEF0

static const CpuidVec cpuid_vecs[] = {
    /* 0x80000000: max extended leaf raised to 0x80000022 with PerfMonV2 */
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x80000008, AUTH }, 0, false,
      { 0x80000022, AUTH } },
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x80000000, AUTH }, 0, false,
      { 0x80000022, AUTH } },
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x80000021, AUTH }, 0, false,
      { 0x80000022, AUTH } },
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x80000022, AUTH }, 0, false,
      { 0x80000022, AUTH } },
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x80000028, AUTH }, 0, false,
      { 0x80000028, AUTH } },   /* never lowered */
    { SRC_LINE, C_V2_ALL, 0x80000000, 0, { 0x8000FFFF, AUTH }, 0, false,
      { 0x8000FFFF, AUTH } },
    /* ... and not raised without PerfMonV2 */
    { SRC_LINE, C_K7 | C_CORE, 0x80000000, 0, { 0x80000008, AUTH }, 0, true,
      { 0x80000008, AUTH } },
    { SRC_LINE, C_K7 | C_CORE, 0x80000000, 0, { 0x80000028, AUTH }, 0, true,
      { 0x80000028, AUTH } },
    /* 0x80000001: ECX.PerfCtrExtCore[23], other bits and registers kept */
    { SRC_LINE, C_K7, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0x00000000, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0x00000000, 0x2FD3FBFF } },
    { SRC_LINE, C_CORE | C_V2_ALL, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0x00000000, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0x00800000, 0x2FD3FBFF } },
    { SRC_LINE, C_K7, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0xFFFFFFFF, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0xFF7FFFFF, 0x2FD3FBFF } },
    { SRC_LINE, C_CORE | C_V2_ALL, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0xFFFFFFFF, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0xFFFFFFFF, 0x2FD3FBFF } },
    { SRC_LINE, C_K7, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0x754237FF, 0x2FD3FBFF } },
    { SRC_LINE, C_CORE | C_V2_ALL, 0x80000001, 0,
      { 0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF }, 0, false,
      { 0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF } },
    { SRC_LINE, C_K7, 0x80000001, 0, { JUNK }, 0, false,
      { 0xDEADBEEF, 0xCAFEF00D, 0x12345678, 0x9ABCDEF0 } },
    { SRC_LINE, C_CORE | C_V2_ALL, 0x80000001, 0, { JUNK }, 0, false,
      { 0xDEADBEEF, 0xCAFEF00D, 0x12B45678, 0x9ABCDEF0 } },
    /* 0x80000022: PerfMonV2 EAX[0], EBX[3:0] NumCorePmc; else all zero */
    { SRC_LINE, C_K7 | C_CORE, 0x80000022, 0, { JUNK }, 0, false,
      { 0, 0, 0, 0 } },
    { SRC_LINE, C_V2(1), 0x80000022, 0, { JUNK }, 0, false, { 1, 1, 0, 0 } },
    { SRC_LINE, C_V2(2), 0x80000022, 0, { JUNK }, 0, false, { 1, 2, 0, 0 } },
    { SRC_LINE, C_V2(3), 0x80000022, 0, { JUNK }, 0, false, { 1, 3, 0, 0 } },
    { SRC_LINE, C_V2(4), 0x80000022, 0, { JUNK }, 0, false, { 1, 4, 0, 0 } },
    { SRC_LINE, C_V2(5), 0x80000022, 0, { JUNK }, 0, false, { 1, 5, 0, 0 } },
    { SRC_LINE, C_V2(6), 0x80000022, 0, { JUNK }, 0, false, { 1, 6, 0, 0 } },
    { SRC_LINE, C_V2(6), 0x80000022, 0, { 0, 0, 0, 0 }, 0, false,
      { 1, 6, 0, 0 } },
    /* Leaf 0xA: AMD has no architectural PMU leaf */
    { SRC_LINE, C_ALL, 0xA, 0, { JUNK }, 0, false, { 0, 0, 0, 0 } },
    { SRC_LINE, C_ALL, 0xA, 1, { JUNK }, 0, false, { 0, 0, 0, 0 } },
    { SRC_LINE, C_ALL, 0xA, 0, { 0x07300805, 0, 0, 0x603 }, 0, false,
      { 0, 0, 0, 0 } },
    /* Not PMU leaves on AMD: -ENOENT, registers untouched */
    { SRC_LINE, C_ALL, 0x0, 0, { 0x10, AUTH }, -ENOENT, false,
      { 0x10, AUTH } },
    { SRC_LINE, C_ALL, 0x1, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x7, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0xB, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x40000000, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x80000002, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x80000008, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x8000001F, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x80000021, 0, { JUNK }, -ENOENT, false, { JUNK } },
    { SRC_LINE, C_ALL, 0x80000023, 0, { JUNK }, -ENOENT, false, { JUNK } },
};

START_TEST(test_cpuid)
{
    AmdPmu a;
    unsigned rows = 0;

    amd_init(&a, _i, false);
    for (size_t k = 0; k < ARRAY_SIZE(cpuid_vecs); k++) {
        const CpuidVec *v = &cpuid_vecs[k];
        uint32_t regs[4];
        int r;

        if (!(v->levels & (1u << a.l))) {
            continue;
        }
        rows++;
        memcpy(regs, v->in, sizeof(regs));
        r = vpmu_pmu_cpuid(a.t.pmu, v->leaf, v->subleaf, regs);
        ck_assert_msg(r == v->ret || (v->ret_either && r == -ENOENT),
                      "line %d [%s]: cpuid 0x%x: ret %d want %d", v->line,
                      levels[a.l].name, v->leaf, r, v->ret);
        ck_assert_msg(!memcmp(regs, v->out, sizeof(regs)),
                      "line %d [%s]: cpuid 0x%x.%u = %08x %08x %08x %08x,"
                      " want %08x %08x %08x %08x", v->line, levels[a.l].name,
                      v->leaf, v->subleaf, regs[0], regs[1], regs[2], regs[3],
                      v->out[0], v->out[1], v->out[2], v->out[3]);
    }
    ck_assert_uint_gt(rows, 0);
    amd_fini(&a);
}
END_TEST

/* --- counting ---------------------------------------------------------- */

/* A #GP MSR for this level, if any, to show a faulting WRMSR counts nothing. */
static const uint32_t gp_msr[NR_L] = {
    [L_K7] = 0xC0010200, [L_CORE] = G_CTL,
    [L_V2_1] = 0xC0010202, [L_V2_2] = 0xC0010204, [L_V2_3] = 0xC0010206,
    [L_V2_4] = 0xC0010208, [L_V2_5] = 0xC001020A, [L_V2_6] = 0,
};

/*
 * docs/msrs.md "Counting the instructions vpmu emulates": a served WRMSR
 * adds one instruction at CPL 0 after the write; the disabling one adds
 * nothing; faulting or foreign WRMSRs and RDMSRs add nothing.
 */
START_TEST(test_wrmsr_counts_itself)
{
    AmdPmu a;
    unsigned last;

    amd_init(&a, _i, false);
    last = a.n - 1;
    WR(&a, ctr(&a, 0), 0);              /* counter disabled: 0 */
    EXPECT_CTR(&a, 0, 0);
    WR(&a, ctl(&a, 0), CTL_INSNS);      /* enabling WRMSR: 1 */
    EXPECT_CTR(&a, 0, 1);
    EXPECT_CTR(&a, 0, 1);               /* RDMSRs are not vpmu's to count */
    if (last > 0) {
        WR(&a, ctl(&a, last), 0);       /* any served PMU WRMSR: 2 */
    } else {
        WR(&a, G_CTL, 0x1);             /* (PerfMonV2/1) */
    }
    EXPECT_CTR(&a, 0, 2);
    ck_assert_int_eq(vpmu_pmu_wrmsr(a.t.pmu, 0xC0010010, 0), -ENOENT);
    EXPECT_CTR(&a, 0, 2);               /* not a PMU MSR: not counted here */
    if (gp_msr[a.l]) {
        ck_assert_int_eq(vpmu_pmu_wrmsr(a.t.pmu, gp_msr[a.l], 0), -EINVAL);
        EXPECT_CTR(&a, 0, 2);           /* #GP: nothing retires */
    }
    RETIRED(&a, 0, false);
    EXPECT_CTR(&a, 0, 3);
    RETIRED(&a, 3, false);
    EXPECT_CTR(&a, 0, 4);
    RETIRED(&a, 0, true);
    EXPECT_CTR(&a, 0, 5);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 10);
    EXPECT_CTR(&a, 0, 15);
    /* Writing the running counter: the value, then the WRMSR itself. */
    WR(&a, ctr(&a, 0), 100);
    EXPECT_CTR(&a, 0, 101);
    /* The disabling WRMSR is not counted, and nothing after it. */
    WR(&a, ctl(&a, 0), 0);
    EXPECT_CTR(&a, 0, 101);
    RETIRED(&a, 0, false);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 0, 10);
    EXPECT_CTR(&a, 0, 101);
    /* USR only: a WRMSR (CPL 0) is not counted. */
    WR(&a, ctl(&a, 0), CTL_EN | CTL_USR | 0xC0);
    EXPECT_CTR(&a, 0, 101);
    RETIRED(&a, 3, false);
    EXPECT_CTR(&a, 0, 102);
    RETIRED(&a, 0, false);
    EXPECT_CTR(&a, 0, 102);
    /* USR -> OS while enabled: this WRMSR counts at CPL 0. */
    WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | 0xC0);
    EXPECT_CTR(&a, 0, 103);
    RETIRED(&a, 3, false);
    EXPECT_CTR(&a, 0, 103);
    if (last > 0) {
        /* Each counter counting instructions at CPL 0 gets one. */
        WR(&a, ctl(&a, last), CTL_INSNS);
        EXPECT_CTR(&a, 0, 104);
        EXPECT_CTR(&a, last, 1);
        RETIRED(&a, 0, false);
        EXPECT_CTR(&a, 0, 105);
        EXPECT_CTR(&a, last, 2);
    } else {
        WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | 0xC0);
        RETIRED(&a, 0, false);
        EXPECT_CTR(&a, 0, 105);
    }
    if (a.v2) {
        uint64_t c_last = last > 0 ? 2 : 105;

        WR(&a, G_CTL, 0);               /* disabling: not counted */
        EXPECT_CTR(&a, 0, 105);
        EXPECT_CTR(&a, last, c_last);
        RETIRED(&a, 0, false);
        RUN(&a, VPMU_EVENT_INSTRUCTIONS, 0, 10);
        EXPECT_CTR(&a, 0, 105);
        WR(&a, G_CTL, gctl_bits[a.l]);  /* enabling: counted */
        EXPECT_CTR(&a, 0, 106);
        EXPECT_CTR(&a, last, last > 0 ? 3 : 106);
        WR(&a, G_STATUS, 0);            /* served (ignored) WRMSR retires */
        EXPECT_CTR(&a, 0, 107);
        WR(&a, G_CLR, 0);
        EXPECT_CTR(&a, 0, 108);
        WR(&a, G_SET, 0);
        EXPECT_CTR(&a, 0, 109);
        EXPECT_CTR(&a, last, last > 0 ? 6 : 109);
        if (last > 0) {
            WR(&a, G_CTL, 0x1);         /* counter 0 stays on, last goes off */
            EXPECT_CTR(&a, 0, 110);
            EXPECT_CTR(&a, last, 6);
        }
    }
    EXPECT_PMIS(&a, 0);
    amd_fini(&a);
}
END_TEST

/* USR counts at CPL 3, OS at CPL 0 (CPL 1-2 left to the source contract). */
typedef struct CplVec {
    int line;
    uint64_t ctl;
    unsigned cpl;
    uint64_t n;
    uint64_t want;      /* counter after: cleared, enabled, n events */
} CplVec;

static const CplVec cpl_vecs[] = {
    { SRC_LINE, CTL_EN | CTL_USR | 0xC0, 3, 7, 7 },
    { SRC_LINE, CTL_EN | CTL_USR | 0xC0, 0, 7, 0 },
    { SRC_LINE, CTL_EN | CTL_OS | 0xC0, 0, 7, 8 },  /* + enabling WRMSR */
    { SRC_LINE, CTL_EN | CTL_OS | 0xC0, 3, 7, 1 },
    { SRC_LINE, CTL_EN | CTL_OS | CTL_USR | 0xC0, 3, 7, 8 },
    { SRC_LINE, CTL_EN | CTL_OS | CTL_USR | 0xC0, 0, 7, 8 },
    { SRC_LINE, CTL_EN | 0xC0, 3, 7, 0 },           /* neither: nothing */
    { SRC_LINE, CTL_EN | 0xC0, 0, 7, 0 },
    { SRC_LINE, CTL_OS | CTL_USR | 0xC0, 3, 7, 0 }, /* EN clear */
    { SRC_LINE, CTL_OS | CTL_USR | 0xC0, 0, 7, 0 },
    { SRC_LINE, CTL_EN | CTL_USR | 0x76, 3, 9, 9 },
    { SRC_LINE, CTL_EN | CTL_USR | 0x76, 0, 9, 0 },
    { SRC_LINE, CTL_EN | CTL_OS | 0x76, 0, 9, 9 },  /* cycles: no WRMSR */
    { SRC_LINE, CTL_EN | CTL_OS | 0x76, 3, 9, 0 },
};

START_TEST(test_cpl_filter)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (size_t k = 0; k < ARRAY_SIZE(cpl_vecs); k++) {
        const CplVec *v = &cpl_vecs[k];
        VpmuArchEvent ev = (v->ctl & 0xFF) == 0x76 ? VPMU_EVENT_CYCLES
                                                    : VPMU_EVENT_INSTRUCTIONS;

        for (unsigned i = 0; i < a.n; i++) {
            uint64_t got;

            WR(&a, ctl(&a, i), 0);
            WR(&a, ctr(&a, i), 0);
            WR(&a, ctl(&a, i), v->ctl);
            RUN(&a, ev, v->cpl, v->n);
            got = RD(&a, ctr(&a, i));
            ck_assert_msg(got == v->want, "line %d [%s] counter %u: %" PRIu64
                          " want %" PRIu64, v->line, levels[a.l].name, i, got,
                          v->want);
            WR(&a, ctl(&a, i), 0);
        }
    }
    amd_fini(&a);
}
END_TEST

/* AMD event encodings: the architectural equivalents and look-alikes. */
typedef struct EventVec {
    int line;
    uint64_t code;          /* CTL [35:32], [15:8], [7:0] */
    VpmuArchEvent event;    /* decoded */
    VpmuCounterState state; /* with cfg.raw_events = false */
    VpmuArchEvent run;      /* what the fake source retires */
    uint64_t want;          /* counter after 5 of @run at CPL 3 */
} EventVec;

static const EventVec event_vecs[] = {
    { SRC_LINE, 0x76, VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_CYCLES, 5 },
    { SRC_LINE, 0xC0, VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_INSTRUCTIONS, 6 },     /* + the enabling WRMSR */
    { SRC_LINE, 0xC2, VPMU_EVENT_BRANCHES, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_BRANCHES, 5 },
    { SRC_LINE, 0xC3, VPMU_EVENT_BRANCH_MISSES, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_BRANCH_MISSES, 5 },
    { SRC_LINE, 0x077D, VPMU_EVENT_LLC_REFERENCES, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_LLC_REFERENCES, 5 },
    { SRC_LINE, 0x077E, VPMU_EVENT_LLC_MISSES, VPMU_COUNTER_COUNTING,
      VPMU_EVENT_LLC_MISSES, 5 },
    /* Intel encodings and near misses are raw on AMD */
    { SRC_LINE, 0x3C, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_CYCLES, 0 },
    { SRC_LINE, 0x013C, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_REF_CYCLES, 0 },
    { SRC_LINE, 0xC4, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_BRANCHES, 0 },
    { SRC_LINE, 0xC5, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_BRANCH_MISSES, 0 },
    { SRC_LINE, 0x4F2E, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_LLC_REFERENCES, 0 },
    { SRC_LINE, 0x412E, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_LLC_MISSES, 0 },
    { SRC_LINE, 0x01A4, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_TOPDOWN_SLOTS, 0 },
    { SRC_LINE, 0x01C0, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_INSTRUCTIONS, 0 },
    { SRC_LINE, 0x1000000C0ull, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_INSTRUCTIONS, 0 },
    { SRC_LINE, 0x200000076ull, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_CYCLES, 0 },
    { SRC_LINE, 0x0176, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_CYCLES, 0 },
    { SRC_LINE, 0x7D, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_LLC_REFERENCES, 0 },
    { SRC_LINE, 0x0F7E, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_LLC_MISSES, 0 },
    { SRC_LINE, 0x01C2, VPMU_EVENT_RAW, VPMU_COUNTER_UNSUPPORTED,
      VPMU_EVENT_BRANCHES, 0 },
};

START_TEST(test_events)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (size_t k = 0; k < ARRAY_SIZE(event_vecs); k++) {
        const EventVec *v = &event_vecs[k];
        uint64_t c = CTL_EN | CTL_OS | CTL_USR | v->code;
        unsigned i = k % a.n;
        VpmuCounterInfo info;

        WR(&a, ctl(&a, i), 0);
        WR(&a, ctr(&a, i), 0);
        WR(&a, ctl(&a, i), c);
        INFO(&a, i, &info);
        ck_assert_msg(info.id == VPMU_COUNTER_GP(i) && info.control == c &&
                      info.event == v->event && info.state == v->state,
                      "line %d [%s]: id %u control 0x%" PRIx64 " event %d"
                      " state %d, want %u 0x%" PRIx64 " %d %d", v->line,
                      levels[a.l].name, info.id, info.control, info.event,
                      info.state, i, c, v->event, v->state);
        RUN(&a, v->run, 3, 5);
        ck_assert_msg(RD(&a, ctr(&a, i)) == v->want, "line %d [%s]: counted"
                      " 0x%" PRIx64 " want %" PRIu64, v->line,
                      levels[a.l].name, RD(&a, ctr(&a, i)), v->want);
        INFO(&a, i, &info);
        ck_assert_uint_eq(info.value, v->want);
        WR(&a, ctl(&a, i), 0);
    }
    amd_fini(&a);
}
END_TEST

/* Cycles (0x76): nothing emulated adds to it. */
START_TEST(test_cycles)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | CTL_USR | 0x76);
    EXPECT_CTR(&a, 0, 0);
    RETIRED(&a, 0, false);
    RETIRED(&a, 3, true);
    EXPECT_CTR(&a, 0, 0);
    RUN(&a, VPMU_EVENT_CYCLES, 3, 25);
    EXPECT_CTR(&a, 0, 25);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 25);
    RUN(&a, VPMU_EVENT_REF_CYCLES, 3, 25);
    EXPECT_CTR(&a, 0, 25);
    WR(&a, ctr(&a, 0), 7);
    EXPECT_CTR(&a, 0, 7);
    RUN(&a, VPMU_EVENT_CYCLES, 0, 3);
    EXPECT_CTR(&a, 0, 10);
    amd_fini(&a);
}
END_TEST

/* Branches (0xC2): instruction_retired(branch) adds to branches and insns. */
START_TEST(test_branches)
{
    AmdPmu a;
    unsigned ins;

    amd_init(&a, _i, false);
    ins = a.n > 1 ? 1 : 0;
    WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | CTL_USR | 0xC2);
    EXPECT_CTR(&a, 0, 0);               /* a WRMSR is not a branch */
    if (ins) {
        WR(&a, ctl(&a, ins), CTL_INSNS);
        EXPECT_CTR(&a, 0, 0);
        EXPECT_CTR(&a, ins, 1);
    }
    RETIRED(&a, 3, true);
    EXPECT_CTR(&a, 0, 1);
    RETIRED(&a, 3, false);
    EXPECT_CTR(&a, 0, 1);
    RETIRED(&a, 0, true);
    EXPECT_CTR(&a, 0, 2);
    if (ins) {
        EXPECT_CTR(&a, ins, 4);
    }
    RUN(&a, VPMU_EVENT_BRANCHES, 3, 10);
    EXPECT_CTR(&a, 0, 12);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 7);
    EXPECT_CTR(&a, 0, 12);
    if (ins) {
        EXPECT_CTR(&a, ins, 11);
        WR(&a, ctl(&a, 0), 0);
        EXPECT_CTR(&a, ins, 12);
        RETIRED(&a, 0, true);
        EXPECT_CTR(&a, 0, 12);
        EXPECT_CTR(&a, ins, 13);
    }
    amd_fini(&a);
}
END_TEST

/*
 * EventSelect[11:8] (CTL[35:32]): 0x1C0 is not instructions.  Without
 * raw_events it counts nothing; with raw_events the source gets raw_config =
 * the event-defining bits only (source.h), so the fake counts exactly the
 * RAW runs with that config.
 */
typedef struct RawVec {
    int line;
    uint64_t ctl;           /* as written (flags, Host/GuestOnly) */
    uint64_t raw_config;    /* what the source must be asked for */
} RawVec;

static const RawVec raw_vecs[] = {
    { SRC_LINE, CTL_EN | CTL_OS | CTL_USR | 0x1000000C0ull, 0x1000000C0ull },
    { SRC_LINE, CTL_EN | CTL_USR | CTL_INT | 0x1000000C0ull, 0x1000000C0ull },
    { SRC_LINE, CTL_HOST_ONLY | CTL_GUEST_ONLY | CTL_EN | CTL_USR |
      0xF0000FF76ull, 0xF0000FF76ull },
    { SRC_LINE, CTL_EN | CTL_USR | 0x01C0, 0x01C0 },
    { SRC_LINE, CTL_EN | CTL_USR | 0x3C, 0x3C },
    { SRC_LINE, CTL_EN | CTL_USR | CTL_OS | 0x200000076ull, 0x200000076ull },
    { SRC_LINE, CTL_EN | CTL_USR | (1ull << 19) | (1ull << 21) | 0x4F2E,
      0x4F2E },
};

START_TEST(test_raw_event_select)
{
    for (int raw = 0; raw <= 1; raw++) {
        AmdPmu a;

        amd_init(&a, _i, raw);
        for (size_t k = 0; k < ARRAY_SIZE(raw_vecs); k++) {
            const RawVec *v = &raw_vecs[k];
            unsigned i = a.n - 1 - k % a.n;
            VpmuCounterInfo info;
            uint64_t want = raw ? 5 : 0;

            WR(&a, ctl(&a, i), 0);
            WR(&a, ctr(&a, i), 0);
            WR(&a, ctl(&a, i), v->ctl);
            INFO(&a, i, &info);
            ck_assert_msg(info.event == VPMU_EVENT_RAW &&
                          info.state == (raw ? VPMU_COUNTER_COUNTING
                                             : VPMU_COUNTER_UNSUPPORTED),
                          "line %d [%s] raw_events=%d: event %d state %d",
                          v->line, levels[a.l].name, raw, info.event,
                          info.state);
            /* Not an architectural event: nothing emulated, no arch runs. */
            EXPECT_CTR(&a, i, 0);
            RETIRED(&a, 3, true);
            RETIRED(&a, 0, true);
            RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 9);
            RUN(&a, VPMU_EVENT_CYCLES, 3, 9);
            EXPECT_CTR(&a, i, 0);
            /* Wrong configs: the flags are not part of raw_config. */
            RUN_RAW(&a, v->ctl, 3, 9);
            RUN_RAW(&a, v->raw_config ^ 0x100000000ull, 3, 9);
            RUN_RAW(&a, v->raw_config | CTL_EN, 3, 9);
            ck_assert_msg(RD(&a, ctr(&a, i)) == 0, "line %d [%s] raw_events="
                          "%d: counted a foreign raw config", v->line,
                          levels[a.l].name, raw);
            RUN_RAW(&a, v->raw_config, 3, 5);
            ck_assert_msg(RD(&a, ctr(&a, i)) == want, "line %d [%s] raw_events"
                          "=%d: 0x%" PRIx64 " want %" PRIu64, v->line,
                          levels[a.l].name, raw, RD(&a, ctr(&a, i)), want);
            WR(&a, ctl(&a, i), 0);
        }
        amd_fini(&a);
    }
}
END_TEST

/*
 * EventSelect[11:8] changed in place (no write of 0 between): the core
 * reuses a counter's decoded event only for the same encoding, and
 * CTL[35:32] is part of it.
 */
START_TEST(test_event_select_rewrite)
{
    static const struct {
        uint64_t ctl;
        VpmuArchEvent event;
    } seq[] = {
        { CTL_INSNS, VPMU_EVENT_INSTRUCTIONS },
        { CTL_INSNS | 0x100000000ull, VPMU_EVENT_RAW },
        { CTL_INSNS | 0x100000000ull | CTL_INT, VPMU_EVENT_RAW },
        { CTL_INSNS | CTL_INT, VPMU_EVENT_INSTRUCTIONS },
        { CTL_INSNS | 0x100, VPMU_EVENT_RAW },          /* umask 1 */
        { CTL_INSNS, VPMU_EVENT_INSTRUCTIONS },
    };
    AmdPmu a;

    amd_init(&a, _i, true);
    for (size_t k = 0; k < ARRAY_SIZE(seq); k++) {
        VpmuCounterInfo info;

        WR(&a, ctl(&a, 0), seq[k].ctl);
        INFO(&a, 0, &info);
        ck_assert_msg(info.event == seq[k].event,
                      "[%s] write %zu (0x%" PRIx64 "): event %d, want %d",
                      levels[a.l].name, k, seq[k].ctl, (int)info.event,
                      (int)seq[k].event);
    }
    amd_fini(&a);
}
END_TEST

/* EDGE/INV/CMASK go to the source, which (fake) refuses: SOURCE_ERROR. */
typedef struct ErrVec {
    int line;
    uint64_t ctl;
} ErrVec;

static const ErrVec src_err_vecs[] = {
    { SRC_LINE, CTL_INSNS | CTL_EDGE },
    { SRC_LINE, CTL_INSNS | CTL_INV },
    { SRC_LINE, CTL_EN | CTL_USR | CTL_EDGE | 0x76 },
    { SRC_LINE, CTL_INSNS | CTL_CMASK(1) },     /* needs CMASK kept */
};

START_TEST(test_edge_inv_cmask)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    for (size_t k = 0; k < ARRAY_SIZE(src_err_vecs); k++) {
        const ErrVec *v = &src_err_vecs[k];
        VpmuCounterInfo info;

        WR(&a, ctl(&a, 0), 0);
        WR(&a, ctr(&a, 0), 0);
        WR(&a, ctl(&a, 0), v->ctl);
        INFO(&a, 0, &info);
        ck_assert_msg(info.state == VPMU_COUNTER_SOURCE_ERROR &&
                      info.control == v->ctl,
                      "line %d [%s]: state %d control 0x%" PRIx64, v->line,
                      levels[a.l].name, info.state, info.control);
        /* Not plain: emulated counts do not apply (nor does the source). */
        RETIRED(&a, 0, true);
        WR(&a, ctr(&a, a.n - 1), 0);
        RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 4);
        ck_assert_msg(RD(&a, ctr(&a, 0)) == 0, "line %d [%s]: counted 0x%"
                      PRIx64, v->line, levels[a.l].name, RD(&a, ctr(&a, 0)));
    }
    amd_fini(&a);
}
END_TEST

/* An architectural event the source cannot back (cfg.events) is UNSUPPORTED. */
START_TEST(test_unsupported_event)
{
    AmdPmu a;
    VpmuConfig cfg;
    VpmuStats st;

    amd_cfg(&cfg, _i);
    cfg.events = VPMU_EVENTS_ALL & ~VPMU_EVENT_BIT(VPMU_EVENT_CYCLES);
    amd_init_cfg(&a, _i, &cfg);
    WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | CTL_USR | 0x76);
    EXPECT_STATE(&a, 0, VPMU_COUNTER_UNSUPPORTED);
    RUN(&a, VPMU_EVENT_CYCLES, 3, 10);
    EXPECT_CTR(&a, 0, 0);
    vpmu_pmu_stats(a.t.pmu, &st);
    ck_assert_uint_ge(st.unsupported, 1);
    WR(&a, ctl(&a, 0), CTL_INSNS);
    EXPECT_STATE(&a, 0, VPMU_COUNTER_COUNTING);
    EXPECT_CTR(&a, 0, 1);
    amd_fini(&a);
}
END_TEST

/* PerfMonV2: a counter counts only with its GLOBAL_CTL bit. */
START_TEST(test_global_ctl_gate)
{
    AmdPmu a;
    unsigned last;

    amd_init(&a, _i, false);
    last = a.n - 1;
    WR(&a, ctl(&a, 0), CTL_EN | CTL_USR | 0xC0);
    WR(&a, ctl(&a, last), CTL_EN | CTL_USR | 0xC0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 5);
    WR(&a, G_CTL, gctl_bits[a.l] & ~1ull);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 5);
    EXPECT_CTR(&a, last, last > 0 ? 10 : 5);
    WR(&a, G_CTL, 0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    RETIRED(&a, 3, false);
    EXPECT_CTR(&a, 0, 5);
    EXPECT_CTR(&a, last, last > 0 ? 10 : 5);
    WR(&a, G_CTL, gctl_bits[a.l]);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 10);
    EXPECT_CTR(&a, last, last > 0 ? 15 : 10);
    /* A gated counter does not overflow either. */
    WR(&a, G_CTL, 0);
    WR(&a, ctl(&a, 0), CTL_EN | CTL_USR | CTL_INT | 0xC0);
    WR(&a, ctr(&a, 0), CTR_MINUS(1));
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 0xFFFFFFFFFFFFull);
    EXPECT(&a, G_STATUS, 0);
    EXPECT_PMIS(&a, 0);
    WR(&a, G_CTL, 0x1);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 1);
    EXPECT_CTR(&a, 0, 0);
    EXPECT(&a, G_STATUS, 0x1);
    EXPECT_PMIS(&a, 1);
    amd_fini(&a);
}
END_TEST

/* Writing a running counter: 0 restarts it, -1 overflows on the next event. */
START_TEST(test_write_running_counter)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    WR(&a, ctl(&a, 0), CTL_EN | CTL_USR | CTL_INT | 0xC0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 50);
    EXPECT_CTR(&a, 0, 50);
    WR(&a, ctr(&a, 0), 0);
    EXPECT_CTR(&a, 0, 0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 3);
    EXPECT_CTR(&a, 0, 3);
    WR(&a, ctr(&a, 0), ~0ull);
    EXPECT_CTR(&a, 0, 0xFFFFFFFFFFFFull);
    EXPECT_PMIS(&a, 0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 1);
    EXPECT_CTR(&a, 0, 0);
    EXPECT_PMIS(&a, 1);
    amd_fini(&a);
}
END_TEST

/* --- overflow ---------------------------------------------------------- */

static void overflow_one(int l, unsigned i)
{
    AmdPmu a;
    VpmuCounterInfo info;
    uint64_t bit;

    amd_init(&a, l, false);
    bit = 1ull << i;
    /* USR only, so the WRMSRs (CPL 0) add nothing. */
    WR(&a, ctr(&a, i), CTR_MINUS(5));
    WR(&a, ctl(&a, i), CTL_EN | CTL_USR | CTL_INT | 0xC0);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 4);
    EXPECT_CTR(&a, i, 0xFFFFFFFFFFFFull);
    EXPECT_PMIS(&a, 0);
    if (a.v2) {
        EXPECT(&a, G_STATUS, 0);
    }
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 1);    /* the 5th: wraps to 0 */
    EXPECT_CTR(&a, i, 0);
    EXPECT_PMIS(&a, 1);
    if (a.v2) {
        EXPECT(&a, G_STATUS, bit);
    } else {
        ck_assert_int_eq(vpmu_pmu_rdmsr(a.t.pmu, G_STATUS, &(uint64_t){0}),
                         -EINVAL);
    }
    INFO(&a, i, &info);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(info.pmis, 1);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 3);    /* keeps counting from 0 */
    EXPECT_CTR(&a, i, 3);
    EXPECT_PMIS(&a, 1);
    if (a.v2) {
        WR(&a, G_CLR, bit);
        EXPECT(&a, G_STATUS, 0);
    }
    /* Without INT: the wrap (and PerfMonV2 status), no PMI. */
    WR(&a, ctl(&a, i), CTL_EN | CTL_USR | 0xC0);
    WR(&a, ctr(&a, i), CTR_MINUS(2));
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 2);
    EXPECT_CTR(&a, i, 0);
    EXPECT_PMIS(&a, 1);
    if (a.v2) {
        EXPECT(&a, G_STATUS, bit);
    }
    /* Preset 1 - n: reads 1 after n events. */
    WR(&a, ctr(&a, i), CTR_MINUS(9));
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 10);
    EXPECT_CTR(&a, i, 1);
    INFO(&a, i, &info);
    ck_assert_uint_eq(info.overflows, 3);
    ck_assert_uint_eq(info.pmis, 1);
    EXPECT_PMIS(&a, 1);
    if (a.v2) {
        EXPECT(&a, G_STATUS, bit);
        /* STATUS_SET: sets, never a PMI, even with INT on. */
        WR(&a, ctl(&a, i), CTL_EN | CTL_USR | CTL_INT | 0xC0);
        WR(&a, G_CLR, bit);
        WR(&a, G_SET, bit);
        EXPECT(&a, G_STATUS, bit);
        EXPECT_PMIS(&a, 1);
    }
    amd_fini(&a);
}

START_TEST(test_overflow)
{
    overflow_one(_i, 0);
    overflow_one(_i, levels[_i].nr_gp - 1);
}
END_TEST

/* An emulated instruction can complete the period too. */
START_TEST(test_overflow_emulated)
{
    AmdPmu a;

    amd_init(&a, _i, false);
    WR(&a, ctr(&a, 0), CTR_MINUS(2));
    WR(&a, ctl(&a, 0), CTL_EN | CTL_OS | CTL_INT | 0xC0);  /* +1: WRMSR */
    EXPECT_CTR(&a, 0, 0xFFFFFFFFFFFFull);
    EXPECT_PMIS(&a, 0);
    RETIRED(&a, 0, false);
    EXPECT_CTR(&a, 0, 0);
    EXPECT_PMIS(&a, 1);
    if (a.v2) {
        EXPECT(&a, G_STATUS, 0x1);
    }
    RETIRED(&a, 0, false);
    EXPECT_CTR(&a, 0, 1);
    EXPECT_PMIS(&a, 1);
    amd_fini(&a);
}
END_TEST

/* --- counter info, reset, spans, filter -------------------------------- */

START_TEST(test_counter_info)
{
    AmdPmu a;
    VpmuCounterInfo info;
    static const uint32_t absent[] = {
        VPMU_COUNTER_GP(6), VPMU_COUNTER_GP(7), VPMU_COUNTER_GP(8),
        VPMU_COUNTER_GP(0xFFFF), VPMU_COUNTER_FIXED_ID(0),
        VPMU_COUNTER_FIXED_ID(1), VPMU_COUNTER_FIXED_ID(2),
        VPMU_COUNTER_FIXED_ID(3),
    };

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        INFO(&a, i, &info);
        ck_assert_uint_eq(info.id, VPMU_COUNTER_GP(i));
        ck_assert_uint_eq(info.value, 0);
        ck_assert_uint_eq(info.control, 0);
        ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);
        ck_assert_uint_eq(info.overflows, 0);
        ck_assert_uint_eq(info.pmis, 0);
        ck_assert_uint_eq(info.filtered, 0);
    }
    ck_assert_int_eq(vpmu_pmu_counter_info(a.t.pmu, VPMU_COUNTER_GP(a.n),
                                           &info), -ENOENT);
    for (size_t k = 0; k < ARRAY_SIZE(absent); k++) {
        ck_assert_int_eq(vpmu_pmu_counter_info(a.t.pmu, absent[k], &info),
                         -ENOENT);
    }
    /* control is the stored (masked) CTL; value what RDMSR reads. */
    WR(&a, ctl(&a, 0), CTL_HOST_ONLY | CTL_GUEST_ONLY | CTL_INT | CTL_INSNS);
    INFO(&a, 0, &info);
    ck_assert_uint_eq(info.control, CTL_INT | CTL_INSNS);
    ck_assert_int_eq(info.event, VPMU_EVENT_INSTRUCTIONS);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    ck_assert_uint_eq(info.value, 1);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 41);
    INFO(&a, 0, &info);
    ck_assert_uint_eq(info.value, 42);
    EXPECT_CTR(&a, 0, 42);
    WR(&a, ctl(&a, 0), CTL_OS | CTL_USR | 0xC0);      /* EN clear */
    INFO(&a, 0, &info);
    ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);
    ck_assert_uint_eq(info.control, CTL_OS | CTL_USR | 0xC0);
    ck_assert_uint_eq(info.value, 42);
    amd_fini(&a);
}
END_TEST

START_TEST(test_reset)
{
    AmdPmu a;
    VpmuStats st;

    amd_init(&a, _i, false);
    for (unsigned i = 0; i < a.n; i++) {
        WR(&a, ctr(&a, i), 0x1234);
        WR(&a, ctl(&a, i), CTL_INT | CTL_INSNS | 0x100000000ull);
        WR(&a, ctl(&a, i), CTL_INT | CTL_INSNS);
    }
    if (a.v2) {
        WR(&a, G_SET, gctl_bits[a.l]);
        WR(&a, G_CTL, 0x1);
    }
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    vpmu_pmu_reset(a.t.pmu);
    check_reset_values(&a);
    for (unsigned i = 0; i < a.n; i++) {
        EXPECT_STATE(&a, i, VPMU_COUNTER_OFF);
    }
    /* Nothing counts after RESET. */
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 0, 5);
    RETIRED(&a, 0, true);
    for (unsigned i = 0; i < a.n; i++) {
        EXPECT_CTR(&a, i, 0);
    }
    EXPECT_PMIS(&a, 0);
    /* Statistics are kept. */
    vpmu_pmu_stats(a.t.pmu, &st);
    ck_assert_uint_ge(st.wrmsr, 3 * a.n);
    /* And the PMU works again from the reset state. */
    WR(&a, ctl(&a, 0), CTL_INSNS);
    EXPECT_CTR(&a, 0, 1);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 6);
    amd_fini(&a);
}
END_TEST

START_TEST(test_msr_spans)
{
    AmdPmu a;
    VpmuMsrSpan s[64], one[1];
    size_t n;

    amd_init(&a, _i, false);
    n = vpmu_pmu_msr_spans(a.t.pmu, s, ARRAY_SIZE(s));
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, ARRAY_SIZE(s));
    for (size_t r = 0; r < ARRAY_SIZE(msr_map); r++) {
        ck_assert_msg(msr_map[r].want[a.l] == XG ||
                      in_spans(s, n, msr_map[r].msr),
                      "line %d [%s]: MSR 0x%x not in the spans",
                      msr_map[r].line, levels[a.l].name, msr_map[r].msr);
    }
    for (size_t r = 0; r < ARRAY_SIZE(noent_msrs); r++) {
        ck_assert_msg(!in_spans(s, n, noent_msrs[r].msr),
                      "line %d [%s]: MSR 0x%x (not a PMU MSR) in the spans",
                      noent_msrs[r].line, levels[a.l].name,
                      noent_msrs[r].msr);
    }
    /* Fewest runs: no empty, overlapping or touching spans. */
    for (size_t x = 0; x < n; x++) {
        ck_assert_uint_gt(s[x].count, 0);
        for (size_t y = 0; y < n; y++) {
            uint64_t xe = (uint64_t)s[x].base + s[x].count;

            ck_assert_msg(x == y || !(s[y].base >= s[x].base &&
                                      s[y].base <= xe),
                          "[%s]: spans %zu {0x%x,%u} and %zu {0x%x,%u} overlap"
                          " or touch", levels[a.l].name, x, s[x].base,
                          s[x].count, y, s[y].base, s[y].count);
        }
    }
    /* A short buffer still reports the full count. */
    ck_assert_uint_eq(vpmu_pmu_msr_spans(a.t.pmu, one, 1), n);
    ck_assert_uint_eq(one[0].base, s[0].base);
    ck_assert_uint_eq(one[0].count, s[0].count);
    amd_fini(&a);
}
END_TEST

/* The filter sees EventSelect[11:8]: 0xC0 and 0x1C0 are different events. */
START_TEST(test_filter)
{
    AmdPmu a;
    VpmuFilter *f;
    VpmuCounterInfo info;
    VpmuStats st;

    amd_init(&a, _i, true);
    ck_assert_int_eq(vpmu_filter_new(VPMU_FILTER_DENY, 0, &f), 0);
    ck_assert_int_eq(vpmu_filter_add(f, 0xC0), 0);
    ck_assert_int_eq(vpmu_pmu_set_filter(a.t.pmu, f), 0);
    vpmu_filter_free(f);                /* the PMU keeps a copy */

    WR(&a, ctl(&a, 0), CTL_INSNS);
    INFO(&a, 0, &info);
    ck_assert_int_eq(info.state, VPMU_COUNTER_FILTERED);
    ck_assert_uint_ge(info.filtered, 1);
    vpmu_pmu_stats(a.t.pmu, &st);
    ck_assert_uint_ge(st.filtered, 1);
    RETIRED(&a, 0, false);
    RUN(&a, VPMU_EVENT_INSTRUCTIONS, 3, 5);
    EXPECT_CTR(&a, 0, 0);               /* denied: not even the WRMSR */

    WR(&a, ctl(&a, 0), CTL_EN | CTL_USR | 0x1000000C0ull);
    EXPECT_STATE(&a, 0, VPMU_COUNTER_COUNTING);
    RUN_RAW(&a, 0x1000000C0ull, 3, 5);
    EXPECT_CTR(&a, 0, 5);

    ck_assert_int_eq(vpmu_filter_new(VPMU_FILTER_DENY, 0, &f), 0);
    ck_assert_int_eq(vpmu_filter_add(f, 0x1000000C0ull), 0);
    ck_assert_int_eq(vpmu_pmu_set_filter(a.t.pmu, f), 0);
    vpmu_filter_free(f);
    EXPECT_STATE(&a, 0, VPMU_COUNTER_FILTERED);
    RUN_RAW(&a, 0x1000000C0ull, 3, 5);
    EXPECT_CTR(&a, 0, 5);

    ck_assert_int_eq(vpmu_pmu_set_filter(a.t.pmu, NULL), 0);
    EXPECT_STATE(&a, 0, VPMU_COUNTER_COUNTING);
    RUN_RAW(&a, 0x1000000C0ull, 3, 5);
    EXPECT_CTR(&a, 0, 10);
    amd_fini(&a);
}
END_TEST

/* --- configuration ----------------------------------------------------- */

START_TEST(test_config_defaults)
{
    VpmuConfig cfg;
    char err[256] = "";

    memset(&cfg, 0xA5, sizeof(cfg));
    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    ck_assert_int_eq(cfg.vendor, VPMU_VENDOR_AMD);
    ck_assert_int_eq(cfg.amd_level, VPMU_AMD_PERFMON_V2);
    ck_assert_uint_eq(cfg.nr_gp, 6);
    ck_assert_uint_eq(cfg.nr_fixed, 0);
    ck_assert_uint_eq(cfg.gp_width, 48);
    ck_assert_uint_eq(cfg.fixed_width, 0);
    ck_assert(!cfg.pdcm);
    ck_assert_uint_eq(cfg.perf_capabilities, 0);
    ck_assert_uint_eq(cfg.events, VPMU_EVENTS_ALL);
    ck_assert(!cfg.raw_events);
    ck_assert_msg(vpmu_config_check(&cfg, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

typedef struct CfgVec {
    int line;
    VpmuAmdLevel level;
    unsigned nr_gp, nr_fixed, gp_width, fixed_width;
    bool pdcm;
    uint64_t caps;
    const char *field;      /* NULL: valid */
} CfgVec;

#define K7      VPMU_AMD_K7
#define CORE    VPMU_AMD_PERFCTR_CORE
#define V2      VPMU_AMD_PERFMON_V2

static const CfgVec cfg_vecs[] = {
    { SRC_LINE, K7, 4, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, CORE, 6, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 1, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 2, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 3, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 4, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 5, 0, 48, 0, false, 0, NULL },
    { SRC_LINE, V2, 6, 0, 48, 0, false, 0, NULL },
    /* K7: exactly 4 */
    { SRC_LINE, K7, 0, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, K7, 1, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, K7, 3, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, K7, 5, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, K7, 6, 0, 48, 0, false, 0, "nr_gp" },
    /* PERFCTR_CORE: exactly 6 */
    { SRC_LINE, CORE, 0, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, CORE, 4, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, CORE, 5, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, CORE, 7, 0, 48, 0, false, 0, "nr_gp" },
    /* PerfMonV2: 1-6 */
    { SRC_LINE, V2, 0, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, V2, 7, 0, 48, 0, false, 0, "nr_gp" },
    { SRC_LINE, V2, 8, 0, 48, 0, false, 0, "nr_gp" },
    /* 48-bit counters only */
    { SRC_LINE, V2, 6, 0, 47, 0, false, 0, "gp_width" },
    { SRC_LINE, V2, 6, 0, 49, 0, false, 0, "gp_width" },
    { SRC_LINE, V2, 6, 0, 32, 0, false, 0, "gp_width" },
    { SRC_LINE, V2, 6, 0, 64, 0, false, 0, "gp_width" },
    { SRC_LINE, V2, 6, 0, 0, 0, false, 0, "gp_width" },
    { SRC_LINE, K7, 4, 0, 40, 0, false, 0, "gp_width" },
    { SRC_LINE, CORE, 6, 0, 32, 0, false, 0, "gp_width" },
    /* no fixed counters */
    { SRC_LINE, V2, 6, 1, 48, 0, false, 0, "nr_fixed" },
    { SRC_LINE, V2, 6, 3, 48, 0, false, 0, "nr_fixed" },
    { SRC_LINE, K7, 4, 1, 48, 0, false, 0, "nr_fixed" },
    { SRC_LINE, CORE, 6, 4, 48, 0, false, 0, "nr_fixed" },
    { SRC_LINE, V2, 6, 0, 48, 48, false, 0, "fixed_width" },
    { SRC_LINE, K7, 4, 0, 48, 32, false, 0, "fixed_width" },
    /* Intel-only fields */
    { SRC_LINE, V2, 6, 0, 48, 0, true, 0, "pdcm" },
    { SRC_LINE, K7, 4, 0, 48, 0, true, 0, "pdcm" },
    { SRC_LINE, V2, 6, 0, 48, 0, false, VPMU_PERF_CAP_FW_WRITE,
      "perf_capabilities" },
    { SRC_LINE, CORE, 6, 0, 48, 0, false, 1, "perf_capabilities" },
    /* unknown level */
    { SRC_LINE, 0, 6, 0, 48, 0, false, 0, "amd_level" },
    { SRC_LINE, 4, 6, 0, 48, 0, false, 0, "amd_level" },
};

START_TEST(test_config_check)
{
    for (size_t k = 0; k < ARRAY_SIZE(cfg_vecs); k++) {
        const CfgVec *v = &cfg_vecs[k];
        VpmuConfig cfg;
        char err[256] = "";
        char small[16];
        int r;

        vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
        cfg.amd_level = v->level;
        cfg.nr_gp = v->nr_gp;
        cfg.nr_fixed = v->nr_fixed;
        cfg.gp_width = v->gp_width;
        cfg.fixed_width = v->fixed_width;
        cfg.pdcm = v->pdcm;
        cfg.perf_capabilities = v->caps;
        r = vpmu_config_check(&cfg, err, sizeof(err));
        if (!v->field) {
            ck_assert_msg(r == 0, "line %d: ret %d (%s)", v->line, r, err);
            continue;
        }
        ck_assert_msg(r == -EINVAL, "line %d: ret %d want -EINVAL", v->line, r);
        ck_assert_msg(strstr(err, v->field) != NULL,
                      "line %d: err \"%s\" does not name %s", v->line, err,
                      v->field);
        /* No message buffer, or a short one: same verdict, no overrun. */
        ck_assert_msg(vpmu_config_check(&cfg, NULL, 0) == -EINVAL,
                      "line %d: NULL err", v->line);
        memset(small, 'X', sizeof(small));
        ck_assert_msg(vpmu_config_check(&cfg, small, 4) == -EINVAL,
                      "line %d: short err", v->line);
        ck_assert_msg(memchr(small, '\0', 4) != NULL,
                      "line %d: short err not terminated", v->line);
        for (size_t b = 4; b < sizeof(small); b++) {
            ck_assert_msg(small[b] == 'X', "line %d: err overrun", v->line);
        }
    }
}
END_TEST

START_TEST(test_pmu_new)
{
    VpmuFakeSource *fake;
    VpmuPmu *pmu = NULL;
    VpmuConfig cfg;
    const VpmuConfig *got;
    char err[256] = "";
    VpmuPmuOpts opts = { .source_ops = vpmu_fake_source_ops() };

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;

    /* A bad config is refused with the field named; nothing is made. */
    amd_cfg(&cfg, L_K7);
    cfg.nr_gp = 6;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err)),
                     -EINVAL);
    ck_assert_msg(strstr(err, "nr_gp") != NULL, "err \"%s\"", err);
    ck_assert_ptr_null(pmu);

    /* Each level builds, and the PMU reports the config it was made with. */
    for (int l = 0; l < NR_L; l++) {
        amd_cfg(&cfg, l);
        ck_assert_msg(vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err)) == 0,
                      "[%s] %s", levels[l].name, err);
        got = vpmu_pmu_config(pmu);
        ck_assert_int_eq(got->vendor, VPMU_VENDOR_AMD);
        ck_assert_int_eq(got->amd_level, levels[l].level);
        ck_assert_uint_eq(got->nr_gp, levels[l].nr_gp);
        ck_assert_uint_eq(got->gp_width, 48);
        ck_assert_uint_eq(got->nr_fixed, 0);
        vpmu_pmu_free(pmu);
        pmu = NULL;
    }
    vpmu_fake_source_free(fake);
}
END_TEST

/* --- suite ------------------------------------------------------------- */

static Suite *amd_suite(void)
{
    Suite *s = suite_create("amd");
    TCase *tc;

    tc = tcase_create("config");
    tcase_add_test(tc, test_config_defaults);
    tcase_add_test(tc, test_config_check);
    tcase_add_test(tc, test_pmu_new);
    suite_add_tcase(s, tc);

    tc = tcase_create("msr-map");
    tcase_add_loop_test(tc, test_reset_values, 0, NR_L);
    tcase_add_loop_test(tc, test_write_existence, 0, NR_L);
    tcase_add_loop_test(tc, test_ctl_ctr_masks, 0, NR_L);
    tcase_add_loop_test(tc, test_ctl_cmask_kept, 0, NR_L);
    tcase_add_loop_test(tc, test_k7_f15h_alias, L_CORE, NR_L);
    tcase_add_loop_test(tc, test_global_msrs, L_V2_1, NR_L);
    suite_add_tcase(s, tc);

    tc = tcase_create("rdpmc-cpuid");
    tcase_add_loop_test(tc, test_rdpmc, 0, NR_L);
    tcase_add_loop_test(tc, test_cpuid, 0, NR_L);
    suite_add_tcase(s, tc);

    tc = tcase_create("counting");
    tcase_add_loop_test(tc, test_wrmsr_counts_itself, 0, NR_L);
    tcase_add_loop_test(tc, test_cpl_filter, 0, NR_L);
    tcase_add_loop_test(tc, test_events, 0, NR_L);
    tcase_add_loop_test(tc, test_cycles, 0, NR_L);
    tcase_add_loop_test(tc, test_branches, 0, NR_L);
    tcase_add_loop_test(tc, test_raw_event_select, 0, NR_L);
    tcase_add_loop_test(tc, test_event_select_rewrite, 0, NR_L);
    tcase_add_loop_test(tc, test_edge_inv_cmask, 0, NR_L);
    tcase_add_loop_test(tc, test_unsupported_event, 0, NR_L);
    tcase_add_loop_test(tc, test_global_ctl_gate, L_V2_1, NR_L);
    tcase_add_loop_test(tc, test_write_running_counter, 0, NR_L);
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow");
    tcase_add_loop_test(tc, test_overflow, 0, NR_L);
    tcase_add_loop_test(tc, test_overflow_emulated, 0, NR_L);
    suite_add_tcase(s, tc);

    tc = tcase_create("state");
    tcase_add_loop_test(tc, test_counter_info, 0, NR_L);
    tcase_add_loop_test(tc, test_reset, 0, NR_L);
    tcase_add_loop_test(tc, test_msr_spans, 0, NR_L);
    tcase_add_loop_test(tc, test_filter, 0, NR_L);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return run_suite(amd_suite());
}
