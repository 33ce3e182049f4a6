/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host: its CPU's PMU and its KVM's vPMU (vpmu_host_probe(), below),
 * and whether KVM's mediated vPMU is on (vpmu_host_check()).
 *
 * Can vpmu's host perf events count a guest on this host?  Not where
 * KVM's mediated vPMU is on (Linux 7.0 and later, the module parameter
 * enable_mediated_pmu of kvm_amd or kvm_intel; docs/kvm.md, "Mediated
 * hosts"):
 *
 *   - while a VM with the mediated vPMU exists, perf_event_open() refuses
 *     every event of the core PMU that counts guests (exclude_guest = 0,
 *     which every event of vpmu's perf source is) with EOPNOTSUPP
 *     (kernel/events/core.c, mediated_pmu_account_event());
 *   - while such events exist, KVM cannot create a VM's mediated vPMU and
 *     its first KVM_CREATE_VCPU fails with EBUSY
 *     (perf_create_mediated_pmu()).
 *
 * KVM creates a VM's mediated vPMU at its first vCPU, so a QEMU with
 * -accel kvm,vpmu=on on such a host makes its own VM mediated before
 * vpmu's perf source opens anything: every guest counter would count
 * nothing.  vpmu_host_check() tells this case apart from a host without
 * a hardware PMU, so that the perf source, the front end's user (QEMU's
 * query-vpmu) and vpmu-helper can say so.
 */
#ifndef VPMU_HOST_H
#define VPMU_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>
#include <vpmu/perf.h>
#include <vpmu/pmu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct perf_event_attr;

/* Whether KVM's mediated vPMU stands in the way of vpmu's host events. */
typedef enum VpmuHostMode {
    VPMU_HOST_MODE_UNKNOWN = 0,     /* cannot tell: the reason says why */
    VPMU_HOST_MODE_PERF,            /* off or absent: host events that
                                       count guests are allowed (vpmu) */
    VPMU_HOST_MODE_MEDIATED,        /* on: perf refuses them while a VM
                                       with the mediated vPMU exists */
} VpmuHostMode;

#define VPMU_HOST_MODULE_MAX    16
#define VPMU_HOST_REASON_MAX    256

typedef struct VpmuHostCheck {
    VpmuHostMode mode;
    /* The open error given was perf's refusal of an event that counts
       guests (EOPNOTSUPP, exclude_guest = 0, a hardware PMU event). */
    bool refused;
    /* MEDIATED: the module whose enable_mediated_pmu is on ("kvm_amd",
       "kvm_intel", "kvm"); "" when inferred from a refusal alone. */
    char module[VPMU_HOST_MODULE_MAX];
    /* From SYSROOT/proc/sys/kernel/osrelease; 0.0 if unreadable. */
    unsigned kernel_major, kernel_minor;
    /* One line: what was read and what it means (logs, query-vpmu). */
    char reason[VPMU_HOST_REASON_MAX];
} VpmuHostCheck;

/**
 * vpmu_host_check() - is KVM's mediated vPMU on, here?
 * @sysroot: where /sys/module and /proc/sys/kernel/osrelease are read;
 *           NULL or "/" = this host (tests give a recorded tree).
 * @attr, @err: a perf_event_open() that was tried and its result (0 or
 *           -errno), or NULL and 0.  -EOPNOTSUPP for an event that counts
 *           guests is perf's refusal while a mediated VM exists: on Linux
 *           7.0 or later it says "mediated" even where no parameter can be
 *           read (a /sys without the KVM modules' parameters).
 * @out: the verdict and its reason.
 *
 * Reads SYSROOT/sys/module/{kvm,kvm_amd,kvm_intel}/parameters/
 * enable_mediated_pmu: "Y"/"1" on, "N"/"0" off, missing = that module
 * has none.  Any parameter on: MEDIATED.  An unreadable or garbled one
 * (and none on): UNKNOWN, naming the file, unless a refusal on Linux 7.0+
 * decides.  Every parameter off or none at all: PERF (a refusal then has
 * another cause).
 *
 * Return: 0; -EINVAL if @out is NULL.
 */
