/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf counting source: the VpmuSourceOps that back guest counters
 * with host perf events, and the reuse cache of parked events (enable,
 * disable and service() are in perf-service.c).
 *
 * Reuse (KVM a6da0d77e98e, "Reuse perf_event to avoid unnecessary
 * pmc_reprogram_counter"): perf_event_open costs microseconds to
 * milliseconds, an ioctl on an existing event a fraction of that.  Linux
 * guests rewrite the same few EVTSELs over and over when they multiplex,
 * so a host event is never closed when its guest counter lets it go: it
 * is parked, disabled, keyed by its whole perf_event_attr except the
 * period, and the next open() of an equal attr takes it back with
 * PERF_EVENT_IOC_RESET and _PERIOD.  Parked events are released after
 * opts.idle_passes service passes unused (KVM releases on the next
 * sched-in, kvm_pmu_cleanup()).
 */
#include "perf-priv.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void list_unlink(VpmuSourceHandle **head, VpmuSourceHandle *h)
{
    for (VpmuSourceHandle **p = head; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            h->next = NULL;
            return;
        }
    }
}

static VpmuSourceHandle *take_parked(VpmuPerfSource *src,
                                     const struct perf_event_attr *pattr)
{
    for (VpmuSourceHandle *h = src->parked; h; h = h->next) {
        if (vpmu_perf_same_key(&h->pattr, pattr)) {
            list_unlink(&src->parked, h);
            src->stats.parked--;
            return h;
        }
    }
    return NULL;
}

/*
 * A parked event (disabled) starts over: count 0 by RESET, the new
 * period.  Its time_enabled/running go on; only their deltas are used.
 */
static int rearm_parked(VpmuPerfSource *src, VpmuSourceHandle *h,
                        uint64_t host_period)
{
    int r = vpmu_perf_sys_ioctl(src, h->fd, PERF_EVENT_IOC_RESET, 0);

    if (r < 0) {
        return vpmu_perf_fail(src, false, r);
    }
    h->last.value = 0;
    return vpmu_perf_set_period(src, h, host_period);
}

static int new_handle(VpmuPerfSource *src, const struct perf_event_attr *pa,
                      unsigned long kind, VpmuSourceHandle **out)
{
    VpmuSourceHandle *h = calloc(1, sizeof(*h));
    int r;

    if (!h) {
        return -ENOMEM;
    }
    h->src = src;
    h->pattr = *pa;
    h->clock = src->clock_only;
    h->op = kind != 0;
    r = vpmu_perf_event_open(src, &h->pattr, kind, &h->fd);
    if (r < 0) {
        vpmu_perf_host_open_failed(src, &h->pattr, r);
        free(h);
        return r;
    }
    *out = h;
    return 0;
}

static int perf_open(void *opaque, const VpmuSourceAttr *attr,
                     VpmuSourceHandle **out)
{
    VpmuPerfSource *src = opaque;
    struct perf_event_attr pattr;
    VpmuSourceHandle *h;
    /*
     * The host operator's events and a profile's are never parked nor
     * taken from the guest's parked ones: vpmu-helper counts them apart,
     * by their open.
     */
    unsigned long kind = attr->counter_id == VPMU_PROFILE_COUNTER_ID ?
                         VPMU_PERF_OPEN_PROFILE :
                         attr->counter_id >= VPMU_OPERATOR_COUNTER_ID(0) ?
                         VPMU_PERF_OPEN_OPERATOR : 0;
    int r = vpmu_perf_build_attr(src, attr, &pattr);

    if (r < 0) {
        return r;
    }
    h = kind ? NULL : take_parked(src, &pattr);
    if (h) {
        r = rearm_parked(src, h, pattr.sample_period);
        if (r < 0) {
            vpmu_perf_handle_release(src, h);
            return r;
        }
        src->stats.reuses++;
    } else {
        r = new_handle(src, &pattr, kind, &h);
        if (r < 0) {
            return r;
        }
    }
    h->attr = *attr;
    h->enabled = h->hw_on = h->skewed = h->stale = false;
    h->host = h->count = h->period_start = h->read_tick = 0;
    vpmu_perf_span_start(h);
    h->next = src->active;
    src->active = h;
    src->stats.active++;
    *out = h;
    return 0;
}

/*
 * Same event, new period: served in place.  Read first, then restart the
 * kernel's countdown: the kernel then counts its period from a point at
 * or after period_start, so its overflow (the signal) never comes before
 * service() sees the guest period elapsed.  No restart when the new
 * period is only what was counted (the overflow point has not moved), or
 * while the guest counter is off (perf_enable() restarts it then).
 */
