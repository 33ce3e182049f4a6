/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload: TAP output, MSR access with #GP detection, the
 * counting checks both vendors share, and main(), which picks the vendor
 * checks by CPUID.0 (run.sh prints the plan).
 */
#include "payload.h"
#include "../serial.h"

volatile uint32_t gp_count, nmi_count;

static unsigned tests, failures;

void putdec(uint32_t n)
{
    char buf[11];
    int i = 0;

    do {
        buf[i++] = '0' + n % 10;
        n /= 10;
    } while (n);
    while (i) {
        putch(buf[--i]);
    }
}

static void puthex(uint64_t v)
{
    puts_("0x");
    for (int s = 60; s >= 0; s -= 4) {
        if ((v >> s) || !s) {
            putch("0123456789abcdef"[(v >> s) & 0xf]);
        }
    }
}

void ok(bool cond, const char *name)
{
    tests++;
    if (!cond) {
        failures++;
    }
    puts_(cond ? "ok " : "not ok ");
    putdec(tests);
    puts_(" - ");
    puts_(name);
    putch('\n');
}

void skip(const char *name, const char *reason)
{
    tests++;
    puts_("ok ");
    putdec(tests);
    puts_(" - ");
    puts_(name);
    puts_(" # SKIP ");
    puts_(reason);
    putch('\n');
}

/* "# name = value", expected value too when they differ. */
void diag(const char *name, uint64_t got, uint64_t want)
{
    puts_("# ");
    puts_(name);
    puts_(" = ");
    puthex(got);
    if (got != want) {
        puts_(", expected ");
        puthex(want);
    }
    putch('\n');
}

bool ok_eq(uint64_t got, uint64_t want, const char *name)
{
    diag(name, got, want);
    ok(got == want, name);
    return got == want;
}

void cpuid(uint32_t leaf, uint32_t r[4])
{
    asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                 : "a"(leaf), "c"(0));
}

/* RDMSR/WRMSR/RDPMC: whether it took #GP (the handler skips it). */
bool rdmsr_gp(uint32_t msr, uint64_t *val)
{
    uint32_t before = gp_count, lo = 0, hi = 0;

    asm volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return gp_count != before;
}

bool wrmsr_gp(uint32_t msr, uint64_t val)
{
    uint32_t before = gp_count;

    asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)val),
                 "d"((uint32_t)(val >> 32)) : "memory");
    return gp_count != before;
}

