/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-pmu: random PMU configurations driven by random guest operation
 * sequences, checked after every operation against docs/msrs.md.
 *
 * One decoder turns bytes into a config and a list of operations.  The bytes
 * come from libFuzzer (-DVPMU_LIBFUZZER) or from main()'s splitmix64
 * (--seed N --iterations K; --case I replays one case with a trace).
 * docs/fuzzing.md lists the invariants.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/vpmu.h>
#include "pmu-priv.h"

/* IA32_PERFEVTSELx / AMD PERF_CTLx (SDM 20.2.1.1, APM 13.2.1) */
#define EVT_USR         BIT_ULL(16)
#define EVT_OS          BIT_ULL(17)
#define EVT_INT         BIT_ULL(20)
#define EVT_EN          BIT_ULL(22)
/* AMD PERF_CTL keeps event [7:0] [35:32], umask, USR..CMASK, not 19 and 21 */
#define AMD_CTL_KEEP    (0x0000000FFFFFFFFFull & ~(BIT_ULL(19) | BIT_ULL(21)))
#define CTR_FRZ         BIT_ULL(59)     /* IA32_PERF_GLOBAL_STATUS.CTR_Frz */
/* GLOBAL_STATUS bits that are no counter's: OvfBuf, CondChgd; v4+ LBR_Frz, CTR_Frz */
#define STATUS_EXTRA(v4) (BIT_ULL(62) | BIT_ULL(63) | ((v4) ? BIT_ULL(58) | CTR_FRZ : 0))
#define MSR_FIXED_CTRL  0x38Du
#define MSR_DEBUGCTL    0x1D9u
#define STATE_PAYLOAD   20              /* blob header bytes (core/state.c) */

#define CHECK(z, cond, ...) \
    do { if (!(cond)) return violation((z), __LINE__, __VA_ARGS__); } while (0)
#define TRY(x)          do { if (x) return -1; } while (0)
#define TR(z, ...)      ((z)->verbose ? (void)fprintf(stderr, __VA_ARGS__) : (void)0)
#define STATUS_BIT(id)  ((id) & VPMU_COUNTER_FIXED ? BIT_ULL(32 + ((id) & 0xff)) : BIT_ULL(id))
#define X64             "%#" PRIx64

/* docs/msrs.md ranges, [0] Intel, [1] AMD; every other MSR is -ENOENT */
static const VpmuMsrSpan spans[2][7] = {
    { { 0xC1, 8 }, { 0x4C1, 8 }, { 0x186, 8 }, { 0x309, 4 }, { 0x38D, 6 },
      { 0x345, 1 }, { 0x1D9, 1 } },
    { { 0xC0010000, 8 }, { 0xC0010200, 12 }, { 0xC0000300, 4 } },
};
static const unsigned nr_spans[2] = { 7, 3 };
/* Architectural events in VpmuArchEvent order, event | umask << 8; 0: none */
static const uint64_t codes[2][8] = {
    { 0x003C, 0x00C0, 0x013C, 0x4F2E, 0x412E, 0x00C4, 0x00C5, 0x01A4 },
    { 0x0076, 0x00C0, 0, 0x077D, 0x077E, 0x00C2, 0x00C3, 0 },
};

typedef struct Fz {
    const uint8_t *p;               /* the bytes being decoded */
    size_t n, i;
    VpmuConfig cfg;
    VpmuPmu *pmu;
    VpmuFakeSource *fake;
    VpmuFilter *filter;             /* what the PMU has installed: the oracle */
    bool amd, global, v4;           /* vendor, GLOBAL_* MSRs exist, Intel v4+ */
    bool injected, verbose;         /* a source failure was injected */
    uint32_t gctrl, gstatus;        /* GLOBAL_CTRL/STATUS MSR numbers */
    uint64_t gp_mask, fx_mask, bits;    /* widths, valid GLOBAL_CTRL bits */
    uint64_t pmis, ops;
    size_t sz;
    uint8_t *blob[3];
    char msg[320];                  /* the first violation */
} Fz;

static uint64_t rd(Fz *z, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned b = 0; b < bytes; b++) {
        v |= (uint64_t)(z->i < z->n ? z->p[z->i++] : 0) << (8 * b);
    }
    return v;
}

static unsigned pick(Fz *z, size_t n)
{
    return n ? (unsigned)(rd(z, n > 256 ? 2 : 1) % n) : 0;
}

static int __attribute__((format(printf, 3, 4)))
violation(Fz *z, int line, const char *fmt, ...)
{
    int n = snprintf(z->msg, sizeof(z->msg), "fuzz-pmu.c:%d: ", line);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(z->msg + n, sizeof(z->msg) - n, fmt, ap);
    va_end(ap);
    return -1;
}

static void on_pmi(void *opaque)
{
    ((Fz *)opaque)->pmis++;
}

static void on_log(void *opaque, const char *msg)
{
    TR((Fz *)opaque, "  log: %s\n", msg);
}

/* Counter j: GP counters first, then fixed. */
static VpmuCounter *ctr(const Fz *z, unsigned j)
{
    return j < z->cfg.nr_gp ? &z->pmu->gp[j] : &z->pmu->fixed[j - z->cfg.nr_gp];
}

