/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The harness core: see harness.h. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <linux/perf_event.h>

#include "harness.h"
#include "proto.h"

#include <vpmu/perf.h>

volatile sig_atomic_t harness_timed_out;
/* For the overflow signal handler: make the next KVM_RUN return at once. */
static struct kvm_run *volatile signal_run;

static void harness_log(void *opaque, const char *msg)
{
    printf("# vpmu: %s\n", msg);
}

/*
 * The vCPU thread's task-clock: the very clock the perf source scales to
 * cycles.  CLOCK_THREAD_CPUTIME_ID is not: it excludes steal time, which
 * on this nested host is a third of the runtime when the cores are busy.
 */
static int task_clock_open(void)
{
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE,
        .size = sizeof(attr),
        .config = PERF_COUNT_SW_TASK_CLOCK,
    };

    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

static int64_t thread_ns(Harness *h)
{
    struct timespec ts;
    uint64_t v;

    if (h->task_clock_fd >= 0 &&
        read(h->task_clock_fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
        return (int64_t)v;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_overflow_signal(int sig)
{
    /*
     * The signal may land while the thread handles an exit: without
     * immediate_exit the next KVM_RUN would run the guest on, and a guest
     * that spins without exits would never get its PMI.
     */
    if (signal_run) {
        signal_run->immediate_exit = 1;
    }
}

static int open_perf(Harness *h, VpmuConfig *cfg, char *err, size_t errlen)
{
    struct sigaction sa = { .sa_handler = on_overflow_signal };
    VpmuPerfSourceOpts po = {
        .exclude_host = true,
        .guest_vendor = cfg->vendor,
        .tsc_hz = HARNESS_TSC_HZ,
        .notify_signal = SIGRTMIN + 1,
        .log = harness_log,
    };
    VpmuPerfSource *src = NULL;
    int ret;

    sigaction(SIGRTMIN + 1, &sa, NULL);     /* no SA_RESTART: -EINTR */
    ret = vpmu_perf_source_new(&po, &src);
    if (ret < 0) {
        snprintf(err, errlen, "perf source unavailable: %s", strerror(-ret));
        return -EOPNOTSUPP;
    }
    cfg->events = vpmu_perf_source_events(src);
    cfg->raw_events = vpmu_perf_source_raw_events(src);
    h->perf = src;
    if (!(cfg->events & VPMU_EVENT_BIT(VPMU_EVENT_CYCLES))) {
        snprintf(err, errlen, "perf source unavailable: it cannot back cycles");
        return -EOPNOTSUPP;
    }
    return 0;
}

static const VpmuSourceOps *source_ops(Harness *h, void **src)
{
    if (h->perf) {
        *src = h->perf;
        return vpmu_perf_source_ops();
    }
    *src = h->fake;
    return vpmu_fake_source_ops();
}

int harness_open(Harness *h, const HarnessOpts *o, char *err, size_t errlen)
{
    VpmuConfig cfg;
    VpmuKvmOpts ko = { 0 };
    int ret;

    memset(h, 0, sizeof(*h));
    h->o = *o;
    h->task_clock_fd = task_clock_open();
    h->vmm.kvm_fd = h->vmm.vm_fd = h->vmm.vcpu_fd = -1;
    vpmu_config_init(&cfg, o->vendor);
    ret = o->perf ? open_perf(h, &cfg, err, errlen) : vpmu_fake_source_new(&h->fake);
    if (ret < 0) {
        return ret;
    }
    ret = vmm_open(&h->vmm, &cfg, err, errlen);
    if (ret < 0) {
        return ret;
    }
    ko.vm_fd = h->vmm.vm_fd;
    ko.vcpu_fd = h->vmm.vcpu_fd;
    ko.cfg = &cfg;
    ko.source_ops = source_ops(h, &ko.source);
    ko.log = harness_log;
    ret = vpmu_kvm_new(&ko, &h->kvm, err, errlen);
    if (ret == 0) {
        ret = vmm_setup(&h->vmm, h->kvm, err, errlen);
    }
    if (ret == 0) {
        ret = vmm_load(&h->vmm, o->payload, err, errlen);
    }
    signal_run = h->vmm.run;
    return ret;
}

void harness_close(Harness *h)
{
    signal_run = NULL;
    if (h->task_clock_fd >= 0) {
        close(h->task_clock_fd);
        h->task_clock_fd = -1;
    }
    vpmu_kvm_free(h->kvm);
    h->kvm = NULL;
    vmm_close(&h->vmm);
    vpmu_fake_source_free(h->fake);
    h->fake = NULL;
    vpmu_perf_source_free(h->perf);
    h->perf = NULL;
}

static void tap(Harness *h, bool pass, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void tap(Harness *h, bool pass, const char *name, const char *fmt, ...)
{
    char note[160] = "";
    va_list ap;

    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(note, sizeof(note), fmt, ap);
        va_end(ap);
    }
    h->tests++;
    h->failed += !pass;
    printf("%sok %u - %s%s%s\n", pass ? "" : "not ", h->tests, name,
           note[0] ? " # " : "", note);
}

/*
 * Cycles between the two counter reads of the payload.  Each read happens
 * inside its MSR exit, whose task-clock time the harness recorded:
 * read0 in [first.start, first.start + first.dur], read1 likewise in
 * `last`.  The source scales the same task-clock, so
 * cycles = tsc_hz x (read1 - read0) lies in
 *   [tsc (last.start - first.start - first.dur),
 *    tsc (last.start + last.dur - first.start)].
 * The bracket is tight (its width is two exit handlings, microseconds);
 * 0.5% more on each side covers a source that honours exclude_host for a
 * software event: the only host time in the window is then the timer
 * ticks of the spinning vCPU (250 Hz x a few us, about 0.1%).
 */
static void check_cycles(Harness *h, const ProtoMbox *m)
{
    double tsc_per_ns = HARNESS_TSC_HZ / 1e9;
    double lo = tsc_per_ns * (double)(h->last.start_ns - h->first.start_ns -
                                      h->first.dur_ns) * 0.995;
    double hi = tsc_per_ns * (double)(h->last.start_ns + h->last.dur_ns -
                                      h->first.start_ns) * 1.005;
    double got = (double)m->a;

    tap(h, got >= lo && got <= hi && lo > 0, m->name,
        "%" PRIu64 " cycles in [%.0f, %.0f]", m->a, lo, hi);
}

static void query(Harness *h, ProtoMbox *m)
{
    VpmuKvmStats st;

    vpmu_kvm_stats(h->kvm, &st);
    m->a = h->msr_exits;
    m->b = (st.kvm_pmu ? PROTO_F_KVM_PMU : 0) | (h->perf ? PROTO_F_PERF : 0) |
           (h->o.vendor == VPMU_VENDOR_AMD ? PROTO_F_AMD : 0);
    m->c = (st.pmi_nmi & 0xFFFF) | (st.pmi_fixed & 0xFFFF) << 16 |
           (st.pmi_masked & 0xFFFF) << 32;
    m->d = HARNESS_TSC_HZ / 1000;
}

static void mailbox(Harness *h, uint32_t gpa)
{
    ProtoMbox *m = vmm_guest_ptr(&h->vmm, gpa, sizeof(*m));

    if (!m) {
        tap(h, false, "mailbox inside guest RAM", "gpa 0x%x", gpa);
        h->done = true;
        return;
    }
    m->name[sizeof(m->name) - 1] = 0;
    m->why[sizeof(m->why) - 1] = 0;
    switch (m->cmd) {
    case PROTO_CHECK:
        tap(h, m->arg != 0, m->name, m->arg ? NULL :
            "got 0x%" PRIx64 " expected 0x%" PRIx64, m->a, m->b);
        break;
    case PROTO_SKIP:
        printf("ok %u - %s # SKIP %s\n", ++h->tests, m->name, m->why);
        break;
    case PROTO_QUERY:
        query(h, m);
        break;
    case PROTO_FEED:
        if (!h->fake) {
            tap(h, false, "PROTO_FEED needs the fake source", NULL);
        } else {
            vpmu_fake_source_run(h->fake, (VpmuArchEvent)m->arg, 0, 0, m->a);
        }
        break;
    case PROTO_CLOCK:
        h->want_first = m->arg == 0;
        break;
    case PROTO_CHECK_CYCLES:
        check_cycles(h, m);
        break;
    case PROTO_MARK:
        if (h->mark) {
            h->mark(h->mark_ctx, m->arg);
        }
        break;
    case PROTO_DONE:
        h->done = true;
        break;
    default:
        tap(h, false, "known mailbox command", "cmd %u", m->cmd);
        h->done = true;
    }
}

static void handle_io(Harness *h, struct kvm_run *run)
{
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    uint32_t v = 0;

    if (run->io.direction != KVM_EXIT_IO_OUT) {
        return;     /* reads of unknown ports see whatever KVM left */
    }
    memcpy(&v, data, run->io.size < 4 ? run->io.size : 4);
    if (run->io.port == PROTO_PORT_TEXT) {
        /* Guest text becomes TAP comment lines. */
        if (!h->text_mid_line) {
            fputs("# guest: ", stdout);
        }
        putchar((int)(v & 0xFF));
        h->text_mid_line = (v & 0xFF) != '\n';
    } else if (run->io.port == PROTO_PORT_MBOX && run->io.size == 4) {
        mailbox(h, v);
    }
}

static void handle_msr(Harness *h, struct kvm_run *run)
{
    int64_t t = thread_ns(h);
    uint64_t val = run->msr.data;
    int ret = run->exit_reason == KVM_EXIT_X86_RDMSR
              ? vpmu_kvm_rdmsr(h->kvm, run->msr.index, &val)
              : vpmu_kvm_wrmsr(h->kvm, run->msr.index, val);

    h->msr_exits++;
    if (ret == -ENOENT) {
        /* The filter only routes vpmu's MSRs: this is a bug, but no abort. */
        printf("# unexpected MSR exit 0x%x: #GP\n", run->msr.index);
        h->failed++;
    }
    /* -EINVAL: the guest's #GP, as hardware gives it. */
    run->msr.error = ret < 0;
    run->msr.data = val;
    h->last.start_ns = t;
    h->last.dur_ns = thread_ns(h) - t;
    if (h->want_first) {
        h->want_first = false;
        h->first = h->last;
    }
}

static void dump_internal(Harness *h, struct kvm_run *run)
{
    struct kvm_regs regs;

    for (uint32_t i = 0; i < run->internal.ndata && i < 16; i++) {
        printf("# internal.data[%u] = 0x%llx\n", i,
               (unsigned long long)run->internal.data[i]);
    }
    if (ioctl(h->vmm.vcpu_fd, KVM_GET_REGS, &regs) == 0) {
        printf("# rip 0x%llx rsp 0x%llx\n", (unsigned long long)regs.rip,
               (unsigned long long)regs.rsp);
    }
}

/* Exits other than MSR and I/O end the run: return false. */
static bool handle_exit(Harness *h, struct kvm_run *run)
{
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        handle_io(h, run);
        return true;
    case KVM_EXIT_X86_RDMSR:
    case KVM_EXIT_X86_WRMSR:
        handle_msr(h, run);
        return true;
    case KVM_EXIT_INTR:
        return true;
    case KVM_EXIT_INTERNAL_ERROR:
        dump_internal(h, run);
        tap(h, false, "the guest runs to PROTO_DONE",
            "KVM internal error, suberror %u", run->internal.suberror);
        return false;
    default:
        tap(h, false, "the guest runs to PROTO_DONE",
            "exit reason %u", run->exit_reason);
        return false;
    }
}

int harness_run(Harness *h)
{
    struct kvm_run *run = h->vmm.run;

    while (!h->done) {
        int r = ioctl(h->vmm.vcpu_fd, KVM_RUN, 0);

        run->immediate_exit = 0;
        h->runs++;
        h->eintr += r < 0 && errno == EINTR;
        if (harness_timed_out) {
            tap(h, false, "the guest finishes within the watchdog",
                "%" PRIu64 " KVM_RUNs, %" PRIu64 " -EINTR, %" PRIu64
                " MSR exits", h->runs, h->eintr, h->msr_exits);
            break;
        }
        if (r < 0 && errno != EINTR && errno != EAGAIN) {
            tap(h, false, "KVM_RUN", "%s", strerror(errno));
            break;
        }
        if (r == 0 && !handle_exit(h, run)) {
            break;
        }
        if (h->perf) {
            vpmu_perf_source_service(h->perf);
        }
        vpmu_kvm_service(h->kvm);
    }
    printf("1..%u\n", h->tests);
    return h->failed || !h->done ? -1 : 0;
}
