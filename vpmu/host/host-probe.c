/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_host_probe() (include/vpmu/host.h): the CPU (host-cpu.c), what KVM
 * offers guests, and vpmu_host_check()'s verdict on the mediated vPMU.
 *
 * KVM has a vPMU for guests when kvm.enable_pmu is not N and either
 * KVM_CHECK_EXTENSION(KVM_CAP_PMU_CAPABILITY) offers KVM_PMU_CAP_DISABLE
 * (it does exactly while enable_pmu is on, Linux 6.0+) or
 * KVM_GET_SUPPORTED_CPUID shows a PMU of the host's vendor: Intel's leaf
 * 0AH with a version, AMD's (and Hygon's) PerfCtrExtCore or PerfMonV2.
 * KVM clears what it does not virtualise from both, and clears
 * enable_pmu itself at load on a host without a PMU
 * (kvm_init_pmu_capability()).  The supported CPUID is what finds a vPMU
 * on a KVM older than the capability; read with the host's vendor, it
 * finds Hygon's too.
 */
#include "host-priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

#define KVM_DEV                 "/dev/kvm"
/* KVM_GET_SUPPORTED_CPUID's room: KVM reports about 60 leaves today. */
#define KVM_CPUID_ROOM          256
/* kvm.enable_pmu (Linux 5.17+), a bool parameter: "Y\n" or "N\n". */
#define ENABLE_PMU_PATH         "%s/sys/module/kvm/parameters/enable_pmu"
#define PARAM_VALUE_MAX         32

/* What was asked of KVM live: the facts and the storage they point to. */
typedef struct KvmLive {
    VpmuHostKvmFacts facts;
    VpmuCpuidLeaf leaves[KVM_CPUID_ROOM];
    char why[VPMU_HOST_REASON_MAX];     /* why an ioctl failed */
} KvmLive;

/* "/" and "/x/" as "" and "/x": paths are root + "/sys/...". */
static void root_of(const char *sysroot, char *root, size_t len)
{
    size_t n;

    host_say(root, len, "%s", sysroot ? sysroot : "");
    n = strlen(root);
    while (n && root[n - 1] == '/') {
        root[--n] = '\0';
    }
}

/* kvm.enable_pmu: 1 Y, 0 N, -1 absent (old KVM, not loaded) or garbled. */
static int read_enable_pmu(const char *sysroot)
{
    char root[PATH_MAX], path[PATH_MAX + 64], v[PARAM_VALUE_MAX];
    FILE *f;
    int r = -1;

    root_of(sysroot, root, sizeof(root));
    host_say(path, sizeof(path), ENABLE_PMU_PATH, root);
    f = fopen(path, "re");
    if (!f) {
        return -1;
    }
    if (fgets(v, sizeof(v), f)) {
        v[strcspn(v, "\n")] = '\0';
        /* param_get_bool() writes Y or N; a recorded tree may say 1, 0. */
        r = !strcmp(v, "Y") || !strcmp(v, "1") ? 1 :
            !strcmp(v, "N") || !strcmp(v, "0") ? 0 : -1;
    }
    fclose(f);
    return r;
}

/* KVM_GET_SUPPORTED_CPUID on @fd into @k's leaves: 0 or -errno. */
static int supported_cpuid(int fd, KvmLive *k)
{
    struct kvm_cpuid2 *c = calloc(1, sizeof(*c) +
                                  KVM_CPUID_ROOM * sizeof(c->entries[0]));
    int r;

    if (!c) {
        return -ENOMEM;
    }
    c->nent = KVM_CPUID_ROOM;
    r = ioctl(fd, KVM_GET_SUPPORTED_CPUID, c) < 0 ? -errno : 0;
    for (uint32_t i = 0; r == 0 && i < c->nent && i < KVM_CPUID_ROOM; i++) {
        const struct kvm_cpuid_entry2 *e = &c->entries[i];

        k->leaves[i] = (VpmuCpuidLeaf){ e->function, e->index, e->eax,
                                        e->ebx, e->ecx, e->edx };
        k->facts.nr_cpuid = i + 1;
    }
    k->facts.cpuid = k->facts.nr_cpuid ? k->leaves : NULL;
    free(c);
    return r;
}

