/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo: what a guest kernel's perf sees through libvpmu, without a guest.
 *
 * The program plays every part.  As the front end it creates the PMU of
 * one vCPU on the deterministic fake counting source.  As the guest kernel
 * it makes the MSR accesses Linux perf makes for
 *
 *   perf stat -e instructions                (PERFEVTSEL0 = 0x4300C0)
 *   perf record -e instructions:u -c 1000    (PERFEVTSEL0 = 0x5100C0)
 *
 * and handles the PMIs.  The fake source plays the guest's workload.
 * Only the public API, <vpmu/vpmu.h>, is used.  Every count is checked
 * against what bare metal would show (docs/msrs.md); the exit status is 0
 * only if all of them match.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/vpmu.h>

/* Intel SDM Vol. 4, MSR tables. */
#define MSR_IA32_PMC0                   0x0c1
#define MSR_IA32_PERFEVTSEL0            0x186
#define MSR_IA32_FIXED_CTR0             0x309
#define MSR_IA32_FIXED_CTR_CTRL         0x38d
#define MSR_IA32_PERF_GLOBAL_STATUS     0x38e
#define MSR_IA32_PERF_GLOBAL_CTRL       0x38f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL   0x390
#define MSR_IA32_A_PMC0                 0x4c1
/* AMD APM Vol. 2, 13.2. */
#define MSR_K7_PERFCTR0                 0xc0010004
#define MSR_F15H_PERF_CTL0              0xc0010200
#define MSR_F15H_PERF_CTR0              0xc0010201
#define MSR_AMD_GLOBAL_STATUS           0xc0000300
#define MSR_AMD_GLOBAL_CTL              0xc0000301
#define MSR_AMD_GLOBAL_STATUS_CLR       0xc0000302

/* IA32_PERFEVTSELx and AMD PERF_CTLx share these fields. */
#define EVTSEL_USR          (1ull << 16)
#define EVTSEL_OS           (1ull << 17)
#define EVTSEL_INT          (1ull << 20)
#define EVTSEL_EN           (1ull << 22)
#define EVENT_INSTRUCTIONS  0xc0ull         /* Intel C0/00, AMD C0/00 */
/* IA32_FIXED_CTR_CTRL nibble of fixed counter 0: OS bit 0, USR bit 1. */
#define FIXED0_OS_USR       0x3ull
#define GLOBAL_FIXED0       (1ull << 32)

#define MASK48              ((1ull << 48) - 1)

typedef struct Guest {
    VpmuPmu *pmu;
    VpmuFakeSource *fake;
    unsigned pmis;          /* opts.pmi calls: PMIs the front end delivers */
    bool pmi_pending;
    bool trace;             /* print every MSR access */
    unsigned mismatches;
} Guest;

static void on_pmi(void *opaque)
{
    Guest *g = opaque;

    /* A front end would raise the LVTPC interrupt here. */
    g->pmis++;
    g->pmi_pending = true;
}

static void on_log(void *opaque, const char *msg)
{
    printf("    [vpmu log] %s\n", msg);
}

static const char *msr_name(uint32_t msr)
{
    switch (msr) {
    case MSR_IA32_PMC0:                 return "IA32_PMC0";
    case MSR_IA32_PERFEVTSEL0:          return "IA32_PERFEVTSEL0";
    case MSR_IA32_FIXED_CTR0:           return "IA32_FIXED_CTR0";
    case MSR_IA32_FIXED_CTR_CTRL:       return "IA32_FIXED_CTR_CTRL";
    case MSR_IA32_PERF_GLOBAL_STATUS:   return "IA32_PERF_GLOBAL_STATUS";
    case MSR_IA32_PERF_GLOBAL_CTRL:     return "IA32_PERF_GLOBAL_CTRL";
    case MSR_IA32_PERF_GLOBAL_OVF_CTRL: return "IA32_PERF_GLOBAL_OVF_CTRL";
    case MSR_IA32_A_PMC0:               return "IA32_A_PMC0";
    case MSR_K7_PERFCTR0:               return "K7 PERFCTR0";
    case MSR_F15H_PERF_CTL0:            return "PERF_CTL0";
    case MSR_F15H_PERF_CTR0:            return "PERF_CTR0";
    case MSR_AMD_GLOBAL_STATUS:         return "PerfCntrGlobalStatus";
    case MSR_AMD_GLOBAL_CTL:            return "PerfCntrGlobalCtl";
    case MSR_AMD_GLOBAL_STATUS_CLR:     return "PerfCntrGlobalStatusClr";
    default:                            return "?";
    }
}

