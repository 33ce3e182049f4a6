/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * VpmuPmu: configuration, lifecycle, and the dispatch of guest MSR, RDPMC
 * and CPUID accesses to the vendor backend through its MSR range table.
 */
#include "pmu-priv.h"

#include <stdio.h>
#include <stdlib.h>
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

int vpmu_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
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
    if (cfg->events & ~VPMU_EVENTS_ALL) {
        return vpmu_err(err, errlen, "events: bits 0x%x name no "
                        "architectural event", cfg->events & ~VPMU_EVENTS_ALL);
    }
    return arch->check(cfg, err, errlen);
}

/* RESET values (SDM Vol. 4 Table 2-2; APM 13.2): see docs/msrs.md. */
void vpmu_pmu_reset(VpmuPmu *pmu)
{
    /* Whatever was counted before RESET belongs to the old values. */
    vpmu_pmu_sync(pmu);
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);

        c->ctl = 0;
        c->shadow = 0;
    }
    pmu->global_status = 0;
    pmu->debugctl = 0;
    /* IA32_PERF_GLOBAL_CTRL resets with every GP enable bit set. */
    pmu->global_ctrl = pmu->nr_gp ? GENMASK_ULL(pmu->nr_gp - 1, 0) : 0;
    vpmu_pmu_reprogram_all(pmu);
}

int vpmu_pmu_new(const VpmuConfig *cfg, const VpmuPmuOpts *opts,
                 VpmuPmu **out, char *err, size_t errlen)
{
    const VpmuSourceOps *ops = opts ? opts->source_ops : NULL;
    VpmuPmu *pmu;
    int r;

    *out = NULL;
    r = vpmu_config_check(cfg, err, errlen);
    if (r < 0) {
        return r;
    }
    if (!ops || !ops->open || !ops->enable || !ops->disable || !ops->read ||
        !ops->close) {
        return vpmu_err(err, errlen, "source_ops: open, enable, disable, "
                        "read and close are required");
    }
    pmu = calloc(1, sizeof(*pmu));
    if (!pmu) {
        return -ENOMEM;
    }
    pmu->cfg = *cfg;
    pmu->opts = *opts;
    vpmu_logger_init(&pmu->log, opts->log, opts->opaque);
    pmu->arch = vpmu_arch_for(cfg->vendor);
    pmu->nr_gp = cfg->nr_gp;
    pmu->nr_fixed = cfg->nr_fixed;
    for (unsigned i = 0; i < pmu->nr_gp; i++) {
        vpmu_counter_init(&pmu->gp[i], pmu, false, i, cfg->gp_width);
    }
    for (unsigned i = 0; i < pmu->nr_fixed; i++) {
        vpmu_counter_init(&pmu->fixed[i], pmu, true, i, cfg->fixed_width);
    }
    vpmu_pmu_reset(pmu);
    *out = pmu;
    return 0;
}

void vpmu_pmu_free(VpmuPmu *pmu)
{
    if (!pmu) {
        return;
    }
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        vpmu_counter_close(vpmu_counter_at(pmu, i));
    }
    vpmu_filter_free(pmu->filter);
    free(pmu);
}

const VpmuConfig *vpmu_pmu_config(const VpmuPmu *pmu)
{
    return &pmu->cfg;
}

VpmuCounter *vpmu_counter_by_id(VpmuPmu *pmu, uint32_t id)
{
    unsigned idx = id & ~VPMU_COUNTER_FIXED;

    if (id & VPMU_COUNTER_FIXED) {
        return idx < pmu->nr_fixed ? &pmu->fixed[idx] : NULL;
    }
    return idx < pmu->nr_gp ? &pmu->gp[idx] : NULL;
}

/* Find @msr in the backend's {base, count, kind} table. */
static const VpmuMsrRange *msr_lookup(const VpmuPmu *pmu, uint32_t msr,
                                      unsigned *idx)
{
    for (size_t i = 0; i < pmu->arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &pmu->arch->ranges[i];

        if (msr >= r->base && msr - r->base < r->count) {
            *idx = msr - r->base;
            return r;
        }
    }
    return NULL;
}

