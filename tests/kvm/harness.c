/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kvm-harness: runs tests/kvm's payload under the real /dev/kvm with
 * vpmu serving the PMU MSRs through vpmu_kvm, and prints TAP.
 *
 *   kvm-harness [--vendor=intel|amd] [--source=fake|perf] PAYLOAD.bin
 *
 * Exit: 0 all checks passed; 1 a check failed or the guest went wrong.
 * Without /dev/kvm, a KVM capability or the perf source, it skips as a
 * whole: "1..0 # SKIP <why>" and exit 0 (meson's TAP runner calls any
 * other status an error, 77 included).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "harness.h"

#define WATCHDOG_SEC    60

static int skip(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    return EXIT_SUCCESS;
}

static int parse_args(int argc, char **argv, HarnessOpts *o)
{
    memset(o, 0, sizeof(*o));
    o->vendor = VPMU_VENDOR_INTEL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vendor=intel")) {
            o->vendor = VPMU_VENDOR_INTEL;
        } else if (!strcmp(argv[i], "--vendor=amd")) {
            o->vendor = VPMU_VENDOR_AMD;
        } else if (!strcmp(argv[i], "--source=fake")) {
            o->perf = false;
        } else if (!strcmp(argv[i], "--source=perf")) {
            o->perf = true;
        } else if (argv[i][0] != '-' && !o->payload) {
            o->payload = argv[i];
        } else {
            fprintf(stderr, "kvm-harness: bad argument '%s'\n", argv[i]);
            return -EINVAL;
        }
    }
    if (!o->payload) {
        fprintf(stderr, "usage: kvm-harness [--vendor=intel|amd] "
                "[--source=fake|perf] PAYLOAD.bin\n");
        return -EINVAL;
    }
    return 0;
}

static void on_alarm(int sig)
{
    harness_timed_out = 1;
}

int main(int argc, char **argv)
{
    struct sigaction sa = { .sa_handler = on_alarm };
    HarnessOpts o;
    Harness h;
    char err[256] = "";
    const char *wd;
    int ret;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv, &o) < 0) {
        return 2;
    }
    /* No SA_RESTART: the alarm knocks the vCPU out of KVM_RUN (-EINTR). */
    sigaction(SIGALRM, &sa, NULL);
    /* KVM_HARNESS_WATCHDOG=seconds overrides the watchdog (debugging). */
    wd = getenv("KVM_HARNESS_WATCHDOG");
    alarm(wd ? (unsigned)atoi(wd) : WATCHDOG_SEC);
    ret = harness_open(&h, &o, err, sizeof(err));
    if (ret == -ENODEV || ret == -EOPNOTSUPP || ret == -ENOTSUP) {
        harness_close(&h);
        return skip(err);
    }
    if (ret < 0) {
        printf("Bail out! %s\n", err);
        harness_close(&h);
        return 1;
    }
    ret = harness_run(&h);
    harness_close(&h);
    return ret < 0 ? 1 : 0;
}
