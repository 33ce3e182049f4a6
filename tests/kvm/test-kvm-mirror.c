/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live RDPMC mirroring (vpmu/kvm/kvm-mirror.c) against a recording KVM:
 * opts.ioctl stands in for the kernel and keeps every KVM_SET_MSRS, so
 * each test asserts the exact MSR list and values KVM is given.  The
 * recorder behaves like Linux 6.1's AMD vPMU where it matters: it has no
 * PerfCntrGlobalCtl (a write of 0xC0000301 stops KVM_SET_MSRS there).
 * It also keeps KVM's PMCs as KVM would, for KVM_GET_MSRS: each holds
 * what was written last, plus one when KVM retires the served RDMSR or
 * WRMSR on a live instructions selector with OS (exit_msr()), plus what
 * guest_user() says KVM's host event and KVM itself counted at CPL 3.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

#include "check-main.h"

#define CTL(i)      (0xC0010200u + 2u * (i))    /* PERF_CTLi */
#define CTR(i)      (0xC0010201u + 2u * (i))    /* PERF_CTRi */
#define G_CTL       0xC0000301u                 /* PerfCntrGlobalCtl */
#define G_STATUS    0xC0000300u
/* PERF_CTL: instructions (C0h), USR 16, OS 17, INT 20, EN 22. */
#define INSNS_ALL_INT   0x5300C0ull
#define INSNS_ALL       0x4300C0ull
#define INSNS_USR       0x4100C0ull

#define MAX_CALLS 8
#define MAX_ENT 32

typedef struct Call {
    uint32_t n;
    struct kvm_msr_entry e[MAX_ENT];
} Call;

typedef struct Rec {
    struct kvm_run run;
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuKvmOpts opts;
    VpmuKvm *k;
    bool has_global;            /* KVM knows PerfCntrGlobalCtl */
    Call calls[MAX_CALLS];      /* the accepted KVM_SET_MSRS, in order */
    unsigned ncalls, refused, filters, gets;
    uint64_t kvm_ctl[6], kvm_ctr[6];    /* KVM's PERF_CTLi, PERF_CTRi */
} Rec;

static Rec rec;

static int rec_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
    Rec *r = opaque;
    struct kvm_msrs *m = arg;
    Call *c;

    (void)fd;
    if (req == KVM_CHECK_EXTENSION) {
        return 1;
    }
    if (req == KVM_SET_PMU_EVENT_FILTER) {
        r->filters++;
        return 0;
    }
    if (req == KVM_GET_MSRS) {
        r->gets++;
        for (uint32_t i = 0; i < m->nmsrs; i++) {
            uint32_t msr = m->entries[i].index;

            ck_assert_msg(msr >= CTR(0) && msr <= CTR(5) && (msr & 1),
                          "KVM_GET_MSRS of 0x%x", msr);
            m->entries[i].data = r->kvm_ctr[(msr - CTR(0)) / 2];
        }
        return (int)m->nmsrs;
    }
    ck_assert_msg(req == KVM_SET_MSRS, "unexpected ioctl 0x%lx", req);
    for (uint32_t i = 0; i < m->nmsrs; i++) {
        uint32_t msr = m->entries[i].index;

        if (msr == G_CTL && !r->has_global) {
            r->refused++;
            return (int)i;  /* KVM_SET_MSRS stops at the unknown MSR */
        }
        if (msr >= CTL(0) && msr <= CTR(5)) {
            uint64_t *reg = (msr & 1) ? r->kvm_ctr : r->kvm_ctl;

            reg[(msr - CTL(0)) / 2] = m->entries[i].data;
        }
    }
    ck_assert_uint_lt(r->ncalls, MAX_CALLS);
    ck_assert_uint_le(m->nmsrs, MAX_ENT);
    c = &r->calls[r->ncalls++];
    c->n = m->nmsrs;
    memcpy(c->e, m->entries, m->nmsrs * sizeof(m->entries[0]));
    return (int)m->nmsrs;
}

