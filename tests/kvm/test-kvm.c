/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/kvm without KVM: the MSR filter (exact ranges and bitmaps), the
 * exit handler on a synthetic kvm_run (fds are /dev/null: every KVM ioctl
 * fails with ENOTTY, which also exercises the error paths), bad options.
 *
 * Bitmap polarity (KVM UAPI): bit = 1 allows (KVM handles the MSR),
 * bit = 0 makes it exit.  Offsets below are MSR - range base.
 */
#include <check.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

#include "check-main.h"

static uint8_t bitmaps[VPMU_KVM_FILTER_BITMAP_BYTES];

/* The bytes of @r's bitmap that are not 0xFF: {byte, value} pairs. */
typedef struct ByteVal {
    unsigned byte;
    uint8_t val;
} ByteVal;

static void expect_bitmap(const struct kvm_msr_filter_range *r, size_t bytes,
                          const ByteVal *exp, size_t n)
{
    for (size_t b = 0; b < bytes; b++) {
        uint8_t want = 0xFF;

        for (size_t i = 0; i < n; i++) {
            if (exp[i].byte == b) {
                want = exp[i].val;
            }
        }
        ck_assert_msg(r->bitmap[b] == want, "base 0x%x byte %zu: 0x%02x, "
                      "expected 0x%02x", r->base, b, r->bitmap[b], want);
    }
}

/*
 * Intel default: v2, 8 GP, 3 fixed, PDCM + FW_WRITE.  One range
 * 0xC1-0x4C8 = 0x408 = 1032 MSRs; 1032 bits -> 17 u64 = 136 bytes.
 * Exiting offsets: PMC0-7 0-7 (byte 0 = 0x00); EVTSEL0-7 0x186-0x18D =
 * 197-204 (byte 24 bits 5-7 -> 0x1F, byte 25 bits 0-4 -> 0xE0); DEBUGCTL
 * 0x1D9 = 280 (byte 35 bit 0 -> 0xFE); FIXED_CTR0-2 0x309-0x30B = 584-586
 * (byte 73 bits 0-2 -> 0xF8); PERF_CAPABILITIES 0x345 = 644 (byte 80
 * bit 4 -> 0xEF); FIXED_CTR_CTRL..GLOBAL_OVF_CTRL 0x38D-0x390 = 716-719
 * (byte 89 bits 4-7 -> 0x0F; v2 has no 0x391/0x392); A_PMC0-7
 * 0x4C1-0x4C8 = 1024-1031 (byte 128 = 0x00).  Bytes 129-135: padding.
 */
START_TEST(filter_intel_default)
{
    static const ByteVal exp[] = { { 0, 0x00 }, { 24, 0x1F }, { 25, 0xE0 },
                                   { 35, 0xFE }, { 73, 0xF8 }, { 80, 0xEF },
                                   { 89, 0x0F }, { 128, 0x00 } };
    struct kvm_msr_filter f;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, sizeof(bitmaps)), 1);
    ck_assert_uint_eq(f.flags, KVM_MSR_FILTER_DEFAULT_ALLOW);
    ck_assert_uint_eq(f.ranges[0].flags, KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE);
    ck_assert_uint_eq(f.ranges[0].base, 0xC1);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 1032);
    ck_assert_ptr_eq(f.ranges[0].bitmap, bitmaps);
    expect_bitmap(&f.ranges[0], 136, exp, sizeof(exp) / sizeof(exp[0]));
    ck_assert_uint_eq(f.ranges[1].nmsrs, 0);
}
END_TEST

/*
 * Intel v1, 4 GP, no PDCM: PMC0-3 0xC1-0xC4, EVTSEL0-3 0x186-0x189,
 * DEBUGCTL 0x1D9; no fixed, no global, no 0x345, no A_PMC.  One range
 * 0xC1-0x1D9 = 281 MSRs -> 5 u64 = 40 bytes.  Offsets 0-3 (byte 0 ->
 * 0xF0), 197-200 (byte 24 bits 5-7 -> 0x1F, byte 25 bit 0 -> 0xFE),
 * 280 (byte 35 bit 0 -> 0xFE).
 */
START_TEST(filter_intel_v1)
{
    static const ByteVal exp[] = { { 0, 0xF0 }, { 24, 0x1F }, { 25, 0xFE },
                                   { 35, 0xFE } };
    struct kvm_msr_filter f;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.intel_version = 1;
    cfg.nr_gp = 4;
    cfg.nr_fixed = 0;
    cfg.fixed_width = 0;
    cfg.pdcm = false;
    cfg.perf_capabilities = 0;
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, sizeof(bitmaps)), 1);
    ck_assert_uint_eq(f.ranges[0].base, 0xC1);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 281);
    expect_bitmap(&f.ranges[0], 40, exp, sizeof(exp) / sizeof(exp[0]));
}
END_TEST

