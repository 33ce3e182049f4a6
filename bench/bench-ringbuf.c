/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-ringbuf: the vpmu/ringbuf consumer against memcpy of the same bytes,
 * measured in the same run, on the same ring, with the same record sizes.
 *
 * Usage: bench-ringbuf [ring_kib (256)] [rounds (400)] [batch (64)]
 *
 Three record-size mixes (the kernel writes multiples of 8 only):
 *   48      one event's samples, as `perf record -a` writes them
 *           (IP|TID|TIME|PERIOD|CPU): every record the same size;
 *   40-80   PERF_RECORD_SAMPLEs of 4 to 9 fields (IP|TID|TIME|PERIOD up to
 *           all of VPMU_RING_SAMPLE_TYPES), written by write_sample(), in a
 *           fixed pseudo-random order: several events with different
 *           sample types in one ring, the worst case for the consumer;
 *   40-96   SAMPLE records of 40, 48, ..., 96 bytes, written raw, likewise.
 * Each round the producer fills the ring (data area of ring_kib KiB),
 * starting where the last round ended so that records wrap around the end.
 * Then, timed apart, each after its own fill (so that every mode starts
 * with the ring in cache):
 *   memcpy          exactly the bytes the consumer reads (from the tail to
 *                   head, in two pieces at the wrap) into a buffer: the
 *                   bound for anything that touches every byte;
 *   read_batch      "consumed": vpmu_ring_read_batch() hands each record
 *                   (pointer + validated header) to the caller, which
 *                   reads the pointer and the size, and
 *                   vpmu_ring_consume() after each batch moves data_tail;
 *   read            the same with vpmu_ring_read(), one call per record
 *                   (the caller reads type and size from the record);
 *   read_span       "consumed" by vpmu_ring_read_span() of up to batch
 *                   records: the caller computes each record's pointer and
 *                   reads its size from the span, and vpmu_ring_consume()
 *                   after each span;
 *   + copy out      read_batch, and memcpy each record out (a forwarder);
 *   + parse         read_batch, and vpmu_ring_parse_sample() of each;
 *   produce         the fill itself.
 * Each mode keeps its fastest round (the machine is shared, so the least
 * disturbed one).  Ratios are bytes/s over memcpy's bytes/s; the target
 * (>= 0.8) is for the consumer API suited to the ring: read_span for one
 * event's samples, read_batch for mixed sizes (the line names which).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vpmu/ringbuf.h>

#define TARGET 0.8
#define MAX_BATCH 4096u

/* Mix 40-80: sizes 40, 48, ..., 80, one sample_type per size. */
static const uint64_t types[6] = {
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD,
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
        PERF_SAMPLE_CPU,
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
        PERF_SAMPLE_CPU | PERF_SAMPLE_ID,
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
        PERF_SAMPLE_CPU | PERF_SAMPLE_ID | PERF_SAMPLE_ADDR,
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
        PERF_SAMPLE_CPU | PERF_SAMPLE_ID | PERF_SAMPLE_ADDR |
        PERF_SAMPLE_STREAM_ID,
    VPMU_RING_SAMPLE_TYPES,
};

enum { MIX_ONE, MIX_TYPES, MIX_RAW };

enum { M_MEMCPY, M_BATCH, M_SPAN, M_READ, M_COPY, M_PARSE, M_PRODUCE, M__COUNT };

static const char *const mode_names[M__COUNT] = {
    "memcpy (same bytes)", "read_batch (consume)", "read_span (consume)",
    "read (one call each)",
    "read_batch + copy out", "read_batch + parse", "produce",
};

typedef struct Bench {
    VpmuRingProducer *p;
    VpmuRing *r;
    unsigned char *data;        /* the ring's data area */
    unsigned char *dst;
    size_t size;
    unsigned batch;
    int mix;                    /* MIX_* */
    uint64_t rng;
    VpmuRingRecord recs[MAX_BATCH];
} Bench;

/* The fastest round of a mode. */
typedef struct Best {
    uint64_t ns, bytes, records;
} Best;

/* Keeps the copies, parses and reads observable. */
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int write_one(Bench *b, uint64_t seq)
{
    VpmuRingSample s = { .ip = 0x401000, .pid = 1, .tid = 2, .time = seq,
                         .period = 100000 };
    uint64_t rec[12] = { 0 };
    struct perf_event_header h = { .type = PERF_RECORD_SAMPLE };

    b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
    if (b->mix == MIX_ONE) {
        return vpmu_ring_producer_write_sample(b->p, types[1], 0, &s);
    }
    if (b->mix == MIX_TYPES) {
        return vpmu_ring_producer_write_sample(b->p, types[(b->rng >> 33) % 6],
                                               0, &s);
    }
    h.size = (uint16_t)(40 + 8 * ((b->rng >> 33) % 8));
    memcpy(rec, &h, sizeof(h));
    rec[1] = s.ip;
    rec[2] = seq;
    return vpmu_ring_producer_write(b->p, (const void *)rec);
}

