/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internals of the KVM front end shared by kvm.c (exits, PMIs) and
 * kvm-mirror.c (KVM's own PMCs, which serve guest RDPMC).
 */
#ifndef VPMU_KVM_PRIV_H
#define VPMU_KVM_PRIV_H

#include <sys/ioctl.h>

#include <vpmu/kvm.h>

#include "vpmu-log.h"

/* CPUID fields of the host's PMU size (host_gp_counters()). */
#define CPUID_0A_EAX_NR_GP_SHIFT        8
#define CPUID_0A_EAX_NR_GP_MASK         (0xFFu << CPUID_0A_EAX_NR_GP_SHIFT)
#define CPUID_80000022_EAX_PERFMON_V2   (1u << 0)
#define CPUID_80000022_EBX_NR_CORE_MASK 0xFu
#define CPUID_80000001_ECX_PERFCTR_CORE (1u << 23)

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
};

/* What the KVM front end logs once per vCPU (vpmu-log.h). */
typedef enum VpmuKvmLogKind {
    VPMU_KVM_LOG_MIRROR,        /* KVM_SET_MSRS of a mirror failed */
    VPMU_KVM_LOG_INJECT,        /* a PMI could not be delivered */
    VPMU_KVM_LOG_CATCH_UP,      /* KVM_GET_MSRS of KVM's PMCs failed */
} VpmuKvmLogKind;

/* opts.ioctl (tests replay KVM with it) or the system's. */
static inline int vpmu_kvm__ioctl(const VpmuKvm *k, int fd, unsigned long req,
                                  void *arg)
{
    if (k->opts.ioctl) {
        return k->opts.ioctl(k->opts.opaque, fd, req, arg);
    }
    return ioctl(fd, req, arg);
}

/* kvm-mirror.c */
void vpmu_kvm__mirror_if_any(VpmuKvm *k);
int vpmu_kvm__mirror_some(VpmuKvm *k, uint64_t mask);
void vpmu_kvm__catch_up(VpmuKvm *k, uint64_t mask);

#endif /* VPMU_KVM_PRIV_H */
