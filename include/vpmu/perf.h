/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu counting source "perf": host perf_event_open events.
 *
 * One host event per guest counter, opened for the vCPU thread (pid = its
 * TID, cpu = -1), exclude_host under KVM so that it counts only while the
 * guest runs, exclude_user/exclude_kernel from the guest's USR/OS bits,
 * sample_period = the distance to the guest-visible overflow.
 * Architectural events map to the host's generic hardware events; a guest
 * raw event goes through only when host and guest are the same vendor (the
 * core's event filter has already allowed it).
 *
 * Overflow: each sampling event signals the vCPU thread (F_SETOWN_EX with
 * F_OWNER_TID, F_SETSIG opts.notify_signal), which knocks it out of
 * KVM_RUN with -EINTR; the front end then calls
 * vpmu_perf_source_service() on that thread, which reads the events and
 * calls the core's overflow callbacks.  (docs/perf-source.md: why a
 * signal and not an fd polled by the main loop.)
 *
 * Reuse: a guest that rewrites the same event (Linux rotates its events
 * every few ms when it multiplexes) is served with PERF_EVENT_IOC_DISABLE,
 * _PERIOD, _RESET and _ENABLE on a parked host event, never by a new
 * perf_event_open; events left idle are released lazily.
 *
 * No hardware PMU on the host: cycles and ref-cycles are backed by
 * PERF_COUNT_SW_TASK_CLOCK of the vCPU thread, scaled to opts.tsc_hz;
 * every other event is unavailable (vpmu_perf_source_events()), and one
 * log line says so when the source is created.
 *
 * Every host event is opened through VpmuPerfSys.open, so that a
 * privileged helper can open events for an unprivileged process (or a
 * test can inject failures); an fd received from elsewhere works as well.
 *
 * Threading: like the VpmuPmu it backs, a source belongs to its vCPU
 * thread; nothing here is thread-safe.
 */
#ifndef VPMU_PERF_H
#define VPMU_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vpmu/export.h>
#include <vpmu/pmu.h>
#include <vpmu/source.h>

