/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nested-kvm-msr: the cost of one guest PMU MSR access, as an L2 -bios
 * payload of bench/nested-kvm.sh (real mode, CPL 0, a 64 KiB image built
 * on guest-tests/runtime's bios16 platform).
 *
 * Under -cpu host,pmu=on on an AMD L1 (EPYC-v3, PERFCTR_CORE), it times,
 * with RDTSC, loops of:
 *   cpuid       CPUID leaf 0: always intercepted, the bare exit round trip
 *   rdmsr-ctr   RDMSR PERF_CTR0 (0xC0010201)
 *   wrmsr-ctr   WRMSR PERF_CTR0 (a new value each time)
 *   wrmsr-ctl   WRMSR PERF_CTL0 (0xC0010200), alternating between counting
 *               retired instructions (EN|USR|OS, 0xC0) and disabled
 *   rdmsr-ctl   RDMSR PERF_CTL0: for vpmu a userspace exit that needs no
 *               host call (the selector is vpmu's own state), so it prices
 *               the exit alone
 *   wrmsr-gctl  WRMSR PerfCntrGlobalCtl (0xC0000301), alternating between
 *               counter 0 enabled and none (PerfMonV2, APM 13.2.2; #GP
 *               without it), PERF_CTL0 counting meanwhile
 * ITERS accesses per batch, REPS batches per operation, after one warm-up
 * batch.  Output on COM1, one line per batch, for the L1 script to divide
 * (real mode has no 64-bit division without libgcc):
 *   NKMSR op=<op> rep=<r> iters=<n> tsc=<ticks>
 * then "NKMSR done gp=<#GP count>".  A #GP (the runtime resumes after
 * the instruction, registered with EXTABLE) means the MSR is not there
 * (pmu=off): the line still prints, and gp= tells.  Then the runtime's
 * tap_done() exits through isa-debug-exit (port 0xf4).
 */
#include "../guest-tests/runtime/runtime.h"

#define MSR_PERF_CTL0   0xc0010200u
#define MSR_PERF_CTR0   0xc0010201u
#define MSR_GLOBAL_CTL  0xc0000301u
#define CTL_COUNT       ((1u << 22) | (1u << 17) | (1u << 16) | 0xc0u)

#define ITERS           1000
#define REPS            7

static inline uint64_t rdtsc_fenced(void)
{
    uint32_t lo, hi;

    asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

/* Inline, unlike the runtime's: the loop prices the access alone. */
static inline void wrmsr_inline(uint32_t msr, uint64_t v)
{
    asm volatile("1: wrmsr\n2:\n" EXTABLE("1b", "2b")
                 : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
                 : "memory");
}

static inline uint64_t rdmsr_inline(uint32_t msr)
{
    uint32_t lo = 0, hi = 0;

    asm volatile("1: rdmsr\n2:\n" EXTABLE("1b", "2b")
                 : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void cpuid0(void)
{
    uint32_t a = 0, b, c = 0, d;

    asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
}

enum { OP_CPUID, OP_RDCTR, OP_WRCTR, OP_WRCTL, OP_RDCTL, OP_WRGCTL, NR_OPS };
static const char *const names[NR_OPS] = {
    "cpuid", "rdmsr-ctr", "wrmsr-ctr", "wrmsr-ctl", "rdmsr-ctl", "wrmsr-gctl",
};

static uint64_t batch(int op)
{
    uint64_t t0 = rdtsc_fenced();

    for (uint32_t i = 0; i < ITERS; i++) {
        switch (op) {
        case OP_CPUID:
            cpuid0();
            break;
        case OP_RDCTR:
            (void)rdmsr_inline(MSR_PERF_CTR0);
            break;
        case OP_WRCTR:
            wrmsr_inline(MSR_PERF_CTR0, i);
            break;
        case OP_WRCTL:
            wrmsr_inline(MSR_PERF_CTL0, (i & 1) ? CTL_COUNT : 0);
            break;
        case OP_RDCTL:
            (void)rdmsr_inline(MSR_PERF_CTL0);
            break;
        case OP_WRGCTL:
            wrmsr_inline(MSR_GLOBAL_CTL, i & 1);
            break;
        }
    }
    return rdtsc_fenced() - t0;
}

void payload_main(void)
{
    putstr("\nNKMSR start\n");
    for (int op = 0; op < NR_OPS; op++) {
        if (op == OP_WRGCTL) {
            wrmsr_inline(MSR_PERF_CTL0, CTL_COUNT);
        }
        (void)batch(op);
        for (int r = 1; r <= REPS; r++) {
            uint64_t t = batch(op);

            printf_lite("NKMSR op=%s rep=%d iters=%d tsc=%llu\n", names[op],
                        r, ITERS, t);
        }
    }
    wrmsr_inline(MSR_PERF_CTL0, 0);
    printf_lite("NKMSR done gp=%u\n", fault_count);
}
