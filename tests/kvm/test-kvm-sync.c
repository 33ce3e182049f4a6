/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who serves which PMU MSR (VpmuKvmSync, vpmu/kvm/kvm-sync.c) against the
 * KVM model of kvm-model.h (AMD PerfMonV2 unless a test says Intel).
 * Every expectation is derived by hand in the comment above its test.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

#include "check-main.h"
#include "kvm-model.h"

/* Which accesses KVM serves, per mode, and why LINUX is refused. */
START_TEST(roles)
{
    VpmuKvmCaps none = { .pmu = true }, all = { true, true };
    VpmuConfig amd, v1;
    unsigned rd, wr;
    char err[160];

    vpmu_config_init(&amd, VPMU_VENDOR_AMD);
    vpmu_config_init(&v1, VPMU_VENDOR_INTEL);
    v1.intel_version = 1;
    v1.nr_fixed = 0;
    v1.fixed_width = 0;
    v1.pdcm = false;
    v1.perf_capabilities = 0;
    ck_assert_int_eq(vpmu_kvm_roles(&amd, VPMU_KVM_SYNC_STRICT, &all, &rd,
                                    &wr, err, sizeof(err)), 0);
    ck_assert_uint_eq(rd | wr, 0);
    ck_assert_int_eq(vpmu_kvm_roles(&amd, VPMU_KVM_SYNC_AUTO, &all, &rd, &wr,
                                    err, sizeof(err)), 0);
    ck_assert_uint_eq(rd, ROLE(STATUS));
    ck_assert_uint_eq(wr, ROLE(STATUS_CLEAR));
    ck_assert_int_eq(vpmu_kvm_roles(&amd, VPMU_KVM_SYNC_AUTO, &none, &rd,
                                    &wr, err, sizeof(err)), 0);
    ck_assert_uint_eq(rd | wr, 0);
    ck_assert_int_eq(vpmu_kvm_roles(&amd, VPMU_KVM_SYNC_LINUX, &all, &rd,
                                    &wr, err, sizeof(err)), 0);
    ck_assert_uint_eq(rd, ROLE(STATUS));
    ck_assert_uint_eq(wr, ROLE(STATUS_CLEAR) | ROLE(COUNTER) |
                          ROLE(SELECTOR));
    ck_assert_int_eq(vpmu_kvm_roles(&amd, VPMU_KVM_SYNC_LINUX, &none, &rd,
                                    &wr, err, sizeof(err)), -ENOTSUP);
    ck_assert_str_eq(err, "sync=linux needs the global control in the "
                     "guest's PMU (Intel version 2+, AMD PerfMonV2) and in "
                     "KVM's vPMU (KVM's vPMU has no global MSRs)");
    ck_assert_int_eq(vpmu_config_check(&v1, err, sizeof(err)), 0);
    ck_assert_int_eq(vpmu_kvm_roles(&v1, VPMU_KVM_SYNC_LINUX, &all, &rd,
                                    &wr, err, sizeof(err)), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err, "(the guest's PMU has none)"));
    ck_assert_int_eq(vpmu_kvm_roles(&amd, (VpmuKvmSync)7, &all, &rd, &wr,
                                    err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "sync: 7 is not a VpmuKvmSync");
    /* AUTO holds the status only while KVM's PMCs count live. */
    ck_assert_int_eq(vpmu_kvm_sync_for(VPMU_KVM_SYNC_AUTO,
                                       VPMU_KVM_RDPMC_SNAPSHOT),
                     VPMU_KVM_SYNC_STRICT);
    ck_assert_int_eq(vpmu_kvm_sync_for(VPMU_KVM_SYNC_AUTO,
                                       VPMU_KVM_RDPMC_LIVE),
                     VPMU_KVM_SYNC_AUTO);
    ck_assert_int_eq(vpmu_kvm_sync_for(VPMU_KVM_SYNC_LINUX,
                                       VPMU_KVM_RDPMC_SNAPSHOT),
                     VPMU_KVM_SYNC_LINUX);
}
END_TEST

