/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vendor-neutral counter model.
 *
 * The guest-visible value is the truth (KVM's pmc->counter, arm64
 * pmu-emul.c): a counter holds a shadow value, and its counting source
 * only adds what it counted since the last fold.  Folding masks the sum to
 * the counter width and turns a wrap into an overflow.  The source's
 * sample period is always the distance to the next guest-visible overflow,
 * (-value) & mask, so the source calls back exactly when the guest counter
 * wraps (KVM get_sample_period(), pmu-emul.c compute_period()).
 *
 * The PMU-wide state that starts and stops counters (the global control,
 * the status, the freeze) is global.c's; the guest's writes, sanitised
 * and decoded by pmu.c, come in here (vpmu_pmu_apply()).
 */
#include "pmu-priv.h"

#include <string.h>

static const VpmuSourceOps *src_ops(const VpmuCounter *c)
{
    return c->pmu->opts.source_ops;
}

static void *src(const VpmuCounter *c)
{
    return c->pmu->opts.source;
}

void vpmu_counter_init(VpmuCounter *c, VpmuPmu *pmu, bool fixed,
                       unsigned idx, unsigned width)
{
    memset(c, 0, sizeof(*c));
    c->pmu = pmu;
    c->fixed = fixed;
    c->idx = idx;
    c->id = fixed ? VPMU_COUNTER_FIXED_ID(idx) : VPMU_COUNTER_GP(idx);
    c->mask = vpmu_width_mask(width);
}

/*
 * Distance to overflow; a counter at 0 wraps after a full 2^width.  A
 * counter whose PMI another party raises (pmi_elsewhere) needs no signal
 * from its source: a full wrap, the same every time, so that a guest
 * write of the counter (the PMI handler's next period) costs no host
 * call; folds still find its overflows.
 */
static uint64_t counter_period(const VpmuCounter *c)
{
    uint64_t p = c->pmi_elsewhere ? 0 : (0 - c->shadow) & c->mask;

    return p ? p : c->mask + 1;
}

void vpmu_counter_close(VpmuCounter *c)
{
    if (c->h) {
        src_ops(c)->close(src(c), c->h);
    }
    c->h = NULL;
    c->src_enabled = false;
}

/* Every state change goes here: it keeps the emulation bitmap right. */
static void counter_set_state(VpmuCounter *c, VpmuCounterState state,
                              const VpmuCtl *ctl)
{
    uint64_t bit = BIT_ULL(vpmu_counter_index(c));

    c->state = state;
    c->emul = state == VPMU_COUNTER_COUNTING ? ctl->emul : 0;
    if (c->emul) {
        c->pmu->emul_counters |= bit;
    } else {
        c->pmu->emul_counters &= ~bit;
    }
}

/*
 * A source call failed: the guest keeps running, the counter stops
 * counting (degraded), the operator sees it in the statistics and in one
 * log line per PMU.
 */
static void counter_source_error(VpmuCounter *c, const char *what, int err)
{
    VpmuPmu *pmu = c->pmu;

    pmu->stats.source_errors++;
    vpmu_logf_once(&pmu->log, VPMU_LOG_SOURCE_ERROR,
                   "vpmu: counting source %s failed for counter 0x%x: %s; "
                   "the counter stops counting", what, c->id, strerror(-err));
    vpmu_counter_close(c);
    counter_set_state(c, VPMU_COUNTER_SOURCE_ERROR, NULL);
}

/* Set and signal an overflow of @c (SDM 20.2.2, APM 13.2.1). */
static void counter_overflowed(VpmuCounter *c)
{
    VpmuPmu *pmu = c->pmu;

    c->overflows++;
    pmu->stats.overflows++;
    if (pmu->has_global) {
        pmu->global_status |= vpmu_status_bit(c);
    }
    if (!c->dec.intr || c->pmi_elsewhere) {
        return;     /* no PMI, or vpmu_pmu_pmi_delivered() counts it */
    }
    c->pmis++;
    pmu->stats.pmis++;
    /* The freeze is in place by the time the PMI handler runs. */
    vpmu_freeze_on_pmi(pmu);
    if (pmu->opts.pmi) {
        pmu->opts.pmi(pmu->opts.opaque);
    }
}

