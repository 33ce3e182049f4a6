/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vendor-neutral counter model (vpmu/core/counter.c) and the
 * counting-source interface (include/vpmu/source.h), driven through the
 * public API on an Intel v2 PMU (vpmu_config_init() defaults: 8 GP + 3
 * fixed counters, 48 bits, FW_WRITE) unless a case says otherwise.
 *
 * Two sources back the PMU: the library's deterministic fake source, and a
 * recording source written here (RecSource) that logs every open/update
 * attr, lets a test set a handle's count directly (several wraps in one
 * fold) and can go without an update op.
 *
 * Every expected value is worked out by hand; vpmu_pmu_wrmsr() counts the
 * WRMSR itself (+1, after the write) on counters that then count
 * instructions at CPL 0, so most cases use cycles (0x3C) and the ones on
 * instructions say where the +1 comes from.
 */
#include "vectors.h"
#include "steps.h"

/* --- Intel MSRs (SDM Vol. 4, Table 2-2) -------------------------------- */
#define PMC(i)          (0xC1u + (i))      /* IA32_PMCi, legacy (sign-ext.) */
#define A_PMC(i)        (0x4C1u + (i))     /* IA32_A_PMCi, full width */
#define EVTSEL(i)       (0x186u + (i))     /* IA32_PERFEVTSELi */
#define FIXED_CTR(i)    (0x309u + (i))     /* IA32_FIXED_CTRi */
#define FIXED_CTR_CTRL  0x38Du
#define GLOBAL_STATUS   0x38Eu
#define GLOBAL_CTRL     0x38Fu

/* --- IA32_PERFEVTSELx fields (SDM Vol. 3B Figure 20-6) ------------------ */
#define USR             (1ull << 16)
#define OS              (1ull << 17)
#define EDGE            (1ull << 18)
#define INT             (1ull << 20)
#define EN              (1ull << 22)
#define INV             (1ull << 23)
#define CMASK(n)        ((uint64_t)(n) << 24)
#define EOU             (EN | OS | USR)

/* Architectural event/umask encodings (SDM Table 20-1) */
#define CYC             0x003Cull
#define INSTR           0x00C0ull
#define REF             0x013Cull
#define LLC_REF         0x4F2Eull
#define BR              0x00C4ull
#define RAW_EV          0x1234ull          /* event 0x34 umask 0x12: no arch */

/* GLOBAL_CTRL / GLOBAL_STATUS: GP i at bit i, fixed i at 32 + i */
#define GP_BITS         0xFFull            /* reset GLOBAL_CTRL, 8 GP */
#define FIXED_BIT(i)    (1ull << (32 + (i)))

#define GPC(i)          VPMU_COUNTER_GP(i)
#define FIXED(i)        VPMU_COUNTER_FIXED_ID(i)

#define P32             (1ull << 32)
#define P40             (1ull << 40)
#define P48             (1ull << 48)
#define M32             (P32 - 1)
#define M40             (P40 - 1)
#define M48             (P48 - 1)

/* ========================================================================= */
/* A recording counting source                                               */
/* ========================================================================= */

#define REC_MAX_LOG     64
#define REC_MAX_HANDLES 32

typedef struct RecHandle {
    bool open;
    bool enabled;
    uint64_t count;             /* what read() returns; tests set it */
    VpmuSourceAttr attr;
} RecHandle;

typedef struct RecSource {
    /* every attr given to open ('o') or update ('u'), in order */
    VpmuSourceAttr log[REC_MAX_LOG];
    char kind[REC_MAX_LOG];
    size_t nlog;
    RecHandle h[REC_MAX_HANDLES];   /* never reused: h[nh - 1] is the newest */
    size_t nh;
    unsigned opens, updates, enables, disables, reads, closes, open_handles;
} RecSource;

static void rec_record(RecSource *rs, char kind, const VpmuSourceAttr *attr)
{
    ck_assert_msg(rs->nlog < REC_MAX_LOG, "recording source log full");
    ck_assert_msg(attr->sample_period >= 1 && attr->sample_period <= P48,
                  "sample_period 0x%" PRIx64 " outside 1..2^48",
                  attr->sample_period);
    rs->log[rs->nlog] = *attr;
    rs->kind[rs->nlog] = kind;
    rs->nlog++;
}

static RecHandle *rec_handle(RecSource *rs, VpmuSourceHandle *vh)
{
    RecHandle *h = (RecHandle *)vh;

    ck_assert_msg(h >= rs->h && h < rs->h + rs->nh, "foreign handle");
    ck_assert_msg(h->open, "handle %td used after close", h - rs->h);
    return h;
}

static int rec_open(void *src, const VpmuSourceAttr *attr,
                    VpmuSourceHandle **out)
{
    RecSource *rs = src;
    RecHandle *h;

    rec_record(rs, 'o', attr);
    ck_assert_msg(rs->nh < REC_MAX_HANDLES, "recording source out of handles");
    h = &rs->h[rs->nh++];
    memset(h, 0, sizeof(*h));
    h->open = true;
    h->attr = *attr;
    rs->opens++;
    rs->open_handles++;
    *out = (VpmuSourceHandle *)h;
    return 0;
}

static int rec_update(void *src, VpmuSourceHandle *vh,
                      const VpmuSourceAttr *attr)
{
    RecSource *rs = src;
    RecHandle *h = rec_handle(rs, vh);

    rec_record(rs, 'u', attr);
    h->attr = *attr;
    rs->updates++;
    return 0;
}

static int rec_enable(void *src, VpmuSourceHandle *vh)
{
    RecSource *rs = src;

    rec_handle(rs, vh)->enabled = true;
    rs->enables++;
    return 0;
}

static int rec_disable(void *src, VpmuSourceHandle *vh)
{
    RecSource *rs = src;

    rec_handle(rs, vh)->enabled = false;
    rs->disables++;
    return 0;
}

static int rec_read(void *src, VpmuSourceHandle *vh, uint64_t *count)
{
    RecSource *rs = src;

    *count = rec_handle(rs, vh)->count;
    rs->reads++;
    return 0;
}

static void rec_close(void *src, VpmuSourceHandle *vh)
{
    RecSource *rs = src;
    RecHandle *h = rec_handle(rs, vh);

    h->open = false;
    rs->closes++;
    rs->open_handles--;
}

static const VpmuSourceOps rec_ops = {
    .name = "rec",
    .open = rec_open,
    .update = rec_update,
    .enable = rec_enable,
    .disable = rec_disable,
    .read = rec_read,
    .close = rec_close,
};

/* The same source without update: period changes must close and reopen. */
static const VpmuSourceOps rec_ops_noupdate = {
    .name = "rec-noupdate",
    .open = rec_open,
    .enable = rec_enable,
    .disable = rec_disable,
    .read = rec_read,
    .close = rec_close,
};

/* An update that declines: "-EOPNOTSUPP to make the core close and reopen". */
static int rec_update_declined(void *src, VpmuSourceHandle *vh,
                               const VpmuSourceAttr *attr)
{
    RecSource *rs = src;

    rec_handle(rs, vh);
    rs->updates++;
    return -EOPNOTSUPP;
}

static const VpmuSourceOps rec_ops_declines = {
    .name = "rec-declines",
    .open = rec_open,
    .update = rec_update_declined,
    .enable = rec_enable,
    .disable = rec_disable,
    .read = rec_read,
    .close = rec_close,
};

/* The newest handle, which must be open. */
static RecHandle *rec_last(RecSource *rs)
{
    ck_assert_msg(rs->nh > 0, "no handle opened");
    ck_assert_msg(rs->h[rs->nh - 1].open, "newest handle is closed");
    return &rs->h[rs->nh - 1];
}

/* The source saw the period elapse: call back as a real source would. */
static void rec_fire(RecSource *rs)
{
    RecHandle *h = rec_last(rs);

    ck_assert_ptr_nonnull(h->attr.overflow);
    h->attr.overflow(h->attr.overflow_ctx);
}

/* ========================================================================= */
/* A PMU on either source, with PMI and log sinks                            */
/* ========================================================================= */

typedef struct CorePmu {
    VpmuPmu *pmu;
    VpmuFakeSource *fake;       /* NULL when the recording source backs it */
    RecSource rec;
    unsigned pmis;
    unsigned logs;
    char last_log[256];
    /* At each PMI, read this MSR (if pmi_msr != 0) into pmi_value. */
    uint32_t pmi_msr;
    uint64_t pmi_value;
} CorePmu;

static void core_pmi(void *opaque)
{
    CorePmu *c = opaque;

    c->pmis++;
    if (c->pmi_msr) {
        ck_assert_int_eq(vpmu_pmu_rdmsr(c->pmu, c->pmi_msr, &c->pmi_value), 0);
    }
}

static void core_log(void *opaque, const char *msg)
{
    CorePmu *c = opaque;

    c->logs++;
    snprintf(c->last_log, sizeof(c->last_log), "%s", msg);
}

/* @ops NULL: the fake source; else the recording source with @ops. */
static void core_init(CorePmu *c, const VpmuConfig *cfg,
                      const VpmuSourceOps *ops)
{
    char err[256] = "";
    VpmuPmuOpts opts = {
        .pmi = core_pmi,
        .log = core_log,
        .opaque = c,
    };

    memset(c, 0, sizeof(*c));
    if (ops) {
        opts.source_ops = ops;
        opts.source = &c->rec;
    } else {
        ck_assert_int_eq(vpmu_fake_source_new(&c->fake), 0);
        opts.source_ops = vpmu_fake_source_ops();
        opts.source = c->fake;
    }
    ck_assert_msg(vpmu_pmu_new(cfg, &opts, &c->pmu, err, sizeof(err)) == 0,
                  "vpmu_pmu_new: %s", err);
}

static void core_fini(CorePmu *c)
{
    vpmu_pmu_free(c->pmu);
    if (c->fake) {
        VpmuFakeStats fs;

        /* vpmu_pmu_free() closed every handle it had */
        vpmu_fake_source_stats(c->fake, &fs);
        ck_assert_msg(fs.open_handles == 0, "%u fake handles leaked",
                      fs.open_handles);
    } else {
        ck_assert_msg(c->rec.open_handles == 0, "%u rec handles leaked",
                      c->rec.open_handles);
    }
    vpmu_fake_source_free(c->fake);
    c->pmu = NULL;
    c->fake = NULL;
}

/* Intel v2 defaults, with other counter widths. */
static void cfg_v2(VpmuConfig *cfg, unsigned gp_width, unsigned fixed_width)
{
    vpmu_config_init(cfg, VPMU_VENDOR_INTEL);
    cfg->gp_width = gp_width ? gp_width : 48;
    cfg->fixed_width = fixed_width ? fixed_width : 48;
}

/* Intel v1: 8 GP counters, no fixed counters, no global MSRs, no PDCM. */
static void cfg_v1(VpmuConfig *cfg, unsigned gp_width)
{
    vpmu_config_init(cfg, VPMU_VENDOR_INTEL);
    cfg->intel_version = 1;
    cfg->gp_width = gp_width ? gp_width : 40;
    cfg->nr_fixed = 0;
    cfg->fixed_width = 0;
    cfg->pdcm = false;
    cfg->perf_capabilities = 0;
}

static uint64_t info_of(CorePmu *c, uint32_t id, VpmuCounterInfo *info)
{
    ck_assert_int_eq(vpmu_pmu_counter_info(c->pmu, id, info), 0);
    return info->value;
}

static VpmuCounterState state_of(CorePmu *c, uint32_t id)
{
    VpmuCounterInfo info;

    info_of(c, id, &info);
    return info.state;
}

static uint64_t rd(CorePmu *c, uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_msg(vpmu_pmu_rdmsr(c->pmu, msr, &v) == 0, "rdmsr 0x%x", msr);
    return v;
}

static void wr(CorePmu *c, uint32_t msr, uint64_t val)
{
    ck_assert_msg(vpmu_pmu_wrmsr(c->pmu, msr, val) == 0,
                  "wrmsr 0x%x <- 0x%" PRIx64, msr, val);
}

static VpmuStats stats_of(CorePmu *c)
{
    VpmuStats st;

    vpmu_pmu_stats(c->pmu, &st);
    return st;
}

static VpmuFakeStats fake_of(CorePmu *c)
{
    VpmuFakeStats fs;

    vpmu_fake_source_stats(c->fake, &fs);
    return fs;
}

/* ========================================================================= */
/* Step scripts                                                              */
/* ========================================================================= */

/* Run a script against @c: the PMI count, and the log sink's lines. */
static void core_steps(CorePmu *c, const Step *s, size_t n)
{
    const StepTarget tg = {
        .pmu = c->pmu,
        .fake = c->fake,
        .pmis = &c->pmis,
        .logs = &c->logs,
        .last_log = c->last_log,
    };

    run_steps_on(&tg, s, n);
}

#define RUN_STEPS(c, t) core_steps((c), (t), ARRAY_SIZE(t))

/* A script on its own Intel v2 PMU (48-bit counters) on the fake source. */
static void v2_script(const Step *s, size_t n)
{
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    core_steps(&c, s, n);
    core_fini(&c);
}

#define RUN_V2_SCRIPT(t) v2_script((t), ARRAY_SIZE(t))

/* ========================================================================= */
/* Value arithmetic                                                          */
/* ========================================================================= */

/*
 * guest value = (shadow + source delta) & mask; a sum past the mask is an
 * overflow (status bit, PMI with INT).  Preset through the legacy PMC
 * (sign-extended from bit 31, then masked: 0xFFFFFFF0 is mask - 0xF at any
 * width), the full-width A_PMC, or a fixed counter, then enable and run.
 */
