/*
 * The cycles checks: see cycles.h.
 *
 * Every mode: counters started and stopped by one GLOBAL_CTRL write count
 * the same cycles (the TCG source reads its clock once per access).
 *
 * pmu-cycles=insns: a cycle per retired instruction, so the loop's count
 * is exact: CYC_INSNS, the enabling WRMSR included.
 *
 * Time (cputime, the default; tsc under -icount): no exact count, but
 *  - kvm-unit-tests' bounds, CYC_MIN..CYC_MAX for CYC_N rounds: a TCG
 *    round takes a few host cycles, and the CPU time clock leaves out
 *    what the host spends on other processes, so a loaded host stays
 *    inside them (the wall-clock TSC of pmu-cycles=tsc does not);
 *  - no more cycles than TSC ticks over the loop: the vCPU cannot run for
 *    longer than the wall clock.  1/1024 over is allowed for the guest TSC
 *    rate QEMU measured (to 1e-4).
 */
#include "cycles.h"

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;

    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

void cycles_add(CyclesCounters *cc, const char *name, uint32_t ctr,
                unsigned bit)
{
    if (cc->n < CYCLES_MAX_CTRS) {
        cc->name[cc->n] = name;
        cc->ctr[cc->n++] = ctr;
        cc->enable |= bit64(bit);
    }
}

static void check_time(const CyclesCounters *cc, uint64_t v, uint64_t tsc)
{
    tap_check(v >= CYC_MIN && v <= CYC_MAX, "%s over %u rounds: %llu, "
              "within kvm-unit-tests' %u..%u", cc->name[0], CYC_N, v,
              CYC_MIN, CYC_MAX);
    tap_check(v <= tsc + (tsc >> 10), "%s: %llu, no more than the %llu TSC "
              "ticks around the loop", cc->name[0], v, tsc);
}

void check_cycles(const CyclesCounters *cc)
{
    bool insns = cmdline_u64("insn_cycles", 0);
    uint64_t v[CYCLES_MAX_CTRS] = { 0 }, t0, t1;
    bool same = true;
    int vec;

    if (!cc->n) {
        tap_skip("no cycles counter", "cycles checks");
        return;
    }
    /* Translated once before it is counted. */
    measure_loop(cc->global_ctrl, 0, cc->global_ctrl, CYC_N);
    t0 = rdtsc();
    vec = measure_loop(cc->global_ctrl, cc->enable, cc->global_ctrl, CYC_N);
    t1 = rdtsc();
    for (unsigned i = 0; i < cc->n; i++) {
        rdmsr_safe(cc->ctr[i], &v[i]);
        same &= v[i] == v[0];
        tap_diag("%s: %llu", cc->name[i], v[i]);
    }
    tap_check(same && !vec, "%u cycles counters started and stopped by one "
              "WRMSR count the same (%llu)", cc->n, v[0]);
    if (insns) {
        tap_check(v[0] == CYC_INSNS, "pmu-cycles=insns: %s counts the "
                  "loop's %u instructions: %llu", cc->name[0], CYC_INSNS,
                  v[0]);
    } else {
        check_time(cc, v[0], t1 - t0);
    }
}

static void spin(uint32_t n)
{
    asm volatile("1: dec %0\n"
                 "jnz 1b\n"
                 : "+r"(n) : : "cc");
}

void cycles_spin(const CyclesCounters *cc, uint64_t rounds)
{
    uint64_t c, t;

    wrmsr_safe(cc->global_ctrl, cc->enable);
    for (uint64_t r = 0; r <= rounds; r++) {
        spin(SPIN_N);
        t = rdtsc();
        rdmsr_safe(cc->ctr[0], &c);
        tap_diag("spin %llu tsc=%llu cycles=%llu", r, t, c);
    }
    /* Running while the host reads the vCPU thread after the last line. */
    spin(SPIN_N);
    wrmsr_safe(cc->global_ctrl, 0);
}
