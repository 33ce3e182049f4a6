/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * VpmuPmu: lifecycle, and guest MSR, RDPMC and CPUID accesses (the
 * configuration it is made from: config.c).  A guest WRMSR: find the MSR
 * in the vendor's range table (and whether it exists, from the bitmaps
 * made at creation), sanitise the value with the kind's rule (made at
 * creation too), decode a control with the vendor's tables, and hand it
 * to the counter model (counter.c), which applies it.
 */
#include "pmu-priv.h"

#include <stdlib.h>
#include <string.h>

/* RESET values (SDM Vol. 4 Table 2-2; APM 13.2): see docs/msrs.md. */
void vpmu_pmu_reset(VpmuPmu *pmu)
{
    /* Whatever was counted before RESET belongs to the old values. */
    vpmu_pmu_sync(pmu);
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);
        VpmuCtl dec;

        vpmu_ctl_decode(pmu, c, 0, &dec);
        vpmu_counter_load_ctl(c, 0, &dec);
        c->shadow = 0;
    }
    pmu->global_status = 0;
    pmu->debugctl = 0;
    /* IA32_PERF_GLOBAL_CTRL resets with every GP enable bit set. */
    pmu->global_ctrl = pmu->nr_gp ? GENMASK_ULL(pmu->nr_gp - 1, 0) : 0;
    vpmu_pmu_reprogram_all(pmu);
}

/* Which MSRs of the vendor's ranges exist: found once, not per access. */
static void msr_present_init(VpmuPmu *pmu)
{
    const VpmuArchOps *a = pmu->arch;

    for (size_t i = 0; i < a->nr_ranges; i++) {
        /* A range is at most one bitmap long (the longest, AMD F15H: 12). */
        for (unsigned idx = 0; idx < a->ranges[i].count &&
                               idx < VPMU_MAX_RANGE_MSRS; idx++) {
            if (vpmu_rules_msr_exists(&pmu->rules, a->ranges[i].kind, idx)) {
                pmu->present[i] |= BIT_ULL(idx);
            }
        }
    }
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
    vpmu_rules_init(pmu->arch, cfg, &pmu->rules);
    pmu->has_global = pmu->rules.msr[VPMU_MSR_GLOBAL_CTRL].nr > 0;
    msr_present_init(pmu);
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

/*
 * Find @msr in the vendor's {base, count, kind} table: -ENOENT if it is
 * not a PMU MSR, -EINVAL if it is one this configuration lacks (#GP), else
 * 0 with its kind (unaliased) and index.  A scan in base order: the PMCs
 * and selectors, first, cost least; Intel's A_PMCs, last of 12 ranges,
 * about twice a PMC read.  A binary search (sorted, disjoint ranges:
 * vpmu_arch_validate()) evens that out but its unpredictable branches made
 * a PMC read 1.5x slower, and a branch-free count of the ranges below @msr
 * slower still (bench/msr-compare.sh).
 */
int vpmu_msr_find(const VpmuPmu *pmu, uint32_t msr, VpmuMsrKind *kind,
                  unsigned *idx)
{
    for (size_t i = 0; i < pmu->arch->nr_ranges; i++) {
        const VpmuMsrRange *r = &pmu->arch->ranges[i];

        if (msr >= r->base && msr - r->base < r->count) {
            *idx = msr - r->base;
            if (!(pmu->present[i] & BIT_ULL(*idx))) {
                return -EINVAL;
            }
            *kind = vpmu_msr_unalias(r->kind, idx);
            return 0;
        }
    }
    return -ENOENT;
}

static uint64_t fixed_ctrl_read(const VpmuPmu *pmu)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < pmu->nr_fixed; i++) {
        v |= pmu->fixed[i].ctl << (VPMU_FIXED_CTRL_BITS * i);
    }
    return v;
}

/* A control MSR's value: what the core keeps, no fold. */
uint64_t vpmu_control_read(const VpmuPmu *pmu, VpmuMsrKind kind,
                           unsigned idx)
{
    switch (kind) {
    case VPMU_MSR_EVTSEL:
        return pmu->gp[idx].ctl;
    case VPMU_MSR_FIXED_CTR_CTRL:
        return fixed_ctrl_read(pmu);
    case VPMU_MSR_GLOBAL_CTRL:
        return pmu->global_ctrl;
    case VPMU_MSR_DEBUGCTL:
        return pmu->debugctl;
    case VPMU_MSR_GLOBAL_INUSE:
        return vpmu_pmu_read_inuse(pmu);
    case VPMU_MSR_PERF_CAPABILITIES:
        return pmu->cfg.perf_capabilities;
    default:
        /* OVF_CTRL / STATUS_RESET / STATUS_CLR and STATUS_SET read as 0. */
        return 0;
    }
}

