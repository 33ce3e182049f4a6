/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vendor table validator, as libpfm4's pfm_intel_x86_validate_table()
 * and its tests/validate: a vendor is data (pmu-priv.h, VpmuArchOps), and
 * this checks that the data agrees with itself, and, for one config, with
 * the rules made from it and the CPUID leaves that report it.  Run by
 * tests/test-tables.c over every config the checks accept; nothing here
 * runs when a PMU is made or on a guest access.
 */
#include "pmu-priv.h"

#include <string.h>

/* EventSelect[11:8] is PERF_CTLx[35:32] (APM Vol. 2 Figure 13-7). */
#define EVTSEL_EVENT_HI     GENMASK_ULL(35, 32)
/*
 * The event select bits any vendor defines beyond the event: bits 31:8
 * of the shared layout (SDM Figure 20-6, APM Figure 13-7).
 */
#define EVTSEL_SHARED       GENMASK_ULL(31, 8)
/* What a control must be able to set for the tables' events to count. */
#define EVTSEL_NEEDED       (VPMU_EVTSEL_UMASK | VPMU_EVTSEL_USR | \
                             VPMU_EVTSEL_OS | VPMU_EVTSEL_INT | \
                             VPMU_EVTSEL_EN)
/*
 * GLOBAL_STATUS flags beyond the counters' bits: 55 (ToPA PMI) to 63
 * (CondChgd) (SDM Figure 20-12).
 */
#define STATUS_FLAGS        GENMASK_ULL(63, 55)
/* IA32_DEBUGCTL bits 63:16 are reserved (SDM Vol. 3B Figure 18-3). */
#define DEBUGCTL_DEFINED    GENMASK_ULL(15, 0)

/* The EVTSEL bits of an event code, as vpmu_arch_event_encoding(). */
static uint64_t event_encoding(uint16_t event, uint8_t umask)
{
    return (event & VPMU_EVTSEL_EVENT) | (uint64_t)(event >> 8) << 32 |
           (uint64_t)umask << 8;
}

static int check_ranges(const VpmuArchOps *a, char *err, size_t errlen)
{
    if (!a->ranges || a->nr_ranges < 1 || a->nr_ranges > VPMU_MAX_RANGES) {
        return vpmu_err(err, errlen, "%s: %zu ranges, not 1-%u", a->name,
                        a->nr_ranges, VPMU_MAX_RANGES);
    }
    for (size_t i = 0; i < a->nr_ranges; i++) {
        const VpmuMsrRange *r = &a->ranges[i];

        if (r->count < 1 || r->count > VPMU_MAX_RANGE_MSRS ||
            r->base + (uint64_t)r->count > UINT32_MAX + 1ull) {
            return vpmu_err(err, errlen, "%s: range %#x has %u MSRs, not "
                            "1-%u", a->name, r->base, r->count,
                            VPMU_MAX_RANGE_MSRS);
        }
        if ((unsigned)r->kind >= VPMU_MSR_KIND__COUNT ||
            (r->kind == VPMU_MSR_F15H_CTL_CTR && r->count % 2)) {
            return vpmu_err(err, errlen, "%s: range %#x: kind %d is not a "
                            "kind (or an odd CTL/CTR run)", a->name, r->base,
                            (int)r->kind);
        }
        if (i && r->base < a->ranges[i - 1].base) {
            return vpmu_err(err, errlen, "%s: range %#x is not sorted by "
                            "base", a->name, r->base);
        }
        if (i && a->ranges[i - 1].base + a->ranges[i - 1].count > r->base) {
            return vpmu_err(err, errlen, "%s: range %#x overlaps %#x+%u",
                            a->name, r->base, a->ranges[i - 1].base,
                            a->ranges[i - 1].count);
        }
    }
    return 0;
}

/* May @event/@umask be programmed at all (its code fits the event bits)? */
static bool encodable(const VpmuArchOps *a, uint16_t event)
{
    return !(event_encoding(event, 0) & ~a->event_bits);
}

