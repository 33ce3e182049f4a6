/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_host_probe() (include/vpmu/host.h) on recorded CPUID tables, KVM
 * answers and sysroot trees (tests/host-probe-data.h), and live on this
 * host, where the perf source, the KVM front end and the probe must say
 * the same.  Every expected value is derived by hand in the data's
 * comments; bad tables and inputs must give -EINVAL and say why.
 */
#include <check.h>
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <vpmu/host.h>
#include <vpmu/kvm.h>
#include <vpmu/perf.h>

#include "check-main.h"
#include "host-probe-data.h"
#include "sysroot.h"

#define TABLE(t)        .cpu = t, .ncpu = N_LEAVES(t)
#define KVM(cap_, t)    .kvm_from = VPMU_HOST_KVM_RECORDED, \
                        .facts = { .pmu_cap = cap_, .cpuid = t, \
                                   .nr_cpuid = N_LEAVES(t) }
#define TABLE_IN(t)     .cpuid = t, .nr_cpuid = N_LEAVES(t)
#define SRC_LINE        .line = __LINE__

/* The host a vector stands for, and what the probe must say of it. */
typedef struct ProbeVec {
    int line;
    const char *name;
    const VpmuCpuidLeaf *cpu;
    size_t ncpu;
    VpmuHostKvmFrom kvm_from;
    VpmuHostKvmFacts facts;
    /* The sysroot: kvm.enable_pmu and kvm_amd.enable_mediated_pmu as the
       files read (NULL: no file), /proc/sys/kernel/osrelease. */
    const char *enable_pmu, *mediated_amd, *osrelease;
    /* Expected. */
    VpmuHostVendor vendor;
    VpmuVendor pmu_vendor;
    const char *vendor_id;
    unsigned version;
    VpmuAmdLevel amd_level;
    unsigned nr_gp, gp_width, nr_fixed, fixed_width;
    uint32_t fixed_mask;
    bool kvm, kvm_pmu, kvm_global_msrs;
    int kvm_enable_pmu;
    bool mediated;
    const char *cpu_why, *kvm_why;      /* substrings of the reasons */
} ProbeVec;

