/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internals of the perf counting source, shared by perf.c (the source,
 * its ops, the reuse cache and service) and perf-event.c (one host event:
 * the perf_event_attr, the system calls, reading and scaling).
 */
#ifndef VPMU_PERF_PRIV_H
#define VPMU_PERF_PRIV_H

#include <linux/perf_event.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <vpmu/host.h>
#include <vpmu/operator.h>
#include <vpmu/perf.h>

#include "vpmu-log.h"

#define VPMU_PERF_IDLE_PASSES_DEFAULT   64
#define VPMU_PERF_TSC_HZ_DEFAULT        1000000000ull
/* ns * hz must fit 64 bits for every ns < 1e9: hz < 2^64 / 1e9. */
#define VPMU_PERF_TSC_HZ_MAX            10000000000ull
#define VPMU_NS_PER_SEC                 1000000000ull
/*
 * Returns to the guest a host event stays enabled after the guest turned
 * its counter off.  A PMI handler keeps counters off for 3-4 exits (the
 * global disable, counter writes, the status clear); a multiplexing
 * rotation or context switch for longer, but then a reschedule is due.
 */
#define VPMU_PERF_OFF_TICKS             16

/*
 * The read(2) layout for read_format = TOTAL_TIME_ENABLED |
 * TOTAL_TIME_RUNNING, no group, no id (perf_event_open(2), "Reading
 * results").
 */
typedef struct VpmuPerfReading {
    uint64_t value;
    uint64_t time_enabled;
    uint64_t time_running;
} VpmuPerfReading;

/*
 * One host event.  While it backs a guest counter it is a handle on
 * src->active; after close() it may be parked on src->parked, disabled,
 * until open() takes it again or it has been idle for idle_passes.
 */
struct VpmuSourceHandle {
    VpmuPerfSource *src;
    VpmuSourceHandle *next;
    int fd;
    struct perf_event_attr pattr;   /* what was opened; sample_period is
                                       the host period programmed now */
    VpmuSourceAttr attr;            /* the guest's request (active only) */
    bool clock;             /* task-clock fallback: host ns, guest ticks */
    bool op;                /* the operator's or a profile's, not the
                               guest's (never parked) */
    bool enabled;           /* the guest counter counts */
    bool hw_on;             /* the host event is enabled */
    bool skewed;            /* the kernel's countdown is ahead of the
                               guest period (counts were discarded) */
    bool stale;             /* the guest period changed while off */
    bool due;               /* service(): the period elapsed */
    int error;              /* sticky: the event failed (e.g. pinned) */
    VpmuPerfReading last;   /* raw values at the last read or reset */
    VpmuPerfReading span;   /* scaled: the sums of the intervals read
                               since the guest counter last went on */
    uint64_t span_credit;   /* scaled: what the span credited so far */
    uint64_t host;          /* host units since open (scaled if asked) */
    uint64_t count;         /* guest units since open */
    uint64_t period_start;  /* count when the current countdown began */
    uint64_t parked_at;     /* src->pass when parked */
    uint64_t off_tick;      /* src->ticks when the guest turned it off */
    uint64_t read_tick;     /* src->ticks at the last read; 0 = none */
};

/* What the perf source logs once per source (vpmu-log.h). */
typedef enum VpmuPerfLogKind {
    VPMU_PERF_LOG_ERROR,        /* a failed system call */
    VPMU_PERF_LOG_PINNED,       /* a pinned event the host could not keep */
    VPMU_PERF_LOG_MEDIATED,     /* perf refuses events: KVM's mediated vPMU */
} VpmuPerfLogKind;

struct VpmuPerfSource {
    VpmuPerfSourceOpts opts;
    VpmuPerfSys sys;
    pid_t tid;
    VpmuVendor host_vendor;
    bool clock_only;        /* no hardware PMU: task-clock fallback */
    uint32_t events;        /* VPMU_EVENT_BIT()s the host can back */
    VpmuSourceHandle *active;
    VpmuSourceHandle *parked;
    uint64_t pass;          /* service passes so far */
    uint64_t ticks;         /* tick() calls so far */
    unsigned soft_off;      /* active handles off for the guest, hw_on */
    VpmuLogger log;         /* opts.log; VpmuPerfLogKind once each */
    VpmuPerfStats stats;
    char *sysroot;          /* opts.sysroot, copied */
    VpmuHostCheck host;     /* KVM's mediated vPMU (perf-host.c) */
    bool host_rechecked;    /* after a refusal, once (perf-host.c) */
};

/*
 * perf-event.c: system calls through src->sys, -errno on failure.  @kind:
 * 0 for a guest counter's event, else VPMU_PERF_OPEN_OPERATOR or
 * VPMU_PERF_OPEN_PROFILE.
 */
int vpmu_perf_sys_open(VpmuPerfSource *src, struct perf_event_attr *pattr,
                       unsigned long kind);
int vpmu_perf_sys_ioctl(VpmuPerfSource *src, int fd, unsigned long req,
                        unsigned long arg);
void vpmu_perf_sys_close(VpmuPerfSource *src, int fd);
int vpmu_perf_fail(VpmuPerfSource *src, bool open, int err);

/* perf-event.c: one host event. */
int vpmu_perf_build_attr(const VpmuPerfSource *src, const VpmuSourceAttr *a,
                         struct perf_event_attr *out);
uint64_t vpmu_perf_host_period(const VpmuPerfSource *src, bool clock,
                               uint64_t guest_period);
uint64_t vpmu_perf_ns_to_ticks(uint64_t ns, uint64_t hz);
uint64_t vpmu_perf_ticks_to_ns(uint64_t ticks, uint64_t hz);
bool vpmu_perf_same_key(const struct perf_event_attr *a,
                        const struct perf_event_attr *b);
int vpmu_perf_event_open(VpmuPerfSource *src, struct perf_event_attr *pattr,
                         unsigned long kind, int *fd);
int vpmu_perf_event_read(VpmuPerfSource *src, VpmuSourceHandle *h);
void vpmu_perf_span_start(VpmuSourceHandle *h);

/* perf-host.c: KVM's mediated vPMU (include/vpmu/host.h). */
void vpmu_perf_host_probe(VpmuPerfSource *src, int cycles_err);
/* The line for a host whose hardware events perf refused at the probe;
 * false if the mediated vPMU is not why (the caller says what is). */
bool vpmu_perf_host_log_refused(VpmuPerfSource *src, bool clock);
void vpmu_perf_host_open_failed(VpmuPerfSource *src,
                                const struct perf_event_attr *pa, int err);

/* perf-service.c */
void vpmu_perf_handle_release(VpmuPerfSource *src, VpmuSourceHandle *h);
int vpmu_perf_set_period(VpmuPerfSource *src, VpmuSourceHandle *h,
                         uint64_t host_period);
int vpmu_perf_host_toggle(VpmuPerfSource *src, VpmuSourceHandle *h, bool on);
int vpmu_perf_enable(void *opaque, VpmuSourceHandle *h);
int vpmu_perf_disable(void *opaque, VpmuSourceHandle *h);
void vpmu_perf_soft_release(VpmuPerfSource *src, VpmuSourceHandle *h);
void vpmu_perf_tick(void *opaque);

#endif /* VPMU_PERF_PRIV_H */
