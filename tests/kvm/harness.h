/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness core, shared by kvm-harness and bench-kvm: a Vmm whose PMU
 * MSR exits go through vpmu_kvm, a counting source (fake or perf), and
 * the payload protocol of proto.h (TAP lines for checks).
 */
#ifndef VPMU_TESTS_KVM_HARNESS_H
#define VPMU_TESTS_KVM_HARNESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <vpmu/kvm.h>

#include "vmm.h"

#define HARNESS_TSC_HZ  1000000000ull   /* guest TSC rate for task-clock */

typedef struct HarnessOpts {
    VpmuVendor vendor;
    bool perf;                  /* the perf source instead of the fake one */
    const char *payload;
} HarnessOpts;

/* bench: called on every PROTO_MARK with its arg. */
typedef void (*HarnessMarkFn)(void *ctx, uint32_t kind);

/* Thread CPU time around one MSR exit, for the cycles check. */
typedef struct HarnessExitTime {
    int64_t start_ns, dur_ns;
} HarnessExitTime;

typedef struct Harness {
    HarnessOpts o;
    Vmm vmm;
    VpmuKvm *kvm;
    VpmuFakeSource *fake;
    void *perf;                 /* VpmuPerfSource when built with it */
    uint64_t msr_exits;         /* every MSR exit, served or not */
    uint64_t runs, eintr;       /* KVM_RUN calls, and those cut by a signal */
    unsigned tests, failed;
    bool done;
    bool text_mid_line;         /* guest text: inside a line */
    int task_clock_fd;          /* this thread's task-clock, or -1 */
    bool want_first;            /* PROTO_CLOCK 0 seen: time the next exit */
    HarnessExitTime first, last;
    HarnessMarkFn mark;
    void *mark_ctx;
} Harness;

extern volatile sig_atomic_t harness_timed_out;

/*
 * harness_open() - source, VM, vpmu_kvm, CPUID, payload.
 * Return: 0; -ENODEV / -EOPNOTSUPP (no KVM or a capability, or no perf
 * source: SKIP, reason in @err); another -errno with @err.
 * harness_close() must be called in every case.
 */
int harness_open(Harness *h, const HarnessOpts *o, char *err, size_t errlen);

/* harness_run() - run to PROTO_DONE.  Return 0, or -1 if anything failed. */
int harness_run(Harness *h);

void harness_close(Harness *h);

#endif /* VPMU_TESTS_KVM_HARNESS_H */
