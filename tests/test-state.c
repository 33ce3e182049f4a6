/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_pmu_state_size() / vpmu_pmu_save() / vpmu_pmu_load() against the
 * contract in pmu.h and the blob format documented in core/state.c:
 *
 *   0  "VPMU"  4 u16 format (1)  6 u8 vendor  7 u8 Intel version / AMD level
 *   8  u8 nr_gp  9 u8 nr_fixed  10 u8 gp_width  11 u8 fixed_width
 *  12  u8 flags (PDCM 0, FW_WRITE 1)  13 3 bytes 0  16 u32 payload bytes
 *  20  u64 GLOBAL_CTRL, GLOBAL_STATUS, DEBUGCTL, per GP {EVTSEL, value},
 *      per fixed {control nibble, value}
 * end  u32 CRC-32 (IEEE 802.3, as zlib's crc32()) of everything before it
 *
 * - round trips for Intel v1-v5 and every AMD level: every PMU MSR, RDPMC
 *   and counter state read back equal, and the loaded PMU then counts,
 *   overflows, raises PMIs and freezes in lockstep with the original;
 * - no count lost or invented across save/load (hand-derived sums);
 * - the size formula, -ENOSPC, and golden blobs that pin the byte format;
 * - rejection of truncated, corrupted, foreign, future-format and
 *   out-of-range blobs, each leaving the PMU untouched.
 *
 * The CRC is computed here with an independent table-driven bytewise
 * implementation (checked against the standard check value 0xCBF43926).
 */
#include "vectors.h"

/* ---- MSR numbers (docs/msrs.md) --------------------------------------- */

#define I_PMC(i)            (0x0c1u + (i))
#define I_EVTSEL(i)         (0x186u + (i))
#define I_DEBUGCTL          0x1d9u
#define I_FIXED_CTR(i)      (0x309u + (i))
#define I_PERF_CAP          0x345u
#define I_FIXED_CTRL        0x38du
#define I_GSTATUS           0x38eu
#define I_GCTRL             0x38fu
#define I_GOVF              0x390u
#define I_GSET              0x391u
#define I_GINUSE            0x392u
#define I_A_PMC(i)          (0x4c1u + (i))

#define A_K7_CTL(i)         (0xc0010000u + (i))
#define A_K7_CTR(i)         (0xc0010004u + (i))
#define A_CTL(i)            (0xc0010200u + 2 * (i))
#define A_CTR(i)            (0xc0010201u + 2 * (i))
#define A_GSTATUS           0xc0000300u
#define A_GCTL              0xc0000301u
#define A_GCLR              0xc0000302u
#define A_GSET              0xc0000303u

#define BIT(n)              (1ull << (n))
#define STATUS_LBR_FRZ      BIT(58)
#define STATUS_CTR_FRZ      BIT(59)
#define STATUS_OVF_BUF      BIT(62)
#define DEBUGCTL_BTF        BIT(1)
#define DEBUGCTL_FRZ_PMI    BIT(12)
#define DEBUGCTL_FRZ_SMM    BIT(14)
#define EVTSEL_ANY          BIT(21)

/* Blob layout. */
#define HDR_SIZE            20
#define CRC_SIZE            4
#define PAYLOAD_OFF         HDR_SIZE
/* u64 slots of the payload: 0 GLOBAL_CTRL, 1 STATUS, 2 DEBUGCTL, ... */
#define SLOT_GCTRL          0
#define SLOT_STATUS         1
#define SLOT_DEBUGCTL       2
#define SLOT_CTL(k)         (3 + 2 * (k))   /* counter k: GP i, fixed g + j */
#define SLOT_VAL(k)         (4 + 2 * (k))

/*
 * Check records a location for every passing ck_assert (a pipe write);
 * the hot loops below (thousands of loads, each with two full snapshots)
 * only call into Check when something fails.
 */
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            ck_abort_msg(__VA_ARGS__); \
        } \
    } while (0)

#define MAX_MSRS            64
#define MAX_CTRS            12
#define MAX_BLOB            512

static uint64_t wmask(unsigned width)
{
    return width >= 64 ? ~0ull : BIT(width) - 1;
}

/* ---- Independent CRC-32 (IEEE 802.3, reflected 0xEDB88320) -------------- */

static uint32_t crc_table[256];

static void crc_table_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;

        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[n] = c;
    }
}

static uint32_t test_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;

    if (!crc_table[1]) {
        crc_table_init();
    }
    while (n--) {
        c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    }
    return c ^ 0xffffffffu;
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void fix_crc(uint8_t *blob, size_t len)
{
    put_le(blob + len - CRC_SIZE, test_crc32(blob, len - CRC_SIZE), 4);
}

static uint64_t slot_get(const uint8_t *blob, unsigned slot)
{
    return get_le(blob + PAYLOAD_OFF + 8 * slot, 8);
}

static void slot_put(uint8_t *blob, unsigned slot, uint64_t v)
{
    put_le(blob + PAYLOAD_OFF + 8 * slot, v, 8);
}

/* ---- Configurations ------------------------------------------------------ */

typedef struct StateCfg {
    int line;
    VpmuVendor vendor;
    unsigned version;           /* Intel */
    VpmuAmdLevel level;         /* AMD */
    unsigned nr_gp, nr_fixed, gp_width, fixed_width;
    bool pdcm, fw_write, raw;
} StateCfg;

#define ICFG(v, g, f, gw, fxw, pdcm_, fw_, raw_) \
    { SRC_LINE, VPMU_VENDOR_INTEL, v, 0, g, f, gw, fxw, pdcm_, fw_, raw_ }
#define ACFG(l, g, raw_) \
    { SRC_LINE, VPMU_VENDOR_AMD, 0, l, g, 0, 48, 0, false, false, raw_ }

/* Round-trip configurations: every Intel version and AMD level. */
static const StateCfg rt_cfgs[] = {
    ICFG(1, 8, 0, 48, 0, true, true, false),
    ICFG(1, 4, 0, 32, 0, false, false, true),
    ICFG(2, 8, 3, 48, 48, true, true, false),
    ICFG(2, 2, 1, 32, 40, false, false, true),
    ICFG(3, 8, 3, 48, 48, true, true, false),
    ICFG(3, 4, 3, 40, 36, true, false, true),
    ICFG(4, 8, 3, 48, 48, true, true, false),
    ICFG(4, 0, 3, 48, 48, true, true, false),
    ICFG(4, 6, 2, 44, 32, false, false, true),
    ICFG(5, 8, 4, 48, 48, true, true, true),
    ICFG(5, 3, 4, 32, 48, true, false, false),
    ACFG(VPMU_AMD_K7, 4, false),
    ACFG(VPMU_AMD_K7, 4, true),
    ACFG(VPMU_AMD_PERFCTR_CORE, 6, false),
    ACFG(VPMU_AMD_PERFCTR_CORE, 6, true),
    ACFG(VPMU_AMD_PERFMON_V2, 6, false),
    ACFG(VPMU_AMD_PERFMON_V2, 1, false),
    ACFG(VPMU_AMD_PERFMON_V2, 4, true),
};
#define NR_RT_CFGS ((int)ARRAY_SIZE(rt_cfgs))

static bool is_intel(const VpmuConfig *c)
{
    return c->vendor == VPMU_VENDOR_INTEL;
}

static bool has_global(const VpmuConfig *c)
{
    return is_intel(c) ? c->intel_version >= 2
                       : c->amd_level == VPMU_AMD_PERFMON_V2;
}

static bool anythread_ok(const VpmuConfig *c)
{
    return is_intel(c) && (c->intel_version == 3 || c->intel_version == 4);
}

static uint64_t counters_mask(const VpmuConfig *c)
{
    uint64_t m = c->nr_gp ? wmask(c->nr_gp) : 0;

    return m | (c->nr_fixed ? wmask(c->nr_fixed) << 32 : 0);
}

static void make_cfg(const StateCfg *s, VpmuConfig *cfg)
{
    char err[256] = "";

    vpmu_config_init(cfg, s->vendor);
    if (s->vendor == VPMU_VENDOR_INTEL) {
        cfg->intel_version = s->version;
        cfg->nr_fixed = s->nr_fixed;
        cfg->fixed_width = s->fixed_width;
        cfg->pdcm = s->pdcm;
        cfg->perf_capabilities = s->fw_write ? VPMU_PERF_CAP_FW_WRITE : 0;
    } else {
        cfg->amd_level = s->level;
    }
    cfg->nr_gp = s->nr_gp;
    cfg->gp_width = s->gp_width;
    cfg->raw_events = s->raw;
    ck_assert_msg(vpmu_config_check(cfg, err, sizeof(err)) == 0,
                  "line %d: %s", s->line, err);
}

static size_t formula_size(const VpmuConfig *c)
{
    return 20 + 24 + 16 * (c->nr_gp + c->nr_fixed) + 4;
}

/* ---- Every PMU MSR of a config, derived from docs/msrs.md --------------- */

typedef struct MsrList {
    unsigned n;
    uint32_t msr[MAX_MSRS];
} MsrList;

static void msr_add(MsrList *l, uint32_t msr)
{
    CHECK(l->n < MAX_MSRS, "too many MSRs");
    l->msr[l->n++] = msr;
}

static void config_msrs(const VpmuConfig *c, MsrList *l)
{
    memset(l, 0, sizeof(*l));
    if (is_intel(c)) {
        bool fw = c->perf_capabilities & VPMU_PERF_CAP_FW_WRITE;

        for (unsigned i = 0; i < c->nr_gp; i++) {
            msr_add(l, I_PMC(i));
            msr_add(l, I_EVTSEL(i));
            if (fw) {
                msr_add(l, I_A_PMC(i));
            }
        }
        msr_add(l, I_DEBUGCTL);
        if (c->pdcm) {
            msr_add(l, I_PERF_CAP);
        }
        if (c->intel_version >= 2) {
            for (unsigned j = 0; j < c->nr_fixed; j++) {
                msr_add(l, I_FIXED_CTR(j));
            }
            msr_add(l, I_FIXED_CTRL);
            msr_add(l, I_GSTATUS);
            msr_add(l, I_GCTRL);
            msr_add(l, I_GOVF);
        }
        if (c->intel_version >= 4) {
            msr_add(l, I_GSET);
            msr_add(l, I_GINUSE);
        }
        return;
    }
    for (unsigned i = 0; i < c->nr_gp && i < 4; i++) {
        msr_add(l, A_K7_CTL(i));
        msr_add(l, A_K7_CTR(i));
    }
    if (c->amd_level >= VPMU_AMD_PERFCTR_CORE) {
        for (unsigned i = 0; i < c->nr_gp; i++) {
            msr_add(l, A_CTL(i));
            msr_add(l, A_CTR(i));
        }
    }
    if (c->amd_level == VPMU_AMD_PERFMON_V2) {
        msr_add(l, A_GSTATUS);
        msr_add(l, A_GCTL);
        msr_add(l, A_GCLR);
        msr_add(l, A_GSET);
    }
}

