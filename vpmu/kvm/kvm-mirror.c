/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest RDPMC under KVM: KVM answers it in-kernel from its own PMCs
 * (kvm_emulate_rdpmc(); there is no userspace exit for it), so vpmu writes
 * its counter values into them with one KVM_SET_MSRS, a "mirror".
 *
 * Live (VPMU_KVM_RDPMC_LIVE): the same KVM_SET_MSRS first programs KVM's
 * selectors with the guest's events, without INT (with it under LINUX:
 * kvm-sync.c), for the counters vpmu counts, so KVM's PMCs count on
 * between mirrors and a user-space RDPMC sees a running counter.  perf's
 * mmap self-reads compute offset + RDPMC right after the enabling WRMSRs;
 * with values frozen at the last mirror that sum is exactly 0 ("perf
 * test" 4.3 fails).  Every mirror rebases KVM's PMCs on vpmu's values,
 * so the two differ at most by what happened since the last one
 * (docs/kvm.md).
 *
 * Snapshot (VPMU_KVM_RDPMC_SNAPSHOT): only the values; KVM's selectors stay
 * 0 and a deny-all KVM event filter keeps KVM from programming counters.
 */
#include <errno.h>
#include <string.h>

#include <linux/kvm.h>

#include <vpmu/perf.h>

#include "kvm-priv.h"

/*
 * struct kvm_msrs ends in a flexible array, so it cannot head a struct in
 * ISO C (a GNU extension, which clang -Werror refuses): a union gives its
 * entries[] the room.  Selectors, FIXED_CTR_CTRL, the global control, then
 * the values.
 */
typedef union MirrorBuf {
    struct kvm_msrs hdr;
    char room[sizeof(struct kvm_msrs) +
              (2 * MAX_MIRROR + 4) * sizeof(struct kvm_msr_entry)];
} MirrorBuf;

static void add(MirrorBuf *b, uint32_t msr, uint64_t val)
{
    b->hdr.entries[b->hdr.nmsrs].index = msr;
    b->hdr.entries[b->hdr.nmsrs].data = val;
    b->hdr.nmsrs++;
}

/*
 * What KVM's selector (GP: EVTSEL; fixed: its FIXED_CTR_CTRL field) holds
 * for a live counter: the guest's event without INT (EVTSEL[20], fixed
 * PMI[3]), so that KVM never raises a PMI of its own; 0, which stops
 * KVM's PMC, while vpmu's counter does not count (off, filtered, ...).
 */
static uint64_t live_ctl(const VpmuKvm *k, unsigned i,
                         const VpmuCounterInfo *info)
{
    if (info->state != VPMU_COUNTER_COUNTING) {
        return 0;
    }
    return info->control & ~k->msrs[i].control_pmi;
}

/*
 * Live, every guest counter vpmu counts needs two host counters: vpmu's
 * host event and KVM's own.  Both are pinned, and the host has only so
 * many: when KVM's events take them, vpmu's fail and the guest counts
 * nothing (six guest counters on a six-counter host, e.g. under guest
 * multiplexing).  So only the GP counters the host can spare count live,
 * lowest index first; the others are snapshots (selector 0), which the
 * guest kernel's own RDPMCs, after a stop or in the PMI, read exactly.
 * Return: how many were made snapshots.
 */
static unsigned apply_budget(const VpmuKvm *k, const VpmuCounterInfo *info,
                             uint64_t *ctl)
{
    unsigned counting = 0, budget, starved = 0;

    for (unsigned i = 0; i < k->cfg.nr_gp; i++) {
        counting += info[i].state == VPMU_COUNTER_COUNTING;
    }
    budget = vpmu_kvm__spare(k, counting);
    for (unsigned i = 0; i < k->cfg.nr_gp; i++) {
        if (!ctl[i]) {
            continue;
        }
        if (budget) {
            budget--;
        } else {
            ctl[i] = 0;
            starved++;
        }
    }
    return starved;
}

/*
 * Does KVM count the RDMSR/WRMSR vpmu just served when it retires it on
 * the next KVM_RUN?  kvm_skip_emulated_instruction() counts an emulated
 * instruction on every enabled PMC of the instructions event whose CPL
 * filter takes CPL 0 (kvm_pmu_trigger_event()).  vpmu counted it already.
 */
static bool kvm_counts_exit(const VpmuKvm *k, unsigned i,
                            const VpmuCounterInfo *info)
{
    return k->served_exit && info->state == VPMU_COUNTER_COUNTING &&
           info->event == VPMU_EVENT_INSTRUCTIONS &&
           (info->control & k->msrs[i].control_os);
}

/*
 * Does KVM count what it retires itself on this counter?  It adds one to
 * every enabled PMC of the instructions (or branches) event whose CPL
 * filter matches when it emulates or skips an instruction
 * (kvm_pmu_trigger_event(), kvm_pmu_instruction_retired() since 6.10;
 * EDGE, INV and CMASK ignored there; vpmu's core does not count emulated
 * events on such counters, so they are left out here).
 */
static bool kvm_emulates(const VpmuKvm *k, unsigned i,
                         const VpmuCounterInfo *info)
{
    return info->state == VPMU_COUNTER_COUNTING &&
           (info->event == VPMU_EVENT_INSTRUCTIONS ||
            info->event == VPMU_EVENT_BRANCHES) &&
           (i >= k->cfg.nr_gp || !(info->control & VPMU_RAW_MODIFIERS));
}

/*
 * The perf source's reads that found an event multiplexed (time running
 * < enabled) or credited a scaled estimate rather than what the host
 * event counted (vpmu-multiplex=scaled, even over an interval that ran
 * whole): while either grows, vpmu's value is not what its host events
 * counted, and a difference with KVM's pinned ones is no longer what KVM
 * retired itself.  0 for other sources.
 */
static uint64_t source_mux(const VpmuKvm *k)
{
    VpmuPerfStats st;

    if (k->opts.source_ops != vpmu_perf_source_ops()) {
        return 0;
    }
    vpmu_perf_source_stats(k->opts.source, &st);
    return st.multiplexed_reads + st.scaled_reads;
}

/* A base pair for counter i: KVM's PMC and vpmu's value at one instant. */
static void set_base(VpmuKvm *k, unsigned i, uint64_t kvm, uint64_t vpmu,
                     uint64_t mux)
{
    k->kvm_base[i] = kvm;
    k->vpmu_base[i] = vpmu;
    k->base_mux[i] = mux;
    k->kvm_base_valid |= 1ull << i;
}

/*
 * Instructions KVM retires itself (CPUID, RDPMC, HLT, port I/O, MMIO,
 * MSRs outside vpmu's filter, ...) exit before they retire in guest mode,
 * so vpmu's exclude_host host events never see them, and most never
 * reach userspace either.  KVM's live PMCs count them (kvm_emulates()).
 * A static glibc program runs a few dozen CPUIDs at CPL 3 before main():
 * instructions:u 36 below KVM's own vPMU, every run (issue 24).
 *
 * So for the counters in @mask whose KVM PMC counts live since a base
 * pair was taken, read KVM's PMCs (KVM_GET_MSRS; host-initiated reads
 * bypass the MSR filter): what KVM's PMC gained beyond vpmu's value since
 * the base is what KVM retired itself, and vpmu adds it to its counter.
 * Both stand still during an exit (exclude_host), so the two values are
 * of one instant; an exit in flight that vpmu counted already and KVM
 * will count on retiring it (kvm_counts_exit()) is taken off vpmu's side.
 * The difference is only that while both host events count every guest
 * event: after vpmu's were multiplexed (source_mux()), or when KVM's
 * gained less (its pinned event lost its counter), nothing is added, and
 * counting starts again from here.
 *
 * Call it before anything that rewrites KVM's PMC (a mirror) or stops
 * the counter, and before the guest reads it.
 */
void vpmu_kvm__catch_up(VpmuKvm *k, uint64_t mask)
{
    struct kvm_msr_entry e[MAX_MIRROR];
    VpmuCounterInfo info[MAX_MIRROR];
    unsigned idx[MAX_MIRROR], n = 0;
    uint64_t mux;

    mask &= k->kvm_base_valid;
    if (!mask || k->opts.rdpmc != VPMU_KVM_RDPMC_LIVE || !k->stats.kvm_pmu) {
        return;
    }
    memset(e, 0, sizeof(e));
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        if (!(mask & (1ull << i))) {
            continue;
        }
        /* Reads vpmu's source now: a multiplexed interval shows in mux. */
        if (vpmu_pmu_counter_info(k->pmu, vpmu_kvm__id(k, i), &info[i]) < 0 ||
            !kvm_emulates(k, i, &info[i])) {
            k->kvm_base_valid &= ~(1ull << i);
            continue;
        }
        e[n].index = k->msrs[i].counter;
        idx[n++] = i;
    }
    if (n == 0) {
        return;
    }
    mux = source_mux(k);
    if (!vpmu_kvm__read_pmcs(k, e, n)) {
        for (unsigned j = 0; j < n; j++) {
            k->kvm_base_valid &= ~(1ull << idx[j]);
        }
        return;
    }
    for (unsigned j = 0; j < n; j++) {
        unsigned i = idx[j];
        uint64_t width = vpmu_kvm__width(k, i);
        uint64_t kvm = e[j].data & width;
        uint64_t vpmu = (info[i].value -
                         (k->served_exit && kvm_counts_exit(k, i, &info[i])))
                        & width;
        uint64_t d = ((kvm - k->kvm_base[i]) - (vpmu - k->vpmu_base[i]))
                     & width;

        if (d && d <= width >> 1 && mux == k->base_mux[i] &&
            vpmu_pmu_counter_add(k->pmu, vpmu_kvm__id(k, i), d) == 0) {
            vpmu = (vpmu + d) & width;
        }
        set_base(k, i, kvm, vpmu, mux);
    }
}

