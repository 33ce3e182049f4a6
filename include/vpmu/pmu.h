/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvpmu: the guest-visible Intel and AMD PMU of one vCPU.
 *
 * A front end (QEMU TCG helpers, KVM userspace MSR exits, a test harness)
 * hands every guest PMU MSR access, RDPMC and CPUID query to a VpmuPmu,
 * which answers as bare-metal hardware would, drives a counting source for
 * each guest counter and asks the front end for a PMI on overflow.
 *
 * Threading: a VpmuPmu belongs to its vCPU thread; no call is thread-safe.
 * Source overflow callbacks and opts.pmi run on that thread, from inside
 * vpmu calls or vpmu_fake_source_run().
 *
 * Usage (front end):
 *   vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);  cfg.nr_gp = 4; ...
 *   vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err));
 *   on CPUID:  vpmu_pmu_cpuid(pmu, leaf, sub, regs)
 *   on RDMSR:  r = vpmu_pmu_rdmsr(pmu, ecx, &val)
 *   on WRMSR:  r = vpmu_pmu_wrmsr(pmu, ecx, val)
 *              r == -ENOENT: not a PMU MSR, handle it yourself
 *              r == -EINVAL: inject #GP
 *   on RDPMC:  vpmu_rdpmc_permitted(cpl, cr4_pce) ? vpmu_pmu_rdpmc(...) : #GP
 *   on any other instruction you emulate: vpmu_pmu_instruction_retired()
 *   in opts.pmi: deliver through LVTPC
 */
#ifndef VPMU_PMU_H
#define VPMU_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>
#include <vpmu/filter.h>
#include <vpmu/source.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VpmuPmu VpmuPmu;

typedef enum VpmuVendor {
    VPMU_VENDOR_INTEL = 1,
    VPMU_VENDOR_AMD = 2,
} VpmuVendor;

typedef enum VpmuAmdLevel {
    VPMU_AMD_K7 = 1,            /* 4 legacy counters, 0xC0010000-7 */
    VPMU_AMD_PERFCTR_CORE = 2,  /* CPUID 0x80000001:ECX[23], 6 counters */
    VPMU_AMD_PERFMON_V2 = 3,    /* CPUID 0x80000022:EAX[0], global MSRs */
} VpmuAmdLevel;

#define VPMU_INTEL_MAX_GP       8
#define VPMU_INTEL_MAX_FIXED    3   /* 4 with version 5 (Topdown Slots) */
#define VPMU_INTEL_V5_MAX_FIXED 4
#define VPMU_AMD_MAX_GP         6
#define VPMU_MIN_WIDTH          32
#define VPMU_MAX_WIDTH          48

/* IA32_PERF_CAPABILITIES (MSR 345H) bits vpmu implements. */
#define VPMU_PERF_CAP_FW_WRITE  (1ull << 13)    /* A_PMCx full-width writes */

/* Counter ids: GP counters 0..n-1, fixed counters with bit 30, as RDPMC. */
#define VPMU_COUNTER_FIXED      (1u << 30)
#define VPMU_COUNTER_GP(i)      ((uint32_t)(i))
#define VPMU_COUNTER_FIXED_ID(i) (VPMU_COUNTER_FIXED | (uint32_t)(i))

typedef struct VpmuConfig {
    VpmuVendor vendor;
    unsigned intel_version;     /* Intel: 1-5 */
    VpmuAmdLevel amd_level;     /* AMD */
    /* Intel 0-8; AMD K7 and PERFCTR_CORE: exactly 4 and 6; PerfMonV2 1-6. */
    unsigned nr_gp;
    /* Intel v2-v4: 0-3, v5: 0-4; Intel v1 and AMD: 0. */
    unsigned nr_fixed;
    unsigned gp_width;          /* Intel 32-48; AMD 48 */
    unsigned fixed_width;       /* Intel 32-48 with fixed counters, else 0 */
    bool pdcm;                  /* Intel CPUID.1:ECX.PDCM[15]: MSR 345H exists */
    uint64_t perf_capabilities; /* needs pdcm; VPMU_PERF_CAP_FW_WRITE only */
    /*
     * VPMU_EVENT_BIT()s the source can back: architectural events
     * (VPMU_EVENTS_ALL, also what CPUID.0AH:EBX offers) and catalogue
     * events (VPMU_EVENTS_MODEL), which the source then gets by name.
     */
    uint32_t events;
    bool raw_events;            /* give other events to the source, raw */
    /*
     * The source counts cycles and reference cycles as retired
     * instructions, one cycle each (QEMU TCG's pmu-cycles=insns): the
     * instructions vpmu counts itself (the enabling WRMSR,
     * vpmu_pmu_instruction_retired()) count on them too, so that cycles
     * and instructions stay equal.
     */
    bool insn_cycles;
    /*
     * AMD: the vCPU offers SVM, so PERF_CTL HostOnly [41] and GuestOnly
     * [40] are kept and honoured (APM Vol. 2 13.2.1): a counter counts in
     * host mode, guest mode or both (vpmu_pmu_set_guest_mode()).  false:
     * they are dropped like reserved bits, as KVM does for its guests.
     */
    bool amd_host_guest;
} VpmuConfig;

