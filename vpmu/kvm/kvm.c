/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu KVM front end: one vCPU's PMU MSR exits, RDPMC mirroring and PMI
 * injection.  The design is in docs/kvm.md; the contract in kvm.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

/* KVM's counter MSRs, written by mirroring (SDM Vol. 4 Table 2-2;
 * APM Vol. 2 13.2.1 and 13.2.2). */
#define MSR_INTEL_PMC0          0x0C1u      /* IA32_PMC0 */
#define MSR_INTEL_FIXED_CTR0    0x309u      /* IA32_FIXED_CTR0 */
#define MSR_AMD_K7_PERFCTR0     0xC0010004u /* PerfCtr0 (legacy) */
#define MSR_AMD_F15H_PERF_CTR0  0xC0010201u /* PerfCtr0, CTL/CTR interleaved */

/* Control MSRs whose enable bits stop counters when cleared. */
#define MSR_INTEL_PERFEVTSEL0   0x186u      /* IA32_PERFEVTSEL0-7 */
#define MSR_INTEL_FIXED_CTR_CTRL 0x38Du
#define MSR_INTEL_GLOBAL_STATUS 0x38Eu
#define MSR_INTEL_GLOBAL_CTRL   0x38Fu
#define MSR_INTEL_A_PMC0        0x4C1u      /* IA32_A_PMC0-7 (full width) */
#define MSR_AMD_K7_EVNTSEL0     0xC0010000u
#define MSR_AMD_F15H_PERF_CTL0  0xC0010200u
#define MSR_AMD_GLOBAL_STATUS   0xC0000300u /* PerfCntrGlobalStatus */
#define MSR_AMD_GLOBAL_CTL      0xC0000301u /* PerfCntrGlobalCtl */

/* IA32_PERFEVTSELx.EN[22] (SDM Fig. 20-1); AMD PerfEvtSeln.En[22]. */
#define EVTSEL_EN               (1ull << 22)
/* IA32_FIXED_CTR_CTRL: EN[1:0] of each 4-bit field (SDM Fig. 20-2). */
#define FIXED_CTRL_EN_ALL       0x3333ull
/* A global control: every bit enables a counter. */
#define GLOBAL_CTRL_ALL         (~0ull)

/* Local APIC LVT Performance Monitor register (SDM Vol. 3A 11.5.1). */
#define APIC_LVTPC_OFFSET       0x340
#define APIC_LVT_VECTOR_SHIFT   0
#define APIC_LVT_VECTOR_MASK    0xFFu       /* vector[7:0] */
#define APIC_LVT_DM_SHIFT       8
#define APIC_LVT_DM_MASK        0x700u      /* delivery mode[10:8] */
#define APIC_LVT_MASKED         (1u << 16)  /* mask[16] */
#define APIC_DM_FIXED           0
#define APIC_DM_NMI             4
#define APIC_FIRST_VALID_VECTOR 16          /* 0-15: illegal vector */

/* MSI to the local APIC, physical destination (SDM Vol. 3A 11.11.1). */
#define MSI_ADDR_BASE           0xFEE00000u
#define MSI_ADDR_DEST_SHIFT     12          /* destination ID[19:12] */
#define MSI_ADDR_DEST_MASK      0xFFu
#define MSI_ADDR_HI_DEST_MASK   0xFFFFFF00u /* x2APIC IDs above 255 (KVM) */

/* Host CPUID, for the vPMU probe. */
#define CPUID_VENDOR_EBX_INTEL  0x756E6547u /* "Genu" */
#define CPUID_VENDOR_EBX_AMD    0x68747541u /* "Auth" */
#define CPUID_0A_EAX_VERSION    0xFFu       /* version[7:0] */
#define CPUID_80000001_ECX_PERFCTR_CORE (1u << 23)
#define CPUID_80000022_EAX_PERFMON_V2   (1u << 0)
#define PROBE_CPUID_ENTRIES     256

/* Longest GP + fixed counter set: Intel 8 GP + 4 fixed. */
#define MAX_MIRROR (VPMU_INTEL_MAX_GP + VPMU_INTEL_V5_MAX_FIXED)

static bool probe_kvm_pmu(int vm_fd);
static int send_msi(int vm_fd, uint32_t apic_id, uint32_t vector);