/* The hand-derived list is exactly what vpmu_pmu_msr_spans() answers. */
static void check_msr_list(VpmuPmu *pmu, const MsrList *l)
{
    VpmuMsrSpan spans[32];
    size_t n = vpmu_pmu_msr_spans(pmu, spans, 32);
    unsigned total = 0;

    ck_assert_uint_le(n, 32);
    for (size_t s = 0; s < n; s++) {
        total += spans[s].count;
    }
    ck_assert_uint_eq(total, l->n);
    for (unsigned k = 0; k < l->n; k++) {
        bool found = false;

        for (size_t s = 0; s < n; s++) {
            found |= l->msr[k] >= spans[s].base &&
                     l->msr[k] - spans[s].base < spans[s].count;
        }
        ck_assert_msg(found, "MSR 0x%x not in the PMU's spans", l->msr[k]);
    }
}

/* ---- Snapshots: every MSR, RDPMC and counter state ---------------------- */

typedef struct Snap {
    MsrList l;
    int ret[MAX_MSRS];
    uint64_t val[MAX_MSRS];
    unsigned nctr;
    uint32_t id[MAX_CTRS];
    int pret[MAX_CTRS];
    uint64_t pval[MAX_CTRS];
    VpmuCounterInfo info[MAX_CTRS];
} Snap;

static void snap_take(VpmuPmu *pmu, Snap *s)
{
    const VpmuConfig *c = vpmu_pmu_config(pmu);

    memset(s, 0, sizeof(*s));
    config_msrs(c, &s->l);
    for (unsigned k = 0; k < s->l.n; k++) {
        s->ret[k] = vpmu_pmu_rdmsr(pmu, s->l.msr[k], &s->val[k]);
    }
    for (unsigned i = 0; i < c->nr_gp + c->nr_fixed; i++) {
        bool fixed = i >= c->nr_gp;
        unsigned idx = fixed ? i - c->nr_gp : i;
        uint32_t ecx = fixed ? (1u << 30) | idx : idx;

        s->id[i] = fixed ? VPMU_COUNTER_FIXED_ID(idx) : VPMU_COUNTER_GP(idx);
        s->pret[i] = vpmu_pmu_rdpmc(pmu, ecx, &s->pval[i]);
        CHECK(vpmu_pmu_counter_info(pmu, s->id[i], &s->info[i]) == 0,
              "counter_info 0x%x", s->id[i]);
    }
    s->nctr = c->nr_gp + c->nr_fixed;
}

static void snap_equal(const Snap *a, const Snap *b, const char *what,
                       int line)
{
    CHECK(a->l.n == b->l.n, "line %d %s: MSR lists differ", line, what);
    for (unsigned k = 0; k < a->l.n; k++) {
        CHECK(a->ret[k] == 0 && b->ret[k] == 0,
                      "line %d %s: rdmsr 0x%x failed (%d, %d)", line, what,
                      a->l.msr[k], a->ret[k], b->ret[k]);
        CHECK(a->val[k] == b->val[k],
                      "line %d %s: MSR 0x%x = 0x%" PRIx64 " vs 0x%" PRIx64,
                      line, what, a->l.msr[k], a->val[k], b->val[k]);
    }
    CHECK(a->nctr == b->nctr, "line %d %s: counters differ", line, what);
    for (unsigned i = 0; i < a->nctr; i++) {
        const VpmuCounterInfo *x = &a->info[i], *y = &b->info[i];

        CHECK(a->pret[i] == 0 && b->pret[i] == 0 &&
                      a->pval[i] == b->pval[i],
                      "line %d %s: RDPMC of counter 0x%x: %d/0x%" PRIx64
                      " vs %d/0x%" PRIx64, line, what, a->id[i], a->pret[i],
                      a->pval[i], b->pret[i], b->pval[i]);
        CHECK(x->value == y->value && x->control == y->control &&
                      x->event == y->event && x->state == y->state,
                      "line %d %s: counter 0x%x info {0x%" PRIx64 ", 0x%"
                      PRIx64 ", %d, %d} vs {0x%" PRIx64 ", 0x%" PRIx64
                      ", %d, %d}", line, what, a->id[i], x->value,
                      x->control, x->event, x->state, y->value, y->control,
                      y->event, y->state);
    }
}

/* ---- Programming helpers ------------------------------------------------ */

static void wr(TestPmu *t, uint32_t msr, uint64_t val)
{
    int r = vpmu_pmu_wrmsr(t->pmu, msr, val);

    CHECK(r == 0, "wrmsr 0x%x <- 0x%" PRIx64 ": %d", msr, val, r);
}

static uint64_t rd(TestPmu *t, uint32_t msr)
{
    uint64_t v = 0;
    int r = vpmu_pmu_rdmsr(t->pmu, msr, &v);

    CHECK(r == 0, "rdmsr 0x%x: %d", msr, r);
    return v;
}

static uint64_t ctr_value(TestPmu *t, uint32_t id)
{
    VpmuCounterInfo info;

    ck_assert_int_eq(vpmu_pmu_counter_info(t->pmu, id, &info), 0);
    return info.value;
}

static VpmuCounterState ctr_state(TestPmu *t, uint32_t id)
{
    VpmuCounterInfo info;

    ck_assert_int_eq(vpmu_pmu_counter_info(t->pmu, id, &info), 0);
    return info.state;
}

static void run(TestPmu *t, VpmuArchEvent ev, uint64_t raw, unsigned cpl,
                uint64_t n)
{
    vpmu_fake_source_run(t->fake, ev, raw, cpl, n);
}

/* Write GP counter @i's value through the MSR the config offers. */
static void gp_write(TestPmu *t, const VpmuConfig *c, unsigned i, uint64_t v)
{
    uint64_t m = wmask(c->gp_width);

    ck_assert_uint_eq(v & ~m, 0);
    if (is_intel(c)) {
        if (c->perf_capabilities & VPMU_PERF_CAP_FW_WRITE) {
            wr(t, I_A_PMC(i), v);
            return;
        }
        /* Legacy: EAX sign-extended; only values it can express. */
        ck_assert(v < BIT(31) || (v | 0x7fffffffull) == m);
        wr(t, I_PMC(i), v & 0xffffffffull);
        return;
    }
    /* AMD: the K7 alias and the F15H MSR are the same counter. */
    if (i < 4 && (c->amd_level == VPMU_AMD_K7 || i % 2 == 0)) {
        wr(t, A_K7_CTR(i), v | 0xabcd000000000000ull);  /* bits dropped */
    } else {
        wr(t, A_CTR(i), v);
    }
}

static void gp_ctl(TestPmu *t, const VpmuConfig *c, unsigned i, uint64_t v)
{
    if (is_intel(c)) {
        wr(t, I_EVTSEL(i), v);
    } else if (i < 4 && (c->amd_level == VPMU_AMD_K7 || i % 2 == 1)) {
        wr(t, A_K7_CTL(i), v);
    } else {
        wr(t, A_CTL(i), v);
    }
}

/*
 * Per-counter event selects.  Intel: cycles with INT, instructions USR,
 * branches (AnyThread on v3/v4), LLC references OS+INT (disabled in
 * GLOBAL_CTRL), raw 0x12/0x34, instructions with CMASK (the fake source
 * refuses it: SOURCE_ERROR), cycles without EN, branch misses with PC.
 */
static const uint64_t intel_evtsel[8] = {
    0x0053003c, 0x004100c0, 0x004300c4, 0x00524f2e,
    0x00431234, 0x014300c0, 0x0003003c, 0x004b00c5,
};
#define INTEL_RAW           0x1234ull
/* AMD: the same plan; counter 3 is raw event 0x2C0 (EventSelect[11:8]). */
static const uint64_t amd_evtsel[6] = {
    0x00530076, 0x004100c0, 0x004300c2,
    0x00000302004300c0ull,  /* + GuestOnly/HostOnly: dropped on write */
    0x0052077d, 0x014300c0,
};
#define AMD_RAW             0x2000000c0ull
/* Fixed counter nibbles: OS|USR, USR|PMI, OS, OS|USR|PMI. */
static const uint64_t fixed_nibble[4] = { 0x3, 0xa, 0x1, 0xb };

static uint64_t raw_of(const VpmuConfig *c)
{
    return is_intel(c) ? INTEL_RAW : AMD_RAW;
}

/*
 * A rich state: every counter programmed and valued, overflows raised by
 * counting (and a PMI), STATUS_SET bits where it exists, DEBUGCTL freeze,
 * and events left unfolded in the source at the end.  @salt varies values.
 */
static void program_rich(TestPmu *t, const VpmuConfig *c, unsigned salt)
{
    uint64_t m = wmask(c->gp_width);
    uint64_t fm = c->nr_fixed ? wmask(c->fixed_width) : 0;
    uint64_t raw = raw_of(c);
    bool intel = is_intel(c);
    /* The counter that overflows before the save (no INT). */
    unsigned ov = c->nr_gp > 2 ? 2 : 1;

    ck_assert_uint_lt(salt, 1000);
    for (unsigned i = 0; i < c->nr_gp; i++) {
        uint64_t v = (0x01234567ull * (i + 1) + salt) & 0x7fffffff;

        if (i == 0) {
            v = m - 2000 - salt;        /* overflows after the save */
        } else if (i == ov) {
            v = m - 4;                  /* overflows before the save */
        } else if (i == 5 && (!intel ||
                              (c->perf_capabilities & VPMU_PERF_CAP_FW_WRITE))) {
            v = (0x123456789abcull + salt) & m;
        }
        gp_write(t, c, i, v);
    }
    for (unsigned j = 0; j < c->nr_fixed; j++) {
        wr(t, I_FIXED_CTR(j),
           j == 1 ? fm - 2 : (0x2222222ull + 0x1111 * j + salt) & fm);
    }
    for (unsigned i = 0; i < c->nr_gp; i++) {
        uint64_t ctl = intel ? intel_evtsel[i] : amd_evtsel[i];

        if (i == 2 && anythread_ok(c)) {
            ctl |= EVTSEL_ANY;
        }
        gp_ctl(t, c, i, ctl);
    }
    if (intel && c->intel_version >= 2) {
        uint64_t fctrl = 0;

        for (unsigned j = 0; j < c->nr_fixed; j++) {
            uint64_t n = fixed_nibble[j];

            if (j == 0 && anythread_ok(c)) {
                n |= 0x4;
            }
            fctrl |= n << (4 * j);
        }
        wr(t, I_FIXED_CTRL, fctrl);
    }
    if (has_global(c)) {
        wr(t, intel ? I_GCTRL : A_GCTL, counters_mask(c) & ~BIT(3));
    }
    /* Overflows by counting: GP 2 or 1 (no INT), fixed 1 (PMI). */
    run(t, VPMU_EVENT_BRANCHES, 0, 3, 10);
    run(t, VPMU_EVENT_CYCLES, 0, 3, 5);
    run(t, VPMU_EVENT_INSTRUCTIONS, 0, 3, 50 + salt);
    run(t, VPMU_EVENT_INSTRUCTIONS, 0, 0, 7);
    run(t, VPMU_EVENT_LLC_REFERENCES, 0, 0, 3);
    run(t, VPMU_EVENT_RAW, raw, 3, 9);
    run(t, VPMU_EVENT_BRANCH_MISSES, 0, 0, 4);
    /* Status bits by STATUS_SET where it exists. */
    if (intel && c->intel_version >= 4) {
        wr(t, I_GSET, (c->nr_gp > 5 ? BIT(5) : 0) |
                      (c->nr_fixed > 2 ? BIT(34) : 0) |
                      STATUS_OVF_BUF | STATUS_LBR_FRZ);
    } else if (!intel && c->amd_level == VPMU_AMD_PERFMON_V2) {
        wr(t, A_GSET, BIT(c->nr_gp - 1) | (c->nr_gp > 5 ? BIT(5) : 0) |
                      (c->nr_gp > 1 ? BIT(1) : 0));
    }
    if (intel) {
        wr(t, I_DEBUGCTL, DEBUGCTL_BTF | DEBUGCTL_FRZ_SMM |
                          (c->intel_version >= 2 ? DEBUGCTL_FRZ_PMI : 0));
    }
    /* Left in the source, unfolded, for save to pick up. */
    run(t, VPMU_EVENT_CYCLES, 0, 0, 100 + salt);
    run(t, VPMU_EVENT_INSTRUCTIONS, 0, 3, 20);
    run(t, VPMU_EVENT_BRANCHES, 0, 0, 3);
}

