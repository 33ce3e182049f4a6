/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu ring buffer: the perf mmap ring protocol, consumer and producer.
 *
 * A ring is one struct perf_event_mmap_page (the "header page") followed,
 * at data_offset, by data_size bytes of records (a power of two).  Every
 * record starts with a struct perf_event_header whose size covers the
 * whole record.  The producer (the kernel, or VpmuRingProducer) writes
 * records at data_head and then publishes data_head; the consumer reads
 * records between its position and data_head and then publishes data_tail
 * so the producer may reuse the space.  Positions are free-running 64-bit
 * byte counts; the offset in the data area is pos & (data_size - 1).
 *
 * Layout: when the header page has data_size != 0 (Linux >= 4.1), its
 * data_offset and data_size are used; when both are 0, the data starts one
 * page (sysconf(_SC_PAGESIZE)) in and runs to the end of the mapping.
 *
 * Memory ordering (docs/ringbuf.md has the argument):
 *  - data_head is loaded with acquire, pairing with the producer's release
 *    store (the kernel's smp_store_release() in perf_output_put_handle()),
 *    so the record bytes below head are visible before we read them;
 *  - data_tail is stored with release, pairing with the producer's load of
 *    data_tail before it writes (the kernel's READ_ONCE + smp_mb() in
 *    perf_output_begin()), so our reads finish before space is reused.
 *
 * Consumer usage (one thread per ring; nothing here is thread-safe, but a
 * consumer and a producer may run on two threads):
 *
 *   vpmu_ring_new(base, map_size, &ring)
 *   while ((r = vpmu_ring_read(ring, &ev)) == 1) {
 *       ... use ev (valid until the next read or consume) ...
 *   }
 *   vpmu_ring_consume(ring);     r == 0: empty; r < 0: malformed ring
 *
 * or, in batches (at most one acquire of data_head and one release of
 * data_tail per batch; the fast way, see docs/ringbuf.md):
 *
 *   VpmuRingRecord recs[64];
 *   while ((n = vpmu_ring_read_batch(ring, recs, 64)) > 0) {
 *       for (i = 0; i < n; i++) ... use recs[i].ev, recs[i].hdr ...
 *       vpmu_ring_consume(ring);
 *   }                            n == 0: empty; n < 0: malformed ring
 *
 * Errors never consume anything: on -EBADMSG the ring position stays at the
 * start of the bad record, vpmu_ring_error() says what is wrong, and the
 * caller may give up or vpmu_ring_discard() everything up to data_head.
 */
#ifndef VPMU_RINGBUF_H
#define VPMU_RINGBUF_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VpmuRing VpmuRing;
typedef struct VpmuRingProducer VpmuRingProducer;

/* Consumer statistics; every field counts since vpmu_ring_new(). */
typedef struct VpmuRingStats {
    uint64_t records;       /* records delivered, all types */
    uint64_t bytes;         /* their total size */
    uint64_t samples;       /* PERF_RECORD_SAMPLE */
    uint64_t lost_records;  /* PERF_RECORD_LOST records */
    uint64_t lost_events;   /* sum of their "lost" fields */
    uint64_t throttle;      /* PERF_RECORD_THROTTLE */
    uint64_t unthrottle;    /* PERF_RECORD_UNTHROTTLE */
    uint64_t wrapped;       /* records that wrapped (bounce buffer) */
    uint64_t unaligned;     /* records not 8-aligned in the ring (bounce) */
    uint64_t errors;        /* reads that returned an error */
} VpmuRingStats;

/**
 * vpmu_ring_new() - attach a consumer to a ring laid out like a perf mmap.
 * @base: the mapping (header page first), 8-byte aligned
 * @map_size: bytes mapped at @base (1 + 2^n pages for a perf fd)
 * @out: the new consumer; it starts at the page's current data_tail
 *
 * The memory is not copied and must outlive the consumer.
 * Return: 0; -EINVAL for a NULL/misaligned base, a ring of size 0, a data
 * area outside the mapping or overlapping the header page, or a data_size
 * that is not a power of two; -ENOMEM.
 */
VPMU_API int vpmu_ring_new(void *base, size_t map_size, VpmuRing **out);

/** vpmu_ring_free() - free the consumer (not the ring); NULL is a no-op. */
VPMU_API void vpmu_ring_free(VpmuRing *ring);

/**
 * vpmu_ring_read() - the next record.
 * @ev: set to the record; @ev->size bytes are readable, contiguous even if
 *      the record wraps around the end of the data area, and 8-byte
 *      aligned (a wrapping or misaligned record is copied into the
 *      consumer's bounce buffer; the kernel's are never misaligned, so
 *      those are delivered in place unless they wrap).  Valid until the next call to
 *      vpmu_ring_read(), vpmu_ring_consume() or vpmu_ring_discard().
 *
 * data_head is reloaded (acquire) whenever the records already seen are
 * exhausted, so a loop ends when the producer stops.
 * Return: 1 and a record; 0 when the ring is empty; -EBADMSG (nothing is
 * consumed) when head is behind the position or more than data_size ahead
 * of it, when fewer than 8 bytes or fewer than the record's size are
 * available, when a size is below 8 (0 included) or above data_size, or
 * when a PERF_RECORD_LOST is too short to hold its count.
 */
VPMU_API int vpmu_ring_read(VpmuRing *ring, const struct perf_event_header **ev);

/* One record of a batch. */
typedef struct VpmuRingRecord {
    /* The record: hdr.size readable bytes, 8-byte aligned, contiguous. */
    const struct perf_event_header *ev;
    /*
     * Its header as validated.  Use it rather than *ev: a producer that
     * rewrites the ring under the consumer cannot change these bounds.
     */
    struct perf_event_header hdr;
} VpmuRingRecord;

/**
 * vpmu_ring_read_batch() - up to @max records at once.
 * @out: filled with the records, in ring order.  Each is in place, except
 *      at most one per batch (one that wraps around the end of the data
 *      area, or is misaligned) which is in the bounce buffer.  All are
 *      valid together until the next call to vpmu_ring_read(),
 *      vpmu_ring_read_batch(), vpmu_ring_consume() or vpmu_ring_discard().
 *
 * The same records, checks, errors and statistics as calling
 * vpmu_ring_read() @max times, data_head reloaded (acquire) at most once
 * per call, when the records already seen are used up (as vpmu_ring_read()
 * does), and records are validated in a loop with no call per record.
 * Records that precede a malformed one are returned; the next call then
 * fails on it.  Nothing is released to the producer until
 * vpmu_ring_consume().
 * Return: the number of records (1 to @max); 0 when the ring is empty;
 * -EINVAL for a NULL @out or @max == 0; -EBADMSG (nothing consumed) when
 * the first record is malformed, as vpmu_ring_read().
 */
VPMU_API int vpmu_ring_read_batch(VpmuRing *ring, VpmuRingRecord *out,
                                  unsigned max);

/* Records of one type and size, back to back in the ring. */
typedef struct VpmuRingSpan {
    /* The first record; record k is at base + k * hdr.size, 8-byte aligned. */
    const unsigned char *base;
    /*
     * The first record's header as validated: its type and size are every
     * record's (use them rather than the ring's bytes, as for
     * VpmuRingRecord.hdr); misc is the first record's and may differ in
     * the others.
     */
    struct perf_event_header hdr;
    unsigned count;         /* records in the span, as returned */
} VpmuRingSpan;

/**
 * vpmu_ring_read_span() - the next records, as one span of one type and size.
 * @out: the span, valid until the next call to any read function,
 *      vpmu_ring_consume() or vpmu_ring_discard().
 * @max: at most this many records.
 *
 * The first record is what vpmu_ring_read() would return (any type; in
 * the bounce buffer if it wraps or is misaligned; a LOST is checked and
 * counted).  If it is a PERF_RECORD_SAMPLE in place, the span goes on over
 * the SAMPLEs of the same size that follow it whole before the end of the
 * data area and data_head, as one event's samples do.  Such a run costs a
 * header compare per record and no per-record output, and can be
 * forwarded with one copy (@out->count * @out->hdr.size bytes).  The same
 * checks, errors and statistics as vpmu_ring_read() per record.
 * Return: the number of records (1 to @max); 0 when the ring is empty;
 * -EINVAL for a NULL @out or @max == 0; -EBADMSG (nothing consumed) as
 * vpmu_ring_read().
 */
VPMU_API int vpmu_ring_read_span(VpmuRing *ring, VpmuRingSpan *out,
                                 unsigned max);

/**
 * vpmu_ring_consume() - hand every record read so far back to the producer
 * (data_tail = position, release).  Cheap; call it after each batch.
 */
VPMU_API void vpmu_ring_consume(VpmuRing *ring);

/**
 * vpmu_ring_discard() - resynchronise after an error: skip everything up
 * to the current data_head and publish it as data_tail.
 * Return: the number of bytes skipped.
 */
VPMU_API uint64_t vpmu_ring_discard(VpmuRing *ring);

/** vpmu_ring_stats() - copy the consumer's statistics. */
VPMU_API void vpmu_ring_stats(const VpmuRing *ring, VpmuRingStats *out);

/** vpmu_ring_error() - the last error, as text ("" if none). */
VPMU_API const char *vpmu_ring_error(const VpmuRing *ring);

/** vpmu_ring_data_size() - the size of the data area (a power of two). */
VPMU_API uint64_t vpmu_ring_data_size(const VpmuRing *ring);

/* The PERF_RECORD_SAMPLE fields vpmu understands (VPMU_RING_SAMPLE_TYPES). */
#define VPMU_RING_SAMPLE_TYPES (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | \
                                PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                                PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | \
                                PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | \
                                PERF_SAMPLE_PERIOD)

