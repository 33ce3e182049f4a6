/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What KVM serves for vpmu (VpmuKvmSync, docs/kvm.md "Who serves which
 * MSR"), and taking back what the guest did there.
 *
 * A PMU MSR access that exits to userspace costs several in-kernel ones,
 * and Linux's PMI handler makes five (AMD PerfMonV2) or six (Intel v4+)
 * (issue 25).  So where KVM's own vPMU can hold a register exactly, vpmu
 * keeps it in step there and lets the guest's accesses stay in KVM:
 *
 *   AUTO: the overflow status.  vpmu writes it into KVM with each PMI
 *   (the mirror's KVM_SET_MSRS; host-initiated writes set KVM's
 *   global_status), the guest reads it and acknowledges it in KVM
 *   (OVF_CTRL / STATUS_CLR clear KVM's bits), and vpmu reads it back
 *   before it writes it again: the bits the guest cleared are cleared in
 *   the core, as the guest's WRMSR would have (vpmu_pmu_wrmsr_taken():
 *   KVM retired that WRMSR and counted it on its own live PMCs, which the
 *   catch-up takes).
 *
 *   LINUX: also counter and selector writes.  KVM's global control holds
 *   the guest's, less the counters vpmu does not count live, so while
 *   the guest has a counter globally off KVM's PMC stands still, and what
 *   the guest writes into it or its selector waits there.  Every global
 *   control write exits; vpmu first takes those writes (vpmu__pull()),
 *   in the order the guest made them as far as counting is concerned (all
 *   before the global write), then serves the global write.  A write the
 *   guest makes to a counter that counts is seen only at the next exit
 *   that pulls: counted in sync_late and logged once.
 */
#include <errno.h>
#include <string.h>

#include <vpmu/kvm.h>

#include "kvm-priv.h"

#define ROLE(r) (1u << VPMU_MSR_ROLE_##r)

/* The first MSR of @role on this PMU, 0 if it has none. */
static uint32_t role_msr(const VpmuKvm *k, VpmuMsrRole role)
{
    VpmuMsrSpan span;

    return vpmu_config_msr_spans_of(&k->cfg, 1u << role, &span, 1) > 0
           ? span.base : 0;
}

/*
 * AUTO leaves the status to KVM only while KVM's PMCs count live: an
 * overflow of a counter without INT raises no PMI, so vpmu learns of it
 * only at its next fold, and it is KVM's live PMC that sets the bit in
 * KVM's status meanwhile (KVM sets it whatever INT says).  With snapshot
 * RDPMC nothing would, so there the status stays vpmu's (STRICT).
 */
VpmuKvmSync vpmu_kvm_sync_for(VpmuKvmSync sync, VpmuKvmRdpmc rdpmc)
{
    return sync == VPMU_KVM_SYNC_AUTO && rdpmc != VPMU_KVM_RDPMC_LIVE
           ? VPMU_KVM_SYNC_STRICT : sync;
}

int vpmu_kvm__setup_sync(VpmuKvm *k, char *err, size_t errlen)
{
    VpmuKvmSync sync = vpmu_kvm_sync_for(k->opts.sync, k->opts.rdpmc);
    int ret = vpmu_kvm_roles(&k->cfg, sync, &k->caps,
                             &k->stats.kvm_read_roles,
                             &k->stats.kvm_write_roles, err, errlen);

    if (ret < 0) {
        return ret;
    }
    k->stats.sync = sync;
    if (k->stats.kvm_read_roles & ROLE(STATUS)) {
        k->status_msr = role_msr(k, VPMU_MSR_ROLE_STATUS);
        k->status_clear_msr = role_msr(k, VPMU_MSR_ROLE_STATUS_CLEAR);
    }
    return 0;
}

/*
 * The bits the guest cleared in KVM's status since vpmu last saw it, and
 * (LINUX) the overflows KVM raised itself on counters whose PMI is its.
 */
static void pull_status(VpmuKvm *k, uint64_t kvm)
{
    uint64_t cleared = k->kvm_status_valid ? k->kvm_status & ~kvm : 0;
    uint64_t raised = k->kvm_status_valid ? kvm & ~k->kvm_status : 0;

    if (cleared) {
        (void)vpmu_pmu_wrmsr_taken(k->pmu, k->status_clear_msr, cleared);
    }
    for (unsigned i = 0; raised && i < vpmu_kvm__nr(k); i++) {
        if ((k->pmi_kvm & (1ull << i)) &&
            (raised & k->msrs[i].global_enable) &&
            vpmu_pmu_pmi_delivered(k->pmu, vpmu_kvm__id(k, i)) == 0) {
            k->stats.pmi_kvm++;
        }
    }
    k->kvm_status = kvm;
    k->kvm_status_valid = true;
}

/*
 * LINUX: a counter vpmu counts live in KVM has INT in KVM's selector, so
 * its PMI is KVM's: KVM raises it when its PMC wraps, in the kernel, with
 * no exit and no signal to vpmu (issue 25: the overflow signal's exit
 * was one of three per PMI).  vpmu's PMC mirror keeps KVM's PMC at the
 * guest's value, so KVM's overflow is the guest's.  vpmu's own source
 * then needs no period (vpmu_pmu_set_pmi_elsewhere()), and the guest
 * handler's counter write costs no host call.  A counter the host budget
 * made a snapshot is not live in KVM: its PMI is vpmu's again.  A counter
 * that stops keeps its side until it counts again.
 */
void vpmu_kvm__pmi_elsewhere(VpmuKvm *k, const VpmuCounterInfo *info,
                             const uint64_t *ctl)
{
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        uint64_t bit = 1ull << i;
        bool kvm = ctl[i] != 0;

        if (info[i].state != VPMU_COUNTER_COUNTING ||
            kvm == !!(k->pmi_kvm & bit) ||
            vpmu_pmu_set_pmi_elsewhere(k->pmu, vpmu_kvm__id(k, i), kvm) < 0) {
            continue;
        }
        k->pmi_kvm ^= bit;
    }
}