/* LINUX with snapshot RDPMC: refused, the reason named; AUTO is STRICT. */
START_TEST(sync_rdpmc)
{
    static const VpmuKvmCaps caps = { .pmu = true, .global_msrs = true };
    VpmuKvmOpts o = { .vm_fd = 100, .vcpu_fd = 101,
                      .cfg = &m.cfg, .source_ops = vpmu_fake_source_ops(),
                      .caps = &caps, .sync = VPMU_KVM_SYNC_LINUX,
                      .rdpmc = VPMU_KVM_RDPMC_SNAPSHOT,
                      .ioctl = model_ioctl };
    VpmuKvmStats st;
    char err[160];

    ck_assert_int_eq(vpmu_fake_source_new(&m.fake), 0);
    o.source = m.fake;
    vpmu_config_init(&m.cfg, VPMU_VENDOR_AMD);
    ck_assert_int_eq(vpmu_kvm_new(&o, &m.k, err, sizeof(err)), -ENOTSUP);
    ck_assert_ptr_null(m.k);
    ck_assert_str_eq(err, "sync=linux needs rdpmc=live (KVM's PMCs counting)");
    o.sync = VPMU_KVM_SYNC_AUTO;
    ck_assert_int_eq(vpmu_kvm_new(&o, &m.k, err, sizeof(err)), 0);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_int_eq(st.sync, VPMU_KVM_SYNC_STRICT);
    ck_assert_uint_eq(st.kvm_read_roles | st.kvm_write_roles, 0);
}
END_TEST

/* KVM's kvm_msr_allowed(): the first range with the access's flag. */
static bool allowed(const struct kvm_msr_filter *f, uint32_t msr,
                    uint32_t type)
{
    for (unsigned i = 0; i < KVM_MSR_FILTER_MAX_RANGES; i++) {
        const struct kvm_msr_filter_range *r = &f->ranges[i];

        if (r->nmsrs && msr >= r->base && msr - r->base < r->nmsrs &&
            (r->flags & type)) {
            return r->bitmap[(msr - r->base) / 8] &
                   (1u << ((msr - r->base) % 8));
        }
    }
    return true;        /* KVM_MSR_FILTER_DEFAULT_ALLOW */
}

/*
 * The filters: AUTO on an AMD PerfMonV2 guest leaves the status read and
 * STATUS_CLR write to KVM (read and write ranges apart: 4); LINUX also
 * counter and selector writes; reads of those, and global control
 * writes, still exit.  Intel AUTO: GLOBAL_STATUS (38EH) reads and
 * OVF_CTRL (390H) writes.
 */
START_TEST(filters)
{
    static uint8_t bm[VPMU_KVM_FILTER_BITMAP_BYTES];
    const uint32_t R = KVM_MSR_FILTER_READ, W = KVM_MSR_FILTER_WRITE;
    struct kvm_msr_filter f;
    VpmuConfig amd, intel;

    vpmu_config_init(&amd, VPMU_VENDOR_AMD);
    vpmu_config_init(&intel, VPMU_VENDOR_INTEL);
    ck_assert_int_eq(vpmu_kvm_msr_filter_roles(&amd, ROLE(STATUS),
                                               ROLE(STATUS_CLEAR), &f, bm,
                                               sizeof(bm)), 4);
    ck_assert(allowed(&f, G_STATUS, R));
    ck_assert(!allowed(&f, G_STATUS, W));
    ck_assert(allowed(&f, G_CLR, W));
    ck_assert(!allowed(&f, G_CTL, R) && !allowed(&f, G_CTL, W));
    ck_assert(!allowed(&f, CTL(3), W) && !allowed(&f, CTR(5), R));
    ck_assert(allowed(&f, 0xC0010015u, R));     /* HWCR: not the PMU's */
    ck_assert_int_eq(vpmu_kvm_msr_filter_roles(&amd, ROLE(STATUS),
                                               ROLE(STATUS_CLEAR) |
                                               ROLE(COUNTER) |
                                               ROLE(SELECTOR), &f, bm,
                                               sizeof(bm)), 3);
    ck_assert(allowed(&f, CTL(0), W) && allowed(&f, CTR(5), W));
    ck_assert(!allowed(&f, CTL(0), R) && !allowed(&f, CTR(5), R));
    ck_assert(!allowed(&f, G_CTL, W) && allowed(&f, G_CLR, W));
    /* K7 aliases are counters and selectors too. */
    ck_assert(allowed(&f, 0xC0010000u, W) && !allowed(&f, 0xC0010004u, R));
    ck_assert_int_eq(vpmu_kvm_msr_filter_roles(&intel, ROLE(STATUS),
                                               ROLE(STATUS_CLEAR), &f, bm,
                                               sizeof(bm)), 2);
    ck_assert(allowed(&f, 0x38E, R) && !allowed(&f, 0x38E, W));
    ck_assert(allowed(&f, 0x390, W) && !allowed(&f, 0x390, R));
    ck_assert(!allowed(&f, 0x38F, W) && !allowed(&f, 0xC1, R));
    ck_assert_int_eq(vpmu_kvm_msr_filter_roles(&intel, 0, 0, &f, bm, 8),
                     -ENOSPC);
}
END_TEST

