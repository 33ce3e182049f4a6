/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared set-up of the perf source tests: an Intel v2 VpmuPmu (8 GP + 3
 * fixed, 48 bits, FW_WRITE) backed by a perf source on the fake system
 * call layer of fake-sys.h, with its PMI and log callbacks recorded.
 */
#ifndef VPMU_TEST_PERF_ENV_H
#define VPMU_TEST_PERF_ENV_H

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fake-sys.h"
/* Internals (unit conversions) of the component under test. */
#include "../../vpmu/perf/perf-priv.h"
/* The core's helpers (VPMU_ARRAY_SIZE, ...): tests may use internals. */
#include "pmu-priv.h"

#include "check-main.h"

/* Intel MSRs (SDM Vol. 4, Table 2-2) */
#define A_PMC(i)        (0x4C1u + (i))     /* IA32_A_PMCi, full width */
#define EVTSEL(i)       (0x186u + (i))     /* IA32_PERFEVTSELi */
#define FIXED_CTR_CTRL  0x38Du
#define GLOBAL_STATUS   0x38Eu
#define GLOBAL_CTRL     0x38Fu
#define GLOBAL_OVF_CTRL 0x390u

/* IA32_PERFEVTSELx fields (SDM Vol. 3B Figure 20-6) */
#define USR             (1ull << 16)
#define OS              (1ull << 17)
#define INT             (1ull << 20)
#define EN              (1ull << 22)
#define CMASK(n)        ((uint64_t)(n) << 24)
#define EOU             (EN | OS | USR)
/* Architectural encodings (SDM Table 20-1) */
#define EV_CYCLES       0x003Cull
#define EV_INSTRUCTIONS 0x00C0ull
#define EV_REF_CYCLES   0x013Cull

#define MASK48          ((1ull << 48) - 1)
#define NOTIFY_SIG      (SIGRTMIN + 5)

typedef struct Env {
    FakeSys fs;
    VpmuPerfSource *src;
    VpmuPmu *pmu;
    unsigned pmis, logs;
    char log[512];
} Env;

extern Env env;

/*
 * HOST_MEDIATED: a hardware PMU whose events that count guests perf
 * refuses (EOPNOTSUPP), as with KVM's mediated vPMU and a mediated VM.
 */
enum { HOST_NO_HW = 0, HOST_HW = 1, HOST_NO_PERF = 2, HOST_MEDIATED = 3 };

/*
 * The sysroot of a source whose opts give none: no such directory, so
 * that the fake host is the test's, whatever this machine's KVM says.
 */
#define ENV_NO_SYSROOT  "/nonexistent/vpmu-test-sysroot"

/* Source on the fake sys (opts may be NULL: defaults + fake sys), PMU. */
void env_up(int host, const VpmuPerfSourceOpts *opts);
/* Free the PMU and the source; every fd must have been closed once. */
void env_down(void);
void wr(uint32_t msr, uint64_t val);
uint64_t rd(uint32_t msr);
VpmuCounterState state_of(uint32_t id);
VpmuPerfStats perf_stats(void);
VpmuStats pmu_stats(void);

/* A host operator's cycles, both CPLs, as operator.c opens it. */
static inline VpmuSourceAttr operator_cycles(void)
{
    return (VpmuSourceAttr){
        .event = VPMU_EVENT_CYCLES, .count_user = true, .count_kernel = true,
        .count_host = true, .count_guest = true, .sample_period = 1ull << 62,
        .counter_id = VPMU_OPERATOR_COUNTER_ID(0),
    };
}

#endif
