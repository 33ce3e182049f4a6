/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nested-kvm-msr: the cost of one guest PMU MSR access, as an L2 -bios
 * payload of bench/nested-kvm.sh (real mode, CPL 0, a 64 KiB image built
 * with guest-tests/kvm's entry.S and payload.ld).
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
 * then "NKMSR done gp=<#GP count>".  A #GP (entry.S skips the 2-byte
 * instruction) means the MSR is not there (pmu=off): the line still
 * prints, and gp= tells.  Exit through isa-debug-exit (port 0xf4).
 */
#include <stdint.h>

#include "../guest-tests/serial.h"

#define MSR_PERF_CTL0   0xc0010200u
#define MSR_PERF_CTR0   0xc0010201u
#define MSR_GLOBAL_CTL  0xc0000301u
#define CTL_COUNT       ((1u << 22) | (1u << 17) | (1u << 16) | 0xc0u)

#define ITERS           1000
#define REPS            7

volatile uint32_t gp_count, nmi_count;  /* entry.S's handlers count */

/* Decimal without 64-bit division: binary long division by 10. */
static void putu64(uint64_t v)
{
    char buf[21];
    int i = 0;

    do {
        uint64_t q = 0;
        uint32_t r = 0;

        for (int b = 63; b >= 0; b--) {
            r = (r << 1) | (uint32_t)((v >> b) & 1);
            if (r >= 10) {
                r -= 10;
                q |= 1ull << b;
            }
        }
        buf[i++] = '0' + r;
        v = q;
    } while (v);
    while (i) {
        putch(buf[--i]);
    }
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;

    asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
                 : "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo = 0, hi = 0;

    asm volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
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
    uint64_t t0 = rdtsc();

    for (uint32_t i = 0; i < ITERS; i++) {
        switch (op) {
        case OP_CPUID:
            cpuid0();
            break;
        case OP_RDCTR:
            (void)rdmsr(MSR_PERF_CTR0);
            break;
        case OP_WRCTR:
            wrmsr(MSR_PERF_CTR0, i);
            break;
        case OP_WRCTL:
            wrmsr(MSR_PERF_CTL0, (i & 1) ? CTL_COUNT : 0);
            break;
        case OP_RDCTL:
            (void)rdmsr(MSR_PERF_CTL0);
            break;
        case OP_WRGCTL:
            wrmsr(MSR_GLOBAL_CTL, i & 1);
            break;
        }
    }
    return rdtsc() - t0;
}

int main(void)
{
    puts_("\nNKMSR start\n");
    for (int op = 0; op < NR_OPS; op++) {
        if (op == OP_WRGCTL) {
            wrmsr(MSR_PERF_CTL0, CTL_COUNT);
        }
        (void)batch(op);
        for (int r = 1; r <= REPS; r++) {
            uint64_t t = batch(op);

            puts_("NKMSR op=");
            puts_(names[op]);
            puts_(" rep=");
            putu64(r);
            puts_(" iters=");
            putu64(ITERS);
            puts_(" tsc=");
            putu64(t);
            putch('\n');
        }
    }
    wrmsr(MSR_PERF_CTL0, 0);
    puts_("NKMSR done gp=");
    putu64(gp_count);
    putch('\n');
    return 0;
}
