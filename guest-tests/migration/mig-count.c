/*
 * Payload of the migration and QMP tests (migrate.py, qmp.py): program an
 * instructions counter, a branches counter and (Intel) fixed counter 0,
 * run one long counted loop, stop the counters and check the exact counts.
 *
 * Linked with guest-tests/runtime's multiboot platform: kmain() runs
 * the runtime self-test (TAP 1-4), then payload_main() below, then
 * tap_done() exits through isa-debug-exit (0 = all passed).
 *
 * Multiboot command line ("key=value", decimal or 0x hex):
 *   n=N          loop iterations, 1 to 0xFFFFFFFF (default DEFAULT_N)
 *   deny_insns=1 the host denies event 0xC0 with pmu-event-filter: expect the
 *                GP instructions counter to stay 0 (branches and fixed
 *                counter 0 are not denied and still count exactly)
 *   preset=K     GP0 starts K events before overflow (K < 2^31): it must
 *                read (2^48 - K + 2n + 5) mod 2^48 and set status bit 0
 *   pmi=1        with preset: GP0 also raises a PMI (vector 0xF0); exactly
 *                one must arrive, counts are exact + the handler's
 *   gp2=EVTSEL   also program GP counter 2 with this event select (EN
 *                included) and print what it counted, unchecked: for
 *                qmp.py's "unsupported" state
 *
 * The host waits for the "# counting" line, which is printed just before
 * the counters are enabled; the loop then runs for seconds under TCG, so
 * the host can stop / migrate / savevm while the counters are running.
 */
#include "runtime.h"
#include "pmu-intel.h"
#include "pmu-amd.h"

/* 2^30 iterations: ~2.15e9 retired instructions, a few seconds of TCG. */
#define DEFAULT_N       0x40000000u

/*
 * The counted block.  The counters are programmed but globally disabled
 * (GLOBAL_CTRL / GLOBAL_CTL = 0); the first WRMSR enables all of them at
 * once, the last one disables all of them.
 *
 *   wrmsr                enable.  WRMSR retires after the write, so the
 *                        enabling WRMSR is counted (docs/tcg.md):       1
 *   mov  %esi, %ecx      loop count n                                   1
 *   1: dec %ecx          executed n times                               n
 *      jnz 1b            executed n times: n-1 taken, 1 not taken;
 *                        every one is a retired branch                  n
 *   mov  %edi, %ecx      the global control MSR again                   1
 *   xor  %eax, %eax      value 0, low half                              1
 *   xor  %edx, %edx      value 0, high half                             1
 *   wrmsr                disable: retires after the counters stopped    0
 *
 * Instructions: 1 + 1 + n + n + 1 + 1 + 1 = 2n + 5.
 * Branches:     n (JNZ is the only branch; WRMSR, MOV, DEC, XOR are not).
 * Fixed counter 0 (INST_RETIRED.ANY) counts like the GP instructions
 * counter: 2n + 5.
 *
 * The code runs at CPL 0 and the counters count OS and USR, so the CPL
 * split does not matter.  A PMI cannot land inside the block: no counter
 * is near overflow (48-bit counters, < 2^33 events) and the 8259s are
 * masked, so no interrupt adds instructions.  Migration does not execute
 * guest instructions, so the count must come out the same with or
 * without it: no count lost, none invented.
 */
static void counted_block(uint32_t msr, uint64_t enable, uint32_t n)
{
    uint32_t a = (uint32_t)enable, d = (uint32_t)(enable >> 32), c = msr;

    asm volatile("wrmsr\n"
                 "mov %%esi, %%ecx\n"
                 "1: dec %%ecx\n"
                 "jnz 1b\n"
                 "mov %%edi, %%ecx\n"
                 "xor %%eax, %%eax\n"
                 "xor %%edx, %%edx\n"
                 "wrmsr\n"
                 : "+a"(a), "+d"(d), "+c"(c)
                 : "S"(n), "D"(msr)
                 : "memory", "cc");
}

static bool is_vendor(const uint32_t r[4], const char *v)
{
    const uint32_t *w = (const uint32_t *)v;    /* "GenuineIntel": b, d, c */

    return r[1] == w[0] && r[3] == w[1] && r[2] == w[2];
}

/* What the payload programs, per vendor. */
struct setup {
    const char *vendor;
    uint32_t global_msr, status_msr;
    uint64_t enable;            /* global control value that starts all */
    uint32_t insn_ctr, br_ctr, fixed_ctr;   /* counter MSRs; 0: none */
    uint32_t gp2_ctl, gp2_ctr;              /* GP counter 2's MSRs */
};

