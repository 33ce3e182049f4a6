/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Intel architectural performance monitoring, versions 1-5
 * (SDM Vol. 3B ch. 20.2, MSRs in Vol. 4 Table 2-2): the MSR map, the
 * event encodings, the reserved-bit rules and the CPUID leaves.  Intel
 * #GPs on reserved bits, on read-only MSRs and on MSRs of absent counters.
 */
#include "pmu-priv.h"

#include <string.h>

/* IA32_PERF_GLOBAL_STATUS bits beyond the counters (SDM Figure 20-12). */
#define STATUS_LBR_FRZ          BIT_ULL(58)     /* v4 */
#define STATUS_CTR_FRZ          BIT_ULL(59)     /* v4 */
#define STATUS_OVF_BUF          BIT_ULL(62)     /* PEBS buffer, never set */
#define STATUS_COND_CHGD        BIT_ULL(63)

/* IA32_DEBUGCTL (SDM Vol. 3B 18.4.1, Figure 18-3). */
#define DEBUGCTL_BTF            BIT_ULL(1)
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI BIT_ULL(12)
#define DEBUGCTL_FREEZE_WHILE_SMM BIT_ULL(14)

/* IA32_PERF_GLOBAL_INUSE (SDM Figure 20-16). */
#define INUSE_EVTSEL_BITS       GENMASK_ULL(17, 0)
#define INUSE_PMI               BIT_ULL(63)

/* CPUID.0AH (SDM Vol. 2A CPUID, Table 3-8). */
#define CPUID_A_EAX_NR_GP_SHIFT 8
#define CPUID_A_EAX_WIDTH_SHIFT 16
#define CPUID_A_EAX_EBXLEN_SHIFT 24
#define CPUID_A_EDX_WIDTH_SHIFT 5
#define CPUID_A_EDX_ANY_DEPRECATED BIT_ULL(15)
#define CPUID_1_ECX_PDCM        BIT_ULL(15)

/* RDPMC ECX (SDM Vol. 2B RDPMC). */
#define RDPMC_FAST              BIT_ULL(31)
#define RDPMC_FIXED             BIT_ULL(30)
#define RDPMC_TYPE_RESERVED     GENMASK_ULL(29, 16)
#define RDPMC_INDEX             GENMASK_ULL(15, 0)

/* Sorted by base: vpmu_config_msr_spans() merges in this order. */
static const VpmuMsrRange intel_ranges[] = {
    { 0x0c1, 8, VPMU_MSR_PMC },                 /* IA32_PMC0-7 */
    { 0x186, 8, VPMU_MSR_EVTSEL },              /* IA32_PERFEVTSEL0-7 */
    { 0x1d9, 1, VPMU_MSR_DEBUGCTL },            /* IA32_DEBUGCTL */
    { 0x309, 4, VPMU_MSR_FIXED_CTR },           /* IA32_FIXED_CTR0-3 */
    { 0x345, 1, VPMU_MSR_PERF_CAPABILITIES },   /* IA32_PERF_CAPABILITIES */
    { 0x38d, 1, VPMU_MSR_FIXED_CTR_CTRL },
    { 0x38e, 1, VPMU_MSR_GLOBAL_STATUS },
    { 0x38f, 1, VPMU_MSR_GLOBAL_CTRL },
    { 0x390, 1, VPMU_MSR_GLOBAL_OVF_CTRL },     /* v4: GLOBAL_STATUS_RESET */
    { 0x391, 1, VPMU_MSR_GLOBAL_STATUS_SET },
    { 0x392, 1, VPMU_MSR_GLOBAL_INUSE },
    { 0x4c1, 8, VPMU_MSR_A_PMC },               /* IA32_A_PMC0-7 */
};

/*
 * By VpmuArchEvent: the architectural events of SDM Table 20-1 (the
 * CPUID.0AH:EBX bits), then the catalogue's model-specific events as
 * Skylake encodes them (SDM Vol. 3B 20.3.8 and Intel's Skylake event
 * list; docs/events.md).
 */
