/*
 * bench-work: the CPU-bound guest workload of bench/guest-overhead.sh.
 *
 * Not an exact-count workload (the tests use the .S files for that): it is
 * meant to look like ordinary compiled code, with calls (direct, recursive
 * and through a function pointer), loads and stores over a few hundred KB,
 * and data-dependent branches.  Each round:
 *
 *   1. fills KEYS 32-bit keys with xorshift32;
 *   2. sorts them with a recursive quicksort that compares through a
 *      function pointer (insertion sort below 16 elements), and checks
 *      the order;
 *   3. inserts every key into an open-addressing hash table (linear
 *      probing, 2 x KEYS slots) and looks up KEYS other keys, half of
 *      them present;
 *   4. compresses a 64 KB buffer derived from the sorted keys with a small
 *      LZ77 (3-byte hash, one candidate, greedy), and runs a table-driven
 *      CRC-32 over the output.
 *
 * Usage: bench-work [ROUNDS]   (default 40)
 *
 * Prints one line:
 *   bench-work: rounds=R elapsed_ns=T checksum=0x...
 * With BENCH_MARK=PATH in the environment (the bench uses /dev/console), it
 * also writes "BENCH-MARK start" to PATH just before it reads the clock the
 * first time, and "BENCH-MARK end" just after the second, so that the host
 * can sample QEMU's CPU time around the same interval.
 * T is CLOCK_MONOTONIC around the rounds only: it leaves out exec, page
 * faults of the loader, and whatever a perf parent does before the exec and
 * after the exit, but includes everything that interrupts the workload
 * while it runs (PMIs, the perf record reader, timer ticks).  The checksum
 * depends on ROUNDS only, so runs under different tools can be compared.
 *
 * Built statically by bench/guest-overhead.sh: gcc -O2 -static.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEYS (1u << 16)
#define SLOTS (2u * KEYS)
#define BUF (64u * 1024)
#define LZHASH (1u << 12)

static uint32_t keys[KEYS];
static uint32_t table[SLOTS];
static uint8_t src[BUF];
static uint8_t dst[BUF + BUF / 8 + 16];
static uint32_t crctab[256];
static uint32_t lzhead[LZHASH];

static uint32_t rng = 2463534242u;

static uint32_t xorshift32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

typedef int (*cmp_fn)(uint32_t, uint32_t);

static __attribute__((noinline)) int cmp_u32(uint32_t a, uint32_t b)
{
    return (a > b) - (a < b);
}

static void insertion_sort(uint32_t *a, long n, cmp_fn cmp)
{
    for (long i = 1; i < n; i++) {
        uint32_t v = a[i];
        long j = i - 1;
        while (j >= 0 && cmp(a[j], v) > 0) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static __attribute__((noinline)) void quicksort(uint32_t *a, long n, cmp_fn cmp)
{
    while (n > 16) {
        uint32_t x = a[0], y = a[n / 2], z = a[n - 1], pivot;
        long i = 0, j = n - 1;

        /* median of three */
        if (cmp(x, y) > 0) { uint32_t t = x; x = y; y = t; }
        if (cmp(y, z) > 0) { y = z; }
        if (cmp(x, y) > 0) { y = x; }
        pivot = y;
        for (;;) {
            while (cmp(a[i], pivot) < 0) i++;
            while (cmp(a[j], pivot) > 0) j--;
            if (i >= j) break;
            uint32_t t = a[i]; a[i] = a[j]; a[j] = t;
            i++;
            j--;
        }
        /* recurse into the smaller part, loop on the larger */
        if (j + 1 < n - j - 1) {
            quicksort(a, j + 1, cmp);
            a += j + 1;
            n -= j + 1;
        } else {
            quicksort(a + j + 1, n - j - 1, cmp);
            n = j + 1;
        }
    }
    insertion_sort(a, n, cmp);
}

static inline uint32_t hash32(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x7feb352du;
    k ^= k >> 15;
    k *= 0x846ca68bu;
    k ^= k >> 16;
    return k;
}

static __attribute__((noinline)) void hash_insert(uint32_t k)
{
    uint32_t i = hash32(k) & (SLOTS - 1);

    k |= 1;   /* 0 marks an empty slot */
    while (table[i] != 0 && table[i] != k)
        i = (i + 1) & (SLOTS - 1);
    table[i] = k;
}

