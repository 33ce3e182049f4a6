/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/ringbuf on rings the kernel fills: a PERF_COUNT_SW_TASK_CLOCK
 * sampling event on this thread (sample_type IP|TID|TIME|PERIOD, so each
 * sample is 8 + 4 * 8 = 40 bytes), mmap'ed as 1 + 2^n pages.
 *
 * If perf_event_open or the mmap is refused (perf_event_paranoid, seccomp
 * in a container), the whole suite skips: a TAP plan of no tests,
 * "1..0 # SKIP <why>".
 *
 * How many samples to expect.  task-clock samples from an hrtimer that
 * runs only while the task is on a CPU (it is cancelled at schedule-out and
 * restarted with the time left), and hrtimers never fire early: sample k
 * is taken after at least k * period ns of task time.  So with C the
 * event's final count (task ns while enabled) and P the period,
 *     samples (+ lost) <= C / P + 1     (+1: the hrtimer and the count use
 *                                        different clocks, rounding)
 * Timers can fire late, though, and perf_swevent_hrtimer() then forwards
 * past the missed periods (hrtimer_forward_now), which loses samples with
 * no record at all.  Measured on this nested VM: 0.999 of the upper bound
 * (2999 of 3001), but 0.899 once under ASan on a loaded host.  The lower
 * bound is 2/3 of C / P: a consumer that skips every other record misses
 * it (a double-counting one breaks the upper bound), and timer lateness on
 * a loaded host does not.
 */
#define LOW(count, period) ((count) / (period) * 2 / 3)
#include <check.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <vpmu/ringbuf.h>

#include "check-main.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                     PERF_SAMPLE_PERIOD)

typedef struct Sampler {
    int fd;
    void *map;
    size_t map_size;
    uint64_t period;
} Sampler;

/* 0, or -errno with the failing step in @why. */
static int sampler_open(Sampler *s, uint64_t period, unsigned data_pages,
                        char *why, size_t whylen)
{
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE,
        .size = sizeof(attr),
        .config = PERF_COUNT_SW_TASK_CLOCK,
        .sample_period = period,
        .sample_type = SAMPLE_TYPE,
        .disabled = 1,
        .exclude_hv = 1,
    };
    long psz = sysconf(_SC_PAGESIZE);

    s->period = period;
    s->map_size = (size_t)psz * (1 + data_pages);
    s->fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1,
                         PERF_FLAG_FD_CLOEXEC);
    if (s->fd < 0) {
        int err = -errno;
        snprintf(why, whylen, "perf_event_open(task-clock, sampling): %s",
                 strerror(errno));
        return err;
    }
    s->map = mmap(NULL, s->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  s->fd, 0);
    if (s->map == MAP_FAILED) {
        int err = -errno;
        snprintf(why, whylen, "mmap of the perf ring (%zu bytes): %s",
                 s->map_size, strerror(errno));
        close(s->fd);
        return err;
    }
    return 0;
}

static void sampler_close(Sampler *s)
{
    munmap(s->map, s->map_size);
    close(s->fd);
}

static uint64_t thread_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The consumer's view of a run, checked record by record.  The window is
 * measured on the producer's clock, the event's own count (task-clock ns):
 * this thread's CPU clock leaves out IRQ and steal time the event counts
 * (2% of an 84 ms window here under valgrind, where the first drain alone
 * runs that long).
 */
typedef struct Seen {
    uint64_t samples, last_time;
    pid_t pid, tid;
    uint64_t period;
    int fd;                         /* the event, read for its count */
    uint64_t drain_start;           /* its count when the last drain began */
    uint64_t prev_start;            /* ... and the one before (0: enable) */
    uint64_t max_window;            /* see drain() */
} Seen;

static uint64_t event_count(int fd)
{
    uint64_t count = 0;

    ck_assert_int_eq(read(fd, &count, sizeof(count)), (ssize_t)sizeof(count));
    return count;
}

/*
 * Read everything published; every record must be well formed.  A record
 * written during the previous drain, after its last read, is freed only by
 * this drain's consume: the ring must hold what the event wrote from the
 * previous drain's start to this one's end (max_window).
 */