/* EVTSEL (CTR if @value) MSR of GP counter i, the one a guest would use. */
static uint32_t gp_msr(const Fz *z, unsigned i, bool value)
{
    if (z->amd) {
        return z->cfg.amd_level >= VPMU_AMD_PERFCTR_CORE ? 0xC0010200 + 2 * i + value
                                                         : 0xC0010000 + 4 * value + i;
    }
    return !value ? 0x186 + i
                  : (z->cfg.perf_capabilities & VPMU_PERF_CAP_FW_WRITE ? 0x4C1 : 0xC1) + i;
}

static bool pmu_msr(const Fz *z, uint32_t msr)
{
    for (unsigned i = 0; i < nr_spans[z->amd]; i++) {
        if (msr - spans[z->amd][i].base < spans[z->amd][i].count) {
            return true;
        }
    }
    return false;
}

/* 1: an EVTSEL, 2: a counter value, 0: anything else. */
static int msr_kind(const Fz *z, uint32_t msr)
{
    if (z->amd) {
        return msr - 0xC0010000 < 8 ? 1 + (msr >= 0xC0010004) :
               msr - 0xC0010200 < 12 ? 1 + (msr & 1) : 0;
    }
    return msr - 0x186 < 8 ? 1 : msr - 0xC1 < 8 || msr - 0x4C1 < 8 || msr - 0x309 < 4 ? 2 : 0;
}

static bool supported(const Fz *z, VpmuArchEvent e)
{
    return e == VPMU_EVENT_RAW ? z->cfg.raw_events : (z->cfg.events >> e) & 1;
}

static uint64_t rdv(Fz *z, uint32_t msr)
{
    uint64_t v = 0;

    vpmu_pmu_rdmsr(z->pmu, msr, &v);
    return v;
}

/* A write the contract says must succeed. */
static int wr_ok(Fz *z, uint32_t msr, uint64_t v)
{
    int rc = vpmu_pmu_wrmsr(z->pmu, msr, v);

    TR(z, "  wrmsr %#x <- " X64 " = %d\n", msr, v, rc);
    CHECK(z, rc == 0, "valid wrmsr %#x <- " X64 " returned %d", msr, v, rc);
    return 0;
}

static int check_counter(Fz *z, unsigned j, uint64_t gctrl, bool frozen)
{
    const VpmuCounter *c = ctr(z, j);
    bool fixed = c->id & VPMU_COUNTER_FIXED, en, ok;
    VpmuCounterInfo i;

    CHECK(z, !vpmu_pmu_counter_info(z->pmu, c->id, &i), "counter %#x: no info", c->id);
    CHECK(z, i.value <= (fixed ? z->fx_mask : z->gp_mask), "counter %#x = " X64 " too wide",
          c->id, i.value);
    CHECK(z, i.state == VPMU_COUNTER_COUNTING ? c->h && c->src_enabled : !c->src_enabled,
          "counter %#x: state %d, source enabled %d", c->id, i.state, c->src_enabled);
    /* EN with neither USR nor OS counts nothing: vpmu reports it OFF */
    en = fixed ? (i.control & 3) : (i.control & EVT_EN) && (i.control & (EVT_USR | EVT_OS));
    en = en && (!z->global || (gctrl & STATUS_BIT(c->id)));
    ok = !z->filter || (fixed ? vpmu_filter_allows_fixed(z->filter, c->idx)
                              : vpmu_filter_allows_event(z->filter, i.control));
    CHECK(z, frozen || en == (i.state != VPMU_COUNTER_OFF), "counter %#x: control " X64
          ", global " X64 ", state %d", c->id, i.control, gctrl, i.state);
    CHECK(z, frozen || ((en && !ok) ? i.state == VPMU_COUNTER_FILTERED ||
          (i.state == VPMU_COUNTER_UNSUPPORTED && !supported(z, i.event))
          : i.state != VPMU_COUNTER_FILTERED), "counter %#x: control " X64 ", allowed %d, "
          "state %d", c->id, i.control, ok, i.state);
    return 0;
}

static int check_all(Fz *z)
{
    uint64_t gctrl = 0, status = 0;
    unsigned handles = 0;
    VpmuFakeStats fs;
    VpmuStats st;
    VpmuCounterInfo ci;

    if (z->global) {
        CHECK(z, !vpmu_pmu_rdmsr(z->pmu, z->gstatus, &status) &&
              !vpmu_pmu_rdmsr(z->pmu, z->gctrl, &gctrl), "global MSRs #GP");
        CHECK(z, !(status & ~(z->bits | (z->amd ? 0 : STATUS_EXTRA(z->v4)))),
              "GLOBAL_STATUS " X64 " has bits of no counter", status);
        CHECK(z, !(gctrl & ~z->bits), "GLOBAL_CTRL " X64 " has reserved bits", gctrl);
    }
    for (unsigned j = 0; j < z->cfg.nr_gp + z->cfg.nr_fixed; j++) {
        TRY(check_counter(z, j, gctrl, z->v4 && (status & CTR_FRZ)));
        handles += ctr(z, j)->h != NULL;
    }
    CHECK(z, vpmu_pmu_counter_info(z->pmu, z->cfg.nr_gp, &ci) == -ENOENT &&
          vpmu_pmu_counter_info(z->pmu, VPMU_COUNTER_FIXED_ID(z->cfg.nr_fixed), &ci) == -ENOENT,
          "info for a counter that does not exist");
    vpmu_fake_source_stats(z->fake, &fs);
    vpmu_pmu_stats(z->pmu, &st);
    CHECK(z, fs.open_handles == handles, "%u handles open, %u held", fs.open_handles, handles);
    CHECK(z, st.pmis == z->pmis, "stats.pmis %" PRIu64 ", %" PRIu64 " PMIs", st.pmis, z->pmis);
    return 0;
}