typedef struct ValueCase {
    int line;
    unsigned version;           /* 1 or 2 */
    unsigned gp_width, fixed_width;
    uint32_t id;                /* the counter under test */
    uint32_t ctr_msr;
    uint64_t preset;            /* written to ctr_msr while the counter is off */
    uint64_t preset_read;       /* what the counter then reads */
    uint32_t ctl_msr;
    uint64_t ctl;
    uint64_t gctrl;             /* written to GLOBAL_CTRL last if != 0 */
    VpmuArchEvent event;
    unsigned cpl;
    uint64_t n;
    uint64_t value;             /* after the run */
    uint64_t overflows;
    uint64_t status;            /* GLOBAL_STATUS after the run (v2) */
} ValueCase;

static const ValueCase value_cases[] = {
    /* The example: 0xFFFFFFF0 + 0x20 = 0x1_0000_0010 -> 0x10, one wrap. */
    { SRC_LINE, 2, 32, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x10, 1, 1 },
    /* Legacy write sign-extends: 0xFFFFFFF0 -> 2^40 - 16; + 0x20 wraps. */
    { SRC_LINE, 2, 40, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x10, 1, 1 },
    { SRC_LINE, 2, 48, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x10, 1, 1 },
    /* Legacy write of a positive 32-bit value: no sign extension. */
    { SRC_LINE, 2, 32, 0, GPC(0), PMC(0), 0x7FFFFFF0, 0x7FFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x80000010, 0, 0 },
    /* Full-width write: 0xFFFFFFF0 + 0x20 carries into bit 32 at width 40. */
    { SRC_LINE, 2, 40, 0, GPC(0), A_PMC(0), 0xFFFFFFF0, 0xFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x100000010, 0, 0 },
    { SRC_LINE, 2, 48, 0, GPC(0), A_PMC(0), 0x7FFFFFFFFFF0, 0x7FFFFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x800000000010, 0, 0 },
    /* Exactly to the mask: no wrap yet. */
    { SRC_LINE, 2, 40, 0, GPC(3), A_PMC(3), M40 - 0x1F, M40 - 0x1F,
      EVTSEL(3), EOU | CYC, 0, VPMU_EVENT_CYCLES, 3, 0x1F, M40, 0, 0 },
    /* One past: wraps to 0; GP 5 is status bit 5. */
    { SRC_LINE, 2, 48, 0, GPC(5), A_PMC(5), M48 - 0x1F, M48 - 0x1F,
      EVTSEL(5), EOU | CYC, 0, VPMU_EVENT_CYCLES, 3, 0x20, 0, 1, 1ull << 5 },
    /*
     * Instructions at OS: the enabling WRMSR to EVTSEL0 retires after the
     * write and counts: 0xFFFFFFF0 + 1 (WRMSR) + 0x20 = 0x1_0000_0011.
     */
    { SRC_LINE, 2, 32, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFF0,
      EVTSEL(0), EN | OS | INSTR, 0, VPMU_EVENT_INSTRUCTIONS, 0, 0x20,
      0x11, 1, 1 },
    /* Instructions at USR only: the CPL-0 WRMSR is not counted. */
    { SRC_LINE, 2, 32, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFF0,
      EVTSEL(0), EN | USR | INSTR, 0, VPMU_EVENT_INSTRUCTIONS, 3, 0x20,
      0x10, 1, 1 },
    /*
     * Fixed counter 1 (core cycles), 40 bits: FIXED_CTR_CTRL nibble 1 =
     * OS|USR (0x30), then GLOBAL_CTRL bit 33; status bit 33 on the wrap.
     */
    { SRC_LINE, 2, 48, 40, FIXED(1), FIXED_CTR(1), M40 - 0xF, M40 - 0xF,
      FIXED_CTR_CTRL, 0x30, GP_BITS | FIXED_BIT(1), VPMU_EVENT_CYCLES, 0,
      0x20, 0x10, 1, FIXED_BIT(1) },
    /*
     * Fixed counter 0 (instructions), 32 bits, OS only: the WRMSR to
     * GLOBAL_CTRL enables it and counts: 0xFFFFFFF0 + 1 + 0x20 -> 0x11.
     */
    { SRC_LINE, 2, 48, 32, FIXED(0), FIXED_CTR(0), 0xFFFFFFF0, 0xFFFFFFF0,
      FIXED_CTR_CTRL, 0x1, GP_BITS | FIXED_BIT(0), VPMU_EVENT_INSTRUCTIONS, 0,
      0x20, 0x11, 1, FIXED_BIT(0) },
    /* v1 (no global MSRs): 40-bit wrap, overflow counted, no status MSR. */
    { SRC_LINE, 1, 40, 0, GPC(0), PMC(0), 0xFFFFFFF0, 0xFFFFFFFFF0,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0x20, 0x10, 1, 0 },
    /* Nothing run: the preset stays. */
    { SRC_LINE, 2, 48, 0, GPC(0), A_PMC(0), 0x123456789A, 0x123456789A,
      EVTSEL(0), EOU | CYC, 0, VPMU_EVENT_CYCLES, 0, 0, 0x123456789A, 0, 0 },
};

START_TEST(test_value_arithmetic)
{
    const ValueCase *v = &value_cases[_i];
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;
    uint64_t got;
    int r;

    if (v->version == 1) {
        cfg_v1(&cfg, v->gp_width);
    } else {
        cfg_v2(&cfg, v->gp_width, v->fixed_width);
    }
    core_init(&c, &cfg, NULL);
    wr(&c, v->ctr_msr, v->preset);
    got = rd(&c, v->ctr_msr);
    ck_assert_msg(got == v->preset_read, "line %d: preset reads 0x%" PRIx64
                  " want 0x%" PRIx64, v->line, got, v->preset_read);
    wr(&c, v->ctl_msr, v->ctl);
    if (v->gctrl) {
        wr(&c, GLOBAL_CTRL, v->gctrl);
    }
    ck_assert_msg(state_of(&c, v->id) == VPMU_COUNTER_COUNTING,
                  "line %d: not counting", v->line);
    vpmu_fake_source_run(c.fake, v->event, 0, v->cpl, v->n);

    got = rd(&c, v->ctr_msr);
    ck_assert_msg(got == v->value, "line %d: counter reads 0x%" PRIx64
                  " want 0x%" PRIx64, v->line, got, v->value);
    /* RDPMC ECX uses the counter id encoding (fixed: bit 30). */
    ck_assert_int_eq(vpmu_pmu_rdpmc(c.pmu, v->id, &got), 0);
    ck_assert_msg(got == v->value, "line %d: rdpmc 0x%" PRIx64, v->line, got);
    info_of(&c, v->id, &info);
    ck_assert_msg(info.value == v->value && info.overflows == v->overflows,
                  "line %d: info value 0x%" PRIx64 " overflows %" PRIu64
                  " want 0x%" PRIx64 " / %" PRIu64, v->line, info.value,
                  info.overflows, v->value, v->overflows);
    ck_assert_uint_eq(info.pmis, 0);        /* no INT / PMI bit */
    ck_assert_uint_eq(stats_of(&c).overflows, v->overflows);
    r = vpmu_pmu_rdmsr(c.pmu, GLOBAL_STATUS, &got);
    if (v->version == 1) {
        ck_assert_int_eq(r, -EINVAL);
    } else {
        ck_assert_msg(r == 0 && got == v->status, "line %d: status 0x%" PRIx64
                      " want 0x%" PRIx64, v->line, got, v->status);
    }
    ck_assert_uint_eq(c.pmis, 0);
    core_fini(&c);
}
END_TEST

/*
 * Sample period = (-value) & mask, 0 -> mask + 1, seen by the recording
 * source on open (the counter is preset through A_PMC0 while off, then
 * EVTSEL0 is written once).
 */
typedef struct PeriodCase {
    int line;
    unsigned width;
    bool raw_events;
    uint64_t value;             /* A_PMC0 before enabling */
    uint64_t evtsel;
    uint64_t open_period;
    VpmuArchEvent event;
    uint64_t raw_config;
    /* a second source call, an update (none since vpmu_pmu_wrmsr() defers) */
    bool updated;
    uint64_t update_period;
    uint64_t value_after;       /* PMC0 after the WRMSR */
    uint64_t overflows;
} PeriodCase;

static const PeriodCase period_cases[] = {
    { SRC_LINE, 48, false, 0xFFFFFFFFFFF6, EOU | CYC, 10,
      VPMU_EVENT_CYCLES, CYC, false, 0, 0xFFFFFFFFFFF6, 0 },
    { SRC_LINE, 48, false, 0, EOU | CYC, P48, VPMU_EVENT_CYCLES, CYC,
      false, 0, 0, 0 },
    { SRC_LINE, 48, false, 1, EOU | CYC, M48, VPMU_EVENT_CYCLES, CYC,
      false, 0, 1, 0 },
    { SRC_LINE, 48, false, 1ull << 47, EOU | CYC, 1ull << 47,
      VPMU_EVENT_CYCLES, CYC, false, 0, 1ull << 47, 0 },
    { SRC_LINE, 48, false, M48, EOU | REF, 1, VPMU_EVENT_REF_CYCLES, REF,
      false, 0, M48, 0 },
    { SRC_LINE, 40, false, M40, EOU | CYC, 1, VPMU_EVENT_CYCLES, CYC,
      false, 0, M40, 0 },
    { SRC_LINE, 40, false, 0, EOU | CYC, P40, VPMU_EVENT_CYCLES, CYC,
      false, 0, 0, 0 },
    { SRC_LINE, 40, false, 0x10, EOU | CYC, P40 - 0x10, VPMU_EVENT_CYCLES,
      CYC, false, 0, 0x10, 0 },
    { SRC_LINE, 32, false, 0xFFFFFFF6, EOU | CYC, 10, VPMU_EVENT_CYCLES, CYC,
      false, 0, 0xFFFFFFF6, 0 },
    { SRC_LINE, 32, false, 0, EOU | CYC, P32, VPMU_EVENT_CYCLES, CYC,
      false, 0, 0, 0 },
    { SRC_LINE, 32, false, 0x80000000, EOU | CYC, 0x80000000,
      VPMU_EVENT_CYCLES, CYC, false, 0, 0x80000000, 0 },
    /* raw: the source gets event/umask only (no EN/USR/OS/INT) */
    { SRC_LINE, 48, true, 0, EOU | INT | RAW_EV, P48, VPMU_EVENT_RAW, RAW_EV,
      false, 0, 0, 0 },
    /*
     * Instructions at OS: the enabling WRMSR counts (value ...F7) before
     * the source is programmed (vpmu_pmu_wrmsr() defers it to its end):
     * opened once, with 9 to go, no update.
     */
    { SRC_LINE, 48, false, 0xFFFFFFFFFFF6, EN | OS | INSTR, 9,
      VPMU_EVENT_INSTRUCTIONS, INSTR, false, 0, 0xFFFFFFFFFFF7, 0 },
    /* One to go: the WRMSR itself wraps the counter; period 2^48. */
    { SRC_LINE, 48, false, M48, EN | OS | INSTR, P48,
      VPMU_EVENT_INSTRUCTIONS, INSTR, false, 0, 0, 1 },
    /* Same at 32 bits. */
    { SRC_LINE, 32, false, M32, EN | OS | USR | INSTR, P32,
      VPMU_EVENT_INSTRUCTIONS, INSTR, false, 0, 0, 1 },
};

START_TEST(test_sample_period)
{
    const PeriodCase *p = &period_cases[_i];
    const VpmuSourceAttr *a;
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, p->width, 0);
    cfg.raw_events = p->raw_events;
    core_init(&c, &cfg, &rec_ops);
    ck_assert_uint_eq(c.rec.nlog, 0);           /* nothing opened at reset */
    wr(&c, A_PMC(0), p->value);
    ck_assert_uint_eq(c.rec.nlog, 0);           /* still off */
    wr(&c, EVTSEL(0), p->evtsel);

    ck_assert_msg(c.rec.nlog == (p->updated ? 2u : 1u),
                  "line %d: %zu open/update calls", p->line, c.rec.nlog);
    a = &c.rec.log[0];
    ck_assert_msg(c.rec.kind[0] == 'o', "line %d: first call not open", p->line);
    ck_assert_msg(a->sample_period == p->open_period,
                  "line %d: open period 0x%" PRIx64 " want 0x%" PRIx64,
                  p->line, a->sample_period, p->open_period);
    ck_assert_msg(a->event == p->event && a->raw_config == p->raw_config,
                  "line %d: event %d raw 0x%" PRIx64, p->line, (int)a->event,
                  a->raw_config);
    ck_assert_msg(a->count_kernel == !!(p->evtsel & OS) &&
                  a->count_user == !!(p->evtsel & USR),
                  "line %d: USR/OS", p->line);
    ck_assert_uint_eq(a->counter_id, GPC(0));
    ck_assert_ptr_nonnull(a->overflow);
    if (p->updated) {
        ck_assert_msg(c.rec.kind[1] == 'u', "line %d: second call not update",
                      p->line);
        ck_assert_msg(c.rec.log[1].sample_period == p->update_period,
                      "line %d: update period 0x%" PRIx64 " want 0x%" PRIx64,
                      p->line, c.rec.log[1].sample_period, p->update_period);
    }
    ck_assert_uint_eq(c.rec.opens, 1);
    ck_assert_uint_eq(c.rec.enables, 1);
    ck_assert_msg(rec_last(&c.rec)->enabled, "line %d: not enabled", p->line);
    info_of(&c, GPC(0), &info);
    ck_assert_msg(info.value == p->value_after &&
                  info.overflows == p->overflows,
                  "line %d: value 0x%" PRIx64 " overflows %" PRIu64, p->line,
                  info.value, info.overflows);
    core_fini(&c);
}
END_TEST

/*
 * The period follows the value while counting: a write of the counter, an
 * overflow, and the source's count all move it; the callback is the
 * source telling the core that the period elapsed.
 */
