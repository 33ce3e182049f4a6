/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/ringbuf on synthetic rings: the producer and the consumer on plain
 * memory laid out like a perf mmap (header page + 2^n data bytes).
 *
 * Pictures use QEMU test-fifo's habit: the data area, one char per 8
 * bytes, T = tail (consumer position), H = head (producer position).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <vpmu/ringbuf.h>

typedef struct TRing {
    unsigned char *mem;
    size_t map;
    struct perf_event_mmap_page *pg;
    unsigned char *data;
    uint64_t size;
} TRing;

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* A zeroed header page + @size data bytes, head = tail = @start. */
static TRing tring(uint64_t size, uint64_t start)
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

/* A record of @type and @size whose payload bytes are seed, seed+1, ... */
static struct perf_event_header *mkrec(void *buf, uint32_t type, uint16_t size,
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

/* ---- layout ----------------------------------------------------------- */

START_TEST(test_layout_default_and_explicit)
{
    TRing t = tring(1024, 0);
    VpmuRing *r = NULL;
    VpmuRingProducer *p = NULL;

    /* Zero data_offset/size: data = one page in, to the end: 1024 bytes. */
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_uint_eq(vpmu_ring_data_size(r), 1024);
    ck_assert_uint_eq(t.pg->data_size, 0);          /* consumer writes nothing */
    vpmu_ring_free(r);
    /* The producer writes the default layout back for other consumers. */
    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_uint_eq(t.pg->data_offset, page_size());
    ck_assert_uint_eq(t.pg->data_size, 1024);
    vpmu_ring_producer_free(p);
    /* Explicit fields win over the mapping size: 512 of the 1024 bytes. */
    t.pg->data_size = 512;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_uint_eq(vpmu_ring_data_size(r), 512);
    vpmu_ring_free(r);
    vpmu_ring_free(NULL);
    vpmu_ring_producer_free(NULL);
    free(t.mem);
}
END_TEST

/* Each bad layout, one by one: -EINVAL and no object. */
START_TEST(test_layout_errors)
{
    TRing t = tring(1024, 0);
    size_t pg = page_size();
    VpmuRing *r = (VpmuRing *)&t;
    VpmuRingProducer *p = (VpmuRingProducer *)&t;
    struct { const char *what; void *base; size_t map; uint64_t off, size; } v[] = {
        { "NULL base", NULL, pg + 1024, 0, 0 },
        { "misaligned base", t.mem + 4, pg + 1020, 0, 0 },
        { "ring size 0 (header page only)", t.mem, pg, 0, 0 },
        { "mapping shorter than the header page", t.mem, 512, 0, 0 },
        { "default data size 1000, not 2^n", t.mem, pg + 1000, 0, 0 },
        { "data_size 768, not 2^n", t.mem, pg + 1024, pg, 768 },
        { "data_size set, data_offset 0", t.mem, pg + 1024, 0, 1024 },
        { "data_offset inside the header fields", t.mem, pg + 1024, 64, 512 },
        { "data_offset not 8-aligned", t.mem, pg + 1024, pg + 4, 512 },
        { "data past the mapping", t.mem, pg + 1024, pg + 512, 1024 },
        { "data_offset past the mapping", t.mem, pg + 1024, 1ull << 40, 1024 },
        { "data_size 2^63 (offset + size overflows)", t.mem, pg + 1024, pg,
          1ull << 63 },
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        t.pg->data_offset = v[i].off;
        t.pg->data_size = v[i].size;
        ck_assert_msg(vpmu_ring_new(v[i].base, v[i].map, &r) == -EINVAL && !r,
                      "consumer accepted: %s", v[i].what);
        ck_assert_msg(vpmu_ring_producer_new(v[i].base, v[i].map, 0, &p) == -EINVAL
                      && !p, "producer accepted: %s", v[i].what);
    }
    free(t.mem);
}
END_TEST

/* ---- round trips -------------------------------------------------------- */

/*
 * 7 records of sizes 8..96 and assorted types into a 512-byte ring:
 * 8+16+24+40+64+96+48 = 296 bytes, no wrap.  The consumer sees each byte
 * exactly, in order, and the statistics count each type.
 */
START_TEST(test_round_trip_exact)
{
    static const struct { uint32_t type; uint16_t size; } recs[] = {
        { PERF_RECORD_SAMPLE, 8 }, { PERF_RECORD_MMAP, 16 },
        { PERF_RECORD_THROTTLE, 24 }, { PERF_RECORD_SAMPLE, 40 },
        { PERF_RECORD_UNTHROTTLE, 64 }, { PERF_RECORD_COMM, 96 },
        { PERF_RECORD_SAMPLE, 48 },
    };
    TRing t = tring(512, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    const struct perf_event_header *ev;
    unsigned char buf[128];
    VpmuRingStats st;
    VpmuRingProducerStats ps;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);        /* empty */
    for (unsigned i = 0; i < 7; i++) {
        mkrec(buf, recs[i].type, recs[i].size, i * 17);
        ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)buf), 0);
    }
    ck_assert_uint_eq(t.pg->data_head, 296);
    for (unsigned i = 0; i < 7; i++) {
        ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
        mkrec(buf, recs[i].type, recs[i].size, i * 17);
        ck_assert_mem_eq(ev, buf, recs[i].size);
    }
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
    ck_assert_uint_eq(t.pg->data_tail, 0);              /* not yet consumed */
    vpmu_ring_consume(r);
    ck_assert_uint_eq(t.pg->data_tail, 296);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 7);
    ck_assert_uint_eq(st.bytes, 296);
    ck_assert_uint_eq(st.samples, 3);
    ck_assert_uint_eq(st.throttle, 1);
    ck_assert_uint_eq(st.unthrottle, 1);
    ck_assert_uint_eq(st.wrapped + st.errors + st.lost_records, 0);
    vpmu_ring_producer_stats(p, &ps);
    ck_assert_uint_eq(ps.records, 7);
    ck_assert_uint_eq(ps.bytes, 296);
    ck_assert_uint_eq(ps.dropped + ps.lost_records, 0);
    vpmu_ring_free(r);
    vpmu_ring_producer_free(p);
    free(t.mem);
}
END_TEST