static int msr_access(VpmuPmu *pmu, uint32_t msr, bool write, uint64_t *val)
{
    const VpmuMsrRange *r;
    unsigned idx;
    int ret;

    r = msr_lookup(pmu, msr, &idx);
    if (!r) {
        return -ENOENT;     /* not ours: not counted as a PMU access */
    }
    if (write) {
        pmu->stats.wrmsr++;
    } else {
        pmu->stats.rdmsr++;
    }
    if (!pmu->arch->msr_exists(&pmu->cfg, r->kind, idx)) {
        ret = -EINVAL;
    } else if (write) {
        ret = pmu->arch->wrmsr(pmu, r->kind, idx, *val);
    } else {
        ret = pmu->arch->rdmsr(pmu, r->kind, idx, val);
    }
    if (ret == -EINVAL) {
        pmu->stats.gp_faults++;
    }
    return ret;
}

int vpmu_pmu_rdmsr(VpmuPmu *pmu, uint32_t msr, uint64_t *val)
{
    return msr_access(pmu, msr, false, val);
}

/*
 * Count one retired instruction (or branch) at @cpl on every counter that
 * counts it: only those in the emulation bitmap (KVM precomputes the same,
 * kvm_pmu_recalc_pmc_emulation()).  Adding may overflow and freeze the PMU,
 * which reprograms counters and changes the bitmap: re-read it each time.
 */
static void count_emulated(VpmuPmu *pmu, VpmuArchEvent event, unsigned cpl)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        if (!(pmu->emul_counters >> i)) {
            break;
        }
        if (pmu->emul_counters & BIT_ULL(i)) {
            vpmu_counter_add_emulated(vpmu_counter_at(pmu, i), event, cpl);
        }
    }
}

int vpmu_pmu_wrmsr(VpmuPmu *pmu, uint32_t msr, uint64_t val)
{
    int r;

    r = msr_access(pmu, msr, true, &val);
    if (r == 0) {
        /* WRMSR retires after the write: the enabling one counts. */
        count_emulated(pmu, VPMU_EVENT_INSTRUCTIONS, 0);
    }
    return r;
}

int vpmu_pmu_rdpmc(VpmuPmu *pmu, uint32_t ecx, uint64_t *val)
{
    int r;

    pmu->stats.rdpmc++;
    r = pmu->arch->rdpmc(pmu, ecx, val);
    if (r < 0) {
        pmu->stats.gp_faults++;
    }
    return r;
}

bool vpmu_rdpmc_permitted(unsigned cpl, bool cr4_pce)
{
    /* SDM RDPMC: #GP(0) if CPL != 0 and CR4.PCE = 0. */
    return cpl == 0 || cr4_pce;
}

int vpmu_pmu_cpuid(const VpmuPmu *pmu, uint32_t leaf, uint32_t subleaf,
                   uint32_t regs[4])
{
    return pmu->arch->cpuid(pmu, leaf, subleaf, regs);
}

void vpmu_pmu_instruction_retired(VpmuPmu *pmu, unsigned cpl, bool branch)
{
    count_emulated(pmu, VPMU_EVENT_INSTRUCTIONS, cpl);
    if (branch) {
        count_emulated(pmu, VPMU_EVENT_BRANCHES, cpl);
    }
}

void vpmu_pmu_set_guest_mode(VpmuPmu *pmu, bool guest)
{
    pmu->guest_mode = guest;
}

void vpmu_pmu_sync(VpmuPmu *pmu)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        vpmu_counter_read(vpmu_counter_at(pmu, i));
    }
}

void vpmu_pmu_reprogram_all(VpmuPmu *pmu)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        vpmu_counter_reprogram(vpmu_counter_at(pmu, i));
    }
}

/* Reprogram the counters whose global enable bit is in @bits. */
static void reprogram_bits(VpmuPmu *pmu, uint64_t bits, bool fold_only)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);

        if (!(bits & vpmu_status_bit(c))) {
            continue;
        }
        if (fold_only) {
            vpmu_counter_read(c);
        } else {
            vpmu_counter_reprogram(c);
        }
    }
}

void vpmu_pmu_set_global_ctrl(VpmuPmu *pmu, uint64_t val)
{
    uint64_t changed = pmu->global_ctrl ^ val;

    /*
     * Fold the counters this write starts or stops under the old enables:
     * an overflow found there happened before the write (and may freeze,
     * changing GLOBAL_CTRL itself, hence the second XOR).  Counters whose
     * enable does not change keep counting untouched.
     */
    reprogram_bits(pmu, changed, true);
    changed |= pmu->global_ctrl ^ val;
    pmu->global_ctrl = val;
    reprogram_bits(pmu, changed, false);
}