/* Add @delta events; a sum past the mask is a wrap (several count once). */
static void counter_advance(VpmuCounter *c, uint64_t delta)
{
    bool wrapped = delta > c->mask - c->shadow;

    c->shadow = (c->shadow + delta) & c->mask;
    if (wrapped) {
        counter_overflowed(c);
    }
}

/*
 * Fold what the source counted since the last fold into the shadow.
 * Return: false if the read failed and degraded the counter.
 */
static bool counter_fold(VpmuCounter *c)
{
    uint64_t now;
    int r;

    if (!c->h || !c->src_enabled) {
        return true;
    }
    r = src_ops(c)->read(src(c), c->h, &now);
    if (r < 0) {
        counter_source_error(c, "read", r);
        return false;
    }
    if (now != c->src_last) {
        uint64_t delta = now - c->src_last;

        c->src_last = now;
        counter_advance(c, delta);
    }
    return true;
}

uint64_t vpmu_counter_read(VpmuCounter *c)
{
    counter_fold(c);
    return c->shadow;
}

static bool same_event(const VpmuSourceAttr *a, const VpmuSourceAttr *b)
{
    return a->event == b->event && a->raw_config == b->raw_config &&
           a->count_user == b->count_user &&
           a->count_kernel == b->count_kernel &&
           a->count_host == b->count_host && a->count_guest == b->count_guest;
}

static int source_open(VpmuCounter *c, const VpmuSourceAttr *attr)
{
    int r;

    vpmu_counter_close(c);
    r = src_ops(c)->open(src(c), attr, &c->h);
    if (r < 0) {
        c->h = NULL;
        return r;
    }
    c->pmu->stats.source_opens++;
    c->attr = *attr;
    c->src_last = 0;
    return 0;
}

/*
 * Point the source at @attr: reuse the handle when only the period
 * changes (Linux rewrites the same EVTSEL on every multiplexing rotation),
 * reopen otherwise or when the source cannot update in place.
 */
static int source_program(VpmuCounter *c, const VpmuSourceAttr *attr,
                          const char **what)
{
    int r = -EOPNOTSUPP;

    if (c->h && same_event(&c->attr, attr)) {
        *what = "update";
        if (c->attr.sample_period == attr->sample_period) {
            r = 0;
        } else if (src_ops(c)->update) {
            r = src_ops(c)->update(src(c), c->h, attr);
        }
        if (r == 0) {
            c->pmu->stats.source_reuses++;
            c->attr = *attr;
            return 0;
        }
        if (r != -EOPNOTSUPP) {
            return r;
        }
    }
    *what = "open";
    return source_open(c, attr);
}

static void counter_stop(VpmuCounter *c, VpmuCounterState state)
{
    if (c->h && c->src_enabled) {
        int r = src_ops(c)->disable(src(c), c->h);

        c->src_enabled = false;
        if (r < 0) {
            counter_source_error(c, "disable", r);
        }
    }
    counter_set_state(c, state, NULL);
}

static bool counter_supported(const VpmuCounter *c, const VpmuCtl *ctl)
{
    const VpmuConfig *cfg = &c->pmu->cfg;

    if (ctl->event == VPMU_EVENT_RAW) {
        return cfg->raw_events;
    }
    return cfg->events & VPMU_EVENT_BIT(ctl->event);
}

/*
 * The filter sees the vendor's decoded event fields only (raw_config):
 * on Intel, EVTSEL bits 35:32 are IN_TX/IN_TXCP, not event select bits,
 * and must not change what the filter matches (KVM masks the same way).
 */
static bool counter_allowed(const VpmuCounter *c, const VpmuCtl *ctl)
{
    const VpmuFilter *f = c->pmu->filter;

    if (!f) {
        return true;
    }
    return c->fixed ? vpmu_filter_allows_fixed(f, c->idx)
                    : vpmu_filter_allows_event(f, ctl->raw_config);
}

static bool counter_enabled(const VpmuCounter *c)
{
    const VpmuPmu *pmu = c->pmu;

    if (!c->dec.en || (!c->dec.usr && !c->dec.os)) {
        return false;
    }
    /* IA32_PERF_GLOBAL_CTRL / PerfCntrGlobalCtl: same bit as the status */
    if (pmu->has_global && !(pmu->global_ctrl & vpmu_status_bit(c))) {
        return false;
    }
    return !vpmu_frozen(pmu);
}

