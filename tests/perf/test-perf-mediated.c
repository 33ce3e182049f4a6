/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM's mediated vPMU (include/vpmu/host.h, docs/kvm.md "Mediated
 * hosts"): vpmu_host_check() on recorded host trees (tests/sysroot.h),
 * one vector a line, with the exact reason; which refusals of
 * perf_event_open it reads as the mediated vPMU's; and what the perf
 * source says and offers on such a host, its EOPNOTSUPP recorded by the
 * fake system calls (fake-sys.h, HOST_MEDIATED).
 */
#include "perf-env.h"
#include "sysroot.h"

#define AMD_ON      { .kvm_amd = "Y\n", .osrelease = "7.0.0-1-amd64\n" }
#define NO_SYS_7    { .no_sys = 1, .osrelease = "7.0.0-rc3\n" }
#define PARAM(m)    "@/sys/module/" m "/parameters/enable_mediated_pmu"
#define NONE        "no enable_mediated_pmu parameter under @/sys/module " \
                    "(kvm, kvm_amd, kvm_intel)"
#define ON(m)       "KVM's mediated vPMU is on (" m ".enable_mediated_pmu=Y)"
#define REFUSES     "perf refuses host events that count guests while a " \
                    "VM with it exists"
#define SEEMS       "KVM's mediated vPMU is on, it seems: perf refused a " \
                    "host event that counts guests (EOPNOTSUPP) on Linux "
#define CANNOT      "cannot tell whether KVM's mediated vPMU is on: "
#define NO_RELEASE  "no enable_mediated_pmu parameter under @/sys/module, " \
                    "and @/proc/sys/kernel/osrelease names no release"
#define CHOICE(m)   "choose per host: -accel kvm without vpmu=on gives " \
                    "guests the mediated vPMU; for vpmu, load " m " with " \
                    "enable_mediated_pmu=0 (docs/kvm.md, \"Mediated hosts\")"

typedef struct CheckVec {
    int line;
    SysrootSpec host;
    bool refusal;           /* cycles that count guests got EOPNOTSUPP */
    VpmuHostMode mode;
    const char *module;
    unsigned major, minor;
    const char *reason;     /* '@' stands for the tree's root */
} CheckVec;

#define SRC_LINE .line = __LINE__
#define MEDIATED VPMU_HOST_MODE_MEDIATED
#define PERF     VPMU_HOST_MODE_PERF
#define UNKNOWN  VPMU_HOST_MODE_UNKNOWN

