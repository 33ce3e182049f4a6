/*
 * Intel architectural PMU checks (docs/msrs.md, "Intel"), split over
 * intel-msr.c (CPUID, MSR #GP matrix, reset values, widths, RDPMC) and
 * intel-count.c (exact counts, overflow and PMIs, running writes).
 */
#ifndef BAREMETAL_PMU_INTEL_H
#define BAREMETAL_PMU_INTEL_H

#include "pmu-common.h"

#define MSR_IA32_PMC0               0x0C1
#define MSR_IA32_PERFEVTSEL0        0x186
#define MSR_IA32_A_PMC0             0x4C1
#define MSR_FIXED_CTR0              0x309
#define MSR_FIXED_CTR_CTRL          0x38D
#define MSR_GLOBAL_STATUS           0x38E
#define MSR_GLOBAL_CTRL             0x38F
#define MSR_GLOBAL_OVF_CTRL         0x390
#define MSR_GLOBAL_STATUS_SET       0x391
#define MSR_GLOBAL_INUSE            0x392
#define MSR_PERF_CAPABILITIES       0x345
#define MSR_DEBUGCTL                0x1D9

#define INTEL_MAX_GP                8   /* size of the PMC/EVTSEL ranges */
#define INTEL_MAX_FIXED             4   /* size of the FIXED_CTR range */

/* IA32_PERFEVTSELx bits (SDM Vol. 3B 20.2.1.1) */
#define EVTSEL_USR                  (1ull << 16)
#define EVTSEL_OS                   (1ull << 17)
#define EVTSEL_EDGE                 (1ull << 18)
#define EVTSEL_PC                   (1ull << 19)
#define EVTSEL_INT                  (1ull << 20)
#define EVTSEL_ANY                  (1ull << 21)
#define EVTSEL_EN                   (1ull << 22)
#define EVTSEL_INV                  (1ull << 23)

/* Architectural events (event | umask << 8) */
#define EVT_INSNS                   0x00C0ull
#define EVT_BRANCHES                0x00C4ull
#define EVT_CYCLES                  0x003Cull
#define EVT_REF_CYCLES              0x013Cull
/* Reference cycles as Linux perf and KVM encode them (event 0, umask 3) */
#define EVT_REF_CYCLES_PSEUDO       0x0300ull

/* RDPMC ECX: fixed counter i is 1 << 30 | i (SDM Vol. 2B RDPMC) */
#define RDPMC_FIXED                 (1u << 30)

/* IA32_FIXED_CTR_CTRL nibble bits */
#define FIXED_OS                    0x1ull
#define FIXED_USR                   0x2ull
#define FIXED_ANY                   0x4ull
#define FIXED_PMI                   0x8ull

#define GLOBAL_FIXED(i)             (1ull << (32 + (i)))
#define GLOBAL_CTR_FRZ              (1ull << 59)
#define GLOBAL_OVF_BUF              (1ull << 62)
#define GLOBAL_COND_CHGD            (1ull << 63)
#define GLOBAL_LBR_FRZ              (1ull << 58)

#define DEBUGCTL_BTF                (1ull << 1)
#define DEBUGCTL_FREEZE_ON_PMI      (1ull << 12)
#define DEBUGCTL_FREEZE_WHILE_SMM   (1ull << 14)

#define PERF_CAP_FW_WRITE           (1ull << 13)

/* CPUID.0AH:EBX bits, set = event NOT available */
#define CPUID_A_EBX_CYCLES          (1u << 0)
#define CPUID_A_EBX_INSNS           (1u << 1)
#define CPUID_A_EBX_REF_CYCLES      (1u << 2)
#define CPUID_A_EBX_BRANCHES        (1u << 5)

/* The PMU as CPUID describes it; every MSR expectation derives from it. */
struct intel_pmu {
    unsigned version, nr_gp, nr_fixed, gp_width, fixed_width;
    uint32_t ebx;               /* CPUID.0AH:EBX, unavailable events */
    bool pdcm, fw_write;
    uint64_t caps;              /* PERF_CAPABILITIES as read, if pdcm */
};

extern struct intel_pmu intel;

/* intel-msr.c */
bool intel_check_cpuid(void);
void intel_check_reset_values(void);
void intel_check_msr_matrix(void);
void intel_check_widths(void);
void intel_check_rdpmc(void);
void intel_quiesce(void);
uint64_t intel_global_ctrl_valid(void);

/* intel-count.c */
void intel_check_counting(void);
void intel_check_overflow(void);
void intel_check_running_writes(void);

#endif
