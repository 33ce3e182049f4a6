/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-msr: the cost of the guest PMU accesses a front end forwards most,
 * on the fake counting source, against an empty indirect call measured in
 * the same run (the floor of any front-end dispatch).
 *
 * Each operation runs BATCHES batches of BATCH_OPS back to back; the table
 * shows the median batch.  Informational: always exits 0.  Results and
 * targets are recorded in docs/performance.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vpmu/vpmu.h>

#define BATCHES     15
#define BATCH_OPS   100000

/* Intel MSRs (SDM Vol. 4): PMC0, its full-width alias, PERFEVTSEL0, GLOBAL_CTRL */
#define MSR_PMC0            0x0C1u
#define MSR_A_PMC0          0x4C1u
#define MSR_PERFEVTSEL0     0x186u
#define MSR_GLOBAL_CTRL     0x38Fu
/* PERFEVTSEL: USR 16, OS 17, INT 20, EN 22; events 3C/00 cycles, C0/00 instructions */
#define SEL_CYCLES  (0x3Cull | 1ull << 16 | 1ull << 17 | 1ull << 22)
#define SEL_INSNS   (0xC0ull | 1ull << 16 | 1ull << 17 | 1ull << 22)
#define SEL_INT     (1ull << 20)

typedef void (*LoopFn)(VpmuPmu *pmu, uint64_t n);

typedef struct Bench {
    const char *name;
    LoopFn loop;
    double target_ns;       /* 0: no target */
} Bench;

static volatile uint64_t sink;

static __attribute__((noinline)) void empty(void)
{
    __asm__ volatile("");
}

/* volatile: the compiler must load the pointer and make the call each time */
static void (*volatile empty_fn)(void) = empty;

static void loop_call(VpmuPmu *pmu, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        empty_fn();
    }
}

static void loop_rdmsr(VpmuPmu *pmu, uint64_t n)
{
    uint64_t v = 0;

    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_rdmsr(pmu, MSR_PMC0, &v);
        sink += v;
    }
}

/* The same counter through the alias (another entry of the MSR table). */
static void loop_rdmsr_alias(VpmuPmu *pmu, uint64_t n)
{
    uint64_t v = 0;

    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_rdmsr(pmu, MSR_A_PMC0, &v);
        sink += v;
    }
}

static void loop_rdpmc(VpmuPmu *pmu, uint64_t n)
{
    uint64_t v = 0;

    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_rdpmc(pmu, 0, &v);
        sink += v;
    }
}

/* A new value is a new sample period: the source is updated in place. */
static void loop_wr_pmc(VpmuPmu *pmu, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_wrmsr(pmu, MSR_A_PMC0, 0xFFFFFFFF0000ull | (i & 0xFFFF));
    }
}

/* Same event, INT toggled (what Linux does on every rotation): update. */
static void loop_wr_sel_same(VpmuPmu *pmu, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_wrmsr(pmu, MSR_PERFEVTSEL0, SEL_CYCLES | (i & 1 ? SEL_INT : 0));
    }
}

/* Another event each time: the source handle is closed and reopened. */
static void loop_wr_sel_other(VpmuPmu *pmu, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_wrmsr(pmu, MSR_PERFEVTSEL0, i & 1 ? SEL_INSNS : SEL_CYCLES);
    }
}

/* Counter 0's global enable off and on: disable / enable of its source. */
static void loop_gctrl(VpmuPmu *pmu, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        vpmu_pmu_wrmsr(pmu, MSR_GLOBAL_CTRL, i & 1 ? 0xFE : 0xFF);
    }
}