static const ProbeVec vecs[] = {
    { SRC_LINE, "Xeon 8480+, arch perfmon v5, KVM with a v2 vPMU",
      TABLE(cpu_spr), KVM(CAP_ON, kvm_spr), .enable_pmu = "Y\n",
      .vendor = VPMU_HOST_VENDOR_INTEL, .pmu_vendor = VPMU_VENDOR_INTEL,
      .vendor_id = "GenuineIntel", .version = 5, .nr_gp = 8,
      .gp_width = 48, .nr_fixed = 4, .fixed_width = 48, .fixed_mask = 0xf,
      .kvm = true, .kvm_pmu = true, .kvm_global_msrs = true,
      .kvm_enable_pmu = 1, .cpu_why = "version 5",
      .kvm_why = "KVM offers a vPMU with the global MSRs" },
    { SRC_LINE, "Core 2 Q9500, arch perfmon v2, KVM not asked",
      TABLE(cpu_q9500), .kvm_from = VPMU_HOST_KVM_SKIP,
      .vendor = VPMU_HOST_VENDOR_INTEL, .pmu_vendor = VPMU_VENDOR_INTEL,
      .vendor_id = "GenuineIntel", .version = 2, .nr_gp = 2,
      .gp_width = 40, .nr_fixed = 3, .fixed_width = 40, .fixed_mask = 0x7,
      .kvm_enable_pmu = -1, .kvm_why = "KVM not asked" },
    { SRC_LINE, "EPYC 7502 (Zen 2): PerfCtrExtCore, no PerfMonV2",
      TABLE(cpu_zen2), KVM(CAP_ON, kvm_zen2), .enable_pmu = "Y\n",
      .vendor = VPMU_HOST_VENDOR_AMD, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "AuthenticAMD", .version = 1,
      .amd_level = VPMU_AMD_PERFCTR_CORE, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_pmu = true, .kvm_enable_pmu = 1,
      .cpu_why = "PerfCtrExtCore", .kvm_why = "KVM offers a vPMU (" },
    { SRC_LINE, "EPYC 9654 (Zen 4): PerfMonV2, KVM with the global MSRs",
      TABLE(cpu_zen4), KVM(CAP_ON, kvm_zen4), .enable_pmu = "Y\n",
      .vendor = VPMU_HOST_VENDOR_AMD, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "AuthenticAMD", .version = 2,
      .amd_level = VPMU_AMD_PERFMON_V2, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_pmu = true, .kvm_global_msrs = true,
      .kvm_enable_pmu = 1, .cpu_why = "PerfMonV2" },
    { SRC_LINE, "Hygon C86 7185 (Dhyana): AMD's PMU, named Hygon",
      TABLE(cpu_hygon), KVM(CAP_ON, kvm_hygon), .enable_pmu = "Y\n",
      .vendor = VPMU_HOST_VENDOR_HYGON, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "HygonGenuine", .version = 1,
      .amd_level = VPMU_AMD_PERFCTR_CORE, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_pmu = true, .kvm_enable_pmu = 1,
      .cpu_why = "HygonGenuine: AMD's PMU" },
    { SRC_LINE, "cloud VM: CPUID.0AH hidden, KVM with enable_pmu=N",
      TABLE(cpu_cloud_vm), KVM(0, kvm_intel_off), .enable_pmu = "N\n",
      .vendor = VPMU_HOST_VENDOR_INTEL, .pmu_vendor = VPMU_VENDOR_INTEL,
      .vendor_id = "GenuineIntel", .kvm = true, .kvm_enable_pmu = 0,
      .cpu_why = "CPUID.0AH:EAX[7:0] = 0", .kvm_why = "enable_pmu=N" },
    { SRC_LINE, "Hygon on a KVM without KVM_CAP_PMU_CAPABILITY",
      TABLE(cpu_hygon), KVM(0, kvm_hygon),
      .vendor = VPMU_HOST_VENDOR_HYGON, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "HygonGenuine", .version = 1,
      .amd_level = VPMU_AMD_PERFCTR_CORE, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_pmu = true, .kvm_enable_pmu = -1,
      .kvm_why = "KVM_CAP_PMU_CAPABILITY 0, its supported CPUID shows it" },
    { SRC_LINE, "Hygon on a KVM without the cap nor PerfCtrExtCore",
      TABLE(cpu_hygon), KVM(0, kvm_hygon_off),
      .vendor = VPMU_HOST_VENDOR_HYGON, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "HygonGenuine", .version = 1,
      .amd_level = VPMU_AMD_PERFCTR_CORE, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_enable_pmu = -1,
      .kvm_why = "shows no PMU of the host's vendor" },
    { SRC_LINE, "Xeon 8480+ on a KVM with enable_pmu=N",
      TABLE(cpu_spr), KVM(0, kvm_intel_off), .enable_pmu = "N\n",
      .vendor = VPMU_HOST_VENDOR_INTEL, .pmu_vendor = VPMU_VENDOR_INTEL,
      .vendor_id = "GenuineIntel", .version = 5, .nr_gp = 8,
      .gp_width = 48, .nr_fixed = 4, .fixed_width = 48, .fixed_mask = 0xf,
      .kvm = true, .kvm_enable_pmu = 0, .kvm_why = "enable_pmu=N" },
    { SRC_LINE, "enable_pmu=N wins over a recorded cap that disagrees",
      TABLE(cpu_spr), KVM(CAP_ON, kvm_spr), .enable_pmu = "N\n",
      .vendor = VPMU_HOST_VENDOR_INTEL, .pmu_vendor = VPMU_VENDOR_INTEL,
      .vendor_id = "GenuineIntel", .version = 5, .nr_gp = 8,
      .gp_width = 48, .nr_fixed = 4, .fixed_width = 48, .fixed_mask = 0xf,
      .kvm = true, .kvm_enable_pmu = 0, .kvm_why = "enable_pmu=N" },
    { SRC_LINE, "mediated host: Zen 4, kvm_amd.enable_mediated_pmu=Y",
      TABLE(cpu_zen4), KVM(CAP_ON, kvm_zen4), .enable_pmu = "Y\n",
      .mediated_amd = "Y\n", .osrelease = "7.0.0-rc1-amd64\n",
      .vendor = VPMU_HOST_VENDOR_AMD, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "AuthenticAMD", .version = 2,
      .amd_level = VPMU_AMD_PERFMON_V2, .nr_gp = 6, .gp_width = 48,
      .kvm = true, .kvm_pmu = true, .kvm_global_msrs = true,
      .kvm_enable_pmu = 1, .mediated = true },
    { SRC_LINE, "KVM that answered nothing (ioctls failed, recorded)",
      TABLE(cpu_zen2), .kvm_from = VPMU_HOST_KVM_RECORDED,
      .facts = { .pmu_cap = -ENOTTY },
      .vendor = VPMU_HOST_VENDOR_AMD, .pmu_vendor = VPMU_VENDOR_AMD,
      .vendor_id = "AuthenticAMD", .version = 1,
      .amd_level = VPMU_AMD_PERFCTR_CORE, .nr_gp = 6, .gp_width = 48,
      .kvm_enable_pmu = -1, .kvm_why = "no KVM" },
};

