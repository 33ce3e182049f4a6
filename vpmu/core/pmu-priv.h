/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvpmu internals shared by the core and the vendor backends.
 * Not installed; tests may include it.
 */
#ifndef VPMU_PMU_PRIV_H
#define VPMU_PMU_PRIV_H

#include <errno.h>
#include <stdarg.h>

#include <vpmu/pmu.h>

#include "vpmu-log.h"

#define VPMU_MAX_GP     8
#define VPMU_MAX_FIXED  4

#define VPMU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BIT_ULL(n)      (1ull << (n))
#define GENMASK_ULL(h, l) ((~0ull >> (63 - (h))) & (~0ull << (l)))

/* Sign-extend the low 32 bits (Intel legacy PMC writes, SDM 20.2.5). */
static inline uint64_t vpmu_sext32(uint64_t v)
{
    return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
}

static inline uint64_t vpmu_width_mask(unsigned width)
{
    return width >= 64 ? ~0ull : BIT_ULL(width) - 1;
}

/*
 * Event select layout shared by IA32_PERFEVTSELx (SDM Vol. 3B Figure 20-6)
 * and AMD PERF_CTLx (APM Vol. 2 Figure 13-7) in bits 31:0.
 */
#define VPMU_EVTSEL_EVENT   GENMASK_ULL(7, 0)       /* Event Select */
#define VPMU_EVTSEL_UMASK   GENMASK_ULL(15, 8)      /* Unit Mask */
#define VPMU_EVTSEL_USR     BIT_ULL(16)             /* count at CPL 3 */
#define VPMU_EVTSEL_OS      BIT_ULL(17)             /* count at CPL 0 */
#define VPMU_EVTSEL_EDGE    BIT_ULL(18)             /* Edge detect */
#define VPMU_EVTSEL_PC      BIT_ULL(19)             /* Intel Pin Control */
#define VPMU_EVTSEL_INT     BIT_ULL(20)             /* APIC interrupt enable */
#define VPMU_EVTSEL_ANY     BIT_ULL(21)             /* Intel AnyThread */
#define VPMU_EVTSEL_EN      BIT_ULL(22)             /* Enable counter */
#define VPMU_EVTSEL_INV     BIT_ULL(23)             /* Invert CMASK */
#define VPMU_EVTSEL_CMASK   GENMASK_ULL(31, 24)     /* Counter Mask */
/* Fields that change what is counted, beyond event + umask. */
#define VPMU_EVTSEL_MODIFIERS (VPMU_EVTSEL_EDGE | VPMU_EVTSEL_INV | \
                               VPMU_EVTSEL_CMASK)
_Static_assert(VPMU_EVTSEL_MODIFIERS == VPMU_RAW_MODIFIERS,
               "source.h's VPMU_RAW_MODIFIERS is the same three fields");
/*
 * IA32_FIXED_CTR_CTRL: a 4-bit field per fixed counter (SDM Vol. 3B
 * Figure 20-2): EN in bits 1:0 (0 off, 1 OS, 2 USR, 3 both), AnyThread
 * bit 2, PMI bit 3.  Only Intel has fixed counters; the core decodes the
 * field as it decodes the event select.
 */
#define VPMU_FIXED_CTRL_BITS 4
#define VPMU_FIXED_CTRL_OS  BIT_ULL(0)
#define VPMU_FIXED_CTRL_USR BIT_ULL(1)
#define VPMU_FIXED_CTRL_ANY BIT_ULL(2)
#define VPMU_FIXED_CTRL_PMI BIT_ULL(3)
#define VPMU_FIXED_CTRL_EN  (VPMU_FIXED_CTRL_OS | VPMU_FIXED_CTRL_USR)
#define VPMU_FIXED_CTRL_FIELD GENMASK_ULL(3, 0)

/* Fixed counter @i's field of a FIXED_CTR_CTRL value. */
static inline uint64_t vpmu_fixed_ctrl_field(uint64_t ctrl, unsigned i)
{
    return (ctrl >> (VPMU_FIXED_CTRL_BITS * i)) & VPMU_FIXED_CTRL_FIELD;
}