/*
 * LINUX: the status bits vpmu keeps out of KVM for now, and the PMIs it
 * raises itself.  vpmu's source and KVM's PMC count the same events with
 * two host events; for an event that is not exact (cycles) vpmu's may
 * wrap first.  KVM then still raises the PMI when its own PMC wraps, and
 * sets the bit, so vpmu holds its bit back (@held, status bits) rather
 * than writing it into KVM, where it would hide KVM's raise.  Only if
 * this mirror rewrites such a counter's PMC (@written, bit i: counter i)
 * does KVM never raise it: vpmu does, with the bit (pmi_kvm_missed).
 * Return: the bits to hold back from this mirror's status.
 */
uint64_t vpmu_kvm__pmi_held(VpmuKvm *k, const VpmuCounterInfo *info,
                            uint64_t written)
{
    VpmuMsrInfo st;
    uint64_t held = 0;

    if (!k->pmi_kvm || !k->status_msr ||
        vpmu_pmu_msr_info(k->pmu, k->status_msr, &st) < 0) {
        return 0;
    }
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        uint64_t bit = k->msrs[i].global_enable;

        if (!(k->pmi_kvm & (1ull << i)) ||
            !(info[i].control & k->msrs[i].control_pmi) ||
            !(st.value & bit) || (k->kvm_status & bit)) {
            continue;
        }
        if (written & (1ull << i)) {
            /* Counted as the counter's PMI, as KVM's are (pull_status()). */
            (void)vpmu_pmu_pmi_delivered(k->pmu, vpmu_kvm__id(k, i));
            k->pmi_pending = true;
            k->stats.pmi_kvm_missed++;
        } else {
            held |= bit;
        }
    }
    return held;
}

/*
 * LINUX: a selector (GP i's, or FIXED_CTR_CTRL in slot nr_gp) KVM holds
 * that differs from what vpmu left there: the guest wrote it.  Linux's
 * tick stops and restarts a counter (EN 0 then 1) with the same event
 * while the global control is off: KVM then holds the guest's value
 * again, nothing changes for the core and no host event is touched.
 * Return: whether the core's selector changed.
 */