static const CheckVec vecs[] = {
    /* A parameter on decides, refusal or not. */
    { SRC_LINE, AMD_ON, false, MEDIATED, "kvm_amd", 7, 0,
      ON("kvm_amd") ": " REFUSES },
    { SRC_LINE, AMD_ON, true, MEDIATED, "kvm_amd", 7, 0,
      ON("kvm_amd") " and perf refused one (EOPNOTSUPP): " REFUSES },
    { SRC_LINE, { .kvm_intel = "1\n", .osrelease = "7.2.1\n" }, false,
      MEDIATED, "kvm_intel", 7, 2, ON("kvm_intel") ": " REFUSES },
    { SRC_LINE, { .kvm = "Y\n" }, false, MEDIATED, "kvm", 0, 0,
      ON("kvm") ": " REFUSES },
    { SRC_LINE, { .kvm = "maybe\n", .kvm_amd = "y" }, false, MEDIATED,
      "kvm_amd", 0, 0, ON("kvm_amd") ": " REFUSES },
    /* Off, or none at all: perf's refusal then has another cause. */
    { SRC_LINE, { .kvm_amd = "N\n", .osrelease = "7.1.0\n" }, false, PERF,
      "", 7, 1, "KVM's mediated vPMU is off (kvm_amd.enable_mediated_pmu=N)" },
    { SRC_LINE, { .kvm_amd = "0\n", .osrelease = "7.1.0\n" }, true, PERF,
      "", 7, 1, "KVM's mediated vPMU is off (kvm_amd.enable_mediated_pmu=N)" },
    { SRC_LINE, { .osrelease = "6.18.44-fc-v657\n" }, false, PERF, "", 6, 18,
      NONE ": KVM is not loaded, or its kernel has no mediated vPMU" },
    { SRC_LINE, { .osrelease = "6.1.0-28-amd64\n" }, true, PERF, "", 6, 1,
      NONE ": KVM is not loaded, or its kernel has no mediated vPMU" },
    { SRC_LINE, { .no_sys = 1 }, false, PERF, "", 0, 0,
      NONE ": KVM is not loaded, or its kernel has no mediated vPMU" },
    /* No parameter to read (a /sys without them): the refusal on 7.0+. */
    { SRC_LINE, NO_SYS_7, true, MEDIATED, "", 7, 0, SEEMS "7.0, and " NONE },
    { SRC_LINE, { .no_sys = 1, .osrelease = "10.2.1\n" }, true, MEDIATED,
      "", 10, 2, SEEMS "10.2, and " NONE },
    { SRC_LINE, { .no_sys = 1 }, true, UNKNOWN, "", 0, 0,
      CANNOT "perf refused a host event that counts guests (EOPNOTSUPP), "
      NO_RELEASE },
    /* Bad input: the file is named, and what it says. */
    { SRC_LINE, { .kvm_amd = "maybe\n" }, false, UNKNOWN, "", 0, 0,
      CANNOT PARAM("kvm_amd") " says 'maybe', neither Y nor N" },
    { SRC_LINE, { .kvm_amd = "" }, false, UNKNOWN, "", 0, 0,
      CANNOT PARAM("kvm_amd") " says '', neither Y nor N" },
    { SRC_LINE, { .kvm_amd = "Y\x01\n" }, false, UNKNOWN, "", 0, 0,
      CANNOT PARAM("kvm_amd") " says 'Y?', neither Y nor N" },
    { SRC_LINE, { .kvm_amd = "YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY" },
      false, UNKNOWN, "", 0, 0,
      CANNOT PARAM("kvm_amd") " says 'YYYYYYYYYYYYYYYY'..., neither Y nor N" },
    { SRC_LINE, { .kvm_intel = SYSROOT_UNREADABLE }, false, UNKNOWN, "", 0, 0,
      CANNOT PARAM("kvm_intel") " is unreadable (Is a directory)" },
    { SRC_LINE, { .kvm = "N\n", .kvm_amd = "maybe\n" }, true, UNKNOWN, "",
      0, 0, CANNOT PARAM("kvm_amd") " says 'maybe', neither Y nor N" },
    { SRC_LINE, { .kvm_amd = "maybe\n", .osrelease = "6.12.9\n" }, true,
      UNKNOWN, "", 6, 12,
      CANNOT PARAM("kvm_amd") " says 'maybe', neither Y nor N" },
    /* ... unless a refusal on 7.0+ decides. */
    { SRC_LINE, { .kvm_amd = "maybe\n", .osrelease = "7.0.0\n" }, true,
      MEDIATED, "", 7, 0,
      SEEMS "7.0, and " PARAM("kvm_amd") " says 'maybe', neither Y nor N" },
    /* Releases that name none: the version is unknown. */
    { SRC_LINE, { .osrelease = "7\n" }, false, PERF, "", 0, 0,
      NONE ": KVM is not loaded, or its kernel has no mediated vPMU" },
    { SRC_LINE, { .no_sys = 1, .osrelease = "seven.0\n" }, true, UNKNOWN, "",
      0, 0, CANNOT "perf refused a host event that counts guests "
      "(EOPNOTSUPP), " NO_RELEASE },
    { SRC_LINE, { .no_sys = 1, .osrelease = "7.x\n" }, true, UNKNOWN, "",
      0, 0, CANNOT "perf refused a host event that counts guests "
      "(EOPNOTSUPP), " NO_RELEASE },
    { SRC_LINE, { .no_sys = 1, .osrelease = "99999.0\n" }, true, UNKNOWN,
      "", 0, 0, CANNOT "perf refused a host event that counts guests "
      "(EOPNOTSUPP), " NO_RELEASE },
};

static char root[] = SYSROOT_TEMPLATE;

/* @text with every '@' replaced by the tree's root. */
static void expand(const char *text, char *out, size_t len)
{
    size_t n = 0;

    for (; *text && n + 1 < len; text++) {
        if (*text == '@') {
            n += snprintf(out + n, len - n, "%s", root);
        } else {
            out[n++] = *text;
        }
    }
    out[n < len ? n : len - 1] = '\0';
}