int vpmu_pmu_rdmsr(VpmuPmu *pmu, uint32_t msr, uint64_t *val)
{
    VpmuMsrKind kind;
    unsigned idx;
    int r;

    r = vpmu_msr_find(pmu, msr, &kind, &idx);
    if (r == -ENOENT) {
        return r;       /* not ours: not counted as a PMU access */
    }
    pmu->stats.rdmsr++;
    if (r < 0) {
        pmu->stats.gp_faults++;
        return r;
    }
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_A_PMC:
        *val = vpmu_counter_read(&pmu->gp[idx]);
        break;
    case VPMU_MSR_FIXED_CTR:
        *val = vpmu_counter_read(&pmu->fixed[idx]);
        break;
    case VPMU_MSR_GLOBAL_STATUS:
        *val = vpmu_pmu_read_status(pmu);
        break;
    default:
        *val = vpmu_control_read(pmu, kind, idx);
        break;
    }
    return 0;
}

/*
 * Decode an event select (SDM Vol. 3B Figure 20-6, APM Vol. 2 Figure
 * 13-7) with the vendor's event bits and encodings.  HostOnly/GuestOnly
 * (APM 13.2.1): GuestOnly alone counts in guest mode only, HostOnly alone
 * in host mode only, both or neither in both.
 */
static void decode_evtsel(const VpmuArchOps *a, uint64_t ctl, VpmuCtl *out)
{
    uint64_t hg = ctl & (a->guest_only | a->host_only);

    out->en = ctl & VPMU_EVTSEL_EN;
    out->usr = ctl & VPMU_EVTSEL_USR;
    out->os = ctl & VPMU_EVTSEL_OS;
    out->intr = ctl & VPMU_EVTSEL_INT;
    out->plain = !(ctl & VPMU_EVTSEL_MODIFIERS);
    out->host = !(a->guest_only && hg == a->guest_only);
    out->guest = !(a->host_only && hg == a->host_only);
    out->raw_config = ctl & (a->event_bits | VPMU_EVTSEL_UMASK |
                             VPMU_EVTSEL_MODIFIERS);
}

/* The named event of an event select's encoding, or VPMU_EVENT_RAW. */
static VpmuArchEvent evtsel_event(const VpmuArchOps *a, uint32_t events,
                                  uint64_t ctl)
{
    uint64_t sel = ctl & a->event_bits;
    /* EventSelect[11:8] lives in bits 35:32 (AMD; 0 on Intel). */
    uint16_t event = (sel & VPMU_EVTSEL_EVENT) | ((sel >> 24) & 0xf00);
    uint8_t umask = (ctl & VPMU_EVTSEL_UMASK) >> 8;

    for (unsigned e = 0; e < VPMU_EVENT__NAMED; e++) {
        /* A catalogue event the source does not back stays raw. */
        if (e >= VPMU_EVENT__COUNT && !(events & VPMU_EVENT_BIT(e))) {
            continue;
        }
        if (a->events[e].valid && a->events[e].event == event &&
            a->events[e].umask == umask) {
            return e;
        }
    }
    for (size_t i = 0; i < a->nr_aliases; i++) {
        if (a->aliases[i].event == event && a->aliases[i].umask == umask &&
            (a->aliases[i].is < VPMU_EVENT__COUNT ||
             (events & VPMU_EVENT_BIT(a->aliases[i].is)))) {
            return a->aliases[i].is;
        }
    }
    return VPMU_EVENT_RAW;
}

/* Does a counter of @event count retired instructions on this PMU? */
static bool counts_instructions(const VpmuPmu *pmu, VpmuArchEvent event)
{
    return event == VPMU_EVENT_INSTRUCTIONS ||
           (pmu->cfg.insn_cycles && (event == VPMU_EVENT_CYCLES ||
                                     event == VPMU_EVENT_REF_CYCLES));
}

/* What emulated events a counter with @ctl counts (VPMU_EMUL_*). */
static uint8_t counter_emul_bits(const VpmuPmu *pmu, const VpmuCtl *ctl)
{
    uint8_t os, usr;

    /* Like KVM's kvm_pmu_incr_counter(): only plain event encodings. */
    if (!ctl->plain) {
        return 0;
    }
    if (counts_instructions(pmu, ctl->event)) {
        os = VPMU_EMUL_INSN_OS;
        usr = VPMU_EMUL_INSN_USR;
    } else if (ctl->event == VPMU_EVENT_BRANCHES) {
        os = VPMU_EMUL_BR_OS;
        usr = VPMU_EMUL_BR_USR;
    } else {
        return 0;
    }
    if (!ctl->os && !ctl->usr) {
        return 0;
    }
    return (ctl->os ? os : 0) | (ctl->usr ? usr : 0) |
           (ctl->host ? VPMU_EMUL_HOST : 0) | (ctl->guest ? VPMU_EMUL_GUEST : 0);
}

/*
 * @prev: the counter's decoded control, or NULL.  Linux rewrites an event
 * select with the same event far more often than it changes the event
 * (INT and EN, on every multiplexing rotation and frequency tick): the
 * event tables are searched only for another encoding.
 */
