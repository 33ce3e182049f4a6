/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM vPMU test payload: the counting checks both vendors share, and
 * payload_main(), which picks the vendor checks by CPUID.0.  Its last
 * line, "# done: N tests", is what run.sh, helper.sh and libvirt/run.sh
 * wait for; then bios16.S's tap_done() prints the plan and exits.
 */
#include "payload.h"

/* "# name = value", the expected value too when they differ. */
void diag(const char *name, uint64_t got, uint64_t want)
{
    if (got != want) {
        tap_diag("%s = 0x%llx, expected 0x%llx", name, got, want);
    } else {
        tap_diag("%s = 0x%llx", name, got);
    }
}

bool ok_eq(uint64_t got, uint64_t want, const char *name)
{
    diag(name, got, want);
    return tap_check(got == want, "%s", name);
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
        tap_check(a == 0 && b == 0,
           "cycles denied by the event filter: counter 0 stays at 0");
    } else {
        tap_check(a > 0, "counter 0 counts cycles");
        tap_check(b > a, "counter 0 cycles advance");
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

    cpuid(1, 0, r);
    if (!(r[2] & (1u << 21))) {
        tap_skip("no x2APIC (LVTPC is MMIO)", "overflow PMI through LVTPC");
        return;
    }
    /* x2APIC mode (EN | EXTD), software-enabled, LVTPC delivery NMI. */
    wrmsr(MSR_IA32_APIC_BASE, rdmsr(MSR_IA32_APIC_BASE) | 3u << 10);
    wrmsr(MSR_X2APIC_SVR, 0x1ff);
    wrmsr(MSR_X2APIC_LVTPC, 4u << 8);

    pmi_nmis = 0;
    wrmsr(c->ctr_full, (1ull << 48) - period);
    wrmsr(c->ctl, c->cycles_int);
    start = rdtsc();
    if (CYCLES_DENIED) {
        spin(2000000);
    } else {
        while (!pmi_nmis && rdtsc() - start < 10000000000ull) {
            spin(1000);
        }
    }
    wrmsr(c->ctl, 0);
    diag("NMIs", pmi_nmis, !CYCLES_DENIED);
    if (CYCLES_DENIED) {
        tap_check(pmi_nmis == 0, "a denied counter does not overflow: no NMI");
        ok_eq(rdmsr(c->status), 0, "overflow status stays 0");
        ok_eq(rdmsr(c->ctr), (1ull << 48) - period,
              "counter 0 holds the value written");
        return;
    }
    tap_check(pmi_nmis == 1, "overflow with INT: one NMI through LVTPC");
    ok_eq(rdmsr(c->status), 1, "overflow status = counter 0");
    v = rdmsr(c->ctr);
    diag("counter 0 after the overflow", v, v);
    tap_check(v < period * 1000, "counter 0 wrapped past 2^48");
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
    if (rdpmc_safe(0, &b) == VEC_GP) {
        tap_diag("rdpmc: #GP");
        tap_skip("RDPMC took #GP: the host KVM has no vPMU",
                 "RDPMC 0 reads counter 0's mirrored value");
        return;
    }
    tap_diag("rdpmc: value");
    diag("RDPMC 0", b, a);
    tap_check(b == a, "RDPMC 0 reads counter 0's mirrored value");
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
    tap_diag("host: %s", what);
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
    tap_check(v == 0, "helper down: counter 0 counts nothing, the guest goes on");
    wait_host("start the helper");
    v = count_cycles(c);
    diag("counter 0 cycles, helper back", v, v);
    tap_check(v > 0, "helper restarted: counter 0 counts again");
}

void payload_main(void)
{
    uint32_t r[4];
    bool intel;

    cpuid(0, 0, r);
    intel = r[1] == 0x756e6547;         /* "Genu"ineIntel */
    if (RESTART && (intel || r[1] == 0x68747541)) {
        test_restart(intel ? intel_counter0() : amd_counter0());
    } else if (intel) {
        intel_tests();
    } else if (r[1] == 0x68747541) {    /* "Auth"enticAMD */
        amd_tests();
    } else {
        tap_diag("SKIP: the payload checks an Intel or AMD PMU; this CPU "
                 "is neither");
        return;
    }
    tap_diag("done: %u tests", tap_checks());
}
