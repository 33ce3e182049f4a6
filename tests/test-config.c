/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_config_init() / vpmu_config_check() / vpmu_pmu_new(): every field of
 * VpmuConfig, for both vendors, against the contract in pmu.h:
 *
 *   vendor        1 Intel, 2 AMD
 *   intel_version Intel 1-5; AMD 0
 *   amd_level     AMD 1-3; Intel 0
 *   nr_gp         Intel 0-8; AMD K7 exactly 4, PERFCTR_CORE exactly 6,
 *                 PerfMonV2 1-6
 *   nr_fixed      Intel v2-v4 0-3, v5 0-4; Intel v1 and AMD 0
 *   gp_width      Intel 32-48; AMD 48
 *   fixed_width   Intel 32-48 with fixed counters, else 0; AMD 0
 *   pdcm          AMD: false
 *   perf_capabilities  needs pdcm; FW_WRITE only; AMD 0
 *   events        VPMU_EVENT_BIT()s only
 *
 * Every invalid value gives -EINVAL and a message naming the field.
 */
#include "vectors.h"

/* Start from a vendor's defaults, then apply one field change. */
typedef struct ConfigVector {
    int line;
    VpmuVendor base;            /* vpmu_config_init() of this vendor */
    /* Field overrides; set_* says which ones apply. */
    bool set_vendor;
    int vendor;
    bool set_version;
    unsigned intel_version;
    bool set_level;
    int amd_level;
    bool set_gp;
    unsigned nr_gp;
    bool set_fixed;
    unsigned nr_fixed;
    bool set_gp_width;
    unsigned gp_width;
    bool set_fixed_width;
    unsigned fixed_width;
    bool set_pdcm;
    bool pdcm;
    bool set_caps;
    uint64_t perf_capabilities;
    bool set_events;
    uint32_t events;
    bool set_raw;
    bool raw_events;
    /* Expectation. */
    int ret;
    const char *field;          /* must appear in the message on -EINVAL */
} ConfigVector;

#define INTEL .base = VPMU_VENDOR_INTEL
#define AMD   .base = VPMU_VENDOR_AMD
#define VENDOR(v)   .set_vendor = true, .vendor = (v)
#define VER(v)      .set_version = true, .intel_version = (v)
#define LEVEL(v)    .set_level = true, .amd_level = (v)
#define GP(v)       .set_gp = true, .nr_gp = (v)
#define FIXED(v)    .set_fixed = true, .nr_fixed = (v)
#define GPW(v)      .set_gp_width = true, .gp_width = (v)
#define FXW(v)      .set_fixed_width = true, .fixed_width = (v)
#define PDCM(v)     .set_pdcm = true, .pdcm = (v)
#define CAPS(v)     .set_caps = true, .perf_capabilities = (v)
#define EVENTS(v)   .set_events = true, .events = (v)
#define RAW(v)      .set_raw = true, .raw_events = (v)
#define OK          .ret = 0
#define BAD(f)      .ret = -EINVAL, .field = (f)

#define FW          VPMU_PERF_CAP_FW_WRITE

