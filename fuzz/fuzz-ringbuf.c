/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-ringbuf: the vpmu/ringbuf consumer on hostile rings, and the
 * producer -> consumer path on random traffic.
 *
 * Usage: fuzz-ringbuf [--seed N] [--iterations K] [--case I] [--runs 0|1]
 * Case c depends on (seed, c, runs) only, so --case replays one failure.
 * Exit 0 when every invariant held, 1 at the first violation.
 *
 * Each case picks a data area of 8..4096 bytes (2^n) behind a header page,
 * in an allocation of exactly that size (so ASan sees any read past it),
 * and one of three modes:
 *
 *  random   random data bytes with planted headers (sizes 0, 4, 8, 24, ...,
 *           types SAMPLE/LOST/THROTTLE/any), random tail, head near the tail
 *           or anywhere, sometimes a random header page layout;
 *  traffic  the producer writes random records while the consumer reads
 *           and consumes in random batches: the consumer must see exactly
 *           the records written, in order, with a PERF_RECORD_LOST carrying
 *           the exact count wherever records were dropped, and no error;
 *  corrupt  traffic, then random data bytes overwritten, then as random
 *           (not head: the consumer may still hold a snapshot of it, and
 *           random mode covers bad heads).
 *
 * Runs (--runs 1, the default): half of the cases get a record size of
 * their own, 8..96, that traffic writes 7 times in 8 as a SAMPLE and random
 * mode plants as a chain of SAMPLE headers from the tail, so that the
 * consumer's fast path for runs of one size (ring_run() in batch.c) meets
 * every end a run can have.  Its own random stream: with --runs 0 every
 * case is what it was before runs existed (the regression replays use it).
 *
 * Each case reads with vpmu_ring_read() (a third of the cases) or with
 * vpmu_ring_read_batch() of 1..17 records, chosen from its own stream so
 * the rings are the same either way; with --runs 1, half of the batch
 * cases use vpmu_ring_read_span() of up to as many records instead (its
 * records must all have the span's type and size).
 *
 * Invariants for hostile rings: every record returned is 8-byte aligned,
 * has 8 <= size <= data_size, a header copy equal to its first 8 bytes, and
 * equals the ring bytes at the consumer's position (read modulo the data
 * size), checked after the call returns, so that all records of a batch
 * are valid together; records never add up to more than head - tail; the
 * loop ends within data_size / 8 + 1 calls; an error is repeatable (no
 * progress, same code, by either API) and vpmu_ring_discard() then empties
 * the ring; the statistics (records, samples, lost events, throttles)
 * match what was returned and an error is counted once per report; sample
 * parsing returns 0 or a documented error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vpmu/ringbuf.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct Fz {
    uint64_t rng;
    unsigned char *mem;
    size_t map;
    struct perf_event_mmap_page *pg;
    unsigned char *data;
    uint64_t size;
    unsigned batch;         /* 0: vpmu_ring_read(); else read_batch(batch) */
    uint16_t run;           /* the case's run size, 0 for none */
    bool span;              /* with batch: vpmu_ring_read_span(batch) */
    uint64_t runs;          /* the run decisions' own stream */
    const char *fail;
} Fz;

/* Batches of 1..17 records: small enough to end mid-ring, odd on purpose. */
#define FZ_MAX_BATCH 17u

#define CHECK(z, cond) do { \
        if (!(cond)) { (z)->fail = #cond; return -1; } \
    } while (0)

static uint64_t rnd(Fz *z, uint64_t n)
{
    return n ? splitmix64(&z->rng) % n : 0;
}

static void plant_header(Fz *z, uint64_t pos)
{
    static const uint16_t sizes[] = { 0, 4, 7, 8, 16, 24, 40, 64, 100, 0xffff };
    static const uint32_t types[] = { PERF_RECORD_SAMPLE, PERF_RECORD_LOST,
                                      PERF_RECORD_THROTTLE,
                                      PERF_RECORD_UNTHROTTLE, 0xdead };
    struct perf_event_header h = {
        .type = types[rnd(z, 5)],
        .size = rnd(z, 4) ? sizes[rnd(z, 10)] : (uint16_t)rnd(z, z->size + 9),
    };
    const unsigned char *b = (const void *)&h;

    for (unsigned i = 0; i < sizeof(h); i++) {
        z->data[(pos + i) & (z->size - 1)] = b[i];
    }
}

