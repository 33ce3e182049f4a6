/*
 * The tiny runtime of the bare-metal PMU payloads: serial output, traps
 * with recoverable faults, MSR/CPUID/RDPMC wrappers, the local APIC and
 * TAP reporting.  Ring 0 (ring 3 in measure_user(), user.c), flat 32-bit
 * protected mode, no paging.
 */
#ifndef BAREMETAL_RUNTIME_H
#define BAREMETAL_RUNTIME_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exception vectors a recoverable instruction reports (0: none). */
#define VEC_UD          6
#define VEC_GP          13

/* Vectors the payload owns. */
#define VEC_DB          1       /* the self-test's instruction breakpoint */
#define VEC_NMI         2
#define VEC_PMI         0xF0    /* LVTPC fixed-mode vector */
#define VEC_SPURIOUS    0xFF    /* APIC SVR spurious vector */

#define EFLAGS_RF       (1u << 16)  /* SDM Vol. 1, "EFLAGS Register" */

/* Local APIC registers (xAPIC MMIO; QEMU TCG 7.2 has no x2APIC). */
#define APIC_BASE       0xFEE00000u
#define APIC_TPR        0x080
#define APIC_EOI        0x0B0
#define APIC_SVR        0x0F0
#define APIC_LVTPC      0x340
#define APIC_SVR_ENABLE (1u << 8)
#define APIC_LVT_NMI    (4u << 8)   /* delivery mode 100b */
#define APIC_LVT_MASKED (1u << 16)

/*
 * Register a recovery point for the instruction at label insn: if it
 * raises an exception, trap() sets fault_vector and resumes at resume.
 * Used inside asm statements: asm("1: rdmsr\n2:\n" EXTABLE("1b", "2b")).
 */
#define EXTABLE(insn, resume)                   \
    ".pushsection .extable, \"a\"\n"            \
    ".balign 4\n"                               \
    ".long " insn ", " resume "\n"              \
    ".popsection\n"

/* Frame built by boot.S trap_stubs + trap_common (pusha order reversed). */
struct trap_frame {
    uint32_t edi, esi, ebp, esp_unused, ebx, edx, ecx, eax;
    uint32_t vector, error;
    uint32_t eip, cs, eflags;
};

/* PMIs seen since the last pmi_reset(), by delivery path. */
extern volatile uint32_t pmi_nmis;
extern volatile uint32_t pmi_fixed;

/* What the last VEC_PMI or NMI pushed, and the #DBs seen (selftest.c). */
extern volatile uint32_t irq_eip, irq_eflags, irq_ecx;
extern volatile uint32_t db_hits, db_eip;

/* serial + formatted output (%s %c %d %u %x %llx %llu, width and 0 pad) */
void serial_init(void);
void putstr(const char *s);
int vprintf_lite(const char *fmt, va_list ap);
int printf_lite(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* exit QEMU through isa-debug-exit: status = code * 2 + 1 */
void qemu_exit(uint32_t code) __attribute__((noreturn));

/* traps */
void traps_init(void);
void trap(struct trap_frame *f);

/* CPU access; the _safe forms return 0 or the vector that was raised. */
void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]);
uint64_t rdmsr(uint32_t msr);
void wrmsr(uint32_t msr, uint64_t val);
int rdmsr_safe(uint32_t msr, uint64_t *val);
int wrmsr_safe(uint32_t msr, uint64_t val);
int rdpmc_safe(uint32_t ecx, uint64_t *val);
extern volatile uint32_t fault_vector;  /* set by trap() on recovery */

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
#define USER_CS         0x1B        /* boot.S's GDT, RPL 3 */
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

/* local APIC */
void apic_init(void);
uint32_t apic_read(uint32_t off);
void apic_write(uint32_t off, uint32_t val);
void pmi_reset(void);
void pmi_settle(void);

/* multiboot command line: "key=value ..." (decimal or 0x hex) */
void cmdline_init(uint32_t magic, uint32_t mbi);
uint64_t cmdline_u64(const char *key, uint64_t dflt);

/* TAP */
bool tap_check(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tap_skip(const char *why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_done(void) __attribute__((noreturn));

/* libc bits the compiler may call in freestanding mode */
void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline uint64_t bit64(unsigned n) { return 1ull << n; }

/* A mask of the low n bits, n <= 64. */
static inline uint64_t mask64(unsigned n)
{
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* outb, inb, putch, puts_ and COM1 */
#include "../serial.h"

/* selftest.c: the harness, and how interrupts meet breakpoints */
void runtime_selftest(void);
void rf_selftest(void);

/* The payload's entry point (pmu-intel.c / pmu-amd.c). */
void payload_main(void);

#endif
