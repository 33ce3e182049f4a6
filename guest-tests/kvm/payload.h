/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload: what the vendor checks (intel.c, amd.c) share
 * (lib.c), on the runtime of every bare payload (../runtime, its bios16
 * platform: real mode, CPL 0).  Every PMU MSR access exits to QEMU and is
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

#include "../runtime/runtime.h"

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

/* "# name = value", and the expected value when they differ. */
void diag(const char *name, uint64_t got, uint64_t want);
/* diag(), then one check that they are equal. */
bool ok_eq(uint64_t got, uint64_t want, const char *name);
void spin(uint32_t n);

/* Counting, holding, the overflow PMI and RDPMC on counter 0 (lib.c). */
void test_counter0(const Counter0 *c);

void intel_tests(void);
void amd_tests(void);
const Counter0 *intel_counter0(void);
const Counter0 *amd_counter0(void);

#endif
