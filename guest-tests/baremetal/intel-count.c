/*
 * Intel: exact instruction and branch counts, overflow and PMI delivery,
 * and writes to running counters, plus the payload entry point.
 *
 * Every count comes from measure_block() (measure.h): 2N + 5 = 2005
 * instructions and N = 1000 branches, N = LOOP_N.  The expectations hold
 * with and without -icount: the counter counts retired instructions, not
 * time.  All counters count at CPL 0 only (OS bit), where the payload runs.
 */
#include "pmu-intel.h"
#include "events.h"
#include "cycles.h"

#define SEL_INSNS       (EVT_INSNS | EVTSEL_OS | EVTSEL_EN)      /* 0x4200C0 */
#define SEL_BRANCHES    (EVT_BRANCHES | EVTSEL_OS | EVTSEL_EN)   /* 0x4200C4 */

static uint64_t rd(uint32_t msr)
{
    uint64_t v;

    rdmsr_safe(msr, &v);
    return v;
}

static bool intel_has_branches(void)
{
    return !(intel.ebx & CPUID_A_EBX_BRANCHES);
}

/* GP counter i counts the block, enabled and disabled by PERFEVTSELi
 * itself (GLOBAL_CTRL keeps its reset value, all GP counters enabled). */
static uint64_t count_gp(unsigned i, uint64_t sel, int *vec)
{
    intel_quiesce();
    *vec = measure_block(MSR_IA32_PERFEVTSEL0 + i, sel,
                         MSR_IA32_PERFEVTSEL0 + i);
    return rd(MSR_IA32_PMC0 + i);
}

static void intel_check_gp_counting(void)
{
    unsigned last = intel.nr_gp - 1;
    uint64_t v;
    int vec;

    /* 1 WRMSR + 2 MOV + 2 XOR + 2 * 1000 DEC/JNZ = 2005 */
    v = count_gp(0, SEL_INSNS, &vec);
    expect_count(v, BLOCK_INSNS, vec, "GP0 instructions (0x4200C0)");
    /* disabled by the block's last WRMSR: a second block adds nothing */
    measure_block(MSR_IA32_PERFEVTSEL0, 0, MSR_IA32_PERFEVTSEL0);
    expect_count(rd(MSR_IA32_PMC0), BLOCK_INSNS, 0,
                 "GP0 disabled: unchanged after another block");
    v = count_gp(last, SEL_INSNS, &vec);
    expect_count(v, BLOCK_INSNS, vec, "last GP counter: instructions");
    /* only the 1000 JNZ are branches */
    if (intel_has_branches()) {
        v = count_gp(0, SEL_BRANCHES, &vec);
        expect_count(v, BLOCK_BRANCHES, vec, "GP0 branches (0x4200C4)");
        v = count_gp(last, SEL_BRANCHES, &vec);
        expect_count(v, BLOCK_BRANCHES, vec, "last GP counter: branches");
    } else {
        tap_skip("CPUID.0AH:EBX[5]: no branch event", "GP branches");
    }
    /* USR only: the payload runs at CPL 0, nothing is counted */
    v = count_gp(0, EVT_INSNS | EVTSEL_USR | EVTSEL_EN, &vec);
    expect_count(v, 0, vec, "GP0 instructions, USR only, at CPL 0");
}