/*
 * Fill until the largest record might not fit (so that nothing is dropped
 * and no PERF_RECORD_LOST enters the stream); the fill's bytes and records.
 */
static Best fill(Bench *b, const struct perf_event_mmap_page *pg)
{
    VpmuRingProducerStats before, after;
    Best f;

    vpmu_ring_producer_stats(b->p, &before);
    while (b->size - (pg->data_head - pg->data_tail) >= 96) {
        if (write_one(b, pg->data_head) != 0) {
            break;
        }
    }
    vpmu_ring_producer_stats(b->p, &after);
    f.bytes = after.bytes - before.bytes;
    f.records = after.records - before.records;
    return f;
}

/* memcpy exactly the published bytes, tail to head, as the consumer will. */
static void copy_published(Bench *b, const struct perf_event_mmap_page *pg)
{
    uint64_t off = pg->data_tail & (b->size - 1), len = pg->data_head - pg->data_tail;
    uint64_t first = len < b->size - off ? len : b->size - off;

    memcpy(b->dst, b->data + off, first);
    memcpy(b->dst + first, b->data, len - first);
    sink += b->dst[len / 2];
}

/* What the caller does with a batch; each mode its own loop, no branches. */
static uint64_t use_batch(Bench *b, int m, int n, uint64_t *bytes)
{
    const VpmuRingRecord *rec = b->recs;
    uint64_t acc = 0, got = *bytes;
    VpmuRingSample s;

    if (m == M_BATCH) {
        for (int i = 0; i < n; i++) {
            acc += (uintptr_t)rec[i].ev;
            got += rec[i].hdr.size;
        }
    } else if (m == M_COPY) {
        for (int i = 0; i < n; i++) {
            memcpy(b->dst + got, rec[i].ev, rec[i].hdr.size);
            got += rec[i].hdr.size;
        }
    } else {
        for (int i = 0; i < n; i++) {
            /* The size tells the type apart: (size - 40) / 8 indexes types[]. */
            if (vpmu_ring_parse_sample(rec[i].ev, types[(rec[i].hdr.size - 40) / 8],
                                       &s) == 0) {
                acc += s.ip + s.time;
            }
            got += rec[i].hdr.size;
        }
    }
    *bytes = got;
    return acc;
}

/* Consume everything in batches, and release each batch to the producer. */
static void drain_batch(Bench *b, int m, Best *got)
{
    uint64_t bytes = 0, records = 0, acc = 0;
    int n;

    while ((n = vpmu_ring_read_batch(b->r, b->recs, b->batch)) > 0) {
        acc += use_batch(b, m, n, &bytes);
        records += (uint64_t)n;
        vpmu_ring_consume(b->r);
    }
    sink += acc;
    got->bytes = bytes;
    got->records = records;
}

/* Consume everything span by span, and release each span to the producer. */
static void drain_span(Bench *b, Best *got)
{
    VpmuRingSpan sp;
    uint64_t bytes = 0, records = 0, acc = 0;
    int n;

    while ((n = vpmu_ring_read_span(b->r, &sp, b->batch)) > 0) {
        for (int k = 0; k < n; k++) {
            acc += (uintptr_t)(sp.base + (size_t)k * sp.hdr.size);
            bytes += sp.hdr.size;
        }
        records += (uint64_t)n;
        vpmu_ring_consume(b->r);
    }
    sink += acc;
    got->bytes = bytes;
    got->records = records;
}

static void drain_read(Bench *b, Best *got)
{
    const struct perf_event_header *ev;
    uint64_t bytes = 0, records = 0, acc = 0;

    while (vpmu_ring_read(b->r, &ev) == 1) {
        acc += ev->type;
        bytes += ev->size;
        records++;
    }
    vpmu_ring_consume(b->r);
    sink += acc;
    got->bytes = bytes;
    got->records = records;
}

/* Keep the fastest round (bytes per ns) of a mode: the least disturbed. */
static void keep_best(Best *best, uint64_t ns, const Best *got)
{
    if (ns && (best->ns == 0 ||
               (double)got->bytes / (double)ns >
               (double)best->bytes / (double)best->ns)) {
        *best = *got;
        best->ns = ns;
    }
}

