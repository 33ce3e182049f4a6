/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu operator events: what the host's operator counts of a guest, per
 * vCPU, beside the guest's own counters and never at their expense
 * (docs/operators.md).
 *
 * A VpmuOperator is a set of events on one vCPU's counting source, opened
 * as the guest's counters are but with no overflow, counting the guest in
 * both of its modes (never QEMU's host work: the source counts the guest
 * only).  The guest comes first: on a source with few host counters
 * (opts.host_counters) the operator's events take what the guest's
 * counters leave, in turn when that is less than all of them, and each
 * reports its time enabled and running as perf does, so that a reader
 * can scale (count * enabled / running).  Time is the caller's clock.
 */
#ifndef VPMU_OPERATOR_H
#define VPMU_OPERATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>
#include <vpmu/source.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most events one operator set has. */
#define VPMU_OPERATOR_MAX_EVENTS 8

/*
 * The operator's counter ids (VpmuSourceAttr.counter_id), one per event:
 * bit 31, above every guest counter's (VPMU_COUNTER_GP(i) is i,
 * VPMU_COUNTER_FIXED_ID(i) bit 30 | i), which a source may tell them by.
 */
#define VPMU_OPERATOR_COUNTER_ID(i) (0x80000000u + (i))

/*
 * A host profile's sampling event (include/vpmu/profile.h) on a counting
 * source: bits 31 and 30.  Like the operator's events it is no guest
 * counter (toggled for real, never parked or pinned), but it samples: its
 * overflow callback is called as a guest counter's is.
 */
#define VPMU_PROFILE_COUNTER_ID 0xC0000000u

typedef struct VpmuOperatorEvent {
    VpmuArchEvent event;        /* a named event, never VPMU_EVENT_RAW */
    bool user;                  /* count at CPL 3 */
    bool kernel;                /* count at CPL 0-2 */
} VpmuOperatorEvent;

/**
 * vpmu_operator_parse() - an operator's event list.
 * @text: "instructions,cycles:u,branch-misses:k": names as
 *        vpmu_arch_event_name(), each with :u (user only) or :k (kernel
 *        only), or neither (both); no spaces.
 * @events: the named events the source backs (VpmuConfig.events).
 * @out: receives the events, in the order given; @max its room.
 * @n: receives how many.
 *
 * Return: 0; -EINVAL for an empty list or item, an unknown name or
 * modifier, an event the source does not back, the same event twice
 * (with the same modifiers) or more than @max events, with @err naming
 * the item.  @out is not changed then.
 */
VPMU_API int vpmu_operator_parse(const char *text, uint32_t events,
                                 VpmuOperatorEvent *out, unsigned max,
                                 unsigned *n, char *err, size_t errlen);

/**
 * vpmu_operator_name() - "instructions:u" for @ev into @buf.
 * Return: @buf.
 */
VPMU_API const char *vpmu_operator_name(const VpmuOperatorEvent *ev,
                                        char *buf, size_t len);

typedef struct VpmuOperatorOpts {
    const VpmuSourceOps *source_ops;
    void *source;
    /* Counters the source can count at once for this vCPU; 0: no limit. */
    unsigned host_counters;
    /* Of them, what the guest's counters take now (vpmu_operator_update()). */
    unsigned guest_counting;
} VpmuOperatorOpts;

typedef struct VpmuOperator VpmuOperator;

/**
 * vpmu_operator_new() - open @n events of @ev on the source.
 * @now_ns: the caller's clock; times are counted from here.
 *
 * The events start enabled within what the guest's counters leave
 * (vpmu_operator_update() with opts.guest_counting), so that opening them
 * never takes a counter from the guest.  An event the source refuses counts nothing and
 * reports the error (VpmuOperatorCount.error); the others count.
 * Return: 0, -EINVAL (bad options or events, @err says which), -ENOMEM.
 */
VPMU_API int vpmu_operator_new(const VpmuOperatorOpts *opts,
                               const VpmuOperatorEvent *ev, unsigned n,
                               uint64_t now_ns, VpmuOperator **out,
                               char *err, size_t errlen);

/**
 * vpmu_operator_update() - the guest now counts on @guest_counting
 * counters: the operator's events take what is left of
 * opts.host_counters, and when that is fewer than all of them, the next
 * ones in turn at each call.  Call it when the guest's use changes and
 * periodically (each call rotates).  Time up to @now_ns is accounted
 * under the previous choice.  Events are disabled before any is enabled.
 * Return: whether the events take turns (the caller calls again after a
 * turn), false when all of them run or none can.
 */
VPMU_API bool vpmu_operator_update(VpmuOperator *op, unsigned guest_counting,
                                   uint64_t now_ns);

/**
 * vpmu_operator_instruction_retired() - an instruction retired at @cpl
 * that the source did not see (the front end served it: a PMU WRMSR that
 * vpmu_pmu_wrmsr() counted for the guest's counters), a branch if
 * @branch: it counts on the running instructions (branches) events.
 */
VPMU_API void vpmu_operator_instruction_retired(VpmuOperator *op,
                                                unsigned cpl, bool branch);

typedef struct VpmuOperatorCount {
    VpmuOperatorEvent ev;
    uint64_t count;             /* events counted while running (the
                                   source's and the retired ones) */
    uint64_t enabled_ns;        /* time the operator asked to count */
    uint64_t running_ns;        /* time it counted */
    int error;                  /* 0, or the source's last -errno */
} VpmuOperatorCount;

/**
 * vpmu_operator_read() - every event's count and times up to @now_ns.
 * @out: room for @max.
 * Return: the number of events (at most @max filled in).
 */
VPMU_API unsigned vpmu_operator_read(VpmuOperator *op, uint64_t now_ns,
                                     VpmuOperatorCount *out, unsigned max);

/**
 * vpmu_operator_running() - how many of @op's events count now, each on
 * a host counter of its own.
 */
VPMU_API unsigned vpmu_operator_running(const VpmuOperator *op);

/* Close every event.  NULL is a no-op. */
VPMU_API void vpmu_operator_free(VpmuOperator *op);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_OPERATOR_H */