/*
 * AUTO: KVM holds the status.  As Linux, the guest first turns the
 * global control off (its reset value enables all six on AMD), then
 * counter 0 counts instructions (USR, OS, INT) from -10: the enabling
 * global WRMSR counts (-9), 9 user instructions overflow it, in vpmu's
 * source and in KVM's live PMC alike: KVM sets status 1 itself (whatever
 * INT says), so vpmu's PMI finds it there and writes none.  The guest
 * acknowledges it there (STATUS_CLR) and vpmu's status follows at its
 * next look (vpmu_kvm_sync()).  Preset again (the preset WRMSR counts:
 * -9), 8 user instructions in both, then one that only vpmu's host event
 * counts (two host events of an event that is not exact): vpmu's PMI,
 * and its mirror writes status 1 into KVM, the only status write.  No
 * status access exits: 5 WRMSR exits.
 */
START_TEST(auto_status)
{
    VpmuKvmStats st;

    model_setup(VPMU_VENDOR_AMD, VPMU_KVM_SYNC_AUTO);
    model_exit_wrmsr(G_CTL, 0);
    model_exit_wrmsr(CTL(0), INSNS_ALL_INT);
    model_exit_wrmsr(CTR(0), MASK48 - 9);         /* -10 */
    model_exit_wrmsr(G_CTL, 1);
    model_user(9);
    ck_assert_uint_eq(m.nmis, 1);
    ck_assert_uint_eq(m.status, 1);
    model_wrmsr(G_CLR, 1);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 1);    /* not looked yet */
    ck_assert_int_eq(vpmu_kvm_sync(m.k), 0);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 0);
    model_exit_wrmsr(CTR(0), MASK48 - 9);
    model_user(8);
    ck_assert_uint_eq(m.nmis, 1);
    /* vpmu's host event counts one KVM's PMC does not (not exact). */
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1);
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
    ck_assert_uint_eq(m.nmis, 2);
    ck_assert_uint_eq(m.status, 1);
    ck_assert_uint_eq(m.last[m.nlast - 1].index, G_STATUS);
    ck_assert_uint_eq(m.last[m.nlast - 1].data, 1);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.status_writes, 1);
    ck_assert_uint_eq(st.kvm_read_roles, ROLE(STATUS));
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_SELECTOR][1], 1);
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_COUNTER][1], 2);
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_GLOBAL_CTRL][1], 2);
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_STATUS][0], 0);
    ck_assert_uint_eq(st.nmi, 2);
    ck_assert_uint_eq(st.get_lapic, 2);
}
END_TEST

/*
 * LINUX, Linux's PerfMonV2 PMI handler.  Set-up as Linux does it: the
 * selector and the preset go to KVM while the global control is off,
 * vpmu takes them at the global enable (one exit), which counts: -9.
 * KVM's selector keeps INT, so the PMI is KVM's: 9 user instructions wrap
 * KVM's PMC, KVM sets status 1 and raises the PMI, with no exit and no
 * call to vpmu (vpmu's source has a full wrap as its period).  The
 * handler: global 0 (exit: vpmu takes KVM's raise, pmi_kvm 1), status
 * read, preset -10 and STATUS_CLR in KVM, global 1 (exit; counts: -9).
 * 9 more wrap again: KVM's second PMI, taken at the next exit.  Four
 * exits, two per PMI; vpmu injects nothing.  Its source is opened once,
 * at the first enable, and after that neither KVM's PMIs nor the
 * handler's presets cost it a call.
 */