/* The global control that leaves KVM's per-counter enables in charge. */
static bool global_ctl(const VpmuKvm *k, uint32_t *msr, uint64_t *val)
{
    *msr = k->msrs[0].global;
    *val = 0;
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        *val |= k->msrs[i].global_enable;
    }
    return *msr != 0;
}

/*
 * The selector writes of a live mirror, each only if KVM does not hold
 * that value already; @ctl receives the values.  The global control goes
 * first, once: a KVM without it (Linux 6.1 on AMD) refuses it as entry 0.
 * @starved receives how many counters the budget made snapshots.
 * Return: whether it was added.
 */
static bool add_selectors(const VpmuKvm *k, const VpmuCounterInfo *info,
                          uint64_t *ctl, unsigned *starved, MirrorBuf *b)
{
    bool all = !k->kvm_ctl_valid, fixed_changed = false, global = false;
    uint64_t fixed_ctrl = 0, gval;
    uint32_t gmsr, fixed_msr = 0;

    if (all && !k->kvm_no_global && global_ctl(k, &gmsr, &gval)) {
        add(b, gmsr, gval);
        global = true;
    }
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        ctl[i] = live_ctl(k, i, &info[i]);
    }
    *starved = apply_budget(k, info, ctl);
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        if (i >= k->cfg.nr_gp) {
            /* The fixed counters share one control, a field each. */
            fixed_msr = k->msrs[i].control;
            fixed_ctrl |= ctl[i] << k->msrs[i].control_shift;
            fixed_changed |= all || ctl[i] != k->kvm_ctl[i];
        } else if (all || ctl[i] != k->kvm_ctl[i]) {
            add(b, k->msrs[i].control, ctl[i]);
        }
    }
    if (fixed_changed) {
        add(b, fixed_msr, fixed_ctrl);
    }
    return global;
}

