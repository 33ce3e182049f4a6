/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf mmap ring consumer's fast paths (include/vpmu/ringbuf.h):
 * vpmu_ring_read_batch() and vpmu_ring_read_span().  Both take what lies
 * whole, aligned and well-formed in place, and leave everything else to
 * vpmu_ring__next() in ringbuf.c, so the checks and statistics are those of
 * vpmu_ring_read() record for record.  docs/ringbuf.md has the numbers.
 */
#include <vpmu/ringbuf.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "ringbuf-int.h"

/*
 * A record header read as one little-endian u64 (perf_event_header: type
 * in bits 31:0, misc 47:32, size 63:48).  Runs compare all but misc.
 */
#define RUN_HDR_MASK        (~(0xffffull << 32))

/* The u64 header, less misc, of every record of a run of @step bytes. */
static inline uint64_t run_expect(uint64_t step)
{
    return step << 48 | PERF_RECORD_SAMPLE;
}

/*
 * If the header at @p is a SAMPLE that ring_fast() would take, whole
 * within the @room bytes from @p, copy it to @h and return its size;
 * else 0.
 */
static uint64_t ring_sample_at(const unsigned char *p, uint64_t room,
                               struct perf_event_header *h)
{
    uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);

    memcpy(h, &word, sizeof(*h));
    /* As ring_fast(): 8..32760 bytes, a multiple of 8. */
    if (((h->size - 8u) & 0x8007u) || h->size > room ||
        h->type != PERF_RECORD_SAMPLE) {
        return 0;
    }
    return h->size;
}

/*
 * A run of SAMPLE records of one size @step, as one event's samples are
 * (one sample_type, no callchain): @n records at most, from @p, all of
 * which fit before the end of the contiguous span.  ring_fast()'s loop is
 * bound by its load-add chain (record k+1's place is known only once record
 * k's size is loaded); here p advances by @step, a value the compiler cannot
 * tie to the loaded header (the empty asm), and each header is only
 * compared with what it must be, a predicted branch off the chain, so the
 * records' loads overlap.  It stops at the first record of another size or
 * type, which ring_fast() then takes.
 * Return: the number of records delivered at @o.
 */
static unsigned ring_run(const unsigned char *p, uint64_t step, unsigned n,
                         const unsigned char *pf_end, VpmuRingRecord *o)
{
    uint64_t expect;
    unsigned i;

    __asm__("" : "+r"(step));
    expect = run_expect(step);
    for (i = 0; i < n; i++, p += step) {
        uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);

        if ((word & RUN_HDR_MASK) != expect) {
            break;
        }
        if (p < pf_end) {
            __builtin_prefetch(p + RING_PREFETCH);
        }
        o[i].ev = (const void *)p;
        memcpy(&o[i].hdr, &word, sizeof(o[i].hdr));
    }
    return i;
}

/*
 * Whether the span [@p, @end) starts with two SAMPLE records of one size:
 * then ring_fast() tries ring_run() first.  Once per call, so a mix of
 * sizes pays one branch per batch, not one per record.
 * Return: that size, or 0.
 */
static uint64_t ring_run_size(const unsigned char *p, const unsigned char *end)
{
    struct perf_event_header h;
    uint64_t room = (uint64_t)(end - p), a;

    if (room < 2 * RING_HDR_SIZE) {
        return 0;
    }
    a = ring_sample_at(p, room, &h);
    if (a == 0 || room - a < RING_HDR_SIZE) {
        return 0;
    }
    return ring_sample_at(p + a, room - a, &h) == a ? a : 0;
}

/*
 * The fast path: up to @max records that lie whole and 8-aligned between
 * the position and min(head snapshot, end of the data area), delivered in
 * place.  It stops, without error, at the first record that needs
 * vpmu_ring__next(): one that wraps, is misaligned, truncated or malformed, is
 * 32 KiB or more, or is a PERF_RECORD_LOST (whose count must be checked).
 *
 * Why it is shaped this way (docs/ringbuf.md has the numbers): the only
 * dependency from one record to the next is "load size, add it to p",
 * about 6 cycles, and the loop is kept to ~18 instructions so that it runs
 * in the shadow of that chain.  Every check is a well-predicted branch off
 * the chain, and the ring, usually in L2 rather than L1, is prefetched
 * ahead so that the size load hits L1 (without the prefetch a record costs
 * twice as much).  A span that starts with a run of one size (one event's
 * samples) goes to ring_run() first, which has no such chain: ~1.7x faster
 * per record for such rings.
 * Return: the number of records delivered.
 */