/*
 * One record of each size below written at every byte offset of a 64-byte
 * ring (head = tail = offset, plus 2^64 - 64 so the free-running positions
 * also overflow).  Expected: the exact bytes back, split in the ring memory
 * at the end (first 64 - off bytes at data[off], the rest at data[0]), and
 * wrapped == 1 exactly when off + size > 64, else unaligned == 1 exactly
 * when off is not a multiple of 8 (copied so that the caller gets an
 * aligned record).  Sizes 8 and 13 make the header itself straddle the
 * end for off > 56.
 */
START_TEST(test_wrap_every_offset)
{
    static const uint16_t sizes[] = { 8, 13, 24, 40 };
    unsigned char buf[64];

    for (unsigned si = 0; si < 4; si++) {
        for (uint64_t off = 0; off < 64; off++) {
            uint16_t size = sizes[si];
            uint64_t start = (0ull - 64) + off;
            TRing t = tring(64, start);
            VpmuRingProducer *p;
            VpmuRing *r;
            const struct perf_event_header *ev;
            VpmuRingStats st;
            size_t first = size < 64 - off ? size : 64 - off;

            ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
            ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
            mkrec(buf, PERF_RECORD_SAMPLE, size, (unsigned)off);
            ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)buf), 0);
            ck_assert_mem_eq(t.data + off, buf, first);
            ck_assert_mem_eq(t.data, buf + first, size - first);
            ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
            ck_assert_mem_eq(ev, buf, size);
            ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
            vpmu_ring_consume(r);
            ck_assert_uint_eq(t.pg->data_tail, start + size);
            vpmu_ring_stats(r, &st);
            ck_assert_uint_eq(st.wrapped, off + size > 64 ? 1 : 0);
            ck_assert_uint_eq(st.unaligned, off + size <= 64 && (off & 7));
            ck_assert_uint_eq((uintptr_t)ev & 7, 0);
            vpmu_ring_free(r);
            vpmu_ring_producer_free(p);
            free(t.mem);
        }
    }
}
END_TEST

/* ---- full ring and PERF_RECORD_LOST ------------------------------------ */

static void write_n(VpmuRingProducer *p, unsigned n, int expect)
{
    unsigned char buf[40];

    for (unsigned i = 0; i < n; i++) {
        mkrec(buf, PERF_RECORD_SAMPLE, 40, i);
        ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)buf), expect);
    }
}

static void read_n(VpmuRing *r, unsigned n, uint32_t type, uint16_t size)
{
    const struct perf_event_header *ev;

    for (unsigned i = 0; i < n; i++) {
        ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
        ck_assert_uint_eq(ev->type, type);
        ck_assert_uint_eq(ev->size, size);
    }
}