struct VpmuKvm {
    VpmuKvmOpts opts;
    VpmuConfig cfg;
    VpmuPmu *pmu;
    VpmuKvmStats stats;
    bool pmi_pending;
    bool logged_mirror;
    bool logged_inject;
};

static void kvm_log(VpmuKvm *k, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    if (!k->opts.log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    k->opts.log(k->opts.opaque, msg);
}

/* opts.pmi of the core: runs inside a vpmu call, so only record it. */
static void kvm_pmi_request(void *opaque)
{
    VpmuKvm *k = opaque;

    k->pmi_pending = true;
}

static void kvm_core_log(void *opaque, const char *msg)
{
    VpmuKvm *k = opaque;

    kvm_log(k, "%s", msg);
}

static int check_opts(const VpmuKvmOpts *opts, char *err, size_t errlen)
{
    const char *what = NULL;

    if (!opts) {
        what = "opts is NULL";
    } else if (opts->vm_fd < 0) {
        what = "vm_fd: not an fd";
    } else if (opts->vcpu_fd < 0) {
        what = "vcpu_fd: not an fd";
    } else if (!opts->run) {
        what = "run: the vCPU's kvm_run is required";
    } else if (!opts->cfg) {
        what = "cfg: the guest PMU config is required";
    } else if (!opts->source_ops) {
        what = "source_ops: a counting source is required";
    }
    if (what && err && errlen) {
        snprintf(err, errlen, "%s", what);
    }
    return what ? -EINVAL : 0;
}

/*
 * KVM's own vPMU only programs host counters for an enabled guest
 * selector, and every guest selector write exits to vpmu; the deny-all
 * filter also covers what the MSR filter cannot see (nested VM-entry MSR
 * loads, a VMM's host-initiated KVM_SET_MSRS of a selector).
 * ALLOW with no events and no fixed counters = deny everything.
 */
static void install_deny_all(VpmuKvm *k)
{
    struct kvm_pmu_event_filter deny = { .action = KVM_PMU_EVENT_ALLOW };

    if (ioctl(k->opts.vm_fd, KVM_CHECK_EXTENSION,
              KVM_CAP_PMU_EVENT_FILTER) <= 0) {
        return;
    }
    if (ioctl(k->opts.vm_fd, KVM_SET_PMU_EVENT_FILTER, &deny) < 0) {
        kvm_log(k, "vpmu/kvm: KVM_SET_PMU_EVENT_FILTER (deny all): %s",
                strerror(errno));
    }
}

int vpmu_kvm_new(const VpmuKvmOpts *opts, VpmuKvm **out, char *err,
                 size_t errlen)
{
    VpmuPmuOpts popts = { 0 };
    VpmuKvm *k;
    int ret;

    if (!out) {
        return -EINVAL;
    }
    *out = NULL;
    ret = check_opts(opts, err, errlen);
    if (ret < 0) {
        return ret;
    }
    k = calloc(1, sizeof(*k));
    if (!k) {
        return -ENOMEM;
    }
    k->opts = *opts;
    k->cfg = *opts->cfg;
    k->opts.cfg = &k->cfg;
    popts.source_ops = opts->source_ops;
    popts.source = opts->source;
    popts.pmi = kvm_pmi_request;
    popts.log = kvm_core_log;
    popts.opaque = k;
    ret = vpmu_pmu_new(&k->cfg, &popts, &k->pmu, err, errlen);
    if (ret == 0 && opts->filter) {
        ret = vpmu_pmu_set_filter(k->pmu, opts->filter);
    }
    if (ret < 0) {
        goto err;
    }
    k->opts.filter = NULL;      /* the PMU keeps its own copy */
    install_deny_all(k);
    k->stats.kvm_pmu = opts->kvm_pmu ? opts->kvm_pmu > 0 : probe_kvm_pmu(opts->vm_fd);
    if (!k->stats.kvm_pmu) {
        kvm_log(k, "KVM has no vPMU: guest RDPMC takes #GP");
    }
    *out = k;
    return 0;

err:
    vpmu_kvm_free(k);
    return ret;
}

void vpmu_kvm_free(VpmuKvm *k)
{
    if (!k) {
        return;
    }
    vpmu_pmu_free(k->pmu);
    free(k);
}

VpmuPmu *vpmu_kvm_pmu(VpmuKvm *k)
{
    return k->pmu;
}

int vpmu_kvm_cpuid(const VpmuKvm *k, uint32_t leaf, uint32_t subleaf,
                   uint32_t regs[4])
{
    return vpmu_pmu_cpuid(k->pmu, leaf, subleaf, regs);
}

void vpmu_kvm_stats(const VpmuKvm *k, VpmuKvmStats *out)
{
    *out = k->stats;
}

static bool cpuid_says_pmu(const struct kvm_cpuid2 *c)
{
    uint32_t vendor = 0;

    for (uint32_t i = 0; i < c->nent; i++) {
        if (c->entries[i].function == 0) {
            vendor = c->entries[i].ebx;
        }
    }
    for (uint32_t i = 0; i < c->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &c->entries[i];

        if (vendor == CPUID_VENDOR_EBX_INTEL && e->function == 0xA &&
            (e->eax & CPUID_0A_EAX_VERSION)) {
            return true;
        }
        if (vendor == CPUID_VENDOR_EBX_AMD &&
            ((e->function == 0x80000001 &&
              (e->ecx & CPUID_80000001_ECX_PERFCTR_CORE)) ||
             (e->function == 0x80000022 &&
              (e->eax & CPUID_80000022_EAX_PERFMON_V2)))) {
            return true;
        }
    }
    return false;
}

/*
 * Does KVM have a vPMU that can serve RDPMC?  The vCPU's own PMU is only
 * sized at KVM_SET_CPUID2, after new(), so ask what KVM supports:
 * KVM_PMU_CAP_DISABLE is offered only while enable_pmu is on, and KVM
 * reports a PMU in KVM_GET_SUPPORTED_CPUID only if it has one (an AMD
 * host with only the K7 counters reports nothing there; the cap covers it).
 */
static bool probe_kvm_pmu(int vm_fd)
{
    struct kvm_cpuid2 *c;
    bool found = false;
    int sys_fd;
    int cap = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_PMU_CAPABILITY);

    if (cap > 0 && (cap & KVM_PMU_CAP_DISABLE)) {
        return true;
    }
    sys_fd = open("/dev/kvm", O_RDONLY | O_CLOEXEC);
    if (sys_fd < 0) {
        return false;
    }
    c = calloc(1, sizeof(*c) + PROBE_CPUID_ENTRIES * sizeof(c->entries[0]));
    if (c) {
        c->nent = PROBE_CPUID_ENTRIES;
        found = ioctl(sys_fd, KVM_GET_SUPPORTED_CPUID, c) == 0 &&
                cpuid_says_pmu(c);
    }
    free(c);
    close(sys_fd);
    return found;
}

