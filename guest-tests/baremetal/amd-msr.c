/*
 * AMD: CPUID (0x80000001 ECX[23], 0x80000022, leaf 0xA), reset values,
 * the MSR matrix (existence #GP, reserved bits dropped silently, K7
 * aliases, the PerfMonV2 global MSRs) and RDPMC.
 *
 * Expected CPUID values are vpmu's default AMD configuration (PerfMonV2
 * with 6 counters); the multiboot command line may override them
 * (level=1|2|3 as VpmuAmdLevel, gp=N).  MSR expectations derive from what
 * CPUID reports.
 */
#include "pmu-amd.h"

struct amd_pmu amd;

/* "AuthenticAMD" in EBX, EDX, ECX of CPUID.0 */
#define VENDOR_EBX  0x68747541u
#define VENDOR_EDX  0x69746E65u
#define VENDOR_ECX  0x444D4163u

#define PERFCTR_CORE_BIT    (1u << 23)  /* CPUID 0x80000001:ECX */

/* 0x80000022 (PerfMonV2 with nr_gp counters, else all 0), leaf 0xA (0). */
static void amd_check_cpuid_pmu_leaves(unsigned max_basic, unsigned max_ext,
                                       unsigned want_level, unsigned want_gp)
{
    uint32_t r[4] = { 0 };

    if (want_level >= AMD_LEVEL_PERFMON_V2) {
        tap_check(max_ext >= 0x80000022u, "CPUID.80000000H:EAX max 0x%x >= "
                  "0x80000022", max_ext);
    }
    if (max_ext >= 0x80000022u) {
        cpuid(0x80000022u, 0, r);
    }
    tap_diag("CPUID.80000022H: EAX 0x%08x EBX 0x%08x ECX 0x%08x EDX 0x%08x",
             r[0], r[1], r[2], r[3]);
    if (want_level >= AMD_LEVEL_PERFMON_V2) {
        tap_check(r[0] == 1, "CPUID.80000022H:EAX = 0x%x (want 1: "
                  "PerfMonV2)", r[0]);
        tap_check((r[1] & 0xF) == want_gp, "CPUID.80000022H:EBX[3:0] "
                  "counters = %u (want %u)", r[1] & 0xF, want_gp);
        tap_check(r[2] == 0 && r[3] == 0, "CPUID.80000022H:ECX = EDX = 0");
    } else {
        tap_check(!(r[0] | r[1] | r[2] | r[3]), "CPUID.80000022H all 0 "
                  "without PerfMonV2");
    }
    memset(r, 0, sizeof(r));
    if (max_basic >= 0xA) {
        cpuid(0xA, 0, r);
    }
    tap_check(!(r[0] | r[1] | r[2] | r[3]), "CPUID.0AH all 0 on AMD "
              "(0x%x 0x%x 0x%x 0x%x)", r[0], r[1], r[2], r[3]);
}

/* The level and counter count CPUID advertises. */
static void amd_decode(unsigned max_ext, uint32_t ext1_ecx)
{
    uint32_t r[4] = { 0 };

    if (max_ext >= 0x80000022u) {
        cpuid(0x80000022u, 0, r);
    }
    if (r[0] & 1) {
        amd.level = AMD_LEVEL_PERFMON_V2;
        amd.nr_gp = r[1] & 0xF;
    } else if (ext1_ecx & PERFCTR_CORE_BIT) {
        amd.level = AMD_LEVEL_PERFCTR_CORE;
        amd.nr_gp = AMD_MAX_GP;
    } else {
        amd.level = AMD_LEVEL_K7;
        amd.nr_gp = AMD_K7_COUNTERS;
    }
}