/* Ask KVM (input's fd or /dev/kvm); failures are in k->why, not errors. */
static void kvm_ask(const VpmuHostProbeInput *in, KvmLive *k)
{
    bool own = in->kvm_from != VPMU_HOST_KVM_FD;
    int fd = own ? open(KVM_DEV, O_RDONLY | O_CLOEXEC) : in->kvm_fd;
    int r;

    k->facts.pmu_cap = -ENODEV;
    if (fd < 0) {
        host_say(k->why, sizeof(k->why), KVM_DEV ": %s", strerror(errno));
        return;
    }
    r = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_PMU_CAPABILITY);
    k->facts.pmu_cap = r < 0 ? -errno : r;
    r = supported_cpuid(fd, k);
    /*
     * A VM's fd answers KVM_CHECK_EXTENSION but has no
     * KVM_GET_SUPPORTED_CPUID: /dev/kvm's has.  An fd that answered
     * neither is no KVM's at all.
     */
    if (r == -ENOTTY && !own && k->facts.pmu_cap >= 0) {
        int sys = open(KVM_DEV, O_RDONLY | O_CLOEXEC);

        r = sys < 0 ? -errno : supported_cpuid(sys, k);
        if (sys >= 0) {
            close(sys);
        }
    }
    if (k->facts.pmu_cap < 0 || r < 0) {
        host_say(k->why, sizeof(k->why), "KVM_CHECK_EXTENSION: %s, "
                 "KVM_GET_SUPPORTED_CPUID: %s",
                 k->facts.pmu_cap < 0 ? strerror(-k->facts.pmu_cap) : "ok",
                 r < 0 ? strerror(-r) : "ok");
    }
    if (own) {
        close(fd);
    }
}

/* Does KVM's supported CPUID show a vPMU (and its global MSRs)? */
static bool cpuid_shows_pmu(const VpmuHostProbe *out,
                            const VpmuHostKvmFacts *f, bool *global)
{
    const VpmuCpuidLeaf *a, *e, *p;
    bool v2;

    *global = false;
    switch (out->pmu_vendor) {
    case VPMU_VENDOR_INTEL:
        a = vpmu_host_cpuid_find(f->cpuid, f->nr_cpuid,
                                 CPUID_LEAF_ARCH_PERFMON);
        *global = a && (a->eax & CPUID_0A_EAX_VERSION_MASK) >=
                       INTEL_FIXED_SINCE_VERSION;
        return a && (a->eax & CPUID_0A_EAX_VERSION_MASK);
    case VPMU_VENDOR_AMD:
        e = vpmu_host_cpuid_find(f->cpuid, f->nr_cpuid,
                                 CPUID_LEAF_EXT_FEATURES);
        p = vpmu_host_cpuid_find(f->cpuid, f->nr_cpuid,
                                 CPUID_LEAF_EXT_PERFMON);
        v2 = p && (p->eax & CPUID_80000022_EAX_PERFMON_V2);
        *global = v2;
        return v2 || (e && (e->ecx & CPUID_80000001_ECX_PERFCTR_CORE));
    }
    return false;
}

/* The kvm_* answers from @f (recorded or asked live). */
static void kvm_decide(VpmuHostProbe *out, const VpmuHostKvmFacts *f,
                       const char *why)
{
    bool cap = f->pmu_cap > 0 && (f->pmu_cap & KVM_PMU_CAP_DISABLE);
    bool global, cpuid = cpuid_shows_pmu(out, f, &global);
    const char *param = out->kvm_enable_pmu == 1 ? "Y" :
                        out->kvm_enable_pmu == 0 ? "N" : "unread";

    out->kvm_pmu_cap = f->pmu_cap;
    out->kvm = f->pmu_cap >= 0 || f->cpuid;
    if (!out->kvm) {
        host_say(out->kvm_reason, sizeof(out->kvm_reason), "no KVM: %s",
                 why[0] ? why : "no answer recorded");
        return;
    }
    out->kvm_pmu = out->kvm_enable_pmu != 0 && (cap || cpuid);
    out->kvm_global_msrs = out->kvm_pmu && global;
    if (out->kvm_enable_pmu == 0) {
        host_say(out->kvm_reason, sizeof(out->kvm_reason), "KVM offers no "
                 "vPMU: kvm.enable_pmu=N (KVM clears it at load on a host "
                 "without a PMU)");
    } else if (out->kvm_pmu) {
        host_say(out->kvm_reason, sizeof(out->kvm_reason), "KVM offers a "
                 "vPMU%s (KVM_CAP_PMU_CAPABILITY %d, its supported CPUID "
                 "%s, kvm.enable_pmu %s)", out->kvm_global_msrs ?
                 " with the global MSRs" : "", f->pmu_cap,
                 cpuid ? "shows it" : "does not", param);
    } else {
        host_say(out->kvm_reason, sizeof(out->kvm_reason), "KVM offers no "
                 "vPMU: KVM_CAP_PMU_CAPABILITY %d, and its supported CPUID "
                 "%s (kvm.enable_pmu %s)", f->pmu_cap,
                 !f->cpuid ? "is unknown" :
                 out->pmu_vendor ? "shows no PMU of the host's vendor" :
                 "cannot tell for an unknown vendor", param);
    }
}

