/*
 * AMD: exact instruction and branch counts, overflow and PMI delivery,
 * writes to running counters, plus the payload entry point.
 *
 * Counts come from measure_block() (measure.h): 2N + 5 = 2005
 * instructions and N = 1000 branches.  Counters count at CPL 0 (OS bit;
 * docs/msrs.md: OS is CPL 0-2 as in Linux/KVM, where the APM's CPL 0
 * agrees for a ring-0 payload).  PerfMonV2 GLOBAL_CTL keeps its reset
 * value (all counters enabled) unless a check says otherwise.
 */
#include "pmu-amd.h"
#include "cycles.h"
#include "events.h"

#define CTL_INSNS       (AMD_EVT_INSNS | AMD_CTL_OS | AMD_CTL_EN)      /* 0x4200C0 */
#define CTL_BRANCHES    (AMD_EVT_BRANCHES | AMD_CTL_OS | AMD_CTL_EN)   /* 0x4200C2 */

static uint64_t rd(uint32_t msr)
{
    uint64_t v;

    rdmsr_safe(msr, &v);
    return v;
}

/* Counter i counts the block, enabled and disabled by its PERF_CTL. */
static uint64_t count_ctr(unsigned i, uint64_t ctl, int *vec)
{
    amd_quiesce();
    *vec = measure_block(amd_ctl(i), ctl, amd_ctl(i));
    return rd(amd_ctr(i));
}

static void amd_check_ctl_counting(void)
{
    unsigned last = amd.nr_gp - 1;
    uint64_t v;
    int vec;

    /* 1 WRMSR + 2 MOV + 2 XOR + 2 * 1000 DEC/JNZ = 2005 */
    v = count_ctr(0, CTL_INSNS, &vec);
    expect_count(v, BLOCK_INSNS, vec, "CTR0 instructions (0x4200C0)");
    /* disabled by the block's last WRMSR: a second block adds nothing */
    measure_block(amd_ctl(0), 0, amd_ctl(0));
    expect_count(rd(amd_ctr(0)), BLOCK_INSNS, 0,
                 "CTR0 disabled: unchanged after another block");
    v = count_ctr(last, CTL_INSNS, &vec);
    expect_count(v, BLOCK_INSNS, vec, "last counter: instructions");
    /* only the 1000 JNZ are branches */
    v = count_ctr(0, CTL_BRANCHES, &vec);
    expect_count(v, BLOCK_BRANCHES, vec, "CTR0 branches (0x4200C2)");
    v = count_ctr(last, CTL_BRANCHES, &vec);
    expect_count(v, BLOCK_BRANCHES, vec, "last counter: branches");
    /* USR only: the payload runs at CPL 0, nothing is counted */
    v = count_ctr(0, AMD_EVT_INSNS | AMD_CTL_USR | AMD_CTL_EN, &vec);
    expect_count(v, 0, vec, "CTR0 instructions, USR only, at CPL 0");
    if (amd.level >= AMD_LEVEL_PERFCTR_CORE) {
        /* the K7 alias of counter 0 counts the same way */
        amd_quiesce();
        vec = measure_block(MSR_K7_EVNTSEL0, CTL_INSNS, MSR_K7_EVNTSEL0);
        expect_count(rd(MSR_K7_PERFCTR0), BLOCK_INSNS, vec,
                     "K7 EVNTSEL0/PERFCTR0 instructions");
    }
}

/* PerfMonV2: the block's WRMSRs are the GLOBAL_CTL enable and disable. */
static void amd_check_global_enable(void)
{
    int vec;

    amd_quiesce();
    wrmsr_safe(MSR_AMD_GLOBAL_CTL, 0);
    wrmsr_safe(amd_ctl(0), CTL_INSNS);
    if (amd.nr_gp > 1) {
        wrmsr_safe(amd_ctl(1), CTL_INSNS);
    }
    vec = measure_block(MSR_AMD_GLOBAL_CTL, 1, MSR_AMD_GLOBAL_CTL);
    expect_count(rd(amd_ctr(0)), BLOCK_INSNS, vec,
                 "CTR0 instructions, enabled by GLOBAL_CTL");
    if (amd.nr_gp > 1) {
        /* EN set but GLOBAL_CTL bit 1 clear: counts nothing */
        expect_count(rd(amd_ctr(1)), 0, vec,
                     "CTR1 with GLOBAL_CTL bit 1 clear");
    }
}

void amd_check_counting(void)
{
    amd_check_ctl_counting();
    if (amd_v2()) {
        amd_check_global_enable();
    }
    amd_quiesce();
}