static __attribute__((noinline)) int hash_find(uint32_t k)
{
    uint32_t i = hash32(k) & (SLOTS - 1);

    k |= 1;
    while (table[i] != 0) {
        if (table[i] == k)
            return 1;
        i = (i + 1) & (SLOTS - 1);
    }
    return 0;
}

/* A greedy LZ77: literal runs and (offset, length) matches, byte-coded. */
static __attribute__((noinline)) size_t lz_compress(const uint8_t *in, size_t n,
                                                    uint8_t *out)
{
    size_t ip = 0, op = 0, lit = 0;

    memset(lzhead, 0xff, sizeof(lzhead));
    while (ip + 3 <= n) {
        uint32_t h = ((uint32_t)in[ip] << 16 | (uint32_t)in[ip + 1] << 8 |
                      in[ip + 2]) * 2654435761u >> 20;
        uint32_t cand = lzhead[h];
        size_t len = 0;

        lzhead[h] = (uint32_t)ip;
        if (cand != 0xffffffffu && ip - cand < 65536) {
            while (ip + len < n && len < 255 && in[cand + len] == in[ip + len])
                len++;
        }
        if (len >= 4) {
            if (lit) {
                out[op++] = (uint8_t)lit;
                memcpy(out + op, in + ip - lit, lit);
                op += lit;
                lit = 0;
            }
            out[op++] = 0;
            out[op++] = (uint8_t)(ip - cand);
            out[op++] = (uint8_t)((ip - cand) >> 8);
            out[op++] = (uint8_t)len;
            ip += len;
        } else {
            ip++;
            if (++lit == 255) {
                out[op++] = (uint8_t)lit;
                memcpy(out + op, in + ip - lit, lit);
                op += lit;
                lit = 0;
            }
        }
    }
    lit += n - ip;
    if (lit) {
        out[op++] = (uint8_t)lit;
        memcpy(out + op, in + n - lit, lit);
        op += lit;
    }
    return op;
}

static __attribute__((noinline)) uint32_t crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;

    while (n--)
        c = crctab[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static uint64_t round_work(void)
{
    uint64_t sum = 0;
    uint32_t found = 0;
    size_t clen;

    for (uint32_t i = 0; i < KEYS; i++)
        keys[i] = xorshift32();

    memset(table, 0, sizeof(table));
    for (uint32_t i = 0; i < KEYS; i++)
        hash_insert(keys[i]);
    for (uint32_t i = 0; i < KEYS; i++)
        found += hash_find((i & 1) ? keys[i] : keys[i] ^ 0x80000000u);

    quicksort(keys, KEYS, cmp_u32);
    for (uint32_t i = 1; i < KEYS; i++) {
        if (keys[i - 1] > keys[i]) {
            fprintf(stderr, "bench-work: not sorted at %u\n", i);
            exit(1);
        }
    }

    /* Compressible: runs from the sorted keys' top bytes, noise below. */
    for (uint32_t i = 0; i < BUF; i++) {
        uint32_t k = keys[(i / 4) % KEYS];
        src[i] = (i & 3) == 3 ? (uint8_t)(k & 0x0f) : (uint8_t)(k >> 24);
    }
    clen = lz_compress(src, BUF, dst);

    sum += found;
    sum = sum * 31 + clen;
    sum = sum * 31 + crc32(dst, clen);
    sum = sum * 31 + keys[KEYS / 2];
    return sum;
}

static void mark(int fd, const char *what)
{
    char line[64];
    int n = snprintf(line, sizeof(line), "BENCH-MARK %s\n", what);

    if (fd >= 0 && write(fd, line, (size_t)n) != n)
        perror("bench-work: BENCH_MARK");
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : 40;
    const char *markpath = getenv("BENCH_MARK");
    int markfd = markpath ? open(markpath, O_WRONLY | O_NOCTTY) : -1;
    struct timespec t0, t1;
    uint64_t sum = 0;

    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crctab[i] = c;
    }
    /* Touch the arrays once so that page faults stay out of the timing. */
    memset(keys, 1, sizeof(keys));
    memset(table, 1, sizeof(table));
    memset(src, 1, sizeof(src));
    memset(dst, 1, sizeof(dst));

    if (markpath && markfd < 0)
        perror(markpath);
    mark(markfd, "start");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long r = 0; r < rounds; r++)
        sum = sum * 1000003u + round_work();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mark(markfd, "end");

    printf("bench-work: rounds=%ld elapsed_ns=%lld checksum=0x%016llx\n",
           rounds,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
               (t1.tv_nsec - t0.tv_nsec),
           (unsigned long long)sum);
    return 0;
}
