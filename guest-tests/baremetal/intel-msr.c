/*
 * Intel: CPUID leaf 0xA and PDCM, reset values, the #GP matrix of every
 * PMU MSR, legacy vs full-width counter writes, and RDPMC.
 *
 * Expected values follow docs/msrs.md.  The CPUID checks compare against
 * vpmu's default Intel configuration (version 2, 8 GP + 3 fixed counters,
 * 48 bits, PDCM with FW_WRITE), which the multiboot command line can
 * override (version= gp= fixed= width= fwidth= pdcm= caps= ebx=) once QEMU
 * grows properties for them; every other expectation derives from what
 * CPUID reports, so the MSR checks stay right for any configuration.
 */
#include "pmu-intel.h"

struct intel_pmu intel;

/* "GenuineIntel" in EBX, EDX, ECX of CPUID.0 */
#define VENDOR_EBX  0x756E6547u
#define VENDOR_EDX  0x49656E69u
#define VENDOR_ECX  0x6C65746Eu

static bool intel_config_sane(void)
{
    const struct intel_pmu *p = &intel;

    if (p->version < 1 || p->nr_gp > INTEL_MAX_GP ||
        p->gp_width < 32 || p->gp_width > 48) {
        return false;
    }
    return p->version < 2 || p->nr_fixed == 0 ||
           (p->nr_fixed <= INTEL_MAX_FIXED && p->fixed_width >= 32 &&
            p->fixed_width <= 48);
}

/* CPUID.0AH:EDX must hold nothing but the fixed-counter fields (and
 * AnyThread deprecation on v5). */
static void intel_check_cpuid_edx(uint32_t edx, unsigned want_fixed,
                                  unsigned want_fwidth)
{
    uint32_t v5 = intel.version >= 5 ? 1u << 15 : 0;

    if (intel.version < 2) {
        tap_check(edx == 0, "CPUID.0AH:EDX = 0 below version 2 (0x%x)", edx);
        return;
    }
    tap_check(intel.nr_fixed == want_fixed,
              "CPUID.0AH:EDX[4:0] fixed counters = %u (want %u)",
              intel.nr_fixed, want_fixed);
    tap_check(intel.fixed_width == want_fwidth,
              "CPUID.0AH:EDX[12:5] fixed width = %u (want %u)",
              intel.fixed_width, want_fwidth);
    tap_check((edx & ~0x1FFFu) == v5,
              "CPUID.0AH:EDX bits 31:13 = 0x%x (want 0x%x: bit 15 on v5 only)",
              edx & ~0x1FFFu, v5);
}

/* EBX: set bits mark unavailable events; the counting checks need
 * instructions (bit 1) and branches (bit 5). */
static void intel_check_cpuid_ebx(uint32_t ebx, unsigned len)
{
    uint64_t want = cmdline_u64("ebx", ~0ull);

    tap_check(!(ebx & ~(uint32_t)mask64(len)),
              "CPUID.0AH:EBX has no bits beyond its length %u (0x%x)",
              len, ebx);
    tap_check(!(ebx & (CPUID_A_EBX_INSNS | CPUID_A_EBX_BRANCHES)),
              "CPUID.0AH:EBX: instructions and branches available (0x%x)",
              ebx);
    if (want != ~0ull) {
        tap_check(ebx == want, "CPUID.0AH:EBX = 0x%x (want 0x%llx)", ebx,
                  want);
    }
}

static void intel_decode_leaf_a(const uint32_t a[4], uint32_t one_ecx)
{
    intel.version = a[0] & 0xFF;
    intel.nr_gp = (a[0] >> 8) & 0xFF;
    intel.gp_width = (a[0] >> 16) & 0xFF;
    intel.ebx = a[1];
    intel.nr_fixed = intel.version >= 2 ? a[3] & 0x1F : 0;
    intel.fixed_width = intel.version >= 2 ? (a[3] >> 5) & 0xFF : 0;
    intel.pdcm = one_ecx & (1u << 15);
    if (intel.pdcm) {
        rdmsr_safe(MSR_PERF_CAPABILITIES, &intel.caps);
    }
    intel.fw_write = intel.caps & PERF_CAP_FW_WRITE;
}