/* Cycles, both CPLs, exclude_host: what the perf source opens under KVM. */
static struct perf_event_attr cycles(void)
{
    struct perf_event_attr a = {
        .type = PERF_TYPE_HARDWARE, .size = sizeof(a),
        .config = PERF_COUNT_HW_CPU_CYCLES, .exclude_host = 1,
        .exclude_hv = 1, .disabled = 1,
    };

    return a;
}

START_TEST(test_check_vectors)
{
    const CheckVec *v = &vecs[_i];
    struct perf_event_attr a = cycles();
    char want[VPMU_HOST_REASON_MAX + 256];
    VpmuHostCheck h;

    sysroot_make(root, &v->host);
    ck_assert_int_eq(vpmu_host_check(root, v->refusal ? &a : NULL,
                                     v->refusal ? -EOPNOTSUPP : 0, &h), 0);
    expand(v->reason, want, sizeof(want));
    ck_assert_msg(h.mode == v->mode, "line %d: mode %s", v->line,
                  vpmu_host_mode_name(h.mode));
    ck_assert_msg(!strcmp(h.reason, want), "line %d: reason\n  %s\nwant\n  %s",
                  v->line, h.reason, want);
    ck_assert_msg(!strcmp(h.module, v->module), "line %d: module %s",
                  v->line, h.module);
    ck_assert_msg(h.refused == v->refusal, "line %d: refused", v->line);
    ck_assert_msg(h.kernel_major == v->major && h.kernel_minor == v->minor,
                  "line %d: Linux %u.%u", v->line, h.kernel_major,
                  h.kernel_minor);
    sysroot_remove(root);
}
END_TEST

/*
 * Which failures are perf's refusal: EOPNOTSUPP of a hardware, raw or
 * cache event that counts guests, nothing else (on a 7.0 host whose
 * parameters are not visible, where the refusal alone decides).
 */
START_TEST(test_check_which_refusals)
{
    static const struct {
        uint32_t type;
        bool exclude_guest;
        int err;
        bool refused;
    } t[] = {
        { PERF_TYPE_HARDWARE, false, -EOPNOTSUPP, true },
        { PERF_TYPE_RAW, false, -EOPNOTSUPP, true },
        { PERF_TYPE_HW_CACHE, false, -EOPNOTSUPP, true },
        { PERF_TYPE_HARDWARE, true, -EOPNOTSUPP, false },   /* host only */
        { PERF_TYPE_SOFTWARE, false, -EOPNOTSUPP, false },  /* task clock */
        { PERF_TYPE_HARDWARE, false, -ENOENT, false },      /* no PMU */
        { PERF_TYPE_HARDWARE, false, -EBUSY, false },
        { PERF_TYPE_HARDWARE, false, 0, false },
    };
    SysrootSpec host = NO_SYS_7;
    struct perf_event_attr a = cycles();
    VpmuHostCheck h;

    sysroot_make(root, &host);
    for (unsigned i = 0; i < VPMU_ARRAY_SIZE(t); i++) {
        a.type = t[i].type;
        a.exclude_guest = t[i].exclude_guest;
        ck_assert_int_eq(vpmu_host_check(root, &a, t[i].err, &h), 0);
        ck_assert_msg(h.refused == t[i].refused, "case %u", i);
        ck_assert_int_eq(h.mode, t[i].refused ? MEDIATED : PERF);
    }
    ck_assert_int_eq(vpmu_host_check(root, NULL, -EOPNOTSUPP, &h), 0);
    ck_assert(!h.refused);
    sysroot_remove(root);
}
END_TEST

START_TEST(test_check_api)
{
    SysrootSpec host = AMD_ON;
    char slash[sizeof(root) + 2], want[VPMU_HOST_REASON_MAX];
    VpmuHostCheck h;

    ck_assert_int_eq(vpmu_host_check(NULL, NULL, 0, NULL), -EINVAL);
    /* This machine's own /: whatever it says, it says it. */
    ck_assert_int_eq(vpmu_host_check(NULL, NULL, 0, &h), 0);
    ck_assert_uint_gt(strlen(h.reason), 0);
    ck_assert_str_eq(vpmu_host_mode_name(UNKNOWN), "unknown");
    ck_assert_str_eq(vpmu_host_mode_name(PERF), "perf");
    ck_assert_str_eq(vpmu_host_mode_name(MEDIATED), "mediated");
    ck_assert_str_eq(vpmu_host_mode_name((VpmuHostMode)42), "unknown");
    /* A sysroot with a trailing slash is the same tree. */
    host.kvm_amd = "bad";
    sysroot_make(root, &host);
    snprintf(slash, sizeof(slash), "%s//", root);
    ck_assert_int_eq(vpmu_host_check(slash, NULL, 0, &h), 0);
    expand(CANNOT PARAM("kvm_amd") " says 'bad', neither Y nor N", want,
           sizeof(want));
    ck_assert_str_eq(h.reason, want);
    sysroot_remove(root);
}
END_TEST