static size_t save_ok(TestPmu *t, uint8_t *buf, size_t len)
{
    size_t written = 12345;
    int r = vpmu_pmu_save(t->pmu, buf, len, &written);

    CHECK(r == 0, "vpmu_pmu_save: %d", r);
    CHECK(written == vpmu_pmu_state_size(t->pmu), "written %zu", written);
    return written;
}

/* Load a heap copy of exactly @len bytes, so overreads are caught. */
static int load_exact(TestPmu *t, const uint8_t *blob, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    int r;

    CHECK(copy != NULL, "malloc");
    if (len) {
        memcpy(copy, blob, len);
    }
    r = vpmu_pmu_load(t->pmu, copy, len);
    free(copy);
    return r;
}

/* ---- Round trips --------------------------------------------------------- */

/* Header bytes of a blob, from the config (state.c's table). */
static void check_header(const VpmuConfig *c, const uint8_t *b, size_t len)
{
    unsigned flags = (c->pdcm ? 1 : 0) |
                     ((c->perf_capabilities & VPMU_PERF_CAP_FW_WRITE) ? 2 : 0);

    ck_assert_uint_eq(len, formula_size(c));
    ck_assert(memcmp(b, "VPMU", 4) == 0);
    ck_assert_uint_eq(get_le(b + 4, 2), 1);
    ck_assert_uint_eq(b[6], c->vendor);
    ck_assert_uint_eq(b[7], is_intel(c) ? c->intel_version
                                        : (unsigned)c->amd_level);
    ck_assert_uint_eq(b[8], c->nr_gp);
    ck_assert_uint_eq(b[9], c->nr_fixed);
    ck_assert_uint_eq(b[10], c->gp_width);
    ck_assert_uint_eq(b[11], c->fixed_width);
    ck_assert_uint_eq(b[12], flags);
    ck_assert_uint_eq(b[13] | b[14] | b[15], 0);
    ck_assert_uint_eq(get_le(b + 16, 4), len - HDR_SIZE - CRC_SIZE);
    ck_assert_uint_eq(get_le(b + len - 4, 4), test_crc32(b, len - 4));
}

/* The blob holds what the guest reads. */
static void check_payload(TestPmu *t, const VpmuConfig *c, const uint8_t *b)
{
    bool intel = is_intel(c);

    if (has_global(c)) {
        ck_assert_uint_eq(slot_get(b, SLOT_GCTRL),
                          rd(t, intel ? I_GCTRL : A_GCTL));
        ck_assert_uint_eq(slot_get(b, SLOT_STATUS),
                          rd(t, intel ? I_GSTATUS : A_GSTATUS));
    }
    ck_assert_uint_eq(slot_get(b, SLOT_DEBUGCTL), intel ? rd(t, I_DEBUGCTL)
                                                        : 0);
    for (unsigned i = 0; i < c->nr_gp; i++) {
        ck_assert_uint_eq(slot_get(b, SLOT_CTL(i)),
                          rd(t, intel ? I_EVTSEL(i) : (i < 4 ? A_K7_CTL(i)
                                                             : A_CTL(i))));
        ck_assert_uint_eq(slot_get(b, SLOT_VAL(i)),
                          rd(t, intel ? I_PMC(i) : (i < 4 ? A_K7_CTR(i)
                                                          : A_CTR(i))));
    }
    for (unsigned j = 0; j < c->nr_fixed; j++) {
        unsigned k = c->nr_gp + j;

        ck_assert_uint_eq(slot_get(b, SLOT_CTL(k)),
                          (rd(t, I_FIXED_CTRL) >> (4 * j)) & 0xf);
        ck_assert_uint_eq(slot_get(b, SLOT_VAL(k)), rd(t, I_FIXED_CTR(j)));
    }
}

typedef struct Lockstep {
    TestPmu *a, *b;
    int line;
} Lockstep;

static void lockstep_check(Lockstep *ls, unsigned pmis_a0, unsigned pmis_b0,
                           const char *what)
{
    Snap sa, sb;

    snap_take(ls->a->pmu, &sa);
    snap_take(ls->b->pmu, &sb);
    snap_equal(&sa, &sb, what, ls->line);
    CHECK(ls->a->pmis - pmis_a0 == ls->b->pmis - pmis_b0,
                  "line %d %s: %u PMIs on the original, %u after load",
                  ls->line, what, ls->a->pmis - pmis_a0,
                  ls->b->pmis - pmis_b0);
}

static void lockstep_run(Lockstep *ls, VpmuArchEvent ev, uint64_t raw,
                         unsigned cpl, uint64_t n, const char *what)
{
    unsigned pa = ls->a->pmis, pb = ls->b->pmis;

    run(ls->a, ev, raw, cpl, n);
    run(ls->b, ev, raw, cpl, n);
    lockstep_check(ls, pa, pb, what);
}

static void lockstep_wr(Lockstep *ls, uint32_t msr, uint64_t val,
                        const char *what)
{
    unsigned pa = ls->a->pmis, pb = ls->b->pmis;

    wr(ls->a, msr, val);
    wr(ls->b, msr, val);
    lockstep_check(ls, pa, pb, what);
}

static void lockstep_retired(Lockstep *ls, unsigned cpl, bool branch,
                             const char *what)
{
    unsigned pa = ls->a->pmis, pb = ls->b->pmis;

    vpmu_pmu_instruction_retired(ls->a->pmu, cpl, branch);
    vpmu_pmu_instruction_retired(ls->b->pmu, cpl, branch);
    lockstep_check(ls, pa, pb, what);
}

/*
 * After the load, feed A (the original) and B (the restored) the same
 * events: B counts from the saved values, and overflows, PMIs and freezes
 * at the same event as A.
 */
static void continue_lockstep(TestPmu *a, TestPmu *b, const VpmuConfig *c,
                              const uint8_t *blob, int line)
{
    Lockstep ls = { a, b, line };
    uint64_t m = wmask(c->gp_width);
    uint64_t raw = raw_of(c);
    bool intel = is_intel(c);
    unsigned pb;

    /* Instructions: GP 1 (USR) and fixed 0 (OS|USR) count exactly N. */
    lockstep_run(&ls, VPMU_EVENT_INSTRUCTIONS, 0, 3, 123, "instructions");
    if (c->nr_gp > 1) {
        ck_assert_int_eq(ctr_state(b, VPMU_COUNTER_GP(1)),
                         VPMU_COUNTER_COUNTING);
        ck_assert_uint_eq(ctr_value(b, VPMU_COUNTER_GP(1)),
                          (slot_get(blob, SLOT_VAL(1)) + 123) & m);
    }
    if (c->nr_fixed > 0) {
        ck_assert_int_eq(ctr_state(b, VPMU_COUNTER_FIXED_ID(0)),
                         VPMU_COUNTER_COUNTING);
        ck_assert_uint_eq(ctr_value(b, VPMU_COUNTER_FIXED_ID(0)),
                          (slot_get(blob, SLOT_VAL(c->nr_gp)) + 123) &
                          wmask(c->fixed_width));
    }

    /* GP 0 (cycles, INT): one event short of its overflow, then over. */
    if (c->nr_gp > 0) {
        uint64_t v0 = slot_get(blob, SLOT_VAL(0));
        uint64_t d = m - v0 + 1;

        ck_assert_int_eq(ctr_state(b, VPMU_COUNTER_GP(0)),
                         VPMU_COUNTER_COUNTING);
        ck_assert_uint_gt(d, 1);
        pb = b->pmis;
        lockstep_run(&ls, VPMU_EVENT_CYCLES, 0, 0, d - 1, "to overflow - 1");
        ck_assert_uint_eq(ctr_value(b, VPMU_COUNTER_GP(0)), m);
        ck_assert_uint_eq(b->pmis, pb);
        lockstep_run(&ls, VPMU_EVENT_CYCLES, 0, 0, 1, "the overflow");
        ck_assert_uint_eq(ctr_value(b, VPMU_COUNTER_GP(0)), 0);
        ck_assert_uint_eq(b->pmis, pb + 1);
        if (has_global(c)) {
            ck_assert(rd(b, intel ? I_GSTATUS : A_GSTATUS) & BIT(0));
        }
    }

    /* Everything else, frozen or not (Freeze_PerfMon_On_PMI was set). */
    lockstep_run(&ls, VPMU_EVENT_BRANCHES, 0, 3, 77, "branches");
    lockstep_run(&ls, VPMU_EVENT_RAW, raw, 3, 5, "raw");
    lockstep_run(&ls, VPMU_EVENT_LLC_REFERENCES, 0, 0, 11, "LLC refs");
    lockstep_run(&ls, VPMU_EVENT_BRANCH_MISSES, 0, 3, 13, "branch misses");
    lockstep_run(&ls, VPMU_EVENT_CYCLES, 0, 3, 3, "user cycles");
    lockstep_run(&ls, VPMU_EVENT_REF_CYCLES, 0, 0, 17, "ref cycles");
    lockstep_run(&ls, VPMU_EVENT_TOPDOWN_SLOTS, 0, 0, 19, "slots");
    lockstep_retired(&ls, 0, true, "retired branch at CPL 0");
    lockstep_retired(&ls, 3, false, "retired at CPL 3");

    /* Unfreeze: legacy freeze cleared GLOBAL_CTRL, v4+ set CTR_Frz. */
    if (intel && c->intel_version >= 4) {
        lockstep_wr(&ls, I_GOVF, STATUS_CTR_FRZ | (c->nr_gp ? BIT(0) : 0),
                    "unfreeze");
    } else if (intel && c->intel_version >= 2) {
        lockstep_wr(&ls, I_GCTRL, slot_get(blob, SLOT_GCTRL), "unfreeze");
    } else if (!intel && c->amd_level == VPMU_AMD_PERFMON_V2) {
        lockstep_wr(&ls, A_GCLR, BIT(0), "status clear");
    }
    lockstep_run(&ls, VPMU_EVENT_INSTRUCTIONS, 0, 0, 1000, "kernel instr");
    lockstep_run(&ls, VPMU_EVENT_CYCLES, 0, 0, 50, "kernel cycles");
    lockstep_run(&ls, VPMU_EVENT_CYCLES, 0, 3, 2 * m, "two wraps");
}