static uint32_t pick_msr(Fz *z)
{
    unsigned k = pick(z, 20);
    bool v = k < 11 || k >= 13 ? z->amd : !z->amd;      /* 2/20: other vendor */
    const VpmuMsrSpan *s = &spans[v][pick(z, nr_spans[v])];

    if (k >= 15) {                      /* 4/20: a GP counter's EVTSEL or CTR */
        return k == 15 || !z->cfg.nr_gp ? (uint32_t)rd(z, 4)
                                         : gp_msr(z, pick(z, z->cfg.nr_gp), pick(z, 2));
    }
    /* in a range, or just outside one */
    return k < 13 ? s->base + pick(z, s->count) : k == 13 ? s->base - 1 : s->base + s->count;
}

static uint64_t pick_val(Fz *z, int kind)
{
    switch (kind && pick(z, 2) ? 2 + (unsigned)kind : pick(z, 12)) {
    case 0: return 0;
    case 1: return ~0ull;
    case 2: return BIT_ULL(pick(z, 64));
    case 3: return codes[z->amd][pick(z, 8)] | EVT_EN | (rd(z, 1) & 0x13) << 16;
    case 4: return z->gp_mask - pick(z, 2) * (rd(z, 3) & 0xFFFFF) - pick(z, 64);
    case 11: return -(uint64_t)(1 + pick(z, 256));
    case 5: return rd(z, 8);
    case 6: return rd(z, 4);
    case 7: return z->bits & rd(z, 8);              /* a global control */
    case 8: return rd(z, 2) & 0xBBBB;               /* fixed nibbles */
    case 9: return rd(z, 1) | (rd(z, 1) & 0x5f) << 16;
    default: return BIT_ULL(pick(z, 64)) | BIT_ULL(pick(z, 64));
    }
}

/* Event select + unit mask, for AMD sometimes with EventSelect[11:8]. */
static uint64_t pick_event(Fz *z)
{
    uint64_t code = rd(z, 1) & 1 ? codes[z->amd][pick(z, 8)] : rd(z, 2);

    return z->amd && !pick(z, 4) ? code | (rd(z, 1) & 0xFull) << 32 : code;
}

/* Make one field invalid by the rules of VpmuConfig in pmu.h. */
static void break_config(Fz *z, VpmuConfig *c)
{
    bool amd = c->vendor == VPMU_VENDOR_AMD, v2 = c->amd_level == VPMU_AMD_PERFMON_V2;

    switch (pick(z, 7)) {
    case 0: c->vendor = pick(z, 2) ? 0 : 3; break;
    case 1: if (amd) { c->amd_level = pick(z, 2) ? 0 : 4; } else { c->intel_version = 6; }
            break;
    case 2: c->nr_gp = amd && !v2 ? c->nr_gp - 1 : amd && pick(z, 2) ? 0 : 9 + pick(z, 4); break;
    case 3: c->nr_fixed = amd || c->intel_version == 1 ? 1 : 5; break;
    case 4: c->gp_width = amd ? 32 + pick(z, 16) : pick(z, 2) ? 31 : 49; break;
    case 5: *(c->nr_fixed ? &c->fixed_width : &c->gp_width) = pick(z, 2) ? 31 : 49; break;
    default: c->perf_capabilities = c->pdcm ? BIT_ULL(1 + pick(z, 12)) : VPMU_PERF_CAP_FW_WRITE;
             c->gp_width = amd ? 64 : c->gp_width;
    }
}

static bool gen_config(Fz *z, VpmuConfig *c)
{
    vpmu_config_init(c, pick(z, 2) ? VPMU_VENDOR_AMD : VPMU_VENDOR_INTEL);
    if (c->vendor == VPMU_VENDOR_INTEL) {
        c->intel_version = 1 + pick(z, 5);
        c->nr_gp = pick(z, 9);
        c->nr_fixed = pick(z, c->intel_version == 1 ? 1 : c->intel_version == 5 ? 5 : 4);
        c->gp_width = 32 + pick(z, 17);
        c->fixed_width = c->nr_fixed ? 32 + pick(z, 17) : 0;
        c->pdcm = pick(z, 2);
        c->perf_capabilities = c->pdcm && pick(z, 2) ? VPMU_PERF_CAP_FW_WRITE : 0;
    } else {
        c->amd_level = 1 + pick(z, 3);
        c->nr_gp = c->amd_level == VPMU_AMD_K7 ? 4 :
                   c->amd_level == VPMU_AMD_PERFCTR_CORE ? 6 : 1 + pick(z, 6);
        c->nr_fixed = c->fixed_width = 0;
        c->gp_width = 48;
    }
    c->events = pick(z, 2) ? VPMU_EVENTS_ALL : rd(z, 1) & VPMU_EVENTS_ALL;
    c->raw_events = pick(z, 2);
    if (pick(z, 8)) {
        return true;
    }
    break_config(z, c);
    return false;
}

