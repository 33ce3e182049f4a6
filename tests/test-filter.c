/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event filter tests: KVM_SET_PMU_EVENT_FILTER semantics (plain and
 * KVM_PMU_EVENT_FLAG_MASKED_EVENTS entries, fixed-counter bitmap), the
 * operator text parser, and the internal clone.
 *
 * Only filter functions are called, so this links against filter.c alone.
 * Every table vector records its line (SRC_LINE) and failures print it.
 */
#include "vectors.h"

#include <limits.h>

#include "pmu-priv.h"

#define A   VPMU_FILTER_ALLOW
#define D   VPMU_FILTER_DENY
#define M   VPMU_FILTER_MASKED

/* Guest EVTSEL bits the filter must ignore (SDM IA32_PERFEVTSELx, APM PERF_CTL). */
#define EVTSEL_USR      (1ull << 16)
#define EVTSEL_OS       (1ull << 17)
#define EVTSEL_EDGE     (1ull << 18)
#define EVTSEL_INT      (1ull << 20)
#define EVTSEL_EN       (1ull << 22)
#define EVTSEL_INV      (1ull << 23)
#define EVTSEL_CMASK    (0xffull << 24)
#define AMD_GUESTONLY   (1ull << 40)
#define AMD_HOSTONLY    (1ull << 41)
#define EVTSEL_CONTROL  (EVTSEL_USR | EVTSEL_OS | EVTSEL_EDGE | EVTSEL_INT | \
                         EVTSEL_EN | EVTSEL_INV | EVTSEL_CMASK | \
                         AMD_GUESTONLY | AMD_HOSTONLY)

/* EVTSEL / plain entry: event [7:0] at 7:0, event [11:8] at 35:32, umask 15:8. */
#define PLAIN(ev, um) (((uint64_t)(ev) & 0xff) | (((uint64_t)(ev) & 0xf00) << 24) | \
                       ((uint64_t)(um) << 8))
#define MASKED(ev, mask, match, excl) VPMU_ENCODE_MASKED_ENTRY(ev, mask, match, excl)

#define MAX_VEC_ENTRIES 8
#define ENTRIES(...) .entries = { __VA_ARGS__ }, \
    .n = sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)

typedef struct EventVector {
    int line;
    VpmuFilterAction action;
    unsigned flags;
    uint64_t entries[MAX_VEC_ENTRIES];
    size_t n;
    uint64_t eventsel;
    bool allowed;
} EventVector;

static VpmuFilter *build(int line, VpmuFilterAction action, unsigned flags,
                         const uint64_t *entries, size_t n)
{
    VpmuFilter *f = NULL;
    int r = vpmu_filter_new(action, flags, &f);

    ck_assert_msg(r == 0 && f, "line %d: vpmu_filter_new = %d", line, r);
    for (size_t i = 0; i < n; i++) {
        r = vpmu_filter_add(f, entries[i]);
        ck_assert_msg(r == 0, "line %d: add entry %zu (0x%" PRIx64 ") = %d",
                      line, i, entries[i], r);
    }
    return f;
}

static void run_event_vectors(const EventVector *v, size_t nv)
{
    for (size_t i = 0; i < nv; i++) {
        VpmuFilter *f = build(v[i].line, v[i].action, v[i].flags,
                              v[i].entries, v[i].n);
        bool got = vpmu_filter_allows_event(f, v[i].eventsel);

        ck_assert_msg(got == v[i].allowed,
                      "line %d: eventsel 0x%" PRIx64 " allowed=%d want %d",
                      v[i].line, v[i].eventsel, got, v[i].allowed);
        vpmu_filter_free(f);
    }
}

/* Event selects probed when two filters must behave the same. */
static const uint64_t probe_events[] = {
    0x00, 0x2e, 0x3c, 0x76, 0xc0, 0xc4, 0xc5, 0xcf, 0xd0, 0xd1, 0xff,
    0x1c0, 0x1d0, 0xfc0, 0xfff,
};

static void assert_filters_agree(int line, const VpmuFilter *a,
                                 const VpmuFilter *b)
{
    for (size_t e = 0; e < ARRAY_SIZE(probe_events); e++) {
        for (unsigned um = 0; um < 256; um++) {
            uint64_t sel = PLAIN(probe_events[e], um) | EVTSEL_EN | EVTSEL_USR;
            bool x = vpmu_filter_allows_event(a, sel);
            bool y = vpmu_filter_allows_event(b, sel);

            ck_assert_msg(x == y, "line %d: eventsel 0x%" PRIx64 ": %d vs %d",
                          line, sel, x, y);
        }
    }
    for (unsigned idx = 0; idx < 40; idx++) {
        ck_assert_msg(vpmu_filter_allows_fixed(a, idx) ==
                      vpmu_filter_allows_fixed(b, idx),
                      "line %d: fixed %u differs", line, idx);
    }
}

/* ---- plain entries ---- */

