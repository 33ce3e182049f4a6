/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Intel architectural PMU, versions 1-5, against docs/msrs.md (the
 * contract) and the SDM Vol. 3B ch. 20 / Vol. 4 rules it is derived from.
 *
 * Public API, vectors.h and steps.h only.  Every expected value is worked
 * out by hand from those rules; the non-obvious ones carry their derivation
 * next to them.  Tables are MsrVector (plain MSR accesses) or Step (a
 * scripted sequence of MSR accesses, fake-source events, RDPMCs and PMI
 * checks); both record their source line so a failure names the vector
 * that broke.
 */
#include "vectors.h"
#include "steps.h"

/* --- MSRs (SDM Vol. 4, Table 2-2) ------------------------------------- */
#define PMC(i)          (0xC1u + (i))      /* IA32_PMCi */
#define A_PMC(i)        (0x4C1u + (i))     /* IA32_A_PMCi */
#define EVTSEL(i)       (0x186u + (i))     /* IA32_PERFEVTSELi */
#define FIXED_CTR(i)    (0x309u + (i))     /* IA32_FIXED_CTRi */
#define FIXED_CTR_CTRL  0x38Du
#define GLOBAL_STATUS   0x38Eu
#define GLOBAL_CTRL     0x38Fu
#define OVF_CTRL        0x390u             /* v4: GLOBAL_STATUS_RESET */
#define STATUS_SET      0x391u
#define INUSE           0x392u
#define PERF_CAP        0x345u
#define DEBUGCTL        0x1D9u

/* --- IA32_PERFEVTSELx fields (SDM Vol. 3B Figure 20-6) ------------------ */
#define USR             (1ull << 16)
#define OS              (1ull << 17)
#define EDGE            (1ull << 18)
#define PC              (1ull << 19)
#define INT             (1ull << 20)
#define ANY             (1ull << 21)
#define EN              (1ull << 22)
#define INV             (1ull << 23)
#define CMASK(n)        ((uint64_t)(n) << 24)
#define EOU             (EN | OS | USR)    /* 0x430000 */

/* Architectural event/umask encodings (SDM Table 20-1) */
#define CYC             0x003Cull
#define INSTR           0x00C0ull
#define REF             0x013Cull
#define REF_PSEUDO      0x0300ull
#define BR              0x00C4ull
#define SLOTS           0x01A4ull

/* IA32_PERF_GLOBAL_STATUS bits */
#define CTR_FRZ         (1ull << 59)
#define LBR_FRZ         (1ull << 58)
#define OVF_BUF         (1ull << 62)
#define COND_CHGD       (1ull << 63)

/* IA32_DEBUGCTL */
#define DBG_BTF         (1ull << 1)
#define DBG_FRZ_PMI     (1ull << 12)
#define DBG_FRZ_SMM     (1ull << 14)

#define FW              VPMU_PERF_CAP_FW_WRITE  /* bit 13: 0x2000 */
#define FIXED(i)        VPMU_COUNTER_FIXED_ID(i)
#define GPC(i)          VPMU_COUNTER_GP(i)

/* --- MsrVector shorthands ------------------------------------------------ */
#define RD(m, v)        { SRC_LINE, .msr = (m), .val = (v) }
#define RD_GP(m)        { SRC_LINE, .msr = (m), .ret = -EINVAL }
#define RD_NOENT(m)     { SRC_LINE, .msr = (m), .ret = -ENOENT }
#define WR(m, v, rb)    { SRC_LINE, .msr = (m), .write = true, .val = (v), \
                          .readback = (rb), .check_readback = true }
#define WR_GP(m, v)     { SRC_LINE, .msr = (m), .write = true, .val = (v), \
                          .ret = -EINVAL }
#define WR_NOENT(m, v)  { SRC_LINE, .msr = (m), .write = true, .val = (v), \
                          .ret = -ENOENT }
/* An MSR of the table that this configuration lacks: #GP both ways. */
#define ABSENT(m)       RD_GP(m), WR_GP(m, 0)

typedef struct MsrTable {
    const MsrVector *v;
    size_t n;
} MsrTable;
#define TABLE(t)        { (t), ARRAY_SIZE(t) }

/* --- Configurations --------------------------------------------------------- */
/*
 * One canonical configuration per version, indexed by version:
 *   v1: 2 GP x 40 bits, no fixed counters, no PDCM
 *   v2: 4 GP x 48, 3 fixed x 48, PDCM + FW_WRITE
 *   v3: 4 GP x 48, 2 fixed x 40, PDCM without FW_WRITE
 *   v4: 8 GP x 48, 3 fixed x 48, PDCM + FW_WRITE
 *   v5: 6 GP x 48, 4 fixed x 48, PDCM + FW_WRITE
 */
typedef struct IntelCfg {
    unsigned nr_gp, gp_width, nr_fixed, fixed_width;
    bool pdcm;
    uint64_t caps;
} IntelCfg;

static const IntelCfg intel_cfgs[6] = {
    [1] = { 2, 40, 0, 0, false, 0 },
    [2] = { 4, 48, 3, 48, true, FW },
    [3] = { 4, 48, 2, 40, true, 0 },
    [4] = { 8, 48, 3, 48, true, FW },
    [5] = { 6, 48, 4, 48, true, FW },
};

static void intel_cfg(VpmuConfig *cfg, unsigned version)
{
    const IntelCfg *c = &intel_cfgs[version];

    vpmu_config_init(cfg, VPMU_VENDOR_INTEL);
    cfg->intel_version = version;
    cfg->nr_gp = c->nr_gp;
    cfg->gp_width = c->gp_width;
    cfg->nr_fixed = c->nr_fixed;
    cfg->fixed_width = c->fixed_width;
    cfg->pdcm = c->pdcm;
    cfg->perf_capabilities = c->caps;
    cfg->events = VPMU_EVENTS_ALL;
    cfg->raw_events = false;
}

static void init_version(TestPmu *t, unsigned version)
{
    VpmuConfig cfg;

    intel_cfg(&cfg, version);
    test_pmu_init(t, &cfg);
}

/* A script on its own PMU of @version's canonical configuration. */
static void version_script(unsigned version, const Step *s, size_t n)
{
    TestPmu t;

    init_version(&t, version);
    run_steps(&t, s, n);
    test_pmu_fini(&t);
}

#define VERSION_SCRIPT(v, t) version_script((v), (t), ARRAY_SIZE(t))

/* A script for one version's canonical configuration. */
typedef struct VersionSteps {
    unsigned version;
    StepTable steps;
} VersionSteps;

static void run_version_steps(const VersionSteps *v)
{
    version_script(v->version, v->steps.s, v->steps.n);
}

/* ========================================================================= */
/* Reset values and existence                                                */
/* ========================================================================= */

/* MSR numbers that are no Intel PMU MSR: -ENOENT on every configuration. */
static const MsrVector noent_msrs[] = {
    RD_NOENT(0x10), WR_NOENT(0x10, 0),              /* IA32_TIME_STAMP_COUNTER */
    RD_NOENT(0x1B), WR_NOENT(0x1B, 0xFEE00900),     /* IA32_APIC_BASE */
    RD_NOENT(0xC0), WR_NOENT(0xC0, 0),              /* just below PMC0 */
    RD_NOENT(0xC9), WR_NOENT(0xC9, 0),              /* PMC8: past the 8-entry range */
    RD_NOENT(0x185), RD_NOENT(0x18E), WR_NOENT(0x18E, 0),   /* around EVTSEL0-7 */
    RD_NOENT(0x308), RD_NOENT(0x30D), WR_NOENT(0x30D, 0),   /* around FIXED_CTR0-3 */
    RD_NOENT(0x344), RD_NOENT(0x346),               /* around PERF_CAPABILITIES */
    RD_NOENT(0x38C), RD_NOENT(0x393), WR_NOENT(0x393, 0),   /* around 0x38D-0x392 */
    RD_NOENT(0x4C0), RD_NOENT(0x4C9), WR_NOENT(0x4C9, 0),   /* around A_PMC0-7 */
    RD_NOENT(0x1D8), RD_NOENT(0x1DA),               /* around DEBUGCTL */
    RD_NOENT(0xC0010000), WR_NOENT(0xC0010000, 0),  /* AMD PERF_CTL0 (K7) */
    RD_NOENT(0xC0010004), RD_NOENT(0xC0010200),     /* AMD PERF_CTR0, F15H CTL0 */
    RD_NOENT(0xC0000300), WR_NOENT(0xC0000301, 0),  /* AMD PerfMonV2 globals */
};

/* v1: 2 GP x 40, no fixed, no PDCM. */
static const MsrVector v1_reset[] = {
    RD(PMC(0), 0), RD(PMC(1), 0), RD(EVTSEL(0), 0), RD(EVTSEL(1), 0),
    RD(DEBUGCTL, 0),
    /* one past the last GP counter, and the last of the 8-entry ranges */
    ABSENT(PMC(2)), ABSENT(EVTSEL(2)), ABSENT(PMC(7)), ABSENT(EVTSEL(7)),
    /* no PDCM: no PERF_CAPABILITIES, so no FW_WRITE and no A_PMCs */
    ABSENT(PERF_CAP), ABSENT(A_PMC(0)), ABSENT(A_PMC(1)),
    /* v1 has neither fixed counters nor global MSRs */
    ABSENT(FIXED_CTR(0)), ABSENT(FIXED_CTR(3)), ABSENT(FIXED_CTR_CTRL),
    ABSENT(GLOBAL_STATUS), ABSENT(GLOBAL_CTRL), ABSENT(OVF_CTRL),
    ABSENT(STATUS_SET), ABSENT(INUSE),
};

/* v2: 4 GP x 48, 3 fixed x 48, PDCM + FW_WRITE. */
static const MsrVector v2_reset[] = {
    RD(PMC(0), 0), RD(PMC(1), 0), RD(PMC(2), 0), RD(PMC(3), 0),
    RD(A_PMC(0), 0), RD(A_PMC(1), 0), RD(A_PMC(2), 0), RD(A_PMC(3), 0),
    RD(EVTSEL(0), 0), RD(EVTSEL(1), 0), RD(EVTSEL(2), 0), RD(EVTSEL(3), 0),
    RD(FIXED_CTR(0), 0), RD(FIXED_CTR(1), 0), RD(FIXED_CTR(2), 0),
    RD(FIXED_CTR_CTRL, 0), RD(GLOBAL_STATUS, 0),
    RD(GLOBAL_CTRL, 0xF),               /* (1 << nr_gp) - 1, fixed bits clear */
    RD(OVF_CTRL, 0), RD(PERF_CAP, FW), RD(DEBUGCTL, 0),
    ABSENT(PMC(4)), ABSENT(A_PMC(4)), ABSENT(EVTSEL(4)),
    ABSENT(PMC(7)), ABSENT(A_PMC(7)), ABSENT(EVTSEL(7)),
    ABSENT(FIXED_CTR(3)),
    ABSENT(STATUS_SET), ABSENT(INUSE),  /* v4+ */
    WR_GP(GLOBAL_STATUS, 0), WR_GP(PERF_CAP, FW),   /* read-only */
    RD(GLOBAL_STATUS, 0), RD(PERF_CAP, FW),
};

/* v3: 4 GP x 48, 2 fixed x 40, PDCM without FW_WRITE. */
static const MsrVector v3_reset[] = {
    RD(PMC(0), 0), RD(PMC(1), 0), RD(PMC(2), 0), RD(PMC(3), 0),
    RD(EVTSEL(0), 0), RD(EVTSEL(1), 0), RD(EVTSEL(2), 0), RD(EVTSEL(3), 0),
    RD(FIXED_CTR(0), 0), RD(FIXED_CTR(1), 0),
    RD(FIXED_CTR_CTRL, 0), RD(GLOBAL_STATUS, 0), RD(GLOBAL_CTRL, 0xF),
    RD(OVF_CTRL, 0),
    RD(PERF_CAP, 0),                    /* PDCM: exists, reads the config (0) */
    RD(DEBUGCTL, 0),
    ABSENT(PMC(4)), ABSENT(EVTSEL(4)),
    /* PERF_CAPABILITIES.FW_WRITE clear: no full-width aliases */
    ABSENT(A_PMC(0)), ABSENT(A_PMC(3)), ABSENT(A_PMC(4)),
    ABSENT(FIXED_CTR(2)), ABSENT(FIXED_CTR(3)),
    ABSENT(STATUS_SET), ABSENT(INUSE),
    WR_GP(GLOBAL_STATUS, 0), WR_GP(PERF_CAP, 0), WR_GP(PERF_CAP, FW),
    RD(PERF_CAP, 0),
};

