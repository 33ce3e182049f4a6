/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * VpmuOperator: the host operator's events on one vCPU's counting source
 * (include/vpmu/operator.h).  It shares the source with the guest's
 * counters but no state with VpmuPmu: the guest's values, overflows and
 * filter never see it.  The guest's counters come first; on a source with
 * few host counters the operator's events take turns on what is left, as
 * perf rotates flexible events, and keep perf's time enabled and running.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/operator.h>
#include <vpmu/pmu.h>

#include "vpmu-log.h"

/*
 * No operator event overflows: the period is beyond any count a vCPU
 * reaches (2^62 events), below perf's limit on sample_period (2^63).
 */
#define OPERATOR_PERIOD (1ull << 62)

/* The perf source tells an operator's event by its id. */
_Static_assert(VPMU_OPERATOR_COUNTER_ID(0) >
               VPMU_COUNTER_FIXED_ID(VPMU_INTEL_V5_MAX_FIXED),
               "operator counter ids are above every guest counter's");

typedef struct OpEvent {
    VpmuOperatorEvent ev;
    VpmuSourceHandle *h;        /* NULL: the source refused it (error) */
    bool running;
    uint64_t count;             /* the source's */
    uint64_t emulated;          /* vpmu_operator_instruction_retired() */
    uint64_t enabled_ns, running_ns;
    int error;
} OpEvent;

struct VpmuOperator {
    VpmuOperatorOpts opts;
    unsigned n;
    unsigned next;              /* the first event of the next turn */
    uint64_t last_ns;           /* times are accounted up to here */
    OpEvent e[VPMU_OPERATOR_MAX_EVENTS];
};

static int parse_item(const char *item, size_t len, uint32_t events,
                      VpmuOperatorEvent *out, char *err, size_t errlen)
{
    char name[64];
    const char *colon = memchr(item, ':', len);
    size_t nlen = colon ? (size_t)(colon - item) : len;

    if (len == 0 || nlen == 0 || nlen >= sizeof(name)) {
        return vpmu_err(err, errlen, "operator events: empty or overlong "
                        "item in the list");
    }
    memcpy(name, item, nlen);
    name[nlen] = '\0';
    out->user = out->kernel = true;
    if (colon) {
        size_t mlen = len - nlen - 1;

        if (mlen != 1 || (colon[1] != 'u' && colon[1] != 'k')) {
            return vpmu_err(err, errlen, "operator events: '%.*s': the "
                            "modifier is :u or :k", (int)len, item);
        }
        out->user = colon[1] == 'u';
        out->kernel = colon[1] == 'k';
    }
    for (unsigned e = 0; e < VPMU_EVENT__NAMED; e++) {
        if (strcmp(name, vpmu_arch_event_name(e)) != 0) {
            continue;
        }
        if (!(events & VPMU_EVENT_BIT(e))) {
            return vpmu_err(err, errlen, "operator events: '%s' is not "
                            "counted on this host", name);
        }
        out->event = e;
        return 0;
    }
    return vpmu_err(err, errlen, "operator events: unknown event '%s'",
                    name);
}

int vpmu_operator_parse(const char *text, uint32_t events,
                        VpmuOperatorEvent *out, unsigned max, unsigned *n,
                        char *err, size_t errlen)
{
    VpmuOperatorEvent ev[VPMU_OPERATOR_MAX_EVENTS];
    unsigned count = 0;
    const char *p = text;

    if (!text || !*text) {
        return vpmu_err(err, errlen, "operator events: the list is empty");
    }
    for (;;) {
        size_t len = strcspn(p, ",");
        int r;

        if (count == max || count == VPMU_OPERATOR_MAX_EVENTS) {
            return vpmu_err(err, errlen, "operator events: more than %u",
                            max < VPMU_OPERATOR_MAX_EVENTS
                            ? max : VPMU_OPERATOR_MAX_EVENTS);
        }
        r = parse_item(p, len, events, &ev[count], err, errlen);
        if (r < 0) {
            return r;
        }
        for (unsigned i = 0; i < count; i++) {
            if (ev[i].event == ev[count].event &&
                ev[i].user == ev[count].user &&
                ev[i].kernel == ev[count].kernel) {
                return vpmu_err(err, errlen, "operator events: '%.*s' "
                                "twice", (int)len, p);
            }
        }
        count++;
        if (!p[len]) {
            break;
        }
        p += len + 1;
    }
    memcpy(out, ev, count * sizeof(ev[0]));
    *n = count;
    return 0;
}

const char *vpmu_operator_name(const VpmuOperatorEvent *ev, char *buf,
                               size_t len)
{
    const char *mod = ev->user && !ev->kernel ? ":u"
                      : ev->kernel && !ev->user ? ":k" : "";

    snprintf(buf, len, "%s%s", vpmu_arch_event_name(ev->event), mod);
    return buf;
}

static const VpmuSourceOps *ops(const VpmuOperator *op)
{
    return op->opts.source_ops;
}