START_TEST(test_period_tracks_value)
{
    VpmuConfig cfg;
    CorePmu c;
    RecHandle *h;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, &rec_ops);
    wr(&c, EVTSEL(0), EOU | INT | CYC);
    ck_assert_uint_eq(c.rec.log[0].sample_period, P48);
    h = rec_last(&c.rec);

    /* write while counting: same handle, new period (-value) & mask */
    wr(&c, A_PMC(0), 0xFFFFFFFFFFF6);
    ck_assert_uint_eq(c.rec.nlog, 2);
    ck_assert_int_eq(c.rec.kind[1], 'u');
    ck_assert_uint_eq(c.rec.log[1].sample_period, 10);
    ck_assert_ptr_eq(rec_last(&c.rec), h);

    /* the source counted 4: no callback, the value moves, the period not */
    h->count = 4;
    ck_assert_uint_eq(rd(&c, PMC(0)), 0xFFFFFFFFFFFA);
    ck_assert_uint_eq(c.rec.nlog, 2);

    /* 6 more complete the period: the callback folds, overflows, PMIs */
    h->count = 10;
    c.pmi_msr = A_PMC(0);
    rec_fire(&c.rec);
    ck_assert_uint_eq(c.pmis, 1);
    ck_assert_uint_eq(c.pmi_value, 0);          /* the PMI sees it wrapped */
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 1);
    ck_assert_uint_eq(c.rec.nlog, 3);
    ck_assert_int_eq(c.rec.kind[2], 'u');
    ck_assert_uint_eq(c.rec.log[2].sample_period, P48);

    /* later counts continue from the new source baseline */
    h->count = 10 + 0x123;
    ck_assert_uint_eq(rd(&c, PMC(0)), 0x123);
    ck_assert_uint_eq(c.rec.opens, 1);
    ck_assert_uint_eq(c.rec.closes, 0);
    core_fini(&c);
    ck_assert_uint_eq(c.rec.closes, 1);
}
END_TEST

/*
 * Events counted before a write belong to the old value: a write of the
 * counter folds first, so a wrap the source has not called back yet is
 * still an overflow (and a PMI), and the written value then stands.
 */
START_TEST(test_fold_before_write)
{
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, &rec_ops);
    wr(&c, A_PMC(0), M48 - 2);
    wr(&c, EVTSEL(0), EOU | INT | CYC);
    ck_assert_uint_eq(c.rec.log[0].sample_period, 3);
    rec_last(&c.rec)->count = 5;                /* wrapped, no callback yet */
    wr(&c, A_PMC(0), 0x100);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.value, 0x100);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(c.pmis, 1);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 1);
    ck_assert_uint_eq(c.rec.log[c.rec.nlog - 1].sample_period, P48 - 0x100);
    /* the late callback finds nothing new to fold: no second overflow */
    rec_fire(&c.rec);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.value, 0x100);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(c.pmis, 1);
    /* same for an EVTSEL write that stops the counter */
    rec_last(&c.rec)->count += 7;
    wr(&c, EVTSEL(0), OS | USR | INT | CYC);
    ck_assert_uint_eq(rd(&c, PMC(0)), 0x107);
    rec_last(&c.rec)->count += 9;               /* disabled: not folded */
    ck_assert_uint_eq(rd(&c, PMC(0)), 0x107);
    core_fini(&c);
}
END_TEST

/* ========================================================================= */
/* Handle reuse                                                              */
/* ========================================================================= */

/*
 * Rewriting EVTSEL with the same event keeps the handle (Linux rewrites it
 * on every multiplexing rotation): only the period may be updated.  A new
 * event, unit mask or USR/OS closes it and opens another.  Counter 0; the
 * fake source's call counts and the PMU's source_opens/source_reuses are
 * cumulative.
 */
static const Step reuse_steps[] = {
    W(EVTSEL(0), EOU | CYC),
    FAKE(OPEN, 1), FAKE(ENABLE, 1), FAKE(UPDATE, 0), CLOSES(0), HANDLES(1),
    STAT(source_opens, 1), STAT(source_reuses, 0),
    /* INT is no part of the event: same handle, same period (2^48) */
    W(EVTSEL(0), EOU | INT | CYC),
    FAKE(OPEN, 1), FAKE(UPDATE, 0), STAT(source_opens, 1), STAT(source_reuses, 1),
    /* the very same value again */
    W(EVTSEL(0), EOU | INT | CYC),
    FAKE(OPEN, 1), FAKE(UPDATE, 0), STAT(source_reuses, 2),
    W(EVTSEL(0), EOU | CYC),
    FAKE(OPEN, 1), FAKE(UPDATE, 0), STAT(source_reuses, 3),
    /* 5 cycles: the period to overflow is now 2^48 - 5, an update */
    RUN(CYCLES, 0, 5),
    W(EVTSEL(0), EOU | INT | CYC),
    FAKE(OPEN, 1), FAKE(UPDATE, 1), STAT(source_reuses, 4), R(PMC(0), 5),
    /* Linux rotation: clear EN, write -0x100 (legacy, sign-extended), set EN */
    W(EVTSEL(0), OS | USR | INT | CYC),
    FAKE(DISABLE, 1), FAKE(OPEN, 1), CLOSES(0), STATE(GPC(0), OFF),
    W(PMC(0), 0xFFFFFF00),
    R(PMC(0), 0xFFFFFFFFFF00), FAKE(UPDATE, 1),     /* off: no source call */
    W(EVTSEL(0), EOU | INT | CYC),
    FAKE(OPEN, 1), CLOSES(0), FAKE(UPDATE, 2), FAKE(ENABLE, 2),
    STAT(source_opens, 1), STAT(source_reuses, 5), STATE(GPC(0), COUNTING),
    /* the overflow callback reprograms the period (2^48): one more reuse */
    RUN(CYCLES, 0, 0xFF), PMIS(0),
    RUN(CYCLES, 0, 1), PMIS(1), R(PMC(0), 0),
    FAKE(OPEN, 1), FAKE(UPDATE, 3), STAT(source_reuses, 6),
    /* a new event: close + open, and the new handle is enabled */
    W(EVTSEL(0), EOU | INT | REF),
    FAKE(OPEN, 2), CLOSES(1), FAKE(ENABLE, 3), HANDLES(1),
    STAT(source_opens, 2), STAT(source_reuses, 6),
    RUN(REF_CYCLES, 0, 3), R(PMC(0), 3),           /* the value carries over */
    /* OS dropped */
    W(EVTSEL(0), EN | USR | INT | REF),
    FAKE(OPEN, 3), CLOSES(2), FAKE(ENABLE, 4), STAT(source_opens, 3),
    RUN(REF_CYCLES, 0, 100), RUN(REF_CYCLES, 3, 4), R(PMC(0), 7),
    /* USR swapped for OS */
    W(EVTSEL(0), EN | OS | INT | REF),
    FAKE(OPEN, 4), CLOSES(3), FAKE(ENABLE, 5), STAT(source_opens, 4),
    /* USR added to OS */
    W(EVTSEL(0), EN | OS | USR | INT | REF),
    FAKE(OPEN, 5), CLOSES(4), FAKE(ENABLE, 6), STAT(source_opens, 5),
    /* unit mask 0x01 -> 0x00 (ref cycles -> cycles) */
    W(EVTSEL(0), EN | OS | USR | INT | CYC),
    FAKE(OPEN, 6), CLOSES(5), FAKE(ENABLE, 7), STAT(source_opens, 6),
    /* the same event again after all that: reuse */
    W(EVTSEL(0), EN | OS | USR | CYC),
    FAKE(OPEN, 6), CLOSES(5), STAT(source_reuses, 6 + 1),
    HANDLES(1), FAKE(DISABLE, 1), STAT(source_errors, 0), R(PMC(0), 7),
};

START_TEST(test_reuse)
{
    RUN_V2_SCRIPT(reuse_steps);
}
END_TEST

/*
 * A period change on a source with update: one update.  Without update
 * (ops.update == NULL): close + open with the new period.  A rewrite with
 * the same period needs neither.  Counter 0, recording source.
 */
typedef struct NoUpdateCase {
    int line;
    const VpmuSourceOps *ops;
    char kind;                  /* how a period change reaches the source */
    /* after: enable, same-value rewrite, counter write, overflow */
    unsigned opens, closes, updates, enables;
    uint64_t source_opens, source_reuses;
} NoUpdateCase;

static const NoUpdateCase noupdate_cases[] = {
    /* update: 1 open; the write and the overflow are updates (reuses) */
    { SRC_LINE, &rec_ops, 'u', 1, 0, 2, 1, 1, 3 },
    /* no update: the write and the overflow reopen (and re-enable) */
    { SRC_LINE, &rec_ops_noupdate, 'o', 3, 2, 0, 3, 3, 1 },
    /* update tried, -EOPNOTSUPP: reopened as without update, no error */
    { SRC_LINE, &rec_ops_declines, 'o', 3, 2, 2, 3, 3, 1 },
};

START_TEST(test_no_update)
{
    const NoUpdateCase *u = &noupdate_cases[_i];
    VpmuConfig cfg;
    VpmuStats st;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, u->ops);
    wr(&c, EVTSEL(0), EOU | CYC);
    ck_assert_uint_eq(c.rec.opens, 1);
    /* same event, same period: served without any source call */
    wr(&c, EVTSEL(0), EOU | INT | CYC);
    ck_assert_uint_eq(c.rec.opens, 1);
    ck_assert_uint_eq(c.rec.updates, 0);
    ck_assert_uint_eq(c.rec.nlog, 1);

    /* period 2^48 -> 10 */
    wr(&c, A_PMC(0), 0xFFFFFFFFFFF6);
    ck_assert_uint_eq(c.rec.nlog, 2);
    ck_assert_uint_eq(c.rec.log[1].sample_period, 10);
    ck_assert_int_eq(c.rec.kind[1], u->kind);
    ck_assert_msg(rec_last(&c.rec)->enabled, "line %d: not enabled", u->line);

    /* the period elapses: value 0, one PMI, period back to 2^48 */
    rec_last(&c.rec)->count = 10;
    rec_fire(&c.rec);
    ck_assert_uint_eq(c.pmis, 1);
    ck_assert_uint_eq(c.rec.nlog, 3);
    ck_assert_uint_eq(c.rec.log[2].sample_period, P48);
    ck_assert_int_eq(c.rec.kind[2], u->kind);
    /* a reopened handle starts at 0: the baseline must follow it */
    rec_last(&c.rec)->count += 5;
    ck_assert_uint_eq(rd(&c, PMC(0)), 5);

    ck_assert_msg(c.rec.opens == u->opens && c.rec.closes == u->closes &&
                  c.rec.updates == u->updates && c.rec.enables == u->enables,
                  "line %d: opens %u closes %u updates %u enables %u", u->line,
                  c.rec.opens, c.rec.closes, c.rec.updates, c.rec.enables);
    ck_assert_uint_eq(c.rec.open_handles, 1);
    vpmu_pmu_stats(c.pmu, &st);
    ck_assert_msg(st.source_opens == u->source_opens &&
                  st.source_reuses == u->source_reuses,
                  "line %d: source_opens %" PRIu64 " reuses %" PRIu64, u->line,
                  st.source_opens, st.source_reuses);
    ck_assert_uint_eq(st.source_errors, 0);
    ck_assert_uint_eq(c.logs, 0);
    core_fini(&c);
}
END_TEST

/* ========================================================================= */
/* Overflow timing                                                           */
/* ========================================================================= */

/*
 * The fake source calls back at the exact event that completes the period,
 * so the PMI comes with the event that wraps: n - 1 events, no PMI; one
 * more, a PMI that already reads 0.  Then a long run wraps several times.
 */
typedef struct OvfCase {
    int line;
    unsigned width;             /* of the counter under test */
    uint32_t id, ctr_msr;
    uint64_t preset;            /* written to ctr_msr */
    uint32_t ctl_msr;
    uint64_t ctl;
    uint64_t gctrl;             /* 0: leave the reset value */
    VpmuArchEvent event;
    uint64_t to_wrap;           /* events from preset to the wrap */
    uint64_t status_bit;
} OvfCase;

static const OvfCase ovf_cases[] = {
    { SRC_LINE, 48, GPC(0), A_PMC(0), P48 - 100, EVTSEL(0), EOU | INT | CYC,
      0, VPMU_EVENT_CYCLES, 100, 1ull << 0 },
    { SRC_LINE, 32, GPC(2), PMC(2), (uint64_t)-7, EVTSEL(2), EOU | INT | CYC,
      0, VPMU_EVENT_CYCLES, 7, 1ull << 2 },
    { SRC_LINE, 40, GPC(7), A_PMC(7), 0, EVTSEL(7), EOU | INT | LLC_REF,
      0, VPMU_EVENT_LLC_REFERENCES, P40, 1ull << 7 },
    { SRC_LINE, 48, GPC(1), A_PMC(1), M48, EVTSEL(1), EOU | INT | BR,
      0, VPMU_EVENT_BRANCHES, 1, 1ull << 1 },
    /* fixed counter 1, nibble OS|USR|PMI = 0xB */
    { SRC_LINE, 48, FIXED(1), FIXED_CTR(1), P48 - 3, FIXED_CTR_CTRL, 0xB0,
      GP_BITS | FIXED_BIT(1), VPMU_EVENT_CYCLES, 3, FIXED_BIT(1) },
    { SRC_LINE, 32, FIXED(2), FIXED_CTR(2), P32 - 0x1000, FIXED_CTR_CTRL,
      0xB00, GP_BITS | FIXED_BIT(2), VPMU_EVENT_REF_CYCLES, 0x1000,
      FIXED_BIT(2) },
};

