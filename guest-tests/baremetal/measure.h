/*
 * The counted blocks of the bare-metal PMU payloads (measure.c, user.c):
 * each one's instruction and branch counts, derived here, are what the
 * checks expect.  Ring 0 (ring 3 in measure_user()), multiboot.S's flat
 * 32-bit protected mode; host-check.c has host twins of the functions.
 */
#ifndef BAREMETAL_MEASURE_H
#define BAREMETAL_MEASURE_H

#include "../runtime/runtime.h"

/*
 * measure_block(msr_on, val_on, msr_off), KVM selftests style: one asm
 * block, so the compiler cannot put anything between the two WRMSRs.
 *
 *   wrmsr                  msr_on <- val_on; retires after the write:
 *                          counted (1)
 *   mov  $LOOP_N, %ecx     1
 *   1: dec %ecx            LOOP_N
 *      jnz 1b              LOOP_N, all branches (LOOP_N - 1 taken, 1 not)
 *   mov  %edi, %ecx        1   (msr_off)
 *   xor  %eax, %eax        1
 *   xor  %edx, %edx        1
 *   wrmsr                  msr_off <- 0; retires after the counter
 *                          stopped: not counted
 *
 * Instructions: 1 WRMSR + 2 MOV + 2 XOR + 2 * LOOP_N = 2 * LOOP_N + 5.
 * Branches: LOOP_N (no other instruction in the block is a branch).
 */
#define LOOP_N          1000u
#define BLOCK_INSNS     (2 * LOOP_N + 5)    /* 2005 */
#define BLOCK_BRANCHES  LOOP_N              /* 1000 */

/* Returns 0, or the vector either WRMSR raised (it is then skipped). */
int measure_block(uint32_t msr_on, uint64_t val_on, uint32_t msr_off);
/* The same block with @n rounds: 2 * n + 5 instructions, n branches. */
int measure_loop(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 uint32_t n);

/*
 * measure_user(msr_on, val_on, msr_off, u): the loop at CPL 3 (user.c),
 * between two RDPMCs of counter u->pmc there, entered by IRET and left
 * by INT 0x80 (a DPL 3 trap gate):
 *
 *   CPL 0  wrmsr                msr_on <- val_on: counted (1)
 *          mov, mov, mov, mov   save ESP, load DS and ES with USER_DS
 *          push x 5, iret       the IRET frame, IRET: CPL 0's (10)
 *   CPL 3  mov, rdpmc           u->before: what counted before it
 *          mov, mov, mov        store it, load the rounds
 *          dec, jnz x n
 *          mov, rdpmc           u->after
 *          mov, mov, int $0x80  INT counts at CPL 3 (its TB's)
 *   CPL 0  mov, mov, mov, mov   restore ESP, DS and ES
 *          mov, xor, xor
 *          wrmsr                msr_off <- 0: not counted
 *
 * At CPL 3: 2 * n + 10 instructions, 2 * n + 5 of them from the first
 * RDPMC (included) to the second (excluded); at CPL 0: 11 + 7 = 18.
 */
#define USER_CS         0x1B        /* multiboot.S's GDT, RPL 3 */
#define USER_DS         0x23
#define USER_INSNS(n)   (2 * (n) + 10)
#define USER_RDPMC_INSNS(n) (2 * (n) + 5)
#define USER_KERNEL_INSNS 18

typedef struct UserRead {
    uint32_t pmc;               /* RDPMC's ECX */
    uint32_t n;                 /* loop rounds */
    uint64_t before, after;     /* the two RDPMCs at CPL 3 */
} UserRead;

int measure_user(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 UserRead *u);
/* The last PMI (irq_eip) interrupted measure_user()'s CPL 3 code. */
bool pmi_in_user(void);

#endif