START_TEST(test_roundtrip)
{
    const StateCfg *sc = &rt_cfgs[_i];
    uint8_t blob[MAX_BLOB], again[MAX_BLOB], reblob[MAX_BLOB];
    VpmuConfig c;
    TestPmu a, b;
    Snap before, after, sb;
    MsrList l;
    size_t n;
    int r;

    make_cfg(sc, &c);
    test_pmu_init(&a, &c);
    config_msrs(&c, &l);
    check_msr_list(a.pmu, &l);
    ck_assert_uint_eq(vpmu_pmu_state_size(a.pmu), formula_size(&c));
    program_rich(&a, &c, 0);

    /* Saving is invisible to the guest and repeatable. */
    snap_take(a.pmu, &before);
    n = save_ok(&a, blob, sizeof(blob));
    snap_take(a.pmu, &after);
    snap_equal(&before, &after, "save changed the PMU", sc->line);
    ck_assert_uint_eq(save_ok(&a, again, sizeof(again)), n);
    ck_assert(memcmp(blob, again, n) == 0);
    check_header(&c, blob, n);
    check_payload(&a, &c, blob);
    if (has_global(&c)) {
        ck_assert_msg(slot_get(blob, SLOT_STATUS) != 0,
                      "line %d: no status bits in the rich state", sc->line);
    }

    /* Into a fresh PMU with the same config and its own source. */
    test_pmu_init(&b, &c);
    r = load_exact(&b, blob, n);
    ck_assert_msg(r == 0, "line %d: load %d", sc->line, r);
    ck_assert_uint_eq(b.pmis, 0);
    snap_take(b.pmu, &sb);
    snap_equal(&after, &sb, "after load", sc->line);
    /* And the restored PMU saves the same bytes. */
    ck_assert_uint_eq(save_ok(&b, reblob, sizeof(reblob)), n);
    ck_assert(memcmp(blob, reblob, n) == 0);

    continue_lockstep(&a, &b, &c, blob, sc->line);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
}
END_TEST

/* Loading over a PMU that was busy counting something else. */
START_TEST(test_roundtrip_over_used)
{
    const StateCfg *sc = &rt_cfgs[_i];
    uint8_t blob[MAX_BLOB], blob_b[MAX_BLOB];
    VpmuConfig c;
    TestPmu a, b;
    Snap sa, sb;
    size_t n;

    make_cfg(sc, &c);
    test_pmu_init(&a, &c);
    test_pmu_init(&b, &c);
    program_rich(&a, &c, 0);
    program_rich(&b, &c, 321);
    /* B has handles open, counts unfolded, a different event on GP 1. */
    if (c.nr_gp > 1) {
        gp_ctl(&b, &c, 1, is_intel(&c) ? 0x004300c4 : 0x004300c2);
    }
    run(&b, VPMU_EVENT_CYCLES, 0, 0, 37);
    run(&b, VPMU_EVENT_BRANCHES, 0, 3, 41);

    n = save_ok(&a, blob, sizeof(blob));
    ck_assert_int_eq(load_exact(&b, blob, n), 0);
    snap_take(a.pmu, &sa);
    snap_take(b.pmu, &sb);
    snap_equal(&sa, &sb, "load over a used PMU", sc->line);
    ck_assert_uint_eq(save_ok(&b, blob_b, sizeof(blob_b)), n);
    ck_assert(memcmp(blob, blob_b, n) == 0);
    continue_lockstep(&a, &b, &c, blob, sc->line);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
}
END_TEST

/* Reset state round trips too, and a load of it resets a used PMU. */
START_TEST(test_roundtrip_reset_state)
{
    const StateCfg *sc = &rt_cfgs[_i];
    uint8_t blob[MAX_BLOB], blob2[MAX_BLOB];
    VpmuConfig c;
    TestPmu a, b;
    Snap sa, sb;
    size_t n;

    make_cfg(sc, &c);
    test_pmu_init(&a, &c);
    test_pmu_init(&b, &c);
    n = save_ok(&a, blob, sizeof(blob));
    ck_assert_uint_eq(slot_get(blob, SLOT_GCTRL), c.nr_gp ? wmask(c.nr_gp)
                                                          : 0);
    for (unsigned s = SLOT_STATUS; s < (n - HDR_SIZE - CRC_SIZE) / 8; s++) {
        ck_assert_uint_eq(slot_get(blob, s), 0);
    }
    program_rich(&b, &c, 5);
    ck_assert_int_eq(load_exact(&b, blob, n), 0);
    snap_take(a.pmu, &sa);
    snap_take(b.pmu, &sb);
    snap_equal(&sa, &sb, "reset state", sc->line);
    ck_assert_uint_eq(save_ok(&b, blob2, sizeof(blob2)), n);
    ck_assert(memcmp(blob, blob2, n) == 0);
    /* Nothing counts in the reset state. */
    run(&b, VPMU_EVENT_CYCLES, 0, 0, 1000);
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1000);
    ck_assert_uint_eq(save_ok(&b, blob2, sizeof(blob2)), n);
    ck_assert(memcmp(blob, blob2, n) == 0);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
}
END_TEST

/* ---- No count lost or invented ------------------------------------------ */

START_TEST(test_no_count_lost_intel)
{
    uint8_t blob[MAX_BLOB], blob2[MAX_BLOB];
    const uint64_t top = BIT(48);
    VpmuConfig c;
    TestPmu a, b, d;
    size_t n;

    vpmu_config_init(&c, VPMU_VENDOR_INTEL);       /* v2, 8 + 3, 48 bits */
    test_pmu_init(&a, &c);
    wr(&a, I_A_PMC(0), 1000);                   /* off: nothing counts */
    wr(&a, I_EVTSEL(0), 0x004300c0);            /* instr OS|USR|EN: 1001 */
    wr(&a, I_FIXED_CTR(0), 5000);               /* 1002 */
    wr(&a, I_FIXED_CTRL, 0x2);                  /* fixed 0 USR: 1003 */
    wr(&a, I_GCTRL, 0x1000000ffull);            /* 1004, fixed 0 on */
    wr(&a, I_A_PMC(1), top - 600);              /* 1005 */
    wr(&a, I_EVTSEL(1), 0x0053003c);            /* cycles +INT: 1006 */
    ck_assert_uint_eq(rd(&a, I_PMC(0)), 1006);
    run(&a, VPMU_EVENT_INSTRUCTIONS, 0, 3, 500);   /* GP0 1506, F0 5500 */
    run(&a, VPMU_EVENT_INSTRUCTIONS, 0, 0, 250);   /* GP0 1756 */
    run(&a, VPMU_EVENT_CYCLES, 0, 0, 400);         /* GP1 top - 200 */

    /* Save mid-run: nothing synced since the events. */
    n = save_ok(&a, blob, sizeof(blob));
    ck_assert_uint_eq(slot_get(blob, SLOT_VAL(0)), 1756);
    ck_assert_uint_eq(slot_get(blob, SLOT_VAL(1)), top - 200);
    ck_assert_uint_eq(slot_get(blob, SLOT_VAL(8)), 5500);
    ck_assert_uint_eq(slot_get(blob, SLOT_STATUS), 0);
    /* What A counts after the save is A's alone. */
    run(&a, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1000);
    run(&a, VPMU_EVENT_CYCLES, 0, 0, 1000);
    ck_assert_uint_eq(rd(&a, I_PMC(0)), 2756);
    ck_assert_uint_eq(rd(&a, I_FIXED_CTR(0)), 6500);

    test_pmu_init(&b, &c);
    ck_assert_int_eq(load_exact(&b, blob, n), 0);
    ck_assert_uint_eq(rd(&b, I_PMC(0)), 1756);
    ck_assert_uint_eq(rd(&b, I_FIXED_CTR(0)), 5500);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), top - 200);
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 3, 300);   /* GP0 2056, F0 5800 */
    vpmu_pmu_instruction_retired(b.pmu, 0, false); /* GP0 2057 */
    vpmu_pmu_instruction_retired(b.pmu, 3, true);  /* GP0 2058, F0 5801 */
    wr(&b, I_DEBUGCTL, DEBUGCTL_BTF);              /* GP0 2059 */
    run(&b, VPMU_EVENT_CYCLES, 0, 3, 199);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), top - 1);
    ck_assert_uint_eq(b.pmis, 0);
    run(&b, VPMU_EVENT_CYCLES, 0, 3, 1);           /* the wrap: PMI */
    ck_assert_uint_eq(b.pmis, 1);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), 0);
    run(&b, VPMU_EVENT_CYCLES, 0, 0, 7);
    ck_assert_uint_eq(rd(&b, I_PMC(0)), 2059);
    ck_assert_uint_eq(rd(&b, I_FIXED_CTR(0)), 5801);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), 7);
    ck_assert_uint_eq(rd(&b, I_GSTATUS), BIT(1));
    ck_assert_uint_eq(rd(&a, I_PMC(0)), 2756);     /* A untouched by B */

    /* Second hop, B -> D, again mid-run. */
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 0, 40);    /* GP0 2099 */
    n = save_ok(&b, blob2, sizeof(blob2));
    test_pmu_init(&d, &c);
    ck_assert_int_eq(load_exact(&d, blob2, n), 0);
    run(&d, VPMU_EVENT_INSTRUCTIONS, 0, 0, 1);
    run(&d, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1);
    ck_assert_uint_eq(rd(&d, I_PMC(0)), 2101);
    ck_assert_uint_eq(rd(&d, I_FIXED_CTR(0)), 5802);
    ck_assert_uint_eq(rd(&d, I_PMC(1)), 7);
    ck_assert_uint_eq(d.pmis, 0);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
    test_pmu_fini(&d);
}
END_TEST