/* One round: each mode after its own fill.  Return -1 if a drain fell short. */
static int round_once(Bench *b, const struct perf_event_mmap_page *pg,
                      Best *best)
{
    Best f, got;
    uint64_t t0;

    for (int m = 0; m < M__COUNT; m++) {
        if (m == M_PARSE && b->mix == MIX_RAW) {
            continue;           /* sizes 88, 96 have no supported type */
        }
        t0 = now_ns();
        f = fill(b, pg);
        if (m == M_PRODUCE) {
            keep_best(&best[m], now_ns() - t0, &f);
        }
        t0 = now_ns();
        got = f;
        if (m == M_MEMCPY || m == M_PRODUCE) {
            copy_published(b, pg);
        } else if (m == M_READ) {
            drain_read(b, &got);
        } else if (m == M_SPAN) {
            drain_span(b, &got);
        } else {
            drain_batch(b, m, &got);
        }
        if (m != M_PRODUCE) {
            keep_best(&best[m], now_ns() - t0, &got);
        }
        /* memcpy/produce leave the ring full: skip it, untimed. */
        vpmu_ring_discard(b->r);
        if (got.bytes != f.bytes || got.records != f.records) {
            return -1;
        }
    }
    return 0;
}

static void report(const Bench *b, const Best *best, const char *mix)
{
    double base = (double)best[M_MEMCPY].bytes / (double)best[M_MEMCPY].ns;
    double batch = (double)best[M_BATCH].bytes / (double)best[M_BATCH].ns / base;
    double span = (double)best[M_SPAN].bytes / (double)best[M_SPAN].ns / base;
    double ratio = batch > span ? batch : span;

    printf("\nmix %s bytes (mean %.1f), %" PRIu64 " records per fill\n", mix,
           (double)best[M_BATCH].bytes / (double)best[M_BATCH].records,
           best[M_BATCH].records);
    printf("%-24s %12s %10s %8s %10s\n", "mode", "records/s", "MB/s",
           "ns/rec", "vs memcpy");
    for (int m = 0; m < M__COUNT; m++) {
        double bps = (double)best[m].bytes / (double)best[m].ns;

        if (best[m].ns == 0) {
            continue;
        }
        printf("%-24s %12.0f %10.0f %8.2f %10.2f\n", mode_names[m],
               (double)best[m].records / (double)best[m].ns * 1e9, bps * 1e3,
               (double)best[m].ns / (double)best[m].records, bps / base);
    }
    printf("target: consumed >= %.2f of memcpy: %s (%.2f by %s; read_batch "
           "%.2f, read_span %.2f)\n", TARGET, ratio >= TARGET ? "met" : "NOT met",
           ratio, batch > span ? "read_batch" : "read_span", batch, span);
}

static int run_mix(Bench *b, const struct perf_event_mmap_page *pg,
                   unsigned rounds, const char *mix)
{
    Best best[M__COUNT] = { { 0 } };

    for (unsigned i = 0; i < rounds; i++) {
        if (round_once(b, pg, best) < 0) {
            fprintf(stderr, "bench-ringbuf: a drain did not get the fill\n");
            return 1;
        }
    }
    report(b, best, mix);
    return 0;
}

int main(int argc, char **argv)
{
    size_t kib = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 400;
    unsigned batch = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 64;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = kib * 1024;
    static Bench b;
    void *mem = NULL;
    int rc;

    if (kib == 0 || (size & (size - 1)) || batch == 0 || batch > MAX_BATCH ||
        posix_memalign(&mem, pg, pg + size) || !(b.dst = malloc(size))) {
        fprintf(stderr, "usage: bench-ringbuf [ring_kib (2^n)] [rounds] "
                "[batch (1..%u)]\n", MAX_BATCH);
        return 2;
    }
    memset(mem, 0, pg + size);
    memset(b.dst, 0, size);
    b.data = (unsigned char *)mem + pg;
    b.size = size;
    b.batch = batch;
    b.rng = 1;
    if (vpmu_ring_producer_new(mem, pg + size, 0, &b.p) ||
        vpmu_ring_new(mem, pg + size, &b.r)) {
        fprintf(stderr, "bench-ringbuf: ring setup failed\n");
        return 1;
    }
    printf("bench-ringbuf: ring %zu KiB, %u rounds, batch %u; best round of "
           "each mode\n", kib, rounds, batch);
    b.mix = MIX_ONE;
    rc = run_mix(&b, mem, rounds, "48 (one event)");
    b.mix = MIX_TYPES;
    rc = rc ? rc : run_mix(&b, mem, rounds, "40-80");
    b.mix = MIX_RAW;
    rc = rc ? rc : run_mix(&b, mem, rounds, "40-96");
    vpmu_ring_free(b.r);
    vpmu_ring_producer_free(b.p);
    free(b.dst);
    free(mem);
    return rc;
}
