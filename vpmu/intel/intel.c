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

/* CPUID.0AH (SDM Vol. 2A CPUID, Table 3-8). */
#define CPUID_A_EAX_NR_GP_SHIFT 8
#define CPUID_A_EAX_WIDTH_SHIFT 16
#define CPUID_A_EAX_EBXLEN_SHIFT 24
#define CPUID_A_EDX_WIDTH_SHIFT 5
#define CPUID_A_EDX_ANY_DEPRECATED BIT_ULL(15)
#define CPUID_1_ECX_PDCM_BIT    15
#define CPUID_1_ECX_PDCM        BIT_ULL(CPUID_1_ECX_PDCM_BIT)

/*
 * RDPMC ECX (SDM Vol. 2B RDPMC): ECX[30] selects the fixed counters,
 * ECX[15:0] the index; fast reads (ECX[31]) are not architectural and
 * ECX[29:16] must be 0.
 */
#define RDPMC_FAST              BIT_ULL(31)
#define RDPMC_FIXED             BIT_ULL(30)
#define RDPMC_TYPE_RESERVED     GENMASK_ULL(29, 16)

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

/* AnyThread exists from v3; v5 deprecates it (CPUID.0AH:EDX[15]). */
static bool anythread_ok(const VpmuConfig *cfg)
{
    return cfg->intel_version == 3 || cfg->intel_version == 4;
}

/* GLOBAL_CTRL/STATUS: GP i at bit i, fixed i at bit 32 + i (Figure 20-8). */
static uint64_t counters_mask(const VpmuConfig *cfg)
{
    uint64_t m = 0;

    if (cfg->nr_gp) {
        m |= GENMASK_ULL(cfg->nr_gp - 1, 0);
    }
    if (cfg->nr_fixed) {
        m |= GENMASK_ULL(32 + cfg->nr_fixed - 1, 32);
    }
    return m;
}

static uint64_t evtsel_writable(const VpmuConfig *cfg)
{
    /* Bits 63:32 (no TSX IN_TX/IN_TXCP), AnyThread when not supported. */
    return ~(GENMASK_ULL(63, 32) | (anythread_ok(cfg) ? 0 : VPMU_EVTSEL_ANY));
}

static uint64_t fixed_ctrl_writable(const VpmuConfig *cfg)
{
    uint64_t field = VPMU_FIXED_CTRL_EN | VPMU_FIXED_CTRL_PMI |
                     (anythread_ok(cfg) ? VPMU_FIXED_CTRL_ANY : 0);
    uint64_t m = 0;

    for (unsigned i = 0; i < cfg->nr_fixed; i++) {
        m |= field << (VPMU_FIXED_CTRL_BITS * i);
    }
    return m;
}

static uint64_t status_reset_writable(const VpmuConfig *cfg)
{
    uint64_t m = counters_mask(cfg) | STATUS_OVF_BUF | STATUS_COND_CHGD;

    return cfg->intel_version >= 4 ? m | STATUS_LBR_FRZ | STATUS_CTR_FRZ : m;
}