/* A scratch sysroot with the vector's files (none: an empty tree). */
static void make_root(char *root, const ProbeVec *v)
{
    ck_assert_ptr_nonnull(mkdtemp(root));
    if (v->enable_pmu) {
        sysroot_put(root, "/sys/module/kvm/parameters/enable_pmu",
                    v->enable_pmu);
    }
    if (v->mediated_amd) {
        sysroot_put(root, "/sys/module/kvm_amd/parameters/"
                    "enable_mediated_pmu", v->mediated_amd);
    }
    if (v->osrelease) {
        sysroot_put(root, "/proc/sys/kernel/osrelease", v->osrelease);
    }
}

/* One field of the answer, named with the vector's line when it differs. */
#define EXPECT(f) \
    ck_assert_msg((long long)p->f == (long long)v->f, \
                  "line %d (%s): " #f " = %lld, want %lld", v->line, \
                  v->name, (long long)p->f, (long long)v->f)

static void expect_cpu(const ProbeVec *v, const VpmuHostProbe *p)
{
    EXPECT(vendor);
    EXPECT(pmu_vendor);
    ck_assert_str_eq(p->vendor_id, v->vendor_id);
    EXPECT(version);
    EXPECT(amd_level);
    EXPECT(nr_gp);
    EXPECT(gp_width);
    EXPECT(nr_fixed);
    EXPECT(fixed_width);
    EXPECT(fixed_mask);
}

START_TEST(test_recorded)
{
    const ProbeVec *v = &vecs[_i];
    char root[] = SYSROOT_TEMPLATE;
    VpmuHostProbeInput in = {
        .cpuid = v->cpu, .nr_cpuid = v->ncpu, .kvm_from = v->kvm_from,
        .kvm_facts = &v->facts, .sysroot = root,
    };
    VpmuHostProbe p;

    make_root(root, v);
    ck_assert_msg(vpmu_host_probe(&in, &p) == 0, "line %d (%s): %s / %s",
                  v->line, v->name, p.cpu_reason, p.kvm_reason);
    expect_cpu(v, &p);
    ck_assert_msg(p.kvm == v->kvm && p.kvm_pmu == v->kvm_pmu &&
                  p.kvm_global_msrs == v->kvm_global_msrs &&
                  p.kvm_enable_pmu == v->kvm_enable_pmu,
                  "line %d (%s): kvm %d pmu %d global %d enable_pmu %d: %s",
                  v->line, v->name, p.kvm, p.kvm_pmu, p.kvm_global_msrs,
                  p.kvm_enable_pmu, p.kvm_reason);
    ck_assert_int_eq(p.kvm_pmu_cap, v->kvm_from == VPMU_HOST_KVM_RECORDED ?
                                    v->facts.pmu_cap : 0);
    ck_assert_int_eq(p.mediated, v->mediated);
    ck_assert_int_eq(p.mediated_check.mode, v->mediated ?
                     VPMU_HOST_MODE_MEDIATED : VPMU_HOST_MODE_PERF);
    ck_assert_str_eq(p.mediated_check.module, v->mediated ? "kvm_amd" : "");
    ck_assert_msg(!v->cpu_why || strstr(p.cpu_reason, v->cpu_why),
                  "line %d: '%s' lacks '%s'", v->line, p.cpu_reason,
                  v->cpu_why);
    ck_assert_msg(!v->kvm_why || strstr(p.kvm_reason, v->kvm_why),
                  "line %d: '%s' lacks '%s'", v->line, p.kvm_reason,
                  v->kvm_why);
    sysroot_remove(root);
}
END_TEST