static const char *state_name(VpmuCounterState s)
{
    switch (s) {
    case VPMU_COUNTER_OFF:          return "off";
    case VPMU_COUNTER_COUNTING:     return "counting";
    case VPMU_COUNTER_FILTERED:     return "filtered";
    case VPMU_COUNTER_UNSUPPORTED:  return "unsupported";
    case VPMU_COUNTER_SOURCE_ERROR: return "source error";
    }
    return "?";
}

static void die(const char *what, int ret)
{
    fprintf(stderr, "demo: %s failed: %s\n", what,
            ret == -EINVAL ? "-EINVAL (the guest would take #GP)"
                           : strerror(-ret));
    exit(EXIT_FAILURE);
}

/* The guest kernel's WRMSR; it never expects a fault in this demo. */
static void wrmsr(Guest *g, uint32_t msr, uint64_t val, const char *why)
{
    int r = vpmu_pmu_wrmsr(g->pmu, msr, val);

    if (g->trace && why[0]) {
        printf("    wrmsr 0x%08" PRIx32 " %-25s <- 0x%-12" PRIx64 " %s\n",
               msr, msr_name(msr), val, why);
    } else if (g->trace) {
        printf("    wrmsr 0x%08" PRIx32 " %-25s <- 0x%" PRIx64 "\n",
               msr, msr_name(msr), val);
    }
    if (r) {
        die("wrmsr", r);
    }
}

static uint64_t rdmsr(Guest *g, uint32_t msr)
{
    uint64_t val = 0;
    int r = vpmu_pmu_rdmsr(g->pmu, msr, &val);

    if (r) {
        die("rdmsr", r);
    }
    if (g->trace) {
        printf("    rdmsr 0x%08" PRIx32 " %-25s -> 0x%" PRIx64 " (%" PRIu64 ")\n",
               msr, msr_name(msr), val, val);
    }
    return val;
}

static void expect(Guest *g, const char *what, uint64_t got, uint64_t want)
{
    if (got == want) {
        printf("    ok: %s = %" PRIu64 "\n", what, got);
    } else {
        printf("    MISMATCH: %s = %" PRIu64 ", bare metal would show %" PRIu64
               "\n", what, got, want);
        g->mismatches++;
    }
}

static void guest_init(Guest *g, VpmuVendor vendor)
{
    VpmuConfig cfg;
    VpmuPmuOpts opts = { 0 };
    char err[256] = "";
    int r;

    memset(g, 0, sizeof(*g));
    g->trace = true;
    r = vpmu_fake_source_new(&g->fake);
    if (r) {
        die("vpmu_fake_source_new", r);
    }
    vpmu_config_init(&cfg, vendor);
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = g->fake;
    opts.pmi = on_pmi;
    opts.log = on_log;
    opts.opaque = g;
    r = vpmu_pmu_new(&cfg, &opts, &g->pmu, err, sizeof(err));
    if (r) {
        fprintf(stderr, "demo: vpmu_pmu_new: %s\n", err);
        die("vpmu_pmu_new", r);
    }
}

static void guest_fini(Guest *g)
{
    vpmu_pmu_free(g->pmu);
    vpmu_fake_source_free(g->fake);
}

static void show_msr_spans(const VpmuPmu *pmu)
{
    VpmuMsrSpan spans[32];
    size_t n = vpmu_pmu_msr_spans(pmu, spans, 32);

    printf("  MSRs the front end hands to vpmu (%zu runs):", n);
    for (size_t i = 0; i < n && i < 32; i++) {
        printf("%s 0x%" PRIx32, i % 4 ? "," : "\n   ", spans[i].base);
        if (spans[i].count > 1) {
            printf("-0x%" PRIx32, spans[i].base + spans[i].count - 1);
        }
    }
    printf("\n");
}