/*
 * LINUX (kvm-sync.c): KVM's selectors hold the guest's, INT included,
 * and its global control the guest's enables of the counters vpmu counts
 * live (@ctl, within the host budget): KVM's PMC of any other counter
 * stands still and keeps what the guest writes into it for vpmu to pull.
 * A live counter's PMI is KVM's (vpmu_kvm__pmi_elsewhere()).  Each entry
 * only if KVM does not hold that value already.
 */
static void add_linux_selectors(VpmuKvm *k, const VpmuCounterInfo *info,
                                uint64_t *ctl, unsigned *starved,
                                MirrorBuf *b)
{
    bool all = !k->kvm_ctl_valid;
    uint64_t gval = 0, fixed = 0;
    unsigned nr_gp = k->cfg.nr_gp;

    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        ctl[i] = live_ctl(k, i, &info[i]);
    }
    *starved = apply_budget(k, info, ctl);
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        const VpmuCounterMsrs *m = &k->msrs[i];
        uint64_t sel = info[i].control;

        if (ctl[i]) {
            gval |= m->global_enable;
        }
        if (i >= nr_gp) {
            fixed |= sel << m->control_shift;
        } else if (all || sel != k->kvm_sel[i]) {
            add(b, m->control, sel);
            k->kvm_sel[i] = sel;
        }
    }
    if (k->cfg.nr_fixed && (all || fixed != k->kvm_sel[nr_gp])) {
        add(b, k->msrs[nr_gp].control, fixed);
        k->kvm_sel[nr_gp] = fixed;
    }
    if (all || gval != k->kvm_global) {
        add(b, k->msrs[0].global, gval);
        k->kvm_global = gval;
    }
    vpmu_kvm__pmi_elsewhere(k, info, ctl);
}

/* One KVM_SET_MSRS; 0, -errno, or -EIO when KVM stopped at an entry. */
static int set_msrs(VpmuKvm *k, MirrorBuf *b, int *done)
{
    int ret = vpmu_kvm__ioctl(k, k->opts.vcpu_fd, KVM_SET_MSRS, b);

    if (ret < 0) {
        return -errno;
    }
    *done = ret;
    return ret == (int)b->hdr.nmsrs ? 0 : -EIO;
}

static int mirror_fail(VpmuKvm *k, int ret)
{
    k->stats.mirror_errors++;
    vpmu_logf_once(&k->log, VPMU_KVM_LOG_MIRROR,
                   "vpmu/kvm: mirroring counters into KVM failed: %s "
                   "(guest RDPMC reads stale values)", strerror(-ret));
    return ret;
}

