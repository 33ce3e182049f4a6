/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload, Intel: under
 *   -cpu host,pmu=on,pmu-version=2,pmu-gp-counters=NR_GP,
 *       pmu-fixed-counters=3,pmu-width=48
 * The expected values follow docs/msrs.md: CPUID 0AH as configured,
 * PMCi writes sign-extended from bit 31 to the 48-bit width, A_PMCi
 * full-width writes (PERF_CAPABILITIES.FW_WRITE), #GP on reserved bits,
 * on read-only GLOBAL_STATUS and on counters past NR_GP.
 */
#include "payload.h"

#define MSR_IA32_PMC0           0xc1
#define MSR_IA32_PERFEVTSEL0    0x186
#define MSR_PERF_CAPABILITIES   0x345
#define MSR_FIXED_CTR0          0x309
#define MSR_FIXED_CTR_CTRL      0x38d
#define MSR_GLOBAL_STATUS       0x38e
#define MSR_GLOBAL_CTRL         0x38f
#define MSR_GLOBAL_OVF_CTRL     0x390
#define MSR_IA32_A_PMC0         0x4c1

/* IA32_PERFEVTSELx fields (SDM Vol. 3 Figure 20-1). */
#define EVTSEL_USR      (1u << 16)
#define EVTSEL_OS       (1u << 17)
#define EVTSEL_INT      (1u << 20)
#define EVTSEL_EN       (1u << 22)
#define EVENT_CYCLES    0x3c    /* UnHalted Core Cycles, umask 0 */

/* What run.sh configures besides NR_GP. */
#define NR_FIXED        3
#define WIDTH           48
#define GP_ENABLES      ((1u << NR_GP) - 1)

#define STR_(x)         #x
#define STR(x)          STR_(x)

static void test_cpuid(void)
{
    uint32_t r[4];

    cpuid(0, 0, r);
    tap_check(r[0] >= 0xa, "CPUID.0: max leaf reaches 0AH");
    cpuid(1, 0, r);
    tap_check(r[2] & (1u << 15), "CPUID.1:ECX.PDCM[15] set");
    cpuid(0xa, 0, r);
    /* EAX: version | GP << 8 | width << 16 | EBX length 7 << 24 */
    ok_eq(r[0], 2 | NR_GP << 8 | WIDTH << 16 | 7 << 24,
          "CPUID.0AH:EAX (v2, " STR(NR_GP) " GP, 48 bits, 7 events)");
    diag("CPUID.0AH:EBX (unavailable events)", r[1], r[1]);
    /*
     * A policy that denies cycles refuses the perf source's probe of
     * them, on every host: they are then unavailable (libvpmu's
     * vpmu/perf/perf.c, probe_host()).
     */
    if (CYCLES_DENIED) {
        tap_check(r[1] & 1, "CPUID.0AH:EBX[0] set: cycles unavailable "
                  "(the policy denies them)");
    } else {
        tap_check(!(r[1] & 1), "CPUID.0AH:EBX[0] clear: cycles available");
    }
    ok_eq(r[3], NR_FIXED | WIDTH << 5, "CPUID.0AH:EDX (3 fixed, 48 bits)");
}