/*
 * CTR0 preset to -100 (48 bits) counts the block's instructions with extra
 * PERF_CTL bits; it wraps after 100 of the 2005 and keeps counting from 0.
 * lvt programs LVTPC (NULL: leave it masked).  Returns CTR0.
 */
static uint64_t ctr0_overflow(uint64_t extra, void (*lvt)(void), int *vec)
{
    amd_quiesce();
    if (lvt) {
        lvt();
    }
    wrmsr_safe(amd_ctr(0), -(uint64_t)PRESET_N & mask64(AMD_WIDTH));
    pmi_reset();
    *vec = measure_block(amd_ctl(0), CTL_INSNS | extra, amd_ctl(0));
    pmi_settle();
    return rd(amd_ctr(0));
}

/* With INT the handler's own instructions (CPL 0) are counted as well. */
static void expect_after_pmi(uint64_t v, const char *what)
{
    const uint64_t want = BLOCK_INSNS - PRESET_N;   /* 1905 */

    tap_check(v >= want && v < want + PMI_SLACK, "%s: counter %llu, in "
              "[%llu, %llu) (kept counting from 0)", what, v, want,
              want + PMI_SLACK);
}

/* PerfMonV2 records the wrap in GLOBAL_STATUS bit 0; older levels have
 * no status register, so there is nothing to check. */
static void expect_status0(const char *what)
{
    if (amd_v2()) {
        uint64_t s = rd(MSR_AMD_GLOBAL_STATUS);
        tap_check(s == 1, "%s: GLOBAL_STATUS = 0x%llx (want 0x1)", what, s);
    }
}

static void amd_check_pmi_mode(bool nmi)
{
    const char *what = nmi ? "INT, LVTPC NMI" : "INT, LVTPC vector 0xF0";
    int vec;
    uint64_t v = ctr0_overflow(AMD_CTL_INT, nmi ? lvtpc_nmi : lvtpc_fixed,
                               &vec);

    expect_after_pmi(v, what);
    expect_status0(what);
    expect_pmis(nmi ? 1 : 0, nmi ? 0 : 1, what);
    /* Intel masks LVTPC on delivery; AMD documents no such thing, so it
     * is reported, not required. */
    tap_diag("%s: LVTPC mask bit after delivery: %u", what, lvtpc_masked());
}

void amd_check_overflow(void)
{
    uint64_t v;
    int vec;

    /* no INT: exact, 2005 - 100 = 1905; no PMI */
    v = ctr0_overflow(0, lvtpc_fixed, &vec);
    expect_count(v, BLOCK_INSNS - PRESET_N, vec, "CTR0 preset -100, no INT");
    expect_status0("no INT");
    expect_pmis(0, 0, "no INT: no PMI");
    if (amd_v2()) {
        wrmsr_safe(MSR_AMD_GLOBAL_STATUS_CLR, 1);
        tap_check(rd(MSR_AMD_GLOBAL_STATUS) == 0, "GLOBAL_STATUS_CLR bit 0 "
                  "clears GLOBAL_STATUS bit 0");
    }
    amd_check_pmi_mode(false);
    amd_check_pmi_mode(true);
    /* LVTPC masked: the overflow is recorded, the PMI is not delivered */
    ctr0_overflow(AMD_CTL_INT, NULL, &vec);
    expect_status0("INT, LVTPC masked");
    expect_pmis(0, 0, "INT, LVTPC masked: no PMI");
    amd_quiesce();
}

/* Counter 0 runs (enabled before the block) when the block's first WRMSR
 * writes PERF_CTR0 <- val; the last WRMSR stops it through PERF_CTL0. */
static uint64_t ctr0_running_write(uint64_t ctl, uint64_t val, int *vec)
{
    amd_quiesce();
    wrmsr_safe(amd_ctl(0), ctl);                /* counting from here */
    *vec = measure_block(amd_ctr(0), val, amd_ctl(0));
    return rd(amd_ctr(0));
}

void amd_check_running_writes(void)
{
    uint64_t v;
    int vec;

    /* write 0: restarts; the WRMSR itself retires after it: 2005 */
    v = ctr0_running_write(CTL_INSNS, 0, &vec);
    expect_count(v, BLOCK_INSNS, vec, "running CTR0 <- 0: instructions");
    /* -1 (48 bits): the WRMSR is the next event and wraps it to 0 */
    v = ctr0_running_write(CTL_INSNS, mask64(AMD_WIDTH), &vec);
    expect_count(v, BLOCK_INSNS - 1, vec, "running CTR0 <- -1: instructions");
    expect_status0("running CTR0 <- -1");
    /* WRMSR is no branch: the first JNZ wraps it; 999 follow */
    v = ctr0_running_write(CTL_BRANCHES, mask64(AMD_WIDTH), &vec);
    expect_count(v, BLOCK_BRANCHES - 1, vec, "running CTR0 <- -1: branches");
    expect_status0("running CTR0 <- -1 (branches)");
    amd_quiesce();
}

