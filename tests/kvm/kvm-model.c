/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The KVM vPMU model of kvm-model.h; every test's expectations are its own. */
#include "kvm-model.h"

#include <check.h>
#include <string.h>

Model m;

static uint64_t *amd_reg(uint32_t msr)
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

static uint64_t *intel_reg(uint32_t msr)
{
    if (msr >= I_EVTSEL(0) && msr < I_EVTSEL(8)) {
        return &m.ctl[msr - I_EVTSEL(0)];
    }
    if (msr >= I_PMC(0) && msr < I_PMC(8)) {
        return &m.ctr[msr - I_PMC(0)];
    }
    if (msr >= I_A_PMC(0) && msr < I_A_PMC(8)) {
        return &m.ctr[msr - I_A_PMC(0)];
    }
    if (msr >= I_FIXED(0) && msr < I_FIXED(4)) {
        return &m.fixed[msr - I_FIXED(0)];
    }
    switch (msr) {
    case I_FIXED_CTRL:
        return &m.fixed_ctrl;
    case I_CTRL:
        return &m.gctl;
    default:
        ck_assert_msg(msr == I_STATUS, "KVM MSR 0x%x", msr);
        return &m.status;
    }
}

static uint64_t *reg(uint32_t msr)
{
    return m.intel ? intel_reg(msr) : amd_reg(msr);
}

int model_ioctl(void *opaque, int fd, unsigned long req, void *arg)
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

/* Add @n to a live PMC; a wrap sets @bit, and raises a PMI if @pmi. */
static void pmc_add(uint64_t *ctr, uint64_t n, uint64_t bit, bool pmi)
{
    if (n > MASK48 - *ctr) {
        m.status |= bit;
        m.kvm_pmis += pmi;
    }
    *ctr = (*ctr + n) & MASK48;
}

void model_count(unsigned cpl, uint64_t n)
{
    uint64_t mode = cpl == 3 ? 1ull << 16 : 1ull << 17;
    /* FIXED_CTR_CTRL field 0: OS bit 0, USR bit 1, PMI bit 3. */
    uint64_t fmode = cpl == 3 ? 2 : 1;

    for (unsigned i = 0; i < 8; i++) {
        if ((m.gctl & (1ull << i)) && (m.ctl[i] & (1ull << 22)) &&
            (m.ctl[i] & mode) && (m.ctl[i] & 0xFF) == 0xC0) {
            pmc_add(&m.ctr[i], n, 1ull << i, m.ctl[i] & (1ull << 20));
        }
    }
    /* Intel's fixed counter 0 counts instructions retired. */
    if (m.intel && (m.gctl & (1ull << 32)) && (m.fixed_ctrl & fmode)) {
        pmc_add(&m.fixed[0], n, 1ull << 32, m.fixed_ctrl & 8);
    }
}

void model_wrmsr(uint32_t msr, uint64_t val)
{
    if (msr == (m.intel ? I_OVF : G_CLR)) {
        m.status &= ~val;
    } else {
        *reg(msr) = val;
    }
    model_count(0, 1);
}

void model_exit_wrmsr(uint32_t msr, uint64_t val)
{
    ck_assert_int_eq(vpmu_kvm_wrmsr(m.k, msr, val), 0);
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
    model_count(0, 1);
}

void model_user(uint64_t n)
{
    vpmu_fake_source_run(m.fake, VPMU_EVENT_INSTRUCTIONS, 0, 3, n);
    model_count(3, n);
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
}

void model_setup(VpmuVendor vendor, VpmuKvmSync sync)
{
    static const VpmuKvmCaps caps = { .pmu = true, .global_msrs = true };
    VpmuKvmOpts o = { .vm_fd = 100, .vcpu_fd = 101,
                      .cfg = &m.cfg, .source_ops = vpmu_fake_source_ops(),
                      .caps = &caps, .sync = sync, .host_counters = 12,
                      .ioctl = model_ioctl };
    char err[160];

    memset(&m, 0, sizeof(m));
    m.intel = vendor == VPMU_VENDOR_INTEL;
    ck_assert_int_eq(vpmu_fake_source_new(&m.fake), 0);
    o.source = m.fake;
    vpmu_config_init(&m.cfg, vendor);
    ck_assert_int_eq(vpmu_kvm_new(&o, &m.k, err, sizeof(err)), 0);
    /* QEMU's vCPU reset: every register written into KVM once. */
    vpmu_kvm_state_changed(m.k);
    ck_assert_int_eq(vpmu_kvm_service(m.k), 0);
}

void model_teardown(void)
{
    vpmu_kvm_free(m.k);
    vpmu_fake_source_free(m.fake);
}

uint64_t model_core_rdmsr(uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_int_eq(vpmu_pmu_rdmsr(vpmu_kvm_pmu(m.k), msr, &v), 0);
    return v;
}
