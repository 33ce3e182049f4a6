/*
 * The event catalogue's checks (docs/events.md): exact counts of the
 * model-specific events over blocks whose counts are known by
 * construction.  Each vendor gives its encodings; the blocks and the
 * expectations are vendor-neutral.
 */
#ifndef BAREMETAL_EVENTS_H
#define BAREMETAL_EVENTS_H

#include "measure.h"

/*
 * measure_mix(msr, val_on): WRMSR msr <- val_on, then MIX_N rounds of
 *
 *   1: call 2f            near call, taken; stores the return address
 *      jmp 3f             near jump, taken
 *   2: mov (%esi), %eax   load
 *      mov %eax, 4(%esi)  store
 *      add %eax, 8(%esi)  load and store
 *      ret                near return, taken; loads
 *   3: test $1, %ecx
 *      jz 4f              conditional: taken for even ECX (MIX_N / 2)
 *      nop                (the other MIX_N / 2)
 *   4: dec %ecx
 *      jnz 1b             conditional: taken MIX_N - 1 times
 *
 * then mov/xor/xor and WRMSR msr <- 0.  Instructions: 1 WRMSR + 1 MOV +
 * 10 per round + MIX_N / 2 NOPs + 3.
 */
#define MIX_N           1000u
#define MIX_INSNS       (5 + 10 * MIX_N + MIX_N / 2)    /* 10505 */
#define MIX_BRANCHES    (5 * MIX_N)     /* call, jmp, ret, jz, jnz */
#define MIX_COND        (2 * MIX_N)
#define MIX_NTAKEN      (MIX_N / 2 + 1)
#define MIX_COND_TAKEN  (MIX_COND - MIX_NTAKEN)         /* 1499 */
#define MIX_TAKEN       (3 * MIX_N + MIX_COND_TAKEN)    /* 4499 */
#define MIX_CALLS       MIX_N
#define MIX_RETS        MIX_N
#define MIX_LOADS       (3 * MIX_N)                     /* mov, add, ret */
#define MIX_STORES      (3 * MIX_N)                     /* call, mov, add */

/*
 * measure_far(msr, val_on): FAR_N rounds of push %cs; push $1f; lret;
 * 1: dec %ecx; jnz: FAR_N far returns, FAR_N conditional branches of
 * which FAR_N - 1 are taken.  Loads and stores are not checked: LRET's
 * are done by QEMU's helper (docs/events.md).
 */
#define FAR_N           100u
#define FAR_INSNS       (5 + 5 * FAR_N)                 /* 505 */
#define FAR_FAR         FAR_N
#define FAR_BRANCHES    (2 * FAR_N)
#define FAR_COND        FAR_N
#define FAR_NEAR_TAKEN  (FAR_N - 1)

/*
 * measure_irqs(msr, val_on): IRQ_N self-IPIs to VEC_PMI, each taken at
 * CPL 0 with interrupts enabled for one instruction.
 */
#define IRQ_N           10u

int measure_mix(uint32_t msr, uint64_t val_on);
int measure_far(uint32_t msr, uint64_t val_on);
int measure_irqs(uint32_t msr, uint64_t val_on);

/*
 * Where a PMI can find measure_mix's block: the first instruction of each
 * of its translation blocks (every branch ends one), plus "elsewhere".
 */
enum {
    MIX_SITE_NONE,              /* no PMI expected; or not in the block */
    MIX_SITE_LOOP,              /* 1: call 2f */
    MIX_SITE_CALLEE,            /* 2: mov (%esi), %eax */
    MIX_SITE_AFTER_CALL,        /* jmp 3f, where ret returns */
    MIX_SITE_TEST,              /* 3: test $1, %ecx */
    MIX_SITE_NOP,               /* nop, jz not taken */
    MIX_SITE_DEC,               /* 4: dec %ecx, jz taken */
    MIX_SITE_END,               /* the mov after the loop */
};

/*
 * The overflow PMI's position: a counter preset to -PMI_K over
 * measure_mix overflows at the PMI_K-th event.  Under TCG the PMI is
 * taken at the end of the translation block that retired that event
 * (docs/events.md): at the first instruction of the next one,
 * with the ECX the loop had there.  Each case gives that site and ECX,
 * derived by hand from the block's order of events (rounds run with ECX
 * from MIX_N down; in a round: call; mov, mov, add, ret; jmp; test, jz;
 * [nop]; dec, jnz):
 *   instructions  after WRMSR and MOV (2), a pair of rounds (ECX even,
 *                 odd) retires 10 + 11: 86 after 8 rounds; round 10
 *                 (ECX 991): call 97, mov 98, mov 99, add 100, ret 101
 *                 -> AFTER_CALL, 991
 *   branches      5 a round: round 21's call -> CALLEE, 980
 *   conditional   2 a round: round 51's jz (ECX 950, even: taken)
 *                 -> DEC, 950
 *   not taken     jz of odd rounds: round 202's (ECX 799) -> NOP, 799
 *   near taken    9 a pair (call, ret, jmp, jz if even, jnz): 99 after
 *                 22 rounds; round 23 (ECX 978): call 100, ret 101
 *                 -> AFTER_CALL, 978
 *   near calls    round 101's call -> CALLEE, 900
 *   near returns  round 101's ret -> AFTER_CALL, 900
 *   loads         3 a round (mov, add, ret), all in the callee's block:
 *                 round 34's add -> AFTER_CALL, 967
 *   stores        3 a round (call, mov, add): round 34's mov
 *                 -> AFTER_CALL, 967
 * Hardware skids a few instructions past the event instead; the
 * bare-metal suite runs under TCG only.
 */
#define PMI_K           101u

/* Where the last PMI found measure_mix's block; *ecx: the ECX it had. */
int pmi_mix_site(uint32_t *ecx);

/* What a block should count of one event; NONE: not checked. */
#define NONE            (~0u)

typedef struct CatalogueCase {
    const char *name;
    uint64_t code;              /* EventSelect | UnitMask << 8 */
    uint32_t mix, far, irqs;
    uint32_t pmi_site, pmi_ecx; /* preset -PMI_K over measure_mix */
} CatalogueCase;

/*
 * Count each case's event on GP counter 0 (EVTSEL @evtsel, counter @pmc)
 * at CPL 0 over each block, after @quiesce; then, for cases with a PMI
 * site, preset the counter to @preset (-PMI_K as the vendor's counter
 * write takes it) with the interrupt bit, and check where the PMI came.
 */
void check_catalogue(const CatalogueCase *c, unsigned n, uint32_t evtsel,
                     uint32_t pmc, uint64_t preset, void (*quiesce)(void));

#endif
