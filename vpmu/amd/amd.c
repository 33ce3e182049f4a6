/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD core performance counters: legacy K7, PerfCtrExtCore and PerfMonV2
 * (APM Vol. 2 13.2).  AMD drops reserved bits silently instead of #GP;
 * only MSRs that do not exist fault.  Counters are always 48 bits.
 */
#include "pmu-priv.h"

#include <string.h>

/* PERF_CTLx bits beyond the shared layout (APM Figure 13-7). */
#define AMD_EVTSEL_EVENT_HI     GENMASK_ULL(35, 32)   /* EventSelect[11:8] */
#define AMD_EVTSEL_GUEST_ONLY   BIT_ULL(40)
#define AMD_EVTSEL_HOST_ONLY    BIT_ULL(41)
#define AMD_EVTSEL_HG           (AMD_EVTSEL_GUEST_ONLY | AMD_EVTSEL_HOST_ONLY)
/*
 * What a guest write keeps: bits 35:0 but for reserved 19 and 21.  This
 * is KVM's reserved mask 0xfffffff000280000: for a guest without SVM,
 * HostOnly/GuestOnly belong to the hypervisor and are dropped like any
 * reserved bit.  A vCPU with SVM (cfg.amd_host_guest) keeps them.
 */
#define AMD_EVTSEL_KEEP         (GENMASK_ULL(35, 0) & \
                                 ~(BIT_ULL(19) | BIT_ULL(21)))

/* CPUID (APM Vol. 3 Appendix E). */
#define CPUID_80000001_ECX_PERFCTR_CORE BIT_ULL(23)
#define CPUID_80000022_EAX_PERFMON_V2   BIT_ULL(0)
#define CPUID_80000022_EBX_NUM_CORE     GENMASK_ULL(3, 0)
#define AMD_K7_COUNTERS         4

static const VpmuMsrRange amd_ranges[] = {
    { 0xc0000300, 1, VPMU_MSR_GLOBAL_STATUS },  /* PerfCntrGlobalStatus */
    { 0xc0000301, 1, VPMU_MSR_GLOBAL_CTRL },    /* PerfCntrGlobalCtl */
    { 0xc0000302, 1, VPMU_MSR_GLOBAL_OVF_CTRL }, /* PerfCntrGlobalStatusClr */
    { 0xc0000303, 1, VPMU_MSR_GLOBAL_STATUS_SET }, /* ...StatusSet */
    { 0xc0010000, 4, VPMU_MSR_EVTSEL },         /* K7 PerfEvtSel0-3 */
    { 0xc0010004, 4, VPMU_MSR_PMC },            /* K7 PerfCtr0-3 */
    { 0xc0010200, 12, VPMU_MSR_F15H_CTL_CTR },  /* PERF_CTL/CTR 0-5 pairs */
};

/* Linux arch/x86/events/amd/core.c amd_perfmon_event_map. */
static const VpmuEventCode amd_arch_events[] = {
    [VPMU_EVENT_CYCLES] = { 0x076, 0x00, true },
    [VPMU_EVENT_INSTRUCTIONS] = { 0x0c0, 0x00, true },
    [VPMU_EVENT_REF_CYCLES] = { 0, 0, false },
    [VPMU_EVENT_LLC_REFERENCES] = { 0x07d, 0x07, true },
    [VPMU_EVENT_LLC_MISSES] = { 0x07e, 0x07, true },
    [VPMU_EVENT_BRANCHES] = { 0x0c2, 0x00, true },
    [VPMU_EVENT_BRANCH_MISSES] = { 0x0c3, 0x00, true },
    [VPMU_EVENT_TOPDOWN_SLOTS] = { 0, 0, false },
};
_Static_assert(VPMU_ARRAY_SIZE(amd_arch_events) == VPMU_EVENT__COUNT,
               "one entry per architectural event");

static VpmuAmdLevel level(const VpmuPmu *pmu)
{
    return pmu->cfg.amd_level;
}

static uint64_t counters_mask(const VpmuPmu *pmu)
{
    return GENMASK_ULL(pmu->nr_gp - 1, 0);
}

static uint64_t evtsel_keep(const VpmuPmu *pmu)
{
    return AMD_EVTSEL_KEEP | (pmu->cfg.amd_host_guest ? AMD_EVTSEL_HG : 0);
}

