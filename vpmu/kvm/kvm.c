/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu KVM front end: one vCPU's PMU MSR exits, RDPMC mirroring and PMI
 * injection.  The design is in docs/kvm.md; the contract in kvm.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <vpmu/host.h>

#include "kvm-priv.h"

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

static int send_msi(VpmuKvm *k, uint32_t vector);

/* opts.pmi of the core: runs inside a vpmu call, so only record it. */
static void kvm_pmi_request(void *opaque)
{
    VpmuKvm *k = opaque;

    k->pmi_pending = true;
}

static void kvm_core_log(void *opaque, const char *msg)
{
    VpmuKvm *k = opaque;

    vpmu_logf(&k->log, "%s", msg);
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
    } else if (!opts->cfg) {
        what = "cfg: the guest PMU config is required";
    } else if (!opts->source_ops) {
        what = "source_ops: a counting source is required";
    }
    return what ? vpmu_err(err, errlen, "%s", what) : 0;
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

    if (vpmu_kvm__ioctl(k, k->opts.vm_fd, KVM_CHECK_EXTENSION,
                        (void *)(long)KVM_CAP_PMU_EVENT_FILTER) <= 0) {
        return;
    }
    if (vpmu_kvm__ioctl(k, k->opts.vm_fd, KVM_SET_PMU_EVENT_FILTER,
                        &deny) < 0) {
        vpmu_logf(&k->log, "vpmu/kvm: KVM_SET_PMU_EVENT_FILTER (deny all): %s",
                  strerror(errno));
    }
}

/*
 * The host's general-purpose counters: the host probe's (vpmu_host_probe(),
 * the same CPUID reading as the perf source's, Hygon as AMD).
 */