/* v2+: the block's WRMSRs are the GLOBAL_CTRL enable and disable. */
static void intel_check_global_enable(void)
{
    uint64_t v;
    int vec;

    intel_quiesce();
    wrmsr_safe(MSR_GLOBAL_CTRL, 0);
    wrmsr_safe(MSR_IA32_PERFEVTSEL0, SEL_INSNS);
    if (intel.nr_gp > 1) {
        wrmsr_safe(MSR_IA32_PERFEVTSEL0 + 1, SEL_INSNS);
    }
    vec = measure_block(MSR_GLOBAL_CTRL, 1, MSR_GLOBAL_CTRL);
    expect_count(rd(MSR_IA32_PMC0), BLOCK_INSNS, vec,
                 "GP0 instructions, enabled by GLOBAL_CTRL");
    if (intel.nr_gp > 1) {
        /* EN set but GLOBAL_CTRL bit 1 clear: counts nothing */
        expect_count(rd(MSR_IA32_PMC0 + 1), 0, vec,
                     "GP1 with GLOBAL_CTRL bit 1 clear");
    }
    if (!intel.nr_fixed) {
        return;
    }
    /* fixed counter 0 = instructions retired, OS only (nibble 0x1) */
    intel_quiesce();
    wrmsr_safe(MSR_GLOBAL_CTRL, 0);
    wrmsr_safe(MSR_FIXED_CTR_CTRL, FIXED_OS);
    vec = measure_block(MSR_GLOBAL_CTRL, GLOBAL_FIXED(0), MSR_GLOBAL_CTRL);
    v = rd(MSR_FIXED_CTR0);
    expect_count(v, BLOCK_INSNS, vec, "FIXED_CTR0, enabled by GLOBAL_CTRL "
                 "bit 32");
    intel_quiesce();
    wrmsr_safe(MSR_GLOBAL_CTRL, GLOBAL_FIXED(0));
    vec = measure_block(MSR_FIXED_CTR_CTRL, FIXED_OS, MSR_FIXED_CTR_CTRL);
    expect_count(rd(MSR_FIXED_CTR0), BLOCK_INSNS, vec,
                 "FIXED_CTR0, enabled by FIXED_CTR_CTRL");
}

void intel_check_counting(void)
{
    intel_check_gp_counting();
    if (intel.version >= 2) {
        intel_check_global_enable();
    }
    intel_quiesce();
}

/*
 * PMC0 preset to -100 (legacy write of 0xFFFFFF9C, sign-extended) counts
 * the block's instructions with extra PERFEVTSEL bits; it wraps after 100
 * of the 2005, and then keeps counting from 0.  lvt programs LVTPC (NULL:
 * leave it masked).  Returns PMC0 after the block.
 */
static uint64_t gp0_overflow(uint64_t extra, void (*lvt)(void), int *vec)
{
    intel_quiesce();
    if (lvt) {
        lvt();
    }
    wrmsr_safe(MSR_IA32_PMC0, (uint32_t)-PRESET_N);
    pmi_reset();
    *vec = measure_block(MSR_IA32_PERFEVTSEL0, SEL_INSNS | extra,
                         MSR_IA32_PERFEVTSEL0);
    pmi_settle();
    return rd(MSR_IA32_PMC0);
}

/* With INT the handler's own instructions (CPL 0) are counted as well. */
static void expect_after_pmi(uint64_t v, const char *what)
{
    const uint64_t want = BLOCK_INSNS - PRESET_N;   /* 1905 */

    tap_check(v >= want && v < want + PMI_SLACK, "%s: counter %llu, in "
              "[%llu, %llu) (kept counting from 0)", what, v, want,
              want + PMI_SLACK);
}

static void intel_check_gp_overflow(void)
{
    uint64_t v;
    int vec;

    /* no INT: exact, 2005 - 100 = 1905; status bit 0; no PMI */
    v = gp0_overflow(0, lvtpc_fixed, &vec);
    expect_count(v, BLOCK_INSNS - PRESET_N, vec, "GP0 preset -100, no INT");
    tap_check(rd(MSR_GLOBAL_STATUS) == 1, "no INT: GLOBAL_STATUS = 0x1");
    expect_pmis(0, 0, "no INT: no PMI");
    wrmsr_safe(MSR_GLOBAL_OVF_CTRL, 1);
    tap_check(rd(MSR_GLOBAL_STATUS) == 0, "GLOBAL_OVF_CTRL bit 0 clears "
              "GLOBAL_STATUS bit 0");

    v = gp0_overflow(EVTSEL_INT, lvtpc_fixed, &vec);
    expect_after_pmi(v, "INT, LVTPC vector 0xF0");
    tap_check(rd(MSR_GLOBAL_STATUS) == 1, "INT, vector: GLOBAL_STATUS = 0x1");
    expect_pmis(0, 1, "INT, LVTPC vector 0xF0: one PMI");
    tap_check(lvtpc_masked(), "INT, vector: LVTPC mask bit set on delivery");

    v = gp0_overflow(EVTSEL_INT, lvtpc_nmi, &vec);
    expect_after_pmi(v, "INT, LVTPC NMI");
    tap_check(rd(MSR_GLOBAL_STATUS) == 1, "INT, NMI: GLOBAL_STATUS = 0x1");
    expect_pmis(1, 0, "INT, LVTPC NMI: one NMI");
    tap_check(lvtpc_masked(), "INT, NMI: LVTPC mask bit set on delivery");

    /* LVTPC masked: the overflow is recorded, the PMI is not delivered */
    gp0_overflow(EVTSEL_INT, NULL, &vec);
    tap_check(rd(MSR_GLOBAL_STATUS) == 1, "INT, LVTPC masked: "
              "GLOBAL_STATUS = 0x1");
    expect_pmis(0, 0, "INT, LVTPC masked: no PMI");
}