static void setup_host(VpmuKvmRdpmc mode, bool has_global, unsigned host)
{
    char err[128];

    memset(&rec, 0, sizeof(rec));
    rec.has_global = has_global;
    ck_assert_int_eq(vpmu_fake_source_new(&rec.fake), 0);
    vpmu_config_init(&rec.cfg, VPMU_VENDOR_AMD);     /* PerfMonV2, 6 */
    rec.opts = (VpmuKvmOpts){ .vm_fd = 100, .vcpu_fd = 101,
                              .cfg = &rec.cfg,
                              .source_ops = vpmu_fake_source_ops(),
                              .source = rec.fake, .opaque = &rec,
                              .kvm_pmu = 1, .rdpmc = mode,
                              .host_counters = host, .ioctl = rec_ioctl };
    ck_assert_int_eq(vpmu_kvm_new(&rec.opts, &rec.k, err, sizeof(err)), 0);
}

/* A host with counters enough for vpmu's and KVM's events of all six. */
static void setup_mode(VpmuKvmRdpmc mode, bool has_global)
{
    setup_host(mode, has_global, 12);
}

static void teardown(void)
{
    vpmu_kvm_free(rec.k);
    vpmu_fake_source_free(rec.fake);
}

/* KVM's PMCs that count instructions (C0h, no unit mask) at @cpl. */
static void kvm_count(unsigned cpl, uint64_t n)
{
    uint64_t mode = cpl == 3 ? 1ull << 16 : 1ull << 17;  /* USR, OS */

    for (unsigned i = 0; i < 6; i++) {
        if ((rec.kvm_ctl[i] & (1ull << 22)) && (rec.kvm_ctl[i] & mode) &&
            (rec.kvm_ctl[i] & 0xF0000FFFFull) == 0xC0) {
            rec.kvm_ctr[i] = (rec.kvm_ctr[i] + n) & ((1ull << 48) - 1);
        }
    }
}

/* The served MSR access, then KVM_RUN: KVM retires it at CPL 0. */
static void exit_msr(uint32_t reason, uint32_t msr, uint64_t data)
{
    /* What the VMM does with its kvm_run's msr fields. */
    rec.run.exit_reason = reason;
    rec.run.msr.index = msr;
    rec.run.msr.data = data;
    if (reason == KVM_EXIT_X86_RDMSR) {
        uint64_t val;

        ck_assert_int_eq(vpmu_kvm_rdmsr(rec.k, msr, &val), 0);
        rec.run.msr.data = val;
    } else {
        ck_assert_int_eq(vpmu_kvm_wrmsr(rec.k, msr, data), 0);
    }
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    kvm_count(0, 1);
}

/*
 * The guest runs @n instructions at CPL 3 in guest mode (vpmu's and
 * KVM's host events both count them) and @emul more that KVM retires
 * itself (CPUID: only KVM's PMCs count them).
 */
static void guest_user(uint64_t n, uint64_t emul)
{
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, n);
    kvm_count(3, n + emul);
}

/* Call @c is exactly {msr, value} pairs @want[0..n). */
static void expect_call(unsigned c, const uint64_t (*want)[2], unsigned n)
{
    ck_assert_uint_lt(c, rec.ncalls);
    ck_assert_uint_eq(rec.calls[c].n, n);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_msg(rec.calls[c].e[i].index == want[i][0] &&
                      rec.calls[c].e[i].data == want[i][1],
                      "call %u entry %u: {0x%x, 0x%" PRIx64 "}, want "
                      "{0x%" PRIx64 ", 0x%" PRIx64 "}", c, i,
                      rec.calls[c].e[i].index,
                      (uint64_t)rec.calls[c].e[i].data, want[i][0],
                      want[i][1]);
    }
}

/*
 * Enabling counter 0 (instructions, USR+OS, INT) programs KVM: the first
 * mirror writes every selector, INT cleared, and every value.  The
 * enabling WRMSR is counted by vpmu (PERF_CTR0 reads 1) and will be
 * counted again by KVM when it retires, so KVM gets 0.  The global
 * control is tried once, refused, and never again.
 */