/* A decoded sample; fields whose bit is not in sample_type are 0. */
typedef struct VpmuRingSample {
    uint64_t ip;            /* PERF_SAMPLE_IP */
    uint32_t pid, tid;      /* PERF_SAMPLE_TID */
    uint64_t time;          /* PERF_SAMPLE_TIME */
    uint64_t addr;          /* PERF_SAMPLE_ADDR */
    uint64_t id;            /* PERF_SAMPLE_ID or PERF_SAMPLE_IDENTIFIER */
    uint64_t stream_id;     /* PERF_SAMPLE_STREAM_ID */
    uint32_t cpu;           /* PERF_SAMPLE_CPU (the reserved half is dropped) */
    uint64_t period;        /* PERF_SAMPLE_PERIOD */
} VpmuRingSample;

/**
 * vpmu_ring_sample_size() - the size of a PERF_RECORD_SAMPLE for
 * @sample_type, header included.
 * Return: the size, or -EOPNOTSUPP for bits outside VPMU_RING_SAMPLE_TYPES.
 */
VPMU_API int vpmu_ring_sample_size(uint64_t sample_type);

/**
 * vpmu_ring_parse_sample() - decode a PERF_RECORD_SAMPLE written with the
 * event's attr.sample_type @sample_type (ev->size bytes are read, no more).
 * Return: 0; -EINVAL if @ev is not a PERF_RECORD_SAMPLE; -EOPNOTSUPP for
 * sample_type bits outside VPMU_RING_SAMPLE_TYPES; -EBADMSG if ev->size is
 * not exactly the size @sample_type implies.
 */