/*
 * The guest wants @c to count but policy or the source says no: it counts
 * nothing (no fault, as KVM's filter), counted once per request.
 */
static void counter_refuse(VpmuCounter *c, VpmuCounterState why)
{
    VpmuPmu *pmu = c->pmu;
    bool again = c->state == why;

    counter_stop(c, why);
    if (again) {
        return;
    }
    if (why == VPMU_COUNTER_FILTERED) {
        c->filtered++;
        pmu->stats.filtered++;
        vpmu_logf_once(&pmu->log, VPMU_LOG_FILTERED,
                       "vpmu: event 0x%llx of counter 0x%x denied by the "
                       "filter", (unsigned long long)c->ctl, c->id);
    } else {
        pmu->stats.unsupported++;
        vpmu_logf_once(&pmu->log, VPMU_LOG_UNSUPPORTED,
                       "vpmu: counting source cannot back event 0x%llx of "
                       "counter 0x%x; it counts nothing",
                       (unsigned long long)c->ctl, c->id);
    }
}

static void counter_reprogram(VpmuCounter *c);

/* The source saw the period elapse: fold, which raises the overflow. */
static void counter_overflow_cb(void *ctx)
{
    counter_reprogram(ctx);
}

/* Point the source at the counting counter's event and period, enabled. */
static void counter_source_program(VpmuCounter *c)
{
    const VpmuCtl *ctl = &c->dec;
    VpmuSourceAttr attr = { 0 };
    const char *what = "open";
    int r;

    attr.event = ctl->event;
    attr.raw_config = ctl->raw_config;
    attr.count_user = ctl->usr;
    attr.count_kernel = ctl->os;
    attr.count_host = ctl->host;
    attr.count_guest = ctl->guest;
    attr.sample_period = counter_period(c);
    attr.counter_id = c->id;
    attr.overflow = counter_overflow_cb;
    attr.overflow_ctx = c;
    r = source_program(c, &attr, &what);
    if (r == 0 && !c->src_enabled) {
        what = "enable";
        r = src_ops(c)->enable(src(c), c->h);
        c->src_enabled = r == 0;
    }
    if (r < 0) {
        counter_source_error(c, what, r);
        return;
    }
    counter_set_state(c, VPMU_COUNTER_COUNTING, ctl);
}

/*
 * Program the source for the counter's current state; it is folded.  In
 * a deferral (vpmu_pmu_defer()) a counter that counts is so at once (for
 * the emulated events), and its source is programmed at the commit, once,
 * with its value then (KVM: kvm_pmu_handle_event()).  Stopping is never
 * deferred.
 */
static void counter_program(VpmuCounter *c)
{
    const VpmuCtl *ctl = &c->dec;

    if (!counter_enabled(c)) {
        counter_stop(c, VPMU_COUNTER_OFF);
        return;
    }
    if (!counter_allowed(c, ctl)) {
        counter_refuse(c, VPMU_COUNTER_FILTERED);
        return;
    }
    if (!counter_supported(c, ctl)) {
        counter_refuse(c, VPMU_COUNTER_UNSUPPORTED);
        return;
    }
    if (c->pmu->defer) {
        counter_set_state(c, VPMU_COUNTER_COUNTING, ctl);
        c->pmu->dirty |= BIT_ULL(vpmu_counter_index(c));
        return;
    }
    counter_source_program(c);
}

static void counter_add_emulated(VpmuCounter *c, VpmuArchEvent event,
                                 unsigned cpl)
{
    uint8_t want = event == VPMU_EVENT_BRANCHES ?
                   (cpl == 3 ? VPMU_EMUL_BR_USR : VPMU_EMUL_BR_OS) :
                   (cpl == 3 ? VPMU_EMUL_INSN_USR : VPMU_EMUL_INSN_OS);
    uint8_t mode = c->pmu->guest_mode ? VPMU_EMUL_GUEST : VPMU_EMUL_HOST;

    if (!(c->emul & want) || !(c->emul & mode)) {
        return;
    }
    if (!counter_fold(c)) {
        return;
    }
    c->pmu->stats.emulated++;
    counter_advance(c, 1);
    counter_program(c);
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
            counter_add_emulated(vpmu_counter_at(pmu, i), event, cpl);
        }
    }
}