static int perf_update(void *opaque, VpmuSourceHandle *h,
                       const VpmuSourceAttr *attr)
{
    VpmuPerfSource *src = opaque;
    int r;

    if (src->opts.no_reuse) {
        return -EOPNOTSUPP;
    }
    r = vpmu_perf_event_read(src, h);
    if (r == 0 && h->count - h->period_start + attr->sample_period ==
                  h->attr.sample_period) {
        /* What it counted, not a new period: the overflow stays put. */
        src->stats.reuses++;
        return 0;
    }
    if (r == 0 && h->enabled) {
        r = vpmu_perf_set_period(src, h, vpmu_perf_host_period(src, h->clock,
                                                     attr->sample_period));
    }
    if (r < 0) {
        h->error = r;
        return r;
    }
    /* Off: perf_enable() sets the period, once. */
    h->stale = !h->enabled;
    h->skewed = false;
    h->attr = *attr;
    h->period_start = h->count;
    src->stats.reuses++;
    return 0;
}

static int perf_read(void *opaque, VpmuSourceHandle *h, uint64_t *count)
{
    int r = vpmu_perf_event_read(opaque, h);

    if (r == 0) {
        *count = h->count;
    }
    return r;
}

/* Park the host event for reuse, or release it if it is no good. */
static void perf_close(void *opaque, VpmuSourceHandle *h)
{
    VpmuPerfSource *src = opaque;

    list_unlink(&src->active, h);
    src->stats.active--;
    if (!h->enabled && h->hw_on) {
        src->soft_off--;
    }
    if (!h->error && h->hw_on) {
        vpmu_perf_host_toggle(src, h, false);
    }
    if (h->error || h->op || src->opts.no_reuse) {
        vpmu_perf_handle_release(src, h);
        return;
    }
    h->parked_at = src->pass;
    h->next = src->parked;
    src->parked = h;
    src->stats.parked++;
}

static const VpmuSourceOps perf_ops = {
    .name = "perf",
    .open = perf_open,
    .update = perf_update,
    .enable = vpmu_perf_enable,
    .disable = vpmu_perf_disable,
    .read = perf_read,
    .close = perf_close,
    .tick = vpmu_perf_tick,
};

const VpmuSourceOps *vpmu_perf_source_ops(void)
{
    return &perf_ops;
}

/* --- lifecycle ---------------------------------------------------------- */

static int check_opts(const VpmuPerfSourceOpts *o)
{
    if (o->multiplex != VPMU_PERF_MULTIPLEX_RAW &&
        o->multiplex != VPMU_PERF_MULTIPLEX_SCALED) {
        return -EINVAL;
    }
    if (o->guest_vendor && o->guest_vendor != VPMU_VENDOR_INTEL &&
        o->guest_vendor != VPMU_VENDOR_AMD) {
        return -EINVAL;
    }
    if (o->host_vendor && o->host_vendor != VPMU_VENDOR_INTEL &&
        o->host_vendor != VPMU_VENDOR_AMD) {
        return -EINVAL;
    }
    if (o->tsc_hz > VPMU_PERF_TSC_HZ_MAX || o->tid < 0 ||
        o->notify_signal < 0 || o->notify_signal > SIGRTMAX) {
        return -EINVAL;
    }
    return 0;
}

/* Open @e disabled on the thread, as a guest counter would, and close it. */
static int probe(VpmuPerfSource *src, VpmuArchEvent e)
{
    VpmuSourceAttr a = {
        .event = e, .count_user = true, .count_kernel = true,
        .count_host = true, .count_guest = true, .sample_period = 1ull << 32,
    };
    struct perf_event_attr pattr;
    int fd = vpmu_perf_build_attr(src, &a, &pattr);

    if (fd == 0) {
        fd = vpmu_perf_sys_open(src, &pattr, false);
    }
    if (fd < 0) {
        return fd;
    }
    vpmu_perf_sys_close(src, fd);
    return 0;
}

/* The kernel's answers for a host with no hardware PMU (or none for us). */
static bool no_hw_pmu(int r)
{
    return r == -ENOENT || r == -EOPNOTSUPP || r == -ENODEV;
}

/*
 * Hardware PMU: every generic event that opens is offered.  Cycles is
 * probed first: if the host answers that it has no hardware PMU, the
 * others are not tried.  Any other refusal of cycles (vpmu-helper's policy
 * denying it, for one) says nothing about the PMU, so the others are
 * probed all the same and a policy that denies cycles keeps the rest.
 */