static int check_events(const VpmuArchOps *a, char *err, size_t errlen)
{
    for (unsigned e = 0; e < VPMU_EVENT__NAMED; e++) {
        const VpmuEventCode *c = &a->events[e];

        if (!c->valid) {
            continue;
        }
        if (!encodable(a, c->event)) {
            return vpmu_err(err, errlen, "%s: event %u (%#x/%#x) is not "
                            "encodable in event bits %#llx", a->name, e,
                            c->event, c->umask,
                            (unsigned long long)a->event_bits);
        }
        for (unsigned f = 0; f < e; f++) {
            if (a->events[f].valid && a->events[f].event == c->event &&
                a->events[f].umask == c->umask) {
                return vpmu_err(err, errlen, "%s: events %u and %u: "
                                "duplicate encoding %#x/%#x", a->name, f, e,
                                c->event, c->umask);
            }
        }
    }
    return 0;
}

/* An alias names a valid event, fits, and shadows no table entry. */
static int check_aliases(const VpmuArchOps *a, char *err, size_t errlen)
{
    for (size_t i = 0; i < a->nr_aliases; i++) {
        const VpmuEventAlias *al = &a->aliases[i];

        if ((unsigned)al->is >= VPMU_EVENT__NAMED || !a->events[al->is].valid ||
            !encodable(a, al->event)) {
            return vpmu_err(err, errlen, "%s: alias %#x/%#x names no valid "
                            "event, or is not encodable", a->name, al->event,
                            al->umask);
        }
        for (unsigned e = 0; e < VPMU_EVENT__NAMED; e++) {
            if (a->events[e].valid && a->events[e].event == al->event &&
                a->events[e].umask == al->umask) {
                return vpmu_err(err, errlen, "%s: alias %#x/%#x: duplicate "
                                "encoding of event %u", a->name, al->event,
                                al->umask, e);
            }
        }
    }
    return 0;
}

static int check_layout(const VpmuArchOps *a, char *err, size_t errlen)
{
    uint64_t hg = a->guest_only | a->host_only;
    uint32_t index = ~(a->rdpmc_reserved | a->rdpmc_fixed);

    if (!a->name || !a->events || !a->check || !a->rules || !a->cpuid) {
        return vpmu_err(err, errlen, "%s: name, events, check, rules and "
                        "cpuid are required", a->name ? a->name : "?");
    }
    if ((a->event_bits & VPMU_EVTSEL_EVENT) != VPMU_EVTSEL_EVENT ||
        (a->event_bits & ~(VPMU_EVTSEL_EVENT | EVTSEL_EVENT_HI))) {
        return vpmu_err(err, errlen, "%s: event bits %#llx are not 7:0 "
                        "(and 35:32)", a->name,
                        (unsigned long long)a->event_bits);
    }
    if (hg & (a->event_bits | EVTSEL_SHARED) ||
        (a->guest_only & a->host_only)) {
        return vpmu_err(err, errlen, "%s: GuestOnly/HostOnly bits overlap "
                        "the event select", a->name);
    }
    /* RDPMC: the index must reach every counter the core can hold. */
    if ((a->rdpmc_reserved & a->rdpmc_fixed) ||
        (index & (VPMU_MAX_GP - 1)) != VPMU_MAX_GP - 1) {
        return vpmu_err(err, errlen, "%s: RDPMC reserved %#x and fixed %#x "
                        "bits overlap or leave no index", a->name,
                        a->rdpmc_reserved, a->rdpmc_fixed);
    }
    for (size_t i = 0; i < a->nr_cpuid_fields; i++) {
        const VpmuCpuidField *f = &a->cpuid_fields[i];

        if (f->reg > 3 || f->bits < 1 || f->shift + f->bits > 32 ||
            f->what > VPMU_CPUID_MSR_EXISTS ||
            (unsigned)f->kind >= VPMU_MSR_KIND__COUNT) {
            return vpmu_err(err, errlen, "%s: CPUID field %zu of leaf %#x "
                            "is out of its register", a->name, i, f->leaf);
        }
    }
    return 0;
}