START_TEST(live_first_enable)
{
    static const uint64_t want[][2] = {
        { CTL(0), INSNS_ALL }, { CTL(1), 0 }, { CTL(2), 0 },
        { CTL(3), 0 }, { CTL(4), 0 }, { CTL(5), 0 },
        { CTR(0), 0 }, { CTR(1), 0 }, { CTR(2), 0 },
        { CTR(3), 0 }, { CTR(4), 0 }, { CTR(5), 0 },
    };
    VpmuKvmStats st;

    setup_mode(VPMU_KVM_RDPMC_LIVE, false);
    ck_assert_uint_eq(rec.filters, 0);      /* no deny-all when live */
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    ck_assert_uint_eq(rec.refused, 1);
    expect_call(0, want, 12);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 1);
    vpmu_kvm_stats(rec.k, &st);
    ck_assert_uint_eq(st.mirrors, 1);
    ck_assert_uint_eq(st.mirror_errors, 0);
    ck_assert_uint_eq(st.live_ctl_writes, 6);
}
END_TEST

/*
 * Later mirrors write only the selectors that changed, and the values of
 * the counters concerned: the one the WRMSR addressed and any whose
 * selector changed.  Enabling counter 1 (USR only) is counted on counter 0
 * by vpmu and, when it retires, by KVM's live PMC 0, so PMC 0 needs no
 * write.  Counter 1 does not count CPL 0: 0 exactly.  Rewriting the same
 * selector value changes nothing in KVM.
 */
START_TEST(live_changed_selectors)
{
    static const uint64_t want[][2] = {
        { CTL(1), INSNS_USR }, { CTR(1), 0 },
    };

    setup_mode(VPMU_KVM_RDPMC_LIVE, false);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 11);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(1), INSNS_USR);
    ck_assert_uint_eq(rec.ncalls, 2);
    expect_call(1, want, 2);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(1), INSNS_USR);
    ck_assert_uint_eq(rec.ncalls, 2);
    ck_assert_uint_eq(rec.refused, 1);
}
END_TEST

/*
 * vpmu_kvm_state_changed() (migration, reset): the next service rewrites
 * every selector and value, outside any exit, so nothing is taken off.
 */
START_TEST(live_state_changed)
{
    static const uint64_t want[][2] = {
        { CTL(0), INSNS_ALL }, { CTL(1), 0 }, { CTL(2), 0 },
        { CTL(3), 0 }, { CTL(4), 0 }, { CTL(5), 0 },
        { CTR(0), 6 }, { CTR(1), 0 }, { CTR(2), 0 },
        { CTR(3), 0 }, { CTR(4), 0 }, { CTR(5), 0 },
    };
    VpmuFakeStats fst;
    VpmuKvmStats st;

    setup_mode(VPMU_KVM_RDPMC_LIVE, false);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 5);
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    ck_assert_uint_eq(rec.ncalls, 1);
    vpmu_kvm_state_changed(rec.k);
    rec.run.exit_reason = KVM_EXIT_IO;
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    expect_call(1, want, 12);
    ck_assert_uint_eq(rec.refused, 1);
    vpmu_kvm_stats(rec.k, &st);
    ck_assert_uint_eq(st.live_ctl_writes, 12);
    /* Every return to the guest ticks the source: 3 services. */
    vpmu_fake_source_stats(rec.fake, &fst);
    ck_assert_uint_eq(fst.ticks, 3);
}
END_TEST

/* A KVM with PerfCntrGlobalCtl gets all counters enabled there, once. */
START_TEST(live_global)
{
    setup_mode(VPMU_KVM_RDPMC_LIVE, true);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    ck_assert_uint_eq(rec.calls[0].n, 13);
    ck_assert_uint_eq(rec.calls[0].e[0].index, G_CTL);
    ck_assert_uint_eq(rec.calls[0].e[0].data, 0x3F);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), 0);
    ck_assert_uint_eq(rec.calls[1].n, 2);
    ck_assert_uint_eq(rec.calls[1].e[0].index, CTL(0));
    ck_assert_uint_eq(rec.calls[1].e[0].data, 0);
    ck_assert_uint_eq(rec.calls[1].e[1].index, CTR(0));
}
END_TEST

