/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared helpers for the Check suites: a PMU on the fake source, PMI
 * counting, and table vectors that record their source line (libpfm4's
 * SRC_LINE habit) so a failing vector names where it is written.
 */
#ifndef VPMU_TESTS_VECTORS_H
#define VPMU_TESTS_VECTORS_H

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/vpmu.h>

#include "check-main.h"

#define SRC_LINE .line = __LINE__

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One MSR access and what the hardware answers. */
typedef struct MsrVector {
    int line;
    uint32_t msr;
    bool write;          /* WRMSR @val, else RDMSR expecting @val */
    uint64_t val;
    int ret;             /* 0, -EINVAL (#GP), -ENOENT (not a PMU MSR) */
    uint64_t readback;   /* for writes that succeed: RDMSR afterwards */
    bool check_readback;
} MsrVector;

typedef struct TestPmu {
    VpmuPmu *pmu;
    VpmuFakeSource *fake;
    unsigned pmis;
} TestPmu;

static void test_pmi(void *opaque)
{
    ((TestPmu *)opaque)->pmis++;
}

/* Build a PMU on a fresh fake source; aborts the test on failure. */
static inline void test_pmu_init(TestPmu *t, const VpmuConfig *cfg)
{
    char err[256] = "";
    VpmuPmuOpts opts = {
        .source_ops = vpmu_fake_source_ops(),
        .pmi = test_pmi,
        .opaque = t,
    };

    memset(t, 0, sizeof(*t));
    ck_assert_int_eq(vpmu_fake_source_new(&t->fake), 0);
    opts.source = t->fake;
    ck_assert_msg(vpmu_pmu_new(cfg, &opts, &t->pmu, err, sizeof(err)) == 0,
                  "vpmu_pmu_new: %s", err);
}

static inline void test_pmu_fini(TestPmu *t)
{
    vpmu_pmu_free(t->pmu);
    vpmu_fake_source_free(t->fake);
    t->pmu = NULL;
    t->fake = NULL;
}

/* Run a table of MSR vectors in order against @pmu. */
static inline void run_msr_vectors(VpmuPmu *pmu, const MsrVector *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t got = 0;
        int r;

        if (v[i].write) {
            r = vpmu_pmu_wrmsr(pmu, v[i].msr, v[i].val);
            ck_assert_msg(r == v[i].ret,
                          "line %d: wrmsr 0x%x <- 0x%" PRIx64 ": ret %d want %d",
                          v[i].line, v[i].msr, v[i].val, r, v[i].ret);
            if (r == 0 && v[i].check_readback) {
                r = vpmu_pmu_rdmsr(pmu, v[i].msr, &got);
                ck_assert_msg(r == 0 && got == v[i].readback,
                              "line %d: rdmsr 0x%x after write = 0x%" PRIx64
                              " (ret %d), want 0x%" PRIx64,
                              v[i].line, v[i].msr, got, r, v[i].readback);
            }
        } else {
            r = vpmu_pmu_rdmsr(pmu, v[i].msr, &got);
            ck_assert_msg(r == v[i].ret, "line %d: rdmsr 0x%x: ret %d want %d",
                          v[i].line, v[i].msr, r, v[i].ret);
            ck_assert_msg(r != 0 || got == v[i].val,
                          "line %d: rdmsr 0x%x = 0x%" PRIx64 " want 0x%" PRIx64,
                          v[i].line, v[i].msr, got, v[i].val);
        }
    }
}

/* Is @msr in one of the @n spans vpmu_pmu_msr_spans() gave? */
static inline bool in_spans(const VpmuMsrSpan *s, size_t n, uint32_t msr)
{
    for (size_t i = 0; i < n; i++) {
        if (msr >= s[i].base && msr - s[i].base < s[i].count) {
            return true;
        }
    }
    return false;
}

#endif /* VPMU_TESTS_VECTORS_H */