/* v4: 8 GP x 48, 3 fixed x 48, PDCM + FW_WRITE. */
static const MsrVector v4_reset[] = {
    RD(PMC(0), 0), RD(PMC(1), 0), RD(PMC(2), 0), RD(PMC(3), 0),
    RD(PMC(4), 0), RD(PMC(5), 0), RD(PMC(6), 0), RD(PMC(7), 0),
    RD(A_PMC(0), 0), RD(A_PMC(1), 0), RD(A_PMC(2), 0), RD(A_PMC(3), 0),
    RD(A_PMC(4), 0), RD(A_PMC(5), 0), RD(A_PMC(6), 0), RD(A_PMC(7), 0),
    RD(EVTSEL(0), 0), RD(EVTSEL(1), 0), RD(EVTSEL(2), 0), RD(EVTSEL(3), 0),
    RD(EVTSEL(4), 0), RD(EVTSEL(5), 0), RD(EVTSEL(6), 0), RD(EVTSEL(7), 0),
    RD(FIXED_CTR(0), 0), RD(FIXED_CTR(1), 0), RD(FIXED_CTR(2), 0),
    RD(FIXED_CTR_CTRL, 0), RD(GLOBAL_STATUS, 0), RD(GLOBAL_CTRL, 0xFF),
    RD(OVF_CTRL, 0), RD(STATUS_SET, 0), RD(INUSE, 0),
    RD(PERF_CAP, FW), RD(DEBUGCTL, 0),
    /* nr_gp = 8: one past is outside the ranges (noent_msrs), not #GP */
    ABSENT(FIXED_CTR(3)),
    WR_GP(GLOBAL_STATUS, 0), WR_GP(INUSE, 0), WR_GP(PERF_CAP, FW),
};

/* v5: 6 GP x 48, 4 fixed x 48, PDCM + FW_WRITE. */
static const MsrVector v5_reset[] = {
    RD(PMC(0), 0), RD(PMC(1), 0), RD(PMC(2), 0), RD(PMC(3), 0),
    RD(PMC(4), 0), RD(PMC(5), 0),
    RD(A_PMC(0), 0), RD(A_PMC(1), 0), RD(A_PMC(2), 0), RD(A_PMC(3), 0),
    RD(A_PMC(4), 0), RD(A_PMC(5), 0),
    RD(EVTSEL(0), 0), RD(EVTSEL(1), 0), RD(EVTSEL(2), 0), RD(EVTSEL(3), 0),
    RD(EVTSEL(4), 0), RD(EVTSEL(5), 0),
    RD(FIXED_CTR(0), 0), RD(FIXED_CTR(1), 0), RD(FIXED_CTR(2), 0),
    RD(FIXED_CTR(3), 0),
    RD(FIXED_CTR_CTRL, 0), RD(GLOBAL_STATUS, 0), RD(GLOBAL_CTRL, 0x3F),
    RD(OVF_CTRL, 0), RD(STATUS_SET, 0), RD(INUSE, 0),
    RD(PERF_CAP, FW), RD(DEBUGCTL, 0),
    ABSENT(PMC(6)), ABSENT(A_PMC(6)), ABSENT(EVTSEL(6)),
    ABSENT(PMC(7)), ABSENT(A_PMC(7)), ABSENT(EVTSEL(7)),
    WR_GP(GLOBAL_STATUS, 0), WR_GP(INUSE, 0), WR_GP(PERF_CAP, FW),
};

static const MsrTable reset_tables[6] = {
    [1] = TABLE(v1_reset), [2] = TABLE(v2_reset), [3] = TABLE(v3_reset),
    [4] = TABLE(v4_reset), [5] = TABLE(v5_reset),
};

/* _i = version */
START_TEST(test_reset_values)
{
    TestPmu t;

    init_version(&t, _i);
    run_msr_vectors(t.pmu, reset_tables[_i].v, reset_tables[_i].n);
    run_msr_vectors(t.pmu, noent_msrs, ARRAY_SIZE(noent_msrs));
    test_pmu_fini(&t);
}
END_TEST

/* PDCM clear on v2-v5: no PERF_CAPABILITIES, hence no FW_WRITE aliases. */
static const MsrVector no_pdcm[] = {
    ABSENT(PERF_CAP), ABSENT(A_PMC(0)), ABSENT(A_PMC(1)),
    RD(PMC(0), 0), WR(PMC(0), 0x80000000, 0xFFFF80000000),
    RD(DEBUGCTL, 0), RD(GLOBAL_STATUS, 0),
};

