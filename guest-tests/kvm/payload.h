/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload: what the vendor checks (intel.c, amd.c) share
 * (lib.c).  Real mode, CPL 0; every PMU MSR access exits to QEMU and is
 * served by libvpmu; results go out as TAP on COM1.
 *
 * The PMU the payload expects is set when it is built (Makefile):
 *   NR_GP         general-purpose counters (pmu-gp-counters, or the
 *                 helper policy's "counters");
 *   CYCLES_DENIED 1 when the event filter (the helper policy's "events")
 *                 denies cycles: the cycle counter must then stay at 0;
 *   RESTART       1 for guest-tests/kvm/helper.sh's helper restart: only
 *                 test_restart() runs (lib.c).
 */
#ifndef VPMU_KVM_PAYLOAD_H
#define VPMU_KVM_PAYLOAD_H

#include <stdbool.h>
#include <stdint.h>

#ifndef NR_GP
#define NR_GP           4
#endif
#ifndef CYCLES_DENIED
#define CYCLES_DENIED   0
#endif
#ifndef RESTART
#define RESTART         0
#endif

#define MSR_IA32_APIC_BASE      0x1b
#define MSR_X2APIC_SVR          0x80f
#define MSR_X2APIC_LVTPC        0x834

/*
 * A vendor's first general-purpose counter, as the shared counting checks
 * use it: its control and value MSRs, the value MSR that takes a full
 * 48-bit write, the control that counts cycles at every CPL (with and
 * without INT), the overflow status MSR and how to clear bit 0 of it.
 */
typedef struct {
    uint32_t ctl, ctr, ctr_full;
    uint64_t cycles, cycles_int;
    uint32_t status, status_clear;
} Counter0;

extern volatile uint32_t gp_count, nmi_count;   /* entry.S's handlers */

void putdec(uint32_t n);
void ok(bool cond, const char *name);
void skip(const char *name, const char *reason);
void diag(const char *name, uint64_t got, uint64_t want);
bool ok_eq(uint64_t got, uint64_t want, const char *name);

void cpuid(uint32_t leaf, uint32_t r[4]);
bool rdmsr_gp(uint32_t msr, uint64_t *val);
bool wrmsr_gp(uint32_t msr, uint64_t val);
uint64_t rdmsr(uint32_t msr);
void wrmsr(uint32_t msr, uint64_t val);
void spin(uint32_t n);

/* Counting, holding, the overflow PMI and RDPMC on counter 0 (lib.c). */
void test_counter0(const Counter0 *c);

void intel_tests(void);
void amd_tests(void);
const Counter0 *intel_counter0(void);
const Counter0 *amd_counter0(void);

#endif
