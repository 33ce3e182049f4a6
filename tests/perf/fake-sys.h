/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake VpmuPerfSys for the perf source tests: it simulates a host with
 * (or without) a hardware PMU, hands out fd numbers from FAKE_FD_BASE,
 * counts every perf_event_open call, keeps each event's attr, enable
 * state, count and times, checks that every fd is closed exactly once,
 * and fails the next call at a chosen site with a chosen errno.
 */
#ifndef VPMU_TEST_FAKE_SYS_H
#define VPMU_TEST_FAKE_SYS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vpmu/perf.h>

#define FAKE_FD_BASE    1000
#define FAKE_MAX_FDS    256

typedef struct FakeFd {
    bool open;
    unsigned long open_flags;       /* perf_event_open's, and vpmu's own */
    unsigned closes;
    struct perf_event_attr attr;    /* sample_period follows IOC_PERIOD */
    bool enabled;
    uint64_t value, time_enabled, time_running;
    int sig;                        /* F_SETSIG */
    pid_t owner;                    /* F_SETOWN_EX, F_OWNER_TID */
    bool async;                     /* F_SETFL O_ASYNC */
    bool error_state;               /* pinned and lost: read() returns 0 */
    unsigned resets, periods;
    unsigned enables, disables;     /* IOC_ENABLE / IOC_DISABLE calls */
    unsigned reads;                 /* read() calls */
} FakeFd;

/* Where a failure can be injected. */
typedef enum FakeSite {
    FAKE_OPEN, FAKE_FCNTL, FAKE_ENABLE, FAKE_DISABLE, FAKE_PERIOD,
    FAKE_RESET, FAKE_READ, FAKE_SITE__COUNT,
} FakeSite;

typedef struct FakeSys {
    VpmuPerfSys sys;
    bool hw;                        /* a hardware PMU: HARDWARE/RAW open */
    FakeFd fds[FAKE_MAX_FDS];
    unsigned nfds;
    unsigned open_calls;            /* perf_event_open calls, all */
    int fail[FAKE_SITE__COUNT];     /* -errno for the next call there */
    int open_always;                /* -errno for every open (no perf) */
    /* -errno for every hardware or raw open that counts guests
       (exclude_guest = 0): KVM's mediated vPMU, a mediated VM running. */
    int refuse_guest;
    unsigned bad_calls;             /* unknown/closed fd, double close */
    /* Multiplexing: the event runs run_num/run_den of its enabled time. */
    uint64_t run_num, run_den;
    /*
     * The thread is in host mode (a VM exit): an exclude_host event's
     * times go on while it counts nothing, as the kernel's do.
     */
    bool host_mode;
} FakeSys;

void fake_sys_init(FakeSys *f, bool hw);
/* @n events (ns for the task clock) on every enabled fd of type/config. */
void fake_sys_run(FakeSys *f, uint32_t type, uint64_t config, uint64_t n);
FakeFd *fake_sys_fd(FakeSys *f, int fd);
FakeFd *fake_sys_last(FakeSys *f);
unsigned fake_sys_open_fds(const FakeSys *f);
/* Every fd ever opened was closed exactly once, nothing misused. */
bool fake_sys_all_closed_once(const FakeSys *f);

#endif