/* _i = version (2..5) */
START_TEST(test_no_pdcm)
{
    VpmuConfig cfg;
    TestPmu t;
    uint32_t regs[4] = { 0, 0, 0xFFFFFFFF, 0 };

    intel_cfg(&cfg, _i);
    cfg.pdcm = false;
    cfg.perf_capabilities = 0;
    test_pmu_init(&t, &cfg);
    run_msr_vectors(t.pmu, no_pdcm, ARRAY_SIZE(no_pdcm));
    ck_assert_int_eq(vpmu_pmu_cpuid(t.pmu, 1, 0, regs), 0);
    ck_assert_uint_eq(regs[2], 0xFFFF7FFF);     /* ECX.PDCM (15) clear */
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */
/* Reserved bits, read-only MSRs, counter writes                             */
/* ========================================================================= */

/*
 * A #GP write changes nothing: every WR_GP is followed, directly or after
 * more WR_GPs, by an RD of the value written last successfully.
 */

static const MsrVector v1_reserved[] = {
    /* EVTSEL: 63:32 reserved; AnyThread (21) reserved on v1 */
    WR(EVTSEL(1), 0xFFDFFFFF, 0xFFDFFFFF),
    WR_GP(EVTSEL(1), ANY), WR_GP(EVTSEL(1), 0xFFFFFFFF),
    WR_GP(EVTSEL(1), 1ull << 32), WR_GP(EVTSEL(1), 1ull << 63),
    RD(EVTSEL(1), 0xFFDFFFFF),
    WR(EVTSEL(1), PC | CYC, 0x8003C),   /* PC (19) accepted */
    WR(EVTSEL(1), 0, 0),
    /*
     * Legacy PMC writes, width 40 (mask 0xFF_FFFF_FFFF): low 32 bits,
     * sign-extended from bit 31, masked.
     */
    WR(PMC(0), 0x80000000, 0xFF80000000),
    WR(PMC(1), 0x7FFFFFFF, 0x7FFFFFFF),
    WR(PMC(0), 0xFFFFFFFF00000001ull, 1),       /* 63:32 ignored */
    /* 0x9ABCDEF0 has bit 31 set: 0xFFFFFFFF9ABCDEF0 & mask */
    WR(PMC(1), 0x123456789ABCDEF0ull, 0xFF9ABCDEF0),
    WR(PMC(0), 0, 0), WR(PMC(1), 0, 0),
    /* DEBUGCTL on v1: BTF and FREEZE_WHILE_SMM only */
    WR(DEBUGCTL, DBG_BTF, DBG_BTF),
    WR(DEBUGCTL, DBG_BTF | DBG_FRZ_SMM, 0x4002),
    WR_GP(DEBUGCTL, DBG_FRZ_PMI),       /* FREEZE_PERFMON_ON_PMI is v2+ */
    WR_GP(DEBUGCTL, 0x1),               /* LBR */
    WR_GP(DEBUGCTL, 0x800),             /* FREEZE_LBRS_ON_PMI */
    WR_GP(DEBUGCTL, 0x2000), WR_GP(DEBUGCTL, 0x8000), WR_GP(DEBUGCTL, 1ull << 63),
    RD(DEBUGCTL, 0x4002),
    WR(DEBUGCTL, 0, 0),
};

/* DEBUGCTL on v2-v5: BTF (1), FREEZE_PERFMON_ON_PMI (12), FREEZE_WHILE_SMM (14). */
static const MsrVector debugctl_v2plus[] = {
    WR(DEBUGCTL, DBG_FRZ_PMI, 0x1000),
    WR(DEBUGCTL, DBG_BTF | DBG_FRZ_PMI | DBG_FRZ_SMM, 0x5002),
    WR_GP(DEBUGCTL, 0x1),               /* LBR */
    WR_GP(DEBUGCTL, 0x5003),
    WR_GP(DEBUGCTL, 0x800),             /* FREEZE_LBRS_ON_PMI */
    WR_GP(DEBUGCTL, 0x2000),            /* ENABLE_UNCORE_PMI */
    WR_GP(DEBUGCTL, 0x8000), WR_GP(DEBUGCTL, 1ull << 32),
    RD(DEBUGCTL, 0x5002),
    WR(DEBUGCTL, 0, 0),
};

static const MsrVector v2_reserved[] = {
    /* EVTSEL: AnyThread reserved on v2 */
    WR(EVTSEL(3), 0xFFDFFFFF, 0xFFDFFFFF),
    WR_GP(EVTSEL(3), ANY), WR_GP(EVTSEL(3), 0xFFFFFFFF),
    WR_GP(EVTSEL(3), 1ull << 32), WR_GP(EVTSEL(3), 1ull << 63),
    WR_GP(EVTSEL(3), 0xFFFFFFFF00000000ull | CYC),
    RD(EVTSEL(3), 0xFFDFFFFF),
    WR(EVTSEL(3), PC | CYC, 0x8003C),
    WR(EVTSEL(3), 0, 0),
    /* FIXED_CTR_CTRL, 3 counters: OS|USR|PMI per nibble = 0xBBB */
    WR(FIXED_CTR_CTRL, 0xBBB, 0xBBB),
    WR_GP(FIXED_CTR_CTRL, 0x4),         /* AnyThread, counter 0 */
    WR_GP(FIXED_CTR_CTRL, 0x40),        /* AnyThread, counter 1 */
    WR_GP(FIXED_CTR_CTRL, 0x400),       /* AnyThread, counter 2 */
    WR_GP(FIXED_CTR_CTRL, 0x1000),      /* nibble 3: no counter 3 */
    WR_GP(FIXED_CTR_CTRL, 0x10000), WR_GP(FIXED_CTR_CTRL, 1ull << 63),
    RD(FIXED_CTR_CTRL, 0xBBB),
    WR(FIXED_CTR_CTRL, 0, 0),
    /* GLOBAL_CTRL: GP 3:0, fixed 34:32 */
    WR(GLOBAL_CTRL, 0x70000000F, 0x70000000F),
    WR_GP(GLOBAL_CTRL, 0x10), WR_GP(GLOBAL_CTRL, 1ull << 35),
    WR_GP(GLOBAL_CTRL, 1ull << 63), WR_GP(GLOBAL_CTRL, ~0ull),
    RD(GLOBAL_CTRL, 0x70000000F),
    WR(GLOBAL_CTRL, 0xF, 0xF),
    /* GLOBAL_OVF_CTRL: GP, fixed, OvfBuf 62, CondChgd 63; reads 0 */
    WR(OVF_CTRL, 0xC00000070000000Full, 0),
    WR(OVF_CTRL, OVF_BUF, 0), WR(OVF_CTRL, COND_CHGD, 0),
    WR_GP(OVF_CTRL, 0x10), WR_GP(OVF_CTRL, 1ull << 35),
    WR_GP(OVF_CTRL, LBR_FRZ), WR_GP(OVF_CTRL, CTR_FRZ),     /* v4+ bits */
    WR_GP(OVF_CTRL, 1ull << 61),
    /* legacy PMC, width 48: 0x80000000 -> 0xFFFFFFFF80000000 & mask */
    WR(PMC(0), 0x80000000, 0xFFFF80000000),
    RD(A_PMC(0), 0xFFFF80000000),
    WR(PMC(1), 0x7FFFFFFF, 0x7FFFFFFF),
    WR(PMC(2), ~0ull, 0xFFFFFFFFFFFF),
    WR(PMC(3), 0x1234567800000005ull, 5),
    /* A_PMC: full value; any bit >= 48 #GP (1 << 48 included) */
    WR(A_PMC(3), 0x123456789ABC, 0x123456789ABC),
    RD(PMC(3), 0x123456789ABC),
    WR_GP(A_PMC(3), 1ull << 48), WR_GP(A_PMC(3), ~0ull),
    WR_GP(A_PMC(3), 0x1000000000001ull),
    RD(A_PMC(3), 0x123456789ABC),
    WR(A_PMC(3), 0xFFFFFFFFFFFF, 0xFFFFFFFFFFFF),
    /* fixed counters: full width, no sign extension; >= width #GP */
    WR(FIXED_CTR(0), 0x80000000, 0x80000000),
    WR(FIXED_CTR(2), 0xFFFFFFFFFFFF, 0xFFFFFFFFFFFF),
    WR_GP(FIXED_CTR(2), 1ull << 48), WR_GP(FIXED_CTR(2), ~0ull),
    RD(FIXED_CTR(2), 0xFFFFFFFFFFFF),
    /* read-only */
    WR_GP(GLOBAL_STATUS, 1), RD(GLOBAL_STATUS, 0),
    WR_GP(PERF_CAP, 0), RD(PERF_CAP, FW),
};

static const MsrVector v3_reserved[] = {
    /* EVTSEL: v3 accepts AnyThread, so all of 31:0 */
    WR(EVTSEL(3), 0xFFFFFFFF, 0xFFFFFFFF),
    WR_GP(EVTSEL(3), 1ull << 32), WR_GP(EVTSEL(3), 1ull << 63),
    RD(EVTSEL(3), 0xFFFFFFFF),
    WR(EVTSEL(3), ANY | CYC, 0x20003C),
    WR(EVTSEL(3), 0, 0),
    /* FIXED_CTR_CTRL, 2 counters: 0xFF, AnyThread allowed */
    WR(FIXED_CTR_CTRL, 0xFF, 0xFF),
    WR_GP(FIXED_CTR_CTRL, 0x100),       /* nibble 2: no counter 2 */
    WR_GP(FIXED_CTR_CTRL, 0x800), WR_GP(FIXED_CTR_CTRL, 0x1000),
    WR_GP(FIXED_CTR_CTRL, 0x10000), WR_GP(FIXED_CTR_CTRL, 1ull << 32),
    RD(FIXED_CTR_CTRL, 0xFF),
    WR(FIXED_CTR_CTRL, 0x44, 0x44),
    WR(FIXED_CTR_CTRL, 0, 0),
    /* GLOBAL_CTRL: GP 3:0, fixed 33:32 */
    WR(GLOBAL_CTRL, 0x30000000F, 0x30000000F),
    WR_GP(GLOBAL_CTRL, 1ull << 34), WR_GP(GLOBAL_CTRL, 0x10),
    RD(GLOBAL_CTRL, 0x30000000F),
    WR(GLOBAL_CTRL, 0xF, 0xF),
    /* GLOBAL_OVF_CTRL */
    WR(OVF_CTRL, 0xC00000030000000Full, 0),
    WR_GP(OVF_CTRL, 1ull << 34), WR_GP(OVF_CTRL, 0x10),
    WR_GP(OVF_CTRL, LBR_FRZ), WR_GP(OVF_CTRL, CTR_FRZ),
    WR_GP(OVF_CTRL, (1ull << 32) | (1ull << 61)),
    /* legacy PMC width 48; A_PMC absent (no FW_WRITE) */
    WR(PMC(3), 0x80000001, 0xFFFF80000001),
    WR_GP(A_PMC(3), 1), RD(PMC(3), 0xFFFF80000001),
    /* fixed width 40 */
    WR(FIXED_CTR(1), 0xFFFFFFFFFF, 0xFFFFFFFFFF),
    WR_GP(FIXED_CTR(1), 1ull << 40), WR_GP(FIXED_CTR(1), 0xFFFFFFFFFFFF),
    RD(FIXED_CTR(1), 0xFFFFFFFFFF),
    WR(FIXED_CTR(0), 0x80000000, 0x80000000),
    WR_GP(GLOBAL_STATUS, 1), RD(GLOBAL_STATUS, 0),
};

static const MsrVector v4_reserved[] = {
    WR(EVTSEL(7), 0xFFFFFFFF, 0xFFFFFFFF),      /* AnyThread accepted */
    WR_GP(EVTSEL(7), 1ull << 32),
    WR_GP(EVTSEL(7), 0xFFFFFFFF00000000ull),
    RD(EVTSEL(7), 0xFFFFFFFF),
    WR(EVTSEL(7), 0, 0),
    /* FIXED_CTR_CTRL, 3 counters, AnyThread allowed: 0xFFF */
    WR(FIXED_CTR_CTRL, 0xFFF, 0xFFF),
    WR_GP(FIXED_CTR_CTRL, 0x1000), WR_GP(FIXED_CTR_CTRL, 0x10000),
    RD(FIXED_CTR_CTRL, 0xFFF),
    WR(FIXED_CTR_CTRL, 0, 0),
    /* GLOBAL_CTRL: GP 7:0, fixed 34:32 */
    WR(GLOBAL_CTRL, 0x7000000FF, 0x7000000FF),
    WR_GP(GLOBAL_CTRL, 0x100), WR_GP(GLOBAL_CTRL, 1ull << 35),
    RD(GLOBAL_CTRL, 0x7000000FF),
    WR(GLOBAL_CTRL, 0xFF, 0xFF),
    /* GLOBAL_STATUS_RESET: + LBR_Frz 58, CTR_Frz 59 */
    WR(OVF_CTRL, 0xCC000007000000FFull, 0),
    WR_GP(OVF_CTRL, 0x100), WR_GP(OVF_CTRL, 1ull << 35),
    WR_GP(OVF_CTRL, 1ull << 57), WR_GP(OVF_CTRL, 1ull << 61),
    /* GLOBAL_STATUS_SET: as RESET without CondChgd; reads 0, sets status */
    WR(STATUS_SET, 0x4C000007000000FFull, 0),
    RD(GLOBAL_STATUS, 0x4C000007000000FFull),
    WR_GP(STATUS_SET, COND_CHGD), WR_GP(STATUS_SET, 0x100),
    WR_GP(STATUS_SET, 1ull << 35), WR_GP(STATUS_SET, 1ull << 61),
    RD(GLOBAL_STATUS, 0x4C000007000000FFull),
    /* a #GP status reset clears nothing, even its valid bits */
    WR_GP(OVF_CTRL, 0xFF | (1ull << 61)),
    RD(GLOBAL_STATUS, 0x4C000007000000FFull),
    WR(OVF_CTRL, 0xCC000007000000FFull, 0),
    RD(GLOBAL_STATUS, 0),
    /* counters */
    WR(PMC(7), 0x80000000, 0xFFFF80000000),
    WR(A_PMC(7), 0x7FFFFFFFFFFF, 0x7FFFFFFFFFFF),
    WR_GP(A_PMC(7), 1ull << 48), RD(PMC(7), 0x7FFFFFFFFFFF),
    WR(FIXED_CTR(2), 0xFFFFFFFFFFFF, 0xFFFFFFFFFFFF),
    WR_GP(FIXED_CTR(2), 1ull << 48), RD(FIXED_CTR(2), 0xFFFFFFFFFFFF),
    WR_GP(GLOBAL_STATUS, 1), WR_GP(INUSE, 1), WR_GP(PERF_CAP, 0),
};

static const MsrVector v5_reserved[] = {
    /* v5 deprecates AnyThread (CPUID.0AH:EDX[15]): reserved again */
    WR(EVTSEL(5), 0xFFDFFFFF, 0xFFDFFFFF),
    WR_GP(EVTSEL(5), ANY), WR_GP(EVTSEL(5), ANY | EOU | CYC),
    WR_GP(EVTSEL(5), 1ull << 32),
    RD(EVTSEL(5), 0xFFDFFFFF),
    WR(EVTSEL(5), 0, 0),
    /* FIXED_CTR_CTRL, 4 counters without AnyThread: 0xBBBB */
    WR(FIXED_CTR_CTRL, 0xBBBB, 0xBBBB),
    WR_GP(FIXED_CTR_CTRL, 0x4), WR_GP(FIXED_CTR_CTRL, 0x4000),
    WR_GP(FIXED_CTR_CTRL, 0x10000), WR_GP(FIXED_CTR_CTRL, 1ull << 63),
    RD(FIXED_CTR_CTRL, 0xBBBB),
    WR(FIXED_CTR_CTRL, 0, 0),
    /* GLOBAL_CTRL: GP 5:0, fixed 35:32 */
    WR(GLOBAL_CTRL, 0xF0000003F, 0xF0000003F),
    WR_GP(GLOBAL_CTRL, 0x40), WR_GP(GLOBAL_CTRL, 1ull << 36),
    RD(GLOBAL_CTRL, 0xF0000003F),
    WR(GLOBAL_CTRL, 0x3F, 0x3F),
    /* STATUS_RESET / STATUS_SET */
    WR(OVF_CTRL, 0xCC00000F0000003Full, 0),
    WR_GP(OVF_CTRL, 0x40), WR_GP(OVF_CTRL, 1ull << 36),
    WR(STATUS_SET, 0x4C00000F0000003Full, 0),
    RD(GLOBAL_STATUS, 0x4C00000F0000003Full),
    WR_GP(STATUS_SET, COND_CHGD), WR_GP(STATUS_SET, 0x40),
    WR_GP(STATUS_SET, 1ull << 36),
    RD(GLOBAL_STATUS, 0x4C00000F0000003Full),
    WR(OVF_CTRL, 0xCC00000F0000003Full, 0),
    RD(GLOBAL_STATUS, 0),
    /* fixed counter 3 (topdown slots) */
    WR(FIXED_CTR(3), 0xFFFFFFFFFFFF, 0xFFFFFFFFFFFF),
    WR_GP(FIXED_CTR(3), 1ull << 48), RD(FIXED_CTR(3), 0xFFFFFFFFFFFF),
    WR(A_PMC(5), 0x800000000000, 0x800000000000),
    WR_GP(A_PMC(5), 1ull << 48), RD(PMC(5), 0x800000000000),
    WR_GP(GLOBAL_STATUS, 1), WR_GP(INUSE, 1), WR_GP(PERF_CAP, FW),
};

static const MsrTable reserved_tables[6] = {
    [1] = TABLE(v1_reserved), [2] = TABLE(v2_reserved),
    [3] = TABLE(v3_reserved), [4] = TABLE(v4_reserved),
    [5] = TABLE(v5_reserved),
};

/* _i = version */
START_TEST(test_reserved_bits)
{
    TestPmu t;

    init_version(&t, _i);
    run_msr_vectors(t.pmu, reserved_tables[_i].v, reserved_tables[_i].n);
    if (_i >= 2) {
        run_msr_vectors(t.pmu, debugctl_v2plus, ARRAY_SIZE(debugctl_v2plus));
    }
    test_pmu_fini(&t);
}
END_TEST

/*
 * Counter widths 32/40/48 (v2, FW_WRITE, fixed width = GP width).
 * Legacy PMC write: (uint64_t)(int64_t)(int32_t)low32 & ((1 << w) - 1).
 */
static const MsrVector width32[] = {
    WR(PMC(0), 0x80000000, 0x80000000),
    RD(A_PMC(0), 0x80000000),
    WR(PMC(1), ~0ull, 0xFFFFFFFF),
    WR(PMC(2), 0x123456789ull, 0x23456789),
    WR(A_PMC(3), 0xFFFFFFFF, 0xFFFFFFFF),
    WR_GP(A_PMC(3), 1ull << 32), RD(A_PMC(3), 0xFFFFFFFF),
    WR(FIXED_CTR(0), 0xFFFFFFFF, 0xFFFFFFFF),
    WR_GP(FIXED_CTR(0), 1ull << 32), RD(FIXED_CTR(0), 0xFFFFFFFF),
};

static const MsrVector width40[] = {
    WR(PMC(0), 0x80000000, 0xFF80000000),
    RD(A_PMC(0), 0xFF80000000),
    WR(PMC(1), ~0ull, 0xFFFFFFFFFF),
    WR(PMC(2), 0x123456789ull, 0x23456789),
    WR(PMC(2), 0xFEDCBA98, 0xFFFEDCBA98),
    WR(A_PMC(3), 0x8000000000, 0x8000000000),   /* bit 39: the top bit */
    WR(A_PMC(3), 0xFFFFFFFFFF, 0xFFFFFFFFFF),
    WR_GP(A_PMC(3), 1ull << 40), WR_GP(A_PMC(3), 0x10000000005ull),
    RD(A_PMC(3), 0xFFFFFFFFFF),
    WR(FIXED_CTR(0), 0xFFFFFFFFFF, 0xFFFFFFFFFF),
    WR_GP(FIXED_CTR(0), 1ull << 40), RD(FIXED_CTR(0), 0xFFFFFFFFFF),
};

static const MsrVector width48[] = {
    WR(PMC(0), 0x80000000, 0xFFFF80000000),
    RD(A_PMC(0), 0xFFFF80000000),
    WR(PMC(1), ~0ull, 0xFFFFFFFFFFFF),
    WR(PMC(2), 0x123456789ull, 0x23456789),
    WR(PMC(2), 0xFEDCBA98, 0xFFFFFEDCBA98),
    WR(A_PMC(3), 0x800000000000, 0x800000000000),
    WR_GP(A_PMC(3), 1ull << 48), WR_GP(A_PMC(3), 1ull << 63),
    RD(A_PMC(3), 0x800000000000),
    WR(FIXED_CTR(0), 0xFFFFFFFFFFFF, 0xFFFFFFFFFFFF),
    WR_GP(FIXED_CTR(0), 1ull << 48), RD(FIXED_CTR(0), 0xFFFFFFFFFFFF),
};

static const struct {
    unsigned width;
    MsrTable t;
    uint64_t pmc0;      /* what PMC0 then reads (RDPMC too) */
    uint64_t fixed0;
} width_cases[] = {
    { 32, TABLE(width32), 0x80000000, 0xFFFFFFFF },
    { 40, TABLE(width40), 0xFF80000000, 0xFFFFFFFFFF },
    { 48, TABLE(width48), 0xFFFF80000000, 0xFFFFFFFFFFFF },
};

/* Overflow at the width: -1 (legacy write 0xFFFFFFFF) + 1 event wraps to 0. */
static const Step width_overflow[] = {
    W(PMC(1), 0xFFFFFFFF),
    W(EVTSEL(1), EOU | INT | CYC),
    RUN(CYCLES, 0, 1),
    R(PMC(1), 0), R(GLOBAL_STATUS, 0x2), PMIS(1),
    RUN(CYCLES, 0, 2), R(PMC(1), 2), RDPMC(1, 2),
};

/* _i = index into width_cases */
START_TEST(test_counter_widths)
{
    VpmuConfig cfg;
    TestPmu t;
    uint64_t v = 0;
    uint32_t regs[4] = { 0 };

    intel_cfg(&cfg, 2);
    cfg.gp_width = width_cases[_i].width;
    cfg.fixed_width = width_cases[_i].width;
    test_pmu_init(&t, &cfg);
    run_msr_vectors(t.pmu, width_cases[_i].t.v, width_cases[_i].t.n);

    /* RDPMC returns the same, masked to the width */
    ck_assert_int_eq(vpmu_pmu_rdpmc(t.pmu, 0, &v), 0);
    ck_assert_uint_eq(v, width_cases[_i].pmc0);
    ck_assert_int_eq(vpmu_pmu_rdpmc(t.pmu, VPMU_COUNTER_FIXED | 0, &v), 0);
    ck_assert_uint_eq(v, width_cases[_i].fixed0);

    run_steps(&t, width_overflow, ARRAY_SIZE(width_overflow));

    /* CPUID.0AH: EAX[23:16] GP width, EDX[12:5] fixed width */
    ck_assert_int_eq(vpmu_pmu_cpuid(t.pmu, 0xA, 0, regs), 0);
    ck_assert_uint_eq((regs[0] >> 16) & 0xFF, width_cases[_i].width);
    ck_assert_uint_eq((regs[3] >> 5) & 0xFF, width_cases[_i].width);
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */
/* GLOBAL_INUSE (v4+)                                                        */
/* ========================================================================= */

/*
 * Bit i: EVTSELi[17:0] != 0 (event, umask, USR, OS); bit 32+i: fixed
 * counter i's OS/USR not 0; bit 63: any EVTSEL.INT or fixed PMI bit.
 * Fits v4 (8 GP, 3 fixed) and v5 (6 GP, 4 fixed).
 */
static const MsrVector inuse_vectors[] = {
    RD(INUSE, 0),
    WR(EVTSEL(0), CYC, CYC), RD(INUSE, 0x1),            /* event only, EN clear */
    WR(EVTSEL(1), USR, USR), RD(INUSE, 0x3),            /* USR is bit 16 */
    WR(EVTSEL(2), EN, EN), RD(INUSE, 0x3),              /* EN (22) is not in 17:0 */
    WR(EVTSEL(3), INT, INT),                            /* INT: bit 63 only */
    RD(INUSE, 0x8000000000000003ull),
    WR(EVTSEL(4), 0x100, 0x100),                        /* umask bit 8 */
    RD(INUSE, 0x8000000000000013ull),
    /* EDGE|INV|CMASK: all above bit 17 */
    WR(EVTSEL(5), CMASK(0xFF) | INV | EDGE, 0xFF840000),
    RD(INUSE, 0x8000000000000013ull),
    WR(EVTSEL(3), 0, 0), RD(INUSE, 0x13),
    WR(FIXED_CTR_CTRL, 0x10, 0x10), RD(INUSE, 0x200000013ull),  /* fixed 1 OS */
    WR(FIXED_CTR_CTRL, 0x210, 0x210), RD(INUSE, 0x600000013ull), /* + fixed 2 USR */
    WR(FIXED_CTR_CTRL, 0x8, 0x8),                       /* fixed 0 PMI only */
    RD(INUSE, 0x8000000000000013ull),
    WR(FIXED_CTR_CTRL, 0, 0), RD(INUSE, 0x13),
    /* GLOBAL_CTRL plays no part */
    WR(GLOBAL_CTRL, 0, 0), RD(INUSE, 0x13),
    WR(EVTSEL(0), 0, 0), WR(EVTSEL(1), 0, 0), WR(EVTSEL(4), 0, 0),
    RD(INUSE, 0),
    WR_GP(INUSE, 0), RD(INUSE, 0),
};

static const MsrVector inuse_v5_vectors[] = {
    WR(FIXED_CTR_CTRL, 0x2000, 0x2000), RD(INUSE, 0x800000000ull),  /* fixed 3 USR */
    WR(EVTSEL(5), OS | INT, OS | INT), RD(INUSE, 0x8000000800000020ull),
};

/* _i = version (4, 5) */
START_TEST(test_global_inuse)
{
    TestPmu t;

    init_version(&t, _i);
    run_msr_vectors(t.pmu, inuse_vectors, ARRAY_SIZE(inuse_vectors));
    if (_i == 5) {
        run_msr_vectors(t.pmu, inuse_v5_vectors, ARRAY_SIZE(inuse_v5_vectors));
    }
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */
/* RDPMC                                                                     */
/* ========================================================================= */

#define RDPMC_FIXED     (1u << 30)

/*
 * Each table runs after PMC i = 0x1000 + i and FIXED_CTR i = 0x2000 + i.
 * ECX[15:0] index, [30] fixed; #GP for [31] (fast read), any of [29:16],
 * or an index that does not exist.
 */
static const Step v1_rdpmc[] = {
    RDPMC(0, 0x1000), RDPMC(1, 0x1001),
    RDPMC_GP(2), RDPMC_GP(0xFFFF),
    RDPMC_GP(RDPMC_FIXED), RDPMC_GP(RDPMC_FIXED | 1),  /* v1: no fixed counters */
    RDPMC_GP(0x80000000), RDPMC_GP(0x80000001),
    RDPMC_GP(0x10000), RDPMC_GP(0x20000000), RDPMC_GP(0x3FFF0000),
};

static const Step v2_rdpmc[] = {
    RDPMC(0, 0x1000), RDPMC(1, 0x1001), RDPMC(2, 0x1002), RDPMC(3, 0x1003),
    RDPMC_GP(4), RDPMC_GP(8),
    RDPMC(RDPMC_FIXED | 0, 0x2000), RDPMC(RDPMC_FIXED | 1, 0x2001),
    RDPMC(RDPMC_FIXED | 2, 0x2002), RDPMC_GP(RDPMC_FIXED | 3),
    RDPMC_GP(0x80000000), RDPMC_GP(0xC0000000),
    RDPMC_GP(0x00010000), RDPMC_GP(0x40010000), RDPMC_GP(0x20000000),
    RDPMC_GP(0x60000000),
};

static const Step v3_rdpmc[] = {
    RDPMC(0, 0x1000), RDPMC(3, 0x1003), RDPMC_GP(4),
    RDPMC(RDPMC_FIXED | 0, 0x2000), RDPMC(RDPMC_FIXED | 1, 0x2001),
    RDPMC_GP(RDPMC_FIXED | 2),
    RDPMC_GP(0x80000003), RDPMC_GP(0x40100000),
};

static const Step v4_rdpmc[] = {
    RDPMC(0, 0x1000), RDPMC(5, 0x1005), RDPMC(7, 0x1007), RDPMC_GP(8),
    RDPMC(RDPMC_FIXED | 2, 0x2002), RDPMC_GP(RDPMC_FIXED | 3),
    RDPMC_GP(0x80000000 | RDPMC_FIXED), RDPMC_GP(0x00800007),
};

static const Step v5_rdpmc[] = {
    RDPMC(0, 0x1000), RDPMC(5, 0x1005), RDPMC_GP(6), RDPMC_GP(7),
    RDPMC(RDPMC_FIXED | 3, 0x2003), RDPMC_GP(RDPMC_FIXED | 4),
    RDPMC_GP(0x80000000), RDPMC_GP(0x20000000 | RDPMC_FIXED),
};

static const StepTable rdpmc_tables[6] = {
    [1] = STEPS(v1_rdpmc),
    [2] = STEPS(v2_rdpmc),
    [3] = STEPS(v3_rdpmc),
    [4] = STEPS(v4_rdpmc),
    [5] = STEPS(v5_rdpmc),
};

/* _i = version */
START_TEST(test_rdpmc_index)
{
    const IntelCfg *c = &intel_cfgs[_i];
    TestPmu t;

    init_version(&t, _i);
    for (unsigned i = 0; i < c->nr_gp; i++) {
        ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, PMC(i), 0x1000 + i), 0);
    }
    for (unsigned i = 0; i < c->nr_fixed; i++) {
        ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, FIXED_CTR(i), 0x2000 + i), 0);
    }
    run_steps(&t, rdpmc_tables[_i].s, rdpmc_tables[_i].n);
    test_pmu_fini(&t);
}
END_TEST