/*
 * PMI request and log sink of the front end; opaque is passed back.
 * Both are called from inside vpmu calls, in the middle of a counter
 * update: they must not call back into the PMU.  pmi() records the request;
 * the front end delivers it (LVTPC) after the vpmu call returns.
 */
typedef struct VpmuPmuOpts {
    const VpmuSourceOps *source_ops;
    void *source;
    void (*pmi)(void *opaque);                  /* may be NULL */
    void (*log)(void *opaque, const char *msg); /* may be NULL */
    void *opaque;
} VpmuPmuOpts;

typedef enum VpmuCounterState {
    VPMU_COUNTER_OFF = 0,       /* not enabled by the guest */
    VPMU_COUNTER_COUNTING,      /* enabled and backed by the source */
    VPMU_COUNTER_FILTERED,      /* enabled, denied by the event filter */
    VPMU_COUNTER_UNSUPPORTED,   /* enabled, the source cannot back it */
    VPMU_COUNTER_SOURCE_ERROR,  /* enabled, the source failed */
} VpmuCounterState;

typedef struct VpmuCounterInfo {
    uint32_t id;
    uint64_t value;             /* what the guest reads now */
    uint64_t control;           /* GP: EVTSEL; fixed: its FIXED_CTR_CTRL nibble */
    VpmuArchEvent event;        /* decoded event, VPMU_EVENT_RAW if none */
    VpmuCounterState state;
    uint64_t overflows;
    uint64_t pmis;
    uint64_t filtered;          /* requests denied by the filter */
} VpmuCounterInfo;

typedef struct VpmuStats {
    uint64_t rdmsr, wrmsr, rdpmc;   /* PMU MSR accesses (not -ENOENT) */
    uint64_t gp_faults;         /* accesses answered with #GP */
    uint64_t overflows;
    uint64_t pmis;
    uint64_t filtered;          /* counter programmings denied by the filter */
    uint64_t unsupported;       /* programmings the source cannot back */
    uint64_t source_opens;      /* handles opened */
    uint64_t source_reuses;     /* reprogrammings served without reopening */
    uint64_t source_errors;     /* failed source calls */
    uint64_t emulated;          /* instruction/branch counts added by vpmu */
} VpmuStats;

/* A run of MSRs the PMU answers, for MSR filters. */
typedef struct VpmuMsrSpan {
    uint32_t base;
    uint32_t count;
} VpmuMsrSpan;

/* What a PMU MSR is (vpmu_pmu_msr_info()), for front ends that mirror. */
typedef enum VpmuMsrClass {
    VPMU_MSR_CLASS_COUNTER = 1, /* a counter's value */
    VPMU_MSR_CLASS_CONTROL,     /* a selector, FIXED_CTR_CTRL, global ctrl */
    VPMU_MSR_CLASS_STATUS,      /* the global overflow status */
    VPMU_MSR_CLASS_OTHER,       /* status reset/set, in use, capabilities */
} VpmuMsrClass;

/*
 * What a PMU MSR does, finer than its class: a front end counts its exits
 * by role and leaves whole roles to another PMU (KVM's) in its MSR filter.
 */
