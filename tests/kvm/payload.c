/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness payload: guest-side checks of vpmu behind KVM, through real
 * MSR exits.  Each check is one TAP line printed by the harness.  Every
 * expected value is derived in the comment next to it.
 *
 * Fake-source run: nothing feeds the fake source except vpmu's own
 * emulated counts (the served RDMSR/WRMSR) and PROTO_FEED, so counts are
 * exact.  Perf-source run: cycles come from task-clock at tsc_hz.
 */
#include "guest.h"

/* Intel MSRs (SDM Vol. 4 Table 2-2). */
#define IA32_PMC0           0x0C1u
#define IA32_PMC1           0x0C2u
#define IA32_PERFEVTSEL0    0x186u
#define IA32_PERFEVTSEL1    0x187u
#define IA32_PERFEVTSEL3    0x189u
#define IA32_PERFEVTSEL5    0x18Bu
#define IA32_PAT            0x277u      /* KVM's, between 0x1D9 and 0x309 */
#define IA32_FIXED_CTR0     0x309u
#define IA32_FIXED_CTR_CTRL 0x38Du
#define IA32_GLOBAL_STATUS  0x38Eu
#define IA32_GLOBAL_CTRL    0x38Fu
#define IA32_GLOBAL_OVF_CTRL 0x390u
#define IA32_A_PMC0         0x4C1u
#define IA32_A_PMC1         0x4C2u
#define PAT_RESET           0x0007040600070406ull   /* SDM 12.12.4 */

/* AMD MSRs (APM Vol. 2 13.2). */
#define AMD_GLOBAL_STATUS   0xC0000300u
#define AMD_GLOBAL_CTL      0xC0000301u
#define AMD_GLOBAL_STATUS_CLR 0xC0000302u
#define AMD_K7_PERFCTR0     0xC0010004u
#define AMD_HWCR            0xC0010015u     /* KVM's, inside the K7..F15H range */
#define AMD_PERF_CTL0       0xC0010200u
#define AMD_PERF_CTR0       0xC0010201u

/* PERFEVTSEL / PERF_CTL fields: USR 16, OS 17, INT 20, EN 22. */
#define SEL_USR             (1u << 16)
#define SEL_OS              (1u << 17)
#define SEL_INT             (1u << 20)
#define SEL_EN              (1u << 22)
#define EV_CYCLES_INTEL     0x3Cu
#define EV_CYCLES_AMD       0x76u
#define EV_INSNS            0xC0u

#define VPMU_EVENT_CYCLES   0           /* VpmuArchEvent, source.h */

static uint32_t status_msr, gctl_msr, clr_msr, sel0_msr, ctr0_msr, cycles_ev;
static uint64_t gctl_all, clr_all;

static uint64_t msr_exits(void)
{
    ProtoMbox q;

    guest_query(&q);
    return q.a;
}

static uint64_t pmi_stats(void)
{
    ProtoMbox q;

    guest_query(&q);
    return q.c;
}

static void check_cpuid(int amd, int perf)
{
    uint32_t r[4];

    if (amd) {
        /* PerfMonV2 with 6 counters: 80000022H EAX[0], EBX[3:0] = 6. */
        cpuid(0x80000022, 0, r);
        CHECK_EQ("cpuid 80000022H: PerfMonV2, 6 core counters",
                 (r[0] & 1) | (r[1] & 0xF) << 4, 0x61);
        return;
    }
    cpuid(0xA, 0, r);
    /* Version 2, 8 GP counters, 48 bits: EAX[23:0] = 48 << 16 | 8 << 8 | 2. */
    CHECK_EQ("cpuid 0AH EAX: v2, 8 GP counters x 48 bits", r[0] & 0xFFFFFF,
             0x300802);
    /* 3 fixed counters x 48 bits: EDX[4:0] = 3, EDX[12:5] = 48. */
    CHECK_EQ("cpuid 0AH EDX: 3 fixed counters x 48 bits", r[3] & 0x1FFF,
             3 | 48 << 5);
    if (perf) {
        /* Task-clock backs cycles only: EBX bit 0 clear, bit 1 set. */
        CHECK_EQ("cpuid 0AH EBX: cycles available, instructions not",
                 r[1] & 3, 2);
    }
}

