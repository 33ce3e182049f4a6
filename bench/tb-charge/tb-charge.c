/* bench/tb-charge/run.sh: times the charge forms of tb.S (gen-tbs.py). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FORMS 8
#define TBS 16                  /* TBs in the ring of each form */

void run_none(void *env, long rounds);
void run_v0(void *env, long rounds);
void run_v2(void *env, long rounds);
void run_mem(void *env, long rounds);
void run_add1(void *env, long rounds);
void run_add2(void *env, long rounds);
void run_reg(void *env, long rounds);
void run_spread(void *env, long rounds);

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Charge words far from overflow, so that no form takes its slow path. */
static void arm(char *env)
{
    *(int64_t *)(env + 0x3b0) = -(1ll << 62);
    for (int i = 0; i < TBS; i++) {
        *(int64_t *)(env + 0x400 + 64 * i) = -(1ll << 62);
    }
}

int main(int argc, char **argv)
{
    static char envbuf[8192] __attribute__((aligned(64)));
    static void (*const run[FORMS])(void *, long) = {
        run_none, run_v0, run_v2, run_mem, run_add1, run_add2, run_reg,
        run_spread,
    };
    static const char *const name[FORMS] = {
        "none", "v0", "v2", "mem", "add1", "add2", "reg", "spread",
    };
    char *env = envbuf + 4096;  /* TCG's env offsets reach below it too */
    double best[FORMS];
    long rounds;
    int reps;

    if (argc != 3 || (rounds = atol(argv[1])) <= 0 ||
        (reps = atoi(argv[2])) <= 0) {
        fprintf(stderr, "usage: tb-charge ROUNDS REPS (both > 0)\n");
        return 2;
    }
    for (int k = 0; k < FORMS; k++) {
        best[k] = 1e9;
    }
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < FORMS; k++) {
            double t;

            arm(env);
            t = now();
            run[k](env, rounds);
            t = now() - t;
            if (t < best[k]) {
                best[k] = t;
            }
        }
    }
    for (int k = 0; k < FORMS; k++) {
        printf("%s %.3f ns/TB  x%.4f\n", name[k],
               best[k] / (rounds * (double)TBS) * 1e9, best[k] / best[0]);
    }
    return 0;
}