static uint64_t debugctl_writable(const VpmuConfig *cfg)
{
    uint64_t m = DEBUGCTL_BTF | DEBUGCTL_FREEZE_WHILE_SMM;

    return cfg->intel_version >= 2 ? m | DEBUGCTL_FREEZE_PERFMON_ON_PMI : m;
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

static void cpuid_leaf_a(const VpmuConfig *cfg, uint32_t regs[4])
{
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

static int intel_cpuid(const VpmuConfig *cfg, uint32_t leaf,
                       uint32_t subleaf, uint32_t regs[4])
{
    switch (leaf) {
    case 0x0:
        /* The maximum basic leaf must reach 0AH for guests to look. */
        regs[0] = regs[0] < 0xa ? 0xa : regs[0];
        return 0;
    case 0x1:
        regs[2] &= ~(uint32_t)CPUID_1_ECX_PDCM;
        regs[2] |= cfg->pdcm ? (uint32_t)CPUID_1_ECX_PDCM : 0;
        return 0;
    case 0xa:
        cpuid_leaf_a(cfg, regs);
        return 0;
    default:
        return -ENOENT;
    }
}

/*
 * The MSRs of a config and the bits a write may set (KVM's
 * intel_pmu_refresh()): any other bit, and any write of a read-only MSR,
 * #GPs.  Legacy PMCx writes take EAX sign-extended, never a #GP (SDM
 * 20.2.5): their EDX is dropped.
 */
static void intel_msr_rules(const VpmuConfig *cfg, VpmuRules *out)
{
    unsigned v2 = cfg->intel_version >= 2, v4 = cfg->intel_version >= 4;
    bool fw = cfg->perf_capabilities & VPMU_PERF_CAP_FW_WRITE;
    const unsigned F = VPMU_MSR_FAULT, RO = F | VPMU_MSR_READ_ONLY;

    vpmu_rule_set(out, VPMU_MSR_PMC, cfg->nr_gp, GENMASK_ULL(31, 0),
                  VPMU_MSR_SEXT32);
    vpmu_rule_set(out, VPMU_MSR_EVTSEL, cfg->nr_gp, evtsel_writable(cfg), F);
    vpmu_rule_set(out, VPMU_MSR_A_PMC, fw ? cfg->nr_gp : 0,
                  vpmu_width_mask(cfg->gp_width), F);
    vpmu_rule_set(out, VPMU_MSR_FIXED_CTR, cfg->nr_fixed,
                  vpmu_width_mask(cfg->fixed_width), F);
    vpmu_rule_set(out, VPMU_MSR_FIXED_CTR_CTRL, v2, fixed_ctrl_writable(cfg),
                  F);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_STATUS, v2, 0, RO);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_CTRL, v2, counters_mask(cfg), F);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_OVF_CTRL, v2,
                  status_reset_writable(cfg), F);
    /* STATUS_SET sets what STATUS_RESET clears, but CondChgd. */
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_STATUS_SET, v4,
                  status_reset_writable(cfg) & ~STATUS_COND_CHGD, F);
    vpmu_rule_set(out, VPMU_MSR_GLOBAL_INUSE, v4, 0, RO);
    vpmu_rule_set(out, VPMU_MSR_PERF_CAPABILITIES, cfg->pdcm, 0, RO);
    vpmu_rule_set(out, VPMU_MSR_DEBUGCTL, 1, debugctl_writable(cfg), F);
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
    intel_msr_rules(cfg, out);
}

/* Where CPUID.0AH and CPUID.01H report the config (SDM Vol. 2A Table 3-8). */
static const VpmuCpuidField intel_cpuid_fields[] = {
    { 0xa, VPMU_EAX, 0, 8, VPMU_CPUID_VERSION, 0, 1 },
    { 0xa, VPMU_EAX, CPUID_A_EAX_NR_GP_SHIFT, 8, VPMU_CPUID_NR_GP, 0, 1 },
    { 0xa, VPMU_EAX, CPUID_A_EAX_WIDTH_SHIFT, 8, VPMU_CPUID_GP_WIDTH, 0, 1 },
    /* EDX[4:0] and EDX[12:5] from version 2 on */
    { 0xa, VPMU_EDX, 0, CPUID_A_EDX_WIDTH_SHIFT, VPMU_CPUID_NR_FIXED, 0, 2 },
    { 0xa, VPMU_EDX, CPUID_A_EDX_WIDTH_SHIFT, 8, VPMU_CPUID_FIXED_WIDTH, 0,
      2 },
    { 0x1, VPMU_ECX, CPUID_1_ECX_PDCM_BIT, 1, VPMU_CPUID_MSR_EXISTS,
      VPMU_MSR_PERF_CAPABILITIES, 1 },
};

const VpmuArchOps vpmu_intel_ops = {
    .name = "intel",
    .ranges = intel_ranges,
    .nr_ranges = VPMU_ARRAY_SIZE(intel_ranges),
    .event_bits = VPMU_EVTSEL_EVENT,
    .events = intel_events,
    .aliases = intel_aliases,
    .nr_aliases = VPMU_ARRAY_SIZE(intel_aliases),
    .fixed_events = intel_fixed_events,
    .rdpmc_reserved = RDPMC_FAST | RDPMC_TYPE_RESERVED,
    .rdpmc_fixed = RDPMC_FIXED,
    .cpuid_fields = intel_cpuid_fields,
    .nr_cpuid_fields = VPMU_ARRAY_SIZE(intel_cpuid_fields),
    .check = intel_check,
    .rules = intel_rules,
    .cpuid = intel_cpuid,
};