/* --- bad tables: -EINVAL and the reason ---------------------------------- */

static const VpmuCpuidLeaf bad_no_leaf0[] = {
    { .leaf = 0xa, .eax = 0x08300805 },
};
/* Max leaf 20H promises 0AH. */
static const VpmuCpuidLeaf bad_intel_truncated[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
};
static const VpmuCpuidLeaf bad_amd_no_ext[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
};
/* Max extended leaf 8000_0028h promises 8000_0022h. */
static const VpmuCpuidLeaf bad_amd_truncated[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0x80000000, .eax = 0x80000028 },
    { .leaf = 0x80000001, .ecx = 0x00800000 },
};
static const VpmuCpuidLeaf bad_twice[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300805 },
    { .leaf = 0xa, .eax = 0x07280202 },
};
/* 0AH EAX 0x0730c802: version 2 with 0xc8 = 200 GP counters. */
static const VpmuCpuidLeaf bad_gp_count[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x0730c802 },
};
/* 0AH EAX 0x07000402: 4 GP counters of 0 bits. */
static const VpmuCpuidLeaf bad_gp_width0[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x07000402 },
};
/* 0AH EAX 0x07410402: 4 GP counters of 0x41 = 65 bits. */
static const VpmuCpuidLeaf bad_gp_width65[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x07410402 },
};
/* EDX 0x611: 0x11 = 17 fixed counters of 48 bits. */
static const VpmuCpuidLeaf bad_fixed_count[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300802, .edx = 0x611 },
};
/* Version 5, ECX bit 16: a fixed counter GLOBAL_CTRL cannot enable. */
static const VpmuCpuidLeaf bad_fixed_mask[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300805, .ecx = 0x10000, .edx = 0x8604 },
};
/* EDX 0x3: 3 fixed counters of 0 bits. */
static const VpmuCpuidLeaf bad_fixed_width[] = {
    { .leaf = 0x0, .eax = 0x20, INTEL_ID },
    { .leaf = 0xa, .eax = 0x08300802, .edx = 0x3 },
};
/* Fn8000_0000_EAX 0x12345678: not an extended leaf number. */
static const VpmuCpuidLeaf bad_amd_ext_max[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0x80000000, .eax = 0x12345678 },
};
/* PerfMonV2 with NumPerfCtrCore 0. */
static const VpmuCpuidLeaf bad_amd_v2_none[] = {
    { .leaf = 0x0, .eax = 0x10, AMD_ID },
    { .leaf = 0x80000000, .eax = 0x80000022 },
    { .leaf = 0x80000001, .ecx = 0x00800000 },
    { .leaf = 0x80000022, .eax = 0x1, .ebx = 0x4100 },
};