int vpmu_arch_validate(const VpmuArchOps *a, char *err, size_t errlen)
{
    int r = check_layout(a, err, errlen);

    if (!r) {
        r = check_ranges(a, err, errlen);
    }
    if (!r) {
        r = check_events(a, err, errlen);
    }
    if (!r) {
        r = check_aliases(a, err, errlen);
    }
    if (!r && err && errlen) {
        err[0] = '\0';
    }
    return r;
}

/*
 * The counter indices the vendor's ranges reach for @kind: each range
 * indexes from 0, and an interleaved F15H run reaches the EVTSEL and PMC
 * kinds (a CTL/CTR pair per counter), beyond the four K7 MSRs of each.
 */
static unsigned range_reach(const VpmuArchOps *a, VpmuMsrKind kind)
{
    unsigned n = 0;

    for (size_t i = 0; i < a->nr_ranges; i++) {
        const VpmuMsrRange *r = &a->ranges[i];
        bool pairs = r->kind == VPMU_MSR_F15H_CTL_CTR;
        unsigned reach = pairs ? r->count / 2 : r->count;

        if (r->kind != kind && !(pairs && (kind == VPMU_MSR_EVTSEL ||
                                           kind == VPMU_MSR_PMC))) {
            continue;
        }
        n = reach > n ? reach : n;
    }
    return n;
}

static bool range_has(const VpmuArchOps *a, VpmuMsrKind kind)
{
    for (size_t i = 0; i < a->nr_ranges; i++) {
        if (a->ranges[i].kind == kind) {
            return true;
        }
    }
    return false;
}

/* Does a config of @cfg's counts have @nr MSRs of @kind? */
static bool count_agrees(const VpmuConfig *cfg, VpmuMsrKind kind, unsigned nr)
{
    switch (kind) {
    case VPMU_MSR_EVTSEL:
    case VPMU_MSR_PMC:
        return nr == cfg->nr_gp;
    case VPMU_MSR_A_PMC:
    case VPMU_MSR_F15H_CTL_CTR:
        return nr == 0 || nr == cfg->nr_gp;     /* all counters or none */
    case VPMU_MSR_FIXED_CTR:
        return nr == cfg->nr_fixed;
    case VPMU_MSR_FIXED_CTR_CTRL:
        return nr <= 1 && (nr == 1 || !cfg->nr_fixed);
    default:
        return nr <= 1;                         /* one MSR per PMU */
    }
}

static int check_counts(const VpmuArchOps *a, const VpmuConfig *cfg,
                        const VpmuRules *rules, char *err, size_t errlen)
{
    if (cfg->nr_gp > VPMU_MAX_GP || cfg->nr_fixed > VPMU_MAX_FIXED) {
        return vpmu_err(err, errlen, "%s: %u GP + %u fixed counters exceed "
                        "the core's %u + %u", a->name, cfg->nr_gp,
                        cfg->nr_fixed, VPMU_MAX_GP, VPMU_MAX_FIXED);
    }
    for (unsigned k = 0; k < VPMU_MSR_KIND__COUNT; k++) {
        const VpmuMsrRule *r = &rules->msr[k];
        unsigned have = range_reach(a, k);

        if (range_has(a, k) && !(r->flags & VPMU_MSR_RULE_SET)) {
            return vpmu_err(err, errlen, "%s: MSR kind %u has a range but "
                            "no rule", a->name, k);
        }
        if (r->nr > have || !count_agrees(cfg, k, r->nr)) {
            return vpmu_err(err, errlen, "%s: MSR kind %u: %u MSRs, for %u "
                            "its ranges reach and %u GP + %u fixed counters",
                            a->name, k, r->nr, have, cfg->nr_gp,
                            cfg->nr_fixed);
        }
    }
    for (unsigned i = 0; i < cfg->nr_fixed; i++) {
        if (!a->fixed_events || (unsigned)a->fixed_events[i] >=
                                VPMU_EVENT__NAMED ||
            !a->events[a->fixed_events[i]].valid) {
            return vpmu_err(err, errlen, "%s: fixed counter %u counts no "
                            "event of the table", a->name, i);
        }
    }
    return 0;
}