typedef enum VpmuMsrRole {
    VPMU_MSR_ROLE_COUNTER,      /* PMC, A_PMC, FIXED_CTR, PERF_CTR */
    VPMU_MSR_ROLE_SELECTOR,     /* PERFEVTSEL, PERF_CTL, FIXED_CTR_CTRL */
    VPMU_MSR_ROLE_GLOBAL_CTRL,  /* GLOBAL_CTRL, PerfCntrGlobalCtl */
    VPMU_MSR_ROLE_STATUS,       /* GLOBAL_STATUS, PerfCntrGlobalStatus */
    VPMU_MSR_ROLE_STATUS_CLEAR, /* OVF_CTRL / STATUS_RESET, STATUS_CLR */
    VPMU_MSR_ROLE_STATUS_SET,   /* GLOBAL_STATUS_SET, STATUS_SET */
    VPMU_MSR_ROLE_OTHER,        /* in use, capabilities, DEBUGCTL */
    VPMU_MSR_ROLE__COUNT,
} VpmuMsrRole;

#define VPMU_MSR_ROLES_ALL ((1u << VPMU_MSR_ROLE__COUNT) - 1)

typedef struct VpmuMsrInfo {
    VpmuMsrClass cls;
    VpmuMsrRole role;
    /* The counters it concerns: GP i is bit i, fixed j bit nr_gp + j. */
    uint64_t counters;
    /*
     * CONTROL: the bits of its value that enable counters, its value now.
     * STATUS: its value as last folded (no source access).
     */
    uint64_t enables;
    uint64_t value;
} VpmuMsrInfo;

/*
 * A counter's MSRs (vpmu_pmu_counter_msrs()), for front ends that mirror
 * it into another PMU of the same layout (KVM's).
 */
typedef struct VpmuCounterMsrs {
    uint32_t counter;           /* its value: PMC / PERF_CTR / FIXED_CTR */
    uint32_t control;           /* EVTSEL / PERF_CTL, or FIXED_CTR_CTRL */
    unsigned control_shift;     /* its field in control: 0, fixed i 4 * i */
    uint64_t control_os;        /* in the field: counts at CPL 0 */
    uint64_t control_pmi;       /* in the field: interrupt on overflow */
    uint32_t global;            /* GLOBAL_CTRL / PerfCntrGlobalCtl, 0: none */
    uint64_t global_enable;     /* its enable bit in global */
    uint32_t counter_full;      /* takes a full-width value: Intel A_PMC
                                   with FW_WRITE, else = counter */
} VpmuCounterMsrs;

/**
 * vpmu_config_init() - fill @cfg with the defaults for @vendor.
 *
 * Intel: version 2, 8 GP + 3 fixed counters, 48 bits, PDCM with
 * FW_WRITE.  AMD: PerfMonV2 with 6 counters.  All events, no raw events.
 */
VPMU_API void vpmu_config_init(VpmuConfig *cfg, VpmuVendor vendor);

/**
 * vpmu_config_check() - validate @cfg.
 * @err, @errlen: on failure, a message that names the field.
 *
 * Return: 0, or -EINVAL.
 */
VPMU_API int vpmu_config_check(const VpmuConfig *cfg, char *err,
                               size_t errlen);

/**
 * vpmu_pmu_new() - create the PMU of one vCPU, in its reset state.
 * @cfg: checked with vpmu_config_check(); copied.
 * @opts: the counting source and front-end callbacks; copied.
 * @out: receives the PMU.
 * @err, @errlen: message for -EINVAL.
 *
 * Return: 0, -EINVAL (bad config or missing source ops), -ENOMEM.
 */
VPMU_API int vpmu_pmu_new(const VpmuConfig *cfg, const VpmuPmuOpts *opts,
                          VpmuPmu **out, char *err, size_t errlen);

/** vpmu_pmu_free() - close every source handle and free; NULL is a no-op. */
VPMU_API void vpmu_pmu_free(VpmuPmu *pmu);

/** vpmu_pmu_config() - the configuration the PMU was made with. */
VPMU_API const VpmuConfig *vpmu_pmu_config(const VpmuPmu *pmu);

/**
 * vpmu_pmu_reset() - RESET/INIT: every MSR to its reset value.
 *
 * Counters, selectors, status read 0; Intel GLOBAL_CTRL has the GP enable
 * bits set (AMD GLOBAL_CTL likewise), fixed bits clear.  Source handles
 * are disabled; statistics are kept.
 */
VPMU_API void vpmu_pmu_reset(VpmuPmu *pmu);

/**
 * vpmu_pmu_rdmsr() - a guest RDMSR.
 *
 * Return: 0 with *@val; -ENOENT if @msr is not a PMU MSR of this vendor
 * (the front end handles it); -EINVAL if the guest must take #GP.
 */
VPMU_API int vpmu_pmu_rdmsr(VpmuPmu *pmu, uint32_t msr, uint64_t *val);

