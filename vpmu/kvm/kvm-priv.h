/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internals of the KVM front end shared by kvm.c (exits, PMIs) and
 * kvm-mirror.c (KVM's own PMCs, which serve guest RDPMC).
 */
#ifndef VPMU_KVM_PRIV_H
#define VPMU_KVM_PRIV_H

#include <limits.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>
#include <vpmu/operator.h>

#include "vpmu-log.h"

/* Longest GP + fixed counter set: Intel 8 GP + 4 fixed. */
#define MAX_MIRROR (VPMU_INTEL_MAX_GP + VPMU_INTEL_V5_MAX_FIXED)

struct VpmuKvm {
    VpmuKvmOpts opts;
    VpmuConfig cfg;
    VpmuPmu *pmu;
    /* KVM's MSRs of counter i (GP first, then fixed), from the library. */
    VpmuCounterMsrs msrs[MAX_MIRROR];
    VpmuKvmStats stats;
    bool pmi_pending;
    VpmuLogger log;             /* opts.log; VpmuKvmLogKind once each */
    /*
     * The exit being handled is an RDMSR/WRMSR vpmu served: KVM retires
     * it when the vCPU resumes and counts it on its own live PMCs
     * (kvm_skip_emulated_instruction()), so a mirror now writes one less.
     */
    bool served_exit;
    bool mirror_requested;      /* vpmu_kvm_state_changed() */
    bool deferred;              /* an exit's vpmu_pmu_defer(), until service */
    /* Live RDPMC: what KVM's selectors hold, valid after a mirror. */
    bool kvm_ctl_valid;
    bool kvm_no_global;         /* KVM refused the global control MSR */
    uint64_t kvm_ctl[MAX_MIRROR];
    /*
     * Live RDPMC: KVM's PMC and vpmu's value of counter i at one instant
     * (bit i of kvm_base_valid), neither counting an exit in flight, and
     * the perf source's multiplexed reads then: what KVM's PMC gained
     * beyond vpmu since is what KVM retired itself (vpmu_kvm__catch_up()).
     */
    uint64_t kvm_base_valid;
    uint64_t kvm_base[MAX_MIRROR];
    uint64_t vpmu_base[MAX_MIRROR];
    uint64_t base_mux[MAX_MIRROR];
    /*
     * Snapshot RDPMC: the values KVM's PMCs hold (bit i of kvm_val_valid),
     * which do not move with selectors 0: an unchanged one is not written.
     */
    uint64_t kvm_val_valid;
    uint64_t kvm_val[MAX_MIRROR];
    /*
     * Who serves what (vpmu_kvm_roles()): KVM's reads and writes, and
     * the MSRs of the roles vpmu then keeps in step in KVM (0: none).
     */
    VpmuKvmCaps caps;
    uint32_t status_msr, status_clear_msr;
    /* KVM holds the status: the value vpmu last wrote or read there. */
    bool kvm_status_valid;
    uint64_t kvm_status;
    /*
     * LINUX: KVM's selectors hold the guest's, less INT (kvm_sel, valid
     * with kvm_ctl_valid), and its global control the guest's, less what
     * vpmu does not count live (kvm_global): a PMC stopped there holds
     * what vpmu wrote (kvm_val) until the guest writes it.
     */
    uint64_t kvm_sel[MAX_MIRROR];
    uint64_t kvm_global;
    /*
     * LINUX: bit i, counter i's PMI is KVM's (live there with INT in its
     * selector; vpmu_pmu_set_pmi_elsewhere()).
     */
    uint64_t pmi_kvm;
    bool pulled;                /* vpmu_kvm__pull() ran in this exit */
    /* With pulled: KVM's PMCs as the pull read them, or written since. */
    uint64_t kvm_pmc[MAX_MIRROR];
    /*
     * The host operator's events (kvm-operator.c), the host counters the
     * guest took at their last update (UINT_MAX: update at the next
     * service) and whether they take turns.
     */
    VpmuOperator *op;
    unsigned op_guest;
    bool op_turns;
};

/* What the KVM front end logs once per vCPU (vpmu-log.h). */
typedef enum VpmuKvmLogKind {
    VPMU_KVM_LOG_MIRROR,        /* KVM_SET_MSRS of a mirror failed */
    VPMU_KVM_LOG_INJECT,        /* a PMI could not be delivered */
    VPMU_KVM_LOG_CATCH_UP,      /* KVM_GET_MSRS of KVM's PMCs failed */
    VPMU_KVM_LOG_SYNC_LATE,     /* LINUX: a counting counter reprogrammed */
} VpmuKvmLogKind;

/* opts.ioctl (tests replay KVM with it) or the system's; counted. */
static inline int vpmu_kvm__ioctl(VpmuKvm *k, int fd, unsigned long req,
                                  void *arg)
{
    switch (req) {
    case KVM_SET_MSRS:
        k->stats.set_msrs++;
        break;
    case KVM_GET_MSRS:
        k->stats.get_msrs++;
        break;
    case KVM_GET_LAPIC:
        k->stats.get_lapic++;
        break;
    case KVM_NMI:
        k->stats.nmi++;
        break;
    case KVM_SIGNAL_MSI:
        k->stats.signal_msi++;
        break;
    }
    if (k->opts.ioctl) {
        return k->opts.ioctl(k->opts.opaque, fd, req, arg);
    }
    return ioctl(fd, req, arg);
}

static inline unsigned vpmu_kvm__nr(const VpmuKvm *k)
{
    return k->cfg.nr_gp + k->cfg.nr_fixed;
}

/* Counter i of the mirror (GP first, then fixed) as a VPMU_COUNTER id. */
static inline uint32_t vpmu_kvm__id(const VpmuKvm *k, unsigned i)
{
    return i < k->cfg.nr_gp ? VPMU_COUNTER_GP(i)
                            : VPMU_COUNTER_FIXED_ID(i - k->cfg.nr_gp);
}

static inline uint64_t vpmu_kvm__width(const VpmuKvm *k, unsigned i)
{
    return i < k->cfg.nr_gp ? (1ull << k->cfg.gp_width) - 1
                            : (1ull << k->cfg.fixed_width) - 1;
}

static inline bool vpmu_kvm__linux(const VpmuKvm *k)
{
    return k->stats.sync == VPMU_KVM_SYNC_LINUX;
}

/* kvm-sync.c */
int vpmu_kvm__setup_sync(VpmuKvm *k, char *err, size_t errlen);
uint64_t vpmu_kvm__pull(VpmuKvm *k);
bool vpmu_kvm__pull_due(VpmuKvm *k);
bool vpmu_kvm__read_pmcs(VpmuKvm *k, struct kvm_msr_entry *e, unsigned n);
void vpmu_kvm__status_entry(VpmuKvm *k, struct kvm_msrs *hdr,
                            struct kvm_msr_entry *e, uint64_t held,
                            uint64_t *status);
uint64_t vpmu_kvm__pmi_held(VpmuKvm *k, const VpmuCounterInfo *info,
                            uint64_t written);
void vpmu_kvm__pmi_elsewhere(VpmuKvm *k, const VpmuCounterInfo *info,
                             const uint64_t *ctl);

/*
 * Host GP counters left for KVM's live PMCs (and then the operator's
 * events) when @counting guest GP counters have vpmu's host events: both
 * kvm-mirror.c's budget and kvm-operator.c's go by it.
 */
static inline unsigned vpmu_kvm__spare(const VpmuKvm *k, unsigned counting)
{
    return k->stats.host_counters > counting
           ? k->stats.host_counters - counting : 0;
}

/* kvm-operator.c */
void vpmu_kvm__operator_service(VpmuKvm *k);

/* kvm-mirror.c */
void vpmu_kvm__mirror_if_any(VpmuKvm *k);
int vpmu_kvm__mirror_some(VpmuKvm *k, uint64_t mask);
void vpmu_kvm__catch_up(VpmuKvm *k, uint64_t mask);

#endif /* VPMU_KVM_PRIV_H */