/* Intel: PERFEVTSELx, FIXED_CTR_CTRL, GLOBAL_CTRL; AMD: the K7 and F15H
 * selectors (F15H: the even MSRs), GLOBAL_CTL.  0: not a control MSR. */
static uint64_t msr_enable_mask(const VpmuConfig *cfg, uint32_t msr)
{
    if (cfg->vendor == VPMU_VENDOR_INTEL) {
        if (msr >= MSR_INTEL_PERFEVTSEL0 &&
            msr < MSR_INTEL_PERFEVTSEL0 + cfg->nr_gp) {
            return EVTSEL_EN;
        }
        if (msr == MSR_INTEL_FIXED_CTR_CTRL) {
            return FIXED_CTRL_EN_ALL;
        }
        return msr == MSR_INTEL_GLOBAL_CTRL ? GLOBAL_CTRL_ALL : 0;
    }
    if (msr >= MSR_AMD_K7_EVNTSEL0 && msr < MSR_AMD_K7_EVNTSEL0 + 4) {
        return EVTSEL_EN;
    }
    if (msr >= MSR_AMD_F15H_PERF_CTL0 &&
        msr < MSR_AMD_F15H_PERF_CTL0 + 2 * cfg->nr_gp && !(msr & 1)) {
        return EVTSEL_EN;
    }
    return msr == MSR_AMD_GLOBAL_CTL ? GLOBAL_CTRL_ALL : 0;
}