/*
 * Set then clear status bits.  Fold first so an overflow that already
 * happened is not lost; a change of the freeze (v4 CTR_Frz) reprograms.
 */
static void status_update(VpmuPmu *pmu, uint64_t set, uint64_t clear)
{
    uint64_t status;
    bool was_frozen;

    vpmu_pmu_sync(pmu);
    was_frozen = pmu->arch->frozen(pmu);
    status = (pmu->global_status | set) & ~clear;
    if (status == pmu->global_status) {
        return;
    }
    pmu->global_status = status;
    if (pmu->arch->frozen(pmu) != was_frozen) {
        vpmu_pmu_reprogram_all(pmu);
    }
}

void vpmu_pmu_set_status(VpmuPmu *pmu, uint64_t bits)
{
    status_update(pmu, bits, 0);
}

void vpmu_pmu_clear_status(VpmuPmu *pmu, uint64_t bits)
{
    status_update(pmu, 0, bits);
}

uint64_t vpmu_pmu_read_status(VpmuPmu *pmu)
{
    vpmu_pmu_sync(pmu);
    return pmu->global_status;
}

int vpmu_pmu_set_filter(VpmuPmu *pmu, const VpmuFilter *filter)
{
    VpmuFilter *copy = NULL;

    if (filter) {
        int r = vpmu_filter_clone(filter, &copy);

        if (r < 0) {
            return r;
        }
    }
    vpmu_filter_free(pmu->filter);
    pmu->filter = copy;
    /* Every counter is judged again, as KVM's KVM_REQ_PMU after a filter. */
    vpmu_pmu_reprogram_all(pmu);
    return 0;
}

static void release_if_idle(VpmuCounter *c)
{
    if (c->state != VPMU_COUNTER_COUNTING) {
        vpmu_counter_read(c);
        vpmu_counter_close(c);
    }
}

void vpmu_pmu_release_idle(VpmuPmu *pmu)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        release_if_idle(vpmu_counter_at(pmu, i));
    }
}

int vpmu_pmu_counter_info(VpmuPmu *pmu, uint32_t id, VpmuCounterInfo *out)
{
    VpmuCounter *c = vpmu_counter_by_id(pmu, id);
    VpmuCtl ctl;

    if (!c) {
        return -ENOENT;
    }
    pmu->arch->decode(c, &ctl);
    memset(out, 0, sizeof(*out));
    out->id = c->id;
    out->value = vpmu_counter_read(c);
    out->control = c->ctl;
    out->event = ctl.event;
    out->state = c->state;
    out->overflows = c->overflows;
    out->pmis = c->pmis;
    out->filtered = c->filtered;
    return 0;
}

void vpmu_pmu_stats(const VpmuPmu *pmu, VpmuStats *out)
{
    *out = pmu->stats;
}

int vpmu_config_msr_spans(const VpmuConfig *cfg, VpmuMsrSpan *out,
                          size_t max)
{
    const VpmuArchOps *arch;
    VpmuMsrSpan cur = { 0, 0 };
    size_t n = 0;

    if (vpmu_config_check(cfg, NULL, 0) < 0) {
        return -EINVAL;
    }
    arch = vpmu_arch_for(cfg->vendor);
    /* Ranges are sorted by base; merge existing MSRs into runs. */
    for (size_t i = 0; i < arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &arch->ranges[i];

        for (unsigned idx = 0; idx < r->count; idx++) {
            uint32_t msr = r->base + idx;

            if (!arch->msr_exists(cfg, r->kind, idx)) {
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
    const VpmuMsrRange *r;
    VpmuMsrKind kind;
    unsigned idx;

    r = msr_lookup(pmu, msr, &idx);
    if (!r || !pmu->arch->msr_exists(&pmu->cfg, r->kind, idx)) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    /* Mirror bits: GP i is bit i, fixed j bit nr_gp + j; all by default. */
    out->counters = BIT_ULL(vpmu_nr_counters(pmu)) - 1;
    kind = vpmu_msr_unalias(r->kind, &idx);
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
        return 0;
    default:
        out->cls = VPMU_MSR_CLASS_OTHER;
        return 0;
    }
    out->cls = VPMU_MSR_CLASS_CONTROL;
    /* The vendor reads a control MSR from its state, with no fold. */
    return pmu->arch->rdmsr(pmu, r->kind, msr - r->base, &out->value);
}
