/*
 * papi-work EVENT N: count PAPI preset EVENT (PAPI_TOT_INS, ...) with
 * PAPI's low-level API around a loop of N iterations whose counts are
 * known by construction, and print "EVENT N COUNT".  tests/papi.sh runs
 * it for two N: the difference is the loop's alone, PAPI's own
 * instructions between start and stop (the same each run) cancel.
 *
 * One iteration, N even, ECX from N down to 1 (the asm below):
 *   mov (%rsi), %rax     load
 *   mov %rax, 8(%rsi)    store
 *   test $1, %ecx
 *   jz 2f                conditional: taken for even ECX (N / 2 times)
 *   nop                  (odd ECX: N / 2 times)
 *   2: dec %ecx
 *   jnz 1b               conditional: taken N - 1 times
 * Per iteration: 6.5 instructions, 2 (conditional) branches, 1.5 taken,
 * 1 load, 1 store.
 */
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>

static long buf[4];

static void loop(long n)
{
    asm volatile("1: mov (%%rsi), %%rax\n"
                 "mov %%rax, 8(%%rsi)\n"
                 "test $1, %%ecx\n"
                 "jz 2f\n"
                 "nop\n"
                 "2: dec %%ecx\n"
                 "jnz 1b\n"
                 : "+c"(n) : "S"(buf) : "rax", "memory", "cc");
}

int main(int argc, char **argv)
{
    int set = PAPI_NULL, r;
    long long count = 0;
    long n;

    if (argc != 3 || (n = atol(argv[2])) < 2 || n % 2) {
        fprintf(stderr, "usage: papi-work EVENT N (N even, >= 2)\n");
        return 2;
    }
    r = PAPI_library_init(PAPI_VER_CURRENT);
    if (r != PAPI_VER_CURRENT) {
        fprintf(stderr, "PAPI_library_init: %s\n", PAPI_strerror(r));
        return 1;
    }
    if ((r = PAPI_create_eventset(&set)) != PAPI_OK ||
        (r = PAPI_add_named_event(set, argv[1])) != PAPI_OK ||
        (r = PAPI_start(set)) != PAPI_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], PAPI_strerror(r));
        return 1;
    }
    loop(n);
    if ((r = PAPI_stop(set, &count)) != PAPI_OK) {
        fprintf(stderr, "PAPI_stop: %s\n", PAPI_strerror(r));
        return 1;
    }
    printf("%s %ld %lld\n", argv[1], n, count);
    return 0;
}