/**
 * vpmu_pmu_wrmsr() - a guest WRMSR (at CPL 0, as WRMSR requires).
 *
 * The WRMSR instruction itself is counted here: after the write, every
 * counter that counts instructions at CPL 0 gets one, as on bare metal
 * (the WRMSR that enables a counter is counted, the one that disables it
 * is not).  The front end must not count it again.  A write answered with
 * -ENOENT or -EINVAL counts nothing (hardware: #GP, nothing retires).
 *
 * Return: 0; -ENOENT (not a PMU MSR); -EINVAL (#GP, nothing changed).
 */
VPMU_API int vpmu_pmu_wrmsr(VpmuPmu *pmu, uint32_t msr, uint64_t val);

/**
 * vpmu_pmu_wrmsr_taken() - a WRMSR another PMU served and retired (KVM's,
 * when a front end leaves it an MSR): the state change of
 * vpmu_pmu_wrmsr(), without counting the WRMSR, which that PMU counted.
 * Return: as vpmu_pmu_wrmsr().
 */
VPMU_API int vpmu_pmu_wrmsr_taken(VpmuPmu *pmu, uint32_t msr, uint64_t val);

/**
 * vpmu_pmu_rdpmc() - a guest RDPMC that passed vpmu_rdpmc_permitted().
 * @ecx: Intel: [15:0] index, [30] fixed counters, any other bit #GP.
 *       AMD: the counter index.
 *
 * Return: 0 with *@val masked to the counter width; -EINVAL for #GP.
 * Counts nothing: the front end reports the RDPMC itself as retired.
 */
VPMU_API int vpmu_pmu_rdpmc(VpmuPmu *pmu, uint32_t ecx, uint64_t *val);

/**
 * vpmu_rdpmc_permitted() - the CR4.PCE rule (SDM RDPMC: #GP if CPL > 0
 * and CR4.PCE = 0; real mode has CPL 0).
 */
VPMU_API bool vpmu_rdpmc_permitted(unsigned cpl, bool cr4_pce);

/**
 * vpmu_pmu_cpuid() - put the PMU fields into a CPUID leaf.
 * @regs: EAX, EBX, ECX, EDX as the front end would answer; updated.
 *
 * Intel: leaf 0 (max leaf raised to 0xA), 1 (ECX.PDCM), 0xA.
 * AMD: 0x80000000 (max raised to 0x80000022 for PerfMonV2), 0x80000001
 * (ECX.PerfCtrExtCore[23]), 0x80000022, and leaf 0xA reads 0.
 *
 * Return: 0 if the leaf is a PMU leaf (regs updated), -ENOENT otherwise
 * (regs untouched).
 */
VPMU_API int vpmu_pmu_cpuid(const VpmuPmu *pmu, uint32_t leaf,
                            uint32_t subleaf, uint32_t regs[4]);

/**
 * vpmu_pmu_instruction_retired() - the front end emulated an instruction.
 * @cpl: the CPL it retired at.
 * @branch: it was a branch instruction.
 *
 * Counters of instructions (and branches, if @branch) that count at @cpl
 * get one.  Do not call it for WRMSRs served by vpmu_pmu_wrmsr().
 */
VPMU_API void vpmu_pmu_instruction_retired(VpmuPmu *pmu, unsigned cpl,
                                           bool branch);

/**
 * vpmu_pmu_counter_add() - add @n events counter @id's source missed.
 * @id: VPMU_COUNTER_GP(i) or VPMU_COUNTER_FIXED_ID(i).
 * @n: how many.
 *
 * For a front end that learns of events its source could not see: under
 * KVM, the instructions KVM retires itself (CPUID, HLT, port I/O, MSRs
 * outside the PMU), which never retire in guest mode, so an exclude_host
 * host event misses them; KVM's own PMCs count them (docs/kvm.md).  They
 * are added as counted now, after what the source counted so far; a sum
 * past the counter's width overflows it as the source's events would.
 * Counted in VpmuStats.emulated.
 * Return: 0; -ENOENT for no such counter; -EINVAL if it is not counting;
 * -EIO if reading its source failed (the counter is degraded).
 */
VPMU_API int vpmu_pmu_counter_add(VpmuPmu *pmu, uint32_t id, uint64_t n);