/* GLOBAL_CTRL/STATUS bits of the counters: GP i bit i, fixed i 32 + i. */
static uint64_t counter_bits(const VpmuConfig *cfg)
{
    return vpmu_width_mask(cfg->nr_gp) |
           vpmu_width_mask(cfg->nr_fixed) << 32;
}

/*
 * The architectural bounds of a writable mask: it must have @must (what
 * the guest needs to set) and nothing outside @may.  false: the kind is
 * read-only, and its mask must be 0.
 */
static bool mask_bounds(const VpmuArchOps *a, const VpmuConfig *cfg,
                        VpmuMsrKind kind, uint64_t *must, uint64_t *may)
{
    uint64_t field = VPMU_FIXED_CTRL_EN | VPMU_FIXED_CTRL_PMI;

    *must = 0;
    *may = 0;
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_A_PMC:
        *must = *may = vpmu_width_mask(cfg->gp_width);
        return true;
    case VPMU_MSR_FIXED_CTR:
        *must = *may = vpmu_width_mask(cfg->fixed_width);
        return true;
    case VPMU_MSR_EVTSEL:
        *must = a->event_bits | EVTSEL_NEEDED;
        *may = a->event_bits | EVTSEL_SHARED | a->guest_only | a->host_only;
        return true;
    case VPMU_MSR_FIXED_CTR_CTRL:
        for (unsigned i = 0; i < cfg->nr_fixed; i++) {
            *must |= field << (VPMU_FIXED_CTRL_BITS * i);
        }
        *may = vpmu_width_mask(VPMU_FIXED_CTRL_BITS * cfg->nr_fixed);
        return true;
    case VPMU_MSR_GLOBAL_CTRL:
        *must = *may = counter_bits(cfg);
        return true;
    case VPMU_MSR_GLOBAL_OVF_CTRL:
    case VPMU_MSR_GLOBAL_STATUS_SET:
        *must = counter_bits(cfg);
        *may = *must | STATUS_FLAGS;
        return true;
    case VPMU_MSR_DEBUGCTL:
        *may = DEBUGCTL_DEFINED;
        return true;
    case VPMU_MSR_F15H_CTL_CTR:
        return true;    /* an alias: checked as EVTSEL and PMC, no mask */
    default:
        return false;   /* GLOBAL_STATUS, GLOBAL_INUSE, PERF_CAPABILITIES */
    }
}

/* Legacy PMCx writes: EAX sign-extended, EDX dropped (SDM 20.2.5). */
static bool sext32_ok(VpmuMsrKind kind, const VpmuMsrRule *r)
{
    return kind == VPMU_MSR_PMC && r->writable == GENMASK_ULL(31, 0) &&
           !(r->flags & (VPMU_MSR_FAULT | VPMU_MSR_READ_ONLY));
}

static int check_masks(const VpmuArchOps *a, const VpmuConfig *cfg,
                       const VpmuRules *rules, char *err, size_t errlen)
{
    for (unsigned k = 0; k < VPMU_MSR_KIND__COUNT; k++) {
        const VpmuMsrRule *r = &rules->msr[k];
        uint64_t must, may;
        bool ro = !mask_bounds(a, cfg, k, &must, &may);

        if (!r->nr) {
            continue;
        }
        if (ro != !!(r->flags & VPMU_MSR_READ_ONLY)) {
            return vpmu_err(err, errlen, "%s: MSR kind %u is %sread-only, "
                            "its rule says otherwise", a->name, k,
                            ro ? "" : "not ");
        }
        if (r->flags & VPMU_MSR_SEXT32) {
            if (!sext32_ok(k, r)) {
                return vpmu_err(err, errlen, "%s: MSR kind %u: only a legacy "
                                "PMC takes EAX sign-extended", a->name, k);
            }
            continue;
        }
        if ((r->writable & ~may) || (must & ~r->writable)) {
            return vpmu_err(err, errlen, "%s: MSR kind %u: writable %#llx "
                            "is outside %#llx or lacks %#llx", a->name, k,
                            (unsigned long long)r->writable,
                            (unsigned long long)may,
                            (unsigned long long)must);
        }
    }
    return 0;
}

