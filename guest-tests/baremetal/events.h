/*
 * The event catalogue's checks (docs/events.md): exact counts of the
 * model-specific events over blocks whose counts are known by
 * construction.  Each vendor gives its encodings; the blocks and the
 * expectations are vendor-neutral.
 */
#ifndef BAREMETAL_EVENTS_H
#define BAREMETAL_EVENTS_H

#include "runtime.h"

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

/* What a block should count of one event; NONE: not checked. */
#define NONE            (~0u)

typedef struct CatalogueCase {
    const char *name;
    uint64_t code;              /* EventSelect | UnitMask << 8 */
    uint32_t mix, far, irqs;
} CatalogueCase;

/*
 * Count each case's event on GP counter 0 (EVTSEL @evtsel, counter @pmc)
 * at CPL 0 over each block, after @quiesce.
 */
void check_catalogue(const CatalogueCase *c, unsigned n, uint32_t evtsel,
                     uint32_t pmc, void (*quiesce)(void));

#endif