static const VpmuEventCode intel_events[] = {
    [VPMU_EVENT_CYCLES] = { 0x3c, 0x00, true },
    [VPMU_EVENT_INSTRUCTIONS] = { 0xc0, 0x00, true },
    [VPMU_EVENT_REF_CYCLES] = { 0x3c, 0x01, true },
    [VPMU_EVENT_LLC_REFERENCES] = { 0x2e, 0x4f, true },
    [VPMU_EVENT_LLC_MISSES] = { 0x2e, 0x41, true },
    [VPMU_EVENT_BRANCHES] = { 0xc4, 0x00, true },
    [VPMU_EVENT_BRANCH_MISSES] = { 0xc5, 0x00, true },
    [VPMU_EVENT_TOPDOWN_SLOTS] = { 0xa4, 0x01, true },
    /* BR_INST_RETIRED.CONDITIONAL, .NOT_TAKEN, .NEAR_TAKEN, ... */
    [VPMU_EVENT_BR_COND] = { 0xc4, 0x01, true },
    [VPMU_EVENT_BR_NTAKEN] = { 0xc4, 0x10, true },
    [VPMU_EVENT_BR_TAKEN] = { 0xc4, 0x20, true },
    [VPMU_EVENT_BR_CALL] = { 0xc4, 0x02, true },
    [VPMU_EVENT_BR_RET] = { 0xc4, 0x08, true },
    [VPMU_EVENT_BR_FAR] = { 0xc4, 0x40, true },
    /* MEM_INST_RETIRED.ALL_LOADS, .ALL_STORES */
    [VPMU_EVENT_LOADS] = { 0xd0, 0x81, true },
    [VPMU_EVENT_STORES] = { 0xd0, 0x82, true },
    /* HW_INTERRUPTS.RECEIVED */
    [VPMU_EVENT_HW_INTERRUPTS] = { 0xcb, 0x01, true },
};
_Static_assert(VPMU_ARRAY_SIZE(intel_events) == VPMU_EVENT__NAMED,
               "one entry per named event");
_Static_assert(VPMU_ARRAY_SIZE(intel_ranges) <= VPMU_MAX_RANGES,
               "the PMU keeps one bitmap per range");

/*
 * Event 0x00, umask 0x03: the pseudo-encoding of unhalted reference
 * cycles that Linux perf programs (intel_perfmon_event_map) for fixed
 * counter 2 and that KVM counts as reference cycles on any counter
 * (PERF_COUNT_HW_REF_CPU_CYCLES), as kvm-unit-tests x86/pmu expects.
 */
static const VpmuEventAlias intel_aliases[] = {
    { 0x00, 0x03, VPMU_EVENT_REF_CYCLES },
};

/* Fixed counter i counts (SDM 20.2.2 Table 20-2). */
static const VpmuArchEvent intel_fixed_events[] = {
    VPMU_EVENT_INSTRUCTIONS, VPMU_EVENT_CYCLES, VPMU_EVENT_REF_CYCLES,
    VPMU_EVENT_TOPDOWN_SLOTS,
};

_Static_assert(VPMU_ARRAY_SIZE(intel_fixed_events) == VPMU_MAX_FIXED,
               "one event per fixed counter");

static unsigned version(const VpmuPmu *pmu)
{
    return pmu->cfg.intel_version;
}

/* AnyThread exists from v3; v5 deprecates it (CPUID.0AH:EDX[15]). */
static bool anythread_ok(const VpmuPmu *pmu)
{
    return version(pmu) == 3 || version(pmu) == 4;
}

static uint64_t counters_mask(const VpmuPmu *pmu)
{
    uint64_t m = 0;

    if (pmu->nr_gp) {
        m |= GENMASK_ULL(pmu->nr_gp - 1, 0);
    }
    if (pmu->nr_fixed) {
        m |= GENMASK_ULL(32 + pmu->nr_fixed - 1, 32);
    }
    return m;
}