/*
 * force=1: run every check against the expected PMU although CPUID does
 * not describe it, e.g. to see how far a front end with broken CPUID
 * gets, or to smoke-test the payload on a QEMU without a vPMU.
 */
static void intel_force_expected(void)
{
    intel.version = cmdline_u64("version", 2);
    intel.nr_gp = cmdline_u64("gp", 8);
    intel.gp_width = cmdline_u64("width", 48);
    intel.nr_fixed = cmdline_u64("fixed", 3);
    intel.fixed_width = cmdline_u64("fwidth", 48);
    intel.ebx = 0;
    intel.pdcm = cmdline_u64("pdcm", 1);
    intel.caps = cmdline_u64("caps", PERF_CAP_FW_WRITE);
    intel.fw_write = intel.caps & PERF_CAP_FW_WRITE;
    tap_diag("force=1: checking against the expected PMU, not CPUID");
}

/* Returns whether CPUID describes a PMU the remaining checks can use. */
bool intel_check_cpuid(void)
{
    uint32_t r[4], a[4] = { 0 }, one[4];
    unsigned want_ver = cmdline_u64("version", 2);

    cpuid(0, 0, r);
    tap_check(r[1] == VENDOR_EBX && r[3] == VENDOR_EDX && r[2] == VENDOR_ECX,
              "CPUID.0: vendor GenuineIntel");
    tap_check(r[0] >= 0xA, "CPUID.0:EAX max leaf 0x%x >= 0xA", r[0]);
    if (r[0] >= 0xA) {
        cpuid(0xA, 0, a);
    }
    cpuid(1, 0, one);
    intel_decode_leaf_a(a, one[2]);
    tap_diag("CPUID.0AH: EAX 0x%08x EBX 0x%08x ECX 0x%08x EDX 0x%08x",
             a[0], a[1], a[2], a[3]);

    tap_check(intel.version == want_ver,
              "CPUID.0AH:EAX[7:0] version = %u (want %u)", intel.version,
              want_ver);
    tap_check(intel.nr_gp == cmdline_u64("gp", 8),
              "CPUID.0AH:EAX[15:8] GP counters = %u (want %u)", intel.nr_gp,
              (unsigned)cmdline_u64("gp", 8));
    tap_check(intel.gp_width == cmdline_u64("width", 48),
              "CPUID.0AH:EAX[23:16] GP width = %u (want %u)", intel.gp_width,
              (unsigned)cmdline_u64("width", 48));
    unsigned len = intel.version >= 5 ? 8 : 7;
    tap_check(a[0] >> 24 == len, "CPUID.0AH:EAX[31:24] EBX length = %u "
              "(want %u: 7, 8 on v5)", a[0] >> 24, len);
    intel_check_cpuid_ebx(a[1], len);
    uint32_t ecx = intel.version >= 5 ? (uint32_t)mask64(intel.nr_fixed) : 0;
    tap_check(a[2] == ecx, "CPUID.0AH:ECX = 0x%x (want 0x%x: fixed bitmap "
              "on v5, else 0)", a[2], ecx);
    intel_check_cpuid_edx(a[3], cmdline_u64("fixed", 3),
                          cmdline_u64("fwidth", 48));
    tap_check(intel.pdcm == (bool)cmdline_u64("pdcm", 1),
              "CPUID.1:ECX.PDCM[15] = %u (want %u)", intel.pdcm,
              (unsigned)cmdline_u64("pdcm", 1));

    bool sane = intel_config_sane();
    tap_check(sane, "CPUID.0AH describes a usable PMU (version >= 1, "
              "<= 8 GP counters, widths 32-48)");
    if (!sane && cmdline_u64("force", 0)) {
        intel_force_expected();
        return true;
    }
    if (!sane) {
        tap_diag("no usable PMU in CPUID: skipping the MSR, RDPMC and "
                 "counting checks (stock QEMU under TCG has no vPMU; "
                 "force=1 runs them anyway)");
    }
    return sane;
}