static void drain(VpmuRing *r, Seen *seen)
{
    const struct perf_event_header *ev;
    VpmuRingSample s;
    uint64_t window;
    int rc;

    seen->prev_start = seen->drain_start;
    seen->drain_start = event_count(seen->fd);
    while ((rc = vpmu_ring_read(r, &ev)) == 1) {
        if (ev->type == PERF_RECORD_LOST || ev->type == PERF_RECORD_THROTTLE ||
            ev->type == PERF_RECORD_UNTHROTTLE) {
            continue;               /* counted by the consumer's stats */
        }
        ck_assert_uint_eq(ev->type, PERF_RECORD_SAMPLE);
        ck_assert_int_eq(ev->size, 40);
        ck_assert_int_eq(vpmu_ring_parse_sample(ev, SAMPLE_TYPE, &s), 0);
        ck_assert_uint_eq(s.period, seen->period);
        ck_assert_uint_eq(s.pid, (uint32_t)seen->pid);
        ck_assert_uint_eq(s.tid, (uint32_t)seen->tid);
        ck_assert_uint_ge(s.time, seen->last_time);
        ck_assert_uint_ne(s.ip, 0);
        seen->last_time = s.time;
        seen->samples++;
    }
    ck_assert_msg(rc == 0, "ring error %d: %s", rc, vpmu_ring_error(r));
    vpmu_ring_consume(r);
    window = event_count(seen->fd) - seen->prev_start;
    if (window > seen->max_window) {
        seen->max_window = window;
    }
}

/* Spin for @ns of this thread's CPU time; drain every ~1 ms if @r. */
static void burn(uint64_t ns, VpmuRing *r, Seen *seen)
{
    uint64_t end = thread_ns() + ns, next = 0;
    volatile uint64_t x = 0;

    for (uint64_t now = thread_ns(); now < end; now = thread_ns()) {
        for (int i = 0; i < 1000; i++) {
            x += (uint64_t)i * now;
        }
        if (r && now >= next) {
            drain(r, seen);
            next = now + 1000000;
        }
    }
    (void)x;    /* clang: "set but not used", volatile or not */
}

static uint64_t sampler_stop(Sampler *s)
{
    uint64_t count = 0;

    ck_assert_int_eq(ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0), 0);
    ck_assert_int_eq(read(s->fd, &count, sizeof(count)), (ssize_t)sizeof(count));
    return count;
}

/*
 * 1 + 8 pages (32 KiB, 819 samples of 40 bytes), period 100 us, 300 ms of
 * CPU: ~3000 samples, drained every 1 ms of CPU time.  The ring fills only
 * after 819 * 100 us = 82 ms of the event's time between two consumes,
 * and it does not count while we are off the CPU, so nothing can be lost
 * as long as the largest window (drain()) is below 818 periods (one for
 * the rounding between the event's hrtimer and its count).  It is not
 * always: under valgrind the first drain, translating the code it runs,
 * takes 80-120 ms.
 */