START_TEST(test_no_count_lost_amd)
{
    uint8_t blob[MAX_BLOB];
    const uint64_t top = BIT(48);
    VpmuConfig c;
    TestPmu a, b;
    size_t n;

    vpmu_config_init(&c, VPMU_VENDOR_AMD);         /* PerfMonV2, 6 */
    test_pmu_init(&a, &c);
    wr(&a, A_CTR(0), 70);                       /* off */
    wr(&a, A_CTL(0), 0x004300c0);               /* instr OS|USR|EN: 71 */
    wr(&a, A_K7_CTR(1), top - 50);              /* 72 */
    wr(&a, A_K7_CTL(1), 0x00530076);            /* cycles + INT: 73 */
    wr(&a, A_GCTL, 0x3);                        /* 74 */
    run(&a, VPMU_EVENT_INSTRUCTIONS, 0, 3, 26);    /* 100 */
    run(&a, VPMU_EVENT_CYCLES, 0, 0, 30);          /* top - 20 */
    n = save_ok(&a, blob, sizeof(blob));
    ck_assert_uint_eq(slot_get(blob, SLOT_VAL(0)), 100);
    ck_assert_uint_eq(slot_get(blob, SLOT_VAL(1)), top - 20);
    ck_assert_uint_eq(slot_get(blob, SLOT_GCTRL), 0x3);
    run(&a, VPMU_EVENT_INSTRUCTIONS, 0, 3, 5000);
    run(&a, VPMU_EVENT_CYCLES, 0, 0, 5000);

    test_pmu_init(&b, &c);
    ck_assert_int_eq(load_exact(&b, blob, n), 0);
    run(&b, VPMU_EVENT_CYCLES, 0, 3, 19);
    ck_assert_uint_eq(b.pmis, 0);
    ck_assert_uint_eq(rd(&b, A_CTR(1)), top - 1);
    run(&b, VPMU_EVENT_CYCLES, 0, 3, 1);
    ck_assert_uint_eq(b.pmis, 1);
    ck_assert_uint_eq(rd(&b, A_K7_CTR(1)), 0);
    ck_assert_uint_eq(rd(&b, A_GSTATUS), 0x2);
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 0, 900);   /* 1000 */
    wr(&b, A_GCLR, 0x2);                           /* 1001 */
    ck_assert_uint_eq(rd(&b, A_GSTATUS), 0);
    ck_assert_uint_eq(rd(&b, A_K7_CTR(0)), 1001);
    ck_assert_uint_eq(rd(&b, A_CTR(0)), 1001);
    ck_assert_uint_eq(rd(&a, A_CTR(0)), 5100);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
}
END_TEST

/* A v4 PMU frozen by a PMI stays frozen after the load, until unfrozen. */
START_TEST(test_frozen_state)
{
    uint8_t blob[MAX_BLOB];
    VpmuConfig c;
    TestPmu a, b;
    size_t n;

    vpmu_config_init(&c, VPMU_VENDOR_INTEL);
    c.intel_version = 4;
    test_pmu_init(&a, &c);
    wr(&a, I_A_PMC(0), BIT(48) - 3);
    wr(&a, I_EVTSEL(0), 0x0053003c);            /* cycles, INT */
    wr(&a, I_A_PMC(1), 10);
    wr(&a, I_EVTSEL(1), 0x004100c0);            /* instr USR */
    wr(&a, I_DEBUGCTL, DEBUGCTL_FRZ_PMI);
    /* Wraps at the 3rd event: PMI, CTR_Frz; the last 2 are not counted. */
    run(&a, VPMU_EVENT_CYCLES, 0, 0, 5);
    ck_assert_uint_eq(a.pmis, 1);
    ck_assert_uint_eq(rd(&a, I_GSTATUS), STATUS_CTR_FRZ | BIT(0));
    ck_assert_uint_eq(rd(&a, I_PMC(0)), 0);
    n = save_ok(&a, blob, sizeof(blob));

    test_pmu_init(&b, &c);
    ck_assert_int_eq(load_exact(&b, blob, n), 0);
    ck_assert_uint_eq(rd(&b, I_GSTATUS), STATUS_CTR_FRZ | BIT(0));
    run(&b, VPMU_EVENT_CYCLES, 0, 0, 100);
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 3, 100);
    ck_assert_uint_eq(rd(&b, I_PMC(0)), 0);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), 10);
    wr(&b, I_GOVF, STATUS_CTR_FRZ);
    run(&b, VPMU_EVENT_CYCLES, 0, 0, 100);
    run(&b, VPMU_EVENT_INSTRUCTIONS, 0, 3, 100);
    ck_assert_uint_eq(rd(&b, I_PMC(0)), 100);
    ck_assert_uint_eq(rd(&b, I_PMC(1)), 110);
    ck_assert_uint_eq(rd(&b, I_GSTATUS), BIT(0));
    test_pmu_fini(&a);
    test_pmu_fini(&b);
}
END_TEST

/* ---- Size, -ENOSPC ------------------------------------------------------- */

START_TEST(test_size_and_enospc)
{
    const StateCfg *sc = &rt_cfgs[_i];
    uint8_t buf[MAX_BLOB + 16];
    size_t size, lens[3];
    VpmuConfig c;
    TestPmu t;

    make_cfg(sc, &c);
    test_pmu_init(&t, &c);
    program_rich(&t, &c, 1);
    size = vpmu_pmu_state_size(t.pmu);
    ck_assert_uint_eq(size, 20 + 24 + 16 * (c.nr_gp + c.nr_fixed) + 4);
    ck_assert_uint_le(size + 16, sizeof(buf));

    lens[0] = 0;
    lens[1] = 1;
    lens[2] = size - 1;
    for (unsigned k = 0; k < 3; k++) {
        size_t written = 777;

        memset(buf, 0xaa, sizeof(buf));
        ck_assert_int_eq(vpmu_pmu_save(t.pmu, buf, lens[k], &written),
                         -ENOSPC);
        ck_assert_uint_eq(written, 0);
        for (size_t i = 0; i < sizeof(buf); i++) {
            CHECK(buf[i] == 0xaa, "len %zu: byte %zu written",
                          lens[k], i);
        }
    }
    /* Exactly enough, and more than enough: the tail stays untouched. */
    memset(buf, 0xaa, sizeof(buf));
    ck_assert_uint_eq(save_ok(&t, buf, size), size);
    memset(buf, 0xaa, sizeof(buf));
    ck_assert_uint_eq(save_ok(&t, buf, size + 16), size);
    for (size_t i = size; i < size + 16; i++) {
        CHECK(buf[i] == 0xaa, "byte %zu past the blob written", i);
    }
    check_header(&c, buf, size);
    test_pmu_fini(&t);
}
END_TEST

/* ---- Golden blobs: the byte format, independent of the host ------------- */

START_TEST(test_crc_check_value)
{
    ck_assert_uint_eq(test_crc32((const uint8_t *)"123456789", 9),
                      0xcbf43926u);
}
END_TEST

/* Intel v2, 2 GP + 1 fixed, 48/48, PDCM + FW_WRITE. */
static const uint8_t golden_intel[96] = {
    'V', 'P', 'M', 'U',
    0x01, 0x00,                 /* format 1 */
    0x01,                       /* Intel */
    0x02,                       /* version 2 */
    0x02, 0x01, 0x30, 0x30,     /* 2 GP, 1 fixed, 48, 48 */
    0x03, 0x00, 0x00, 0x00,     /* PDCM | FW_WRITE */
    0x48, 0x00, 0x00, 0x00,     /* 72 payload bytes */
    /* GLOBAL_CTRL 0x100000003 */
    0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    /* GLOBAL_STATUS: GP 1 overflowed */
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* DEBUGCTL: BTF | FREEZE_PERFMON_ON_PMI */
    0x02, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* EVTSEL0 0x53003c, PMC0 0x123456799a */
    0x3c, 0x00, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x9a, 0x79, 0x56, 0x34, 0x12, 0x00, 0x00, 0x00,
    /* EVTSEL1 0x4100c5, PMC1 5 */
    0xc5, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* fixed 0: nibble 0xa, value 0xabce00 */
    0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0xce, 0xab, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* CRC-32 0xf32405d5 (python3: zlib.crc32(blob[:92])) */
    0xd5, 0x05, 0x24, 0xf3,
};

static void golden_intel_config(VpmuConfig *c)
{
    vpmu_config_init(c, VPMU_VENDOR_INTEL);
    c->nr_gp = 2;
    c->nr_fixed = 1;
}

START_TEST(test_golden_intel_save)
{
    uint8_t blob[MAX_BLOB];
    VpmuConfig c;
    TestPmu t;
    size_t n;

    golden_intel_config(&c);
    test_pmu_init(&t, &c);
    wr(&t, I_A_PMC(0), 0x123456789aull);
    wr(&t, I_A_PMC(1), 0xfffffffffff0ull);
    wr(&t, I_FIXED_CTR(0), 0xabcdef);
    wr(&t, I_EVTSEL(0), 0x0053003c);    /* cycles OS|USR|INT|EN */
    wr(&t, I_EVTSEL(1), 0x004100c5);    /* branch misses USR|EN */
    wr(&t, I_FIXED_CTRL, 0xa);          /* fixed 0 (instr) USR|PMI */
    wr(&t, I_GCTRL, 0x100000003ull);
    wr(&t, I_DEBUGCTL, DEBUGCTL_BTF | DEBUGCTL_FRZ_PMI);
    run(&t, VPMU_EVENT_BRANCH_MISSES, 0, 3, 0x15);  /* wraps to 5 */
    run(&t, VPMU_EVENT_CYCLES, 0, 0, 0x100);
    run(&t, VPMU_EVENT_INSTRUCTIONS, 0, 3, 0x11);
    ck_assert_uint_eq(t.pmis, 0);
    n = save_ok(&t, blob, sizeof(blob));
    ck_assert_uint_eq(n, sizeof(golden_intel));
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(blob[i] == golden_intel[i],
                      "byte %zu: 0x%02x, golden 0x%02x", i, blob[i],
                      golden_intel[i]);
    }
    ck_assert_uint_eq(test_crc32(golden_intel, 92), 0xf32405d5u);
    test_pmu_fini(&t);
}
END_TEST

START_TEST(test_golden_intel_load)
{
    VpmuConfig c;
    TestPmu t;

    golden_intel_config(&c);
    test_pmu_init(&t, &c);
    ck_assert_int_eq(load_exact(&t, golden_intel, sizeof(golden_intel)), 0);
    ck_assert_uint_eq(rd(&t, I_GCTRL), 0x100000003ull);
    ck_assert_uint_eq(rd(&t, I_GSTATUS), 0x2);
    ck_assert_uint_eq(rd(&t, I_DEBUGCTL), 0x1002);
    ck_assert_uint_eq(rd(&t, I_EVTSEL(0)), 0x0053003c);
    ck_assert_uint_eq(rd(&t, I_PMC(0)), 0x123456799aull);
    ck_assert_uint_eq(rd(&t, I_A_PMC(0)), 0x123456799aull);
    ck_assert_uint_eq(rd(&t, I_EVTSEL(1)), 0x004100c5);
    ck_assert_uint_eq(rd(&t, I_PMC(1)), 5);
    ck_assert_uint_eq(rd(&t, I_FIXED_CTRL), 0xa);
    ck_assert_uint_eq(rd(&t, I_FIXED_CTR(0)), 0xabce00);
    /* And counts on. */
    run(&t, VPMU_EVENT_CYCLES, 0, 3, 0x66);
    run(&t, VPMU_EVENT_INSTRUCTIONS, 0, 3, 0x100);
    ck_assert_uint_eq(rd(&t, I_PMC(0)), 0x1234567a00ull);
    ck_assert_uint_eq(rd(&t, I_FIXED_CTR(0)), 0xabcf00);
    test_pmu_fini(&t);
}
END_TEST