static unsigned ring_fast(VpmuRing *r, VpmuRingRecord *out, unsigned max)
{
    uint64_t avail = r->head - r->pos, start = r->pos & r->l.mask, len, step;
    uint64_t other = 0, thr = 0, unthr = 0;
    const unsigned char *p, *end, *last, *pf_end;
    VpmuRingRecord *o = out, *const oend = out + max;

    if (avail > r->l.size || avail < RING_HDR_SIZE || (start & 7)) {
        return 0;               /* vpmu_ring__next() handles or reports it */
    }
    len = avail < r->l.size - start ? avail : r->l.size - start;
    p = r->l.data + start;
    end = p + len;
    last = end - RING_HDR_SIZE;         /* the last header that fits */
    /* Never prefetch beyond head: those lines are the producer's to write. */
    pf_end = len > RING_PREFETCH ? end - RING_PREFETCH : p;
    step = ring_run_size(p, end);
    if (step) {
        /* Records of @step bytes that fit whole before @end, and room. */
        uint64_t fit = len / step;
        unsigned k = ring_run(p, step, fit < max ? (unsigned)fit : max, pf_end, o);

        o += k;
        p += k * step;
    }
    while (o < oend && p <= last) {
        /*
         * size is loaded twice: alone for the chain (a cycle shorter than
         * taking it out of the 8-byte load), and in the header handed out.
         * The two must agree, so what the caller gets is what was checked.
         */
        uint16_t size = __atomic_load_n((const uint16_t *)(p + 6),
                                        __ATOMIC_RELAXED);
        uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
        struct perf_event_header h;

        memcpy(&h, &word, sizeof(h));
        if (p < pf_end) {
            __builtin_prefetch(p + RING_PREFETCH);
        }
        /* size - 8 wraps below 8, and sets bit 15 from 32776: both slow. */
        if (((size - 8u) & 0x8007u) || size > (size_t)(end - p) ||
            h.size != size) {
            break;
        }
        if (h.type != PERF_RECORD_SAMPLE) {
            if (h.type == PERF_RECORD_LOST) {
                break;
            }
            other++;
            thr += h.type == PERF_RECORD_THROTTLE;
            unthr += h.type == PERF_RECORD_UNTHROTTLE;
        }
        o->ev = (const void *)p;
        o->hdr = h;             /* two stores a record: a third costs more */
        o++;
        p += size;
    }
    len = (uint64_t)(p - (r->l.data + start));
    r->pos += len;
    r->stats.records += (uint64_t)(o - out);
    r->stats.bytes += len;
    r->stats.throttle += thr;
    r->stats.unthrottle += unthr;
    r->nonsample += other;
    return (unsigned)(o - out);
}

int vpmu_ring_read_batch(VpmuRing *r, VpmuRingRecord *out, unsigned max)
{
    unsigned n = 0;
    bool bounced = false;
    int rc;

    if (!out || max == 0) {
        return -EINVAL;
    }
    max = max < INT_MAX ? max : INT_MAX;
    vpmu_ring__snapshot(r);
    for (;;) {
        n += ring_fast(r, out + n, max - n);
        /* The bounce buffer holds one record: a second one would clobber it. */
        if (n == max || bounced) {
            break;
        }
        rc = vpmu_ring__next(r, &out[n]);
        if (rc < 0 && n == 0) {
            r->stats.errors++;
            return rc;
        }
        if (rc <= 0) {
            break;              /* empty, or an error the next call reports */
        }
        bounced = out[n].ev == (const void *)r->bounce;
        n++;
    }
    return (int)n;
}

/*
 * How many SAMPLEs of @step bytes lie whole from r->pos on, before
 * min(head, end of the data area), up to @max.  They are taken (position
 * and statistics) as ring_fast() would take them; each costs a load and a
 * compare, the size being a loop constant (see ring_run()).
 */
static unsigned ring_span_more(VpmuRing *r, uint64_t step, unsigned max)
{
    uint64_t avail = r->head - r->pos, start = r->pos & r->l.mask, len, n;
    const unsigned char *p = r->l.data + start, *pf_end;
    uint64_t expect;
    unsigned k;

    if (avail > r->l.size) {
        return 0;               /* the next call reports it */
    }
    len = avail < r->l.size - start ? avail : r->l.size - start;
    n = len / step < max ? len / step : max;
    pf_end = len > RING_PREFETCH ? p + len - RING_PREFETCH : p;
    __asm__("" : "+r"(step));
    expect = run_expect(step);
    for (k = 0; k < n; k++, p += step) {
        uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);

        if ((word & RUN_HDR_MASK) != expect) {
            break;
        }
        if (p < pf_end) {
            __builtin_prefetch(p + RING_PREFETCH);
        }
    }
    r->pos += k * step;
    r->stats.records += k;
    r->stats.bytes += k * step;
    return k;
}

/*
 * The first record of a span when it is an in-place SAMPLE: the checks of
 * ring_fast()'s loop for one record, without its set-up.  Its statistics
 * are counted by ring_span_more() with the rest of the run.
 * Return: its size, or 0 to leave it to vpmu_ring__next().
 */
static uint64_t ring_span_first(const VpmuRing *r, VpmuRingSpan *out)
{
    uint64_t avail = r->head - r->pos, start = r->pos & r->l.mask;

    if (avail > r->l.size || avail < RING_HDR_SIZE || (start & 7)) {
        return 0;
    }
    out->base = r->l.data + start;
    return ring_sample_at(out->base, avail < r->l.size - start ?
                          avail : r->l.size - start, &out->hdr);
}

int vpmu_ring_read_span(VpmuRing *r, VpmuRingSpan *out, unsigned max)
{
    VpmuRingRecord first;
    uint64_t step;
    int rc;

    if (!out || max == 0) {
        return -EINVAL;
    }
    max = max < INT_MAX ? max : INT_MAX;
    vpmu_ring__snapshot(r);
    step = ring_span_first(r, out);
    if (step) {
        /* Counts the first record too: it passes the run's compare. */
        out->count = ring_span_more(r, step, max);
        return (int)out->count;
    }
    /* Anything else, one record, exactly as vpmu_ring_read(). */
    rc = vpmu_ring__next(r, &first);
    if (rc <= 0) {
        r->stats.errors += rc < 0;
        return rc;
    }
    out->base = (const unsigned char *)first.ev;
    out->hdr = first.hdr;
    out->count = 1;
    return 1;
}