/* SDM RDPMC: #GP if CPL > 0 and CR4.PCE = 0. */
START_TEST(test_rdpmc_permitted)
{
    static const struct {
        int line;
        unsigned cpl;
        bool pce;
        bool ok;
    } v[] = {
        { SRC_LINE, 0, false, true }, { SRC_LINE, 0, true, true },
        { SRC_LINE, 1, false, false }, { SRC_LINE, 1, true, true },
        { SRC_LINE, 2, false, false }, { SRC_LINE, 2, true, true },
        { SRC_LINE, 3, false, false }, { SRC_LINE, 3, true, true },
    };

    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        ck_assert_msg(vpmu_rdpmc_permitted(v[i].cpl, v[i].pce) == v[i].ok,
                      "line %d: cpl %u pce %d", v[i].line, v[i].cpl, v[i].pce);
    }
}
END_TEST

/* ========================================================================= */
/* CPUID                                                                     */
/* ========================================================================= */

#define EV(e)   VPMU_EVENT_BIT(VPMU_EVENT_##e)

/*
 * Leaf 0xA: EAX = version | nr_gp << 8 | gp_width << 16 | len << 24 (len 7,
 * 8 on v5); EBX = events not in cfg.events, within len; ECX = v5 fixed
 * bitmap; EDX = v2+ nr_fixed | fixed_width << 5, v5 also bit 15.
 */
static const struct {
    int line;
    unsigned version, nr_gp, gp_width, nr_fixed, fixed_width;
    uint32_t events;
    uint32_t eax, ebx, ecx, edx;
} leaf_a[] = {
    /* 1 | 2 << 8 | 40 << 16 (0x28) | 7 << 24 */
    { SRC_LINE, 1, 2, 40, 0, 0, VPMU_EVENTS_ALL, 0x07280201, 0, 0, 0 },
    /* no cycles (bit 0); no topdown slots, but bit 7 is past len 7 */
    { SRC_LINE, 1, 4, 32, 0, 0, VPMU_EVENTS_ALL & ~(EV(CYCLES) | EV(TOPDOWN_SLOTS)),
      0x07200401, 0x01, 0, 0 },
    /* EDX = 3 | 48 << 5 (0x600) */
    { SRC_LINE, 2, 4, 48, 3, 48, VPMU_EVENTS_ALL, 0x07300402, 0, 0, 0x603 },
    { SRC_LINE, 2, 8, 48, 0, 0, VPMU_EVENTS_ALL, 0x07300802, 0, 0, 0 },
    /* no LLC misses (4), no branch misses (6): 0x50; EDX = 2 | 40 << 5 */
    { SRC_LINE, 3, 4, 48, 2, 40,
      VPMU_EVENTS_ALL & ~(EV(LLC_MISSES) | EV(BRANCH_MISSES)),
      0x07300403, 0x50, 0, 0x502 },
    { SRC_LINE, 4, 8, 48, 3, 48, VPMU_EVENTS_ALL & ~EV(TOPDOWN_SLOTS),
      0x07300804, 0, 0, 0x603 },
    /* only instructions: 0x7F & ~0x2; EDX = 1 | 32 << 5 */
    { SRC_LINE, 4, 2, 40, 1, 32, EV(INSTRUCTIONS), 0x07280204, 0x7D, 0, 0x401 },
    /* v5: len 8, ECX = 0xF, EDX = 4 | 0x600 | 1 << 15 */
    { SRC_LINE, 5, 6, 48, 4, 48, VPMU_EVENTS_ALL, 0x08300605, 0, 0xF, 0x8604 },
    { SRC_LINE, 5, 8, 48, 3, 48, VPMU_EVENTS_ALL & ~EV(TOPDOWN_SLOTS),
      0x08300805, 0x80, 0x7, 0x8603 },
    { SRC_LINE, 5, 4, 48, 0, 0, VPMU_EVENTS_ALL, 0x08300405, 0, 0, 0x8000 },
    { SRC_LINE, 5, 1, 32, 2, 40, EV(CYCLES) | EV(TOPDOWN_SLOTS),
      0x08200105, 0x7E, 0x3, 0x8502 },
};

START_TEST(test_cpuid_leaf_a)
{
    for (size_t i = 0; i < ARRAY_SIZE(leaf_a); i++) {
        VpmuConfig cfg;
        TestPmu t;
        uint32_t regs[4] = { 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef };
        int r;

        vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
        cfg.intel_version = leaf_a[i].version;
        cfg.nr_gp = leaf_a[i].nr_gp;
        cfg.gp_width = leaf_a[i].gp_width;
        cfg.nr_fixed = leaf_a[i].nr_fixed;
        cfg.fixed_width = leaf_a[i].fixed_width;
        cfg.pdcm = leaf_a[i].version >= 2;
        cfg.perf_capabilities = leaf_a[i].version >= 2 ? FW : 0;
        cfg.events = leaf_a[i].events;
        test_pmu_init(&t, &cfg);
        r = vpmu_pmu_cpuid(t.pmu, 0xA, 0, regs);
        ck_assert_msg(r == 0, "line %d: ret %d", leaf_a[i].line, r);
        ck_assert_msg(regs[0] == leaf_a[i].eax && regs[1] == leaf_a[i].ebx &&
                      regs[2] == leaf_a[i].ecx && regs[3] == leaf_a[i].edx,
                      "line %d: 0xA = %08x %08x %08x %08x, want %08x %08x %08x %08x",
                      leaf_a[i].line, regs[0], regs[1], regs[2], regs[3],
                      leaf_a[i].eax, leaf_a[i].ebx, leaf_a[i].ecx, leaf_a[i].edx);
        test_pmu_fini(&t);
    }
}
END_TEST

/* "GenuineIntel": EBX "Genu", EDX "ineI", ECX "ntel" */
#define GENU 0x756e6547u
#define INEI 0x49656e69u
#define NTEL 0x6c65746eu

