/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one runtime of the bare PMU test payloads: console output, TAP,
 * CPUID/MSR/RDPMC wrappers whose faults are recovered, one trap handler
 * for exceptions, NMIs and PMIs, and the local APIC.  Ring 0, no paging.
 *
 * The payload families differ only in their platform, one entry file
 * each, which sets up the CPU, funnels every vector into trap() and
 * provides console_putc() and platform_exit():
 *
 *   multiboot.S  QEMU -kernel (guest-tests/baremetal, migration): flat
 *                32-bit protected mode, IRET; kmain.c is its main,
 *                com1.c its console and exit (isa-debug-exit)
 *   bios16.S     QEMU -bios (guest-tests/kvm, bench/nested-kvm-msr.c):
 *                real mode in a 64 KiB segment, built gcc -m16; com1.c
 *   vmm.S        tests/kvm's own VMM: 32-bit protected mode set up by the
 *                harness, no IRET (see vmm.S); tests/kvm/guest.c is its
 *                console (port 0xE9) and exit (the harness mailbox)
 */
#ifndef VPMU_GUEST_RUNTIME_H
#define VPMU_GUEST_RUNTIME_H

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

/* Local APIC registers (xAPIC MMIO at the reset base, SDM Vol. 3A
 * Table 11-1; QEMU TCG 7.2 has no x2APIC).  Protected mode only. */
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
 * Under bios16.S the addresses are offsets in the payload's segment.
 */
#define EXTABLE(insn, resume)                   \
    ".pushsection .extable, \"a\"\n"            \
    ".balign 4\n"                               \
    ".long " insn ", " resume "\n"              \
    ".popsection\n"

/*
 * What every platform's stubs hand to trap(): PUSHA's registers, the
 * vector, the error code (0 if the exception has none) and the return
 * address and flags (zero-extended under bios16.S, which copies eip and
 * eflags back into the 16-bit frame).
 */
struct trap_frame {
    uint32_t edi, esi, ebp, esp_unused, ebx, edx, ecx, eax;
    uint32_t vector, error;
    uint32_t eip, cs, eflags;
};

/* PMIs seen since the last pmi_reset(), by delivery path. */
extern volatile uint32_t pmi_nmis;
extern volatile uint32_t pmi_fixed;

/*
 * The status MSR an NMI reads, as a guest's PMI handler would (0: none),
 * and what it read there last.
 */
extern uint32_t pmi_status_msr;
extern volatile uint64_t pmi_status;

/* What the last VEC_PMI or NMI pushed, and the #DBs seen (selftest.c). */
extern volatile uint32_t irq_eip, irq_eflags, irq_ecx;
extern volatile uint32_t db_hits, db_eip;

/* ---- the platform (its entry file and console) ---- */
void console_putc(char c);
/* Stop the payload with @code: 0 passed, 1 checks failed, 2 bail out. */
void platform_exit(uint32_t code) __attribute__((noreturn));
/* com1.c: COM1 at 115200 8N1, polled (multiboot.S and bios16.S). */
void serial_init(void);
/* The payload's entry point, called once the platform is set up. */
void payload_main(void);

/* ---- output (%s %c %d %u %x %llx %llu, width and 0 pad) ---- */
void putstr(const char *s);
int vprintf_lite(const char *fmt, va_list ap);
int printf_lite(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- traps ---- */
void traps_init(void);          /* the IDT (protected mode) */
void trap(struct trap_frame *f);

/* ---- CPU access; the _safe forms return 0 or the vector raised ---- */
void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]);
uint64_t rdmsr(uint32_t msr);   /* a fault is a bail-out */
void wrmsr(uint32_t msr, uint64_t val);
int rdmsr_safe(uint32_t msr, uint64_t *val);
int wrmsr_safe(uint32_t msr, uint64_t val);
int rdpmc_safe(uint32_t ecx, uint64_t *val);
extern volatile uint32_t fault_vector;  /* set by trap() on recovery */
extern volatile uint32_t fault_count;   /* faults recovered so far */

/* ---- local APIC (protected mode) ---- */
void apic_init(void);
uint32_t apic_read(uint32_t off);
void apic_write(uint32_t off, uint32_t val);
void pmi_reset(void);
void pmi_settle(void);

/* ---- TAP ---- */
bool tap_check(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tap_skip(const char *why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned tap_checks(void);      /* checks so far */
/* The plan, "# F of N checks failed", platform_exit(F ? 1 : 0). */
void tap_done(void) __attribute__((noreturn));

/* ---- kmain.c: the multiboot command line, "key=value ..." ---- */
void cmdline_init(uint32_t magic, uint32_t mbi);
uint64_t cmdline_u64(const char *key, uint64_t dflt);

/* ---- selftest.c: the traps, both PMI paths, breakpoints ---- */
void runtime_selftest(void);
void rf_selftest(void);

/* libc bits the compiler may call in freestanding mode */
void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;

    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline uint64_t bit64(unsigned n) { return 1ull << n; }

/* A mask of the low n bits, n <= 64. */
static inline uint64_t mask64(unsigned n)
{
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* outb, inb, putch, puts_ and COM1 */
#include "../serial.h"

#endif /* VPMU_GUEST_RUNTIME_H */