static void intel_cpuid(Guest *g)
{
    uint32_t r[4] = { 0 };
    uint32_t eax, edx;

    if (vpmu_pmu_cpuid(g->pmu, 0xa, 0, r) != 0) {
        die("vpmu_pmu_cpuid(0xA)", -ENOENT);
    }
    eax = r[0];
    edx = r[3];
    printf("  CPUID.0AH: EAX=0x%08" PRIx32 " EBX=0x%08" PRIx32
           " ECX=0x%08" PRIx32 " EDX=0x%08" PRIx32 "\n", r[0], r[1], r[2], r[3]);
    printf("    architectural PMU version %" PRIu32 ", %" PRIu32
           " GP counters of %" PRIu32 " bits, %" PRIu32 " fixed counters of %"
           PRIu32 " bits\n", eax & 0xff, (eax >> 8) & 0xff, (eax >> 16) & 0xff,
           edx & 0x1f, (edx >> 5) & 0xff);
    printf("    EBX lists %" PRIu32 " events; unavailable mask 0x%" PRIx32
           " (0 = all available)\n", eax >> 24, r[1]);
}

/*
 * perf stat -e instructions: count, no interrupt.  PMC0 with
 * PERFEVTSEL0 = EN | OS | USR | event C0 = 0x4300C0, and fixed counter 0
 * (INST_RETIRED.ANY, where perf would actually put "instructions") next
 * to it, so the two can be compared.
 */
static void intel_perf_stat(Guest *g)
{
    const uint64_t user = 1000000, kernel = 2500;
    VpmuCounterInfo info;
    uint64_t pmc0, fixed0, v;

    printf("\n  -- perf stat -e instructions --\n");
    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 0, "perf: disable all");
    wrmsr(g, MSR_IA32_PMC0, 0, "");
    wrmsr(g, MSR_IA32_PERFEVTSEL0,
          EVTSEL_EN | EVTSEL_OS | EVTSEL_USR | EVENT_INSTRUCTIONS,
          "EN|OS|USR, event C0");
    wrmsr(g, MSR_IA32_FIXED_CTR0, 0, "");
    wrmsr(g, MSR_IA32_FIXED_CTR_CTRL, FIXED0_OS_USR, "fixed 0: OS|USR");
    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, GLOBAL_FIXED0 | 1,
          "enable PMC0 and FIXED_CTR0");
    printf("    ... workload: %" PRIu64 " instructions at CPL 3, %" PRIu64
           " at CPL 0\n", user, kernel);
    vpmu_fake_source_run(g->fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, user);
    vpmu_fake_source_run(g->fake, VPMU_EVENT_INSTRUCTIONS, 0, 0, kernel);

    if (vpmu_rdpmc_permitted(3, true) &&
        vpmu_pmu_rdpmc(g->pmu, 0, &v) == 0) {
        printf("    user space RDPMC(0) with CR4.PCE=1: %" PRIu64 "\n", v);
    }
    printf("    user space RDPMC with CR4.PCE=0: %s\n",
           vpmu_rdpmc_permitted(3, false) ? "allowed (wrong!)" : "#GP");

    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 0, "perf: disable all");
    pmc0 = rdmsr(g, MSR_IA32_PMC0);
    fixed0 = rdmsr(g, MSR_IA32_FIXED_CTR0);
    printf("    The WRMSR that enabled the counters retired at CPL 0 and is\n"
           "    counted, as on bare metal; the one that disabled them is not.\n");
    expect(g, "PMC0 instructions", pmc0, user + kernel + 1);
    expect(g, "FIXED_CTR0 instructions", fixed0, user + kernel + 1);
    if (vpmu_pmu_counter_info(g->pmu, VPMU_COUNTER_GP(0), &info) == 0) {
        printf("    counter_info(GP 0): value %" PRIu64 ", control 0x%" PRIx64
               ", state %s (GLOBAL_CTRL is 0 now)\n", info.value, info.control,
               state_name(info.state));
    }
}

/*
 * perf record -e instructions:u -c 1000: PERFEVTSEL0 = EN | INT | USR | C0
 * = 0x5100C0, PMC0 armed at -1000.  The workload runs in slices of 128
 * instructions (the PMI arrives after the slice, with skid), and the PMI
 * handler re-arms the counter the way Linux's x86_perf_event_set_period
 * does, subtracting the skid, so a sample lands every 1000 instructions.
 */
