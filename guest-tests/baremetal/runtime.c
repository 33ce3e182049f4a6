/*
 * Runtime of the bare-metal PMU payloads: see runtime.h.
 *
 * Everything is polled and single-threaded: the only interrupts are the
 * PMIs the tests provoke (NMI or VEC_PMI), the self-test's IPIs on the
 * same two paths and its one instruction breakpoint (#DB), and APIC
 * spurious interrupts; the 8259 PICs are masked so the PIT cannot fire
 * into exception vectors.
 */
#include "runtime.h"
#include "events.h"

#define DEBUG_EXIT_PORT 0xF4

#define MB_BOOT_MAGIC   0x2BADB002u
#define MB_INFO_CMDLINE (1u << 2)

#define MSR_APIC_BASE   0x1B
#define APIC_BASE_EN    (1ull << 11)

volatile uint32_t pmi_nmis;
volatile uint32_t pmi_fixed;
volatile uint32_t fault_vector;

volatile uint32_t irq_eip, irq_eflags, irq_ecx;
volatile uint32_t db_hits, db_eip;

static unsigned tap_count, tap_failed;
static char cmdline[256];

struct extable_entry {
    uint32_t insn, resume;
};
extern const struct extable_entry __extable_start[], __extable_end[];
extern const uint8_t trap_stubs[];

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

/* ---- serial output ------------------------------------------------------ */

void serial_init(void)
{
    outb(COM1 + 1, 0x00);       /* no interrupts: we poll */
    outb(COM1 + 3, 0x80);       /* DLAB */
    outb(COM1 + 0, 0x01);       /* 115200 baud */
    outb(COM1 + 1, 0x00);
    outb(COM1 + 3, 0x03);       /* 8N1 */
    outb(COM1 + 2, 0xC7);       /* FIFO on, cleared */
}

void putstr(const char *s)
{
    puts_(s);
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
        putch('-');
    }
    while (width-- > 0) {
        putch(pad);
    }
    if (neg && pad != '0') {
        putch('-');
    }
    while (n) {
        putch(buf[--n]);
    }
}

int vprintf_lite(const char *fmt, va_list ap)
{
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            putch(*fmt);
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
            putch((char)va_arg(ap, int));
            break;
        default:
            putch(*fmt);
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

void qemu_exit(uint32_t code)
{
    asm volatile("outl %0, %1" : : "a"(code), "Nd"((uint16_t)DEBUG_EXIT_PORT));
    /* No isa-debug-exit device: stop here rather than run off. */
    for (;;) {
        asm volatile("cli; hlt");
    }
}

/* ---- traps -------------------------------------------------------------- */

static void idt_set(uint64_t *idt, unsigned vec)
{
    uint32_t off = (uint32_t)(trap_stubs + 16 * vec);

    /* 32-bit interrupt gate (type 0xE), present, DPL 0, selector 0x08 */
    idt[vec] = (off & 0xFFFF) | (0x08u << 16) |
               ((uint64_t)0x8E00 << 32) |
               ((uint64_t)(off & 0xFFFF0000u) << 32);
}

void traps_init(void)
{
    static uint64_t idt[256] __attribute__((aligned(8)));
    struct __attribute__((packed)) {
        uint16_t limit;
        uint32_t base;
    } desc = { sizeof(idt) - 1, (uint32_t)idt };

    for (unsigned v = 0; v < 256; v++) {
        idt_set(idt, v);
    }
    asm volatile("lidt %0" : : "m"(desc));
}

/* Resume after a registered instruction; false if EIP is not one. */
static bool extable_fixup(struct trap_frame *f)
{
    for (const struct extable_entry *e = __extable_start;
         e < __extable_end; e++) {
        if (e->insn == f->eip) {
            fault_vector = f->vector;
            f->eip = e->resume;
            return true;
        }
    }
    return false;
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
        pmi_nmis++;             /* NMI-mode LVTPC: no EOI */
        irq_eip = f->eip;
        irq_eflags = f->eflags;
        irq_ecx = f->ecx;
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
    qemu_exit(2);
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
 * The counted block: see the derivation of its counts in runtime.h.  The
 * round count is a register (still one MOV), so that the same block
 * serves the long loop of the cycles checks.
 */
int measure_loop(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 uint32_t n)
{
    uint32_t a = (uint32_t)val_on, d = (uint32_t)(val_on >> 32), c = msr_on;

    fault_vector = 0;
    /* The instruction count is derived in runtime.h: keep in step. */
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

/* ---- local APIC --------------------------------------------------------- */

uint32_t apic_read(uint32_t off)
{
    return *(volatile uint32_t *)(APIC_BASE + off);
}

void apic_write(uint32_t off, uint32_t val)
{
    *(volatile uint32_t *)(APIC_BASE + off) = val;
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

/* ---- multiboot command line --------------------------------------------- */

void cmdline_init(uint32_t magic, uint32_t mbi)
{
    const uint32_t *info = (const uint32_t *)mbi;

    if (magic != MB_BOOT_MAGIC || !(info[0] & MB_INFO_CMDLINE)) {
        return;
    }
    const char *s = (const char *)info[4];
    size_t n = 0;
    while (s[n] && n < sizeof(cmdline) - 1) {
        cmdline[n] = s[n];
        n++;
    }
    cmdline[n] = 0;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    unsigned base = 10;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s || *s == ' ') {
        return false;
    }
    for (; *s && *s != ' '; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9') {
            d = *s - '0';
        } else if (base == 16 && (*s | 0x20) >= 'a' && (*s | 0x20) <= 'f') {
            d = (*s | 0x20) - 'a' + 10;
        } else {
            return false;
        }
        v = base == 16 ? v << 4 | d : v * 10 + d;
    }
    *out = v;
    return true;
}

/* "key=value" among space-separated words; QEMU puts the kernel path first. */
uint64_t cmdline_u64(const char *key, uint64_t dflt)
{
    for (const char *w = cmdline; *w; ) {
        const char *k = key, *p = w;
        while (*k && *p == *k) {
            k++;
            p++;
        }
        uint64_t v;
        if (!*k && *p == '=' && parse_u64(p + 1, &v)) {
            return v;
        }
        while (*w && *w != ' ') {
            w++;
        }
        while (*w == ' ') {
            w++;
        }
    }
    return dflt;
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

/* The plan goes last (allowed by TAP): the check count depends on CPUID. */
void tap_done(void)
{
    printf_lite("1..%u\n", tap_count);
    tap_diag("%u of %u checks failed", tap_failed, tap_count);
    qemu_exit(tap_failed ? 1 : 0);
}

/* ---- entry -------------------------------------------------------------- */

void kmain(uint32_t magic, uint32_t mbi);

void kmain(uint32_t magic, uint32_t mbi)
{
    serial_init();
    cmdline_init(magic, mbi);
    traps_init();
    outb(0x21, 0xFF);           /* mask both 8259s: the PIT would */
    outb(0xA1, 0xFF);           /* otherwise fire into vector 8 */
    apic_init();
    asm volatile("sti");        /* fixed-vector PMIs need IF = 1 */
    putstr("TAP version 13\n");
    tap_diag("cmdline: %s", cmdline);
    runtime_selftest();
    rf_selftest();
    payload_main();
    tap_done();
}