/* A counter's control, decoded once when it is written (counter.c). */
typedef struct VpmuCtl {
    bool en;            /* the counter's own enable (EVTSEL.EN / fixed OS|USR) */
    bool usr, os;
    bool intr;          /* INT / fixed PMI */
    bool plain;         /* no EDGE/INV/CMASK: emulated counts apply */
    bool host, guest;   /* counts in SVM host / guest mode (AMD HG bits) */
    uint8_t emul;       /* VPMU_EMUL_*: the emulated events it counts */
    VpmuArchEvent event;
    uint64_t raw_config;
} VpmuCtl;

/* A vendor's encoding of an architectural event (EventSelect[11:0], umask). */
typedef struct VpmuEventCode {
    uint16_t event;
    uint8_t umask;
    bool valid;
} VpmuEventCode;

/* A second encoding of a named event (VpmuArchOps.aliases). */
typedef struct VpmuEventAlias {
    uint16_t event;
    uint8_t umask;
    VpmuArchEvent is;
} VpmuEventAlias;

typedef struct VpmuCounter {
    VpmuPmu *pmu;
    uint32_t id;            /* VPMU_COUNTER_GP(i) / VPMU_COUNTER_FIXED_ID(i) */
    unsigned idx;
    bool fixed;
    uint64_t mask;          /* (1 << width) - 1 */
    uint64_t ctl;           /* guest EVTSEL, or the fixed counter's nibble */
    VpmuCtl dec;            /* ctl decoded, set with it */

    uint64_t shadow;        /* guest value at the last fold, masked */
    uint64_t src_last;      /* source count at the last fold */
    VpmuSourceHandle *h;
    VpmuSourceAttr attr;    /* what h counts, valid while h != NULL */
    bool src_enabled;
    VpmuCounterState state;
    /*
     * VPMU_EMUL_* bits: the emulated instructions/branches it counts (at
     * which CPL), set from its control while it is COUNTING, so that
     * a WRMSR and an instruction retired look at no other counter.
     */
    uint8_t emul;

    uint64_t overflows, pmis, filtered;
    /*
     * vpmu_pmu_set_pmi_elsewhere(): another party raises this counter's
     * PMI; an overflow sets the status only, and the source gets a full
     * wrap as its period (no signal).
     */
    bool pmi_elsewhere;
} VpmuCounter;

#define VPMU_EMUL_INSN_OS   (1u << 0)
#define VPMU_EMUL_INSN_USR  (1u << 1)
#define VPMU_EMUL_BR_OS     (1u << 2)
#define VPMU_EMUL_BR_USR    (1u << 3)
#define VPMU_EMUL_HOST      (1u << 4)   /* ... in SVM host mode */
#define VPMU_EMUL_GUEST     (1u << 5)   /* ... in SVM guest mode */

/* Kinds of PMU MSR; a backend table maps MSR ranges onto them. */
typedef enum VpmuMsrKind {
    VPMU_MSR_EVTSEL,            /* Intel PERFEVTSEL, AMD PERF_CTL (K7) */
    VPMU_MSR_PMC,               /* Intel legacy PMC, AMD PERF_CTR (K7) */
    VPMU_MSR_A_PMC,             /* Intel full-width alias */
    VPMU_MSR_FIXED_CTR,
    VPMU_MSR_FIXED_CTR_CTRL,
    VPMU_MSR_GLOBAL_STATUS,
    VPMU_MSR_GLOBAL_CTRL,
    VPMU_MSR_GLOBAL_OVF_CTRL,   /* Intel OVF_CTRL/STATUS_RESET, AMD STATUS_CLR */
    VPMU_MSR_GLOBAL_STATUS_SET,
    VPMU_MSR_GLOBAL_INUSE,
    VPMU_MSR_PERF_CAPABILITIES,
    VPMU_MSR_DEBUGCTL,
    VPMU_MSR_F15H_CTL_CTR,      /* AMD interleaved: even CTL, odd CTR */
    VPMU_MSR_KIND__COUNT,
} VpmuMsrKind;

/*
 * The F15H range interleaves PERF_CTLi (even) and PERF_CTRi (odd) (APM
 * Vol. 2 13.2.1): as the K7 kinds, counter idx / 2.
 */
static inline VpmuMsrKind vpmu_msr_unalias(VpmuMsrKind kind, unsigned *idx)
{
    if (kind != VPMU_MSR_F15H_CTL_CTR) {
        return kind;
    }
    kind = (*idx & 1) ? VPMU_MSR_PMC : VPMU_MSR_EVTSEL;
    *idx /= 2;
    return kind;
}