/* AMD PerfMonV2, 2 counters, raw events. */
static const uint8_t golden_amd[80] = {
    'V', 'P', 'M', 'U',
    0x01, 0x00,                 /* format 1 */
    0x02,                       /* AMD */
    0x03,                       /* PerfMonV2 */
    0x02, 0x00, 0x30, 0x00,     /* 2 GP, 0 fixed, 48, 0 */
    0x00, 0x00, 0x00, 0x00,     /* no flags */
    0x38, 0x00, 0x00, 0x00,     /* 56 payload bytes */
    /* GLOBAL_CTL 3 (reset) */
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* GLOBAL_STATUS: bit 0 by STATUS_SET, bit 1 by overflow */
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* DEBUGCTL */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* PERF_CTL0 0x530076, PERF_CTR0 0xfedcba987664 */
    0x76, 0x00, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x64, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0x00, 0x00,
    /* PERF_CTL1 0x2004100c2 (event 0x2C2), PERF_CTR1 1 */
    0xc2, 0x00, 0x41, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* CRC-32 0x48b731bc (python3: zlib.crc32(blob[:76])) */
    0xbc, 0x31, 0xb7, 0x48,
};

static void golden_amd_config(VpmuConfig *c)
{
    vpmu_config_init(c, VPMU_VENDOR_AMD);
    c->nr_gp = 2;
    c->raw_events = true;
}

START_TEST(test_golden_amd_save)
{
    uint8_t blob[MAX_BLOB];
    VpmuConfig c;
    TestPmu t;
    size_t n;

    golden_amd_config(&c);
    test_pmu_init(&t, &c);
    wr(&t, A_CTR(0), 0xfedcba987654ull);
    wr(&t, A_CTR(1), 0xfffffffffffeull);
    wr(&t, A_CTL(0), 0x00530076);
    wr(&t, A_CTL(1), 0x2004100c2ull);
    wr(&t, A_GSET, 0x1);
    run(&t, VPMU_EVENT_RAW, 0x2000000c2ull, 3, 3);
    run(&t, VPMU_EVENT_CYCLES, 0, 0, 0x10);
    n = save_ok(&t, blob, sizeof(blob));
    ck_assert_uint_eq(n, sizeof(golden_amd));
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(blob[i] == golden_amd[i],
                      "byte %zu: 0x%02x, golden 0x%02x", i, blob[i],
                      golden_amd[i]);
    }
    ck_assert_uint_eq(test_crc32(golden_amd, 76), 0x48b731bcu);
    test_pmu_fini(&t);
}
END_TEST

START_TEST(test_golden_amd_load)
{
    VpmuConfig c;
    TestPmu t;

    golden_amd_config(&c);
    test_pmu_init(&t, &c);
    ck_assert_int_eq(load_exact(&t, golden_amd, sizeof(golden_amd)), 0);
    ck_assert_uint_eq(rd(&t, A_GCTL), 3);
    ck_assert_uint_eq(rd(&t, A_GSTATUS), 3);
    ck_assert_uint_eq(rd(&t, A_CTL(0)), 0x00530076);
    ck_assert_uint_eq(rd(&t, A_K7_CTL(0)), 0x00530076);
    ck_assert_uint_eq(rd(&t, A_CTR(0)), 0xfedcba987664ull);
    ck_assert_uint_eq(rd(&t, A_CTL(1)), 0x2004100c2ull);
    ck_assert_uint_eq(rd(&t, A_CTR(1)), 1);
    run(&t, VPMU_EVENT_RAW, 0x2000000c2ull, 3, 9);
    ck_assert_uint_eq(rd(&t, A_CTR(1)), 10);
    test_pmu_fini(&t);
}
END_TEST

/* ---- Rejection: the PMU is untouched ----------------------------------- */

typedef struct Full {
    size_t n;
    uint8_t blob[MAX_BLOB];
    Snap snap;
} Full;

static void full_take(TestPmu *t, Full *f)
{
    f->n = save_ok(t, f->blob, sizeof(f->blob));
    snap_take(t->pmu, &f->snap);
}

static bool fake_stats_equal(const VpmuFakeStats *a, const VpmuFakeStats *b)
{
    for (int op = 0; op < VPMU_FAKE_OP__COUNT; op++) {
        if (a->calls[op] != b->calls[op]) {
            return false;
        }
    }
    return a->closes == b->closes && a->open_handles == b->open_handles;
}

static bool stats_equal(const VpmuStats *a, const VpmuStats *b)
{
    return a->rdmsr == b->rdmsr && a->wrmsr == b->wrmsr &&
           a->rdpmc == b->rdpmc && a->gp_faults == b->gp_faults &&
           a->overflows == b->overflows && a->pmis == b->pmis &&
           a->filtered == b->filtered && a->unsupported == b->unsupported &&
           a->source_opens == b->source_opens &&
           a->source_reuses == b->source_reuses &&
           a->source_errors == b->source_errors &&
           a->emulated == b->emulated;
}

/* Load @blob[0..len) into @t: ret must be @want (or @alt if nonzero). */
static void expect_reject(TestPmu *t, const uint8_t *blob, size_t len,
                          int want, int alt, int line, const char *what,
                          size_t off, unsigned bit)
{
    Full pre, post;
    VpmuFakeStats fs0, fs1;
    VpmuStats st0, st1;
    unsigned pmis = t->pmis;
    int r;

    full_take(t, &pre);
    vpmu_fake_source_stats(t->fake, &fs0);
    vpmu_pmu_stats(t->pmu, &st0);
    r = load_exact(t, blob, len);
    vpmu_fake_source_stats(t->fake, &fs1);
    vpmu_pmu_stats(t->pmu, &st1);
    CHECK(r == want || (alt && r == alt),
                  "line %d %s (len %zu, offset %zu, bit %u): load = %d, "
                  "want %d", line, what, len, off, bit, r, want);
    CHECK(fake_stats_equal(&fs0, &fs1),
                  "line %d %s (offset %zu): the failed load used the source",
                  line, what, off);
    CHECK(stats_equal(&st0, &st1),
                  "line %d %s (offset %zu): the failed load changed stats",
                  line, what, off);
    CHECK(t->pmis == pmis, "line %d %s: PMI", line, what);
    full_take(t, &post);
    CHECK(pre.n == post.n && memcmp(pre.blob, post.blob, pre.n) == 0,
                  "line %d %s (len %zu, offset %zu, bit %u): state changed",
                  line, what, len, off, bit);
    snap_equal(&pre.snap, &post.snap, what, line);
}

/* Rejection configs: a target with a rich state, a donor blob of another. */
static const StateCfg rej_cfgs[] = {
    ICFG(2, 2, 1, 48, 48, true, true, false),
    ICFG(4, 8, 3, 48, 48, true, true, false),
    ICFG(1, 3, 0, 40, 0, false, false, false),
    ICFG(5, 2, 4, 32, 40, true, false, true),
    ACFG(VPMU_AMD_K7, 4, false),
    ACFG(VPMU_AMD_PERFMON_V2, 6, true),
};
#define NR_REJ_CFGS ((int)ARRAY_SIZE(rej_cfgs))

typedef struct RejFixture {
    VpmuConfig c;
    TestPmu target, donor;
    uint8_t blob[MAX_BLOB];
    size_t n;
} RejFixture;

static void rej_setup(RejFixture *f, const StateCfg *sc)
{
    make_cfg(sc, &f->c);
    test_pmu_init(&f->target, &f->c);
    test_pmu_init(&f->donor, &f->c);
    program_rich(&f->target, &f->c, 17);
    program_rich(&f->donor, &f->c, 400);
    /* Unfolded counts in the target's source when the loads come. */
    run(&f->target, VPMU_EVENT_CYCLES, 0, 0, 29);
    f->n = save_ok(&f->donor, f->blob, sizeof(f->blob));
}

static void rej_teardown(RejFixture *f)
{
    test_pmu_fini(&f->target);
    test_pmu_fini(&f->donor);
}

/* Finally the donor blob itself loads, so the rejections were for cause. */
static void rej_accept(RejFixture *f, int line)
{
    uint8_t back[MAX_BLOB];
    Snap sd, st;

    ck_assert_int_eq(load_exact(&f->target, f->blob, f->n), 0);
    ck_assert_uint_eq(save_ok(&f->target, back, sizeof(back)), f->n);
    ck_assert_msg(memcmp(back, f->blob, f->n) == 0, "line %d", line);
    snap_take(f->donor.pmu, &sd);
    snap_take(f->target.pmu, &st);
    snap_equal(&sd, &st, "accepted donor", line);
}

START_TEST(test_reject_truncated)
{
    RejFixture f;

    rej_setup(&f, &rej_cfgs[_i]);
    for (size_t len = 0; len < f.n; len++) {
        expect_reject(&f.target, f.blob, len, -EBADMSG, 0, rej_cfgs[_i].line,
                      "truncated", len, 0);
    }
    rej_accept(&f, rej_cfgs[_i].line);
    rej_teardown(&f);
}
END_TEST

/*
 * Every single-bit error is caught by the CRC (or the magic/length/format
 * checks before it).  The two format-version bytes are checked before the
 * CRC (a newer format cannot be CRC-checked by an older reader), so a flip
 * there may also report -EPROTONOSUPPORT.
 */
START_TEST(test_reject_bit_flips)
{
    uint8_t bad[MAX_BLOB];
    RejFixture f;

    rej_setup(&f, &rej_cfgs[_i]);
    for (size_t off = 0; off < f.n; off++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            bool version = off == 4 || off == 5;

            memcpy(bad, f.blob, f.n);
            bad[off] ^= (uint8_t)(1u << bit);
            expect_reject(&f.target, bad, f.n, -EBADMSG,
                          version ? -EPROTONOSUPPORT : 0, rej_cfgs[_i].line,
                          "bit flip", off, bit);
        }
    }
    rej_accept(&f, rej_cfgs[_i].line);
    rej_teardown(&f);
}
END_TEST