static const struct {
    int line;
    const VpmuCpuidLeaf *cpu;
    size_t ncpu;
    const char *why;
} bad_tables[] = {
    { SRC_LINE, TABLE(bad_no_leaf0), "no leaf 0" },
    { SRC_LINE, TABLE(bad_intel_truncated), "truncated: leaf 0xa is missing" },
    { SRC_LINE, TABLE(bad_amd_no_ext), "without leaf 0x80000000" },
    { SRC_LINE, TABLE(bad_amd_truncated),
      "truncated: leaf 0x80000022 is missing, below the maximum leaf "
      "0x80000028" },
    { SRC_LINE, TABLE(bad_twice), "leaf 0xa subleaf 0 twice" },
    { SRC_LINE, TABLE(bad_gp_count), "0AH:EAX[15:8] (GP counters) = 200" },
    { SRC_LINE, TABLE(bad_gp_width0), "(GP counter width) = 0" },
    { SRC_LINE, TABLE(bad_gp_width65), "(GP counter width) = 65" },
    { SRC_LINE, TABLE(bad_fixed_count), "(fixed counters) = 17" },
    { SRC_LINE, TABLE(bad_fixed_mask), "(fixed counter bitmap) = 65536" },
    { SRC_LINE, TABLE(bad_fixed_width), "(fixed counter width) = 0" },
    { SRC_LINE, TABLE(bad_amd_ext_max), "= 305419896 (0x12345678)" },
    { SRC_LINE, TABLE(bad_amd_v2_none), "(NumPerfCtrCore) = 0" },
};

START_TEST(test_bad_table)
{
    VpmuHostProbeInput in = {
        .cpuid = bad_tables[_i].cpu, .nr_cpuid = bad_tables[_i].ncpu,
        .kvm_from = VPMU_HOST_KVM_SKIP, .skip_mediated = true,
    };
    VpmuHostProbe p;

    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_msg(strstr(p.cpu_reason, bad_tables[_i].why),
                  "line %d: '%s' lacks '%s'", bad_tables[_i].line,
                  p.cpu_reason, bad_tables[_i].why);
}
END_TEST

/* "VIA VIA VIA " and a vendor of control bytes: answers, not errors. */
START_TEST(test_unknown_vendor)
{
    static const VpmuCpuidLeaf via[] = {
        { .leaf = 0x0, .eax = 0xa, .ebx = 0x20414956, .edx = 0x20414956,
          .ecx = 0x20414956 },
        { .leaf = 0xa, .eax = 0x08300805 },
    }, junk[] = {
        { .leaf = 0x0, .eax = 0x1, .ebx = 0x01020341, .edx = 0x42424242,
          .ecx = 0x7f434343 },
    };
    VpmuHostProbeInput in = { .kvm_from = VPMU_HOST_KVM_SKIP,
                              .skip_mediated = true };
    VpmuHostProbe p;

    in.cpuid = via;
    in.nr_cpuid = N_LEAVES(via);
    ck_assert_int_eq(vpmu_host_probe(&in, &p), 0);
    ck_assert_int_eq(p.vendor, VPMU_HOST_VENDOR_UNKNOWN);
    ck_assert_int_eq(p.pmu_vendor, 0);
    ck_assert_str_eq(p.vendor_id, "VIA VIA VIA ");
    ck_assert_uint_eq(p.nr_gp, 0);      /* 0AH is Intel's, not read */
    ck_assert_ptr_nonnull(strstr(p.cpu_reason, "no PMU vpmu knows"));
    in.cpuid = junk;
    in.nr_cpuid = N_LEAVES(junk);
    ck_assert_int_eq(vpmu_host_probe(&in, &p), 0);
    ck_assert_str_eq(p.vendor_id, "A???BBBBCCC?");
    ck_assert_str_eq(vpmu_host_vendor_name(p.vendor), "unknown");
}
END_TEST

/* --- bad inputs ---------------------------------------------------------- */

