/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host CPU's vendor and PMU, from a CPUID table: recorded (tests, a
 * VMM that already has one) or executed here (vpmu_host_cpuid_live()).
 * Both go through one decoder, so the tests of recorded tables test what
 * a live host gets.
 */
#include "host-priv.h"

#include <cpuid.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>

/* The vendors whose PMU vpmu knows: CPUID.0 EBX, EDX, ECX as a string. */
static const struct {
    const char *id;
    VpmuHostVendor vendor;
    VpmuVendor pmu;
} vendors[] = {
    { "GenuineIntel", VPMU_HOST_VENDOR_INTEL, VPMU_VENDOR_INTEL },
    { "AuthenticAMD", VPMU_HOST_VENDOR_AMD, VPMU_VENDOR_AMD },
    /* Hygon's Dhyana is an AMD Zen core, with AMD's PMU and CPUID. */
    { "HygonGenuine", VPMU_HOST_VENDOR_HYGON, VPMU_VENDOR_AMD },
};

const VpmuCpuidLeaf *vpmu_host_cpuid_find(const VpmuCpuidLeaf *t, size_t n,
                                          uint32_t leaf)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i].leaf == leaf && t[i].subleaf == 0) {
            return &t[i];
        }
    }
    return NULL;
}

int vpmu_host_cpuid_unique(const VpmuCpuidLeaf *t, size_t n,
                           const char *what, char *why, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (t[i].leaf == t[j].leaf && t[i].subleaf == t[j].subleaf) {
                host_say(why, len, "%s: leaf %#x subleaf %#x twice", what,
                         t[i].leaf, t[i].subleaf);
                return -EINVAL;
            }
        }
    }
    return 0;
}

size_t vpmu_host_cpuid_live(VpmuCpuidLeaf *t, size_t max)
{
    static const uint32_t leaves[HOST_LIVE_LEAVES] = {
        CPUID_LEAF_VENDOR, CPUID_LEAF_ARCH_PERFMON, CPUID_LEAF_EXT_MAX,
        CPUID_LEAF_EXT_FEATURES, CPUID_LEAF_EXT_PERFMON,
    };
    uint32_t basic = __get_cpuid_max(0, NULL);
    uint32_t ext = __get_cpuid_max(CPUID_LEAF_EXT_MAX, NULL);
    size_t n = 0;

    /* A leaf above the maximum answers as another leaf (SDM Vol. 2A
       CPUID): only ask for those the maxima promise. */
    for (size_t i = 0; i < HOST_LIVE_LEAVES && n < max; i++) {
        uint32_t l = leaves[i];
        bool is_ext = l >= CPUID_LEAF_EXT_MAX;

        if (l > (is_ext ? ext : basic) ||
            (is_ext && l != CPUID_LEAF_EXT_MAX &&
             (ext & CPUID_EXT_RANGE_MASK) != CPUID_LEAF_EXT_MAX)) {
            continue;
        }
        t[n] = (VpmuCpuidLeaf){ .leaf = l };
        __cpuid_count(l, 0, t[n].eax, t[n].ebx, t[n].ecx, t[n].edx);
        n++;
    }
    return n;
}

/* CPUID.0's vendor string (EBX, EDX, ECX), '?' for unprintables. */
static void decode_vendor(const VpmuCpuidLeaf *l0, VpmuHostProbe *out)
{
    char id[VPMU_HOST_VENDOR_ID_LEN];

    memcpy(id, &l0->ebx, 4);
    memcpy(id + 4, &l0->edx, 4);
    memcpy(id + 8, &l0->ecx, 4);
    id[12] = '\0';
    for (size_t i = 0; i < sizeof(vendors) / sizeof(*vendors); i++) {
        if (!strcmp(id, vendors[i].id)) {
            out->vendor = vendors[i].vendor;
            out->pmu_vendor = vendors[i].pmu;
        }
    }
    for (size_t i = 0; i < 12; i++) {
        out->vendor_id[i] = isprint((unsigned char)id[i]) ? id[i] : '?';
    }
    out->vendor_id[12] = '\0';
}

