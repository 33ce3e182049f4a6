/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * VpmuConfig: the vendor's defaults, the check a PMU is made after, and
 * the names and encodings of the architectural events.  Nothing here
 * runs on a guest access.
 */
#include "pmu-priv.h"

#include <string.h>

const VpmuArchOps *vpmu_arch_for(VpmuVendor vendor)
{
    switch (vendor) {
    case VPMU_VENDOR_INTEL:
        return &vpmu_intel_ops;
    case VPMU_VENDOR_AMD:
        return &vpmu_amd_ops;
    }
    return NULL;
}

void vpmu_rules_init(const VpmuArchOps *a, const VpmuConfig *cfg,
                     VpmuRules *out)
{
    memset(out, 0, sizeof(*out));
    a->rules(cfg, out);
}

void vpmu_config_init(VpmuConfig *cfg, VpmuVendor vendor)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->vendor = vendor;
    cfg->events = VPMU_EVENTS_ALL;
    cfg->gp_width = 48;
    if (vendor == VPMU_VENDOR_AMD) {
        cfg->amd_level = VPMU_AMD_PERFMON_V2;
        cfg->nr_gp = VPMU_AMD_MAX_GP;
        return;
    }
    cfg->intel_version = 2;
    cfg->nr_gp = VPMU_INTEL_MAX_GP;
    cfg->nr_fixed = VPMU_INTEL_MAX_FIXED;
    cfg->fixed_width = 48;
    cfg->pdcm = true;
    cfg->perf_capabilities = VPMU_PERF_CAP_FW_WRITE;
}

/* perf's names (perf list) where perf has one, else docs/events.md's. */
static const char *const vpmu_event_names[VPMU_EVENT__NAMED] = {
    [VPMU_EVENT_CYCLES] = "cycles",
    [VPMU_EVENT_INSTRUCTIONS] = "instructions",
    [VPMU_EVENT_REF_CYCLES] = "ref-cycles",
    [VPMU_EVENT_LLC_REFERENCES] = "llc-references",
    [VPMU_EVENT_LLC_MISSES] = "llc-misses",
    [VPMU_EVENT_BRANCHES] = "branches",
    [VPMU_EVENT_BRANCH_MISSES] = "branch-misses",
    [VPMU_EVENT_TOPDOWN_SLOTS] = "topdown-slots",
    [VPMU_EVENT_BR_COND] = "conditional-branches",
    [VPMU_EVENT_BR_NTAKEN] = "not-taken-branches",
    [VPMU_EVENT_BR_TAKEN] = "taken-branches",
    [VPMU_EVENT_BR_CALL] = "near-calls",
    [VPMU_EVENT_BR_RET] = "near-returns",
    [VPMU_EVENT_BR_FAR] = "far-branches",
    [VPMU_EVENT_LOADS] = "loads",
    [VPMU_EVENT_STORES] = "stores",
    [VPMU_EVENT_HW_INTERRUPTS] = "hw-interrupts",
};

const char *vpmu_arch_event_name(VpmuArchEvent e)
{
    return (unsigned)e < VPMU_EVENT__NAMED ? vpmu_event_names[e] : NULL;
}

int vpmu_arch_event_encoding(VpmuVendor vendor, VpmuArchEvent e,
                             uint64_t *evtsel)
{
    const VpmuArchOps *arch = vpmu_arch_for(vendor);
    const VpmuEventCode *code;

    if (!arch || e >= VPMU_EVENT__NAMED || !arch->events[e].valid) {
        return -ENOENT;
    }
    code = &arch->events[e];
    /* EventSelect[11:8] goes to bits 35:32 (APM Figure 13-7). */
    *evtsel = (code->event & VPMU_EVTSEL_EVENT) |
              (uint64_t)(code->event >> 8) << 32 |
              (uint64_t)code->umask << 8;
    return 0;
}

int vpmu_config_check(const VpmuConfig *cfg, char *err, size_t errlen)
{
    const VpmuArchOps *arch;

    if (err && errlen) {
        err[0] = '\0';
    }
    if (!cfg) {
        return vpmu_err(err, errlen, "config: NULL");
    }
    arch = vpmu_arch_for(cfg->vendor);
    if (!arch) {
        return vpmu_err(err, errlen, "vendor: %d is neither Intel (1) nor "
                        "AMD (2)", (int)cfg->vendor);
    }
    if (cfg->events & ~(VPMU_EVENTS_ALL | VPMU_EVENTS_MODEL)) {
        return vpmu_err(err, errlen, "events: bits 0x%x name no "
                        "architectural or catalogue event",
                        cfg->events & ~(VPMU_EVENTS_ALL | VPMU_EVENTS_MODEL));
    }
    return arch->check(cfg, err, errlen);
}