/* A chain of SAMPLE headers of the run size from the tail, if the case has one. */
static void plant_run(Fz *z, uint64_t tail)
{
    struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = z->run };
    uint64_t n = z->run ? splitmix64(&z->runs) % (z->size / z->run + 2) : 0;

    for (uint64_t k = 0; k < n; k++) {
        for (unsigned i = 0; i < sizeof(h); i++) {
            z->data[(tail + k * z->run + i) & (z->size - 1)] =
                ((const unsigned char *)&h)[i];
        }
    }
}

/*
 * The next records, by vpmu_ring_read() (z->batch == 0) or by
 * vpmu_ring_read_batch() of up to z->batch; *n records in @recs.
 * Return: as the call (1 / 0 / -errno for vpmu_ring_read()).
 */
static int fz_read(Fz *z, VpmuRing *r, VpmuRingRecord *recs, unsigned *n)
{
    const struct perf_event_header *ev = (const void *)z;
    int rc;

    *n = 0;
    if (z->span && z->batch) {
        VpmuRingSpan sp;

        rc = vpmu_ring_read_span(r, &sp, z->batch);
        if (rc > 0) {
            /* A span's promise: every record has the first one's type and size. */
            for (int k = 0; k < rc; k++) {
                recs[k].ev = (const void *)(sp.base + (size_t)k * sp.hdr.size);
                memcpy(&recs[k].hdr, k ? (const void *)recs[k].ev : (const void *)&sp.hdr,
                       sizeof(recs[k].hdr));
                CHECK(z, recs[k].hdr.type == sp.hdr.type &&
                      recs[k].hdr.size == sp.hdr.size);
            }
            CHECK(z, sp.count == (unsigned)rc);
            *n = (unsigned)rc;
        }
        return rc;
    }
    if (z->batch) {
        rc = vpmu_ring_read_batch(r, recs, z->batch);
        if (rc > 0) {
            *n = (unsigned)rc;
        }
        return rc;
    }
    rc = vpmu_ring_read(r, &ev);
    if (rc == 1) {
        recs[0].ev = ev;
        memcpy(&recs[0].hdr, ev, sizeof(recs[0].hdr));
        *n = 1;
    } else if (ev) {
        z->fail = "vpmu_ring_read: ev set without a record";
        return -1000;
    }
    return rc;
}

/* Per-type tallies of what a drain returned, to check the statistics. */
typedef struct Tally {
    uint64_t records, samples, lost, throttle, unthrottle;
} Tally;

/*
 * One record returned at ring position @pos, checked after the whole call
 * returned (so the records of a batch are all valid together).
 */
static int check_record(Fz *z, const VpmuRingRecord *rec, uint64_t pos,
                        uint64_t tail, uint64_t head, Tally *t)
{
    const struct perf_event_header *ev = rec->ev;
    uint64_t mask = z->size - 1;

    CHECK(z, ev && ((uintptr_t)ev & 7) == 0);
    CHECK(z, rec->hdr.size >= 8 && rec->hdr.size <= z->size);
    CHECK(z, pos - tail + rec->hdr.size <= head - tail);
    CHECK(z, memcmp(&rec->hdr, ev, sizeof(rec->hdr)) == 0);
    for (unsigned i = 0; i < rec->hdr.size; i++) {
        unsigned char c = ((const unsigned char *)ev)[i];
        CHECK(z, c == z->data[(pos + i) & mask]);
    }
    t->records++;
    t->samples += rec->hdr.type == PERF_RECORD_SAMPLE;
    t->throttle += rec->hdr.type == PERF_RECORD_THROTTLE;
    t->unthrottle += rec->hdr.type == PERF_RECORD_UNTHROTTLE;
    if (rec->hdr.type == PERF_RECORD_LOST) {
        uint64_t f[3];
        CHECK(z, rec->hdr.size >= sizeof(f));
        memcpy(f, ev, sizeof(f));
        t->lost += f[2];
    }
    return 0;
}

static int check_stats(Fz *z, VpmuRing *r, const VpmuRingStats *st0,
                       const Tally *t)
{
    VpmuRingStats st;

    vpmu_ring_stats(r, &st);
    CHECK(z, st.records - st0->records == t->records);
    CHECK(z, st.samples - st0->samples == t->samples);
    CHECK(z, st.lost_events - st0->lost_events == t->lost);
    CHECK(z, st.throttle - st0->throttle == t->throttle);
    CHECK(z, st.unthrottle - st0->unthrottle == t->unthrottle);
    return 0;
}