static int amd_check(const VpmuConfig *cfg, char *err, size_t errlen)
{
    static const unsigned fixed_gp[] = {
        [VPMU_AMD_K7] = AMD_K7_COUNTERS,
        [VPMU_AMD_PERFCTR_CORE] = VPMU_AMD_MAX_GP,
    };

    if (cfg->amd_level < VPMU_AMD_K7 || cfg->amd_level > VPMU_AMD_PERFMON_V2) {
        return vpmu_err(err, errlen, "amd_level: %d is not 1-3",
                        (int)cfg->amd_level);
    }
    if (cfg->intel_version || cfg->pdcm || cfg->perf_capabilities) {
        return vpmu_err(err, errlen, "intel_version/pdcm/perf_capabilities: "
                        "Intel-only fields must be 0 for AMD");
    }
    if (cfg->amd_level != VPMU_AMD_PERFMON_V2 &&
        cfg->nr_gp != fixed_gp[cfg->amd_level]) {
        return vpmu_err(err, errlen, "nr_gp: level %d has exactly %u "
                        "counters, not %u", (int)cfg->amd_level,
                        fixed_gp[cfg->amd_level], cfg->nr_gp);
    }
    if (cfg->nr_gp < 1 || cfg->nr_gp > VPMU_AMD_MAX_GP) {
        return vpmu_err(err, errlen, "nr_gp: %u is not 1-%u", cfg->nr_gp,
                        VPMU_AMD_MAX_GP);
    }
    if (cfg->gp_width != VPMU_MAX_WIDTH) {
        return vpmu_err(err, errlen, "gp_width: AMD counters are 48 bits, "
                        "not %u", cfg->gp_width);
    }
    if (cfg->nr_fixed || cfg->fixed_width) {
        return vpmu_err(err, errlen, "nr_fixed/fixed_width: AMD has no "
                        "fixed counters");
    }
    return 0;
}

static bool amd_msr_exists(const VpmuConfig *cfg, VpmuMsrKind kind,
                           unsigned idx)
{
    switch (kind) {
    case VPMU_MSR_EVTSEL:
    case VPMU_MSR_PMC:
        return idx < cfg->nr_gp;
    case VPMU_MSR_F15H_CTL_CTR:
        /* Even MSRs are PERF_CTLi, odd ones PERF_CTRi: counter idx / 2. */
        return cfg->amd_level >= VPMU_AMD_PERFCTR_CORE && idx / 2 < cfg->nr_gp;
    case VPMU_MSR_GLOBAL_STATUS:
    case VPMU_MSR_GLOBAL_CTRL:
    case VPMU_MSR_GLOBAL_OVF_CTRL:
    case VPMU_MSR_GLOBAL_STATUS_SET:
        return cfg->amd_level == VPMU_AMD_PERFMON_V2;
    default:
        return false;
    }
}

static int amd_rdmsr(VpmuPmu *pmu, VpmuMsrKind kind, unsigned idx,
                     uint64_t *val)
{
    switch (vpmu_msr_unalias(kind, &idx)) {
    case VPMU_MSR_EVTSEL:
        *val = pmu->gp[idx].ctl;
        return 0;
    case VPMU_MSR_PMC:
        *val = vpmu_counter_read(&pmu->gp[idx]);
        return 0;
    case VPMU_MSR_GLOBAL_STATUS:
        *val = vpmu_pmu_read_status(pmu);
        return 0;
    case VPMU_MSR_GLOBAL_CTRL:
        *val = pmu->global_ctrl;
        return 0;
    default:
        /* STATUS_CLR and STATUS_SET read as 0. */
        *val = 0;
        return 0;
    }
}

static int amd_wrmsr(VpmuPmu *pmu, VpmuMsrKind kind, unsigned idx,
                     uint64_t val)
{
    switch (vpmu_msr_unalias(kind, &idx)) {
    case VPMU_MSR_EVTSEL:
        vpmu_counter_set_ctl(&pmu->gp[idx], val & evtsel_keep(pmu));
        break;
    case VPMU_MSR_PMC:
        /* The 48-bit counter keeps the low 48 bits of the write. */
        vpmu_counter_write(&pmu->gp[idx], val);
        break;
    case VPMU_MSR_GLOBAL_CTRL:
        vpmu_pmu_set_global_ctrl(pmu, val & counters_mask(pmu));
        break;
    case VPMU_MSR_GLOBAL_OVF_CTRL:
        vpmu_pmu_clear_status(pmu, val & counters_mask(pmu));
        break;
    case VPMU_MSR_GLOBAL_STATUS_SET:
        vpmu_pmu_set_status(pmu, val & counters_mask(pmu));
        break;
    default:
        /* PerfCntrGlobalStatus is read-only: writes are ignored. */
        break;
    }
    return 0;
}

