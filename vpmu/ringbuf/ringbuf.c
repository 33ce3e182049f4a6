/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf mmap ring: layout, consumer and producer (include/vpmu/ringbuf.h).
 *
 * Modelled on tools/lib/perf/mmap.c (perf_mmap__read_event) and
 * tools/lib/bpf/ringbuf.c.  Both ends share the layout code and the two
 * wrap-around copies, so tests can drive one against the other on plain
 * memory without a kernel.
 */
#include <vpmu/ringbuf.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct VpmuRingProducer {
    RingLayout l;
    uint64_t head;          /* our data_head, published after each record */
    uint64_t lost_id;
    uint64_t pending_lost;  /* dropped since the last PERF_RECORD_LOST */
    VpmuRingProducerStats stats;
};

/*
 * Find the data area.  data_offset/data_size exist since Linux 4.1; an
 * older kernel (or fresh memory) has zeros there, and the data then starts
 * one page in and runs to the end of the mapping.  With @init the default
 * is written back so that consumers of the same memory agree.
 */
static int ring_layout(void *base, size_t map_size, bool init, RingLayout *l)
{
    struct perf_event_mmap_page *pg = base;
    uint64_t off, size;

    if (!base || ((uintptr_t)base & 7) || map_size < sizeof(*pg)) {
        return -EINVAL;
    }
    off = pg->data_offset;
    size = pg->data_size;
    if (off == 0 && size == 0) {
        off = (uint64_t)sysconf(_SC_PAGESIZE);
        size = map_size > off ? map_size - off : 0;
        if (init && size) {
            pg->data_offset = off;
            pg->data_size = size;
        }
    }
    /* The data must follow the header fields, be 8-aligned, and fit. */
    if (size == 0 || (size & (size - 1)) || off < sizeof(*pg) || (off & 7) ||
        off > map_size || size > map_size - off) {
        return -EINVAL;
    }
    l->page = pg;
    l->data = (unsigned char *)base + off;
    l->size = size;
    l->mask = size - 1;
    return 0;
}

/* Copy @len bytes at ring position @pos out, in two pieces if it wraps. */
static void ring_copy_out(const RingLayout *l, uint64_t pos, void *dst,
                          size_t len)
{
    size_t off = pos & l->mask;
    size_t first = len < l->size - off ? len : l->size - off;

    memcpy(dst, l->data + off, first);
    memcpy((unsigned char *)dst + first, l->data, len - first);
}

/* Copy @len bytes in at ring position @pos, in two pieces if it wraps. */
static void ring_copy_in(const RingLayout *l, uint64_t pos, const void *src,
                         size_t len)
{
    size_t off = pos & l->mask;
    size_t first = len < l->size - off ? len : l->size - off;

    memcpy(l->data + off, src, first);
    memcpy(l->data, (const unsigned char *)src + first, len - first);
}

int vpmu_ring_new(void *base, size_t map_size, VpmuRing **out)
{
    VpmuRing *r = NULL;
    int err;

    *out = NULL;
    r = calloc(1, sizeof(*r));
    if (!r) {
        return -ENOMEM;
    }
    err = ring_layout(base, map_size, false, &r->l);
    if (err) {
        goto fail;
    }
    r->bounce = malloc(r->l.size < RING_MAX_RECORD ? r->l.size : RING_MAX_RECORD);
    if (!r->bounce) {
        err = -ENOMEM;
        goto fail;
    }
    /* Only this consumer writes data_tail, so a plain snapshot is enough. */
    r->pos = __atomic_load_n(&r->l.page->data_tail, __ATOMIC_RELAXED);
    r->head = r->pos;
    *out = r;
    return 0;

fail:
    vpmu_ring_free(r);
    return err;
}

void vpmu_ring_free(VpmuRing *ring)
{
    if (ring) {
        free(ring->bounce);
        free(ring);
    }
}

/* Format the error text; the caller decides whether the error is counted. */
__attribute__((format(printf, 2, 3)))
static int ring_bad(VpmuRing *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
    return -EBADMSG;
}

/*
 * Count the record kinds the statistics track, from the validated header
 * copy @hdr; @rec holds hdr->size readable bytes.  A short LOST is malformed.
 * SAMPLE is not counted here: stats.samples is records minus the others.
 */
