/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host operator's events under KVM (include/vpmu/operator.h): on the
 * vCPU's counting source, beside the guest's counters and after them.
 *
 * The host's GP counters (VpmuKvmStats.host_counters) go first to the
 * guest: one for vpmu's host event of each guest GP counter that counts
 * and, with live RDPMC, one for KVM's own PMC that mirrors it, as far as
 * the host has them (kvm-mirror.c, apply_budget()).  The operator's
 * events take what is left, in turn when that is fewer than all of them.
 * The front end asks again before every commit that follows a change of
 * the guest's counting, so the operator yields before the guest's new
 * host event is enabled, and the VMM gives the next turn every
 * VPMU_KVM_OPERATOR_TURN_NS (a guest that does not exit would otherwise
 * keep one set running forever).
 *
 * Host fixed counters are not in the budget: Intel hosts may put the
 * operator's instructions or cycles there, which only leaves more GP
 * counters free.  The source misses the PMU MSR accesses vpmu serves (the
 * instruction exits), so the front end counts them here, as it does for
 * the guest's counters; what KVM retires itself (CPUID, HLT, port I/O) the
 * operator's events do not count, as no exclude_host event does.
 */
#include <time.h>

#include "kvm-priv.h"

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The host counters the guest's counting GP counters take now. */
static unsigned guest_host_counters(const VpmuKvm *k)
{
    uint64_t gp_mask = (1ull << k->cfg.nr_gp) - 1;
    unsigned gp = (unsigned)__builtin_popcountll(vpmu_pmu_counting(k->pmu) &
                                                 gp_mask);
    unsigned live = 0;

    /* As apply_budget(): KVM's PMCs of counting counters, as spare. */
    if (k->stats.kvm_pmu && k->opts.rdpmc == VPMU_KVM_RDPMC_LIVE) {
        unsigned spare = vpmu_kvm__spare(k, gp);

        live = gp < spare ? gp : spare;
    }
    return gp + live;
}

/*
 * A new set is opened while the one it replaces still counts: it starts
 * within what that one leaves too, and the service after the swap gives
 * it the rest.
 */
void vpmu_kvm_operator_opts(VpmuKvm *k, VpmuOperatorOpts *out)
{
    *out = (VpmuOperatorOpts){
        .source_ops = k->opts.source_ops,
        .source = k->opts.source,
        .host_counters = k->stats.host_counters,
        .guest_counting = guest_host_counters(k) +
                          (k->op ? vpmu_operator_running(k->op) : 0),
    };
}

VpmuOperator *vpmu_kvm_set_operator(VpmuKvm *k, VpmuOperator *op)
{
    VpmuOperator *old = k->op;

    k->op = op;
    k->op_turns = false;
    /* The next service gives it what the guest leaves then. */
    k->op_guest = UINT_MAX;
    return old;
}

static void operator_update(VpmuKvm *k, unsigned guest)
{
    k->op_guest = guest;
    k->op_turns = vpmu_operator_update(k->op, guest, now_ns());
    k->stats.operator_updates++;
}

/* Before the commit of an exit: yield to counters the guest starts. */
void vpmu_kvm__operator_service(VpmuKvm *k)
{
    unsigned guest;

    if (!k->op) {
        return;
    }
    guest = guest_host_counters(k);
    if (guest != k->op_guest) {
        operator_update(k, guest);
    }
}

void vpmu_kvm_operator_turn(VpmuKvm *k)
{
    if (k->op) {
        operator_update(k, guest_host_counters(k));
    }
}

bool vpmu_kvm_operator_turns(const VpmuKvm *k)
{
    return k->op && k->op_turns;
}