/* After -EBADMSG: repeatable, counted once per report, then discardable. */
static int check_error(Fz *z, VpmuRing *r, const VpmuRingStats *st0,
                       uint64_t pos, uint64_t head)
{
    VpmuRingRecord recs[1];
    VpmuRingStats st;
    unsigned n;

    vpmu_ring_stats(r, &st);
    CHECK(z, st.errors - st0->errors == 1);
    CHECK(z, *vpmu_ring_error(r) != '\0');
    CHECK(z, fz_read(z, r, recs, &n) == -EBADMSG && n == 0);  /* repeatable */
    z->batch = (unsigned)rnd(z, 2);     /* either API sees the same error */
    CHECK(z, fz_read(z, r, recs, &n) == -EBADMSG && n == 0);
    CHECK(z, vpmu_ring_discard(r) == head - pos);
    CHECK(z, z->pg->data_tail == head);
    CHECK(z, fz_read(z, r, recs, &n) == 0);
    return 0;
}

/* Drain a ring nobody trusts and check every record against the memory. */
static int check_hostile(Fz *z, VpmuRing *r)
{
    uint64_t tail = z->pg->data_tail, head = z->pg->data_head, pos = tail;
    VpmuRingRecord recs[FZ_MAX_BATCH];
    VpmuRingStats st0;
    VpmuRingSample s;
    Tally t = { 0 };
    unsigned n;
    int rc;

    vpmu_ring_stats(r, &st0);
    for (uint64_t calls = 0;; calls++) {
        CHECK(z, calls <= z->size / 8 + 1);         /* progress or stop */
        rc = fz_read(z, r, recs, &n);
        if (rc <= 0) {
            break;
        }
        CHECK(z, n >= 1 && n <= (z->batch ? z->batch : 1));
        for (unsigned k = 0; k < n; k++) {
            if (check_record(z, &recs[k], pos, tail, head, &t) < 0) {
                return -1;
            }
            rc = vpmu_ring_parse_sample(recs[k].ev, rnd(z, 2) ? PERF_SAMPLE_IP |
                                        PERF_SAMPLE_TID : splitmix64(&z->rng), &s);
            CHECK(z, rc == 0 || rc == -EINVAL || rc == -EOPNOTSUPP ||
                  rc == -EBADMSG);
            pos += recs[k].hdr.size;
        }
        CHECK(z, t.records <= z->size / 8);
        if (rnd(z, 4) == 0) {
            vpmu_ring_consume(r);
            CHECK(z, z->pg->data_tail == pos);
        }
    }
    CHECK(z, rc == 0 || rc == -EBADMSG);
    if (check_stats(z, r, &st0, &t) < 0) {
        return -1;
    }
    if (rc == -EBADMSG) {
        return check_error(z, r, &st0, pos, head);
    }
    CHECK(z, pos == head);
    return 0;
}

static int case_random(Fz *z)
{
    VpmuRing *r = NULL;
    uint64_t tail = rnd(z, 3) ? rnd(z, 1u << 20) : (uint64_t)0 - rnd(z, 64);
    int rc;

    for (uint64_t i = 0; i < z->size; i++) {
        z->data[i] = (unsigned char)splitmix64(&z->rng);
    }
    for (unsigned k = rnd(z, 8); k; k--) {
        plant_header(z, tail + rnd(z, z->size));
    }
    plant_header(z, tail);
    plant_run(z, tail);
    z->pg->data_tail = tail;
    switch (rnd(z, 4)) {
    case 0:  z->pg->data_head = splitmix64(&z->rng); break;
    case 1:  z->pg->data_head = tail - rnd(z, 16); break;
    default: z->pg->data_head = tail + rnd(z, z->size + 16); break;
    }
    if (rnd(z, 8) == 0) {
        /* A random layout: must be refused or stay inside the mapping. */
        z->pg->data_offset = rnd(z, 2) ? rnd(z, z->map + 64) : (uint64_t)sysconf(_SC_PAGESIZE);
        z->pg->data_size = rnd(z, 2) ? rnd(z, z->map) : z->size;
    }
    rc = vpmu_ring_new(z->mem, z->map, &r);
    if (z->pg->data_size && rc == 0) {
        CHECK(z, z->pg->data_offset + vpmu_ring_data_size(r) <= z->map);
        z->data = z->mem + z->pg->data_offset;
        z->size = vpmu_ring_data_size(r);
    }
    CHECK(z, rc == 0 || rc == -EINVAL);
    rc = rc == 0 ? check_hostile(z, r) : 0;        /* refused: fine */
    vpmu_ring_free(r);
    return rc;
}

