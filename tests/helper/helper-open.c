/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper-open: what QEMU does with vpmu-helper, as a small program for
 * tests/helper/helper-daemon.sh.  It asks the helper at SOCKET for the
 * perf source's task-clock event (the fallback of guest cycles) on its
 * own thread, or on thread TID, counts while it spins, and prints one
 * line: "ok COUNT", or "refused STATUS MESSAGE".  With --direct it calls
 * perf_event_open itself instead ("refused" then has no message).
 *
 *   helper-open SOCKET [TID]
 *   helper-open --direct
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <vpmu/helper.h>

/* The perf source's task-clock event (docs/perf-source.md). */
static void task_clock(struct perf_event_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    a->disabled = 1;
    a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                     PERF_FORMAT_TOTAL_TIME_RUNNING;
    a->sample_period = 1ull << 40;
}

/*
 * Enable and spin until the event has counted 50 ms (@want) of task
 * time, for at most 2 s of this thread's CPU time: print the count.
 * The event's own count decides, not CLOCK_THREAD_CPUTIME_ID: perf's task
 * clock runs only while the event's context is scheduled in, so on a
 * loaded host, where the thread is preempted, it falls microseconds behind
 * the thread's CPU time, and a spin of 50 ms of CPU time could count
 * 49.99 ms.  A client whose event does not count stops at the limit.
 */
static int count(int fd, uint64_t want)
{
    uint64_t v[3] = { 0 };
    struct timespec t0, t;

    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        if (read(fd, v, sizeof(v)) != sizeof(v)) {
            printf("read failed: %s\n", strerror(errno));
            return 1;
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while (v[0] < want &&
             (t.tv_sec - t0.tv_sec) * 1000000000ll +
             (t.tv_nsec - t0.tv_nsec) < 2000000000ll);
    printf("ok %llu\n", (unsigned long long)v[0]);
    return 0;
}

int main(int argc, char **argv)
{
    struct perf_event_attr a;
    VpmuHelperStats st;
    VpmuPerfSys sys;
    VpmuHelper *h;
    char err[256];
    pid_t tid;
    int fd;

    task_clock(&a);
    if (argc == 2 && !strcmp(argv[1], "--direct")) {
        fd = syscall(SYS_perf_event_open, &a, 0, -1, -1,
                     PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            printf("refused %d\n", -errno);
            return 0;
        }
        return count(fd, 50000000);
    }
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: helper-open SOCKET [TID] | --direct\n");
        return 2;
    }
    if (vpmu_helper_connect(argv[1], &h, err, sizeof(err)) < 0) {
        printf("no helper: %s\n", err);
        return 1;
    }
    vpmu_helper_perf_sys(h, &sys);
    tid = argc == 3 ? (pid_t)atoi(argv[2]) : (pid_t)syscall(SYS_gettid);
    fd = sys.open(sys.ctx, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        vpmu_helper_stats(h, &st);
        printf("refused %d %s\n", fd, st.last_message);
        vpmu_helper_free(h);
        return 0;
    }
    /*
     * Another thread (a vCPU's) may be idle: then wait only for its event
     * to count at all (at most 2 s of this thread's CPU time).
     */
    fd = count(fd, argc == 3 ? 1 : 50000000);
    vpmu_helper_free(h);
    return fd;
}
