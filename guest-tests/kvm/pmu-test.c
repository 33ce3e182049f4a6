/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload: real mode, CPL 0, under
 *   -accel kvm,vpmu=on -cpu host,pmu=on,pmu-version=2,pmu-gp-counters=4,
 *                           pmu-fixed-counters=3,pmu-width=48
 * (run.sh).  Every PMU MSR access below exits to QEMU and is served by
 * libvpmu; the results go out as TAP on COM1.  run.sh prints the plan.
 *
 * The expected values follow docs/msrs.md: CPUID 0AH as configured,
 * PMCi writes sign-extended from bit 31 to the 48-bit width, A_PMCi
 * full-width writes (PERF_CAPABILITIES.FW_WRITE), #GP on reserved bits,
 * on read-only GLOBAL_STATUS and on counters past pmu-gp-counters.
 */
#include <stdbool.h>
#include <stdint.h>

#include "../serial.h"


#define MSR_IA32_PMC0           0xc1
#define MSR_IA32_APIC_BASE      0x1b
#define MSR_IA32_PERFEVTSEL0    0x186
#define MSR_PERF_CAPABILITIES   0x345
#define MSR_FIXED_CTR0          0x309
#define MSR_FIXED_CTR_CTRL      0x38d
#define MSR_GLOBAL_STATUS       0x38e
#define MSR_GLOBAL_CTRL         0x38f
#define MSR_GLOBAL_OVF_CTRL     0x390
#define MSR_IA32_A_PMC0         0x4c1
#define MSR_X2APIC_SVR          0x80f
#define MSR_X2APIC_LVTPC        0x834

/* IA32_PERFEVTSELx fields (SDM Vol. 3 Figure 20-1). */
#define EVTSEL_USR      (1u << 16)
#define EVTSEL_OS       (1u << 17)
#define EVTSEL_INT      (1u << 20)
#define EVTSEL_EN       (1u << 22)
#define EVENT_CYCLES    0x3c    /* UnHalted Core Cycles, umask 0 */

/* What run.sh configures. */
#define NR_GP           4
#define NR_FIXED        3
#define WIDTH           48
#define WIDTH_MASK      ((1ull << WIDTH) - 1)

volatile uint32_t gp_count, nmi_count;  /* entry.S's handlers count */

static unsigned tests, failures;

static void putdec(uint32_t n)
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

static void ok(bool cond, const char *name)
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

static void skip(const char *name, const char *reason)
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
static void diag(const char *name, uint64_t got, uint64_t want)
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

static bool ok_eq(uint64_t got, uint64_t want, const char *name)
{
    diag(name, got, want);
    ok(got == want, name);
    return got == want;
}

static void cpuid(uint32_t leaf, uint32_t r[4])
{
    asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                 : "a"(leaf), "c"(0));
}

/* RDMSR/WRMSR/RDPMC: whether it took #GP (the handler skips it). */
static bool rdmsr_gp(uint32_t msr, uint64_t *val)
{
    uint32_t before = gp_count, lo = 0, hi = 0;

    asm volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    *val = (uint64_t)hi << 32 | lo;
    return gp_count != before;
}

static bool wrmsr_gp(uint32_t msr, uint64_t val)
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

static uint64_t rdmsr(uint32_t msr)
{
    uint64_t v = 0;

    if (rdmsr_gp(msr, &v)) {
        puts_("# unexpected #GP on RDMSR ");
        puthex(msr);
        putch('\n');
    }
    return v;
}

static void wrmsr(uint32_t msr, uint64_t val)
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
static void spin(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++) {
    }
}