static bool pull_selector(VpmuKvm *k, unsigned slot, uint32_t msr,
                          uint64_t sel)
{
    VpmuMsrInfo cur;
    bool wrote = false;

    if (sel == k->kvm_sel[slot]) {
        return false;
    }
    if (vpmu_pmu_msr_info(k->pmu, msr, &cur) < 0 || cur.value != sel) {
        (void)vpmu_pmu_wrmsr_taken(k->pmu, msr, sel);
        wrote = true;
    }
    k->kvm_sel[slot] = sel;
    return wrote;
}

/*
 * LINUX: counter i's selector or value in KVM differs from what vpmu left
 * there: the guest wrote it.  Returns whether it did.
 */
static bool pull_counter(VpmuKvm *k, unsigned i, uint64_t sel, bool has_val,
                         uint64_t val)
{
    const VpmuCounterMsrs *m = &k->msrs[i];
    bool wrote = i < k->cfg.nr_gp && pull_selector(k, i, m->control, sel);

    if (has_val && val != k->kvm_val[i]) {
        (void)vpmu_pmu_wrmsr_taken(k->pmu, m->counter_full, val);
        k->kvm_val[i] = val;
        wrote = true;
    }
    return wrote;
}

/* A union, as kvm-mirror.c's MirrorBuf: room for the entries[] of hdr. */
typedef union PullBuf {
    struct kvm_msrs hdr;
    char room[sizeof(struct kvm_msrs) +
              (2 * MAX_MIRROR + 2) * sizeof(struct kvm_msr_entry)];
} PullBuf;

static void want(PullBuf *b, uint32_t msr)
{
    b->hdr.entries[b->hdr.nmsrs++].index = msr;
}

/*
 * The MSRs to read back: every counter (kept for the exit in the PMC
 * cache, so that the catch-up needs no KVM_GET_MSRS of its own), @at[i]
 * its index; LINUX: the selectors too, @sel[i].
 */
static void want_all(VpmuKvm *k, PullBuf *b, int *at, int *sel)
{
    bool linux = vpmu_kvm__linux(k) && k->kvm_ctl_valid;

    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        sel[i] = -1;
        if (linux && i < k->cfg.nr_gp) {
            sel[i] = (int)b->hdr.nmsrs;
            want(b, k->msrs[i].control);
        }
        at[i] = (int)b->hdr.nmsrs;
        want(b, k->msrs[i].counter);
    }
    if (linux && k->cfg.nr_fixed) {
        sel[k->cfg.nr_gp] = (int)b->hdr.nmsrs;
        want(b, k->msrs[k->cfg.nr_gp].control);
    }
}

/* LINUX: apply what the guest wrote; Return: the counters it wrote. */
static uint64_t apply_linux(VpmuKvm *k, const PullBuf *b, const int *at,
                           const int *sel)
{
    uint64_t wrote = 0, late = 0;
    unsigned nr_gp = k->cfg.nr_gp;

    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        const VpmuCounterMsrs *m = &k->msrs[i];
        /* A PMC KVM counts moves: the catch-up, not this, follows it. */
        bool stopped = !(k->kvm_global & m->global_enable);
        uint64_t val = b->hdr.entries[at[i]].data & vpmu_kvm__width(k, i);

        if (!pull_counter(k, i, i < nr_gp ? b->hdr.entries[sel[i]].data : 0, stopped,
                          val)) {
            continue;
        }
        wrote |= 1ull << i;
        if (!stopped) {
            late |= 1ull << i;
        }
    }
    if (k->cfg.nr_fixed &&
        pull_selector(k, nr_gp, k->msrs[nr_gp].control,
                      b->hdr.entries[sel[nr_gp]].data)) {
        wrote |= ((1ull << k->cfg.nr_fixed) - 1) << nr_gp;
    }
    if (late) {
        k->stats.sync_late += (uint64_t)__builtin_popcountll(late);
        vpmu_logf_once(&k->log, VPMU_KVM_LOG_SYNC_LATE,
                       "vpmu/kvm: the guest reprogrammed a counter that "
                       "counts (mask 0x%llx): sync=linux sees such writes "
                       "late; use sync=strict for this guest",
                       (unsigned long long)late);
    }
    return wrote;
}

