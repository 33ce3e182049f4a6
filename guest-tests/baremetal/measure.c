/*
 * The counted blocks of the bare-metal PMU payloads: see measure.h for
 * the counts each must keep.
 */
#include "measure.h"
#include "events.h"

/*
 * Every counted block starts with WRMSR msr_on <- EDX:EAX (counted: it
 * enables) and a MOV of its loop count to ECX, and ends with 3
 * instructions and WRMSR msr_off <- 0 (not counted: it disables).  The
 * EXTABLE entries turn a #GP of either WRMSR into a skipped instruction
 * (and a wrong count) rather than a bail-out, so the remaining checks
 * still run.  Operands: EAX/EDX/ECX in, [n] the loop count, [off] in EDI.
 */
#define BLOCK_ON                                \
    "10: wrmsr\n"                               \
    "11: mov %[n], %%ecx\n"
#define BLOCK_OFF                               \
    "mov %[off], %%ecx\n"                       \
    "xor %%eax, %%eax\n"                        \
    "xor %%edx, %%edx\n"                        \
    "12: wrmsr\n"                               \
    "13:\n"                                     \
    EXTABLE("10b", "11b")                       \
    EXTABLE("12b", "13b")

/*
 * The counted block: see the derivation of its counts in measure.h.  The
 * round count is a register (still one MOV), so that the same block
 * serves the long loop of the cycles checks.
 */
int measure_loop(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 uint32_t n)
{
    uint32_t a = (uint32_t)val_on, d = (uint32_t)(val_on >> 32), c = msr_on;

    fault_vector = 0;
    /* The instruction count is derived in measure.h: keep in step. */
    asm volatile(BLOCK_ON
                 "1: dec %%ecx\n"
                 "jnz 1b\n"
                 BLOCK_OFF
                 : "+a"(a), "+d"(d), "+c"(c)
                 : [n] "S"(n), [off] "D"(msr_off)
                 : "memory", "cc");
    return (int)fault_vector;
}

int measure_block(uint32_t msr_on, uint64_t val_on, uint32_t msr_off)
{
    return measure_loop(msr_on, val_on, msr_off, LOOP_N);
}

/* The catalogue's blocks (events.h); keep them in step with its counts. */
static volatile uint32_t mix_mem[4];

/*
 * measure_mix's sites (events.h), labelled in its asm.  Global names in
 * an asm statement: a second copy of the function would not link.
 */
extern const char mix_site_loop[], mix_site_callee[], mix_site_after_call[],
                  mix_site_test[], mix_site_nop[], mix_site_dec[],
                  mix_site_end[];

int pmi_mix_site(uint32_t *ecx)
{
    const char *const at[] = {
        [MIX_SITE_LOOP] = mix_site_loop,
        [MIX_SITE_CALLEE] = mix_site_callee,
        [MIX_SITE_AFTER_CALL] = mix_site_after_call,
        [MIX_SITE_TEST] = mix_site_test,
        [MIX_SITE_NOP] = mix_site_nop,
        [MIX_SITE_DEC] = mix_site_dec,
        [MIX_SITE_END] = mix_site_end,
    };

    *ecx = irq_ecx;
    for (int i = MIX_SITE_LOOP; i <= MIX_SITE_END; i++) {
        if (irq_eip == (uint32_t)at[i]) {
            return i;
        }
    }
    return MIX_SITE_NONE;
}

int measure_mix(uint32_t msr, uint64_t val_on)
{
    uint32_t a = (uint32_t)val_on, d = (uint32_t)(val_on >> 32), c = msr;

    fault_vector = 0;
    asm volatile(BLOCK_ON
                 ".globl mix_site_loop, mix_site_callee, mix_site_after_call\n"
                 ".globl mix_site_test, mix_site_nop, mix_site_dec\n"
                 ".globl mix_site_end\n"
                 "mix_site_loop:\n"
                 "1: call 2f\n"
                 "mix_site_after_call:\n"
                 "jmp 3f\n"
                 "mix_site_callee:\n"
                 "2: mov (%%esi), %%eax\n"
                 "mov %%eax, 4(%%esi)\n"
                 "add %%eax, 8(%%esi)\n"
                 "ret\n"
                 "mix_site_test:\n"
                 "3: test $1, %%ecx\n"
                 "jz 4f\n"
                 "mix_site_nop:\n"
                 "nop\n"
                 "mix_site_dec:\n"
                 "4: dec %%ecx\n"
                 "jnz 1b\n"
                 "mix_site_end:\n"
                 BLOCK_OFF
                 : "+a"(a), "+d"(d), "+c"(c)
                 : [n] "i"(MIX_N), [off] "D"(msr), "S"(mix_mem)
                 : "memory", "cc");
    return (int)fault_vector;
}

int measure_far(uint32_t msr, uint64_t val_on)
{
    uint32_t a = (uint32_t)val_on, d = (uint32_t)(val_on >> 32), c = msr;

    fault_vector = 0;
    asm volatile(BLOCK_ON
                 "1: push %%cs\n"
                 "push $2f\n"
                 "lret\n"
                 "2: dec %%ecx\n"
                 "jnz 1b\n"
                 BLOCK_OFF
                 : "+a"(a), "+d"(d), "+c"(c)
                 : [n] "i"(FAR_N), [off] "D"(msr)
                 : "memory", "cc");
    return (int)fault_vector;
}

#define APIC_ICR_LO     0x300
#define APIC_ICR_HI     0x310
#define ICR_SELF        (1u << 18)  /* destination shorthand 01b */

/* Each IPI is pending under CLI and taken after STI's one-insn shadow. */
int measure_irqs(uint32_t msr, uint64_t val_on)
{
    int vec = wrmsr_safe(msr, val_on);

    for (unsigned i = 0; i < IRQ_N; i++) {
        asm volatile("cli" ::: "memory");
        apic_write(APIC_ICR_HI, 0);
        apic_write(APIC_ICR_LO, ICR_SELF | VEC_PMI);
        asm volatile("sti\nnop\n" ::: "memory");
    }
    if (!vec) {
        vec = wrmsr_safe(msr, 0);
    }
    return vec;
}