START_TEST(test_overflow_timing)
{
    const OvfCase *o = &ovf_cases[_i];
    uint64_t period = 1ull << o->width;
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, o->id & VPMU_COUNTER_FIXED ? 48 : o->width,
           o->id & VPMU_COUNTER_FIXED ? o->width : 48);
    core_init(&c, &cfg, NULL);
    wr(&c, o->ctr_msr, o->preset);
    wr(&c, o->ctl_msr, o->ctl);
    if (o->gctrl) {
        wr(&c, GLOBAL_CTRL, o->gctrl);
    }
    c.pmi_msr = o->ctr_msr;
    c.pmi_value = ~0ull;

    if (o->to_wrap > 1) {
        vpmu_fake_source_run(c.fake, o->event, 0, 0, o->to_wrap - 1);
    }
    ck_assert_msg(c.pmis == 0, "line %d: PMI before the wrap", o->line);
    ck_assert_uint_eq(rd(&c, o->ctr_msr), period - 1);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 0);

    vpmu_fake_source_run(c.fake, o->event, 0, 0, 1);
    ck_assert_msg(c.pmis == 1, "line %d: %u PMIs at the wrap", o->line, c.pmis);
    ck_assert_msg(c.pmi_value == 0, "line %d: PMI handler read 0x%" PRIx64,
                  o->line, c.pmi_value);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), o->status_bit);
    info_of(&c, o->id, &info);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(info.pmis, 1);

    /* 3 full periods and 5: three more wraps, each a PMI, value 5 */
    vpmu_fake_source_run(c.fake, o->event, 0, 0, 3 * period + 5);
    ck_assert_uint_eq(c.pmis, 4);
    info_of(&c, o->id, &info);
    ck_assert_msg(info.value == 5 && info.overflows == 4 && info.pmis == 4,
                  "line %d: value 0x%" PRIx64 " overflows %" PRIu64 " pmis %"
                  PRIu64, o->line, info.value, info.overflows, info.pmis);
    ck_assert_uint_eq(stats_of(&c).overflows, 4);
    ck_assert_uint_eq(stats_of(&c).pmis, 4);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), o->status_bit);
    core_fini(&c);
}
END_TEST

/* Without INT: the overflow is counted and flagged, no PMI is requested. */
START_TEST(test_overflow_no_int)
{
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 32, 0);
    core_init(&c, &cfg, NULL);
    wr(&c, PMC(0), (uint64_t)-2);
    wr(&c, EVTSEL(0), EOU | CYC);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, 3, 2 + 2 * P32);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.value, 0);
    ck_assert_uint_eq(info.overflows, 3);
    ck_assert_uint_eq(info.pmis, 0);
    ck_assert_uint_eq(c.pmis, 0);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 1);
    core_fini(&c);
}
END_TEST

/*
 * Several wraps inside one fold count as one overflow (counter.c
 * counter_advance: "several count once"): the recording source jumps its
 * count by more than 2^width without calling back, then the PMU folds.
 */
typedef struct JumpCase {
    int line;
    unsigned width;
    uint64_t preset;
    uint64_t jump;              /* the source's count at the fold */
    uint64_t value;
    uint64_t overflows;
} JumpCase;

static const JumpCase jump_cases[] = {
    { SRC_LINE, 32, 0, 3 * P32 + 5, 5, 1 },
    { SRC_LINE, 32, 0, P32, 0, 1 },
    { SRC_LINE, 32, 0, M32, M32, 0 },
    { SRC_LINE, 32, 0xFFFFFFF0, 0x10, 0, 1 },
    { SRC_LINE, 32, 0xFFFFFFF0, 0xF, M32, 0 },
    { SRC_LINE, 32, 0xFFFFFFF0, 0x10 + 7 * P32, 0, 1 },
    { SRC_LINE, 40, 1, 3 * P40 - 1, 0, 1 },
    { SRC_LINE, 40, 0x100, 17 * P40 + 0x10, 0x110, 1 },
    { SRC_LINE, 48, 1ull << 47, 5 * P48, 1ull << 47, 1 },
    { SRC_LINE, 48, 1ull << 47, (1ull << 47) - 1, M48, 0 },
    { SRC_LINE, 48, 0, 1000 * P48 + 999, 999, 1 },
};

START_TEST(test_multi_wrap_one_fold)
{
    const JumpCase *j = &jump_cases[_i];
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, j->width, 0);
    core_init(&c, &cfg, &rec_ops);
    wr(&c, A_PMC(0), j->preset);
    wr(&c, EVTSEL(0), EOU | INT | CYC);
    rec_last(&c.rec)->count = j->jump;
    vpmu_pmu_sync(c.pmu);
    info_of(&c, GPC(0), &info);
    ck_assert_msg(info.value == j->value && info.overflows == j->overflows &&
                  info.pmis == j->overflows && c.pmis == j->overflows,
                  "line %d: value 0x%" PRIx64 " overflows %" PRIu64 " pmis %"
                  PRIu64 " want 0x%" PRIx64 " / %" PRIu64, j->line, info.value,
                  info.overflows, info.pmis, j->value, j->overflows);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), j->overflows ? 1 : 0);
    /* a further small step adds, without another overflow */
    rec_last(&c.rec)->count += 3;
    ck_assert_uint_eq(rd(&c, PMC(0)), (j->value + 3) & ((1ull << j->width) - 1));
    info_of(&c, GPC(0), &info);
    ck_assert_msg(info.overflows == j->overflows +
                  (j->value + 3 > ((1ull << j->width) - 1)),
                  "line %d: overflows %" PRIu64, j->line, info.overflows);
    core_fini(&c);
}
END_TEST

/* ========================================================================= */
/* Enable rules                                                              */
/* ========================================================================= */

/*
 * Counter 0 on cycles; then 1 cycle at CPL 0, 10 at CPL 1, 100 at CPL 2
 * and 1000 at CPL 3: OS counts 111 (CPL 0-2), USR 1000, both 1111.
 */
typedef struct EnableCase {
    int line;
    unsigned version;
    uint64_t evtsel;
    bool set_gctrl;
    uint64_t gctrl;
    int gctrl_ret;
    uint64_t value;
    VpmuCounterState state;
} EnableCase;

static const EnableCase enable_cases[] = {
    { SRC_LINE, 2, EOU | CYC, false, 0, 0, 1111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 2, EOU | INT | CYC, false, 0, 0, 1111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 2, OS | USR | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, OS | USR | INT | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    /* EN without USR or OS counts nothing */
    { SRC_LINE, 2, EN | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, EN | INT | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, EN | OS | CYC, false, 0, 0, 111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 2, EN | USR | CYC, false, 0, 0, 1000, VPMU_COUNTER_COUNTING },
    /* IA32_PERF_GLOBAL_CTRL bit 0 */
    { SRC_LINE, 2, EOU | CYC, true, 0xFE, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, EOU | CYC, true, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, EOU | CYC, true, 0x700000000ull, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 2, EOU | CYC, true, 0x1, 0, 1111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 2, EN | OS | CYC, true, GP_BITS | FIXED_BIT(0), 0, 111,
      VPMU_COUNTER_COUNTING },
    /* reserved GLOBAL_CTRL bit: #GP, nothing changes */
    { SRC_LINE, 2, EOU | CYC, true, 1ull << 8, -EINVAL, 1111,
      VPMU_COUNTER_COUNTING },
    /* v1: no GLOBAL_CTRL; EN and USR/OS decide alone */
    { SRC_LINE, 1, EOU | CYC, false, 0, 0, 1111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 1, EN | USR | CYC, false, 0, 0, 1000, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 1, EN | OS | CYC, false, 0, 0, 111, VPMU_COUNTER_COUNTING },
    { SRC_LINE, 1, OS | USR | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 1, EN | CYC, false, 0, 0, 0, VPMU_COUNTER_OFF },
    { SRC_LINE, 1, EOU | CYC, true, 0, -EINVAL, 1111, VPMU_COUNTER_COUNTING },
};

START_TEST(test_enable_rules)
{
    const EnableCase *e = &enable_cases[_i];
    VpmuConfig cfg;
    CorePmu c;
    uint64_t got;
    int r;

    if (e->version == 1) {
        cfg_v1(&cfg, 48);
    } else {
        cfg_v2(&cfg, 48, 0);
    }
    core_init(&c, &cfg, NULL);
    wr(&c, EVTSEL(0), e->evtsel);
    if (e->set_gctrl) {
        r = vpmu_pmu_wrmsr(c.pmu, GLOBAL_CTRL, e->gctrl);
        ck_assert_msg(r == e->gctrl_ret, "line %d: GLOBAL_CTRL write %d",
                      e->line, r);
    }
    for (unsigned cpl = 0, n = 1; cpl < 4; cpl++, n *= 10) {
        vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, cpl, n);
    }
    got = rd(&c, PMC(0));
    ck_assert_msg(got == e->value, "line %d: counted %" PRIu64 " want %" PRIu64,
                  e->line, got, e->value);
    ck_assert_msg(state_of(&c, GPC(0)) == e->state, "line %d: state %d want %d",
                  e->line, (int)state_of(&c, GPC(0)), (int)e->state);
    core_fini(&c);
}
END_TEST

/* Turning a counter off and on through EN or GLOBAL_CTRL keeps its value. */
static const Step toggle_steps[] = {
    W(EVTSEL(0), EOU | CYC), RUN(CYCLES, 0, 5), R(PMC(0), 5),
    W(GLOBAL_CTRL, 0xFE), STATE(GPC(0), OFF),
    RUN(CYCLES, 0, 7), R(PMC(0), 5),
    W(GLOBAL_CTRL, 0xFF), STATE(GPC(0), COUNTING),
    RUN(CYCLES, 3, 3), R(PMC(0), 8),
    W(EVTSEL(0), OS | USR | CYC), STATE(GPC(0), OFF),
    RUN(CYCLES, 0, 4), R(PMC(0), 8),
    W(EVTSEL(0), EOU | CYC), RUN(CYCLES, 0, 2), R(PMC(0), 10),
    /* off again, then the counter is written while off */
    W(GLOBAL_CTRL, 0), W(PMC(0), 0x100), RUN(CYCLES, 0, 9), R(PMC(0), 0x100),
    W(GLOBAL_CTRL, 0xFF), RUN(CYCLES, 0, 1), R(PMC(0), 0x101),
    /* neither disabling path ever reopened */
    FAKE(OPEN, 1), CLOSES(0), FAKE(DISABLE, 3), FAKE(ENABLE, 4),
};

START_TEST(test_enable_toggle)
{
    RUN_V2_SCRIPT(toggle_steps);
}
END_TEST

/* ========================================================================= */
/* Emulated counts                                                           */
/* ========================================================================= */

/*
 * After the enabling write(s), retire at (cpl, branch): (0,n) (0,b) (3,n)
 * (3,b) (1,n) (2,b).  Instructions count all six at their USR/OS; branches
 * the three (b) ones; the enabling WRMSR counts on instructions at OS.
 */
typedef struct EmuCase {
    int line;
    bool fixed;
    unsigned idx;
    uint64_t ctl;               /* EVTSEL, or the FIXED_CTR_CTRL nibble */
    uint64_t value;
    VpmuCounterState state;
    uint64_t source_errors;
} EmuCase;

static const EmuCase emu_cases[] = {
    /* WRMSR + (0,n) (0,b) (1,n) (2,b) */
    { SRC_LINE, false, 0, EN | OS | INSTR, 5, VPMU_COUNTER_COUNTING, 0 },
    /* (3,n) (3,b); the CPL-0 WRMSR is not counted */
    { SRC_LINE, false, 1, EN | USR | INSTR, 2, VPMU_COUNTER_COUNTING, 0 },
    /* WRMSR + all six */
    { SRC_LINE, false, 2, EOU | INSTR, 7, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, false, 7, EOU | INT | INSTR, 7, VPMU_COUNTER_COUNTING, 0 },
    /* branches: (0,b) (3,b) (2,b); (2,b) is OS */
    { SRC_LINE, false, 0, EOU | BR, 3, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, false, 0, EN | OS | BR, 2, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, false, 0, EN | USR | BR, 1, VPMU_COUNTER_COUNTING, 0 },
    /* other events get nothing */
    { SRC_LINE, false, 0, EOU | CYC, 0, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, false, 0, EOU | LLC_REF, 0, VPMU_COUNTER_COUNTING, 0 },
    /* not plain: the fake source refuses (-EOPNOTSUPP), nothing counts */
    { SRC_LINE, false, 0, EOU | EDGE | INSTR, 0, VPMU_COUNTER_SOURCE_ERROR, 1 },
    { SRC_LINE, false, 0, EOU | INV | INSTR, 0, VPMU_COUNTER_SOURCE_ERROR, 1 },
    { SRC_LINE, false, 0, EOU | CMASK(1) | INSTR, 0,
      VPMU_COUNTER_SOURCE_ERROR, 1 },
    { SRC_LINE, false, 0, EOU | EDGE | BR, 0, VPMU_COUNTER_SOURCE_ERROR, 1 },
    /* not enabled */
    { SRC_LINE, false, 0, OS | USR | INSTR, 0, VPMU_COUNTER_OFF, 0 },
    { SRC_LINE, false, 0, EN | INSTR, 0, VPMU_COUNTER_OFF, 0 },
    /* fixed 0 (instructions): the GLOBAL_CTRL write enables and counts */
    { SRC_LINE, true, 0, 0x1, 5, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, true, 0, 0x2, 2, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, true, 0, 0xB, 7, VPMU_COUNTER_COUNTING, 0 },
    /* fixed 1 and 2 (cycles, ref cycles): nothing */
    { SRC_LINE, true, 1, 0x3, 0, VPMU_COUNTER_COUNTING, 0 },
    { SRC_LINE, true, 2, 0x3, 0, VPMU_COUNTER_COUNTING, 0 },
};