/* A source under KVM (exclude_host) on the tree @host of this test. */
static void source_up(int fake_host, const SysrootSpec *host)
{
    VpmuPerfSourceOpts o = {
        .exclude_host = true, .host_vendor = VPMU_VENDOR_INTEL,
        .guest_vendor = VPMU_VENDOR_INTEL, .sysroot = root,
    };

    sysroot_make(root, host);
    env_up(fake_host, &o);
}

static VpmuHostCheck source_host(void)
{
    VpmuHostCheck h;

    vpmu_perf_source_host(env.src, &h);
    return h;
}

static void source_down(void)
{
    env_down();
    sysroot_remove(root);
}

/*
 * QEMU's case: kvm_amd.enable_mediated_pmu=Y, this VM's first vCPU made
 * it mediated, so perf refuses the cycles probe.  One line says why and
 * what to do; the guest gets the task-clock fallback (cycles and
 * ref-cycles), as on a host without a PMU: 2 opens.
 */
START_TEST(test_source_mediated)
{
    SysrootSpec host = AMD_ON;
    char want[600];
    VpmuHostCheck h;

    source_up(HOST_MEDIATED, &host);
    ck_assert_uint_eq(env.fs.open_calls, 2);
    ck_assert_uint_eq(vpmu_perf_source_events(env.src),
                      VPMU_EVENT_BIT(VPMU_EVENT_CYCLES) |
                      VPMU_EVENT_BIT(VPMU_EVENT_REF_CYCLES));
    ck_assert(!perf_stats().hw_pmu);
    ck_assert_uint_eq(env.logs, 1);
    expand("vpmu-perf: " ON("kvm_amd") " and perf refused one (EOPNOTSUPP): "
           REFUSES "; guest cycles and ref-cycles count the vCPU thread's "
           "CPU time (task-clock), every other event is unavailable; "
           CHOICE("kvm_amd"), want, sizeof(want));
    ck_assert_str_eq(env.log, want);
    h = source_host();
    ck_assert_int_eq(h.mode, MEDIATED);
    ck_assert(h.refused);
    ck_assert_str_eq(h.module, "kvm_amd");
    /* The guest's cycles count (task clock), its instructions cannot. */
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_COUNTING);
    ck_assert_uint_eq(fake_sys_last(&env.fs)->attr.type, PERF_TYPE_SOFTWARE);
    source_down();
}
END_TEST

/*
 * On, but no mediated VM yet (this VM's KVM PMU is off): the events
 * open, all 7, and one line says they stand in a mediated VM's way.
 */
START_TEST(test_source_mediated_no_vm_yet)
{
    SysrootSpec host = AMD_ON;
    char want[600];

    source_up(HOST_HW, &host);
    ck_assert_uint_eq(vpmu_perf_source_events(env.src), 0x7f);
    ck_assert_uint_eq(env.logs, 1);
    expand("vpmu-perf: " ON("kvm_amd") ": " REFUSES "; vpmu's events open "
           "for now, but a VM with it cannot start while they exist (EBUSY) "
           "and perf refuses new ones once one runs; " CHOICE("kvm_amd"),
           want, sizeof(want));
    ck_assert_str_eq(env.log, want);
    ck_assert_int_eq(source_host().mode, MEDIATED);
    ck_assert(!source_host().refused);
    source_down();
}
END_TEST

/* No parameters visible, Linux 7.0: the refusal alone says it. */
START_TEST(test_source_mediated_inferred)
{
    SysrootSpec host = NO_SYS_7;

    source_up(HOST_MEDIATED, &host);
    ck_assert_uint_eq(env.logs, 1);
    ck_assert_ptr_nonnull(strstr(env.log, "vpmu-perf: " SEEMS "7.0, and "));
    ck_assert_ptr_nonnull(strstr(env.log, CHOICE("kvm_amd or kvm_intel")));
    ck_assert_int_eq(source_host().mode, MEDIATED);
    ck_assert_str_eq(source_host().module, "");
    source_down();
}
END_TEST

