/*
 * AMD PMU checks (docs/msrs.md, "AMD"), split over amd-msr.c (CPUID, MSR
 * matrix, reset values, RDPMC) and amd-count.c (exact counts, overflow
 * and PMIs, running writes).
 */
#ifndef BAREMETAL_PMU_AMD_H
#define BAREMETAL_PMU_AMD_H

#include "pmu-common.h"

#define MSR_K7_EVNTSEL0             0xC0010000u /* + i, i < 4 */
#define MSR_K7_PERFCTR0             0xC0010004u /* + i, i < 4 */
#define MSR_F15H_PERF_CTL0          0xC0010200u /* + 2i */
#define MSR_F15H_PERF_CTR0          0xC0010201u /* + 2i */
#define MSR_AMD_GLOBAL_STATUS       0xC0000300u
#define MSR_AMD_GLOBAL_CTL          0xC0000301u
#define MSR_AMD_GLOBAL_STATUS_CLR   0xC0000302u
#define MSR_AMD_GLOBAL_STATUS_SET   0xC0000303u

#define AMD_K7_COUNTERS             4
#define AMD_MAX_GP                  6   /* size of the F15H range */
#define AMD_WIDTH                   48

/* PERF_CTL bits (APM Vol. 2 13.2.1), same positions as Intel's */
#define AMD_CTL_USR                 (1ull << 16)
#define AMD_CTL_OS                  (1ull << 17)
#define AMD_CTL_INT                 (1ull << 20)
#define AMD_CTL_EN                  (1ull << 22)
#define AMD_CTL_GUESTONLY           (1ull << 40)
#define AMD_CTL_HOSTONLY            (1ull << 41)
/* Kept bits: 35:0 except 19 and 21 (KVM's reserved mask 0xfffffff000280000) */
#define AMD_CTL_KEPT                0x0000000FFFD7FFFFull

#define AMD_EVT_INSNS               0xC0ull     /* retired instructions */
#define AMD_EVT_BRANCHES            0xC2ull     /* retired branch instructions */
#define AMD_EVT_CYCLES              0x76ull     /* CPU clocks not halted */

/* VpmuAmdLevel */
#define AMD_LEVEL_K7                1
#define AMD_LEVEL_PERFCTR_CORE      2
#define AMD_LEVEL_PERFMON_V2        3

/* The PMU as CPUID describes it. */
struct amd_pmu {
    unsigned level, nr_gp;
};

extern struct amd_pmu amd;

/* Counter i's MSRs: the F15H pair with PERFCTR_CORE, else the K7 ones. */
static inline uint32_t amd_ctl(unsigned i)
{
    return amd.level >= AMD_LEVEL_PERFCTR_CORE ? MSR_F15H_PERF_CTL0 + 2 * i
                                               : MSR_K7_EVNTSEL0 + i;
}

static inline uint32_t amd_ctr(unsigned i)
{
    return amd.level >= AMD_LEVEL_PERFCTR_CORE ? MSR_F15H_PERF_CTR0 + 2 * i
                                               : MSR_K7_PERFCTR0 + i;
}

static inline bool amd_v2(void)
{
    return amd.level >= AMD_LEVEL_PERFMON_V2;
}

/* amd-msr.c */
bool amd_check_cpuid(void);
void amd_check_reset_values(void);
void amd_check_msr_matrix(void);
void amd_check_rdpmc(void);
void amd_quiesce(void);

/* amd-count.c */
void amd_check_counting(void);
void amd_check_overflow(void);
void amd_check_running_writes(void);

#endif