static int ring_account(VpmuRing *r, const struct perf_event_header *hdr,
                        const void *rec)
{
    RingLost lost;

    switch (hdr->type) {
    case PERF_RECORD_SAMPLE:
        return 0;
    case PERF_RECORD_LOST:
        if (hdr->size < sizeof(lost)) {
            return ring_bad(r, "PERF_RECORD_LOST of %u bytes at %#llx, "
                            "needs %zu", hdr->size,
                            (unsigned long long)r->pos, sizeof(lost));
        }
        memcpy(&lost, rec, sizeof(lost));
        r->stats.lost_records++;
        r->stats.lost_events += lost.lost;
        break;
    case PERF_RECORD_THROTTLE:
        r->stats.throttle++;
        break;
    case PERF_RECORD_UNTHROTTLE:
        r->stats.unthrottle++;
        break;
    default:
        break;
    }
    r->nonsample++;
    return 0;
}

/* Check the head snapshot against the position: 0 and the bytes published. */
static int ring_avail(VpmuRing *r, uint64_t *avail)
{
    *avail = r->head - r->pos;
    if ((int64_t)*avail < 0) {
        return ring_bad(r, "data_head %#llx is behind the tail %#llx",
                        (unsigned long long)r->head, (unsigned long long)r->pos);
    }
    if (*avail > r->l.size) {
        return ring_bad(r, "data_head %#llx is %#llx bytes ahead of the tail, "
                        "more than the ring (%#llx)", (unsigned long long)r->head,
                        (unsigned long long)*avail, (unsigned long long)r->l.size);
    }
    if (*avail && *avail < RING_HDR_SIZE) {
        return ring_bad(r, "truncated record at %#llx: %llu bytes, no header",
                        (unsigned long long)r->pos, (unsigned long long)*avail);
    }
    return 0;
}

/*
 * The general path for one record against the head snapshot: any offset,
 * wrapping, misaligned, LOST, or malformed.  A record that straddles the
 * end, or sits at an offset that is not 8-aligned (the kernel never writes
 * one), is copied into the bounce buffer so that the caller gets it
 * contiguous and aligned.
 * Return: 1 (the position moved past *rec), 0 (empty) or -EBADMSG (nothing
 * consumed; the caller counts the error when it reports it).
 */