/*
 * Take into the core what the guest did in KVM since the last pull: the
 * status bits it cleared and (LINUX) its counter and selector writes.
 * One KVM_GET_MSRS.  Return: the counters whose selector or value the
 * guest wrote (their base pairs are gone: a mirror must rewrite them).
 */
uint64_t vpmu_kvm__pull(VpmuKvm *k)
{
    PullBuf b;
    int at[MAX_MIRROR], sel[MAX_MIRROR];
    uint64_t wrote = 0;
    int status = -1, ret;

    /* KVM's state does not move while the vCPU is out of KVM_RUN. */
    if (k->pulled) {
        return 0;
    }
    memset(&b, 0, sizeof(b));
    if (k->status_msr) {
        status = (int)b.hdr.nmsrs;
        want(&b, k->status_msr);
    }
    want_all(k, &b, at, sel);
    ret = vpmu_kvm__ioctl(k, k->opts.vcpu_fd, KVM_GET_MSRS, &b);
    if (ret != (int)b.hdr.nmsrs) {
        vpmu_logf_once(&k->log, VPMU_KVM_LOG_CATCH_UP,
                       "vpmu/kvm: reading KVM's PMU MSRs failed: %s",
                       ret < 0 ? strerror(errno) : "stopped at an entry");
        return 0;
    }
    k->pulled = true;
    for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
        k->kvm_pmc[i] = b.hdr.entries[at[i]].data & vpmu_kvm__width(k, i);
    }
    if (status >= 0) {
        pull_status(k, b.hdr.entries[status].data);
    }
    if (vpmu_kvm__linux(k) && k->kvm_ctl_valid) {
        wrote = apply_linux(k, &b, at, sel);
        k->kvm_base_valid &= ~wrote;
    }
    return wrote;
}

/*
 * KVM's PMCs of the @n entries @e (counter MSRs), from the exit's pull
 * (one KVM_GET_MSRS, made now if not yet).  Return: whether they were read.
 */
bool vpmu_kvm__read_pmcs(VpmuKvm *k, struct kvm_msr_entry *e, unsigned n)
{
    if (!k->pulled) {
        (void)vpmu_kvm__pull(k);    /* one KVM_GET_MSRS for the exit */
    }
    if (!k->pulled) {
        return false;               /* logged once by the pull */
    }
    for (unsigned j = 0; j < n; j++) {
        for (unsigned i = 0; i < vpmu_kvm__nr(k); i++) {
            if (e[j].index == k->msrs[i].counter) {
                e[j].data = k->kvm_pmc[i];
            }
        }
    }
    return true;
}

/* Does a mirror need a pull first (LINUX, or a status to write)? */
bool vpmu_kvm__pull_due(VpmuKvm *k)
{
    VpmuMsrInfo info;

    if (vpmu_kvm__linux(k)) {
        return true;
    }
    return k->status_msr &&
           vpmu_pmu_msr_info(k->pmu, k->status_msr, &info) == 0 &&
           (!k->kvm_status_valid || info.value != k->kvm_status);
}

/*
 * The status entry of a mirror, when KVM holds the status and vpmu's
 * differs from what KVM holds (read by the pull just before, so that a
 * bit the guest cleared there is cleared here too and never undone).
 */
void vpmu_kvm__status_entry(VpmuKvm *k, struct kvm_msrs *hdr,
                            struct kvm_msr_entry *e, uint64_t held,
                            uint64_t *status)
{
    VpmuMsrInfo info;

    if (!k->status_msr ||
        vpmu_pmu_msr_info(k->pmu, k->status_msr, &info) < 0 ||
        (k->kvm_status_valid && (info.value & ~held) == k->kvm_status)) {
        return;
    }
    e[hdr->nmsrs].index = k->status_msr;
    e[hdr->nmsrs].data = info.value & ~held;
    hdr->nmsrs++;
    *status = info.value & ~held;
}

int vpmu_kvm_sync(VpmuKvm *k)
{
    uint64_t wrote;

    if (!k) {
        return -EINVAL;
    }
    wrote = vpmu_kvm__pull(k);
    if (wrote) {
        return vpmu_kvm__mirror_some(k, wrote);
    }
    return 0;
}