static const ConfigVector config_vectors[] = {
    /* ---- Intel: valid boundaries ---------------------------------- */
    { SRC_LINE, INTEL, OK },                                   /* defaults */
    { SRC_LINE, INTEL, VER(1), FIXED(0), FXW(0), OK },
    { SRC_LINE, INTEL, VER(1), FIXED(0), FXW(0), GP(0), OK },
    { SRC_LINE, INTEL, VER(1), FIXED(0), FXW(0), GP(8), GPW(32), OK },
    { SRC_LINE, INTEL, VER(1), FIXED(0), FXW(0), PDCM(false), CAPS(0), OK },
    { SRC_LINE, INTEL, VER(2), FIXED(3), OK },
    { SRC_LINE, INTEL, VER(3), FIXED(3), OK },
    { SRC_LINE, INTEL, VER(4), FIXED(3), OK },
    { SRC_LINE, INTEL, VER(5), FIXED(3), OK },
    { SRC_LINE, INTEL, VER(5), FIXED(4), OK },
    { SRC_LINE, INTEL, VER(2), FIXED(0), FXW(0), OK },
    { SRC_LINE, INTEL, VER(4), FIXED(0), FXW(0), OK },
    { SRC_LINE, INTEL, VER(5), FIXED(0), FXW(0), OK },
    { SRC_LINE, INTEL, VER(2), FIXED(1), OK },
    { SRC_LINE, INTEL, GP(0), OK },
    { SRC_LINE, INTEL, GP(1), OK },
    { SRC_LINE, INTEL, GP(8), OK },
    { SRC_LINE, INTEL, VER(5), GP(0), FIXED(4), OK },
    { SRC_LINE, INTEL, GPW(32), OK },
    { SRC_LINE, INTEL, GPW(48), OK },
    { SRC_LINE, INTEL, GPW(40), OK },
    { SRC_LINE, INTEL, FXW(32), OK },
    { SRC_LINE, INTEL, FXW(48), OK },
    { SRC_LINE, INTEL, GPW(32), FXW(48), OK },
    { SRC_LINE, INTEL, GPW(48), FXW(32), OK },
    { SRC_LINE, INTEL, PDCM(true), CAPS(0), OK },
    { SRC_LINE, INTEL, PDCM(false), CAPS(0), OK },
    { SRC_LINE, INTEL, PDCM(true), CAPS(FW), OK },
    { SRC_LINE, INTEL, EVENTS(0), OK },
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENTS_ALL), OK },
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENT_BIT(VPMU_EVENT_TOPDOWN_SLOTS)), OK },
    { SRC_LINE, INTEL, RAW(true), OK },
    { SRC_LINE, INTEL, RAW(false), OK },

    /* ---- Intel: invalid, one field each ----------------------------- */
    { SRC_LINE, INTEL, VENDOR(0), BAD("vendor") },
    { SRC_LINE, INTEL, VENDOR(3), BAD("vendor") },
    { SRC_LINE, INTEL, VENDOR(-1), BAD("vendor") },
    { SRC_LINE, INTEL, VENDOR(0x7fffffff), BAD("vendor") },
    { SRC_LINE, INTEL, VER(0), BAD("intel_version") },
    { SRC_LINE, INTEL, VER(6), BAD("intel_version") },
    { SRC_LINE, INTEL, VER(0xffffffffu), BAD("intel_version") },
    { SRC_LINE, INTEL, LEVEL(VPMU_AMD_K7), BAD("amd_level") },
    { SRC_LINE, INTEL, LEVEL(VPMU_AMD_PERFMON_V2), BAD("amd_level") },
    { SRC_LINE, INTEL, LEVEL(4), BAD("amd_level") },
    { SRC_LINE, INTEL, GP(9), BAD("nr_gp") },
    { SRC_LINE, INTEL, GP(0xffffffffu), BAD("nr_gp") },
    { SRC_LINE, INTEL, VER(1), FIXED(1), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(1), FIXED(3), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(2), FIXED(4), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(3), FIXED(4), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(4), FIXED(4), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(5), FIXED(5), BAD("nr_fixed") },
    { SRC_LINE, INTEL, VER(5), FIXED(0xffffffffu), BAD("nr_fixed") },
    { SRC_LINE, INTEL, GPW(0), BAD("gp_width") },
    { SRC_LINE, INTEL, GPW(31), BAD("gp_width") },
    { SRC_LINE, INTEL, GPW(49), BAD("gp_width") },
    { SRC_LINE, INTEL, GPW(64), BAD("gp_width") },
    { SRC_LINE, INTEL, GP(0), GPW(0), BAD("gp_width") },
    { SRC_LINE, INTEL, FXW(0), BAD("fixed_width") },
    { SRC_LINE, INTEL, FXW(31), BAD("fixed_width") },
    { SRC_LINE, INTEL, FXW(49), BAD("fixed_width") },
    { SRC_LINE, INTEL, FXW(64), BAD("fixed_width") },
    /* No fixed counters: the width must be 0. */
    { SRC_LINE, INTEL, FIXED(0), FXW(48), BAD("fixed_width") },
    { SRC_LINE, INTEL, VER(1), FIXED(0), FXW(32), BAD("fixed_width") },
    { SRC_LINE, INTEL, CAPS(1), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, CAPS(FW | 1), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, CAPS(1ull << 12), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, CAPS(1ull << 14), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, CAPS(1ull << 63), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, CAPS(~0ull), BAD("perf_capabilities") },
    /* perf_capabilities needs pdcm (MSR 345H exists only with PDCM). */
    { SRC_LINE, INTEL, PDCM(false), CAPS(FW), BAD("perf_capabilities") },
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENT_BIT(VPMU_EVENT__NAMED)),
      BAD("events") },
    /* The catalogue's events are named: a source may back them. */
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENT_BIT(VPMU_EVENT__COUNT)), OK },
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENTS_ALL | VPMU_EVENTS_MODEL), OK },
    { SRC_LINE, INTEL, EVENTS(VPMU_EVENTS_ALL | (1u << 31)), BAD("events") },
    { SRC_LINE, INTEL, EVENTS(~0u), BAD("events") },

    /* ---- AMD: valid boundaries ------------------------------------- */
    { SRC_LINE, AMD, OK },                                     /* defaults */
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(4), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFCTR_CORE), GP(6), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(1), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(2), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(3), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(4), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(5), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(6), OK },
    { SRC_LINE, AMD, EVENTS(0), OK },
    { SRC_LINE, AMD, EVENTS(VPMU_EVENTS_ALL), OK },
    { SRC_LINE, AMD, RAW(true), OK },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(4), RAW(true), EVENTS(0), OK },

    /* ---- AMD: invalid, one field each ------------------------------- */
    { SRC_LINE, AMD, VENDOR(0), BAD("vendor") },
    { SRC_LINE, AMD, VENDOR(3), BAD("vendor") },
    { SRC_LINE, AMD, LEVEL(0), BAD("amd_level") },
    { SRC_LINE, AMD, LEVEL(4), BAD("amd_level") },
    { SRC_LINE, AMD, LEVEL(-1), BAD("amd_level") },
    { SRC_LINE, AMD, VER(1), BAD("intel_version") },
    { SRC_LINE, AMD, VER(2), BAD("intel_version") },
    { SRC_LINE, AMD, PDCM(true), BAD("pdcm") },
    { SRC_LINE, AMD, CAPS(FW), BAD("perf_capabilities") },
    { SRC_LINE, AMD, PDCM(true), CAPS(FW), BAD("pdcm") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(0), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(3), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(5), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(6), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFCTR_CORE), GP(4), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFCTR_CORE), GP(5), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFCTR_CORE), GP(7), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(0), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(7), BAD("nr_gp") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_PERFMON_V2), GP(8), BAD("nr_gp") },
    { SRC_LINE, AMD, GP(0xffffffffu), BAD("nr_gp") },
    { SRC_LINE, AMD, GPW(0), BAD("gp_width") },
    { SRC_LINE, AMD, GPW(32), BAD("gp_width") },
    { SRC_LINE, AMD, GPW(47), BAD("gp_width") },
    { SRC_LINE, AMD, GPW(49), BAD("gp_width") },
    { SRC_LINE, AMD, LEVEL(VPMU_AMD_K7), GP(4), GPW(40), BAD("gp_width") },
    { SRC_LINE, AMD, FIXED(1), BAD("nr_fixed") },
    { SRC_LINE, AMD, FIXED(3), BAD("nr_fixed") },
    { SRC_LINE, AMD, FXW(48), BAD("fixed_width") },
    { SRC_LINE, AMD, FXW(32), BAD("fixed_width") },
    { SRC_LINE, AMD, EVENTS(VPMU_EVENT_BIT(VPMU_EVENT__NAMED)),
      BAD("events") },
    { SRC_LINE, AMD, EVENTS(VPMU_EVENT_BIT(VPMU_EVENT_HW_INTERRUPTS)), OK },
    { SRC_LINE, AMD, EVENTS(~0u), BAD("events") },
};

