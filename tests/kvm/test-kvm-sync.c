/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who serves which PMU MSR (VpmuKvmSync, vpmu/kvm/kvm-sync.c) against a
 * KVM model: opts.ioctl stands in for a KVM whose AMD vPMU has PerfMonV2
 * (Linux 6.4+).  It keeps KVM's PERF_CTL/CTR, global control and status
 * as KVM would; kvm_wrmsr() is a guest WRMSR the MSR filter leaves to
 * KVM, and kvm_count() what KVM's live PMCs count.  Every expectation is
 * derived by hand in the comment above its test.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

#include "check-main.h"

#define CTL(i)      (0xC0010200u + 2u * (i))    /* PERF_CTLi */
#define CTR(i)      (0xC0010201u + 2u * (i))    /* PERF_CTRi */
#define G_STATUS    0xC0000300u
#define G_CTL       0xC0000301u
#define G_CLR       0xC0000302u                 /* PerfCntrGlobalStatusClr */
/* PERF_CTL: instructions (C0h), USR 16, OS 17, INT 20, EN 22. */
#define INSNS_ALL_INT   0x5300C0ull
#define INSNS_ALL       0x4300C0ull
#define INSNS_USR_INT   0x5100C0ull
#define MASK48          ((1ull << 48) - 1)
#define ROLE(r)         (1u << VPMU_MSR_ROLE_##r)

typedef struct Model {
    struct kvm_run run;
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuKvm *k;
    uint64_t ctl[6], ctr[6], gctl, status;
    unsigned sets, gets, nmis;
    unsigned kvm_pmis;                  /* PMIs KVM raised itself */
    struct kvm_msr_entry last[32];      /* the last KVM_SET_MSRS */
    unsigned nlast;
} Model;

static Model m;

static uint64_t *reg(uint32_t msr)
{
    if (msr >= CTL(0) && msr <= CTR(5)) {
        return (msr & 1) ? &m.ctr[(msr - CTL(0)) / 2]
                         : &m.ctl[(msr - CTL(0)) / 2];
    }
    if (msr == G_CTL) {
        return &m.gctl;
    }
    ck_assert_msg(msr == G_STATUS, "KVM MSR 0x%x", msr);
    return &m.status;
}

static int model_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
    struct kvm_msrs *msrs = arg;

    (void)opaque;
    (void)fd;
    switch (req) {
    case KVM_GET_MSRS:
        m.gets++;
        for (uint32_t i = 0; i < msrs->nmsrs; i++) {
            msrs->entries[i].data = *reg(msrs->entries[i].index);
        }
        return (int)msrs->nmsrs;
    case KVM_SET_MSRS:
        m.sets++;
        ck_assert_uint_le(msrs->nmsrs, 32);
        for (uint32_t i = 0; i < msrs->nmsrs; i++) {
            *reg(msrs->entries[i].index) = msrs->entries[i].data;
        }
        m.nlast = msrs->nmsrs;
        memcpy(m.last, msrs->entries, msrs->nmsrs * sizeof(m.last[0]));
        return (int)msrs->nmsrs;
    case KVM_GET_LAPIC: {
        struct kvm_lapic_state *l = arg;
        uint32_t lvtpc = 4u << 8;           /* NMI delivery, unmasked */

        memset(l, 0, sizeof(*l));
        memcpy(&l->regs[0x340], &lvtpc, sizeof(lvtpc));
        return 0;
    }
    case KVM_NMI:
        m.nmis++;
        return 0;
    case KVM_CHECK_EXTENSION:
        return 0;       /* no KVM_CAP_PMU_EVENT_FILTER (snapshot mode) */
    }
    ck_abort_msg("unexpected ioctl 0x%lx", req);
    return -1;
}

/*
 * KVM's live PMCs counting instructions at @cpl (global, EN, USR/OS).  A
 * PMC that wraps sets its status bit whatever INT says, and with INT
 * KVM raises the PMI itself (kvm_pmu_deliver_pmi(), no exit).
 */