static const EventVector plain_vectors[] = {
    /* INST_RETIRED.ANY_P 0xC0/0x00 */
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)), PLAIN(0xc0, 0), true },
    /* USR/OS/EDGE/INT/EN/INV/CMASK and AMD Host/GuestOnly do not matter */
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)),
      PLAIN(0xc0, 0) | EVTSEL_CONTROL, true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)),
      PLAIN(0xc0, 0) | 0xfffffff000000000ull, true },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0xc0, 0)),
      PLAIN(0xc0, 0) | EVTSEL_CONTROL, false },
    /* same event select, other umask: a plain entry matches umask exactly */
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)), PLAIN(0xc0, 0x01), false },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)), PLAIN(0xc4, 0), false },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0x3c, 0), PLAIN(0x3c, 1)),
      PLAIN(0x3c, 1) | EVTSEL_EN | EVTSEL_USR, true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0x3c, 0), PLAIN(0x3c, 1)),
      PLAIN(0x3c, 2), false },
    /* LLC references / misses denied, other 0x2E umasks still allowed */
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0x2e, 0x4f), PLAIN(0x2e, 0x41)),
      PLAIN(0x2e, 0x4f) | EVTSEL_EN | EVTSEL_OS | EVTSEL_INT, false },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0x2e, 0x4f), PLAIN(0x2e, 0x41)),
      PLAIN(0x2e, 0x41), false },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0x2e, 0x4f), PLAIN(0x2e, 0x41)),
      PLAIN(0x2e, 0x01), true },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0x2e, 0x4f), PLAIN(0x2e, 0x41)),
      PLAIN(0xc0, 0), true },
    /* AMD event select [11:8] lives at EVTSEL[35:32]: 0x1C0 = 0x1000000C0 */
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0x1c0, 0)), 0x1000000c0ull, true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0x1c0, 0)), PLAIN(0xc0, 0), false },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)), PLAIN(0x1c0, 0), false },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xc0, 0)), PLAIN(0xfc0, 0), false },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0xc0, 0)),
      PLAIN(0x1c0, 0) | EVTSEL_EN, true },
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0xfff, 0xff)), 0xf0000ffffull, false },
    /* entries added out of order are all found */
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xd0, 0x81), PLAIN(0xc4, 0), PLAIN(0x2e, 0x41),
                              PLAIN(0x1c0, 0), PLAIN(0x00, 0x03)),
      PLAIN(0x2e, 0x41), true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xd0, 0x81), PLAIN(0xc4, 0), PLAIN(0x2e, 0x41),
                              PLAIN(0x1c0, 0), PLAIN(0x00, 0x03)),
      PLAIN(0x00, 0x03), true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xd0, 0x81), PLAIN(0xc4, 0), PLAIN(0x2e, 0x41),
                              PLAIN(0x1c0, 0), PLAIN(0x00, 0x03)),
      PLAIN(0xd0, 0x81), true },
    { SRC_LINE, A, 0, ENTRIES(PLAIN(0xd0, 0x81), PLAIN(0xc4, 0), PLAIN(0x2e, 0x41),
                              PLAIN(0x1c0, 0), PLAIN(0x00, 0x03)),
      PLAIN(0xd0, 0x80), false },
    /* duplicates are harmless */
    { SRC_LINE, D, 0, ENTRIES(PLAIN(0xc5, 0), PLAIN(0xc5, 0)), PLAIN(0xc5, 0), false },
    /* empty ALLOW list denies every event, empty DENY list allows all */
    { SRC_LINE, A, 0, .n = 0, PLAIN(0xc0, 0), false },
    { SRC_LINE, A, 0, .n = 0, 0, false },
    { SRC_LINE, D, 0, .n = 0, PLAIN(0xc0, 0) | EVTSEL_EN, true },
    { SRC_LINE, D, 0, .n = 0, 0xf0000ffffull, true },
};

START_TEST(test_plain_vectors)
{
    run_event_vectors(plain_vectors, ARRAY_SIZE(plain_vectors));
}
END_TEST

/* ---- masked entries ---- */

static const EventVector masked_vectors[] = {
    /* mask 0xF0 match 0x10: umask 0x1F & 0xF0 = 0x10 hits ... */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0xc0, 0x1f), true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0xc0, 0x10), true },
    /* ... 0x21 & 0xF0 = 0x20 and 0x00 & 0xF0 = 0x00 miss */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0xc0, 0x21), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0xc0, 0x00), false },
    /* the event select must still be equal, including [35:32] */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0xc4, 0x10), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)), PLAIN(0x1c0, 0x10), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0xf0, 0x10, 0)),
      PLAIN(0xc0, 0x1f) | EVTSEL_CONTROL, true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0x1c0, 0xff, 0x00, 0)), PLAIN(0x1c0, 0), true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0x1c0, 0xff, 0x00, 0)), PLAIN(0xc0, 0), false },
    /* mask 0 match 0: (u & 0) == 0 for every umask */
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0x00, 0x00, 0)), PLAIN(0x2e, 0xff), true },
    /* match bits outside the mask: (u & 0) == 1 never holds */
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0x00, 0x01, 0)), PLAIN(0x2e, 0x01), false },
    /* (0x10 & 0x0F) = 0x00 != 0x10 */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0x0f, 0x10, 0)), PLAIN(0xc0, 0x10), false },
    /* include all 0x2E, exclude 0x2E/0x41: 0x4F included, 0x41 hits both */
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0, 0, 0), MASKED(0x2e, 0xff, 0x41, 1)),
      PLAIN(0x2e, 0x4f), true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0, 0, 0), MASKED(0x2e, 0xff, 0x41, 1)),
      PLAIN(0x2e, 0x41), false },
    { SRC_LINE, D, M, ENTRIES(MASKED(0x2e, 0, 0, 0), MASKED(0x2e, 0xff, 0x41, 1)),
      PLAIN(0x2e, 0x4f), false },
    /* not included, so a DENY filter allows it */
    { SRC_LINE, D, M, ENTRIES(MASKED(0x2e, 0, 0, 0), MASKED(0x2e, 0xff, 0x41, 1)),
      PLAIN(0x2e, 0x41), true },
    /* exclude entries alone include nothing */
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0xff, 0x41, 1)), PLAIN(0x2e, 0x41), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0x2e, 0xff, 0x41, 1)), PLAIN(0x2e, 0x4f), false },
    { SRC_LINE, D, M, ENTRIES(MASKED(0x2e, 0xff, 0x41, 1)), PLAIN(0x2e, 0x41), true },
    { SRC_LINE, D, M, ENTRIES(MASKED(0x2e, 0xff, 0x41, 1)), PLAIN(0x2e, 0x4f), true },
    /* exclude with a mask: 0x2A & 0xF0 = 0x20 excluded, 0x1A & 0xF0 = 0x10 not */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc4, 0, 0, 0), MASKED(0xc4, 0xf0, 0x20, 1)),
      PLAIN(0xc4, 0x2a), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc4, 0, 0, 0), MASKED(0xc4, 0xf0, 0x20, 1)),
      PLAIN(0xc4, 0x1a), true },
    /* an exclude entry for another event select does not apply */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xc0, 0, 0, 0), MASKED(0xc4, 0, 0, 1)),
      PLAIN(0xc0, 0), true },
    /*
     * Two masks on 0xD0 among neighbours 0xCF, 0xD1, 0x1D0:
     * 0x81 & 0xF0 = 0x80 hits the first; 0x11 & 0x0F = 0x01 the second;
     * 0x42: 0x40 != 0x80 and 0x02 != 0x01, so neither.
     */
    { SRC_LINE, A, M, ENTRIES(MASKED(0xcf, 0, 0, 0), MASKED(0xd0, 0xf0, 0x80, 0),
                              MASKED(0xd1, 0, 0, 0), MASKED(0xd0, 0x0f, 0x01, 0),
                              MASKED(0x1d0, 0, 0, 0)),
      PLAIN(0xd0, 0x81), true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xcf, 0, 0, 0), MASKED(0xd0, 0xf0, 0x80, 0),
                              MASKED(0xd1, 0, 0, 0), MASKED(0xd0, 0x0f, 0x01, 0),
                              MASKED(0x1d0, 0, 0, 0)),
      PLAIN(0xd0, 0x11), true },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xcf, 0, 0, 0), MASKED(0xd0, 0xf0, 0x80, 0),
                              MASKED(0xd1, 0, 0, 0), MASKED(0xd0, 0x0f, 0x01, 0),
                              MASKED(0x1d0, 0, 0, 0)),
      PLAIN(0xd0, 0x42), false },
    { SRC_LINE, A, M, ENTRIES(MASKED(0xcf, 0, 0, 0), MASKED(0xd0, 0xf0, 0x80, 0),
                              MASKED(0xd1, 0, 0, 0), MASKED(0xd0, 0x0f, 0x01, 0),
                              MASKED(0x1d0, 0, 0, 0)),
      PLAIN(0x1d0, 0x42), true },
    /* empty masked filters behave like empty plain ones */
    { SRC_LINE, A, M, .n = 0, PLAIN(0xc0, 0), false },
    { SRC_LINE, D, M, .n = 0, PLAIN(0xc0, 0), true },
};