START_TEST(test_cpuid_leaf_0_1)
{
    static const struct {
        int line;
        uint32_t leaf;
        bool pdcm;
        uint32_t in[4], out[4];
    } v[] = {
        /* leaf 0: max basic leaf raised to at least 0xA */
        { SRC_LINE, 0, true, { 0x7, GENU, NTEL, INEI }, { 0xA, GENU, NTEL, INEI } },
        { SRC_LINE, 0, true, { 0x9, GENU, NTEL, INEI }, { 0xA, GENU, NTEL, INEI } },
        { SRC_LINE, 0, false, { 0xA, GENU, NTEL, INEI }, { 0xA, GENU, NTEL, INEI } },
        { SRC_LINE, 0, true, { 0x16, GENU, NTEL, INEI }, { 0x16, GENU, NTEL, INEI } },
        /* leaf 1: ECX.PDCM (15) = pdcm, everything else as given */
        { SRC_LINE, 1, true, { 0x906EA, 0x01020800, 0x7FFA7BBF, 0xBFEBFBFF },
          { 0x906EA, 0x01020800, 0x7FFAFBBF, 0xBFEBFBFF } },
        { SRC_LINE, 1, true, { 0x906EA, 0x01020800, 0x7FFAFBBF, 0xBFEBFBFF },
          { 0x906EA, 0x01020800, 0x7FFAFBBF, 0xBFEBFBFF } },
        { SRC_LINE, 1, false, { 0x906EA, 0x01020800, 0x7FFAFBBF, 0xBFEBFBFF },
          { 0x906EA, 0x01020800, 0x7FFA7BBF, 0xBFEBFBFF } },
        { SRC_LINE, 1, false, { 1, 2, 0xFFFFFFFF, 4 }, { 1, 2, 0xFFFF7FFF, 4 } },
        { SRC_LINE, 1, true, { 1, 2, 0, 4 }, { 1, 2, 0x8000, 4 } },
        { SRC_LINE, 1, false, { 1, 2, 0, 4 }, { 1, 2, 0, 4 } },
    };

    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        VpmuConfig cfg;
        TestPmu t;
        uint32_t regs[4];
        int r;

        intel_cfg(&cfg, 2);
        cfg.pdcm = v[i].pdcm;
        cfg.perf_capabilities = v[i].pdcm ? FW : 0;
        test_pmu_init(&t, &cfg);
        memcpy(regs, v[i].in, sizeof(regs));
        r = vpmu_pmu_cpuid(t.pmu, v[i].leaf, 0, regs);
        ck_assert_msg(r == 0, "line %d: ret %d", v[i].line, r);
        ck_assert_msg(memcmp(regs, v[i].out, sizeof(regs)) == 0,
                      "line %d: leaf %u = %08x %08x %08x %08x, want %08x %08x %08x %08x",
                      v[i].line, v[i].leaf, regs[0], regs[1], regs[2], regs[3],
                      v[i].out[0], v[i].out[1], v[i].out[2], v[i].out[3]);
        test_pmu_fini(&t);
    }
}
END_TEST

/* _i = version: leaves that are no Intel PMU leaf leave regs untouched */
START_TEST(test_cpuid_not_pmu)
{
    static const uint32_t leaves[] = {
        0x2, 0x4, 0x7, 0xB, 0xD, 0x80000000, 0x80000001, 0x80000022,
    };
    TestPmu t;

    init_version(&t, _i);
    for (size_t i = 0; i < ARRAY_SIZE(leaves); i++) {
        uint32_t regs[4] = { 0x11111111, 0x22222222, 0x33333333, 0x44444444 };

        ck_assert_int_eq(vpmu_pmu_cpuid(t.pmu, leaves[i], 0, regs), -ENOENT);
        ck_assert_msg(regs[0] == 0x11111111 && regs[1] == 0x22222222 &&
                      regs[2] == 0x33333333 && regs[3] == 0x44444444,
                      "leaf 0x%x changed regs", leaves[i]);
    }
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */
/* Counting                                                                  */
/* ========================================================================= */

/* v2; reset GLOBAL_CTRL = 0xF, so EVTSEL.EN alone starts a GP counter. */
static const Step count_gp[] = {
    W(EVTSEL(0), EOU | CYC),
    W(EVTSEL(1), EN | USR | CYC),
    W(EVTSEL(2), EN | OS | CYC),
    W(EVTSEL(3), EN | CYC),             /* neither OS nor USR: counts nothing */
    RUN(CYCLES, 0, 10), RUN(CYCLES, 1, 2), RUN(CYCLES, 2, 3), RUN(CYCLES, 3, 7),
    /* all 22; CPL 3 only 7; CPL 0-2 10 + 2 + 3 = 15 */
    R(PMC(0), 22), R(PMC(1), 7), R(PMC(2), 15), R(PMC(3), 0),
    RDPMC(0, 22), RDPMC(1, 7), RDPMC(2, 15), RDPMC(3, 0),
    STATE(GPC(0), COUNTING),
    /* other events are not counted */
    RUN(REF_CYCLES, 0, 5), RUN(BRANCHES, 3, 5), RUN(LLC_MISSES, 3, 5),
    R(PMC(0), 22), R(PMC(1), 7),
    /* GLOBAL_CTRL bit 0 clear: counter 0 stops, the others go on */
    W(GLOBAL_CTRL, 0xE),
    RUN(CYCLES, 0, 4), R(PMC(0), 22), R(PMC(2), 19),
    W(GLOBAL_CTRL, 0xF),
    RUN(CYCLES, 3, 1), R(PMC(0), 23), R(PMC(1), 8),
    /* EN clear: stops, value kept */
    W(EVTSEL(1), USR | CYC),
    RUN(CYCLES, 3, 5), R(PMC(1), 8), R(PMC(0), 28),
    /* writing the count of a running counter: counts on from there */
    W(PMC(0), 1000), RUN(CYCLES, 0, 1), R(PMC(0), 1001),
    /* every architectural event reaches a GP counter */
    W(EVTSEL(1), EOU | 0x4F2E), RUN(LLC_REFERENCES, 0, 3), R(PMC(1), 11),
    W(EVTSEL(1), EOU | 0x412E), RUN(LLC_MISSES, 3, 2), R(PMC(1), 13),
    W(EVTSEL(1), EOU | 0xC5), RUN(BRANCH_MISSES, 0, 1), R(PMC(1), 14),
    W(EVTSEL(1), EOU | REF), RUN(REF_CYCLES, 0, 4), R(PMC(1), 18),
    W(EVTSEL(1), EOU | BR), RUN(BRANCHES, 3, 2), R(PMC(1), 20),
    R(PMC(0), 1001),
    /* 0x0300, Linux's and KVM's pseudo-encoding: reference cycles too */
    W(EVTSEL(1), EOU | REF_PSEUDO), RUN(REF_CYCLES, 3, 3), RUN(CYCLES, 0, 9),
    R(PMC(1), 23), STATE(GPC(1), COUNTING),
    W(EVTSEL(1), EN | USR | REF_PSEUDO), RUN(REF_CYCLES, 0, 5),
    RUN(REF_CYCLES, 3, 1), R(PMC(1), 24),
};

/* v2 fixed counters: 0 instructions, 1 core cycles, 2 reference cycles. */
static const Step count_fixed[] = {
    /* nibble 0: OS|USR, nibble 1: OS|USR, nibble 2: USR only */
    W(FIXED_CTR_CTRL, 0x233),
    /* GLOBAL_CTRL fixed bits are clear at reset: nothing counts */
    RUN(CYCLES, 0, 5), R(FIXED_CTR(1), 0),
    W(GLOBAL_CTRL, 0x70000000F),        /* enabling WRMSR: fixed 0 gets 1 */
    R(FIXED_CTR(0), 1),
    RUN(CYCLES, 0, 4), RUN(CYCLES, 3, 6),
    RUN(REF_CYCLES, 0, 5), RUN(REF_CYCLES, 3, 2),
    RUN(INSTRUCTIONS, 3, 7),
    R(FIXED_CTR(0), 8), R(FIXED_CTR(1), 10), R(FIXED_CTR(2), 2),
    RDPMC(RDPMC_FIXED | 0, 8), RDPMC(RDPMC_FIXED | 1, 10), RDPMC(RDPMC_FIXED | 2, 2),
    STATE(FIXED(1), COUNTING),
    /* the disabling WRMSR is not counted */
    W(GLOBAL_CTRL, 0xF),
    RUN(CYCLES, 0, 3), R(FIXED_CTR(0), 8), R(FIXED_CTR(1), 10),
    /* PMI alone (OS = USR = 0) does not count */
    W(FIXED_CTR_CTRL, 0x8),
    W(GLOBAL_CTRL, 0x70000000F),
    RUN(INSTRUCTIONS, 0, 3), RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 3, 3),
    R(FIXED_CTR(0), 8), R(FIXED_CTR(1), 10), R(FIXED_CTR(2), 2),
};

/* v5 fixed counter 3: topdown slots; and a GP counter on 0xA4/0x01. */
static const Step count_slots[] = {
    W(FIXED_CTR_CTRL, 0x3000),
    W(GLOBAL_CTRL, 1ull << 35),
    W(EVTSEL(0), EOU | SLOTS),          /* GP enable bits cleared just above */
    RUN(TOPDOWN_SLOTS, 0, 9), RUN(TOPDOWN_SLOTS, 3, 1),
    R(FIXED_CTR(3), 10), RDPMC(RDPMC_FIXED | 3, 10), R(PMC(0), 0),
    W(GLOBAL_CTRL, (1ull << 35) | 1),
    RUN(TOPDOWN_SLOTS, 3, 4), R(PMC(0), 4), R(FIXED_CTR(3), 14),
};

/* v1: no GLOBAL_CTRL; EN alone counts; overflow gives a PMI on INT. */
static const Step count_v1[] = {
    W(EVTSEL(0), EOU | CYC),
    RUN(CYCLES, 0, 7), R(PMC(0), 7),
    W_GP(GLOBAL_CTRL, 0), W_GP(GLOBAL_CTRL, 0x3),
    RUN(CYCLES, 3, 1), R(PMC(0), 8), RDPMC(0, 8),
    /* legacy 0xFFFFFFFE, width 40: -2 & 0xFF_FFFF_FFFF */
    W(PMC(1), 0xFFFFFFFE), R(PMC(1), 0xFFFFFFFFFE),
    W(EVTSEL(1), EOU | INT | REF),
    RUN(REF_CYCLES, 0, 1), R(PMC(1), 0xFFFFFFFFFF), PMIS(0),
    RUN(REF_CYCLES, 0, 1), R(PMC(1), 0), PMIS(1),
    RUN(REF_CYCLES, 3, 3), R(PMC(1), 3), PMIS(1),
    /* the WRMSR rule on v1: reprogramming to instructions keeps the count, +1 */
    W(EVTSEL(0), EN | OS | INSTR), R(PMC(0), 9),
    W(EVTSEL(1), 0), R(PMC(0), 10),
    W(EVTSEL(0), 0), R(PMC(0), 10),
};

/* v3: AnyThread (21) accepted and counts this thread; PC (19) no effect. */
static const Step count_anythread[] = {
    W(EVTSEL(0), EOU | ANY | CYC), R(EVTSEL(0), 0x63003C),
    W(EVTSEL(1), EOU | PC | CYC), R(EVTSEL(1), 0x4B003C),
    RUN(CYCLES, 0, 5), R(PMC(0), 5), R(PMC(1), 5),
    STATE(GPC(0), COUNTING), STATE(GPC(1), COUNTING),
    W(FIXED_CTR_CTRL, 0x70),            /* fixed 1: OS|USR|AnyThread */
    W(GLOBAL_CTRL, 0x20000000F),
    RUN(CYCLES, 3, 2), R(FIXED_CTR(1), 2), R(PMC(0), 7),
};

static const VersionSteps count_cases[] = {
    { 2, STEPS(count_gp) },
    { 2, STEPS(count_fixed) },
    { 5, STEPS(count_slots) },
    { 1, STEPS(count_v1) },
    { 3, STEPS(count_anythread) },
};

/* _i = index into count_cases */
START_TEST(test_counting)
{
    run_version_steps(&count_cases[_i]);
}
END_TEST

/*
 * v2: the WRMSR vpmu_pmu_wrmsr() serves retires after the write and is
 * counted by every counter that then counts instructions at CPL 0.
 */
