/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The runtime of the bare PMU payloads: see runtime.h.  Built for every
 * platform, gcc -m16 included: nothing here may assume protected mode
 * unless only a protected-mode platform calls it (traps_init, the APIC).
 */
#include "runtime.h"

#define MSR_APIC_BASE   0x1B
#define APIC_BASE_EN    (1ull << 11)

volatile uint32_t pmi_nmis;
volatile uint32_t pmi_fixed;
volatile uint32_t fault_vector;
volatile uint32_t fault_count;
uint32_t pmi_status_msr;
volatile uint64_t pmi_status;

volatile uint32_t irq_eip, irq_eflags, irq_ecx;
volatile uint32_t db_hits, db_eip;

static unsigned tap_count, tap_failed;

struct extable_entry {
    uint32_t insn, resume;
};
extern const struct extable_entry __extable_start[], __extable_end[];

/* ---- libc bits ---------------------------------------------------------- */

void *memset(void *s, int c, size_t n)
{
    uint8_t *p = s;

    while (n--) {
        *p++ = (uint8_t)c;
    }
    return s;
}

void *memcpy(void *d, const void *s, size_t n)
{
    uint8_t *dp = d;
    const uint8_t *sp = s;

    while (n--) {
        *dp++ = *sp++;
    }
    return d;
}

/* ---- console output ----------------------------------------------------- */

void putstr(const char *s)
{
    while (*s) {
        console_putc(*s++);
    }
}

/*
 * Digits of v in base 10 or 16, least significant first.  Base 10 uses
 * repeated subtraction: a 64-bit division would need libgcc's __udivdi3,
 * which a multilib-less gcc -m32 does not have.
 */
static int u64_digits(uint64_t v, unsigned base, char *out)
{
    static const char hex[] = "0123456789abcdef";
    int n = 0;

    if (base == 16) {
        do {
            out[n++] = hex[v & 0xF];
            v >>= 4;
        } while (v);
        return n;
    }
    bool started = false;
    char tmp[20];
    int t = 0;
    for (int i = 19; i >= 0; i--) {
        uint64_t pow = 1;
        for (int j = 0; j < i; j++) {
            pow *= 10;          /* 10^i by multiplication: no division */
        }
        char d = '0';
        while (v >= pow) {
            v -= pow;
            d++;
        }
        if (d != '0' || started || i == 0) {
            tmp[t++] = d;
            started = true;
        }
    }
    while (t) {
        out[n++] = tmp[--t];
    }
    return n;
}

static void put_number(uint64_t v, unsigned base, bool neg, int width,
                       char pad)
{
    char buf[24];
    int n = u64_digits(v, base, buf);

    width -= n + (neg ? 1 : 0);
    if (neg && pad == '0') {
        console_putc('-');
    }
    while (width-- > 0) {
        console_putc(pad);
    }
    if (neg && pad != '0') {
        console_putc('-');
    }
    while (n) {
        console_putc(buf[--n]);
    }
}

int vprintf_lite(const char *fmt, va_list ap)
{
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            console_putc(*fmt);
            continue;
        }
        char pad = ' ';
        int width = 0, longs = 0;
        if (*++fmt == '0') {
            pad = '0';
            fmt++;
        }
        while (*fmt >= '0' && *fmt <= '9') {
            width = width * 10 + (*fmt++ - '0');
        }
        while (*fmt == 'l') {
            longs++;
            fmt++;
        }
        uint64_t v = 0;
        int64_t sv = 0;
        switch (*fmt) {
        case 'd':
            sv = longs >= 2 ? va_arg(ap, int64_t) : va_arg(ap, int32_t);
            put_number(sv < 0 ? -(uint64_t)sv : (uint64_t)sv, 10, sv < 0,
                       width, pad);
            break;
        case 'u':
        case 'x':
            v = longs >= 2 ? va_arg(ap, uint64_t) : va_arg(ap, uint32_t);
            put_number(v, *fmt == 'x' ? 16 : 10, false, width, pad);
            break;
        case 's':
            putstr(va_arg(ap, const char *));
            break;
        case 'c':
            console_putc((char)va_arg(ap, int));
            break;
        default:
            console_putc(*fmt);
            break;
        }
    }
    return 0;
}

int printf_lite(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf_lite(fmt, ap);
    va_end(ap);
    return 0;
}

/* ---- traps -------------------------------------------------------------- */

/* Resume after a registered instruction; false if EIP is not one. */
static bool extable_fixup(struct trap_frame *f)
{
    for (const struct extable_entry *e = __extable_start;
         e < __extable_end; e++) {
        if (e->insn == f->eip) {
            fault_vector = f->vector;
            fault_count++;
            f->eip = e->resume;
            return true;
        }
    }
    return false;
}

/*
 * What a guest's PMI handler looks at first: the overflow status.  The
 * NMI may have interrupted a _safe access, whose fault_vector is kept.
 */
static void pmi_nmi(struct trap_frame *f)
{
    uint32_t vector = fault_vector;
    uint64_t v = 0;

    if (pmi_status_msr) {
        rdmsr_safe(pmi_status_msr, &v);
        pmi_status = v;
    }
    fault_vector = vector;
    irq_eip = f->eip;
    irq_eflags = f->eflags;
    irq_ecx = f->ecx;
}