START_TEST(test_masked_vectors)
{
    run_event_vectors(masked_vectors, ARRAY_SIZE(masked_vectors));
}
END_TEST

/* An empty ALLOW filter denies every GP event; an empty DENY allows all. */
START_TEST(test_empty_filters)
{
    static const unsigned flags[] = { 0, M };

    for (size_t i = 0; i < 2; i++) {
        VpmuFilter *allow = build(__LINE__, A, flags[i], NULL, 0);
        VpmuFilter *deny = build(__LINE__, D, flags[i], NULL, 0);

        for (size_t e = 0; e < ARRAY_SIZE(probe_events); e++) {
            for (unsigned um = 0; um < 256; um++) {
                uint64_t sel = PLAIN(probe_events[e], um);

                ck_assert_msg(!vpmu_filter_allows_event(allow, sel),
                              "flags %u: empty allow let 0x%" PRIx64, flags[i], sel);
                ck_assert_msg(vpmu_filter_allows_event(deny, sel),
                              "flags %u: empty deny denied 0x%" PRIx64, flags[i], sel);
            }
        }
        vpmu_filter_free(allow);
        vpmu_filter_free(deny);
    }
}
END_TEST

/* ---- fixed counters ---- */

typedef struct FixedVector {
    int line;
    VpmuFilterAction action;
    unsigned flags;
    uint32_t bitmap;
    unsigned idx;
    bool allowed;
} FixedVector;

static const FixedVector fixed_vectors[] = {
    /* bitmap 0 (the default): ALLOW allows no fixed counter, DENY all */
    { SRC_LINE, A, 0, 0, 0, false },
    { SRC_LINE, D, 0, 0, 0, true },
    { SRC_LINE, D, 0, 0, 2, true },
    /* ALLOW: allowed iff the bit is set */
    { SRC_LINE, A, 0, 0x5, 0, true },
    { SRC_LINE, A, 0, 0x5, 1, false },
    { SRC_LINE, A, 0, 0x5, 2, true },
    { SRC_LINE, A, 0, 0x5, 3, false },
    { SRC_LINE, A, 0, 0x80000000u, 31, true },
    { SRC_LINE, A, 0, 0x80000000u, 30, false },
    /* DENY: denied iff the bit is set */
    { SRC_LINE, D, 0, 0x5, 0, false },
    { SRC_LINE, D, 0, 0x5, 1, true },
    { SRC_LINE, D, 0, 0x5, 2, false },
    { SRC_LINE, D, 0, 0xffffffffu, 31, false },
    /* index >= 32 reads a 0 bit */
    { SRC_LINE, A, 0, 0xffffffffu, 32, false },
    { SRC_LINE, A, 0, 0xffffffffu, UINT_MAX, false },
    { SRC_LINE, D, 0, 0xffffffffu, 32, true },
    { SRC_LINE, D, 0, 0xffffffffu, 64, true },
    /* masked filters use the same bitmap rule */
    { SRC_LINE, A, M, 0x2, 1, true },
    { SRC_LINE, A, M, 0x2, 0, false },
    { SRC_LINE, D, M, 0x2, 1, false },
};

START_TEST(test_fixed_vectors)
{
    for (size_t i = 0; i < ARRAY_SIZE(fixed_vectors); i++) {
        const FixedVector *v = &fixed_vectors[i];
        VpmuFilter *f = build(v->line, v->action, v->flags, NULL, 0);
        bool got;

        vpmu_filter_set_fixed_bitmap(f, v->bitmap);
        got = vpmu_filter_allows_fixed(f, v->idx);
        ck_assert_msg(got == v->allowed,
                      "line %d: bitmap 0x%x idx %u allowed=%d want %d",
                      v->line, v->bitmap, v->idx, got, v->allowed);
        vpmu_filter_free(f);
    }
}
END_TEST

