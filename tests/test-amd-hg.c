/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD PERF_CTL HostOnly [41] / GuestOnly [40] (APM Vol. 2 13.2.1): a vCPU
 * with SVM (cfg.amd_host_guest) keeps them and counts in host mode, guest
 * mode or both; without SVM they are dropped like KVM drops them.  L1's
 * KVM programs its guest counters with GuestOnly (Linux amd_core_hw_config()
 * for exclude_host events), so a TCG L1 that ignored them counted L1's own
 * user-space QEMU into L2's instructions:u.
 *
 * Every expected count is written out by hand from the events fed to the
 * fake source in each mode.
 */
#include "vectors.h"

#define CTL0            0xC0010200u     /* PERF_CTL0 (PerfCtrExtCore) */
#define CTR0            0xC0010201u     /* PERF_CTR0 */
#define G_CTL           0xC0000301u     /* PerfCntrGlobalCtl */

#define CTL_USR         (1ull << 16)
#define CTL_OS          (1ull << 17)
#define CTL_EN          (1ull << 22)
#define CTL_GUEST_ONLY  (1ull << 40)
#define CTL_HOST_ONLY   (1ull << 41)
/* Instructions retired (0xC0/00) at every CPL. */
#define CTL_INSNS       (CTL_EN | CTL_OS | CTL_USR | 0xC0)

static void hg_init(TestPmu *t, bool svm)
{
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    cfg.amd_host_guest = svm;
    test_pmu_init(t, &cfg);
}

static uint64_t rd(TestPmu *t, uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_int_eq(vpmu_pmu_rdmsr(t->pmu, msr, &v), 0);
    return v;
}

static void wr(TestPmu *t, uint32_t msr, uint64_t val)
{
    ck_assert_int_eq(vpmu_pmu_wrmsr(t->pmu, msr, val), 0);
}

/* Retire @host instructions at CPL 3 in host mode, then @guest in guest. */
static void feed(TestPmu *t, uint64_t host, uint64_t guest)
{
    vpmu_fake_source_set_guest_mode(t->fake, false);
    vpmu_fake_source_run(t->fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, host);
    vpmu_fake_source_set_guest_mode(t->fake, true);
    vpmu_fake_source_run(t->fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, guest);
    vpmu_fake_source_set_guest_mode(t->fake, false);
}

typedef struct HgVec {
    int line;
    bool svm;
    uint64_t hg;            /* HostOnly/GuestOnly bits written */
    uint64_t readback;      /* PERF_CTL0 read back */
    /*
     * After the enabling WRMSR (1 instruction at CPL 0 in host mode), 5
     * host and 7 guest instructions.
     */
    uint64_t count;
} HgVec;

static const HgVec hg_vecs[] = {
    /* With SVM: neither or both count everywhere, one bit one mode. */
    { SRC_LINE, true, 0, CTL_INSNS, 1 + 5 + 7 },
    { SRC_LINE, true, CTL_GUEST_ONLY, CTL_INSNS | CTL_GUEST_ONLY, 7 },
    { SRC_LINE, true, CTL_HOST_ONLY, CTL_INSNS | CTL_HOST_ONLY, 1 + 5 },
    { SRC_LINE, true, CTL_HOST_ONLY | CTL_GUEST_ONLY,
      CTL_INSNS | CTL_HOST_ONLY | CTL_GUEST_ONLY, 1 + 5 + 7 },
    /* Without SVM the bits are dropped: every mode counts. */
    { SRC_LINE, false, CTL_GUEST_ONLY, CTL_INSNS, 1 + 5 + 7 },
    { SRC_LINE, false, CTL_HOST_ONLY, CTL_INSNS, 1 + 5 + 7 },
};

START_TEST(test_hg_counting)
{
    const HgVec *v = &hg_vecs[_i];
    TestPmu t;

    hg_init(&t, v->svm);
    wr(&t, CTL0, CTL_INSNS | v->hg);
    ck_assert_msg(rd(&t, CTL0) == v->readback, "line %d: PERF_CTL0 0x%" PRIx64
                  " want 0x%" PRIx64, v->line, rd(&t, CTL0), v->readback);
    feed(&t, 5, 7);
    ck_assert_msg(rd(&t, CTR0) == v->count, "line %d: PERF_CTR0 %" PRIu64
                  " want %" PRIu64, v->line, rd(&t, CTR0), v->count);
    test_pmu_fini(&t);
}
END_TEST

/*
 * vpmu counts the WRMSRs it serves itself: only on counters that count in
 * the mode the vCPU is in.  A GuestOnly counter enabled by the hypervisor
 * (host mode) must not count the enabling WRMSR.
 */