static void vector_config(const ConfigVector *v, VpmuConfig *cfg)
{
    vpmu_config_init(cfg, v->base);
    if (v->set_vendor) {
        cfg->vendor = (VpmuVendor)v->vendor;
    }
    if (v->set_version) {
        cfg->intel_version = v->intel_version;
    }
    if (v->set_level) {
        cfg->amd_level = (VpmuAmdLevel)v->amd_level;
    }
    if (v->set_gp) {
        cfg->nr_gp = v->nr_gp;
    }
    if (v->set_fixed) {
        cfg->nr_fixed = v->nr_fixed;
    }
    if (v->set_gp_width) {
        cfg->gp_width = v->gp_width;
    }
    if (v->set_fixed_width) {
        cfg->fixed_width = v->fixed_width;
    }
    if (v->set_pdcm) {
        cfg->pdcm = v->pdcm;
    }
    if (v->set_caps) {
        cfg->perf_capabilities = v->perf_capabilities;
    }
    if (v->set_events) {
        cfg->events = v->events;
    }
    if (v->set_raw) {
        cfg->raw_events = v->raw_events;
    }
}

static bool config_equal(const VpmuConfig *a, const VpmuConfig *b)
{
    return a->vendor == b->vendor && a->intel_version == b->intel_version &&
           a->amd_level == b->amd_level && a->nr_gp == b->nr_gp &&
           a->nr_fixed == b->nr_fixed && a->gp_width == b->gp_width &&
           a->fixed_width == b->fixed_width && a->pdcm == b->pdcm &&
           a->perf_capabilities == b->perf_capabilities &&
           a->events == b->events && a->raw_events == b->raw_events;
}

