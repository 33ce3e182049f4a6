/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client of vpmu-helper, the privileged service that opens host perf
 * events for an unprivileged QEMU (docs/helper.md).
 *
 * One client per vCPU thread, on that thread, as the perf source it feeds:
 * vpmu_helper_perf_sys() points the source's one open entry point
 * (VpmuPerfSys.open) at the helper.  The helper checks each event against
 * the VM's policy and passes the fd back.  A refused or failed open fails
 * that one event, with the reason kept for vpmu_helper_stats(); the next
 * open after a lost connection connects again, so a restarted helper is
 * picked up.
 *
 * Nothing here is thread-safe.
 */
#ifndef VPMU_HELPER_H
#define VPMU_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>
#include <vpmu/perf.h>
#include <vpmu/profile.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VpmuHelper VpmuHelper;

/* What the helper granted this VM (its answer to the client's hello). */
typedef struct VpmuHelperPolicy {
    char vm[64];                /* the VM the helper took QEMU for */
    char events[192];           /* allowed events, vpmu_filter_parse() text */
    unsigned counters;          /* GP counters the guest may have */
    bool pinned;                /* host events are pinned */
    bool raw;                   /* guest raw events may pass */
    bool cgroup;                /* the VM was known by its cgroup */
    bool operator_metrics;      /* the host operator may count this VM
                                   (operator events: the tenant's consent) */
    VpmuProfileMode operator_profile;   /* what host profiles of it may
                                           take (the tenant's consent) */
} VpmuHelperPolicy;

typedef struct VpmuHelperStats {
    uint64_t opens;             /* events the helper opened */
    uint64_t refusals;          /* opens it refused (status < 0) */
    uint64_t failures;          /* opens with no answer (helper down) */
    uint64_t connects;          /* successful connects, the first included */
    int last_error;             /* -errno of the last refusal or failure */
    char last_message[160];     /* why, "" if none */
} VpmuHelperStats;

/**
 * vpmu_helper_connect() - connect to the helper at @path and say hello.
 * @out: receives the client.
 * @err, @errlen: why it failed, on failure.
 * Return: 0; -errno of the connect, -EPROTO (not a vpmu-helper, or
 * another protocol version), a refusal's status (-EACCES: no policy for
 * this VM), -ENOMEM.
 */
VPMU_API int vpmu_helper_connect(const char *path, VpmuHelper **out,
                                 char *err, size_t errlen);

/** vpmu_helper_free() - close the connection; NULL is a no-op. */
VPMU_API void vpmu_helper_free(VpmuHelper *h);

/** vpmu_helper_policy() - the VM's policy, as the last hello said. */
VPMU_API void vpmu_helper_policy(const VpmuHelper *h, VpmuHelperPolicy *out);

/**
 * vpmu_helper_perf_sys() - system calls for a perf source whose events the
 * helper opens: open asks the helper, close also tells it; the rest are the
 * real system calls.  @h must outlive the source.
 */
VPMU_API void vpmu_helper_perf_sys(VpmuHelper *h, VpmuPerfSys *out);

/** vpmu_helper_stats() - copy the statistics into @out. */
VPMU_API void vpmu_helper_stats(const VpmuHelper *h, VpmuHelperStats *out);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_HELPER_H */