START_TEST(test_kernel_ring_drained)
{
    Sampler s;
    char why[160];
    VpmuRing *r;
    VpmuRingStats st;
    Seen seen = { .pid = getpid(), .tid = gettid(), .period = 100000 };
    uint64_t count, max;

    ck_assert_msg(sampler_open(&s, seen.period, 8, why, sizeof(why)) == 0, "%s", why);
    seen.fd = s.fd;
    ck_assert_int_eq(vpmu_ring_new(s.map, s.map_size, &r), 0);
    ck_assert_uint_eq(vpmu_ring_data_size(r), 8 * sysconf(_SC_PAGESIZE));
    ck_assert_int_eq(ioctl(s.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
    burn(300000000, r, &seen);
    count = sampler_stop(&s);
    drain(r, &seen);
    vpmu_ring_stats(r, &st);
    max = count / seen.period + 1;
    printf("# drained: task-clock %llu ns, %llu samples of at most %llu "
           "(%.3f), %llu throttle, %llu wrapped\n", (unsigned long long)count,
           (unsigned long long)seen.samples, (unsigned long long)max,
           (double)seen.samples / (double)max, (unsigned long long)st.throttle,
           (unsigned long long)st.wrapped);
    ck_assert_uint_eq(st.errors, 0);
    if (seen.max_window < 818 * seen.period) {
        ck_assert_uint_eq(st.lost_events, 0);
    } else {
        printf("# drained: a window of %llu ns between a drain's start and "
               "the next one's end allows losses\n",
               (unsigned long long)seen.max_window);
    }
    ck_assert_uint_le(seen.samples + st.lost_events, max);
    ck_assert_uint_ge(seen.samples + st.lost_events, LOW(count, seen.period));
    ck_assert_uint_eq(st.samples, seen.samples);
    /* 32 KiB / 40 is not whole: with > 819 samples one must have wrapped. */
    ck_assert_uint_ge(st.wrapped, seen.samples > 819 ? 1 : 0);
    vpmu_ring_free(r);
    sampler_close(&s);
}
END_TEST

/*
 * 1 + 1 pages (4 KiB: 102 samples = 4080 bytes), period 100 us, and 40 ms
 * of CPU without draining: ~400 samples, so the kernel fills the ring at
 * head = 4080 and drops the rest (rb->lost).  After one drain the next
 * sample is preceded by PERF_RECORD_LOST (24 bytes) at 4080..4104, across
 * the end of the ring.  Then 3 more rounds of fill and drain.  Each round
 * the LOST count must reach us, and samples + lost must obey the bounds.
 * The task clock samples from an hrtimer: at a 20 us period a VM host
 * whose timers fire every ~45 us gave 0.35-0.44 of count / period, below any
 * bound on what the kernel wrote; at 100 us (as the drained test) it
 * keeps up (0.976 there).
 */
START_TEST(test_kernel_ring_tiny_lost)
{
    Sampler s;
    char why[160];
    VpmuRing *r;
    VpmuRingStats st;
    Seen seen = { .pid = getpid(), .tid = gettid(), .period = 100000 };
    uint64_t count, max, first;

    ck_assert_msg(sampler_open(&s, seen.period, 1, why, sizeof(why)) == 0, "%s", why);
    seen.fd = s.fd;
    ck_assert_int_eq(vpmu_ring_new(s.map, s.map_size, &r), 0);
    ck_assert_int_eq(ioctl(s.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
    burn(40000000, NULL, NULL);
    drain(r, &seen);
    first = seen.samples;
    for (int round = 0; round < 3; round++) {
        burn(40000000, NULL, NULL);
        drain(r, &seen);
    }
    /* 1 ms more (~50 samples, fewer than fit): flushes the last LOST. */
    burn(1000000, NULL, NULL);
    count = sampler_stop(&s);
    drain(r, &seen);
    vpmu_ring_stats(r, &st);
    max = count / seen.period + 1;
    printf("# tiny: task-clock %llu ns, first fill %llu samples, %llu samples + "
           "%llu lost in %llu LOST records = %.3f of at most %llu; %llu "
           "wrapped, %llu throttle\n", (unsigned long long)count,
           (unsigned long long)first, (unsigned long long)seen.samples,
           (unsigned long long)st.lost_events,
           (unsigned long long)st.lost_records,
           (double)(seen.samples + st.lost_events) / (double)max,
           (unsigned long long)max, (unsigned long long)st.wrapped,
           (unsigned long long)st.throttle);
    ck_assert_uint_eq(st.errors, 0);
    if (st.throttle == 0) {
        /* No THROTTLE record took space: floor(4096 / 40) = 102 exactly,
         * and one LOST per refill (3 rounds + the last 1 ms). */
        ck_assert_uint_eq(first, 102);
        ck_assert_uint_eq(st.lost_records, 4);
    }
    ck_assert_uint_ge(st.lost_records, 1);
    ck_assert_uint_gt(st.lost_events, 0);
    ck_assert_uint_ge(st.wrapped, 1);
    ck_assert_uint_le(seen.samples + st.lost_events, max);
    ck_assert_uint_ge(seen.samples + st.lost_events, LOW(count, seen.period));
    vpmu_ring_free(r);
    sampler_close(&s);
}
END_TEST

int main(void)
{
    Sampler probe;
    char why[160];
    Suite *s;
    TCase *tc;

    if (sampler_open(&probe, 100000, 1, why, sizeof(why)) < 0) {
        return skip_suite(why);
    }
    sampler_close(&probe);
    s = suite_create("ringbuf-perf");
    tc = tcase_create("kernel");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_kernel_ring_drained);
    tcase_add_test(tc, test_kernel_ring_tiny_lost);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
