/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the synthetic-ring suites; see ring-test.h.
 * They assert with ck_assert, so call them from inside a Check test only.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring-test.h"

size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

TRing tring(uint64_t size, uint64_t start)
{
    TRing t = { .map = page_size() + size, .size = size };
    void *mem = NULL;

    ck_assert_int_eq(posix_memalign(&mem, page_size(), t.map), 0);
    memset(mem, 0, t.map);
    t.mem = mem;
    t.pg = mem;
    t.data = t.mem + page_size();
    t.pg->data_head = t.pg->data_tail = start;
    return t;
}

struct perf_event_header *mkrec(void *buf, uint32_t type, uint16_t size,
                                unsigned seed)
{
    struct perf_event_header h = { .type = type, .misc = 0, .size = size };
    unsigned char *b = buf;

    memcpy(b, &h, sizeof(h));
    for (unsigned i = sizeof(h); i < size; i++) {
        b[i] = (unsigned char)(seed + i);
    }
    return buf;
}

/* ---- the exact round trip ----------------------------------------------- */

const RecSpec exact_recs[EXACT_NREC] = {
    { PERF_RECORD_SAMPLE, 8 }, { PERF_RECORD_MMAP, 16 },
    { PERF_RECORD_THROTTLE, 24 }, { PERF_RECORD_SAMPLE, 40 },
    { PERF_RECORD_UNTHROTTLE, 64 }, { PERF_RECORD_COMM, 96 },
    { PERF_RECORD_SAMPLE, 48 },
};

void exact_write(VpmuRingProducer *p, unsigned char want[EXACT_BYTES])
{
    size_t wlen = 0;

    for (unsigned i = 0; i < EXACT_NREC; i++) {
        mkrec(want + wlen, exact_recs[i].type, exact_recs[i].size, i * 17);
        ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)(want + wlen)), 0);
        wlen += exact_recs[i].size;
    }
    ck_assert_uint_eq(wlen, EXACT_BYTES);
}

void exact_check_consumed(VpmuRing *r, const TRing *t)
{
    VpmuRingStats st;

    ck_assert_uint_eq(t->pg->data_tail, 0);             /* not yet consumed */
    vpmu_ring_consume(r);
    ck_assert_uint_eq(t->pg->data_tail, 296);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 7);
    ck_assert_uint_eq(st.bytes, 296);
    ck_assert_uint_eq(st.samples, 3);
    ck_assert_uint_eq(st.throttle, 1);
    ck_assert_uint_eq(st.unthrottle, 1);
    /* Every record starts 8-aligned and none reaches the end: no bounce. */
    ck_assert_uint_eq(st.wrapped + st.errors + st.lost_records + st.unaligned, 0);
}

/* ---- malformed rings ---------------------------------------------------- */

/*
 * 64-byte ring; the record header sits at offset 16 (tail = 16 + 64k).
 * Each case must give -EBADMSG, leave data_tail and the position alone
 * (the same error again on the next read), count one error per read, and
 * a later vpmu_ring_discard() skips exactly head - tail.
 */
const BadCase bad_cases[] = {
    { "size 0", 16, 48, 0, PERF_RECORD_SAMPLE, "size 0" },
    { "size below the header", 16, 48, 4, PERF_RECORD_SAMPLE, "size 4" },
    { "size larger than the ring", 16, 80, 72, PERF_RECORD_SAMPLE, "size 72" },
    { "head behind tail", 80, 16, 8, PERF_RECORD_SAMPLE, "behind" },
    { "head more than the ring ahead", 16, 16 + 65, 8, PERF_RECORD_SAMPLE,
      "more than the ring" },
    { "head - tail below a header", 16, 20, 8, PERF_RECORD_SAMPLE,
      "no header" },
    { "head - tail below the record size", 16, 32, 24, PERF_RECORD_SAMPLE,
      "24, 16 bytes published" },
    { "PERF_RECORD_LOST without its count", 16, 32, 16, PERF_RECORD_LOST,
      "PERF_RECORD_LOST of 16" },
};

const size_t n_bad_cases = sizeof(bad_cases) / sizeof(bad_cases[0]);

/*
 * One read by either API.  *ev is the first record returned, or NULL:
 * vpmu_ring_read() must clear it itself when it returns no record (it
 * starts out pointing at @r so that a stale pointer shows).
 */