static void intel_semantics(void)
{
    uint64_t v, before;
    int gp;

    /* Reset: GLOBAL_CTRL has the 8 GP enable bits set, fixed bits clear. */
    CHECK_EQ("GLOBAL_CTRL reset value", rdmsr(IA32_GLOBAL_CTRL), 0xFF);
    wrmsr_safe(IA32_PERFEVTSEL3, 0x3003C);
    CHECK_EQ("PERFEVTSEL3 round trip", rdmsr(IA32_PERFEVTSEL3), 0x3003C);
    /* Legacy PMC write: low 32 bits sign-extended to 48 bits. */
    wrmsr_safe(IA32_PMC1, 0x87654321);
    CHECK_EQ("PMC1 legacy write sign-extends", rdmsr(IA32_PMC1),
             0xFFFF87654321ull);
    wrmsr_safe(IA32_A_PMC1, 0x123456789ABull);
    CHECK_EQ("A_PMC1 full-width write, read via PMC1", rdmsr(IA32_PMC1),
             0x123456789ABull);
    wrmsr_safe(IA32_FIXED_CTR0, 0xABCDEF);
    CHECK_EQ("FIXED_CTR0 round trip", rdmsr(IA32_FIXED_CTR0), 0xABCDEF);
    wrmsr_safe(IA32_GLOBAL_CTRL, 0x7000000FFull);
    CHECK_EQ("GLOBAL_CTRL round trip (8 GP + 3 fixed)",
             rdmsr(IA32_GLOBAL_CTRL), 0x7000000FFull);
    /* PERFEVTSEL bits 63:32 are reserved: #GP, the register unchanged. */
    gp = wrmsr_safe(IA32_PERFEVTSEL0, 1ull << 32);
    CHECK_EQ("PERFEVTSEL0 reserved bit 32: guest #GP", gp, VEC_GP);
    CHECK_EQ("PERFEVTSEL0 unchanged after the #GP", rdmsr(IA32_PERFEVTSEL0), 0);
    CHECK_EQ("GLOBAL_STATUS is read-only: write #GP",
             wrmsr_safe(IA32_GLOBAL_STATUS, 1), VEC_GP);
    /* IA32_PAT is inside the merged 0xC1-0x4C8 range but allowed. */
    before = msr_exits();
    v = rdmsr(IA32_PAT);
    CHECK_EQ("PAT (0x277) in the merged range: no exit", msr_exits() - before, 0);
    CHECK_EQ("PAT served by KVM: reset value", v, PAT_RESET);
    before = msr_exits();
    (void)rdmsr(IA32_PMC0);
    CHECK_EQ("PMC0 read: exactly one exit", msr_exits() - before, 1);
}

/*
 * The exiting instructions, counted as the rules say.  PMC0 counts
 * instructions (C0H) at CPL 0; only vpmu's additions reach the fake source:
 *   GLOBAL_CTRL = 1      the enabling WRMSR retires after enabling: 1
 *   RDMSR PERFEVTSEL0    served RDMSR: 2
 *   RDMSR PAT            KVM's, not vpmu's: still 2
 *   WRMSR PERFEVTSEL5    #GP, nothing retires: still 2
 *   WRMSR PMC1 = 5       3
 *   RDMSR PMC0           reads 3 (it retires after the read): then 4
 *   GLOBAL_CTRL = 0      the disabling WRMSR is not counted: 4
 *   RDMSR PMC0           reads 4 (counter stopped)
 */
static void intel_exact_count(void)
{
    uint64_t first, second;

    wrmsr_safe(IA32_GLOBAL_CTRL, 0);
    wrmsr_safe(IA32_PMC0, 0);
    wrmsr_safe(IA32_PERFEVTSEL0, SEL_EN | SEL_OS | EV_INSNS);
    wrmsr_safe(IA32_GLOBAL_CTRL, 1);
    (void)rdmsr(IA32_PERFEVTSEL0);
    (void)rdmsr(IA32_PAT);
    wrmsr_safe(IA32_PERFEVTSEL5, 1ull << 32);
    wrmsr_safe(IA32_PMC1, 5);
    first = rdmsr(IA32_PMC0);
    wrmsr_safe(IA32_GLOBAL_CTRL, 0);
    second = rdmsr(IA32_PMC0);
    CHECK_EQ("exiting WRMSR/RDMSR counted: 3 before the PMC0 read", first, 3);
    CHECK_EQ("the PMC0 read counted, the disabling WRMSR not: 4", second, 4);
    wrmsr_safe(IA32_PERFEVTSEL0, 0);
}