/* RDMSR or WRMSR; a faulting WRMSR must change nothing at all. */
static int op_msr(Fz *z)
{
    uint32_t msr = pick_msr(z);
    bool wr = pick(z, 8) < 5, evtsel = msr_kind(z, msr) == 1;
    uint64_t val = wr ? pick_val(z, msr_kind(z, msr)) : 0, old = 0, now = 0;
    size_t wa = 0, wb = 0;
    int rb = vpmu_pmu_rdmsr(z->pmu, msr, &old), rc = rb, ra;

    if (wr) {
        vpmu_pmu_save(z->pmu, z->blob[0], z->sz, &wa);
        rc = vpmu_pmu_wrmsr(z->pmu, msr, val);
    }
    TR(z, "  %smsr %#x " X64 " = %d\n", wr ? "wr" : "rd", msr, wr ? val : old, rc);
    CHECK(z, (rc == 0 || rc == -EINVAL || rc == -ENOENT) && (rb == -ENOENT) == (rc == -ENOENT)
          && (rc == -ENOENT) == !pmu_msr(z, msr), "msr %#x: rdmsr %d, access %d", msr, rb, rc);
    ra = vpmu_pmu_rdmsr(z->pmu, msr, &now);
    if (!wr || rc == 0) {
        CHECK(z, !wr || !evtsel || now == (z->amd ? val & AMD_CTL_KEEP : val),
              "EVTSEL %#x <- " X64 " reads " X64, msr, val, now);
        return 0;
    }
    vpmu_pmu_save(z->pmu, z->blob[1], z->sz, &wb);
    CHECK(z, ra == rb && now == old && wa == wb && !memcmp(z->blob[0], z->blob[1], wa),
          "faulting wrmsr %#x <- " X64 " changed state (MSR " X64 " -> " X64 ")",
          msr, val, old, now);
    return 0;
}

static int op_rdpmc(Fz *z)
{
    unsigned k = pick(z, 6);
    uint32_t ecx = k < 2 ? pick(z, 10) : k == 2 ? VPMU_COUNTER_FIXED | pick(z, 6) :
                   k == 3 ? 0x80000000u | pick(z, 8) :
                   k == 4 ? (uint32_t)BIT_ULL(pick(z, 32)) | pick(z, 4) : (uint32_t)rd(z, 4);
    bool fixed = !z->amd && (ecx & VPMU_COUNTER_FIXED);
    unsigned idx = ecx & 0xffff;
    bool valid = z->amd ? ecx < z->cfg.nr_gp : !(ecx & ~0x4000FFFFu) &&
                 idx < (fixed ? z->cfg.nr_fixed : z->cfg.nr_gp);
    uint64_t v = 0;
    VpmuCounterInfo ci = { 0 };
    int rc = vpmu_pmu_rdpmc(z->pmu, ecx, &v);

    TR(z, "  rdpmc %#x = %d, " X64 "\n", ecx, rc, v);
    vpmu_pmu_counter_info(z->pmu, fixed ? VPMU_COUNTER_FIXED_ID(idx) : idx, &ci);
    CHECK(z, rc == (valid ? 0 : -EINVAL), "rdpmc %#x returned %d", ecx, rc);
    CHECK(z, rc || (v == ci.value && v <= (fixed ? z->fx_mask : z->gp_mask)),
          "rdpmc %#x = " X64 ", counter holds " X64, ecx, v, ci.value);
    return 0;
}

static int op_cpuid(Fz *z)
{
    static const uint32_t leaves[] = { 0, 1, 0xA, 0x80000000, 0x80000001, 0x80000022 };
    unsigned k = pick(z, 8);
    uint32_t leaf = k < 6 ? leaves[k] : (uint32_t)rd(z, 4), r[4];
    /* PMU leaves answer 0; AMD 0x80000000 only where PerfMonV2 raises it */
    bool pmu_leaf = z->amd ? k >= 2 && k < 6 : k < 3;
    bool known = k < 6 && (k != 3 || !z->amd || z->cfg.amd_level == VPMU_AMD_PERFMON_V2);
    int rc;

    for (unsigned i = 0; i < 4; i++) {
        r[i] = (uint32_t)rd(z, 4);
    }
    rc = vpmu_pmu_cpuid(z->pmu, leaf, pick(z, 4), r);
    CHECK(z, known ? rc == (pmu_leaf ? 0 : -ENOENT) : rc == 0 || rc == -ENOENT,
          "cpuid %#x returned %d", leaf, rc);
    CHECK(z, leaf != 0xA || !z->amd || !(r[0] | r[1] | r[2] | r[3]), "AMD leaf 0xA not 0");
    return 0;
}