VPMU_API int vpmu_host_check(const char *sysroot,
                             const struct perf_event_attr *attr, int err,
                             VpmuHostCheck *out);

/** vpmu_host_mode_name() - "unknown", "perf" or "mediated" (QMP). */
VPMU_API const char *vpmu_host_mode_name(VpmuHostMode mode);

/*
 * The host probe: one answer, for every front end, to "what PMU has this
 * host, and what does its KVM offer?"  The perf source (host vendor), the
 * KVM front end (host counters, KVM's vPMU) and QEMU ask it instead of
 * executing CPUID themselves, so they agree about every vendor (Hygon's
 * Dhyana is AMD's PMU under its own name).
 *
 * Usage (QEMU's target/i386/kvm, with its own /dev/kvm fd):
 *
 *     VpmuHostProbeInput in = { .kvm_from = VPMU_HOST_KVM_FD,
 *                               .kvm_fd = kvm_state->fd };
 *     VpmuHostProbe p;
 *
 *     if (vpmu_host_probe(&in, &p) < 0 || !p.pmu_vendor) {
 *         error_setg(errp, "vpmu: %s", p.cpu_reason);
 *     } else if (p.mediated) {
 *         error_setg(errp, "vpmu: %s", p.mediated_check.reason);
 *     }
 *
 * vpmu_host_probe(NULL, &p) probes everything here.  Tests give recorded
 * CPUID tables, KVM answers and a sysroot instead (tests/test-host-probe.c).
 */

/* One CPUID leaf as executed, recorded or reported by KVM. */
typedef struct VpmuCpuidLeaf {
    uint32_t leaf, subleaf;             /* EAX and ECX in */
    uint32_t eax, ebx, ecx, edx;        /* out */
} VpmuCpuidLeaf;

/* What KVM answered, recorded (or what the probe asked it live). */
typedef struct VpmuHostKvmFacts {
    /* KVM_CHECK_EXTENSION(KVM_CAP_PMU_CAPABILITY): the KVM_PMU_CAP_* mask
       (KVM_PMU_CAP_DISABLE when enable_pmu is on), 0 when enable_pmu is
       off or KVM predates the capability (Linux < 6.0), -errno if the
       ioctl failed. */
    int pmu_cap;
    /* KVM_GET_SUPPORTED_CPUID; NULL with 0 = unknown (the ioctl failed). */
    const VpmuCpuidLeaf *cpuid;
    size_t nr_cpuid;
} VpmuHostKvmFacts;

/* Where KVM's answers come from.  The default (0) asks /dev/kvm here. */
typedef enum VpmuHostKvmFrom {
    VPMU_HOST_KVM_OPEN = 0,     /* open /dev/kvm and ask it */
    VPMU_HOST_KVM_FD,           /* ask kvm_fd: /dev/kvm's, or a VM's (then
                                   KVM_GET_SUPPORTED_CPUID goes to a
                                   /dev/kvm opened here) */
    VPMU_HOST_KVM_RECORDED,     /* kvm_facts */
    VPMU_HOST_KVM_SKIP,         /* do not ask: the kvm_* answers stay 0 */
} VpmuHostKvmFrom;

typedef struct VpmuHostProbeInput {
    /* A recorded CPUID table (leaf 0 at least, and every leaf below
       CPUID.0:EAX and 0x80000000:EAX the probe reads); NULL with 0 =
       execute CPUID on this CPU. */
    const VpmuCpuidLeaf *cpuid;
    size_t nr_cpuid;
    VpmuHostKvmFrom kvm_from;
    int kvm_fd;                         /* VPMU_HOST_KVM_FD */
    const VpmuHostKvmFacts *kvm_facts;  /* VPMU_HOST_KVM_RECORDED */
    /* Where sys/module/kvm/parameters/enable_pmu and vpmu_host_check()'s
       files are read; NULL or "/" = this host. */
    const char *sysroot;
    bool skip_mediated;                 /* no vpmu_host_check() */
} VpmuHostProbeInput;

