/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/ringbuf on synthetic rings, the batch API and PERF_RECORD_SAMPLE:
 * vpmu_ring_read_batch() on the same rings as test-ringbuf.c (exact round
 * trips, wraps at every offset, malformed rings) and against
 * vpmu_ring_read() on the same traffic; its fast path for runs of one
 * record size; then sample sizes, parsing and encoding.  Spans over the
 * same run rings are in test-ringbuf-span.c.
 *
 * Pictures use QEMU test-fifo's habit: the data area, one char per 8
 * bytes, T = tail (consumer position), H = head (producer position).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <vpmu/ringbuf.h>

#include "ring-test.h"
#include "check-main.h"

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
 * The 7 records of exact_recs, as test_round_trip_exact, read in batches
 * of 1 to 8: the same bytes, the same statistics, and data_tail moves only
 * on consume.
 */
START_TEST(test_batch_round_trip_exact)
{
    unsigned max = (unsigned)_i;
    TRing t = tring(512, 0);
    VpmuRingProducer *p;
    VpmuRing *r;
    VpmuRingRecord out[8];
    unsigned char want[EXACT_BYTES];
    size_t woff = 0;
    int n, calls = 0;

    ck_assert_int_eq(vpmu_ring_producer_new(t.mem, t.map, 0, &p), 0);
    ck_assert_int_eq(vpmu_ring_new(t.mem, t.map, &r), 0);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, max), 0);     /* empty */
    exact_write(p, want);
    while ((n = vpmu_ring_read_batch(r, out, max)) > 0) {
        ck_assert_int_le(n, max);
        check_batch(out, n, want, &woff);
        calls++;
    }
    ck_assert_int_eq(n, 0);
    ck_assert_uint_eq(woff, 296);
    ck_assert_int_eq(calls, (7 + max - 1) / max);
    exact_check_consumed(r, &t);
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
    check_bad_case(&bad_cases[_i], true);
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

/* ---- runs of one size (the fast path for one event's samples) ---------- */

/*
 * A run of 24-byte samples broken every way it can be, read in batches of
 * max = 1..9 (so the batch limit falls inside the run, on each break and
 * after it):
 *   off  0  24  48  72  96 120 152 184 208 232
 *        S   S   S'  T   S   S32 S32 L   S   S     (S' = misc 1, T = THROTTLE,
 *                                                   L = LOST of 3, 24 bytes)
 * A run starts at 0 (two samples of one size); misc does not end it and is
 * handed out as written; THROTTLE of the same size, the change to 32 bytes
 * and LOST end it.  All 10 records come out in order, each in place, and
 * the statistics count them as vpmu_ring_read() would: 256 bytes, 8
 * samples (offsets 0, 24, 48, 96, 120, 152, 208, 232), 1 THROTTLE, 1 LOST
 * of 3 events.
 */
START_TEST(test_batch_run_breaks)
{
    unsigned max = (unsigned)_i;
    TRing t = tring(256, 0);
    VpmuRingRecord out[9];
    VpmuRing *r = breaks_ring(&t);
    unsigned got = 0;
    int n;

    while ((n = vpmu_ring_read_batch(r, out, max)) > 0) {
        ck_assert_int_le(n, max);
        for (int i = 0; i < n; i++, got++) {
            ck_assert_uint_lt(got, 10);
            ck_assert_ptr_eq(out[i].ev, (const void *)(t.data + breaks[got].off));
            ck_assert_uint_eq(out[i].hdr.type, breaks[got].type);
            ck_assert_uint_eq(out[i].hdr.size, breaks[got].size);
            ck_assert_uint_eq(out[i].hdr.misc, breaks[got].misc);
        }
    }
    ck_assert_int_eq(n, 0);
    ck_assert_uint_eq(got, 10);
    breaks_check_stats(r);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/*
 * A run up to the end of the data area, and what a run must not take:
 *   ring 128, T=16, H=144:  [w t S S S S S W]  (8 bytes a char)
 *   4 x 24-byte samples at offsets 16, 40, 64, 88, then one (W) at 112
 *   that wraps (its last 8 bytes are w at 0), then at offset 8 a 24-byte
 *   sample of which only the header (t) is published.
 * The run delivers the 4 in place, the wrapping one comes bounced
 * (wrapped = 1), and the truncated record is an error, reported on the
 * next call, after everything good was delivered.
 */
START_TEST(test_batch_run_to_end)
{
    TRing t = tring(128, 16);
    VpmuRingRecord out[16];
    VpmuRingStats st;
    unsigned char w[24];
    VpmuRing *r = to_end_ring(&t, w);

    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 16), 5);
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_eq(out[i].ev, (const void *)(t.data + 16 + 24 * i));
    }
    ck_assert_ptr_ne(out[4].ev, (const void *)(t.data + 112));
    ck_assert_mem_eq(out[4].ev, w, 24);
    ck_assert_int_eq(vpmu_ring_read_batch(r, out, 16), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(vpmu_ring_error(r), "trunc"));
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 5);
    ck_assert_uint_eq(st.wrapped, 1);
    ck_assert_uint_eq(st.errors, 1);
    vpmu_ring_free(r);
    free(t.mem);
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

static Suite *ringbuf_batch_suite(void)
{
    Suite *s = suite_create("ringbuf-batch");
    TCase *tc = tcase_create("synthetic");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_batch_round_trip_exact, 1, 9);
    tcase_add_test(tc, test_batch_wrap_every_offset);
    tcase_add_loop_test(tc, test_batch_malformed, 0, (int)n_bad_cases);
    tcase_add_test(tc, test_batch_error_after_records);
    tcase_add_test(tc, test_batch_matches_read);
    tcase_add_loop_test(tc, test_batch_run_breaks, 1, 10);
    tcase_add_test(tc, test_batch_run_to_end);
    tcase_add_test(tc, test_sample_size);
    tcase_add_test(tc, test_sample_parse_by_hand);
    tcase_add_test(tc, test_sample_round_trip_all_types);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(ringbuf_batch_suite());
}