/* Events happen; every counter counting them must add exactly that many. */
static int op_feed(Fz *z)
{
    unsigned nc = z->cfg.nr_gp + z->cfg.nr_fixed, k = pick(z, 16), e = pick(z, 10);
    unsigned cpl = pick(z, 4), j0 = pick(z, nc), f = j0 - z->cfg.nr_gp;
    uint64_t raw = 0, n = pick(z, 16), d, m, st;
    VpmuCounterInfo a[VPMU_MAX_GP + VPMU_MAX_FIXED], b;

    if (nc && !pick(z, 3)) {                    /* enable counter j0 first */
        if (j0 < z->cfg.nr_gp) {
            TRY(wr_ok(z, gp_msr(z, j0, false), codes[z->amd][pick(z, 8)] | EVT_EN | EVT_USR |
                      EVT_OS));
        } else {
            TRY(wr_ok(z, MSR_FIXED_CTRL, rdv(z, MSR_FIXED_CTRL) | 3ull << 4 * f));
            TRY(wr_ok(z, z->gctrl, rdv(z, z->gctrl) | STATUS_BIT(ctr(z, j0)->id)));
        }
    }
    for (unsigned j = 0; j < nc; j++) {
        vpmu_pmu_counter_info(z->pmu, ctr(z, j)->id, &a[j]);
    }
    n = n == 0 ? rd(z, 3) & 0xFFFFF : n < 3 ? pick(z, 65536) : pick(z, 64); /* to 2^20 */
    e = nc && pick(z, 2) ? a[j0].event : e;      /* often what counter j0 counts */
    if (e >= VPMU_EVENT__COUNT) {
        e = VPMU_EVENT_RAW;
        raw = nc && pick(z, 2) ? a[j0].control & 0xFFFF84FFFFull : pick_event(z);
    }
    TR(z, "  %s cpl %u (event %u raw " X64 " n %" PRIu64 ")\n", k == 0 ? "sync" : k == 1 ?
       "retire" : k == 2 ? "retire branch" : "fake run", cpl, e, raw, n);
    if (k < 3) {
        k ? vpmu_pmu_instruction_retired(z->pmu, cpl, k == 2) : vpmu_pmu_sync(z->pmu);
    } else {
        vpmu_fake_source_run(z->fake, (VpmuArchEvent)e, raw, cpl, n);
    }
    for (unsigned j = 0; j < nc; j++) {
        bool fixed = ctr(z, j)->id & VPMU_COUNTER_FIXED;
        uint64_t c = a[j].control, mode = fixed ? c & 3 : (c >> 17 & 1) | (c >> 15 & 2);

        m = fixed ? z->fx_mask : z->gp_mask;
        d = k == 0 ? 0 : k < 3 ? a[j].event == VPMU_EVENT_INSTRUCTIONS ||
            (k == 2 && a[j].event == VPMU_EVENT_BRANCHES) : a[j].event == e &&
            (e != VPMU_EVENT_RAW || (c & 0xFFFF84FFFFull) == raw) ? n : 0;
        /* mode: bit 0 OS (CPL 0-2), bit 1 USR (CPL 3) */
        d = a[j].state == VPMU_COUNTER_COUNTING && (mode & (cpl == 3 ? 2 : 1)) ? d : 0;
        vpmu_pmu_counter_info(z->pmu, ctr(z, j)->id, &b);
        st = z->global ? rdv(z, z->gstatus) : ~0ull;
        /* a counter that stopped (freeze, source error) has no exact count */
        CHECK(z, b.state != VPMU_COUNTER_COUNTING || (b.value == ((a[j].value + d) & m) &&
              b.overflows == a[j].overflows + (a[j].value + d > m) &&
              (a[j].value + d <= m || (st & STATUS_BIT(b.id)))), "counter %#x: " X64
              " + %" PRIu64 " gave " X64 ", overflows %" PRIu64 " -> %" PRIu64, b.id,
              a[j].value, d, b.value, a[j].overflows, b.overflows);
    }
    return 0;
}

static int op_fail(Fz *z)
{
    static const int errs[] = { -EIO, -ENOMEM, -EOPNOTSUPP, -EBUSY, 0 };
    unsigned op = pick(z, VPMU_FAKE_OP__COUNT);
    int err = errs[pick(z, 5)];

    TR(z, "  fake fail op %u err %d\n", op, err);
    vpmu_fake_source_fail(z->fake, (VpmuFakeOp)op, err);
    z->injected = true;
    return 0;
}

/* Let counter @id count: no source failure, no freeze, global enable set. */
static int unblock(Fz *z, uint32_t id)
{
    for (int op = 0; op < VPMU_FAKE_OP__COUNT; op++) {
        vpmu_fake_source_fail(z->fake, (VpmuFakeOp)op, 0);
    }
    TRY(!z->amd && wr_ok(z, MSR_DEBUGCTL, 0));
    TRY(z->global && wr_ok(z, z->gctrl, rdv(z, z->gctrl) | STATUS_BIT(id)));
    return z->v4 ? wr_ok(z, 0x390, CTR_FRZ) : 0;    /* GLOBAL_STATUS_RESET */
}