/* The role of an unaliased MSR kind (VpmuMsrRole). */
static inline VpmuMsrRole vpmu_msr_kind_role(VpmuMsrKind kind)
{
    switch (kind) {
    case VPMU_MSR_PMC:
    case VPMU_MSR_A_PMC:
    case VPMU_MSR_FIXED_CTR:
        return VPMU_MSR_ROLE_COUNTER;
    case VPMU_MSR_EVTSEL:
    case VPMU_MSR_FIXED_CTR_CTRL:
        return VPMU_MSR_ROLE_SELECTOR;
    case VPMU_MSR_GLOBAL_CTRL:
        return VPMU_MSR_ROLE_GLOBAL_CTRL;
    case VPMU_MSR_GLOBAL_STATUS:
        return VPMU_MSR_ROLE_STATUS;
    case VPMU_MSR_GLOBAL_OVF_CTRL:
        return VPMU_MSR_ROLE_STATUS_CLEAR;
    case VPMU_MSR_GLOBAL_STATUS_SET:
        return VPMU_MSR_ROLE_STATUS_SET;
    default:
        return VPMU_MSR_ROLE_OTHER;
    }
}

typedef struct VpmuMsrRange {
    uint32_t base;
    uint32_t count;
    VpmuMsrKind kind;
} VpmuMsrRange;

/* Ranges per vendor table and MSRs per range, for the PMU's bitmaps. */
#define VPMU_MAX_RANGES 16
#define VPMU_MAX_RANGE_MSRS 64

/*
 * How the core checks a guest write of one MSR kind (VpmuMsrRule.flags).
 * Intel #GPs on a reserved bit (VPMU_MSR_FAULT); AMD drops it.
 */
#define VPMU_MSR_RULE_SET   (1u << 0)   /* the vendor gave the kind a rule */
#define VPMU_MSR_FAULT      (1u << 1)   /* a bit outside writable #GPs */
#define VPMU_MSR_READ_ONLY  (1u << 2)   /* a write #GPs (FAULT) or is dropped */
#define VPMU_MSR_SEXT32     (1u << 3)   /* EAX sign-extended (Intel PMCx) */

/* One MSR kind's rule for one configuration (VpmuRules.msr). */
typedef struct VpmuMsrRule {
    uint64_t writable;      /* the bits a write may set */
    /*
     * How many MSRs of the kind exist: those of index < nr (counter
     * index; an interleaved F15H kind counts CTL/CTR pairs).  0: none,
     * the kind's MSRs #GP.
     */
    uint8_t nr;
    uint8_t flags;          /* VPMU_MSR_* */
} VpmuMsrRule;

/*
 * A vendor's rules for one configuration, made once when the PMU is made
 * (vpmu_rules_init()), as KVM's refresh() computes its reserved masks:
 * nothing on a guest access recomputes them.
 */
typedef struct VpmuRules {
    /* DEBUGCTL bit that freezes the PMU when a PMI is requested (0: none) */
    uint64_t freeze_on_pmi;
    /*
     * GLOBAL_STATUS bit that a freeze sets and that stops counting while
     * set (Intel v4 CTR_Frz); 0: a freeze clears GLOBAL_CTRL instead.
     */
    uint64_t freeze_status;
    VpmuMsrRule msr[VPMU_MSR_KIND__COUNT];  /* by VpmuMsrKind */
} VpmuRules;

/* For a vendor's rules() hook: the rule of @kind. */
static inline void vpmu_rule_set(VpmuRules *out, VpmuMsrKind kind,
                                 unsigned nr, uint64_t writable,
                                 unsigned flags)
{
    out->msr[kind].writable = writable;
    out->msr[kind].nr = (uint8_t)nr;
    out->msr[kind].flags = (uint8_t)(flags | VPMU_MSR_RULE_SET);
}

/* Does MSR @idx of a range of @kind exist (for the config of @rules)? */
static inline bool vpmu_rules_msr_exists(const VpmuRules *rules,
                                         VpmuMsrKind kind, unsigned idx)
{
    unsigned k = idx;

    vpmu_msr_unalias(kind, &k);
    return k < rules->msr[kind].nr;
}

