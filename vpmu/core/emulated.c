/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a counter learns from outside its counting source: instructions
 * the front end retired itself (an exiting WRMSR, TCG's emulated ones),
 * events the source could not see (under KVM, what KVM retired itself),
 * and overflows whose PMI another party raises (KVM's own vPMU, when a
 * front end leaves it the counter's interrupt).  counter.c owns the
 * model; this adds to it through the same fold, advance and program.
 */
#include "pmu-priv.h"

static void counter_add_emulated(VpmuCounter *c, VpmuArchEvent event,
                                 unsigned cpl)
{
    uint8_t want = event == VPMU_EVENT_BRANCHES ?
                   (cpl == 3 ? VPMU_EMUL_BR_USR : VPMU_EMUL_BR_OS) :
                   (cpl == 3 ? VPMU_EMUL_INSN_USR : VPMU_EMUL_INSN_OS);
    uint8_t mode = c->pmu->guest_mode ? VPMU_EMUL_GUEST : VPMU_EMUL_HOST;

    if (!(c->emul & want) || !(c->emul & mode)) {
        return;
    }
    if (!vpmu_counter_fold(c)) {
        return;
    }
    c->pmu->stats.emulated++;
    vpmu_counter_advance(c, 1);
    vpmu_counter_program(c);
}

/*
 * Count one retired instruction (or branch) at @cpl on every counter that
 * counts it: only those in the emulation bitmap (KVM precomputes the same,
 * kvm_pmu_recalc_pmc_emulation()).  Adding may overflow and freeze the PMU,
 * which reprograms counters and changes the bitmap: re-read it each time.
 */
void vpmu_count_emulated(VpmuPmu *pmu, VpmuArchEvent event, unsigned cpl)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        if (!(pmu->emul_counters >> i)) {
            break;
        }
        if (pmu->emul_counters & BIT_ULL(i)) {
            counter_add_emulated(vpmu_counter_at(pmu, i), event, cpl);
        }
    }
}

void vpmu_pmu_instruction_retired(VpmuPmu *pmu, unsigned cpl, bool branch)
{
    vpmu_count_emulated(pmu, VPMU_EVENT_INSTRUCTIONS, cpl);
    if (branch) {
        vpmu_count_emulated(pmu, VPMU_EVENT_BRANCHES, cpl);
    }
}

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