/*
 * 256-byte ring, 40-byte records (one char = 8 bytes, 32 chars):
 *
 * 1. 6 records fit (240 bytes); records 7-10 need 280 > 256: dropped.
 *      [SSSSSSSSSSSSSSSSSSSSSSSSSSSSSS..]  T=0 H=240, 4 pending
 * 2. consume 1 (T=40): free 56 >= 40 but LOST + record = 64 > 56: the
 *    11th is dropped too (the kernel reserves both at once): 5 pending.
 * 3. consume 1 more (T=80): free 96 >= 64: LOST{lost=5} at 240..264,
 *    wrapping the end, then the record at 264..304 (data 8..48).
 *      [LSSSSS....SSSSSSSSSSSSSSSSSSSSLL]  T=80 H=304
 * 4. the consumer reads 4 samples, then LOST (lost 5, delivered from the
 *    bounce buffer), then the sample: lost_events = 5 exactly.
 */
START_TEST(test_full_ring_lost_exact)
{
    TRing t = tring(256, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    const struct perf_event_header *ev;
    VpmuRingStats st;
    VpmuRingProducerStats ps;
    uint64_t lost[3];

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0x1234, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    write_n(p, 6, 0);
    write_n(p, 4, -ENOSPC);
    ck_assert_uint_eq(t.pg->data_head, 240);
    read_n(r, 1, PERF_RECORD_SAMPLE, 40);
    vpmu_ring_consume(r);
    write_n(p, 1, -ENOSPC);                 /* step 2 */
    ck_assert_uint_eq(t.pg->data_head, 240);
    read_n(r, 1, PERF_RECORD_SAMPLE, 40);
    vpmu_ring_consume(r);
    write_n(p, 1, 0);                       /* step 3 */
    ck_assert_uint_eq(t.pg->data_head, 304);
    read_n(r, 4, PERF_RECORD_SAMPLE, 40);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
    ck_assert_uint_eq(ev->type, PERF_RECORD_LOST);
    ck_assert_uint_eq(ev->size, 24);
    memcpy(lost, ev, sizeof(lost));
    ck_assert_uint_eq(lost[1], 0x1234);     /* id */
    ck_assert_uint_eq(lost[2], 5);          /* lost */
    read_n(r, 1, PERF_RECORD_SAMPLE, 40);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.samples, 7);
    ck_assert_uint_eq(st.lost_records, 1);
    ck_assert_uint_eq(st.lost_events, 5);
    ck_assert_uint_eq(st.wrapped, 1);
    vpmu_ring_producer_stats(p, &ps);
    ck_assert_uint_eq(ps.records, 7);
    ck_assert_uint_eq(ps.dropped, 5);
    ck_assert_uint_eq(ps.lost_records, 1);
    ck_assert_uint_eq(ps.bytes, 7 * 40 + 24);
    vpmu_ring_free(r);
    vpmu_ring_producer_free(p);
    free(t.mem);
}
END_TEST

START_TEST(test_producer_errors)
{
    TRing t = tring(64, 0);
    VpmuRingProducer *p;
    unsigned char buf[64];
    VpmuRingProducerStats ps;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    /* Below the header; 41 + the 24-byte LOST > 64 could never fit. */
    ck_assert_int_eq(vpmu_ring_producer_write(p, mkrec(buf, 9, 7, 0)), -EINVAL);
    ck_assert_int_eq(vpmu_ring_producer_write(p, mkrec(buf, 9, 41, 0)), -EINVAL);
    ck_assert_int_eq(vpmu_ring_producer_write(p, mkrec(buf, 9, 40, 0)), 0);
    /* A consumer that published a tail ahead of head: refuse, write nothing. */
    t.pg->data_tail = 48;
    ck_assert_int_eq(vpmu_ring_producer_write(p, mkrec(buf, 9, 8, 0)), -EBADMSG);
    ck_assert_uint_eq(t.pg->data_head, 40);
    vpmu_ring_producer_stats(p, &ps);
    ck_assert_uint_eq(ps.records, 1);
    ck_assert_uint_eq(ps.dropped, 0);
    vpmu_ring_producer_free(p);
    free(t.mem);
}
END_TEST

/* ---- malformed rings, one by one ---------------------------------------- */

typedef struct BadCase {
    const char *what;
    uint64_t tail, head;        /* data_tail, data_head */
    uint16_t size;              /* header size written at the tail */
    uint32_t type;
    const char *msg;            /* expected in vpmu_ring_error() */
} BadCase;

