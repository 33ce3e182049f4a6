/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest side of the KVM harness payloads: the runtime every bare payload
 * uses (guest-tests/runtime/runtime.h, its vmm platform: 32-bit protected
 * mode, CPL 0, paging off, xAPIC at its reset base) and the harness
 * protocol of proto.h (guest.c).  Built -m32 -ffreestanding.
 *
 * Faulting accesses: rdmsr_safe(), wrmsr_safe() and rdpmc_safe() return
 * the vector the guest saw (VEC_GP), or 0.
 */
#ifndef VPMU_TESTS_KVM_GUEST_H
#define VPMU_TESTS_KVM_GUEST_H

#include <stdint.h>

#include "../../guest-tests/runtime/runtime.h"
#include "proto.h"

/* The harness's GDT (vmm.c) has the code selector traps_init() uses. */
_Static_assert(PROTO_SEL_CODE == 0x08, "traps32.S's IDT gates use 0x08");

/* The IDT (traps_init) and an enabled APIC (spurious vector 0xFF). */
void guest_init(void);
void guest_call(ProtoMbox *m);
void guest_check(const char *name, int pass, uint64_t got, uint64_t expected);
void guest_skip(const char *name, const char *why);
void guest_query(ProtoMbox *out);
void guest_feed(uint32_t event, uint64_t n);
void guest_done(void);

/* Expect an equal value: one TAP line. */
#define CHECK_EQ(name, got, exp) \
    guest_check((name), (uint64_t)(got) == (uint64_t)(exp), (got), (exp))

/* Spin until *@p != @old or @max iterations have passed. */
static inline void wait_change(volatile uint32_t *p, uint32_t old, uint32_t max)
{
    for (uint32_t i = 0; i < max && *p == old; i++) {
        __asm__ volatile("pause");
    }
}

#endif /* VPMU_TESTS_KVM_GUEST_H */