typedef enum VpmuHostVendor {
    VPMU_HOST_VENDOR_UNKNOWN = 0,
    VPMU_HOST_VENDOR_INTEL,             /* GenuineIntel */
    VPMU_HOST_VENDOR_AMD,               /* AuthenticAMD */
    VPMU_HOST_VENDOR_HYGON,             /* HygonGenuine: AMD's PMU */
} VpmuHostVendor;

#define VPMU_HOST_VENDOR_ID_LEN 13      /* CPUID.0 EBX EDX ECX, and NUL */

typedef struct VpmuHostProbe {
    VpmuHostVendor vendor;
    VpmuVendor pmu_vendor;              /* whose PMU: Intel's, AMD's (AMD
                                           and Hygon); 0 = unknown vendor */
    char vendor_id[VPMU_HOST_VENDOR_ID_LEN];    /* '?' for unprintables */
    /*
     * The host's PMU, from CPUID.  Intel: version, GP and fixed counters
     * from CPUID.0AH (version 0 = no architectural PMU, e.g. a VM without
     * a vPMU).  AMD and Hygon: amd_level, version 2 with PerfMonV2 else 1
     * (as Linux numbers them), 48-bit counters, no fixed ones.
     */
    unsigned version;
    VpmuAmdLevel amd_level;             /* 0 on Intel */
    unsigned nr_gp, gp_width;
    unsigned nr_fixed, fixed_width;     /* nr_fixed: CPUID.0AH:EDX[4:0] */
    uint32_t fixed_mask;                /* every fixed counter (v5: ECX) */
    char cpu_reason[VPMU_HOST_REASON_MAX];      /* what CPUID said */
    /* KVM: whether it answered, and what its vPMU offers guests. */
    bool kvm;
    bool kvm_pmu;
    bool kvm_global_msrs;               /* GLOBAL_CTRL/STATUS: Intel v2+,
                                           AMD PerfMonV2 */
    int kvm_pmu_cap;                    /* VpmuHostKvmFacts.pmu_cap */
    int kvm_enable_pmu;                 /* kvm.enable_pmu: 1 Y, 0 N, -1
                                           unreadable or absent */
    char kvm_reason[VPMU_HOST_REASON_MAX];
    /* KVM's mediated vPMU (vpmu_host_check(sysroot, NULL, 0)). */
    bool mediated;                      /* mediated_check.mode MEDIATED */
    VpmuHostCheck mediated_check;
} VpmuHostProbe;

/**
 * vpmu_host_probe() - the host's CPU vendor and PMU, its KVM's vPMU, and
 * whether KVM's mediated vPMU is on.
 * @in: what to read instead of this host (recorded tables, a KVM fd, a
 *      sysroot); NULL = everything from this host.
 * @out: filled; on error, cpu_reason or kvm_reason says what was wrong.
 *
 * An unknown vendor, a CPU without an architectural PMU, a host without
 * /dev/kvm are answers, not errors: the reasons say so.
 *
 * Return: 0; -EINVAL if @out is NULL, @in is inconsistent (a table
 * pointer without entries or the reverse, VPMU_HOST_KVM_FD without an fd,
 * VPMU_HOST_KVM_RECORDED without facts), or a recorded table is bad: no
 * leaf 0, a leaf twice, a leaf the maximum leaf promises missing
 * (truncated), PMU fields no CPU can have (garbage).
 */
VPMU_API int vpmu_host_probe(const VpmuHostProbeInput *in,
                             VpmuHostProbe *out);

/** vpmu_host_vendor_name() - "intel", "amd", "hygon" or "unknown". */
VPMU_API const char *vpmu_host_vendor_name(VpmuHostVendor vendor);

/**
 * vpmu_perf_source_host() - what the perf source found when it was
 * created (vpmu_perf_source_new() checks the host with its cycles probe,
 * VpmuPerfSourceOpts.sysroot) or, later, when perf first refused one of
 * its events with EOPNOTSUPP.  For QEMU's query-vpmu.
 */
VPMU_API void vpmu_perf_source_host(const VpmuPerfSource *src,
                                    VpmuHostCheck *out);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_HOST_H */