static const Step wrmsr_rule[] = {
    W(EVTSEL(0), EOU | INSTR), R(PMC(0), 1),        /* enabling WRMSR: +1 */
    W(EVTSEL(2), EN | USR | INSTR),                 /* c0 +1; c2 is USR-only */
    R(PMC(0), 2), R(PMC(2), 0),
    W(EVTSEL(1), EOU | CYC), R(PMC(0), 3),          /* other PMU MSR: +1 */
    W_GP(EVTSEL(1), 1ull << 32),                    /* #GP: nothing retires */
    W_GP(FIXED_CTR(3), 0), W_GP(GLOBAL_STATUS, 0), W_GP(STATUS_SET, 1),
    R(PMC(0), 3),
    W_NOENT(0x10, 0), W_NOENT(0xC0010000, 0),       /* not vpmu's to count */
    R(PMC(0), 3),
    RUN(INSTRUCTIONS, 3, 10), R(PMC(0), 13), R(PMC(2), 10),
    RETIRE(0, false), R(PMC(0), 14), R(PMC(2), 10),
    RETIRE(3, false), R(PMC(0), 15), R(PMC(2), 11),
    /* writing the counter itself: the value lands, then the WRMSR retires */
    W(PMC(0), 100), R(PMC(0), 101),
    /* GLOBAL_CTRL: the disabling write is not counted, the enabling one is */
    W(GLOBAL_CTRL, 0xE), R(PMC(0), 101),
    RETIRE(0, false), R(PMC(0), 101),
    W(GLOBAL_CTRL, 0xF), R(PMC(0), 102),
    /* fixed 0 (instructions, OS): GLOBAL_CTRL bit 32 clear, so not yet */
    W(FIXED_CTR_CTRL, 0x1), R(PMC(0), 103), R(FIXED_CTR(0), 0),
    W(GLOBAL_CTRL, 0x10000000F), R(PMC(0), 104), R(FIXED_CTR(0), 1),
    /* EN clear on c0: not counted by c0, counted by fixed 0 */
    W(EVTSEL(0), OS | USR | INSTR), R(PMC(0), 104), R(FIXED_CTR(0), 2),
    W(FIXED_CTR_CTRL, 0), R(FIXED_CTR(0), 2),
    R(PMC(2), 11),
    /*
     * CMASK makes the event not plain: the fake source refuses it
     * (-EOPNOTSUPP) so the counter is SOURCE_ERROR, and emulated
     * instructions do not apply to it either.
     */
    W(EVTSEL(3), EOU | CMASK(1) | INSTR),
    STATE(GPC(3), SOURCE_ERROR),
    RETIRE(0, false), W(EVTSEL(1), 0),
    R(PMC(3), 0),
};

START_TEST(test_wrmsr_counted)
{
    VERSION_SCRIPT(2, wrmsr_rule);
}
END_TEST

/* v4: vpmu_pmu_instruction_retired(cpl, branch). */
static const Step retired[] = {
    W(GLOBAL_CTRL, 0),
    W(EVTSEL(0), EOU | INSTR),
    W(EVTSEL(1), EOU | BR),
    W(EVTSEL(2), EN | USR | BR),
    W(EVTSEL(3), EN | USR | INSTR),
    W(EVTSEL(4), EN | OS | BR),
    W(FIXED_CTR_CTRL, 0x3),
    /* enables all: c0 and fixed 0 count this WRMSR (CPL 0, not a branch) */
    W(GLOBAL_CTRL, 0x10000001F),
    R(PMC(0), 1), R(PMC(1), 0), R(PMC(3), 0), R(FIXED_CTR(0), 1),
    RETIRE(3, false),       /* c0 2, c3 1, f0 2 */
    RETIRE(0, true),        /* c0 3, c1 1, c4 1, f0 3 */
    RETIRE(3, true),        /* c0 4, c1 2, c2 1, c3 2, f0 4 */
    RETIRE(1, true),        /* CPL 1 is OS: c0 5, c1 3, c4 2, f0 5 */
    R(PMC(0), 5), R(PMC(1), 3), R(PMC(2), 1), R(PMC(3), 2), R(PMC(4), 2),
    R(FIXED_CTR(0), 5),
    RDPMC(RDPMC_FIXED | 0, 5),
};

START_TEST(test_instruction_retired)
{
    VERSION_SCRIPT(4, retired);
}
END_TEST

/* ========================================================================= */
/* Overflow                                                                  */
/* ========================================================================= */

/* v2, width 48: mask 0xFFFF_FFFF_FFFF. */
static const Step overflow_gp[] = {
    W(A_PMC(0), 0xFFFFFFFFFFF6),        /* 2^48 - 10 */
    W(EVTSEL(0), EOU | INT | CYC),
    RUN(CYCLES, 0, 9),
    R(PMC(0), 0xFFFFFFFFFFFF), R(GLOBAL_STATUS, 0), PMIS(0),
    RUN(CYCLES, 0, 1),                  /* the 10th event wraps */
    R(PMC(0), 0), R(GLOBAL_STATUS, 1), PMIS(1),
    RUN(CYCLES, 3, 4), R(PMC(0), 4), PMIS(1),
    /* a #GP OVF_CTRL write clears nothing */
    W_GP(OVF_CTRL, 1 | (1ull << 61)), R(GLOBAL_STATUS, 1),
    W(OVF_CTRL, 1), R(GLOBAL_STATUS, 0),
    /* preset 1 - n = 2^48 - 9: reads 1 after n = 10 events */
    W(A_PMC(0), 0xFFFFFFFFFFF7),
    RUN(CYCLES, 0, 10), R(PMC(0), 1), R(GLOBAL_STATUS, 1), PMIS(2),
    W(OVF_CTRL, 1),
    /* legacy write of -1 to the running counter: 0xFFFF_FFFF_FFFF */
    W(PMC(0), 0xFFFFFFFF), R(PMC(0), 0xFFFFFFFFFFFF), R(GLOBAL_STATUS, 0),
    RUN(CYCLES, 0, 1), R(PMC(0), 0), R(GLOBAL_STATUS, 1), PMIS(3),
    /* writing 0 to a running counter restarts it */
    RUN(CYCLES, 0, 5), R(PMC(0), 5),
    W(PMC(0), 0), R(PMC(0), 0),
    RUN(CYCLES, 0, 3), R(PMC(0), 3), PMIS(3),
    /* without INT: status, no PMI */
    W(A_PMC(1), 0xFFFFFFFFFFFE),
    W(EVTSEL(1), EOU | REF),
    RUN(REF_CYCLES, 0, 1), R(PMC(1), 0xFFFFFFFFFFFF), R(GLOBAL_STATUS, 1),
    RUN(REF_CYCLES, 0, 1), R(PMC(1), 0), R(GLOBAL_STATUS, 3), PMIS(3),
    W(OVF_CTRL, 3), R(GLOBAL_STATUS, 0),
    /* a counter stopped by GLOBAL_CTRL does not overflow */
    W(PMC(1), 0xFFFFFFFF), W(GLOBAL_CTRL, 0xD),
    RUN(REF_CYCLES, 0, 3), R(PMC(1), 0xFFFFFFFFFFFF), R(GLOBAL_STATUS, 0),
    W(GLOBAL_CTRL, 0xF),
    RUN(REF_CYCLES, 0, 1), R(PMC(1), 0), R(GLOBAL_STATUS, 2), PMIS(3),
    R(PMC(0), 3),
};

START_TEST(test_overflow_gp)
{
    TestPmu t;
    VpmuCounterInfo info;
    VpmuStats st;

    init_version(&t, 2);
    run_steps(&t, overflow_gp, ARRAY_SIZE(overflow_gp));

    /* counter 0 wrapped 3 times with INT, counter 1 twice without */
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(0), &info), 0);
    ck_assert_uint_eq(info.overflows, 3);
    ck_assert_uint_eq(info.pmis, 3);
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(1), &info), 0);
    ck_assert_uint_eq(info.overflows, 2);
    ck_assert_uint_eq(info.pmis, 0);
    vpmu_pmu_stats(t.pmu, &st);
    ck_assert_uint_eq(st.overflows, 5);
    ck_assert_uint_eq(st.pmis, 3);
    test_pmu_fini(&t);
}
END_TEST

/* v2 fixed counter 1 (core cycles), width 48 */
static const Step overflow_fixed_v2[] = {
    W(FIXED_CTR(1), 0xFFFFFFFFFFFD),    /* 2^48 - 3 */
    W(FIXED_CTR_CTRL, 0x30),            /* nibble 1: OS|USR, no PMI */
    W(GLOBAL_CTRL, 1ull << 33),
    RUN(CYCLES, 0, 2), R(FIXED_CTR(1), 0xFFFFFFFFFFFF), R(GLOBAL_STATUS, 0),
    RUN(CYCLES, 3, 1), R(FIXED_CTR(1), 0), R(GLOBAL_STATUS, 1ull << 33), PMIS(0),
    RUN(CYCLES, 0, 2), R(FIXED_CTR(1), 2),
    W(OVF_CTRL, 1ull << 33), R(GLOBAL_STATUS, 0),
    W(FIXED_CTR_CTRL, 0xB0),            /* + PMI (nibble bit 3) */
    W(FIXED_CTR(1), 0xFFFFFFFFFFFF),
    RUN(CYCLES, 0, 1), R(FIXED_CTR(1), 0), R(GLOBAL_STATUS, 1ull << 33), PMIS(1),
    RDPMC(RDPMC_FIXED | 1, 0),
};

/* v3 fixed counter 1, width 40 */
static const Step overflow_fixed_v3[] = {
    W(FIXED_CTR(1), 0xFFFFFFFFFD),      /* 2^40 - 3 */
    W(FIXED_CTR_CTRL, 0x30),
    W(GLOBAL_CTRL, 1ull << 33),
    RUN(CYCLES, 0, 2), R(FIXED_CTR(1), 0xFFFFFFFFFF), R(GLOBAL_STATUS, 0),
    RUN(CYCLES, 3, 1), R(FIXED_CTR(1), 0), R(GLOBAL_STATUS, 1ull << 33), PMIS(0),
    W(OVF_CTRL, 1ull << 33),
    W(FIXED_CTR_CTRL, 0xB0),
    W(FIXED_CTR(1), 0xFFFFFFFFFF),
    RUN(CYCLES, 0, 1), R(FIXED_CTR(1), 0), R(GLOBAL_STATUS, 1ull << 33), PMIS(1),
};

/* v5 fixed counter 3 (topdown slots), width 48 */
static const Step overflow_fixed_v5[] = {
    W(FIXED_CTR(3), 0xFFFFFFFFFFFD),
    W(FIXED_CTR_CTRL, 0x3000),
    W(GLOBAL_CTRL, 1ull << 35),
    RUN(TOPDOWN_SLOTS, 0, 2), R(GLOBAL_STATUS, 0),
    RUN(TOPDOWN_SLOTS, 0, 1), R(FIXED_CTR(3), 0), R(GLOBAL_STATUS, 1ull << 35),
    PMIS(0),
    W(OVF_CTRL, 1ull << 35),
    W(FIXED_CTR_CTRL, 0xB000),
    W(FIXED_CTR(3), 0xFFFFFFFFFFFF),
    RUN(TOPDOWN_SLOTS, 3, 1), R(FIXED_CTR(3), 0), R(GLOBAL_STATUS, 1ull << 35),
    PMIS(1),
};

static const VersionSteps overflow_fixed_cases[] = {
    { 2, STEPS(overflow_fixed_v2) },
    { 3, STEPS(overflow_fixed_v3) },
    { 5, STEPS(overflow_fixed_v5) },
};

/* _i = index into overflow_fixed_cases */
START_TEST(test_overflow_fixed)
{
    run_version_steps(&overflow_fixed_cases[_i]);
}
END_TEST

/* v4/v5 GLOBAL_STATUS_SET: sets status bits, requests no PMI. */
static const Step status_set[] = {
    W(EVTSEL(0), EOU | CYC),
    W(STATUS_SET, 1 | (1ull << 32) | OVF_BUF), R(STATUS_SET, 0),
    R(GLOBAL_STATUS, 0x4000000100000001ull), PMIS(0),
    RUN(CYCLES, 0, 3), R(PMC(0), 3),    /* status bits do not stop counting */
    W_GP(STATUS_SET, 2 | COND_CHGD),    /* nothing set */
    R(GLOBAL_STATUS, 0x4000000100000001ull),
    /* CTR_Frz set by software freezes every counter */
    W(STATUS_SET, CTR_FRZ),
    R(GLOBAL_STATUS, 0x4800000100000001ull),
    RUN(CYCLES, 0, 3), R(PMC(0), 3), PMIS(0),
    W(OVF_CTRL, CTR_FRZ), R(GLOBAL_STATUS, 0x4000000100000001ull),
    RUN(CYCLES, 0, 3), R(PMC(0), 6),
    W(OVF_CTRL, 1 | (1ull << 32) | OVF_BUF), R(GLOBAL_STATUS, 0),
    /* LBR_Frz is status only */
    W(STATUS_SET, LBR_FRZ), R(GLOBAL_STATUS, LBR_FRZ),
    RUN(CYCLES, 0, 1), R(PMC(0), 7),
    W(OVF_CTRL, LBR_FRZ), R(GLOBAL_STATUS, 0), PMIS(0),
};

/* _i = version (4, 5) */
START_TEST(test_status_set)
{
    VERSION_SCRIPT(_i, status_set);
}
END_TEST

/* ========================================================================= */
/* Freeze_PerfMon_On_PMI                                                     */
/* ========================================================================= */

/*
 * Counter 0: cycles, INT, preset -1; counter 1: reference cycles, so the
 * two are fed separately and the freeze point is unambiguous.
 */
