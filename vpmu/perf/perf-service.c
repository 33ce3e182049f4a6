/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf source's enable, disable and service: the kernel's countdown
 * against the guest period.  Soft toggles (docs/perf-source.md): a guest
 * disable leaves the host event running and only stops crediting it; the
 * host event is disabled for real when the guest leaves the counter off
 * (tick), when it signals, or when it is parked.  Service turns overflow
 * signals into the core's callbacks, re-arms early countdowns and closes
 * parked events left idle.  Calls go perf.c -> here -> perf-event.c only.
 */
#include "perf-priv.h"

#include <stdlib.h>

/* Close the host event and free the handle (active or parked: unlinked). */
void vpmu_perf_handle_release(VpmuPerfSource *src, VpmuSourceHandle *h)
{
    vpmu_perf_sys_close(src, h->fd);
    src->stats.releases++;
    free(h);
}

int vpmu_perf_set_period(VpmuPerfSource *src, VpmuSourceHandle *h,
                         uint64_t host_period)
{
    /* PERF_EVENT_IOC_PERIOD takes a pointer to the new u64 period. */
    int r = vpmu_perf_sys_ioctl(src, h->fd, PERF_EVENT_IOC_PERIOD,
                                (unsigned long)&host_period);

    if (r < 0) {
        return vpmu_perf_fail(src, false, r);
    }
    h->pattr.sample_period = host_period;
    return 0;
}

int vpmu_perf_host_toggle(VpmuPerfSource *src, VpmuSourceHandle *h, bool on)
{
    int r = vpmu_perf_sys_ioctl(src, h->fd, on ? PERF_EVENT_IOC_ENABLE
                                               : PERF_EVENT_IOC_DISABLE, 0);

    if (r < 0) {
        h->error = r;
        return vpmu_perf_fail(src, false, r);
    }
    h->hw_on = on;
    return 0;
}

/*
 * The guest turns counters off and on all the time: around every PMI
 * (the global enable), on every multiplexing rotation and context switch
 * (the selector).  PERF_EVENT_IOC_ENABLE reschedules the whole perf
 * context on the host (ctx_resched()), so a guest disable leaves the host
 * event running and only stops crediting it: reads while off discard
 * what it counts.  The host's countdown then runs ahead of the guest
 * period (skewed): it may signal early, and rearm() sets it right.
 *
 * The host operator's events (operator.h) are toggled for real: they stop
 * to give the guest's events the host counter, which a host event left
 * running would keep.
 */
int vpmu_perf_disable(void *opaque, VpmuSourceHandle *h)
{
    VpmuPerfSource *src = opaque;
    /* Counted up to now: the guest's, like the kernel's own disable. */
    int r = vpmu_perf_event_read(src, h);

    if (r < 0) {
        return r;
    }
    h->enabled = false;
    h->off_tick = src->ticks;
    if (h->op) {
        return h->hw_on ? vpmu_perf_host_toggle(src, h, false) : 0;
    }
    src->soft_off += h->hw_on;
    return 0;
}

/*
 * An operator event starts only on a counter the guest's events left
 * (operator.c's budget counts the guest's counters that count): the
 * guest's events that are off only for the guest give theirs back first.
 */
static void release_soft_off(VpmuPerfSource *src)
{
    for (VpmuSourceHandle *g = src->active; g && src->soft_off; g = g->next) {
        if (!g->enabled && g->hw_on) {
            vpmu_perf_soft_release(src, g);
        }
    }
}

/* Back on: what the host counted while off is dropped by the read. */
int vpmu_perf_enable(void *opaque, VpmuSourceHandle *h)
{
    VpmuPerfSource *src = opaque;
    uint64_t done;
    int r = vpmu_perf_event_read(src, h);

    if (r < 0) {
        return r;
    }
    if (h->hw_on) {
        src->soft_off--;
        src->stats.soft_enables++;
    } else {
        if (h->op) {
            release_soft_off(src);
        }
        r = vpmu_perf_host_toggle(src, h, true);
        if (r < 0) {
            return r;
        }
    }
    h->enabled = true;
    vpmu_perf_span_start(h);
    if (h->stale) {
        /* perf_update() while off: the host still has the old period. */
        done = h->count - h->period_start;
        r = vpmu_perf_set_period(src, h, vpmu_perf_host_period(
                           src, h->clock, h->attr.sample_period - done));
        if (r < 0) {
            h->error = r;
            return r;
        }
        h->stale = false;
        h->skewed = done != 0;
    }
    return 0;
}