static bool setup_intel(struct setup *s)
{
    uint32_t r[4];

    cpuid(0, 0, r);
    if (r[0] < 0xA) {
        return false;
    }
    cpuid(0xA, 0, r);
    unsigned version = r[0] & 0xFF, nr_gp = (r[0] >> 8) & 0xFF;
    unsigned nr_fixed = r[3] & 0x1F;
    tap_diag("CPUID.0AH: version %u, %u GP, %u fixed", version, nr_gp,
             nr_fixed);
    if (version < 2 || nr_gp < 2 || nr_fixed < 1) {
        return false;
    }
    s->vendor = "intel";
    s->global_msr = MSR_GLOBAL_CTRL;
    s->status_msr = MSR_GLOBAL_STATUS;
    s->enable = bit64(0) | bit64(1) | GLOBAL_FIXED(0);
    s->insn_ctr = MSR_IA32_PMC0;
    s->br_ctr = MSR_IA32_PMC0 + 1;
    s->fixed_ctr = MSR_FIXED_CTR0;
    s->gp2_ctl = MSR_IA32_PERFEVTSEL0 + 2;
    s->gp2_ctr = MSR_IA32_PMC0 + 2;

    wrmsr(MSR_GLOBAL_CTRL, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0, EVTSEL_EN | EVTSEL_OS | EVTSEL_USR | EVT_INSNS);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1,
          EVTSEL_EN | EVTSEL_OS | EVTSEL_USR | EVT_BRANCHES);
    wrmsr(MSR_FIXED_CTR_CTRL, FIXED_OS | FIXED_USR);   /* fixed 0 only */
    wrmsr(MSR_IA32_PMC0, 0);
    wrmsr(MSR_IA32_PMC0 + 1, 0);
    wrmsr(MSR_FIXED_CTR0, 0);
    wrmsr(MSR_GLOBAL_OVF_CTRL, rdmsr(MSR_GLOBAL_STATUS));
    return true;
}

static bool setup_amd(struct setup *s)
{
    uint32_t r[4];

    cpuid(0x80000000, 0, r);
    if (r[0] < 0x80000022) {
        return false;
    }
    cpuid(0x80000001, 0, r);
    bool core = r[2] & (1u << 23);
    cpuid(0x80000022, 0, r);
    tap_diag("PerfCtrExtCore %u, 80000022H: EAX 0x%x EBX 0x%x", core, r[0],
             r[1]);
    if (!core || !(r[0] & 1) || (r[1] & 0xF) < 2) {
        return false;                   /* needs PerfMonV2, 2 counters */
    }
    s->vendor = "amd";
    s->global_msr = MSR_AMD_GLOBAL_CTL;
    s->status_msr = MSR_AMD_GLOBAL_STATUS;
    s->enable = 0x3;
    s->insn_ctr = MSR_F15H_PERF_CTR0;
    s->br_ctr = MSR_F15H_PERF_CTR0 + 2;
    s->fixed_ctr = 0;
    s->gp2_ctl = MSR_F15H_PERF_CTL0 + 4;
    s->gp2_ctr = MSR_F15H_PERF_CTR0 + 4;

    wrmsr(MSR_AMD_GLOBAL_CTL, 0);
    wrmsr(MSR_F15H_PERF_CTL0,
          AMD_CTL_EN | AMD_CTL_OS | AMD_CTL_USR | AMD_EVT_INSNS);
    wrmsr(MSR_F15H_PERF_CTL0 + 2,
          AMD_CTL_EN | AMD_CTL_OS | AMD_CTL_USR | AMD_EVT_BRANCHES);
    wrmsr(MSR_F15H_PERF_CTR0, 0);
    wrmsr(MSR_F15H_PERF_CTR0 + 2, 0);
    wrmsr(MSR_AMD_GLOBAL_STATUS_CLR, ~0ull);
    return true;
}

/* 2^48: both vendors' counters are 48 bits wide by default. */
#define CTR_MASK        mask64(48)