static void intel_perf_record(Guest *g)
{
    const uint64_t period = 1000, total = 10000, slice = 128;
    unsigned handled = 0;
    uint64_t done = 0;

    printf("\n  -- perf record -e instructions:u -c 1000 --\n");
    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 0, "perf: disable all");
    wrmsr(g, MSR_IA32_FIXED_CTR_CTRL, 0, "fixed 0 off");
    wrmsr(g, MSR_IA32_A_PMC0, -period & MASK48, "-1000, full-width write");
    wrmsr(g, MSR_IA32_PERFEVTSEL0,
          EVTSEL_EN | EVTSEL_INT | EVTSEL_USR | EVENT_INSTRUCTIONS,
          "EN|INT|USR, event C0");
    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 1, "enable PMC0");
    printf("    ... workload: %" PRIu64 " instructions at CPL 3, in slices"
           " of %" PRIu64 "\n", total, slice);

    g->trace = false;
    while (done < total) {
        uint64_t n = total - done < slice ? total - done : slice;
        uint64_t status, skid;

        vpmu_fake_source_run(g->fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, n);
        done += n;
        if (!g->pmi_pending) {
            continue;
        }
        /* The guest's PMI handler (intel_pmu_handle_irq). */
        g->pmi_pending = false;
        handled++;
        wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 0, "");
        status = rdmsr(g, MSR_IA32_PERF_GLOBAL_STATUS);
        skid = rdmsr(g, MSR_IA32_PMC0);
        wrmsr(g, MSR_IA32_A_PMC0, -(period - skid) & MASK48, "");
        wrmsr(g, MSR_IA32_PERF_GLOBAL_OVF_CTRL, status, "");
        wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 1, "");
        printf("    PMI %2u at instruction %5" PRIu64 ": GLOBAL_STATUS=0x%"
               PRIx64 ", skid %3" PRIu64 ", cleared via 0x390, re-armed\n",
               handled, done, status, skid);
    }
    g->trace = true;
    wrmsr(g, MSR_IA32_PERF_GLOBAL_CTRL, 0, "perf: disable all");
    expect(g, "PMIs delivered", g->pmis, total / period);
    expect(g, "GLOBAL_STATUS after the last handler",
           rdmsr(g, MSR_IA32_PERF_GLOBAL_STATUS), 0);
}

static void intel_save_restore(Guest *g)
{
    Guest dst;
    size_t len = vpmu_pmu_state_size(g->pmu), written = 0;
    void *buf = malloc(len);
    int r;

    printf("\n  -- save/restore (migration) --\n");
    if (!buf) {
        die("malloc", -ENOMEM);
    }
    r = vpmu_pmu_save(g->pmu, buf, len, &written);
    if (r) {
        die("vpmu_pmu_save", r);
    }
    guest_init(&dst, VPMU_VENDOR_INTEL);
    r = vpmu_pmu_load(dst.pmu, buf, written);
    if (r) {
        die("vpmu_pmu_load", r);
    }
    printf("    saved %zu bytes, loaded into a new PMU on another source\n",
           written);
    g->trace = dst.trace = false;
    for (size_t i = 0; i < 2; i++) {
        static const uint32_t msrs[2] = {
            MSR_IA32_PMC0, MSR_IA32_PERFEVTSEL0,
        };
        uint64_t want = rdmsr(g, msrs[i]);
        char what[64];

        snprintf(what, sizeof(what), "%s on the new PMU", msr_name(msrs[i]));
        expect(g, what, rdmsr(&dst, msrs[i]), want);
    }
    g->trace = true;
    guest_fini(&dst);
    free(buf);
}

static void show_stats(const VpmuPmu *pmu)
{
    VpmuStats s;

    vpmu_pmu_stats(pmu, &s);
    printf("  stats: %" PRIu64 " rdmsr, %" PRIu64 " wrmsr, %" PRIu64
           " rdpmc, %" PRIu64 " #GP, %" PRIu64 " overflows, %" PRIu64
           " PMIs,\n         %" PRIu64 " source opens, %" PRIu64
           " reuses, %" PRIu64 " errors, %" PRIu64 " emulated counts\n",
           s.rdmsr, s.wrmsr, s.rdpmc, s.gp_faults, s.overflows, s.pmis,
           s.source_opens, s.source_reuses, s.source_errors, s.emulated);
}