static int ring_next(VpmuRing *r, VpmuRingRecord *rec)
{
    struct perf_event_header hdr;
    uint64_t avail, off;
    int err;

    err = ring_avail(r, &avail);
    if (err || avail == 0) {
        return err;
    }
    off = r->pos & r->l.mask;
    if (off + sizeof(hdr) <= r->l.size) {
        memcpy(&hdr, r->l.data + off, sizeof(hdr));     /* one 8-byte load */
    } else {
        /* The header straddles the end (sizes not 8-aligned, or fuzzing). */
        ring_copy_out(&r->l, r->pos, &hdr, sizeof(hdr));
    }
    if (hdr.size < RING_HDR_SIZE || hdr.size > r->l.size) {
        return ring_bad(r, "record at %#llx has size %u (type %u), outside "
                        "[8, %llu]", (unsigned long long)r->pos, hdr.size,
                        hdr.type, (unsigned long long)r->l.size);
    }
    if (hdr.size > avail) {
        return ring_bad(r, "truncated record at %#llx: size %u, %llu bytes "
                        "published", (unsigned long long)r->pos, hdr.size,
                        (unsigned long long)avail);
    }
    rec->ev = (const void *)(r->l.data + off);
    if (off + hdr.size > r->l.size || (off & 7)) {
        ring_copy_out(&r->l, r->pos, r->bounce, hdr.size);
        /* The copy shows the header we validated, not a second read. */
        memcpy(r->bounce, &hdr, sizeof(hdr));
        rec->ev = (const void *)r->bounce;
    }
    err = ring_account(r, &hdr, rec->ev);
    if (err) {
        return err;
    }
    if (off + hdr.size > r->l.size) {
        r->stats.wrapped++;
    } else if (off & 7) {
        r->stats.unaligned++;
    }
    r->pos += hdr.size;
    r->stats.records++;
    r->stats.bytes += hdr.size;
    rec->hdr = hdr;
    return 1;
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
    /* perf_event_header: type in bits 31:0, misc 47:32, size 63:48. */
    const uint64_t keep = ~(0xffffull << 32);
    uint64_t expect;
    unsigned i;

    __asm__("" : "+r"(step));
    expect = step << 48 | PERF_RECORD_SAMPLE;
    for (i = 0; i < n; i++, p += step) {
        uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);

        if ((word & keep) != expect) {
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
    struct perf_event_header a, b;

    if (end - p < 2 * (ptrdiff_t)RING_HDR_SIZE) {
        return 0;
    }
    memcpy(&a, p, sizeof(a));
    if (a.size < RING_HDR_SIZE || (a.size & 7) || a.size >= 0x8000 ||
        a.type != PERF_RECORD_SAMPLE ||
        (uint64_t)(end - p) < a.size + RING_HDR_SIZE) {
        return 0;
    }
    memcpy(&b, p + a.size, sizeof(b));
    return b.size == a.size && b.type == PERF_RECORD_SAMPLE ? a.size : 0;
}

/*
 * The fast path: up to @max records that lie whole and 8-aligned between
 * the position and min(head snapshot, end of the data area), delivered in
 * place.  It stops, without error, at the first record that needs
 * ring_next(): one that wraps, is misaligned, truncated or malformed, is
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
        return 0;               /* ring_next() handles or reports it */
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

int vpmu_ring_read(VpmuRing *r, const struct perf_event_header **ev)
{
    VpmuRingRecord rec;
    int rc;

    *ev = NULL;
    if (r->head == r->pos) {
        /*
         * Pairs with the producer's release store of data_head (kernel:
         * smp_store_release() in perf_output_put_handle(); ours:
         * vpmu_ring_producer_write()): the record bytes below head are
         * visible once head is.
         */
        r->head = __atomic_load_n(&r->l.page->data_head, __ATOMIC_ACQUIRE);
    }
    /* One record: ring_fast()'s setup would cost more than it saves. */
    rc = ring_next(r, &rec);
    if (rc < 0) {
        r->stats.errors++;
        return rc;
    }
    *ev = rc ? rec.ev : NULL;
    return rc;
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
    /*
     * A new snapshot only once the last one is used up, as
     * vpmu_ring_read() does, so that both APIs judge a ring against the
     * same head and an error is repeatable until vpmu_ring_discard()
     * (fuzz-ringbuf --seed 3 --case 532).  Pairs as in vpmu_ring_read().
     */
    if (r->head == r->pos) {
        r->head = __atomic_load_n(&r->l.page->data_head, __ATOMIC_ACQUIRE);
    }
    for (;;) {
        n += ring_fast(r, out + n, max - n);
        /* The bounce buffer holds one record: a second one would clobber it. */
        if (n == max || bounced) {
            break;
        }
        rc = ring_next(r, &out[n]);
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
    /* perf_event_header: type in bits 31:0, misc 47:32, size 63:48. */
    const uint64_t keep = ~(0xffffull << 32);
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
    expect = step << 48 | PERF_RECORD_SAMPLE;
    for (k = 0; k < n; k++, p += step) {
        uint64_t word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);

        if ((word & keep) != expect) {
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
 * Return: its size, or 0 to leave it to ring_next().
 */
static uint64_t ring_span_first(const VpmuRing *r, VpmuRingSpan *out)
{
    uint64_t avail = r->head - r->pos, start = r->pos & r->l.mask;
    const unsigned char *p = r->l.data + start;
    uint64_t word;
    struct perf_event_header h;

    if (avail > r->l.size || avail < RING_HDR_SIZE || (start & 7)) {
        return 0;
    }
    word = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
    memcpy(&h, &word, sizeof(h));
    /* As ring_fast(): 8..32760, a multiple of 8, whole before the end. */
    if (((h.size - 8u) & 0x8007u) || h.size > avail ||
        h.size > r->l.size - start || h.type != PERF_RECORD_SAMPLE) {
        return 0;
    }
    out->base = p;
    out->hdr = h;
    return h.size;
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
    /* The head snapshot as in vpmu_ring_read_batch(). */
    if (r->head == r->pos) {
        r->head = __atomic_load_n(&r->l.page->data_head, __ATOMIC_ACQUIRE);
    }
    step = ring_span_first(r, out);
    if (step) {
        /* Counts the first record too: it passes the run's compare. */
        out->count = ring_span_more(r, step, max);
        return (int)out->count;
    }
    /* Anything else, one record, exactly as vpmu_ring_read(). */
    rc = ring_next(r, &first);
    if (rc <= 0) {
        r->stats.errors += rc < 0;
        return rc;
    }
    out->base = (const unsigned char *)first.ev;
    out->hdr = first.hdr;
    out->count = 1;
    return 1;
}

void vpmu_ring_consume(VpmuRing *r)
{
    /*
     * Pairs with the producer's load of data_tail before it writes (kernel:
     * READ_ONCE + smp_mb() in perf_output_begin(); ours: the acquire in
     * vpmu_ring_producer_write()): our reads of the records finish before
     * the producer may overwrite them.
     */
    __atomic_store_n(&r->l.page->data_tail, r->pos, __ATOMIC_RELEASE);
}

uint64_t vpmu_ring_discard(VpmuRing *r)
{
    uint64_t head = __atomic_load_n(&r->l.page->data_head, __ATOMIC_ACQUIRE);
    uint64_t skipped = head - r->pos;

    r->pos = r->head = head;
    vpmu_ring_consume(r);
    return skipped;
}

void vpmu_ring_stats(const VpmuRing *r, VpmuRingStats *out)
{
    *out = r->stats;
    /* Derived, so that the fast path need not count samples one by one. */
    out->samples = r->stats.records - r->nonsample;
}

const char *vpmu_ring_error(const VpmuRing *r)
{
    return r->err;
}

uint64_t vpmu_ring_data_size(const VpmuRing *r)
{
    return r->l.size;
}

int vpmu_ring_producer_new(void *base, size_t map_size, uint64_t lost_id,
                           VpmuRingProducer **out)
{
    VpmuRingProducer *p;
    int err;

    *out = NULL;
    p = calloc(1, sizeof(*p));
    if (!p) {
        return -ENOMEM;
    }
    err = ring_layout(base, map_size, true, &p->l);
    if (err) {
        vpmu_ring_producer_free(p);
        return err;
    }
    /* Only this producer writes data_head. */
    p->head = __atomic_load_n(&p->l.page->data_head, __ATOMIC_RELAXED);
    p->lost_id = lost_id;
    *out = p;
    return 0;
}

void vpmu_ring_producer_free(VpmuRingProducer *prod)
{
    free(prod);
}

int vpmu_ring_producer_write(VpmuRingProducer *p,
                             const struct perf_event_header *ev)
{
    struct perf_event_header h;
    uint64_t tail, used, need;
    RingLost lost = { .header = { .type = PERF_RECORD_LOST,
                                  .size = sizeof(RingLost) } };

    /* The record may sit at any address (a caller's byte buffer). */
    memcpy(&h, ev, sizeof(h));
    need = h.size;
    if (need < RING_HDR_SIZE || need + sizeof(lost) > p->l.size) {
        return -EINVAL;
    }
    /*
     * Pairs with the consumer's release store of data_tail
     * (vpmu_ring_consume()): the consumer is done reading below tail
     * before we overwrite it.
     */
    tail = __atomic_load_n(&p->l.page->data_tail, __ATOMIC_ACQUIRE);
    used = p->head - tail;
    if (used > p->l.size) {
        return -EBADMSG;
    }
    if (p->pending_lost) {
        need += sizeof(lost);
    }
    if (need > p->l.size - used) {
        /* As perf_output_begin(): drop it, and say so once space frees. */
        p->pending_lost++;
        p->stats.dropped++;
        return -ENOSPC;
    }
    if (p->pending_lost) {
        lost.id = p->lost_id;
        lost.lost = p->pending_lost;
        ring_copy_in(&p->l, p->head, &lost, sizeof(lost));
        p->head += sizeof(lost);
        p->pending_lost = 0;
        p->stats.lost_records++;
        p->stats.bytes += sizeof(lost);
    }
    ring_copy_in(&p->l, p->head, ev, h.size);
    p->head += h.size;
    p->stats.records++;
    p->stats.bytes += h.size;
    /*
     * Pairs with the consumer's acquire load of data_head
     * (vpmu_ring_read()): the record is written before head covers it.
     */
    __atomic_store_n(&p->l.page->data_head, p->head, __ATOMIC_RELEASE);
    return 0;
}

void vpmu_ring_producer_stats(const VpmuRingProducer *p,
                              VpmuRingProducerStats *out)
{
    *out = p->stats;
}