uint64_t intel_global_ctrl_valid(void)
{
    return mask64(intel.nr_gp) | mask64(intel.nr_fixed) << 32;
}

/* Valid GLOBAL_OVF_CTRL / STATUS_RESET bits (docs/msrs.md). */
static uint64_t intel_ovf_ctrl_valid(void)
{
    uint64_t v = intel_global_ctrl_valid() | GLOBAL_OVF_BUF | GLOBAL_COND_CHGD;

    return intel.version >= 4 ? v | GLOBAL_LBR_FRZ | GLOBAL_CTR_FRZ : v;
}

/* Back to the reset state between checks; faults are ignored here (the
 * checks themselves report them). */
void intel_quiesce(void)
{
    if (intel.version >= 2) {
        wrmsr_safe(MSR_GLOBAL_CTRL, 0);
        wrmsr_safe(MSR_FIXED_CTR_CTRL, 0);
        for (unsigned i = 0; i < intel.nr_fixed; i++) {
            wrmsr_safe(MSR_FIXED_CTR0 + i, 0);
        }
    }
    for (unsigned i = 0; i < intel.nr_gp; i++) {
        wrmsr_safe(MSR_IA32_PERFEVTSEL0 + i, 0);
        wrmsr_safe(MSR_IA32_PMC0 + i, 0);
    }
    wrmsr_safe(MSR_DEBUGCTL, 0);
    if (intel.version >= 2) {
        wrmsr_safe(MSR_GLOBAL_OVF_CTRL, intel_ovf_ctrl_valid());
        wrmsr_safe(MSR_GLOBAL_CTRL, mask64(intel.nr_gp));
    }
    apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
    pmi_reset();
}

/* Must run first: every MSR as RESET left it (docs/msrs.md "Reset values"). */
void intel_check_reset_values(void)
{
    bool ok = true;

    for (unsigned i = 0; i < intel.nr_gp; i++) {
        ok &= probe_rd_val(MSR_IA32_PMC0 + i, 0);
        ok &= probe_rd_val(MSR_IA32_PERFEVTSEL0 + i, 0);
        if (intel.fw_write) {
            ok &= probe_rd_val(MSR_IA32_A_PMC0 + i, 0);
        }
    }
    tap_check(ok, "reset: PMCi, A_PMCi, PERFEVTSELi read 0 (i < %u)",
              intel.nr_gp);
    ok = probe_rd_val(MSR_DEBUGCTL, 0);
    if (intel.pdcm) {
        ok &= probe_rd_val(MSR_PERF_CAPABILITIES,
                           cmdline_u64("caps", PERF_CAP_FW_WRITE));
    }
    tap_check(ok, "reset: DEBUGCTL 0, PERF_CAPABILITIES 0x%llx",
              cmdline_u64("caps", PERF_CAP_FW_WRITE));
    if (intel.version < 2) {
        return;
    }
    ok = probe_rd_val(MSR_FIXED_CTR_CTRL, 0);
    for (unsigned i = 0; i < intel.nr_fixed; i++) {
        ok &= probe_rd_val(MSR_FIXED_CTR0 + i, 0);
    }
    tap_check(ok, "reset: FIXED_CTRi (i < %u) and FIXED_CTR_CTRL read 0",
              intel.nr_fixed);
    /* 8 GP counters: 0xFF; fixed enable bits 32+ clear */
    tap_check(probe_rd_val(MSR_GLOBAL_CTRL, mask64(intel.nr_gp)),
              "reset: GLOBAL_CTRL = 0x%llx (GP enables set, fixed clear)",
              mask64(intel.nr_gp));
    ok = probe_rd_val(MSR_GLOBAL_STATUS, 0);
    ok &= probe_rd_val(MSR_GLOBAL_OVF_CTRL, 0);
    if (intel.version >= 4) {
        ok &= probe_rd_val(MSR_GLOBAL_STATUS_SET, 0);
        ok &= probe_rd_val(MSR_GLOBAL_INUSE, 0);
    }
    tap_check(ok, "reset: GLOBAL_STATUS 0, OVF_CTRL (and v4 STATUS_SET, "
              "INUSE) read 0");
}