START_TEST(test_reject_framing)
{
    static const uint16_t versions[] = { 0, 2, 3, 0x100, 0x101, 0xffff };
    uint8_t bad[MAX_BLOB + 64];
    int line = rej_cfgs[_i].line;
    RejFixture f;

    rej_setup(&f, &rej_cfgs[_i]);

    /* Unknown format versions with a valid CRC. */
    for (size_t k = 0; k < ARRAY_SIZE(versions); k++) {
        memcpy(bad, f.blob, f.n);
        put_le(bad + 4, versions[k], 2);
        fix_crc(bad, f.n);
        expect_reject(&f.target, bad, f.n, -EPROTONOSUPPORT, 0, line,
                      "format version", 4, versions[k]);
    }

    /* Bad magic with a valid CRC. */
    memcpy(bad, f.blob, f.n);
    memcpy(bad, "vpmu", 4);
    fix_crc(bad, f.n);
    expect_reject(&f.target, bad, f.n, -EBADMSG, 0, line, "magic", 0, 0);

    /* Wrong CRC, every byte of it zero / all ones. */
    memcpy(bad, f.blob, f.n);
    put_le(bad + f.n - 4, 0, 4);
    expect_reject(&f.target, bad, f.n, -EBADMSG, 0, line, "CRC 0", 0, 0);
    put_le(bad + f.n - 4, 0xffffffffu, 4);
    expect_reject(&f.target, bad, f.n, -EBADMSG, 0, line, "CRC ~0", 0, 0);

    /* Trailing bytes after a sound blob. */
    memcpy(bad, f.blob, f.n);
    memset(bad + f.n, 0, 64);
    expect_reject(&f.target, bad, f.n + 1, -EBADMSG, 0, line, "trailing 1",
                  f.n, 0);
    expect_reject(&f.target, bad, f.n + 4, -EBADMSG, 0, line, "trailing 4",
                  f.n, 0);
    expect_reject(&f.target, bad, f.n + 16, -EBADMSG, 0, line, "trailing 16",
                  f.n, 0);
    /* ... with the CRC moved to the new end. */
    memcpy(bad, f.blob, f.n);
    memset(bad + f.n, 0, 16);
    fix_crc(bad, f.n + 16);
    expect_reject(&f.target, bad, f.n + 16, -EBADMSG, 0, line,
                  "trailing 16 + CRC", f.n, 0);
    /* ... and a length field that agrees: a sound blob of another layout. */
    memcpy(bad, f.blob, f.n - 4);
    memset(bad + f.n - 4, 0, 16);
    put_le(bad + 16, f.n + 16 - HDR_SIZE - CRC_SIZE, 4);
    fix_crc(bad, f.n + 16);
    expect_reject(&f.target, bad, f.n + 16, -EINVAL, 0, line,
                  "one counter more", f.n, 0);
    /* One counter fewer, framed soundly. */
    memcpy(bad, f.blob, f.n - 20);
    put_le(bad + 16, f.n - 16 - HDR_SIZE - CRC_SIZE, 4);
    fix_crc(bad, f.n - 16);
    expect_reject(&f.target, bad, f.n - 16, -EINVAL, 0, line,
                  "one counter fewer", f.n, 0);
    /* Length field off by one, CRC fixed. */
    memcpy(bad, f.blob, f.n);
    put_le(bad + 16, f.n - HDR_SIZE - CRC_SIZE - 1, 4);
    fix_crc(bad, f.n);
    expect_reject(&f.target, bad, f.n, -EBADMSG, 0, line, "length - 1", 16,
                  0);
    put_le(bad + 16, f.n - HDR_SIZE - CRC_SIZE + 8, 4);
    fix_crc(bad, f.n);
    expect_reject(&f.target, bad, f.n, -EBADMSG, 0, line, "length + 8", 16,
                  0);

    /* Header bytes that are not this PMU's, with a valid CRC. */
    for (size_t off = 6; off < 16; off++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            memcpy(bad, f.blob, f.n);
            bad[off] ^= (uint8_t)(1u << bit);
            fix_crc(bad, f.n);
            expect_reject(&f.target, bad, f.n, -EINVAL, 0, line,
                          "foreign header", off, bit);
        }
    }
    rej_accept(&f, line);
    rej_teardown(&f);
}
END_TEST

/* Blobs of other vendors and counter layouts, sound otherwise: -EINVAL. */
static const StateCfg layout_cfgs[] = {
    ICFG(2, 8, 3, 48, 48, true, true, false),
    ICFG(3, 8, 3, 48, 48, true, true, false),   /* same size, version */
    ICFG(2, 8, 3, 48, 48, false, false, false), /* flags */
    ICFG(2, 8, 3, 48, 48, true, false, false),  /* FW_WRITE */
    ICFG(2, 8, 3, 40, 48, true, true, false),   /* gp_width */
    ICFG(2, 8, 3, 48, 40, true, true, false),   /* fixed_width */
    ICFG(2, 7, 3, 48, 48, true, true, false),   /* nr_gp */
    ICFG(2, 8, 2, 48, 48, true, true, false),   /* nr_fixed */
    ICFG(2, 6, 3, 48, 48, true, true, false),
    ICFG(1, 4, 0, 48, 0, false, false, false),  /* = AMD K7 but vendor */
    ICFG(1, 6, 0, 48, 0, false, false, false),  /* = AMD 6 but vendor */
    ACFG(VPMU_AMD_K7, 4, false),
    ACFG(VPMU_AMD_PERFCTR_CORE, 6, false),
    ACFG(VPMU_AMD_PERFMON_V2, 6, false),        /* same size, level */
    ACFG(VPMU_AMD_PERFMON_V2, 4, false),
};
#define NR_LAYOUT_CFGS ((int)ARRAY_SIZE(layout_cfgs))

START_TEST(test_reject_foreign)
{
    const StateCfg *tc = &layout_cfgs[_i];
    VpmuConfig ct, cd;
    TestPmu target;

    make_cfg(tc, &ct);
    test_pmu_init(&target, &ct);
    program_rich(&target, &ct, 3);
    for (int k = 0; k < NR_LAYOUT_CFGS; k++) {
        uint8_t blob[MAX_BLOB];
        TestPmu donor;
        size_t n;

        make_cfg(&layout_cfgs[k], &cd);
        test_pmu_init(&donor, &cd);
        program_rich(&donor, &cd, 9);
        n = save_ok(&donor, blob, sizeof(blob));
        if (k == _i) {
            /* raw_events / events are not part of the layout. */
            ck_assert_int_eq(load_exact(&target, blob, n), 0);
        } else {
            expect_reject(&target, blob, n, -EINVAL, 0, layout_cfgs[k].line,
                          "foreign blob", 0, 0);
        }
        test_pmu_fini(&donor);
    }
    test_pmu_fini(&target);
}
END_TEST

/* ---- Register values the hardware would refuse (CRC recomputed) -------- */

typedef struct RegVector {
    int line;
    int cfg;                    /* index into reg_cfgs */
    unsigned slot;
    uint64_t val;
    int ret;
} RegVector;

enum { R_I2, R_I1, R_I3, R_I4, R_I5, R_A2, R_K7 };
static const StateCfg reg_cfgs[] = {
    [R_I2] = ICFG(2, 2, 1, 48, 48, true, true, false),
    [R_I1] = ICFG(1, 2, 0, 32, 0, true, false, false),
    [R_I3] = ICFG(3, 2, 2, 40, 36, true, true, false),
    [R_I4] = ICFG(4, 2, 3, 48, 48, true, true, false),
    [R_I5] = ICFG(5, 2, 4, 48, 48, true, true, false),
    [R_A2] = ACFG(VPMU_AMD_PERFMON_V2, 3, false),
    [R_K7] = ACFG(VPMU_AMD_K7, 4, false),
};

#define EV(c, s, v, r) { SRC_LINE, c, s, v, r }
#define FX(j)           (2 + (j))   /* fixed j: counter k = nr_gp(2) + j */