/*
 * AMD PerfMonV2, 6 counters: 0xC0000300-303 (global) and 0xC0010000-07
 * (K7) + 0xC0010200-0B (F15H) are 0xFD00 apart, past the 12288-MSR
 * bitmap limit: two ranges.  Range 0: 4 MSRs, 8 bytes, byte 0 = 0xF0.
 * Range 1: 0xC0010000-0xC001020B = 524 MSRs -> 9 u64 = 72 bytes at
 * bitmaps + 8; offsets 0-7 (byte 0 = 0x00), 512-523 (byte 64 = 0x00,
 * byte 65 bits 0-3 -> 0xF0).
 */
START_TEST(filter_amd_v2)
{
    static const ByteVal g[] = { { 0, 0xF0 } };
    static const ByteVal c[] = { { 0, 0x00 }, { 64, 0x00 }, { 65, 0xF0 } };
    struct kvm_msr_filter f;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, sizeof(bitmaps)), 2);
    ck_assert_uint_eq(f.ranges[0].base, 0xC0000300);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 4);
    expect_bitmap(&f.ranges[0], 8, g, 1);
    ck_assert_uint_eq(f.ranges[1].base, 0xC0010000);
    ck_assert_uint_eq(f.ranges[1].nmsrs, 524);
    ck_assert_ptr_eq(f.ranges[1].bitmap, bitmaps + 8);
    expect_bitmap(&f.ranges[1], 72, c, 3);
}
END_TEST

/* AMD K7: only the 4 legacy pairs 0xC0010000-07: 8 MSRs, byte 0 = 0x00. */
START_TEST(filter_amd_k7)
{
    static const ByteVal exp[] = { { 0, 0x00 } };
    struct kvm_msr_filter f;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_AMD);
    cfg.amd_level = VPMU_AMD_K7;
    cfg.nr_gp = 4;
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, sizeof(bitmaps)), 1);
    ck_assert_uint_eq(f.ranges[0].base, 0xC0010000);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 8);
    expect_bitmap(&f.ranges[0], 8, exp, 1);
}
END_TEST

/* Bad input: a bad config, missing pointers, too little storage. */
START_TEST(filter_errors)
{
    struct kvm_msr_filter f;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    ck_assert_int_eq(vpmu_kvm_msr_filter(NULL, &f, bitmaps, sizeof(bitmaps)), -EINVAL);
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, NULL, bitmaps, sizeof(bitmaps)), -EINVAL);
    /*
     * Intel's one range needs 136 bytes.  With 135 the merge stops before
     * A_PMC: 0xC1-0x390 (720 MSRs, 96 bytes) + 0x4C1-0x4C8 (8 bytes).
     * With 8, PMC0-7 fit (8 bytes) but EVTSEL0-7 fit neither merged
     * (32 bytes) nor alone: -ENOSPC, and the filter is left empty.
     */
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, 136), 1);
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, 135), 2);
    ck_assert_uint_eq(f.ranges[0].base, 0xC1);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 720);
    ck_assert_uint_eq(f.ranges[1].base, 0x4C1);
    ck_assert_uint_eq(f.ranges[1].nmsrs, 8);
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, 8), -ENOSPC);
    ck_assert_uint_eq(f.ranges[0].nmsrs, 0);
    cfg.nr_gp = 9;
    ck_assert_int_eq(vpmu_kvm_msr_filter(&cfg, &f, bitmaps, sizeof(bitmaps)), -EINVAL);
}
END_TEST

typedef struct Fixture {
    int fd;
    uint64_t val;               /* what exit_msr() read */
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuKvmOpts opts;
    VpmuKvm *k;
    char log[256];
    unsigned logs;
} Fixture;

static Fixture fx;

static void fx_log(void *opaque, const char *msg)
{
    Fixture *f = opaque;

    snprintf(f->log, sizeof(f->log), "%s", msg);
    f->logs++;
}