/*
 * A six-counter host: with four guest counters counting, vpmu's events
 * take four and KVM can have two.  Enabling counters 0-3 (instructions,
 * USR+OS, INT), each enabling WRMSR counted on every counter enabled so
 * far: after the fourth, vpmu's values are 4, 3, 2, 1.  Counter 2 was
 * live (KVM got 1 - 1 = 0: it counts the exit itself) and goes back to a
 * snapshot (selector 0, the whole value 2); counter 3 never was live
 * (whole value 1).  Stopping counter 3 gives counter 2 its live selector
 * back, with its value.
 */
START_TEST(live_budget)
{
    static const uint64_t third[][2] = {
        { CTL(2), INSNS_ALL }, { CTR(2), 0 },
    };
    static const uint64_t fourth[][2] = {
        { CTL(2), 0 }, { CTR(2), 2 }, { CTR(3), 1 },
    };
    VpmuKvmStats st;

    setup_host(VPMU_KVM_RDPMC_LIVE, false, 6);
    for (unsigned i = 0; i < 4; i++) {
        exit_msr(KVM_EXIT_X86_WRMSR, CTL(i), INSNS_ALL_INT);
    }
    ck_assert_uint_eq(rec.ncalls, 4);
    expect_call(2, third, 2);
    expect_call(3, fourth, 3);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(3), 0);
    ck_assert_uint_eq(rec.ncalls, 5);
    ck_assert_uint_eq(rec.calls[4].n, 3);
    ck_assert_uint_eq(rec.calls[4].e[0].index, CTL(2));
    ck_assert_uint_eq(rec.calls[4].e[0].data, INSNS_ALL);
    ck_assert_uint_eq(rec.calls[4].e[1].index, CTR(2));
    ck_assert_uint_eq(rec.calls[4].e[2].index, CTR(3));
    vpmu_kvm_stats(rec.k, &st);
    ck_assert_uint_eq(st.host_counters, 6);
    ck_assert_uint_eq(st.live_starved, 2);
    ck_assert_uint_eq(st.live_ctl_writes, 6 + 1 + 1 + 1 + 1);
}
END_TEST

/*
 * Issue 24: a static glibc program runs 36 CPUIDs at CPL 3 before main();
 * KVM retires them itself, so only KVM's live PMC counts them.  perf's
 * instructions:u (EN|USR, no INT): 1000 instructions in guest mode and
 * the 36.  The WRMSR that stops the counter first takes the 36 from KVM's
 * PMC (1036 there, 1000 in vpmu), then writes 1036 back; RDMSR and the
 * guest's RDPMC (KVM's PMC) both read 1036, as under KVM's own vPMU.
 */
START_TEST(live_kvm_retired_user)
{
    static const uint64_t stop[][2] = { { CTL(0), 0 }, { CTR(0), 1036 } };
    VpmuStats ps;

    setup_mode(VPMU_KVM_RDPMC_LIVE, false);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_USR);
    ck_assert_uint_eq(rec.kvm_ctr[0], 0);
    guest_user(1000, 36);
    ck_assert_uint_eq(rec.kvm_ctr[0], 1036);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), 0);
    ck_assert_uint_eq(rec.ncalls, 2);
    expect_call(1, stop, 2);
    ck_assert_uint_eq(rec.gets, 1);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 1036);
    ck_assert_uint_eq(rec.gets, 1);         /* stopped: nothing to take */
    vpmu_pmu_stats(vpmu_kvm_pmu(rec.k), &ps);
    ck_assert_uint_eq(ps.emulated, 36);
}
END_TEST