START_TEST(test_emulated)
{
    static const struct { unsigned cpl; bool branch; } retire[] = {
        { 0, false }, { 0, true }, { 3, false }, { 3, true }, { 1, false },
        { 2, true },
    };
    const EmuCase *e = &emu_cases[_i];
    uint32_t id = e->fixed ? FIXED(e->idx) : GPC(e->idx);
    VpmuConfig cfg;
    VpmuStats st;
    CorePmu c;
    uint64_t got;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    if (e->fixed) {
        wr(&c, FIXED_CTR_CTRL, e->ctl << (4 * e->idx));
        wr(&c, GLOBAL_CTRL, GP_BITS | FIXED_BIT(e->idx));
    } else {
        wr(&c, EVTSEL(e->idx), e->ctl);
    }
    for (size_t i = 0; i < ARRAY_SIZE(retire); i++) {
        vpmu_pmu_instruction_retired(c.pmu, retire[i].cpl, retire[i].branch);
    }
    got = rd(&c, e->fixed ? FIXED_CTR(e->idx) : PMC(e->idx));
    ck_assert_msg(got == e->value, "line %d: counted %" PRIu64 " want %" PRIu64,
                  e->line, got, e->value);
    ck_assert_msg(state_of(&c, id) == e->state, "line %d: state %d want %d",
                  e->line, (int)state_of(&c, id), (int)e->state);
    st = stats_of(&c);
    ck_assert_msg(st.emulated == e->value, "line %d: stats.emulated %" PRIu64,
                  e->line, st.emulated);
    ck_assert_msg(st.source_errors == e->source_errors,
                  "line %d: source_errors %" PRIu64, e->line, st.source_errors);
    /* emulated counts go to the shadow, not through the source */
    ck_assert_uint_eq(fake_of(&c).open_handles,
                      e->state == VPMU_COUNTER_COUNTING ? 1 : 0);
    core_fini(&c);
}
END_TEST

/*
 * vpmu_pmu_counter_add(): events the front end learned the source missed
 * (KVM's own retirements).  GP0, instructions, INT, 48 bits, at 2^48 - 40,
 * 2^48 - 39 after its enabling WRMSR: 30 from the source, then 15 added:
 * the fold comes first (2^48 - 9), the 15 wrap the counter at the 9th
 * (value 6), one overflow and one PMI; the source's next period counts
 * from 6 (2^48 - 6 to go).  A counter that is off, or not there, takes
 * nothing.
 */
START_TEST(test_counter_add)
{
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 48);
    core_init(&c, &cfg, NULL);
    wr(&c, A_PMC(0), P48 - 40);
    wr(&c, EVTSEL(0), EOU | INT | INSTR);      /* the WRMSR counts: -39 */
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 30);
    ck_assert_int_eq(vpmu_pmu_counter_add(c.pmu, GPC(0), 0), 0);
    ck_assert_uint_eq(c.pmis, 0);
    ck_assert_int_eq(vpmu_pmu_counter_add(c.pmu, GPC(0), 15), 0);
    ck_assert_uint_eq(c.pmis, 1);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.value, 6);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 1);
    ck_assert_uint_eq(stats_of(&c).emulated, 1 + 15);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, P48 - 7);
    ck_assert_uint_eq(c.pmis, 1);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1);
    ck_assert_uint_eq(c.pmis, 2);
    ck_assert_int_eq(vpmu_pmu_counter_add(c.pmu, GPC(1), 1), -EINVAL);
    ck_assert_int_eq(vpmu_pmu_counter_add(c.pmu, GPC(8), 1), -ENOENT);
    ck_assert_uint_eq(rd(&c, PMC(1)), 0);
    core_fini(&c);
}
END_TEST

/*
 * A counter whose PMI another party raises (vpmu_pmu_set_pmi_elsewhere(),
 * KVM's under sync=linux).  From -39 (the enabling WRMSR counted), 39
 * user instructions wrap it: the status says so at the next look, with
 * no opts.pmi; vpmu_pmu_pmi_delivered() counts the PMI the other party
 * raised.  Its source has a full wrap as its period, so rewriting the
 * counter (a PMI handler's preset) updates nothing.  Back to vpmu's own,
 * from -4 (the preset WRMSR counted): 4 more raise vpmu's PMI.
 */
START_TEST(test_pmi_elsewhere)
{
    VpmuCounterInfo info;
    VpmuFakeStats fs0;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 48);
    core_init(&c, &cfg, NULL);
    wr(&c, A_PMC(0), P48 - 40);
    wr(&c, EVTSEL(0), EOU | INT | INSTR);
    ck_assert_int_eq(vpmu_pmu_set_pmi_elsewhere(c.pmu, GPC(0), true), 0);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 39);
    ck_assert_uint_eq(c.pmis, 0);
    ck_assert_uint_eq(rd(&c, GLOBAL_STATUS), 1);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.value, 0);
    ck_assert_uint_eq(info.overflows, 1);
    ck_assert_uint_eq(info.pmis, 0);
    ck_assert_int_eq(vpmu_pmu_pmi_delivered(c.pmu, GPC(0)), 0);
    info_of(&c, GPC(0), &info);
    ck_assert_uint_eq(info.pmis, 1);
    ck_assert_uint_eq(stats_of(&c).pmis, 1);
    ck_assert_uint_eq(c.pmis, 0);
    fs0 = fake_of(&c);
    wr(&c, A_PMC(0), P48 - 5);
    ck_assert_uint_eq(fake_of(&c).calls[VPMU_FAKE_UPDATE],
                      fs0.calls[VPMU_FAKE_UPDATE]);
    ck_assert_uint_eq(fake_of(&c).calls[VPMU_FAKE_OPEN],
                      fs0.calls[VPMU_FAKE_OPEN]);
    ck_assert_int_eq(vpmu_pmu_set_pmi_elsewhere(c.pmu, GPC(0), false), 0);
    ck_assert_int_eq(vpmu_pmu_pmi_delivered(c.pmu, GPC(0)), -EINVAL);
    ck_assert_int_eq(vpmu_pmu_pmi_delivered(c.pmu, GPC(8)), -ENOENT);
    ck_assert_int_eq(vpmu_pmu_set_pmi_elsewhere(c.pmu, GPC(8), true),
                     -ENOENT);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 3);
    ck_assert_uint_eq(c.pmis, 0);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1);
    ck_assert_uint_eq(c.pmis, 1);
    core_fini(&c);
}
END_TEST

/*
 * The plain-event rule is the core's, not the source's: on the recording
 * source, which accepts EDGE/INV/CMASK, such counters count (state
 * COUNTING) but get no emulated instructions or branches.
 */
typedef struct PlainCase {
    int line;
    uint64_t evtsel;
    uint64_t emulated;          /* WRMSR (OS) + retire(0) + retire(3) */
} PlainCase;

static const PlainCase plain_cases[] = {
    { SRC_LINE, EOU | INSTR, 3 },
    { SRC_LINE, EOU | EDGE | INSTR, 0 },
    { SRC_LINE, EOU | INV | INSTR, 0 },
    { SRC_LINE, EOU | CMASK(1) | INSTR, 0 },
    { SRC_LINE, EOU | CMASK(0xFF) | INV | EDGE | INSTR, 0 },
    { SRC_LINE, EOU | BR, 2 },
    { SRC_LINE, EOU | EDGE | BR, 0 },
};

START_TEST(test_emulated_plain_only)
{
    const PlainCase *p = &plain_cases[_i];
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, &rec_ops);
    wr(&c, EVTSEL(0), p->evtsel);
    ck_assert_int_eq(state_of(&c, GPC(0)), VPMU_COUNTER_COUNTING);
    ck_assert_uint_eq(rec_last(&c.rec)->attr.raw_config,
                      p->evtsel & (0xFFull | 0xFF00ull | EDGE | INV | CMASK(0xFF)));
    vpmu_pmu_instruction_retired(c.pmu, 0, true);
    vpmu_pmu_instruction_retired(c.pmu, 3, true);
    ck_assert_msg(rd(&c, PMC(0)) == p->emulated &&
                  stats_of(&c).emulated == p->emulated,
                  "line %d: counted %" PRIu64 " emulated %" PRIu64 " want %"
                  PRIu64, p->line, rd(&c, PMC(0)), stats_of(&c).emulated,
                  p->emulated);
    core_fini(&c);
}
END_TEST

/*
 * vpmu_pmu_wrmsr() counts the WRMSR after the write: the enabling one
 * counts, the disabling one does not, faulting and non-PMU writes not at
 * all.  Emulated and source counts add up.
 */
static const Step wrmsr_steps[] = {
    W(EVTSEL(0), EN | OS | INSTR), R(PMC(0), 1),            /* enabling */
    W(EVTSEL(1), 0), R(PMC(0), 2),                          /* any PMU MSR */
    W(PMC(1), 5), R(PMC(0), 3),
    W(GLOBAL_CTRL, GP_BITS), R(PMC(0), 4),
    W_GP(EVTSEL(1), 1ull << 32), R(PMC(0), 4),              /* #GP */
    W_GP(GLOBAL_STATUS, 0), R(PMC(0), 4),                   /* read-only */
    W_NOENT(0x10, 0),                                       /* TSC */
    R(PMC(0), 4),
    RUN(INSTRUCTIONS, 0, 10), R(PMC(0), 14),
    RETIRE(0, false), R(PMC(0), 15),
    RUN(INSTRUCTIONS, 3, 10), RETIRE(3, true), R(PMC(0), 15), /* OS only */
    /* the WRMSR with the PMC value is counted after the write */
    W(PMC(0), 0x100), R(PMC(0), 0x101),
    /* disabling: not counted */
    W(EVTSEL(0), OS | INSTR), R(PMC(0), 0x101),
    W(EVTSEL(1), 0), RETIRE(0, false), R(PMC(0), 0x101),
    /* stats.emulated: 4 WRMSRs + RETIRE + the PMC write = 6 */
    STAT(emulated, 6), STAT(gp_faults, 2),
};

START_TEST(test_wrmsr_counted)
{
    RUN_V2_SCRIPT(wrmsr_steps);
}
END_TEST

/* ========================================================================= */
/* Source errors                                                             */
/* ========================================================================= */

/*
 * A failing source never stops the guest: the WRMSR/RDMSR returns 0, the
 * counter degrades, stats.source_errors counts every failure, the log
 * callback hears of the first one only, no handle leaks, and rewriting
 * EVTSEL0 brings the counter back.
 *
 * Counter 0 counts cycles with 5 folded when a case triggers its failure:
 *   OPEN:    EVTSEL0 <- another event (close, then the open fails)
 *   UPDATE:  A_PMC0 <- 0x1000 * round while counting (the update fails)
 *   ENABLE:  EN cleared, then set again (update + enable; enable fails)
 *   DISABLE: EN cleared (disable fails)
 *   READ:    3 more cycles, then RDMSR PMC0 (the fold's read fails)
 */
typedef struct ErrCase {
    int line;
    VpmuFakeOp op;
    int err;
    const char *what;           /* named in the log line */
    VpmuCounterState state;     /* after the failure */
} ErrCase;

static const ErrCase err_cases[] = {
    { SRC_LINE, VPMU_FAKE_OPEN, -EMFILE, "open", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_OPEN, -EACCES, "open", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_OPEN, -ENOENT, "open", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_OPEN, -EINVAL, "open", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_UPDATE, -EBUSY, "update", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_UPDATE, -EINVAL, "update", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_ENABLE, -EBUSY, "enable", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_ENABLE, -EACCES, "enable", VPMU_COUNTER_SOURCE_ERROR },
    /*
     * counter.c counter_stop(): a failed disable is a source error (the
     * handle is closed, so it cannot count on), then the counter takes the
     * state the guest asked for: OFF.
     */
    { SRC_LINE, VPMU_FAKE_DISABLE, -EINVAL, "disable", VPMU_COUNTER_OFF },
    { SRC_LINE, VPMU_FAKE_DISABLE, -EBUSY, "disable", VPMU_COUNTER_OFF },
    { SRC_LINE, VPMU_FAKE_READ, -EINVAL, "read", VPMU_COUNTER_SOURCE_ERROR },
    { SRC_LINE, VPMU_FAKE_READ, -ENOENT, "read", VPMU_COUNTER_SOURCE_ERROR },
};

/* Make counter 0 hit the armed failure; returns the value it then has. */
static uint64_t err_trigger(CorePmu *c, const ErrCase *e, unsigned round,
                            uint64_t value)
{
    uint64_t v = 0;

    switch (e->op) {
    case VPMU_FAKE_OPEN:
        vpmu_fake_source_fail(c->fake, e->op, e->err);
        wr(c, EVTSEL(0), EOU | REF);
        return value;
    case VPMU_FAKE_UPDATE:
        vpmu_fake_source_fail(c->fake, e->op, e->err);
        /* a new value each round, so that the period surely changes */
        wr(c, A_PMC(0), 0x1000 * round);
        return 0x1000 * round;
    case VPMU_FAKE_ENABLE:
        wr(c, EVTSEL(0), OS | USR | CYC);
        vpmu_fake_source_fail(c->fake, e->op, e->err);
        wr(c, EVTSEL(0), EOU | CYC);
        return value;
    case VPMU_FAKE_DISABLE:
        vpmu_fake_source_fail(c->fake, e->op, e->err);
        wr(c, EVTSEL(0), OS | USR | CYC);
        return value;
    case VPMU_FAKE_READ:
        /* these 3 are never folded: the read that would see them fails */
        vpmu_fake_source_run(c->fake, VPMU_EVENT_CYCLES, 0, 0, 3);
        vpmu_fake_source_fail(c->fake, e->op, e->err);
        ck_assert_int_eq(vpmu_pmu_rdmsr(c->pmu, PMC(0), &v), 0);
        ck_assert_uint_eq(v, value);
        return value;
    default:
        ck_abort_msg("bad op");
        return 0;
    }
}

