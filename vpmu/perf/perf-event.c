/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One host perf event of the perf counting source: how a guest counter's
 * request becomes a perf_event_attr, the system calls (every one through
 * VpmuPerfSys, so that a privileged helper or a test can stand in), and
 * how a read(2) becomes a guest count (multiplex scaling, the task-clock
 * fallback's ns -> ticks conversion, the pinned error state).
 */
#include "perf-priv.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Architectural event -> the host's generic hardware event
 * (include/uapi/linux/perf_event.h, enum perf_hw_id).  Topdown Slots has
 * no generic event: it is never offered.
 */
static const struct {
    bool valid;
    uint64_t config;
} hw_generic[VPMU_EVENT__COUNT] = {
    [VPMU_EVENT_CYCLES] = { true, PERF_COUNT_HW_CPU_CYCLES },
    [VPMU_EVENT_INSTRUCTIONS] = { true, PERF_COUNT_HW_INSTRUCTIONS },
    [VPMU_EVENT_REF_CYCLES] = { true, PERF_COUNT_HW_REF_CPU_CYCLES },
    [VPMU_EVENT_LLC_REFERENCES] = { true, PERF_COUNT_HW_CACHE_REFERENCES },
    [VPMU_EVENT_LLC_MISSES] = { true, PERF_COUNT_HW_CACHE_MISSES },
    [VPMU_EVENT_BRANCHES] = { true, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
    [VPMU_EVENT_BRANCH_MISSES] = { true, PERF_COUNT_HW_BRANCH_MISSES },
};

_Static_assert(sizeof(VpmuPerfReading) == 3 * sizeof(uint64_t),
               "read(2) layout: value, time_enabled, time_running");

/* --- system calls --------------------------------------------------- */

int vpmu_perf_sys_open(VpmuPerfSource *src, struct perf_event_attr *pattr,
                       unsigned long kind)
{
    /* The fd must not leak into a child the front end may exec. */
    unsigned long flags = PERF_FLAG_FD_CLOEXEC;
    long r;

    src->stats.sys_opens++;
    if (src->sys.open) {
        return src->sys.open(src->sys.ctx, pattr, src->tid, -1, -1,
                             flags | kind);
    }
    r = syscall(SYS_perf_event_open, pattr, src->tid, -1, -1, flags);
    return r < 0 ? -errno : (int)r;
}

int vpmu_perf_sys_ioctl(VpmuPerfSource *src, int fd, unsigned long req,
                        unsigned long arg)
{
    int r;

    src->stats.sys_ioctls++;
    if (src->sys.ioctl) {
        return src->sys.ioctl(src->sys.ctx, fd, req, arg);
    }
    r = ioctl(fd, req, arg);
    return r < 0 ? -errno : r;
}

static ssize_t sys_read(VpmuPerfSource *src, int fd, void *buf, size_t len)
{
    ssize_t r;

    src->stats.sys_reads++;
    if (src->sys.read) {
        return src->sys.read(src->sys.ctx, fd, buf, len);
    }
    r = read(fd, buf, len);
    return r < 0 ? -errno : r;
}

static int sys_fcntl(VpmuPerfSource *src, int fd, int cmd, unsigned long arg)
{
    int r;

    src->stats.sys_fcntls++;
    if (src->sys.fcntl) {
        return src->sys.fcntl(src->sys.ctx, fd, cmd, arg);
    }
    r = fcntl(fd, cmd, arg);
    return r < 0 ? -errno : r;
}

void vpmu_perf_sys_close(VpmuPerfSource *src, int fd)
{
    /* close(2) releases the fd even when it reports an error. */
    src->stats.sys_closes++;
    if (src->sys.close) {
        src->sys.close(src->sys.ctx, fd);
    } else {
        close(fd);
    }
}

/*
 * The host probe's answer (include/vpmu/host.h): Hygon's PMU is AMD's.
 * Asked once: vpmu-helper asks for every event it checks, and each CPUID
 * of the probe is an exit when the host is itself a VM.  Threads that
 * race store the same answer.
 */
VpmuVendor vpmu_perf_host_vendor(void)
{
    static const VpmuHostProbeInput cpu_only = {
        .kvm_from = VPMU_HOST_KVM_SKIP, .skip_mediated = true,
    };
    static _Atomic int vendor = -1;
    int v = atomic_load_explicit(&vendor, memory_order_relaxed);
    VpmuHostProbe p;

    if (v < 0) {
        v = vpmu_host_probe(&cpu_only, &p) == 0 ? (int)p.pmu_vendor : 0;
        atomic_store_explicit(&vendor, v, memory_order_relaxed);
    }
    return (VpmuVendor)v;
}

/* Count a failed system call; returns @err for "return vpmu_perf_fail()". */
int vpmu_perf_fail(VpmuPerfSource *src, bool open, int err)
{
    if (open) {
        src->stats.open_errors++;
    } else {
        src->stats.ioctl_errors++;
    }
    src->stats.last_error = err;
    vpmu_logf_once(&src->log, VPMU_PERF_LOG_ERROR,
                   "vpmu-perf: host %s failed: %s; the guest counter stops "
                   "counting (further failures are only counted)",
                   open ? "perf_event_open" : "event I/O", strerror(-err));
    return err;
}

/* --- unit conversions for the task-clock fallback --------------------- */

/*
 * floor(ns * hz / 1e9) without a 128-bit product: split ns into whole
 * seconds and the rest; (ns % 1e9) * hz < 1e9 * VPMU_PERF_TSC_HZ_MAX fits.
 */
uint64_t vpmu_perf_ns_to_ticks(uint64_t ns, uint64_t hz)
{
    return (ns / VPMU_NS_PER_SEC) * hz +
           (ns % VPMU_NS_PER_SEC) * hz / VPMU_NS_PER_SEC;
}

/* ceil(ticks * 1e9 / hz), split the same way (ticks % hz < hz). */
uint64_t vpmu_perf_ticks_to_ns(uint64_t ticks, uint64_t hz)
{
    uint64_t rem = (ticks % hz) * VPMU_NS_PER_SEC;

    return (ticks / hz) * VPMU_NS_PER_SEC + rem / hz + (rem % hz != 0);
}

/*
 * The host sample period for a guest period.  The fallback rounds the
 * period up to whole ns and the count down to whole ticks, so the guest
 * overflow is never early; perf_event_attr.sample_period must not have
 * bit 63 set (the kernel refuses it), a 48-bit guest period never has.
 */
uint64_t vpmu_perf_host_period(const VpmuPerfSource *src, bool clock,
                               uint64_t guest_period)
{
    if (!clock) {
        return guest_period;
    }
    return vpmu_perf_ticks_to_ns(guest_period, src->opts.tsc_hz);
}

/* --- the perf_event_attr ------------------------------------------------ */

static int attr_event(const VpmuPerfSource *src, const VpmuSourceAttr *a,
                      struct perf_event_attr *out)
{
    if (src->clock_only) {
        /* Only cycles and ref-cycles: the thread's CPU time at tsc_hz. */
        if ((a->event != VPMU_EVENT_CYCLES &&
             a->event != VPMU_EVENT_REF_CYCLES) ||
            (a->raw_config & VPMU_RAW_MODIFIERS)) {
            return -EOPNOTSUPP;
        }
        out->type = PERF_TYPE_SOFTWARE;
        out->config = PERF_COUNT_SW_TASK_CLOCK;
        return 0;
    }
    if (a->event == VPMU_EVENT_RAW) {
        /*
         * The guest's encoding is the host's PERF_TYPE_RAW config only on
         * the same vendor (Intel PERFEVTSEL / AMD PERF_CTL, bits 35:32 =
         * AMD EventSelect[11:8] included); EDGE/INV/CMASK go along.
         */
        if (!vpmu_perf_source_raw_events(src)) {
            return -EOPNOTSUPP;
        }
        out->type = PERF_TYPE_RAW;
        out->config = a->raw_config;
        return 0;
    }
    /* A generic event cannot carry EDGE/INV/CMASK. */
    if (a->event >= VPMU_EVENT__COUNT || !hw_generic[a->event].valid ||
        (a->raw_config & VPMU_RAW_MODIFIERS)) {
        return -EOPNOTSUPP;
    }
    out->type = PERF_TYPE_HARDWARE;
    out->config = hw_generic[a->event].config;
    return 0;
}

int vpmu_perf_build_attr(const VpmuPerfSource *src, const VpmuSourceAttr *a,
                         struct perf_event_attr *out)
{
    int r;

    /* Zeroed whole (padding too): vpmu_perf_same_key() compares bytes. */
    memset(out, 0, sizeof(*out));
    /*
     * The guest's own host/guest split (AMD HostOnly/GuestOnly of a nested
     * hypervisor) has no perf_event_attr field: exclude_host/exclude_guest
     * speak of *this* host.
     */
    if (!a->count_host || !a->count_guest) {
        return -EOPNOTSUPP;
    }
    r = attr_event(src, a, out);
    if (r < 0) {
        return r;
    }
    out->size = sizeof(*out);
    out->disabled = 1;
    /*
     * The host operator's events are never pinned: where the guest's
     * are, the host's scheduler then gives the guest's the counters
     * first whatever else counts on the host.
     */
    out->pinned = src->opts.pinned &&
                  a->counter_id < VPMU_OPERATOR_COUNTER_ID(0);
    out->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                       PERF_FORMAT_TOTAL_TIME_RUNNING;
    out->sample_period = vpmu_perf_host_period(src, src->clock_only,
                                               a->sample_period);
    if (!src->clock_only) {
        /*
         * USR/OS are guest CPLs: with exclude_host the host PMU applies
         * them to the guest.  The task clock cannot tell guest from host
         * mode (it counts the thread's CPU time), so the fallback sets
         * neither: its sampling would test the *host* mode of the
         * interrupted context, and a vCPU in KVM_RUN is in host kernel.
         */
        out->exclude_user = !a->count_user;
        out->exclude_kernel = !a->count_kernel;
        out->exclude_hv = 1;
        out->exclude_host = src->opts.exclude_host;
    }
    return 0;
}

/* The guest event behind a host event type/config, the inverse of attr_event(). */
static int attr_guest_event(const struct perf_event_attr *attr,
                            VpmuPerfAttrInfo *out)
{
    if (attr->type == PERF_TYPE_SOFTWARE &&
        attr->config == PERF_COUNT_SW_TASK_CLOCK) {
        out->clock = true;
        out->event = VPMU_EVENT_CYCLES;
        return 0;
    }
    if (attr->type == PERF_TYPE_RAW) {
        out->event = VPMU_EVENT_RAW;
        out->raw_config = attr->config;
        return 0;
    }
    for (unsigned e = 0; attr->type == PERF_TYPE_HARDWARE &&
                         e < VPMU_EVENT__COUNT; e++) {
        if (hw_generic[e].valid && hw_generic[e].config == attr->config) {
            out->event = e;
            return 0;
        }
    }
    return -EINVAL;
}

int vpmu_perf_attr_parse(const struct perf_event_attr *attr,
                         VpmuPerfAttrInfo *out)
{
    /* A source that would build it: raw events on, periods 1:1. */
    VpmuPerfSource src = {
        .opts = { .tsc_hz = VPMU_NS_PER_SEC, .guest_vendor = VPMU_VENDOR_AMD },
        .host_vendor = VPMU_VENDOR_AMD,
        .stats = { .hw_pmu = true },
    };
    VpmuSourceAttr a = { .count_host = true, .count_guest = true };
    struct perf_event_attr want;

    memset(out, 0, sizeof(*out));
    if (!attr || attr->size != sizeof(*attr) ||
        attr_guest_event(attr, out) < 0) {
        return -EINVAL;
    }
    src.clock_only = out->clock;
    src.opts.pinned = attr->pinned;
    src.opts.exclude_host = attr->exclude_host;
    a.event = out->event;
    a.raw_config = out->raw_config;
    a.count_user = out->clock || !attr->exclude_user;
    a.count_kernel = out->clock || !attr->exclude_kernel;
    a.sample_period = attr->sample_period;
    /* Rebuilt from what it claims to be, it must come out the same. */
    if (vpmu_perf_build_attr(&src, &a, &want) < 0 ||
        memcmp(&want, attr, sizeof(want)) != 0) {
        return -EINVAL;
    }
    out->count_user = a.count_user;
    out->count_kernel = a.count_kernel;
    out->exclude_host = attr->exclude_host;
    out->pinned = attr->pinned;
    return 0;
}

/* Everything that went into the attr except the period decides reuse. */
bool vpmu_perf_same_key(const struct perf_event_attr *a,
                        const struct perf_event_attr *b)
{
    struct perf_event_attr x = *a, y = *b;

    x.sample_period = 0;
    y.sample_period = 0;
    return memcmp(&x, &y, sizeof(x)) == 0;
}

/* --- open and read ------------------------------------------------------ */

/*
 * Overflow signal to the vCPU thread: F_SETSIG and the owner first, so
 * that no overflow can send SIGIO to the process before O_ASYNC is
 * pointed at the right thread (fcntl(2), "Managing signals").
 */
static int event_notify(VpmuPerfSource *src, int fd)
{
    struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = src->tid };
    int r;

    r = sys_fcntl(src, fd, F_SETSIG, (unsigned long)src->opts.notify_signal);
    if (r >= 0) {
        r = sys_fcntl(src, fd, F_SETOWN_EX, (unsigned long)&owner);
    }
    if (r >= 0) {
        r = sys_fcntl(src, fd, F_SETFL, O_ASYNC);
    }
    return r < 0 ? r : 0;
}

int vpmu_perf_event_open(VpmuPerfSource *src, struct perf_event_attr *pattr,
                         unsigned long kind, int *fd)
{
    int r = vpmu_perf_sys_open(src, pattr, kind);

    if (r < 0) {
        return vpmu_perf_fail(src, true, r);
    }
    *fd = r;
    src->stats.opens++;
    /* The operator's events never overflow (operator.c): no signal. */
    if (src->opts.notify_signal && kind != VPMU_PERF_OPEN_OPERATOR) {
        r = event_notify(src, *fd);
        if (r < 0) {
            vpmu_perf_sys_close(src, *fd);
            src->stats.releases++;
            *fd = -1;
            return vpmu_perf_fail(src, false, r);
        }
    }
    return 0;
}

/*
 * v scaled by e / r, in 128 bits: v * e overflows 64 bits easily.  A
 * result past 64 bits (r tiny against e, v large: no host counts that)
 * saturates rather than wraps.
 */
static uint64_t scale(uint64_t v, uint64_t e, uint64_t r)
{
    unsigned __int128 x = (unsigned __int128)v * e / r;

    return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

/* The event is in error state: the host could not keep a pinned event. */
static int event_pinned_failure(VpmuPerfSource *src, VpmuSourceHandle *h)
{
    src->stats.pinned_failures++;
    vpmu_logf_once(&src->log, VPMU_PERF_LOG_PINNED,
                   "vpmu-perf: the host could not keep pinned event (type "
                   "%u config 0x%llx) of guest counter 0x%x on its PMU; "
                   "that counter stops counting", h->pattr.type,
                   (unsigned long long)h->pattr.config, h->attr.counter_id);
    h->error = -EBUSY;
    return -EBUSY;
}

/*
 * Scaled (opts.multiplex): what the host counted since the last read,
 * @dv over @de ns enabled and @dr running, becomes the guest's share of
 * perf's own estimate, count * time_enabled / time_running, over the
 * guest counter's enabled span (h->span: every interval read since the
 * guest last turned the counter on; vpmu_perf_span_start()).
 *
 * Not each interval by its own times: a guest that reads more often than
 * the host rotates (perf_event_mux_interval_ms) cuts the span into
 * intervals that ran wholly (nothing to scale) or not at all (no rate to
 * scale), and the estimate would tend to the raw count as the reads get
 * denser.  Carrying an unrun interval's time to the next interval that
 * ran is no better: with exclude_host that one may be only the exit the
 * rotation happened in, which counts nothing.  Not over more than one
 * span either: the guest measures across its enables (Linux turns a
 * counter off at every context switch and at the end of each perf
 * event), and an earlier span that never ran (full contention) would
 * have its time scaled by a later one's rate, into the later
 * measurement.
 *
 * The guest counter never goes back (the core folds deltas): an estimate
 * below what the span credited already (the rate fell) credits nothing
 * until the estimate passes it, so the guest reads the largest estimate
 * so far and nothing twice.  Return: what to credit.
 */
static uint64_t scaled_credit(VpmuPerfSource *src, VpmuSourceHandle *h,
                              uint64_t dv, uint64_t de, uint64_t dr)
{
    VpmuPerfReading *s = &h->span;
    uint64_t est, credit;

    s->value += dv;
    s->time_enabled += de;
    s->time_running += dr;
    est = s->time_running ? scale(s->value, s->time_enabled,
                                  s->time_running) : 0;
    credit = est > h->span_credit ? est - h->span_credit : 0;
    h->span_credit += credit;
    /* The KVM front end's catch-up must know the credit is no count. */
    src->stats.scaled_reads += credit != dv;
    return credit;
}

/* A new enabled span: the guest counter went on, or a new host event. */
void vpmu_perf_span_start(VpmuSourceHandle *h)
{
    h->span = (VpmuPerfReading){ 0 };
    h->span_credit = 0;
}

/*
 * Read the event and advance h->count, if the guest counter is on: by
 * what the host counted (raw) or by scaled_credit() (scaled).
 */
int vpmu_perf_event_read(VpmuPerfSource *src, VpmuSourceHandle *h)
{
    VpmuPerfReading now;
    uint64_t dv, de, dr;
    ssize_t n;

    if (h->error) {
        return h->error;
    }
    /*
     * Read already in this exit (no return to the guest since, tick()):
     * an exclude_host event has counted nothing since.  The core folds
     * before it disables, an update reads before an enable.
     */
    if (src->opts.exclude_host && !h->clock && src->ticks &&
        h->read_tick == src->ticks) {
        return 0;
    }
    n = sys_read(src, h->fd, &now, sizeof(now));
    if (n == 0) {
        return event_pinned_failure(src, h);
    }
    if (n != (ssize_t)sizeof(now)) {
        h->error = n < 0 ? (int)n : -EIO;
        return vpmu_perf_fail(src, false, h->error);
    }
    dv = now.value - h->last.value;
    de = now.time_enabled - h->last.time_enabled;
    dr = now.time_running - h->last.time_running;
    h->last = now;
    h->read_tick = src->ticks;
    if (!h->enabled) {
        /* Counted while the guest had it off (perf_disable()): dropped. */
        h->skewed |= dv != 0;
        return 0;
    }
    if (dr < de) {
        src->stats.multiplexed_reads++;
        src->stats.lost_ns += de - dr;
    }
    if (src->opts.multiplex == VPMU_PERF_MULTIPLEX_SCALED) {
        dv = scaled_credit(src, h, dv, de, dr);
    }
    h->host += dv;
    h->count = h->clock ? vpmu_perf_ns_to_ticks(h->host, src->opts.tsc_hz)
                        : h->host;
    return 0;
}

bool vpmu_perf_source_raw_events(const VpmuPerfSource *src)
{
    return src->stats.hw_pmu && src->host_vendor &&
           src->host_vendor == src->opts.guest_vendor;
}