void trap(struct trap_frame *f)
{
    switch (f->vector) {
    case VEC_DB:
        db_hits++;
        db_eip = f->eip;
        /* An instruction breakpoint is a fault: resume with RF = 1 so the
         * instruction runs (SDM Vol. 3A, "Resume Flag (RF)"). */
        f->eflags |= EFLAGS_RF;
        return;
    case VEC_NMI:
        pmi_nmi(f);
        pmi_nmis++;             /* NMI-mode LVTPC: no EOI; after the status */
        return;
    case VEC_PMI:
        pmi_fixed++;
        irq_eip = f->eip;
        irq_eflags = f->eflags;
        irq_ecx = f->ecx;
        apic_write(APIC_EOI, 0);
        return;
    case VEC_SPURIOUS:
        return;                 /* spurious: no EOI by definition */
    }
    if (f->vector < 32 && extable_fixup(f)) {
        return;
    }
    printf_lite("Bail out! unexpected vector %u (error 0x%x) at EIP 0x%08x"
                " (EAX 0x%x ECX 0x%x EDX 0x%x)\n", f->vector, f->error,
                f->eip, f->eax, f->ecx, f->edx);
    platform_exit(2);
}

/* ---- CPU access --------------------------------------------------------- */

void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    asm volatile("cpuid"
                 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                 : "a"(leaf), "c"(sub));
}

int rdmsr_safe(uint32_t msr, uint64_t *val)
{
    uint32_t lo = 0, hi = 0;

    fault_vector = 0;
    asm volatile("1: rdmsr\n2:\n" EXTABLE("1b", "2b")
                 : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return (int)fault_vector;
}

int wrmsr_safe(uint32_t msr, uint64_t val)
{
    fault_vector = 0;
    asm volatile("1: wrmsr\n2:\n" EXTABLE("1b", "2b")
                 : : "a"((uint32_t)val), "d"((uint32_t)(val >> 32)), "c"(msr)
                 : "memory");
    return (int)fault_vector;
}

int rdpmc_safe(uint32_t ecx, uint64_t *val)
{
    uint32_t lo = 0, hi = 0;

    fault_vector = 0;
    asm volatile("1: rdpmc\n2:\n" EXTABLE("1b", "2b")
                 : "+a"(lo), "+d"(hi) : "c"(ecx) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return (int)fault_vector;
}

/* Unchecked forms: a fault here is a bug in the payload, so it bails out. */
uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;

    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr) : "memory");
    return (uint64_t)hi << 32 | lo;
}

void wrmsr(uint32_t msr, uint64_t val)
{
    asm volatile("wrmsr"
                 : : "a"((uint32_t)val), "d"((uint32_t)(val >> 32)), "c"(msr)
                 : "memory");
}

/* ---- local APIC --------------------------------------------------------- */

/*
 * MMIO through a register, so that gcc -m16 addresses it with 32 bits
 * too: real mode has no xAPIC at 0xFEE00000 (its limit is 64 KiB), and
 * an access there is a #GP and a bail-out, not a write into the segment.
 */
uint32_t apic_read(uint32_t off)
{
    uint32_t v;

    asm volatile("movl (%1), %0" : "=r"(v) : "r"(APIC_BASE + off) : "memory");
    return v;
}

void apic_write(uint32_t off, uint32_t val)
{
    asm volatile("movl %0, (%1)" : : "r"(val), "r"(APIC_BASE + off) : "memory");
}

void apic_init(void)
{
    uint64_t base = rdmsr(MSR_APIC_BASE);

    /* SeaBIOS leaves the APIC globally enabled; make sure, at 0xFEE00000. */
    if (!(base & APIC_BASE_EN) || (base & 0xFFFFF000u) != APIC_BASE) {
        wrmsr(MSR_APIC_BASE, APIC_BASE | APIC_BASE_EN | (base & 0x100));
    }
    apic_write(APIC_SVR, APIC_SVR_ENABLE | VEC_SPURIOUS);
    apic_write(APIC_TPR, 0);    /* accept every fixed vector */
    apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
}

void pmi_reset(void)
{
    pmi_nmis = 0;
    pmi_fixed = 0;
}

/*
 * Give a pending PMI time to arrive before the counts are looked at: a
 * front end may deliver at the end of a translation block, or from
 * another thread.  Each PAUSE + branch ends a TB under TCG.
 */
void pmi_settle(void)
{
    for (volatile unsigned i = 0; i < 20000; i++) {
        asm volatile("pause");
    }
}

/* ---- TAP ---------------------------------------------------------------- */

bool tap_check(bool ok, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    if (!ok) {
        tap_failed++;
    }
    printf_lite("%s %u - ", ok ? "ok" : "not ok", tap_count);
    va_start(ap, fmt);
    vprintf_lite(fmt, ap);
    va_end(ap);
    putstr("\n");
    return ok;
}

void tap_skip(const char *why, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    printf_lite("ok %u - ", tap_count);
    va_start(ap, fmt);
    vprintf_lite(fmt, ap);
    va_end(ap);
    printf_lite(" # SKIP %s\n", why);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;

    putstr("# ");
    va_start(ap, fmt);
    vprintf_lite(fmt, ap);
    va_end(ap);
    putstr("\n");
}

unsigned tap_checks(void)
{
    return tap_count;
}

/* The plan goes last (allowed by TAP): the check count depends on CPUID. */
void tap_done(void)
{
    printf_lite("1..%u\n", tap_count);
    tap_diag("%u of %u checks failed", tap_failed, tap_count);
    platform_exit(tap_failed ? 1 : 0);
}