/* The same EOPNOTSUPP on Linux 6.x is not the mediated vPMU: as before. */
START_TEST(test_source_refused_before_7)
{
    SysrootSpec host = { .osrelease = "6.12.9\n" };

    source_up(HOST_MEDIATED, &host);
    ck_assert_uint_eq(env.logs, 1);
    ck_assert_ptr_nonnull(strstr(env.log, "vpmu-perf: no hardware PMU on "
                                 "this host (cycles: Operation not "
                                 "supported)"));
    ck_assert_int_eq(source_host().mode, PERF);
    source_down();
}
END_TEST

/*
 * A mediated VM starts after this one (the parameters not visible, 7.0):
 * the next open is refused; the source says why, once, and the guest
 * counter shows a source error.
 */
START_TEST(test_source_refused_later)
{
    SysrootSpec host = NO_SYS_7;

    source_up(HOST_HW, &host);
    ck_assert_uint_eq(env.logs, 0);
    ck_assert_int_eq(source_host().mode, PERF);
    env.fs.refuse_guest = -EOPNOTSUPP;
    wr(EVTSEL(0), EV_CYCLES | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(0)), VPMU_COUNTER_SOURCE_ERROR);
    /* The failed open's line, then the mediated vPMU's. */
    ck_assert_uint_eq(env.logs, 2);
    ck_assert_ptr_nonnull(strstr(env.log, "vpmu-perf: " SEEMS "7.0"));
    ck_assert_ptr_nonnull(strstr(env.log, "; the guest counters perf "
                                 "refuses count nothing; choose per host"));
    ck_assert_int_eq(source_host().mode, MEDIATED);
    ck_assert(source_host().refused);
    wr(EVTSEL(1), EV_INSTRUCTIONS | EOU);
    ck_assert_int_eq(state_of(VPMU_COUNTER_GP(1)), VPMU_COUNTER_SOURCE_ERROR);
    ck_assert_uint_eq(env.logs, 2);
    source_down();
}
END_TEST

/* Garbage in the parameter, events open: one line, mode unknown. */
START_TEST(test_source_unknown)
{
    SysrootSpec host = { .kvm_amd = "maybe\n", .osrelease = "7.0.0\n" };
    char want[600];

    source_up(HOST_HW, &host);
    ck_assert_uint_eq(vpmu_perf_source_events(env.src), 0x7f);
    ck_assert_uint_eq(env.logs, 1);
    expand("vpmu-perf: " CANNOT PARAM("kvm_amd") " says 'maybe', neither Y "
           "nor N", want, sizeof(want));
    ck_assert_str_eq(env.log, want);
    ck_assert_int_eq(source_host().mode, UNKNOWN);
    source_down();
}
END_TEST

/* Off: nothing to say, the source is as it always was. */
START_TEST(test_source_off)
{
    SysrootSpec host = { .kvm_amd = "N\n", .osrelease = "7.0.0\n" };

    source_up(HOST_HW, &host);
    ck_assert_uint_eq(env.logs, 0);
    ck_assert_int_eq(source_host().mode, PERF);
    ck_assert_str_eq(source_host().reason, "KVM's mediated vPMU is off "
                     "(kvm_amd.enable_mediated_pmu=N)");
    source_down();
}
END_TEST

static Suite *mediated_suite(void)
{
    Suite *s = suite_create("perf-mediated");
    TCase *tc = tcase_create("host-check");

    tcase_add_loop_test(tc, test_check_vectors, 0, VPMU_ARRAY_SIZE(vecs));
    tcase_add_test(tc, test_check_which_refusals);
    tcase_add_test(tc, test_check_api);
    suite_add_tcase(s, tc);
    tc = tcase_create("source");
    tcase_add_test(tc, test_source_mediated);
    tcase_add_test(tc, test_source_mediated_no_vm_yet);
    tcase_add_test(tc, test_source_mediated_inferred);
    tcase_add_test(tc, test_source_refused_before_7);
    tcase_add_test(tc, test_source_refused_later);
    tcase_add_test(tc, test_source_unknown);
    tcase_add_test(tc, test_source_off);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(mediated_suite());
}