/* A counter programmed with only a denied event never opens a source. */
static int prove_denied(Fz *z, uint64_t code)
{
    unsigned k = pick(z, z->cfg.nr_gp), e = 0;
    VpmuFakeStats s0, s1;
    VpmuCounterInfo c0, c1;

    while (e < 8 && codes[z->amd][e] != code) {
        e++;
    }
    TRY(wr_ok(z, gp_msr(z, k, false), 0) || unblock(z, k));
    vpmu_fake_source_stats(z->fake, &s0);
    vpmu_pmu_counter_info(z->pmu, k, &c0);
    TRY(wr_ok(z, gp_msr(z, k, false), code | EVT_EN | EVT_USR | EVT_OS | EVT_INT));
    for (unsigned cpl = 0; cpl < 4; cpl += 3) {
        vpmu_fake_source_run(z->fake, e < 8 ? e : VPMU_EVENT_RAW, code, cpl, 100);
        vpmu_pmu_instruction_retired(z->pmu, cpl, true);
    }
    vpmu_fake_source_stats(z->fake, &s1);
    vpmu_pmu_counter_info(z->pmu, k, &c1);
    TR(z, "  denied " X64 " on GP%u: state %d\n", code, k, c1.state);
    CHECK(z, s1.calls[VPMU_FAKE_OPEN] == s0.calls[VPMU_FAKE_OPEN] &&
          s1.open_handles <= s0.open_handles, "denied event " X64 " opened a source", code);
    CHECK(z, c1.state == VPMU_COUNTER_FILTERED || (c1.state == VPMU_COUNTER_UNSUPPORTED &&
          !supported(z, c1.event)), "denied event " X64 ": state %d", code, c1.state);
    CHECK(z, c1.value == c0.value, "denied event " X64 " counted", code);
    return 0;
}

/* Entry that hits @code: plain, or masked with umask mask @mask. */
static uint64_t filter_entry(uint64_t code, unsigned flags, uint8_t mask, bool exclude)
{
    uint64_t sel = (code & 0xff) | ((code >> 24) & 0xf00);

    return flags ? VPMU_ENCODE_MASKED_ENTRY(sel, mask, (code >> 8) & mask, exclude) : code;
}

static int op_filter(Fz *z)
{
    VpmuFilterAction act = pick(z, 2) ? VPMU_FILTER_DENY : VPMU_FILTER_ALLOW;
    unsigned flags = pick(z, 2) ? VPMU_FILTER_MASKED : 0, n = pick(z, 6), map = rd(z, 1);
    uint64_t target = pick_event(z);
    bool excl = false, allowed;

    vpmu_filter_free(z->filter);
    z->filter = NULL;
    if (!pick(z, 3)) {
        TR(z, "  no filter\n");
        CHECK(z, vpmu_pmu_set_filter(z->pmu, NULL) == 0, "set_filter(NULL) failed");
        return 0;
    }
    CHECK(z, vpmu_filter_new(act, flags, &z->filter) == 0, "filter_new failed");
    for (unsigned i = 0; i < n; i++) {
        bool x = flags && !pick(z, 4);
        uint64_t e = pick(z, 4) ? filter_entry(pick_event(z), flags, rd(z, 1), x) : rd(z, 8);
        int rc = vpmu_filter_add(z->filter, e);

        CHECK(z, rc == 0 || rc == -EINVAL, "filter_add " X64 " returned %d", e, rc);
        excl |= x || (flags && !rc && (e & VPMU_MASKED_EXCLUDE));
    }
    CHECK(z, !vpmu_filter_add(z->filter, filter_entry(target, flags, 0xff, false)),
          "filter_add of event " X64 " failed", target);
    vpmu_filter_set_fixed_bitmap(z->filter, map);
    allowed = vpmu_filter_allows_event(z->filter, target);
    TR(z, "  filter %s%s, %u entries + " X64 ", fixed %#x: allowed %d\n",
       act ? "deny" : "allow", flags ? " masked" : "", n, target, map, allowed);
    CHECK(z, excl || allowed == (act == VPMU_FILTER_ALLOW), "verdict on " X64, target);
    for (unsigned i = 0; i < VPMU_INTEL_V5_MAX_FIXED; i++) {
        CHECK(z, vpmu_filter_allows_fixed(z->filter, i) == (act == !((map >> i) & 1)),
              "fixed %u verdict, bitmap %#x", i, map);
    }
    CHECK(z, vpmu_pmu_set_filter(z->pmu, z->filter) == 0, "set_filter failed");
    return allowed || !z->cfg.nr_gp ? 0 : prove_denied(z, target);
}

