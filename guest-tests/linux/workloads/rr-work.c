/*
 * rr-work [SIGNALS [STEPS]]: what tests/rr.sh records and replays.  Two
 * worker threads do integer work full of conditional branches (rr's
 * ticks), STEPS (default 20000) steps and a syscall a round, and take
 * SIGNALS (default 20) SIGUSR1s that the main thread sends one at a
 * time, each acknowledged before the next, so that none is lost.  Prints
 * what the workers did, which depends on timing: a replay must print the
 * same.  Exit status 0 if every signal was handled.
 */
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WORKERS 2

static long steps = 20000;

static atomic_int handled;
static atomic_int stop;

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

/* An LCG whose top bit picks one of two updates: a branch per step. */
static unsigned long work(unsigned long x, long n)
{
    unsigned long acc = 0;

    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        if (x >> 63) {
            acc += x >> 33;
        } else {
            acc ^= x;
        }
    }
    return acc;
}

static void *worker(void *arg)
{
    unsigned long id = (unsigned long)arg, sum = 0, rounds = 0;

    while (!atomic_load(&stop)) {
        sum += work(id * 1000 + rounds, steps);
        rounds++;
        getppid();      /* a syscall per round */
    }
    printf("worker %lu: %lu rounds, sum %lx\n", id, rounds, sum);
    return NULL;
}

int main(int argc, char **argv)
{
    int signals = argc > 1 ? atoi(argv[1]) : 20;
    pthread_t t[WORKERS];
    struct sigaction sa;

    if (argc > 2) {
        steps = atol(argv[2]);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    for (unsigned long i = 0; i < WORKERS; i++) {
        pthread_create(&t[i], NULL, worker, (void *)i);
    }
    for (int i = 0; i < signals; i++) {
        pthread_kill(t[i % WORKERS], SIGUSR1);
        while (atomic_load(&handled) < i + 1) {
            sched_yield();
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(t[i], NULL);
    }
    printf("handled %d signals\n", atomic_load(&handled));
    return atomic_load(&handled) != signals;
}