static void kvm_count(unsigned cpl, uint64_t n)
{
    uint64_t mode = cpl == 3 ? 1ull << 16 : 1ull << 17;

    for (unsigned i = 0; i < 6; i++) {
        if ((m.gctl & (1ull << i)) && (m.ctl[i] & (1ull << 22)) &&
            (m.ctl[i] & mode) && (m.ctl[i] & 0xFF) == 0xC0) {
            if (n > MASK48 - m.ctr[i]) {
                m.status |= 1ull << i;
                m.kvm_pmis += !!(m.ctl[i] & (1ull << 20));
            }
            m.ctr[i] = (m.ctr[i] + n) & MASK48;
        }
    }
}

/* A guest WRMSR KVM serves: STATUS_CLR clears, then KVM retires it. */
static void kvm_wrmsr(uint32_t msr, uint64_t val)
{
    if (msr == G_CLR) {
        m.status &= ~val;
    } else {
        *reg(msr) = val;
    }
    kvm_count(0, 1);
}

/* A WRMSR that exits to vpmu, then the next KVM_RUN retires it. */
static void exit_wrmsr(uint32_t msr, uint64_t val)
{
    m.run.exit_reason = KVM_EXIT_X86_WRMSR;
    m.run.msr.index = msr;
    m.run.msr.data = val;
    ck_assert_int_eq(vpmu_kvm_handle_msr_exit(m.k), 0);
    ck_assert_uint_eq(m.run.msr.error, 0);
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
    kvm_count(0, 1);
}

/* @n instructions at CPL 3, counted by vpmu's host event and KVM's PMCs. */
static void guest_user(uint64_t n)
{
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, n);
    kvm_count(3, n);
    m.run.exit_reason = KVM_EXIT_INTR;      /* the overflow's signal */
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
}

static void setup_sync(VpmuKvmSync sync)
{
    static const VpmuKvmCaps caps = { .pmu = true, .global_msrs = true };
    VpmuKvmOpts o = { .vm_fd = 100, .vcpu_fd = 101, .run = &m.run,
                      .cfg = &m.cfg, .source_ops = vpmu_fake_source_ops(),
                      .caps = &caps, .sync = sync, .host_counters = 12,
                      .ioctl = model_ioctl };
    char err[160];

    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(vpmu_fake_source_new(&m.fake), 0);
    o.source = m.fake;
    vpmu_config_init(&m.cfg, VPMU_VENDOR_AMD);      /* PerfMonV2, 6 */
    ck_assert_int_eq(vpmu_kvm_new(&o, &m.k, err, sizeof(err)), 0);
    /* QEMU's vCPU reset: every register written into KVM once. */
    vpmu_kvm_state_changed(m.k);
    m.run.exit_reason = KVM_EXIT_INTR;
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
}

static void teardown(void)
{
    vpmu_kvm_free(m.k);
    vpmu_fake_source_free(m.fake);
}