/*
 * The core's check of a guest write of an existing MSR of (unaliased)
 * @kind: 0 with *@val what the core applies (what the guest reads back),
 * or -EINVAL (#GP).  A table look-up, no vendor call.
 */
static inline int vpmu_rules_sanitize(const VpmuRules *rules,
                                      VpmuMsrKind kind, uint64_t *val)
{
    const VpmuMsrRule *r = &rules->msr[kind];

    if ((*val & ~r->writable) || (r->flags & VPMU_MSR_READ_ONLY)) {
        if (r->flags & VPMU_MSR_FAULT) {
            return -EINVAL;
        }
        *val &= r->writable;
    }
    if (r->flags & VPMU_MSR_SEXT32) {
        *val = vpmu_sext32(*val);
    }
    return 0;
}

/*
 * A field of a CPUID leaf that reports the configuration: what
 * vpmu_arch_validate() compares with the config and its rules.
 */
typedef enum VpmuCpuidWhat {
    VPMU_CPUID_VERSION,         /* cfg->intel_version */
    VPMU_CPUID_NR_GP,
    VPMU_CPUID_GP_WIDTH,
    VPMU_CPUID_NR_FIXED,
    VPMU_CPUID_FIXED_WIDTH,
    VPMU_CPUID_MSR_EXISTS,      /* 1 iff MSRs of .kind exist */
} VpmuCpuidWhat;

/* CPUID output registers, as indices of regs[4]. */
enum { VPMU_EAX, VPMU_EBX, VPMU_ECX, VPMU_EDX };

typedef struct VpmuCpuidField {
    uint32_t leaf;
    uint8_t reg;                /* VPMU_EAX ... VPMU_EDX */
    uint8_t shift, bits;
    VpmuCpuidWhat what;
    VpmuMsrKind kind;           /* VPMU_CPUID_MSR_EXISTS */
    /* Reported from this version (Intel) or level (AMD) on. */
    unsigned since;
} VpmuCpuidField;

/*
 * The vendor split, as libpfm4's PMU descriptors: a vendor is its MSR
 * ranges, its event tables, its RDPMC layout, a check of a configuration,
 * the rules that configuration gets (computed once) and its CPUID leaves.
 * As in KVM's common pmu.c, the core owns the state and every check on
 * a guest access: it finds the MSR, checks it exists and sanitises the
 * write with the rules, and decodes controls with the tables.
 * vpmu_arch_validate() checks a vendor's tables (tests/test-tables.c).
 */
typedef struct VpmuArchOps {
    const char *name;
    const VpmuMsrRange *ranges;     /* sorted by base */
    size_t nr_ranges;
    /* Event select bits of a control (Intel [7:0], AMD [7:0] and [35:32]). */
    uint64_t event_bits;
    const VpmuEventCode *events;    /* by VpmuArchEvent */
    /* Other encodings decoded as a named event; NULL/0 for none. */
    const VpmuEventAlias *aliases;
    size_t nr_aliases;
    const VpmuArchEvent *fixed_events;  /* what fixed counter i counts */
    /* AMD GuestOnly/HostOnly control bits (APM 13.2.1); 0 on Intel. */
    uint64_t guest_only, host_only;
    /*
     * RDPMC's ECX: set reserved bits #GP, the fixed bit selects a fixed
     * counter (0: none); the other bits are the counter's index.
     */
    uint32_t rdpmc_reserved, rdpmc_fixed;
    /* Where CPUID reports the configuration (for the validator). */
    const VpmuCpuidField *cpuid_fields;
    size_t nr_cpuid_fields;

    int (*check)(const VpmuConfig *cfg, char *err, size_t errlen);
    /* The rules of a checked config; @out is zeroed first. */
    void (*rules)(const VpmuConfig *cfg, VpmuRules *out);
    int (*cpuid)(const VpmuConfig *cfg, uint32_t leaf, uint32_t subleaf,
                 uint32_t regs[4]);
} VpmuArchOps;

extern const VpmuArchOps vpmu_intel_ops;
extern const VpmuArchOps vpmu_amd_ops;

/* Log kinds, each logged once per PMU (rate limit), counted always. */
typedef enum VpmuLogKind {
    VPMU_LOG_SOURCE_ERROR,
    VPMU_LOG_UNSUPPORTED,
    VPMU_LOG_FILTERED,
    VPMU_LOG__COUNT,
} VpmuLogKind;