void payload_main(void)
{
    struct setup s = { 0 };
    uint32_t r[4];
    uint64_t n64 = cmdline_u64("n", DEFAULT_N);
    bool deny_insns = cmdline_u64("deny_insns", 0) != 0;
    uint64_t gp2 = cmdline_u64("gp2", 0);
    uint64_t preset = cmdline_u64("preset", 0);
    bool pmi = cmdline_u64("pmi", 0) != 0;

    if (n64 == 0 || n64 > 0xFFFFFFFFull) {
        printf_lite("Bail out! n=%llu is not 1-0xFFFFFFFF\n", n64);
        platform_exit(2);
    }
    if (preset >= 0x80000000ull || (pmi && !preset)) {
        printf_lite("Bail out! preset=%llu is not 0-0x7FFFFFFF "
                    "(pmi=1 needs one)\n", preset);
        platform_exit(2);
    }
    uint32_t n = (uint32_t)n64;
    uint64_t want_insns = 2 * n64 + 5, want_br = n64;

    cpuid(0, 0, r);
    bool ok = is_vendor(r, "GenuineIntel") ? setup_intel(&s)
            : is_vendor(r, "AuthenticAMD") ? setup_amd(&s) : false;
    if (!tap_check(ok, "a PMU with global control, 2 GP counters%s",
                   s.fixed_ctr ? " and a fixed counter" : "")) {
        return;
    }

    if (gp2) {
        wrmsr(s.gp2_ctl, gp2);
        wrmsr(s.gp2_ctr, 0);
        s.enable |= bit64(2);
    }
    /*
     * preset=K: GP0 starts at 2^48 - K and overflows after K events; it
     * then reads (2^48 - K + 2n + 5) mod 2^48 and the global status has
     * bit 0.  A legacy 32-bit write of -K sign-extends to 48 bits on
     * Intel; AMD takes the 48-bit value as it is.
     */
    uint64_t start = preset ? (0 - preset) & CTR_MASK : 0;
    if (preset) {
        wrmsr(s.insn_ctr, s.fixed_ctr ? (uint32_t)(0 - preset) : start);
        tap_check(rdmsr(s.insn_ctr) == start, "GP0 preset to 0x%llx (-%llu)",
                  start, preset);
    }
    /*
     * pmi=1: the overflow also raises a PMI (EVTSEL INT, LVTPC unmasked
     * at VEC_PMI).  The handler runs at CPL 0 while the counters count,
     * so the counts are only bounded: exact + at most PMI_SLACK.
     */
    if (pmi) {
        uint32_t sel = s.fixed_ctr ? MSR_IA32_PERFEVTSEL0 : MSR_F15H_PERF_CTL0;
        wrmsr(sel, rdmsr(sel) | EVTSEL_INT);
        pmi_reset();
        apic_write(APIC_LVTPC, VEC_PMI);
    }
    tap_diag("counting: %s n=%u, expect instructions %llu, branches %llu",
             s.vendor, n, want_insns, want_br);
    counted_block(s.global_msr, s.enable, n);
    tap_diag("stopped");
    if (pmi) {
        pmi_settle();
        apic_write(APIC_LVTPC, APIC_LVT_MASKED | VEC_PMI);
    }

    uint64_t insns = rdmsr(s.insn_ctr), br = rdmsr(s.br_ctr);
    uint64_t want_gp = deny_insns ? 0 : (start + want_insns) & CTR_MASK;
    uint64_t slack = pmi ? PMI_SLACK : 0;

    if (!slack) {
        tap_check(insns == want_gp, "%s GP0 instructions = %llu%s (got %llu)",
                  s.vendor, want_gp, deny_insns ? " (event 0xC0 denied)" : "",
                  insns);
        tap_check(br == want_br, "%s GP1 branches = %llu (got %llu)", s.vendor,
                  want_br, br);
    } else {
        tap_check(insns - want_gp <= slack,
                  "%s GP0 instructions in [%llu, +%llu] (got %llu)", s.vendor,
                  want_gp, slack, insns);
        tap_check(br - want_br <= slack,
                  "%s GP1 branches in [%llu, +%llu] (got %llu)", s.vendor,
                  want_br, slack, br);
    }
    if (s.fixed_ctr) {
        uint64_t fx = rdmsr(s.fixed_ctr);
        tap_check(fx - want_insns <= slack,
                  "%s fixed 0 instructions = %llu%s (got %llu)", s.vendor,
                  want_insns, slack ? " + handler" : "", fx);
    }
    if (gp2) {
        tap_diag("GP2 (event select 0x%llx) counted %llu", gp2,
                 rdmsr(s.gp2_ctr));
    }
    /* Only a preset GP0 overflows (once: K <= 2n + 5 < 2^48). */
    uint64_t want_st = preset && preset <= want_insns && !deny_insns ? 1 : 0;
    uint64_t st = rdmsr(s.status_msr);
    tap_check(st == want_st, "%s global status 0x%llx (got 0x%llx)", s.vendor,
              want_st, st);
    if (pmi) {
        tap_check(pmi_fixed == 1 && pmi_nmis == 0,
                  "%s exactly one PMI at vector 0x%x (%u, NMIs %u)", s.vendor,
                  VEC_PMI, pmi_fixed, pmi_nmis);
    }
    /* The counters are stopped: a second read is the same. */
    tap_check(rdmsr(s.insn_ctr) == insns && rdmsr(s.br_ctr) == br,
              "%s counters stay put after the disabling WRMSR", s.vendor);
}
