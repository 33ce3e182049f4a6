/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the synthetic-ring suites (test-ringbuf,
 * test-ringbuf-batch): plain memory laid out like a perf mmap (header
 * page + 2^n data bytes), records with checkable payloads, and the
 * fixtures both the record-by-record and the batch API run through.
 *
 * Pictures use QEMU test-fifo's habit: the data area, one char per 8
 * bytes, T = tail (consumer position), H = head (producer position).
 */
#ifndef RING_TEST_H
#define RING_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/ringbuf.h>

typedef struct TRing {
    unsigned char *mem;
    size_t map;
    struct perf_event_mmap_page *pg;
    unsigned char *data;
    uint64_t size;
} TRing;

size_t page_size(void);

/* A zeroed header page + @size data bytes, head = tail = @start. */
TRing tring(uint64_t size, uint64_t start);

/* A record of @type and @size whose payload bytes are seed, seed+1, ... */
struct perf_event_header *mkrec(void *buf, uint32_t type, uint16_t size,
                                unsigned seed);

/*
 * The exact round trip: 7 records of sizes 8..96 and assorted types,
 * 8+16+24+40+64+96+48 = 296 bytes, so a 512-byte ring holds them without
 * a wrap.  Record i has payload seed i * 17.
 */
#define EXACT_NREC 7
#define EXACT_BYTES 296

typedef struct RecSpec {
    uint32_t type;
    uint16_t size;
} RecSpec;

extern const RecSpec exact_recs[EXACT_NREC];

/* Write the 7 records through @p; @want gets their bytes back to back. */
void exact_write(VpmuRingProducer *p, unsigned char want[EXACT_BYTES]);

/*
 * After all 7 records were read from @t (starting at position 0): data_tail
 * moves only on consume, and the statistics count each type exactly.
 */
void exact_check_consumed(VpmuRing *r, const TRing *t);

/* ---- malformed rings ---------------------------------------------------- */

typedef struct BadCase {
    const char *what;
    uint64_t tail, head;        /* data_tail, data_head */
    uint16_t size;              /* header size written at the tail */
    uint32_t type;
    const char *msg;            /* expected in vpmu_ring_error() */
} BadCase;

extern const BadCase bad_cases[];
extern const size_t n_bad_cases;

/*
 * Run bad case @c through vpmu_ring_read() or, if @batch,
 * vpmu_ring_read_batch(): see bad_cases[] for what must hold.
 */
void check_bad_case(const BadCase *c, bool batch);

/* ---- rings for the run and span fast paths ----------------------------- */

/* Write a record of @type and @size at offset @off of @t, misc @misc. */
void put(TRing *t, uint64_t off, uint32_t type, uint16_t size, uint16_t misc);

/*
 * The "breaks" ring: a run of 24-byte samples broken every way it can be
 * (test-ringbuf-batch.c, test_batch_run_breaks, has the picture):
 *   off  0  24  48  72  96 120 152 184 208 232
 *        S   S   S'  T   S   S32 S32 L   S   S
 */
typedef struct RunRec {
    uint64_t off;
    uint32_t type;
    uint16_t size, misc;
} RunRec;

#define BREAKS_NREC 10
extern const RunRec breaks[BREAKS_NREC];

/* Write it to @t (256 bytes, T=0), publish it whole; its consumer. */
VpmuRing *breaks_ring(TRing *t);

/* After the whole "breaks" ring: counted as vpmu_ring_read() would. */
void breaks_check_stats(const VpmuRing *r);

/*
 * The "to end" ring (test_batch_run_to_end has the picture) in @t, of 128
 * bytes from position 16; @w gets the wrapping record's bytes.  Its consumer.
 */
VpmuRing *to_end_ring(TRing *t, unsigned char w[24]);

#endif /* RING_TEST_H */