START_TEST(linux_handler)
{
    VpmuKvmStats st;
    VpmuFakeStats fs0, fs;
    VpmuCounterInfo ci;

    model_setup(VPMU_VENDOR_AMD, VPMU_KVM_SYNC_LINUX);
    model_wrmsr(CTL(0), INSNS_ALL_INT);
    model_wrmsr(CTR(0), MASK48 - 9);
    model_exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_stats(m.fake, &fs0);
    ck_assert_uint_eq(fs0.calls[VPMU_FAKE_OPEN], 1);
    ck_assert_uint_eq(model_core_rdmsr(CTL(0)), INSNS_ALL_INT);
    ck_assert_uint_eq(m.ctl[0], INSNS_ALL_INT);     /* KVM raises the PMI */
    ck_assert_uint_eq(m.gctl, 1);
    ck_assert_uint_eq(model_core_rdmsr(CTR(0)), MASK48 - 8);
    ck_assert_uint_eq(m.ctr[0], MASK48 - 8);
    model_user(9);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    ck_assert_uint_eq(m.nmis, 0);
    ck_assert_uint_eq(m.status, 1);
    model_exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(m.gctl, 0);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 1);
    model_wrmsr(CTR(0), MASK48 - 9);
    model_wrmsr(G_CLR, 1);
    model_exit_wrmsr(G_CTL, 1);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 0);
    ck_assert_uint_eq(model_core_rdmsr(CTR(0)), MASK48 - 8);
    model_user(8);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    model_user(1);
    ck_assert_uint_eq(m.kvm_pmis, 2);
    ck_assert_uint_eq(m.status, 1);
    model_exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 1);
    ck_assert_int_eq(vpmu_pmu_counter_info(vpmu_kvm_pmu(m.k),
                                           VPMU_COUNTER_GP(0), &ci), 0);
    ck_assert_uint_eq(ci.pmis, 2);
    ck_assert_uint_eq(ci.overflows, 2);
    ck_assert_uint_eq(m.nmis, 0);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 2);
    ck_assert_uint_eq(st.pmi_kvm_missed, 0);
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_GLOBAL_CTRL][1], 4);
    ck_assert_uint_eq(st.rdmsr_exits + st.wrmsr_exits, 4);
    ck_assert_uint_eq(st.sync_late, 0);
    ck_assert_uint_eq(st.nmi + st.get_lapic + st.signal_msi, 0);
    vpmu_fake_source_stats(m.fake, &fs);
    ck_assert_uint_eq(fs.calls[VPMU_FAKE_OPEN], 1);
    ck_assert_uint_eq(fs.calls[VPMU_FAKE_UPDATE], fs0.calls[VPMU_FAKE_UPDATE]);
}
END_TEST

/*
 * LINUX, vpmu's source ahead of KVM's PMC (two host events counting one
 * event that is not exact may disagree by a few).  Counter 0 counts
 * user instructions from -10 (the exits do not count).  vpmu's source
 * counts 10 and wraps, KVM's PMC counts 9 and does not.  At the next exit (a
 * global write that changes nothing) vpmu holds its status bit back:
 * KVM's status stays 0, no PMI from vpmu.  KVM's PMC wraps with one
 * more: KVM raises it, vpmu takes it at the next exit (pmi_kvm 1), and
 * the guest's PMI count is 1.  Then the same once more from the preset
 * -10, but the next exit stops the counter: the mirror writes vpmu's
 * value (wrapped) into KVM's PMC, so KVM will never raise this overflow:
 * vpmu raises it (one NMI) and writes the bit (pmi_kvm_missed 1).
 */
START_TEST(linux_pmi_ahead)
{
    VpmuKvmStats st;
    VpmuCounterInfo ci;

    model_setup(VPMU_VENDOR_AMD, VPMU_KVM_SYNC_LINUX);
    model_wrmsr(CTL(0), INSNS_USR_INT);
    model_wrmsr(CTR(0), MASK48 - 9);
    model_exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    model_count(3, 9);
    model_exit_wrmsr(G_CTL, 1);
    ck_assert_uint_eq(model_core_rdmsr(G_STATUS), 1);
    ck_assert_uint_eq(m.status, 0);
    ck_assert_uint_eq(m.nmis + m.kvm_pmis, 0);
    model_count(3, 1);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    model_exit_wrmsr(G_CTL, 0);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 1);
    ck_assert_uint_eq(m.nmis, 0);
    model_wrmsr(CTR(0), MASK48 - 9);
    model_wrmsr(G_CLR, 1);
    model_exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    model_count(3, 9);
    model_exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(m.nmis, 1);
    ck_assert_uint_eq(m.status, 1);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 1);
    ck_assert_uint_eq(st.pmi_kvm_missed, 1);
    ck_assert_int_eq(vpmu_pmu_counter_info(vpmu_kvm_pmu(m.k),
                                           VPMU_COUNTER_GP(0), &ci), 0);
    ck_assert_uint_eq(ci.overflows, 2);
    ck_assert_uint_eq(ci.pmis, 2);      /* KVM's one, then vpmu's */
}
END_TEST