/* PMCi, A_PMCi, PERFEVTSELi, FIXED_CTRi: exist up to the CPUID count. */
static void intel_check_counter_ranges(void)
{
    bool ok = true, a_ok = true, sel_ok = true, fix_ok = true;

    for (unsigned i = 0; i < INTEL_MAX_GP; i++) {
        bool gp = i < intel.nr_gp;
        ok &= probe_exists(MSR_IA32_PMC0 + i, gp);
        sel_ok &= probe_exists(MSR_IA32_PERFEVTSEL0 + i, gp);
        a_ok &= probe_exists(MSR_IA32_A_PMC0 + i, gp && intel.fw_write);
    }
    for (unsigned i = 0; i < INTEL_MAX_FIXED; i++) {
        fix_ok &= probe_exists(MSR_FIXED_CTR0 + i,
                               intel.version >= 2 && i < intel.nr_fixed);
    }
    tap_check(ok, "PMCi 0x%x+i: exist for i < %u, #GP up to i = 7",
              MSR_IA32_PMC0, intel.nr_gp);
    tap_check(sel_ok, "PERFEVTSELi 0x%x+i: exist for i < %u, #GP up to i = 7",
              MSR_IA32_PERFEVTSEL0, intel.nr_gp);
    tap_check(a_ok, "A_PMCi 0x%x+i: exist for i < %u iff FW_WRITE (%u)",
              MSR_IA32_A_PMC0, intel.nr_gp, intel.fw_write);
    tap_check(fix_ok, "FIXED_CTRi 0x%x+i: exist for i < %u (v2+), #GP up "
              "to i = 3", MSR_FIXED_CTR0, intel.nr_fixed);
}

/* PERFEVTSELi reserved bits: 63:32; AnyThread (21) on v1, v2, v5. */
static void intel_check_evtsel_bits(void)
{
    /* event C4, umask 01, USR OS EDGE PC INT INV, CMASK 5: no EN */
    const uint64_t valid = 0x059F01C4ull;
    bool any_rsvd = intel.version <= 2 || intel.version >= 5;
    bool ok = true;

    for (unsigned i = 0; i < intel.nr_gp; i++) {
        uint32_t msr = MSR_IA32_PERFEVTSEL0 + i;
        ok &= probe_wr(msr, valid, 0) && probe_rd_val(msr, valid);
        ok &= probe_wr(msr, bit64(32), VEC_GP);
        ok &= probe_wr(msr, bit64(63) | EVT_INSNS, VEC_GP);
        ok &= probe_wr(msr, EVTSEL_ANY | EVT_INSNS, any_rsvd ? VEC_GP : 0);
        ok &= probe_rd_val(msr, any_rsvd ? valid : EVTSEL_ANY | EVT_INSNS);
        ok &= probe_wr(msr, 0, 0);
    }
    tap_check(ok, "PERFEVTSELi: 0x%llx kept; bits 32, 63 #GP; AnyThread %s "
              "on v%u", valid, any_rsvd ? "#GP" : "accepted", intel.version);
}