static void test_cpuid(void)
{
    uint32_t r[4];

    cpuid(0, r);
    ok(r[0] >= 0xa, "CPUID.0: max leaf reaches 0AH");
    cpuid(1, r);
    ok(r[2] & (1u << 15), "CPUID.1:ECX.PDCM[15] set");
    cpuid(0xa, r);
    /* EAX: version 2 | 4 GP << 8 | width 48 << 16 | EBX length 7 << 24 */
    ok_eq(r[0], 2 | NR_GP << 8 | WIDTH << 16 | 7 << 24,
          "CPUID.0AH:EAX (v2, 4 GP, 48 bits, 7 events)");
    diag("CPUID.0AH:EBX (unavailable events)", r[1], r[1]);
    ok(!(r[1] & 1), "CPUID.0AH:EBX[0] clear: cycles available");
    ok_eq(r[3], NR_FIXED | WIDTH << 5, "CPUID.0AH:EDX (3 fixed, 48 bits)");
}

static void test_msrs(void)
{
    uint64_t v;

    ok_eq(rdmsr(MSR_PERF_CAPABILITIES), 1u << 13,
          "PERF_CAPABILITIES = FW_WRITE");
    ok_eq(rdmsr(MSR_GLOBAL_CTRL), (1u << NR_GP) - 1,
          "GLOBAL_CTRL resets with the 4 GP enables set");
    wrmsr(MSR_IA32_PERFEVTSEL0, EVTSEL_USR | EVTSEL_OS | EVENT_CYCLES);
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0), 0x3003c, "PERFEVTSEL0 round trip");
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0x1300c4);
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0 + 3), 0x1300c4,
          "PERFEVTSEL3 round trip");
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0);
    wrmsr(MSR_IA32_PMC0, 0x12345678);
    ok_eq(rdmsr(MSR_IA32_PMC0), 0x12345678, "PMC0 round trip");
    wrmsr(MSR_IA32_PMC0, 0x87654321);
    ok_eq(rdmsr(MSR_IA32_PMC0), 0xffff87654321ull,
          "PMC0 write sign-extends bit 31 to 48 bits");
    wrmsr(MSR_IA32_A_PMC0 + 1, 0x123456789abcull);
    ok_eq(rdmsr(MSR_IA32_PMC0 + 1), 0x123456789abcull,
          "A_PMC1 full-width write, read through PMC1");

    ok(wrmsr_gp(MSR_IA32_PERFEVTSEL0, 1ull << 32 | EVENT_CYCLES),
       "PERFEVTSEL0 reserved bit 32 -> #GP");
    ok_eq(rdmsr(MSR_IA32_PERFEVTSEL0), 0x3003c,
          "PERFEVTSEL0 unchanged by the faulting write");
    ok(wrmsr_gp(MSR_IA32_PERFEVTSEL0, 1u << 21 | EVENT_CYCLES),
       "PERFEVTSEL0 AnyThread (bit 21, reserved on v2) -> #GP");
    ok(wrmsr_gp(MSR_GLOBAL_STATUS, 1), "GLOBAL_STATUS is read-only -> #GP");
    ok(rdmsr_gp(MSR_IA32_PMC0 + NR_GP, &v), "PMC4 absent (4 GP) -> #GP");
    ok(wrmsr_gp(MSR_IA32_PERFEVTSEL0 + NR_GP, 0),
       "PERFEVTSEL4 absent -> #GP");
    ok(rdmsr_gp(MSR_FIXED_CTR0 + NR_FIXED, &v),
       "FIXED_CTR3 absent (3 fixed) -> #GP");
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    wrmsr(MSR_IA32_PMC0, 0);
    wrmsr(MSR_IA32_PMC0 + 1, 0);
}

