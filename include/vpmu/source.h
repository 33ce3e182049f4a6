/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu counting-source interface.
 *
 * A counting source is whatever backs a guest counter with real counts:
 * host perf_event_open events on KVM hosts, exact instruction counting in
 * QEMU's TCG, or the deterministic fake source below for tests.  The core
 * never calls perf itself; it drives a source through VpmuSourceOps.
 *
 * Contract, per handle (one handle backs one guest counter):
 *
 *   open(attr)          -> handle, created *disabled*, count 0, and with
 *                          attr->sample_period events to go before overflow
 *   update(attr)        -> same event, new period (and nothing else);
 *                          restarts the countdown from "now".  Return
 *                          -EOPNOTSUPP to make the core close and reopen.
 *   enable / disable    -> start or stop counting; the count is kept
 *   read(&count)        -> events counted since open, monotonic, 64-bit
 *   close               -> release; the handle is not used again
 *
 * When a handle has counted sample_period events since open/update, the
 * source calls attr->overflow(attr->overflow_ctx) on the vCPU thread and
 * restarts its countdown with the same period (overflow may be NULL: an
 * operator's event, include/vpmu/operator.h, which nobody samples).  The callback may re-enter
 * the source through the ops (update, read, ...).  Sources that learn of
 * overflows on another thread must marshal them to the vCPU thread first.
 *
 * All functions return 0 or a negative errno.  A failing source never stops
 * the guest: the core degrades the counter and counts the error.
 */
#ifndef VPMU_SOURCE_H
#define VPMU_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Architectural events, numbered as the bits of Intel CPUID.0AH:EBX
 * (SDM Vol. 3B 20.2.1.2, Table 20-1: bit set = event *not* available).
 * AMD guests use the same names for their equivalents.
 */
typedef enum VpmuArchEvent {
    VPMU_EVENT_CYCLES = 0,          /* UnHalted Core Cycles 0x3C/0x00 */
    VPMU_EVENT_INSTRUCTIONS = 1,    /* Instructions Retired 0xC0/0x00 */
    VPMU_EVENT_REF_CYCLES = 2,      /* UnHalted Reference Cycles 0x3C/0x01 */
    VPMU_EVENT_LLC_REFERENCES = 3,  /* LLC Reference 0x2E/0x4F */
    VPMU_EVENT_LLC_MISSES = 4,      /* LLC Misses 0x2E/0x41 */
    VPMU_EVENT_BRANCHES = 5,        /* Branch Instructions Retired 0xC4/0x00 */
    VPMU_EVENT_BRANCH_MISSES = 6,   /* Branch Misses Retired 0xC5/0x00 */
    VPMU_EVENT_TOPDOWN_SLOTS = 7,   /* Topdown Slots 0xA4/0x01 */
    VPMU_EVENT__COUNT,              /* the architectural events */
    /*
     * Model-specific events of the event catalogue (docs/events.md), each
     * with one encoding per vendor (Skylake, Zen).  The core decodes them
     * by name only for a source whose VpmuConfig.events has their bit;
     * for any other source they are VPMU_EVENT_RAW like every other
     * model-specific event.
     */
    VPMU_EVENT_BR_COND = VPMU_EVENT__COUNT, /* conditional branches */
    VPMU_EVENT_BR_NTAKEN,           /* conditional branches not taken */
    VPMU_EVENT_BR_TAKEN,            /* taken branches */
    VPMU_EVENT_BR_CALL,             /* near calls */
    VPMU_EVENT_BR_RET,              /* near returns */
    VPMU_EVENT_BR_FAR,              /* far branches */
    VPMU_EVENT_LOADS,               /* instructions that load */
    VPMU_EVENT_STORES,              /* instructions that store */
    VPMU_EVENT_HW_INTERRUPTS,       /* hardware interrupts received */
    VPMU_EVENT__NAMED,
    /* Not named: attr->raw_config is all the source gets. */
    VPMU_EVENT_RAW = 0xff,
} VpmuArchEvent;

#define VPMU_EVENT_BIT(e) (1u << (e))
/* Every architectural event (the CPUID.0AH:EBX bits). */
#define VPMU_EVENTS_ALL ((1u << VPMU_EVENT__COUNT) - 1)
/* Every model-specific event of the catalogue. */
#define VPMU_EVENTS_MODEL (((1u << VPMU_EVENT__NAMED) - 1) & ~VPMU_EVENTS_ALL)

typedef void (*VpmuOverflowFn)(void *ctx);

/* What a guest counter asks its source to count. */
/*
 * The fields of raw_config beyond event select and unit mask: EDGE (bit
 * 18), INV (bit 23) and CMASK (bits 31:24), the event select layout of
 * IA32_PERFEVTSELx (SDM Vol. 3B Figure 20-6) and AMD PERF_CTLx (APM Vol. 2
 * Figure 13-7).  A source that maps architectural events onto generic host
 * events cannot carry them.
 */
#define VPMU_RAW_MODIFIERS  0xFF840000ull

typedef struct VpmuSourceAttr {
    VpmuArchEvent event;
    /*
     * The guest's event encoding, vendor layout, with only the fields that
     * change what is counted: event select, unit mask, EDGE, INV, CMASK
     * (and AMD's EventSelect[11:8]).  Fixed counters get 0.
     */
    uint64_t raw_config;
    bool count_user;        /* count at CPL 3 (USR) */
    bool count_kernel;      /* count at CPL 0-2 (OS) */
    /*
     * Count in SVM host mode / guest mode (AMD PERF_CTL HostOnly and
     * GuestOnly with VpmuConfig.amd_host_guest); both true otherwise.  A
     * source that cannot tell the modes apart refuses an attr with either
     * false (-EOPNOTSUPP).
     */
    bool count_host;
    bool count_guest;
    /* Events to the guest-visible overflow: (-value) & mask, 0 -> mask + 1. */
    uint64_t sample_period;
    /* The guest counter: "fixed" flag + index, as vpmu_pmu_counter_info(). */
    uint32_t counter_id;
    VpmuOverflowFn overflow;
    void *overflow_ctx;
} VpmuSourceAttr;

typedef struct VpmuSourceHandle VpmuSourceHandle;

/* open, enable, disable, read and close are required. */
typedef struct VpmuSourceOps {
    const char *name;
    int (*open)(void *src, const VpmuSourceAttr *attr, VpmuSourceHandle **out);
    /* May be NULL: every period change then closes and reopens. */
    int (*update)(void *src, VpmuSourceHandle *h, const VpmuSourceAttr *attr);
    int (*enable)(void *src, VpmuSourceHandle *h);
    int (*disable)(void *src, VpmuSourceHandle *h);
    int (*read)(void *src, VpmuSourceHandle *h, uint64_t *count);
    void (*close)(void *src, VpmuSourceHandle *h);
    /*
     * May be NULL.  The front end calls it before every return to the
     * guest (vpmu_kvm_service()): a source that keeps disabled events
     * running to make the next enable cheap lets go of the ones the guest
     * has left off for a while.
     */
    void (*tick)(void *src);
} VpmuSourceOps;

/* --- The deterministic fake source (tests, benchmarks, demos) --------- */

typedef struct VpmuFakeSource VpmuFakeSource;

/* Operations whose failure can be injected, for vpmu_fake_source_fail(). */
typedef enum VpmuFakeOp {
    VPMU_FAKE_OPEN,
    VPMU_FAKE_UPDATE,
    VPMU_FAKE_ENABLE,
    VPMU_FAKE_DISABLE,
    VPMU_FAKE_READ,
    VPMU_FAKE_OP__COUNT,
} VpmuFakeOp;

/* Per-source call counters, so tests can assert what the core did. */
typedef struct VpmuFakeStats {
    uint64_t calls[VPMU_FAKE_OP__COUNT];
    uint64_t closes;
    uint64_t ticks;
    unsigned open_handles;
} VpmuFakeStats;

/**
 * vpmu_fake_source_new() - create a fake source.
 * @out: receives the source.
 *
 * The fake source counts only what the test feeds it with
 * vpmu_fake_source_run().  It backs every architectural event and raw
 * events; it refuses attrs with EDGE/INV/CMASK set (-EOPNOTSUPP), as a
 * source that cannot count them must.
 *
 * Return: 0, or -ENOMEM.
 */
VPMU_API int vpmu_fake_source_new(VpmuFakeSource **out);

/** vpmu_fake_source_free() - free; NULL is a no-op. Open handles are freed. */
VPMU_API void vpmu_fake_source_free(VpmuFakeSource *fake);

/** vpmu_fake_source_ops() - the ops table to give vpmu_pmu_new(). */
VPMU_API const VpmuSourceOps *vpmu_fake_source_ops(void);

/**
 * vpmu_fake_source_run() - retire @n occurrences of @event at @cpl.
 * @fake: the source.
 * @event: architectural event, or VPMU_EVENT_RAW to feed raw handles.
 * @raw_config: for VPMU_EVENT_RAW, the raw_config the handles must match.
 * @cpl: privilege level the events happen at (0-3).
 * @n: how many.
 *
 * Every enabled handle of that event whose USR/OS mode matches @cpl
 * counts them, one at a time in order, calling overflow callbacks at the
 * exact event that completes each period.
 */
VPMU_API void vpmu_fake_source_run(VpmuFakeSource *fake, VpmuArchEvent event,
                                   uint64_t raw_config, unsigned cpl,
                                   uint64_t n);

/**
 * vpmu_fake_source_fail() - make the next call of @op fail with @err.
 * @err: a negative errno; 0 cancels.
 */
VPMU_API void vpmu_fake_source_fail(VpmuFakeSource *fake, VpmuFakeOp op,
                                    int err);

/**
 * vpmu_fake_source_set_guest_mode() - what vpmu_fake_source_run() retires
 * from now on is in SVM guest mode (@guest) or host mode (the default):
 * only handles whose count_guest / count_host is set count it.
 */
VPMU_API void vpmu_fake_source_set_guest_mode(VpmuFakeSource *fake,
                                              bool guest);

/** vpmu_fake_source_stats() - copy the call counters into @out. */
VPMU_API void vpmu_fake_source_stats(const VpmuFakeSource *fake,
                                     VpmuFakeStats *out);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_SOURCE_H */