/* A leaf the maximum leaf promises, or -EINVAL (a truncated table). */
static int need(const VpmuCpuidLeaf *t, size_t n, uint32_t leaf,
                uint32_t max, const VpmuCpuidLeaf **e, VpmuHostProbe *out)
{
    *e = vpmu_host_cpuid_find(t, n, leaf);
    if (!*e && leaf <= max) {
        host_say(out->cpu_reason, sizeof(out->cpu_reason),
                 "CPUID table truncated: leaf %#x is missing, below the "
                 "maximum leaf %#x", leaf, max);
        return -EINVAL;
    }
    return 0;
}

static int garbage(VpmuHostProbe *out, const char *field, unsigned v,
                   const char *limit)
{
    host_say(out->cpu_reason, sizeof(out->cpu_reason),
             "%s: CPUID %s = %u (%#x), which no CPU has (%s)",
             out->vendor_id, field, v, v, limit);
    return -EINVAL;
}

/* Intel: CPUID.0AH (host-priv.h). */
static int decode_intel(const VpmuCpuidLeaf *t, size_t n, uint32_t basic,
                        VpmuHostProbe *out)
{
    const VpmuCpuidLeaf *a;
    unsigned contiguous;
    int r = need(t, n, CPUID_LEAF_ARCH_PERFMON, basic, &a, out);

    if (r < 0) {
        return r;
    }
    if (!a || basic < CPUID_LEAF_ARCH_PERFMON ||
        !(a->eax & CPUID_0A_EAX_VERSION_MASK)) {
        host_say(out->cpu_reason, sizeof(out->cpu_reason), "%s: no "
                 "architectural PMU (%s): a VM without a vPMU, or a CPU "
                 "before it", out->vendor_id,
                 a && basic >= CPUID_LEAF_ARCH_PERFMON ?
                 "CPUID.0AH:EAX[7:0] = 0" : "no CPUID leaf 0AH");
        return 0;
    }
    out->version = a->eax & CPUID_0A_EAX_VERSION_MASK;
    out->nr_gp = (a->eax >> CPUID_0A_EAX_NR_GP_SHIFT) & CPUID_0A_EAX_NR_GP_MASK;
    out->gp_width = (a->eax >> CPUID_0A_EAX_GP_WIDTH_SHIFT) &
                    CPUID_0A_EAX_GP_WIDTH_MASK;
    if (out->nr_gp > INTEL_MAX_GP_COUNTERS) {
        return garbage(out, "0AH:EAX[15:8] (GP counters)", out->nr_gp,
                       "IA32_PERF_GLOBAL_CTRL[31:0] enables at most 32");
    }
    if (out->nr_gp && (!out->gp_width || out->gp_width > COUNTER_MAX_WIDTH)) {
        return garbage(out, "0AH:EAX[23:16] (GP counter width)",
                       out->gp_width, "1 to 64 bits");
    }
    if (out->version >= INTEL_FIXED_SINCE_VERSION) {
        out->nr_fixed = a->edx & CPUID_0A_EDX_NR_FIXED_MASK;
        out->fixed_width = (a->edx >> CPUID_0A_EDX_FIXED_WIDTH_SHIFT) &
                           CPUID_0A_EDX_FIXED_WIDTH_MASK;
    }
    contiguous = (1u << out->nr_fixed) - 1;     /* nr_fixed < 32 */
    out->fixed_mask = contiguous;
    if (out->version >= INTEL_FIXED_MASK_SINCE_VERSION) {
        out->fixed_mask |= a->ecx;
    }
    if (out->nr_fixed > INTEL_MAX_FIXED_COUNTERS) {
        return garbage(out, "0AH:EDX[4:0] (fixed counters)", out->nr_fixed,
                       "IA32_PERF_GLOBAL_CTRL[47:32] enables at most 16");
    }
    if (out->fixed_mask >> INTEL_MAX_FIXED_COUNTERS) {
        return garbage(out, "0AH:ECX (fixed counter bitmap)", a->ecx,
                       "IA32_PERF_GLOBAL_CTRL[47:32] enables at most 16");
    }
    if (out->fixed_mask &&
        (!out->fixed_width || out->fixed_width > COUNTER_MAX_WIDTH)) {
        return garbage(out, "0AH:EDX[12:5] (fixed counter width)",
                       out->fixed_width, "1 to 64 bits");
    }
    host_say(out->cpu_reason, sizeof(out->cpu_reason), "%s: architectural "
             "PMU version %u (CPUID.0AH), %u GP counters of %u bits, %u "
             "fixed of %u bits (mask %#x)", out->vendor_id, out->version,
             out->nr_gp, out->gp_width, out->nr_fixed, out->fixed_width,
             out->fixed_mask);
    return 0;
}

