/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-kvm payload: BATCHES rounds of three batches of BATCH_OPS RDMSRs,
 * each batch between two PROTO_MARKs:
 *   kind 0: IA32_TSC (0x10), served by KVM in the kernel;
 *   kind 1: IA32_SYSENTER_CS (0x174), served by KVM in the kernel;
 *   kind 2: IA32_PMC0 (0xC1), a userspace exit served by vpmu.
 *
 * The RDMSR is inline and the loop touches no memory: on a nested host the
 * first memory access after an exit can cost microseconds of the outer
 * hypervisor's work (measured here: ~3 us per exit for the runtime's
 * out-of-line rdmsr(), whose call and return touch the stack), which would
 * be timed as part of every exit, in-kernel or not.
 */
#include "guest.h"

#define BATCHES     15
#define BATCH_OPS   2000

static const uint32_t msrs[] = { 0x10, 0x174, 0xC1 };

static void mark(uint32_t kind)
{
    ProtoMbox m = { .cmd = PROTO_MARK, .arg = kind };

    guest_call(&m);
}

void payload_main(void)
{
    guest_init();
    for (unsigned b = 0; b < BATCHES; b++) {
        for (uint32_t k = 0; k < 3; k++) {
            mark(k);
            uint32_t msr = msrs[k];

            for (unsigned i = 0; i < BATCH_OPS; i++) {
                uint32_t lo, hi;

                __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
            }
            mark(k | 0x100);    /* end of the batch */
        }
    }
    guest_done();
}