static int amd_rdpmc(VpmuPmu *pmu, uint32_t ecx, uint64_t *val)
{
    VpmuCounter *c;

    /* APM RDPMC: ECX selects a core counter; anything else #GP. */
    if (ecx & VPMU_COUNTER_FIXED) {
        return -EINVAL;
    }
    c = vpmu_counter_by_id(pmu, ecx);
    if (!c) {
        return -EINVAL;
    }
    *val = vpmu_counter_read(c) & c->mask;
    return 0;
}

static int amd_cpuid(const VpmuPmu *pmu, uint32_t leaf, uint32_t subleaf,
                     uint32_t regs[4])
{
    bool v2 = level(pmu) == VPMU_AMD_PERFMON_V2;

    switch (leaf) {
    case 0x80000000:
        if (!v2) {
            return -ENOENT;
        }
        regs[0] = regs[0] < 0x80000022 ? 0x80000022 : regs[0];
        return 0;
    case 0x80000001:
        regs[2] &= ~(uint32_t)CPUID_80000001_ECX_PERFCTR_CORE;
        if (level(pmu) >= VPMU_AMD_PERFCTR_CORE) {
            regs[2] |= (uint32_t)CPUID_80000001_ECX_PERFCTR_CORE;
        }
        return 0;
    case 0x80000022:
    case 0xa:
        memset(regs, 0, 4 * sizeof(regs[0]));
        if (leaf == 0x80000022 && v2) {
            regs[0] = CPUID_80000022_EAX_PERFMON_V2;
            regs[1] = pmu->nr_gp & CPUID_80000022_EBX_NUM_CORE;
        }
        return 0;
    default:
        return -ENOENT;
    }
}

/*
 * APM Vol. 2 13.2.1 (PerfEvtSeln HostOnly/GuestOnly): GuestOnly alone
 * counts in guest mode only, HostOnly alone in host mode only, both or
 * neither in both modes.  The bits are only in ctl with amd_host_guest.
 */
static void amd_decode(const VpmuCounter *c, VpmuCtl *out)
{
    uint64_t hg = c->ctl & AMD_EVTSEL_HG;

    vpmu_decode_evtsel(c->ctl, VPMU_EVTSEL_EVENT | AMD_EVTSEL_EVENT_HI,
                       amd_arch_events, out);
    out->host = hg != AMD_EVTSEL_GUEST_ONLY;
    out->guest = hg != AMD_EVTSEL_HOST_ONLY;
}

static bool amd_has_global(const VpmuConfig *cfg)
{
    return cfg->amd_level == VPMU_AMD_PERFMON_V2;
}

/* AMD has no Freeze_PerfMon_On_PMI for core counters. */
static void amd_freeze_on_pmi(VpmuPmu *pmu)
{
}

static bool amd_frozen(const VpmuPmu *pmu)
{
    return false;
}

static int amd_check_state(const VpmuPmu *pmu, VpmuMsrKind kind,
                           unsigned idx, uint64_t val)
{
    uint64_t allowed;

    switch (kind) {
    case VPMU_MSR_EVTSEL:
        allowed = evtsel_keep(pmu);
        break;
    case VPMU_MSR_GLOBAL_CTRL:
    case VPMU_MSR_GLOBAL_STATUS:
        /* Kept at its reset value without PerfMonV2; never wider. */
        allowed = counters_mask(pmu);
        break;
    default:
        allowed = 0;
        break;
    }
    return (val & ~allowed) ? -EINVAL : 0;
}

const VpmuArchOps vpmu_amd_ops = {
    .name = "amd",
    .ranges = amd_ranges,
    .nr_ranges = VPMU_ARRAY_SIZE(amd_ranges),
    .check = amd_check,
    .msr_exists = amd_msr_exists,
    .rdmsr = amd_rdmsr,
    .wrmsr = amd_wrmsr,
    .rdpmc = amd_rdpmc,
    .cpuid = amd_cpuid,
    .decode = amd_decode,
    .has_global = amd_has_global,
    .freeze_on_pmi = amd_freeze_on_pmi,
    .frozen = amd_frozen,
    .check_state = amd_check_state,
};