START_TEST(test_config_check_vectors)
{
    const ConfigVector *v = &config_vectors[_i];
    VpmuConfig cfg;
    char err[256];
    int r;

    vector_config(v, &cfg);
    memset(err, 'X', sizeof(err));
    err[sizeof(err) - 1] = '\0';
    r = vpmu_config_check(&cfg, err, sizeof(err));
    ck_assert_msg(r == v->ret, "line %d: vpmu_config_check = %d want %d (%s)",
                  v->line, r, v->ret, err);
    if (v->ret < 0) {
        ck_assert_msg(strstr(err, v->field) != NULL,
                      "line %d: message \"%s\" does not name \"%s\"",
                      v->line, err, v->field);
    }
}
END_TEST

/* vpmu_pmu_new() checks the config the same way, and leaves *out NULL. */
START_TEST(test_pmu_new_vectors)
{
    const ConfigVector *v = &config_vectors[_i];
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuPmuOpts opts = { .source_ops = vpmu_fake_source_ops() };
    VpmuPmu *pmu = (VpmuPmu *)(uintptr_t)0x1;   /* must be overwritten */
    char check_err[256] = "", new_err[256];
    int r;

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    vector_config(v, &cfg);
    ck_assert_int_eq(vpmu_config_check(&cfg, check_err, sizeof(check_err)),
                     v->ret);
    memset(new_err, 'X', sizeof(new_err));
    new_err[sizeof(new_err) - 1] = '\0';
    r = vpmu_pmu_new(&cfg, &opts, &pmu, new_err, sizeof(new_err));
    ck_assert_msg(r == v->ret, "line %d: vpmu_pmu_new = %d want %d (%s)",
                  v->line, r, v->ret, new_err);
    if (v->ret < 0) {
        ck_assert_msg(pmu == NULL, "line %d: *out not NULL on failure",
                      v->line);
        ck_assert_msg(strcmp(new_err, check_err) == 0,
                      "line %d: vpmu_pmu_new says \"%s\", vpmu_config_check "
                      "\"%s\"", v->line, new_err, check_err);
        ck_assert_msg(strstr(new_err, v->field) != NULL,
                      "line %d: message \"%s\" does not name \"%s\"",
                      v->line, new_err, v->field);
    } else {
        const VpmuConfig *got;

        ck_assert_msg(pmu != NULL, "line %d: no PMU", v->line);
        got = vpmu_pmu_config(pmu);
        ck_assert_msg(got != &cfg, "line %d: the config is not copied",
                      v->line);
        ck_assert_msg(config_equal(got, &cfg), "line %d: vpmu_pmu_config() differs from the config",
                      v->line);
        vpmu_pmu_free(pmu);
    }
    vpmu_fake_source_free(fake);
}
END_TEST

