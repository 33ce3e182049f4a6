/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-kvm: the cost of a guest PMU MSR access that vpmu serves through
 * a KVM userspace exit, as a ratio to MSR reads KVM serves in the kernel,
 * all measured in one run of tests/kvm's VMM (fake counting source).
 *
 * The payload (tests/kvm/bench-payload.c) runs 15 rounds of three
 * batches of 2000 RDMSRs (IA32_TSC, IA32_SYSENTER_CS, IA32_PMC0), each
 * batch between two PROTO_MARK exits; the host timestamps the marks
 * (CLOCK_MONOTONIC) and prints the median ns per RDMSR of each kind and
 * the ratios.  Informational: exits 0, or 77 without KVM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

#define ROUNDS      15
#define BATCH_OPS   2000
#define KINDS       3
#define MARK_END    0x100u

static const char *const kind_names[KINDS] = {
    "RDMSR IA32_TSC (0x10), in-kernel",
    "RDMSR IA32_SYSENTER_CS (0x174), in-kernel",
    "RDMSR IA32_PMC0 (0xC1), vpmu via user exit",
};

typedef struct Bench {
    double ns[KINDS][ROUNDS];
    unsigned n[KINDS];
    double start;
} Bench;

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void on_mark(void *ctx, uint32_t kind)
{
    Bench *b = ctx;
    uint32_t k = kind & ~MARK_END;

    if (!(kind & MARK_END)) {
        b->start = now_ns();
    } else if (k < KINDS && b->n[k] < ROUNDS) {
        b->ns[k][b->n[k]++] = (now_ns() - b->start) / BATCH_OPS;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n ? v[n / 2] : 0;
}

int main(int argc, char **argv)
{
    HarnessOpts o = { .vendor = VPMU_VENDOR_INTEL,
                      .payload = argc > 1 ? argv[1] : BENCH_PAYLOAD };
    static Bench b;
    double med[KINDS];
    Harness h;
    char err[256] = "";
    int ret = harness_open(&h, &o, err, sizeof(err));

    if (ret < 0) {
        harness_close(&h);
        printf("%s%s\n", ret == -ENODEV || ret == -EOPNOTSUPP ? "SKIP " : "",
               err);
        return ret == -ENODEV || ret == -EOPNOTSUPP ? 77 : 1;
    }
    h.mark = on_mark;
    h.mark_ctx = &b;
    ret = harness_run(&h);
    harness_close(&h);
    if (ret < 0 || b.n[KINDS - 1] != ROUNDS) {
        printf("bench-kvm: the payload did not complete\n");
        return 1;
    }
    printf("%-45s %12s\n", "median of 15 batches x 2000", "ns/RDMSR");
    for (unsigned k = 0; k < KINDS; k++) {
        med[k] = median(b.ns[k], b.n[k]);
        printf("%-45s %12.0f\n", kind_names[k], med[k]);
    }
    printf("ratio PMC0 (vpmu) / TSC (kernel):         %8.1fx\n", med[2] / med[0]);
    printf("ratio PMC0 (vpmu) / SYSENTER_CS (kernel): %8.1fx\n", med[2] / med[1]);
    return 0;
}
