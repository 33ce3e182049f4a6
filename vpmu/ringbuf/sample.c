/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PERF_RECORD_SAMPLE encoding and decoding (include/vpmu/ringbuf.h).
 *
 * The fields vpmu understands are each one u64 slot, in the order of the
 * PERF_RECORD_SAMPLE layout in <linux/perf_event.h>:
 *
 *   { u64 id;        } && PERF_SAMPLE_IDENTIFIER
 *   { u64 ip;        } && PERF_SAMPLE_IP
 *   { u32 pid, tid;  } && PERF_SAMPLE_TID
 *   { u64 time;      } && PERF_SAMPLE_TIME
 *   { u64 addr;      } && PERF_SAMPLE_ADDR
 *   { u64 id;        } && PERF_SAMPLE_ID
 *   { u64 stream_id; } && PERF_SAMPLE_STREAM_ID
 *   { u32 cpu, res;  } && PERF_SAMPLE_CPU
 *   { u64 period;    } && PERF_SAMPLE_PERIOD
 *
 * Everything after PERIOD (READ, CALLCHAIN, RAW, ...) has a variable size
 * and is refused with -EOPNOTSUPP, as is any bit this table lacks.
 */
#include <vpmu/ringbuf.h>

#include <errno.h>
#include <string.h>

#define SAMPLE_SLOTS 9

_Static_assert(VPMU_RING_SAMPLE_TYPES ==
               (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD),
               "parse and encode below handle exactly VPMU_RING_SAMPLE_TYPES");

/* A u32 pair slot: the first u32 at the lower address. */
static uint64_t pair(uint32_t first, uint32_t second)
{
    uint32_t v[2] = { first, second };
    uint64_t slot;

    memcpy(&slot, v, sizeof(slot));
    return slot;
}

static void unpair(uint64_t slot, uint32_t *first, uint32_t *second)
{
    uint32_t v[2];

    memcpy(v, &slot, sizeof(v));
    *first = v[0];
    *second = v[1];
}

/* The next slot; memcpy because a record may sit at any alignment. */
static uint64_t take(const unsigned char **p)
{
    uint64_t v;

    memcpy(&v, *p, sizeof(v));
    *p += sizeof(v);
    return v;
}

int vpmu_ring_sample_size(uint64_t sample_type)
{
    if (sample_type & ~(uint64_t)VPMU_RING_SAMPLE_TYPES) {
        return -EOPNOTSUPP;
    }
    return (int)(sizeof(struct perf_event_header) +
                 8 * (unsigned)__builtin_popcountll(sample_type));
}

int vpmu_ring_parse_sample(const struct perf_event_header *ev,
                           uint64_t sample_type, VpmuRingSample *out)
{
    const unsigned char *p = (const unsigned char *)(ev + 1);
    int size = vpmu_ring_sample_size(sample_type);

    if (ev->type != PERF_RECORD_SAMPLE) {
        return -EINVAL;
    }
    if (size < 0) {
        return size;
    }
    if (ev->size != size) {
        return -EBADMSG;
    }
    memset(out, 0, sizeof(*out));
    /* Straight-line, in record order (the table at the top). */
    if (sample_type & PERF_SAMPLE_IDENTIFIER) {
        out->id = take(&p);
    }
    if (sample_type & PERF_SAMPLE_IP) {
        out->ip = take(&p);
    }
    if (sample_type & PERF_SAMPLE_TID) {
        unpair(take(&p), &out->pid, &out->tid);
    }
    if (sample_type & PERF_SAMPLE_TIME) {
        out->time = take(&p);
    }
    if (sample_type & PERF_SAMPLE_ADDR) {
        out->addr = take(&p);
    }
    if (sample_type & PERF_SAMPLE_ID) {
        out->id = take(&p);
    }
    if (sample_type & PERF_SAMPLE_STREAM_ID) {
        out->stream_id = take(&p);
    }
    if (sample_type & PERF_SAMPLE_CPU) {
        uint32_t res;
        unpair(take(&p), &out->cpu, &res);
    }
    if (sample_type & PERF_SAMPLE_PERIOD) {
        out->period = take(&p);
    }
    return 0;
}

int vpmu_ring_producer_write_sample(VpmuRingProducer *prod,
                                    uint64_t sample_type, uint16_t misc,
                                    const VpmuRingSample *s)
{
    /* Header + at most one slot per supported field; the union keeps the
     * header and the slots one object (no aliasing games). */
    union {
        struct perf_event_header hdr;
        uint64_t slot[1 + SAMPLE_SLOTS];
    } rec;
    int size = vpmu_ring_sample_size(sample_type);
    unsigned n = 1;

    if (size < 0) {
        return size;
    }
    if (sample_type & PERF_SAMPLE_IDENTIFIER) {
        rec.slot[n++] = s->id;
    }
    if (sample_type & PERF_SAMPLE_IP) {
        rec.slot[n++] = s->ip;
    }
    if (sample_type & PERF_SAMPLE_TID) {
        rec.slot[n++] = pair(s->pid, s->tid);
    }
    if (sample_type & PERF_SAMPLE_TIME) {
        rec.slot[n++] = s->time;
    }
    if (sample_type & PERF_SAMPLE_ADDR) {
        rec.slot[n++] = s->addr;
    }
    if (sample_type & PERF_SAMPLE_ID) {
        rec.slot[n++] = s->id;
    }
    if (sample_type & PERF_SAMPLE_STREAM_ID) {
        rec.slot[n++] = s->stream_id;
    }
    if (sample_type & PERF_SAMPLE_CPU) {
        rec.slot[n++] = pair(s->cpu, 0);
    }
    if (sample_type & PERF_SAMPLE_PERIOD) {
        rec.slot[n++] = s->period;
    }
    rec.hdr.type = PERF_RECORD_SAMPLE;
    rec.hdr.misc = misc;
    rec.hdr.size = (uint16_t)size;
    return vpmu_ring_producer_write(prod, &rec.hdr);
}