/*
 * 64-byte ring; the record header sits at offset 16 (tail = 16 + 64k).
 * Each case must give -EBADMSG, leave data_tail and the position alone
 * (the same error again on the next read), count one error per read, and
 * a later vpmu_ring_discard() skips exactly head - tail.
 */
static const BadCase bad_cases[] = {
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

START_TEST(test_malformed)
{
    const BadCase *c = &bad_cases[_i];
    TRing t = tring(64, c->tail);
    struct perf_event_header h = { .type = c->type, .size = c->size };
    const struct perf_event_header *ev = (void *)&t;
    VpmuRing *r;
    VpmuRingStats st;

    memcpy(t.data + (c->tail & 63), &h, sizeof(h));
    t.pg->data_head = c->head;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(vpmu_ring_read(r, &ev) == -EBADMSG && !ev, "%s", c->what);
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
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/* Nothing is lost: once the bad header is fixed, the same record reads. */
START_TEST(test_malformed_then_fixed)
{
    TRing t = tring(64, 0);
    struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 0 };
    const struct perf_event_header *ev;
    VpmuRing *r;

    memcpy(t.data, &h, sizeof(h));
    t.pg->data_head = 32;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), -EBADMSG);
    h.size = 32;
    memcpy(t.data, &h, sizeof(h));
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
    ck_assert_ptr_eq(ev, (void *)t.data);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/* ---- batches (vpmu_ring_read_batch) ------------------------------------ */

/* The records of a batch, checked against the records written. */
static void check_batch(const VpmuRingRecord *recs, int n, const unsigned char *want,
                        size_t *woff)
{
    for (int i = 0; i < n; i++) {
        struct perf_event_header h;

        memcpy(&h, want + *woff, sizeof(h));
        ck_assert_uint_eq((uintptr_t)recs[i].ev & 7, 0);
        ck_assert_mem_eq(&recs[i].hdr, &h, sizeof(h));
        ck_assert_mem_eq(recs[i].ev, want + *woff, h.size);
        *woff += h.size;
    }
}

/*
 * The 7 records of test_round_trip_exact, read in batches of 1 to 8: the
 * same bytes, the same statistics, and data_tail moves only on consume.
 */
START_TEST(test_batch_round_trip_exact)
{
    static const struct { uint32_t type; uint16_t size; } recs[] = {
        { PERF_RECORD_SAMPLE, 8 }, { PERF_RECORD_MMAP, 16 },
        { PERF_RECORD_THROTTLE, 24 }, { PERF_RECORD_SAMPLE, 40 },
        { PERF_RECORD_UNTHROTTLE, 64 }, { PERF_RECORD_COMM, 96 },
        { PERF_RECORD_SAMPLE, 48 },
    };
    unsigned max = (unsigned)_i;
    TRing t = tring(512, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    VpmuRingRecord out[8];
    unsigned char want[296];
    size_t woff = 0, wlen = 0;
    VpmuRingStats st;
    int n, calls = 0;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, max), 0);     /* empty */
    for (unsigned i = 0; i < 7; i++) {
        mkrec(want + wlen, recs[i].type, recs[i].size, i * 17);
        ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)(want + wlen)), 0);
        wlen += recs[i].size;
    }
    while ((n = vpmu_ring_read_batch(r, out, max)) > 0) {
        ck_assert_int_le(n, max);
        check_batch(out, n, want, &woff);
        calls++;
    }
    ck_assert_int_eq(n, 0);
    ck_assert_uint_eq(woff, 296);
    ck_assert_int_eq(calls, (7 + max - 1) / max);
    ck_assert_uint_eq(t.pg->data_tail, 0);              /* not yet consumed */
    vpmu_ring_consume(r);
    ck_assert_uint_eq(t.pg->data_tail, 296);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 7);
    ck_assert_uint_eq(st.bytes, 296);
    ck_assert_uint_eq(st.samples, 3);
    ck_assert_uint_eq(st.throttle, 1);
    ck_assert_uint_eq(st.unthrottle, 1);
    ck_assert_uint_eq(st.wrapped + st.errors + st.lost_records + st.unaligned, 0);
    vpmu_ring_free(r);
    vpmu_ring_producer_free(p);
    free(t.mem);
}
END_TEST

/*
 * Three records, 16 + size + 16 bytes, written at every byte offset of a
 * 128-byte ring (positions near 2^64), read in batches of 8.  Whatever
 * straddles the end or is misaligned comes from the bounce buffer; a batch
 * holds at most one such record, so every record of each batch must still
 * be intact when the call returns.  wrapped and unaligned count exactly
 * the records that straddle the end / sit at an offset not 8-aligned.
 * Size 13 makes the second header misaligned, and at some offsets split.
 */
