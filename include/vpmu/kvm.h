/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu KVM front end: a guest under KVM whose PMU MSRs are served by
 * libvpmu through userspace MSR exits.
 *
 * The VMM (QEMU's patches, tests/kvm's harness) does:
 *
 *   at VM creation, before any vCPU:
 *     KVM_ENABLE_CAP KVM_CAP_X86_USER_SPACE_MSR (KVM_MSR_EXIT_REASON_FILTER)
 *     vpmu_kvm_probe(), vpmu_kvm_roles(&cfg, sync, ...) and
 *     vpmu_kvm_msr_filter_roles(&cfg, rd, wr, &filter, ...), then
 *     KVM_X86_SET_MSR_FILTER (vpmu_kvm_msr_filter(): every access exits)
 *   per vCPU, on its thread, after KVM_CREATE_VCPU:
 *     vpmu_kvm_new(&opts, &k, err, sizeof(err))
 *     guest CPUID: vpmu_kvm_cpuid() on leaves 0AH / 80000001H / 80000022H
 *       before KVM_SET_CPUID2, so that KVM's own vPMU is sized like ours
 *   after every KVM_RUN (also when it returned -EINTR):
 *     KVM_EXIT_X86_RDMSR / KVM_EXIT_X86_WRMSR: vpmu_kvm_rdmsr() or
 *       vpmu_kvm_wrmsr() with kvm_run's msr.index and msr.data; the VMM
 *       sets msr.data and msr.error (kvm_run stays the VMM's)
 *     then vpmu_kvm_service(): source overflows, PMI injection
 *
 * VpmuKvmSync says which PMU MSR accesses KVM's own vPMU serves instead
 * (the overflow status by default, where KVM has the global MSRs); vpmu
 * keeps them in step in KVM and takes back what the guest did there.
 *
 * RDPMC never exits under KVM: KVM answers it from its in-kernel PMCs.
 * vpmu keeps those sized like the guest's PMU and writes the current
 * counter values into them with KVM_SET_MSRS (a "mirror") when counters
 * start or stop, when the guest writes a counter or reads the overflow
 * status, and before a PMI is injected.  By default (VPMU_KVM_RDPMC_LIVE)
 * KVM's selectors get the guest's events too, without INT (with it under
 * VPMU_KVM_SYNC_LINUX, where KVM raises a live counter's PMI), so KVM's
 * PMCs count between mirrors and a user-space RDPMC (perf's mmap reads)
 * sees a running counter; VPMU_KVM_RDPMC_SNAPSHOT keeps KVM's PMCs still, with a
 * deny-all KVM event filter, at half the host counters.  On a host whose
 * KVM has no vPMU, new() logs that once: guest RDPMC takes #GP there.
 *
 * PMI: when a counter overflows with INT set, the LVTPC entry is read
 * (KVM_GET_LAPIC): masked -> nothing; NMI delivery mode -> KVM_NMI;
 * fixed -> KVM_SIGNAL_MSI with its vector to this vCPU's APIC ID.
 *
 * Counting the exiting instruction: hardware does not count an instruction
 * that exits to the hypervisor, so a host event with exclude_host misses
 * every RDMSR/WRMSR vpmu serves.  vpmu_pmu_wrmsr() counts the WRMSR (the
 * one that enables a counter is counted, the one that disables it is not,
 * as on bare metal); vpmu_kvm_rdmsr() counts a served RDMSR.
 * What KVM retires itself (CPUID, HLT, port I/O, other MSRs) never
 * reaches userspace: in live mode vpmu takes it from KVM's PMCs
 * (KVM_GET_MSRS) before it rewrites them, stops a counter or the guest
 * reads one (docs/kvm.md).
 *
 * Threading: a VpmuKvm belongs to its vCPU thread.
 */
#ifndef VPMU_KVM_H
#define VPMU_KVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>
#include <vpmu/operator.h>
#include <vpmu/pmu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kvm_msr_filter;

typedef struct VpmuKvm VpmuKvm;

/* How KVM's own PMCs serve guest RDPMC (kvm.h above, docs/kvm.md). */
typedef enum VpmuKvmRdpmc {
    VPMU_KVM_RDPMC_LIVE = 0,        /* KVM's PMCs count the guest's events */
    VPMU_KVM_RDPMC_SNAPSHOT = 1,    /* values at mirror points only */
} VpmuKvmRdpmc;

/*
 * Which PMU MSR accesses exit to vpmu; the others KVM's own vPMU serves in
 * the kernel, from state vpmu keeps in step there (docs/kvm.md, "Who
 * serves which MSR").  vpmu_kvm_roles() is the rule.
 */
typedef enum VpmuKvmSync {
    /*
     * Exact for any guest.  Every access exits, except that KVM holds the
     * overflow status when its vPMU has the global MSRs (Intel version 2+,
     * AMD PerfMonV2) and its PMCs count live (VPMU_KVM_RDPMC_LIVE): vpmu
     * writes the status with each PMI and the guest's status reads and
     * acknowledgements (OVF_CTRL, STATUS_CLR) stay in KVM.
     */
    VPMU_KVM_SYNC_AUTO = 0,
    VPMU_KVM_SYNC_STRICT,       /* every PMU MSR access exits */
    /*
     * Also counter and selector writes and reads of the global control go
     * to KVM; only global-control writes exit, and vpmu takes what the
     * guest wrote from KVM then.  Exact for a guest that reprograms a
     * counter only while the global control has it off, as Linux does on
     * Intel version 2+ and AMD PerfMonV2; a write to a globally enabled
     * counter is seen late (counted in VpmuKvmStats.sync_late, logged).
     * KVM raises the PMI of a counter that counts live in KVM (INT stays
     * in KVM's selector): no exit for it.  Needs the global MSRs in the
     * guest's PMU and in KVM's.
     */
    VPMU_KVM_SYNC_LINUX,
} VpmuKvmSync;

/* What the host's KVM vPMU offers (vpmu_kvm_probe()). */
typedef struct VpmuKvmCaps {
    bool pmu;                   /* a vPMU that serves RDPMC */
    bool global_msrs;           /* it emulates GLOBAL_CTRL, GLOBAL_STATUS
                                   and their clear MSR for the host's vendor
                                   (Intel version 2+, AMD PerfMonV2) */
} VpmuKvmCaps;

typedef struct VpmuKvmOpts {
    int vm_fd;
    int vcpu_fd;
    uint32_t apic_id;               /* for fixed-vector PMIs (MSI) */
    const VpmuConfig *cfg;          /* the guest PMU; copied */
    const VpmuSourceOps *source_ops;
    void *source;
    const VpmuFilter *filter;       /* NULL = everything allowed; copied */
    void (*log)(void *opaque, const char *msg);     /* may be NULL */
    void *opaque;
    /*
     * Whether KVM's own vPMU is there to serve guest RDPMC from mirrored
     * values: 0 = probe (KVM_CAP_PMU_CAPABILITY, KVM_GET_SUPPORTED_CPUID),
     * 1 = yes, -1 = no (the VMM knows better, e.g. it disabled it).
     */
    int kvm_pmu;
    VpmuKvmRdpmc rdpmc;
    /*
     * The host's general-purpose counters, shared by vpmu's host events
     * and, live, KVM's own (one each per guest counter): 0 = from the
     * host's CPUID.  Live mirroring programs at most this number minus
     * the guest counters vpmu counts; the rest are snapshots.
     */
    unsigned host_counters;
    VpmuKvmSync sync;
    /* NULL: vpmu_kvm_probe(); must be what the MSR filter was made with. */
    const VpmuKvmCaps *caps;
    /*
     * May be NULL: the system's ioctl().  Every KVM ioctl of the front end
     * goes through it (tests record KVM_SET_MSRS with it); gets opaque.
     */
    int (*ioctl)(void *opaque, int fd, unsigned long req, void *arg);
} VpmuKvmOpts;

typedef struct VpmuKvmStats {
    uint64_t rdmsr_exits, wrmsr_exits;  /* served through libvpmu */
    uint64_t gp_injected;           /* exits answered with #GP */
    uint64_t mirrors;               /* KVM_SET_MSRS of counter values */
    uint64_t mirror_errors;
    uint64_t live_ctl_writes;       /* KVM selectors written (live RDPMC) */
    uint64_t live_starved;          /* counters mirrored as snapshots: the
                                       host had no counter left for KVM */
    unsigned host_counters;         /* the budget's base (opts or CPUID) */
    uint64_t pmi_nmi, pmi_fixed;    /* PMIs injected */
    uint64_t pmi_masked;            /* PMIs dropped: LVTPC masked */
    uint64_t inject_errors;
    bool kvm_pmu;                   /* KVM's vPMU is there for RDPMC */
    /* Exits served, by VpmuMsrRole: [role][0] RDMSR, [role][1] WRMSR. */
    uint64_t exits[VPMU_MSR_ROLE__COUNT][2];
    /* The front end's KVM ioctls, by kind. */
    uint64_t set_msrs, get_msrs, get_lapic, nmi, signal_msi;
    VpmuKvmSync sync;               /* in force: AUTO, STRICT or LINUX */
    unsigned kvm_read_roles;        /* 1u << role: reads KVM serves */
    unsigned kvm_write_roles;       /* ... writes KVM serves */
    uint64_t status_writes;         /* overflow bits written into KVM */
    uint64_t sync_late;             /* LINUX: counters the guest changed
                                       while globally enabled */
    uint64_t pmi_kvm;               /* LINUX: overflows KVM raised itself
                                       (PMIs it delivered, INT set) */
    uint64_t pmi_kvm_missed;        /* LINUX: overflows vpmu saw that KVM
                                       could no longer raise: vpmu did */
    uint64_t operator_updates;      /* the operator's events given what
                                       the guest leaves (kvm-operator.c) */
} VpmuKvmStats;

/* Bytes of bitmap storage vpmu_kvm_msr_filter() may need. */
#define VPMU_KVM_FILTER_BITMAP_BYTES 0x600

/**
 * vpmu_kvm_msr_filter() - the MSR filter for @cfg's PMU.
 * @cfg: the guest PMU (checked).
 * @filter: filled: KVM_MSR_FILTER_DEFAULT_ALLOW, the fewest ranges that
 *          make exactly @cfg's PMU MSRs exit (read and write), bitmaps
 *          pointing into @bitmaps.
 * @bitmaps, @len: storage for the bitmaps (VPMU_KVM_FILTER_BITMAP_BYTES).
 *
 * Return: the number of ranges, or -EINVAL / -ENOSPC.
 */
VPMU_API int vpmu_kvm_msr_filter(const VpmuConfig *cfg,
                                 struct kvm_msr_filter *filter,
                                 void *bitmaps, size_t len);

/**
 * vpmu_kvm_probe() - what the host's KVM vPMU offers, on the VM @vm_fd:
 * KVM_CAP_PMU_CAPABILITY and KVM_GET_SUPPORTED_CPUID (/dev/kvm).
 */
VPMU_API void vpmu_kvm_probe(int vm_fd, VpmuKvmCaps *out);

/**
 * vpmu_kvm_roles() - which PMU MSR accesses KVM serves under @sync, for a
 * guest PMU @cfg on a KVM with @caps: masks of 1u << VpmuMsrRole in @rd
 * (RDMSR) and @wr (WRMSR); every other PMU MSR access exits.
 * Return: 0; -ENOTSUP if @sync needs what @cfg or @caps lack (LINUX: the
 * global MSRs), with the reason in @err.
 */
VPMU_API int vpmu_kvm_roles(const VpmuConfig *cfg, VpmuKvmSync sync,
                            const VpmuKvmCaps *caps, unsigned *rd,
                            unsigned *wr, char *err, size_t errlen);

/**
 * vpmu_kvm_sync_for() - the mode in force for @sync with @rdpmc: AUTO is
 * STRICT with snapshot RDPMC (KVM's PMCs then set no status bit of their
 * own for an overflow without INT).  Give vpmu_kvm_roles() this.
 */
VPMU_API VpmuKvmSync vpmu_kvm_sync_for(VpmuKvmSync sync, VpmuKvmRdpmc rdpmc);

/**
 * vpmu_kvm_msr_filter_roles() - vpmu_kvm_msr_filter() that leaves the
 * accesses of vpmu_kvm_roles() to KVM: read and write ranges apart.
 */
VPMU_API int vpmu_kvm_msr_filter_roles(const VpmuConfig *cfg, unsigned rd,
                                       unsigned wr,
                                       struct kvm_msr_filter *filter,
                                       void *bitmaps, size_t len);

/**
 * vpmu_kvm_new() - the KVM front end of one vCPU, with its VpmuPmu.
 * Call on the vCPU thread after KVM_CREATE_VCPU, before the first KVM_RUN.
 *
 * Return: 0; -EINVAL (bad opts or config, message in @err); -ENOTSUP
 * (opts.sync needs what the PMUs or opts.rdpmc lack, message in @err);
 * -ENOMEM.
 */
VPMU_API int vpmu_kvm_new(const VpmuKvmOpts *opts, VpmuKvm **out,
                          char *err, size_t errlen);

/** vpmu_kvm_free() - free the front end and its PMU; NULL is a no-op. */
VPMU_API void vpmu_kvm_free(VpmuKvm *k);

/** vpmu_kvm_pmu() - the guest PMU (for QMP, migration, tests). */
VPMU_API VpmuPmu *vpmu_kvm_pmu(VpmuKvm *k);

/**
 * vpmu_kvm_cpuid() - apply the PMU's CPUID fields to one guest CPUID leaf.
 * Return: 0 if @leaf is a PMU leaf (regs updated), -ENOENT otherwise.
 */
VPMU_API int vpmu_kvm_cpuid(const VpmuKvm *k, uint32_t leaf,
                            uint32_t subleaf, uint32_t regs[4]);

/**
 * vpmu_kvm_rdmsr() - serve a KVM_EXIT_X86_RDMSR of @msr (kvm_run's
 * msr.index): the guest reads *@val (the VMM's msr.data).  Mirrors
 * counters into KVM when the guest reads the overflow status.
 * Return: 0 served; -ENOENT not this PMU's MSR (the VMM handles it);
 * -EINVAL the guest takes #GP (the VMM sets msr.error to 1).
 */
VPMU_API int vpmu_kvm_rdmsr(VpmuKvm *k, uint32_t msr, uint64_t *val);

/**
 * vpmu_kvm_wrmsr() - serve a KVM_EXIT_X86_WRMSR of @val (msr.data) to
 * @msr (msr.index).  Mirrors counters into KVM when the write stops
 * counters or changes a counter.
 * Return: as vpmu_kvm_rdmsr().
 */
VPMU_API int vpmu_kvm_wrmsr(VpmuKvm *k, uint32_t msr, uint64_t val);

/**
 * vpmu_kvm_service() - after every KVM_RUN: deliver a pending PMI
 * (mirror first, then NMI or vector per LVTPC), then the source's tick
 * (VpmuSourceOps.tick).  The VMM calls its source's service first
 * (vpmu_perf_source_service()).
 * Return: 0, or -errno of a failed injection (counted, logged once).
 */
VPMU_API int vpmu_kvm_service(VpmuKvm *k);

/**
 * vpmu_kvm_mirror() - write every counter's value into KVM's PMCs now.
 * Return: 0; -ENODEV if KVM has no vPMU; -errno of KVM_SET_MSRS.
 */
VPMU_API int vpmu_kvm_mirror(VpmuKvm *k);

/**
 * vpmu_kvm_state_changed() - the PMU's state changed outside an exit
 * (vpmu_pmu_load() after migration, vpmu_pmu_reset(), a KVM vCPU reset):
 * the next vpmu_kvm_service() writes it all into KVM again, on the vCPU
 * thread, where KVM's live counters must be created.  Any thread, while
 * the vCPU does not run.
 */
VPMU_API void vpmu_kvm_state_changed(VpmuKvm *k);

/**
 * vpmu_kvm_sync() - take what KVM holds for vpmu (the overflow status the
 * guest acknowledged there; LINUX: its counter and selector writes) into
 * the PMU now, e.g. before vpmu_pmu_save().  On the vCPU thread, or while
 * the vCPU does not run.
 * Return: 0, or -errno of KVM_GET_MSRS.
 */
VPMU_API int vpmu_kvm_sync(VpmuKvm *k);

/*
 * The host operator's events (operator.h) beside the guest's counters:
 * the VMM makes them with vpmu_operator_new() and the options of
 * vpmu_kvm_operator_opts(), on the vCPU thread, and hands them to the
 * front end.  Their clock is CLOCK_MONOTONIC (give vpmu_operator_read()
 * that time).
 */

/* How often the VMM gives the next turn while vpmu_kvm_operator_turns(). */
#define VPMU_KVM_OPERATOR_TURN_NS 100000000ull

/**
 * vpmu_kvm_operator_opts() - options that put operator events on this
 * vCPU's source, within what the guest's counters leave of the host's GP
 * counters now (vpmu's host events and, with live RDPMC, KVM's PMCs) and
 * the operator's set in force, if any, leaves of that: a set that
 * replaces it gets the rest at the next service after the swap.
 */
VPMU_API void vpmu_kvm_operator_opts(VpmuKvm *k, VpmuOperatorOpts *out);

/**
 * vpmu_kvm_set_operator() - count @op (NULL: none) from the next
 * vpmu_kvm_service() on: the front end gives its events what the guest
 * leaves whenever the guest's counting changes, before the guest's new
 * events are enabled, and counts on them the PMU MSR accesses it serves.
 * On the vCPU thread.
 * Return: the previous one, which the caller frees (on this thread).
 */
VPMU_API VpmuOperator *vpmu_kvm_set_operator(VpmuKvm *k, VpmuOperator *op);

/**
 * vpmu_kvm_operator_turn() - the operator's events' next turn; the VMM
 * calls it on the vCPU thread every VPMU_KVM_OPERATOR_TURN_NS while
 * vpmu_kvm_operator_turns() (a guest that never exits would otherwise
 * keep one set running).
 */
VPMU_API void vpmu_kvm_operator_turn(VpmuKvm *k);

/**
 * vpmu_kvm_operator_turns() - whether the operator's events take turns
 * (fewer host counters left than events), as of the last service or
 * turn.  On the vCPU thread.
 */
VPMU_API bool vpmu_kvm_operator_turns(const VpmuKvm *k);

/** vpmu_kvm_stats() - copy the statistics into @out. */
VPMU_API void vpmu_kvm_stats(const VpmuKvm *k, VpmuKvmStats *out);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_KVM_H */