/* Save; load it back intact, corrupted, truncated or with a new register value. */
static int op_save(Fz *z)
{
    static const char *const hows[] = { "intact", "corrupted", "truncated", "re-CRCed" };
    uint8_t *a = z->blob[0], *b = z->blob[1], *c = z->blob[2];
    size_t wa = 0, wb = 0, len, at;
    unsigned how = pick(z, 4);
    uint32_t crc = ~0u;
    int rc;

    CHECK(z, !vpmu_pmu_save(z->pmu, a, z->sz, &wa) && wa > STATE_PAYLOAD + 4 && wa <= z->sz &&
          vpmu_pmu_save(z->pmu, b, wa - 1, &wb) == -ENOSPC, "save of %zu bytes", wa);
    memcpy(c, a, wa);
    len = how == 2 ? pick(z, wa) : wa;
    at = how == 3 ? STATE_PAYLOAD + pick(z, wa - STATE_PAYLOAD - 4) : pick(z, wa);
    c[at] ^= how & 1 ? (uint8_t)(1 + pick(z, 255)) : 0;     /* CRC-32 catches any byte */
    for (size_t i = 0; how == 3 && i < wa - 4; i++) {        /* unless it is redone */
        crc ^= c[i];
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
        }
    }
    if (how == 3) {
        memcpy(c + wa - 4, (uint8_t[4]){ ~crc, ~crc >> 8, ~crc >> 16, ~crc >> 24 }, 4);
    }
    rc = vpmu_pmu_load(z->pmu, c, len);
    TR(z, "  load %s blob (byte %zu), %zu of %zu bytes = %d\n", hows[how], at, len, wa, rc);
    CHECK(z, !vpmu_pmu_save(z->pmu, b, z->sz, &wb) && wb == wa, "re-save failed");
    if (how == 3 && rc == 0) {          /* accepted: what it restored saves back */
        CHECK(z, !memcmp(b, c, wa), "blob with byte %zu changed loads, saves otherwise", at);
        return 0;
    }
    CHECK(z, !memcmp(a, b, wa), "load of an %s blob (= %d) changed the state", hows[how], rc);
    CHECK(z, how == 0 ? rc == 0 : how == 2 ? rc == -EBADMSG : how == 3 ? rc == -EINVAL :
          rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -EINVAL,
          "load of an %s blob returned %d", hows[how], rc);
    return 0;
}

/* Reset (and check the reset values) or release idle source handles. */
static int op_lifecycle(Fz *z)
{
    bool reset = pick(z, 2);
    VpmuCounterInfo i;

    TR(z, "  %s\n", reset ? "reset" : "release_idle");
    reset ? vpmu_pmu_reset(z->pmu) : vpmu_pmu_release_idle(z->pmu);
    for (unsigned j = 0; j < z->cfg.nr_gp + z->cfg.nr_fixed; j++) {
        vpmu_pmu_counter_info(z->pmu, ctr(z, j)->id, &i);
        CHECK(z, !reset || (!i.value && !i.control && !ctr(z, j)->src_enabled),
              "counter %#x after reset: " X64 ", ctl " X64, i.id, i.value, i.control);
        CHECK(z, reset || i.state == VPMU_COUNTER_COUNTING || !ctr(z, j)->h,
              "idle counter %#x (state %d) kept its source handle", i.id, i.state);
    }
    CHECK(z, !reset || !z->global || (rdv(z, z->gctrl) == BIT_ULL(z->cfg.nr_gp) - 1 &&
          !rdv(z, z->gstatus)), "global registers after reset");
    CHECK(z, !reset || z->amd || !rdv(z, MSR_DEBUGCTL), "DEBUGCTL after reset");
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(Fz *z);
    unsigned weight;
} ops[] = {
    { "msr", op_msr, 18 }, { "rdpmc", op_rdpmc, 3 }, { "cpuid", op_cpuid, 1 },
    { "feed", op_feed, 9 }, { "filter", op_filter, 1 },
    { "fail", op_fail, 1 }, { "save", op_save, 2 }, { "lifecycle", op_lifecycle, 2 },
};