START_TEST(test_bad_input)
{
    static const VpmuHostKvmFacts no_table = { .pmu_cap = 1, .nr_cpuid = 3 };
    static const VpmuCpuidLeaf kvm_twice[] = {
        { .leaf = 0x80000001 }, { .leaf = 0x80000001, .ecx = 1 },
    };
    VpmuHostKvmFacts twice = { .cpuid = kvm_twice, .nr_cpuid = 2 };
    VpmuHostProbeInput in = { .cpuid = cpu_spr, .nr_cpuid = 0 };
    VpmuHostProbe p;

    ck_assert_int_eq(vpmu_host_probe(NULL, NULL), -EINVAL);
    ck_assert_int_eq(vpmu_host_probe(&in, NULL), -EINVAL);
    /* A table without its count, a count without its table. */
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.cpu_reason, "cpuid and nr_cpuid"));
    in = (VpmuHostProbeInput){ .nr_cpuid = 4 };
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    /* VPMU_HOST_KVM_FD without an fd. */
    in = (VpmuHostProbeInput){ TABLE_IN(cpu_spr),
                               .kvm_from = VPMU_HOST_KVM_FD, .kvm_fd = -1 };
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.kvm_reason, "without kvm_fd"));
    /* VPMU_HOST_KVM_RECORDED without facts, or with a bad table. */
    in.kvm_from = VPMU_HOST_KVM_RECORDED;
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.kvm_reason, "without facts"));
    in.kvm_facts = &no_table;
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.kvm_reason, "disagree"));
    in.kvm_facts = &twice;
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.kvm_reason, "KVM's supported CPUID: "
                                 "leaf 0x80000001 subleaf 0 twice"));
    /* No such VpmuHostKvmFrom. */
    in.kvm_from = (VpmuHostKvmFrom)7;
    ck_assert_int_eq(vpmu_host_probe(&in, &p), -EINVAL);
    ck_assert_ptr_nonnull(strstr(p.kvm_reason, "kvm_from 7"));
}
END_TEST

/* An fd that is no KVM's: an answer ("no KVM", and why), not an error. */
START_TEST(test_not_kvm_fd)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char root[] = SYSROOT_TEMPLATE;
    VpmuHostProbeInput in = { TABLE_IN(cpu_spr), .sysroot = root,
                              .kvm_from = VPMU_HOST_KVM_FD, .kvm_fd = fd,
                              .skip_mediated = true };
    VpmuHostProbe p;

    ck_assert_int_ge(fd, 0);
    ck_assert_ptr_nonnull(mkdtemp(root));
    ck_assert_int_eq(vpmu_host_probe(&in, &p), 0);
    close(fd);
    sysroot_remove(root);
    ck_assert(!p.kvm && !p.kvm_pmu && !p.kvm_global_msrs);
    ck_assert_int_eq(p.kvm_pmu_cap, -ENOTTY);
    ck_assert_int_eq(p.kvm_enable_pmu, -1);
    ck_assert_msg(strstr(p.kvm_reason, "no KVM: KVM_CHECK_EXTENSION: "
                         "Inappropriate ioctl for device"), "%s",
                  p.kvm_reason);
    /* Skipped, the mediated check is left zero. */
    ck_assert_int_eq(p.mediated_check.mode, VPMU_HOST_MODE_UNKNOWN);
    ck_assert_str_eq(p.mediated_check.reason, "");
}
END_TEST

/* --- this host ----------------------------------------------------------- */

/*
 * A VM's fd answers KVM_CHECK_EXTENSION; the supported CPUID then comes
 * from /dev/kvm: the same answer as /dev/kvm's alone.  Without /dev/kvm
 * the answer is "no KVM" and why.
 */
