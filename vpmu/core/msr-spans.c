/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The MSRs a PMU configuration answers, as runs and by role, from the
 * vendor's {base, count, kind} table without making a PMU: what MSR
 * filters (vpmu/kvm) are built from, so that they and the core's decoder
 * read one table.  And, of a made PMU, what front ends ask about its MSRs
 * (vpmu_pmu_msr_info(), vpmu_pmu_counter_msrs()): which counters an MSR
 * holds or enables, and the MSRs of a counter (KVM's mirror).
 */
#include <errno.h>
#include <string.h>

#include "pmu-priv.h"

int vpmu_config_msr_spans_of(const VpmuConfig *cfg, unsigned roles,
                             VpmuMsrSpan *out, size_t max)
{
    const VpmuArchOps *arch;
    VpmuMsrSpan cur = { 0, 0 };
    VpmuRules rules;
    size_t n = 0;

    if (vpmu_config_check(cfg, NULL, 0) < 0) {
        return -EINVAL;
    }
    arch = vpmu_arch_for(cfg->vendor);
    vpmu_rules_init(arch, cfg, &rules);
    /* Ranges are sorted by base; merge existing MSRs into runs. */
    for (size_t i = 0; i < arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &arch->ranges[i];

        for (unsigned idx = 0; idx < r->count; idx++) {
            uint32_t msr = r->base + idx;
            unsigned uidx = idx;

            if (!vpmu_rules_msr_exists(&rules, r->kind, idx) ||
                !(roles & (1u << vpmu_msr_kind_role(vpmu_msr_unalias(r->kind,
                                                            &uidx))))) {
                continue;
            }
            if (cur.count && cur.base + cur.count == msr) {
                cur.count++;
                continue;
            }
            if (cur.count && n++ < max) {
                out[n - 1] = cur;
            }
            cur.base = msr;
            cur.count = 1;
        }
    }
    if (cur.count && n++ < max) {
        out[n - 1] = cur;
    }
    return (int)n;
}

int vpmu_config_msr_spans(const VpmuConfig *cfg, VpmuMsrSpan *out,
                          size_t max)
{
    return vpmu_config_msr_spans_of(cfg, VPMU_MSR_ROLES_ALL, out, max);
}

int vpmu_config_msr_role(const VpmuConfig *cfg, uint32_t msr)
{
    const VpmuArchOps *arch;
    VpmuRules rules;

    if (vpmu_config_check(cfg, NULL, 0) < 0) {
        return -EINVAL;
    }
    arch = vpmu_arch_for(cfg->vendor);
    vpmu_rules_init(arch, cfg, &rules);
    for (size_t i = 0; i < arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &arch->ranges[i];
        unsigned idx = msr - r->base;

        if (msr >= r->base && idx < r->count &&
            vpmu_rules_msr_exists(&rules, r->kind, idx)) {
            return (int)vpmu_msr_kind_role(vpmu_msr_unalias(r->kind, &idx));
        }
    }
    return -ENOENT;
}

size_t vpmu_pmu_msr_spans(const VpmuPmu *pmu, VpmuMsrSpan *out, size_t max)
{
    return (size_t)vpmu_config_msr_spans(&pmu->cfg, out, max);
}

/* The global enable bits of every counter (the status layout). */
static uint64_t global_enables(VpmuPmu *pmu)
{
    uint64_t bits = 0;

    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        bits |= vpmu_status_bit(vpmu_counter_at(pmu, i));
    }
    return bits;
}

int vpmu_pmu_msr_info(VpmuPmu *pmu, uint32_t msr, VpmuMsrInfo *out)
{
    VpmuMsrKind kind;
    unsigned idx;

    if (vpmu_msr_find(pmu, msr, &kind, &idx) < 0) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    out->role = vpmu_msr_kind_role(kind);
    /* Mirror bits: GP i is bit i, fixed j bit nr_gp + j; all by default. */
    out->counters = BIT_ULL(vpmu_nr_counters(pmu)) - 1;
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_A_PMC:
    case VPMU_MSR_FIXED_CTR:
        out->cls = VPMU_MSR_CLASS_COUNTER;
        out->counters = BIT_ULL(kind == VPMU_MSR_FIXED_CTR ? pmu->nr_gp + idx
                                                           : idx);
        return 0;
    case VPMU_MSR_EVTSEL:
        out->counters = BIT_ULL(idx);
        out->enables = VPMU_EVTSEL_EN;
        break;
    case VPMU_MSR_FIXED_CTR_CTRL:
        out->counters = (BIT_ULL(pmu->nr_fixed) - 1) << pmu->nr_gp;
        for (unsigned i = 0; i < pmu->nr_fixed; i++) {
            out->enables |= VPMU_FIXED_CTRL_EN << (i * VPMU_FIXED_CTRL_BITS);
        }
        break;
    case VPMU_MSR_GLOBAL_CTRL:
        out->enables = global_enables(pmu);
        break;
    case VPMU_MSR_GLOBAL_STATUS:
        out->cls = VPMU_MSR_CLASS_STATUS;
        out->value = pmu->global_status;    /* as last folded */
        return 0;
    default:
        out->cls = VPMU_MSR_CLASS_OTHER;
        return 0;
    }
    out->cls = VPMU_MSR_CLASS_CONTROL;
    out->value = vpmu_control_read(pmu, kind, idx);
    return 0;
}

/*
 * The MSR of @kind for counter @idx: the last range of the table that has
 * it, so AMD's PERF_CTL/CTR pairs win over the K7 MSRs they alias.
 */
static uint32_t msr_of(const VpmuPmu *pmu, VpmuMsrKind kind, unsigned idx)
{
    uint32_t msr = 0;

    for (size_t i = 0; i < pmu->arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &pmu->arch->ranges[i];

        for (unsigned j = 0; j < r->count; j++) {
            unsigned k = j;

            if ((pmu->present[i] & BIT_ULL(j)) &&
                vpmu_msr_unalias(r->kind, &k) == kind && k == idx) {
                msr = r->base + j;
            }
        }
    }
    return msr;
}

int vpmu_pmu_counter_msrs(const VpmuPmu *pmu, uint32_t id,
                          VpmuCounterMsrs *out)
{
    const VpmuCounter *c = vpmu_counter_by_id((VpmuPmu *)pmu, id);

    if (!c) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    if (c->fixed) {
        out->counter = msr_of(pmu, VPMU_MSR_FIXED_CTR, c->idx);
        out->control = msr_of(pmu, VPMU_MSR_FIXED_CTR_CTRL, 0);
        out->control_shift = VPMU_FIXED_CTRL_BITS * c->idx;
        out->control_os = VPMU_FIXED_CTRL_OS;
        out->control_pmi = VPMU_FIXED_CTRL_PMI;
    } else {
        out->counter = msr_of(pmu, VPMU_MSR_PMC, c->idx);
        out->counter_full = msr_of(pmu, VPMU_MSR_A_PMC, c->idx);
        out->control = msr_of(pmu, VPMU_MSR_EVTSEL, c->idx);
        out->control_os = VPMU_EVTSEL_OS;
        out->control_pmi = VPMU_EVTSEL_INT;
    }
    if (!out->counter_full) {
        out->counter_full = out->counter;
    }
    if (pmu->has_global) {
        out->global = msr_of(pmu, VPMU_MSR_GLOBAL_CTRL, 0);
        out->global_enable = vpmu_status_bit(c);
    }
    return 0;
}