static unsigned host_gp_counters(void)
{
    static const VpmuHostProbeInput cpu_only = {
        .kvm_from = VPMU_HOST_KVM_SKIP, .skip_mediated = true,
    };
    VpmuHostProbe p;

    return vpmu_host_probe(&cpu_only, &p) == 0 ? p.nr_gp : 0;
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
    vpmu_logger_init(&k->log, opts->log, opts->opaque);
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
    /* A mirror writes KVM's PMU MSRs, which are the guest's own. */
    for (unsigned i = 0; i < k->cfg.nr_gp + k->cfg.nr_fixed; i++) {
        (void)vpmu_pmu_counter_msrs(k->pmu, i < k->cfg.nr_gp ?
                                    VPMU_COUNTER_GP(i) :
                                    VPMU_COUNTER_FIXED_ID(i - k->cfg.nr_gp),
                                    &k->msrs[i]);
    }
    if (opts->rdpmc == VPMU_KVM_RDPMC_SNAPSHOT) {
        install_deny_all(k);
    }
    k->stats.host_counters = opts->host_counters ? opts->host_counters
                                                 : host_gp_counters();
    /* The caller's caps, else kvm_pmu's answer (no global MSRs), else ask. */
    if (opts->caps) {
        k->caps = *opts->caps;
    } else if (opts->kvm_pmu) {
        k->caps.pmu = opts->kvm_pmu > 0;
    } else {
        vpmu_kvm_probe(opts->vm_fd, &k->caps);
    }
    k->stats.kvm_pmu = k->caps.pmu;
    if (!k->stats.kvm_pmu) {
        vpmu_logf(&k->log, "KVM has no vPMU: guest RDPMC takes #GP");
    }
    if (opts->sync == VPMU_KVM_SYNC_LINUX &&
        opts->rdpmc != VPMU_KVM_RDPMC_LIVE) {
        ret = vpmu_errorf(err, errlen, -ENOTSUP,
                          "sync=linux needs rdpmc=live (KVM's PMCs counting)");
        goto err;
    }
    ret = vpmu_kvm__setup_sync(k, err, errlen);
    if (ret < 0) {
        goto err;
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

/*
 * What KVM's vPMU offers: the host probe's answer (vpmu_host_probe(), whose
 * header comment in vpmu/host/host-probe.c says how it decides).  The
 * vCPU's own PMU is only sized at KVM_SET_CPUID2, after new(), so it asks
 * what KVM supports.  @vm_fd answers KVM_CHECK_EXTENSION (without it,
 * /dev/kvm does); the supported CPUID comes from /dev/kvm.
 */
void vpmu_kvm_probe(int vm_fd, VpmuKvmCaps *out)
{
    VpmuHostProbeInput in = {
        .kvm_from = vm_fd >= 0 ? VPMU_HOST_KVM_FD : VPMU_HOST_KVM_OPEN,
        .kvm_fd = vm_fd, .skip_mediated = true,
    };
    VpmuHostProbe p;

    memset(out, 0, sizeof(*out));
    if (vpmu_host_probe(&in, &p) == 0) {
        out->pmu = p.kvm_pmu;
        out->global_msrs = p.kvm_global_msrs;
    }
}

/* KVM_SIGNAL_MSI returns how many vCPUs took it: 0 = not delivered. */
static int send_msi(VpmuKvm *k, uint32_t vector)
{
    uint32_t apic_id = k->opts.apic_id;
    struct kvm_msi msi = {
        .address_lo = MSI_ADDR_BASE |
                      (apic_id & MSI_ADDR_DEST_MASK) << MSI_ADDR_DEST_SHIFT,
        .address_hi = apic_id & MSI_ADDR_HI_DEST_MASK,
        .data = vector,
    };
    int ret = vpmu_kvm__ioctl(k, k->opts.vm_fd, KVM_SIGNAL_MSI, &msi);

    if (ret < 0) {
        return -errno;
    }
    return ret == 0 ? -EHOSTUNREACH : 0;
}

/*
 * Count an MSR exit the PMU served with @ret: an error is the #GP the VMM
 * injects (kvm_run's msr.error = 1).
 * Return: whether the access went through.
 */
static bool exit_served(VpmuKvm *k, uint32_t msr, int ret, uint64_t *exits,
                        bool write)
{
    int role = vpmu_config_msr_role(&k->cfg, msr);

    (*exits)++;
    if (role >= 0) {
        k->stats.exits[role][write]++;
    }
    if (ret < 0) {
        k->stats.gp_injected++;
        return false;
    }
    k->served_exit = true;
    /* The instruction exited, so the operator's events missed it too. */
    if (k->op) {
        vpmu_operator_instruction_retired(k->op, 0, false);
    }
    return true;
}

/*
 * What this exit changes (the guest's write, what the pull takes from
 * KVM, the catch-up) programs each counter's host event once, at
 * vpmu_kvm_service() before the vCPU runs again.
 */
static void defer_programming(VpmuKvm *k)
{
    if (!k->deferred) {
        vpmu_pmu_defer(k->pmu);
        k->deferred = true;
    }
}

int vpmu_kvm_rdmsr(VpmuKvm *k, uint32_t msr, uint64_t *out)
{
    VpmuMsrInfo info;
    uint64_t val = 0;
    int ret;

    defer_programming(k);
    /* LINUX: a selector or counter the guest wrote in KVM (kvm-sync.c). */
    if (vpmu_kvm__linux(k) && vpmu_kvm__pull(k)) {
        (void)vpmu_kvm__mirror_some(k, 0);
    }
    /* The value read includes what KVM retired itself (kvm-mirror.c). */
    if (vpmu_pmu_msr_info(k->pmu, msr, &info) == 0 &&
        info.cls == VPMU_MSR_CLASS_COUNTER) {
        vpmu_kvm__catch_up(k, info.counters);
    }
    ret = vpmu_pmu_rdmsr(k->pmu, msr, &val);

    if (ret == -ENOENT) {
        return ret;
    }
    if (!exit_served(k, msr, ret, &k->stats.rdmsr_exits, false)) {
        return ret;
    }
    *out = val;
    /*
     * The guest's host event excluded this RDMSR (it exited); it retires
     * at CPL 0 after reading, so the value read does not include it.
     */
    vpmu_pmu_instruction_retired(k->pmu, 0, false);
    /* Linux reads the counters with RDPMC next (its PMI handler). */
    if (vpmu_pmu_msr_info(k->pmu, msr, &info) == 0 &&
        info.cls == VPMU_MSR_CLASS_STATUS) {
        vpmu_kvm__mirror_if_any(k);
    }
    return 0;
}

int vpmu_kvm_wrmsr(VpmuKvm *k, uint32_t msr, uint64_t val)
{
    VpmuMsrInfo info;
    uint64_t pulled = 0;
    int ret;

    defer_programming(k);
    /*
     * LINUX: what the guest wrote in KVM while this global control had
     * it off happened before this write (kvm-sync.c).
     */
    if (vpmu_kvm__linux(k)) {
        pulled = vpmu_kvm__pull(k);
    }
    /* Before the write: a control's old value (no source access). */
    if (vpmu_pmu_msr_info(k->pmu, msr, &info) < 0) {
        info.cls = 0;
    }
    /*
     * What KVM's PMCs retired themselves goes to the counters a control
     * write concerns while they still count: one it stops takes nothing
     * afterwards (kvm-mirror.c).
     */
    if ((info.cls == VPMU_MSR_CLASS_CONTROL && info.value != val) ||
        info.cls == VPMU_MSR_CLASS_COUNTER) {
        vpmu_kvm__catch_up(k, info.counters);
    }
    ret = vpmu_pmu_wrmsr(k->pmu, msr, val);
    /*
     * A counter write starts a new base pair: after it, vpmu's value moved
     * by the write, not by events, and the mirror writes KVM's PMC.
     */
    if (info.cls == VPMU_MSR_CLASS_COUNTER) {
        k->kvm_base_valid &= ~info.counters;
    }
    if (ret == -ENOENT) {
        return ret;
    }
    if (!exit_served(k, msr, ret, &k->stats.wrmsr_exits, true)) {
        return ret;
    }
    /*
     * Counters stopped (an enable bit went 1 -> 0): Linux reads them with
     * RDPMC next.  A counter write changes what RDPMC must return.  Live,
     * KVM's PMCs also start and stop with the guest's: any control change.
     */
    if (k->stats.kvm_pmu &&
        (pulled || info.cls == VPMU_MSR_CLASS_COUNTER ||
         (info.cls == VPMU_MSR_CLASS_CONTROL &&
          ((info.value & info.enables & ~val) ||
           (k->opts.rdpmc == VPMU_KVM_RDPMC_LIVE && info.value != val))))) {
        (void)vpmu_kvm__mirror_some(k, info.counters | pulled);
    }
    return 0;
}

static void inject_failed(VpmuKvm *k, int err, const char *what)
{
    k->stats.inject_errors++;
    vpmu_logf_once(&k->log, VPMU_KVM_LOG_INJECT,
                   "vpmu/kvm: PMI not delivered: %s: %s", what,
                   strerror(-err));
}

/* Deliver one PMI through the LVTPC entry read now (the guest may have
 * changed it without an exit: xAPIC MMIO and x2APIC MSRs stay in KVM). */
static int deliver_pmi(VpmuKvm *k)
{
    struct kvm_lapic_state lapic;
    uint32_t lvt, vector, mode;
    int ret;

    if (vpmu_kvm__ioctl(k, k->opts.vcpu_fd, KVM_GET_LAPIC, &lapic) < 0) {
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
        if (vpmu_kvm__ioctl(k, k->opts.vcpu_fd, KVM_NMI, NULL) < 0) {
            return -errno;
        }
        k->stats.pmi_nmi++;
        return 0;
    }
    if (mode != APIC_DM_FIXED || vector < APIC_FIRST_VALID_VECTOR) {
        return -EOPNOTSUPP;     /* SMI, reserved modes, illegal vector */
    }
    ret = send_msi(k, vector);
    if (ret < 0) {
        return ret;
    }
    k->stats.pmi_fixed++;
    return 0;
}

void vpmu_kvm_state_changed(VpmuKvm *k)
{
    k->mirror_requested = true;
    k->kvm_ctl_valid = false;
    k->kvm_val_valid = 0;
    k->kvm_base_valid = 0;
    k->kvm_status_valid = false;
    k->pulled = false;
    /* The guest's counting may have changed: the operator's too, then. */
    k->op_guest = UINT_MAX;
}

int vpmu_kvm_service(VpmuKvm *k)
{
    int ret = 0;

    if (k->deferred) {
        k->deferred = false;
        /* The operator yields before the guest's new events start. */
        vpmu_kvm__operator_service(k);
        vpmu_pmu_commit(k->pmu);
    } else if (k->op && k->op_guest == UINT_MAX) {
        vpmu_kvm__operator_service(k);
    }

    /* The guest's PMI handler reads the counters with RDPMC. */
    if (k->pmi_pending || k->mirror_requested) {
        k->mirror_requested = false;
        vpmu_kvm__mirror_if_any(k);
    }
    if (k->pmi_pending) {
        k->pmi_pending = false;
        ret = deliver_pmi(k);
        if (ret < 0) {
            inject_failed(k, ret, "LVTPC delivery");
        }
    }
    /* The next KVM_RUN retires the exit: later mirrors count it whole. */
    k->served_exit = false;
    k->pulled = false;          /* and the guest may write KVM's MSRs */
    if (k->opts.source_ops->tick) {
        k->opts.source_ops->tick(k->opts.source);
    }
    return ret;
}
