/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal VMM for the KVM harness and bench: one VM with the in-kernel
 * irqchip (LAPIC for LVTPC and NMIs), flat guest RAM, one vCPU started in
 * 32-bit protected mode with paging off, and vpmu's PMU MSRs routed to
 * userspace through the MSR filter.
 */
#ifndef VPMU_TESTS_KVM_VMM_H
#define VPMU_TESTS_KVM_VMM_H

#include <stddef.h>
#include <stdint.h>

#include <vpmu/kvm.h>

typedef struct Vmm {
    int kvm_fd, vm_fd, vcpu_fd;
    struct kvm_run *run;
    size_t run_size;
    uint8_t *mem;
    size_t mem_size;
} Vmm;

/*
 * vmm_open() - VM, irqchip, RAM, the user-space MSR exit cap and the
 * filter of @cfg, one vCPU.  Return: 0; -ENODEV (no /dev/kvm) or
 * -EOPNOTSUPP (a needed capability is missing): the caller SKIPs;
 * another -errno with the failing step in @err.
 */
int vmm_open(Vmm *v, const VpmuConfig *cfg, char *err, size_t errlen);

/* vmm_load() - copy a flat binary to PROTO_LOAD_GPA.  Return 0 or -errno. */
int vmm_load(Vmm *v, const char *path, char *err, size_t errlen);

/* vmm_setup() - guest CPUID through @k, GDT, protected-mode registers. */
int vmm_setup(Vmm *v, const VpmuKvm *k, char *err, size_t errlen);

/* vmm_guest_ptr() - host pointer for [gpa, gpa + len), NULL if outside. */
void *vmm_guest_ptr(Vmm *v, uint64_t gpa, size_t len);

/* vmm_close() - release everything; safe after any vmm_open(), even one
 * that failed half-way. */
void vmm_close(Vmm *v);

#endif /* VPMU_TESTS_KVM_VMM_H */