struct VpmuPmu {
    VpmuConfig cfg;
    const VpmuArchOps *arch;
    VpmuRules rules;
    bool has_global;        /* GLOBAL_CTRL/STATUS exist (Intel v2+, AMD v2) */
    /* Bit i of present[r]: MSR ranges[r].base + i exists for this config. */
    uint64_t present[VPMU_MAX_RANGES];
    VpmuPmuOpts opts;
    VpmuFilter *filter;

    unsigned nr_gp, nr_fixed;
    VpmuCounter gp[VPMU_MAX_GP];
    VpmuCounter fixed[VPMU_MAX_FIXED];

    uint64_t global_ctrl;
    uint64_t global_status;
    uint64_t debugctl;
    /*
     * vpmu_pmu_defer() depth, and bit i: counter i counts and its source
     * waits for vpmu_pmu_commit() (vpmu_counter_program()).
     */
    unsigned defer;
    uint64_t dirty;
    /* Bit i: vpmu_counter_at(pmu, i) has emul bits (counts emulated ones). */
    uint64_t emul_counters;
    /* Bit i: its control would count emulated ones, were it counting. */
    uint64_t emul_capable;
    bool guest_mode;        /* vpmu_pmu_set_guest_mode() */

    VpmuStats stats;
    VpmuLogger log;             /* opts.log; VpmuLogKind once each */
};

/* core/config.c */
const VpmuArchOps *vpmu_arch_for(VpmuVendor vendor);
/* The rules of config @cfg (checked) on vendor @a. */
void vpmu_rules_init(const VpmuArchOps *a, const VpmuConfig *cfg,
                     VpmuRules *out);

/*
 * core/validate.c: libpfm4's validate for a vendor's tables.  0 if they
 * are consistent (alone, and with the rules and CPUID leaves of @cfg, a
 * config @a's check accepts), else -EINVAL and what is wrong in @err.
 */
int vpmu_arch_validate(const VpmuArchOps *a, char *err, size_t errlen);
int vpmu_arch_validate_config(const VpmuArchOps *a, const VpmuConfig *cfg,
                              char *err, size_t errlen);

/* core/pmu.c */
/* Decode a control word with the vendor's tables (once, when written). */
void vpmu_ctl_decode(const VpmuPmu *pmu, const VpmuCounter *c, uint64_t ctl,
                     VpmuCtl *out);
VpmuCounter *vpmu_counter_by_id(VpmuPmu *pmu, uint32_t id);
/* @msr's kind and index: 0, -ENOENT not a PMU MSR, -EINVAL absent here. */
int vpmu_msr_find(const VpmuPmu *pmu, uint32_t msr, VpmuMsrKind *kind,
                  unsigned *idx);
/* A control MSR's value as the core keeps it (no fold). */
uint64_t vpmu_control_read(const VpmuPmu *pmu, VpmuMsrKind kind,
                           unsigned idx);

/*
 * core/counter.c: the counter model (global.c: the PMU-wide state that
 * drives it; external.c: what it learns from outside its source).  Of the
 * core it calls only the filter, and no vendor code.
 */
void vpmu_counter_init(VpmuCounter *c, VpmuPmu *pmu, bool fixed,
                       unsigned idx, unsigned width);
uint64_t vpmu_counter_read(VpmuCounter *c);
void vpmu_counter_close(VpmuCounter *c);
/* Fold the source's count; false if its read failed (degraded). */
bool vpmu_counter_fold(VpmuCounter *c);
/* Add @delta events after a fold; a wrap is an overflow. */
void vpmu_counter_advance(VpmuCounter *c, uint64_t delta);
/* Program the source for the counter's state (it is folded). */
void vpmu_counter_program(VpmuCounter *c);
void vpmu_counter_reprogram(VpmuCounter *c);


/*
 * core/global.c: the global control, the status and the freeze.  An
 * overflow with PMI applies DEBUGCTL.Freeze_PerfMon_On_PMI.
 */
void vpmu_freeze_on_pmi(VpmuPmu *pmu);
void vpmu_set_global_ctrl(VpmuPmu *pmu, uint64_t val);
/* Set then clear status bits (folds first; a freeze change reprograms). */
void vpmu_status_update(VpmuPmu *pmu, uint64_t set, uint64_t clear);