/* Decode the config and make the PMU; 1: refused, as it had to be. */
static int setup(Fz *z)
{
    char err[256] = "";
    bool valid = gen_config(z, &z->cfg);
    const VpmuConfig *c = &z->cfg;
    VpmuPmuOpts o = { vpmu_fake_source_ops(), NULL, on_pmi, on_log, z };
    VpmuPmu *bad = NULL;
    int chk = vpmu_config_check(c, err, sizeof(err)), rc;

    TR(z, "config vendor %d v%u level %u gp %u/%u fixed %u/%u pdcm %d caps " X64 " events "
       "%#x raw %d: %s\n", c->vendor, c->intel_version, c->amd_level, c->nr_gp, c->gp_width,
       c->nr_fixed, c->fixed_width, c->pdcm, c->perf_capabilities, c->events, c->raw_events,
       valid ? "valid" : "invalid");
    CHECK(z, vpmu_fake_source_new(&z->fake) == 0, "fake_source_new failed");
    o.source = z->fake;
    rc = vpmu_pmu_new(c, &o, &z->pmu, err, sizeof(err));
    z->pmu = rc ? NULL : z->pmu;
    CHECK(z, rc == (valid ? 0 : -EINVAL) && chk == rc && (valid || err[0]),
          "%s config: pmu_new %d, config_check %d (%s)", valid ? "valid" : "bad", rc, chk, err);
    if (!valid) {
        return 1;
    }
    o.source_ops = NULL;
    rc = vpmu_pmu_new(c, &o, &bad, err, sizeof(err));
    vpmu_pmu_free(rc ? NULL : bad);
    CHECK(z, rc == -EINVAL, "pmu_new without source ops returned %d", rc);
    z->amd = c->vendor == VPMU_VENDOR_AMD;
    z->global = z->amd ? c->amd_level == VPMU_AMD_PERFMON_V2 : c->intel_version >= 2;
    z->v4 = !z->amd && c->intel_version >= 4;
    z->gctrl = z->amd ? 0xC0000301 : 0x38F;
    z->gstatus = z->amd ? 0xC0000300 : 0x38E;
    z->gp_mask = vpmu_width_mask(c->gp_width);
    z->fx_mask = vpmu_width_mask(c->fixed_width);
    z->bits = (BIT_ULL(c->nr_gp) - 1) | (BIT_ULL(c->nr_fixed) - 1) << 32;
    z->sz = vpmu_pmu_state_size(z->pmu);
    for (int i = 0; i < 3; i++) {
        CHECK(z, (z->blob[i] = calloc(1, z->sz + 1)) != NULL, "out of memory");
    }
    return check_all(z);
}

/* Run one case; 0, or -1 with the first violation in @msg. */
static int run_case(const uint8_t *data, size_t size, bool verbose, uint64_t *nops,
                    char *msg, size_t msglen)
{
    Fz z = { .p = data, .n = size, .verbose = verbose };
    unsigned w, i;
    VpmuFakeStats fs;
    int ret = setup(&z);

    while (ret == 0 && z.i < z.n) {
        for (w = pick(&z, 35), i = 0; w >= ops[i].weight; i++) {   /* 35: sum of weights */
            w -= ops[i].weight;
        }
        TR(&z, "op %" PRIu64 ": %s\n", z.ops, ops[i].name);
        z.ops++;
        ret = ops[i].fn(&z);
        ret = ret ? ret : check_all(&z);
    }
    vpmu_pmu_free(z.pmu);
    vpmu_fake_source_stats(z.fake, &fs);
    if (ret >= 0 && fs.open_handles) {
        ret = violation(&z, __LINE__, "%u handles open after pmu_free", fs.open_handles);
    }
    vpmu_filter_free(z.filter);
    vpmu_fake_source_free(z.fake);
    for (i = 0; i < 3; i++) {
        free(z.blob[i]);
    }
    *nops = z.ops;
    snprintf(msg, msglen, "op %" PRIu64 ": %s", z.ops ? z.ops - 1 : 0, z.msg);
    return ret < 0 ? -1 : 0;
}

#ifdef VPMU_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[400];
    uint64_t nops;

    if (run_case(data, size, false, &nops, msg, sizeof(msg))) {
        run_case(data, size, true, &nops, msg, sizeof(msg));    /* the trace */
        fprintf(stderr, "fuzz-pmu: invariant violation: %s\n", msg);
        abort();
    }
    return 0;
}
#else
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);

    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int main(int argc, char **argv)
{
    uint64_t arg[3] = { 1, 1000, UINT64_MAX }, total = 0, n, s, v;
    static const char *const names[3] = { "--seed", "--iterations", "--case" };
    static uint8_t buf[1536];
    char msg[400];
    size_t len;

    for (int i = 1; i < argc; i += 2) {
        int k = 0;

        while (k < 3 && strcmp(argv[i], names[k])) {
            k++;
        }
        if (k == 3 || i + 1 == argc) {
            fprintf(stderr, "usage: fuzz-pmu [--seed N] [--iterations K] [--case I]\n");
            return 2;
        }
        arg[k] = strtoull(argv[i + 1], NULL, 0);
    }
    for (uint64_t c = arg[2] + 1 ? arg[2] : 0; c < (arg[2] + 1 ? arg[2] + 1 : arg[1]); c++) {
        /* case c's bytes depend on (seed, c) only, so --case replays it */
        s = arg[0] ^ (c * 0xD1B54A32D192ED03ull);
        len = 24 + splitmix64(&s) % (sizeof(buf) - 24);
        for (size_t i = 0; i < len; i += 8) {
            v = splitmix64(&s);
            memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
        }
        if (run_case(buf, len, arg[2] + 1 != 0, &n, msg, sizeof(msg))) {
            printf("fuzz-pmu: invariant violation, seed %" PRIu64 " case %" PRIu64 " %s\n"
                   "fuzz-pmu: replay with: fuzz-pmu --seed %" PRIu64 " --case %" PRIu64 "\n",
                   arg[0], c, msg, arg[0], c);
            return 1;
        }
        total += n;
    }
    printf("fuzz-pmu: %" PRIu64 " cases, %" PRIu64 " operations, 0 invariant violations\n",
           arg[2] + 1 ? 1 : arg[1], total);
    return 0;
}
#endif