static bool msr_is_counter(const VpmuConfig *cfg, uint32_t msr)
{
    if (cfg->vendor == VPMU_VENDOR_INTEL) {
        return (msr >= MSR_INTEL_PMC0 && msr < MSR_INTEL_PMC0 + cfg->nr_gp) ||
               (msr >= MSR_INTEL_A_PMC0 && msr < MSR_INTEL_A_PMC0 + cfg->nr_gp) ||
               (msr >= MSR_INTEL_FIXED_CTR0 &&
                msr < MSR_INTEL_FIXED_CTR0 + cfg->nr_fixed);
    }
    return (msr >= MSR_AMD_K7_PERFCTR0 && msr < MSR_AMD_K7_PERFCTR0 + 4) ||
           (msr >= MSR_AMD_F15H_PERF_CTR0 &&
            msr < MSR_AMD_F15H_PERF_CTR0 + 2 * cfg->nr_gp && (msr & 1));
}

static bool msr_is_status(const VpmuConfig *cfg, uint32_t msr)
{
    return msr == (cfg->vendor == VPMU_VENDOR_INTEL ? MSR_INTEL_GLOBAL_STATUS
                                                    : MSR_AMD_GLOBAL_STATUS);
}

/* KVM_SIGNAL_MSI returns how many vCPUs took it: 0 = not delivered. */
static int send_msi(int vm_fd, uint32_t apic_id, uint32_t vector)
{
    struct kvm_msi msi = {
        .address_lo = MSI_ADDR_BASE |
                      (apic_id & MSI_ADDR_DEST_MASK) << MSI_ADDR_DEST_SHIFT,
        .address_hi = apic_id & MSI_ADDR_HI_DEST_MASK,
        .data = vector,
    };
    int ret = ioctl(vm_fd, KVM_SIGNAL_MSI, &msi);

    if (ret < 0) {
        return -errno;
    }
    return ret == 0 ? -EHOSTUNREACH : 0;
}

/* KVM's PMC MSR for counter @id of @cfg (kvm.h: what is mirrored). */
static uint32_t mirror_msr(const VpmuConfig *cfg, uint32_t id)
{
    uint32_t idx = id & ~VPMU_COUNTER_FIXED;

    if (cfg->vendor == VPMU_VENDOR_INTEL) {
        return (id & VPMU_COUNTER_FIXED) ? MSR_INTEL_FIXED_CTR0 + idx
                                         : MSR_INTEL_PMC0 + idx;
    }
    if (cfg->amd_level == VPMU_AMD_K7) {
        return MSR_AMD_K7_PERFCTR0 + idx;
    }
    return MSR_AMD_F15H_PERF_CTR0 + 2 * idx;
}

int vpmu_kvm_mirror(VpmuKvm *k)
{
    struct {
        struct kvm_msrs hdr;
        struct kvm_msr_entry e[MAX_MIRROR];
    } buf;
    uint32_t n = 0;
    int ret;

    if (!k->stats.kvm_pmu) {
        return -ENODEV;
    }
    memset(&buf, 0, sizeof(buf));
    for (unsigned i = 0; i < k->cfg.nr_gp + k->cfg.nr_fixed; i++) {
        uint32_t id = i < k->cfg.nr_gp ? VPMU_COUNTER_GP(i)
                                       : VPMU_COUNTER_FIXED_ID(i - k->cfg.nr_gp);
        VpmuCounterInfo info;

        if (vpmu_pmu_counter_info(k->pmu, id, &info) < 0) {
            continue;
        }
        buf.e[n].index = mirror_msr(&k->cfg, id);
        buf.e[n].data = info.value;
        n++;
    }
    buf.hdr.nmsrs = n;
    ret = ioctl(k->opts.vcpu_fd, KVM_SET_MSRS, &buf);
    if (ret == (int)n) {
        k->stats.mirrors++;
        return 0;
    }
    /* KVM_SET_MSRS returns how many it wrote; stopping early is an error. */
    ret = ret < 0 ? -errno : -EIO;
    k->stats.mirror_errors++;
    if (!k->logged_mirror) {
        k->logged_mirror = true;
        kvm_log(k, "vpmu/kvm: mirroring counters into KVM failed: %s "
                "(guest RDPMC reads stale values)", strerror(-ret));
    }
    return ret;
}

/* Mirror if KVM can serve RDPMC; a failure is counted and logged. */
static void mirror_if_any(VpmuKvm *k)
{
    if (k->stats.kvm_pmu) {
        (void)vpmu_kvm_mirror(k);
    }
}