/* Fixed counter 0 with its PMI bit: status bit 32, one PMI. */
static void intel_check_fixed_overflow(void)
{
    int vec;

    intel_quiesce();
    lvtpc_fixed();
    wrmsr_safe(MSR_GLOBAL_CTRL, 0);
    wrmsr_safe(MSR_FIXED_CTR0, -(uint64_t)PRESET_N &
                               mask64(intel.fixed_width));
    wrmsr_safe(MSR_FIXED_CTR_CTRL, FIXED_OS | FIXED_PMI);
    pmi_reset();
    vec = measure_block(MSR_GLOBAL_CTRL, GLOBAL_FIXED(0), MSR_GLOBAL_CTRL);
    pmi_settle();
    expect_after_pmi(rd(MSR_FIXED_CTR0), "FIXED_CTR0 preset -100, PMI bit");
    tap_check(rd(MSR_GLOBAL_STATUS) == GLOBAL_FIXED(0) && !vec,
              "FIXED_CTR0 overflow: GLOBAL_STATUS = 0x%llx (bit 32)",
              GLOBAL_FIXED(0));
    expect_pmis(0, 1, "FIXED_CTR0 overflow: one PMI");
}

/* DEBUGCTL.FREEZE_PERFMON_ON_PMI: v2/v3 clear GLOBAL_CTRL; v4+ set
 * GLOBAL_STATUS.CTR_Frz and keep GLOBAL_CTRL. */
static void intel_check_freeze(void)
{
    int vec;

    intel_quiesce();
    lvtpc_fixed();
    wrmsr_safe(MSR_DEBUGCTL, DEBUGCTL_FREEZE_ON_PMI);
    wrmsr_safe(MSR_IA32_PMC0, (uint32_t)-PRESET_N);
    pmi_reset();
    vec = measure_block(MSR_IA32_PERFEVTSEL0, SEL_INSNS | EVTSEL_INT,
                        MSR_IA32_PERFEVTSEL0);
    pmi_settle();
    uint64_t ctrl = rd(MSR_GLOBAL_CTRL), status = rd(MSR_GLOBAL_STATUS);
    if (intel.version <= 3) {
        tap_check(ctrl == 0 && !vec, "freeze on PMI (v%u): GLOBAL_CTRL "
                  "cleared (0x%llx)", intel.version, ctrl);
    } else {
        tap_check(ctrl == mask64(intel.nr_gp) && (status & GLOBAL_CTR_FRZ),
                  "freeze on PMI (v%u): CTR_Frz set (0x%llx), GLOBAL_CTRL "
                  "kept (0x%llx)", intel.version, status, ctrl);
    }
    intel_quiesce();
}

void intel_check_overflow(void)
{
    intel_check_gp_overflow();
    if (intel.nr_fixed) {
        intel_check_fixed_overflow();
    }
    intel_check_freeze();
    intel_quiesce();
}

/*
 * Counter 0 runs (enabled before the block) when the block's first WRMSR
 * writes msr <- val; the last WRMSR stops it through PERFEVTSEL0.
 */
static uint64_t gp0_running_write(uint64_t sel, uint32_t msr, uint64_t val,
                                  int *vec)
{
    intel_quiesce();
    wrmsr_safe(MSR_IA32_PERFEVTSEL0, sel);      /* counting from here */
    *vec = measure_block(msr, val, MSR_IA32_PERFEVTSEL0);
    return rd(MSR_IA32_PMC0);
}