/* Really disable a host event whose guest counter is off. */
void vpmu_perf_soft_release(VpmuPerfSource *src, VpmuSourceHandle *h)
{
    src->soft_off--;
    src->stats.soft_releases++;
    if (vpmu_perf_host_toggle(src, h, false) < 0) {
        /* The next enable sees the error and degrades the counter. */
        h->hw_on = false;
    }
}

/*
 * A guest that leaves a counter off (the event was descheduled, perf
 * exited) must not keep a host counter busy: after VPMU_PERF_OFF_TICKS
 * returns to the guest, the host event is disabled for real.
 */
void vpmu_perf_tick(void *opaque)
{
    VpmuPerfSource *src = opaque;

    src->ticks++;
    if (!src->soft_off) {
        return;
    }
    for (VpmuSourceHandle *h = src->active; h; h = h->next) {
        if (!h->enabled && h->hw_on &&
            src->ticks - h->off_tick >= VPMU_PERF_OFF_TICKS) {
            vpmu_perf_soft_release(src, h);
        }
    }
}

/* --- service ------------------------------------------------------------ */

/*
 * Has the guest period elapsed?  Whole periods since period_start are
 * consumed, so without an update() the countdown restarts with the same
 * period, in step with the kernel's own reload.  A failed read is due
 * too: the core's read in the callback then sees the error and degrades
 * the counter now rather than at the guest's next access.
 */
static void mark_due(VpmuPerfSource *src, VpmuSourceHandle *h)
{
    uint64_t period = h->attr.sample_period, elapsed;

    if (!h->enabled) {
        return;
    }
    if (vpmu_perf_event_read(src, h) < 0) {
        h->due = true;
        return;
    }
    elapsed = h->count - h->period_start;
    if (period && elapsed >= period) {
        h->period_start += elapsed / period * period;
        h->due = true;
    }
}

/* The callback may close or update any handle: look up afresh each time. */
static VpmuSourceHandle *first_due(VpmuPerfSource *src)
{
    for (VpmuSourceHandle *h = src->active; h; h = h->next) {
        if (h->due) {
            return h;
        }
    }
    return NULL;
}

/*
 * Re-arm the kernel's countdown with exactly what is left of the guest
 * period, so that the next signal is neither early nor a whole period
 * late:
 * - the task clock's hrtimer and the task clock itself disagree by the
 *   IRQ time the scheduler does not charge to the task, so a signal may
 *   come a little before the guest period has elapsed;
 * - a skewed event (perf_disable()) counted what the guest never saw, and
 *   an event re-armed with a remainder reloads with that remainder.
 * A soft-off event that signalled is disabled for real: the guest has no
 * use for its signals.
 */
static void rearm(VpmuPerfSource *src)
{
    for (VpmuSourceHandle *h = src->active; h; h = h->next) {
        uint64_t done = h->count - h->period_start;
        uint64_t period = h->attr.sample_period;

        if (!h->enabled) {
            if (h->hw_on) {
                vpmu_perf_soft_release(src, h);
            }
            continue;
        }
        if (h->error || done >= period || !(h->skewed || (h->clock && done))) {
            continue;
        }
        if (vpmu_perf_set_period(src, h, vpmu_perf_host_period(src, h->clock,
                                                     period - done)) < 0) {
            h->error = src->stats.last_error;
            continue;
        }
        h->skewed = done != 0;
    }
}

/* Close parked events unused for opts.idle_passes service passes. */
static void release_idle(VpmuPerfSource *src)
{
    VpmuSourceHandle **p = &src->parked;

    while (*p) {
        VpmuSourceHandle *h = *p;

        if (src->pass - h->parked_at >= src->opts.idle_passes) {
            *p = h->next;
            src->stats.parked--;
            vpmu_perf_handle_release(src, h);
        } else {
            p = &h->next;
        }
    }
}

int vpmu_perf_source_service(VpmuPerfSource *src)
{
    VpmuSourceHandle *h;
    int calls = 0;

    src->stats.services++;
    src->pass++;
    for (h = src->active; h; h = h->next) {
        mark_due(src, h);
    }
    while ((h = first_due(src))) {
        h->due = false;
        if (!h->error) {
            calls++;
            src->stats.overflows++;
        }
        h->attr.overflow(h->attr.overflow_ctx);
    }
    if (src->opts.notify_signal) {
        rearm(src);
    }
    release_idle(src);
    return calls;
}