static void test_counting(void)
{
    uint64_t a, b, c;

    wrmsr(MSR_IA32_PMC0, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0,
          EVTSEL_EN | EVTSEL_USR | EVTSEL_OS | EVENT_CYCLES);
    spin(20000);
    a = rdmsr(MSR_IA32_PMC0);
    spin(20000);
    b = rdmsr(MSR_IA32_PMC0);
    diag("PMC0 cycles after 1st spin", a, a);
    diag("PMC0 cycles after 2nd spin", b, b);
    ok(a > 0, "PMC0 counts cycles");
    ok(b > a, "PMC0 cycles advance");

    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    a = rdmsr(MSR_IA32_PMC0);
    spin(20000);
    b = rdmsr(MSR_IA32_PMC0);
    ok_eq(b, a, "PMC0 holds its value once disabled");

    /* Fixed counter 1 = cycles: FIXED_CTR_CTRL nibble 1 = OS|USR. */
    wrmsr(MSR_FIXED_CTR0 + 1, 0);
    wrmsr(MSR_FIXED_CTR_CTRL, 0x3 << 4);
    wrmsr(MSR_GLOBAL_CTRL, (1ull << 33) | ((1u << NR_GP) - 1));
    spin(20000);
    c = rdmsr(MSR_FIXED_CTR0 + 1);
    diag("FIXED_CTR1 cycles", c, c);
    ok(c > 0, "FIXED_CTR1 counts cycles");
    wrmsr(MSR_FIXED_CTR_CTRL, 0);
    wrmsr(MSR_GLOBAL_CTRL, (1u << NR_GP) - 1);
}

/* PMC0 counts cycles from 2^48 - period with INT set; LVTPC = NMI. */
static void test_pmi(void)
{
    const uint64_t period = 2000000;
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
    wrmsr(MSR_IA32_A_PMC0, WIDTH_MASK + 1 - period);
    wrmsr(MSR_IA32_PERFEVTSEL0, EVTSEL_EN | EVTSEL_INT | EVTSEL_USR |
          EVTSEL_OS | EVENT_CYCLES);
    start = rdtsc();
    while (!nmi_count && rdtsc() - start < 10000000000ull) {
        spin(1000);
    }
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    diag("NMIs", nmi_count, 1);
    ok(nmi_count == 1, "overflow with INT: one NMI through LVTPC");
    ok_eq(rdmsr(MSR_GLOBAL_STATUS), 1, "GLOBAL_STATUS = PMC0 overflow");
    v = rdmsr(MSR_IA32_PMC0);
    diag("PMC0 after the overflow", v, v);
    ok(v < period * 1000, "PMC0 wrapped past 2^48");
    wrmsr(MSR_GLOBAL_OVF_CTRL, 1);
    ok_eq(rdmsr(MSR_GLOBAL_STATUS), 0, "GLOBAL_OVF_CTRL clears the status");
}

/*
 * RDPMC is answered by KVM's in-kernel PMCs, which libvpmu mirrors; a KVM
 * without a vPMU gives #GP.  run.sh checks the diagnostic against what
 * QEMU said at startup.
 */
static void test_rdpmc(void)
{
    uint64_t a, b;

    wrmsr(MSR_IA32_PMC0, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0,
          EVTSEL_EN | EVTSEL_USR | EVTSEL_OS | EVENT_CYCLES);
    spin(10000);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);     /* stopping mirrors the value */
    a = rdmsr(MSR_IA32_PMC0);
    if (rdpmc_gp(0, &b)) {
        puts_("# rdpmc: #GP\n");
        skip("RDPMC 0 reads PMC0's mirrored value",
             "RDPMC took #GP: the host KVM has no vPMU");
        return;
    }
    puts_("# rdpmc: value\n");
    diag("RDPMC 0", b, a);
    ok(b == a, "RDPMC 0 reads PMC0's mirrored value");
}

int main(void)
{
    uint32_t r[4];

    cpuid(0, r);
    if (r[1] != 0x756e6547) {   /* "Genu" */
        puts_("# SKIP: the payload checks an Intel PMU; this CPU is not "
              "GenuineIntel\n");
        return 0;
    }
    test_cpuid();
    test_msrs();
    test_counting();
    test_pmi();
    test_rdpmc();
    puts_("# done: ");
    putdec(tests);
    puts_(" tests\n");
    return failures;
}
