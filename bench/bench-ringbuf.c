/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-ringbuf: the vpmu/ringbuf consumer against memcpy of the same bytes,
 * measured in the same run.
 *
 * Usage: bench-ringbuf [ring_kib (256)] [rounds (400)]
 *
 * Each round the producer fills the ring (data area of ring_kib KiB) with
 * samples of 40..80 bytes (multiples of 8, a fixed pseudo-random mix, the
 * sizes of IP|TID|TIME|PERIOD .. all nine fields), starting where the last
 * round ended so that records wrap around the end.  Then, timed apart:
 *   memcpy            the same number of bytes, ring -> destination, in one
 *                     call (the bound for anything that moves the data);
 *   consume           vpmu_ring_read() each record (delivered in place,
 *                     the caller reads its header), vpmu_ring_consume();
 *   consume + copy    the same, and memcpy each record out, as a forwarder;
 *   consume + parse   the same, and vpmu_ring_parse_sample() of each;
 *   produce           vpmu_ring_producer_write_sample() until full.
 * Each mode keeps its fastest round (the machine is shared, so the least
 * disturbed one); each mode gets its own fill, so all start with the ring
 * in cache.  Ratios are throughput / memcpy
 * throughput; the target (>= 0.8) is for "consume".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vpmu/ringbuf.h>

#define TARGET 0.8

/* Sizes 40, 48, ..., 96: header + 4..11 slots; sample_type per size. */
static const uint64_t types[8] = {
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

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct Bench {
    VpmuRingProducer *p;
    VpmuRing *r;
    unsigned char *data;        /* the ring's data area */
    unsigned char *dst;
    size_t size;
    uint64_t rng;
} Bench;

/* Keeps the copies and parses observable. */
static volatile uint64_t sink;

/* Fill until the producer refuses; return the bytes written. */
static uint64_t fill(Bench *b, uint64_t *records)
{
    VpmuRingProducerStats before, after;
    VpmuRingSample s = { .ip = 0x401000, .pid = 1, .tid = 2, .period = 100000 };

    vpmu_ring_producer_stats(b->p, &before);
    for (;;) {
        b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
        s.time++;
        if (vpmu_ring_producer_write_sample(b->p, types[(b->rng >> 33) % 6], 0,
                                            &s)) {
            break;
        }
    }
    vpmu_ring_producer_stats(b->p, &after);
    *records = after.records - before.records;
    return after.bytes - before.bytes;
}

static uint64_t drain_copy(Bench *b)
{
    const struct perf_event_header *ev;
    size_t off = 0;

    while (vpmu_ring_read(b->r, &ev) == 1) {
        memcpy(b->dst + off, ev, ev->size);
        off += ev->size;
    }
    vpmu_ring_consume(b->r);
    return off;
}

/* Records delivered in place; the consumer reads each header. */
static uint64_t drain_only(Bench *b)
{
    const struct perf_event_header *ev;
    uint64_t bytes = 0, types_seen = 0;

    while (vpmu_ring_read(b->r, &ev) == 1) {
        types_seen += ev->type;
        bytes += ev->size;
    }
    vpmu_ring_consume(b->r);
    sink += types_seen;
    return bytes;
}

static uint64_t drain_parse(Bench *b)
{
    const struct perf_event_header *ev;
    VpmuRingSample s;
    uint64_t bytes = 0;

    while (vpmu_ring_read(b->r, &ev) == 1) {
        /* The size tells the type apart: (size - 40) / 8 indexes types[];
         * the LOST record after each full ring is not a sample. */
        if (ev->type == PERF_RECORD_SAMPLE &&
            vpmu_ring_parse_sample(ev, types[(ev->size - 40) / 8], &s) == 0) {
            sink += s.ip + s.time;
        }
        bytes += ev->size;
    }
    vpmu_ring_consume(b->r);
    return bytes;
}

/* Keep the fastest round (bytes per ns) of a mode: the least disturbed. */
static void best(uint64_t *t, uint64_t *bytes, uint64_t dt, uint64_t b)
{
    if (dt && (*t == 0 || (double)b / (double)dt > (double)*bytes / (double)*t)) {
        *t = dt;
        *bytes = b;
    }
}

int main(int argc, char **argv)
{
    size_t kib = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 400;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = kib * 1024;
    Bench b = { .size = size, .rng = 1 };
    uint64_t t[5] = { 0 }, bytes[5] = { 0 }, recs = 0, total = 0, n, t0;
    double mean;
    void *mem = NULL;
    const char *names[5] = { "memcpy (baseline)", "consume (in place)",
                             "consume + copy out", "consume + parse",
                             "produce (write_sample)" };

    if (kib == 0 || (size & (size - 1)) || posix_memalign(&mem, pg, pg + size) ||
        !(b.dst = malloc(size))) {
        fprintf(stderr, "bench-ringbuf: ring_kib must be a power of two\n");
        return 2;
    }
    memset(mem, 0, pg + size);
    b.data = (unsigned char *)mem + pg;
    if (vpmu_ring_producer_new(mem, pg + size, 0, &b.p) ||
        vpmu_ring_new(mem, pg + size, &b.r)) {
        fprintf(stderr, "bench-ringbuf: ring setup failed\n");
        return 1;
    }
    for (unsigned i = 0; i < rounds; i++) {
        uint64_t (*const drain[3])(Bench *) = { drain_only, drain_copy,
                                                drain_parse };
        uint64_t filled, got;

        t0 = now_ns();
        filled = fill(&b, &n);
        best(&t[4], &bytes[4], now_ns() - t0, filled);
        recs += n;
        total += filled;
        t0 = now_ns();
        memcpy(b.dst, b.data, filled);
        best(&t[0], &bytes[0], now_ns() - t0, filled);
        sink += b.dst[b.rng % size];
        for (int m = 0; m < 3; m++) {
            if (m) {
                fill(&b, &n);
            }
            t0 = now_ns();
            got = drain[m](&b);
            best(&t[m + 1], &bytes[m + 1], now_ns() - t0, got);
        }
    }
    mean = (double)total / (double)recs;
    printf("bench-ringbuf: ring %zu KiB, %u rounds, %" PRIu64 " records of "
           "40-80 bytes (mean %.1f); best round of each mode\n", kib, rounds,
           recs, mean);
    printf("%-24s %12s %10s %10s\n", "mode", "records/s", "MB/s", "vs memcpy");
    for (int m = 0; m < 5; m++) {
        double bps = (double)bytes[m] / ((double)t[m] / 1e9);
        double base = (double)bytes[0] / ((double)t[0] / 1e9);
        printf("%-24s %12.0f %10.0f %10.2f\n", names[m], bps / mean, bps / 1e6,
               bps / base);
    }
    {
        double ratio = ((double)bytes[1] / (double)t[1]) /
                       ((double)bytes[0] / (double)t[0]);
        printf("target: consume >= %.2f of memcpy: %s (%.2f)\n", TARGET,
               ratio >= TARGET ? "met" : "NOT met", ratio);
    }
    vpmu_ring_free(b.r);
    vpmu_ring_producer_free(b.p);
    free(b.dst);
    free(mem);
    return 0;
}