/* No status entry in the mirror (a status never has every bit set). */
#define NO_STATUS UINT64_MAX

int vpmu_kvm_mirror(VpmuKvm *k)
{
    return vpmu_kvm__mirror_some(k, ~0ull);
}

/*
 * The values of the counters in @mask (bit i: the i-th counter, GP then
 * fixed), and of every counter whose KVM selector changes now.  A value
 * write costs KVM a perf_event_period() of its live host event: only the
 * counters the guest just touched need one.
 */
int vpmu_kvm__mirror_some(VpmuKvm *k, uint64_t mask)
{
    VpmuCounterInfo info[MAX_MIRROR];
    uint64_t ctl[MAX_MIRROR], vals[MAX_MIRROR], written = 0, mux;
    uint64_t status = NO_STATUS;
    bool live = k->opts.rdpmc == VPMU_KVM_RDPMC_LIVE, global = false;
    MirrorBuf b;
    unsigned nsel, starved = 0;
    int ret, done = 0;

    if (!k->stats.kvm_pmu) {
        return -ENODEV;
    }
    /* What the guest did in KVM (kvm-sync.c), then what KVM's PMCs
     * counted beyond vpmu's, before they are rewritten. */
    if (vpmu_kvm__pull_due(k)) {
        mask |= vpmu_kvm__pull(k);
    }
    vpmu_kvm__catch_up(k, ~0ull);
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        (void)vpmu_pmu_counter_info(k->pmu, vpmu_kvm__id(k, i), &info[i]);
    }
    mux = live ? source_mux(k) : 0;
retry:
    memset(&b, 0, sizeof(b));
    written = 0;
    if (live && vpmu_kvm__linux(k)) {
        add_linux_selectors(k, info, ctl, &starved, &b);
    } else if (live) {
        global = add_selectors(k, info, ctl, &starved, &b);
    }
    nsel = b.hdr.nmsrs;
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        uint64_t width = vpmu_kvm__width(k, i);
        /* A snapshot (selector 0) does not count the exit. */
        bool exit = live && ctl[i] && kvm_counts_exit(k, i, &info[i]);
        bool sel = live && (!k->kvm_ctl_valid || ctl[i] != k->kvm_ctl[i]);
        uint64_t val = (info[i].value - exit) & width;

        if (!live && (k->kvm_val_valid & (1ull << i)) &&
            k->kvm_val[i] == val) {
            continue;   /* KVM holds it already (a counter re-enabled) */
        }
        if ((mask & (1ull << i)) || sel) {
            add(&b, k->msrs[i].counter, val);
            vals[i] = val;
            written |= 1ull << i;
        }
    }
    vpmu_kvm__status_entry(k, &b.hdr, b.hdr.entries,
                           vpmu_kvm__pmi_held(k, info, written), &status);
    if (b.hdr.nmsrs == 0) {
        return 0;       /* nothing KVM holds changed */
    }
    ret = set_msrs(k, &b, &done);
    if (ret == -EIO && done == 0 && global) {
        k->kvm_no_global = true;    /* this KVM has no such MSR */
        goto retry;
    }
    if (ret < 0) {
        k->kvm_ctl_valid = false;
        k->kvm_val_valid = 0;
        k->kvm_base_valid = 0;
        return mirror_fail(k, ret);
    }
    k->stats.mirrors++;
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        if (written & (1ull << i)) {
            k->kvm_pmc[i] = vals[i];    /* what KVM holds for the exit */
        }
    }
    if (status != NO_STATUS) {
        k->kvm_status = status;
        k->kvm_status_valid = true;
        k->stats.status_writes++;
    }
    if (!live || vpmu_kvm__linux(k)) {
        for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
            if (written & (1ull << i)) {
                k->kvm_val[i] = vals[i];
            }
        }
        k->kvm_val_valid |= written;
    }
    if (live) {
        /*
         * A PMC written now holds vpmu's value less the exit in flight,
         * which KVM adds on retiring it: a base pair.  A snapshot
         * (selector 0) or a counter KVM adds nothing to has none.
         */
        for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
            if (!ctl[i] || !kvm_emulates(k, i, &info[i])) {
                k->kvm_base_valid &= ~(1ull << i);
            } else if (written & (1ull << i)) {
                set_base(k, i, vals[i], vals[i], mux);
            }
        }
        k->stats.live_ctl_writes += nsel;
        k->stats.live_starved += starved;
        memcpy(k->kvm_ctl, ctl, sizeof(ctl[0]) * vpmu_kvm__nr(k));
        k->kvm_ctl_valid = true;
    }
    return 0;
}

/* Mirror if KVM can serve RDPMC; a failure is counted and logged. */
void vpmu_kvm__mirror_if_any(VpmuKvm *k)
{
    if (k->stats.kvm_pmu) {
        (void)vpmu_kvm_mirror(k);
    }
}