static int handle_rdmsr(VpmuKvm *k, struct kvm_run *run)
{
    uint64_t val = 0;
    int ret = vpmu_pmu_rdmsr(k->pmu, run->msr.index, &val);

    if (ret == -ENOENT) {
        return ret;
    }
    k->stats.rdmsr_exits++;
    if (ret < 0) {
        run->msr.error = 1;
        k->stats.gp_injected++;
        return 0;
    }
    run->msr.data = val;
    run->msr.error = 0;
    /*
     * The guest's host event excluded this RDMSR (it exited); it retires
     * at CPL 0 after reading, so the value read does not include it.
     */
    vpmu_pmu_instruction_retired(k->pmu, 0, false);
    if (msr_is_status(&k->cfg, run->msr.index)) {
        mirror_if_any(k);
    }
    return 0;
}

static int handle_wrmsr(VpmuKvm *k, struct kvm_run *run)
{
    uint32_t msr = run->msr.index;
    uint64_t enables = msr_enable_mask(&k->cfg, msr);
    uint64_t old = 0;
    int ret;

    /* A control MSR read costs no source access: only when it matters. */
    if (enables && vpmu_pmu_rdmsr(k->pmu, msr, &old) < 0) {
        enables = 0;
    }
    ret = vpmu_pmu_wrmsr(k->pmu, msr, run->msr.data);
    if (ret == -ENOENT) {
        return ret;
    }
    k->stats.wrmsr_exits++;
    if (ret < 0) {
        run->msr.error = 1;
        k->stats.gp_injected++;
        return 0;
    }
    run->msr.error = 0;
    /*
     * Counters stopped (an enable bit went 1 -> 0): Linux reads them with
     * RDPMC next.  A counter write changes what RDPMC must return.
     */
    if ((old & enables & ~run->msr.data) || msr_is_counter(&k->cfg, msr)) {
        mirror_if_any(k);
    }
    return 0;
}

int vpmu_kvm_handle_msr_exit(VpmuKvm *k)
{
    struct kvm_run *run = k->opts.run;

    switch (run->exit_reason) {
    case KVM_EXIT_X86_RDMSR:
        return handle_rdmsr(k, run);
    case KVM_EXIT_X86_WRMSR:
        return handle_wrmsr(k, run);
    default:
        return -EINVAL;
    }
}

static void inject_failed(VpmuKvm *k, int err, const char *what)
{
    k->stats.inject_errors++;
    if (!k->logged_inject) {
        k->logged_inject = true;
        kvm_log(k, "vpmu/kvm: PMI not delivered: %s: %s", what, strerror(-err));
    }
}

/* Deliver one PMI through the LVTPC entry read now (the guest may have
 * changed it without an exit: xAPIC MMIO and x2APIC MSRs stay in KVM). */
static int deliver_pmi(VpmuKvm *k)
{
    struct kvm_lapic_state lapic;
    uint32_t lvt, vector, mode;
    int ret;

    if (ioctl(k->opts.vcpu_fd, KVM_GET_LAPIC, &lapic) < 0) {
        return -errno;
    }
    memcpy(&lvt, &lapic.regs[APIC_LVTPC_OFFSET], sizeof(lvt));
    vector = (lvt & APIC_LVT_VECTOR_MASK) >> APIC_LVT_VECTOR_SHIFT;
    mode = (lvt & APIC_LVT_DM_MASK) >> APIC_LVT_DM_SHIFT;
    if (lvt & APIC_LVT_MASKED) {
        k->stats.pmi_masked++;
        return 0;
    }
    if (mode == APIC_DM_NMI) {
        if (ioctl(k->opts.vcpu_fd, KVM_NMI) < 0) {
            return -errno;
        }
        k->stats.pmi_nmi++;
        return 0;
    }
    if (mode != APIC_DM_FIXED || vector < APIC_FIRST_VALID_VECTOR) {
        return -EOPNOTSUPP;     /* SMI, reserved modes, illegal vector */
    }
    ret = send_msi(k->opts.vm_fd, k->opts.apic_id, vector);
    if (ret < 0) {
        return ret;
    }
    k->stats.pmi_fixed++;
    return 0;
}

int vpmu_kvm_service(VpmuKvm *k)
{
    int ret;

    if (!k->pmi_pending) {
        return 0;
    }
    k->pmi_pending = false;
    /* The guest's PMI handler reads the counters with RDPMC. */
    mirror_if_any(k);
    ret = deliver_pmi(k);
    if (ret < 0) {
        inject_failed(k, ret, "LVTPC delivery");
    }
    return ret;
}