/* GLOBAL_STATUS.CTR_Frz (v4+ streamlined freeze) stops every counter. */
static inline bool vpmu_frozen(const VpmuPmu *pmu)
{
    return pmu->global_status & pmu->rules.freeze_status;
}
/*
 * Apply a guest write the vendor sanitised, with its controls decoded
 * (EVTSEL: @dec[0]; FIXED_CTR_CTRL: fixed counter i's in @dec[i]); the
 * WRMSR itself retires.
 */
void vpmu_pmu_apply(VpmuPmu *pmu, VpmuMsrKind kind, unsigned idx,
                    uint64_t val, const VpmuCtl dec[VPMU_MAX_FIXED],
                    bool retire);
uint64_t vpmu_pmu_read_status(VpmuPmu *pmu);
/* IA32_PERF_GLOBAL_INUSE (Intel v4+), derived from the controls. */
uint64_t vpmu_pmu_read_inuse(const VpmuPmu *pmu);
void vpmu_pmu_reprogram_all(VpmuPmu *pmu);

/*
 * vpmu_pmu_defer()/vpmu_pmu_commit() for the core's own brackets (one
 * write): no exported call.  The outermost commit programs the marked
 * counters' sources (vpmu_commit_dirty(): each once; a callback from a
 * source, an overflow, comes after the deferral and programs at once).
 */
void vpmu_commit_dirty(VpmuPmu *pmu);

static inline void vpmu_defer(VpmuPmu *pmu)
{
    pmu->defer++;
}

static inline void vpmu_commit(VpmuPmu *pmu)
{
    if (pmu->defer > 1) {
        pmu->defer--;
        return;
    }
    pmu->defer = 0;
    if (pmu->dirty) {
        vpmu_commit_dirty(pmu);
    }
}

/* Counter @i of all counters: GP counters first, then fixed ones. */
static inline unsigned vpmu_nr_counters(const VpmuPmu *pmu)
{
    return pmu->nr_gp + pmu->nr_fixed;
}

static inline VpmuCounter *vpmu_counter_at(VpmuPmu *pmu, unsigned i)
{
    return i < pmu->nr_gp ? &pmu->gp[i] : &pmu->fixed[i - pmu->nr_gp];
}

/* The inverse of vpmu_counter_at(). */
static inline unsigned vpmu_counter_index(const VpmuCounter *c)
{
    return c->fixed ? c->pmu->nr_gp + c->idx : c->idx;
}

static inline uint64_t vpmu_status_bit(const VpmuCounter *c)
{
    /* IA32_PERF_GLOBAL_STATUS: GP i at bit i, fixed i at bit 32 + i */
    return c->fixed ? BIT_ULL(32 + c->idx) : BIT_ULL(c->idx);
}

/* Set a control with no fold and no reprogramming (reset, state load). */
static inline void vpmu_counter_load_ctl(VpmuCounter *c, uint64_t ctl,
                                         const VpmuCtl *dec)
{
    uint64_t bit = BIT_ULL(vpmu_counter_index(c));

    c->ctl = ctl;
    c->dec = *dec;
    if (dec->emul) {
        c->pmu->emul_capable |= bit;
    } else {
        c->pmu->emul_capable &= ~bit;
    }
}

/*
 * May the WRMSR's own retirement count on a counter once this write
 * (@kind, its decoded controls @dec) is applied?  Only then can it
 * program a source twice (pmu_wrmsr() defers): a superset, cheap.
 */
static inline bool vpmu_write_may_count(const VpmuPmu *pmu, VpmuMsrKind kind,
                                        const VpmuCtl *dec)
{
    if (pmu->emul_capable) {
        return true;
    }
    if (kind == VPMU_MSR_EVTSEL) {
        return dec[0].emul != 0;
    }
    if (kind == VPMU_MSR_FIXED_CTR_CTRL) {
        for (unsigned i = 0; i < pmu->nr_fixed; i++) {
            if (dec[i].emul) {
                return true;
            }
        }
    }
    return false;
}

/* core/filter.c */
int vpmu_filter_clone(const VpmuFilter *f, VpmuFilter **out);

#endif /* VPMU_PMU_PRIV_H */