/* FIXED_CTR_CTRL: a nibble per existing counter, the rest reserved. */
static void intel_check_fixed_ctrl_bits(void)
{
    uint64_t valid = 0;
    bool any_rsvd = intel.version <= 2 || intel.version >= 5;
    bool ok;

    for (unsigned i = 0; i < intel.nr_fixed; i++) {
        valid |= (FIXED_OS | FIXED_USR | FIXED_PMI) << (4 * i);
    }
    ok = probe_wr(MSR_FIXED_CTR_CTRL, valid, 0) &&
         probe_rd_val(MSR_FIXED_CTR_CTRL, valid);
    if (intel.nr_fixed < INTEL_MAX_FIXED) {     /* absent counter's nibble */
        ok &= probe_wr(MSR_FIXED_CTR_CTRL, FIXED_OS << (4 * intel.nr_fixed),
                       VEC_GP);
    }
    ok &= probe_wr(MSR_FIXED_CTR_CTRL, bit64(16), VEC_GP);
    ok &= probe_wr(MSR_FIXED_CTR_CTRL, bit64(63), VEC_GP);
    if (intel.nr_fixed) {
        ok &= probe_wr(MSR_FIXED_CTR_CTRL, FIXED_ANY | FIXED_OS,
                       any_rsvd ? VEC_GP : 0);
    }
    ok &= probe_wr(MSR_FIXED_CTR_CTRL, 0, 0);
    tap_check(ok, "FIXED_CTR_CTRL: 0x%llx kept; absent nibble, bits 16, 63 "
              "#GP; AnyThread %s", valid, any_rsvd ? "#GP" : "accepted");
}

/* GLOBAL_STATUS read-only; GLOBAL_CTRL and OVF_CTRL reserved bits. */
static void intel_check_global_bits(void)
{
    uint64_t ctrl = intel_global_ctrl_valid();
    uint64_t ovf = intel_ovf_ctrl_valid();
    bool ok;

    ok = probe_wr(MSR_GLOBAL_STATUS, 0, VEC_GP) &&
         probe_wr(MSR_GLOBAL_STATUS, 1, VEC_GP);
    tap_check(ok, "GLOBAL_STATUS: read-only, WRMSR #GP");

    ok = probe_wr(MSR_GLOBAL_CTRL, ctrl, 0) &&
         probe_rd_val(MSR_GLOBAL_CTRL, ctrl);
    if (intel.nr_gp < 32) {
        ok &= probe_wr(MSR_GLOBAL_CTRL, bit64(intel.nr_gp), VEC_GP);
    }
    ok &= probe_wr(MSR_GLOBAL_CTRL, bit64(32 + intel.nr_fixed), VEC_GP);
    ok &= probe_wr(MSR_GLOBAL_CTRL, bit64(63), VEC_GP);
    ok &= probe_wr(MSR_GLOBAL_CTRL, mask64(intel.nr_gp), 0);
    tap_check(ok, "GLOBAL_CTRL: 0x%llx kept; bits %u, %u, 63 #GP", ctrl,
              intel.nr_gp, 32 + intel.nr_fixed);

    ok = probe_wr(MSR_GLOBAL_OVF_CTRL, ovf, 0) &&
         probe_rd_val(MSR_GLOBAL_OVF_CTRL, 0);
    if (intel.nr_gp < 32) {
        ok &= probe_wr(MSR_GLOBAL_OVF_CTRL, bit64(intel.nr_gp), VEC_GP);
    }
    ok &= probe_wr(MSR_GLOBAL_OVF_CTRL, bit64(61), VEC_GP);
    if (intel.version < 4) {
        ok &= probe_wr(MSR_GLOBAL_OVF_CTRL, GLOBAL_CTR_FRZ, VEC_GP);
    }
    tap_check(ok, "GLOBAL_OVF_CTRL: 0x%llx accepted, reads 0; bits %u, 61%s "
              "#GP", ovf, intel.nr_gp, intel.version < 4 ? ", 59" : "");
}