static uint64_t evtsel_reserved(const VpmuPmu *pmu)
{
    /* Bits 63:32 (no TSX IN_TX/IN_TXCP), AnyThread when not supported. */
    return GENMASK_ULL(63, 32) | (anythread_ok(pmu) ? 0 : VPMU_EVTSEL_ANY);
}

static uint64_t fixed_ctrl_writable(const VpmuPmu *pmu)
{
    uint64_t field = VPMU_FIXED_CTRL_EN | VPMU_FIXED_CTRL_PMI |
                     (anythread_ok(pmu) ? VPMU_FIXED_CTRL_ANY : 0);
    uint64_t m = 0;

    for (unsigned i = 0; i < pmu->nr_fixed; i++) {
        m |= field << (VPMU_FIXED_CTRL_BITS * i);
    }
    return m;
}

static uint64_t status_reset_writable(const VpmuPmu *pmu)
{
    uint64_t m = counters_mask(pmu) | STATUS_OVF_BUF | STATUS_COND_CHGD;

    return version(pmu) >= 4 ? m | STATUS_LBR_FRZ | STATUS_CTR_FRZ : m;
}

static uint64_t status_set_writable(const VpmuPmu *pmu)
{
    return status_reset_writable(pmu) & ~STATUS_COND_CHGD;
}

static uint64_t debugctl_writable(const VpmuPmu *pmu)
{
    uint64_t m = DEBUGCTL_BTF | DEBUGCTL_FREEZE_WHILE_SMM;

    return version(pmu) >= 2 ? m | DEBUGCTL_FREEZE_PERFMON_ON_PMI : m;
}

static int intel_check(const VpmuConfig *cfg, char *err, size_t errlen)
{
    unsigned max_fixed = cfg->intel_version == 5 ? VPMU_INTEL_V5_MAX_FIXED
                         : cfg->intel_version >= 2 ? VPMU_INTEL_MAX_FIXED : 0;

    if (cfg->intel_version < 1 || cfg->intel_version > 5) {
        return vpmu_err(err, errlen, "intel_version: %u is not 1-5",
                        cfg->intel_version);
    }
    if (cfg->amd_level) {
        return vpmu_err(err, errlen, "amd_level: must be 0 for Intel");
    }
    if (cfg->amd_host_guest) {
        return vpmu_err(err, errlen, "amd_host_guest: AMD-only, must be "
                        "false for Intel");
    }
    if (cfg->nr_gp > VPMU_INTEL_MAX_GP) {
        return vpmu_err(err, errlen, "nr_gp: %u exceeds %u", cfg->nr_gp,
                        VPMU_INTEL_MAX_GP);
    }
    if (cfg->nr_fixed > max_fixed) {
        return vpmu_err(err, errlen, "nr_fixed: %u exceeds %u for version %u",
                        cfg->nr_fixed, max_fixed, cfg->intel_version);
    }
    if (cfg->gp_width < VPMU_MIN_WIDTH || cfg->gp_width > VPMU_MAX_WIDTH) {
        return vpmu_err(err, errlen, "gp_width: %u is not %u-%u",
                        cfg->gp_width, VPMU_MIN_WIDTH, VPMU_MAX_WIDTH);
    }
    if (cfg->nr_fixed ? cfg->fixed_width < VPMU_MIN_WIDTH ||
                        cfg->fixed_width > VPMU_MAX_WIDTH
                      : cfg->fixed_width != 0) {
        return vpmu_err(err, errlen, "fixed_width: %u is not %s",
                        cfg->fixed_width, cfg->nr_fixed ? "32-48" :
                        "0 (no fixed counters)");
    }
    if (cfg->perf_capabilities & ~VPMU_PERF_CAP_FW_WRITE) {
        return vpmu_err(err, errlen, "perf_capabilities: bits 0x%llx are not "
                        "supported (only FW_WRITE, bit 13)",
                        (unsigned long long)(cfg->perf_capabilities &
                                             ~VPMU_PERF_CAP_FW_WRITE));
    }
    if (cfg->perf_capabilities && !cfg->pdcm) {
        return vpmu_err(err, errlen, "perf_capabilities: needs pdcm");
    }
    return 0;
}