void vpmu_pmu_instruction_retired(VpmuPmu *pmu, unsigned cpl, bool branch)
{
    count_emulated(pmu, VPMU_EVENT_INSTRUCTIONS, cpl);
    if (branch) {
        count_emulated(pmu, VPMU_EVENT_BRANCHES, cpl);
    }
}

/* For external.c: the same, out of line (counter.c's callers inline). */
bool vpmu_counter_fold(VpmuCounter *c)
{
    return counter_fold(c);
}

void vpmu_counter_advance(VpmuCounter *c, uint64_t delta)
{
    counter_advance(c, delta);
}

void vpmu_counter_program(VpmuCounter *c)
{
    counter_program(c);
}

void vpmu_counter_reprogram(VpmuCounter *c)
{
    counter_reprogram(c);
}

void vpmu_pmu_defer(VpmuPmu *pmu)
{
    vpmu_defer(pmu);
}

void vpmu_pmu_commit(VpmuPmu *pmu)
{
    vpmu_commit(pmu);
}

void vpmu_commit_dirty(VpmuPmu *pmu)
{
    while (pmu->dirty) {
        unsigned i = (unsigned)__builtin_ctzll(pmu->dirty);
        VpmuCounter *c = vpmu_counter_at(pmu, i);

        pmu->dirty &= ~BIT_ULL(i);
        if (c->state == VPMU_COUNTER_COUNTING) {
            counter_source_program(c);
        }
    }
}

static void counter_reprogram(VpmuCounter *c)
{
    /*
     * A failed read degrades the counter and it stays degraded: only a
     * guest write (counter_write/counter_set_ctl) programs it again.
     */
    if (counter_fold(c)) {
        counter_program(c);
    }
}

static void counter_write(VpmuCounter *c, uint64_t val)
{
    /* Events before the write belong to the old value (and may wrap it). */
    counter_fold(c);
    c->shadow = val & c->mask;
    counter_program(c);
}

static void counter_set_ctl(VpmuCounter *c, uint64_t ctl, const VpmuCtl *dec)
{
    counter_fold(c);
    if (c->ctl != ctl && c->state != VPMU_COUNTER_COUNTING) {
        /* A new request: a refusal of it is counted again. */
        counter_set_state(c, VPMU_COUNTER_OFF, NULL);
    }
    vpmu_counter_load_ctl(c, ctl, dec);
    counter_program(c);
}

void vpmu_pmu_apply(VpmuPmu *pmu, VpmuMsrKind kind, unsigned idx,
                    uint64_t val, const VpmuCtl dec[VPMU_MAX_FIXED],
                    bool retire)
{
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_A_PMC:
        counter_write(&pmu->gp[idx], val);
        break;
    case VPMU_MSR_FIXED_CTR:
        counter_write(&pmu->fixed[idx], val);
        break;
    case VPMU_MSR_EVTSEL:
        counter_set_ctl(&pmu->gp[idx], val, &dec[0]);
        break;
    case VPMU_MSR_FIXED_CTR_CTRL:
        for (unsigned i = 0; i < pmu->nr_fixed; i++) {
            counter_set_ctl(&pmu->fixed[i],
                            vpmu_fixed_ctrl_field(val, i), &dec[i]);
        }
        break;
    case VPMU_MSR_GLOBAL_CTRL:
        vpmu_set_global_ctrl(pmu, val);
        break;
    case VPMU_MSR_GLOBAL_OVF_CTRL:
        vpmu_status_update(pmu, 0, val);
        break;
    case VPMU_MSR_GLOBAL_STATUS_SET:
        vpmu_status_update(pmu, val, 0);
        break;
    case VPMU_MSR_DEBUGCTL:
        pmu->debugctl = val;
        break;
    default:
        /* A read-only MSR whose writes the vendor ignores (AMD status). */
        break;
    }
    /* WRMSR retires after the write: the enabling one counts. */
    if (retire) {
        count_emulated(pmu, VPMU_EVENT_INSTRUCTIONS, 0);
    }
}