void intel_check_running_writes(void)
{
    uint64_t v;
    int vec;

    /* write 0: restarts; the WRMSR itself retires after it: 2005 */
    v = gp0_running_write(SEL_INSNS, MSR_IA32_PMC0, 0, &vec);
    expect_count(v, BLOCK_INSNS, vec, "running GP0 <- 0: instructions");
    /* legacy -1 (0xFFFFFFFF -> 0xFFFFFFFFFFFF): the WRMSR is the next
     * event and wraps it to 0; the other 2004 follow */
    v = gp0_running_write(SEL_INSNS, MSR_IA32_PMC0, 0xFFFFFFFFull, &vec);
    expect_count(v, BLOCK_INSNS - 1, vec, "running GP0 <- -1: instructions");
    tap_check(rd(MSR_GLOBAL_STATUS) == 1, "running GP0 <- -1: overflow "
              "in GLOBAL_STATUS bit 0");
    if (intel_has_branches()) {
        /* WRMSR is no branch: the first JNZ wraps it; 999 follow */
        v = gp0_running_write(SEL_BRANCHES, MSR_IA32_PMC0, 0xFFFFFFFFull,
                              &vec);
        expect_count(v, BLOCK_BRANCHES - 1, vec,
                     "running GP0 <- -1: branches");
        tap_check(rd(MSR_GLOBAL_STATUS) == 1, "running GP0 <- -1 "
                  "(branches): GLOBAL_STATUS bit 0");
    }
    if (intel.fw_write) {
        /* A_PMC0 <- -2: WRMSR makes it -1, the MOV wraps it; 2003 follow */
        v = gp0_running_write(SEL_INSNS, MSR_IA32_A_PMC0,
                              mask64(intel.gp_width) - 1, &vec);
        expect_count(v, BLOCK_INSNS - 2, vec,
                     "running GP0, A_PMC0 <- -2: instructions");
    }
    intel_quiesce();
}

/*
 * Core cycles on GP0 and fixed counter 1, reference cycles on GP1, GP2
 * (0x0300, the pseudo-encoding Linux perf and KVM use) and fixed counter
 * 2 (SDM Table 20-1 and 21.2.2), as CPUID.0AH offers them, at the CPLs
 * of @cpl (CYC_OS, CYC_USR), enabled together by GLOBAL_CTRL.
 */
static void intel_cycles_counters(CyclesCounters *cc, unsigned cpl)
{
    uint64_t sel = EVTSEL_EN | (cpl & CYC_OS ? EVTSEL_OS : 0) |
                   (cpl & CYC_USR ? EVTSEL_USR : 0);
    uint64_t nibble = (cpl & CYC_OS ? FIXED_OS : 0) |
                      (cpl & CYC_USR ? FIXED_USR : 0);
    bool ref = !(intel.ebx & CPUID_A_EBX_REF_CYCLES);
    uint64_t fixed = 0;

    *cc = (CyclesCounters){ .global_ctrl = MSR_GLOBAL_CTRL,
                            .sel0_msr = MSR_IA32_PERFEVTSEL0,
                            .sel0 = EVT_CYCLES | sel,
                            .preset_mask = 0xFFFFFFFFull };
    intel_quiesce();
    wrmsr_safe(MSR_GLOBAL_CTRL, 0);
    if (!(intel.ebx & CPUID_A_EBX_CYCLES)) {
        wrmsr_safe(MSR_IA32_PERFEVTSEL0, EVT_CYCLES | sel);
        cycles_add(cc, "GP0 cycles (0x3c)", MSR_IA32_PMC0, 0, 0);
    }
    if (intel.nr_gp > 1 && ref) {
        wrmsr_safe(MSR_IA32_PERFEVTSEL0 + 1, EVT_REF_CYCLES | sel);
        cycles_add(cc, "GP1 ref cycles (0x13c)", MSR_IA32_PMC0 + 1, 1, 1);
    }
    if (intel.nr_gp > 2 && ref) {
        wrmsr_safe(MSR_IA32_PERFEVTSEL0 + 2, EVT_REF_CYCLES_PSEUDO | sel);
        cycles_add(cc, "GP2 ref cycles (0x300)", MSR_IA32_PMC0 + 2, 2, 2);
    }
    for (unsigned i = 1; i < 3 && i < intel.nr_fixed; i++) {
        fixed |= nibble << (4 * i);
        cycles_add(cc, i == 1 ? "fixed 1 (cycles)" : "fixed 2 (ref cycles)",
                   MSR_FIXED_CTR0 + i, RDPMC_FIXED | i, 32 + i);
    }
    wrmsr_safe(MSR_FIXED_CTR_CTRL, fixed);
}