static void setup(void)
{
    memset(&fx, 0, sizeof(fx));
    fx.fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    ck_assert_int_ge(fx.fd, 0);
    ck_assert_int_eq(vpmu_fake_source_new(&fx.fake), 0);
    vpmu_config_init(&fx.cfg, VPMU_VENDOR_INTEL);
    fx.opts = (VpmuKvmOpts){ .vm_fd = fx.fd, .vcpu_fd = fx.fd,
                             .cfg = &fx.cfg,
                             .source_ops = vpmu_fake_source_ops(),
                             .source = fx.fake, .log = fx_log, .opaque = &fx,
                             .kvm_pmu = -1 };
}

static void teardown(void)
{
    vpmu_kvm_free(fx.k);
    vpmu_fake_source_free(fx.fake);
    close(fx.fd);
}

/*
 * An MSR exit as QEMU's filter handlers serve it: kvm_run's msr.index and
 * msr.data in; a read's value in fx.val, which -ENOENT and -EINVAL leave.
 */
static int exit_msr(uint32_t reason, uint32_t msr, uint64_t data)
{
    fx.val = data;
    return reason == KVM_EXIT_X86_RDMSR ? vpmu_kvm_rdmsr(fx.k, msr, &fx.val)
                                        : vpmu_kvm_wrmsr(fx.k, msr, data);
}

START_TEST(new_bad_opts)
{
    char err[128] = "";
    VpmuKvmOpts o = fx.opts;

    o.cfg = NULL;
    ck_assert_int_eq(vpmu_kvm_new(&o, &fx.k, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_null(fx.k);
    ck_assert_ptr_nonnull(strstr(err, "cfg"));
    o = fx.opts;
    o.vm_fd = -1;
    ck_assert_int_eq(vpmu_kvm_new(&o, &fx.k, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "vm_fd"));
    o = fx.opts;
    fx.cfg.nr_gp = 9;
    ck_assert_int_eq(vpmu_kvm_new(&o, &fx.k, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "nr_gp"));
    ck_assert_ptr_null(fx.k);
}
END_TEST

/*
 * Through the exit handlers: served reads and writes, #GP, -ENOENT
 * leaving the value untouched, and the exact +1s: PMC0 counts
 * instructions at CPL 0 (EVTSEL0 = EN | OS | C0H = 0x4200C0; GLOBAL_CTRL
 * resets with the GP bits set, so the EVTSEL write itself enables it):
 *   WRMSR EVTSEL0          enabling write, counted: 1
 *   RDMSR EVTSEL0          served read: 2
 *   WRMSR GLOBAL_STATUS    #GP: 2
 *   RDMSR 0x10             not vpmu's (-ENOENT): 2
 *   RDMSR PMC0             reads 2, then 3
 *   RDMSR GLOBAL_STATUS    0: the #GP write changed nothing
 *   RDMSR PMC2             #GP: the PMU has 2 counters
 *   WRMSR 0x10             not vpmu's: no exit counted
 * Exits: 5 reads (one #GP), 2 writes (one #GP).
 */
START_TEST(exit_counts)
{
    char err[128];
    VpmuKvmStats st;

    fx.cfg.nr_gp = 2;           /* PMC2 (0xC3) is absent: #GP */
    ck_assert_int_eq(vpmu_kvm_new(&fx.opts, &fx.k, err, sizeof(err)), 0);
    ck_assert_str_eq(fx.log, "KVM has no vPMU: guest RDPMC takes #GP");
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x186, 0x4200C0), 0);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0x186, 0), 0);
    ck_assert_uint_eq(fx.val, 0x4200C0);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x38E, 1), -EINVAL);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0x10, 0x1234), -ENOENT);
    ck_assert_uint_eq(fx.val, 0x1234);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0xC1, 0), 0);
    ck_assert_uint_eq(fx.val, 2);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0xC1, 0), 0);
    ck_assert_uint_eq(fx.val, 3);
    /* The #GP write left GLOBAL_STATUS as it was: no overflow. */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0x38E, 0x5555), 0);
    ck_assert_uint_eq(fx.val, 0);
    /* An absent counter's #GP leaves the VMM's value. */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0xC3, 0x77), -EINVAL);
    ck_assert_uint_eq(fx.val, 0x77);
    /* Not vpmu's: neither served nor counted below. */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x10, 0), -ENOENT);
    vpmu_kvm_stats(fx.k, &st);
    ck_assert_uint_eq(st.rdmsr_exits, 5);
    ck_assert_uint_eq(st.wrmsr_exits, 2);
    ck_assert_uint_eq(st.gp_injected, 2);
    ck_assert_uint_eq(st.mirrors + st.mirror_errors, 0);     /* no vPMU */
    ck_assert(!st.kvm_pmu);
    ck_assert_int_eq(vpmu_kvm_mirror(fx.k), -ENODEV);
}
END_TEST

