/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload, AMD: under -cpu host,pmu=on,pmu-gp-counters=NR_GP
 * vpmu gives PerfMonV2.  The expected values follow docs/msrs.md (AMD):
 * CPUID 80000001H/80000022H, the legacy K7 MSRs aliasing counters 0-3,
 * reserved bits dropped without #GP, 48-bit counters, #GP on counters past
 * NR_GP, GLOBAL_CTL keeping bits 0..NR_GP-1.
 */
#include "payload.h"

/* APM Vol. 2 13.2 and Appendix A. */
#define MSR_K7_EVNTSEL0         0xc0010000
#define MSR_K7_PERFCTR0         0xc0010004
#define MSR_F15H_PERF_CTL0      0xc0010200      /* CTLi = + 2i */
#define MSR_F15H_PERF_CTR0      0xc0010201      /* CTRi = + 2i */
#define MSR_GLOBAL_STATUS       0xc0000300
#define MSR_GLOBAL_CTL          0xc0000301
#define MSR_GLOBAL_STATUS_CLR   0xc0000302
#define MSR_GLOBAL_STATUS_SET   0xc0000303

/* PERF_CTLi fields (APM Vol. 2 Figure 13-7). */
#define CTL_USR         (1u << 16)
#define CTL_OS          (1u << 17)
#define CTL_INT         (1u << 20)
#define CTL_EN          (1u << 22)
#define EVENT_CYCLES    0x76    /* CPU clocks not halted */

#define GP_ENABLES      ((1u << NR_GP) - 1)

#define STR_(x)         #x
#define STR(x)          STR_(x)

static void test_cpuid(void)
{
    uint32_t r[4];

    cpuid(0x80000000, 0, r);
    tap_check(r[0] >= 0x80000022,
              "CPUID.80000000H: max leaf reaches 80000022H");
    cpuid(0x80000001, 0, r);
    tap_check(r[2] & (1u << 23), "CPUID.80000001H:ECX.PerfCtrExtCore[23] set");
    cpuid(0x80000022, 0, r);
    ok_eq(r[0], 1, "CPUID.80000022H:EAX = PerfMonV2");
    ok_eq(r[1], NR_GP, "CPUID.80000022H:EBX = " STR(NR_GP) " core counters");
    cpuid(0xa, 0, r);
    tap_check(!r[0] && !r[1] && !r[2] && !r[3],
              "CPUID.0AH all zero (AMD has no architectural PMU leaf)");
}

