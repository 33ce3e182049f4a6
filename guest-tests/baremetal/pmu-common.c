/*
 * Vendor-neutral PMU check helpers: see pmu-common.h.
 */
#include "pmu-common.h"

const char *vec_name(int vec)
{
    static char buf[16];

    switch (vec) {
    case 0:
        return "no fault";
    case VEC_GP:
        return "#GP";
    case VEC_UD:
        return "#UD";
    }
    /* Rare path: format "vector N" without a printf-to-buffer. */
    memcpy(buf, "vector ", 7);
    buf[7] = (char)('0' + vec / 10 % 10);
    buf[8] = (char)('0' + vec % 10);
    buf[9] = 0;
    return buf;
}

bool probe_rd(uint32_t msr, int want_vec)
{
    uint64_t v;
    int vec = rdmsr_safe(msr, &v);

    if (vec != want_vec) {
        tap_diag("  RDMSR 0x%x: want %s, got %s (0x%llx)", msr,
                 vec_name(want_vec), vec_name(vec), v);
        return false;
    }
    return true;
}

bool probe_rd_val(uint32_t msr, uint64_t want)
{
    uint64_t v;
    int vec = rdmsr_safe(msr, &v);

    if (vec || v != want) {
        tap_diag("  RDMSR 0x%x: want 0x%llx, got 0x%llx (%s)", msr, want, v,
                 vec_name(vec));
        return false;
    }
    return true;
}

bool probe_wr(uint32_t msr, uint64_t val, int want_vec)
{
    int vec = wrmsr_safe(msr, val);

    if (vec != want_vec) {
        tap_diag("  WRMSR 0x%x <- 0x%llx: want %s, got %s", msr, val,
                 vec_name(want_vec), vec_name(vec));
        return false;
    }
    return true;
}

bool probe_exists(uint32_t msr, bool exists)
{
    uint64_t v = 0;
    int want = exists ? 0 : VEC_GP;
    bool ok = probe_rd(msr, want);

    if (exists) {
        rdmsr_safe(msr, &v);
    }
    /* Writing back what was read changes nothing on an existing MSR. */
    return probe_wr(msr, v, want) && ok;
}

bool probe_rdpmc(uint32_t ecx, int want_vec, uint64_t want)
{
    uint64_t v;
    int vec = rdpmc_safe(ecx, &v);

    if (vec != want_vec || (!vec && v != want)) {
        tap_diag("  RDPMC 0x%x: want %s 0x%llx, got %s 0x%llx", ecx,
                 vec_name(want_vec), want, vec_name(vec), v);
        return false;
    }
    return true;
}

bool expect_count(uint64_t got, uint64_t want, int vec, const char *what)
{
    bool ok = got == want && !vec;

    tap_check(ok, "%s: %llu (want %llu)", what, got, want);
    if (vec) {
        tap_diag("  a WRMSR of the measured block raised %s", vec_name(vec));
    }
    return ok;
}

void lvtpc_fixed(void)
{
    apic_write(APIC_LVTPC, VEC_PMI);
}

void lvtpc_nmi(void)
{
    /* NMI delivery mode ignores the vector field; SDM Vol. 3A 11.5.1. */
    apic_write(APIC_LVTPC, APIC_LVT_NMI);
}

bool lvtpc_masked(void)
{
    return apic_read(APIC_LVTPC) & APIC_LVT_MASKED;
}

bool expect_pmis(uint32_t want_nmis, uint32_t want_fixed, const char *what)
{
    pmi_settle();
    uint32_t nmis = pmi_nmis, fixed = pmi_fixed;

    return tap_check(nmis == want_nmis && fixed == want_fixed,
                     "%s: %u NMI, %u vector 0x%x PMIs (want %u, %u)", what,
                     nmis, fixed, VEC_PMI, want_nmis, want_fixed);
}