/* AMD: the same rules on PERF_CTL0/CTR0 and GLOBAL_CTL (6 counters). */
static void amd_semantics(void)
{
    uint64_t before;

    CHECK_EQ("GLOBAL_CTL reset value (6 counters)", rdmsr(AMD_GLOBAL_CTL), 0x3F);
    /* HostOnly (bit 41) is reserved to the guest: dropped, no #GP. */
    CHECK_EQ("PERF_CTL0 reserved bit 41: no #GP",
             wrmsr_safe(AMD_PERF_CTL0, 1ull << 41 | 0x30076), 0);
    CHECK_EQ("PERF_CTL0 reserved bit dropped", rdmsr(AMD_PERF_CTL0), 0x30076);
    wrmsr_safe(AMD_PERF_CTL0, 0);
    wrmsr_safe(AMD_PERF_CTR0, 0x123456789ABull);
    CHECK_EQ("PERF_CTR0 48-bit round trip", rdmsr(AMD_PERF_CTR0), 0x123456789ABull);
    wrmsr_safe(AMD_K7_PERFCTR0, 0x55);
    CHECK_EQ("K7 PERFCTR0 aliases PERF_CTR0", rdmsr(AMD_PERF_CTR0), 0x55);
    before = msr_exits();
    (void)rdmsr(AMD_HWCR);
    CHECK_EQ("HWCR (0xC0010015) in the merged range: no exit",
             msr_exits() - before, 0);
}

/* As intel_exact_count(), on PERF_CTL0 = instructions at CPL 0. */
static void amd_exact_count(void)
{
    uint64_t first, second;

    wrmsr_safe(AMD_GLOBAL_CTL, 0);
    wrmsr_safe(AMD_PERF_CTR0, 0);
    wrmsr_safe(AMD_PERF_CTL0, SEL_EN | SEL_OS | EV_INSNS);
    wrmsr_safe(AMD_GLOBAL_CTL, 1);          /* 1 */
    (void)rdmsr(AMD_PERF_CTL0);             /* 2 */
    (void)rdmsr(AMD_HWCR);                  /* KVM's: 2 */
    wrmsr_safe(AMD_PERF_CTR0 + 2, 5);       /* PERF_CTR1: 3 */
    first = rdmsr(AMD_PERF_CTR0);           /* reads 3, then 4 */
    wrmsr_safe(AMD_GLOBAL_CTL, 0);          /* disabling: not counted */
    second = rdmsr(AMD_PERF_CTR0);
    CHECK_EQ("exiting WRMSR/RDMSR counted: 3 before the CTR0 read", first, 3);
    CHECK_EQ("the CTR0 read counted, the disabling WRMSR not: 4", second, 4);
    wrmsr_safe(AMD_PERF_CTL0, 0);
}

/* Counter 0 counts cycles with INT, preset to -@n (48-bit), globally on. */
static void arm_cycles_pmi(uint64_t n)
{
    wrmsr_safe(gctl_msr, 0);
    wrmsr_safe(clr_msr, clr_all);
    wrmsr_safe(sel0_msr, SEL_EN | SEL_OS | SEL_INT | cycles_ev);
    wrmsr_safe(ctr0_msr == IA32_PMC0 ? IA32_A_PMC0 : ctr0_msr,
               (1ull << 48) - n);
    wrmsr_safe(gctl_msr, 1);
}

/*
 * PMIs with the fake source: preset -10, feed 9 cycles (no overflow),
 * then 1: the counter wraps to 0, GLOBAL_STATUS bit 0, one PMI through
 * LVTPC as NMI.  Then a fixed vector (0xF0), then masked (nothing).
 */
static void fake_pmis(void)
{
    uint64_t st;

    apic_write(APIC_LVTPC, APIC_LVT_NMI);
    arm_cycles_pmi(10);
    guest_feed(VPMU_EVENT_CYCLES, 9);
    CHECK_EQ("9 of 10 cycles: no PMI yet", pmi_nmis, 0);
    guest_feed(VPMU_EVENT_CYCLES, 1);
    wait_change(&pmi_nmis, 0, 1000000);
    CHECK_EQ("overflow with LVTPC=NMI: one NMI", pmi_nmis, 1);
    CHECK_EQ("NMI handler reads GLOBAL_STATUS = bit 0", pmi_status, 1);
    CHECK_EQ("counter keeps counting from 0 after the wrap", rdmsr(ctr0_msr), 0);
    CHECK_EQ("host injected one NMI", PROTO_PMI_NMI(pmi_stats()), 1);

    apic_write(APIC_LVTPC, VEC_PMI);
    arm_cycles_pmi(5);
    __asm__ volatile("sti");
    guest_feed(VPMU_EVENT_CYCLES, 5);
    wait_change(&pmi_fixed, 0, 1000000);
    __asm__ volatile("cli");
    CHECK_EQ("overflow with LVTPC=vector 0xF0: one interrupt", pmi_fixed, 1);
    CHECK_EQ("no NMI for a fixed-vector LVTPC", pmi_nmis, 1);

    apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
    arm_cycles_pmi(5);
    __asm__ volatile("sti");
    guest_feed(VPMU_EVENT_CYCLES, 5);
    wait_change(&pmi_fixed, 1, 100000);
    __asm__ volatile("cli");
    st = pmi_stats();
    CHECK_EQ("masked LVTPC: no interrupt", pmi_fixed, 1);
    CHECK_EQ("masked LVTPC: counted as masked by the host", PROTO_PMI_MASKED(st), 1);
    CHECK_EQ("masked LVTPC: overflow still in GLOBAL_STATUS",
             rdmsr(status_msr) & 1, 1);
    wrmsr_safe(gctl_msr, 0);
}