static bool intel_msr_exists(const VpmuConfig *cfg, VpmuMsrKind kind,
                             unsigned idx)
{
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_EVTSEL:
        return idx < cfg->nr_gp;
    case VPMU_MSR_A_PMC:
        return idx < cfg->nr_gp &&
               (cfg->perf_capabilities & VPMU_PERF_CAP_FW_WRITE);
    case VPMU_MSR_FIXED_CTR:
        return idx < cfg->nr_fixed;
    case VPMU_MSR_FIXED_CTR_CTRL:
    case VPMU_MSR_GLOBAL_STATUS:
    case VPMU_MSR_GLOBAL_CTRL:
    case VPMU_MSR_GLOBAL_OVF_CTRL:
        return cfg->intel_version >= 2;
    case VPMU_MSR_GLOBAL_STATUS_SET:
    case VPMU_MSR_GLOBAL_INUSE:
        return cfg->intel_version >= 4;
    case VPMU_MSR_PERF_CAPABILITIES:
        return cfg->pdcm;
    case VPMU_MSR_DEBUGCTL:
        return true;
    default:
        return false;
    }
}

static uint64_t inuse_read(const VpmuPmu *pmu)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < pmu->nr_gp; i++) {
        uint64_t ctl = pmu->gp[i].ctl;

        v |= (ctl & INUSE_EVTSEL_BITS) ? BIT_ULL(i) : 0;
        v |= (ctl & VPMU_EVTSEL_INT) ? INUSE_PMI : 0;
    }
    for (unsigned i = 0; i < pmu->nr_fixed; i++) {
        uint64_t ctl = pmu->fixed[i].ctl;

        v |= (ctl & VPMU_FIXED_CTRL_EN) ? BIT_ULL(32 + i) : 0;
        v |= (ctl & VPMU_FIXED_CTRL_PMI) ? INUSE_PMI : 0;
    }
    return v;
}

static uint64_t intel_read_only(const VpmuPmu *pmu, VpmuMsrKind kind)
{
    return kind == VPMU_MSR_GLOBAL_INUSE ? inuse_read(pmu)
                                         : pmu->cfg.perf_capabilities;
}

/* The bits a write may set, for the kinds that take a checked value. */
static uint64_t intel_writable(const VpmuPmu *pmu, VpmuMsrKind kind)
{
    switch (kind) {
    case VPMU_MSR_PMC:
        return ~0ull;   /* sign-extended from bit 31, then masked */
    case VPMU_MSR_A_PMC:
        return pmu->gp[0].mask;
    case VPMU_MSR_FIXED_CTR:
        return pmu->fixed[0].mask;
    case VPMU_MSR_EVTSEL:
        return ~evtsel_reserved(pmu);
    case VPMU_MSR_FIXED_CTR_CTRL:
        return fixed_ctrl_writable(pmu);
    case VPMU_MSR_GLOBAL_CTRL:
        return counters_mask(pmu);
    case VPMU_MSR_GLOBAL_OVF_CTRL:
        return status_reset_writable(pmu);
    case VPMU_MSR_GLOBAL_STATUS_SET:
        return status_set_writable(pmu);
    case VPMU_MSR_DEBUGCTL:
        return debugctl_writable(pmu);
    default:
        return 0;       /* read-only: STATUS, INUSE, PERF_CAPABILITIES */
    }
}

static int intel_sanitize(const VpmuPmu *pmu, VpmuMsrKind kind,
                          unsigned idx, uint64_t *val)
{
    /*
     * Read-only MSRs take no write at all (a zero mask alone is not
     * read-only: FIXED_CTR_CTRL without fixed counters takes 0).
     */
    if (kind == VPMU_MSR_GLOBAL_STATUS || kind == VPMU_MSR_GLOBAL_INUSE ||
        kind == VPMU_MSR_PERF_CAPABILITIES ||
        (*val & ~intel_writable(pmu, kind))) {
        return -EINVAL;
    }
    if (kind == VPMU_MSR_PMC) {
        /* SDM 20.2.5: legacy writes take EAX sign-extended. */
        *val = vpmu_sext32(*val);
    }
    return 0;
}