static int bad_read(VpmuRing *r, bool batch, const void **ev)
{
    const struct perf_event_header *hdr = (const void *)r;
    VpmuRingRecord out[4];
    int rc;

    if (!batch) {
        rc = vpmu_ring_read(r, &hdr);
        *ev = hdr;
        return rc;
    }
    rc = vpmu_ring_read_batch(r, out, 4);
    *ev = rc > 0 ? out[0].ev : NULL;
    return rc;
}

void check_bad_case(const BadCase *c, bool batch)
{
    TRing t = tring(64, c->tail);
    struct perf_event_header h = { .type = c->type, .size = c->size };
    const void *ev;
    VpmuRing *r;
    VpmuRingStats st;

    memcpy(t.data + (c->tail & 63), &h, sizeof(h));
    t.pg->data_head = c->head;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(bad_read(r, batch, &ev) == -EBADMSG && !ev, "%s", c->what);
        ck_assert_msg(strstr(vpmu_ring_error(r), c->msg), "%s: \"%s\"",
                      c->what, vpmu_ring_error(r));
        vpmu_ring_consume(r);
        ck_assert_uint_eq(t.pg->data_tail, c->tail);
    }
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.errors, 2);
    ck_assert_uint_eq(st.records, 0);
    ck_assert_uint_eq(vpmu_ring_discard(r), c->head - c->tail);
    ck_assert_uint_eq(t.pg->data_tail, c->head);
    ck_assert_int_eq(bad_read(r, batch, &ev), 0);
    vpmu_ring_free(r);
    free(t.mem);
}

/* ---- rings for the run and span fast paths ----------------------------- */

void put(TRing *t, uint64_t off, uint32_t type, uint16_t size, uint16_t misc)
{
    struct perf_event_header *h = mkrec(t->data + off, type, size, (unsigned)off);

    h->misc = misc;
}

const RunRec breaks[BREAKS_NREC] = {
    { 0, PERF_RECORD_SAMPLE, 24, 0 },    { 24, PERF_RECORD_SAMPLE, 24, 0 },
    { 48, PERF_RECORD_SAMPLE, 24, 1 },   { 72, PERF_RECORD_THROTTLE, 24, 0 },
    { 96, PERF_RECORD_SAMPLE, 24, 0 },   { 120, PERF_RECORD_SAMPLE, 32, 0 },
    { 152, PERF_RECORD_SAMPLE, 32, 0 },  { 184, PERF_RECORD_LOST, 24, 0 },
    { 208, PERF_RECORD_SAMPLE, 24, 0 },  { 232, PERF_RECORD_SAMPLE, 24, 0 },
};

VpmuRing *breaks_ring(TRing *t)
{
    uint64_t lost[2] = { 0, 3 };        /* PERF_RECORD_LOST: id, lost */
    VpmuRing *r;

    for (unsigned i = 0; i < BREAKS_NREC; i++) {
        put(t, breaks[i].off, breaks[i].type, breaks[i].size, breaks[i].misc);
    }
    memcpy(t->data + 184 + 8, lost, sizeof(lost));
    t->pg->data_head = 256;
    ck_assert_int_eq(vpmu_ring_new(t->mem, t->map, &r), 0);
    return r;
}

void breaks_check_stats(const VpmuRing *r)
{
    VpmuRingStats st;

    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 10);
    ck_assert_uint_eq(st.bytes, 256);
    ck_assert_uint_eq(st.samples, 8);
    ck_assert_uint_eq(st.throttle, 1);
    ck_assert_uint_eq(st.lost_records, 1);
    ck_assert_uint_eq(st.lost_events, 3);
    ck_assert_uint_eq(st.errors, 0);
}

VpmuRing *to_end_ring(TRing *t, unsigned char w[24])
{
    VpmuRing *r;

    for (uint64_t off = 16; off < 112; off += 24) {
        put(t, off, PERF_RECORD_SAMPLE, 24, 0);
    }
    mkrec(w, PERF_RECORD_SAMPLE, 24, 7);
    memcpy(t->data + 112, w, 16);
    memcpy(t->data, w + 16, 8);
    memcpy(t->data + 8, &(struct perf_event_header){ PERF_RECORD_SAMPLE, 0, 24 },
           sizeof(struct perf_event_header));
    t->pg->data_head = 144;
    ck_assert_int_eq(vpmu_ring_new(t->mem, t->map, &r), 0);
    return r;
}