/* STATUS_SET and INUSE (v4+), PERF_CAPABILITIES, DEBUGCTL. */
static void intel_check_misc_msrs(void)
{
    bool v4 = intel.version >= 4;
    bool ok = probe_exists(MSR_GLOBAL_STATUS_SET, v4) &&
              probe_rd(MSR_GLOBAL_INUSE, v4 ? 0 : VEC_GP) &&
              probe_wr(MSR_GLOBAL_INUSE, 0, VEC_GP);

    tap_check(ok, "GLOBAL_STATUS_SET, GLOBAL_INUSE: %s on v%u (INUSE "
              "read-only)", v4 ? "exist" : "#GP", intel.version);
    ok = probe_rd(MSR_PERF_CAPABILITIES, intel.pdcm ? 0 : VEC_GP) &&
         probe_wr(MSR_PERF_CAPABILITIES, intel.caps, VEC_GP);
    tap_check(ok, "PERF_CAPABILITIES: %s, WRMSR #GP (read-only)",
              intel.pdcm ? "readable (PDCM)" : "#GP (no PDCM)");
    ok = probe_wr(MSR_DEBUGCTL, DEBUGCTL_BTF | DEBUGCTL_FREEZE_WHILE_SMM, 0);
    ok &= probe_wr(MSR_DEBUGCTL, DEBUGCTL_FREEZE_ON_PMI,
                   intel.version >= 2 ? 0 : VEC_GP);
    ok &= probe_wr(MSR_DEBUGCTL, bit64(0), VEC_GP);    /* LBR */
    ok &= probe_wr(MSR_DEBUGCTL, bit64(32), VEC_GP);
    ok &= probe_wr(MSR_DEBUGCTL, 0, 0);
    tap_check(ok, "DEBUGCTL: BTF, FREEZE_WHILE_SMM, FREEZE_PERFMON_ON_PMI "
              "(v2+) accepted; LBR (0), bit 32 #GP");
}

void intel_check_msr_matrix(void)
{
    intel_check_counter_ranges();
    intel_check_evtsel_bits();
    intel_check_misc_msrs();
    if (intel.version >= 2) {
        intel_check_fixed_ctrl_bits();
        intel_check_global_bits();
    }
    intel_quiesce();
}

/* Legacy PMCi writes: low 32 bits, sign-extended, masked to the width. */
static void intel_check_legacy_writes(unsigned i)
{
    uint32_t msr = MSR_IA32_PMC0 + i;
    uint64_t m = mask64(intel.gp_width);
    const struct {
        uint64_t val, want;
    } v[] = {
        { 0x7FFFFFFFull, 0x7FFFFFFFull },               /* positive: as is */
        { 0x80000000ull, 0xFFFFFFFF80000000ull & m },   /* 48: 0xFFFF80000000 */
        { 0xFFFFFFFFull, m },                           /* -1: every bit */
        { 0x123456789ull, 0x23456789ull },              /* 63:32 ignored */
        { 0xFFFFFFFF00000005ull, 5 },                   /* ... not #GP */
    };
    bool ok = true;

    for (unsigned k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
        ok &= probe_wr(msr, v[k].val, 0) && probe_rd_val(msr, v[k].want);
    }
    tap_check(ok, "PMC%u legacy writes: sign-extend bit 31 to %u bits, "
              "ignore bits 63:32", i, intel.gp_width);
}

/* A_PMCi: the full value; any bit at or above the width #GPs. */
static void intel_check_full_writes(unsigned i)
{
    uint32_t a_msr = MSR_IA32_A_PMC0 + i, msr = MSR_IA32_PMC0 + i;
    uint64_t m = mask64(intel.gp_width);
    uint64_t mid = 0x123456789ABull & m;
    bool ok;

    ok = probe_wr(a_msr, 0x80000000ull, 0) &&
         probe_rd_val(msr, 0x80000000ull);  /* no sign extension */
    ok &= probe_wr(a_msr, mid, 0) && probe_rd_val(msr, mid) &&
          probe_rd_val(a_msr, mid);
    ok &= probe_wr(a_msr, m, 0) && probe_rd_val(msr, m);
    if (intel.gp_width < 64) {
        ok &= probe_wr(a_msr, bit64(intel.gp_width), VEC_GP);
    }
    ok &= probe_wr(a_msr, bit64(63), VEC_GP);
    ok &= probe_rd_val(msr, m);             /* faulting writes changed nothing */
    tap_check(ok, "A_PMC%u full-width writes: kept as is up to bit %u, "
              "bit %u #GP", i, intel.gp_width - 1, intel.gp_width);
}

