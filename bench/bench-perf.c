/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-perf: the cost of a guest EVTSEL rewrite served by the perf
 * source, with reuse (the host event is parked and taken back with
 * PERF_EVENT_IOC_RESET/_PERIOD/_ENABLE) and without (opts.no_reuse:
 * close + perf_event_open every time), with the real system calls of
 * this host.  PERFEVTSEL0 alternates between cycles and ref-cycles, the
 * way a multiplexing guest rotates events through a counter.  Both runs
 * happen in the same process, one after the other; the ratio is what
 * matters, not the absolute figures.
 *
 * Usage: bench-perf [writes]     (default 20000)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pmu-priv.h"
#include <vpmu/perf.h>

#define EVTSEL0         0x186u      /* IA32_PERFEVTSEL0 (SDM Vol. 4) */
/* IA32_PERFEVTSELx (SDM Vol. 3B Figure 20-6): USR, OS, EN */
#define EOU             ((1ull << 16) | (1ull << 17) | (1ull << 22))
#define EV_CYCLES       0x003Cull   /* SDM Table 20-1 */
#define EV_REF_CYCLES   0x013Cull

typedef struct Result {
    double ns_per_write;
    VpmuPerfStats ps;
} Result;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int run(bool no_reuse, unsigned writes, Result *out)
{
    VpmuPerfSourceOpts o = { .tsc_hz = 2500000000ull, .no_reuse = no_reuse,
                             .exclude_host = true };
    VpmuPmuOpts po = { .source_ops = vpmu_perf_source_ops() };
    VpmuPerfSource *src = NULL;
    VpmuPmu *pmu = NULL;
    VpmuConfig cfg;
    uint64_t t0;
    int r;

    r = vpmu_perf_source_new(&o, &src);
    if (r < 0) {
        goto out;
    }
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.events = vpmu_perf_source_events(src);
    po.source = src;
    r = vpmu_pmu_new(&cfg, &po, &pmu, NULL, 0);
    if (r < 0) {
        goto out;
    }
    t0 = now_ns();
    for (unsigned i = 0; i < writes && r == 0; i++) {
        r = vpmu_pmu_wrmsr(pmu, EVTSEL0,
                           (i & 1 ? EV_REF_CYCLES : EV_CYCLES) | EOU);
    }
    out->ns_per_write = (double)(now_ns() - t0) / writes;
    vpmu_perf_source_stats(src, &out->ps);
    if (out->ps.open_errors || out->ps.ioctl_errors) {
        r = out->ps.last_error ? out->ps.last_error : -EIO;
    }
out:
    vpmu_pmu_free(pmu);
    vpmu_perf_source_free(src);
    return r;
}

int main(int argc, char **argv)
{
    unsigned writes = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20000;
    Result reuse, reopen;
    int r;

    if (!writes) {
        fprintf(stderr, "usage: bench-perf [writes > 0]\n");
        return 2;
    }
    r = run(false, writes, &reuse);
    if (r == 0) {
        r = run(true, writes, &reopen);
    }
    if (r < 0) {
        fprintf(stderr, "bench-perf: perf source failed: %d (%s)\n", r,
                "no perf on this host?");
        return 1;
    }
    printf("bench-perf: %u PERFEVTSEL0 rewrites, cycles <-> ref-cycles, "
           "%s host events\n", writes,
           reuse.ps.hw_pmu ? "hardware" : "task-clock");
    printf("%-22s %12s %16s %10s\n", "mode", "ns/write", "perf_event_open",
           "reuses");
    printf("%-22s %12.0f %16llu %10llu\n", "reuse (parked events)",
           reuse.ns_per_write, (unsigned long long)reuse.ps.opens,
           (unsigned long long)reuse.ps.reuses);
    printf("%-22s %12.0f %16llu %10llu\n", "reopen (no_reuse)",
           reopen.ns_per_write, (unsigned long long)reopen.ps.opens,
           (unsigned long long)reopen.ps.reuses);
    printf("reopen / reuse cost ratio: %.2fx\n",
           reopen.ns_per_write / reuse.ns_per_write);
    return 0;
}
