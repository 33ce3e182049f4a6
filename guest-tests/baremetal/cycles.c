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
#include "pmu-common.h"

void cycles_add(CyclesCounters *cc, const char *name, uint32_t ctr,
                uint32_t pmc, unsigned bit)
{
    if (cc->n < CYCLES_MAX_CTRS) {
        cc->name[cc->n] = name;
        cc->pmc[cc->n] = pmc;
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

static void zero_counters(const CyclesCounters *cc)
{
    for (unsigned i = 0; i < cc->n; i++) {
        wrmsr_safe(cc->ctr[i], 0);
    }
}

/*
 * The CPL 0 loop: 2 * CYC_N + 5 instructions, the enabling WRMSR
 * included (measure.h).  A USR counter does not move in any mode.
 */
static void cpl0_section(const CyclesCounters *cc, bool usr, bool insns)
{
    uint64_t v;
    int vec;

    zero_counters(cc);
    vec = measure_loop(cc->global_ctrl, cc->enable, cc->global_ctrl, CYC_N);
    for (unsigned i = 0; i < cc->n; i++) {
        rdmsr_safe(cc->ctr[i], &v);
        if (usr) {
            tap_check(v == 0 && !vec, "%s, USR only: a CPL 0 loop counts "
                      "nothing: %llu", cc->name[i], v);
        } else if (insns) {
            tap_check(v == CYC_INSNS && !vec, "%s, OS only: a CPL 0 loop "
                      "counts its %u instructions: %llu", cc->name[i],
                      CYC_INSNS, v);
        } else {
            tap_check(v >= CYC_MIN && v <= CYC_MAX && !vec, "%s, OS only: "
                      "a CPL 0 loop, within %u..%u: %llu", cc->name[i],
                      CYC_MIN, CYC_MAX, v);
        }
    }
}

/*
 * The CPL 3 loop, read at CPL 3 by RDPMC of counter @i around it
 * (measure.h, measure_user: 2 * CYC_N + 5 instructions between the
 * reads, 2 * CYC_N + 10 at CPL 3 in all, 18 at CPL 0).  An OS counter
 * does not move between the reads in any mode.
 */
static void cpl3_section(const CyclesCounters *cc, unsigned i, bool usr,
                         bool insns)
{
    UserRead u = { .pmc = cc->pmc[i], .n = CYC_N };
    uint64_t v, d;
    int vec;

    zero_counters(cc);
    vec = measure_user(cc->global_ctrl, cc->enable, cc->global_ctrl, &u);
    rdmsr_safe(cc->ctr[i], &v);
    d = u.after - u.before;
    tap_diag("%s, %s, CPL 3 loop: RDPMC %llu then %llu, %llu in all",
             cc->name[i], usr ? "USR only" : "OS only", u.before, u.after, v);
    if (!usr) {
        tap_check(d == 0 && !vec, "%s, OS only: a CPL 3 loop counts "
                  "nothing between its RDPMCs: %llu", cc->name[i], d);
        tap_check(insns ? v == USER_KERNEL_INSNS : v > 0, "%s, OS only: the "
                  "CPL 0 part around a CPL 3 loop: %llu%s", cc->name[i], v,
                  insns ? ", its 18 instructions" : ", > 0");
    } else if (insns) {
        tap_check(d == USER_RDPMC_INSNS(CYC_N) && v == USER_INSNS(CYC_N) &&
                  !vec, "%s, USR only: a CPL 3 loop counts %u instructions "
                  "between its RDPMCs (%llu), %u in all (%llu)", cc->name[i],
                  USER_RDPMC_INSNS(CYC_N), d, USER_INSNS(CYC_N), v);
    } else {
        tap_check(d >= CYC_MIN && d <= CYC_MAX && v >= d && !vec, "%s, USR "
                  "only: a CPL 3 loop within %u..%u between its RDPMCs "
                  "(%llu), no more in all (%llu)", cc->name[i], CYC_MIN,
                  CYC_MAX, d, v);
    }
}

/*
 * The overflow of a counter of one CPL (docs/tcg.md, "Cycles"): counter
 * 0 preset CYC_MIN / 2 short of overflow, with its PMI (EVTSEL.INT and
 * PERF_CTL.INT are bit 20), over the CPL 3 loop, which counts at least
 * CYC_MIN at CPL 3 (cpl3_section) and a few thousand at CPL 0.  USR
 * only: one PMI, taken at CPL 3, inside the loop (a late overflow timer
 * would bring it at the disabling WRMSR, at CPL 0).  OS only: none.
 */
static void cpl_pmi(const CyclesCounters *cc, bool usr)
{
    uint64_t sel = cc->sel0 | bit64(20), on = cc->enable;
    UserRead u = { .pmc = cc->pmc[0], .n = CYC_N };
    int vec;

    zero_counters(cc);
    wrmsr_safe(cc->ctr[0], -(uint64_t)(CYC_MIN / 2) & cc->preset_mask);
    if (cc->global_ctrl == cc->sel0_msr) {
        on = sel;                   /* no global control: EN starts it */
    } else {
        wrmsr_safe(cc->sel0_msr, sel);
    }
    lvtpc_fixed();
    pmi_reset();
    vec = measure_user(cc->global_ctrl, on, cc->global_ctrl, &u);
    if (usr) {
        tap_check(expect_pmis(0, 1, "USR only, overflow in the CPL 3 loop") &&
                  pmi_in_user() && !vec, "%s, USR only: the PMI came at "
                  "CPL 3, in the loop", cc->name[0]);
    } else {
        tap_check(expect_pmis(0, 0, "OS only, CPL 3 loop") && !vec,
                  "%s, OS only: no overflow across the CPL 3 loop",
                  cc->name[0]);
    }
    if (cc->global_ctrl != cc->sel0_msr) {
        wrmsr_safe(cc->sel0_msr, cc->sel0);     /* without INT again */
    }
    apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
}

void check_cycles_cpl(const CyclesCounters *cc, unsigned cpl)
{
    bool insns = cmdline_u64("insn_cycles", 0), usr = cpl == CYC_USR;
    UserRead u = { .pmc = cc->pmc[0], .n = CYC_N };

    if (!cc->n) {
        tap_skip("no cycles counter", "USR/OS cycles checks");
        return;
    }
    /* Both sections translated once before they are counted. */
    measure_loop(cc->global_ctrl, 0, cc->global_ctrl, CYC_N);
    measure_user(cc->global_ctrl, 0, cc->global_ctrl, &u);
    cpl0_section(cc, usr, insns);
    for (unsigned i = 0; i < cc->n; i++) {
        cpl3_section(cc, i, usr, insns);
    }
    cpl_pmi(cc, usr);
}

static void spin(uint32_t n)
{
    asm volatile("1: dec %0\n"
                 "jnz 1b\n"
                 : "+r"(n) : : "cc");
}

void cycles_spin(const CyclesCounters *cc, uint64_t rounds)
{
    uint64_t c[CYCLES_MAX_CTRS] = { 0 }, t;

    for (unsigned i = 0; i < cc->n; i++) {
        tap_diag("spin counter %u: %s", i, cc->name[i]);
    }
    wrmsr_safe(cc->global_ctrl, cc->enable);
    for (uint64_t r = 0; r <= rounds; r++) {
        spin(SPIN_N);
        t = rdtsc();
        for (unsigned i = 0; i < cc->n; i++) {
            rdmsr_safe(cc->ctr[i], &c[i]);
        }
        tap_diag("spin %llu tsc=%llu cycles=%llu all=%llu,%llu,%llu,%llu,"
                 "%llu,%llu", r, t, c[0], c[0], c[1], c[2], c[3], c[4],
                 c[5]);
    }
    /* Running while the host reads the vCPU thread after the last line. */
    spin(SPIN_N);
    wrmsr_safe(cc->global_ctrl, 0);
}