/* GP entries do not touch fixed counters, the bitmap does not touch GP. */
START_TEST(test_fixed_independent)
{
    /* fixed counter 0 counts instructions, but a 0xC0 entry is no bit 0 */
    VpmuFilter *f = build(__LINE__, A, 0, (const uint64_t[]){ PLAIN(0xc0, 0) }, 1);

    ck_assert(!vpmu_filter_allows_fixed(f, 0));
    vpmu_filter_set_fixed_bitmap(f, 0x1);
    ck_assert(vpmu_filter_allows_fixed(f, 0));
    ck_assert(!vpmu_filter_allows_fixed(f, 1));
    ck_assert(vpmu_filter_allows_event(f, PLAIN(0xc0, 0)));
    ck_assert(!vpmu_filter_allows_event(f, PLAIN(0x3c, 0)));
    /* replacing the bitmap replaces it, it does not OR */
    vpmu_filter_set_fixed_bitmap(f, 0x2);
    ck_assert(!vpmu_filter_allows_fixed(f, 0));
    ck_assert(vpmu_filter_allows_fixed(f, 1));
    vpmu_filter_free(f);
}
END_TEST

/* No filter installed: everything allowed; NULL is tolerated everywhere. */
START_TEST(test_null_filter)
{
    ck_assert(vpmu_filter_allows_event(NULL, PLAIN(0xc0, 0)));
    ck_assert(vpmu_filter_allows_event(NULL, ~0ull));
    ck_assert(vpmu_filter_allows_fixed(NULL, 0));
    ck_assert(vpmu_filter_allows_fixed(NULL, 99));
    ck_assert_int_eq(vpmu_filter_add(NULL, PLAIN(0xc0, 0)), -EINVAL);
    vpmu_filter_set_fixed_bitmap(NULL, 1);
    vpmu_filter_free(NULL);
}
END_TEST

/* ---- invalid input ---- */

START_TEST(test_new_invalid)
{
    VpmuFilter *f = NULL;

    ck_assert_int_eq(vpmu_filter_new((VpmuFilterAction)2, 0, &f), -EINVAL);
    ck_assert_int_eq(vpmu_filter_new((VpmuFilterAction)-1, 0, &f), -EINVAL);
    ck_assert_int_eq(vpmu_filter_new(A, 1u << 1, &f), -EINVAL);
    ck_assert_int_eq(vpmu_filter_new(D, M | (1u << 31), &f), -EINVAL);
    ck_assert_int_eq(vpmu_filter_new(A, 0, NULL), -EINVAL);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(vpmu_filter_new(D, M, &f), 0);
    ck_assert_ptr_nonnull(f);
    vpmu_filter_free(f);
}
END_TEST

typedef struct BadEntryVector {
    int line;
    unsigned flags;
    uint64_t entry;
} BadEntryVector;

static const BadEntryVector bad_entries[] = {
    /* plain: only EVTSEL[7:0], [15:8], [35:32] */
    { SRC_LINE, 0, PLAIN(0xc0, 0) | EVTSEL_USR },
    { SRC_LINE, 0, PLAIN(0xc0, 0) | EVTSEL_EN },
    { SRC_LINE, 0, PLAIN(0xc0, 0) | EVTSEL_CMASK },
    { SRC_LINE, 0, PLAIN(0xc0, 0) | (1ull << 36) },
    { SRC_LINE, 0, PLAIN(0xc0, 0) | (1ull << 63) },
    /* a masked encoding in a plain filter: mask [63:56], exclude 55 */
    { SRC_LINE, 0, MASKED(0xc0, 0xf0, 0x10, 0) },
    { SRC_LINE, 0, MASKED(0xc0, 0, 0, 1) },
    { SRC_LINE, 0, ~0ull },
    /* masked: only event select, match, exclude, mask */
    { SRC_LINE, M, MASKED(0xc0, 0xf0, 0x10, 0) | EVTSEL_USR },
    { SRC_LINE, M, MASKED(0xc0, 0xf0, 0x10, 0) | (1ull << 31) },
    { SRC_LINE, M, MASKED(0xc0, 0xf0, 0x10, 0) | (1ull << 36) },
    { SRC_LINE, M, MASKED(0xc0, 0xf0, 0x10, 0) | (1ull << 48) },
    { SRC_LINE, M, MASKED(0xc0, 0xf0, 0x10, 0) | (1ull << 54) },
    { SRC_LINE, M, ~0ull },
};

/*
 * A rejected entry leaves the filter as it was: it behaves exactly like a
 * twin that never saw the entry, also for the event the entry would name
 * with its stray bits stripped.
 */
START_TEST(test_add_invalid)
{
    for (size_t i = 0; i < ARRAY_SIZE(bad_entries); i++) {
        const BadEntryVector *v = &bad_entries[i];
        uint64_t base = v->flags ? MASKED(0x3c, 0xff, 0x01, 0) : PLAIN(0x3c, 0x01);
        VpmuFilter *f = build(v->line, A, v->flags, &base, 1);
        VpmuFilter *twin = build(v->line, A, v->flags, &base, 1);
        int r = vpmu_filter_add(f, v->entry);

        ck_assert_msg(r == -EINVAL, "line %d: add 0x%" PRIx64 " = %d, want %d",
                      v->line, v->entry, r, -EINVAL);
        ck_assert_msg(!vpmu_filter_allows_event(f, v->entry & 0xf0000ffffull),
                      "line %d: stripped entry became allowed", v->line);
        assert_filters_agree(v->line, f, twin);
        vpmu_filter_free(f);
        vpmu_filter_free(twin);
    }
}
END_TEST

/* 300 distinct entries: event i % 256, umask i / 256. */
static uint64_t nth_entry(unsigned flags, unsigned i)
{
    return flags ? MASKED(i % 256, 0xff, i / 256, 0) : PLAIN(i % 256, i / 256);
}