static unsigned demo_intel(void)
{
    Guest g;
    unsigned bad;

    printf("== Intel PMU, vpmu_config_init() defaults, fake source ==\n");
    guest_init(&g, VPMU_VENDOR_INTEL);
    intel_cpuid(&g);
    show_msr_spans(g.pmu);
    intel_perf_stat(&g);
    intel_perf_record(&g);
    intel_save_restore(&g);
    printf("\n");
    show_stats(g.pmu);
    bad = g.mismatches;
    guest_fini(&g);
    return bad;
}

/* AMD PerfMonV2: PERF_CTL0/PERF_CTR0 (F15H layout) and the global MSRs. */
static unsigned demo_amd(void)
{
    const uint64_t user = 5000;
    uint32_t r[4] = { 0 };
    Guest g;
    unsigned bad;
    int ret;

    printf("\n== AMD PMU, vpmu_config_init() defaults, fake source ==\n");
    guest_init(&g, VPMU_VENDOR_AMD);
    vpmu_pmu_cpuid(g.pmu, 0x80000022, 0, r);
    printf("  CPUID.80000022H: EAX=0x%" PRIx32 " (PerfMonV2 %s), EBX=0x%"
           PRIx32 " (%" PRIu32 " core counters)\n", r[0],
           r[0] & 1 ? "yes" : "no", r[1], r[1] & 0xf);
    memset(r, 0, sizeof(r));
    ret = vpmu_pmu_cpuid(g.pmu, 0xa, 0, r);
    printf("  CPUID.0AH: %s, EAX=0x%" PRIx32 " (AMD has no architectural "
           "PMU leaf)\n", ret == 0 ? "answered" : "not a PMU leaf", r[0]);
    show_msr_spans(g.pmu);

    printf("\n  -- counting instructions --\n");
    rdmsr(&g, MSR_AMD_GLOBAL_CTL);
    wrmsr(&g, MSR_F15H_PERF_CTR0, 0, "");
    wrmsr(&g, MSR_F15H_PERF_CTL0,
          EVTSEL_EN | EVTSEL_OS | EVTSEL_USR | EVENT_INSTRUCTIONS,
          "EN|OS|USR, event C0");
    printf("    ... workload: %" PRIu64 " instructions at CPL 3\n", user);
    vpmu_fake_source_run(g.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, user);
    wrmsr(&g, MSR_F15H_PERF_CTL0, 0, "disable");
    expect(&g, "PERF_CTR0", rdmsr(&g, MSR_F15H_PERF_CTR0), user + 1);
    expect(&g, "K7 PERFCTR0 (the same counter)", rdmsr(&g, MSR_K7_PERFCTR0),
           user + 1);

    printf("\n  -- one overflow --\n");
    wrmsr(&g, MSR_F15H_PERF_CTR0, -100ull & MASK48, "-100");
    wrmsr(&g, MSR_F15H_PERF_CTL0,
          EVTSEL_EN | EVTSEL_INT | EVTSEL_USR | EVENT_INSTRUCTIONS,
          "EN|INT|USR, event C0");
    vpmu_fake_source_run(g.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 100);
    expect(&g, "PMIs", g.pmis, 1);
    expect(&g, "PerfCntrGlobalStatus", rdmsr(&g, MSR_AMD_GLOBAL_STATUS), 1);
    wrmsr(&g, MSR_AMD_GLOBAL_STATUS_CLR, 1, "clear counter 0's bit");
    expect(&g, "PerfCntrGlobalStatus", rdmsr(&g, MSR_AMD_GLOBAL_STATUS), 0);
    show_stats(g.pmu);
    bad = g.mismatches;
    guest_fini(&g);
    return bad;
}

int main(void)
{
    unsigned bad;

    printf("libvpmu demo: a guest kernel's perf, played against the library\n"
           "(no guest: the fake counting source supplies the events)\n\n");
    bad = demo_intel();
    bad += demo_amd();
    printf("\n%s\n", bad ? "demo: some counts differ from bare metal"
                         : "demo: every count matches bare metal");
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