static const Bench benches[] = {
    { "empty indirect call", loop_call, 0 },
    { "rdmsr IA32_PMC0 (counter read)", loop_rdmsr, 30 },
    { "rdmsr IA32_A_PMC0 (counter read)", loop_rdmsr_alias, 30 },
    { "rdpmc 0 (counter read)", loop_rdpmc, 30 },
    { "wrmsr IA32_A_PMC0 (new period)", loop_wr_pmc, 100 },
    { "wrmsr PERFEVTSEL0, same event", loop_wr_sel_same, 100 },
    { "wrmsr PERFEVTSEL0, other event", loop_wr_sel_other, 0 },
    { "wrmsr GLOBAL_CTRL toggle", loop_gctrl, 100 },
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/*
 * The source calls a perf source makes a syscall of (perf_event_open,
 * an ioctl, close): reads are left out (the fake's are free, perf's
 * may be an mmap read).  They cost far more than vpmu's own instructions.
 */
static uint64_t host_calls(const VpmuFakeStats *f)
{
    return f->calls[VPMU_FAKE_OPEN] + f->calls[VPMU_FAKE_UPDATE] +
           f->calls[VPMU_FAKE_ENABLE] + f->calls[VPMU_FAKE_DISABLE] +
           f->closes;
}

/* Median ns per operation over BATCHES batches, after one warm-up batch. */
static double measure(const Bench *b, VpmuPmu *pmu)
{
    double ns[BATCHES];

    b->loop(pmu, BATCH_OPS);
    for (int i = 0; i < BATCHES; i++) {
        uint64_t t0 = now_ns();

        b->loop(pmu, BATCH_OPS);
        ns[i] = (double)(now_ns() - t0) / BATCH_OPS;
    }
    qsort(ns, BATCHES, sizeof(ns[0]), cmp_double);
    return ns[BATCHES / 2];
}

/* Intel v2 defaults (8 GP, 3 fixed, FW_WRITE); GP0 counts cycles. */
static int make_pmu(VpmuFakeSource **fake, VpmuPmu **pmu)
{
    VpmuConfig cfg;
    VpmuPmuOpts opts = { 0 };
    char err[256] = "";
    int r;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    r = vpmu_fake_source_new(fake);
    if (r < 0) {
        return r;
    }
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = *fake;
    r = vpmu_pmu_new(&cfg, &opts, pmu, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "bench-msr: vpmu_pmu_new: %s\n", err);
        return r;
    }
    return vpmu_pmu_wrmsr(*pmu, MSR_PERFEVTSEL0, SEL_CYCLES);
}

int main(void)
{
    VpmuFakeSource *fake = NULL;
    VpmuPmu *pmu = NULL;
    double base = 0;

    if (make_pmu(&fake, &pmu) < 0) {
        fprintf(stderr, "bench-msr: cannot set up the PMU; nothing measured\n");
        vpmu_pmu_free(pmu);
        vpmu_fake_source_free(fake);
        return 0;
    }
    printf("bench-msr: fake source, Intel v2 8 GP + 3 fixed, GP0 counting cycles;\n"
           "median of %d batches of %d operations\n\n", BATCHES, BATCH_OPS);
    printf("%-34s %8s %8s %8s %6s %9s %9s\n", "operation", "ns/op", "x call",
           "target", "", "opens/op", "calls/op");
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
        const Bench *b = &benches[i];
        VpmuStats s0, s1;
        VpmuFakeStats f0, f1;
        double ns, ops = (BATCHES + 1) * (double)BATCH_OPS;

        vpmu_pmu_wrmsr(pmu, MSR_PERFEVTSEL0, SEL_CYCLES);
        vpmu_pmu_wrmsr(pmu, MSR_GLOBAL_CTRL, 0xFF);
        vpmu_pmu_stats(pmu, &s0);
        vpmu_fake_source_stats(fake, &f0);
        ns = measure(b, pmu);
        vpmu_pmu_stats(pmu, &s1);
        vpmu_fake_source_stats(fake, &f1);
        base = i == 0 ? ns : base;
        printf("%-34s %8.1f %8.1f ", b->name, ns, base > 0 ? ns / base : 0);
        if (b->target_ns > 0) {
            printf("%5s%3.0f %6s", "< ", b->target_ns, ns < b->target_ns ? "ok" : "over");
        } else {
            printf("%8s %6s", "-", "");
        }
        printf(" %9.2f %9.2f\n", (double)(s1.source_opens - s0.source_opens) / ops,
               (double)(host_calls(&f1) - host_calls(&f0)) / ops);
    }
    vpmu_pmu_free(pmu);
    vpmu_fake_source_free(fake);
    return 0;
}