START_TEST(test_source_errors)
{
    const ErrCase *e = &err_cases[_i];
    VpmuConfig cfg;
    VpmuFakeStats fs;
    VpmuStats st;
    CorePmu c;
    uint64_t value;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    wr(&c, EVTSEL(0), EOU | CYC);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, 0, 5);
    value = rd(&c, PMC(0));
    ck_assert_uint_eq(value, 5);

    for (unsigned round = 1; round <= 2; round++) {
        value = err_trigger(&c, e, round, value);
        ck_assert_msg(state_of(&c, GPC(0)) == e->state,
                      "line %d round %u: state %d want %d", e->line, round,
                      (int)state_of(&c, GPC(0)), (int)e->state);
        st = stats_of(&c);
        ck_assert_msg(st.source_errors == round,
                      "line %d round %u: source_errors %" PRIu64, e->line,
                      round, st.source_errors);
        /* rate limited: one line per PMU, however many errors */
        ck_assert_msg(c.logs == 1, "line %d round %u: %u log lines", e->line,
                      round, c.logs);
        if (round == 1) {
            ck_assert_msg(strstr(c.last_log, e->what) &&
                          strstr(c.last_log, strerror(-e->err)),
                          "line %d: log '%s' names neither '%s' nor '%s'",
                          e->line, c.last_log, e->what, strerror(-e->err));
        }
        fs = fake_of(&c);
        ck_assert_msg(fs.open_handles == 0, "line %d round %u: %u handles",
                      e->line, round, fs.open_handles);
        ck_assert_msg(fs.closes == st.source_opens,
                      "line %d: %" PRIu64 " closes for %" PRIu64 " opens",
                      e->line, fs.closes, st.source_opens);
        /* degraded: counts nothing, keeps its value */
        vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, 0, 10);
        vpmu_fake_source_run(c.fake, VPMU_EVENT_REF_CYCLES, 0, 0, 10);
        ck_assert_uint_eq(rd(&c, PMC(0)), value);

        /* a later EVTSEL rewrite recovers */
        wr(&c, EVTSEL(0), EOU | CYC);
        ck_assert_msg(state_of(&c, GPC(0)) == VPMU_COUNTER_COUNTING,
                      "line %d round %u: not recovered", e->line, round);
        ck_assert_uint_eq(fake_of(&c).open_handles, 1);
        vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, 0, 7);
        value += 7;
        ck_assert_uint_eq(rd(&c, PMC(0)), value);
    }
    st = stats_of(&c);
    ck_assert_uint_eq(st.source_errors, 2);
    ck_assert_uint_eq(st.gp_faults, 0);
    fs = fake_of(&c);
    ck_assert_uint_eq(fs.calls[e->op] >= 2, 1);
    ck_assert_uint_eq(fs.closes + fs.open_handles, st.source_opens);
    core_fini(&c);
}
END_TEST

/*
 * Failures the core meets on its own, with no guest write to reprogram the
 * counter: inside the source's overflow callback, and while adding an
 * emulated instruction.  Same contract (docs/architecture.md: "it stops
 * counting (SOURCE_ERROR)"): the counter is degraded until the guest
 * rewrites it; nothing is reopened behind the guest's back.
 *
 *   CALLBACK: A_PMC0 = 2^48 - 10, EVTSEL0 = EOU|INT|cycles, 10 cycles.
 *     UPDATE fails after the fold: the wrap is seen (value 0, one PMI).
 *     READ fails in the fold: the 10 are lost, no wrap, no PMI.
 *   EMULATED: EVTSEL0 = EN|OS|instructions (the WRMSR: 1), 4 instructions
 *     from the source, then vpmu_pmu_instruction_retired(0).
 *     UPDATE fails after fold + 1: 1 + 4 + 1 = 6.
 *     READ fails in the fold: the 4 are lost and the counter no longer
 *     counts, so the emulated instruction is not added either: 1.
 * Afterwards 10 more events of the kind count nothing.
 */
typedef struct InnerErrCase {
    int line;
    bool emulated;
    VpmuFakeOp op;
    int err;
    uint64_t value;
    unsigned pmis;
    uint64_t emulated_count;    /* stats.emulated */
} InnerErrCase;

static const InnerErrCase inner_err_cases[] = {
    { SRC_LINE, false, VPMU_FAKE_UPDATE, -EBUSY, 0, 1, 0 },
    { SRC_LINE, false, VPMU_FAKE_READ, -EIO, P48 - 10, 0, 0 },
    { SRC_LINE, true, VPMU_FAKE_UPDATE, -EINVAL, 6, 0, 2 },
    { SRC_LINE, true, VPMU_FAKE_READ, -EIO, 1, 0, 1 },
};

START_TEST(test_source_errors_inner)
{
    const InnerErrCase *e = &inner_err_cases[_i];
    VpmuArchEvent ev = e->emulated ? VPMU_EVENT_INSTRUCTIONS
                                   : VPMU_EVENT_CYCLES;
    VpmuCounterInfo info;
    VpmuConfig cfg;
    VpmuStats st;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    if (e->emulated) {
        wr(&c, EVTSEL(0), EN | OS | INSTR);
        vpmu_fake_source_run(c.fake, ev, 0, 0, 4);
        vpmu_fake_source_fail(c.fake, e->op, e->err);
        vpmu_pmu_instruction_retired(c.pmu, 0, false);
    } else {
        wr(&c, A_PMC(0), P48 - 10);
        wr(&c, EVTSEL(0), EOU | INT | CYC);
        vpmu_fake_source_fail(c.fake, e->op, e->err);
        vpmu_fake_source_run(c.fake, ev, 0, 0, 10);
    }
    st = stats_of(&c);
    ck_assert_msg(st.source_errors == 1, "line %d: source_errors %" PRIu64,
                  e->line, st.source_errors);
    info_of(&c, GPC(0), &info);
    ck_assert_msg(info.state == VPMU_COUNTER_SOURCE_ERROR,
                  "line %d: state %d, want SOURCE_ERROR", e->line,
                  (int)info.state);
    ck_assert_msg(fake_of(&c).open_handles == 0 && st.source_opens == 1,
                  "line %d: %u handles open, %" PRIu64 " opened", e->line,
                  fake_of(&c).open_handles, st.source_opens);
    ck_assert_msg(info.value == e->value && c.pmis == e->pmis &&
                  st.emulated == e->emulated_count,
                  "line %d: value 0x%" PRIx64 " pmis %u emulated %" PRIu64
                  " want 0x%" PRIx64 " / %u / %" PRIu64, e->line, info.value,
                  c.pmis, st.emulated, e->value, e->pmis, e->emulated_count);
    /* degraded: nothing more counts */
    vpmu_fake_source_run(c.fake, ev, 0, 0, 10);
    vpmu_pmu_instruction_retired(c.pmu, 0, false);
    info_of(&c, GPC(0), &info);
    ck_assert_msg(info.value == e->value && c.pmis == e->pmis,
                  "line %d: counted on after the error: 0x%" PRIx64 ", %u PMIs",
                  e->line, info.value, c.pmis);
    ck_assert_uint_eq(c.logs, 1);
    /* and the guest's rewrite brings it back */
    wr(&c, EVTSEL(0), EOU | INT | (e->emulated ? INSTR : CYC));
    ck_assert_int_eq(state_of(&c, GPC(0)), VPMU_COUNTER_COUNTING);
    core_fini(&c);
}
END_TEST

/* One log line per kind: a source error and a refusal log one each. */
static const Step log_kind_steps[] = {
    LOGS(0),
    W(EVTSEL(0), EOU | EDGE | REF), STATE(GPC(0), SOURCE_ERROR), LOGS(1),
    W(EVTSEL(1), EOU | INV | REF), STATE(GPC(1), SOURCE_ERROR), LOGS(1),
    STAT(source_errors, 2),
    /* cycles are unsupported in this config: another kind, another line */
    W(EVTSEL(2), EOU | REF), LOGS(1),
    W(EVTSEL(2), EOU | CYC), STATE(GPC(2), UNSUPPORTED), LOGS(2),
    W(EVTSEL(3), EOU | CYC), STATE(GPC(3), UNSUPPORTED), LOGS(2),
    STAT(unsupported, 2), HANDLES(1),
};

START_TEST(test_log_kinds)
{
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    cfg.events = VPMU_EVENTS_ALL & ~VPMU_EVENT_BIT(VPMU_EVENT_CYCLES);
    core_init(&c, &cfg, NULL);
    RUN_STEPS(&c, log_kind_steps);
    core_fini(&c);
}
END_TEST

/* No log callback: errors are still counted. */
START_TEST(test_no_log_callback)
{
    VpmuPmuOpts opts = { .source_ops = vpmu_fake_source_ops() };
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuPmu *pmu;
    VpmuStats st;

    cfg_v2(&cfg, 48, 0);
    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &opts, &pmu, NULL, 0), 0);
    vpmu_fake_source_fail(fake, VPMU_FAKE_OPEN, -EMFILE);
    ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, EVTSEL(0), EOU | CYC), 0);
    vpmu_pmu_stats(pmu, &st);
    ck_assert_uint_eq(st.source_errors, 1);
    vpmu_pmu_free(pmu);
    vpmu_fake_source_free(fake);
}
END_TEST

/* ========================================================================= */
/* Unsupported events                                                        */
/* ========================================================================= */

/*
 * An event outside cfg.events is UNSUPPORTED: no source, counts nothing,
 * stats.unsupported counts each request once (counter.c counter_refuse():
 * not again while the counter already is UNSUPPORTED; vpmu_counter_set_ctl():
 * a new EVTSEL value on a counter that is not counting is a new request;
 * turning it off and on again is one too).
 */
static const Step unsup_cycles_steps[] = {
    W(EVTSEL(0), EOU | CYC), STATE(GPC(0), UNSUPPORTED),
    STAT(unsupported, 1), FAKE(OPEN, 0), LOGS(1),
    RUN(CYCLES, 0, 10), R(PMC(0), 0),
    W(EVTSEL(0), EOU | CYC), STAT(unsupported, 1),          /* same request */
    W(PMC(0), 0x10), STAT(unsupported, 1), R(PMC(0), 0x10), /* no request */
    W(EVTSEL(0), EOU | INT | CYC), STAT(unsupported, 2),    /* new value */
    W(EVTSEL(0), EOU | INT | CYC), STAT(unsupported, 2),
    W(EVTSEL(0), OS | USR | INT | CYC), STATE(GPC(0), OFF), STAT(unsupported, 2),
    W(EVTSEL(0), EOU | INT | CYC), STATE(GPC(0), UNSUPPORTED),
    STAT(unsupported, 3),
    W(GLOBAL_CTRL, 0xFE), STATE(GPC(0), OFF), STAT(unsupported, 3),
    W(GLOBAL_CTRL, 0xFF), STATE(GPC(0), UNSUPPORTED), STAT(unsupported, 4),
    W(GLOBAL_CTRL, 0xFF), STAT(unsupported, 4),             /* no change */
    W(EVTSEL(1), EOU | CYC), STATE(GPC(1), UNSUPPORTED), STAT(unsupported, 5),
    /* supported events count as usual */
    W(EVTSEL(2), EOU | REF), STATE(GPC(2), COUNTING), FAKE(OPEN, 1),
    /* unsupported -> supported -> unsupported */
    W(EVTSEL(0), EOU | REF), STATE(GPC(0), COUNTING), FAKE(OPEN, 2),
    STAT(unsupported, 5),
    W(EVTSEL(0), EOU | CYC), STATE(GPC(0), UNSUPPORTED), STAT(unsupported, 6),
    FAKE(DISABLE, 1),
    RUN(CYCLES, 0, 3), RUN(REF_CYCLES, 0, 4), R(PMC(0), 0x10), R(PMC(2), 4),
    /* the refused counter's idle handle goes with release_idle */
    RELEASE(), HANDLES(1), CLOSES(1),
    LOGS(1), STAT(source_errors, 0), STAT(filtered, 0),
};

/* Fixed counter 0 counts instructions: unsupported without them. */
static const Step unsup_instr_steps[] = {
    W(FIXED_CTR_CTRL, 0x33),
    W(GLOBAL_CTRL, GP_BITS | FIXED_BIT(0) | FIXED_BIT(1)),
    STATE(FIXED(0), UNSUPPORTED), STATE(FIXED(1), COUNTING),
    STAT(unsupported, 1), FAKE(OPEN, 1),
    RETIRE(0, false), RUN(INSTRUCTIONS, 0, 5), R(FIXED_CTR(0), 0),
    RUN(CYCLES, 0, 5), R(FIXED_CTR(1), 5),
    W(EVTSEL(0), EOU | INSTR), STATE(GPC(0), UNSUPPORTED), STAT(unsupported, 2),
    RETIRE(3, false), R(PMC(0), 0), STAT(emulated, 0),
    W(FIXED_CTR_CTRL, 0x33), STAT(unsupported, 2),          /* same nibbles */
    W(FIXED_CTR_CTRL, 0x3B), STAT(unsupported, 3),          /* fixed 0: new */
    FAKE(OPEN, 1), LOGS(1),
};

typedef struct UnsupCase {
    int line;
    VpmuArchEvent missing;
    StepTable steps;
} UnsupCase;

static const UnsupCase unsup_cases[] = {
    { SRC_LINE, VPMU_EVENT_CYCLES, STEPS(unsup_cycles_steps) },
    { SRC_LINE, VPMU_EVENT_INSTRUCTIONS, STEPS(unsup_instr_steps) },
};

START_TEST(test_unsupported)
{
    const UnsupCase *u = &unsup_cases[_i];
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    cfg.events = VPMU_EVENTS_ALL & ~VPMU_EVENT_BIT(u->missing);
    core_init(&c, &cfg, NULL);
    core_steps(&c, u->steps.s, u->steps.n);
    core_fini(&c);
}
END_TEST