static void intel_check_cycles(void)
{
    CyclesCounters cc;

    intel_cycles_counters(&cc, CYC_OS);
    check_cycles(&cc);
    intel_cycles_counters(&cc, CYC_USR);
    check_cycles_cpl(&cc, CYC_USR);
    intel_cycles_counters(&cc, CYC_OS);
    check_cycles_cpl(&cc, CYC_OS);
    intel_quiesce();
}

/* Skylake's encodings of the catalogue (docs/events.md). */
static const CatalogueCase intel_catalogue[] = {
    { "INST_RETIRED.ANY_P", 0x00c0, MIX_INSNS, FAR_INSNS, NONE,
      MIX_SITE_AFTER_CALL, 991 },
    { "BR_INST_RETIRED.ALL_BRANCHES", 0x00c4, MIX_BRANCHES, FAR_BRANCHES,
      NONE, MIX_SITE_CALLEE, 980 },
    { "BR_INST_RETIRED.CONDITIONAL", 0x01c4, MIX_COND, FAR_COND, NONE,
      MIX_SITE_DEC, 950 },
    { "BR_INST_RETIRED.NOT_TAKEN", 0x10c4, MIX_NTAKEN, 1, NONE,
      MIX_SITE_NOP, 799 },
    { "BR_INST_RETIRED.NEAR_TAKEN", 0x20c4, MIX_TAKEN, FAR_NEAR_TAKEN, NONE,
      MIX_SITE_AFTER_CALL, 978 },
    { "BR_INST_RETIRED.NEAR_CALL", 0x02c4, MIX_CALLS, 0, NONE,
      MIX_SITE_CALLEE, 900 },
    { "BR_INST_RETIRED.NEAR_RETURN", 0x08c4, MIX_RETS, 0, NONE,
      MIX_SITE_AFTER_CALL, 900 },
    { "BR_INST_RETIRED.FAR_BRANCH", 0x40c4, 0, FAR_FAR, NONE, MIX_SITE_NONE, 0 },
    { "MEM_INST_RETIRED.ALL_LOADS", 0x81d0, MIX_LOADS, NONE, NONE,
      MIX_SITE_AFTER_CALL, 967 },
    { "MEM_INST_RETIRED.ALL_STORES", 0x82d0, MIX_STORES, NONE, NONE,
      MIX_SITE_AFTER_CALL, 967 },
    { "HW_INTERRUPTS.RECEIVED", 0x01cb, 0, 0, IRQ_N, MIX_SITE_NONE, 0 },
};

void payload_main(void)
{
    tap_diag("pmu-intel: Intel architectural PMU (docs/msrs.md); block = "
             "%u instructions, %u branches", BLOCK_INSNS, BLOCK_BRANCHES);
    if (!intel_check_cpuid()) {
        return;
    }
    if (cmdline_u64("spin", 0)) {
        CyclesCounters cc;

        intel_cycles_counters(&cc, CYC_OS);
        cycles_spin(&cc, cmdline_u64("spin", 0));
        return;
    }
    intel_check_reset_values();     /* first: before anything is written */
    intel_check_msr_matrix();
    intel_check_widths();
    intel_check_rdpmc();
    if (!intel.nr_gp || (intel.ebx & CPUID_A_EBX_INSNS)) {
        tap_skip("no GP counter or no instruction event", "counting checks");
        return;
    }
    intel_check_counting();
    if (intel.version < 2) {
        tap_skip("version 1 has no GLOBAL_STATUS", "overflow checks");
        return;
    }
    intel_check_overflow();
    intel_check_running_writes();
    if (intel.nr_gp) {
        check_catalogue(intel_catalogue, ARRAY_SIZE(intel_catalogue),
                        MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0,
                        (uint32_t)-PMI_K, intel_quiesce);
    }
    intel_check_cycles();
}
