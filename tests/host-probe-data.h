/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recorded CPUID tables and KVM answers for vpmu_host_probe()
 * (tests/test-host-probe.c): the leaves the probe reads, of real CPUs.
 *
 * Recorded by libvirt's cpu-gather (tests/cputestdata): the Core 2 Quad
 * Q9500 and the Hygon C86 7185.  This machine's (a cloud VM on a Xeon,
 * CPUID.0AH hidden) executed here.  The others are the CPUs' documented
 * values, written field by field in the comments: the Xeon Platinum 8480+
 * (Sapphire Rapids), EPYC 7502 (Zen 2) and EPYC 9654 (Zen 4).
 *
 * KVM's supported CPUID is what KVM_GET_SUPPORTED_CPUID gives on such a
 * host (arch/x86/kvm/cpuid.c): leaf 0AH capped at version 2 and 3 fixed
 * counters (kvm_init_pmu_capability()), PerfCtrExtCore and PerfMonV2 kept
 * when KVM virtualises them, zeroes when enable_pmu is off.
 */
#ifndef VPMU_TESTS_HOST_PROBE_DATA_H
#define VPMU_TESTS_HOST_PROBE_DATA_H

#include <vpmu/host.h>

#define N_LEAVES(t) (sizeof(t) / sizeof((t)[0]))

/* CPUID.0 EBX, EDX, ECX. */
#define INTEL_ID    .ebx = 0x756e6547, .edx = 0x49656e69, .ecx = 0x6c65746e
#define AMD_ID      .ebx = 0x68747541, .edx = 0x69746e65, .ecx = 0x444d4163
#define HYGON_ID    .ebx = 0x6f677948, .edx = 0x6e65476e, .ecx = 0x656e6975

/*
 * Xeon Platinum 8480+: max leaf 20H.  0AH EAX 0x08300805: version 5,
 * 8 GP counters, 48 bits (0x30), EBX vector of 8; ECX 0xf: fixed
 * counters 0-3; EDX 0x8604: 4 fixed counters [4:0], 48 bits [12:5],
 * AnyThread deprecated [15].
 */
static const VpmuCpuidLeaf cpu_spr[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300805, .ecx = 0xf, .edx = 0x8604 },
    { .leaf = 0x80000000, .eax = 0x80000008 },
    { .leaf = 0x80000001, .ecx = 0x121, .edx = 0x2c100800 },
};
/* KVM on it: version 2, 8 GP of 48 bits; 3 fixed of 48 bits (0x603). */
static const VpmuCpuidLeaf kvm_spr[] = {
    { .leaf = 0x0, .eax = 0x1f, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300802, .edx = 0x603 },
};
/* KVM with enable_pmu=N on it: leaf 0AH all zero. */
static const VpmuCpuidLeaf kvm_intel_off[] = {
    { .leaf = 0x0, .eax = 0x1f, INTEL_ID },
    { .leaf = 0xa },
};

/* Core 2 Quad Q9500 (libvirt x86-cpuid-Core2-Q9500.xml): version 2. */
static const VpmuCpuidLeaf cpu_q9500[] = {
    { .leaf = 0x0, .eax = 0x0000000d, INTEL_ID },
    { .leaf = 0xa, .eax = 0x07280202, .edx = 0x00000503 },
    { .leaf = 0x80000000, .eax = 0x80000008 },
    { .leaf = 0x80000001, .ecx = 0x00000001, .edx = 0x20100800 },
};

/* This machine, a cloud VM: GenuineIntel, max leaf 20H, 0AH all zero. */
static const VpmuCpuidLeaf cpu_cloud_vm[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa },
    { .leaf = 0x80000000, .eax = 0x80000008 },
    { .leaf = 0x80000001, .ecx = 0x121, .edx = 0x2c100800 },
};

/*
 * EPYC 7502 (Zen 2): max extended leaf 8000_0020h, so no 8000_0022h;
 * Fn8000_0001_ECX 0x75c237ff has PerfCtrExtCore [23].  Leaf 0AH reads 0.
 */
static const VpmuCpuidLeaf cpu_zen2[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0xa },
    { .leaf = 0x80000000, .eax = 0x80000020, AMD_ID },
    { .leaf = 0x80000001, .eax = 0x00830f10, .ebx = 0x40000000,
      .ecx = 0x75c237ff, .edx = 0x2fd3fbff },
};
/* KVM on it: PerfCtrExtCore kept, no 8000_0022h. */
static const VpmuCpuidLeaf kvm_zen2[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0x80000000, .eax = 0x80000021, AMD_ID },
    { .leaf = 0x80000001, .ecx = 0x00c003f3 },
};

/*
 * EPYC 9654 (Zen 4): max extended leaf 8000_0028h; Fn8000_0022 EAX 0x3:
 * PerfMonV2 [0], LbrStack [1]; EBX 0x4106: NumPerfCtrCore 6 [3:0],
 * LbrV2StackSz 16 [9:4], NumPerfCtrNB 16 [15:10].
 */
static const VpmuCpuidLeaf cpu_zen4[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0xa },
    { .leaf = 0x80000000, .eax = 0x80000028, AMD_ID },
    { .leaf = 0x80000001, .eax = 0x00a10f11, .ebx = 0x40000000,
      .ecx = 0x75c237ff, .edx = 0x2fd3fbff },
    { .leaf = 0x80000022, .eax = 0x00000003, .ebx = 0x00004106 },
};
/* KVM (6.4+) on it: PerfMonV2 with 6 core counters (EBX 0x6). */
static const VpmuCpuidLeaf kvm_zen4[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0x80000001, .ecx = 0x00c003f3 },
    { .leaf = 0x80000022, .eax = 0x1, .ebx = 0x6 },
};

/*
 * Hygon C86 7185 (libvirt x86_64-cpuid-Hygon-C86-7185-32-core.xml), a
 * Dhyana: max extended leaf 8000_001Fh; Fn8000_0001_ECX 0x35c233ff has
 * PerfCtrExtCore [23].
 */
static const VpmuCpuidLeaf cpu_hygon[] = {
    { .leaf = 0x0, .eax = 0x0000000d, HYGON_ID },
    { .leaf = 0xa },
    { .leaf = 0x80000000, .eax = 0x8000001f, HYGON_ID },
    { .leaf = 0x80000001, .eax = 0x00900f01, .ebx = 0x40000000,
      .ecx = 0x35c233ff, .edx = 0x2fd3fbff },
};
/* KVM on it, older than KVM_CAP_PMU_CAPABILITY: PerfCtrExtCore [23]. */
static const VpmuCpuidLeaf kvm_hygon[] = {
    { .leaf = 0x0, .eax = 0xd, HYGON_ID },
    { .leaf = 0x80000001, .ecx = 0x00c003f3 },
};
/* ... and one that does not virtualise the counters: [23] clear. */
static const VpmuCpuidLeaf kvm_hygon_off[] = {
    { .leaf = 0x0, .eax = 0xd, HYGON_ID },
    { .leaf = 0x80000001, .ecx = 0x004003f3 },
};

/* KVM_CHECK_EXTENSION(KVM_CAP_PMU_CAPABILITY) with enable_pmu on. */
#define CAP_ON      1       /* KVM_PMU_CAP_DISABLE */

#endif /* VPMU_TESTS_HOST_PROBE_DATA_H */
