/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD core performance counters: legacy K7, PerfCtrExtCore and PerfMonV2
 * (APM Vol. 2 13.2): the MSR map, the event encodings, the reserved-bit
 * rules and the CPUID leaves.  AMD drops reserved bits silently instead
 * of #GP; only MSRs that do not exist fault.  Counters are always 48 bits.
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
#define CPUID_80000001_ECX_PERFCTR_CORE_BIT 23
#define CPUID_80000001_ECX_PERFCTR_CORE \
    BIT_ULL(CPUID_80000001_ECX_PERFCTR_CORE_BIT)
#define CPUID_80000022_EAX_PERFMON_V2   BIT_ULL(0)
#define CPUID_80000022_EBX_NUM_CORE_BITS 4
#define CPUID_80000022_EBX_NUM_CORE     \
    GENMASK_ULL(CPUID_80000022_EBX_NUM_CORE_BITS - 1, 0)
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

/*
 * By VpmuArchEvent: Linux arch/x86/events/amd/core.c
 * amd_perfmon_event_map, then the catalogue's model-specific events as
 * Zen encodes them (PPR for family 17h, "Core Performance Monitor
 * Counters"; docs/events.md).  Zen has no near-call or not-taken event.
 */
static const VpmuEventCode amd_events[] = {
    [VPMU_EVENT_CYCLES] = { 0x076, 0x00, true },
    [VPMU_EVENT_INSTRUCTIONS] = { 0x0c0, 0x00, true },
    [VPMU_EVENT_REF_CYCLES] = { 0, 0, false },
    [VPMU_EVENT_LLC_REFERENCES] = { 0x07d, 0x07, true },
    [VPMU_EVENT_LLC_MISSES] = { 0x07e, 0x07, true },
    [VPMU_EVENT_BRANCHES] = { 0x0c2, 0x00, true },
    [VPMU_EVENT_BRANCH_MISSES] = { 0x0c3, 0x00, true },
    [VPMU_EVENT_TOPDOWN_SLOTS] = { 0, 0, false },
    [VPMU_EVENT_BR_COND] = { 0x0d1, 0x00, true },   /* ExRetCond */
    [VPMU_EVENT_BR_NTAKEN] = { 0, 0, false },
    [VPMU_EVENT_BR_TAKEN] = { 0x0c4, 0x00, true },  /* ExRetBrnTkn */
    [VPMU_EVENT_BR_CALL] = { 0, 0, false },
    [VPMU_EVENT_BR_RET] = { 0x0c8, 0x00, true },    /* ExRetNearRet */
    [VPMU_EVENT_BR_FAR] = { 0x0c6, 0x00, true },    /* ExRetBrnFar */
    /*
     * Zen has no retired-load or retired-store event: LsDispatch with
     * LdDispatch or StoreDispatch plus LdStDispatch (unit masks add up)
     * counts the ops that load, or store, including load-op-store ones.
     */
    [VPMU_EVENT_LOADS] = { 0x029, 0x05, true },
    [VPMU_EVENT_STORES] = { 0x029, 0x06, true },
    [VPMU_EVENT_HW_INTERRUPTS] = { 0x02c, 0x00, true }, /* LsIntTaken */
};
_Static_assert(VPMU_ARRAY_SIZE(amd_events) == VPMU_EVENT__NAMED,
               "one entry per named event");
_Static_assert(VPMU_ARRAY_SIZE(amd_ranges) <= VPMU_MAX_RANGES,
               "the PMU keeps one bitmap per range");

