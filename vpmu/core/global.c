/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The PMU-wide state that starts and stops counters: the global control,
 * the global status and the freeze, which an overflow changes
 * (counter.c).  Common code owns the globals, as in KVM's pmu.c.
 */
#include "pmu-priv.h"

/* IA32_PERF_GLOBAL_INUSE (SDM Figure 20-16). */
#define INUSE_EVTSEL_BITS       GENMASK_ULL(17, 0)
#define INUSE_PMI               BIT_ULL(63)

/*
 * DEBUGCTL.Freeze_PerfMon_On_PMI (SDM Vol. 3B 20.2.4.1): the legacy freeze
 * (v2, v3) clears GLOBAL_CTRL; the streamlined one (v4+) sets
 * GLOBAL_STATUS.CTR_Frz and keeps GLOBAL_CTRL.  AMD has none.
 */
void vpmu_freeze_on_pmi(VpmuPmu *pmu)
{
    if (!(pmu->debugctl & pmu->rules.freeze_on_pmi)) {
        return;
    }
    if (pmu->rules.freeze_status) {
        vpmu_status_update(pmu, pmu->rules.freeze_status, 0);
    } else {
        vpmu_set_global_ctrl(pmu, 0);
    }
}

void vpmu_pmu_sync(VpmuPmu *pmu)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        vpmu_counter_fold(vpmu_counter_at(pmu, i));
    }
}

void vpmu_pmu_reprogram_all(VpmuPmu *pmu)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        vpmu_counter_reprogram(vpmu_counter_at(pmu, i));
    }
}

/* Fold, or reprogram, the counters whose global enable bit is in @bits. */
static void reprogram_bits(VpmuPmu *pmu, uint64_t bits, bool fold_only)
{
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);

        if (!(bits & vpmu_status_bit(c))) {
            continue;
        }
        if (fold_only) {
            vpmu_counter_fold(c);
        } else {
            vpmu_counter_reprogram(c);
        }
    }
}

void vpmu_set_global_ctrl(VpmuPmu *pmu, uint64_t val)
{
    uint64_t changed = pmu->global_ctrl ^ val;

    /*
     * Fold the counters this write starts or stops under the old enables:
     * an overflow found there happened before the write (and may freeze,
     * changing GLOBAL_CTRL itself, hence the second XOR).  Counters whose
     * enable does not change keep counting untouched.
     */
    reprogram_bits(pmu, changed, true);
    changed |= pmu->global_ctrl ^ val;
    pmu->global_ctrl = val;
    reprogram_bits(pmu, changed, false);
}

/*
 * Set then clear status bits.  Fold first so an overflow that already
 * happened is not lost; a change of the freeze (v4 CTR_Frz) reprograms.
 */
void vpmu_status_update(VpmuPmu *pmu, uint64_t set, uint64_t clear)
{
    uint64_t status;
    bool was_frozen;

    vpmu_pmu_sync(pmu);
    was_frozen = vpmu_frozen(pmu);
    status = (pmu->global_status | set) & ~clear;
    if (status == pmu->global_status) {
        return;
    }
    pmu->global_status = status;
    if (vpmu_frozen(pmu) != was_frozen) {
        vpmu_pmu_reprogram_all(pmu);
    }
}

uint64_t vpmu_pmu_read_status(VpmuPmu *pmu)
{
    vpmu_pmu_sync(pmu);
    return pmu->global_status;
}

/*
 * IA32_PERF_GLOBAL_INUSE: bit i when PERFEVTSELi[17:0] is not 0, bit
 * 32 + i when fixed counter i is enabled, bit 63 when any of them asks
 * for a PMI.
 */
uint64_t vpmu_pmu_read_inuse(const VpmuPmu *pmu)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < pmu->nr_gp; i++) {
        uint64_t ctl = pmu->gp[i].ctl;

        v |= (ctl & INUSE_EVTSEL_BITS) ? BIT_ULL(i) : 0;
        v |= (ctl & VPMU_EVTSEL_INT) ? INUSE_PMI : 0;
    }
    for (unsigned i = 0; i < pmu->nr_fixed; i++) {
        uint64_t ctl = pmu->fixed[i].ctl;

        v |= (ctl & VPMU_FIXED_CTRL_EN) ? BIT_ULL(32 + i) : 0;
        v |= (ctl & VPMU_FIXED_CTRL_PMI) ? INUSE_PMI : 0;
    }
    return v;
}