static void test_msrs(void)
{
    uint64_t v;

    ok_eq(rdmsr(MSR_GLOBAL_CTL), GP_ENABLES,
          "GLOBAL_CTL resets with the " STR(NR_GP) " enables set");
    wrmsr(MSR_F15H_PERF_CTL0, CTL_USR | CTL_OS | EVENT_CYCLES);
    ok_eq(rdmsr(MSR_F15H_PERF_CTL0), 0x30076, "PERF_CTL0 round trip");
    ok_eq(rdmsr(MSR_K7_EVNTSEL0), 0x30076, "K7 EVNTSEL0 aliases PERF_CTL0");
    /* Bits 19, 21 and 42 are reserved (KVM's mask 0xfffffff000280000). */
    tap_check(wrmsr_safe(MSR_F15H_PERF_CTL0, 1ull << 42 | 1u << 21 |
                         1u << 19 | CTL_USR | CTL_OS | EVENT_CYCLES) == 0,
              "PERF_CTL0 with reserved bits 19, 21, 42: no #GP");
    ok_eq(rdmsr(MSR_F15H_PERF_CTL0), 0x30076,
          "PERF_CTL0 dropped the reserved bits");
    wrmsr(MSR_F15H_PERF_CTR0, 0xffff123456789abcull);
    ok_eq(rdmsr(MSR_F15H_PERF_CTR0), 0x123456789abcull,
          "PERF_CTR0 keeps 48 bits");
    wrmsr(MSR_K7_PERFCTR0 + 1, 0x1234);
    ok_eq(rdmsr(MSR_F15H_PERF_CTR0 + 2), 0x1234,
          "K7 PERFCTR1 write, read through PERF_CTR1");
    tap_check(wrmsr_safe(MSR_F15H_PERF_CTL0 + 2 * NR_GP, 0) == VEC_GP,
              "PERF_CTL" STR(NR_GP) " absent (" STR(NR_GP) " counters) -> #GP");
    tap_check(rdmsr_safe(MSR_F15H_PERF_CTR0 + 2 * NR_GP, &v) == VEC_GP,
              "PERF_CTR" STR(NR_GP) " absent -> #GP");
    if (NR_GP < 4) {
        tap_check(rdmsr_safe(MSR_K7_EVNTSEL0 + NR_GP, &v) == VEC_GP,
                  "K7 EVNTSEL" STR(NR_GP) " of an absent counter -> #GP");
    }
    wrmsr(MSR_GLOBAL_CTL, 0xff);
    ok_eq(rdmsr(MSR_GLOBAL_CTL), GP_ENABLES,
          "GLOBAL_CTL keeps only bits 0.." STR(NR_GP) "-1");
    wrmsr(MSR_GLOBAL_STATUS_SET, 2);
    ok_eq(rdmsr(MSR_GLOBAL_STATUS), 2, "GLOBAL_STATUS_SET sets bit 1");
    ok_eq(rdmsr(MSR_GLOBAL_STATUS_SET), 0, "GLOBAL_STATUS_SET reads 0");
    wrmsr(MSR_GLOBAL_STATUS_CLR, 2);
    ok_eq(rdmsr(MSR_GLOBAL_STATUS), 0, "GLOBAL_STATUS_CLR clears it");
    wrmsr(MSR_F15H_PERF_CTL0, 0);
    wrmsr(MSR_F15H_PERF_CTR0, 0);
    wrmsr(MSR_F15H_PERF_CTR0 + 2, 0);
}

/* PerfMonV2: a counter counts only with its GLOBAL_CTL bit (13.2.2). */
static void test_global_ctl(void)
{
    uint64_t a, b;

    wrmsr(MSR_F15H_PERF_CTR0, 0);
    wrmsr(MSR_GLOBAL_CTL, GP_ENABLES & ~1u);
    wrmsr(MSR_F15H_PERF_CTL0, CTL_EN | CTL_USR | CTL_OS | EVENT_CYCLES);
    spin(20000);
    ok_eq(rdmsr(MSR_F15H_PERF_CTR0), 0,
          "GLOBAL_CTL bit 0 clear: PERF_CTR0 does not count");
    wrmsr(MSR_GLOBAL_CTL, GP_ENABLES);
    spin(20000);
    wrmsr(MSR_GLOBAL_CTL, GP_ENABLES & ~1u);
    a = rdmsr(MSR_F15H_PERF_CTR0);
    spin(20000);
    b = rdmsr(MSR_F15H_PERF_CTR0);
    diag("PERF_CTR0 after GLOBAL_CTL on, off", a, a);
    tap_check(CYCLES_DENIED ? a == 0 : a > 0,
              CYCLES_DENIED ? "GLOBAL_CTL bit 0 set: denied cycles still 0"
                             : "GLOBAL_CTL bit 0 set: PERF_CTR0 counts");
    ok_eq(b, a, "GLOBAL_CTL bit 0 cleared again: PERF_CTR0 holds");
    wrmsr(MSR_F15H_PERF_CTL0, 0);
    wrmsr(MSR_GLOBAL_CTL, GP_ENABLES);
}

static const Counter0 ctr0 = {
    .ctl = MSR_F15H_PERF_CTL0,
    .ctr = MSR_F15H_PERF_CTR0,
    .ctr_full = MSR_F15H_PERF_CTR0,
    .cycles = CTL_EN | CTL_USR | CTL_OS | EVENT_CYCLES,
    .cycles_int = CTL_EN | CTL_INT | CTL_USR | CTL_OS | EVENT_CYCLES,
    .status = MSR_GLOBAL_STATUS,
    .status_clear = MSR_GLOBAL_STATUS_CLR,
};

const Counter0 *amd_counter0(void)
{
    return &ctr0;
}

void amd_tests(void)
{
    test_cpuid();
    test_msrs();
    test_global_ctl();
    test_counter0(&ctr0);
}