START_TEST(test_e2big)
{
    static const unsigned flags[] = { 0, M };

    for (size_t k = 0; k < 2; k++) {
        unsigned fl = flags[k];
        VpmuFilter *f = build(__LINE__, A, fl, NULL, 0);

        for (unsigned i = 0; i < VPMU_FILTER_MAX_EVENTS - 1; i++) {
            ck_assert_int_eq(vpmu_filter_add(f, nth_entry(fl, i)), 0);
        }
        /* failed adds take no slot: one valid entry still fits */
        ck_assert_int_eq(vpmu_filter_add(f, ~0ull), -EINVAL);
        ck_assert_int_eq(vpmu_filter_add(f, nth_entry(fl, 299)), 0);
        /* entry 301 */
        ck_assert_int_eq(vpmu_filter_add(f, nth_entry(fl, 300)), -E2BIG);
        ck_assert_int_eq(vpmu_filter_add(f, nth_entry(fl, 0)), -E2BIG);
        /* bad bits are reported as such even when full */
        ck_assert_int_eq(vpmu_filter_add(f, ~0ull), -EINVAL);
        for (unsigned i = 0; i < VPMU_FILTER_MAX_EVENTS; i++) {
            ck_assert_msg(vpmu_filter_allows_event(f, PLAIN(i % 256, i / 256)),
                          "flags %u: entry %u lost", fl, i);
        }
        /* 300 = 0x12C -> event 0x2C umask 1 was refused */
        ck_assert(!vpmu_filter_allows_event(f, PLAIN(0x2c, 1)));
        vpmu_filter_free(f);
    }
}
END_TEST

/* Duplicates count against the limit, like KVM's nevents. */
START_TEST(test_e2big_duplicates)
{
    VpmuFilter *f = build(__LINE__, D, 0, NULL, 0);

    for (unsigned i = 0; i < VPMU_FILTER_MAX_EVENTS; i++) {
        ck_assert_int_eq(vpmu_filter_add(f, PLAIN(0xc0, 0)), 0);
    }
    ck_assert_int_eq(vpmu_filter_add(f, PLAIN(0xc0, 0)), -E2BIG);
    ck_assert(!vpmu_filter_allows_event(f, PLAIN(0xc0, 0)));
    vpmu_filter_free(f);
}
END_TEST

/* ---- randomised cross-check against a linear model of the header text ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64: deterministic, so a failure reproduces */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const uint64_t rand_events[] = { 0x2e, 0x3c, 0xc0, 0xc4, 0x1c0, 0xfc4 };
#define RAND_EVENT() rand_events[rng() % ARRAY_SIZE(rand_events)]

static bool model_allows(VpmuFilterAction action, unsigned flags,
                         const uint64_t *e, size_t n, uint64_t evtsel)
{
    uint64_t sel = (evtsel & 0xff) | ((evtsel >> 24) & 0xf00);
    unsigned umask = (evtsel >> 8) & 0xff;
    bool inc = false, exc = false;

    for (size_t i = 0; i < n; i++) {
        uint64_t esel = (e[i] & 0xff) | ((e[i] >> 24) & 0xf00);
        unsigned mask = flags ? (unsigned)(e[i] >> 56) : 0xff;
        unsigned match = (e[i] >> 8) & 0xff;

        if (esel == sel && (umask & mask) == match) {
            if (flags && (e[i] & VPMU_MASKED_EXCLUDE)) {
                exc = true;
            } else {
                inc = true;
            }
        }
    }
    return (inc && !exc) ? action == A : action == D;
}

static uint64_t random_entry(unsigned flags)
{
    static const unsigned masks[] = { 0x00, 0xff, 0xf0, 0x0f, 0x81 };
    uint64_t ev = RAND_EVENT();
    unsigned mask = masks[rng() % 5], match = rng() & 0xff;

    if (!flags) {
        return PLAIN(ev, rng() % 4 ? rng() % 4 : match);
    }
    /* mostly match within the mask, sometimes an entry that never hits */
    return MASKED(ev, mask, rng() % 8 ? match & mask : match, rng() % 4 == 0);
}

/* Half the probes aim at a random entry, so hits are common too. */
static uint64_t random_probe(unsigned flags, const uint64_t *entries, size_t n)
{
    uint64_t e, ev;
    unsigned mask, match;

    if (n == 0 || rng() % 2) {
        return PLAIN(RAND_EVENT(), rng() & 0xff);
    }
    e = entries[rng() % n];
    ev = (e & 0xff) | ((e >> 24) & 0xf00);
    mask = flags ? (unsigned)(e >> 56) : 0xff;
    match = (e >> 8) & 0xff;
    return PLAIN(ev, ((rng() & ~mask) | match) & 0xff);
}

START_TEST(test_random_vs_model)
{
    uint64_t entries[VPMU_FILTER_MAX_EVENTS];

    rng_state = 0x9e3779b97f4a7c15ull;
    for (unsigned round = 0; round < 200; round++) {
        VpmuFilterAction action = rng() & 1 ? A : D;
        unsigned flags = rng() & 1 ? M : 0;
        size_t n = rng() % (VPMU_FILTER_MAX_EVENTS + 1);
        VpmuFilter *f;

        for (size_t i = 0; i < n; i++) {
            entries[i] = random_entry(flags);
        }
        f = build(__LINE__, action, flags, entries, n);
        for (unsigned p = 0; p < 300; p++) {
            /* random control bits, but never [35:32] outside the event */
            uint64_t sel = random_probe(flags, entries, n) |
                           (rng() & 0xfffffff0ffff0000ull);
            bool want = model_allows(action, flags, entries, n, sel);

            ck_assert_msg(vpmu_filter_allows_event(f, sel) == want,
                          "round %u (action %d flags %u n %zu): eventsel 0x%"
                          PRIx64 " want %d", round, action, flags, n, sel, want);
        }
        vpmu_filter_free(f);
    }
}
END_TEST

/* ---- parser ---- */

typedef struct Probe {
    uint64_t eventsel;
    bool allowed;
} Probe;

#define MAX_PROBES 6
#define PROBES(...) .probe = { __VA_ARGS__ }, \
    .nprobe = sizeof((Probe[]){ __VA_ARGS__ }) / sizeof(Probe)

typedef struct ParseVector {
    int line;
    const char *text;
    Probe probe[MAX_PROBES];
    size_t nprobe;
    uint64_t fixed_ok;      /* bit i: fixed counter i allowed, i < 64 */
} ParseVector;