/* Zen's encodings of the catalogue (docs/events.md). */
static const CatalogueCase amd_catalogue[] = {
    { "ExRetInstr", 0x00c0, MIX_INSNS, FAR_INSNS, NONE,
      MIX_SITE_AFTER_CALL, 991 },
    { "ExRetBrn", 0x00c2, MIX_BRANCHES, FAR_BRANCHES, NONE,
      MIX_SITE_CALLEE, 980 },
    { "ExRetCond", 0x00d1, MIX_COND, FAR_COND, NONE, MIX_SITE_DEC, 950 },
    /* Far transfers are taken branches too. */
    { "ExRetBrnTkn", 0x00c4, MIX_TAKEN, FAR_NEAR_TAKEN + FAR_FAR, NONE,
      MIX_SITE_AFTER_CALL, 978 },
    { "ExRetNearRet", 0x00c8, MIX_RETS, 0, NONE, MIX_SITE_AFTER_CALL, 900 },
    { "ExRetBrnFar", 0x00c6, 0, FAR_FAR, NONE, MIX_SITE_NONE, 0 },
    { "LsDispatch.LdDispatch+LdStDispatch", 0x0529, MIX_LOADS, NONE, NONE,
      MIX_SITE_AFTER_CALL, 967 },
    { "LsDispatch.StoreDispatch+LdStDispatch", 0x0629, MIX_STORES, NONE,
      NONE, MIX_SITE_AFTER_CALL, 967 },
    { "LsIntTaken", 0x002c, 0, 0, IRQ_N, MIX_SITE_NONE, 0 },
};

/*
 * CPU clocks not halted (PPR: PMCx076) on two counters at the CPLs of
 * @cpl (CYC_OS, CYC_USR), started by one GLOBAL_CTL write on PerfMonV2;
 * before it, one counter started by its own PERF_CTL.
 */
static void amd_cycles_counters(CyclesCounters *cc, unsigned cpl)
{
    uint64_t sel = AMD_EVT_CYCLES | AMD_CTL_EN |
                   (cpl & CYC_OS ? AMD_CTL_OS : 0) |
                   (cpl & CYC_USR ? AMD_CTL_USR : 0);

    *cc = (CyclesCounters){ .global_ctrl = amd_ctl(0), .enable = sel,
                            .sel0_msr = amd_ctl(0), .sel0 = sel,
                            .preset_mask = mask64(AMD_WIDTH) };
    amd_quiesce();
    if (amd_v2()) {
        cc->global_ctrl = MSR_AMD_GLOBAL_CTL;
        cc->enable = 0;
        wrmsr_safe(MSR_AMD_GLOBAL_CTL, 0);
        for (unsigned i = 0; i < 2 && i < amd.nr_gp; i++) {
            wrmsr_safe(amd_ctl(i), sel);
            cycles_add(cc, i ? "CTR1 cycles (0x76)" : "CTR0 cycles (0x76)",
                       amd_ctr(i), i, i);
        }
    } else {
        cc->n = 1;
        cc->name[0] = "CTR0 cycles (0x76)";
        cc->ctr[0] = amd_ctr(0);
        cc->pmc[0] = 0;
    }
}

static void amd_check_cycles(void)
{
    CyclesCounters cc;

    amd_cycles_counters(&cc, CYC_OS);
    check_cycles(&cc);
    amd_cycles_counters(&cc, CYC_USR);
    check_cycles_cpl(&cc, CYC_USR);
    amd_cycles_counters(&cc, CYC_OS);
    check_cycles_cpl(&cc, CYC_OS);
    amd_quiesce();
}

void payload_main(void)
{
    tap_diag("pmu-amd: AMD PMU (docs/msrs.md); block = %u instructions, "
             "%u branches", BLOCK_INSNS, BLOCK_BRANCHES);
    if (!amd_check_cpuid()) {
        return;
    }
    if (cmdline_u64("spin", 0)) {
        CyclesCounters cc;

        amd_cycles_counters(&cc, CYC_OS);
        cycles_spin(&cc, cmdline_u64("spin", 0));
        return;
    }
    amd_check_reset_values();       /* first: before anything is written */
    amd_check_msr_matrix();
    amd_check_rdpmc();
    amd_check_counting();
    amd_check_overflow();
    amd_check_running_writes();
    check_catalogue(amd_catalogue, ARRAY_SIZE(amd_catalogue), amd_ctl(0),
                    amd_ctr(0), -(uint64_t)PMI_K & mask64(AMD_WIDTH),
                    amd_quiesce);
    amd_check_cycles();
}