/* Returns whether the remaining checks can run. */
bool amd_check_cpuid(void)
{
    unsigned want_level = cmdline_u64("level", AMD_LEVEL_PERFMON_V2);
    unsigned want_gp = cmdline_u64("gp", AMD_MAX_GP);
    uint32_t r[4], ext1[4] = { 0 };

    cpuid(0, 0, r);
    unsigned max_basic = r[0];
    tap_check(r[1] == VENDOR_EBX && r[3] == VENDOR_EDX && r[2] == VENDOR_ECX,
              "CPUID.0: vendor AuthenticAMD");
    cpuid(0x80000000u, 0, r);
    unsigned max_ext = r[0];
    if (max_ext >= 0x80000001u) {
        cpuid(0x80000001u, 0, ext1);
    }
    bool core = ext1[2] & PERFCTR_CORE_BIT;
    tap_check(core == (want_level >= AMD_LEVEL_PERFCTR_CORE),
              "CPUID.80000001H:ECX[23] PerfCtrExtCore = %u (want %u)", core,
              want_level >= AMD_LEVEL_PERFCTR_CORE);
    amd_check_cpuid_pmu_leaves(max_basic, max_ext, want_level, want_gp);
    amd_decode(max_ext, ext1[2]);

    /* A K7-level PMU is invisible in CPUID: trust it only when asked to. */
    bool usable = amd.level > AMD_LEVEL_K7 || want_level == AMD_LEVEL_K7;
    usable = usable && amd.nr_gp >= 1 && amd.nr_gp <= AMD_MAX_GP;
    tap_check(usable, "CPUID describes a usable PMU (level %u, %u counters)",
              amd.level, amd.nr_gp);
    if (!usable && cmdline_u64("force", 0)) {
        /* force=1: check against the expected PMU, as intel-msr.c does */
        amd.level = want_level;
        amd.nr_gp = want_gp;
        tap_diag("force=1: checking against the expected PMU, not CPUID");
        return true;
    }
    if (!usable) {
        tap_diag("no usable PMU in CPUID: skipping the MSR, RDPMC and "
                 "counting checks (stock QEMU under TCG has no vPMU; "
                 "force=1 runs them anyway)");
    }
    return usable;
}

/* Back to the reset state between checks; faults are reported elsewhere. */
void amd_quiesce(void)
{
    if (amd_v2()) {
        wrmsr_safe(MSR_AMD_GLOBAL_CTL, 0);
    }
    for (unsigned i = 0; i < amd.nr_gp; i++) {
        wrmsr_safe(amd_ctl(i), 0);
        wrmsr_safe(amd_ctr(i), 0);
    }
    if (amd_v2()) {
        wrmsr_safe(MSR_AMD_GLOBAL_STATUS_CLR, mask64(amd.nr_gp));
        wrmsr_safe(MSR_AMD_GLOBAL_CTL, mask64(amd.nr_gp));
    }
    apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
    pmi_reset();
}

/* Must run first: counters and selectors 0, GLOBAL_CTL = enable bits. */
void amd_check_reset_values(void)
{
    bool ok = true;

    for (unsigned i = 0; i < amd.nr_gp; i++) {
        ok &= probe_rd_val(amd_ctl(i), 0) && probe_rd_val(amd_ctr(i), 0);
    }
    tap_check(ok, "reset: PERF_CTLi, PERF_CTRi read 0 (i < %u)", amd.nr_gp);
    if (!amd_v2()) {
        return;
    }
    /* 6 counters: 0x3F */
    tap_check(probe_rd_val(MSR_AMD_GLOBAL_CTL, mask64(amd.nr_gp)),
              "reset: GLOBAL_CTL = 0x%llx", mask64(amd.nr_gp));
    ok = probe_rd_val(MSR_AMD_GLOBAL_STATUS, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS_CLR, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS_SET, 0);
    tap_check(ok, "reset: GLOBAL_STATUS, STATUS_CLR, STATUS_SET read 0");
}

/* Which MSRs exist: F15H pairs up to nr_gp (PERFCTR_CORE+), K7 MSRs for
 * counters 0-3 that exist, global MSRs with PerfMonV2. */