static int intel_rdpmc_counter(const VpmuPmu *pmu, uint32_t ecx,
                               uint32_t *id)
{
    unsigned idx = ecx & RDPMC_INDEX;

    /* Fast reads (ECX[31]) are not architectural; ECX[29:16] must be 0. */
    if (ecx & (RDPMC_FAST | RDPMC_TYPE_RESERVED)) {
        return -EINVAL;
    }
    *id = (ecx & RDPMC_FIXED) ? VPMU_COUNTER_FIXED_ID(idx)
                              : VPMU_COUNTER_GP(idx);
    return 0;
}

static void cpuid_leaf_a(const VpmuPmu *pmu, uint32_t regs[4])
{
    const VpmuConfig *cfg = &pmu->cfg;
    unsigned len = cfg->intel_version >= 5 ? 8 : 7;

    regs[0] = cfg->intel_version | cfg->nr_gp << CPUID_A_EAX_NR_GP_SHIFT |
              cfg->gp_width << CPUID_A_EAX_WIDTH_SHIFT |
              len << CPUID_A_EAX_EBXLEN_SHIFT;
    /* EBX: a set bit means the event is NOT available. */
    regs[1] = ~cfg->events & (uint32_t)GENMASK_ULL(len - 1, 0);
    regs[2] = cfg->intel_version >= 5 && cfg->nr_fixed ?
              (uint32_t)GENMASK_ULL(cfg->nr_fixed - 1, 0) : 0;
    regs[3] = 0;
    if (cfg->intel_version >= 2) {
        regs[3] = cfg->nr_fixed | cfg->fixed_width << CPUID_A_EDX_WIDTH_SHIFT;
    }
    if (cfg->intel_version >= 5) {
        regs[3] |= CPUID_A_EDX_ANY_DEPRECATED;
    }
}

static int intel_cpuid(const VpmuPmu *pmu, uint32_t leaf, uint32_t subleaf,
                       uint32_t regs[4])
{
    switch (leaf) {
    case 0x0:
        /* The maximum basic leaf must reach 0AH for guests to look. */
        regs[0] = regs[0] < 0xa ? 0xa : regs[0];
        return 0;
    case 0x1:
        regs[2] &= ~(uint32_t)CPUID_1_ECX_PDCM;
        regs[2] |= pmu->cfg.pdcm ? (uint32_t)CPUID_1_ECX_PDCM : 0;
        return 0;
    case 0xa:
        cpuid_leaf_a(pmu, regs);
        return 0;
    default:
        return -ENOENT;
    }
}

/*
 * DEBUGCTL.Freeze_PerfMon_On_PMI exists from v2; v4 freezes through
 * GLOBAL_STATUS.CTR_Frz, v2/v3 by clearing GLOBAL_CTRL (SDM 20.2.4.1).
 */
static void intel_rules(const VpmuConfig *cfg, VpmuRules *out)
{
    out->freeze_on_pmi = cfg->intel_version >= 2 ?
                         DEBUGCTL_FREEZE_PERFMON_ON_PMI : 0;
    out->freeze_status = cfg->intel_version >= 4 ? STATUS_CTR_FRZ : 0;
}

const VpmuArchOps vpmu_intel_ops = {
    .name = "intel",
    .ranges = intel_ranges,
    .nr_ranges = VPMU_ARRAY_SIZE(intel_ranges),
    .event_bits = VPMU_EVTSEL_EVENT,
    .events = intel_events,
    .aliases = intel_aliases,
    .nr_aliases = VPMU_ARRAY_SIZE(intel_aliases),
    .fixed_events = intel_fixed_events,
    .check = intel_check,
    .msr_exists = intel_msr_exists,
    .rules = intel_rules,
    .sanitize = intel_sanitize,
    .read_only = intel_read_only,
    .rdpmc_counter = intel_rdpmc_counter,
    .cpuid = intel_cpuid,
};