/**
 * vpmu_pmu_defer() - defer the counting source's programming until
 * vpmu_pmu_commit().
 *
 * Every call in between updates the guest-visible state at once (values,
 * controls, what counts, the status) and marks the counters whose source
 * must follow; the commit programs each of them once, with its state
 * then.  A front end brackets one exit (its writes, what it takes from
 * elsewhere) with it, and commits before the guest runs again; sources
 * must not count guest events in between.  vpmu_pmu_wrmsr() does the
 * same around one write.  Calls nest; the outermost commit programs.
 */
VPMU_API void vpmu_pmu_defer(VpmuPmu *pmu);

/** vpmu_pmu_commit() - end a vpmu_pmu_defer(): see there. */
VPMU_API void vpmu_pmu_commit(VpmuPmu *pmu);

/**
 * vpmu_pmu_set_pmi_elsewhere() - another party raises counter @id's PMI.
 * @on: true from now on, false back to vpmu's own.
 *
 * For a front end that leaves the interrupt to a PMU that counts the
 * same events beside vpmu's source: under KVM, KVM's own vPMU, whose
 * PMC vpmu keeps at the guest's value (sync=linux, docs/kvm.md).  An
 * overflow of the counter then sets the global status but calls no
 * opts.pmi, and its source is programmed with a full wrap as its period,
 * so that it never signals and the guest's rewrites of the counter cost
 * no host call.  The front end reports each PMI the other party raised
 * with vpmu_pmu_pmi_delivered().  Not part of the saved state.
 * Return: 0; -ENOENT for no such counter.
 */
VPMU_API int vpmu_pmu_set_pmi_elsewhere(VpmuPmu *pmu, uint32_t id, bool on);

/**
 * vpmu_pmu_pmi_delivered() - the other party raised counter @id's overflow
 * (vpmu_pmu_set_pmi_elsewhere()): its global status bit is set, as the
 * guest saw it there, and, if its control asks for a PMI, the PMI is
 * counted (VpmuCounterInfo.pmis, VpmuStats.pmis).
 * Return: 0; -ENOENT for no such counter; -EINVAL if vpmu raises its PMI.
 */
VPMU_API int vpmu_pmu_pmi_delivered(VpmuPmu *pmu, uint32_t id);

/**
 * vpmu_pmu_set_guest_mode() - the vCPU entered (@guest) or left SVM guest
 * mode.
 *
 * Emulated instructions (vpmu_pmu_wrmsr(), vpmu_pmu_instruction_retired())
 * are counted by the counters that count in this mode (PERF_CTL
 * HostOnly/GuestOnly with cfg.amd_host_guest; every counter otherwise).
 * A front end without nested virtualisation never calls it: the PMU starts
 * in host mode.  Not part of the saved state.
 */
VPMU_API void vpmu_pmu_set_guest_mode(VpmuPmu *pmu, bool guest);

/**
 * vpmu_pmu_sync() - fold the source counts into the guest-visible state
 * now, raising overflows (and PMIs) they imply.
 */
VPMU_API void vpmu_pmu_sync(VpmuPmu *pmu);

/**
 * vpmu_pmu_set_filter() - install a copy of @filter (NULL: no filter).
 *
 * Every counter is reprogrammed under the new policy.
 * Return: 0, -ENOMEM.
 */
VPMU_API int vpmu_pmu_set_filter(VpmuPmu *pmu, const VpmuFilter *filter);

/** vpmu_pmu_release_idle() - close source handles of counters not counting. */
VPMU_API void vpmu_pmu_release_idle(VpmuPmu *pmu);

/**
 * vpmu_pmu_counter_info() - state of counter @id (VPMU_COUNTER_GP/FIXED_ID).
 * Return: 0, or -ENOENT if the counter does not exist.
 */
VPMU_API int vpmu_pmu_counter_info(VpmuPmu *pmu, uint32_t id,
                                   VpmuCounterInfo *out);

/**
 * vpmu_pmu_counting() - the counters in state VPMU_COUNTER_COUNTING (the
 * source backs them, or will at vpmu_pmu_commit()): bit i for GP counter
 * i, bit nr_gp + i for fixed counter i.  No source access.
 */
VPMU_API uint64_t vpmu_pmu_counting(const VpmuPmu *pmu);

/** vpmu_pmu_stats() - copy the per-vCPU statistics. */
VPMU_API void vpmu_pmu_stats(const VpmuPmu *pmu, VpmuStats *out);