START_TEST(test_vm_fd)
{
    int sys = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    VpmuHostProbeInput in = { .kvm_from = VPMU_HOST_KVM_OPEN,
                              .skip_mediated = true };
    VpmuHostProbe by_sys, by_vm;
    int vm;

    ck_assert_int_eq(vpmu_host_probe(&in, &by_sys), 0);
    if (sys < 0) {
        ck_assert(!by_sys.kvm);
        ck_assert_msg(strstr(by_sys.kvm_reason, "no KVM: /dev/kvm: "),
                      "%s", by_sys.kvm_reason);
        return;
    }
    vm = ioctl(sys, KVM_CREATE_VM, 0);
    close(sys);
    ck_assert_msg(vm >= 0, "KVM_CREATE_VM: %s", strerror(errno));
    in.kvm_from = VPMU_HOST_KVM_FD;
    in.kvm_fd = vm;
    ck_assert_int_eq(vpmu_host_probe(&in, &by_vm), 0);
    close(vm);
    ck_assert(by_sys.kvm && by_vm.kvm);
    ck_assert_int_eq(by_vm.kvm_pmu, by_sys.kvm_pmu);
    ck_assert_int_eq(by_vm.kvm_global_msrs, by_sys.kvm_global_msrs);
    ck_assert_int_eq(by_vm.kvm_pmu_cap, by_sys.kvm_pmu_cap);
    ck_assert_str_eq(by_vm.kvm_reason, by_sys.kvm_reason);
}
END_TEST

/* The leaves the probe reads, executed here by the test itself. */
static size_t execute_cpuid(VpmuCpuidLeaf *t)
{
    static const uint32_t leaves[] = { 0x0, 0xa, 0x80000000, 0x80000001,
                                       0x80000022 };
    unsigned basic = __get_cpuid_max(0, NULL);
    unsigned ext = __get_cpuid_max(0x80000000, NULL);
    size_t n = 0;

    for (size_t i = 0; i < N_LEAVES(leaves); i++) {
        if (leaves[i] <= (leaves[i] >= 0x80000000 ? ext : basic)) {
            t[n] = (VpmuCpuidLeaf){ .leaf = leaves[i] };
            __cpuid_count(leaves[i], 0, t[n].eax, t[n].ebx, t[n].ecx,
                          t[n].edx);
            n++;
        }
    }
    return n;
}

/*
 * Live, the probe reads what the test reads itself, and the perf source's
 * vendor and the KVM front end's vPMU are the probe's.
 */
START_TEST(test_this_host)
{
    VpmuCpuidLeaf t[5];
    VpmuHostProbeInput rec = { .cpuid = t, .nr_cpuid = execute_cpuid(t),
                               .kvm_from = VPMU_HOST_KVM_SKIP,
                               .skip_mediated = true };
    VpmuHostProbe live, want;
    VpmuKvmCaps caps;

    ck_assert_int_eq(vpmu_host_probe(&rec, &want), 0);
    ck_assert_int_eq(vpmu_host_probe(NULL, &live), 0);
    ck_assert_int_eq(live.vendor, want.vendor);
    ck_assert_str_eq(live.vendor_id, want.vendor_id);
    ck_assert_uint_eq(live.version, want.version);
    ck_assert_uint_eq(live.nr_gp, want.nr_gp);
    ck_assert_uint_eq(live.gp_width, want.gp_width);
    ck_assert_uint_eq(live.fixed_mask, want.fixed_mask);
    ck_assert_str_eq(live.cpu_reason, want.cpu_reason);
    ck_assert_int_eq(vpmu_perf_host_vendor(), live.pmu_vendor);
    vpmu_kvm_probe(-1, &caps);
    ck_assert_int_eq(caps.pmu, live.kvm_pmu);
    ck_assert_int_eq(caps.global_msrs, live.kvm_global_msrs);
    /* The mediated verdict is vpmu_host_check()'s on "/". */
    ck_assert_int_ne(live.mediated_check.reason[0], '\0');
}
END_TEST

static Suite *host_probe_suite(void)
{
    Suite *s = suite_create("host-probe");
    TCase *tc = tcase_create("probe");

    tcase_add_loop_test(tc, test_recorded, 0, N_LEAVES(vecs));
    tcase_add_loop_test(tc, test_bad_table, 0, N_LEAVES(bad_tables));
    tcase_add_test(tc, test_unknown_vendor);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_not_kvm_fd);
    tcase_add_test(tc, test_vm_fd);
    tcase_add_test(tc, test_this_host);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(host_probe_suite());
}