/*
 * LINUX on Intel (architectural PMU version 2, 3 fixed counters), Linux's
 * intel_pmu_handle_irq() with instructions:u on fixed counter 0, as perf
 * places it.  FIXED_CTR_CTRL field 0 = USR | PMI (0xA) and the preset -10
 * go to KVM while the global control is off; vpmu takes them at the
 * global enable (one exit; the WRMSR at CPL 0 does not count).  10 user
 * instructions wrap KVM's fixed PMC: KVM sets GLOBAL_STATUS bit 32 and
 * raises the PMI.  The handler: global 0 (exit: vpmu takes the raise),
 * status read and OVF_CTRL in KVM, preset -10 in KVM, global enable
 * (exit).  10 more: KVM's second PMI.  Four exits, all global control
 * writes; vpmu injects nothing.
 */
START_TEST(linux_handler_intel)
{
    const uint64_t f0 = 1ull << 32;
    VpmuKvmStats st;
    VpmuCounterInfo ci;

    model_setup(VPMU_VENDOR_INTEL, VPMU_KVM_SYNC_LINUX);
    model_exit_wrmsr(I_CTRL, 0);
    model_wrmsr(I_FIXED_CTRL, 0xA);
    model_wrmsr(I_FIXED(0), MASK48 - 9);
    model_exit_wrmsr(I_CTRL, f0);
    ck_assert_uint_eq(m.gctl, f0);
    ck_assert_uint_eq(m.fixed_ctrl, 0xA);       /* KVM raises the PMI */
    ck_assert_uint_eq(model_core_rdmsr(I_FIXED(0)), MASK48 - 9);
    model_user(10);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    ck_assert_uint_eq(m.status, f0);
    model_exit_wrmsr(I_CTRL, 0);
    ck_assert_uint_eq(model_core_rdmsr(I_STATUS), f0);
    model_wrmsr(I_OVF, f0);
    model_wrmsr(I_FIXED(0), MASK48 - 9);
    model_exit_wrmsr(I_CTRL, f0);
    ck_assert_uint_eq(model_core_rdmsr(I_STATUS), 0);
    model_user(9);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    model_user(1);
    ck_assert_uint_eq(m.kvm_pmis, 2);
    model_exit_wrmsr(I_CTRL, 0);
    ck_assert_uint_eq(model_core_rdmsr(I_STATUS), f0);
    ck_assert_int_eq(vpmu_pmu_counter_info(vpmu_kvm_pmu(m.k),
                                           VPMU_COUNTER_FIXED_ID(0), &ci), 0);
    ck_assert_uint_eq(ci.pmis, 2);
    ck_assert_uint_eq(ci.value, 0);
    ck_assert_uint_eq(m.nmis, 0);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 2);
    ck_assert_uint_eq(st.exits[VPMU_MSR_ROLE_GLOBAL_CTRL][1], 5);
    ck_assert_uint_eq(st.rdmsr_exits + st.wrmsr_exits, 5);
    ck_assert_uint_eq(st.sync_late, 0);
}
END_TEST

/*
 * LINUX, a guest that is not Linux-like: it changes counter 0's selector
 * (instructions, USR and OS, to USR only) while it counts.  vpmu sees the
 * write only at the next global control exit: sync_late 1, and from
 * then on the selector is the guest's.  Before: the enabling global
 * WRMSR and 5 user instructions (6).  The selector WRMSR retires at CPL 0
 * under its own new value (USR only), uncounted, and so does the global
 * WRMSR after it: 6.
 */
START_TEST(linux_late)
{
    VpmuKvmStats st;

    model_setup(VPMU_VENDOR_AMD, VPMU_KVM_SYNC_LINUX);
    model_exit_wrmsr(G_CTL, 0);
    model_wrmsr(CTL(0), INSNS_ALL);
    model_exit_wrmsr(G_CTL, 1);
    model_user(5);
    model_wrmsr(CTL(0), 0x4100C0ull);
    model_exit_wrmsr(G_CTL, 1);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.sync_late, 1);
    ck_assert_uint_eq(model_core_rdmsr(CTL(0)), 0x4100C0ull);
    ck_assert_uint_eq(model_core_rdmsr(CTR(0)), 6);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kvm-sync");
    TCase *tc = tcase_create("sync");

    tcase_add_checked_fixture(tc, NULL, model_teardown);
    tcase_add_test(tc, roles);
    tcase_add_test(tc, filters);
    tcase_add_test(tc, sync_rdpmc);
    tcase_add_test(tc, auto_status);
    tcase_add_test(tc, linux_handler);
    tcase_add_test(tc, linux_pmi_ahead);
    tcase_add_test(tc, linux_handler_intel);
    tcase_add_test(tc, linux_late);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