static bool rdpmc_gp(uint32_t ecx, uint64_t *val)
{
    uint32_t before = gp_count, lo = 0, hi = 0;

    asm volatile("rdpmc" : "+a"(lo), "+d"(hi) : "c"(ecx) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return gp_count != before;
}

uint64_t rdmsr(uint32_t msr)
{
    uint64_t v = 0;

    if (rdmsr_gp(msr, &v)) {
        puts_("# unexpected #GP on RDMSR ");
        puthex(msr);
        putch('\n');
    }
    return v;
}

void wrmsr(uint32_t msr, uint64_t val)
{
    if (wrmsr_gp(msr, val)) {
        puts_("# unexpected #GP on WRMSR ");
        puthex(msr);
        putch('\n');
    }
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;

    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* Burn guest time: the vCPU thread runs, so task-clock advances. */
void spin(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++) {
    }
}

static void test_counting(const Counter0 *c)
{
    uint64_t a, b;

    wrmsr(c->ctr, 0);
    wrmsr(c->ctl, c->cycles);
    spin(20000);
    a = rdmsr(c->ctr);
    spin(20000);
    b = rdmsr(c->ctr);
    diag("counter 0 cycles after 1st spin", a, a);
    diag("counter 0 cycles after 2nd spin", b, b);
    if (CYCLES_DENIED) {
        ok(a == 0 && b == 0,
           "cycles denied by the event filter: counter 0 stays at 0");
    } else {
        ok(a > 0, "counter 0 counts cycles");
        ok(b > a, "counter 0 cycles advance");
    }
    wrmsr(c->ctl, 0);
    a = rdmsr(c->ctr);
    spin(20000);
    b = rdmsr(c->ctr);
    ok_eq(b, a, "counter 0 holds its value once disabled");
}

/*
 * Counter 0 counts cycles from 2^48 - period with INT set; LVTPC = NMI
 * (SDM Vol. 3 11.5.1, APM Vol. 2 16.4.6).  A denied counter never gets
 * there: the wait is then a bounded spin that must end with no NMI.
 */
static void test_pmi(const Counter0 *c)
{
    const uint64_t period = CYCLES_DENIED ? 1000 : 2000000;
    uint32_t r[4];
    uint64_t start, v;

    cpuid(1, r);
    if (!(r[2] & (1u << 21))) {
        skip("overflow PMI through LVTPC", "no x2APIC (LVTPC is MMIO)");
        return;
    }
    /* x2APIC mode (EN | EXTD), software-enabled, LVTPC delivery NMI. */
    wrmsr(MSR_IA32_APIC_BASE, rdmsr(MSR_IA32_APIC_BASE) | 3u << 10);
    wrmsr(MSR_X2APIC_SVR, 0x1ff);
    wrmsr(MSR_X2APIC_LVTPC, 4u << 8);

    nmi_count = 0;
    wrmsr(c->ctr_full, (1ull << 48) - period);
    wrmsr(c->ctl, c->cycles_int);
    start = rdtsc();
    if (CYCLES_DENIED) {
        spin(2000000);
    } else {
        while (!nmi_count && rdtsc() - start < 10000000000ull) {
            spin(1000);
        }
    }
    wrmsr(c->ctl, 0);
    diag("NMIs", nmi_count, !CYCLES_DENIED);
    if (CYCLES_DENIED) {
        ok(nmi_count == 0, "a denied counter does not overflow: no NMI");
        ok_eq(rdmsr(c->status), 0, "overflow status stays 0");
        ok_eq(rdmsr(c->ctr), (1ull << 48) - period,
              "counter 0 holds the value written");
        return;
    }
    ok(nmi_count == 1, "overflow with INT: one NMI through LVTPC");
    ok_eq(rdmsr(c->status), 1, "overflow status = counter 0");
    v = rdmsr(c->ctr);
    diag("counter 0 after the overflow", v, v);
    ok(v < period * 1000, "counter 0 wrapped past 2^48");
    wrmsr(c->status_clear, 1);
    ok_eq(rdmsr(c->status), 0, "writing 1 to bit 0 clears the status");
}

/*
 * RDPMC is answered by KVM's in-kernel PMCs, which libvpmu mirrors; a KVM
 * without a vPMU gives #GP.  run.sh checks the diagnostic against what
 * QEMU said at startup.
 */
static void test_rdpmc(const Counter0 *c)
{
    uint64_t a, b;

    wrmsr(c->ctr, 0);
    wrmsr(c->ctl, c->cycles);
    spin(10000);
    wrmsr(c->ctl, 0);           /* stopping mirrors the value */
    a = rdmsr(c->ctr);
    if (rdpmc_gp(0, &b)) {
        puts_("# rdpmc: #GP\n");
        skip("RDPMC 0 reads counter 0's mirrored value",
             "RDPMC took #GP: the host KVM has no vPMU");
        return;
    }
    puts_("# rdpmc: value\n");
    diag("RDPMC 0", b, a);
    ok(b == a, "RDPMC 0 reads counter 0's mirrored value");
}

void test_counter0(const Counter0 *c)
{
    test_counting(c);
    test_pmi(c);
    test_rdpmc(c);
}

/*
 * Wait for the host: print "# host: WHAT" and read one byte from COM1
 * (polled: LSR bit 0, data ready).
 */
static void wait_host(const char *what)
{
    puts_("# host: ");
    puts_(what);
    putch('\n');
    while (!(inb(COM1 + COM_LSR) & 1)) {
        /* the host sends one byte when it is done */
    }
    (void)inb(COM1);
}

/* Counter 0 counts cycles over a spin: its count. */
static uint64_t count_cycles(const Counter0 *c)
{
    uint64_t v;

    wrmsr(c->ctr, 0);
    wrmsr(c->ctl, c->cycles);
    spin(20000);
    v = rdmsr(c->ctr);
    wrmsr(c->ctl, 0);
    return v;
}

/*
 * vpmu-helper goes away and comes back while the guest runs (helper.sh):
 * the guest's first counter opens while the helper is down, so it counts
 * nothing and the guest goes on; programmed again after the restart, it
 * counts.  Nothing is programmed before, so no host event is open then.
 */
static void test_restart(const Counter0 *c)
{
    uint64_t v;

    wait_host("stop the helper");
    v = count_cycles(c);
    diag("counter 0 cycles, helper down", v, 0);
    ok(v == 0, "helper down: counter 0 counts nothing, the guest goes on");
    wait_host("start the helper");
    v = count_cycles(c);
    diag("counter 0 cycles, helper back", v, v);
    ok(v > 0, "helper restarted: counter 0 counts again");
}

int main(void)
{
    uint32_t r[4];
    bool intel;

    cpuid(0, r);
    intel = r[1] == 0x756e6547;         /* "Genu"ineIntel */
    if (RESTART && (intel || r[1] == 0x68747541)) {
        test_restart(intel ? intel_counter0() : amd_counter0());
    } else if (intel) {
        intel_tests();
    } else if (r[1] == 0x68747541) {    /* "Auth"enticAMD */
        amd_tests();
    } else {
        puts_("# SKIP: the payload checks an Intel or AMD PMU; this CPU "
              "is neither\n");
        return 0;
    }
    puts_("# done: ");
    putdec(tests);
    puts_(" tests\n");
    return failures;
}