static void ctl_decode(const VpmuPmu *pmu, const VpmuCounter *c, uint64_t ctl,
                       const VpmuCtl *prev, VpmuCtl *out)
{
    memset(out, 0, sizeof(*out));
    if (!c->fixed) {
        decode_evtsel(pmu->arch, ctl, out);
        out->event = prev && prev->raw_config == out->raw_config
                     ? prev->event
                     : evtsel_event(pmu->arch, pmu->cfg.events, ctl);
    } else {
        /* A fixed counter's field (SDM Figure 20-2) and its one event. */
        out->os = ctl & VPMU_FIXED_CTRL_OS;
        out->usr = ctl & VPMU_FIXED_CTRL_USR;
        out->en = out->os || out->usr;
        out->intr = ctl & VPMU_FIXED_CTRL_PMI;
        out->plain = true;
        out->host = out->guest = true;
        out->event = pmu->arch->fixed_events[c->idx];
    }
    out->emul = counter_emul_bits(pmu, out);
}

void vpmu_ctl_decode(const VpmuPmu *pmu, const VpmuCounter *c, uint64_t ctl,
                     VpmuCtl *out)
{
    ctl_decode(pmu, c, ctl, NULL, out);
}

static int pmu_wrmsr(VpmuPmu *pmu, uint32_t msr, uint64_t val, bool retire)
{
    VpmuCtl dec[VPMU_MAX_FIXED];
    VpmuMsrKind kind;
    unsigned idx;
    bool defer;
    int r;

    r = vpmu_msr_find(pmu, msr, &kind, &idx);
    if (r == -ENOENT) {
        return r;
    }
    pmu->stats.wrmsr++;
    if (r == 0) {
        r = vpmu_rules_sanitize(&pmu->rules, kind, &val);
    }
    if (r < 0) {
        pmu->stats.gp_faults++;
        return r;
    }
    if (kind == VPMU_MSR_EVTSEL) {
        ctl_decode(pmu, &pmu->gp[idx], val, &pmu->gp[idx].dec, &dec[0]);
    } else if (kind == VPMU_MSR_FIXED_CTR_CTRL) {
        for (unsigned i = 0; i < pmu->nr_fixed; i++) {
            vpmu_ctl_decode(pmu, &pmu->fixed[i],
                            vpmu_fixed_ctrl_field(val, i), &dec[i]);
        }
    }
    /*
     * The write and the WRMSR's own retirement program a source once
     * (counter.c): deferred, where the retirement may count at all.
     */
    defer = retire && vpmu_write_may_count(pmu, kind, dec);
    if (defer) {
        vpmu_defer(pmu);
    }
    vpmu_pmu_apply(pmu, kind, idx, val, dec, retire);
    if (defer) {
        vpmu_commit(pmu);
    }
    return 0;
}

int vpmu_pmu_wrmsr(VpmuPmu *pmu, uint32_t msr, uint64_t val)
{
    return pmu_wrmsr(pmu, msr, val, true);
}

int vpmu_pmu_wrmsr_taken(VpmuPmu *pmu, uint32_t msr, uint64_t val)
{
    return pmu_wrmsr(pmu, msr, val, false);
}

int vpmu_pmu_rdpmc(VpmuPmu *pmu, uint32_t ecx, uint64_t *val)
{
    const VpmuArchOps *a = pmu->arch;
    VpmuCounter *c = NULL;

    pmu->stats.rdpmc++;
    if (!(ecx & a->rdpmc_reserved)) {
        uint32_t idx = ecx & ~(a->rdpmc_reserved | a->rdpmc_fixed);

        c = vpmu_counter_by_id(pmu, (ecx & a->rdpmc_fixed)
                                    ? VPMU_COUNTER_FIXED_ID(idx)
                                    : VPMU_COUNTER_GP(idx));
    }
    if (!c) {
        pmu->stats.gp_faults++;
        return -EINVAL;
    }
    *val = vpmu_counter_read(c) & c->mask;
    return 0;
}

bool vpmu_rdpmc_permitted(unsigned cpl, bool cr4_pce)
{
    /* SDM RDPMC: #GP(0) if CPL != 0 and CR4.PCE = 0. */
    return cpl == 0 || cr4_pce;
}

int vpmu_pmu_cpuid(const VpmuPmu *pmu, uint32_t leaf, uint32_t subleaf,
                   uint32_t regs[4])
{
    return pmu->arch->cpuid(&pmu->cfg, leaf, subleaf, regs);
}

void vpmu_pmu_set_guest_mode(VpmuPmu *pmu, bool guest)
{
    pmu->guest_mode = guest;
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

    if (!c) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    out->id = c->id;
    out->value = vpmu_counter_read(c);
    out->control = c->ctl;
    out->event = c->dec.event;
    out->state = c->state;
    out->overflows = c->overflows;
    out->pmis = c->pmis;
    out->filtered = c->filtered;
    return 0;
}

uint64_t vpmu_pmu_counting(const VpmuPmu *pmu)
{
    uint64_t mask = 0;

    for (unsigned i = 0; i < pmu->nr_gp + pmu->nr_fixed; i++) {
        const VpmuCounter *c = i < pmu->nr_gp ? &pmu->gp[i]
                                              : &pmu->fixed[i - pmu->nr_gp];

        if (c->state == VPMU_COUNTER_COUNTING) {
            mask |= BIT_ULL(i);
        }
    }
    return mask;
}

void vpmu_pmu_stats(const VpmuPmu *pmu, VpmuStats *out)
{
    *out = pmu->stats;
}
