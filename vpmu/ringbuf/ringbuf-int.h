/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/ringbuf internals shared by ringbuf.c (layout, the record-by-record
 * consumer, the producer) and batch.c (the batch and span fast paths).
 */
#ifndef VPMU_RINGBUF_INT_H
#define VPMU_RINGBUF_INT_H

#include <stdint.h>

#include <vpmu/ringbuf.h>

/* A record's size is a __u16 (struct perf_event_header.size). */
#define RING_MAX_RECORD     0xffffu
#define RING_HDR_SIZE       ((uint64_t)sizeof(struct perf_event_header))
/*
 * How far ahead of the record being read the fast path prefetches: about
 * 8 records of 64 bytes, enough to cover an L2 hit at one record per ~6
 * cycles (measured best between 256 and 1024 on Cascade Lake).
 */
#define RING_PREFETCH       512u

/* PERF_RECORD_LOST: { header; u64 id; u64 lost; } (+ sample_id, optional). */
typedef struct RingLost {
    struct perf_event_header header;
    uint64_t id;
    uint64_t lost;
} RingLost;

typedef struct RingLayout {
    struct perf_event_mmap_page *page;
    unsigned char *data;
    uint64_t size;          /* data_size, a power of two */
    uint64_t mask;          /* size - 1 */
} RingLayout;

struct VpmuRing {
    RingLayout l;
    uint64_t pos;           /* start of the next record */
    uint64_t head;          /* data_head as last loaded */
    unsigned char *bounce;  /* min(size, RING_MAX_RECORD) bytes */
    VpmuRingStats stats;    /* .samples is derived: records - nonsample */
    uint64_t nonsample;     /* records delivered that are not SAMPLE */
    char err[128];
};

/*
 * Load data_head once the records of the last snapshot are used up, and
 * only then, so that every read API judges a ring against the same head
 * and an error repeats until vpmu_ring_discard() (fuzz-ringbuf --seed 3
 * --case 532).  The acquire pairs with the producer's release store of
 * data_head (kernel: smp_store_release() in perf_output_put_handle(); ours:
 * vpmu_ring_producer_write()): the record bytes below head are visible
 * once head is.
 */
static inline void vpmu_ring__snapshot(VpmuRing *r)
{
    if (r->head == r->pos) {
        r->head = __atomic_load_n(&r->l.page->data_head, __ATOMIC_ACQUIRE);
    }
}

/*
 * The next record the general way (wraps through the bounce buffer,
 * misalignment, LOST counts, every error), taken and counted.
 * Return: 1 and @rec; 0 if the ring is empty; -EBADMSG (nothing taken).
 */
int vpmu_ring__next(VpmuRing *r, VpmuRingRecord *rec);

#endif /* VPMU_RINGBUF_INT_H */