static const RegVector reg_vectors[] = {
    /* Intel v2: 2 GP + 1 fixed, 48/48. */
    EV(R_I2, SLOT_CTL(0), 0x004300c0, 0),
    EV(R_I2, SLOT_CTL(0), 0xffdfffff, 0),               /* all but ANY */
    EV(R_I2, SLOT_CTL(0), 0x004b00c5, 0),               /* PC accepted */
    EV(R_I2, SLOT_CTL(0), 0x004300c0 | BIT(32), -EINVAL),
    EV(R_I2, SLOT_CTL(0), 0x004300c0 | BIT(33), -EINVAL),   /* IN_TX */
    EV(R_I2, SLOT_CTL(1), 0x004300c0 | BIT(34), -EINVAL),   /* IN_TXCP */
    EV(R_I2, SLOT_CTL(1), 0x004300c0 | BIT(63), -EINVAL),
    EV(R_I2, SLOT_CTL(0), 0x004300c0 | EVTSEL_ANY, -EINVAL),
    EV(R_I2, SLOT_VAL(0), BIT(48) - 1, 0),
    EV(R_I2, SLOT_VAL(0), BIT(48), -EINVAL),
    EV(R_I2, SLOT_VAL(1), BIT(63), -EINVAL),
    EV(R_I2, SLOT_VAL(1), ~0ull, -EINVAL),
    EV(R_I2, SLOT_VAL(FX(0)), BIT(48) - 1, 0),
    EV(R_I2, SLOT_VAL(FX(0)), BIT(48), -EINVAL),
    EV(R_I2, SLOT_CTL(FX(0)), 0xb, 0),
    EV(R_I2, SLOT_CTL(FX(0)), 0x4, -EINVAL),            /* ANY on v2 */
    EV(R_I2, SLOT_CTL(FX(0)), 0x10, -EINVAL),
    EV(R_I2, SLOT_CTL(FX(0)), 0xb0, -EINVAL),
    EV(R_I2, SLOT_CTL(FX(0)), BIT(63), -EINVAL),
    EV(R_I2, SLOT_GCTRL, 0x100000003ull, 0),
    EV(R_I2, SLOT_GCTRL, 0, 0),
    EV(R_I2, SLOT_GCTRL, BIT(2), -EINVAL),              /* absent GP 2 */
    EV(R_I2, SLOT_GCTRL, 0x100000003ull | BIT(7), -EINVAL),
    EV(R_I2, SLOT_GCTRL, BIT(33), -EINVAL),             /* absent fixed 1 */
    EV(R_I2, SLOT_GCTRL, BIT(63), -EINVAL),
    EV(R_I2, SLOT_STATUS, 0x100000003ull, 0),
    EV(R_I2, SLOT_STATUS, BIT(2), -EINVAL),
    EV(R_I2, SLOT_STATUS, BIT(33), -EINVAL),
    EV(R_I2, SLOT_STATUS, STATUS_CTR_FRZ, -EINVAL),     /* v4+ only */
    EV(R_I2, SLOT_STATUS, STATUS_LBR_FRZ, -EINVAL),
    EV(R_I2, SLOT_STATUS, BIT(40), -EINVAL),
    EV(R_I2, SLOT_DEBUGCTL, 0x5002, 0),
    EV(R_I2, SLOT_DEBUGCTL, 0x1, -EINVAL),              /* LBR */
    EV(R_I2, SLOT_DEBUGCTL, BIT(13), -EINVAL),
    EV(R_I2, SLOT_DEBUGCTL, BIT(63), -EINVAL),

    /* Intel v1: 2 GP, 32 bits, no fixed counters. */
    EV(R_I1, SLOT_DEBUGCTL, 0x4002, 0),
    EV(R_I1, SLOT_DEBUGCTL, DEBUGCTL_FRZ_PMI, -EINVAL), /* v2+ */
    EV(R_I1, SLOT_VAL(0), BIT(32) - 1, 0),
    EV(R_I1, SLOT_VAL(0), BIT(32), -EINVAL),
    EV(R_I1, SLOT_VAL(1), BIT(47), -EINVAL),
    EV(R_I1, SLOT_CTL(1), 0x004300c0 | EVTSEL_ANY, -EINVAL),
    EV(R_I1, SLOT_CTL(1), 0x004300c0 | BIT(32), -EINVAL),

    /* Intel v3: AnyThread accepted; 40-bit GP, 36-bit fixed. */
    EV(R_I3, SLOT_CTL(0), 0x004300c0 | EVTSEL_ANY, 0),
    EV(R_I3, SLOT_CTL(FX(1)), 0x7, 0),
    EV(R_I3, SLOT_CTL(FX(1)), 0x10, -EINVAL),
    EV(R_I3, SLOT_VAL(1), BIT(40) - 1, 0),
    EV(R_I3, SLOT_VAL(1), BIT(40), -EINVAL),
    EV(R_I3, SLOT_VAL(FX(1)), BIT(36) - 1, 0),
    EV(R_I3, SLOT_VAL(FX(1)), BIT(36), -EINVAL),
    EV(R_I3, SLOT_VAL(FX(0)), BIT(40) - 1, -EINVAL),    /* gp, not fixed */
    EV(R_I3, SLOT_GCTRL, 0x300000003ull, 0),
    EV(R_I3, SLOT_GCTRL, BIT(34), -EINVAL),
    EV(R_I3, SLOT_STATUS, 0x300000003ull, 0),
    EV(R_I3, SLOT_STATUS, BIT(34), -EINVAL),

    /* Intel v4: freeze bits in the status, AnyThread. */
    EV(R_I4, SLOT_STATUS, STATUS_CTR_FRZ | STATUS_LBR_FRZ | 0x700000003ull,
       0),
    EV(R_I4, SLOT_STATUS, BIT(35), -EINVAL),
    EV(R_I4, SLOT_STATUS, BIT(60), -EINVAL),
    EV(R_I4, SLOT_CTL(FX(2)), 0xf, 0),
    /* A nibble spilling into the next counter's is still refused. */
    EV(R_I4, SLOT_CTL(FX(0)), 0x10, -EINVAL),
    EV(R_I4, SLOT_CTL(FX(1)), 0x30, -EINVAL),
    EV(R_I4, SLOT_CTL(FX(2)), 0x1f, -EINVAL),
    EV(R_I4, SLOT_GCTRL, 0x700000003ull, 0),
    EV(R_I4, SLOT_GCTRL, BIT(35), -EINVAL),

    /* Intel v5: 4 fixed counters, AnyThread deprecated. */
    EV(R_I5, SLOT_CTL(0), 0x004300c0 | EVTSEL_ANY, -EINVAL),
    EV(R_I5, SLOT_CTL(FX(3)), 0xb, 0),
    EV(R_I5, SLOT_CTL(FX(3)), 0x4, -EINVAL),
    EV(R_I5, SLOT_CTL(FX(3)), BIT(52), -EINVAL),    /* shifts out of 64 */
    EV(R_I5, SLOT_CTL(FX(0)), 0xb0, -EINVAL),
    EV(R_I5, SLOT_GCTRL, 0xf00000003ull, 0),
    EV(R_I5, SLOT_GCTRL, BIT(36), -EINVAL),
    EV(R_I5, SLOT_STATUS, 0xf00000003ull | STATUS_CTR_FRZ, 0),
    EV(R_I5, SLOT_STATUS, BIT(36), -EINVAL),
    EV(R_I5, SLOT_VAL(FX(3)), BIT(48), -EINVAL),

    /* AMD PerfMonV2, 3 counters. */
    EV(R_A2, SLOT_CTL(0), 0xfffd7ffffull, 0),   /* all kept bits */
    EV(R_A2, SLOT_CTL(0), 0x004300c0 | BIT(19), -EINVAL),
    EV(R_A2, SLOT_CTL(0), 0x004300c0 | BIT(21), -EINVAL),
    EV(R_A2, SLOT_CTL(1), 0x004300c0 | BIT(36), -EINVAL),
    EV(R_A2, SLOT_CTL(1), 0x004300c0 | BIT(40), -EINVAL), /* GuestOnly */
    EV(R_A2, SLOT_CTL(2), 0x004300c0 | BIT(41), -EINVAL), /* HostOnly */
    EV(R_A2, SLOT_CTL(2), 0x004300c0 | BIT(63), -EINVAL),
    EV(R_A2, SLOT_VAL(2), BIT(48) - 1, 0),
    EV(R_A2, SLOT_VAL(2), BIT(48), -EINVAL),
    EV(R_A2, SLOT_GCTRL, 0x7, 0),
    EV(R_A2, SLOT_GCTRL, BIT(3), -EINVAL),
    EV(R_A2, SLOT_GCTRL, BIT(32), -EINVAL),
    EV(R_A2, SLOT_STATUS, 0x7, 0),
    EV(R_A2, SLOT_STATUS, BIT(3), -EINVAL),
    EV(R_A2, SLOT_STATUS, BIT(59), -EINVAL),
    EV(R_A2, SLOT_DEBUGCTL, DEBUGCTL_BTF, -EINVAL),     /* no DEBUGCTL */
    EV(R_A2, SLOT_DEBUGCTL, DEBUGCTL_FRZ_PMI, -EINVAL),

    /* AMD K7. */
    EV(R_K7, SLOT_CTL(3), 0x2004300c0ull, 0),
    EV(R_K7, SLOT_CTL(3), 0x004300c0 | BIT(40), -EINVAL),
    EV(R_K7, SLOT_VAL(3), BIT(48), -EINVAL),
    EV(R_K7, SLOT_GCTRL, BIT(4), -EINVAL),
    EV(R_K7, SLOT_DEBUGCTL, 1, -EINVAL),
};
#define NR_REG_VECTORS ((int)ARRAY_SIZE(reg_vectors))

static void reg_vector_run(const RegVector *v, unsigned slot, uint64_t val,
                           int want)
{
    uint8_t bad[MAX_BLOB], back[MAX_BLOB];
    RejFixture f;

    rej_setup(&f, &reg_cfgs[v->cfg]);
    ck_assert_uint_lt(PAYLOAD_OFF + 8 * slot + 8, f.n - CRC_SIZE + 1);
    memcpy(bad, f.blob, f.n);
    slot_put(bad, slot, val);
    fix_crc(bad, f.n);
    if (want < 0) {
        expect_reject(&f.target, bad, f.n, want, 0, v->line, "register",
                      PAYLOAD_OFF + 8 * slot, 0);
        rej_accept(&f, v->line);
    } else {
        int r = load_exact(&f.target, bad, f.n);

        ck_assert_msg(r == 0, "line %d: slot %u = 0x%" PRIx64 ": load %d",
                      v->line, slot, val, r);
        /* What was loaded is what the PMU now holds. */
        ck_assert_uint_eq(save_ok(&f.target, back, sizeof(back)), f.n);
        ck_assert_msg(memcmp(back, bad, f.n) == 0,
                      "line %d: slot %u = 0x%" PRIx64 " did not stick",
                      v->line, slot, val);
    }
    rej_teardown(&f);
}

START_TEST(test_reject_registers)
{
    const RegVector *v = &reg_vectors[_i];

    reg_vector_run(v, v->slot, v->val, v->ret);
}
END_TEST

/* Each reserved EVTSEL bit 63:32 on Intel, alone. */
START_TEST(test_reject_intel_evtsel_high_bits)
{
    RegVector v = EV(R_I2, SLOT_CTL(1), 0, -EINVAL);

    reg_vector_run(&v, SLOT_CTL(1), 0x004300c0 | BIT(32 + _i), -EINVAL);
}
END_TEST

/* Each value bit at or above the width, GP and fixed. */
START_TEST(test_reject_value_high_bits)
{
    RegVector v = EV(R_I3, 0, 0, -EINVAL);

    if (40 + _i < 64) {
        reg_vector_run(&v, SLOT_VAL(0), BIT(40 + _i), -EINVAL);
    }
    if (36 + _i < 64) {
        reg_vector_run(&v, SLOT_VAL(FX(0)), BIT(36 + _i), -EINVAL);
    }
}
END_TEST

/* ---- Suite --------------------------------------------------------------- */

static Suite *state_suite(void)
{
    Suite *s = suite_create("state");
    TCase *rt = tcase_create("roundtrip");
    TCase *fmt = tcase_create("format");
    TCase *rej = tcase_create("reject");

    tcase_set_timeout(rt, 120);
    tcase_set_timeout(fmt, 120);
    tcase_set_timeout(rej, 300);

    tcase_add_loop_test(rt, test_roundtrip, 0, NR_RT_CFGS);
    tcase_add_loop_test(rt, test_roundtrip_over_used, 0, NR_RT_CFGS);
    tcase_add_loop_test(rt, test_roundtrip_reset_state, 0, NR_RT_CFGS);
    tcase_add_test(rt, test_no_count_lost_intel);
    tcase_add_test(rt, test_no_count_lost_amd);
    tcase_add_test(rt, test_frozen_state);
    suite_add_tcase(s, rt);

    tcase_add_loop_test(fmt, test_size_and_enospc, 0, NR_RT_CFGS);
    tcase_add_test(fmt, test_crc_check_value);
    tcase_add_test(fmt, test_golden_intel_save);
    tcase_add_test(fmt, test_golden_intel_load);
    tcase_add_test(fmt, test_golden_amd_save);
    tcase_add_test(fmt, test_golden_amd_load);
    suite_add_tcase(s, fmt);

    tcase_add_loop_test(rej, test_reject_truncated, 0, NR_REJ_CFGS);
    tcase_add_loop_test(rej, test_reject_bit_flips, 0, NR_REJ_CFGS);
    tcase_add_loop_test(rej, test_reject_framing, 0, NR_REJ_CFGS);
    tcase_add_loop_test(rej, test_reject_foreign, 0, NR_LAYOUT_CFGS);
    tcase_add_loop_test(rej, test_reject_registers, 0, NR_REG_VECTORS);
    tcase_add_loop_test(rej, test_reject_intel_evtsel_high_bits, 0, 32);
    tcase_add_loop_test(rej, test_reject_value_high_bits, 0, 28);
    suite_add_tcase(s, rej);
    return s;
}

int main(void)
{
    return run_suite(state_suite());
}