static void test_msrs(void)
{
    uint64_t v;

    ok_eq(rdmsr(MSR_PERF_CAPABILITIES), 1u << 13,
          "PERF_CAPABILITIES = FW_WRITE");
    ok_eq(rdmsr(MSR_GLOBAL_CTRL), GP_ENABLES,
          "GLOBAL_CTRL resets with the " STR(NR_GP) " GP enables set");
    wrmsr(MSR_IA32_PERFEVTSEL0, EVTSEL_USR | EVTSEL_OS | EVENT_CYCLES);
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0), 0x3003c, "PERFEVTSEL0 round trip");
    wrmsr(MSR_IA32_PERFEVTSEL0 + NR_GP - 1, 0x1300c4);
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0 + NR_GP - 1), 0x1300c4,
          "PERFEVTSEL" STR(NR_GP) "-1 round trip");
    wrmsr(MSR_IA32_PERFEVTSEL0 + NR_GP - 1, 0);
    wrmsr(MSR_IA32_PMC0, 0x12345678);
    ok_eq(rdmsr(MSR_IA32_PMC0), 0x12345678, "PMC0 round trip");
    wrmsr(MSR_IA32_PMC0, 0x87654321);
    ok_eq(rdmsr(MSR_IA32_PMC0), 0xffff87654321ull,
          "PMC0 write sign-extends bit 31 to 48 bits");
    wrmsr(MSR_IA32_A_PMC0 + 1, 0x123456789abcull);
    ok_eq(rdmsr(MSR_IA32_PMC0 + 1), 0x123456789abcull,
          "A_PMC1 full-width write, read through PMC1");

    tap_check(wrmsr_safe(MSR_IA32_PERFEVTSEL0,
                         1ull << 32 | EVENT_CYCLES) == VEC_GP,
              "PERFEVTSEL0 reserved bit 32 -> #GP");
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0), 0x3003c,
          "PERFEVTSEL0 unchanged by the faulting write");
    tap_check(wrmsr_safe(MSR_IA32_PERFEVTSEL0,
                         1u << 21 | EVENT_CYCLES) == VEC_GP,
              "PERFEVTSEL0 AnyThread (bit 21, reserved on v2) -> #GP");
    tap_check(wrmsr_safe(MSR_GLOBAL_STATUS, 1) == VEC_GP,
              "GLOBAL_STATUS is read-only -> #GP");
    tap_check(rdmsr_safe(MSR_IA32_PMC0 + NR_GP, &v) == VEC_GP,
              "PMC" STR(NR_GP) " absent (" STR(NR_GP) " GP) -> #GP");
    tap_check(wrmsr_safe(MSR_IA32_PERFEVTSEL0 + NR_GP, 0) == VEC_GP,
              "PERFEVTSEL" STR(NR_GP) " absent -> #GP");
    tap_check(rdmsr_safe(MSR_FIXED_CTR0 + NR_FIXED, &v) == VEC_GP,
              "FIXED_CTR3 absent (3 fixed) -> #GP");
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    wrmsr(MSR_IA32_PMC0, 0);
    wrmsr(MSR_IA32_PMC0 + 1, 0);
}

/*
 * Fixed counter 1 counts cycles: FIXED_CTR_CTRL field 1 = OS|USR and
 * GLOBAL_CTRL bit 33 (SDM Vol. 3 20.2.2).  The event filter governs
 * fixed counters by its fixed bitmap, which both policies leave open
 * (libvirt/run.py); with cycles denied the source cannot count them, so
 * the counter stays at 0.
 */
static void test_fixed(void)
{
    uint64_t c;

    wrmsr(MSR_FIXED_CTR0 + 1, 0);
    wrmsr(MSR_FIXED_CTR_CTRL, 0x3 << 4);
    wrmsr(MSR_GLOBAL_CTRL, (1ull << 33) | GP_ENABLES);
    spin(20000);
    c = rdmsr(MSR_FIXED_CTR0 + 1);
    diag("FIXED_CTR1 cycles", c, c);
    if (CYCLES_DENIED) {
        tap_check(c == 0, "cycles denied by the policy: FIXED_CTR1 stays at 0");
    } else {
        tap_check(c > 0, "FIXED_CTR1 counts cycles");
    }
    wrmsr(MSR_FIXED_CTR_CTRL, 0);
    wrmsr(MSR_GLOBAL_CTRL, GP_ENABLES);
}

static const Counter0 pmc0 = {
    .ctl = MSR_IA32_PERFEVTSEL0,
    .ctr = MSR_IA32_PMC0,
    .ctr_full = MSR_IA32_A_PMC0,
    .cycles = EVTSEL_EN | EVTSEL_USR | EVTSEL_OS | EVENT_CYCLES,
    .cycles_int = EVTSEL_EN | EVTSEL_INT | EVTSEL_USR | EVTSEL_OS |
                  EVENT_CYCLES,
    .status = MSR_GLOBAL_STATUS,
    .status_clear = MSR_GLOBAL_OVF_CTRL,
};

const Counter0 *intel_counter0(void)
{
    return &pmc0;
}

void intel_tests(void)
{
    test_cpuid();
    test_msrs();
    test_fixed();
    test_counter0(&pmc0);
}
