/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internals of the host probe (include/vpmu/host.h): host-cpu.c reads
 * the CPU's vendor and PMU from a CPUID table, host-probe.c asks KVM and
 * puts the answer together.
 */
#ifndef VPMU_HOST_PRIV_H
#define VPMU_HOST_PRIV_H

#include <stdarg.h>
#include <stdio.h>

#include <vpmu/host.h>

/* The leaves the probe reads (SDM Vol. 2A, CPUID; APM Vol. 3, App. E). */
#define CPUID_LEAF_VENDOR           0x00000000u /* EAX: max basic leaf */
#define CPUID_LEAF_ARCH_PERFMON     0x0000000Au
#define CPUID_LEAF_EXT_MAX          0x80000000u /* EAX: max extended leaf */
#define CPUID_LEAF_EXT_FEATURES     0x80000001u
#define CPUID_LEAF_EXT_PERFMON      0x80000022u
/* Linux's test of 0x80000000:EAX (get_cpu_cap()): else no such leaves. */
#define CPUID_EXT_RANGE_MASK        0xFFFF0000u

/*
 * CPUID.0AH, "Architectural Performance Monitoring Leaf" (SDM Vol. 2A,
 * Table 3-8; Vol. 3B, "Architectural Performance Monitoring"): EAX[7:0]
 * version, EAX[15:8] GP counters per logical processor, EAX[23:16]
 * their width; EDX[4:0] contiguous fixed counters and EDX[12:5] their
 * width (version > 1); ECX the bitmap of fixed counters (version 5:
 * counter i exists if ECX[i] || EDX[4:0] > i).
 */
#define CPUID_0A_EAX_VERSION_MASK       0xFFu
#define CPUID_0A_EAX_NR_GP_SHIFT        8
#define CPUID_0A_EAX_NR_GP_MASK         0xFFu
#define CPUID_0A_EAX_GP_WIDTH_SHIFT     16
#define CPUID_0A_EAX_GP_WIDTH_MASK      0xFFu
#define CPUID_0A_EDX_NR_FIXED_MASK      0x1Fu
#define CPUID_0A_EDX_FIXED_WIDTH_SHIFT  5
#define CPUID_0A_EDX_FIXED_WIDTH_MASK   0xFFu
#define INTEL_FIXED_SINCE_VERSION       2
#define INTEL_FIXED_MASK_SINCE_VERSION  5
/* IA32_PERF_GLOBAL_CTRL enables GP counters in [31:0] and fixed ones in
   [47:32] (SDM Vol. 4, MSR 38FH): more is no CPU's. */
#define INTEL_MAX_GP_COUNTERS           32
#define INTEL_MAX_FIXED_COUNTERS        16
#define COUNTER_MAX_WIDTH               64

/*
 * AMD (APM Vol. 3, App. E.4; Vol. 2 13.2): Fn8000_0001_ECX[23]
 * PerfCtrExtCore, six counters at C001_0200h, else the four legacy ones
 * at C001_0000h; Fn8000_0022_EAX[0] PerfMonV2, with EBX[3:0]
 * NumPerfCtrCore.  Every core counter is 48 bits wide.
 */
#define CPUID_80000001_ECX_PERFCTR_CORE (1u << 23)
#define CPUID_80000022_EAX_PERFMON_V2   (1u << 0)
#define CPUID_80000022_EBX_NR_CORE_MASK 0xFu
#define AMD_LEGACY_COUNTERS             4
#define AMD_EXT_CORE_COUNTERS           6
#define AMD_COUNTER_WIDTH               48
/* KVM numbers AMD's PMU 2 with PerfMonV2, else 1 (amd_pmu_refresh()). */
#define AMD_VERSION_PERFMON_V2          2
#define AMD_VERSION_V1                  1

/* The leaves executed on this CPU: all the probe reads. */
#define HOST_LIVE_LEAVES                5

/* One line into @buf; truncation is fine (a reason). */
__attribute__((format(printf, 3, 4)))
static inline void host_say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* The entry of @leaf (subleaf 0) in @t, or NULL. */
const VpmuCpuidLeaf *vpmu_host_cpuid_find(const VpmuCpuidLeaf *t, size_t n,
                                          uint32_t leaf);

/* A table with no leaf twice: 0, or -EINVAL with @why ("@what: ..."). */
int vpmu_host_cpuid_unique(const VpmuCpuidLeaf *t, size_t n,
                           const char *what, char *why, size_t len);

/* Execute CPUID for the leaves the probe reads; returns how many. */
size_t vpmu_host_cpuid_live(VpmuCpuidLeaf *t, size_t max);

/* The vendor and PMU of @t into @out (cpu fields); 0 or -EINVAL. */
int vpmu_host_cpu_decode(const VpmuCpuidLeaf *t, size_t n,
                         VpmuHostProbe *out);

#endif /* VPMU_HOST_PRIV_H */