START_TEST(test_batch_wrap_every_offset)
{
    static const uint16_t sizes[] = { 8, 13, 24, 40 };

    for (unsigned si = 0; si < 4; si++) {
        for (uint64_t off = 0; off < 128; off++) {
            uint16_t sz[3] = { 16, sizes[si], 16 };
            uint64_t start = (0ull - 128) + off, pos = start, wrapped = 0;
            uint64_t unaligned = 0;
            TRing t = tring(128, start);
            unsigned char want[72];
            size_t woff = 0, wlen = 0;
            VpmuRingProducer *p;
            VpmuRing *r;
            VpmuRingRecord out[8];
            VpmuRingStats st;
            int n;

            ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
            ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
            for (unsigned k = 0; k < 3; k++) {
                uint64_t o = pos & 127;

                mkrec(want + wlen, PERF_RECORD_SAMPLE, sz[k], (unsigned)(off + k));
                ck_assert_int_eq(vpmu_ring_producer_write(p, (void *)(want + wlen)), 0);
                wrapped += o + sz[k] > 128;
                unaligned += o + sz[k] <= 128 && (o & 7);
                wlen += sz[k];
                pos += sz[k];
            }
            while ((n = vpmu_ring_read_batch(r, out, 8)) > 0) {
                check_batch(out, n, want, &woff);
            }
            ck_assert_int_eq(n, 0);
            ck_assert_uint_eq(woff, wlen);
            vpmu_ring_consume(r);
            ck_assert_uint_eq(t.pg->data_tail, pos);
            vpmu_ring_stats(r, &st);
            ck_assert_uint_eq(st.records, 3);
            ck_assert_uint_eq(st.wrapped, wrapped);
            ck_assert_uint_eq(st.unaligned, unaligned);
            vpmu_ring_free(r);
            vpmu_ring_producer_free(p);
            free(t.mem);
        }
    }
}
END_TEST

/* Each bad_cases[] entry through the batch API: as test_malformed. */
START_TEST(test_batch_malformed)
{
    const BadCase *c = &bad_cases[_i];
    TRing t = tring(64, c->tail);
    struct perf_event_header h = { .type = c->type, .size = c->size };
    VpmuRingRecord out[4];
    VpmuRing *r;
    VpmuRingStats st;

    memcpy(t.data + (c->tail & 63), &h, sizeof(h));
    t.pg->data_head = c->head;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(vpmu_ring_read_batch(r, out, 4) == -EBADMSG, "%s", c->what);
        ck_assert_msg(strstr(vpmu_ring_error(r), c->msg), "%s: \"%s\"",
                      c->what, vpmu_ring_error(r));
        vpmu_ring_consume(r);
        ck_assert_uint_eq(t.pg->data_tail, c->tail);
    }
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.errors, 2);
    ck_assert_uint_eq(st.records, 0);
    ck_assert_uint_eq(vpmu_ring_discard(r), c->head - c->tail);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 4), 0);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/*
 * Good records before a bad one are returned; the next call reports it.
 *   [S S 0 . . . . .]  T=0, H=48: two 8-byte samples, then size 0
 * The error is counted once, when reported.  Then the arguments.
 */
START_TEST(test_batch_error_after_records)
{
    TRing t = tring(64, 0);
    VpmuRingRecord out[8];
    VpmuRing *r;
    VpmuRingStats st;

    mkrec(t.data, PERF_RECORD_SAMPLE, 8, 0);
    mkrec(t.data + 8, PERF_RECORD_SAMPLE, 8, 0);
    t.pg->data_head = 48;
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 0), -EINVAL);
    ck_assert_int_eq(vpmu_ring_read_batch(r, NULL, 8), -EINVAL);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 8), 2);
    ck_assert_ptr_eq(out[0].ev, (void *)t.data);
    ck_assert_ptr_eq(out[1].ev, (void *)(t.data + 8));
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 8), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(vpmu_ring_error(r), "size 0"));
    vpmu_ring_consume(r);
    ck_assert_uint_eq(t.pg->data_tail, 16);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.errors, 1);
    ck_assert_uint_eq(st.records, 2);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/*
 * The same traffic into two rings, one read record by record, the other
 * in batches of 3: the same records in the same order, and identical
 * statistics.  The traffic has every kind the consumer treats apart:
 * samples, THROTTLE, UNTHROTTLE, other types, sizes not multiples of 8
 * (misaligned, bounced), wraps, and LOST records from a full ring.
 */