/* Non-architectural events reach the source only with cfg.raw_events. */
typedef struct RawCase {
    int line;
    bool raw_events;
    uint64_t evtsel;
    uint64_t run_raw;           /* the fake runs RAW events of this config */
    VpmuArchEvent event;        /* VpmuCounterInfo.event */
    VpmuCounterState state;
    uint64_t value;
    uint64_t unsupported, source_errors;
} RawCase;

static const RawCase raw_cases[] = {
    { SRC_LINE, false, EOU | RAW_EV, RAW_EV, VPMU_EVENT_RAW,
      VPMU_COUNTER_UNSUPPORTED, 0, 1, 0 },
    { SRC_LINE, true, EOU | RAW_EV, RAW_EV, VPMU_EVENT_RAW,
      VPMU_COUNTER_COUNTING, 9, 0, 0 },
    /* INT and EN are no part of raw_config */
    { SRC_LINE, true, EOU | INT | RAW_EV, RAW_EV, VPMU_EVENT_RAW,
      VPMU_COUNTER_COUNTING, 9, 0, 0 },
    /* the fake counts only RAW events of the handle's raw_config */
    { SRC_LINE, true, EOU | RAW_EV, RAW_EV + 1, VPMU_EVENT_RAW,
      VPMU_COUNTER_COUNTING, 0, 0, 0 },
    /* umask 1 of instructions is not instructions */
    { SRC_LINE, true, EOU | 0x01C0, 0x01C0, VPMU_EVENT_RAW,
      VPMU_COUNTER_COUNTING, 9, 0, 0 },
    { SRC_LINE, false, EOU | 0x01C0, 0x01C0, VPMU_EVENT_RAW,
      VPMU_COUNTER_UNSUPPORTED, 0, 1, 0 },
    /* EDGE: the fake refuses it; unsupported is decided first */
    { SRC_LINE, true, EOU | EDGE | RAW_EV, RAW_EV | EDGE, VPMU_EVENT_RAW,
      VPMU_COUNTER_SOURCE_ERROR, 0, 0, 1 },
    { SRC_LINE, false, EOU | EDGE | RAW_EV, RAW_EV | EDGE, VPMU_EVENT_RAW,
      VPMU_COUNTER_UNSUPPORTED, 0, 1, 0 },
    /* architectural events are not raw, with or without raw_events */
    { SRC_LINE, true, EOU | CYC, CYC, VPMU_EVENT_CYCLES,
      VPMU_COUNTER_COUNTING, 0, 0, 0 },
};

START_TEST(test_raw_events)
{
    const RawCase *r = &raw_cases[_i];
    VpmuCounterInfo info;
    VpmuConfig cfg;
    VpmuStats st;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    cfg.raw_events = r->raw_events;
    core_init(&c, &cfg, NULL);
    wr(&c, EVTSEL(3), r->evtsel);
    vpmu_fake_source_run(c.fake, VPMU_EVENT_RAW, r->run_raw, 0, 9);
    info_of(&c, GPC(3), &info);
    ck_assert_msg(info.state == r->state && info.value == r->value &&
                  info.event == r->event,
                  "line %d: state %d value %" PRIu64 " event %d", r->line,
                  (int)info.state, info.value, (int)info.event);
    st = stats_of(&c);
    ck_assert_msg(st.unsupported == r->unsupported &&
                  st.source_errors == r->source_errors,
                  "line %d: unsupported %" PRIu64 " source_errors %" PRIu64,
                  r->line, st.unsupported, st.source_errors);
    ck_assert_uint_eq(fake_of(&c).calls[VPMU_FAKE_OPEN],
                      r->state == VPMU_COUNTER_UNSUPPORTED ? 0 : 1);
    core_fini(&c);
}
END_TEST

/*
 * An event select rewritten in place: the core searches the event tables
 * only when the encoding (event, umask, EDGE/INV/CMASK) changes, so each
 * write here follows another on the same counter, and each must decode as
 * if written alone (expected events from the SDM's architectural table).
 */
typedef struct Rewrite {
    uint64_t evtsel;
    VpmuArchEvent event;
} Rewrite;

static const Rewrite rewrites[] = {
    { EOU | CYC, VPMU_EVENT_CYCLES },
    { EOU | INT | CYC, VPMU_EVENT_CYCLES },      /* INT: same encoding */
    { OS | CYC, VPMU_EVENT_CYCLES },            /* EN off */
    { EOU | INSTR, VPMU_EVENT_INSTRUCTIONS },
    { EOU | 0x01C0, VPMU_EVENT_RAW },           /* umask 1: not instructions */
    { EOU | INT | 0x01C0, VPMU_EVENT_RAW },
    { EOU | INSTR, VPMU_EVENT_INSTRUCTIONS },
    { EOU | EDGE | INSTR, VPMU_EVENT_INSTRUCTIONS },   /* modifiers */
    { EOU | RAW_EV, VPMU_EVENT_RAW },
    { EOU | CYC, VPMU_EVENT_CYCLES },
};

START_TEST(test_event_rewrite)
{
    VpmuCounterInfo info;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    cfg.raw_events = true;
    core_init(&c, &cfg, NULL);
    for (size_t k = 0; k < ARRAY_SIZE(rewrites); k++) {
        wr(&c, EVTSEL(1), rewrites[k].evtsel);
        info_of(&c, GPC(1), &info);
        ck_assert_msg(info.event == rewrites[k].event,
                      "write %zu (0x%" PRIx64 "): event %d, want %d", k,
                      rewrites[k].evtsel, (int)info.event,
                      (int)rewrites[k].event);
    }
    core_fini(&c);
}
END_TEST

/* ========================================================================= */
/* Event filter                                                              */
/* ========================================================================= */

/*
 * vpmu_pmu_set_filter(): DENY instructions (0xC0) and fixed counter 0.
 * The PMU keeps its own copy: the caller's filter is changed and freed
 * right after.  Denied counters get no source and count nothing; each
 * request is counted once; a NULL filter lets them count again.
 */
static const Step filter_before_steps[] = {
    /* counting instructions at OS: the enabling WRMSR counts, then 9 */
    W(EVTSEL(0), EN | OS | INSTR), RUN(INSTRUCTIONS, 0, 9), R(PMC(0), 10),
    FAKE(OPEN, 1), STAT(filtered, 0),
};

static const Step filter_on_steps[] = {
    /* set_filter judged the counting counter again: denied now */
    STATE(GPC(0), FILTERED), INFO(GPC(0), filtered, 1), STAT(filtered, 1),
    FAKE(DISABLE, 1), LOGS(1),
    RUN(INSTRUCTIONS, 0, 10), RETIRE(0, false), R(PMC(0), 10),
    /* the copy has no 0x3C entry (added to the caller's filter later) */
    W(EVTSEL(1), EN | OS | CYC), STATE(GPC(1), COUNTING), FAKE(OPEN, 2),
    /* a new request for a denied event: no source open */
    W(EVTSEL(2), EN | OS | INSTR), STATE(GPC(2), FILTERED), FAKE(OPEN, 2),
    INFO(GPC(2), filtered, 1), STAT(filtered, 2),
    W(EVTSEL(2), EN | OS | INSTR), INFO(GPC(2), filtered, 1),   /* same */
    STAT(filtered, 2),
    W(EVTSEL(2), EN | OS | INT | INSTR), INFO(GPC(2), filtered, 2), /* new */
    STAT(filtered, 3),
    /* the filter looks at event and unit mask only: EDGE is still 0xC0 */
    W(EVTSEL(3), EN | OS | EDGE | INSTR), STATE(GPC(3), FILTERED),
    STAT(filtered, 4), STAT(source_errors, 0),
    /* off and on again: a new request */
    W(EVTSEL(3), OS | EDGE | INSTR), STATE(GPC(3), OFF),
    W(EVTSEL(3), EN | OS | EDGE | INSTR), STAT(filtered, 5),
    INFO(GPC(3), filtered, 2),
    /* fixed 0 denied by the bitmap, fixed 1 allowed */
    W(FIXED_CTR_CTRL, 0x33),
    W(GLOBAL_CTRL, GP_BITS | FIXED_BIT(0) | FIXED_BIT(1)),
    STATE(FIXED(0), FILTERED), STATE(FIXED(1), COUNTING),
    INFO(FIXED(0), filtered, 1), STAT(filtered, 6), FAKE(OPEN, 3),
    RUN(CYCLES, 0, 5), RUN(INSTRUCTIONS, 0, 5), RETIRE(0, false),
    R(PMC(1), 5), R(FIXED_CTR(1), 5), R(FIXED_CTR(0), 0), R(PMC(0), 10),
    R(PMC(2), 0),
    LOGS(1), STAT(emulated, 1),
};

static const Step filter_off_steps[] = {
    STATE(GPC(0), COUNTING), STATE(GPC(2), COUNTING), STATE(FIXED(0), COUNTING),
    STATE(GPC(3), SOURCE_ERROR),        /* now the fake sees the EDGE */
    STAT(filtered, 6), STAT(source_errors, 1),
    /* counter 0 reuses its handle; 2 and fixed 0 open (3 tried: refused) */
    FAKE(OPEN, 6), CLOSES(0), HANDLES(5),
    RUN(INSTRUCTIONS, 0, 10),
    R(PMC(0), 20), R(PMC(2), 10), R(FIXED_CTR(0), 10), R(PMC(3), 0),
    /* per-counter tallies stay */
    INFO(GPC(0), filtered, 1), INFO(GPC(2), filtered, 2),
    INFO(FIXED(0), filtered, 1),
};

START_TEST(test_filter)
{
    VpmuFilter *f;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    RUN_STEPS(&c, filter_before_steps);

    ck_assert_int_eq(vpmu_filter_new(VPMU_FILTER_DENY, 0, &f), 0);
    ck_assert_int_eq(vpmu_filter_add(f, 0xC0), 0);
    vpmu_filter_set_fixed_bitmap(f, 0x1);
    ck_assert_int_eq(vpmu_pmu_set_filter(c.pmu, f), 0);
    /* the caller's filter is the caller's: change it, free it */
    ck_assert_int_eq(vpmu_filter_add(f, 0x3C), 0);
    vpmu_filter_set_fixed_bitmap(f, 0x3);
    vpmu_filter_free(f);
    RUN_STEPS(&c, filter_on_steps);

    ck_assert_int_eq(vpmu_pmu_set_filter(c.pmu, NULL), 0);
    RUN_STEPS(&c, filter_off_steps);
    core_fini(&c);
}
END_TEST

/* One counter, one filter: the verdict and what follows from it. */
typedef struct FilterCase {
    int line;
    VpmuFilterAction action;
    uint64_t entry;             /* plain entry; 0: none */
    uint32_t bitmap;
    bool fixed;
    unsigned idx;
    uint64_t event;             /* GP: event/umask; fixed: unused */
    VpmuArchEvent run;          /* what the fake then runs, at CPL 3 */
    VpmuCounterState state;
} FilterCase;

static const FilterCase filter_cases[] = {
    { SRC_LINE, VPMU_FILTER_DENY, 0xC0, 0, false, 0, INSTR,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_DENY, 0xC0, 0, false, 0, CYC,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_DENY, 0, 0, false, 0, INSTR,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_COUNTING },
    /* plain entries match the unit mask exactly */
    { SRC_LINE, VPMU_FILTER_DENY, 0x3C, 0, false, 4, REF,
      VPMU_EVENT_REF_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_DENY, 0x013C, 0, false, 4, REF,
      VPMU_EVENT_REF_CYCLES, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0x3C, 0, false, 1, CYC,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0x3C, 0, false, 1, INSTR,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0x3C, 0, false, 1, REF,
      VPMU_EVENT_REF_CYCLES, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0, 0, false, 7, CYC,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_FILTERED },
    /* fixed counters follow the bitmap only, never the entries */
    { SRC_LINE, VPMU_FILTER_DENY, 0, 0x1, true, 0, 0,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_DENY, 0, 0x1, true, 1, 0,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_DENY, 0x3C, 0, true, 1, 0,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0, 0x2, true, 1, 0,
      VPMU_EVENT_CYCLES, VPMU_COUNTER_COUNTING },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0, 0x2, true, 0, 0,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0xC0, 0, true, 0, 0,
      VPMU_EVENT_INSTRUCTIONS, VPMU_COUNTER_FILTERED },
    { SRC_LINE, VPMU_FILTER_ALLOW, 0, 0x4, true, 2, 0,
      VPMU_EVENT_REF_CYCLES, VPMU_COUNTER_COUNTING },
};

START_TEST(test_filter_verdict)
{
    const FilterCase *fc = &filter_cases[_i];
    bool filtered = fc->state == VPMU_COUNTER_FILTERED;
    uint32_t id = fc->fixed ? FIXED(fc->idx) : GPC(fc->idx);
    VpmuCounterInfo info;
    VpmuFilter *f;
    VpmuConfig cfg;
    VpmuStats st;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    ck_assert_int_eq(vpmu_filter_new(fc->action, 0, &f), 0);
    if (fc->entry) {
        ck_assert_int_eq(vpmu_filter_add(f, fc->entry), 0);
    }
    vpmu_filter_set_fixed_bitmap(f, fc->bitmap);
    ck_assert_int_eq(vpmu_pmu_set_filter(c.pmu, f), 0);
    vpmu_filter_free(f);
    /* USR only, events at CPL 3: the CPL-0 WRMSRs count nowhere */
    if (fc->fixed) {
        wr(&c, FIXED_CTR_CTRL, 0x2ull << (4 * fc->idx));
        wr(&c, GLOBAL_CTRL, GP_BITS | FIXED_BIT(fc->idx));
    } else {
        wr(&c, EVTSEL(fc->idx), EN | USR | fc->event);
    }
    vpmu_fake_source_run(c.fake, fc->run, 0, 3, 6);
    info_of(&c, id, &info);
    ck_assert_msg(info.state == fc->state, "line %d: state %d want %d",
                  fc->line, (int)info.state, (int)fc->state);
    ck_assert_msg(info.value == (filtered ? 0u : 6u), "line %d: value %" PRIu64,
                  fc->line, info.value);
    ck_assert_uint_eq(info.filtered, filtered);
    st = stats_of(&c);
    ck_assert_uint_eq(st.filtered, filtered);
    ck_assert_uint_eq(fake_of(&c).calls[VPMU_FAKE_OPEN], !filtered);
    ck_assert_uint_eq(c.logs, filtered);
    core_fini(&c);
}
END_TEST

