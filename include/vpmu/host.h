/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
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

#include <vpmu/export.h>
#include <vpmu/perf.h>

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