START_TEST(test_hg_emulated)
{
    TestPmu t;

    hg_init(&t, true);
    wr(&t, CTL0, CTL_INSNS | CTL_GUEST_ONLY);   /* host mode: not counted */
    ck_assert_uint_eq(rd(&t, CTR0), 0);
    wr(&t, G_CTL, 0x3f);                        /* host mode: not counted */
    ck_assert_uint_eq(rd(&t, CTR0), 0);
    vpmu_pmu_instruction_retired(t.pmu, 3, false);
    ck_assert_uint_eq(rd(&t, CTR0), 0);

    vpmu_pmu_set_guest_mode(t.pmu, true);
    wr(&t, G_CTL, 0x3f);                        /* guest mode: +1 */
    ck_assert_uint_eq(rd(&t, CTR0), 1);
    vpmu_pmu_instruction_retired(t.pmu, 3, true);   /* +1 */
    ck_assert_uint_eq(rd(&t, CTR0), 2);

    /* The same counter HostOnly: the reverse. */
    vpmu_pmu_set_guest_mode(t.pmu, false);
    wr(&t, CTL0, CTL_INSNS | CTL_HOST_ONLY);    /* host mode: +1 */
    ck_assert_uint_eq(rd(&t, CTR0), 3);
    vpmu_pmu_set_guest_mode(t.pmu, true);
    vpmu_pmu_instruction_retired(t.pmu, 0, false);
    ck_assert_uint_eq(rd(&t, CTR0), 3);
    test_pmu_fini(&t);
}
END_TEST

/* The bits reach the source; a change of them is a new event. */
START_TEST(test_hg_reprogram)
{
    TestPmu t;
    VpmuFakeStats st;

    hg_init(&t, true);
    wr(&t, CTL0, CTL_INSNS | CTL_GUEST_ONLY);
    feed(&t, 5, 7);
    wr(&t, CTL0, CTL_INSNS | CTL_HOST_ONLY);    /* +1: host-mode WRMSR */
    feed(&t, 5, 7);
    ck_assert_uint_eq(rd(&t, CTR0), 7 + 1 + 5);
    vpmu_fake_source_stats(t.fake, &st);
    ck_assert_uint_eq(st.calls[VPMU_FAKE_OPEN], 2);
    ck_assert_uint_eq(st.closes, 1);
    test_pmu_fini(&t);
}
END_TEST

/* Restored state: the bits are registers only with SVM. */
START_TEST(test_hg_state)
{
    TestPmu a, b, c;
    uint8_t blob[1024];
    size_t n = 0;

    hg_init(&a, true);
    hg_init(&b, true);
    hg_init(&c, false);
    wr(&a, CTL0, CTL_INSNS | CTL_GUEST_ONLY);
    feed(&a, 5, 7);
    ck_assert_uint_le(vpmu_pmu_state_size(a.pmu), sizeof(blob));
    ck_assert_int_eq(vpmu_pmu_save(a.pmu, blob, sizeof(blob), &n), 0);
    ck_assert_int_eq(vpmu_pmu_load(c.pmu, blob, n), -EINVAL);
    ck_assert_uint_eq(rd(&c, CTL0), 0);
    ck_assert_int_eq(vpmu_pmu_load(b.pmu, blob, n), 0);
    ck_assert_uint_eq(rd(&b, CTL0), CTL_INSNS | CTL_GUEST_ONLY);
    ck_assert_uint_eq(rd(&b, CTR0), 7);
    feed(&b, 5, 7);
    ck_assert_uint_eq(rd(&b, CTR0), 14);
    test_pmu_fini(&a);
    test_pmu_fini(&b);
    test_pmu_fini(&c);
}
END_TEST

START_TEST(test_hg_config)
{
    VpmuConfig cfg;
    char err[256];

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.amd_host_guest = true;
    ck_assert_int_eq(vpmu_config_check(&cfg, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "amd_host_guest: AMD-only, must be false for Intel");
    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    cfg.amd_host_guest = true;
    ck_assert_int_eq(vpmu_config_check(&cfg, err, sizeof(err)), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amd-host-guest");
    TCase *tc = tcase_create("hg");

    tcase_add_loop_test(tc, test_hg_counting, 0, ARRAY_SIZE(hg_vecs));
    tcase_add_test(tc, test_hg_emulated);
    tcase_add_test(tc, test_hg_reprogram);
    tcase_add_test(tc, test_hg_state);
    tcase_add_test(tc, test_hg_config);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