/* err == NULL and errlen == 0 are accepted; short buffers are truncated. */
START_TEST(test_config_err_buffers)
{
    const ConfigVector *v = &config_vectors[_i];
    VpmuFakeSource *fake;
    VpmuConfig cfg;
    VpmuPmuOpts opts = { .source_ops = vpmu_fake_source_ops() };
    VpmuPmu *pmu = (VpmuPmu *)(uintptr_t)0x1;
    char full[256] = "", small[8], untouched[4];
    int r;

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    opts.source = fake;
    vector_config(v, &cfg);

    ck_assert_msg(vpmu_config_check(&cfg, NULL, 0) == v->ret,
                  "line %d: err NULL", v->line);
    ck_assert_msg(vpmu_config_check(&cfg, NULL, 64) == v->ret,
                  "line %d: err NULL, errlen 64", v->line);
    memset(untouched, 'U', sizeof(untouched));
    ck_assert_msg(vpmu_config_check(&cfg, untouched, 0) == v->ret,
                  "line %d: errlen 0", v->line);
    for (size_t i = 0; i < sizeof(untouched); i++) {
        ck_assert_msg(untouched[i] == 'U', "line %d: errlen 0 but byte %zu "
                      "was written", v->line, i);
    }

    vpmu_config_check(&cfg, full, sizeof(full));
    memset(small, 'S', sizeof(small));
    ck_assert_int_eq(vpmu_config_check(&cfg, small, sizeof(small)), v->ret);
    if (v->ret < 0) {
        /* Truncated, NUL-terminated prefix of the full message. */
        ck_assert_msg(memchr(small, '\0', sizeof(small)) != NULL,
                      "line %d: short message not terminated", v->line);
        ck_assert_msg(strncmp(small, full, strlen(small)) == 0 &&
                      strlen(small) == (strlen(full) < sizeof(small) ?
                                        strlen(full) : sizeof(small) - 1),
                      "line %d: \"%s\" is not the prefix of \"%s\"",
                      v->line, small, full);
    }

    r = vpmu_pmu_new(&cfg, &opts, &pmu, NULL, 0);
    ck_assert_msg(r == v->ret, "line %d: vpmu_pmu_new(err NULL) = %d",
                  v->line, r);
    if (r < 0) {
        ck_assert_ptr_null(pmu);
    }
    vpmu_pmu_free(r == 0 ? pmu : NULL);
    vpmu_fake_source_free(fake);
}
END_TEST

START_TEST(test_config_null)
{
    char err[128] = "";

    ck_assert_int_eq(vpmu_config_check(NULL, err, sizeof(err)), -EINVAL);
    ck_assert_msg(err[0] != '\0', "no message for a NULL config");
    ck_assert_int_eq(vpmu_config_check(NULL, NULL, 0), -EINVAL);
}
END_TEST

/* Expected defaults, written field by field from pmu.h. */
static void expect_defaults(VpmuConfig *want, VpmuVendor vendor)
{
    memset(want, 0, sizeof(*want));
    want->vendor = vendor;
    want->events = VPMU_EVENTS_ALL;
    want->raw_events = false;
    if (vendor == VPMU_VENDOR_INTEL) {
        want->intel_version = 2;
        want->amd_level = 0;
        want->nr_gp = 8;
        want->nr_fixed = 3;
        want->gp_width = 48;
        want->fixed_width = 48;
        want->pdcm = true;
        want->perf_capabilities = VPMU_PERF_CAP_FW_WRITE;
    } else {
        want->intel_version = 0;
        want->amd_level = VPMU_AMD_PERFMON_V2;
        want->nr_gp = 6;
        want->nr_fixed = 0;
        want->gp_width = 48;
        want->fixed_width = 0;
        want->pdcm = false;
        want->perf_capabilities = 0;
    }
}

