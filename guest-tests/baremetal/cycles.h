/*
 * The cycles checks (docs/tcg.md, "Cycles"): what each pmu-cycles mode
 * promises of unhalted core and reference cycles, over a loop long enough
 * for a loaded host to deschedule QEMU in the middle of it.
 */
#ifndef BAREMETAL_CYCLES_H
#define BAREMETAL_CYCLES_H

#include "measure.h"

/*
 * measure_loop(msr_on, val_on, msr_off, CYC_N): measure_block() with
 * CYC_N rounds: 2 * CYC_N + 5 instructions (measure.h).  Two million
 * instructions, a few ms under TCG: a window a busy host's scheduler
 * can cut into, like kvm-unit-tests' x86/pmu loop.
 */
#define CYC_N           1000000u
#define CYC_INSNS       (2 * CYC_N + 5)
/* kvm-unit-tests x86/pmu's bounds for "core cycles" of its N-round loop. */
#define CYC_MIN         CYC_N
#define CYC_MAX         (50 * CYC_N)

#define CYCLES_MAX_CTRS 6

/* At which CPLs the vendor programs its cycles counters to count. */
#define CYC_OS          1u      /* CPL 0 (EVTSEL.OS, FIXED_CTR_CTRL OS) */
#define CYC_USR         2u      /* CPL 3 */

/* Cycles counters a vendor programmed, all enabled by one write. */
typedef struct CyclesCounters {
    uint32_t global_ctrl;       /* the global enable MSR */
    uint64_t enable;            /* its value that enables them all */
    unsigned n;
    const char *name[CYCLES_MAX_CTRS];
    uint32_t ctr[CYCLES_MAX_CTRS];
    uint32_t pmc[CYCLES_MAX_CTRS];  /* RDPMC's ECX for each */
    /* Counter 0's event select MSR, its value, and what a write of its
     * count keeps (Intel's legacy PMC: 32 bits, sign-extended). */
    uint32_t sel0_msr;
    uint64_t sel0;
    uint64_t preset_mask;
} CyclesCounters;

/*
 * Add counter @ctr (@name; RDPMC index @pmc) with global enable bit @bit
 * to @cc.
 */
void cycles_add(CyclesCounters *cc, const char *name, uint32_t ctr,
                uint32_t pmc, unsigned bit);

/*
 * Count the loop on every counter of @cc, programmed and globally
 * disabled, and check what the mode promises: the multiboot command line
 * says insn_cycles=1 for pmu-cycles=insns.
 */
void check_cycles(const CyclesCounters *cc);

/*
 * USR/OS: @cc counts at CPL 3 only (@cpl CYC_USR) or at CPL 0 only
 * (CYC_OS), over a CPL 0 loop (measure_loop) and a CPL 3 loop
 * (measure_user, once per counter, read by RDPMC at CPL 3 around it);
 * then counter 0 with a PMI half way to the loop's least count.
 */
void check_cycles_cpl(const CyclesCounters *cc, unsigned cpl);

/*
 * For guest-tests/load (the multiboot command line says spin=ROUNDS):
 * name the counters ("# spin counter I: NAME"), start them, then
 * ROUNDS + 1 times spin for SPIN_N loop rounds and print "# spin R tsc=T
 * cycles=C all=C0,...,C5" (TSC, the first counter, every counter, 0 for
 * those not there), so that the host can set the cycles the guest counted
 * against the CPU time the kernel gave the vCPU thread over the same
 * rounds.
 */
#define SPIN_N          50000000u
void cycles_spin(const CyclesCounters *cc, uint64_t rounds);

#endif