static const Step freeze_legacy[] = {    /* v2, v3: GLOBAL_CTRL reset 0xF */
    W(DEBUGCTL, DBG_FRZ_PMI),
    W(PMC(0), 0xFFFFFFFF),
    W(EVTSEL(0), EOU | INT | CYC),
    W(EVTSEL(1), EOU | REF),
    RUN(REF_CYCLES, 0, 2), R(PMC(1), 2),
    RUN(CYCLES, 0, 1), PMIS(1), R(PMC(0), 0),
    R(GLOBAL_STATUS, 1),                /* no CTR_Frz before v4 */
    R(GLOBAL_CTRL, 0),                  /* legacy freeze clears GLOBAL_CTRL */
    RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 0, 3),
    R(PMC(0), 0), R(PMC(1), 2),
    /* the PMI handler clears status and re-arms */
    W(OVF_CTRL, 1), W(GLOBAL_CTRL, 0xF),
    RUN(CYCLES, 0, 2), RUN(REF_CYCLES, 0, 1),
    R(PMC(0), 2), R(PMC(1), 3), PMIS(1),
};

static const Step freeze_v4[] = {        /* GLOBAL_CTRL reset 0xFF */
    W(DEBUGCTL, DBG_FRZ_PMI),
    W(PMC(0), 0xFFFFFFFF),
    W(EVTSEL(0), EOU | INT | CYC),
    W(EVTSEL(1), EOU | REF),
    RUN(REF_CYCLES, 0, 2), R(PMC(1), 2),
    RUN(CYCLES, 0, 1), PMIS(1), R(PMC(0), 0),
    R(GLOBAL_STATUS, 1 | CTR_FRZ),      /* streamlined: CTR_Frz */
    R(GLOBAL_CTRL, 0xFF),               /* kept */
    RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 0, 3),
    R(PMC(0), 0), R(PMC(1), 2),
    /* clearing only the overflow bit does not unfreeze */
    W(OVF_CTRL, 1), R(GLOBAL_STATUS, CTR_FRZ),
    RUN(REF_CYCLES, 0, 3), R(PMC(1), 2),
    W(OVF_CTRL, CTR_FRZ), R(GLOBAL_STATUS, 0),
    RUN(CYCLES, 0, 2), RUN(REF_CYCLES, 0, 1),
    R(PMC(0), 2), R(PMC(1), 3), PMIS(1),
};

static const Step freeze_v5[] = {        /* GLOBAL_CTRL reset 0x3F */
    W(DEBUGCTL, DBG_FRZ_PMI),
    W(PMC(0), 0xFFFFFFFF),
    W(EVTSEL(0), EOU | INT | CYC),
    W(EVTSEL(1), EOU | REF),
    RUN(REF_CYCLES, 0, 2), R(PMC(1), 2),
    RUN(CYCLES, 0, 1), PMIS(1), R(PMC(0), 0),
    R(GLOBAL_STATUS, 1 | CTR_FRZ),
    R(GLOBAL_CTRL, 0x3F),
    RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 0, 3),
    R(PMC(0), 0), R(PMC(1), 2),
    W(OVF_CTRL, 1 | CTR_FRZ), R(GLOBAL_STATUS, 0),
    RUN(CYCLES, 0, 2), RUN(REF_CYCLES, 0, 1),
    R(PMC(0), 2), R(PMC(1), 3), PMIS(1),
};

/* Every version 2-5: no freeze without DEBUGCTL.12, nor without a PMI. */
static const Step no_freeze[] = {
    W(PMC(0), 0xFFFFFFFF),
    W(EVTSEL(0), EOU | INT | CYC),
    RUN(CYCLES, 0, 1), PMIS(1),
    RUN(CYCLES, 0, 2), R(PMC(0), 2), R(GLOBAL_STATUS, 1),
    W(OVF_CTRL, 1),
    W(DEBUGCTL, DBG_FRZ_PMI),
    W(EVTSEL(0), EOU | CYC),            /* no INT: no PMI, so no freeze */
    W(PMC(0), 0xFFFFFFFF),
    RUN(CYCLES, 0, 1), PMIS(1), R(GLOBAL_STATUS, 1),
    RUN(CYCLES, 0, 2), R(PMC(0), 2),
};

static const StepTable freeze_tables[6] = {
    [2] = STEPS(freeze_legacy),
    [3] = STEPS(freeze_legacy),
    [4] = STEPS(freeze_v4),
    [5] = STEPS(freeze_v5),
};

/* _i = version (2..5) */
START_TEST(test_freeze_on_pmi)
{
    version_script(_i, freeze_tables[_i].s, freeze_tables[_i].n);
    VERSION_SCRIPT(_i, no_freeze);
}
END_TEST

/* ========================================================================= */
/* Unsupported and raw events                                                */
/* ========================================================================= */

/* v2 without INSTRUCTIONS in cfg.events. */
static const Step unsupported[] = {
    W(EVTSEL(0), EOU | INSTR), STATE(GPC(0), UNSUPPORTED),
    RUN(INSTRUCTIONS, 0, 5), RETIRE(0, false),
    W(EVTSEL(1), EOU | CYC),
    R(PMC(0), 0),                       /* counts nothing, emulated or not */
    RUN(CYCLES, 0, 4), R(PMC(1), 4), STATE(GPC(1), COUNTING),
    /* fixed counter 0 counts instructions too */
    W(FIXED_CTR_CTRL, 0x3), W(GLOBAL_CTRL, 0x10000000F),
    STATE(FIXED(0), UNSUPPORTED),
    RUN(INSTRUCTIONS, 3, 5), R(FIXED_CTR(0), 0), R(PMC(0), 0),
    /* reprogrammed to a supported event, it counts */
    W(EVTSEL(0), EOU | CYC), STATE(GPC(0), COUNTING),
    RUN(CYCLES, 0, 2), R(PMC(0), 2), R(PMC(1), 6),
};

START_TEST(test_unsupported_event)
{
    VpmuConfig cfg;
    TestPmu t;
    uint32_t regs[4] = { 0 };

    intel_cfg(&cfg, 2);
    cfg.events = VPMU_EVENTS_ALL & ~EV(INSTRUCTIONS);
    test_pmu_init(&t, &cfg);
    run_steps(&t, unsupported, ARRAY_SIZE(unsupported));
    ck_assert_int_eq(vpmu_pmu_cpuid(t.pmu, 0xA, 0, regs), 0);
    ck_assert_uint_eq(regs[1], 0x2);    /* EBX[1]: instructions not available */
    test_pmu_fini(&t);
}
END_TEST

/* Event 0x12 umask 0x34 is not architectural: raw_config = 0x3412. */
static const Step raw_off[] = {
    W(EVTSEL(0), EOU | 0x3412), STATE(GPC(0), UNSUPPORTED),
    RUN_RAW(0x3412, 0, 6), R(PMC(0), 0),
};

static const Step raw_on[] = {
    W(EVTSEL(0), EOU | 0x3412), STATE(GPC(0), COUNTING),
    RUN_RAW(0x3412, 0, 6), RUN_RAW(0x3412, 3, 1),
    RUN_RAW(0x3413, 0, 4),              /* another raw event */
    RUN(CYCLES, 0, 4),
    R(PMC(0), 7),
    /* 0xC0 with umask 1 is not "instructions" (0xC0/0x00): raw */
    W(EVTSEL(1), EOU | 0x01C0), STATE(GPC(1), COUNTING),
    RUN(INSTRUCTIONS, 0, 2), RUN_RAW(0x01C0, 3, 3), R(PMC(1), 3),
};

/* _i = cfg.raw_events */
START_TEST(test_raw_events)
{
    VpmuConfig cfg;
    TestPmu t;

    intel_cfg(&cfg, 2);
    cfg.raw_events = _i;
    test_pmu_init(&t, &cfg);
    if (_i) {
        run_steps(&t, raw_on, ARRAY_SIZE(raw_on));
    } else {
        run_steps(&t, raw_off, ARRAY_SIZE(raw_off));
    }
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */
/* counter_info, stats, reset, spans                                         */
/* ========================================================================= */

START_TEST(test_counter_info_decode)
{
    static const struct {
        int line;
        uint64_t code;          /* EVTSEL[15:0]: umask << 8 | event */
        VpmuArchEvent event;
    } v[] = {
        { SRC_LINE, 0x003C, VPMU_EVENT_CYCLES },
        { SRC_LINE, 0x00C0, VPMU_EVENT_INSTRUCTIONS },
        { SRC_LINE, 0x013C, VPMU_EVENT_REF_CYCLES },
        { SRC_LINE, 0x4F2E, VPMU_EVENT_LLC_REFERENCES },
        { SRC_LINE, 0x412E, VPMU_EVENT_LLC_MISSES },
        { SRC_LINE, 0x00C4, VPMU_EVENT_BRANCHES },
        { SRC_LINE, 0x00C5, VPMU_EVENT_BRANCH_MISSES },
        { SRC_LINE, 0x01A4, VPMU_EVENT_TOPDOWN_SLOTS },
        { SRC_LINE, 0x01C0, VPMU_EVENT_RAW },
        { SRC_LINE, 0x003D, VPMU_EVENT_RAW },
        { SRC_LINE, 0x3412, VPMU_EVENT_RAW },
        { SRC_LINE, 0x002E, VPMU_EVENT_RAW },
    };
    static const VpmuArchEvent fixed_ev[4] = {
        VPMU_EVENT_INSTRUCTIONS, VPMU_EVENT_CYCLES, VPMU_EVENT_REF_CYCLES,
        VPMU_EVENT_TOPDOWN_SLOTS,
    };
    VpmuConfig cfg;
    VpmuCounterInfo info;
    TestPmu t;

    intel_cfg(&cfg, 5);
    cfg.raw_events = true;
    test_pmu_init(&t, &cfg);
    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, EVTSEL(0), EOU | v[i].code), 0);
        ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(0), &info), 0);
        ck_assert_msg(info.event == v[i].event, "line %d: event %d want %d",
                      v[i].line, (int)info.event, (int)v[i].event);
        ck_assert_msg(info.control == (EOU | v[i].code), "line %d: control",
                      v[i].line);
    }
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, FIXED_CTR_CTRL, 0x3333), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, GLOBAL_CTRL, 0xF00000000ull), 0);
    for (unsigned i = 0; i < 4; i++) {
        ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, FIXED(i), &info), 0);
        ck_assert_msg(info.event == fixed_ev[i], "fixed %u: event %d", i,
                      (int)info.event);
        ck_assert_uint_eq(info.id, FIXED(i));
        ck_assert_uint_eq(info.control, 0x3);
        ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    }
    test_pmu_fini(&t);
}
END_TEST

START_TEST(test_counter_info)
{
    static const uint32_t absent_v2[] = {
        GPC(4), GPC(7), GPC(8), FIXED(3), FIXED(4), 0x80000000u, 1u << 29,
        FIXED(0) | 0x100,
    };
    VpmuCounterInfo info;
    TestPmu t;

    init_version(&t, 2);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, FIXED_CTR_CTRL, 0x30), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, GLOBAL_CTRL, 0x20000000F), 0);
    /* the enabling WRMSR of an OS instructions counter: value 1 */
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, EVTSEL(0), EOU | INSTR), 0);
    vpmu_fake_source_run(t.fake, VPMU_EVENT_CYCLES, 0, 3, 4);

    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(0), &info), 0);
    ck_assert_uint_eq(info.id, 0);
    ck_assert_uint_eq(info.value, 1);
    ck_assert_uint_eq(info.control, EOU | INSTR);
    ck_assert_int_eq(info.event, VPMU_EVENT_INSTRUCTIONS);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);
    ck_assert_uint_eq(info.overflows, 0);
    ck_assert_uint_eq(info.pmis, 0);

    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, FIXED(1), &info), 0);
    ck_assert_uint_eq(info.id, VPMU_COUNTER_FIXED | 1);
    ck_assert_uint_eq(info.value, 4);
    ck_assert_uint_eq(info.control, 0x3);       /* the nibble, shifted down */
    ck_assert_int_eq(info.event, VPMU_EVENT_CYCLES);
    ck_assert_int_eq(info.state, VPMU_COUNTER_COUNTING);

    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, FIXED(0), &info), 0);
    ck_assert_uint_eq(info.id, VPMU_COUNTER_FIXED | 0);
    ck_assert_uint_eq(info.control, 0);
    ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, FIXED(2), &info), 0);
    ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);

    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(3), &info), 0);
    ck_assert_uint_eq(info.id, 3);
    ck_assert_uint_eq(info.value, 0);
    ck_assert_uint_eq(info.control, 0);
    ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);

    for (size_t i = 0; i < ARRAY_SIZE(absent_v2); i++) {
        ck_assert_msg(vpmu_pmu_counter_info(t.pmu, absent_v2[i], &info) == -ENOENT,
                      "id 0x%x", absent_v2[i]);
    }
    test_pmu_fini(&t);

    /* v1: no fixed counter ids at all */
    init_version(&t, 1);
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(1), &info), 0);
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, GPC(2), &info), -ENOENT);
    ck_assert_int_eq(vpmu_pmu_counter_info(t.pmu, FIXED(0), &info), -ENOENT);
    test_pmu_fini(&t);
}
END_TEST