/* ========================================================================= */
/* Handle lifecycle                                                          */
/* ========================================================================= */

/*
 * vpmu_pmu_release_idle() closes the handles of counters that are not
 * counting (here: EN cleared, GLOBAL_CTRL bit cleared) and keeps the
 * counting ones; values survive, and re-enabling opens a fresh handle.
 */
static const Step release_steps[] = {
    W(EVTSEL(0), EOU | CYC), W(EVTSEL(1), EOU | REF), W(EVTSEL(2), EOU | LLC_REF),
    HANDLES(3),
    RUN(CYCLES, 0, 5), RUN(REF_CYCLES, 0, 7), RUN(LLC_REFERENCES, 0, 9),
    W(EVTSEL(1), OS | USR | REF), W(GLOBAL_CTRL, 0xFB),
    STATE(GPC(1), OFF), STATE(GPC(2), OFF), HANDLES(3), CLOSES(0),
    RELEASE(),
    HANDLES(1), CLOSES(2), STATE(GPC(0), COUNTING),
    R(PMC(1), 7), R(PMC(2), 9),
    RUN(CYCLES, 0, 5), R(PMC(0), 10),
    RELEASE(), HANDLES(1), CLOSES(2),                   /* nothing more idle */
    R(PMC(0), 10),
    /* re-enabled: new handles, counting on from the kept values */
    W(EVTSEL(1), EOU | REF), STATE(GPC(1), COUNTING), FAKE(OPEN, 4),
    RUN(REF_CYCLES, 0, 3), R(PMC(1), 10),
    W(GLOBAL_CTRL, 0xFF), STATE(GPC(2), COUNTING), FAKE(OPEN, 5),
    RUN(LLC_REFERENCES, 0, 1), R(PMC(2), 10),
    HANDLES(3), STAT(source_opens, 5), STAT(source_errors, 0),
    /* a counter written while released keeps the write */
    W(EVTSEL(0), OS | USR | CYC), RELEASE(), HANDLES(2),
    W(A_PMC(0), 0x12345), R(PMC(0), 0x12345),
    W(EVTSEL(0), EOU | CYC), RUN(CYCLES, 3, 1), R(PMC(0), 0x12346),
    HANDLES(3),
};

START_TEST(test_release_idle)
{
    RUN_V2_SCRIPT(release_steps);
}
END_TEST

/* Same on the recording source: only idle handles are closed. */
START_TEST(test_release_idle_rec)
{
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, &rec_ops);
    wr(&c, EVTSEL(0), EOU | CYC);
    wr(&c, EVTSEL(1), EOU | CYC);
    ck_assert_uint_eq(c.rec.open_handles, 2);
    c.rec.h[1].count = 42;
    wr(&c, EVTSEL(1), 0);           /* folds 42, then stops */
    ck_assert_uint_eq(c.rec.h[1].enabled, 0);
    vpmu_pmu_release_idle(c.pmu);
    ck_assert_uint_eq(c.rec.open_handles, 1);
    ck_assert_uint_eq(c.rec.h[0].open, 1);
    ck_assert_uint_eq(c.rec.h[1].open, 0);
    ck_assert_uint_eq(rd(&c, PMC(1)), 42);
    core_fini(&c);
}
END_TEST

/* vpmu_pmu_free() closes every handle, whatever the counter's state. */
START_TEST(test_free_closes)
{
    VpmuFakeSource *fake;
    VpmuFakeStats fs;
    VpmuConfig cfg;
    CorePmu c;

    cfg_v2(&cfg, 48, 0);
    core_init(&c, &cfg, NULL);
    wr(&c, EVTSEL(0), EOU | CYC);
    wr(&c, EVTSEL(1), EOU | REF);
    wr(&c, EVTSEL(2), EOU | LLC_REF);
    wr(&c, EVTSEL(3), EOU | BR);
    wr(&c, EVTSEL(4), EOU | EDGE | BR);            /* refused: no handle */
    wr(&c, FIXED_CTR_CTRL, 0x330);
    wr(&c, GLOBAL_CTRL, GP_BITS | FIXED_BIT(1) | FIXED_BIT(2));
    wr(&c, EVTSEL(1), OS | USR | REF);             /* disabled, handle kept */
    wr(&c, GLOBAL_CTRL, (GP_BITS & ~4ull) | FIXED_BIT(1) | FIXED_BIT(2));
    vpmu_fake_source_run(c.fake, VPMU_EVENT_CYCLES, 0, 0, 100);
    fs = fake_of(&c);
    ck_assert_uint_eq(fs.open_handles, 6);
    ck_assert_uint_eq(fs.closes, 0);

    fake = c.fake;
    vpmu_pmu_free(c.pmu);
    vpmu_fake_source_stats(fake, &fs);
    ck_assert_uint_eq(fs.open_handles, 0);          /* before the fake goes */
    ck_assert_uint_eq(fs.closes, 6);
    vpmu_fake_source_free(fake);
}
END_TEST

/* vpmu_pmu_counter_info(): counters that exist, and those that do not. */
START_TEST(test_counter_info_ids)
{
    static const struct { int line; unsigned version; uint32_t id; int ret; }
    ids[] = {
        { __LINE__, 2, GPC(0), 0 }, { __LINE__, 2, GPC(7), 0 },
        { __LINE__, 2, GPC(8), -ENOENT }, { __LINE__, 2, FIXED(0), 0 },
        { __LINE__, 2, FIXED(2), 0 }, { __LINE__, 2, FIXED(3), -ENOENT },
        { __LINE__, 2, 0xFFFF, -ENOENT }, { __LINE__, 2, 1u << 31, -ENOENT },
        { __LINE__, 1, GPC(7), 0 }, { __LINE__, 1, FIXED(0), -ENOENT },
    };
    VpmuCounterInfo info;

    for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
        VpmuConfig cfg;
        CorePmu c;
        int r;

        if (ids[i].version == 1) {
            cfg_v1(&cfg, 48);
        } else {
            cfg_v2(&cfg, 48, 0);
        }
        core_init(&c, &cfg, NULL);
        r = vpmu_pmu_counter_info(c.pmu, ids[i].id, &info);
        ck_assert_msg(r == ids[i].ret, "line %d: ret %d", ids[i].line, r);
        if (r == 0) {
            ck_assert_uint_eq(info.id, ids[i].id);
            ck_assert_int_eq(info.state, VPMU_COUNTER_OFF);
            ck_assert_uint_eq(info.value, 0);
        }
        core_fini(&c);
    }
}
END_TEST

/* vpmu_pmu_new() wants open, enable, disable, read and close. */
typedef enum OpsDrop {
    DROP_NONE, DROP_OPTS, DROP_OPS, DROP_OPEN, DROP_UPDATE, DROP_ENABLE,
    DROP_DISABLE, DROP_READ, DROP_CLOSE, DROP_ALL, DROP_NAME,
} OpsDrop;

typedef struct NewCase {
    int line;
    OpsDrop drop;
    int ret;
} NewCase;

static const NewCase new_cases[] = {
    { SRC_LINE, DROP_NONE, 0 },
    { SRC_LINE, DROP_UPDATE, 0 },       /* optional: reopen instead */
    { SRC_LINE, DROP_NAME, 0 },
    { SRC_LINE, DROP_OPTS, -EINVAL },
    { SRC_LINE, DROP_OPS, -EINVAL },
    { SRC_LINE, DROP_OPEN, -EINVAL },
    { SRC_LINE, DROP_ENABLE, -EINVAL },
    { SRC_LINE, DROP_DISABLE, -EINVAL },
    { SRC_LINE, DROP_READ, -EINVAL },
    { SRC_LINE, DROP_CLOSE, -EINVAL },
    { SRC_LINE, DROP_ALL, -EINVAL },
};

START_TEST(test_new_source_ops)
{
    const NewCase *n = &new_cases[_i];
    VpmuSourceOps ops = *vpmu_fake_source_ops();
    VpmuPmuOpts opts = { .source_ops = &ops };
    VpmuPmu *pmu = (VpmuPmu *)&ops;     /* must be overwritten */
    VpmuFakeSource *fake;
    VpmuFakeStats fs;
    VpmuConfig cfg;
    char err[256] = "untouched";
    int r;

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    switch (n->drop) {
    case DROP_NONE: break;
    case DROP_OPTS: break;
    case DROP_OPS: opts.source_ops = NULL; break;
    case DROP_OPEN: ops.open = NULL; break;
    case DROP_UPDATE: ops.update = NULL; break;
    case DROP_ENABLE: ops.enable = NULL; break;
    case DROP_DISABLE: ops.disable = NULL; break;
    case DROP_READ: ops.read = NULL; break;
    case DROP_CLOSE: ops.close = NULL; break;
    case DROP_ALL: memset(&ops, 0, sizeof(ops)); break;
    case DROP_NAME: ops.name = NULL; break;
    }
    cfg_v2(&cfg, 48, 0);
    r = vpmu_pmu_new(&cfg, n->drop == DROP_OPTS ? NULL : &opts, &pmu, err,
                     sizeof(err));
    ck_assert_msg(r == n->ret, "line %d: ret %d want %d (%s)", n->line, r,
                  n->ret, err);
    if (r == 0) {
        ck_assert_ptr_nonnull(pmu);
        /* it works: count something */
        ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, EVTSEL(0), EOU | CYC), 0);
        ck_assert_int_eq(vpmu_pmu_wrmsr(pmu, A_PMC(0), 0x10), 0);
        vpmu_fake_source_run(fake, VPMU_EVENT_CYCLES, 0, 0, 5);
        {
            uint64_t v = 0;

            ck_assert_int_eq(vpmu_pmu_rdmsr(pmu, PMC(0), &v), 0);
            ck_assert_uint_eq(v, 0x15);
        }
        vpmu_pmu_free(pmu);
    } else {
        ck_assert_msg(pmu == NULL, "line %d: *out not cleared", n->line);
        ck_assert_msg(strstr(err, "source_ops") != NULL,
                      "line %d: message '%s' does not name source_ops",
                      n->line, err);
    }
    vpmu_fake_source_stats(fake, &fs);
    ck_assert_uint_eq(fs.open_handles, 0);
    if (r != 0) {
        ck_assert_uint_eq(fs.calls[VPMU_FAKE_OPEN], 0);
    }
    vpmu_fake_source_free(fake);
}
END_TEST

/* ========================================================================= */

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc;

    tc = tcase_create("value");
    tcase_add_loop_test(tc, test_value_arithmetic, 0,
                        (int)ARRAY_SIZE(value_cases));
    tcase_add_loop_test(tc, test_sample_period, 0,
                        (int)ARRAY_SIZE(period_cases));
    tcase_add_test(tc, test_period_tracks_value);
    tcase_add_test(tc, test_fold_before_write);
    suite_add_tcase(s, tc);

    tc = tcase_create("reuse");
    tcase_add_test(tc, test_reuse);
    tcase_add_test(tc, test_counter_add);
    tcase_add_test(tc, test_pmi_elsewhere);
    tcase_add_loop_test(tc, test_no_update, 0, (int)ARRAY_SIZE(noupdate_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow");
    tcase_add_loop_test(tc, test_overflow_timing, 0, (int)ARRAY_SIZE(ovf_cases));
    tcase_add_test(tc, test_overflow_no_int);
    tcase_add_loop_test(tc, test_multi_wrap_one_fold, 0,
                        (int)ARRAY_SIZE(jump_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("enable");
    tcase_add_loop_test(tc, test_enable_rules, 0, (int)ARRAY_SIZE(enable_cases));
    tcase_add_test(tc, test_enable_toggle);
    suite_add_tcase(s, tc);

    tc = tcase_create("emulated");
    tcase_add_loop_test(tc, test_emulated, 0, (int)ARRAY_SIZE(emu_cases));
    tcase_add_loop_test(tc, test_emulated_plain_only, 0,
                        (int)ARRAY_SIZE(plain_cases));
    tcase_add_test(tc, test_wrmsr_counted);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_source_errors, 0, (int)ARRAY_SIZE(err_cases));
    tcase_add_loop_test(tc, test_source_errors_inner, 0,
                        (int)ARRAY_SIZE(inner_err_cases));
    tcase_add_test(tc, test_log_kinds);
    tcase_add_test(tc, test_no_log_callback);
    suite_add_tcase(s, tc);

    tc = tcase_create("unsupported");
    tcase_add_loop_test(tc, test_unsupported, 0, (int)ARRAY_SIZE(unsup_cases));
    tcase_add_loop_test(tc, test_raw_events, 0, (int)ARRAY_SIZE(raw_cases));
    tcase_add_test(tc, test_event_rewrite);
    suite_add_tcase(s, tc);

    tc = tcase_create("filter");
    tcase_add_test(tc, test_filter);
    tcase_add_loop_test(tc, test_filter_verdict, 0,
                        (int)ARRAY_SIZE(filter_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("lifecycle");
    tcase_add_test(tc, test_release_idle);
    tcase_add_test(tc, test_release_idle_rec);
    tcase_add_test(tc, test_free_closes);
    tcase_add_test(tc, test_counter_info_ids);
    tcase_add_loop_test(tc, test_new_source_ops, 0, (int)ARRAY_SIZE(new_cases));
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return run_suite(core_suite());
}