static uint64_t core_rdmsr(uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_int_eq(vpmu_pmu_rdmsr(vpmu_kvm_pmu(m.k), msr, &v), 0);
    return v;
}

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
    VpmuKvmOpts o = { .vm_fd = 100, .vcpu_fd = 101, .run = &m.run,
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

    setup_sync(VPMU_KVM_SYNC_AUTO);
    exit_wrmsr(G_CTL, 0);
    exit_wrmsr(CTL(0), INSNS_ALL_INT);
    exit_wrmsr(CTR(0), MASK48 - 9);         /* -10 */
    exit_wrmsr(G_CTL, 1);
    guest_user(9);
    ck_assert_uint_eq(m.nmis, 1);
    ck_assert_uint_eq(m.status, 1);
    kvm_wrmsr(G_CLR, 1);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 1);    /* not looked yet */
    ck_assert_int_eq(vpmu_kvm_sync(m.k), 0);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 0);
    exit_wrmsr(CTR(0), MASK48 - 9);
    guest_user(8);
    ck_assert_uint_eq(m.nmis, 1);
    /* vpmu's host event counts one KVM's PMC does not (not exact). */
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 1);
    m.run.exit_reason = KVM_EXIT_INTR;
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

    setup_sync(VPMU_KVM_SYNC_LINUX);
    kvm_wrmsr(CTL(0), INSNS_ALL_INT);
    kvm_wrmsr(CTR(0), MASK48 - 9);
    exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_stats(m.fake, &fs0);
    ck_assert_uint_eq(fs0.calls[VPMU_FAKE_OPEN], 1);
    ck_assert_uint_eq(core_rdmsr(CTL(0)), INSNS_ALL_INT);
    ck_assert_uint_eq(m.ctl[0], INSNS_ALL_INT);     /* KVM raises the PMI */
    ck_assert_uint_eq(m.gctl, 1);
    ck_assert_uint_eq(core_rdmsr(CTR(0)), MASK48 - 8);
    ck_assert_uint_eq(m.ctr[0], MASK48 - 8);
    guest_user(9);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    ck_assert_uint_eq(m.nmis, 0);
    ck_assert_uint_eq(m.status, 1);
    exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(m.gctl, 0);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 1);
    kvm_wrmsr(CTR(0), MASK48 - 9);
    kvm_wrmsr(G_CLR, 1);
    exit_wrmsr(G_CTL, 1);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 0);
    ck_assert_uint_eq(core_rdmsr(CTR(0)), MASK48 - 8);
    guest_user(8);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    guest_user(1);
    ck_assert_uint_eq(m.kvm_pmis, 2);
    ck_assert_uint_eq(m.status, 1);
    exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 1);
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

    setup_sync(VPMU_KVM_SYNC_LINUX);
    kvm_wrmsr(CTL(0), INSNS_USR_INT);
    kvm_wrmsr(CTR(0), MASK48 - 9);
    exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    kvm_count(3, 9);
    exit_wrmsr(G_CTL, 1);
    ck_assert_uint_eq(core_rdmsr(G_STATUS), 1);
    ck_assert_uint_eq(m.status, 0);
    ck_assert_uint_eq(m.nmis + m.kvm_pmis, 0);
    kvm_count(3, 1);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    exit_wrmsr(G_CTL, 0);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 1);
    ck_assert_uint_eq(m.nmis, 0);
    kvm_wrmsr(CTR(0), MASK48 - 9);
    kvm_wrmsr(G_CLR, 1);
    exit_wrmsr(G_CTL, 1);
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, 10);
    kvm_count(3, 9);
    exit_wrmsr(G_CTL, 0);
    ck_assert_uint_eq(m.nmis, 1);
    ck_assert_uint_eq(m.status, 1);
    ck_assert_uint_eq(m.kvm_pmis, 1);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.pmi_kvm, 1);
    ck_assert_uint_eq(st.pmi_kvm_missed, 1);
    ck_assert_int_eq(vpmu_pmu_counter_info(vpmu_kvm_pmu(m.k),
                                           VPMU_COUNTER_GP(0), &ci), 0);
    ck_assert_uint_eq(ci.overflows, 2);
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

    setup_sync(VPMU_KVM_SYNC_LINUX);
    exit_wrmsr(G_CTL, 0);
    kvm_wrmsr(CTL(0), INSNS_ALL);
    exit_wrmsr(G_CTL, 1);
    guest_user(5);
    kvm_wrmsr(CTL(0), 0x4100C0ull);
    exit_wrmsr(G_CTL, 1);
    vpmu_kvm_stats(m.k, &st);
    ck_assert_uint_eq(st.sync_late, 1);
    ck_assert_uint_eq(core_rdmsr(CTL(0)), 0x4100C0ull);
    ck_assert_uint_eq(core_rdmsr(CTR(0)), 6);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kvm-sync");
    TCase *tc = tcase_create("sync");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, roles);
    tcase_add_test(tc, filters);
    tcase_add_test(tc, sync_rdpmc);
    tcase_add_test(tc, auto_status);
    tcase_add_test(tc, linux_handler);
    tcase_add_test(tc, linux_pmi_ahead);
    tcase_add_test(tc, linux_late);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