static void amd_check_existence(void)
{
    bool core = amd.level >= AMD_LEVEL_PERFCTR_CORE;
    bool ok = true;

    for (unsigned i = 0; i < AMD_MAX_GP; i++) {
        ok &= probe_exists(MSR_F15H_PERF_CTL0 + 2 * i, core && i < amd.nr_gp);
        ok &= probe_exists(MSR_F15H_PERF_CTR0 + 2 * i, core && i < amd.nr_gp);
    }
    tap_check(ok, "F15H PERF_CTL/CTRi: exist for i < %u%s", amd.nr_gp,
              core ? ", #GP up to i = 5" : ": #GP without PERFCTR_CORE");
    ok = true;
    for (unsigned i = 0; i < AMD_K7_COUNTERS; i++) {
        ok &= probe_exists(MSR_K7_EVNTSEL0 + i, i < amd.nr_gp);
        ok &= probe_exists(MSR_K7_PERFCTR0 + i, i < amd.nr_gp);
    }
    tap_check(ok, "K7 EVNTSELi/PERFCTRi: exist for i < %u (max 4)",
              amd.nr_gp);
    ok = true;
    for (uint32_t msr = MSR_AMD_GLOBAL_STATUS;
         msr <= MSR_AMD_GLOBAL_STATUS_SET; msr++) {
        ok &= probe_exists(msr, amd_v2());
    }
    tap_check(ok, "GLOBAL_STATUS/CTL/STATUS_CLR/STATUS_SET: %s",
              amd_v2() ? "exist (PerfMonV2)" : "#GP without PerfMonV2");
}

/* The K7 MSRs alias counters 0-3 of the F15H range. */
static void amd_check_k7_alias(void)
{
    unsigned hi = amd.nr_gp < AMD_K7_COUNTERS ? amd.nr_gp - 1 : 3;
    bool ok;

    ok = probe_wr(MSR_F15H_PERF_CTR0 + 2 * hi, 0x123456789ull, 0) &&
         probe_rd_val(MSR_K7_PERFCTR0 + hi, 0x123456789ull);
    ok &= probe_wr(MSR_K7_EVNTSEL0, 0x30076ull, 0) &&
          probe_rd_val(MSR_F15H_PERF_CTL0, 0x30076ull);
    ok &= probe_wr(MSR_K7_EVNTSEL0, 0, 0) &&
          probe_wr(MSR_K7_PERFCTR0 + hi, 0, 0);
    tap_check(ok, "K7 PERFCTR%u and EVNTSEL0 alias the F15H counters", hi);
}

/*
 * Reserved bits are dropped, never #GP: PERF_CTL keeps 0xFFFD7FFFF, and
 * HostOnly/GuestOnly [41:40] too on a CPU with SVM (CPUID 8000_0001h
 * ECX[2], APM Vol. 2 13.2.1: they are the hypervisor's, dropped without it).
 */
static void amd_check_dropped_bits(void)
{
    const uint64_t hg = AMD_CTL_HOSTONLY | AMD_CTL_GUESTONLY;
    uint32_t r[4];
    bool svm, ok = true;
    uint64_t all = ~AMD_CTL_EN, want;

    cpuid(0x80000001, 0, r);
    svm = r[2] & (1u << 2);
    /* everything but EN (no counting): kept & ~EN = 0xFFF97FFFF (+ HG) */
    want = (AMD_CTL_KEPT | (svm ? hg : 0)) & ~AMD_CTL_EN;
    for (unsigned i = 0; i < amd.nr_gp; i++) {
        ok &= probe_wr(amd_ctl(i), all, 0) && probe_rd_val(amd_ctl(i), want);
        ok &= probe_wr(amd_ctl(i), hg | 0x76, 0) &&
              probe_rd_val(amd_ctl(i), (svm ? hg : 0) | 0x76);
        ok &= probe_wr(amd_ctl(i), 0, 0);
    }
    tap_check(ok, "PERF_CTLi: reserved bits dropped, no #GP (~EN -> 0x%llx; "
              "Host/GuestOnly %s)", want, svm ? "kept: SVM" : "dropped");
    ok = true;
    for (unsigned i = 0; i < amd.nr_gp; i++) {
        ok &= probe_wr(amd_ctr(i), ~0ull, 0) &&
              probe_rd_val(amd_ctr(i), mask64(AMD_WIDTH));
        ok &= probe_wr(amd_ctr(i), bit64(AMD_WIDTH) | 5, 0) &&
              probe_rd_val(amd_ctr(i), 5);
        ok &= probe_wr(amd_ctr(i), 0, 0);
    }
    tap_check(ok, "PERF_CTRi: writes masked to 48 bits, no #GP");
}