/* FIXED_CTRi: the full value; bits at or above fixed_width #GP. */
static void intel_check_fixed_writes(void)
{
    uint64_t m = mask64(intel.fixed_width);
    bool ok = true;

    for (unsigned i = 0; i < intel.nr_fixed; i++) {
        uint32_t msr = MSR_FIXED_CTR0 + i;
        ok &= probe_wr(msr, 0x80000000ull, 0) &&
              probe_rd_val(msr, 0x80000000ull);
        ok &= probe_wr(msr, m, 0) && probe_rd_val(msr, m);
        ok &= probe_wr(msr, bit64(intel.fixed_width), VEC_GP);
        ok &= probe_rd_val(msr, m);
    }
    tap_check(ok, "FIXED_CTRi writes: full value up to bit %u, bit %u #GP",
              intel.fixed_width - 1, intel.fixed_width);
}

void intel_check_widths(void)
{
    unsigned last = intel.nr_gp - 1;

    if (!intel.nr_gp) {
        tap_skip("no GP counters", "PMCi legacy and full-width writes");
    } else {
        intel_check_legacy_writes(0);
        intel_check_legacy_writes(last);
        if (intel.fw_write) {
            intel_check_full_writes(0);
            intel_check_full_writes(last);
        } else {
            tap_skip("no FW_WRITE", "A_PMCi full-width writes");
        }
    }
    if (intel.version >= 2 && intel.nr_fixed) {
        intel_check_fixed_writes();
    }
    intel_quiesce();
}

/* RDPMC reads what RDMSR reads; #GP for absent indexes and ECX[31:16]. */
void intel_check_rdpmc(void)
{
    uint64_t m = mask64(intel.gp_width), fm = mask64(intel.fixed_width);
    bool ok = true;

    for (unsigned i = 0; i < intel.nr_gp; i++) {
        /* distinct per counter; bits above 31 only with full-width writes */
        uint64_t v = 0x01000001ull * (i + 1);
        if (intel.fw_write) {
            v = (v | (uint64_t)(i + 1) << 36) & m;
        }
        wrmsr_safe(intel.fw_write ? MSR_IA32_A_PMC0 + i : MSR_IA32_PMC0 + i, v);
        ok &= probe_rdpmc(i, 0, v);
    }
    tap_check(ok, "RDPMC i (i < %u) reads PMCi", intel.nr_gp);
    ok = probe_rdpmc(intel.nr_gp, VEC_GP, 0) && probe_rdpmc(0xFFFF, VEC_GP, 0);
    tap_check(ok, "RDPMC #GP for GP index %u and 0xFFFF", intel.nr_gp);

    ok = true;
    for (unsigned i = 0; i < intel.nr_fixed; i++) {
        uint64_t v = ((uint64_t)(i + 1) << 32 | (0xF0000000u + i)) & fm;
        wrmsr_safe(MSR_FIXED_CTR0 + i, v);
        ok &= probe_rdpmc(1u << 30 | i, 0, v);
    }
    ok &= probe_rdpmc(1u << 30 | intel.nr_fixed, VEC_GP, 0);
    ok &= probe_rdpmc(1u << 30 | 0xFFFF, VEC_GP, 0);
    tap_check(ok, "RDPMC 0x40000000|i reads FIXED_CTRi (i < %u), #GP for "
              "fixed index %u", intel.nr_fixed, intel.nr_fixed);

    ok = probe_rdpmc(1u << 31, VEC_GP, 0) &&
         probe_rdpmc(1u << 31 | 1u << 30, VEC_GP, 0);
    tap_check(ok, "RDPMC #GP with ECX bit 31 (fast read)");
    ok = probe_rdpmc(1u << 16, VEC_GP, 0) && probe_rdpmc(1u << 29, VEC_GP, 0);
    tap_check(ok, "RDPMC #GP with ECX bits 29:16 set");
    if (intel.nr_gp) {
        wrmsr_safe(MSR_IA32_PMC0, 0xFFFFFFFFull);   /* -1: all width bits */
        tap_check(probe_rdpmc(0, 0, m), "RDPMC 0 after legacy -1: 0x%llx "
                  "(masked to %u bits)", m, intel.gp_width);
    }
    intel_quiesce();
}