/* Fold the source's count and the time since last_ns into each event. */
static void account(VpmuOperator *op, uint64_t now_ns)
{
    uint64_t dt = now_ns > op->last_ns ? now_ns - op->last_ns : 0;

    for (unsigned i = 0; i < op->n; i++) {
        OpEvent *e = &op->e[i];
        uint64_t v;
        int r;

        e->enabled_ns += dt;
        if (!e->running) {
            continue;
        }
        e->running_ns += dt;
        r = ops(op)->read(op->opts.source, e->h, &v);
        if (r < 0) {
            e->error = r;
        } else {
            e->count = v;
        }
    }
    op->last_ns = now_ns > op->last_ns ? now_ns : op->last_ns;
}

static void set_running(VpmuOperator *op, OpEvent *e, bool run)
{
    int r;

    if (!e->h || e->running == run) {
        return;
    }
    r = run ? ops(op)->enable(op->opts.source, e->h)
            : ops(op)->disable(op->opts.source, e->h);
    if (r < 0) {
        e->error = r;
        return;
    }
    e->running = run;
}

bool vpmu_operator_update(VpmuOperator *op, unsigned guest_counting,
                          uint64_t now_ns)
{
    unsigned budget = op->n, first = 0;

    account(op, now_ns);
    if (op->opts.host_counters) {
        unsigned left = op->opts.host_counters > guest_counting
                        ? op->opts.host_counters - guest_counting : 0;

        if (left < op->n) {
            /* Take turns: this call's `left` events from `next` on. */
            budget = left;
            first = op->next;
            op->next = left ? (op->next + left) % op->n : op->next;
        }
    }
    /* Stop first: an event that starts never finds the counter taken. */
    for (unsigned pass = 0; pass < 2; pass++) {
        for (unsigned k = 0; k < op->n; k++) {
            bool run = k < budget;

            if (run == (pass == 1)) {
                set_running(op, &op->e[(first + k) % op->n], run);
            }
        }
    }
    return budget > 0 && budget < op->n;
}

int vpmu_operator_new(const VpmuOperatorOpts *opts,
                      const VpmuOperatorEvent *ev, unsigned n,
                      uint64_t now_ns, VpmuOperator **out,
                      char *err, size_t errlen)
{
    VpmuOperator *op;

    *out = NULL;
    if (!opts || !opts->source_ops || !opts->source_ops->open ||
        !opts->source_ops->read || !opts->source_ops->enable ||
        !opts->source_ops->disable || !opts->source_ops->close) {
        return vpmu_err(err, errlen, "operator: a counting source is "
                        "required");
    }
    if (n == 0 || n > VPMU_OPERATOR_MAX_EVENTS) {
        return vpmu_err(err, errlen, "operator: 1 to %u events, not %u",
                        VPMU_OPERATOR_MAX_EVENTS, n);
    }
    for (unsigned i = 0; i < n; i++) {
        if (ev[i].event >= VPMU_EVENT__NAMED || (!ev[i].user && !ev[i].kernel)) {
            return vpmu_err(err, errlen, "operator: event %u is not a "
                            "named event counting at some CPL", i);
        }
    }
    op = calloc(1, sizeof(*op));
    if (!op) {
        return -ENOMEM;
    }
    op->opts = *opts;
    op->n = n;
    op->last_ns = now_ns;
    for (unsigned i = 0; i < n; i++) {
        VpmuSourceAttr attr = {
            .event = ev[i].event,
            .count_user = ev[i].user,
            .count_kernel = ev[i].kernel,
            /* The guest in both its modes; never QEMU's own work. */
            .count_host = true,
            .count_guest = true,
            .sample_period = OPERATOR_PERIOD,
            .counter_id = VPMU_OPERATOR_COUNTER_ID(i),
        };

        op->e[i].ev = ev[i];
        op->e[i].error = opts->source_ops->open(opts->source, &attr,
                                                &op->e[i].h);
        if (op->e[i].error < 0) {
            op->e[i].h = NULL;
        }
    }
    (void)vpmu_operator_update(op, opts->guest_counting, now_ns);
    *out = op;
    return 0;
}

void vpmu_operator_instruction_retired(VpmuOperator *op, unsigned cpl,
                                       bool branch)
{
    for (unsigned i = 0; i < op->n; i++) {
        OpEvent *e = &op->e[i];

        if (e->running && (cpl == 3 ? e->ev.user : e->ev.kernel) &&
            (e->ev.event == VPMU_EVENT_INSTRUCTIONS ||
             (branch && e->ev.event == VPMU_EVENT_BRANCHES))) {
            e->emulated++;
        }
    }
}

unsigned vpmu_operator_read(VpmuOperator *op, uint64_t now_ns,
                            VpmuOperatorCount *out, unsigned max)
{
    account(op, now_ns);
    for (unsigned i = 0; i < op->n && i < max; i++) {
        out[i].ev = op->e[i].ev;
        out[i].count = op->e[i].count + op->e[i].emulated;
        out[i].enabled_ns = op->e[i].enabled_ns;
        out[i].running_ns = op->e[i].running_ns;
        out[i].error = op->e[i].error;
    }
    return op->n;
}

unsigned vpmu_operator_running(const VpmuOperator *op)
{
    unsigned n = 0;

    for (unsigned i = 0; i < op->n; i++) {
        n += op->e[i].running;
    }
    return n;
}

void vpmu_operator_free(VpmuOperator *op)
{
    if (!op) {
        return;
    }
    for (unsigned i = 0; i < op->n; i++) {
        if (op->e[i].h) {
            ops(op)->close(op->opts.source, op->e[i].h);
        }
    }
    free(op);
}