/**
 * vpmu_pmu_msr_spans() - the MSRs this PMU answers, fewest runs.
 * @out: up to @max spans; Return: the number of spans (may exceed @max).
 */
VPMU_API size_t vpmu_pmu_msr_spans(const VpmuPmu *pmu, VpmuMsrSpan *out,
                                   size_t max);

/**
 * vpmu_config_msr_spans() - the MSRs a PMU of @cfg answers, fewest runs,
 * from the vendor's MSR table, without making a PMU.
 * @out: up to @max spans.
 * Return: the number of spans (may exceed @max), or -EINVAL if
 * vpmu_config_check() refuses @cfg.
 */
VPMU_API int vpmu_config_msr_spans(const VpmuConfig *cfg, VpmuMsrSpan *out,
                                   size_t max);

/**
 * vpmu_config_msr_spans_of() - vpmu_config_msr_spans() of the MSRs whose
 * role (VpmuMsrRole) is in @roles, a mask of 1u << role.
 */
VPMU_API int vpmu_config_msr_spans_of(const VpmuConfig *cfg, unsigned roles,
                                      VpmuMsrSpan *out, size_t max);

/** vpmu_config_msr_role() - the role of @msr on a PMU of @cfg, or -ENOENT. */
VPMU_API int vpmu_config_msr_role(const VpmuConfig *cfg, uint32_t msr);

/**
 * vpmu_pmu_msr_info() - what @msr is on this PMU (its class, the counters
 * it concerns, a control's enable bits and value), from the vendor's MSR
 * table.  No source access, and not counted in the statistics.
 * Return: 0, or -ENOENT if this PMU does not answer @msr.
 */
VPMU_API int vpmu_pmu_msr_info(VpmuPmu *pmu, uint32_t msr, VpmuMsrInfo *out);

/**
 * vpmu_arch_event_encoding() - @vendor's event select encoding of the
 * architectural event @e (EVTSEL bits 7:0 and 15:8, AMD's EventSelect
 * 11:8 in bits 35:32), the form vpmu_filter_allows_event() takes.
 * Return: 0; -ENOENT if @vendor has no encoding for @e (AMD ref-cycles).
 */
VPMU_API int vpmu_arch_event_encoding(VpmuVendor vendor, VpmuArchEvent e,
                                      uint64_t *evtsel);

/**
 * vpmu_arch_event_name() - the name of the named event @e: perf's
 * ("cycles", "instructions", ...) for the architectural events, the
 * catalogue's (docs/events.md: "conditional-branches", "loads", ...) for
 * the others.  For query interfaces such as QEMU's query-vpmu.
 * Return: a static string, or NULL for VPMU_EVENT_RAW and any other value.
 */
VPMU_API const char *vpmu_arch_event_name(VpmuArchEvent e);

/**
 * vpmu_pmu_counter_msrs() - the MSRs of counter @id (VPMU_COUNTER_GP(i) /
 * VPMU_COUNTER_FIXED_ID(i)) on this PMU, from the vendor's MSR table.
 * Where a counter has two (AMD's legacy K7 MSRs and the PERF_CTL/CTR pairs
 * of PerfCtrExtCore), the table's later, newer one.
 * Return: 0, or -ENOENT if there is no such counter.
 */
VPMU_API int vpmu_pmu_counter_msrs(const VpmuPmu *pmu, uint32_t id,
                                   VpmuCounterMsrs *out);

/**
 * vpmu_pmu_state_size() - bytes vpmu_pmu_save() writes for this config.
 */
VPMU_API size_t vpmu_pmu_state_size(const VpmuPmu *pmu);

/**
 * vpmu_pmu_save() - serialise the whole guest-visible state.
 *
 * A versioned, little-endian blob with a CRC-32, stable across hosts.
 * Return: 0 with *@written; -ENOSPC if @len is too small.
 */
VPMU_API int vpmu_pmu_save(VpmuPmu *pmu, void *buf, size_t len,
                           size_t *written);

/**
 * vpmu_pmu_load() - restore a blob from vpmu_pmu_save().
 *
 * The blob is checked whole before anything changes; on error the PMU is
 * untouched.  Return: 0; -EBADMSG (truncated, bad magic or CRC);
 * -EPROTONOSUPPORT (unknown format version); -EINVAL (another vendor or
 * counter layout, or register values the hardware would refuse).
 */
VPMU_API int vpmu_pmu_load(VpmuPmu *pmu, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_PMU_H */
