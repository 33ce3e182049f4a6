/*
 * nested-kvm-time: wall time of a command, for bench/nested-kvm.sh's L2
 * (busybox has no sub-millisecond timer).  Built statically by the bench.
 *
 *   nested-kvm-time REPS CMD [ARG...]
 *
 * Runs CMD REPS times one after the other (its stdout and stderr to
 * /dev/null), CLOCK_MONOTONIC around fork .. waitpid, and prints
 *   median_ns=M min_ns=L max_ns=H runs=R fails=F all=T1,T2,...
 * F counts runs that did not exit 0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps, fails = 0;
    long long *t, *s;

    if (argc < 3 || (reps = atoi(argv[1])) < 1) {
        fprintf(stderr, "usage: %s REPS CMD [ARG...]\n", argv[0]);
        return 2;
    }
    t = calloc(reps, sizeof(*t));
    s = calloc(reps, sizeof(*s));
    if (!t || !s) {
        return 2;
    }
    for (int i = 0; i < reps; i++) {
        long long t0 = now_ns();
        int st;
        pid_t pid = fork();

        if (pid < 0) {
            perror("fork");
            return 2;
        }
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);

            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
            fails++;
        }
        t[i] = s[i] = now_ns() - t0;
    }
    qsort(s, reps, sizeof(*s), cmp);
    printf("median_ns=%lld min_ns=%lld max_ns=%lld runs=%d fails=%d all=",
           reps % 2 ? s[reps / 2] : (s[reps / 2 - 1] + s[reps / 2]) / 2,
           s[0], s[reps - 1], reps, fails);
    for (int i = 0; i < reps; i++) {
        printf("%s%lld", i ? "," : "", t[i]);
    }
    printf("\n");
    return 0;
}
