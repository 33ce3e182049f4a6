/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest-side helpers for the KVM payloads: 32-bit protected mode, CPL 0,
 * paging off, xAPIC at its reset base.  Built -m32 -ffreestanding.
 *
 * Faulting accesses: the #GP handler counts the fault and skips the
 * 2-byte instruction (RDMSR 0F 32, WRMSR 0F 30, RDPMC 0F 33), so
 * *_safe() report whether the guest saw #GP.
 */
#ifndef VPMU_TESTS_KVM_GUEST_H
#define VPMU_TESTS_KVM_GUEST_H

#include <stdint.h>

#include "proto.h"

/* xAPIC registers at the reset APIC base (SDM Vol. 3A Table 11-1). */
#define APIC_BASE_GPA   0xFEE00000u
#define APIC_EOI        0x0B0u
#define APIC_SVR        0x0F0u      /* spurious vector; bit 8 APIC enable */
#define APIC_LVTPC      0x340u
#define APIC_SVR_ENABLE (1u << 8)
#define LVT_DM_NMI      (4u << 8)   /* delivery mode[10:8] = NMI */
#define LVT_MASKED      (1u << 16)

#define PMI_VECTOR      0xF0u

extern volatile uint32_t gp_count;
extern volatile uint32_t nmi_count;
extern volatile uint32_t irq_count;
extern volatile uint64_t nmi_status;    /* GLOBAL_STATUS read by the NMI */
extern uint32_t nmi_status_msr;         /* which MSR the NMI handler reads */

void guest_init(void);
void guest_puts(const char *s);
void guest_call(ProtoMbox *m);
void guest_check(const char *name, int pass, uint64_t got, uint64_t expected);
void guest_skip(const char *name, const char *why);
void guest_query(ProtoMbox *out);
void guest_feed(uint32_t event, uint64_t n);
void guest_done(void);
void apic_write(uint32_t reg, uint32_t val);
uint32_t apic_read(uint32_t reg);

/* Expect an equal value: one TAP line. */
#define CHECK_EQ(name, got, exp) \
    guest_check((name), (uint64_t)(got) == (uint64_t)(exp), (got), (exp))

static inline int rdmsr_safe(uint32_t msr, uint64_t *val)
{
    uint32_t lo = 0, hi = 0, before = gp_count;

    __asm__ volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return gp_count != before ? -1 : 0;
}

static inline int wrmsr_safe(uint32_t msr, uint64_t val)
{
    uint32_t before = gp_count;

    __asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)val),
                     "d"((uint32_t)(val >> 32)) : "memory");
    return gp_count != before ? -1 : 0;
}

static inline int rdpmc_safe(uint32_t ecx, uint64_t *val)
{
    uint32_t lo = 0, hi = 0, before = gp_count;

    __asm__ volatile("rdpmc" : "+a"(lo), "+d"(hi) : "c"(ecx) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return gp_count != before ? -1 : 0;
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint64_t v;

    rdmsr_safe(msr, &v);
    return v;
}

static inline void cpuid(uint32_t leaf, uint32_t r[4])
{
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(0));
}

/* Spin until *@p != @old or @max iterations have passed. */
static inline void wait_change(volatile uint32_t *p, uint32_t old, uint32_t max)
{
    for (uint32_t i = 0; i < max && *p == old; i++) {
        __asm__ volatile("pause");
    }
}

#endif /* VPMU_TESTS_KVM_GUEST_H */
