/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a counter learns from outside its counting source and its own
 * emulated events: events the source could not see (under KVM, what KVM
 * retired itself, vpmu_pmu_counter_add()), and overflows whose PMI
 * another party raises (KVM's own vPMU, when a front end leaves it the
 * counter's interrupt).  counter.c owns the model; this adds to it
 * through the same fold, advance and program.
 */
#include "pmu-priv.h"

int vpmu_pmu_counter_add(VpmuPmu *pmu, uint32_t id, uint64_t n)
{
    VpmuCounter *c = vpmu_counter_by_id(pmu, id);

    if (!c) {
        return -ENOENT;
    }
    if (c->state != VPMU_COUNTER_COUNTING) {
        return -EINVAL;
    }
    if (n == 0) {
        return 0;
    }
    /* The source's events come first: an overflow they hold is theirs. */
    if (!vpmu_counter_fold(c)) {
        return -EIO;
    }
    c->pmu->stats.emulated += n;
    vpmu_counter_advance(c, n);
    vpmu_counter_program(c);     /* the period counts from the new value */
    return 0;
}

int vpmu_pmu_set_pmi_elsewhere(VpmuPmu *pmu, uint32_t id, bool on)
{
    VpmuCounter *c = vpmu_counter_by_id(pmu, id);

    if (!c) {
        return -ENOENT;
    }
    if (c->pmi_elsewhere == on) {
        return 0;
    }
    c->pmi_elsewhere = on;
    /* The source's period changes: to a full wrap, or back to (-value). */
    if (c->state == VPMU_COUNTER_COUNTING) {
        vpmu_counter_reprogram(c);
    }
    return 0;
}

int vpmu_pmu_pmi_delivered(VpmuPmu *pmu, uint32_t id)
{
    VpmuCounter *c = vpmu_counter_by_id(pmu, id);

    if (!c) {
        return -ENOENT;
    }
    if (!c->pmi_elsewhere) {
        return -EINVAL;
    }
    /* The other party's counter may run a little ahead of the source. */
    if (pmu->has_global) {
        pmu->global_status |= vpmu_status_bit(c);
    }
    if (c->dec.intr) {
        c->pmis++;
        pmu->stats.pmis++;
    }
    return 0;
}