static uint64_t counters_mask(const VpmuConfig *cfg)
{
    return GENMASK_ULL(cfg->nr_gp - 1, 0);
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

static int amd_cpuid(const VpmuConfig *cfg, uint32_t leaf, uint32_t subleaf,
                     uint32_t regs[4])
{
    bool v2 = cfg->amd_level == VPMU_AMD_PERFMON_V2;

    switch (leaf) {
    case 0x80000000:
        if (!v2) {
            return -ENOENT;
        }
        regs[0] = regs[0] < 0x80000022 ? 0x80000022 : regs[0];
        return 0;
    case 0x80000001:
        regs[2] &= ~(uint32_t)CPUID_80000001_ECX_PERFCTR_CORE;
        if (cfg->amd_level >= VPMU_AMD_PERFCTR_CORE) {
            regs[2] |= (uint32_t)CPUID_80000001_ECX_PERFCTR_CORE;
        }
        return 0;
    case 0x80000022:
    case 0xa:
        memset(regs, 0, 4 * sizeof(regs[0]));
        if (leaf == 0x80000022 && v2) {
            regs[0] = CPUID_80000022_EAX_PERFMON_V2;
            regs[1] = cfg->nr_gp & CPUID_80000022_EBX_NUM_CORE;
        }
        return 0;
    default:
        return -ENOENT;
    }
}

/*
 * The MSRs of a config and the bits a write keeps (KVM's
 * amd_pmu_refresh()).  Reserved bits are dropped, never a #GP: every
 * write of an existing MSR is legal, and one of PerfCntrGlobalStatus
 * (read-only) is ignored.  The HostOnly/GuestOnly bits are only kept
 * with amd_host_guest; the core decodes them (APM Vol. 2 13.2.1).  AMD
 * has no Freeze_PerfMon_On_PMI for core counters.
 */
static void amd_rules(const VpmuConfig *cfg, VpmuRules *out)
{
    unsigned v2 = cfg->amd_level == VPMU_AMD_PERFMON_V2;
    uint64_t evtsel = AMD_EVTSEL_KEEP |
                      (cfg->amd_host_guest ? AMD_EVTSEL_HG : 0);

    out->freeze_on_pmi = 0;
    out->freeze_status = 0;
    vpmu_rule_set(out, VPMU_MSR_EVTSEL, cfg->nr_gp, evtsel, 0);
    vpmu_rule_set(out, VPMU_MSR_PMC, cfg->nr_gp,
                  vpmu_width_mask(cfg->gp_width), 0);
    /* Even MSRs are PERF_CTLi, odd ones PERF_CTRi: nr_gp pairs. */
    vpmu_rule_set(out, VPMU_MSR_F15H_CTL_CTR,
                  cfg->amd_level >= VPMU_AMD_PERFCTR_CORE ? cfg->nr_gp : 0,
                  0, 0);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_STATUS, v2, 0, VPMU_MSR_READ_ONLY);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_CTRL, v2, counters_mask(cfg), 0);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_OVF_CTRL, v2, counters_mask(cfg), 0);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_STATUS_SET, v2, counters_mask(cfg), 0);
}

/*
 * Where CPUID reports the config (APM Vol. 3 Appendix E): PerfCtrExtCore
 * (the F15H MSRs), PerfMonV2 (the global MSRs) and, with it, the number
 * of core counters.
 */
static const VpmuCpuidField amd_cpuid_fields[] = {
    { 0x80000001, VPMU_ECX, CPUID_80000001_ECX_PERFCTR_CORE_BIT, 1,
      VPMU_CPUID_MSR_EXISTS, VPMU_MSR_F15H_CTL_CTR, VPMU_AMD_K7 },
    /* 0x80000022.EAX[0] PerfMonV2 */
    { 0x80000022, VPMU_EAX, 0, 1, VPMU_CPUID_MSR_EXISTS, VPMU_MSR_GLOBAL_CTRL,
      VPMU_AMD_K7 },
    { 0x80000022, VPMU_EBX, 0, CPUID_80000022_EBX_NUM_CORE_BITS,
      VPMU_CPUID_NR_GP, 0, VPMU_AMD_PERFMON_V2 },
};

const VpmuArchOps vpmu_amd_ops = {
    .name = "amd",
    .ranges = amd_ranges,
    .nr_ranges = VPMU_ARRAY_SIZE(amd_ranges),
    .event_bits = VPMU_EVTSEL_EVENT | AMD_EVTSEL_EVENT_HI,
    .events = amd_events,
    .guest_only = AMD_EVTSEL_GUEST_ONLY,
    .host_only = AMD_EVTSEL_HOST_ONLY,
    /* APM RDPMC: ECX selects a core counter; anything else #GP. */
    .rdpmc_reserved = (uint32_t)~GENMASK_ULL(15, 0),
    .cpuid_fields = amd_cpuid_fields,
    .nr_cpuid_fields = VPMU_ARRAY_SIZE(amd_cpuid_fields),
    .check = amd_check,
    .rules = amd_rules,
    .cpuid = amd_cpuid,
};