static const ParseVector parse_vectors[] = {
    { SRC_LINE, "allow", PROBES({ PLAIN(0xc0, 0), false }), .fixed_ok = 0 },
    { SRC_LINE, "deny", PROBES({ PLAIN(0xc0, 0), true }), .fixed_ok = ~0ull },
    /* the header's example */
    { SRC_LINE, "deny 0x2e:0x4f,0x2e:0x41 fixed=0x0",
      PROBES({ PLAIN(0x2e, 0x4f), false }, { PLAIN(0x2e, 0x41), false },
             { PLAIN(0x2e, 0x01), true }, { PLAIN(0xc0, 0), true }),
      .fixed_ok = ~0ull },
    /* keywords and hex any case; "0xC0" alone means umask 0x00 exactly */
    { SRC_LINE, "ALLOW 0XC0, 0xc4:0X00  FIXED=3",
      PROBES({ PLAIN(0xc0, 0), true }, { PLAIN(0xc4, 0), true },
             { PLAIN(0xc0, 1), false }, { PLAIN(0xc5, 0), false }),
      .fixed_ok = 0x3 },
    /* decimal: 192 = 0xC0, 60 = 0x3C; a leading 0 is not octal */
    { SRC_LINE, "allow 192:1 60 010",
      PROBES({ PLAIN(0xc0, 1), true }, { PLAIN(0x3c, 0), true },
             { PLAIN(0xc0, 0), false }, { PLAIN(0x0a, 0), true },
             { PLAIN(0x08, 0), false }) },
    /* event bits 11:8 go to EVTSEL[35:32] */
    { SRC_LINE, "allow 0x1c0:0x01",
      PROBES({ 0x1000001c0ull, true }, { PLAIN(0xc0, 1), false }) },
    { SRC_LINE, "allow 0xfff:0xff 4095:255",
      PROBES({ 0xf0000ffffull, true }, { PLAIN(0xff, 0xff), false }) },
    /* masked: 0x1F & 0xF0 = 0x10 hits, 0x21 & 0xF0 = 0x20 does not */
    { SRC_LINE, "allow masked 0xC0:0xF0:0x10",
      PROBES({ PLAIN(0xc0, 0x1f), true }, { PLAIN(0xc0, 0x21), false }) },
    { SRC_LINE, "deny masked 0x2e:0:0 0x2e:0xff:0x41:exclude",
      PROBES({ PLAIN(0x2e, 0x4f), false }, { PLAIN(0x2e, 0x41), true },
             { PLAIN(0xc0, 0), true }), .fixed_ok = ~0ull },
    /* fixed= may precede masked; include and exclude both hit 0xC0 */
    { SRC_LINE, "allow fixed=0x1 masked 0xc0:0:0:EXCLUDE 0xc0:0:0",
      PROBES({ PLAIN(0xc0, 0), false }), .fixed_ok = 0x1 },
    { SRC_LINE, "deny masked", PROBES({ PLAIN(0xc0, 0), true }), .fixed_ok = ~0ull },
    /* any run of commas and white space separates items */
    { SRC_LINE, " \tallow ,0xc0,\n0xc4, ,",
      PROBES({ PLAIN(0xc0, 0), true }, { PLAIN(0xc4, 0), true }) },
    { SRC_LINE, "allow fixed=0xffffffff", PROBES({ 0, false }),
      .fixed_ok = 0xffffffffull },
    { SRC_LINE, "deny fixed=5 0x3c",
      PROBES({ PLAIN(0x3c, 0), false }, { PLAIN(0x3c, 1), true }),
      .fixed_ok = ~0x5ull },
};

START_TEST(test_parse_valid)
{
    for (size_t i = 0; i < ARRAY_SIZE(parse_vectors); i++) {
        const ParseVector *v = &parse_vectors[i];
        char err[128] = "";
        VpmuFilter *f = NULL;
        int r = vpmu_filter_parse(v->text, &f, err, sizeof(err));

        ck_assert_msg(r == 0 && f, "line %d: parse \"%s\" = %d (%s)",
                      v->line, v->text, r, err);
        for (size_t p = 0; p < v->nprobe; p++) {
            bool got = vpmu_filter_allows_event(f, v->probe[p].eventsel);

            ck_assert_msg(got == v->probe[p].allowed,
                          "line %d: eventsel 0x%" PRIx64 " allowed=%d want %d",
                          v->line, v->probe[p].eventsel, got, v->probe[p].allowed);
        }
        for (unsigned idx = 0; idx < 64; idx++) {
            bool want = (v->fixed_ok >> idx) & 1;

            ck_assert_msg(vpmu_filter_allows_fixed(f, idx) == want,
                          "line %d: fixed %u want %d", v->line, idx, want);
        }
        vpmu_filter_free(f);
    }
}
END_TEST

/* A parsed filter equals the one built through the API. */
START_TEST(test_parse_matches_api)
{
    static const uint64_t masked[] = {
        MASKED(0x2e, 0xff, 0x41, 0), MASKED(0x2e, 0xf0, 0x40, 1),
        MASKED(0x1c0, 0, 0, 0), MASKED(0xd0, 0x0f, 0x01, 0),
    };
    static const uint64_t plain[] = {
        PLAIN(0x3c, 0), PLAIN(0x3c, 1), PLAIN(0xfc4, 0x20), PLAIN(0x00, 0x03),
    };
    VpmuFilter *api, *parsed = NULL;

    api = build(__LINE__, D, M, masked, 4);
    vpmu_filter_set_fixed_bitmap(api, 0x6);
    ck_assert_int_eq(vpmu_filter_parse("deny masked 0x2e:0xff:0x41 "
                                       "0x2e:0xf0:0x40:exclude 0x1c0:0:0 "
                                       "208:15:1 fixed=0x6", &parsed, NULL, 0), 0);
    assert_filters_agree(__LINE__, api, parsed);
    vpmu_filter_free(api);
    vpmu_filter_free(parsed);

    api = build(__LINE__, A, 0, plain, 4);
    vpmu_filter_set_fixed_bitmap(api, 0x1);
    ck_assert_int_eq(vpmu_filter_parse("allow 0x3c 0x3c:1,0xfc4:0x20,0:3 fixed=1",
                                       &parsed, NULL, 0), 0);
    assert_filters_agree(__LINE__, api, parsed);
    vpmu_filter_free(api);
    vpmu_filter_free(parsed);
}
END_TEST

typedef struct BadParseVector {
    int line;
    const char *text;
    const char *bad;        /* the item the message must quote */
} BadParseVector;