static int probe_kvm(const VpmuHostProbeInput *in, VpmuHostProbe *out)
{
    KvmLive *k;

    if (in->kvm_from == VPMU_HOST_KVM_SKIP) {
        host_say(out->kvm_reason, sizeof(out->kvm_reason), "KVM not asked");
        return 0;
    }
    out->kvm_enable_pmu = read_enable_pmu(in->sysroot);
    if (in->kvm_from == VPMU_HOST_KVM_RECORDED) {
        kvm_decide(out, in->kvm_facts, "");
        return 0;
    }
    k = calloc(1, sizeof(*k));
    if (!k) {
        return -ENOMEM;
    }
    kvm_ask(in, k);
    kvm_decide(out, &k->facts, k->why);
    free(k);
    return 0;
}

/* A pointer and its count agree: both set or both not. */
static bool table_ok(const void *t, size_t n)
{
    return !t == !n;
}

static int check_input(const VpmuHostProbeInput *in, VpmuHostProbe *out)
{
    const VpmuHostKvmFacts *f = in->kvm_facts;
    char *why = out->kvm_reason;
    size_t len = sizeof(out->kvm_reason);

    if (!table_ok(in->cpuid, in->nr_cpuid)) {
        host_say(out->cpu_reason, sizeof(out->cpu_reason), "input: cpuid "
                 "and nr_cpuid disagree (a table needs both)");
        return -EINVAL;
    }
    switch (in->kvm_from) {
    case VPMU_HOST_KVM_OPEN:
    case VPMU_HOST_KVM_SKIP:
        return 0;
    case VPMU_HOST_KVM_FD:
        if (in->kvm_fd < 0) {
            host_say(why, len, "input: VPMU_HOST_KVM_FD without kvm_fd");
            return -EINVAL;
        }
        return 0;
    case VPMU_HOST_KVM_RECORDED:
        if (!f || !table_ok(f->cpuid, f->nr_cpuid)) {
            host_say(why, len, "input: VPMU_HOST_KVM_RECORDED %s", f ?
                     "facts' cpuid and nr_cpuid disagree" : "without facts");
            return -EINVAL;
        }
        return vpmu_host_cpuid_unique(f->cpuid, f->nr_cpuid,
                                      "KVM's supported CPUID", why, len);
    }
    host_say(why, len, "input: kvm_from %d is no VpmuHostKvmFrom",
             (int)in->kvm_from);
    return -EINVAL;
}

int vpmu_host_probe(const VpmuHostProbeInput *in, VpmuHostProbe *out)
{
    static const VpmuHostProbeInput here = { .kvm_from = VPMU_HOST_KVM_OPEN };
    VpmuCpuidLeaf live[HOST_LIVE_LEAVES];
    const VpmuCpuidLeaf *t;
    size_t n;
    int r;

    if (!out) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    out->kvm_enable_pmu = -1;
    in = in ? in : &here;
    r = check_input(in, out);
    if (r < 0) {
        return r;
    }
    t = in->cpuid;
    n = in->nr_cpuid;
    if (!t) {
        n = vpmu_host_cpuid_live(live, HOST_LIVE_LEAVES);
        t = live;
    }
    r = vpmu_host_cpu_decode(t, n, out);
    if (r == 0) {
        r = probe_kvm(in, out);
    }
    if (r == 0 && !in->skip_mediated) {
        vpmu_host_check(in->sysroot, NULL, 0, &out->mediated_check);
        out->mediated = out->mediated_check.mode == VPMU_HOST_MODE_MEDIATED;
    }
    return r;
}

const char *vpmu_host_vendor_name(VpmuHostVendor vendor)
{
    switch (vendor) {
    case VPMU_HOST_VENDOR_INTEL:
        return "intel";
    case VPMU_HOST_VENDOR_AMD:
        return "amd";
    case VPMU_HOST_VENDOR_HYGON:
        return "hygon";
    default:
        return "unknown";
    }
}