/* The freeze bits are ones the guest can set and clear. */
static int check_freeze(const VpmuArchOps *a, const VpmuRules *rules,
                        char *err, size_t errlen)
{
    const VpmuMsrRule *dbg = &rules->msr[VPMU_MSR_DEBUGCTL];
    const VpmuMsrRule *clr = &rules->msr[VPMU_MSR_GLOBAL_OVF_CTRL];

    if ((rules->freeze_on_pmi &&
         (!dbg->nr || (rules->freeze_on_pmi & ~dbg->writable))) ||
        (rules->freeze_status &&
         (!clr->nr || (rules->freeze_status & ~clr->writable)))) {
        return vpmu_err(err, errlen, "%s: a freeze bit is not writable in "
                        "DEBUGCTL or clearable in GLOBAL_STATUS", a->name);
    }
    return 0;
}

/* What a CPUID field must say of @cfg and its @rules. */
static uint64_t cpuid_expected(const VpmuCpuidField *f, const VpmuConfig *cfg,
                               const VpmuRules *rules)
{
    switch (f->what) {
    case VPMU_CPUID_VERSION:
        return cfg->intel_version;
    case VPMU_CPUID_NR_GP:
        return cfg->nr_gp;
    case VPMU_CPUID_GP_WIDTH:
        return cfg->gp_width;
    case VPMU_CPUID_NR_FIXED:
        return cfg->nr_fixed;
    case VPMU_CPUID_FIXED_WIDTH:
        return cfg->fixed_width;
    case VPMU_CPUID_MSR_EXISTS:
        return rules->msr[f->kind].nr > 0;
    }
    return 0;
}

static int check_cpuid(const VpmuArchOps *a, const VpmuConfig *cfg,
                       const VpmuRules *rules, char *err, size_t errlen)
{
    /* A field reports from its version (Intel) or level (AMD) on. */
    unsigned level = cfg->vendor == VPMU_VENDOR_INTEL ? cfg->intel_version
                                                     : (unsigned)cfg->amd_level;

    for (size_t i = 0; i < a->nr_cpuid_fields; i++) {
        const VpmuCpuidField *f = &a->cpuid_fields[i];
        uint64_t want = level >= f->since ? cpuid_expected(f, cfg, rules) : 0;
        uint32_t regs[4] = { 0, 0, 0, 0 };
        uint64_t got;

        if (a->cpuid(cfg, f->leaf, 0, regs) < 0) {
            return vpmu_err(err, errlen, "%s: CPUID leaf %#x is not "
                            "answered", a->name, f->leaf);
        }
        got = (regs[f->reg] >> f->shift) & vpmu_width_mask(f->bits);
        if (got != want) {
            return vpmu_err(err, errlen, "%s: CPUID %#x reg %u bits %u+%u "
                            "say %llu, the config %llu", a->name, f->leaf,
                            f->reg, f->shift, f->bits,
                            (unsigned long long)got,
                            (unsigned long long)want);
        }
    }
    return 0;
}

int vpmu_arch_validate_config(const VpmuArchOps *a, const VpmuConfig *cfg,
                              char *err, size_t errlen)
{
    VpmuRules rules;
    int r = a->check(cfg, err, errlen);

    if (r < 0) {
        return r;
    }
    vpmu_rules_init(a, cfg, &rules);
    r = check_counts(a, cfg, &rules, err, errlen);
    if (!r) {
        r = check_masks(a, cfg, &rules, err, errlen);
    }
    if (!r) {
        r = check_freeze(a, &rules, err, errlen);
    }
    if (!r) {
        r = check_cpuid(a, cfg, &rules, err, errlen);
    }
    return r;
}