/*
 * USR+OS: the served exits count on both sides and cancel out.  Enabled
 * at 1 (the enabling WRMSR; KVM's PMC gets 0 and counts it on retiring
 * it).  100 + 5 (KVM): an RDMSR of the counter first takes the 5 and
 * reads 106, then counts itself (107, KVM's too).  10 + 2 more: the
 * selector change to USR only takes the 2 before the write (119), which
 * CPL 0 no longer counts; KVM gets 119.  Then KVM's host event loses 30
 * of 40 (its counter taken): KVM's PMC gained less than vpmu, nothing is
 * added and the guest reads vpmu's 159.
 */
START_TEST(live_kvm_retired_exits)
{
    static const uint64_t usr[][2] = {
        { CTL(0), INSNS_USR }, { CTR(0), 119 },
    };

    setup_mode(VPMU_KVM_RDPMC_LIVE, false);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL);
    ck_assert_uint_eq(rec.kvm_ctr[0], 1);
    guest_user(100, 5);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 106);
    ck_assert_uint_eq(rec.kvm_ctr[0], 107);
    guest_user(10, 2);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_USR);
    ck_assert_uint_eq(rec.ncalls, 2);
    expect_call(1, usr, 2);
    ck_assert_uint_eq(rec.kvm_ctr[0], 119);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 40);
    kvm_count(3, 10);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 159);
    /* From 159 and 129 on: 7 more in KVM alone count again. */
    guest_user(3, 7);
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 169);
}
END_TEST

/*
 * Snapshot mode: the deny-all filter, values only, nothing on enabling,
 * and no correction for the exit (KVM's PMCs do not count).
 */
START_TEST(snapshot_values_only)
{
    setup_mode(VPMU_KVM_RDPMC_SNAPSHOT, false);
    ck_assert_uint_eq(rec.filters, 1);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    ck_assert_uint_eq(rec.ncalls, 0);
    exit_msr(KVM_EXIT_X86_RDMSR, G_STATUS, 0);
    /* The enabling WRMSR and the status RDMSR: 2; KVM gets it whole. */
    ck_assert_uint_eq(rec.calls[0].n, 6);
    ck_assert_uint_eq(rec.calls[0].e[0].data, 2);
    /* EN 1 -> 0 at 2: KVM's PMC holds 2 already (selector 0, frozen). */
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), 0);
    ck_assert_uint_eq(rec.ncalls, 1);
    /* Enabled again (a start mirrors nothing), 4 more: stops at 7. */
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 4);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), 0);
    ck_assert_uint_eq(rec.ncalls, 2);
    ck_assert_uint_eq(rec.calls[1].n, 1);
    ck_assert_uint_eq(rec.calls[1].e[0].index, CTR(0));
    ck_assert_uint_eq(rec.calls[1].e[0].data, 7);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), 0);      /* still 7 */
    ck_assert_uint_eq(rec.ncalls, 2);
    ck_assert_uint_eq(rec.gets, 0);     /* KVM's PMCs count nothing */
    /* After a reset or migration KVM's PMCs are unknown: all again. */
    vpmu_kvm_state_changed(rec.k);
    rec.run.exit_reason = KVM_EXIT_IO;
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    ck_assert_uint_eq(rec.ncalls, 3);
    ck_assert_uint_eq(rec.calls[2].n, 6);
    ck_assert_uint_eq(rec.calls[2].e[0].data, 7);
    ck_assert_uint_eq(rec.refused, 0);
}
END_TEST

/* CLOCK_MONOTONIC, the operator's clock under KVM (kvm.h). */
static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Operator events on a six-counter host: instructions:k, branches:u and
 * cycles.  The guest's counters first, each taking vpmu's host event and
 * KVM's live PMC: with one counting, 4 are left and all three run; with
 * two, 2 are left: events 0 and 1, then (a turn) 2 and 0; with three,
 * none.  instructions:k counts 100 events and the three PMU WRMSRs vpmu
 * served while it ran (each exited, so the source missed it), 103;
 * branches:u 7 in the first turn; cycles 50 in the second.
 */