static int probe_hw(VpmuPerfSource *src)
{
    int r = probe(src, VPMU_EVENT_CYCLES);
    uint32_t events = r == 0 ? VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) : 0;

    if (no_hw_pmu(r)) {
        return r;
    }
    for (unsigned e = VPMU_EVENT_CYCLES + 1; e < VPMU_EVENT__COUNT; e++) {
        if (probe(src, e) == 0) {
            events |= VPMU_EVENT_BIT(e);
        }
    }
    if (!events) {
        return r;
    }
    src->stats.hw_pmu = true;
    src->events = events;
    if (r < 0) {
        vpmu_logf(&src->log, "vpmu-perf: host cycles refused (%s): guest "
                  "cycles are unavailable", strerror(-r));
    }
    return 0;
}

/* Otherwise the task-clock fallback, if the task clock opens. */
static void probe_host(VpmuPerfSource *src)
{
    int r = probe_hw(src);

    /* Before the fallback: it reads the cycles probe's refusal. */
    vpmu_perf_host_probe(src, r);
    if (r == 0) {
        return;
    }
    src->clock_only = true;
    if (probe(src, VPMU_EVENT_CYCLES) == 0) {
        src->events = VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) |
                      VPMU_EVENT_BIT(VPMU_EVENT_REF_CYCLES);
        if (vpmu_perf_host_log_refused(src, true)) {
            return;
        }
        vpmu_logf(&src->log, "vpmu-perf: no hardware PMU on this host "
                  "(cycles: %s): guest cycles and ref-cycles count the "
                  "vCPU thread's CPU time (task-clock) at %llu Hz, "
                  "every other event is unavailable", strerror(-r),
                  (unsigned long long)src->opts.tsc_hz);
        return;
    }
    src->events = 0;
    if (vpmu_perf_host_log_refused(src, false)) {
        return;
    }
    vpmu_logf(&src->log, "vpmu-perf: perf_event_open is unavailable here "
              "(cycles: %s): every guest event is unavailable",
              strerror(-r));
}

int vpmu_perf_source_new(const VpmuPerfSourceOpts *opts,
                         VpmuPerfSource **out)
{
    static const VpmuPerfSourceOpts defaults;
    VpmuPerfSource *src;
    int r;

    if (!out) {
        return -EINVAL;
    }
    *out = NULL;
    opts = opts ? opts : &defaults;
    r = check_opts(opts);
    if (r < 0) {
        return r;
    }
    src = calloc(1, sizeof(*src));
    if (!src) {
        return -ENOMEM;
    }
    src->opts = *opts;
    vpmu_logger_init(&src->log, opts->log, opts->opaque);
    if (opts->sys) {
        src->sys = *opts->sys;
    }
    src->opts.sys = NULL;       /* copied: the caller's may go away */
    if (opts->sysroot) {
        src->sysroot = strdup(opts->sysroot);
        if (!src->sysroot) {
            free(src);
            return -ENOMEM;
        }
    }
    src->opts.sysroot = src->sysroot;
    if (!src->opts.idle_passes) {
        src->opts.idle_passes = VPMU_PERF_IDLE_PASSES_DEFAULT;
    }
    if (!src->opts.tsc_hz) {
        src->opts.tsc_hz = VPMU_PERF_TSC_HZ_DEFAULT;
    }
    src->tid = opts->tid ? opts->tid : gettid();
    src->host_vendor = opts->host_vendor ? opts->host_vendor
                                         : vpmu_perf_host_vendor();
    probe_host(src);
    *out = src;
    return 0;
}

static void release_list(VpmuPerfSource *src, VpmuSourceHandle **head)
{
    while (*head) {
        VpmuSourceHandle *h = *head;

        *head = h->next;
        vpmu_perf_handle_release(src, h);
    }
}

void vpmu_perf_source_free(VpmuPerfSource *src)
{
    if (!src) {
        return;
    }
    /* Active handles only if the PMU was not freed first; never leak. */
    release_list(src, &src->active);
    release_list(src, &src->parked);
    free(src->sysroot);
    free(src);
}

uint32_t vpmu_perf_source_events(const VpmuPerfSource *src)
{
    return src->events;
}

void vpmu_perf_source_stats(const VpmuPerfSource *src, VpmuPerfStats *out)
{
    *out = src->stats;
}