/*
 * kvm_pmu = 1 on /dev/null fds: every mirror is a failing KVM_SET_MSRS
 * (ENOTTY), counted and logged once; in snapshot mode, stopping a counter
 * (EN 1 -> 0) mirrors, re-enabling does not.  A PMI whose KVM_GET_LAPIC fails is an
 * inject error returned to the VMM; nothing is lost from the PMU.
 */
START_TEST(mirror_and_pmi_errors)
{
    char err[128];
    VpmuKvmStats st;
    unsigned logs;

    fx.opts.kvm_pmu = 1;
    fx.opts.rdpmc = VPMU_KVM_RDPMC_SNAPSHOT;    /* live: test-kvm-mirror */
    ck_assert_int_eq(vpmu_kvm_new(&fx.opts, &fx.k, err, sizeof(err)), 0);
    logs = fx.logs;
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x186, 0x52003C), 0);
    vpmu_kvm_stats(fx.k, &st);
    ck_assert_uint_eq(st.mirror_errors, 0);     /* enabling: no mirror */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x186, 0x12003C), 0);
    vpmu_kvm_stats(fx.k, &st);
    ck_assert_uint_eq(st.mirror_errors, 1);     /* EN 1 -> 0: mirrored */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0x38E, 0), 0);
    vpmu_kvm_stats(fx.k, &st);
    ck_assert_uint_eq(st.mirror_errors, 2);     /* GLOBAL_STATUS read */
    ck_assert_uint_eq(fx.logs, logs + 1);       /* logged once */
    ck_assert_int_eq(vpmu_kvm_mirror(fx.k), -ENOTTY);

    /* PMC0 = -2 with INT: two cycles overflow it and request a PMI. */
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x186, 0x52003C), 0);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_WRMSR, 0x4C1, 0xFFFFFFFFFFFEull), 0);
    ck_assert_int_eq(vpmu_kvm_service(fx.k), 0);    /* nothing pending */
    vpmu_fake_source_run(fx.fake, VPMU_EVENT_CYCLES, 0, 0, 2);
    ck_assert_int_eq(vpmu_kvm_service(fx.k), -ENOTTY);
    ck_assert_int_eq(vpmu_kvm_service(fx.k), 0);    /* consumed */
    vpmu_kvm_stats(fx.k, &st);
    ck_assert_uint_eq(st.inject_errors, 1);
    ck_assert_uint_eq(st.pmi_nmi + st.pmi_fixed + st.pmi_masked, 0);
    ck_assert_int_eq(exit_msr(KVM_EXIT_X86_RDMSR, 0x38E, 0), 0);
    ck_assert_uint_eq(fx.val, 1);      /* the overflow is kept */
}
END_TEST

/* CPUID through the front end: leaf 0AH of the default Intel config. */
START_TEST(cpuid_leaf)
{
    char err[128];
    uint32_t regs[4] = { 0 };

    ck_assert_int_eq(vpmu_kvm_new(&fx.opts, &fx.k, err, sizeof(err)), 0);
    ck_assert_int_eq(vpmu_kvm_cpuid(fx.k, 0xA, 0, regs), 0);
    ck_assert_uint_eq(regs[0] & 0xFFFFFF, 0x300802);    /* v2, 8 x 48 bits */
    ck_assert_int_eq(vpmu_kvm_cpuid(fx.k, 0x7, 0, regs), -ENOENT);
    ck_assert_ptr_nonnull(vpmu_kvm_pmu(fx.k));
}
END_TEST

static Suite *kvm_suite(void)
{
    Suite *s = suite_create("kvm");
    TCase *f = tcase_create("filter");
    TCase *e = tcase_create("exits");

    tcase_add_test(f, filter_intel_default);
    tcase_add_test(f, filter_intel_v1);
    tcase_add_test(f, filter_amd_v2);
    tcase_add_test(f, filter_amd_k7);
    tcase_add_test(f, filter_errors);
    suite_add_tcase(s, f);
    tcase_add_checked_fixture(e, setup, teardown);
    tcase_add_test(e, new_bad_opts);
    tcase_add_test(e, exit_counts);
    tcase_add_test(e, mirror_and_pmi_errors);
    tcase_add_test(e, cpuid_leaf);
    suite_add_tcase(s, e);
    return s;
}

int main(void)
{
    return run_suite(kvm_suite());
}
