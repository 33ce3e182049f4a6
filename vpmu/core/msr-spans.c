/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The MSRs a PMU configuration answers, as runs and by role, from the
 * vendor's {base, count, kind} table without making a PMU: what MSR
 * filters (vpmu/kvm) are built from, so that they and the core's decoder
 * read one table.
 */
#include <errno.h>

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
