/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The deterministic fake counting source: counts exactly what a test
 * feeds it with vpmu_fake_source_run(), one event at a time in order, and
 * calls overflow callbacks at the event that completes each period.  It
 * makes the core's overflow arithmetic testable without perf or a guest.
 */
#include "pmu-priv.h"

#include <stdlib.h>
#include <string.h>

struct VpmuSourceHandle {
    VpmuSourceHandle *next;
    VpmuSourceAttr attr;
    bool enabled;
    bool pending;       /* period elapsed, callback not yet called */
    uint64_t count;     /* since open */
    uint64_t left;      /* events to the end of the period */
};

struct VpmuFakeSource {
    VpmuSourceHandle *handles;
    bool guest_mode;    /* vpmu_fake_source_set_guest_mode() */
    int fail[VPMU_FAKE_OP__COUNT];
    VpmuFakeStats stats;
};

/* Count the call; return an injected failure if one is armed. */
static int fake_call(VpmuFakeSource *fake, VpmuFakeOp op)
{
    int err = fake->fail[op];

    fake->stats.calls[op]++;
    fake->fail[op] = 0;
    return err;
}

static int fake_open(void *src, const VpmuSourceAttr *attr,
                     VpmuSourceHandle **out)
{
    VpmuFakeSource *fake = src;
    VpmuSourceHandle *h;
    int r = fake_call(fake, VPMU_FAKE_OPEN);

    if (r < 0) {
        return r;
    }
    /* Like a source without EDGE/INV/CMASK support (TCG, task-clock). */
    if (attr->raw_config & VPMU_EVTSEL_MODIFIERS) {
        return -EOPNOTSUPP;
    }
    if (!attr->sample_period) {
        return -EINVAL;
    }
    h = calloc(1, sizeof(*h));
    if (!h) {
        return -ENOMEM;
    }
    h->attr = *attr;
    h->left = attr->sample_period;
    h->next = fake->handles;
    fake->handles = h;
    fake->stats.open_handles++;
    *out = h;
    return 0;
}

static int fake_update(void *src, VpmuSourceHandle *h,
                       const VpmuSourceAttr *attr)
{
    int r = fake_call(src, VPMU_FAKE_UPDATE);

    if (r < 0) {
        return r;
    }
    if (!attr->sample_period) {
        return -EINVAL;
    }
    h->attr = *attr;
    h->left = attr->sample_period;
    h->pending = false;
    return 0;
}

static int fake_enable(void *src, VpmuSourceHandle *h)
{
    int r = fake_call(src, VPMU_FAKE_ENABLE);

    if (r == 0) {
        h->enabled = true;
    }
    return r;
}

static int fake_disable(void *src, VpmuSourceHandle *h)
{
    int r = fake_call(src, VPMU_FAKE_DISABLE);

    if (r == 0) {
        h->enabled = false;
    }
    return r;
}

static int fake_read(void *src, VpmuSourceHandle *h, uint64_t *count)
{
    int r = fake_call(src, VPMU_FAKE_READ);

    if (r == 0) {
        *count = h->count;
    }
    return r;
}

static void fake_close(void *src, VpmuSourceHandle *h)
{
    VpmuFakeSource *fake = src;

    for (VpmuSourceHandle **p = &fake->handles; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            fake->stats.closes++;
            fake->stats.open_handles--;
            free(h);
            return;
        }
    }
}

static void fake_tick(void *src)
{
    VpmuFakeSource *fake = src;

    fake->stats.ticks++;
}

static const VpmuSourceOps fake_ops = {
    .name = "fake",
    .open = fake_open,
    .update = fake_update,
    .enable = fake_enable,
    .disable = fake_disable,
    .read = fake_read,
    .close = fake_close,
    .tick = fake_tick,
};

const VpmuSourceOps *vpmu_fake_source_ops(void)
{
    return &fake_ops;
}

int vpmu_fake_source_new(VpmuFakeSource **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void vpmu_fake_source_free(VpmuFakeSource *fake)
{
    if (!fake) {
        return;
    }
    while (fake->handles) {
        VpmuSourceHandle *h = fake->handles;

        fake->handles = h->next;
        free(h);
    }
    free(fake);
}

static bool fake_matches(const VpmuFakeSource *fake,
                         const VpmuSourceHandle *h, VpmuArchEvent event,
                         uint64_t raw, unsigned cpl)
{
    if (!h->enabled || h->attr.event != event) {
        return false;
    }
    if (!(fake->guest_mode ? h->attr.count_guest : h->attr.count_host)) {
        return false;
    }
    if (event == VPMU_EVENT_RAW && h->attr.raw_config != raw) {
        return false;
    }
    return cpl == 3 ? h->attr.count_user : h->attr.count_kernel;
}

/* Call one pending callback; the callback may update or close handles. */
static bool fake_fire_one(VpmuFakeSource *fake)
{
    for (VpmuSourceHandle *h = fake->handles; h; h = h->next) {
        if (h->pending) {
            h->pending = false;
            if (h->attr.overflow) {
                h->attr.overflow(h->attr.overflow_ctx);
            }
            return true;
        }
    }
    return false;
}

void vpmu_fake_source_run(VpmuFakeSource *fake, VpmuArchEvent event,
                          uint64_t raw_config, unsigned cpl, uint64_t n)
{
    while (n) {
        uint64_t step = n;

        /* Advance to the next period end of any matching handle. */
        for (VpmuSourceHandle *h = fake->handles; h; h = h->next) {
            if (fake_matches(fake, h, event, raw_config, cpl) && h->left < step) {
                step = h->left;
            }
        }
        for (VpmuSourceHandle *h = fake->handles; h; h = h->next) {
            if (!fake_matches(fake, h, event, raw_config, cpl)) {
                continue;
            }
            h->count += step;
            h->left -= step;
            if (!h->left) {
                h->left = h->attr.sample_period;
                h->pending = true;
            }
        }
        n -= step;
        while (fake_fire_one(fake)) {
        }
    }
}

void vpmu_fake_source_set_guest_mode(VpmuFakeSource *fake, bool guest)
{
    fake->guest_mode = guest;
}

void vpmu_fake_source_fail(VpmuFakeSource *fake, VpmuFakeOp op, int err)
{
    if (op < VPMU_FAKE_OP__COUNT) {
        fake->fail[op] = err;
    }
}

void vpmu_fake_source_stats(const VpmuFakeSource *fake, VpmuFakeStats *out)
{
    *out = fake->stats;
}