VPMU_API int vpmu_ring_parse_sample(const struct perf_event_header *ev,
                                    uint64_t sample_type, VpmuRingSample *out);

/* Producer statistics. */
typedef struct VpmuRingProducerStats {
    uint64_t records;       /* records written (LOST records not included) */
    uint64_t bytes;         /* bytes written, LOST records included */
    uint64_t dropped;       /* records dropped for lack of space */
    uint64_t lost_records;  /* PERF_RECORD_LOST records emitted */
} VpmuRingProducerStats;

/**
 * vpmu_ring_producer_new() - attach a producer to a ring.
 * @base, @map_size: as vpmu_ring_new(); if the header page's data_offset
 *      and data_size are both 0, the producer writes the default layout
 *      (one page in, to the end of the mapping) into them.
 * @lost_id: the id written into the PERF_RECORD_LOST records it emits.
 * Return: 0; -EINVAL as vpmu_ring_new(); -ENOMEM.
 */
VPMU_API int vpmu_ring_producer_new(void *base, size_t map_size,
                                    uint64_t lost_id, VpmuRingProducer **out);

/** vpmu_ring_producer_free() - free the producer; NULL is a no-op. */
VPMU_API void vpmu_ring_producer_free(VpmuRingProducer *prod);

/**
 * vpmu_ring_producer_write() - append one record and publish data_head.
 * @ev: the record, ev->size bytes (at least the 8-byte header; the kernel
 *      keeps sizes multiples of 8, this producer does not require it); it
 *      may sit at any address (it is copied byte-wise).
 *
 * As the kernel does, it never overwrites what the consumer has not
 * released: a record that does not fit is dropped and counted, and the
 * next record that fits is preceded by one PERF_RECORD_LOST (24 bytes:
 * header, id, lost) carrying the number dropped since the last one.
 * Return: 0 (written); -ENOSPC (dropped, counted); -EINVAL for a size
 * below 8 or above data_size - 24; -EBADMSG if data_tail is ahead of
 * data_head or more than data_size behind it (nothing written).
 */
VPMU_API int vpmu_ring_producer_write(VpmuRingProducer *prod,
                                      const struct perf_event_header *ev);

/**
 * vpmu_ring_producer_write_sample() - encode @s as a PERF_RECORD_SAMPLE
 * for @sample_type (misc = @misc) and write it as above.
 * Return: as vpmu_ring_producer_write(), or -EOPNOTSUPP for sample_type
 * bits outside VPMU_RING_SAMPLE_TYPES.
 */
VPMU_API int vpmu_ring_producer_write_sample(VpmuRingProducer *prod,
                                             uint64_t sample_type,
                                             uint16_t misc,
                                             const VpmuRingSample *s);

/** vpmu_ring_producer_stats() - copy the producer's statistics. */
VPMU_API void vpmu_ring_producer_stats(const VpmuRingProducer *prod,
                                       VpmuRingProducerStats *out);

/* g_autoptr() support for glib users (QEMU); include glib.h first. */
#ifdef G_DEFINE_AUTOPTR_CLEANUP_FUNC
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuRing, vpmu_ring_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuRingProducer, vpmu_ring_producer_free)
#endif

#ifdef __cplusplus
}
#endif

#endif /* VPMU_RINGBUF_H */