static const BadParseVector bad_parse[] = {
    { SRC_LINE, "", "" },
    { SRC_LINE, " , ", "" },
    { SRC_LINE, "permit 0xc0", "permit" },
    { SRC_LINE, "0xc0", "0xc0" },
    { SRC_LINE, "allowed", "allowed" },
    { SRC_LINE, "allow allow", "allow" },
    { SRC_LINE, "allow deny", "deny" },
    /* plain entries have one or two fields */
    { SRC_LINE, "allow 0xc0:0x1:0x2", "0xc0:0x1:0x2" },
    { SRC_LINE, "allow 0xc4:0x1:exclude", "0xc4:0x1:exclude" },
    { SRC_LINE, "allow 0xc0:", "0xc0:" },
    { SRC_LINE, "allow :0x1", ":0x1" },
    { SRC_LINE, "allow 0xc0::0x1", "0xc0::0x1" },
    /* numbers: 0x hex or decimal, event <= 0xfff, umask <= 0xff */
    { SRC_LINE, "allow 0x1000", "0x1000" },
    { SRC_LINE, "allow 4096", "4096" },
    { SRC_LINE, "allow 0xc0:0x100", "0xc0:0x100" },
    { SRC_LINE, "allow 0xc0:256", "0xc0:256" },
    { SRC_LINE, "allow 0x", "0x" },
    { SRC_LINE, "allow 0x 0xc0", "0x" },
    { SRC_LINE, "allow 0xg0", "0xg0" },
    { SRC_LINE, "allow c0", "c0" },
    { SRC_LINE, "allow -1", "-1" },
    { SRC_LINE, "allow +1", "+1" },
    { SRC_LINE, "allow 1e3", "1e3" },
    { SRC_LINE, "allow 0xc0;0xc4", "0xc0;0xc4" },
    { SRC_LINE, "allow 99999999999999999999999", "99999999999999999999999" },
    { SRC_LINE, "allow 0xffffffffffffffffff", "0xffffffffffffffffff" },
    /* masked entries have three fields and an optional "exclude" */
    { SRC_LINE, "allow masked 0xc0", "0xc0" },
    { SRC_LINE, "allow masked 0xc0:0x1", "0xc0:0x1" },
    { SRC_LINE, "allow masked 0xc0:0xf0:0x10:include", "0xc0:0xf0:0x10:include" },
    { SRC_LINE, "allow masked 0xc0:0xf0:0x10:exclude:1",
      "0xc0:0xf0:0x10:exclude:1" },
    { SRC_LINE, "allow masked 0xc0:0xf0:0x10:", "0xc0:0xf0:0x10:" },
    { SRC_LINE, "allow masked 0xc0:0x100:0x10", "0xc0:0x100:0x10" },
    { SRC_LINE, "allow masked 0xc0:0xf0:0x100", "0xc0:0xf0:0x100" },
    { SRC_LINE, "allow masked 0x1000:0:0", "0x1000:0:0" },
    /* "masked" once, before any entry */
    { SRC_LINE, "allow 0xc0 masked", "masked" },
    { SRC_LINE, "allow masked masked", "masked" },
    /* "fixed=" once, with a 32-bit value */
    { SRC_LINE, "allow fixed=1 fixed=2", "fixed=2" },
    { SRC_LINE, "allow fixed=", "fixed=" },
    { SRC_LINE, "allow fixed", "fixed" },
    { SRC_LINE, "allow fixed=0x100000000", "fixed=0x100000000" },
    { SRC_LINE, "allow fixed=4294967296", "fixed=4294967296" },
    { SRC_LINE, "allow fixed=-1", "fixed=-1" },
    { SRC_LINE, "allow fixed=0x", "fixed=0x" },
    /* errors after entries were added (no leak: run under valgrind) */
    { SRC_LINE, "allow 0xc0 0xc4 bogus", "bogus" },
    { SRC_LINE, "deny masked 0xc0:0:0 0xc5:0:0:exclude fixed=1 oops", "oops" },
};

START_TEST(test_parse_invalid)
{
    static char sentinel;

    for (size_t i = 0; i < ARRAY_SIZE(bad_parse); i++) {
        const BadParseVector *v = &bad_parse[i];
        VpmuFilter *out = (VpmuFilter *)(void *)&sentinel;
        char err[256], quoted[128];
        int r;

        memset(err, 'X', sizeof(err));
        snprintf(quoted, sizeof(quoted), "'%s'", v->bad);
        r = vpmu_filter_parse(v->text, &out, err, sizeof(err));
        ck_assert_msg(r == -EINVAL, "line %d: parse \"%s\" = %d, want %d",
                      v->line, v->text, r, -EINVAL);
        ck_assert_msg(memchr(err, '\0', sizeof(err)) != NULL,
                      "line %d: err not terminated", v->line);
        ck_assert_msg(strstr(err, quoted) != NULL,
                      "line %d: err \"%s\" does not quote %s", v->line, err, quoted);
        ck_assert_msg(out == (VpmuFilter *)(void *)&sentinel,
                      "line %d: *out written on failure", v->line);
        /* a NULL err buffer is fine too */
        ck_assert_int_eq(vpmu_filter_parse(v->text, &out, NULL, 0), -EINVAL);
    }
}
END_TEST

START_TEST(test_parse_err_buffer)
{
    VpmuFilter *out = NULL;
    char buf[16];

    /* errlen 0: nothing written */
    memset(buf, 'X', sizeof(buf));
    ck_assert_int_eq(vpmu_filter_parse("allow bogus", &out, buf, 0), -EINVAL);
    ck_assert_int_eq(buf[0], 'X');
    /* errlen 8: truncated to 7 characters, nothing past buf[7] touched */
    ck_assert_int_eq(vpmu_filter_parse("allow bogus", &out, buf, 8), -EINVAL);
    ck_assert_uint_eq(strlen(buf), 7);
    for (size_t i = 8; i < sizeof(buf); i++) {
        ck_assert_int_eq(buf[i], 'X');
    }
    ck_assert_int_eq(vpmu_filter_parse(NULL, &out, buf, sizeof(buf)), -EINVAL);
    ck_assert_int_eq(vpmu_filter_parse("allow", NULL, buf, sizeof(buf)), -EINVAL);
    ck_assert_ptr_null(out);
}
END_TEST