START_TEST(test_batch_matches_read)
{
    static const uint32_t types[] = { PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE,
                                      PERF_RECORD_THROTTLE,
                                      PERF_RECORD_UNTHROTTLE, PERF_RECORD_MMAP };
    TRing t[2] = { tring(256, 0ull - 100), tring(256, 0ull - 100) };
    VpmuRingProducer *p[2];
    VpmuRing *r[2];
    VpmuRingStats st[2];
    unsigned char buf[64];
    uint64_t seq = 0;

    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(vpmu_ring_producer_new(t[k].mem, t[k].map, 9, &p[k]), 0);
        ck_assert_int_eq(vpmu_ring_new(t[k].mem, t[k].map, &r[k]), 0);
    }
    for (unsigned round = 0; round < 200; round++) {
        const struct perf_event_header *ev;
        VpmuRingRecord out[3];
        int n;

        for (unsigned w = round % 9; w; w--, seq++) {
            mkrec(buf, types[seq % 5], (uint16_t)(8 + (seq * 13) % 50), (unsigned)seq);
            for (int k = 0; k < 2; k++) {
                int rc = vpmu_ring_producer_write(p[k], (void *)buf);
                ck_assert(rc == 0 || rc == -ENOSPC);
            }
        }
        /* Drain only every other round, so that the ring fills and drops. */
        if ((round & 1) == 0) {
            continue;
        }
        while ((n = vpmu_ring_read_batch(r[1], out, 3)) > 0) {
            for (int i = 0; i < n; i++) {
                ck_assert_int_eq(vpmu_ring_read(r[0], &ev), 1);
                ck_assert_mem_eq(&out[i].hdr, ev, sizeof(*ev));
                ck_assert_mem_eq(out[i].ev, ev, ev->size);
            }
        }
        ck_assert_int_eq(n, 0);
        ck_assert_int_eq(vpmu_ring_read(r[0], &ev), 0);
        vpmu_ring_consume(r[0]);
        vpmu_ring_consume(r[1]);
    }
    vpmu_ring_stats(r[0], &st[0]);
    vpmu_ring_stats(r[1], &st[1]);
    ck_assert_mem_eq(&st[0], &st[1], sizeof(st[0]));
    ck_assert_uint_gt(st[0].lost_records, 0);
    ck_assert_uint_gt(st[0].wrapped, 0);
    ck_assert_uint_gt(st[0].unaligned, 0);
    ck_assert_uint_gt(st[0].throttle * st[0].unthrottle, 0);
    for (int k = 0; k < 2; k++) {
        vpmu_ring_free(r[k]);
        vpmu_ring_producer_free(p[k]);
        free(t[k].mem);
    }
}
END_TEST

/* ---- PERF_RECORD_SAMPLE ------------------------------------------------ */

START_TEST(test_sample_size)
{
    uint64_t itp = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                   PERF_SAMPLE_PERIOD;

    /* 8-byte header + one 8-byte slot per field. */
    ck_assert_int_eq(vpmu_ring_sample_size(0), 8);
    ck_assert_int_eq(vpmu_ring_sample_size(itp), 8 + 4 * 8);
    ck_assert_int_eq(vpmu_ring_sample_size(VPMU_RING_SAMPLE_TYPES), 8 + 9 * 8);
    ck_assert_int_eq(vpmu_ring_sample_size(itp | PERF_SAMPLE_CALLCHAIN),
                     -EOPNOTSUPP);
    ck_assert_int_eq(vpmu_ring_sample_size(PERF_SAMPLE_READ), -EOPNOTSUPP);
    ck_assert_int_eq(vpmu_ring_sample_size(1ull << 40), -EOPNOTSUPP);
}
END_TEST

/*
 * A record written by hand in the kernel's order (perf_event.h):
 * IP, TID (pid, tid), TIME, ADDR, ID, STREAM_ID, CPU (cpu, res), PERIOD.
 */
