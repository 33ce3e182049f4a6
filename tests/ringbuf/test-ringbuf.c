/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/ringbuf on synthetic rings, record by record: the producer and the
 * consumer (vpmu_ring_read) on plain memory laid out like a perf mmap
 * (header page + 2^n data bytes): layouts, exact round trips, wraps, the
 * full ring and PERF_RECORD_LOST, malformed rings, and two threads.
 * The batch API and sample parsing are in test-ringbuf-batch.c.
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

#include "ring-test.h"
#include "check-main.h"

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
 * The 7 records of exact_recs (296 bytes) into a 512-byte ring, no wrap.
 * The consumer sees each byte exactly, in order, and the statistics count
 * each type.
 */
START_TEST(test_round_trip_exact)
{
    TRing t = tring(512, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    const struct perf_event_header *ev;
    unsigned char want[EXACT_BYTES];
    size_t woff = 0;
    VpmuRingProducerStats ps;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);        /* empty */
    exact_write(p, want);
    ck_assert_uint_eq(t.pg->data_head, 296);
    for (unsigned i = 0; i < EXACT_NREC; i++) {
        ck_assert_int_eq(vpmu_ring_read(r, &ev), 1);
        ck_assert_mem_eq(ev, want + woff, exact_recs[i].size);
        woff += exact_recs[i].size;
    }
    ck_assert_int_eq(vpmu_ring_read(r, &ev), 0);
    exact_check_consumed(r, &t);
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

/* Each bad_cases[] entry (ring-test.c) through vpmu_ring_read(). */
START_TEST(test_malformed)
{
    check_bad_case(&bad_cases[_i], false);
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
    printf("# spsc: %llu delivered, %llu lost, %llu wrapped\n",
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
    tcase_add_loop_test(tc, test_malformed, 0, (int)n_bad_cases);
    tcase_add_test(tc, test_malformed_then_fixed);
    tcase_add_test(tc, test_spsc_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(ringbuf_suite());
}