START_TEST(operator_guest_first)
{
    VpmuOperatorEvent ev[3];
    VpmuOperatorCount c[3];
    VpmuOperatorOpts oo;
    VpmuOperator *op;
    VpmuKvmStats st;
    unsigned n;
    char err[160];

    setup_host(VPMU_KVM_RDPMC_LIVE, true, 6);
    vpmu_kvm_operator_opts(rec.k, &oo);
    ck_assert_uint_eq(oo.host_counters, 6);
    ck_assert_uint_eq(oo.guest_counting, 0);
    ck_assert_int_eq(vpmu_operator_parse("instructions:k,branches:u,cycles",
                                         ~0u, ev, 3, &n, err, sizeof(err)),
                     0);
    ck_assert_int_eq(vpmu_operator_new(&oo, ev, n, mono_ns(), &op, err,
                                       sizeof(err)), 0);
    ck_assert_ptr_null(vpmu_kvm_set_operator(rec.k, op));
    rec.run.exit_reason = KVM_EXIT_IO;
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    /* A set to replace it starts within what this one leaves: 3 of 6. */
    vpmu_kvm_operator_opts(rec.k, &oo);
    ck_assert_uint_eq(oo.guest_counting, 3);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(0), INSNS_ALL_INT);
    ck_assert(!vpmu_kvm_operator_turns(rec.k));
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(1), INSNS_ALL_INT);
    ck_assert(vpmu_kvm_operator_turns(rec.k));
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 0, 100);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_BRANCHES, 0, 3, 7);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_CYCLES, 0, 3, 50);
    vpmu_kvm_operator_turn(rec.k);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_CYCLES, 0, 3, 50);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_BRANCHES, 0, 3, 7);
    exit_msr(KVM_EXIT_X86_WRMSR, CTL(2), INSNS_ALL_INT);
    ck_assert(!vpmu_kvm_operator_turns(rec.k));
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_INSTRUCTIONS, 0, 0, 1000);
    vpmu_fake_source_run(rec.fake, VPMU_EVENT_CYCLES, 0, 3, 1000);
    ck_assert_uint_eq(vpmu_operator_read(op, mono_ns(), c, 3), 3);
    ck_assert_uint_eq(c[0].count, 103);
    ck_assert_uint_eq(c[1].count, 7);
    ck_assert_uint_eq(c[2].count, 50);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_lt(c[i].running_ns, c[i].enabled_ns);
    }
    vpmu_kvm_stats(rec.k, &st);
    ck_assert_uint_eq(st.operator_updates, 5);
    /* A state change outside an exit (migration): the next service. */
    vpmu_kvm_state_changed(rec.k);
    rec.run.exit_reason = KVM_EXIT_IO;
    ck_assert_int_eq(vpmu_kvm_service(rec.k), 0);
    vpmu_kvm_stats(rec.k, &st);
    ck_assert_uint_eq(st.operator_updates, 6);
    /* The guest's counter 0 counted every event: its own three WRMSRs
     * (the one that enabled it too) and 1100 instructions at CPL 0. */
    exit_msr(KVM_EXIT_X86_RDMSR, CTR(0), 0);
    ck_assert_uint_eq(rec.run.msr.data, 3 + 1100);
    ck_assert_ptr_eq(vpmu_kvm_set_operator(rec.k, NULL), op);
    vpmu_operator_free(op);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kvm-mirror");
    TCase *tc = tcase_create("mirror");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, live_first_enable);
    tcase_add_test(tc, live_budget);
    tcase_add_test(tc, live_changed_selectors);
    tcase_add_test(tc, live_state_changed);
    tcase_add_test(tc, live_global);
    tcase_add_test(tc, live_kvm_retired_user);
    tcase_add_test(tc, live_kvm_retired_exits);
    tcase_add_test(tc, snapshot_values_only);
    tcase_add_test(tc, operator_guest_first);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