START_TEST(test_sample_parse_by_hand)
{
    uint64_t type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                    PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
    struct { struct perf_event_header h; uint64_t ip; uint32_t pid, tid;
             uint64_t time, addr, id, stream; uint32_t cpu, res;
             uint64_t period; } rec = {
        { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 72 },
        0x401000, 100, 101, 5000000, 0xdead0000, 7, 8, 3, 0xffffffff, 100000,
    };
    VpmuRingSample s;

    ck_assert_uint_eq(sizeof(rec), 72);
    ck_assert_int_eq(vpmu_ring_parse_sample(&rec.h, type, &s), 0);
    ck_assert_uint_eq(s.ip, 0x401000);
    ck_assert_uint_eq(s.pid, 100);
    ck_assert_uint_eq(s.tid, 101);
    ck_assert_uint_eq(s.time, 5000000);
    ck_assert_uint_eq(s.addr, 0xdead0000);
    ck_assert_uint_eq(s.id, 7);
    ck_assert_uint_eq(s.stream_id, 8);
    ck_assert_uint_eq(s.cpu, 3);
    ck_assert_uint_eq(s.period, 100000);
    /* IDENTIFIER comes first: with IP|IDENTIFIER, slot 1 is the id. */
    rec.h.size = 24;
    ck_assert_int_eq(vpmu_ring_parse_sample(&rec.h, PERF_SAMPLE_IDENTIFIER |
                                            PERF_SAMPLE_IP, &s), 0);
    ck_assert_uint_eq(s.id, 0x401000);
    ck_assert_uint_eq(s.ip, ((uint64_t)101 << 32) | 100);
    ck_assert_uint_eq(s.period, 0);                 /* not in the type: 0 */
    /* Errors: size mismatch, unsupported type, not a sample. */
    ck_assert_int_eq(vpmu_ring_parse_sample(&rec.h, type, &s), -EBADMSG);
    ck_assert_int_eq(vpmu_ring_parse_sample(&rec.h, PERF_SAMPLE_IP |
                                            PERF_SAMPLE_RAW, &s), -EOPNOTSUPP);
    rec.h.type = PERF_RECORD_LOST;
    ck_assert_int_eq(vpmu_ring_parse_sample(&rec.h, PERF_SAMPLE_IP, &s), -EINVAL);
}
END_TEST

/* Every subset of the supported fields: encode, wrap, decode, equal. */
START_TEST(test_sample_round_trip_all_types)
{
    static const uint64_t bits[] = {
        PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
        PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
        PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD,
    };
    TRing t = tring(128, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    const struct perf_event_header *ev;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    for (unsigned m = 0; m < 512; m++) {
        uint64_t type = 0;
        VpmuRingSample in = {
            .ip = 0x1000 + m, .pid = m, .tid = m + 1, .time = m * 1000ull,
            .addr = ~(uint64_t)m, .id = 77 + m, .stream_id = 99, .cpu = m % 7,
            .period = 4096 + m,
        }, want = { 0 }, got;

        for (unsigned b = 0; b < 9; b++) {
            if (m & (1u << b)) {
                type |= bits[b];
            }
        }
        want.ip = type & PERF_SAMPLE_IP ? in.ip : 0;
        want.pid = type & PERF_SAMPLE_TID ? in.pid : 0;
        want.tid = type & PERF_SAMPLE_TID ? in.tid : 0;
        want.time = type & PERF_SAMPLE_TIME ? in.time : 0;
        want.addr = type & PERF_SAMPLE_ADDR ? in.addr : 0;
        want.id = type & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER) ? in.id : 0;
        want.stream_id = type & PERF_SAMPLE_STREAM_ID ? in.stream_id : 0;
        want.cpu = type & PERF_SAMPLE_CPU ? in.cpu : 0;
        want.period = type & PERF_SAMPLE_PERIOD ? in.period : 0;
        ck_assert_int_eq(vpmu_ring_producer_write_sample(p, type, 0, &in), 0);
        ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
        ck_assert_int_eq(ev->size, vpmu_ring_sample_size(type));
        ck_assert_int_eq(vpmu_ring_parse_sample(ev, type, &got), 0);
        ck_assert_mem_eq(&got, &want, sizeof(got));
        vpmu_ring_consume(r);
    }
    ck_assert_int_eq(vpmu_ring_producer_write_sample(p, PERF_SAMPLE_CALLCHAIN,
                                                     0, &(VpmuRingSample){ 0 }),
                     -EOPNOTSUPP);
    vpmu_ring_free(r);
    vpmu_ring_producer_free(p);
    free(t.mem);
}
END_TEST

/* ---- two threads -------------------------------------------------------- */

#define SPSC_RECORDS 100000u

typedef struct Spsc {
    TRing t;
    VpmuRingProducer *p;
    uint64_t marker_drops;      /* refused writes of the end marker */
} Spsc;