static void check_defaults(VpmuVendor vendor)
{
    VpmuConfig cfg, want;
    char err[256] = "";

    /* Garbage first: init must set every field. */
    memset(&cfg, 0xa5, sizeof(cfg));
    vpmu_config_init(&cfg, vendor);
    expect_defaults(&want, vendor);

    ck_assert_int_eq(cfg.vendor, want.vendor);
    ck_assert_uint_eq(cfg.intel_version, want.intel_version);
    ck_assert_int_eq(cfg.amd_level, want.amd_level);
    ck_assert_uint_eq(cfg.nr_gp, want.nr_gp);
    ck_assert_uint_eq(cfg.nr_fixed, want.nr_fixed);
    ck_assert_uint_eq(cfg.gp_width, want.gp_width);
    ck_assert_uint_eq(cfg.fixed_width, want.fixed_width);
    ck_assert_int_eq(cfg.pdcm, want.pdcm);
    ck_assert_uint_eq(cfg.perf_capabilities, want.perf_capabilities);
    ck_assert_uint_eq(cfg.events, want.events);
    ck_assert_int_eq(cfg.raw_events, want.raw_events);
    ck_assert_int_eq(vpmu_config_check(&cfg, err, sizeof(err)), 0);
}

START_TEST(test_config_init_intel)
{
    check_defaults(VPMU_VENDOR_INTEL);
}
END_TEST

START_TEST(test_config_init_amd)
{
    check_defaults(VPMU_VENDOR_AMD);
}
END_TEST

/* The defaults build a PMU whose config reads back unchanged. */
START_TEST(test_config_defaults_build)
{
    VpmuVendor vendors[] = { VPMU_VENDOR_INTEL, VPMU_VENDOR_AMD };

    for (size_t i = 0; i < 2; i++) {
        VpmuConfig cfg;
        TestPmu t;

        vpmu_config_init(&cfg, vendors[i]);
        test_pmu_init(&t, &cfg);
        ck_assert(config_equal(vpmu_pmu_config(t.pmu), &cfg));
        test_pmu_fini(&t);
    }
}
END_TEST

/* Missing source ops: -EINVAL with a message, *out NULL. */
START_TEST(test_pmu_new_source_ops)
{
    VpmuConfig cfg;
    VpmuPmuOpts opts = { 0 };
    VpmuSourceOps ops = *vpmu_fake_source_ops();
    VpmuFakeSource *fake;
    VpmuPmu *pmu = (VpmuPmu *)(uintptr_t)0x1;
    char err[256] = "";

    ck_assert_int_eq(vpmu_fake_source_new(&fake), 0);
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_null(pmu);
    ck_assert_msg(strstr(err, "source_ops") != NULL, "message: %s", err);

    pmu = (VpmuPmu *)(uintptr_t)0x1;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, NULL, &pmu, err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_null(pmu);

    ops.read = NULL;
    opts.source_ops = &ops;
    opts.source = fake;
    pmu = (VpmuPmu *)(uintptr_t)0x1;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &opts, &pmu, NULL, 0), -EINVAL);
    ck_assert_ptr_null(pmu);

    /* A bad config is reported before the missing ops. */
    cfg.nr_gp = 9;
    err[0] = '\0';
    ck_assert_int_eq(vpmu_pmu_new(&cfg, NULL, &pmu, err, sizeof(err)),
                     -EINVAL);
    ck_assert_msg(strstr(err, "nr_gp") != NULL, "message: %s", err);
    vpmu_fake_source_free(fake);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    int n = (int)ARRAY_SIZE(config_vectors);

    tcase_add_loop_test(tc, test_config_check_vectors, 0, n);
    tcase_add_loop_test(tc, test_pmu_new_vectors, 0, n);
    tcase_add_loop_test(tc, test_config_err_buffers, 0, n);
    tcase_add_test(tc, test_config_null);
    tcase_add_test(tc, test_config_init_intel);
    tcase_add_test(tc, test_config_init_amd);
    tcase_add_test(tc, test_config_defaults_build);
    tcase_add_test(tc, test_pmu_new_source_ops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(config_suite());
}
