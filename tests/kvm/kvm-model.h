/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A model of KVM's vPMU for the KVM front end's tests: VpmuKvmOpts.ioctl
 * stands in for a KVM whose vPMU has the global MSRs (AMD PerfMonV2,
 * Linux 6.4+; Intel version 2+).  It keeps KVM's selectors, counters,
 * global control and status as KVM would; model_wrmsr() is a guest WRMSR
 * the MSR filter leaves to KVM, model_count() what KVM's live PMCs count,
 * and a PMC that wraps sets its status bit and, with INT (fixed: PMI),
 * raises KVM's own PMI.
 */
#ifndef TESTS_KVM_MODEL_H
#define TESTS_KVM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

/* AMD PerfMonV2 (APM Vol. 2 13.2). */
#define CTL(i)      (0xC0010200u + 2u * (i))    /* PERF_CTLi */
#define CTR(i)      (0xC0010201u + 2u * (i))    /* PERF_CTRi */
#define G_STATUS    0xC0000300u
#define G_CTL       0xC0000301u
#define G_CLR       0xC0000302u                 /* PerfCntrGlobalStatusClr */
/* Intel (SDM Vol. 4 2.1). */
#define I_EVTSEL(i) (0x186u + (i))
#define I_PMC(i)    (0xC1u + (i))
#define I_A_PMC(i)  (0x4C1u + (i))              /* full-width writes */
#define I_FIXED(i)  (0x309u + (i))
#define I_FIXED_CTRL    0x38Du
#define I_STATUS    0x38Eu
#define I_CTRL      0x38Fu
#define I_OVF       0x390u
/* Event select: instructions (C0h), USR 16, OS 17, INT 20, EN 22. */
#define INSNS_ALL_INT   0x5300C0ull
#define INSNS_ALL       0x4300C0ull
#define INSNS_USR_INT   0x5100C0ull
#define MASK48          ((1ull << 48) - 1)
#define ROLE(r)         (1u << VPMU_MSR_ROLE_##r)

typedef struct Model {
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuKvm *k;
    bool intel;
    uint64_t ctl[8], ctr[8], fixed[4], fixed_ctrl, gctl, status;
    unsigned sets, gets, nmis;
    unsigned kvm_pmis;                  /* PMIs KVM raised itself */
    struct kvm_msr_entry last[32];      /* the last KVM_SET_MSRS */
    unsigned nlast;
} Model;

extern Model m;

/* VpmuKvmOpts.ioctl: the model's KVM_GET/SET_MSRS, LAPIC and NMI. */
int model_ioctl(void *opaque, int fd, unsigned long req, void *arg);
/* A vCPU of @vendor's default PMU under @sync, reset as QEMU does it. */
void model_setup(VpmuVendor vendor, VpmuKvmSync sync);
void model_teardown(void);
/* KVM's live PMCs count @n instructions at @cpl. */
void model_count(unsigned cpl, uint64_t n);
/* A guest WRMSR KVM serves (a status clear clears), then KVM retires it. */
void model_wrmsr(uint32_t msr, uint64_t val);
/* A WRMSR that exits to vpmu, then the next KVM_RUN retires it. */
void model_exit_wrmsr(uint32_t msr, uint64_t val);
/* @n instructions at CPL 3, counted by vpmu's host event and KVM's PMCs. */
void model_user(uint64_t n);
uint64_t model_core_rdmsr(uint32_t msr);

#endif /* TESTS_KVM_MODEL_H */