/* "allow" or "allow masked" plus entries 0..n-1 of nth_entry(). */
static char *entry_text(unsigned flags, unsigned n)
{
    size_t cap = 32 + (size_t)n * 24, len;
    char *s = malloc(cap);

    ck_assert_ptr_nonnull(s);
    len = (size_t)snprintf(s, cap, "allow%s", flags ? " masked" : "");
    for (unsigned i = 0; i < n; i++) {
        len += (size_t)snprintf(s + len, cap - len, flags ? " 0x%x:0xff:0x%x" :
                                ",0x%x:0x%x", i % 256, i / 256);
    }
    return s;
}

START_TEST(test_parse_e2big)
{
    static const unsigned flags[] = { 0, M };

    for (size_t k = 0; k < 2; k++) {
        char *ok = entry_text(flags[k], VPMU_FILTER_MAX_EVENTS);
        char *big = entry_text(flags[k], VPMU_FILTER_MAX_EVENTS + 1);
        /* entry 301 is number 300 = 0x12C: event 0x2c, umask 1 */
        const char *bad = flags[k] ? "'0x2c:0xff:0x1'" : "'0x2c:0x1'";
        VpmuFilter *f = NULL;
        char err[128] = "";

        ck_assert_int_eq(vpmu_filter_parse(ok, &f, err, sizeof(err)), 0);
        ck_assert(vpmu_filter_allows_event(f, PLAIN(0x2b, 1)));
        vpmu_filter_free(f);
        f = NULL;
        ck_assert_int_eq(vpmu_filter_parse(big, &f, err, sizeof(err)), -E2BIG);
        ck_assert_ptr_null(f);
        ck_assert_msg(strstr(err, bad), "err \"%s\" lacks %s", err, bad);
        free(ok);
        free(big);
    }
}
END_TEST

/* ---- clone ---- */

START_TEST(test_clone)
{
    static const uint64_t entries[] = {
        MASKED(0x2e, 0, 0, 0), MASKED(0x2e, 0xff, 0x41, 1), MASKED(0xc0, 0xf0, 0x10, 0),
    };
    VpmuFilter *f = build(__LINE__, D, M, entries, 3);
    VpmuFilter *c = NULL;

    vpmu_filter_set_fixed_bitmap(f, 0x5);
    ck_assert_int_eq(vpmu_filter_clone(f, &c), 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_ne(c, f);
    assert_filters_agree(__LINE__, f, c);

    /* changing the original leaves the clone alone ... */
    ck_assert_int_eq(vpmu_filter_add(f, MASKED(0x3c, 0, 0, 0)), 0);
    vpmu_filter_set_fixed_bitmap(f, 0);
    ck_assert(!vpmu_filter_allows_event(f, PLAIN(0x3c, 0)));
    ck_assert(vpmu_filter_allows_event(c, PLAIN(0x3c, 0)));
    ck_assert(vpmu_filter_allows_fixed(f, 0));
    ck_assert(!vpmu_filter_allows_fixed(c, 0));
    /* ... and the reverse; the clone is still a masked filter */
    ck_assert_int_eq(vpmu_filter_add(c, MASKED(0xc4, 0xf0, 0x20, 0)), 0);
    ck_assert_int_eq(vpmu_filter_add(c, PLAIN(0xc4, 0) | EVTSEL_EN), -EINVAL);
    ck_assert(!vpmu_filter_allows_event(c, PLAIN(0xc4, 0x2a)));
    ck_assert(vpmu_filter_allows_event(f, PLAIN(0xc4, 0x2a)));

    /* the clone outlives the original */
    vpmu_filter_free(f);
    ck_assert(!vpmu_filter_allows_event(c, PLAIN(0x2e, 0x4f)));
    ck_assert(vpmu_filter_allows_event(c, PLAIN(0x2e, 0x41)));
    vpmu_filter_free(c);
}
END_TEST

START_TEST(test_clone_full_and_null)
{
    VpmuFilter *f = build(__LINE__, A, 0, NULL, 0), *c = NULL;

    for (unsigned i = 0; i < VPMU_FILTER_MAX_EVENTS; i++) {
        ck_assert_int_eq(vpmu_filter_add(f, nth_entry(0, i)), 0);
    }
    ck_assert_int_eq(vpmu_filter_clone(f, &c), 0);
    assert_filters_agree(__LINE__, f, c);
    /* the entry count is copied too */
    ck_assert_int_eq(vpmu_filter_add(c, PLAIN(0x2c, 1)), -E2BIG);
    vpmu_filter_free(c);
    vpmu_filter_free(f);

    /* no filter clones to no filter */
    c = (VpmuFilter *)(void *)&c;
    ck_assert_int_eq(vpmu_filter_clone(NULL, &c), 0);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(vpmu_filter_clone(NULL, NULL), -EINVAL);
}
END_TEST

static Suite *filter_suite(void)
{
    Suite *s = suite_create("filter");
    TCase *tc = tcase_create("filter");

    tcase_add_test(tc, test_plain_vectors);
    tcase_add_test(tc, test_masked_vectors);
    tcase_add_test(tc, test_empty_filters);
    tcase_add_test(tc, test_fixed_vectors);
    tcase_add_test(tc, test_fixed_independent);
    tcase_add_test(tc, test_null_filter);
    tcase_add_test(tc, test_new_invalid);
    tcase_add_test(tc, test_add_invalid);
    tcase_add_test(tc, test_e2big);
    tcase_add_test(tc, test_e2big_duplicates);
    tcase_add_test(tc, test_random_vs_model);
    tcase_add_test(tc, test_parse_valid);
    tcase_add_test(tc, test_parse_matches_api);
    tcase_add_test(tc, test_parse_invalid);
    tcase_add_test(tc, test_parse_err_buffer);
    tcase_add_test(tc, test_parse_e2big);
    tcase_add_test(tc, test_clone);
    tcase_add_test(tc, test_clone_full_and_null);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(filter_suite());
}
