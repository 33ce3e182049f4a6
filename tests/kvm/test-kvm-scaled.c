/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The KVM front end's catch-up (vpmu_kvm__catch_up(), kvm-mirror.c) on
 * the perf source with vpmu-multiplex=scaled.  The catch-up adds to a
 * guest counter what KVM's live PMC gained beyond vpmu's value, which is
 * what KVM retired itself only while vpmu's value moved by what its host
 * event counted.  A scaled credit is an estimate, even over an interval
 * the host event ran whole: the difference is then the estimate's error,
 * and adding it would count the same events twice once the estimate
 * takes them in.
 *
 * The perf source runs on the fake system calls of tests/perf/fake-sys.h
 * (one event per ns the event runs in guest mode, none in host mode);
 * a recorder stands in for KVM: it keeps the PMCs vpmu writes and adds
 * what KVM's own pinned host event counts, every guest-mode event.
 */
#include <check.h>
#include <string.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>
#include <vpmu/perf.h>

#include "check-main.h"
#include "perf/fake-sys.h"

#define CTL(i)      (0xC0010200u + 2u * (i))    /* PERF_CTLi */
#define CTR(i)      (0xC0010201u + 2u * (i))    /* PERF_CTRi */
/* PERF_CTL: instructions (C0h), USR 16, EN 22: perf's instructions:u. */
#define INSNS_USR   0x4100C0ull
#define INS         PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS

typedef struct Rig {
    FakeSys fs;
    VpmuPerfSource *src;
    VpmuConfig cfg;
    VpmuKvm *k;
    uint64_t kvm_ctl[6], kvm_ctr[6];    /* KVM's PERF_CTLi, PERF_CTRi */
} Rig;

static Rig rig;

static int rig_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
    struct kvm_msrs *m = arg;

    (void)opaque;
    (void)fd;
    if (req == KVM_CHECK_EXTENSION) {
        return 1;
    }
    if (req == KVM_SET_PMU_EVENT_FILTER) {
        return 0;
    }
    ck_assert_msg(req == KVM_GET_MSRS || req == KVM_SET_MSRS,
                  "unexpected ioctl 0x%lx", req);
    for (uint32_t i = 0; i < m->nmsrs; i++) {
        uint32_t msr = m->entries[i].index;
        uint64_t *reg;

        if (msr < CTL(0) || msr > CTR(5)) {
            continue;       /* the global control and status */
        }
        reg = (msr & 1) ? rig.kvm_ctr : rig.kvm_ctl;
        if (req == KVM_GET_MSRS) {
            m->entries[i].data = reg[(msr - CTL(0)) / 2];
        } else {
            reg[(msr - CTL(0)) / 2] = m->entries[i].data;
        }
    }
    return (int)m->nmsrs;
}

static void setup(void)
{
    VpmuPerfSourceOpts po = {
        .multiplex = VPMU_PERF_MULTIPLEX_SCALED, .exclude_host = true,
        .guest_vendor = VPMU_VENDOR_AMD, .host_vendor = VPMU_VENDOR_AMD,
        .sysroot = "/nonexistent/vpmu-test-sysroot",
    };
    VpmuKvmOpts ko;
    char err[128];

    memset(&rig, 0, sizeof(rig));
    fake_sys_init(&rig.fs, true);
    po.sys = &rig.fs.sys;
    ck_assert_int_eq(vpmu_perf_source_new(&po, &rig.src), 0);
    vpmu_config_init(&rig.cfg, VPMU_VENDOR_AMD);     /* PerfMonV2, 6 */
    rig.cfg.events = vpmu_perf_source_events(rig.src);
    ko = (VpmuKvmOpts){ .vm_fd = 100, .vcpu_fd = 101, .cfg = &rig.cfg,
                        .source_ops = vpmu_perf_source_ops(),
                        .source = rig.src, .kvm_pmu = 1,
                        .rdpmc = VPMU_KVM_RDPMC_LIVE, .host_counters = 12,
                        .ioctl = rig_ioctl };
    ck_assert_int_eq(vpmu_kvm_new(&ko, &rig.k, err, sizeof(err)), 0);
}