#ifdef __cplusplus
extern "C" {
#endif

struct perf_event_attr;

typedef struct VpmuPerfSource VpmuPerfSource;

/*
 * The system calls the source makes.  Any member may be NULL: the real
 * system call is used.  Each returns what the system call returns, with
 * -errno in place of -1/errno.
 */
/*
 * vpmu's own bit in VpmuPerfSys.open's flags, never perf's: the event is
 * the host operator's (include/vpmu/operator.h), not a guest counter's.
 * A VpmuPerfSys that asks someone else to open (vpmu-helper's client)
 * says so there and passes the rest to perf_event_open(2).
 */
#define VPMU_PERF_OPEN_OPERATOR (1ul << 31)
/* The same for a host profile's sampling event (VPMU_PROFILE_COUNTER_ID). */
#define VPMU_PERF_OPEN_PROFILE  (1ul << 30)

typedef struct VpmuPerfSys {
    /* perf_event_open(2): an fd or -errno.  The only way events are made. */
    int (*open)(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu,
                int group_fd, unsigned long flags);
    int (*ioctl)(void *ctx, int fd, unsigned long request, unsigned long arg);
    ssize_t (*read)(void *ctx, int fd, void *buf, size_t len);
    /* fcntl(2) with an int or pointer argument, as F_SETOWN_EX needs. */
    int (*fcntl)(void *ctx, int fd, int cmd, unsigned long arg);
    int (*close)(void *ctx, int fd);
    void *ctx;
} VpmuPerfSys;

/* What the guest reads when the host could not keep its event on the PMU. */
typedef enum VpmuPerfMultiplex {
    VPMU_PERF_MULTIPLEX_RAW = 0,    /* the raw count (KVM's behaviour) */
    VPMU_PERF_MULTIPLEX_SCALED,     /* count * time_enabled / time_running
                                       since the guest counter went on
                                       (perf's estimate), never back */
} VpmuPerfMultiplex;

typedef struct VpmuPerfSourceOpts {
    pid_t tid;                  /* the vCPU thread; 0 = the calling thread */
    bool exclude_host;          /* KVM: count only while the guest runs */
    bool pinned;                /* attr.pinned: guaranteed or an error */
    VpmuPerfMultiplex multiplex;
    VpmuVendor guest_vendor;    /* raw events only if the host's is the same */
    uint64_t tsc_hz;            /* guest TSC rate, for the task-clock
                                   fallback; 0 = 1 GHz; at most 10 GHz */
    int notify_signal;          /* overflow signal to tid; 0 = none (poll) */
    unsigned idle_passes;       /* release parked events after this many
                                   service passes unused; 0 = default (64) */
    const VpmuPerfSys *sys;     /* NULL = the real system calls; copied */
    /* Added by the perf source (not in the lead's draft): */
    VpmuVendor host_vendor;     /* 0 = detect with CPUID (GenuineIntel,
                                   AuthenticAMD/HygonGenuine) */
    bool no_reuse;              /* close host events at once, never park
                                   them or update them in place (for
                                   measuring what reuse saves) */
    void (*log)(void *opaque, const char *msg);     /* may be NULL */
    void *opaque;
    /*
     * Where the KVM module parameters are read to tell KVM's mediated
     * vPMU, which refuses the source's events, from a host without a PMU
     * (include/vpmu/host.h); NULL = "/".  Tests give a recorded tree.
     */
    const char *sysroot;
} VpmuPerfSourceOpts;

typedef struct VpmuPerfStats {
    uint64_t opens;             /* successful perf_event_open */
    uint64_t reuses;            /* programmings served by a parked or open
                                   event, without perf_event_open */
    uint64_t releases;          /* host events closed */
    uint64_t open_errors;       /* failed perf_event_open */
    uint64_t ioctl_errors;      /* failed ioctl/read/fcntl */
    int last_error;             /* -errno of the last failure, 0 if none */
    uint64_t multiplexed_reads; /* reads with time_running < time_enabled */
    uint64_t lost_ns;           /* sum of time_enabled - time_running over
                                   those reads: time the guest's events were
                                   enabled on the host but not counting */
    uint64_t pinned_failures;   /* pinned events the host could not keep */
    uint64_t overflows;         /* overflow callbacks made */
    uint64_t soft_enables;      /* guest enables served by a read, the host
                                   event still running from before */
    uint64_t soft_releases;     /* host events disabled after their guest
                                   counter stayed off (tick/service) */
    unsigned active;            /* host events backing a guest counter */
    unsigned parked;            /* idle host events kept for reuse */
    bool hw_pmu;                /* the host has a hardware PMU */
    /* The system calls made (VpmuPerfSys), by kind, errors included. */
    uint64_t sys_opens, sys_ioctls, sys_reads, sys_fcntls, sys_closes;
    uint64_t services;          /* vpmu_perf_source_service() calls: the
                                   VMM's overflow signals taken */
    uint64_t scaled_reads;      /* scaled: reads that credited the guest
                                   counter other than what the host event
                                   counted (an estimate, not a count) */
} VpmuPerfStats;

/**
 * vpmu_perf_source_new() - create a perf source for one vCPU.
 * @opts: copied; NULL members get their defaults.
 * @out: receives the source.
 *
 * Probes the host (a disabled PERF_COUNT_HW_CPU_CYCLES event on the
 * thread) to decide between hardware events and the task-clock fallback,
 * and logs one line if it falls back.
 *
 * Return: 0, -EINVAL (bad opts), -ENOMEM.  A host without perf at all is
 * not an error: every event is then unavailable.
 */
VPMU_API int vpmu_perf_source_new(const VpmuPerfSourceOpts *opts,
                                  VpmuPerfSource **out);

/** vpmu_perf_source_free() - close every host event; NULL is a no-op. */
VPMU_API void vpmu_perf_source_free(VpmuPerfSource *src);

/** vpmu_perf_source_ops() - the ops table to give vpmu_pmu_new(). */
VPMU_API const VpmuSourceOps *vpmu_perf_source_ops(void);

/**
 * vpmu_perf_source_events() - VPMU_EVENT_BIT()s this host can back, for
 * VpmuConfig.events (the guest sees the others as unavailable in CPUID).
 */
VPMU_API uint32_t vpmu_perf_source_events(const VpmuPerfSource *src);

/**
 * vpmu_perf_source_raw_events() - whether guest raw events can be passed
 * through (a hardware PMU of the guest's vendor), for VpmuConfig.raw_events.
 */
VPMU_API bool vpmu_perf_source_raw_events(const VpmuPerfSource *src);

/**
 * vpmu_perf_source_service() - on the vCPU thread, after an overflow
 * signal (or at any exit): read the sampling events, call the overflow
 * callback of each one that reached its period, release idle events.
 *
 * Return: the number of overflow callbacks made.
 */
VPMU_API int vpmu_perf_source_service(VpmuPerfSource *src);

/* The guest counter a host event of the perf source stands for. */
typedef struct VpmuPerfAttrInfo {
    VpmuArchEvent event;        /* VPMU_EVENT_RAW for PERF_TYPE_RAW */
    uint64_t raw_config;        /* PERF_TYPE_RAW: the guest's encoding */
    bool clock;                 /* the task-clock fallback of cycles */
    bool count_user, count_kernel;
    bool exclude_host, pinned;  /* the source's options */
} VpmuPerfAttrInfo;

/**
 * vpmu_perf_attr_parse() - is @attr, byte for byte, one the perf source
 * builds for a guest counter (with any exclude_host, pinned, multiplex
 * policy and period)?  For a privileged helper, which opens only such
 * events for an unprivileged process.
 * @out: what it stands for, on success.
 * Return: 0; -EINVAL if the perf source never makes @attr.
 */
VPMU_API int vpmu_perf_attr_parse(const struct perf_event_attr *attr,
                                  VpmuPerfAttrInfo *out);

/**
 * vpmu_perf_host_vendor() - this host's PMU vendor: vpmu_host_probe()'s
 * pmu_vendor (include/vpmu/host.h; Hygon's is AMD's); 0 if neither.
 */
VPMU_API VpmuVendor vpmu_perf_host_vendor(void);

/** vpmu_perf_source_stats() - copy the statistics into @out. */
VPMU_API void vpmu_perf_source_stats(const VpmuPerfSource *src,
                                     VpmuPerfStats *out);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_PERF_H */