/* Expected records of the traffic mode: a FIFO of (type, size, seed). */
typedef struct Want {
    uint32_t type;
    uint16_t size;
    uint64_t seed;          /* LOST: the count */
} Want;

/* One expected record against what the consumer returned. */
static int check_want(Fz *z, const Want *w, const VpmuRingRecord *rec)
{
    const unsigned char *b = (const void *)rec->ev;
    uint64_t f[3];

    CHECK(z, ((uintptr_t)b & 7) == 0);
    CHECK(z, rec->hdr.type == w->type && rec->hdr.size == w->size);
    CHECK(z, memcmp(&rec->hdr, b, sizeof(rec->hdr)) == 0);
    if (w->type == PERF_RECORD_LOST) {
        memcpy(f, b, sizeof(f));
        CHECK(z, f[1] == 7 && f[2] == w->seed);
        return 0;
    }
    for (unsigned i = 8; i < w->size; i++) {
        CHECK(z, b[i] == (unsigned char)(w->seed + i));
    }
    return 0;
}

/* Read at least @max records (a batch may bring more), or all there are. */
static int read_expect(Fz *z, VpmuRing *r, Want *q, size_t *qh, size_t qt,
                       unsigned max)
{
    VpmuRingRecord recs[FZ_MAX_BATCH];
    unsigned n, got = 0;

    while (got < max && *qh < qt) {
        CHECK(z, fz_read(z, r, recs, &n) > 0);
        CHECK(z, n <= qt - *qh);
        for (unsigned k = 0; k < n; k++) {
            if (check_want(z, &q[(*qh)++], &recs[k]) < 0) {
                return -1;
            }
        }
        got += n;
    }
    return 0;
}

/*
 * One random record through the producer.  Once it is accepted, the FIFO
 * gets it, preceded by a LOST for the @pending records refused before it
 * (the producer writes both at once).
 * Return: as vpmu_ring_producer_write(): 0, -ENOSPC (refused, counted in
 * @pending), or another -errno with z->fail set.
 */
static int traffic_write(Fz *z, VpmuRingProducer *p, Want *q, size_t *qt,
                         uint64_t *pending)
{
    unsigned char buf[512];
    uint64_t limit = z->size - 24 < 500 ? z->size - 24 : 500;
    struct perf_event_header h = {
        .type = (uint32_t)rnd(z, 2) ? PERF_RECORD_SAMPLE : 100 + (uint32_t)rnd(z, 9),
        .size = (uint16_t)(8 + rnd(z, limit - 7)),
    };
    uint64_t seed = splitmix64(&z->rng);
    int rc;

    if (z->run && z->run <= limit && splitmix64(&z->runs) % 8) {
        h.type = PERF_RECORD_SAMPLE;
        h.size = z->run;
    }
    memcpy(buf, &h, sizeof(h));
    for (unsigned i = 8; i < h.size; i++) {
        buf[i] = (unsigned char)(seed + i);
    }
    rc = vpmu_ring_producer_write(p, (void *)buf);
    if (rc == -ENOSPC) {
        (*pending)++;
    } else if (rc == 0) {
        if (*pending) {
            q[(*qt)++] = (Want){ PERF_RECORD_LOST, 24, *pending };
            *pending = 0;
        }
        q[(*qt)++] = (Want){ h.type, h.size, seed };
    } else {
        z->fail = "producer_write: unexpected error";
    }
    return rc;
}

/*
 * After the traffic: exactly the records still expected and then an empty
 * ring, or (@corrupt) a few data bytes overwritten and the hostile checks.
 */
static int traffic_finish(Fz *z, VpmuRing *r, Want *q, size_t *qh, size_t qt,
                          bool corrupt)
{
    VpmuRingRecord recs[FZ_MAX_BATCH];
    unsigned n;

    if (!corrupt) {
        if (read_expect(z, r, q, qh, qt, ~0u) < 0 ||
            fz_read(z, r, recs, &n) != 0) {
            z->fail = z->fail ? z->fail : "traffic: records left or error";
            return -1;
        }
        return 0;
    }
    for (unsigned k = 1 + rnd(z, 4); k; k--) {
        z->data[rnd(z, z->size)] = (unsigned char)splitmix64(&z->rng);
    }
    return check_hostile(z, r) < 0 ? -1 : 0;
}

