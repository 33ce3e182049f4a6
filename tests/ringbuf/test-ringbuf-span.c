/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_ring_read_span() on the rings test-ringbuf-batch.c reads in
 * batches (ring-test.c builds them): every span by hand, and the errors.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <vpmu/ringbuf.h>

#include "ring-test.h"
#include "check-main.h"

/* A span expected: first record's offset, type, size, misc, count. */
typedef struct WantSpan {
    uint64_t off;
    uint32_t type;
    uint16_t size, misc;
    unsigned count;
} WantSpan;

/*
 * test_batch_run_breaks' ring, read span by span with max 9, then max 2:
 *   off  0  24  48  72  96 120 152 184 208 232
 *        S   S   S'  T   S   S32 S32 L   S   S
 * max 9: [S S S'] [T] [S] [S32 S32] [L] [S S]: misc does not split a span,
 * the first record's misc is the span's; every other break does.
 * max 2: [S S] [S'] [T] [S] [S32 S32] [L] [S S].
 * The statistics are test_batch_run_breaks' to the byte.
 */
START_TEST(test_span_breaks)
{
    static const WantSpan want9[] = {
        { 0, PERF_RECORD_SAMPLE, 24, 0, 3 }, { 72, PERF_RECORD_THROTTLE, 24, 0, 1 },
        { 96, PERF_RECORD_SAMPLE, 24, 0, 1 }, { 120, PERF_RECORD_SAMPLE, 32, 0, 2 },
        { 184, PERF_RECORD_LOST, 24, 0, 1 }, { 208, PERF_RECORD_SAMPLE, 24, 0, 2 },
    };
    static const WantSpan want2[] = {
        { 0, PERF_RECORD_SAMPLE, 24, 0, 2 }, { 48, PERF_RECORD_SAMPLE, 24, 1, 1 },
        { 72, PERF_RECORD_THROTTLE, 24, 0, 1 }, { 96, PERF_RECORD_SAMPLE, 24, 0, 1 },
        { 120, PERF_RECORD_SAMPLE, 32, 0, 2 }, { 184, PERF_RECORD_LOST, 24, 0, 1 },
        { 208, PERF_RECORD_SAMPLE, 24, 0, 2 },
    };
    const WantSpan *want = _i ? want2 : want9;
    size_t nwant = _i ? 7 : 6;
    TRing t = tring(256, 0);
    VpmuRingSpan sp;
    VpmuRing *r = breaks_ring(&t);
    size_t k = 0;
    int n;

    ck_assert_int_eq(vpmu_ring_read_span(r, NULL, 9), -EINVAL);
    ck_assert_int_eq(vpmu_ring_read_span(r, &sp, 0), -EINVAL);
    while ((n = vpmu_ring_read_span(r, &sp, _i ? 2 : 9)) > 0) {
        ck_assert_uint_lt(k, nwant);
        ck_assert_int_eq(n, want[k].count);
        ck_assert_uint_eq(sp.count, want[k].count);
        ck_assert_ptr_eq(sp.base, t.data + want[k].off);
        ck_assert_uint_eq(sp.hdr.type, want[k].type);
        ck_assert_uint_eq(sp.hdr.size, want[k].size);
        ck_assert_uint_eq(sp.hdr.misc, want[k].misc);
        k++;
    }
    ck_assert_int_eq(n, 0);
    ck_assert_uint_eq(k, nwant);
    breaks_check_stats(r);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

/*
 * test_batch_run_to_end's ring by spans: [4 samples in place], [the
 * wrapping one, bounced], then -EBADMSG for the truncated one, counted once.
 */
START_TEST(test_span_to_end)
{
    TRing t = tring(128, 16);
    VpmuRingSpan sp;
    VpmuRingStats st;
    unsigned char w[24];
    VpmuRing *r = to_end_ring(&t, w);

    ck_assert_int_eq(vpmu_ring_read_span(r, &sp, 100), 4);
    ck_assert_ptr_eq(sp.base, t.data + 16);
    ck_assert_int_eq(vpmu_ring_read_span(r, &sp, 100), 1);
    ck_assert_ptr_ne(sp.base, t.data + 112);
    ck_assert_mem_eq(sp.base, w, 24);
    ck_assert_int_eq(vpmu_ring_read_span(r, &sp, 100), -EBADMSG);
    ck_assert_int_eq(vpmu_ring_read_span(r, &sp, 100), -EBADMSG);  /* repeatable */
    vpmu_ring_consume(r);
    ck_assert_uint_eq(t.pg->data_tail, 136);
    vpmu_ring_stats(r, &st);
    ck_assert_uint_eq(st.records, 5);
    ck_assert_uint_eq(st.bytes, 120);
    ck_assert_uint_eq(st.wrapped, 1);
    ck_assert_uint_eq(st.errors, 2);
    vpmu_ring_free(r);
    free(t.mem);
}
END_TEST

static Suite *ringbuf_span_suite(void)
{
    Suite *s = suite_create("ringbuf-span");
    TCase *tc = tcase_create("synthetic");

    tcase_add_loop_test(tc, test_span_breaks, 0, 2);
    tcase_add_test(tc, test_span_to_end);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(ringbuf_span_suite());
}
