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

#endif /* RING_TEST_H */