/* PerfMonV2 global MSRs: status read-only, set/clear write-1, no #GP. */
static void amd_check_global_msrs(void)
{
    uint64_t m = mask64(amd.nr_gp);
    bool ok;

    ok = probe_wr(MSR_AMD_GLOBAL_STATUS, ~0ull, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS, 0);
    tap_check(ok, "GLOBAL_STATUS: writes ignored, no #GP");
    ok = probe_wr(MSR_AMD_GLOBAL_CTL, ~0ull, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_CTL, m);
    ok &= probe_wr(MSR_AMD_GLOBAL_CTL, 0, 0) &&
          probe_rd_val(MSR_AMD_GLOBAL_CTL, 0);
    ok &= probe_wr(MSR_AMD_GLOBAL_CTL, m, 0);
    tap_check(ok, "GLOBAL_CTL: bits above %u dropped (~0 -> 0x%llx)",
              amd.nr_gp - 1, m);

    /* STATUS_SET raises no PMI even with INT programmed (no EN: idle) */
    lvtpc_fixed();
    wrmsr_safe(amd_ctl(0), AMD_CTL_INT | AMD_EVT_INSNS);
    pmi_reset();
    ok = probe_wr(MSR_AMD_GLOBAL_STATUS_SET, ~0ull, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS, m) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS_SET, 0);
    tap_check(ok, "GLOBAL_STATUS_SET ~0 sets status 0x%llx, reads 0", m);
    expect_pmis(0, 0, "GLOBAL_STATUS_SET: no PMI");
    ok = probe_wr(MSR_AMD_GLOBAL_STATUS_CLR, 1, 0) &&
         probe_rd_val(MSR_AMD_GLOBAL_STATUS, m & ~1ull);
    ok &= probe_wr(MSR_AMD_GLOBAL_STATUS_CLR, ~0ull, 0) &&
          probe_rd_val(MSR_AMD_GLOBAL_STATUS, 0) &&
          probe_rd_val(MSR_AMD_GLOBAL_STATUS_CLR, 0);
    tap_check(ok, "GLOBAL_STATUS_CLR clears bit 0, then all; reads 0");
    amd_quiesce();
}

void amd_check_msr_matrix(void)
{
    amd_check_existence();
    if (amd.level >= AMD_LEVEL_PERFCTR_CORE) {
        amd_check_k7_alias();
    }
    amd_check_dropped_bits();
    if (amd_v2()) {
        amd_check_global_msrs();
    }
    amd_quiesce();
}

/* RDPMC ECX < nr_gp reads counter ECX (48 bits); anything else #GP. */
void amd_check_rdpmc(void)
{
    bool ok = true;

    for (unsigned i = 0; i < amd.nr_gp; i++) {
        uint64_t v = (uint64_t)(i + 1) << 40 | 0x01000001ull * (i + 1);
        wrmsr_safe(amd_ctr(i), v);
        ok &= probe_rdpmc(i, 0, v);
    }
    tap_check(ok, "RDPMC i (i < %u) reads PERF_CTRi", amd.nr_gp);
    ok = probe_rdpmc(amd.nr_gp, VEC_GP, 0) && probe_rdpmc(0xFFFF, VEC_GP, 0);
    tap_check(ok, "RDPMC #GP for index %u and 0xFFFF", amd.nr_gp);
    ok = probe_rdpmc(1u << 30, VEC_GP, 0) && probe_rdpmc(1u << 31, VEC_GP, 0);
    tap_check(ok, "RDPMC #GP for ECX 0x40000000 and 0x80000000");
    wrmsr_safe(amd_ctr(0), ~0ull);
    tap_check(probe_rdpmc(0, 0, mask64(AMD_WIDTH)),
              "RDPMC 0 after PERF_CTR0 <- ~0: 0x%llx (48 bits)",
              mask64(AMD_WIDTH));
    amd_quiesce();
}