static void *spsc_producer(void *arg)
{
    Spsc *s = arg;
    VpmuRingSample smp = { .period = 1 };

    for (uint64_t seq = 0; seq < SPSC_RECORDS; seq++) {
        smp.time = seq;
        int rc = vpmu_ring_producer_write_sample(s->p, PERF_SAMPLE_TIME |
                                                 PERF_SAMPLE_PERIOD, 0, &smp);
        if (rc == -ENOSPC && (seq & 7) == 0) {
            sched_yield();
        } else if (rc && rc != -ENOSPC) {
            return (void *)1;
        }
    }
    /* A final record after the consumer drained flushes any pending LOST. */
    smp.time = UINT64_MAX;
    while (vpmu_ring_producer_write_sample(s->p, PERF_SAMPLE_TIME |
                                           PERF_SAMPLE_PERIOD, 0, &smp)) {
        s->marker_drops++;          /* each refusal is counted as lost too */
        sched_yield();
    }
    return NULL;
}

/*
 * A producer thread writes samples numbered 0..N-1 into a 1 KiB ring while
 * this thread consumes.  Each sequence number arrives at most once and in
 * order, and every one is either delivered or counted in a LOST record:
 * delivered + lost_events == N + the refused writes of the end marker.
 */
START_TEST(test_spsc_threads)
{
    Spsc s = { .t = tring(1024, 0) };
    const struct perf_event_header *ev;
    VpmuRing *r;
    VpmuRingStats st;
    VpmuRingSample smp;
    pthread_t th;
    uint64_t delivered = 0, next = 0;
    void *ret;

    ck_assert_int_eq(vpmu_ring_producer_new(s.t.mem, s.t.map, 0, &s.p), 0);
    ck_assert_int_eq(vpmu_ring_new(s.t.mem, s.t.map, &r), 0);
    ck_assert_int_eq(pthread_create(&th, NULL, spsc_producer, &s), 0);
    for (;;) {
        int rc = vpmu_ring_read(r, &ev);

        ck_assert_int_ge(rc, 0);
        if (rc == 0) {
            vpmu_ring_consume(r);
            sched_yield();
            continue;
        }
        if (ev->type != PERF_RECORD_SAMPLE) {
            continue;
        }
        ck_assert_int_eq(vpmu_ring_parse_sample(ev, PERF_SAMPLE_TIME |
                                                PERF_SAMPLE_PERIOD, &smp), 0);
        if (smp.time == UINT64_MAX) {
            break;
        }
        ck_assert_uint_ge(smp.time, next);
        next = smp.time + 1;
        delivered++;
    }
    vpmu_ring_consume(r);
    ck_assert_int_eq(pthread_join(th, &ret), 0);
    ck_assert_ptr_null(ret);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(delivered + st.lost_events, SPSC_RECORDS + s.marker_drops);
    ck_assert_uint_eq(st.errors, 0);
    printf("spsc: %llu delivered, %llu lost, %llu wrapped\n",
           (unsigned long long)delivered, (unsigned long long)st.lost_events,
           (unsigned long long)st.wrapped);
    vpmu_ring_free(r);
    vpmu_ring_producer_free(s.p);
    free(s.t.mem);
}
END_TEST

static Suite *ringbuf_suite(void)
{
    Suite *s = suite_create("ringbuf");
    TCase *tc = tcase_create("synthetic");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_layout_default_and_explicit);
    tcase_add_test(tc, test_layout_errors);
    tcase_add_test(tc, test_round_trip_exact);
    tcase_add_test(tc, test_wrap_every_offset);
    tcase_add_test(tc, test_full_ring_lost_exact);
    tcase_add_test(tc, test_producer_errors);
    tcase_add_loop_test(tc, test_malformed, 0,
                        sizeof(bad_cases) / sizeof(bad_cases[0]));
    tcase_add_test(tc, test_malformed_then_fixed);
    tcase_add_loop_test(tc, test_batch_round_trip_exact, 1, 9);
    tcase_add_test(tc, test_batch_wrap_every_offset);
    tcase_add_loop_test(tc, test_batch_malformed, 0,
                        sizeof(bad_cases) / sizeof(bad_cases[0]));
    tcase_add_test(tc, test_batch_error_after_records);
    tcase_add_test(tc, test_batch_matches_read);
    tcase_add_test(tc, test_sample_size);
    tcase_add_test(tc, test_sample_parse_by_hand);
    tcase_add_test(tc, test_sample_round_trip_all_types);
    tcase_add_test(tc, test_spsc_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ringbuf_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