START_TEST(test_stats)
{
    TestPmu t;
    VpmuStats st, before;
    uint64_t v;

    init_version(&t, 2);
    /* served: 3 RDMSR, 2 WRMSR, 2 RDPMC */
    ck_assert_int_eq(vpmu_pmu_rdmsr(t.pmu, PMC(0), &v), 0);
    ck_assert_int_eq(vpmu_pmu_rdmsr(t.pmu, GLOBAL_CTRL, &v), 0);
    ck_assert_int_eq(vpmu_pmu_rdmsr(t.pmu, PERF_CAP, &v), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, EVTSEL(0), EOU | CYC), 0);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, PMC(1), 5), 0);
    ck_assert_int_eq(vpmu_pmu_rdpmc(t.pmu, 0, &v), 0);
    ck_assert_int_eq(vpmu_pmu_rdpmc(t.pmu, RDPMC_FIXED | 2, &v), 0);
    vpmu_pmu_stats(t.pmu, &st);
    ck_assert_uint_eq(st.rdmsr, 3);
    ck_assert_uint_eq(st.wrmsr, 2);
    ck_assert_uint_eq(st.rdpmc, 2);
    ck_assert_uint_eq(st.gp_faults, 0);

    /* #GP: 1 RDMSR, 2 WRMSR, 1 RDPMC */
    ck_assert_int_eq(vpmu_pmu_rdmsr(t.pmu, STATUS_SET, &v), -EINVAL);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, EVTSEL(0), 1ull << 32), -EINVAL);
    ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, GLOBAL_STATUS, 0), -EINVAL);
    ck_assert_int_eq(vpmu_pmu_rdpmc(t.pmu, 4, &v), -EINVAL);
    vpmu_pmu_stats(t.pmu, &st);
    ck_assert_uint_eq(st.gp_faults, 4);
    /* docs do not say whether a #GP access also counts as an access */
    ck_assert(st.rdmsr == 3 || st.rdmsr == 4);
    ck_assert(st.wrmsr == 2 || st.wrmsr == 4);
    ck_assert(st.rdpmc == 2 || st.rdpmc == 3);

    /* reset keeps statistics */
    before = st;
    vpmu_pmu_reset(t.pmu);
    vpmu_pmu_stats(t.pmu, &st);
    ck_assert_uint_eq(st.gp_faults, before.gp_faults);
    ck_assert_uint_eq(st.rdmsr, before.rdmsr);
    ck_assert_uint_eq(st.wrmsr, before.wrmsr);
    ck_assert_uint_eq(st.rdpmc, before.rdpmc);
    test_pmu_fini(&t);
}
END_TEST

/*
 * -ENOENT is "not mine: the front end handles it as if vpmu did not exist"
 * (docs/api.md), so it is no guest access of this PMU: no statistic moves.
 */
START_TEST(test_stats_enoent)
{
    static const uint32_t msrs[] = { 0x10, 0x1B, 0xC0010000, 0xC9 };
    TestPmu t;
    VpmuStats st;
    uint64_t v;

    init_version(&t, 2);
    for (size_t i = 0; i < ARRAY_SIZE(msrs); i++) {
        ck_assert_int_eq(vpmu_pmu_rdmsr(t.pmu, msrs[i], &v), -ENOENT);
        ck_assert_int_eq(vpmu_pmu_wrmsr(t.pmu, msrs[i], 0), -ENOENT);
    }
    vpmu_pmu_stats(t.pmu, &st);
    ck_assert_uint_eq(st.gp_faults, 0);
    ck_assert_uint_eq(st.rdmsr, 0);
    ck_assert_uint_eq(st.wrmsr, 0);
    test_pmu_fini(&t);
}
END_TEST

/* Dirty every MSR the version has, then RESET. */
static const Step dirty_v1[] = {
    W(PMC(0), 0x1234), W(PMC(1), 0xFFFFFFFF), W(EVTSEL(0), EOU | CYC),
    W(EVTSEL(1), EOU | INT | REF), W(DEBUGCTL, DBG_BTF | DBG_FRZ_SMM),
    RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 0, 2), PMIS(1),
};

static const Step dirty_v2[] = {
    W(A_PMC(3), 0xFFFFFFFFFFFF), W(PMC(0), 0x1234),
    W(EVTSEL(3), EOU | CYC), W(EVTSEL(0), EOU | REF),
    W(FIXED_CTR(0), 5), W(FIXED_CTR(2), 7), W(FIXED_CTR_CTRL, 0x333),
    W(GLOBAL_CTRL, 0x70000000F), W(DEBUGCTL, DBG_BTF | DBG_FRZ_PMI),
    RUN(CYCLES, 0, 2), RUN(REF_CYCLES, 0, 2),   /* counter 3 overflows */
    R(GLOBAL_STATUS, 0x8),
};

static const Step dirty_v3[] = {
    W(PMC(3), 0xFFFFFFFF), W(EVTSEL(3), EOU | ANY | CYC),
    W(FIXED_CTR(1), 9), W(FIXED_CTR_CTRL, 0x77),
    W(GLOBAL_CTRL, 0x30000000F), W(DEBUGCTL, DBG_FRZ_SMM),
    RUN(CYCLES, 0, 2), R(GLOBAL_STATUS, 0x8),
};

static const Step dirty_v4[] = {
    W(A_PMC(7), 0x55), W(EVTSEL(7), EOU | INT | CYC),
    W(FIXED_CTR(2), 7), W(FIXED_CTR_CTRL, 0xFFF),
    W(GLOBAL_CTRL, 0x7000000FF), W(DEBUGCTL, DBG_FRZ_PMI),
    W(STATUS_SET, OVF_BUF | CTR_FRZ | 2), R(INUSE, 0x8000000700000080ull),
    R(GLOBAL_STATUS, OVF_BUF | CTR_FRZ | 2),
};

static const Step dirty_v5[] = {
    W(A_PMC(5), 0x55), W(EVTSEL(5), EOU | CYC),
    W(FIXED_CTR(3), 7), W(FIXED_CTR_CTRL, 0xBBBB),
    W(GLOBAL_CTRL, 0xF0000003F), W(DEBUGCTL, 0x5002),
    W(STATUS_SET, 1ull << 35), RUN(CYCLES, 3, 3),
    R(PMC(5), 0x58), R(INUSE, 0x8000000F00000020ull),
};

static const StepTable dirty_tables[6] = {
    [1] = STEPS(dirty_v1),
    [2] = STEPS(dirty_v2),
    [3] = STEPS(dirty_v3),
    [4] = STEPS(dirty_v4),
    [5] = STEPS(dirty_v5),
};

/* After RESET nothing counts: every selector is 0. */
static const Step after_reset[] = {
    RUN(CYCLES, 0, 5), RUN(REF_CYCLES, 3, 5), RUN(INSTRUCTIONS, 0, 5),
    RETIRE(0, true),
    R(PMC(0), 0),
};

/* _i = version */
START_TEST(test_pmu_reset)
{
    TestPmu t;

    init_version(&t, _i);
    run_steps(&t, dirty_tables[_i].s, dirty_tables[_i].n);
    vpmu_pmu_reset(t.pmu);
    run_msr_vectors(t.pmu, reset_tables[_i].v, reset_tables[_i].n);
    run_steps(&t, after_reset, ARRAY_SIZE(after_reset));
    run_msr_vectors(t.pmu, reset_tables[_i].v, reset_tables[_i].n);
    /* and the PMU works as after creation */
    run_msr_vectors(t.pmu, reserved_tables[_i].v, reserved_tables[_i].n);
    test_pmu_fini(&t);
}
END_TEST

/* _i = version */
START_TEST(test_msr_spans)
{
    const IntelCfg *c = &intel_cfgs[_i];
    VpmuMsrSpan spans[64];
    uint32_t valid[64];
    size_t nv = 0, n;
    TestPmu t;

    /* every MSR this configuration has, kind by kind */
    for (unsigned i = 0; i < c->nr_gp; i++) {
        valid[nv++] = PMC(i);
        valid[nv++] = EVTSEL(i);
        if (c->caps & FW) {
            valid[nv++] = A_PMC(i);
        }
    }
    for (unsigned i = 0; i < c->nr_fixed; i++) {
        valid[nv++] = FIXED_CTR(i);
    }
    if (_i >= 2) {
        valid[nv++] = FIXED_CTR_CTRL;
        valid[nv++] = GLOBAL_STATUS;
        valid[nv++] = GLOBAL_CTRL;
        valid[nv++] = OVF_CTRL;
    }
    if (_i >= 4) {
        valid[nv++] = STATUS_SET;
        valid[nv++] = INUSE;
    }
    if (c->pdcm) {
        valid[nv++] = PERF_CAP;
    }
    valid[nv++] = DEBUGCTL;

    init_version(&t, _i);
    n = vpmu_pmu_msr_spans(t.pmu, spans, ARRAY_SIZE(spans));
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, ARRAY_SIZE(spans));
    ck_assert_uint_eq(vpmu_pmu_msr_spans(t.pmu, NULL, 0), n);

    for (size_t i = 0; i < nv; i++) {
        uint64_t v;

        ck_assert_msg(in_spans(spans, n, valid[i]), "MSR 0x%x not in spans",
                      valid[i]);
        ck_assert_msg(vpmu_pmu_rdmsr(t.pmu, valid[i], &v) == 0, "rdmsr 0x%x",
                      valid[i]);
    }
    for (size_t i = 0; i < ARRAY_SIZE(noent_msrs); i++) {
        ck_assert_msg(!in_spans(spans, n, noent_msrs[i].msr),
                      "line %d: MSR 0x%x (-ENOENT) in spans", noent_msrs[i].line,
                      noent_msrs[i].msr);
    }
    /* the PMU answers every MSR of its spans (0 or #GP, never -ENOENT) */
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_gt(spans[i].count, 0);
        for (uint32_t m = 0; m < spans[i].count; m++) {
            uint64_t v;

            ck_assert_msg(vpmu_pmu_rdmsr(t.pmu, spans[i].base + m, &v) != -ENOENT,
                          "MSR 0x%x in spans but -ENOENT", spans[i].base + m);
        }
    }
    /* fewest runs: no two spans overlap or touch */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            uint64_t ie = (uint64_t)spans[i].base + spans[i].count;

            if (i != j) {
                ck_assert_msg(!(spans[j].base >= spans[i].base &&
                                spans[j].base <= ie),
                              "spans %zu and %zu overlap or touch", i, j);
            }
        }
    }
    test_pmu_fini(&t);
}
END_TEST

/* ========================================================================= */

/*
 * A v2 PMU without fixed (or any) counters still has FIXED_CTR_CTRL and
 * GLOBAL_CTRL: writing 0 (no reserved bit) is accepted, any bit is #GP.
 */
START_TEST(test_no_counters_zero_writes)
{
    static const MsrVector v[] = {
        { SRC_LINE, 0x38d, true, 0, 0, 0, true },
        { SRC_LINE, 0x38d, true, 1, -EINVAL },
        { SRC_LINE, 0x38f, true, 0, 0, 0, true },
        { SRC_LINE, 0x38f, true, 1ull << 32, -EINVAL },
    };
    VpmuConfig cfg;
    TestPmu t;

    intel_cfg(&cfg, 2);
    cfg.nr_gp = 0;
    cfg.nr_fixed = 0;
    cfg.fixed_width = 0;
    test_pmu_init(&t, &cfg);
    run_msr_vectors(t.pmu, v, ARRAY_SIZE(v));
    test_pmu_fini(&t);
}
END_TEST

static Suite *intel_suite(void)
{
    Suite *s = suite_create("intel");
    TCase *tc;

    tc = tcase_create("msr");
    tcase_add_loop_test(tc, test_reset_values, 1, 6);
    tcase_add_loop_test(tc, test_no_pdcm, 2, 6);
    tcase_add_loop_test(tc, test_reserved_bits, 1, 6);
    tcase_add_loop_test(tc, test_counter_widths, 0, (int)ARRAY_SIZE(width_cases));
    tcase_add_loop_test(tc, test_global_inuse, 4, 6);
    tcase_add_loop_test(tc, test_msr_spans, 1, 6);
    tcase_add_loop_test(tc, test_pmu_reset, 1, 6);
    suite_add_tcase(s, tc);

    tc = tcase_create("rdpmc");
    tcase_add_loop_test(tc, test_rdpmc_index, 1, 6);
    tcase_add_test(tc, test_rdpmc_permitted);
    suite_add_tcase(s, tc);

    tc = tcase_create("cpuid");
    tcase_add_test(tc, test_cpuid_leaf_a);
    tcase_add_test(tc, test_cpuid_leaf_0_1);
    tcase_add_loop_test(tc, test_cpuid_not_pmu, 1, 6);
    suite_add_tcase(s, tc);

    tc = tcase_create("counting");
    tcase_add_loop_test(tc, test_counting, 0, (int)ARRAY_SIZE(count_cases));
    tcase_add_test(tc, test_wrmsr_counted);
    tcase_add_test(tc, test_instruction_retired);
    tcase_add_test(tc, test_unsupported_event);
    tcase_add_loop_test(tc, test_raw_events, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow");
    tcase_add_test(tc, test_overflow_gp);
    tcase_add_loop_test(tc, test_overflow_fixed, 0,
                        (int)ARRAY_SIZE(overflow_fixed_cases));
    tcase_add_loop_test(tc, test_status_set, 4, 6);
    tcase_add_loop_test(tc, test_freeze_on_pmi, 2, 6);
    suite_add_tcase(s, tc);

    tc = tcase_create("info");
    tcase_add_test(tc, test_counter_info);
    tcase_add_test(tc, test_counter_info_decode);
    tcase_add_test(tc, test_stats);
    tcase_add_test(tc, test_stats_enoent);
    tcase_add_test(tc, test_no_counters_zero_writes);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return run_suite(intel_suite());
}