static int case_traffic(Fz *z, bool corrupt)
{
    size_t cap = 4096, qh = 0, qt = 0;
    Want *q = calloc(cap, sizeof(*q));
    VpmuRingProducer *p = NULL;
    VpmuRing *r = NULL;
    uint64_t pending = 0, start = rnd(z, 2) ? 0 : (uint64_t)0 - rnd(z, 256);
    int rc = -1;

    z->pg->data_head = z->pg->data_tail = start;
    if (!q || vpmu_ring_producer_new(z->mem, z->map, 7, &p) ||
        vpmu_ring_new(z->mem, z->map, &r)) {
        z->fail = "setup";
        goto out;
    }
    /* Below 32 bytes no record fits beside a LOST: producer refuses all. */
    for (unsigned op = 0; z->size >= 32 && op < 64 && qt + 2 < cap; op++) {
        rc = traffic_write(z, p, q, &qt, &pending);
        if (rc && rc != -ENOSPC) {
            goto out;
        }
        if (rnd(z, 3) == 0) {
            if (read_expect(z, r, q, &qh, qt, (unsigned)rnd(z, 6)) < 0) {
                rc = -1;        /* rc held the write's 0: not a pass */
                goto out;
            }
            vpmu_ring_consume(r);
        }
    }
    rc = traffic_finish(z, r, q, &qh, qt, corrupt);
out:
    vpmu_ring_free(r);
    vpmu_ring_producer_free(p);
    free(q);
    return rc;
}

static int run_case(uint64_t seed, uint64_t c, bool runs, uint64_t *mode_out)
{
    Fz z = { .rng = seed ^ (c * 0xd1342543de82ef95ull),
             .runs = seed ^ (c * 0xbf58476d1ce4e5b9ull) ^ 0x72756e73ull };
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t mode = rnd(&z, 3);
    /* Its own stream, so that the rings are the same whichever API reads. */
    uint64_t api = seed ^ (c * 0x9e3779b97f4a7c15ull) ^ 0x5bd1e995ull;
    int rc;

    z.batch = splitmix64(&api) % 3 == 0 ? 0
              : 1 + (unsigned)(splitmix64(&api) % FZ_MAX_BATCH);
    if (runs && splitmix64(&z.runs) % 2) {
        z.run = (uint16_t)(8 * (1 + splitmix64(&z.runs) % 12));
    }
    z.span = runs && z.batch && splitmix64(&z.runs) % 2;

    z.size = 1ull << (3 + rnd(&z, 10));
    z.map = pg + z.size;
    z.mem = malloc(z.map);          /* exact size: ASan flags any overread */
    if (!z.mem) {
        return -1;
    }
    memset(z.mem, 0, z.map);
    z.pg = (void *)z.mem;
    z.data = z.mem + pg;
    rc = mode == 0 ? case_random(&z) : case_traffic(&z, mode == 2);
    if (rc < 0) {
        printf("fuzz-ringbuf: invariant violated: %s (mode %" PRIu64
               ", data size %" PRIu64 ", batch %u)\n", z.fail ? z.fail : "?",
               mode, z.size, z.batch);
    }
    *mode_out = mode;
    free(z.mem);
    return rc;
}

int main(int argc, char **argv)
{
    static const char *const names[4] = { "--seed", "--iterations", "--case",
                                          "--runs" };
    uint64_t arg[4] = { 1, 20000, UINT64_MAX, 1 }, modes[3] = { 0 }, mode;

    for (int i = 1; i < argc; i += 2) {
        int k = 0;
        while (k < 4 && strcmp(argv[i], names[k])) {
            k++;
        }
        if (k == 4 || i + 1 >= argc) {
            fprintf(stderr, "usage: fuzz-ringbuf [--seed N] [--iterations K] "
                    "[--case I] [--runs 0|1]\n");
            return 2;
        }
        arg[k] = strtoull(argv[i + 1], NULL, 0);
    }
    for (uint64_t c = 0; c < arg[1]; c++) {
        uint64_t cc = arg[2] == UINT64_MAX ? c : arg[2];
        if (run_case(arg[0], cc, arg[3] != 0, &mode) < 0) {
            printf("fuzz-ringbuf: replay with: fuzz-ringbuf --seed %" PRIu64
                   " --case %" PRIu64 " --runs %" PRIu64 "\n", arg[0], cc,
                   arg[3]);
            return 1;
        }
        modes[mode]++;
        if (arg[2] != UINT64_MAX) {
            break;
        }
    }
    printf("fuzz-ringbuf: seed %" PRIu64 ": %" PRIu64 " random, %" PRIu64
           " traffic, %" PRIu64 " corrupt cases, all invariants held\n",
           arg[0], modes[0], modes[1], modes[2]);
    return 0;
}