static void rdpmc_check(void)
{
    ProtoMbox q;
    uint64_t v;
    int gp;

    guest_query(&q);
    wrmsr_safe(gctl_msr, 0);                /* stop: mirrors */
    wrmsr_safe(ctr0_msr, 0x1234);           /* a counter write: mirrors */
    gp = rdpmc_safe(0, &v);
    if (!(q.b & PROTO_F_KVM_PMU)) {
        putstr("this host's KVM has no vPMU: guest RDPMC takes #GP\n");
        CHECK_EQ("RDPMC without KVM vPMU: #GP", gp, VEC_GP);
        guest_skip("RDPMC reads the mirrored counter", "KVM has no vPMU");
        return;
    }
    CHECK_EQ("RDPMC: no #GP", gp, 0);
    CHECK_EQ("RDPMC reads the mirrored counter", v, 0x1234);
}

/*
 * Perf source: cycles = task-clock x tsc_hz.  Counting first, the NMI
 * last: after an NMI that is not IRETed (see vmm.S) this nested KVM
 * runs the guest very slowly.
 */
static void perf_checks(uint64_t cycles_per_ms)
{
    uint32_t spin;
    uint64_t c0, c1;

    wrmsr_safe(sel0_msr, SEL_EN | SEL_OS | SEL_USR | cycles_ev);
    wrmsr_safe(ctr0_msr, 0);
    wrmsr_safe(gctl_msr, 1);
    {
        ProtoMbox m = { .cmd = PROTO_CLOCK, .arg = 0 };

        guest_call(&m);
        c0 = rdmsr(ctr0_msr);
        spin = 200000;
        __asm__ volatile("1: dec %0\n jnz 1b" : "+r"(spin));
        c1 = rdmsr(ctr0_msr);
        m.cmd = PROTO_CLOCK;
        m.arg = 1;
        guest_call(&m);
        m.cmd = PROTO_CHECK_CYCLES;
        m.a = c1 - c0;
        __builtin_memcpy(m.name, "cycles advance at tsc_hz x task time", 37);
        guest_call(&m);
    }
    wrmsr_safe(gctl_msr, 0);

    apic_write(APIC_LVTPC, APIC_LVT_NMI);
    arm_cycles_pmi(cycles_per_ms);
    wait_change(&pmi_nmis, 0, 0xFFFFFFFF);
    wrmsr_safe(gctl_msr, 0);
    CHECK_EQ("task-clock cycles overflow after 1 ms: one NMI", pmi_nmis, 1);
    CHECK_EQ("NMI handler reads GLOBAL_STATUS bit 0", pmi_status & 1, 1);
}

void payload_main(void)
{
    ProtoMbox q;
    int amd, perf;

    guest_init();
    guest_query(&q);
    amd = !!(q.b & PROTO_F_AMD);
    perf = !!(q.b & PROTO_F_PERF);
    status_msr = amd ? AMD_GLOBAL_STATUS : IA32_GLOBAL_STATUS;
    gctl_msr = amd ? AMD_GLOBAL_CTL : IA32_GLOBAL_CTRL;
    clr_msr = amd ? AMD_GLOBAL_STATUS_CLR : IA32_GLOBAL_OVF_CTRL;
    sel0_msr = amd ? AMD_PERF_CTL0 : IA32_PERFEVTSEL0;
    ctr0_msr = amd ? AMD_PERF_CTR0 : IA32_PMC0;
    cycles_ev = amd ? EV_CYCLES_AMD : EV_CYCLES_INTEL;
    gctl_all = amd ? 0x3F : 0x7000000FFull;
    clr_all = gctl_all;
    pmi_status_msr = status_msr;

    check_cpuid(amd, perf);
    if (perf) {
        perf_checks(q.d);
    } else if (amd) {
        amd_semantics();
        amd_exact_count();
        fake_pmis();
    } else {
        intel_semantics();
        intel_exact_count();
        fake_pmis();
    }
    rdpmc_check();
    guest_done();
}