/* AMD and Hygon: Fn8000_0001 and Fn8000_0022 (host-priv.h). */
static int decode_amd(const VpmuCpuidLeaf *t, size_t n, VpmuHostProbe *out)
{
    const VpmuCpuidLeaf *m = vpmu_host_cpuid_find(t, n, CPUID_LEAF_EXT_MAX);
    const VpmuCpuidLeaf *f, *pm;
    uint32_t ext;
    int r;

    if (!m) {
        host_say(out->cpu_reason, sizeof(out->cpu_reason), "CPUID table "
                 "truncated: %s without leaf 0x80000000", out->vendor_id);
        return -EINVAL;
    }
    /* Every AMD CPU since the K5 has extended leaves (APM Vol. 3, E.4.1). */
    if ((m->eax & CPUID_EXT_RANGE_MASK) != CPUID_LEAF_EXT_MAX) {
        return garbage(out, "Fn8000_0000_EAX (largest extended leaf)",
                       m->eax, "an extended leaf is 8000_xxxxh");
    }
    ext = m->eax;
    r = need(t, n, CPUID_LEAF_EXT_FEATURES, ext, &f, out);
    if (r == 0) {
        r = need(t, n, CPUID_LEAF_EXT_PERFMON, ext, &pm, out);
    }
    if (r < 0) {
        return r;
    }
    out->gp_width = AMD_COUNTER_WIDTH;
    out->version = AMD_VERSION_V1;
    if (pm && ext >= CPUID_LEAF_EXT_PERFMON &&
        (pm->eax & CPUID_80000022_EAX_PERFMON_V2)) {
        out->amd_level = VPMU_AMD_PERFMON_V2;
        out->version = AMD_VERSION_PERFMON_V2;
        out->nr_gp = pm->ebx & CPUID_80000022_EBX_NR_CORE_MASK;
        if (!out->nr_gp) {
            return garbage(out, "Fn8000_0022_EBX[3:0] (NumPerfCtrCore)", 0,
                           "PerfMonV2 has core counters");
        }
    } else if (f && ext >= CPUID_LEAF_EXT_FEATURES &&
               (f->ecx & CPUID_80000001_ECX_PERFCTR_CORE)) {
        out->amd_level = VPMU_AMD_PERFCTR_CORE;
        out->nr_gp = AMD_EXT_CORE_COUNTERS;
    } else {
        out->amd_level = VPMU_AMD_K7;
        out->nr_gp = AMD_LEGACY_COUNTERS;
    }
    host_say(out->cpu_reason, sizeof(out->cpu_reason), "%s: AMD's PMU, %s, "
             "%u GP counters of %u bits", out->vendor_id,
             out->amd_level == VPMU_AMD_PERFMON_V2 ?
             "PerfMonV2 (Fn8000_0022_EAX[0])" :
             out->amd_level == VPMU_AMD_PERFCTR_CORE ?
             "PerfCtrExtCore (Fn8000_0001_ECX[23])" : "the legacy counters",
             out->nr_gp, out->gp_width);
    return 0;
}

int vpmu_host_cpu_decode(const VpmuCpuidLeaf *t, size_t n,
                         VpmuHostProbe *out)
{
    const VpmuCpuidLeaf *l0 = vpmu_host_cpuid_find(t, n, CPUID_LEAF_VENDOR);
    int r = vpmu_host_cpuid_unique(t, n, "CPUID table", out->cpu_reason,
                                   sizeof(out->cpu_reason));

    if (r < 0) {
        return r;
    }
    if (!l0) {
        host_say(out->cpu_reason, sizeof(out->cpu_reason),
                 "CPUID table has no leaf 0 (the vendor)");
        return -EINVAL;
    }
    decode_vendor(l0, out);
    switch (out->pmu_vendor) {
    case VPMU_VENDOR_INTEL:
        return decode_intel(t, n, l0->eax, out);
    case VPMU_VENDOR_AMD:
        return decode_amd(t, n, out);
    }
    host_say(out->cpu_reason, sizeof(out->cpu_reason), "CPUID vendor '%s': "
             "no PMU vpmu knows (Intel's, AMD's, Hygon's)", out->vendor_id);
    return 0;
}