static void teardown(void)
{
    vpmu_kvm_free(rig.k);
    vpmu_perf_source_free(rig.src);
    ck_assert(fake_sys_all_closed_once(&rig.fs));
}

/*
 * @guest ns in guest mode, then @host in host mode, the host running
 * vpmu's event 1/@den of the time; KVM's pinned event counts every guest
 * event while its selector 0 counts instructions:u (live).
 */
static void run(uint64_t guest, uint64_t host, uint64_t den)
{
    rig.fs.run_den = den;
    fake_sys_run(&rig.fs, INS, guest);
    rig.fs.host_mode = true;
    fake_sys_run(&rig.fs, INS, host);
    rig.fs.host_mode = false;
    rig.fs.run_den = 1;
    if (rig.kvm_ctl[0] == INSNS_USR) {
        rig.kvm_ctr[0] += guest;
    }
}

/* The guest's RDMSR of PERF_CTR0, an exit vpmu serves. */
static uint64_t read_ctr0(void)
{
    uint64_t v;

    ck_assert_int_eq(vpmu_kvm_rdmsr(rig.k, CTR(0), &v), 0);
    ck_assert_int_eq(vpmu_kvm_service(rig.k), 0);
    return v;
}

/*
 * instructions:u on counter 0; the span's sums are V (counted), E
 * (enabled), R (running); the guest reads max(V * E / R) so far.
 * 1. 400 ns in guest mode, vpmu's event running 100: V 100, E 400, R 100,
 *    400.  KVM's PMC 400.
 * 2. 300 ns in host mode and 100 in guest mode, running all 400: V 200,
 *    E 800, R 500, 320: the counter holds 400.  KVM's PMC gained 100 and
 *    vpmu's value nothing, though no read of this interval was
 *    multiplexed: the 100 are the estimate's, not KVM's own.
 * 3. 10000 ns in guest mode, running all: V 10200, E 10800, R 10500:
 *    floor(110160000 / 10500) = 10491, perf's estimate, which holds the
 *    100 of step 2.  Had the catch-up added them in step 2, the guest
 *    would read 10591.
 * 4. 100 ns more, running all: floor(10300 * 10900 / 10600) = 10591,
 *    100 more, what the host counted (not a scaled read).  KVM's PMC,
 *    which serves the guest's RDPMC, holds its own 10600 until the guest
 *    stops the counter; the stop's mirror then writes vpmu's 10591 there,
 *    so the RDPMC Linux reads a stopped counter with gets the estimate,
 *    tail included.
 */
START_TEST(scaled_not_caught_up)
{
    VpmuPerfStats st;

    ck_assert_int_eq(vpmu_kvm_wrmsr(rig.k, CTL(0), INSNS_USR), 0);
    ck_assert_int_eq(vpmu_kvm_service(rig.k), 0);
    ck_assert_uint_eq(rig.kvm_ctr[0], 0);
    run(400, 0, 4);
    ck_assert_uint_eq(read_ctr0(), 400);
    run(100, 300, 1);
    ck_assert_uint_eq(read_ctr0(), 400);
    run(10000, 0, 1);
    ck_assert_uint_eq(read_ctr0(), 10491);
    run(100, 0, 1);
    ck_assert_uint_eq(rig.kvm_ctr[0], 10600);
    ck_assert_int_eq(vpmu_kvm_wrmsr(rig.k, CTL(0), 0), 0);
    ck_assert_int_eq(vpmu_kvm_service(rig.k), 0);
    ck_assert_uint_eq(rig.kvm_ctl[0], 0);
    ck_assert_uint_eq(rig.kvm_ctr[0], 10591);
    ck_assert_uint_eq(read_ctr0(), 10591);
    vpmu_perf_source_stats(rig.src, &st);
    ck_assert_uint_eq(st.multiplexed_reads, 1);
    ck_assert_uint_eq(st.scaled_reads, 3);
}
END_TEST

static Suite *scaled_suite(void)
{
    Suite *s = suite_create("kvm-scaled");
    TCase *tc = tcase_create("catch-up");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, scaled_not_caught_up);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(scaled_suite());
}
