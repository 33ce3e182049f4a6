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

#include "ringbuf-int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
int vpmu_ring__next(VpmuRing *r, VpmuRingRecord *rec)
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

int vpmu_ring_read(VpmuRing *r, const struct perf_event_header **ev)
{
    VpmuRingRecord rec;
    int rc;

    *ev = NULL;
    vpmu_ring__snapshot(r);
    /* One record: ring_fast()'s setup would cost more than it saves. */
    rc = vpmu_ring__next(r, &rec);
    if (rc < 0) {
        r->stats.errors++;
        return rc;
    }
    *ev = rc ? rec.ev : NULL;
    return rc;
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
